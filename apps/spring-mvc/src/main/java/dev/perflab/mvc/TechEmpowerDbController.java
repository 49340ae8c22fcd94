package dev.perflab.mvc;

import dev.perflab.mvc.Model.World;
import java.util.ArrayList;
import java.util.List;
import org.springframework.http.MediaType;
import org.springframework.stereotype.Controller;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.bind.annotation.ResponseBody;
import org.springframework.web.servlet.ModelAndView;

/**
 * TechEmpower's database tests (apps/contract/README.md): /db, /queries, /updates as JSON, /fortunes as the
 * HTML page of templates/fortunes.mustache (JMustache escapes every value). A @Controller, not a
 * @RestController: /fortunes answers with a view.
 */
@Controller
class TechEmpowerDbController {

    private final Store store;

    TechEmpowerDbController(Store store) {
        this.store = store;
    }

    @GetMapping(path = "/db", produces = MediaType.APPLICATION_JSON_VALUE)
    @ResponseBody
    World db() {
        return store.findWorld(TechEmpower.randomId());
    }

    /** Each row its own SELECT, as TechEmpower requires (never one query for many ids). */
    @GetMapping(path = "/queries", produces = MediaType.APPLICATION_JSON_VALUE)
    @ResponseBody
    List<World> queries(@RequestParam(required = false) String queries) {
        int count = TechEmpower.queries(queries);
        List<World> worlds = new ArrayList<>(count);
        for (int i = 0; i < count; i++) {
            worlds.add(store.findWorld(TechEmpower.randomId()));
        }
        return worlds;
    }

    @GetMapping(path = "/updates", produces = MediaType.APPLICATION_JSON_VALUE)
    @ResponseBody
    List<World> updates(@RequestParam(required = false) String queries) {
        return store.updateWorlds(TechEmpower.queries(queries));
    }

    @GetMapping("/fortunes")
    ModelAndView fortunes() {
        return new ModelAndView("fortunes", "fortunes", TechEmpower.withAddedFortune(store.findFortunes()));
    }
}
