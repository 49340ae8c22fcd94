"""perflab watch without a lab: the busiest tier, the formatting, the rendered screen, which
PromQL of perflab/tiers.py each figure comes from, and the command's exits."""

import math
import re

import pytest

from perflab import tiers, watch
from perflab.prometheus import Prometheus, PrometheusError, Sample
from perflab.watch import FigureValue, RunView, Snapshot, State, TierView

from .test_cli import perflab

AT = 1_700_000_000.0


def test_the_busiest_tier_is_the_highest_utilization() -> None:
    assert watch.busiest_from({"app": 0.97, "db": 0.20, "loadgen": 0.5}) == ("app", 0.97)
    assert watch.busiest_from({"db": 1.4}) == ("db", 1.4)


def test_no_busiest_tier_without_finite_figures() -> None:
    assert watch.busiest_from({}) is None
    assert watch.busiest_from({"app": math.nan, "db": math.inf}) is None
    assert watch.busiest_from({"app": math.nan, "db": 0.1}) == ("db", 0.1)


def test_a_tie_names_one_tier_every_time() -> None:
    assert watch.busiest_from({"app": 0.5, "db": 0.5}) == watch.busiest_from({"db": 0.5, "app": 0.5})


@pytest.mark.parametrize(("value", "unit", "text"), [
    (None, "short", "-"),
    (0.0, "ops", "0"),
    (3.0, "short", "3"),
    (2.345, "reqps", "2.35"),
    (123.456, "reqps", "123.5"),
    (0.37, "percentunit", "37%"),
    (math.nan, "ops", "NaN"),
])
def test_figures_are_formatted_by_unit(value: float | None, unit: str, text: str) -> None:
    assert watch.format_value(value, unit) == text


def test_memory_cores_and_bars() -> None:
    assert watch.format_bytes(None) == "-"
    assert watch.format_bytes(512) == "512 B"
    assert watch.format_bytes(363.6 * 2**20) == "363.6 MiB"
    assert watch.format_bytes(1.5 * 2**30) == "1.5 GiB"
    assert watch.format_cores(0.456, 2.0) == "0.46/2 cores"
    assert watch.format_cores(0.01, None) == "0.01/- cores"
    assert watch.format_cores(None, None) == "-"
    assert watch.bar(0.5) == "[#####-----]"
    assert watch.bar(1.7) == "[##########+"
    assert watch.bar(None) == "[          ]"


def _snapshot(run: RunView | None = None, achieved: float | None = None, source: str | None = None) -> Snapshot:
    views = (
        TierView("loadgen", 0.12, 0.12, 1.0, 80 * 2**20,
                 (FigureValue("requests/s achieved", "reqps", 498.7, "vegeta's count"),),
                 (FigureValue("failed requests/s", "reqps", None),)),
        TierView("app", 0.97, 0.97, 1.0, 400 * 2**20,
                 (FigureValue("requests waiting for a DB connection", "short", 3.0),
                  FigureValue("JVM threads blocked", "short", 0.0)), ()),
        TierView("db", 0.31, 0.31, 1.0, 250 * 2**20, (FigureValue("disk busy", "percentunit", 0.05),), ()),
        TierView("monitoring", 0.05, 0.05, 1.0, 110 * 2**20),
    )
    return Snapshot(at=AT, tiers=views, busiest=("app", 0.97), run=run, achieved_rate=achieved,
                    achieved_source=source)


def _text(state: State) -> str:
    return "\n".join(text for text, _ in watch.render(state, now=AT))


def test_the_screen_shows_every_tier_and_names_the_busiest() -> None:
    state = State(url="http://prom:9090", interval_s=5, window="30s", snapshot=_snapshot())
    lines = watch.render(state, now=AT)
    text = "\n".join(t for t, _ in lines)
    assert "http://prom:9090" in lines[0][0] and "q: quit" in lines[0][0]
    rows = {t[1:].split()[0]: t for t, _ in lines if t[1:].split()[:1] and t[1:].split()[0] in tiers.TIERS}
    assert set(rows) == set(tiers.TIERS)
    assert rows["app"].startswith("*app") and "97%" in rows["app"] and "0.97/1 cores" in rows["app"]
    assert "400.0 MiB" in rows["app"] and "requests waiting for a DB connection: 3" in rows["app"]
    assert rows["db"].startswith(" db") and "disk busy: 5%" in rows["db"]
    assert rows["monitoring"].rstrip().endswith("-")
    assert "JVM threads blocked: 0" in text
    assert "failed requests/s: -" in text and "requests/s achieved: 498.7 (vegeta's count)" in rows["loadgen"]
    assert "busiest tier: app (97% of its 1 allotted core busy)" in text
    assert ("busiest tier: app (97% of its 1 allotted core busy)", watch.BUSIEST) in lines
    assert "run: none in progress" in text
    assert "UNREACHABLE" not in text


