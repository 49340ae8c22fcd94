package dev.perflab.webflux;

import dev.perflab.webflux.Model.Book;
import dev.perflab.webflux.Model.BookOrder;
import dev.perflab.webflux.Model.Message;
import dev.perflab.webflux.Model.NewBook;
import dev.perflab.webflux.Model.NewOrder;
import dev.perflab.webflux.Model.Zipcode;
import jakarta.validation.Valid;
import jakarta.validation.constraints.Max;
import jakarta.validation.constraints.Min;
import jakarta.validation.constraints.NotBlank;
import jakarta.validation.constraints.Pattern;
import jakarta.validation.constraints.Size;
import java.time.Duration;
import org.springframework.dao.DuplicateKeyException;
import org.springframework.http.HttpStatus;
import org.springframework.http.MediaType;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.bind.annotation.ResponseStatus;
import org.springframework.web.bind.annotation.RestController;
import org.springframework.web.server.ResponseStatusException;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/** The endpoints of apps/contract/README.md. Constraints on parameters run Spring's method validation. */
@RestController
class ApiController {

    private static final String HELLO = "Hello, World!";

    private final Store store;

    ApiController(Store store) {
        this.store = store;
    }

    /**
     * The request's DB work, run to its end even if the client goes away first. WebFlux cancels a request's
     * subscription when its connection closes (a load generator closes its connections with requests in flight
     * when a phase ends), and a query cancelled half-read goes back to the pool with the rest of its answer unread:
     * the next request on that connection waits for an answer that never comes (r2dbc/r2dbc-pool#198,
     * asyncer-io/r2dbc-mysql#347). A CI simulation's books-orders measured phase had one such request, unanswered for over
     * 10 s after the warm-up's end cancelled six. Spring MVC and Quarkus finish the transaction of a client that
     * left; so does this app: the work is subscribed apart from the request (toFuture), and the request's
     * cancellation stops at it.
     */
    static <T> Mono<T> toTheEnd(Mono<T> work) {
        return Mono.fromFuture(work::toFuture, true);
    }

    /** As toTheEnd, for a query of several rows: read whole, then answered. */
    static <T> Flux<T> toTheEnd(Flux<T> rows) {
        return toTheEnd(rows.collectList()).flatMapIterable(all -> all);
    }

    @GetMapping("/zipcodes/{zip}")
    Mono<Zipcode> zipcode(@PathVariable @Pattern(regexp = Model.ZIP) String zip) {
        return toTheEnd(store.findZipcode(zip)).switchIfEmpty(Mono.error(
                () -> new ResponseStatusException(HttpStatus.NOT_FOUND, "zip code " + zip + " not found")));
    }

    /** Not required by Spring, so that a missing city reads "city: must not be blank" like a blank one. */
    @GetMapping("/zipcodes")
    Flux<Zipcode> zipcodesOfCity(@RequestParam(required = false) @NotBlank @Size(max = 64) String city) {
        return toTheEnd(store.findZipcodesByCity(city));
    }

    @PostMapping("/zipcodes")
    Mono<ResponseEntity<Zipcode>> getOrCreateZipcode(@RequestBody @Valid Zipcode zipcode) {
        return toTheEnd(store.getOrCreateZipcode(zipcode)
                .map(stored -> ResponseEntity.status(stored.created() ? HttpStatus.CREATED : HttpStatus.OK)
                        .body(stored.zipcode()))
                // A concurrent request inserted the zip first and its transaction has committed (our insert
                // waited on its row lock); ours rolled back. Read the winner's row in a new transaction.
                .onErrorResume(DuplicateKeyException.class, lostRace -> store.findZipcode(zipcode.zip())
                        .map(ResponseEntity::ok)
                        .switchIfEmpty(Mono.error(lostRace))));
    }

    /** Report 2: a non-blocking delay; the event-loop thread serves other requests meanwhile. */
    @GetMapping("/hello/{latency}")
    Mono<String> hello(@PathVariable @Min(0) @Max(10000) int latency) {
        return Mono.just("Welcome to reactive world ~").delayElement(Duration.ofMillis(latency));
    }

    @GetMapping("/greeting/{name}")
    String greeting(@PathVariable @NotBlank @Size(max = 64) String name) {
        return "hello " + name;
    }

    /** TechEmpower's plaintext test (scenario plaintext-json): a constant text, no DB. */
    @GetMapping(path = "/plaintext", produces = MediaType.TEXT_PLAIN_VALUE)
    String plaintext() {
        return HELLO;
    }

    /** TechEmpower's JSON test: a new object per request, serialized by Jackson. */
    @GetMapping(path = "/json", produces = MediaType.APPLICATION_JSON_VALUE)
    Message json() {
        return new Message(HELLO);
    }

    @GetMapping("/books")
    Flux<Book> books() {
        return toTheEnd(store.findBooks());
    }

    @PostMapping("/books")
    @ResponseStatus(HttpStatus.CREATED)
    Mono<Book> createBook(@RequestBody @Valid NewBook book) {
        return toTheEnd(store.createBook(book));
    }

    @PostMapping("/orders")
    @ResponseStatus(HttpStatus.CREATED)
    Mono<BookOrder> createOrder(@RequestBody @Valid NewOrder order) {
        return toTheEnd(store.createOrder(order));
    }
}
