package dev.perflab.quarkus;

import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tag;
import io.micrometer.core.instrument.config.MeterFilter;
import io.quarkus.runtime.StartupEvent;
import jakarta.enterprise.event.Observes;
import jakarta.enterprise.inject.Produces;
import jakarta.inject.Singleton;

import java.util.List;

/**
 * The lab's common metrics. The pool gauges read what Quarkus' Vert.x Micrometer binder already keeps
 * for the reactive SQL pool (sql.pool.active: connections lent out; sql.pool.queue.size: requests
 * waiting for one), so they count exactly what the pool does, without wrapping it.
 */
@Singleton
public class Metrics {
    @Produces
    @Singleton
    MeterFilter applicationTag() {
        return MeterFilter.commonTags(List.of(Tag.of("application", "quarkus")));
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