def _screen(run: RunView | None, achieved: float | None = None, source: str | None = None) -> str:
    return _text(State(url="u", interval_s=5, window="30s", snapshot=_snapshot(run, achieved, source)))


def test_the_run_in_progress_with_the_achieved_rate_and_whose_count_it_is() -> None:
    run = RunView("20250101T000000Z-quarkus-zipcodes", "quarkus", "zipcodes", "vegeta", "measure", 500.0)
    text = _screen(run, 498.7, "vegeta")
    assert "run: 20250101T000000Z-quarkus-zipcodes  phase measure  app quarkus  scenario zipcodes  tool vegeta" in text
    assert "target 500 req/s  achieved 498.7 req/s (100% of target; vegeta's count)" in text
    # vegeta's exporter is scraped only while a phase runs: until its first scrapes, the app's count
    assert "achieved 190.0 req/s (38% of target; the app's count: no series from vegeta's exporter yet)" in _screen(
        run, 190.0, "app")
    wrk2_run = RunView("r", "spring-mvc", "greeting", "wrk2", "warmup", 500.0)
    assert ("target 500 req/s  achieved 498.7 req/s (100% of target; the app's count: wrk2 exports no metrics)"
            in _screen(wrk2_run, 498.7, "app"))


def test_no_rate_from_either_source_says_why() -> None:
    wrk2_run = RunView("r", "spring-mvc", "greeting", "wrk2", "warmup", 500.0)
    assert ("target 500 req/s  achieved - (wrk2 exports no metrics and the app's request counter has no series "
            "(is an app deployed and scraped? make lab-status))") in _screen(wrk2_run)
    vegeta_run = RunView("r", "quarkus", "zipcodes", "vegeta", "measure", 200.0)
    assert "achieved - (no series from vegeta's exporter yet and the app's request counter has no series" in _screen(
        vegeta_run)
    assert "run: none in progress\n" in _screen(None)


def test_between_runs_the_rate_says_whose_count_it_is() -> None:
    assert "run: none in progress  (vegeta: 498.7 req/s)" in _screen(None, 498.7, "vegeta")
    assert "run: none in progress  (the app counts 3.2 req/s)" in _screen(None, 3.2, "app")


def test_run_info_labels() -> None:
    labels = {"run_id": "r1", "app": "quarkus", "scenario": "zipcodes", "tool": "vegeta", "phase": "warmup",
              "target_rate": "200"}
    assert watch.run_from(labels) == RunView("r1", "quarkus", "zipcodes", "vegeta", "warmup", 200.0)
    assert watch.run_from(None) is None
    assert watch.run_from({"run_id": "r2"}) == RunView("r2", "?", "?", "?", "?", None)


def test_unreachable_prometheus_is_one_line_and_keeps_the_last_figures() -> None:
    state = State(url="u", interval_s=2, window="30s", error="Prometheus at u is unreachable (refused).", attempts=4)
    lines = watch.render(state, now=AT)
    assert [style for _, style in lines].count(watch.ALERT) == 1
    assert lines[1] == ("PROMETHEUS UNREACHABLE (attempt 4, retrying every 2s): Prometheus at u is unreachable "
                        "(refused).", watch.ALERT)
    assert len(lines) == 2
    wrapped = watch.fit(lines, 40)
    assert len(wrapped[0][0]) == 40 and all(len(text) <= 40 for text, _ in wrapped)
    assert " ".join(text for text, style in wrapped if style == watch.ALERT) == lines[1][0]
    state.snapshot = _snapshot()
    text = _text(state)
    assert "the last answer" in text and "busiest tier: app" in text


class RecordedPrometheus(Prometheus):
    """Answers the PromQL of perflab/tiers.py from a table; any other query is an error."""

    def __init__(self, answers: dict[str, list[Sample]]) -> None:
        super().__init__("http://recorded")
        self.answers = answers
        self.asked: list[str] = []

    def query(self, expr: str, at: float | None = None) -> list[Sample]:
        assert at == AT, "every query of a snapshot is evaluated at the same instant"
        self.asked.append(expr)
        if expr not in self.answers:
            raise PrometheusError(f"unexpected query {expr!r}")
        return self.answers[expr]


