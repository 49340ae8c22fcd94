package dev.perflab.quarkus;

import io.quarkus.reactive.mysql.client.MySQLPoolCreator;
import io.vertx.mysqlclient.MySQLPool;
import io.vertx.sqlclient.Pool;
import jakarta.inject.Singleton;
import org.jboss.logging.Logger;

/**
 * Creates the reactive pool that Hibernate Reactive uses, from Quarkus' own options (URL, TLS,
 * credentials, size), adding one thing: every new connection is switched to READ COMMITTED before the
 * pool hands it out. Hibernate's hibernate.connection.isolation is JDBC-only and the reactive MySQL
 * client has no isolation option, so a connect hook is the one place to set it: once per connection,
 * not a round trip per transaction.
 */
@Singleton
public class ReadCommittedPoolCreator implements MySQLPoolCreator {
    private static final Logger LOG = Logger.getLogger(ReadCommittedPoolCreator.class);

    @Override
    public Pool create(Input input) {
        return MySQLPool.pool(input.vertx(), input.mySQLConnectOptionsList(), input.poolOptions())
                .connectHandler(connection -> connection
                        .query("SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED").execute()
                        .onFailure(failure -> LOG.error("Could not set READ COMMITTED on a new DB connection", failure))
                        .onComplete(done -> connection.close()));
    }
}
