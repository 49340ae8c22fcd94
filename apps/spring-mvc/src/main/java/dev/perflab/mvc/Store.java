package dev.perflab.mvc;

import dev.perflab.mvc.Model.Book;
import dev.perflab.mvc.Model.BookOrder;
import dev.perflab.mvc.Model.Fortune;
import dev.perflab.mvc.Model.NewBook;
import dev.perflab.mvc.Model.NewOrder;
import dev.perflab.mvc.Model.World;
import dev.perflab.mvc.Model.Zipcode;
import java.sql.PreparedStatement;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.SortedMap;
import org.springframework.http.HttpStatus;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.core.RowMapper;
import org.springframework.jdbc.support.GeneratedKeyHolder;
import org.springframework.stereotype.Repository;
import org.springframework.transaction.annotation.Transactional;
import org.springframework.web.server.ResponseStatusException;

/**
 * Every DB statement of the app, written out so that each request issues exactly the statements
 * of the contract's table (JdbcTemplate rather than JPA: no hidden select-before-insert, no flush).
 * Reads run one auto-committed statement; writes run in one transaction at READ COMMITTED, the
 * isolation every connection of the pool starts at (application.properties). The transactions do not
 * name it: Spring would then read each connection's isolation before each transaction, and PostgreSQL's
 * driver asks the server for it (SHOW TRANSACTION ISOLATION LEVEL, a round trip per write).
 */
@Repository
class Store {

    record Stored(Zipcode zipcode, boolean created) {
    }

    private static final String ZIPCODE_COLUMNS = "SELECT zip, city, county, state, timezone, type FROM zipcode ";
    private static final RowMapper<Zipcode> ZIPCODE = (rs, row) -> new Zipcode(rs.getString(1), rs.getString(2),
            rs.getString(3), rs.getString(4), rs.getString(5), rs.getString(6));

    private static final String[] ID = {"id"};

    private static final RowMapper<World> WORLD = (rs, row) -> new World(rs.getInt(1), rs.getInt(2));

    private final JdbcTemplate jdbc;

    Store(JdbcTemplate jdbc) {
        this.jdbc = jdbc;
    }

    Optional<Zipcode> findZipcode(String zip) {
        return jdbc.query(ZIPCODE_COLUMNS + "WHERE zip = ?", ZIPCODE, zip).stream().findFirst();
    }

    List<Zipcode> findZipcodesByCity(String city) {
        return jdbc.query(ZIPCODE_COLUMNS + "WHERE city = ? ORDER BY zip", ZIPCODE, city);
    }

    /** Report 1's get-or-create; a lost duplicate-key race ends in DuplicateKeyException and a rollback. */
    @Transactional
    public Stored getOrCreateZipcode(Zipcode z) {
        return findZipcode(z.zip()).map(found -> new Stored(found, false)).orElseGet(() -> {
            jdbc.update("INSERT INTO zipcode (zip, city, county, state, timezone, type) VALUES (?, ?, ?, ?, ?, ?)",
                    z.zip(), z.city(), z.county(), z.state(), z.timezone(), z.type());
            return new Stored(z, true);
        });
    }

    List<Book> findBooks() {
        return queryPrepared("SELECT id, title, author FROM book ORDER BY id",
                (rs, row) -> new Book(rs.getLong(1), rs.getString(2), rs.getString(3)));
    }

    @Transactional
    public Book createBook(NewBook book) {
        long id = insert("INSERT INTO book (title, author) VALUES (?, ?)", book.title(), book.author());
        return new Book(id, book.title(), book.author());
    }

    @Transactional
    public BookOrder createOrder(NewOrder order) {
        requireRow("book", order.bookId());
        requireRow("app_user", order.userId());
        long id = insert("INSERT INTO book_order (book_id, user_id) VALUES (?, ?)", order.bookId(), order.userId());
        return new BookOrder(id, order.bookId(), order.userId());
    }

    private void requireRow(String table, long id) {
        Integer rows = jdbc.queryForObject("SELECT COUNT(*) FROM " + table + " WHERE id = ?", Integer.class, id);
        if (rows == null || rows == 0) {
            String what = table.equals("book") ? "book" : "user";
            throw new ResponseStatusException(HttpStatus.NOT_FOUND, what + " " + id + " not found");
        }
    }

    /** TechEmpower's single query: one World row by its id, in one auto-committed SELECT. */
    World findWorld(int id) {
        return jdbc.queryForObject("SELECT id, randomnumber FROM world WHERE id = ?", WORLD, id);
    }

    /** TechEmpower's fortunes: every Fortune row, one SELECT. */
    List<Fortune> findFortunes() {
        return queryPrepared("SELECT id, message FROM fortune", (rs, row) -> new Fortune(rs.getInt(1), rs.getString(2)));
    }

    /**
     * A statement without parameters run as a PreparedStatement, as every statement with parameters is:
     * JdbcTemplate runs one without parameters as a plain Statement, whose SQL PostgreSQL's driver parses
     * and the server parses and plans on every run (an unnamed statement), where a PreparedStatement's SQL
     * is parsed once per connection (the driver's statement cache) and prepared on the server from its
     * fifth run (prepareThreshold). On /fortunes at 800 req/s the plain Statement cost 24 of the app's 250
     * profile samples, TechEmpower's Spring app's prepared one 14 of its 153.
     */
    private <T> List<T> queryPrepared(String sql, RowMapper<T> rows) {
        return jdbc.query(connection -> connection.prepareStatement(sql), rows);
    }

    /**
     * TechEmpower's updates in one transaction: `count` rows read one SELECT each, each given a new number
     * (TechEmpower.newNumbers), then every one of them written by one UPDATE, which TechEmpower allows (a "bulk
     * update"): N selects and 1 update per request, one round trip for the writes.
     */
    @Transactional
    public List<World> updateWorlds(int count) {
        List<World> read = new ArrayList<>(count);
        for (int i = 0; i < count; i++) {
            read.add(findWorld(TechEmpower.randomId()));
        }
        SortedMap<Integer, Integer> numbers = TechEmpower.newNumbers(read);
        List<Object> values = new ArrayList<>(3 * numbers.size());
        StringBuilder sql = new StringBuilder("UPDATE world SET randomnumber = CASE id");
        for (Map.Entry<Integer, Integer> row : numbers.entrySet()) {
            sql.append(" WHEN ? THEN ?");
            values.add(row.getKey());
            values.add(row.getValue());
        }
        sql.append(" ELSE randomnumber END WHERE id IN (?").append(", ?".repeat(numbers.size() - 1)).append(')');
        values.addAll(numbers.keySet());
        jdbc.update(sql.toString(), values.toArray());
        return read.stream().map(world -> new World(world.id(), numbers.get(world.id()))).toList();
    }

    /**
     * The generated id comes back with the insert, in no extra statement: in MariaDB's OK packet, and
     * on PostgreSQL as the INSERT's RETURNING "id" (the column named, not RETURNING *).
     */
    private long insert(String sql, Object... values) {
        GeneratedKeyHolder keys = new GeneratedKeyHolder();
        jdbc.update(con -> {
            PreparedStatement ps = con.prepareStatement(sql, ID);
            for (int i = 0; i < values.length; i++) {
                ps.setObject(i + 1, values[i]);
            }
            return ps;
        }, keys);
        return keys.getKey().longValue();
    }
}
