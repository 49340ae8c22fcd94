package dev.perflab.quarkus;

import io.quarkus.qute.CheckedTemplate;
import io.quarkus.qute.TemplateInstance;
import io.smallrye.mutiny.Uni;
import jakarta.inject.Inject;
import jakarta.ws.rs.GET;
import jakarta.ws.rs.Path;
import jakarta.ws.rs.Produces;
import jakarta.ws.rs.core.MediaType;
import org.hibernate.reactive.mutiny.Mutiny;
import org.jboss.resteasy.reactive.RestQuery;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.SortedMap;

/**
 * TechEmpower's database tests (apps/contract/README.md): /db, /queries, /updates as JSON, /fortunes as the HTML
 * page of templates/TechEmpowerDbResource/fortunes.html (Qute escapes every value of an .html template). On the
 * IO thread (they return a Uni). Rows are read in a stateless session, as TechEmpower's own Quarkus does: a
 * session's persistence context would answer a row drawn twice from memory, and the rules want every row read
 * by its own SELECT.
 */
@Path("/")
public class TechEmpowerDbResource {

    @Inject
    Mutiny.SessionFactory sessionFactory;

    @CheckedTemplate
    static class Templates {
        static native TemplateInstance fortunes(List<Fortune> fortunes);
    }

    @GET
    @Path("db")
    @Produces(MediaType.APPLICATION_JSON)
    public Uni<World> db() {
        return sessionFactory.withStatelessSession(session -> session.get(World.class, TechEmpower.randomId()));
    }

    @GET
    @Path("queries")
    @Produces(MediaType.APPLICATION_JSON)
    public Uni<List<World>> queries(@RestQuery String queries) {
        return sessionFactory.withStatelessSession(session -> read(session, TechEmpower.queries(queries)));
    }

    /**
     * In one READ COMMITTED transaction (ReadCommittedPoolCreator on MySQL, the server's default on PostgreSQL):
     * the rows read one SELECT each, each given a new number (TechEmpower.newNumbers), then every one of them
     * written by one UPDATE, which TechEmpower allows (a "bulk update"): N selects and 1 update per request.
     */
    @GET
    @Path("updates")
    @Produces(MediaType.APPLICATION_JSON)
    public Uni<List<World>> updates(@RestQuery String queries) {
        return sessionFactory.withStatelessTransaction(session -> read(session, TechEmpower.queries(queries))
                .chain(read -> {
                    SortedMap<Integer, Integer> numbers = TechEmpower.newNumbers(read);
                    StringBuilder sql = new StringBuilder("UPDATE world SET randomnumber = CASE id");
                    for (int row = 0; row < numbers.size(); row++) {
                        sql.append(" WHEN :id").append(row).append(" THEN :number").append(row);
                    }
                    Mutiny.Query<Object> update = session
                            .createNativeQuery(sql.append(" ELSE randomnumber END WHERE id IN (:ids)").toString())
                            .setParameter("ids", List.copyOf(numbers.keySet()));
                    int row = 0;
                    for (Map.Entry<Integer, Integer> entry : numbers.entrySet()) {
                        update.setParameter("id" + row, entry.getKey()).setParameter("number" + row, entry.getValue());
                        row++;
                    }
                    read.forEach(world -> world.randomNumber = numbers.get(world.id));
                    return update.executeUpdate().replaceWith(read);
                }));
    }

    @GET
    @Path("fortunes")
    @Produces("text/html; charset=UTF-8")
    public Uni<String> fortunes() {
        return sessionFactory.withStatelessSession(session -> session.createQuery("from Fortune", Fortune.class)
                        .getResultList())
                .map(stored -> Templates.fortunes(TechEmpower.withAddedFortune(stored)).render());
    }

    /** Each row its own SELECT, one after the other (a session runs one statement at a time). */
    private static Uni<List<World>> read(Mutiny.StatelessSession session, int count) {
        List<World> worlds = new ArrayList<>(count);
        Uni<Void> reads = Uni.createFrom().voidItem();
        for (int i = 0; i < count; i++) {
            reads = reads.chain(() -> session.get(World.class, TechEmpower.randomId()).invoke(worlds::add).replaceWithVoid());
        }
        return reads.replaceWith(worlds);
    }
}
