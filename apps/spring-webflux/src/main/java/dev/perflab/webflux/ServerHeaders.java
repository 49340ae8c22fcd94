package dev.perflab.webflux;

import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.Locale;
import org.springframework.core.Ordered;
import org.springframework.core.annotation.Order;
import org.springframework.http.HttpHeaders;
import org.springframework.stereotype.Component;
import org.springframework.web.server.ServerWebExchange;
import org.springframework.web.server.WebFilter;
import org.springframework.web.server.WebFilterChain;
import reactor.core.publisher.Mono;

/**
 * TechEmpower requires a Server and a Date header on every answer; Reactor Netty sends neither (Tomcat
 * sends Date by itself, and Spring Boot's server.server-header does not apply to Netty). This filter,
 * first of the chain, adds both: Server names the app, Date is the HTTP-date (IMF-fixdate) of the
 * current second, formatted once a second rather than per request.
 */
@Component
@Order(Ordered.HIGHEST_PRECEDENCE)
class ServerHeaders implements WebFilter {

    private static final String SERVER = "spring-webflux";
    private static final DateTimeFormatter IMF_FIXDATE =
            DateTimeFormatter.ofPattern("EEE, dd MMM yyyy HH:mm:ss 'GMT'", Locale.US).withZone(ZoneOffset.UTC);

    private record Second(long epochSecond, String date) {
    }

    private volatile Second current = new Second(Long.MIN_VALUE, "");

    @Override
    public Mono<Void> filter(ServerWebExchange exchange, WebFilterChain chain) {
        HttpHeaders headers = exchange.getResponse().getHeaders();
        headers.set(HttpHeaders.SERVER, SERVER);
        headers.set(HttpHeaders.DATE, date());
        return chain.filter(exchange);
    }

    private String date() {
        long epochSecond = System.currentTimeMillis() / 1000;
        Second second = current;
        if (second.epochSecond() != epochSecond) {
            second = new Second(epochSecond, IMF_FIXDATE.format(Instant.ofEpochSecond(epochSecond)));
            current = second;
        }
        return second.date();
    }
}
