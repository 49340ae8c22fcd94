package dev.perflab.quarkus;

import io.smallrye.common.annotation.NonBlocking;
import jakarta.ws.rs.GET;
import jakarta.ws.rs.Path;
import jakarta.ws.rs.Produces;
import jakarta.ws.rs.core.MediaType;

/**
 * TechEmpower's plaintext and JSON serialization tests (scenario plaintext-json): no database, the
 * framework's own cost. The answers are ready at once, so they are plain values on the IO thread
 * (@NonBlocking: without it Quarkus REST would hand a method that returns no Uni to a worker thread).
 */
@Path("/")
public class TechEmpowerResource {
    private static final String HELLO = "Hello, World!";

    /** TechEmpower's rule: a new object per request, serialized by the framework's JSON library (Jackson). */
    public record Message(String message) {
    }

    @GET
    @Path("plaintext")
    @Produces(MediaType.TEXT_PLAIN)
    @NonBlocking
    public String plaintext() {
        return HELLO;
    }

    @GET
    @Path("json")
    @Produces(MediaType.APPLICATION_JSON)
    @NonBlocking
    public Message json() {
        return new Message(HELLO);
    }
}
