"""A results directory for the report tests, built the way `make bench` builds one: real tool
output parsed by `perflab parse-wrk2` / `parse-vegeta`, judged by `perflab judge`, a sweep.json
written by perflab.sweep from the run directories; plus the bad input a results directory meets
in practice (an empty directory, a run cut short, corrupt files).

Sources: the wrk2 and vegeta fixtures of tests/unit/fixtures (real outputs of local servers),
fixtures/vegeta-quarkus-zipcodes-500rps (a run of the local lab: its context, observations
and utilization.json, with vegeta's output; its README says where each comes from) and
fixtures/vegeta-zipcodes-warmup-200rps (vegeta's warm-up and measured phase against a local
stand-in, with the stand-in's CPU as utilization.json on the same clock). As `perflab collect`
does for every vegeta run now, timeseries.json is written beside vegeta's results (`perflab
collect --timeseries`), except for the lab run, which predates it. The wrk2 run WRK2_OVER_TIME
borrows the lab run's utilization.json, the only one of a lab run at hand. The
contexts of the fixture runs borrow real deploy figures (start to first request) from lab runs;
their latency is the fixtures' own. The runs side by side (SIDE_BY_SIDE: three apps and a variant
at one scenario, rate and tool) also borrow, as their observations, the app's busy cores and max
RSS of three lab runs of greeting (20261124T002526Z, ...002724Z, ...002937Z, at about 30 req/s).
Their server-side latency (the apps' own histogram, SIDE_BY_SIDE_SERVER) is made up for the page, in
the buckets a warm app answers greeting in (no lab run with the histogram was at hand), as is the
wrk2 run's (WRK2_OVER_TIME): its timeseries.json is built by perflab.timeseries from range answers
of a Prometheus that scraped the fixture's stand-in every 5 s (ScrapedStandIn: one request at a time,
4 ms each, about 228 answered a second of the 600 asked), over the lab run's utilization window, so
that the app's figures and its CPU share one axis. Three runs of that set were profiled (PROFILE_APP=cpu): they
borrow the stacks of the same apps on plaintext-json (tests/unit/fixtures/profiles), the fourth says why it has
none in profile_fetch.yml's words.
"""

from __future__ import annotations

import gzip
import json
import shutil
import subprocess
import sys
from dataclasses import dataclass, replace
from pathlib import Path

from perflab import histogram, rundir, sweep, timeseries
from perflab.audit import Verdict
from perflab.model import AppSettings, Repetition, RunContext, RunResult, ScenarioRun, loads
from perflab.observations import Observations, ServerLatency, ServerQuantile, TierCpu
from perflab.prometheus import Prometheus, Series

HERE = Path(__file__).resolve().parent
UNIT_FIXTURES = HERE.parent / "unit" / "fixtures"
PROFILES = UNIT_FIXTURES / "profiles"  # async-profiler's collapsed stacks of the lab's apps (its README.md)
LAB_RUN = HERE / "fixtures" / "vegeta-quarkus-zipcodes-500rps"
LAB_RUN_ID = "20261121T142231Z-quarkus-zipcodes"
MIB = 1024 * 1024
# Report 3's max RSS of the IO-thread Quarkus, given to one run as the app's own max RSS.
QUARKUS_MAX_RSS_BYTES = round(97.9 * MIB)


def perflab(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "perflab", *map(str, args)],
                          capture_output=True, text=True, timeout=120)


