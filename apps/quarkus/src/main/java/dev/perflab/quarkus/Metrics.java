package dev.perflab.quarkus;

import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tag;
import io.micrometer.core.instrument.config.MeterFilter;
import io.micrometer.core.instrument.distribution.DistributionStatisticConfig;
import io.netty.channel.EventLoopGroup;
import io.netty.util.concurrent.EventExecutor;
import io.netty.util.concurrent.SingleThreadEventExecutor;
import io.quarkus.arc.ClientProxy;
import io.quarkus.runtime.ExecutorRecorder;
import io.quarkus.runtime.StartupEvent;
import io.quarkus.runtime.util.ForwardingExecutorService;
import io.vertx.core.Vertx;
import io.vertx.core.net.impl.pool.ConnectionPool;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.impl.PoolBase;
import io.vertx.sqlclient.impl.PoolImpl;
import io.vertx.sqlclient.impl.pool.SqlConnectionPool;
import jakarta.enterprise.event.Observes;
import jakarta.enterprise.inject.Instance;
import jakarta.enterprise.inject.Produces;
import jakarta.inject.Singleton;
import org.eclipse.microprofile.config.inject.ConfigProperty;
import org.jboss.logging.Logger;
import org.jboss.threads.EnhancedQueueExecutor;

import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.Executor;
import java.util.function.ToDoubleFunction;

/**
 * The lab's common metrics (docs/ARCHITECTURE.md). Each gauge reads what the framework already keeps, at
 * each scrape: the pool gauges the reactive SQL pool (sql.pool.active, which Quarkus' Vert.x Micrometer
 * binder records: connections lent out; the pool's own list of requests waiting for one: waitingGauge), the
 * request gauges Quarkus' worker pool's own counters, the event-loop gauges Netty's queues.
 */
@Singleton
public class Metrics {
    /**
     * The buckets (upper bounds, ms) of http_server_requests_seconds, the same in every app: the contract's
     * list (apps/contract/openapi.yaml, /metrics x-http-server-requests-le-seconds, which says why each bound).
     */
    private static final double[] SERVER_LATENCY_BUCKETS_MS = {
            0.25, 0.5, 1, 2, 5, 10, 25, 50, 100, 105, 110, 150, 250, 500, 1000, 1050, 1100, 2000, 5000, 10000};

    private static final Logger LOG = Logger.getLogger(Metrics.class);

    /**
     * PERFLAB_OBSERVABILITY=on|off (the manifest's variant observability): off leaves out the lab's own
     * instrumentation, to measure what it costs (issue 23): the http.server.requests timer and its histogram
     * (the manifest's option also tells Quarkus' binder to ignore every path, so it records none) and the
     * perflab_* capacity gauges. Anything else stops the app at its start.
     */
    @Produces
    @Singleton
    MeterFilter observability(@ConfigProperty(name = "perflab.observability") String observability) {
        return switch (observability) {
            case "on" -> new MeterFilter() {
            };
            case "off" -> MeterFilter.deny(id -> id.getName().startsWith("http.server.")
                    || id.getName().startsWith("perflab."));
            default -> throw new IllegalStateException(
                    "PERFLAB_OBSERVABILITY must be 'on' or 'off', not '" + observability + "'");
        };
    }

    @Produces
    @Singleton
    MeterFilter applicationTag() {
        return MeterFilter.commonTags(List.of(Tag.of("application", "quarkus")));
    }

    /**
     * The server histogram with exactly the contract's buckets: service-level objectives only, and no
     * percentiles histogram (Micrometer's ~70 generic buckets per series). Quarkus has no property for it.
     */
    @Produces
    @Singleton
    MeterFilter serverLatencyBuckets() {
        double[] nanos = Arrays.stream(SERVER_LATENCY_BUCKETS_MS).map(ms -> ms * 1e6).toArray();
        return new MeterFilter() {
            @Override
            public DistributionStatisticConfig configure(Meter.Id id, DistributionStatisticConfig config) {
                if (!id.getName().equals("http.server.requests")) {
                    return config;
                }
                return DistributionStatisticConfig.builder().percentilesHistogram(false)
                        .serviceLevelObjectives(nanos).build().merge(config);
            }
        };
    }

