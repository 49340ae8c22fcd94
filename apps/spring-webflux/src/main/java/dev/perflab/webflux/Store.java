package dev.perflab.webflux;

import static org.springframework.data.relational.core.query.Criteria.where;
import static org.springframework.data.relational.core.query.Query.query;

import dev.perflab.webflux.Model.Book;
import dev.perflab.webflux.Model.BookOrder;
import dev.perflab.webflux.Model.Fortune;
import dev.perflab.webflux.Model.NewBook;
import dev.perflab.webflux.Model.NewOrder;
import dev.perflab.webflux.Model.World;
import dev.perflab.webflux.Model.Zipcode;
import java.util.List;
import java.util.Map;
import java.util.SortedMap;
import org.springframework.data.domain.Sort;
import org.springframework.data.r2dbc.core.R2dbcEntityTemplate;
import org.springframework.r2dbc.core.DatabaseClient;
import org.springframework.data.relational.core.query.Query;
import org.springframework.http.HttpStatus;
import org.springframework.stereotype.Repository;
import org.springframework.transaction.annotation.Isolation;
import org.springframework.transaction.annotation.Transactional;
import org.springframework.web.server.ResponseStatusException;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * Every DB statement of the app, through Spring Data R2DBC's template so that each request issues
 * exactly the statements of the contract's table (insert() never selects first, unlike a
 * repository's save() with a preset id); TechEmpower's reads through its DatabaseClient with fixed
 * statements. Reads run one auto-committed statement; writes run in one
 * reactive transaction (R2dbcTransactionManager) at READ COMMITTED.
 */
@Repository
class Store {

    record Stored(Zipcode zipcode, boolean created) {
    }

    private final R2dbcEntityTemplate db;

    Store(R2dbcEntityTemplate db) {
        this.db = db;
    }

    Mono<Zipcode> findZipcode(String zip) {
        return db.selectOne(query(where("zip").is(zip)), Zipcode.class);
    }

    Flux<Zipcode> findZipcodesByCity(String city) {
        return db.select(query(where("city").is(city)).sort(Sort.by("zip")), Zipcode.class);
    }

    /** Report 1's get-or-create; a lost duplicate-key race ends in DuplicateKeyException and a rollback. */
    @Transactional(isolation = Isolation.READ_COMMITTED)
    public Mono<Stored> getOrCreateZipcode(Zipcode z) {
        return findZipcode(z.zip()).map(found -> new Stored(found, false))
                .switchIfEmpty(Mono.defer(() -> db.insert(z).map(created -> new Stored(created, true))));
    }

    Flux<Book> findBooks() {
        return db.select(Query.empty().sort(Sort.by("id")), Book.class);
    }

    @Transactional(isolation = Isolation.READ_COMMITTED)
    public Mono<Book> createBook(NewBook book) {
        return db.insert(new Book(null, book.title(), book.author()));
    }

    @Transactional(isolation = Isolation.READ_COMMITTED)
    public Mono<BookOrder> createOrder(NewOrder order) {
        return requireRow("book", order.bookId())
                .then(requireRow("app_user", order.userId()))
                .then(Mono.defer(() -> db.insert(new BookOrder(null, order.bookId(), order.userId()))));
    }

    /**
     * TechEmpower's single query: one World row by its id, in one auto-committed SELECT. A fixed statement and a
     * row read by position, as Spring MVC's JdbcTemplate reads it: the template's selectOne rendered the statement
     * from its criteria and mapped the row through the entity converter on every call, 2.3 times TechEmpower's
     * app CPU per request on /queries (20 of them a request).
     */
    Mono<World> findWorld(int id) {
        return db.getDatabaseClient().sql("SELECT id, randomnumber FROM world WHERE id = :id").bind("id", id)
                .map(row -> new World(row.get(0, Integer.class), row.get(1, Integer.class))).one();
    }

    /** TechEmpower's fortunes: every Fortune row, one SELECT, read as findWorld reads its row. */
    Flux<Fortune> findFortunes() {
        return db.getDatabaseClient().sql("SELECT id, message FROM fortune")
                .map(row -> new Fortune(row.get(0, Integer.class), row.get(1, String.class))).all();
    }

    /**
     * TechEmpower's updates in one transaction: `count` rows read one SELECT each, one after the other, each given
     * a new number (TechEmpower.newNumbers), then every one of them written by one UPDATE, which TechEmpower allows
     * (a "bulk update"): N selects and 1 update per request, one round trip for the writes.
     */
    @Transactional(isolation = Isolation.READ_COMMITTED)
    public Mono<List<World>> updateWorlds(int count) {
        return Flux.range(0, count).concatMap(i -> findWorld(TechEmpower.randomId())).collectList().flatMap(read -> {
            SortedMap<Integer, Integer> numbers = TechEmpower.newNumbers(read);
            StringBuilder sql = new StringBuilder("UPDATE world SET randomnumber = CASE id");
            for (int row = 0; row < numbers.size(); row++) {
                sql.append(" WHEN :id").append(row).append(" THEN :number").append(row);
            }
            DatabaseClient.GenericExecuteSpec update = db.getDatabaseClient()
                    .sql(sql.append(" ELSE randomnumber END WHERE id IN (:ids)").toString())
                    .bind("ids", List.copyOf(numbers.keySet()));
            int row = 0;
            for (Map.Entry<Integer, Integer> entry : numbers.entrySet()) {
                update = update.bind("id" + row, entry.getKey()).bind("number" + row, entry.getValue());
                row++;
            }
            return update.fetch().rowsUpdated()
                    .thenReturn(read.stream().map(world -> new World(world.id(), numbers.get(world.id()))).toList());
        });
    }

    private Mono<Void> requireRow(String table, long id) {
        return db.getDatabaseClient().sql("SELECT COUNT(*) FROM " + table + " WHERE id = :id").bind("id", id)
                .mapValue(Long.class).one()
                .filter(rows -> rows > 0)
                .switchIfEmpty(Mono.error(() -> new ResponseStatusException(HttpStatus.NOT_FOUND,
                        (table.equals("book") ? "book " : "user ") + id + " not found")))
                .then();
    }
}