@dataclass(frozen=True)
class FixtureRun:
    run_id: str
    raw: Path  # the tool's output
    tool: str
    rate: float
    app: str
    scenario: str
    start_to_first_request_ms: float
    environment: tuple[tuple[str, str], ...] = ()
    duration_s: float = 20.0  # the measured phase: vegeta's -duration (its output does not carry it)
    table: Path | None = None  # wrk2: the run's percentile table, kept beside its text as the bench does
    observed: tuple[float, float] | None = None  # the app's busy cores over the phase, its max RSS in bytes
    warmup: Path | None = None  # vegeta: the warm-up's results, kept beside the measured phase's as the bench does
    warmup_s: float = 10.0
    utilization: Path | None = None  # utilization.json
    repetition: Repetition | None = None  # REPEAT=N: the run's group and place
    server: ServerLatency | None = None  # the app's own latency, as perflab.observe records it
    profile: Path | None = None  # PROFILE_APP=cpu: the window's collapsed stacks (tests/unit/fixtures/profiles)
    profile_error: str | None = None  # PROFILE_APP=cpu, and why the window has no profile (profile-error.json)
    versions: tuple[tuple[str, str], ...] = ()  # context.json's versions: ("database", "postgres (PostgreSQL) 15.14")


GREETING_ROUTES = ("GET /greeting/{name}",)


def greeting_server(requests: float, p50: tuple[float, float, float], p99: tuple[float, float, float]) -> ServerLatency:
    """The app's own greeting latency: p50 and p99 as (ms, bucket's low, bucket's high)."""
    return ServerLatency(routes=GREETING_ROUTES, requests=requests, p50=ServerQuantile(*p50), p99=ServerQuantile(*p99))


PROFILE_NOT_WRITTEN = "its files were not written within 60 s of the window's end"  # profile_fetch.yml's words
GOOD_RUNS = (
    FixtureRun("20260102T100000Z-quarkus-greeting", UNIT_FIXTURES / "wrk2" / "wrk2-steady-2000rps.txt",
               "wrk2", 2000, "quarkus", "greeting", 6581.0),
    FixtureRun("20260102T101000Z-quarkus-greeting", UNIT_FIXTURES / "wrk2" / "wrk2-overloaded-uncorrected.txt",
               "wrk2", 600, "quarkus", "greeting", 6918.0),
    FixtureRun("20260102T102000Z-spring-mvc-greeting", UNIT_FIXTURES / "vegeta" / "vegeta-steady-200rps.jsonl.gz",
               "vegeta", 200, "spring-mvc", "greeting", 26023.2, duration_s=3.0, observed=(0.15365, 208809984),
               server=greeting_server(600, (0.38, 0.25, 0.5), (1.6, 1.0, 2.0)),
               profile=PROFILES / "spring-mvc-plaintext-json-cpu.collapsed.gz"),
    FixtureRun("20260102T103000Z-spring-mvc-greeting", UNIT_FIXTURES / "wrk2" / "wrk2-errors-non2xx.txt",
               "wrk2", 1000, "spring-mvc", "greeting", 9446.0),
    FixtureRun("20260102T104000Z-spring-mvc-greeting",
               UNIT_FIXTURES / "vegeta" / "vegeta-behind-1worker-100rps.jsonl.gz",
               "vegeta", 100, "spring-mvc", "greeting", 9639.0, (("PERFLAB_THREADS", "virtual"),), duration_s=3.0),
)
WARMUP_RUN_DIR = HERE / "fixtures" / "vegeta-zipcodes-warmup-200rps"
# 10 s at 200 req/s after a 5 s warm-up, the app's CPU on the same clock (fixtures/README.md).
WARMUP_RUN = FixtureRun("20260105T100000Z-quarkus-zipcodes", WARMUP_RUN_DIR / "vegeta-measure.jsonl.gz", "vegeta",
                        200, "quarkus", "zipcodes", 6581.0, duration_s=10.0,
                        warmup=WARMUP_RUN_DIR / "vegeta-warmup.jsonl.gz", warmup_s=5.0,
                        utilization=WARMUP_RUN_DIR / "utilization.json")
# The wrk2 run of GOOD_RUNS with the lab run's utilization.json and a timeseries.json from the app's histogram
# (ScrapedStandIn): its throughput, server-side latency and CPU over time.
WRK2_OVER_TIME = 1
# A wrk2 run with the percentile table the bench keeps beside its text.
TABLE_RUN = FixtureRun("20260102T105000Z-quarkus-greeting", UNIT_FIXTURES / "wrk2" / "wrk2-steady-1000rps.txt",
                       "wrk2", 1000, "quarkus", "greeting", 6581.0,
                       table=UNIT_FIXTURES / "wrk2" / "wrk2-steady-1000rps-percentiles.json")