    void registerGauges(@Observes StartupEvent event, MeterRegistry registry, Vertx vertx, Instance<Pool> pools) {
        Gauge.builder("perflab.db.pool.in.use", registry, r -> sum(r, "sql.pool.active"))
                .description("DB connections in use").register(registry);
        waitingGauge(registry, pools);

        // The worker pool (executor-thread-*): where PERFLAB_GREETING_DISPATCH=worker sends the greeting and
        // blocking work goes. Vert.x's worker_pool_* meters (pool_name="vert.x-worker-thread") run on the same
        // threads but count only what Vert.x itself submits (the /metrics scrape, health checks): 50 greetings
        // on a worker left their completed count where it was.
        EnhancedQueueExecutor workers = workerPool();
        if (workers == null) {
            LOG.warn("Quarkus' worker pool is not an EnhancedQueueExecutor here: no perflab_request_* gauges");
        } else {
            // getActiveCount counts only with jboss.threads.eqe.statistics.active-count (Main sets it), and
            // getQueueSize only with a bounded queue (quarkus.thread-pool.queue-size); -1 otherwise.
            workerGauge(registry, "perflab.request.threads.busy", "worker threads running a task", workers,
                    EnhancedQueueExecutor::getActiveCount);
            workerGauge(registry, "perflab.request.threads.max", "the worker pool's maximum size", workers,
                    EnhancedQueueExecutor::getMaximumPoolSize);
            workerGauge(registry, "perflab.request.queue", "tasks waiting for a worker thread", workers,
                    EnhancedQueueExecutor::getQueueSize);
        }

        // The Vert.x event loops that serve HTTP and the reactive MySQL client (not the acceptor loop).
        EventLoopGroup loops = vertx.nettyEventLoopGroup();
        Gauge.builder("perflab.event.loop.pending.tasks", loops, Metrics::pendingTasks).tag("pool", "vertx")
                .description("tasks waiting in the event loops' queues, summed over the loops").register(registry);
        Gauge.builder("perflab.event.loops", loops, Metrics::count).tag("pool", "vertx")
                .description("event loops (threads)").register(registry);
    }

    private static void workerGauge(MeterRegistry registry, String name, String description,
            EnhancedQueueExecutor workers, ToDoubleFunction<EnhancedQueueExecutor> value) {
        Gauge.builder(name, workers, value).tag("pool", "quarkus-worker").strongReference(true)
                .description(description).register(registry);
    }

    /**
     * Quarkus hands its executor out wrapped (NoopShutdownScheduledExecutorService, so that no caller shuts it
     * down) and the wrapper's delegate() is protected: unwrapped once here, by reflection.
     */
    private static EnhancedQueueExecutor workerPool() {
        Executor executor = ExecutorRecorder.getCurrent();
        try {
            Method delegate = ForwardingExecutorService.class.getDeclaredMethod("delegate");
            delegate.setAccessible(true);
            while (executor instanceof ForwardingExecutorService forwarding) {
                executor = (Executor) delegate.invoke(forwarding);
            }
        } catch (ReflectiveOperationException e) {
            LOG.warnf("cannot unwrap Quarkus' worker pool: %s", e);
            return null;
        }
        return executor instanceof EnhancedQueueExecutor pool ? pool : null;
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
     * Requests waiting for a DB connection: the reactive pool's own list of waiters (Vert.x's
     * ConnectionPool.waiters()), not the binder's sql.pool.queue.size. Vert.x 4.5.26's SqlConnectionPool counts a
     * request out of that queue twice when its command fails after it got a connection (PoolMetrics.begin, then
     * rejected), so the gauge drifts below the truth for good: it read -1 after the contract suite's requests whose
     * clients left (tests/contract/test_contract_cancel.py). The list is reached through the CDI proxy and by
     * reflection (PoolBase.delegate, PoolImpl.pool, SqlConnectionPool.pool: internals of the pinned Vert.x); where
     * they are not there, the binder's gauge, as before, and a warning.
     */
    private static void waitingGauge(MeterRegistry registry, Instance<Pool> pools) {
        ConnectionPool<?> waiters = null;
        try {
            if (!pools.isResolvable()) {
                LOG.warn("no reactive SQL pool to read the waiters of: perflab_db_pool_waiting reads Vert.x's "
                        + "sql.pool.queue.size");
            } else {
                Object pool = ClientProxy.unwrap(pools.get());  // the bean is the CDI container's proxy
                if (pool instanceof PoolBase<?> base) {
                    pool = field(PoolBase.class, "delegate", base);
                }
                Object connections = field(PoolImpl.class, "pool", pool);
                waiters = (ConnectionPool<?>) field(SqlConnectionPool.class, "pool", connections);
            }
        } catch (ReflectiveOperationException | ClassCastException e) {
            LOG.warnf("cannot reach the reactive pool's waiters (%s): perflab_db_pool_waiting reads Vert.x's "
                    + "sql.pool.queue.size, which drifts below zero after commands that failed", e);
        }
        if (waiters == null) {
            Gauge.builder("perflab.db.pool.waiting", registry, r -> sum(r, "sql.pool.queue.size"))
                    .description("Requests waiting for a DB connection").register(registry);
        } else {
            Gauge.builder("perflab.db.pool.waiting", waiters, ConnectionPool::waiters).strongReference(true)
                    .description("Requests waiting for a DB connection").register(registry);
        }
    }

    private static Object field(Class<?> owner, String name, Object target) throws ReflectiveOperationException {
        Field field = owner.getDeclaredField(name);
        field.setAccessible(true);
        return field.get(owner.cast(target));
    }

    private static double sum(MeterRegistry registry, String gaugeName) {
        return registry.find(gaugeName).gauges().stream().mapToDouble(Gauge::value).sum();
    }
}
