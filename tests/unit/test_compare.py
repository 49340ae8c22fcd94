"""perflab compare (make compare, make bench REPEAT=N): its table, the runs in turns with their
repetition group, and the summary that says which apps cannot be told apart."""

from __future__ import annotations

import argparse
import dataclasses
import json
from collections.abc import Sequence
from pathlib import Path

import pytest

from perflab import audit, collect, compare, repetitions, results, rundir
from perflab.audit import Status, Verdict
from perflab.model import AppSettings, Repetition, RunResult
from perflab.observations import Observations

from .helpers import bench_inputs
from .test_audit import APP_CPU, STEADY, _bench_inputs


# STEADY's start to first request, as the table's last column shows it.
START = f"{STEADY.app.start_to_first_request_ms:.0f}" if STEADY.app and STEADY.app.start_to_first_request_ms else "-"


def _run(run_dir: Path, verdict: Verdict | Status, result: RunResult = STEADY, cpu: float | None = None) -> Path:
    """A complete run as the bench leaves it: VERDICT, or one of that status with no rule and CPU's cost."""
    run_dir.mkdir()
    if isinstance(verdict, Status):
        verdict = Verdict(status=verdict, rules=(), app_cpu_s_per_1000_requests=cpu)
    rundir.write_status(run_dir, rundir.RunStatus(status="complete"))
    rundir.write_result(run_dir, result)
    rundir.write_audit(run_dir, verdict)
    return run_dir


def test_compare_appends_the_app_cost_to_its_table(tmp_path: Path) -> None:
    _run(tmp_path / "new", audit.audit(STEADY, Observations(app_cpu=APP_CPU, app_max_rss_bytes=300 * 1024 * 1024)))
    _run(tmp_path / "old", Status.VALID)  # audited before the app's cost
    lines = compare.table([results.read_run_row("quarkus", tmp_path / "new"), results.read_run_row("spring-mvc", tmp_path / "old"),
                           results.read_run_row("spring-webflux", None)]).splitlines()
    assert lines[0].split("  ")[-5:] == ["verdict", "app CPU-s/1k req", "app max RSS MiB", "repetition",
                                         "start to first request ms"]
    # The columns before stay where they were (tests/bench_runs reads a row by position).
    assert lines[2].split()[:6] == ["quarkus", "new", "complete", "2000", "1995.1", "wrk2"]
    assert lines[2].split()[-4:] == ["VALID", "0.376", "300.0", START]
    assert lines[3].split()[-4:] == ["VALID", "-", "-", START]
    assert lines[4].split()[1:] == ["-", "no", "run", "(rejected", "before", "it", "started)"]


def test_ours_beside_theirs_where_a_foreign_app_ran_with_its_counterpart(tmp_path: Path) -> None:
    """tfb-quarkus (counterpart: quarkus) beside quarkus: each figure ours / theirs from their runs;
    an app without a counterpart in the comparison gets no line, nor does a pair with an INVALID run."""
    def ran(name: str, cpu: float, rss_mib: float, start_ms: float, status: Status = Status.VALID) -> results.RunRow:
        app = AppSettings(name=name, start_to_first_request_ms=start_ms)
        verdict = Verdict(status=status, rules=(), app_cpu_s_per_1000_requests=cpu, app_max_rss_bytes=rss_mib * 2**20)
        return results.read_run_row(name, _run(tmp_path / name, verdict, dataclasses.replace(STEADY, app=app)))

    apps = [compare.App("quarkus", "quarkus", ""), compare.App("tfb-quarkus", "tfb-quarkus", "", counterpart="quarkus"),
            compare.App("spring-mvc", "spring-mvc", ""), compare.App("tfb-spring", "tfb-spring", "", counterpart="spring-mvc")]
    rows = [ran("quarkus", 0.204, 230, 1200.0), ran("tfb-quarkus", 0.180, 200, 1000.0),
            ran("spring-mvc", 0.50, 300, 4000.0), ran("tfb-spring", 0.40, 310, 3000.0, Status.INVALID)]
    assert compare.ours_theirs(rows, apps) == [
        "perflab compare: ours / theirs (one run each; a ratio over 1 is ours costing more)",
        "  quarkus / tfb-quarkus: app CPU-s/1k req 0.204 / 0.180 = 1.13, max RSS MiB 230 / 200 = 1.15, "
        "start to first request ms 1200 / 1000 = 1.20"]
    assert compare.ours_theirs(rows[:1], apps[:1]) == []


def test_ours_beside_theirs_with_repetitions_is_the_median_of_each_apps_runs(tmp_path: Path) -> None:
    """make compare REPEAT=3 (issue 23): the ratio of the medians, each with its range, not one run's."""
    def ran(name: str, index: int, cpu: float, status: Status = Status.VALID) -> results.RunRow:
        app = AppSettings(name=name, start_to_first_request_ms=1000.0)
        verdict = Verdict(status=status, rules=(), app_cpu_s_per_1000_requests=cpu, app_max_rss_bytes=200 * 2**20)
        run_dir = _run(tmp_path / f"{name}-{index}", verdict, dataclasses.replace(STEADY, app=app))
        return results.read_run_row(name, run_dir, f"{index}/3")

    apps = [compare.App("spring-webflux", "spring-webflux", ""),
            compare.App("tfb-spring-webflux", "tfb-spring-webflux", "", counterpart="spring-webflux")]
    rows = [ran("spring-webflux", 1, 0.316), ran("tfb-spring-webflux", 1, 0.084),
            ran("spring-webflux", 2, 0.293), ran("tfb-spring-webflux", 2, 0.083),
            ran("spring-webflux", 3, 0.304), ran("tfb-spring-webflux", 3, 0.900, Status.INVALID)]
    assert compare.ours_theirs(rows, apps) == [
        "perflab compare: ours / theirs (the medians of each app's judged runs, [their range]; a ratio over 1 is ours "
        "costing more)",
        "  spring-webflux / tfb-spring-webflux (3 / 2 runs): app CPU-s/1k req 0.304 [0.293-0.316] / 0.084 [0.083-0.084] "
        "= 3.64, max RSS MiB 200 / 200 = 1.00, start to first request ms 1000 / 1000 = 1.00"]