def test_collect_takes_every_figure_from_tiers() -> None:
    window = "30s"
    per_tier = {"loadgen": 0.1, "app": 0.9, "db": 0.3, "monitoring": 0.05}
    answers = {
        tiers.cpu_utilization(window): [Sample({"tier": t}, v) for t, v in per_tier.items()],
        tiers.cpu_busy_cores(window): [Sample({"tier": t}, v * 2) for t, v in per_tier.items()],
        tiers.cpu_allotted_cores(): [Sample({"tier": t}, 2.0) for t in per_tier],
        tiers.memory_resident_bytes(): [Sample({"tier": "app"}, 2.0**30)],
        tiers.busiest_tier(window): [Sample({"tier": "app"}, 0.9)],
        watch.RUN_INFO: [Sample({"run_id": "r", "phase": "measure", "target_rate": "200", "tool": "wrk2"}, 1.0)],
        tiers.DB_ENGINE: [Sample({"engine": "PostgreSQL"}, 1.0)],
    }
    for figure in (*tiers.saturation(window), *tiers.errors(window)):
        answers[figure.expr] = [Sample({}, 7.0)]
    answers[tiers.failed_request_rate(window)] = [Sample({tiers.SOURCE_LABEL: "app"}, 7.0)]
    # The rate achieved is also the loadgen's saturation figure: one PromQL, read once per figure.
    answers[tiers.request_rate(window)] = [Sample({tiers.SOURCE_LABEL: "app"}, 199.5)]
    prometheus = RecordedPrometheus(answers)
    snapshot = watch.collect(prometheus, window, at=AT)
    assert set(prometheus.asked) == set(answers)
    assert [v.tier for v in snapshot.tiers] == list(tiers.TIERS)
    app = snapshot.tiers[1]
    assert (app.utilization, app.busy_cores, app.allotted_cores, app.memory_bytes) == (0.9, 1.8, 2.0, 2.0**30)
    assert [f.name for f in app.saturation] == [f.name for f in tiers.saturation(window) if f.tier == "app"]
    loadgen = snapshot.tiers[0]
    assert loadgen.saturation == (FigureValue("requests/s achieved", "reqps", 199.5, "the app's count"),)
    assert loadgen.errors == (FigureValue("failed requests/s", "reqps", 7.0, "the app's 4xx/5xx"),)
    assert all(f.value == 7.0 and f.source is None for v in snapshot.tiers[1:] for f in (*v.saturation, *v.errors))
    assert snapshot.tiers[3].memory_bytes is None and snapshot.tiers[3].saturation == ()
    assert snapshot.busiest == ("app", 0.9)
    assert snapshot.run is not None and snapshot.run.target_rate == 200.0
    assert (snapshot.achieved_rate, snapshot.achieved_source) == (199.5, "app")
    assert ("achieved 199.5 req/s (100% of target; the app's count: wrk2 exports no metrics)"
            in _text(State(url="u", interval_s=5, window=window, snapshot=snapshot)))
    # The db tier names its engine, the others nothing.
    assert [v.service for v in snapshot.tiers] == [None, None, "PostgreSQL", None]
    assert re.search(r"^ db .*   engine: PostgreSQL$", _text(State(url="u", interval_s=5, window=window, snapshot=snapshot)),
                     re.MULTILINE)


def test_once_against_an_unreachable_prometheus_says_so_in_one_line() -> None:
    done = perflab("watch", "--once", "--prometheus", "http://127.0.0.1:1")
    assert done.returncode == 1
    assert done.stdout == ""
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert "Prometheus at http://127.0.0.1:1 is unreachable" in done.stderr


def test_watch_needs_a_terminal() -> None:
    done = perflab("watch", "--prometheus", "http://127.0.0.1:1")
    assert done.returncode == 2
    assert "needs a terminal; --once prints one snapshot" in done.stderr


@pytest.mark.parametrize("option", [("--window", "30"), ("--window", "0s"), ("--window", "5x"), ("--interval", "0"),
                                    ("--interval", "soon")])
def test_bad_options_are_usage_errors(option: tuple[str, str]) -> None:
    done = perflab("watch", "--once", *option)
    assert done.returncode == 2 and "Traceback" not in done.stderr