# Greeting at 200 req/s with vegeta on the default profile: with GOOD_RUNS[2] (spring-mvc, 200 threads),
# three apps judged VALID and a variant judged INVALID (spring-mvc with 400 threads: 1 answer in 10 a 500).
SIDE_BY_SIDE = (
    FixtureRun("20260104T100000Z-quarkus-greeting", UNIT_FIXTURES / "vegeta" / "vegeta-freeze-1s-200rps.jsonl.gz",
               "vegeta", 200, "quarkus", "greeting", 13232.3, duration_s=4.0, observed=(0.08042, 210669568),
               server=greeting_server(800, (0.22, 0.0, 0.25), (0.81, 0.5, 1.0)),
               profile=PROFILES / "quarkus-plaintext-json-cpu.collapsed.gz"),
    FixtureRun("20260104T101000Z-spring-webflux-greeting",
               UNIT_FIXTURES / "vegeta" / "vegeta-steady-200rps.jsonl.gz",
               "vegeta", 200, "spring-webflux", "greeting", 26916.8, duration_s=3.0, observed=(0.15599, 228069376),
               server=greeting_server(600, (0.35, 0.25, 0.5), (1.2, 1.0, 2.0)),
               profile=PROFILES / "spring-webflux-plaintext-json-cpu.collapsed.gz"),
    FixtureRun("20260104T102000Z-spring-mvc-greeting", UNIT_FIXTURES / "vegeta" / "vegeta-errors-500-200rps.jsonl.gz",
               "vegeta", 200, "spring-mvc", "greeting", 25191.7, (("PERFLAB_MAX_THREADS", "400"),), duration_s=3.0,
               observed=(0.16, 206393344), server=greeting_server(600, (0.41, 0.25, 0.5), (3.1, 2.0, 5.0)),
               profile_error=PROFILE_NOT_WRITTEN),
)
# Two runs of that set that must never be drawn, each newer than the judged run of its app, with
# the message the report gives for it.
SIDE_BY_SIDE_LEFT_OUT = {
    "20260104T103000Z-spring-webflux-greeting": "no audit.json: the run has no verdict and is left out of the charts",
    "20260104T104000Z-quarkus-greeting": "raw output vegeta-measure.jsonl.gz is corrupt (the gzip stream ends early: "
                                         "the file is truncated); left out",
}
# make compare SCENARIO=hello-latency APPS="quarkus spring-webflux" REPEAT=3 RATE=200 TOOL=vegeta, in
# turns: quarkus froze for 1 s in its last two runs (its median p99 is far worse, but its range takes
# in webflux's), and used about half webflux's CPU in every run (the ranges apart).
REPEATED_GROUP = "20260106T100000Z-hello-latency"
REPEATED = tuple(
    FixtureRun(f"20260106T10{index}{offset}00Z-{app}-hello-latency",
               UNIT_FIXTURES / "vegeta" / ("vegeta-freeze-1s-200rps.jsonl.gz" if app == "quarkus" and index > 1
                                           else "vegeta-steady-200rps.jsonl.gz"),
               "vegeta", 200, app, "hello-latency", start_ms, duration_s=4.0 if app == "quarkus" and index > 1 else 3.0,
               observed=(cores, 210669568), repetition=Repetition(REPEATED_GROUP, index, 3))
    for index in (1, 2, 3)
    for offset, app, start_ms, cores in ((0, "quarkus", 13232.3, 0.080 + 0.001 * index),
                                         (5, "spring-webflux", 26916.8, 0.155 + 0.001 * index))
)
SWEEP_ID = "20260102T102000Z-spring-mvc-greeting-sweep"
SWEEP_SLO_P99_MS = 50.0
# make sweep APP=quarkus SCENARIO=hello-latency RATES=200 REPEAT=3: quarkus' three REPEATED runs as
# one step, its p99 their median with their range.
REPEATED_SWEEP_ID = "20260106T100000Z-quarkus-hello-latency-sweep"
REPEATED_SWEEP_SLO_P99_MS = 1100.0


