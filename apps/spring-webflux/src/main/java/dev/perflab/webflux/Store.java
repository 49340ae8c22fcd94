package dev.perflab.webflux;

import static org.springframework.data.relational.core.query.Criteria.where;
import static org.springframework.data.relational.core.query.Query.query;

import dev.perflab.webflux.Model.Book;
import dev.perflab.webflux.Model.BookOrder;
import dev.perflab.webflux.Model.NewBook;
import dev.perflab.webflux.Model.NewOrder;
import dev.perflab.webflux.Model.Zipcode;
import org.springframework.data.domain.Sort;
import org.springframework.data.r2dbc.core.R2dbcEntityTemplate;
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
 * repository's save() with a preset id). Reads run one auto-committed statement; writes run in one
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

    private Mono<Void> requireRow(String table, long id) {
        return db.getDatabaseClient().sql("SELECT COUNT(*) FROM " + table + " WHERE id = :id").bind("id", id)
                .mapValue(Long.class).one()
                .filter(rows -> rows > 0)
                .switchIfEmpty(Mono.error(() -> new ResponseStatusException(HttpStatus.NOT_FOUND,
                        (table.equals("book") ? "book " : "user ") + id + " not found")))
                .then();
    }
}
