package dev.perflab.quarkus;

import io.quarkus.runtime.Startup;
import io.smallrye.mutiny.Uni;
import io.smallrye.mutiny.infrastructure.Infrastructure;
import jakarta.inject.Singleton;
import jakarta.validation.constraints.Max;
import jakarta.validation.constraints.NotBlank;
import jakarta.validation.constraints.Pattern;
import jakarta.validation.constraints.Size;
import jakarta.ws.rs.GET;
import jakarta.ws.rs.Path;
import jakarta.ws.rs.Produces;
import jakarta.ws.rs.core.MediaType;
import org.eclipse.microprofile.config.inject.ConfigProperty;
import org.jboss.resteasy.reactive.RestPath;

import java.time.Duration;
import java.util.concurrent.Executor;

/** Reports 2 and 3: no database, only dispatch and timers. Created at startup to check its setting. */
@Startup
@Singleton
@Path("/")
@Produces(MediaType.TEXT_PLAIN)
public class GreetingResource {
    private final Executor greetingExecutor;

    /**
     * Report 3 compares the IO thread with a worker thread. @Blocking/@NonBlocking are fixed at build
     * time, so the deploy-time switch is made here: "worker" runs the greeting on Quarkus' worker pool
     * (the pool @Blocking uses) and RESTEasy Reactive resumes the response from there; "io" stays on
     * the Vert.x event loop that received the request.
     */
    GreetingResource(@ConfigProperty(name = "perflab.greeting.dispatch") String dispatch) {
        this.greetingExecutor = switch (dispatch) {
            case "io" -> null;
            case "worker" -> Infrastructure.getDefaultWorkerPool();
            default -> throw new IllegalArgumentException(
                    "PERFLAB_GREETING_DISPATCH must be 'io' or 'worker', not '" + dispatch + "'");
        };
    }

    @GET
    @Path("greeting/{name}")
    public Uni<String> greeting(@RestPath @NotBlank @Size(max = 64) String name) {
        Uni<String> greeting = Uni.createFrom().item(() -> "hello " + name);
        return greetingExecutor == null ? greeting : greeting.runSubscriptionOn(greetingExecutor);
    }

    /** A String parameter so that "abc" and "-1" are 400 (a failed int conversion would be a 404). */
    @GET
    @Path("hello/{latency}")
    public Uni<String> hello(@RestPath @Pattern(regexp = "[0-9]{1,5}") @Max(10_000) String latency) {
        Uni<String> welcome = Uni.createFrom().item("Welcome to reactive world ~");
        int millis = Integer.parseInt(latency);
        return millis == 0 ? welcome : welcome.onItem().delayIt().by(Duration.ofMillis(millis));
    }
}