def _write(path: Path, text: str) -> None:
    path.write_text(text, encoding="utf-8")


def _complete(run_dir: Path, result_json: str, observations: Path | None = None) -> None:
    """result.json (`perflab parse-*`'s), audit.json (`perflab judge`'s) and status.json of a
    complete run, as `perflab collect` writes them."""
    rundir.write_result(run_dir, loads(RunResult, result_json))
    args: list[str | Path] = ["judge", run_dir / rundir.RESULT, "--json"]
    if observations is not None:
        args[2:2] = ["--observations", observations]
    audited = perflab(*args)
    assert audited.returncode in (0, 1, 3), audited.stderr
    verdict = loads(Verdict, audited.stdout)
    rundir.write_audit(run_dir, verdict)
    rundir.write_status(run_dir, rundir.RunStatus(status="complete", run_id=run_dir.name, verdict=verdict.status))


def add_fixture_run(results: Path, run: FixtureRun) -> Path:
    run_dir = results / run.run_id
    run_dir.mkdir(parents=True)
    raw_name = "wrk2-measure.txt" if run.tool == "wrk2" else "vegeta-measure.jsonl.gz"
    shutil.copyfile(run.raw, run_dir / raw_name)
    extra: list[str | Path] = ["--duration-s", str(run.duration_s)] if run.tool == "vegeta" else []
    if run.table is not None:
        shutil.copyfile(run.table, run_dir / "wrk2-measure-percentiles.json")
        extra += ["--percentiles", run_dir / "wrk2-measure-percentiles.json"]
    if run.warmup is not None:
        shutil.copyfile(run.warmup, run_dir / "vegeta-warmup.jsonl.gz")
    if run.utilization is not None:
        shutil.copyfile(run.utilization, run_dir / "utilization.json")
    context = RunContext(
        started_at=f"{run.run_id[:4]}-{run.run_id[4:6]}-{run.run_id[6:8]}T{run.run_id[9:11]}:{run.run_id[11:13]}:00Z",
        scenario=ScenarioRun(name=run.scenario, rate=run.rate, duration_s=run.duration_s, warmup_s=run.warmup_s),
        app=AppSettings(name=run.app, profile="default", environment=dict(run.environment),
                        start_to_first_request_ms=run.start_to_first_request_ms),
        raw_output=raw_name,
        repetition=run.repetition,
        versions=dict(run.versions),
    )
    rundir.write_context(run_dir, context)
    parsed = perflab(f"parse-{run.tool}", run_dir / raw_name, "--target-rate", str(run.rate), *extra,
                     "--context", run_dir / rundir.CONTEXT, "--json")
    assert parsed.returncode == 0, parsed.stderr
    observations = None
    if run.observed is not None or run.server is not None:
        busy_cores, max_rss_bytes = run.observed or (None, None)
        rundir.write_observations(run_dir, Observations(
            app_max_rss_bytes=max_rss_bytes, server_latency=run.server,
            app_cpu=TierCpu(busy_cores=busy_cores, allotted_cores=1, window_s=run.duration_s)
            if busy_cores is not None else None))
        observations = run_dir / rundir.OBSERVATIONS
    _complete(run_dir, parsed.stdout, observations)
    add_profile(run_dir, run)
    if run.tool == "vegeta":
        written = perflab("collect", "--timeseries", run_dir)
        assert written.returncode == 0, written.stderr
    return run_dir


