"""perflab sweep: the rates it runs, where it stops and why, and the sweep.json it leaves.

The steps' run directories are written here as the bench writes them (status.json, result.json
from a real RunResult, audit.json with the audit's SLO rule, attribution.json, bench-inputs.json);
the runner that `make sweep` uses instead runs playbooks/bench.yml (tests/sweep_lab runs it on a lab)."""

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from perflab import audit, results, rundir, sweep
from perflab.attribution import Attribution
from perflab.model import ErrorCounts, LatencyDistribution, RunResult, dumps

from .test_collect import bench_inputs

SCENARIO_SLO = 50.0
# What attribution.json says of a run limited by each tier (perflab/attribution.py's sentences).
SENTENCES = {
    "app": "limited by the app: its CPU 98% busy, at 300 of 300 req/s (100%).",
    "db": "limited by the database: the app had 3.1 requests waiting for a DB connection on average while the DB "
          "host had its disk 93% busy, at 300 of 300 req/s (100%).",
    "loadgen": "limited by the load generator: its CPU 95% busy, at 100 of 100 req/s (100%).",
    None: "no tier was saturated: the system kept up with the offered rate, 300 of 300 req/s (100%).",
}


def write_run(run_dir: Path, rate: int, *, verdict: str = "VALID", p99: float = 10.0, achieved: float | None = None,
              complete: bool = True, slo: float | None = SCENARIO_SLO, limiting_tier: str | None = "app",
              attributed: bool = True) -> None:
    """A run directory as playbooks/bench.yml leaves it. VERDICT is the audit's but for its SLO
    rule, which judges P99 against SLO as `perflab judge` does."""
    run_dir.mkdir(parents=True)
    inputs = bench_inputs("wrk2", rate, ["wrk2-measure.txt"], [])
    inputs["run"]["scenario"].update(name="zipcodes", slo_p99_ms=slo)
    (run_dir / "bench-inputs.json").write_text(json.dumps(inputs))
    if attributed:
        rundir.write_attribution(run_dir, Attribution(limiting_tier, SENTENCES[limiting_tier], evidence=(), tiers=()))
    if not complete:
        rundir.write_status(run_dir, rundir.RunStatus(
            status="incomplete", failed_step="deploying the app", reason="perflab-app failed to start"))
        return
    result = RunResult(
        tool="wrk2", target_rate=rate, achieved_rate=rate if achieved is None else achieved, requests=rate * 10,
        duration_s=10.0, errors=ErrorCounts(),
        latency_corrected=LatencyDistribution(percentiles_ms={"50": p99 / 4, "99": p99, "99.9": p99 * 2},
                                              mean_ms=p99 / 3, max_ms=p99 * 3),
    )
    rundir.write_result(run_dir, result)
    rules = [audit.RuleResult("no_errors", audit.Status.VALID, "0 errors")]
    if verdict == "INVALID":
        rules.append(audit.RuleResult("achieved_rate", audit.Status.INVALID, "achieved 80% of the target"))
    slo_rule = audit.p99_against_slo(p99, slo)
    rules.append(slo_rule)
    if slo_rule.status is audit.Status.WARN and verdict == "VALID":
        verdict = "WARN"
    rundir.write_audit(run_dir, audit.Verdict(status=audit.Status(verdict), rules=tuple(rules)))
    rundir.write_status(run_dir, rundir.RunStatus(status="complete", verdict=audit.Status(verdict)))