def test_a_spread_is_the_median_and_the_range_and_one_run_is_never_indistinguishable() -> None:
    three = repetitions.spread([4.0, None, 3.0, 9.0])
    assert three == repetitions.Spread(median=4.0, low=3.0, high=9.0, runs=3) and three.text() == "4 [3-9]"
    other = repetitions.spread([8.5, 10.0, 12.0])
    assert repetitions.indistinguishable(three, other)
    assert not repetitions.indistinguishable(three, repetitions.spread([9.5, 10.0]))
    one = repetitions.spread([4.0])
    assert one is not None and one.text() == "4"
    assert not repetitions.indistinguishable(one, repetitions.spread([4.0])), "single runs have no range to overlap"
    assert repetitions.spread([None, None]) is None


def _measured(p99_ms: float, achieved: float) -> RunResult:
    corrected = dataclasses.replace(STEADY.latency_corrected,
                                    percentiles_ms={**STEADY.latency_corrected.percentiles_ms, "99": p99_ms})
    return dataclasses.replace(STEADY, latency_corrected=corrected, achieved_rate=achieved)


def test_the_summary_gives_medians_and_ranges_and_names_the_apps_it_cannot_tell_apart(tmp_path: Path) -> None:
    rows = []
    # quarkus: p99 3.1/3.4/5.0 ms, CPU 0.20-0.22; spring-mvc: p99 4.2/4.6/4.9 ms, CPU 0.30-0.33 (no overlap).
    for app, p99s, cpus in (("quarkus", (3.1, 5.0, 3.4), (0.21, 0.20, 0.22)), ("spring-mvc", (4.6, 4.2, 4.9), (0.31, 0.33, 0.30))):
        for index, (p99, cpu) in enumerate(zip(p99s, cpus), start=1):
            run_dir = _run(tmp_path / f"{app}-{index}", Status.VALID, _measured(p99, 1990.0 + index), cpu)
            rows.append(results.read_run_row(app, run_dir, f"{index}/3"))
    # An INVALID run and an incomplete one are left out of the medians.
    rows.append(results.read_run_row("spring-mvc", _run(tmp_path / "invalid", Status.INVALID, _measured(90.0, 1200.0)), "x"))
    rows.append(results.read_run_row("quarkus", None, "x"))
    lines = compare.summary(rows)
    assert lines[1] == "  quarkus (3 runs): achieved/s 1992 [1991-1993], p99 ms 3.4 [3.1-5], app CPU-s/1k req 0.21 [0.2-0.22]"
    assert lines[2].startswith("  spring-mvc (3 runs): achieved/s") and "p99 ms 4.6 [4.2-4.9]" in lines[2]
    assert "  p99 ms: quarkus is best by its median, not distinguishable from spring-mvc (the ranges overlap)" in lines
    assert "  app CPU-s/1k req: quarkus is best, apart from every other app (no range overlaps its own)" in lines
    assert compare.table(rows).splitlines()[2].split()[-2:] == ["1/3", START]


def test_runs_go_in_turns_each_tagged_with_the_comparisons_group(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The playbook itself runs in tests/bench_runs; here, what compare asks of it, in which order."""
    asked: list[tuple[str, dict[str, object]]] = []

    def run_bench(results: Path, inventory: str, options: Sequence[str], named: str) -> tuple[int, Path]:
        extra = [json.loads(o) for o in options if o.startswith("{")]
        repetition = next(e["bench_repetition"] for e in extra if "bench_repetition" in e)
        app = next(o.split("=", 1)[1] for o in options if o.startswith("app_name="))
        asked.append((app, repetition))
        return 0, _run(results / f"{len(asked)}{named}", Status.VALID, cpu=0.2)

    monkeypatch.setattr(compare, "run_bench", run_bench)
    args = argparse.Namespace(apps="quarkus spring-webflux", scenario="greeting", variants="", repeat=2,
                              results=tmp_path, inventory="inventory/local", bench_options=["--", "-e", "loadgen_rate=50"])
    assert compare.main(args) == compare.EXIT_DONE
    assert [(app, r["index"], r["of"]) for app, r in asked] == [
        ("quarkus", 1, 2), ("spring-webflux", 1, 2), ("quarkus", 2, 2), ("spring-webflux", 2, 2)]
    groups = {r["group"] for _, r in asked}
    assert len(groups) == 1 and str(groups.pop()).endswith("-greeting")


def test_repeat_takes_a_whole_number_of_runs() -> None:
    for bad in ("0", "x", "21", "-1", ""):
        with pytest.raises(argparse.ArgumentTypeError, match="REPEAT must be a whole number of runs from 1 to 20"):
            repetitions.parse_repeat(bad)


def test_the_repetition_travels_from_the_bench_inputs_into_the_result() -> None:
    inputs = _bench_inputs({})
    inputs["repetition"] = {"group": "20261124T130000Z-greeting", "index": 2, "of": 3}
    result = STEADY.with_context(collect.context(bench_inputs(inputs)))
    assert result.repetition == Repetition("20261124T130000Z-greeting", 2, 3)
    assert RunResult.from_json(result.to_json()).repetition == result.repetition
    inputs["repetition"] = {}
    assert collect.context(bench_inputs(inputs)).repetition is None
    with pytest.raises(ValueError, match="repetition 4 of 3"):
        Repetition("g", 4, 3)
