package dev.perflab.webflux;

import com.fasterxml.jackson.databind.cfg.CoercionAction;
import com.fasterxml.jackson.databind.cfg.CoercionInputShape;
import com.fasterxml.jackson.databind.type.LogicalType;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.binder.MeterBinder;
import io.micrometer.core.instrument.config.MeterFilter;
import io.micrometer.observation.ObservationRegistry;
import io.netty.channel.EventLoopGroup;
import io.netty.util.concurrent.EventExecutor;
import io.netty.util.concurrent.SingleThreadEventExecutor;
import io.r2dbc.pool.ConnectionPool;
import io.r2dbc.pool.PoolMetrics;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.function.ToIntFunction;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.SmartInitializingSingleton;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.boot.autoconfigure.jackson.Jackson2ObjectMapperBuilderCustomizer;
import org.springframework.boot.autoconfigure.web.reactive.WebHttpHandlerBuilderCustomizer;
import org.springframework.boot.web.embedded.netty.NettyServerCustomizer;
import org.springframework.context.annotation.Bean;
import org.springframework.core.NestedExceptionUtils;
import org.springframework.http.client.ReactorResourceFactory;
import reactor.netty.ConnectionObserver;
import reactor.netty.resources.LoopResources;

@SpringBootApplication
public class WebfluxApplication {

    public static void main(String[] args) {
        SpringApplication app = new SpringApplication(WebfluxApplication.class);
        boolean observability = observability();
        app.setDefaultProperties(Map.of("perflab.observability", observability));
        app.setAdditionalProfiles(dbEngine());
        app.run(args);
    }

    /**
     * PERFLAB_DB_ENGINE=mariadb|mysql|postgresql (the lab's db host), the active profile: r2dbc-postgresql's
     * URL and TLS options are application-postgresql.properties'; r2dbc-mysql (application.properties) speaks
     * to both MySQL servers. Anything else stops the app before it starts.
     */
    private static String dbEngine() {
        String engine = System.getenv().getOrDefault("PERFLAB_DB_ENGINE", "mariadb");
        if (!List.of("mariadb", "mysql", "postgresql").contains(engine)) {
            System.err.println("perflab-spring-webflux: PERFLAB_DB_ENGINE must be 'mariadb', 'mysql' or 'postgresql', not '"
                    + engine + "'");
            System.exit(2);
        }
        return engine;
    }

    /**
     * PERFLAB_OBSERVABILITY=on|off (the manifest's variant observability): off leaves out the lab's own
     * instrumentation, to measure what it costs (issue 23): the http.server.requests observation
     * (noRequestObservation), so no per-request timing and no histogram, and the perflab_* capacity gauges.
     * Anything else stops the app.
     */
    private static boolean observability() {
        String observability = System.getenv().getOrDefault("PERFLAB_OBSERVABILITY", "on");
        if (!List.of("on", "off").contains(observability)) {
            System.err.println("perflab-spring-webflux: PERFLAB_OBSERVABILITY must be 'on' or 'off', not '"
                    + observability + "'");
            System.exit(2);
        }
        return observability.equals("on");
    }

    /** Observability off: none of the perflab_* gauges below is registered (they are read at each scrape only). */
    @Bean
    MeterFilter capacityGauges(@Value("${perflab.observability}") boolean observability) {
        return observability ? new MeterFilter() { } : MeterFilter.denyNameStartsWith("perflab.");
    }

    /**
     * Strict JSON (the rest is in application.properties): a number or boolean for a string field
     * (`"zip": 99998`) is a 400, as in Quarkus, not converted to "99998". Jackson's
     * ALLOW_COERCION_OF_SCALARS (spring.jackson.mapper.allow-coercion-of-scalars=false) covers only
     * numeric and boolean targets; string targets need a CoercionConfig, which has no property.
     */
    @Bean
    Jackson2ObjectMapperBuilderCustomizer noScalarsAsStrings() {
        return builder -> builder.postConfigurer(mapper -> mapper.coercionConfigFor(LogicalType.Textual)
                .setCoercion(CoercionInputShape.Integer, CoercionAction.Fail)
                .setCoercion(CoercionInputShape.Float, CoercionAction.Fail)
                .setCoercion(CoercionInputShape.Boolean, CoercionAction.Fail));
    }

    /**
     * Observability off: the server observes its exchanges with no registry, as an app without Actuator does
     * (TechEmpower's), not with Actuator's registry and http.server.requests disabled by name: Spring's handler
     * adapter then still asks that registry and runs its observation listener on every exchange.
     */
    @Bean
    WebHttpHandlerBuilderCustomizer noRequestObservation(@Value("${perflab.observability}") boolean observability) {
        return builder -> {
            if (!observability) {
                builder.observationRegistry(ObservationRegistry.NOOP);
            }
        };
    }

