package dev.perflab.quarkus;

import io.quarkus.runtime.configuration.MemorySize;
import io.vertx.core.http.HttpHeaders;
import io.vertx.core.json.Json;
import io.vertx.ext.web.Router;
import io.vertx.ext.web.RoutingContext;
import io.vertx.ext.web.handler.BodyHandler;
import jakarta.enterprise.event.Observes;
import jakarta.inject.Singleton;
import org.eclipse.microprofile.config.inject.ConfigProperty;

import java.util.List;

/**
 * quarkus.http.limits.max-body-size answers an oversized body with an empty 413; the contract wants
 * the JSON error body on every 4xx. This route runs just before Quarkus' own check (order -2): a
 * declared Content-Length over the limit is answered at once; a body without one (chunked) goes
 * through Vert.x's BodyHandler, which buffers at most the limit and fails the request with 413, which
 * the failure handler answers. Quarkus REST then reads the buffered body. Requests with a
 * Content-Length under the limit (all the benchmark's) take neither path.
 */
@Singleton
public class RequestLimits {
    private static final int PAYLOAD_TOO_LARGE = 413;

    void install(@Observes Router router, @ConfigProperty(name = "quarkus.http.limits.max-body-size") MemorySize maxBodySize) {
        long limit = maxBodySize.asLongValue();
        String body = Json.encode(new ErrorMapper.Error(PAYLOAD_TOO_LARGE,
                List.of("request body larger than " + limit + " bytes")));
        BodyHandler chunkedBody = BodyHandler.create(false).setBodyLimit(limit);
        router.route().order(-3).handler(context -> {
            long length = declaredLength(context);
            if (length > limit) {
                tooLarge(context, body);
            } else if (length < 0 && context.request().headers().contains(HttpHeaders.TRANSFER_ENCODING)) {
                chunkedBody.handle(context);
            } else {
                context.next();
            }
        }).failureHandler(context -> {
            if (context.statusCode() == PAYLOAD_TOO_LARGE && !context.response().headWritten()) {
                tooLarge(context, body);
            } else {
                context.next();
            }
        });
    }

    private static long declaredLength(RoutingContext context) {
        String length = context.request().getHeader(HttpHeaders.CONTENT_LENGTH);
        try {
            return length == null ? -1 : Long.parseLong(length);
        } catch (NumberFormatException e) {
            return -1;
        }
    }

    /** Connection: close, as Quarkus does: the unread body must not be taken for the next request. */
    private static void tooLarge(RoutingContext context, String body) {
        context.response().setStatusCode(PAYLOAD_TOO_LARGE)
                .putHeader(HttpHeaders.CONTENT_TYPE, "application/json")
                .putHeader(HttpHeaders.CONNECTION, "close")
                .end(body);
    }
}