class FakeBench:
    """Stands in for playbooks/bench.yml: each rate's run directory from OUTCOMES (write_run options)."""

    def __init__(self, results: Path, outcomes: dict[int, dict[str, object]], slo_override: float | None) -> None:
        self.results, self.outcomes, self.rates_run = results, outcomes, list[int]()
        self.slo_override = slo_override

    def __call__(self, rate: int, index: int) -> Path | None:
        self.rates_run.append(rate)
        outcome = self.outcomes.get(rate, {})
        # REPEAT=N: a list gives each run of the rate its own outcome.
        if isinstance(outcome, list):
            outcome = outcome[index - 1]
        if outcome.get("refused"):
            return None
        run_dir = self.results / f"202601{len(self.rates_run):02d}T000000Z-quarkus-zipcodes"
        if self.slo_override is not None:  # the bench runs the scenario with SLO_P99_MS= as its SLO
            outcome = {**outcome, "slo": self.slo_override}
        write_run(run_dir, rate, **outcome)  # type: ignore[arg-type]
        return run_dir


def run(tmp_path: Path, rates: list[int], outcomes: dict[int, Any],
        slo_override: float | None = None, repeat: int = 1) -> tuple[rundir.Sweep, FakeBench, list[str]]:
    bench = FakeBench(tmp_path, outcomes, slo_override)
    saved: list[str] = []
    save: Callable[[rundir.Sweep], None] = lambda s: saved.append(dumps(s))
    done = sweep.run_sweep(rundir.Sweep(app="quarkus", scenario="zipcodes", slo_p99_ms=slo_override,
                                       started_at="2026-01-01T00:00:00Z"),
                           rates, bench, save, slo_override=slo_override, repeat=repeat)
    return done, bench, saved


def test_a_repeated_step_is_its_runs_median_with_their_range(tmp_path: Path) -> None:
    """REPEAT=3: each rate three times; the step's p99 and achieved rate are the medians, with ranges;
    the sweep stops at the rate whose median p99 is over the SLO though one of its runs was within."""
    done, bench, saved = run(tmp_path, [100, 200, 300], {
        100: [{"p99": 8.0}, {"p99": 12.0}, {"p99": 10.0, "achieved": 99.0}],
        200: [{"p99": 30.0}, {"p99": 70.0}, {"p99": 60.0}],
    }, repeat=3)
    assert bench.rates_run == [100, 100, 100, 200, 200, 200]
    first, second = done.steps
    assert (first.p99_ms, first.p99_range_ms, first.achieved_rate, first.achieved_range) == (10.0, (8.0, 12.0), 100.0,
                                                                                            (99.0, 100.0))
    assert first.within_slo and len(first.runs) == 3 and first.run_id == first.runs[2]  # the median run's
    assert (second.p99_ms, second.within_slo, done.max_sustainable_rate) == (60.0, False, 100)
    assert done.stopped_because == "p99 60 ms at 200 req/s exceeds the SLO of 50 ms"
    stored = json.loads(saved[-1])
    assert stored["steps"][0]["runs"] == list(first.runs) and stored["steps"][0]["p99_range_ms"] == [8.0, 12.0]
    assert "10.00 [8.00-12.00]" in sweep.table(done) and "(+2 runs)" in sweep.table(done)


def test_one_run_of_a_repeated_step_the_lab_could_not_judge_stops_the_sweep(tmp_path: Path) -> None:
    done, _, _ = run(tmp_path, [100, 200], {100: [{"p99": 8.0}, {"verdict": "INVALID", "p99": 9.0}]}, repeat=2)
    assert len(done.steps) == 1 and not done.steps[0].within_slo and done.max_sustainable_rate is None
    assert done.steps[0].problem == "achieved_rate: achieved 80% of the target"
    assert done.stopped_because == ("the audit judged the run at 100 req/s INVALID "
                                    "(achieved_rate: achieved 80% of the target)")


def test_rates_from_a_list_run_in_increasing_order() -> None:
    assert sweep.parse_rates("400 100,200  200") == [100, 200, 400]


@pytest.mark.parametrize("text", ["", "  ", "100 0", "100 fast", "-5", "1.5"])
def test_bad_rates_are_refused(text: str) -> None:
    with pytest.raises(sweep.SweepInputError, match="RATES"):
        sweep.parse_rates(text)


