"""A results directory for the report tests, built the way `make bench` builds one: real tool
output parsed by `perflab parse-wrk2` / `parse-k6`, judged by `perflab audit`, a sweep.json written
by perflab.sweep from the run directories; plus the bad input a results directory meets in
practice (an empty directory, a run cut short, corrupt files).

Sources: the wrk2 and k6 fixtures of tests/unit/fixtures (real outputs of local servers), and
fixtures/k6-quarkus-zipcodes-500rps (one complete run of the local lab: k6's summary, its
context, observations and utilization.json). The contexts of the fixture runs borrow real
deploy figures (start to first request) from lab runs; their latency is the fixtures' own.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from dataclasses import dataclass, replace
from pathlib import Path

from perflab import sweep
from perflab.model import AppSettings, RunContext, ScenarioRun

HERE = Path(__file__).resolve().parent
UNIT_FIXTURES = HERE.parent / "unit" / "fixtures"
LAB_RUN = HERE / "fixtures" / "k6-quarkus-zipcodes-500rps"
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


GOOD_RUNS = (
    FixtureRun("20260102T100000Z-quarkus-greeting", UNIT_FIXTURES / "wrk2" / "wrk2-steady-2000rps.txt",
               "wrk2", 2000, "quarkus", "greeting", 6581.0),
    FixtureRun("20260102T101000Z-quarkus-greeting", UNIT_FIXTURES / "wrk2" / "wrk2-overloaded-uncorrected.txt",
               "wrk2", 600, "quarkus", "greeting", 6918.0),
    FixtureRun("20260102T102000Z-spring-mvc-greeting", UNIT_FIXTURES / "k6" / "steady-20rps.handle-summary.json",
               "k6", 20, "spring-mvc", "greeting", 9387.0),
    FixtureRun("20260102T103000Z-spring-mvc-greeting", UNIT_FIXTURES / "wrk2" / "wrk2-errors-non2xx.txt",
               "wrk2", 1000, "spring-mvc", "greeting", 9446.0),
    FixtureRun("20260102T104000Z-spring-mvc-greeting",
               UNIT_FIXTURES / "k6" / "failing-dropping-20rps.handle-summary.json",
               "k6", 20, "spring-mvc", "greeting", 9639.0, (("PERFLAB_THREADS", "virtual"),)),
)
SWEEP_ID = "20260102T102000Z-spring-mvc-greeting-sweep"
SWEEP_SLO_P99_MS = 50.0


def _write(path: Path, text: str) -> None:
    path.write_text(text, encoding="utf-8")


def _complete(run_dir: Path, result_json: str, observations: Path | None = None) -> str:
    """result.json, audit.json and status.json of a complete run, as the bench writes them; its verdict."""
    _write(run_dir / "result.json", result_json)
    args: list[str | Path] = ["audit", run_dir / "result.json", "--json"]
    if observations is not None:
        args[2:2] = ["--observations", observations]
    audited = perflab(*args)
    assert audited.returncode in (0, 1, 3), audited.stderr
    _write(run_dir / "audit.json", audited.stdout)
    verdict: str = json.loads(audited.stdout)["status"]
    _write(run_dir / "status.json", json.dumps({"status": "complete", "run_id": run_dir.name, "verdict": verdict}))
    return verdict


def add_fixture_run(results: Path, run: FixtureRun) -> Path:
    run_dir = results / run.run_id
    run_dir.mkdir(parents=True)
    raw_name = "wrk2-measure.txt" if run.tool == "wrk2" else "k6-measure-summary.json"
    shutil.copyfile(run.raw, run_dir / raw_name)
    context = RunContext(
        started_at=f"{run.run_id[:4]}-{run.run_id[4:6]}-{run.run_id[6:8]}T{run.run_id[9:11]}:{run.run_id[11:13]}:00Z",
        scenario=ScenarioRun(name=run.scenario, rate=run.rate, duration_s=20.0, warmup_s=10.0),
        app=AppSettings(name=run.app, profile="default", environment=dict(run.environment),
                        start_to_first_request_ms=run.start_to_first_request_ms),
        raw_output=raw_name,
    )
    _write(run_dir / "context.json", context.to_json())
    parsed = perflab(f"parse-{run.tool}", run_dir / raw_name, "--target-rate", str(run.rate),
                     "--context", run_dir / "context.json", "--json")
    assert parsed.returncode == 0, parsed.stderr
    _complete(run_dir, parsed.stdout)
    return run_dir


def add_lab_run(results: Path) -> Path:
    """The real lab run: k6 summary, context, observations and utilization.json of the local lab."""
    run_dir = results / LAB_RUN_ID
    run_dir.mkdir(parents=True)
    for name in ("k6-measure-summary.json", "context.json", "observations.json", "utilization.json"):
        shutil.copyfile(LAB_RUN / name, run_dir / name)
    parsed = perflab("parse-k6", run_dir / "k6-measure-summary.json", "--target-rate", "500",
                     "--context", run_dir / "context.json", "--json")
    assert parsed.returncode == 0, parsed.stderr
    _complete(run_dir, parsed.stdout, run_dir / "observations.json")
    return run_dir


def add_sweep(results: Path) -> Path:
    """A sweep over spring-mvc's greeting runs at 20 and 1000 req/s, written by perflab.sweep."""
    steps = [sweep.read_step(20, results / "20260102T102000Z-spring-mvc-greeting", SWEEP_SLO_P99_MS),
             sweep.read_step(1000, results / "20260102T103000Z-spring-mvc-greeting", SWEEP_SLO_P99_MS)]
    made = sweep.Sweep(app="spring-mvc", scenario="greeting", slo_p99_ms=SWEEP_SLO_P99_MS,
                       started_at="2026-01-02T10:20:00Z", steps=steps, ended_at="2026-01-02T10:35:00Z",
                       stopped_because=sweep.stop_reason(steps[-1], SWEEP_SLO_P99_MS))
    sweep_dir = results / SWEEP_ID
    sweep_dir.mkdir()
    _write(sweep_dir / "sweep.json", made.to_json())
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
    "20260103T103000Z-quarkus-greeting": "audit.json is not JSON (line ",
    "20260103T104000Z-quarkus-greeting": "result.json is not a perflab result (not JSON: ",
    "20260103T105000Z-quarkus-greeting": "no status.json: half-written or not a perflab run directory; left out",
    "20260103T106000Z-quarkus-greeting-sweep": "sweep.json is not JSON (line 1: ",
    "20260102T100000Z-quarkus-greeting": "no utilization.json: no Prometheus data for this run; "
                                         "utilization not recorded",
}