def add_profile(run_dir: Path, run: FixtureRun) -> None:
    """The files roles/bench/tasks/profile_fetch.yml fetches for a profiled window, and the summary perflab
    collect makes of them (through `perflab profile summarize`, which writes the same file). The flame graph is
    a stand-in page: the report only links it (async-profiler's own is checked in tests/unit/test_profile_ctl.py
    and the lab's profiled run)."""
    if run.profile_error is not None:
        _write(run_dir / rundir.PROFILE_ERROR, json.dumps({"error": run.profile_error}) + "\n")
    if run.profile is None:
        return
    with gzip.open(run.profile, "rt") as stacks:
        _write(run_dir / rundir.PROFILE_COLLAPSED, stacks.read())
    _write(run_dir / rundir.PROFILE_WINDOW, json.dumps({
        "schema_version": 1, "pid": 812, "mode": "cpu", "engine": "ctimer", "event": "ctimer", "interval": None,
        "started_at": "2026-01-04T10:00:10Z", "stopped_at": "2026-01-04T10:00:14Z", "not_used": []}) + "\n")
    _write(run_dir / rundir.FLAME_GRAPH, f"<!DOCTYPE html><title>{run.app} cpu (ctimer)</title><p>stand-in</p>\n")
    summarized = perflab("profile", "summarize", run_dir / rundir.PROFILE_COLLAPSED, "--json", run_dir / rundir.PROFILE_SUMMARY)
    assert summarized.returncode == 0, summarized.stderr


class ScrapedStandIn(Prometheus):
    """Prometheus' range answers over the stand-in of wrk2-overloaded-uncorrected.txt (one request at a
    time, 4 ms each) as if it exported the apps' histogram and were scraped every STEP_S from START:
    about 228 answers a second, 97 in 100 within 2 to 5 ms and the rest within 10 ms."""

    STEP_S = 5.0

    def __init__(self, start: float, seconds: float) -> None:
        super().__init__("http://127.0.0.1:9090")
        self.start = start
        steps = int(seconds / self.STEP_S)
        answered = [1140 + (k * 37) % 23 - 11 for k in range(steps)]  # 228/s, give or take a few
        self.grid = [start + k * self.STEP_S for k in range(steps + 1)]
        self.total = [float(sum(answered[:k])) for k in range(steps + 1)]
        self.fast = [float(sum(round(n * 0.97) for n in answered[:k])) for k in range(steps + 1)]

    def buckets(self) -> dict[str, list[float]]:
        """Each bucket's cumulative count at each scrape, by its le as Micrometer writes it."""
        return {"0.002": [0.0] * len(self.grid), "0.005": self.fast, "0.01": self.total, "+Inf": self.total}

    def query_range(self, expr: str, start: float, end: float, step_s: float) -> list[Series]:
        if start != self.start:  # the warm-up: before the stand-in was scraped
            return []
        if "_bucket" in expr:
            return [Series({"le": le}, tuple(zip(self.grid, values))) for le, values in self.buckets().items()]
        return [Series({"status": "200"}, tuple(zip(self.grid, self.total)))]

    def server_latency(self) -> ServerLatency:
        """What perflab.observe records of the same histogram over the whole window."""
        counted = histogram.cumulative((le, values[-1]) for le, values in self.buckets().items())
        p50, p99 = histogram.quantile(0.5, counted), histogram.quantile(0.99, counted)
        assert p50 is not None and p99 is not None
        return ServerLatency(routes=GREETING_ROUTES, requests=self.total[-1], p50=p50, p99=p99)


def add_histogram_timeseries(run_dir: Path, utilization: Path) -> None:
    """The wrk2 run's observations and timeseries.json from ScrapedStandIn over UTILIZATION's window, as
    `perflab collect` writes them; judged again with them."""
    window = rundir.read_utilization(utilization.parent)
    stand_in = ScrapedStandIn(window.start, window.end - window.start)
    rundir.write_timeseries(run_dir, timeseries.from_app_histogram(
        stand_in, "quarkus", GREETING_ROUTES, [timeseries.PhaseWindow("measure", window.start, window.end - window.start,
                                                                      600.0)], stand_in.STEP_S))
    rundir.write_observations(run_dir, Observations(server_latency=stand_in.server_latency()))
    _complete(run_dir, (run_dir / rundir.RESULT).read_text(encoding="utf-8"), run_dir / rundir.OBSERVATIONS)