def test_stepped_rates_include_max() -> None:
    assert sweep.stepped_rates(100, 100, 300) == [100, 200, 300]
    assert sweep.stepped_rates(100, 150, 399) == [100, 250]


@pytest.mark.parametrize(("start", "step", "maximum"), [(0, 100, 300), (100, 0, 300), (300, 100, 200)])
def test_bad_steps_are_refused(start: int, step: int, maximum: int) -> None:
    with pytest.raises(sweep.SweepInputError, match="MAX >= START"):
        sweep.stepped_rates(start, step, maximum)


def test_too_many_steps_are_refused() -> None:
    with pytest.raises(sweep.SweepInputError, match="more than 50"):
        sweep.stepped_rates(1, 1, 1000)


def test_stops_at_the_first_invalid_step_and_keeps_the_one_before(tmp_path: Path) -> None:
    done, bench, _ = run(tmp_path, [100, 200, 300, 400], {300: {"verdict": "INVALID", "achieved": 240.0}})
    assert bench.rates_run == [100, 200, 300]
    assert (best := sweep.max_sustainable_step(done)) is not None and best.rate == 200
    assert done.stopped_because == (
        "the audit judged the run at 300 req/s INVALID (achieved_rate: achieved 80% of the target)")


def test_stops_when_p99_exceeds_the_scenarios_slo(tmp_path: Path) -> None:
    done, bench, _ = run(tmp_path, [100, 200, 300], {200: {"p99": 50.0}, 300: {"p99": 50.5}})
    assert bench.rates_run == [100, 200, 300]
    assert done.slo_p99_ms == SCENARIO_SLO
    assert [s.within_slo for s in done.steps] == [True, True, False]  # p99 == SLO is within it
    assert (best := sweep.max_sustainable_step(done)) is not None and best.rate == 200
    assert done.stopped_because == "p99 50.5 ms at 300 req/s exceeds the SLO of 50 ms"


def test_slo_override_beats_the_scenario(tmp_path: Path) -> None:
    done, bench, _ = run(tmp_path, [100, 200, 300], {200: {"p99": 30.0}}, slo_override=20.0)
    assert bench.rates_run == [100, 200]
    assert done.slo_p99_ms == 20.0
    assert done.stopped_because == "p99 30 ms at 200 req/s exceeds the SLO of 20 ms"


def test_warn_does_not_stop_the_sweep(tmp_path: Path) -> None:
    done, bench, _ = run(tmp_path, [100, 200], {100: {"verdict": "WARN"}})
    assert bench.rates_run == [100, 200]
    assert (best := sweep.max_sustainable_step(done)) is not None and best.rate == 200
    assert done.stopped_because == "every step up to 200 req/s was sustainable: raise MAX (or add RATES) to find the limit"


def test_an_incomplete_run_stops_the_sweep_with_its_reason(tmp_path: Path) -> None:
    done, bench, _ = run(tmp_path, [100, 200, 300], {200: {"complete": False}})
    assert bench.rates_run == [100, 200]
    assert done.steps[-1].status == "incomplete" and done.steps[-1].verdict is None
    assert done.stopped_because == (
        "the run at 200 req/s did not complete (deploying the app: perflab-app failed to start)")


def test_no_sustainable_step_means_no_maximum(tmp_path: Path) -> None:
    done, _, saved = run(tmp_path, [100, 200], {100: {"verdict": "INVALID"}})
    assert sweep.max_sustainable_step(done) is None
    assert json.loads(saved[-1])["max_sustainable_rate"] is None
    assert "none: not even the first step was sustainable" in sweep.table(done)


def test_a_scenario_without_an_slo_stops_the_sweep(tmp_path: Path) -> None:
    done, bench, _ = run(tmp_path, [100, 200], {100: {"slo": None}})
    assert bench.rates_run == [100]
    assert done.stopped_because is not None and "set slo_p99_ms in the scenario or SLO_P99_MS=" in done.stopped_because