def add_bad_input(results: Path) -> None:
    names = iter(BAD_INPUT)
    (results / next(names)).mkdir()

    half = results / next(names)  # as playbooks/bench.yml leaves a run that never finished
    half.mkdir()
    _write(half / "status.json", json.dumps({
        "reason": "the run has not finished: still running, interrupted or failed (see the ansible-playbook output)",
        "run_id": half.name, "status": "incomplete"}))
    shutil.copyfile(UNIT_FIXTURES / "k6" / "steady-20rps.summary-export.json", half / "k6-warmup-summary.json")

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
    shutil.copyfile(UNIT_FIXTURES / "k6" / "steady-20rps.summary-export.json", no_status / "k6-warmup-summary.json")

    bad_sweep = results / next(names)
    bad_sweep.mkdir()
    _write(bad_sweep / "sweep.json", '{"schema_version": 1, "kind": "sweep", "app": "quar')


def full_results(results: Path) -> Path:
    """Every kind of run and a sweep, and every kind of bad input."""
    add_lab_run(results)
    for run in GOOD_RUNS:
        add_fixture_run(results, run)
    run_dir = results / GOOD_RUNS[0].run_id  # the app's own max RSS, as perflab.observe records it
    observations = {"schema_version": 1, "app_max_rss_bytes": QUARKUS_MAX_RSS_BYTES}
    _write(run_dir / "observations.json", json.dumps(observations))
    add_sweep(results)
    add_bad_input(results)
    return results
