package dev.perflab.quarkus;

import io.vertx.core.http.HttpHeaders;
import io.vertx.ext.web.Router;
import jakarta.enterprise.event.Observes;
import jakarta.inject.Singleton;

import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.Locale;

/**
 * TechEmpower requires a Server and a Date header on every answer; Vert.x sends neither (Tomcat sends
 * Date by itself). A route at the front of the router (before RequestLimits, order -3) adds both to
 * every answer: Server names the app, Date is the HTTP-date (IMF-fixdate) of the current second,
 * formatted once a second rather than per request.
 */
@Singleton
public class ServerHeaders {
    private static final CharSequence SERVER = HttpHeaders.createOptimized("quarkus");
    private static final DateTimeFormatter IMF_FIXDATE =
            DateTimeFormatter.ofPattern("EEE, dd MMM yyyy HH:mm:ss 'GMT'", Locale.US).withZone(ZoneOffset.UTC);

    private record Second(long epochSecond, CharSequence date) {
    }

    private volatile Second current = new Second(Long.MIN_VALUE, "");

    void install(@Observes Router router) {
        router.route().order(-4).handler(context -> {
            context.response().headers().add(HttpHeaders.SERVER, SERVER).add(HttpHeaders.DATE, date());
            context.next();
        });
    }

    private CharSequence date() {
        long epochSecond = System.currentTimeMillis() / 1000;
        Second second = current;
        if (second.epochSecond() != epochSecond) {
            second = new Second(epochSecond,
                    HttpHeaders.createOptimized(IMF_FIXDATE.format(Instant.ofEpochSecond(epochSecond))));
            current = second;
        }
        return second.date();
    }
}
