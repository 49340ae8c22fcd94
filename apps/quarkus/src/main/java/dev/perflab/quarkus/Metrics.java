package dev.perflab.quarkus;

import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tag;
import io.micrometer.core.instrument.config.MeterFilter;
import io.micrometer.core.instrument.distribution.DistributionStatisticConfig;
import io.quarkus.runtime.StartupEvent;
import jakarta.enterprise.event.Observes;
import jakarta.enterprise.inject.Produces;
import jakarta.inject.Singleton;

import java.util.Arrays;
import java.util.List;

/**
 * The lab's common metrics. The pool gauges read what Quarkus' Vert.x Micrometer binder already keeps
 * for the reactive SQL pool (sql.pool.active: connections lent out; sql.pool.queue.size: requests
 * waiting for one), so they count exactly what the pool does, without wrapping it.
 */
@Singleton
public class Metrics {
    /**
     * The buckets (upper bounds, ms) of http_server_requests_seconds, the same in every app: the contract's
     * list (apps/contract/openapi.yaml, /metrics x-http-server-requests-le-seconds, which says why each bound).
     */
    private static final double[] SERVER_LATENCY_BUCKETS_MS = {
            0.25, 0.5, 1, 2, 5, 10, 25, 50, 100, 105, 110, 150, 250, 500, 1000, 1050, 1100, 2000, 5000, 10000};

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

    void registerPoolGauges(@Observes StartupEvent event, MeterRegistry registry) {
        Gauge.builder("perflab.db.pool.in.use", registry, r -> sum(r, "sql.pool.active"))
                .description("DB connections in use").register(registry);
        Gauge.builder("perflab.db.pool.waiting", registry, r -> sum(r, "sql.pool.queue.size"))
                .description("Requests waiting for a DB connection").register(registry);
    }

    private static double sum(MeterRegistry registry, String gaugeName) {
        return registry.find(gaugeName).gauges().stream().mapToDouble(Gauge::value).sum();
    }
}
