package dev.perflab.mvc;

import com.fasterxml.jackson.databind.cfg.CoercionAction;
import com.fasterxml.jackson.databind.cfg.CoercionInputShape;
import com.fasterxml.jackson.databind.type.LogicalType;
import com.zaxxer.hikari.HikariDataSource;
import com.zaxxer.hikari.HikariPoolMXBean;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.binder.MeterBinder;
import io.micrometer.core.instrument.config.MeterFilter;
import java.lang.management.ManagementFactory;
import java.sql.Connection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.ToIntFunction;
import javax.management.JMException;
import javax.management.MBeanServer;
import javax.management.MalformedObjectNameException;
import javax.management.ObjectName;
import org.apache.tomcat.util.threads.ThreadPoolExecutor;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.SmartInitializingSingleton;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.autoconfigure.jackson.Jackson2ObjectMapperBuilderCustomizer;
import org.springframework.boot.web.context.WebServerApplicationContext;
import org.springframework.boot.web.embedded.tomcat.TomcatWebServer;
import org.springframework.context.ApplicationContext;
import org.springframework.context.annotation.Bean;

@SpringBootApplication
public class MvcApplication {

    private static final String WEB_MVC_OBSERVATION =
            "org.springframework.boot.actuate.autoconfigure.observation.web.servlet.WebMvcObservationAutoConfiguration";

    public static void main(String[] args) {
        SpringApplication app = new SpringApplication(MvcApplication.class);
        boolean observability = observability();
        Map<String, Object> defaults = new HashMap<>(Map.of("spring.threads.virtual.enabled", virtualThreads(),
                "perflab.observability", observability));
        if (!observability) {
            // No observation filter at all, rather than one disabled by name: that one still builds an
            // observation context and asks the registry on every request (7 of 266 profile samples on
            // plaintext-json with observability off, against none in TechEmpower's Spring app).
            defaults.put("spring.autoconfigure.exclude", WEB_MVC_OBSERVATION);
        }
        app.setDefaultProperties(defaults);
        app.setAdditionalProfiles(dbEngine());
        app.run(args);
    }

    /**
     * PERFLAB_DB_ENGINE=mariadb|mysql|postgresql (the lab's db host), the active profile: PostgreSQL's
     * datasource URL is application-postgresql.properties'; MariaDB Connector/J (application.properties)
     * speaks to both MySQL servers. Anything else stops the app before it starts.
     */
    private static String dbEngine() {
        String engine = System.getenv().getOrDefault("PERFLAB_DB_ENGINE", "mariadb");
        if (!List.of("mariadb", "mysql", "postgresql").contains(engine)) {
            fail("PERFLAB_DB_ENGINE must be 'mariadb', 'mysql' or 'postgresql', not '" + engine + "'");
        }
        return engine;
    }

    /** PERFLAB_THREADS=platform|virtual (report 2 and 4); anything else stops the app before it starts. */
    private static boolean virtualThreads() {
        String threads = System.getenv().getOrDefault("PERFLAB_THREADS", "platform");
        if (threads.equals("platform")) {
            return false;
        }
        if (!threads.equals("virtual")) {
            fail("PERFLAB_THREADS must be 'platform' or 'virtual', not '" + threads + "'");
        }
        if (Runtime.version().feature() < 21) {
            fail("PERFLAB_THREADS=virtual needs JDK 21 or later, but this is JDK " + Runtime.version()
                    + ": run on a newer JDK or set PERFLAB_THREADS=platform");
        }
        return true;
    }

    /**
     * PERFLAB_OBSERVABILITY=on|off (the manifest's variant observability): off leaves out the lab's own
     * instrumentation, to measure what it costs (issue 23): the http.server.requests observation's filter, so
     * no per-request timing and no histogram, and the perflab_* capacity gauges. Anything else stops the app.
     */
    private static boolean observability() {
        String observability = System.getenv().getOrDefault("PERFLAB_OBSERVABILITY", "on");
        if (!List.of("on", "off").contains(observability)) {
            fail("PERFLAB_OBSERVABILITY must be 'on' or 'off', not '" + observability + "'");
        }
        return observability.equals("on");
    }

    /** Observability off: none of the perflab_* gauges below is registered (they are read at each scrape only). */
    @Bean
    MeterFilter capacityGauges(@Value("${perflab.observability}") boolean observability) {
        return observability ? new MeterFilter() { } : MeterFilter.denyNameStartsWith("perflab.");
    }

