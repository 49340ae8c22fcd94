package dev.perflab.quarkus;

import io.quarkus.hibernate.reactive.panache.Panache;
import io.smallrye.mutiny.Uni;
import io.vertx.mysqlclient.MySQLException;
import io.vertx.pgclient.PgException;
import jakarta.inject.Inject;
import jakarta.validation.Valid;
import jakarta.validation.constraints.NotBlank;
import jakarta.validation.constraints.NotNull;
import jakarta.validation.constraints.Pattern;
import jakarta.validation.constraints.Size;
import jakarta.ws.rs.GET;
import jakarta.ws.rs.NotFoundException;
import jakarta.ws.rs.POST;
import jakarta.ws.rs.Path;
import org.hibernate.JDBCException;
import org.hibernate.reactive.mutiny.Mutiny;
import org.jboss.resteasy.reactive.RestPath;
import org.jboss.resteasy.reactive.RestQuery;
import org.jboss.resteasy.reactive.RestResponse;

import java.util.List;

/** Report 1: zip code lookups and get-or-create. Runs on the IO thread (returns Uni). */
@Path("/zipcodes")
public class ZipCodeResource {
    private static final int ER_DUP_ENTRY = 1062;
    /** PostgreSQL's SQLSTATE unique_violation (MySQL's duplicate key has the generic 23000: its error code tells). */
    private static final String UNIQUE_VIOLATION = "23505";

    @Inject
    Mutiny.SessionFactory sessionFactory;

    @GET
    @Path("/{zip}")
    public Uni<ZipCode> get(@RestPath @Pattern(regexp = ZipCode.ZIP_PATTERN) String zip) {
        return Panache.withSession(() -> ZipCode.<ZipCode>findById(zip))
                .onItem().ifNull().failWith(() -> new NotFoundException("zip code " + zip + " not found"));
    }

    @GET
    public Uni<List<ZipCode>> byCity(@RestQuery @NotBlank @Size(max = 64) String city) {
        return Panache.withSession(() -> ZipCode.list("city = ?1 order by zip", city));
    }

    /**
     * Get-or-create in one READ COMMITTED transaction (the isolation level is set per connection on MySQL, see
     * {@link ReadCommittedPoolCreator}; PostgreSQL's default). When a concurrent request inserts the same zip
     * first, our INSERT fails with a duplicate key (MySQL's 1062, PostgreSQL's 23505) at commit; the row is then
     * re-read in a new session, whose persistence context cannot hand back our own unsaved instance.
     */
    @POST
    public Uni<RestResponse<ZipCode>> getOrCreate(@Valid @NotNull ZipCode zipCode) {
        return Panache.withTransaction(() -> ZipCode.<ZipCode>findById(zipCode.zip)
                        .onItem().ifNotNull().transform(RestResponse::ok)
                        .onItem().ifNull().switchTo(() -> zipCode.<ZipCode>persist()
                                .map(created -> RestResponse.status(RestResponse.Status.CREATED, created))))
                .onFailure(ZipCodeResource::isDuplicateKey).recoverWithUni(() -> sessionFactory.openStatelessSession()
                        .chain(session -> session.get(ZipCode.class, zipCode.zip).eventually(session::close))
                        .map(RestResponse::ok));
    }

    private static boolean isDuplicateKey(Throwable failure) {
        for (Throwable t = failure; t != null; t = t.getCause()) {
            if (t instanceof MySQLException mysql && mysql.getErrorCode() == ER_DUP_ENTRY
                    || t instanceof PgException pg && UNIQUE_VIOLATION.equals(pg.getSqlState())
                    || t instanceof JDBCException jdbc
                            && (jdbc.getErrorCode() == ER_DUP_ENTRY || UNIQUE_VIOLATION.equals(jdbc.getSQLState()))) {
                return true;
            }
        }
        return false;
    }
}
