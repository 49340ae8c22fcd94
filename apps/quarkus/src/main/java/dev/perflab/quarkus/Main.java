package dev.perflab.quarkus;

import io.quarkus.runtime.Quarkus;
import io.quarkus.runtime.annotations.QuarkusMain;

/** The entry point Quarkus would generate, after one switch that must be set before Quarkus starts. */
@QuarkusMain
public class Main {
    public static void main(String... args) {
        // JBoss Threads' EnhancedQueueExecutor, Quarkus' worker pool, keeps its busy-thread count only when
        // asked, in a static read when the class loads; perflab_request_threads_busy reports it (Metrics).
        // Its cost: one atomic increment and decrement per task run on a worker thread.
        System.setProperty("jboss.threads.eqe.statistics.active-count", "true");
        Quarkus.run(args);
    }
}
