package dev.perflab.webflux;

import static dev.perflab.webflux.ApiController.toTheEnd;

import com.samskivert.mustache.Mustache;
import com.samskivert.mustache.Template;
import dev.perflab.webflux.Model.World;
import java.util.List;
import java.util.Map;
import org.springframework.http.MediaType;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.bind.annotation.RestController;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * TechEmpower's database tests (apps/contract/README.md): /db, /queries, /updates as JSON, /fortunes as the
 * HTML page of templates/fortunes.mustache, which JMustache renders per request and escapes every value of.
 * The template is compiled once, at start, by Spring Boot's Mustache compiler (its templates/ loader, UTF-8),
 * as Spring MVC's is: not a view resolved for every request (TechEmpower's Spring WebFlux renders a template
 * compiled at build). The DB work runs to its end when the client leaves (ApiController.toTheEnd says why).
 */
@RestController
class TechEmpowerDbController {

    private final Store store;
    private final Template fortunesPage;

    TechEmpowerDbController(Store store, Mustache.Compiler mustache) {
        this.store = store;
        this.fortunesPage = mustache.loadTemplate("fortunes");
    }

    @GetMapping(path = "/db", produces = MediaType.APPLICATION_JSON_VALUE)
    Mono<World> db() {
        return toTheEnd(store.findWorld(TechEmpower.randomId()));
    }

    /** Each row its own SELECT, one after the other, as TechEmpower requires (never one query for many ids). */
    @GetMapping(path = "/queries", produces = MediaType.APPLICATION_JSON_VALUE)
    Mono<List<World>> queries(@RequestParam(required = false) String queries) {
        return toTheEnd(Flux.range(0, TechEmpower.queries(queries))
                .concatMap(i -> store.findWorld(TechEmpower.randomId())).collectList());
    }

    @GetMapping(path = "/updates", produces = MediaType.APPLICATION_JSON_VALUE)
    Mono<List<World>> updates(@RequestParam(required = false) String queries) {
        return toTheEnd(store.updateWorlds(TechEmpower.queries(queries)));
    }

    @GetMapping(path = "/fortunes", produces = "text/html;charset=UTF-8")
    Mono<String> fortunes() {
        return toTheEnd(store.findFortunes().collectList())
                .map(stored -> fortunesPage.execute(Map.of("fortunes", TechEmpower.withAddedFortune(stored))));
    }
}
