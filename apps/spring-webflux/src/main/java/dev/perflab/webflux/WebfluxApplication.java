package dev.perflab.webflux;

import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.binder.MeterBinder;
import io.r2dbc.pool.ConnectionPool;
import io.r2dbc.pool.PoolMetrics;
import java.time.Duration;
import java.util.function.ToIntFunction;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.SmartInitializingSingleton;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.context.annotation.Bean;
import org.springframework.core.NestedExceptionUtils;

@SpringBootApplication
public class WebfluxApplication {

    public static void main(String[] args) {
        SpringApplication.run(WebfluxApplication.class, args);
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
