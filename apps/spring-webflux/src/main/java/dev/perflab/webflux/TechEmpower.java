package dev.perflab.webflux;

import dev.perflab.webflux.Model.Fortune;
import dev.perflab.webflux.Model.World;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.SortedMap;
import java.util.TreeMap;
import java.util.concurrent.ThreadLocalRandom;

/**
 * TechEmpower's rules for their database tests (their "Framework tests overview"), the same in the three apps
 * (apps/contract/README.md): which rows a request reads, how many, and what it writes back.
 */
final class TechEmpower {

    static final int WORLD_ROWS = 10_000;
    static final int MAX_QUERIES = 500;
    static final String ADDED_FORTUNE = "Additional fortune added at request time.";

    /** ?queries=N: N clamped to 1..500; missing, empty or not a (32-bit) integer, 1. */
    static int queries(String value) {
        if (value == null) {
            return 1;
        }
        try {
            return Math.min(MAX_QUERIES, Math.max(1, Integer.parseInt(value)));
        } catch (NumberFormatException notAnInteger) {
            return 1;
        }
    }

    /** A World id drawn at random, 1..10000. */
    static int randomId() {
        return ThreadLocalRandom.current().nextInt(1, WORLD_ROWS + 1);
    }

    /**
     * The new numbers of the rows read, by id in ascending order: a row drawn twice is one row, given one new
     * number, so that every entry of the answer shows what is stored. Each differs from the number read, so
     * every row drawn is changed (TechEmpower's verify counts the rows changed).
     */
    static SortedMap<Integer, Integer> newNumbers(List<World> read) {
        SortedMap<Integer, Integer> numbers = new TreeMap<>();
        for (World world : read) {
            numbers.computeIfAbsent(world.id(), id -> {
                int drawn = ThreadLocalRandom.current().nextInt(1, WORLD_ROWS);
                return drawn >= world.randomNumber() ? drawn + 1 : drawn;
            });
        }
        return numbers;
    }

    /** Every Fortune row and the one added at request time (id 0), sorted by message. */
    static List<Fortune> withAddedFortune(List<Fortune> stored) {
        List<Fortune> fortunes = new ArrayList<>(stored.size() + 1);
        fortunes.addAll(stored);
        fortunes.add(new Fortune(0, ADDED_FORTUNE));
        fortunes.sort(Comparator.comparing(Fortune::message));
        return fortunes;
    }

    private TechEmpower() {
    }
}