def add_lab_run(results: Path) -> Path:
    """The lab run: vegeta's output, context, observations and utilization.json (fixtures/README.md)."""
    run_dir = results / LAB_RUN_ID
    run_dir.mkdir(parents=True)
    for name in ("vegeta-measure.jsonl.gz", "vegeta-measure.txt", "context.json", "observations.json",
                 "utilization.json"):
        shutil.copyfile(LAB_RUN / name, run_dir / name)
    parsed = perflab("parse-vegeta", run_dir / "vegeta-measure.jsonl.gz", "--target-rate", "500",
                     "--duration-s", "60", "--context", run_dir / "context.json", "--json")
    assert parsed.returncode == 0, parsed.stderr
    _complete(run_dir, parsed.stdout, run_dir / rundir.OBSERVATIONS)
    return run_dir


def add_side_by_side(results: Path) -> None:
    """SIDE_BY_SIDE, and the two runs of SIDE_BY_SIDE_LEFT_OUT: one without audit.json, one whose
    raw output is cut short (its audit.json says VALID)."""
    for run in SIDE_BY_SIDE:
        add_fixture_run(results, run)
    no_verdict, unreadable = SIDE_BY_SIDE_LEFT_OUT
    (add_fixture_run(results, replace(SIDE_BY_SIDE[1], run_id=no_verdict)) / "audit.json").unlink()
    raw_gzip = add_fixture_run(results, replace(SIDE_BY_SIDE[0], run_id=unreadable)) / "vegeta-measure.jsonl.gz"
    raw_gzip.write_bytes(raw_gzip.read_bytes()[:4000])


def add_sweep(results: Path) -> Path:
    """A sweep over spring-mvc's greeting runs at 200 and 1000 req/s, judged and written by perflab.sweep."""
    made = rundir.Sweep(app="spring-mvc", scenario="greeting", slo_p99_ms=SWEEP_SLO_P99_MS,
                        started_at="2026-01-02T10:20:00Z", ended_at="2026-01-02T10:35:00Z")
    for rate, run_id in ((200, "20260102T102000Z-spring-mvc-greeting"), (1000, "20260102T103000Z-spring-mvc-greeting")):
        sweep.record(made, sweep.read_step(rate, results / run_id, SWEEP_SLO_P99_MS))
    made.stopped_because = sweep.stop_reason(made.steps[-1], SWEEP_SLO_P99_MS)
    sweep_dir = results / SWEEP_ID
    rundir.write_sweep(sweep_dir, made)
    return sweep_dir


def add_repeated(results: Path) -> Path:
    """REPEATED's runs, and quarkus' three as the one step of a sweep made with REPEAT=3."""
    for run in REPEATED:
        add_fixture_run(results, run)
    made = rundir.Sweep(app="quarkus", scenario="hello-latency", slo_p99_ms=REPEATED_SWEEP_SLO_P99_MS,
                        started_at="2026-01-06T10:00:00Z", ended_at="2026-01-06T10:30:00Z")
    runs = [sweep.read_step(200, results / run.run_id, REPEATED_SWEEP_SLO_P99_MS) for run in REPEATED if run.app == "quarkus"]
    sweep.record(made, sweep.repeated_step(200, runs, REPEATED_SWEEP_SLO_P99_MS))
    made.stopped_because = sweep.stop_reason(made.steps[-1], REPEATED_SWEEP_SLO_P99_MS) or "every step was sustainable"
    sweep_dir = results / REPEATED_SWEEP_ID
    rundir.write_sweep(sweep_dir, made)
    return sweep_dir


def good_results(results: Path) -> Path:
    """Only readable, complete runs (one without Prometheus data is a problem, so only the lab run)."""
    add_lab_run(results)
    return results