    private static void fail(String message) {
        System.err.println("perflab-spring-mvc: " + message);
        System.exit(2);
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

    /** The common pool gauges of every perflab app (docs/ARCHITECTURE.md). */
    @Bean
    MeterBinder dbPoolMetrics(HikariDataSource dataSource) {
        return registry -> {
            gauge(registry, "perflab.db.pool.in.use", "DB connections lent out", dataSource,
                    HikariPoolMXBean::getActiveConnections);
            gauge(registry, "perflab.db.pool.waiting", "requests waiting for a DB connection", dataSource,
                    HikariPoolMXBean::getThreadsAwaitingConnection);
        };
    }

    private static void gauge(io.micrometer.core.instrument.MeterRegistry registry, String name, String description,
            HikariDataSource dataSource, ToIntFunction<HikariPoolMXBean> value) {
        Gauge.builder(name, dataSource, ds -> {
            HikariPoolMXBean pool = ds.getHikariPoolMXBean(); // null until the pool has started
            return pool == null ? 0 : value.applyAsInt(pool);
        }).description(description).register(registry);
    }

    /**
     * The common request-thread gauges of every perflab app with a bounded pool of request threads
     * (docs/ARCHITECTURE.md): Tomcat's workers, read from its executor at each scrape. Report 2's
     * cap: when all server.tomcat.threads.max are busy, requests wait in the executor's queue. On
     * virtual threads there is no such pool, and no gauge.
     */
    @Bean
    @ConditionalOnProperty(name = "spring.threads.virtual.enabled", havingValue = "false")
    MeterBinder requestThreadMetrics(ApplicationContext context) {
        return registry -> {
            requestGauge(registry, "perflab.request.threads.busy", "request threads handling a request", context,
                    ThreadPoolExecutor::getActiveCount);
            requestGauge(registry, "perflab.request.threads.max", "the request-thread pool's maximum size", context,
                    ThreadPoolExecutor::getMaximumPoolSize);
            requestGauge(registry, "perflab.request.queue", "requests waiting for a request thread", context,
                    executor -> executor.getQueue().size());
        };
    }

    private static void requestGauge(io.micrometer.core.instrument.MeterRegistry registry, String name,
            String description, ApplicationContext context, ToIntFunction<ThreadPoolExecutor> value) {
        Gauge.builder(name, context, c -> {
            ThreadPoolExecutor executor = tomcatExecutor(c); // null until Tomcat has started
            return executor == null ? 0 : value.applyAsInt(executor);
        }).tag("pool", "tomcat").description(description).register(registry);
    }

    private static ThreadPoolExecutor tomcatExecutor(ApplicationContext context) {
        if (context instanceof WebServerApplicationContext web && web.getWebServer() instanceof TomcatWebServer tomcat
                && tomcat.getTomcat().getConnector().getProtocolHandler().getExecutor() instanceof ThreadPoolExecutor pool) {
            return pool;
        }
        return null;
    }

    /**
     * On virtual threads the bounded resource is the JDK scheduler's carrier threads (docs/ARCHITECTURE.md),
     * read from jdk.management.VirtualThreadSchedulerMXBean (JDK 24+) by its name on the platform MBean
     * server: the app is compiled for Java 17, which lacks the interface. On an older JDK the MXBean does not
     * exist and none of these gauges is exported. The JDK keeps no count of pinned virtual threads (only the
     * JFR event jdk.VirtualThreadPinned): a virtual thread that blocks while pinned shows as a busy carrier.
     */
    @Bean
    @ConditionalOnProperty(name = "spring.threads.virtual.enabled", havingValue = "true")
    MeterBinder virtualThreadCarrierMetrics() {
        return registry -> {
            MBeanServer server = ManagementFactory.getPlatformMBeanServer();
            ObjectName scheduler = virtualThreadScheduler();
            if (!server.isRegistered(scheduler)) {
                return;
            }
            carrierGauge(registry, "perflab.virtual.thread.carriers.busy", "carriers running a virtual thread",
                    server, scheduler, "MountedVirtualThreadCount");
            carrierGauge(registry, "perflab.virtual.thread.carriers.max",
                    "the scheduler's parallelism (carriers beyond it only while it compensates for a blocked one)",
                    server, scheduler, "Parallelism");
            carrierGauge(registry, "perflab.virtual.thread.carriers", "carrier threads started, busy or idle",
                    server, scheduler, "PoolSize");
            carrierGauge(registry, "perflab.virtual.thread.queue", "virtual threads waiting for a carrier",
                    server, scheduler, "QueuedVirtualThreadCount");
        };
    }

    private static ObjectName virtualThreadScheduler() {
        try {
            return new ObjectName("jdk.management:type=VirtualThreadScheduler");
        } catch (MalformedObjectNameException e) {
            throw new IllegalStateException(e);
        }
    }

    private static void carrierGauge(io.micrometer.core.instrument.MeterRegistry registry, String name,
            String description, MBeanServer server, ObjectName scheduler, String attribute) {
        Gauge.builder(name, server, s -> {
            try {
                return ((Number) s.getAttribute(scheduler, attribute)).doubleValue();
            } catch (JMException e) {
                return Double.NaN;
            }
        }).tag("pool", "virtual").description(description).register(registry);
    }

    /**
     * Hikari starts its pool on the first getConnection(); do that before the web server starts, so
     * the pool is full (minimum-idle = maximum-pool-size) before the first request and no request
     * opens a connection. A DB that is down does not stop the app: /health/ready reports it.
     */
    @Bean
    SmartInitializingSingleton warmUpPool(HikariDataSource dataSource) {
        return () -> {
            try (Connection ignored = dataSource.getConnection()) {
                LoggerFactory.getLogger(MvcApplication.class).info("DB pool started");
            } catch (Exception e) {
                LoggerFactory.getLogger(MvcApplication.class).warn("DB pool not started: {}", e.getMessage());
            }
        };
    }
}
