"""`perflab history` over the report's results tree (tests/report/builder.py: real tool output
parsed and judged by perflab, with every kind of bad input): one row per judged run, the others
counted, each cell as the run's files say, the same file every time."""

from __future__ import annotations

import csv
import dataclasses
import datetime
import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from perflab import history
from perflab.results import SetKey, load
from report.builder import GOOD_RUNS, LAB_RUN_ID, SIDE_BY_SIDE, SIDE_BY_SIDE_LEFT_OUT, SWEEP_ID, WARMUP_RUN, \
    full_results, perflab

REPO = Path(__file__).resolve().parents[2]
MIB = 1024 * 1024
JUDGED = {LAB_RUN_ID, *(r.run_id for r in GOOD_RUNS), *(r.run_id for r in SIDE_BY_SIDE), WARMUP_RUN.run_id}
# What builder.full_results leaves without a row, by what the report calls each: SIDE_BY_SIDE_LEFT_OUT
# (one without audit.json, one with its raw output cut short) and builder.BAD_INPUT's runs.
NOT_JUDGED = {
    "no verdict": {*list(SIDE_BY_SIDE_LEFT_OUT)[:1], "20260103T103000Z-quarkus-greeting"},
    "unreadable": {*list(SIDE_BY_SIDE_LEFT_OUT)[1:], "20260103T102000Z-quarkus-greeting",
                   "20260103T104000Z-quarkus-greeting", "20260103T110000Z-spring-mvc-greeting",
                   "20260103T111000Z-quarkus-greeting"},
    "empty": {"20260103T100000Z-quarkus-greeting"},
    "incomplete": {"20260103T101000Z-quarkus-greeting"},
    "unknown": {"20260103T105000Z-quarkus-greeting"},  # no status.json
}
MOVED_START = "2026-11-21T15:00:00+02:00"
COMMIT = "3e4b7e6a1b2c-dirty"
SKIPPED_LINE = ("perflab: history: 10 run(s) not judged, no row (empty 1, incomplete 1, no verdict 2, unknown 1, "
                "unreadable 5); `perflab report` says why\n")


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The report tests' full tree, with attribution.json (as the bench writes it) in two runs: one
    naming the app as the limiting tier, one naming none; and one run that started out of its id's
    order, in another time zone (13:00 UTC: before the lab run's 14:25 UTC, after it as text)."""
    tree = full_results(tmp_path_factory.mktemp("results"))
    moved = tree / GOOD_RUNS[0].run_id / "result.json"
    moved.write_text(json.dumps({**_json(moved), "started_at": MOVED_START}, indent=2), encoding="utf-8")
    # One run made with a recorded commit (the bench's versions.perflab), with changes not committed.
    made = tree / SIDE_BY_SIDE[0].run_id / "result.json"
    stored = _json(made)
    made.write_text(json.dumps({**stored, "versions": {**stored["versions"], "perflab": COMMIT}}, indent=2),
                    encoding="utf-8")
    for run_id, tier in ((SIDE_BY_SIDE[0].run_id, "app"), (SIDE_BY_SIDE[1].run_id, None)):
        (tree / run_id / "attribution.json").write_text(json.dumps({
            "limiting_tier": tier, "sentence": "limited by the app" if tier else "no tier was saturated",
            "evidence": [], "tiers": [], "schema_version": 1}), encoding="utf-8")
    return tree


@pytest.fixture(scope="module")
def written(results: Path) -> subprocess.CompletedProcess[str]:
    return perflab("history", "--results", results)


def _csv(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8", newline="") as file:
        reader = csv.DictReader(file)
        assert tuple(reader.fieldnames or ()) == history.COLUMNS
        return list(reader)


def _json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def _number(cell: str) -> float | None:
    return None if cell == "" else float(cell)


def test_one_row_per_judged_run_oldest_first(results: Path, written: subprocess.CompletedProcess[str]) -> None:
    assert written.returncode == history.EXIT_WRITTEN, written.stderr
    assert written.stdout == f"{results / 'history.csv'}: {len(JUDGED)} judged run(s)\n"
    rows = _csv(results / "history.csv")
    ids = [row["run_id"] for row in rows]
    assert sorted(ids) == sorted(JUDGED)  # no unjudged run, no sweep, each judged run once
    starts = [_json(results / run_id / "result.json")["started_at"] for run_id in ids]
    assert [row["started_at"] for row in rows] == starts
    assert starts == sorted(starts, key=datetime.datetime.fromisoformat)
    # The lab run started last (2026-11-21, 14:25 UTC), the moved run just before it.
    assert ids[-2:] == [GOOD_RUNS[0].run_id, LAB_RUN_ID] and starts[-2] == MOVED_START


def test_runs_not_judged_are_counted_in_one_line(written: subprocess.CompletedProcess[str]) -> None:
    assert written.stderr == SKIPPED_LINE
    assert sum(map(len, NOT_JUDGED.values())) == 10


def test_skipped_counts_by_state_in_process(results: Path) -> None:
    runs = load(results).runs
    assert history.skipped(runs) == {state: len(ids) for state, ids in NOT_JUDGED.items()}
    assert {r.run_id for r in runs if not r.judged} == set().union(*NOT_JUDGED.values())
    assert SWEEP_ID not in {r.run_id for r in runs}


def test_every_cell_as_the_run_files_say(results: Path, written: subprocess.CompletedProcess[str]) -> None:
    for row in _csv(results / "history.csv"):
        run_dir = results / row["run_id"]
        result, verdict = _json(run_dir / "result.json"), _json(run_dir / "audit.json")
        latency = result["latency_corrected"]["percentiles_ms"]
        assert row["started_at"] == result["started_at"]
        assert (row["app"], row["scenario"], row["tool"]) == (result["app"]["name"], result["scenario"]["name"],
                                                              result["tool"])
        assert row["profile"] == result["app"]["profile"] == "default"
        assert (float(row["rate"]), float(row["achieved_rate"])) == (result["target_rate"], result["achieved_rate"])
        assert (_number(row["p50_ms"]), _number(row["p99_ms"]), _number(row["p999_ms"])) == (
            latency.get("50"), latency.get("99"), latency.get("99.9"))
        assert int(row["errors"]) == sum(result["errors"].values())
        assert row["verdict"] == verdict["status"]
        assert _number(row["app_cpu_s_per_1000_requests"]) == verdict["app_cpu_s_per_1000_requests"]
        rss = verdict["app_max_rss_bytes"]
        assert _number(row["app_max_rss_mib"]) == (rss / MIB if rss is not None else None)
        # The commit the run recorded; empty where it recorded none, never made up.
        assert row["commit"] == (COMMIT if row["run_id"] == SIDE_BY_SIDE[0].run_id else ""), row
        assert row["commit"] == result["versions"].get("perflab", "")


def test_known_figures_of_the_side_by_side_runs(results: Path, written: subprocess.CompletedProcess[str]) -> None:
    rows = {row["run_id"]: row for row in _csv(results / "history.csv")}
    quarkus, webflux, mvc400 = (rows[r.run_id] for r in SIDE_BY_SIDE)
    assert (quarkus["variant"], webflux["variant"], mvc400["variant"]) == (
        "quarkus (IO thread)", "spring-webflux", "spring-mvc (400 threads)")
    assert rows[GOOD_RUNS[4].run_id]["variant"] == "spring-mvc (virtual threads)"
    assert (quarkus["verdict"], webflux["verdict"], mvc400["verdict"]) == ("VALID", "VALID", "INVALID")
    assert int(mvc400["errors"]) > 0 and int(webflux["errors"]) == 0
    # The app's observed max RSS (builder.SIDE_BY_SIDE): 210669568 bytes.
    assert float(quarkus["app_max_rss_mib"]) == 210669568 / MIB == 200.91015625
    # Its CPU: 0.08042 busy cores over the 4 s phase, per 1,000 of the run's requests.
    requests = _json(results / SIDE_BY_SIDE[0].run_id / "result.json")["requests"]
    assert float(quarkus["app_cpu_s_per_1000_requests"]) == pytest.approx(0.08042 * 4.0 * 1000 / requests)
    # attribution.json: the tier it names, "none" when it names none, empty without the file.
    assert (quarkus["limiting_tier"], webflux["limiting_tier"], mvc400["limiting_tier"]) == ("app", "none", "")
    # GOOD_RUNS[0] was audited without observations (its observations.json came later): no max RSS in
    # its audit.json, so none in its row, whatever the report falls back to.
    assert rows[GOOD_RUNS[0].run_id]["app_max_rss_mib"] == ""


def test_the_same_file_every_time_written_whole(results: Path, written: subprocess.CompletedProcess[str],
                                                tmp_path: Path) -> None:
    first = (results / "history.csv").read_bytes()
    again = perflab("history", "--results", results, "--output", tmp_path / "again.csv")
    assert again.returncode == history.EXIT_WRITTEN, again.stderr
    assert (tmp_path / "again.csv").read_bytes() == first
    # A copy of the tree in another place, over a stale file, gives the same file.
    copy = tmp_path / "copy"
    shutil.copytree(results, copy)
    (copy / "history.csv").write_text("a stale file, half written", encoding="utf-8")
    assert perflab("history", "--results", copy).returncode == history.EXIT_WRITTEN
    assert (copy / "history.csv").read_bytes() == first
    assert sorted(p.name for p in copy.iterdir() if p.is_file()) == ["history.csv"]  # no partial file left
    assert first.startswith(b"run_id,started_at,app,variant,scenario,rate,tool,profile,database,commit,verdict,")
    assert b"\r" not in first


def test_no_history_without_a_results_directory(tmp_path: Path) -> None:
    done = perflab("history", "--results", tmp_path / "nothing")
    assert done.returncode == history.EXIT_NOT_WRITTEN == 4
    assert done.stderr == (f"perflab: error: {tmp_path / 'nothing'}: no such results directory "
                           "(RESULTS=DIR or --results DIR chooses another)\n")
    assert done.stdout == ""
    # The same message and exit code as `perflab report`.
    same = perflab("report", "--results", tmp_path / "nothing")
    assert (same.returncode, same.stderr) == (done.returncode, done.stderr)


def test_no_history_where_it_cannot_be_written(tmp_path: Path) -> None:
    output = tmp_path / "no-such-dir" / "history.csv"
    done = perflab("history", "--results", tmp_path, "--output", output)
    assert done.returncode == history.EXIT_NOT_WRITTEN
    assert len(done.stderr.splitlines()) == 1
    assert done.stderr.startswith("perflab: error: ") and done.stderr.endswith(": no history written\n")
    assert not output.parent.exists()


def test_an_empty_results_directory_gives_the_header_alone(tmp_path: Path) -> None:
    done = perflab("history", "--results", tmp_path)
    assert (done.returncode, done.stderr) == (history.EXIT_WRITTEN, "")
    assert (tmp_path / "history.csv").read_text(encoding="utf-8") == ",".join(history.COLUMNS) + "\n"


def test_recent_runs_of_a_set_newest_first(results: Path) -> None:
    rows = history.rows(load(results).runs)
    recent = history.recent(rows)
    greeting_200 = SetKey("greeting", 200.0, "vegeta", "default")
    # SIDE_BY_SIDE and the spring-mvc run of GOOD_RUNS share it; its runs not judged never appear.
    assert [r.run_id for r in recent[greeting_200]] == [
        SIDE_BY_SIDE[2].run_id, SIDE_BY_SIDE[1].run_id, SIDE_BY_SIDE[0].run_id, GOOD_RUNS[2].run_id]
    assert set(recent) == {r.key for r in rows}
    assert sum(map(len, recent.values())) == len(rows)  # no set here has more than 5 runs


def test_recent_keeps_the_last_five(results: Path) -> None:
    base = next(r for r in history.rows(load(results).runs) if r.run_id == SIDE_BY_SIDE[0].run_id)
    other = dataclasses.replace(base, run_id="other-set", rate=400.0, started_at="2030-01-01T00:00:00Z")
    runs = [dataclasses.replace(base, run_id=f"run-{day}", started_at=f"2026-02-{day:02d}T10:00:00Z")
            for day in (3, 1, 7, 5, 2, 6, 4)]
    recent = history.recent([*runs, other])
    assert [r.run_id for r in recent[base.key]] == ["run-7", "run-6", "run-5", "run-4", "run-3"]
    assert [r.run_id for r in recent[other.key]] == ["other-set"]
    assert [r.run_id for r in history.recent(runs, per_set=2)[base.key]] == ["run-7", "run-6"]


def test_make_history(results: Path, written: subprocess.CompletedProcess[str], tmp_path: Path) -> None:
    """`make history RESULTS=...` writes RESULTS/history.csv and succeeds though runs were skipped."""
    copy = tmp_path / "results"
    shutil.copytree(results, copy)
    (copy / "history.csv").unlink(missing_ok=True)
    done = subprocess.run(["make", "--no-print-directory", "history", f"RESULTS={copy}"], cwd=REPO,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stderr == SKIPPED_LINE
    assert (copy / "history.csv").read_bytes() == (results / "history.csv").read_bytes()
    done = subprocess.run(["make", "--no-print-directory", "history", f"RESULTS={tmp_path / 'nothing'}"], cwd=REPO,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode != 0 and "no such results directory" in done.stderr