def test_a_refused_first_step_saves_nothing(tmp_path: Path) -> None:
    with pytest.raises(sweep.BenchRefused, match="refused the run at 100 req/s"):
        run(tmp_path, [100, 200], {100: {"refused": True}})


def test_sweep_json_is_saved_after_every_step_in_the_documented_format(tmp_path: Path) -> None:
    done, _, saved = run(tmp_path, [100, 200, 300], {300: {"p99": 80.0}})
    assert len(saved) == 3
    assert json.loads(saved[0])["stopped_because"] == "not finished: 1 of 3 steps run"
    document = json.loads(saved[-1])
    assert set(document) == {"schema_version", "kind", "app", "scenario", "slo_p99_ms", "started_at", "ended_at",
                             "steps", "max_sustainable_rate", "limited_by", "stopped_because"}
    assert (document["schema_version"], document["kind"], document["max_sustainable_rate"]) == (1, "sweep", 200)
    assert document["limited_by"] == "app"
    # The verdict is the audit's, which judges the SLO too (rule slo_p99: WARN above it).
    assert document["steps"][2] == {"rate": 300, "run_id": "20260103T000000Z-quarkus-zipcodes", "status": "complete",
                                    "verdict": "WARN", "achieved_rate": 300.0, "p99_ms": 80.0, "within_slo": False,
                                    "runs": [], "p99_range_ms": None, "achieved_range": None}
    # The reader of `make report` takes it as it is.
    sweep_dir = tmp_path / "20260101T000000Z-quarkus-zipcodes-sweep"
    rundir.write_sweep(sweep_dir, done)
    loaded = results.load(tmp_path).sweeps
    assert [(s.max_sustainable_rate, len(s.steps), s.slo_p99_ms) for s in loaded.values()] == [(200, 3, 50.0)]


def test_table_lists_every_step_and_the_outcome(tmp_path: Path) -> None:
    done, _, _ = run(tmp_path, [100, 200], {200: {"p99": 60.0}})
    lines = sweep.table(done).splitlines()
    assert lines[0].split() == ["rate/s", "achieved/s", "p50", "ms", "p99", "ms", "p99.9", "ms", "errors", "verdict",
                                "p99<=SLO", "run"]
    assert lines[2].split()[:8] == ["100", "100.0", "2.50", "10.00", "20.00", "0", "VALID", "yes"]
    assert lines[3].split()[:8] == ["200", "200.0", "15.00", "60.00", "120.00", "0", "WARN", "no"]
    assert lines[4] == ("max sustainable throughput (quarkus, zipcodes, p99 SLO 50 ms): "
                        "100 req/s (achieved 100.0, p99 10.00 ms); the app limited the run at 200 req/s")
    assert lines[5] == "stopped because p99 60 ms at 200 req/s exceeds the SLO of 50 ms"


def test_the_slo_is_the_audits_rule_and_other_invalid_rules_come_first(tmp_path: Path) -> None:
    done, _, _ = run(tmp_path, [100, 200], {200: {"verdict": "INVALID", "p99": 80.0}})
    assert [r.rule for r in rundir.read_audit(tmp_path / "20260102T000000Z-quarkus-zipcodes").reasons] == [
        "achieved_rate", "slo_p99"]
    assert done.stopped_because == (
        "the audit judged the run at 200 req/s INVALID (achieved_rate: achieved 80% of the target)")
    # The sweep judges the SLO with the audit's own rule: the same p99, the same outcome.
    assert sweep.read_step(200, tmp_path / "20260102T000000Z-quarkus-zipcodes", 80.0).within_slo
    assert not sweep.read_step(200, tmp_path / "20260102T000000Z-quarkus-zipcodes", 79.9).within_slo