    /** The common pool gauges of every perflab app (docs/ARCHITECTURE.md). */
    @Bean
    MeterBinder dbPoolMetrics(ConnectionPool pool) {
        return registry -> {
            gauge(registry, "perflab.db.pool.in.use", "DB connections lent out", pool, PoolMetrics::acquiredSize);
            gauge(registry, "perflab.db.pool.waiting", "requests waiting for a DB connection", pool,
                    PoolMetrics::pendingAcquireSize);
        };
    }

    private static void gauge(MeterRegistry registry, String name, String description, ConnectionPool pool,
            ToIntFunction<PoolMetrics> value) {
        Gauge.builder(name, pool, p -> p.getMetrics().map(value::applyAsInt).orElse(0))
                .description(description).register(registry);
    }

    /**
     * The common event-loop gauges (docs/ARCHITECTURE.md): Reactor Netty's loops that serve HTTP (reactor-http-*,
     * the server's child group), read at each scrape. the R2DBC driver's connections run on loops of their own
     * (reactor-tcp-*), not counted here. Reactor Netty's reactor.netty.eventloop.pending.tasks would need its
     * server metrics on (per-URI meters of their own) and appears only for loops that have served a connection.
     */
    @Bean
    MeterBinder eventLoopMetrics(ReactorResourceFactory resources) {
        return registry -> {
            Gauge.builder("perflab.event.loop.pending.tasks", resources, r -> pendingTasks(serverLoops(r)))
                    .tag("pool", "netty").description("tasks waiting in the event loops' queues, summed over the loops")
                    .register(registry);
            Gauge.builder("perflab.event.loops", resources, r -> count(serverLoops(r))).tag("pool", "netty")
                    .description("event loops (threads)").register(registry);
        };
    }

    /**
     * The group the server runs on: Spring Boot's server runs on these LoopResources, and Reactor Netty's
     * onServer(DEFAULT_NATIVE) is its cached child group (epoll where available, as the server's).
     */
    private static EventLoopGroup serverLoops(ReactorResourceFactory resources) {
        return resources.getLoopResources().onServer(LoopResources.DEFAULT_NATIVE);
    }

    /** Netty's count of each loop's queued tasks (not its scheduled timers), summed; cheap (queue indices). */
    private static double pendingTasks(EventLoopGroup group) {
        int pending = 0;
        for (EventExecutor loop : group) {
            if (loop instanceof SingleThreadEventExecutor single) {
                pending += single.pendingTasks();
            }
        }
        return pending;
    }

    private static double count(EventLoopGroup group) {
        int loops = 0;
        for (EventExecutor ignored : group) {
            loops++;
        }
        return loops;
    }

    /**
     * Works around a Reactor Netty HTTP/1.1 keep-alive stall (reactor/reactor-netty#4361, in 1.2.18, the version
     * Spring Boot 3.5 manages; fixed upstream only after it). Reactor Netty reads a connection on demand. When a
     * response is finished off the connection's event loop (a DB row on the R2DBC driver's loop, /hello's timer,
     * /metrics on boundedElastic), the client's next request can arrive before that exchange has terminated; it is
     * buffered, and if the buffered request is then answered at once (/greeting, /health/live, a 400), the buffer
     * drains without anyone asking Netty to read again: the request after it is never read, so never answered.
     * Asking for a read each time an exchange terminates re-arms it; an extra read is harmless (a request that
     * arrives while another is in flight is buffered, as for pipelining). Drop this once Reactor Netty has the fix.
     */
    @Bean
    NettyServerCustomizer readAfterEachExchange() {
        return server -> server.childObserve((connection, state) -> {
            if (state == ConnectionObserver.State.DISCONNECTING) {
                connection.channel().read();
            }
        });
    }

    /**
     * r2dbc-pool opens its initial connections on the first acquire; open them before the web server
     * starts, so the pool is full before the first request and no request opens a connection (an
     * acquire racing the warm-up was seen to hang). A DB that is down does not stop the app:
     * /health/ready reports it.
     */
    @Bean
    SmartInitializingSingleton warmUpPool(ConnectionPool pool) {
        return () -> {
            try {
                LoggerFactory.getLogger(WebfluxApplication.class).info("DB pool started with {} connections",
                        pool.warmup().block(Duration.ofSeconds(30)));
            } catch (RuntimeException e) {
                LoggerFactory.getLogger(WebfluxApplication.class).warn("DB pool not started: {}",
                        NestedExceptionUtils.getMostSpecificCause(e).toString());
            }
        };
    }
}
