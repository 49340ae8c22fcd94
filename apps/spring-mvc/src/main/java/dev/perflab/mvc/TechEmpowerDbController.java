package dev.perflab.mvc;

import com.samskivert.mustache.Mustache;
import com.samskivert.mustache.Template;
import dev.perflab.mvc.Model.World;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.springframework.http.MediaType;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.bind.annotation.RestController;

/**
 * TechEmpower's database tests (apps/contract/README.md): /db, /queries, /updates as JSON, /fortunes as the
 * HTML page of templates/fortunes.mustache, which JMustache renders per request and escapes every value of.
 * The template is compiled once, at start, by Spring Boot's Mustache compiler (its templates/ loader, UTF-8):
 * a view of Spring Boot's MustacheViewResolver (spring.mustache.servlet.cache false, its default) was
 * resolved, its template read and compiled again on every request: 28 of the 115 profile samples outside the
 * JIT at 200 req/s, where TechEmpower's Spring renders a template compiled at build.
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
    World db() {
        return store.findWorld(TechEmpower.randomId());
    }

    /** Each row its own SELECT, as TechEmpower requires (never one query for many ids). */
    @GetMapping(path = "/queries", produces = MediaType.APPLICATION_JSON_VALUE)
    List<World> queries(@RequestParam(required = false) String queries) {
        int count = TechEmpower.queries(queries);
        List<World> worlds = new ArrayList<>(count);
        for (int i = 0; i < count; i++) {
            worlds.add(store.findWorld(TechEmpower.randomId()));
        }
        return worlds;
    }

    @GetMapping(path = "/updates", produces = MediaType.APPLICATION_JSON_VALUE)
    List<World> updates(@RequestParam(required = false) String queries) {
        return store.updateWorlds(TechEmpower.queries(queries));
    }

    @GetMapping(path = "/fortunes", produces = "text/html;charset=UTF-8")
    String fortunes() {
        return fortunesPage.execute(Map.of("fortunes", TechEmpower.withAddedFortune(store.findFortunes())));
    }
}