@pytest.mark.parametrize(("tier", "named"), [("db", "db"), ("loadgen", "loadgen"), (None, "an unknown tier")])
def test_a_maximum_another_tier_limited_is_not_the_apps(tmp_path: Path, tier: str | None, named: str) -> None:
    done, _, saved = run(tmp_path, [100, 200, 300], {300: {"p99": 80.0, "limiting_tier": tier}})
    assert (best := sweep.max_sustainable_step(done)) is not None and best.rate == 200
    document = json.loads(saved[-1])
    assert (document["max_sustainable_rate"], document["limited_by"]) == (200, tier or "unknown")
    outcome = sweep.table(done).splitlines()[-2]
    assert outcome == (f"limited by {named} at 200 req/s: the app's maximum is above this (quarkus, zipcodes, "
                       f"p99 SLO 50 ms; achieved 200.0, p99 10.00 ms; the run at 300 req/s: {SENTENCES[tier]})")
    assert "max sustainable" not in outcome


def test_only_the_app_limiting_the_failed_step_makes_the_maximum_the_apps(tmp_path: Path) -> None:
    done, _, saved = run(tmp_path, [100, 200, 300], {300: {"verdict": "INVALID", "limiting_tier": "app"}})
    assert json.loads(saved[-1])["limited_by"] == "app"
    assert sweep.table(done).splitlines()[-2] == (
        "max sustainable throughput (quarkus, zipcodes, p99 SLO 50 ms): 200 req/s (achieved 200.0, p99 10.00 ms); "
        "the app limited the run at 300 req/s")


def test_a_failed_step_without_attribution_limits_an_unknown_tier(tmp_path: Path) -> None:
    done, _, saved = run(tmp_path, [100, 200], {200: {"complete": False, "attributed": False}})
    assert json.loads(saved[-1])["limited_by"] == "unknown"
    assert sweep.table(done).splitlines()[-2].startswith(
        "limited by an unknown tier at 100 req/s: the app's maximum is above this (")
    assert sweep.table(done).splitlines()[-2].endswith("; the run at 200 req/s: no attribution.json)")


def test_a_first_step_another_tier_limited_gives_no_maximum_and_names_the_tier(tmp_path: Path) -> None:
    done, _, saved = run(tmp_path, [100, 200], {100: {"verdict": "INVALID", "limiting_tier": "loadgen"}})
    assert (json.loads(saved[-1])["max_sustainable_rate"], done.limited_by) == (None, "loadgen")
    assert sweep.table(done).splitlines()[-2] == (
        "max sustainable throughput (quarkus, zipcodes, p99 SLO 50 ms): none: the first step was limited by loadgen "
        f"(the run at 100 req/s: {SENTENCES['loadgen']})")


def test_a_sweep_that_found_no_limit_names_no_tier(tmp_path: Path) -> None:
    done, _, saved = run(tmp_path, [100, 200], {})
    assert (json.loads(saved[-1])["limited_by"], sweep.failed_step(done)) == (None, None)
    assert sweep.table(done).splitlines()[-2] == (
        "max sustainable throughput (quarkus, zipcodes, p99 SLO 50 ms): 200 req/s (achieved 200.0, p99 10.00 ms)")


@pytest.mark.parametrize(("args", "message"), [
    ([], "give RATES=\"R1 R2 ...\" or all of START=, STEP= and MAX="),
    (["--rates", "100", "--start", "100"], "give either RATES or START, STEP and MAX, not both"),
    (["--rates", "100 x"], "RATES must be whole numbers of requests per second > 0, got 'x'"),
    (["--start", "300", "--step", "100", "--max", "200"], "MAX >= START"),
    (["--rates", "100", "--slo-p99-ms", "0"], "must be a number of milliseconds > 0, not 0"),
])
def test_cli_refuses_bad_input_before_any_run(tmp_path: Path, args: list[str], message: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "perflab", "sweep", "--app", "quarkus", "--scenario", "zipcodes",
         "--inventory", str(tmp_path / "no-such-inventory"), "--results", str(tmp_path), *args],
        capture_output=True, text=True, timeout=60)
    assert done.returncode == 2, done
    assert message in done.stderr
    assert list(tmp_path.iterdir()) == []
