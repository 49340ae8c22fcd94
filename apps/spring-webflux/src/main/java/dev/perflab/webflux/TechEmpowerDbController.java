package dev.perflab.webflux;

import static dev.perflab.webflux.ApiController.toTheEnd;

import dev.perflab.webflux.Model.World;
import java.util.List;
import org.springframework.http.MediaType;
import org.springframework.stereotype.Controller;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.bind.annotation.ResponseBody;
import org.springframework.web.reactive.result.view.Rendering;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * TechEmpower's database tests (apps/contract/README.md): /db, /queries, /updates as JSON, /fortunes as the
 * HTML page of templates/fortunes.mustache (JMustache escapes every value). A @Controller, not a
 * @RestController: /fortunes answers with a view. The DB work runs to its end when the client leaves
 * (ApiController.toTheEnd says why).
 */
@Controller
class TechEmpowerDbController {

    private final Store store;

    TechEmpowerDbController(Store store) {
        this.store = store;
    }

    @GetMapping(path = "/db", produces = MediaType.APPLICATION_JSON_VALUE)
    @ResponseBody
    Mono<World> db() {
        return toTheEnd(store.findWorld(TechEmpower.randomId()));
    }

    /** Each row its own SELECT, one after the other, as TechEmpower requires (never one query for many ids). */
    @GetMapping(path = "/queries", produces = MediaType.APPLICATION_JSON_VALUE)
    @ResponseBody
    Mono<List<World>> queries(@RequestParam(required = false) String queries) {
        return toTheEnd(Flux.range(0, TechEmpower.queries(queries))
                .concatMap(i -> store.findWorld(TechEmpower.randomId())).collectList());
    }

    @GetMapping(path = "/updates", produces = MediaType.APPLICATION_JSON_VALUE)
    @ResponseBody
    Mono<List<World>> updates(@RequestParam(required = false) String queries) {
        return toTheEnd(store.updateWorlds(TechEmpower.queries(queries)));
    }

    @GetMapping("/fortunes")
    Mono<Rendering> fortunes() {
        return toTheEnd(store.findFortunes().collectList()).map(stored -> Rendering.view("fortunes")
                .modelAttribute("fortunes", TechEmpower.withAddedFortune(stored)).build());
    }
}