# Bad input, each directory with the one-line message the report must give for it.
BAD_INPUT = {
    "20260103T100000Z-quarkus-greeting": "empty directory: a run that never started, or not a run; left out",
    "20260103T101000Z-quarkus-greeting": "incomplete run: the run has not finished: still running, interrupted or "
                                         "failed (see the ansible-playbook output); left out",
    "20260103T102000Z-quarkus-greeting": "raw output wrk2-measure.txt is corrupt",
    "20260103T103000Z-quarkus-greeting": "audit.json: not JSON (line ",
    "20260103T104000Z-quarkus-greeting": "result.json: not JSON (line 1: Expecting value): corrupt or cut short; left out",
    "20260103T105000Z-quarkus-greeting": "no status.json: half-written or not a perflab run directory; left out",
    "20260103T106000Z-quarkus-greeting-sweep": "sweep.json: not JSON (line 1: ",
    "20260103T110000Z-spring-mvc-greeting": "raw output vegeta-measure.jsonl.gz is corrupt (the gzip stream ends "
                                            "early: the file is truncated); left out",
    "20260103T111000Z-quarkus-greeting": "percentile table wrk2-measure-percentiles.json is corrupt (the "
                                         "percentile table is not JSON (truncated?): ",
    "20260102T100000Z-quarkus-greeting": "no utilization.json: no Prometheus data for this run; "
                                         "utilization not recorded",
}


def add_bad_input(results: Path) -> None:
    names = iter(BAD_INPUT)
    (results / next(names)).mkdir()

    half = results / next(names)  # as playbooks/bench.yml leaves a run that never finished
    half.mkdir()
    rundir.write_status(half, rundir.RunStatus(
        status="incomplete", run_id=half.name,
        reason="the run has not finished: still running, interrupted or failed (see the ansible-playbook output)"))
    shutil.copyfile(UNIT_FIXTURES / "vegeta" / "vegeta-steady-200rps.jsonl.gz", half / "vegeta-warmup.jsonl.gz")

    template = GOOD_RUNS[0]
    corrupt_raw = add_fixture_run(results, replace(template, run_id=next(names)))
    raw = corrupt_raw / "wrk2-measure.txt"
    _write(raw, raw.read_text()[: len(raw.read_text()) // 3])  # cut short, as a full disk leaves it

    corrupt_audit = add_fixture_run(results, replace(template, run_id=next(names)))
    _write(corrupt_audit / "audit.json", (corrupt_audit / "audit.json").read_text()[:60])

    corrupt_result = add_fixture_run(results, replace(template, run_id=next(names)))
    _write(corrupt_result / "result.json", "\x00" * 16 + (corrupt_result / "result.json").read_text()[16:])

    no_status = results / next(names)
    no_status.mkdir()
    shutil.copyfile(UNIT_FIXTURES / "vegeta" / "vegeta-steady-200rps.jsonl.gz", no_status / "vegeta-warmup.jsonl.gz")

    bad_sweep = results / next(names)
    bad_sweep.mkdir()
    _write(bad_sweep / "sweep.json", '{"schema_version": 1, "kind": "sweep", "app": "quar')

    corrupt_vegeta = add_fixture_run(results, replace(GOOD_RUNS[2], run_id=next(names)))
    raw_gzip = corrupt_vegeta / "vegeta-measure.jsonl.gz"
    raw_gzip.write_bytes(raw_gzip.read_bytes()[:4000])  # cut short

    corrupt_table = add_fixture_run(results, replace(TABLE_RUN, run_id=next(names)))
    table = corrupt_table / "wrk2-measure-percentiles.json"
    _write(table, table.read_text()[:300])


def full_results(results: Path) -> Path:
    """Every kind of run and a sweep, and every kind of bad input."""
    add_lab_run(results)
    for index, run in enumerate(GOOD_RUNS):
        if index == WRK2_OVER_TIME:
            add_histogram_timeseries(add_fixture_run(results, replace(run, utilization=LAB_RUN / "utilization.json")),
                                     LAB_RUN / "utilization.json")
        else:
            add_fixture_run(results, run)
    add_fixture_run(results, WARMUP_RUN)
    run_dir = results / GOOD_RUNS[0].run_id  # the app's own max RSS, as perflab.observe records it
    rundir.write_observations(run_dir, Observations(app_max_rss_bytes=QUARKUS_MAX_RSS_BYTES))
    add_side_by_side(results)
    add_sweep(results)
    add_bad_input(results)
    return results
