"""A run that fails mid-way is marked incomplete, closes its window and leaves no netem delay. Faults in a run's
measured phase end in a verdict that names them: the DB stopped, the app's JVM killed, Prometheus stopped. A results directory too small or read-only is refused before the run, and
one that fills up mid-run is recorded. What they assert is what the run recorded of its fault, not a
figure a busy machine would change: make test runs them on the SSH lab (PERFLAB_TEST_LAB=ssh), beside
the local lab's share, whose tests judge figures; make test-bench on any lab."""
from __future__ import annotations

import re
import subprocess
from datetime import datetime
from pathlib import Path

import pytest

from labkit import (INVALID_LINE, in_measured_phase, invalid_said, judged, lab_lock, loadgen_lock, make, netem_works, new_run_dir,
                    on_host, on_host_at, read_json, run_dirs, scrape_interval_s, sleep_until, tail)


@pytest.fixture(scope="session", autouse=True)
def lab_is_up(lab: str) -> None:
    """Every test here runs on the lab the session brought up (tests/conftest.py: `lab`)."""


def _run_with_fault(host: str, fault: str, repair: str, *variables: str) -> tuple[Path, str, int]:
    """A run during whose measured phase FAULT runs on HOST 16 s after its generator started (past
    wrk2's calibration, inside the recorded window); REPAIR runs afterwards whatever happened. The
    fault is asserted to have run in the window, two scrapes before its end at least: what the run
    judges of it is then the run's, not the moment's (in a CI run whose fault this controller timed beside
    the local lab's share, no scrape of the window saw the DB down: most likely the fault ran that late)."""
    before = run_dirs()
    try:
        with in_measured_phase(lambda at: on_host_at(host, fault, at), after_s=16) as injected:
            done = make("bench", *variables, "RATE=100", "DURATION=20s", "WARMUP=5s")
    finally:
        on_host(host, repair)
    assert injected, f"the fault never ran: no measured phase seen\n{tail(done.stdout)}"
    assert judged(done), tail(done.stdout)  # VALID or WARN (0), or INVALID (make's 2 and its line)
    run = new_run_dir(before)
    inputs = read_json(run / "bench-inputs.json")
    start, end = (datetime.fromisoformat(inputs[bound]).timestamp() for bound in ("measure_started_at", "measure_ended_at"))
    assert start < injected[0] < end - 2 * scrape_interval_s(), (
        f"the fault ran {injected[0] - start:.1f} s into the {end - start:.0f} s window", tail(done.stdout))
    return run, done.stdout, done.returncode


def _rules(run: Path) -> dict[str, dict[str, str]]:
    return {rule["rule"]: rule for rule in read_json(run / "audit.json")["rules"]}


# A run that fails mid-way is marked incomplete, closes its run window and never leaves a netem delay on the db
# host. The failure: a measured phase that overruns its time limit (bench_phase_grace_s < 0), a real failure path
# of the bench with no test hook in it.
def _failed_run(*variables: str) -> tuple[str, dict[str, str]]:
    before = run_dirs()
    done = make("bench", "APP=quarkus", "SCENARIO=greeting", "RATE=50", "DURATION=10s", "WARMUP=0s",
                "ANSIBLE_ARGS=-e bench_phase_grace_s=-5", *variables)
    assert done.returncode != 0, tail(done.stdout)
    status = read_json(new_run_dir(before) / "status.json")
    return done.stdout, status


def test_failed_run_is_marked_incomplete_and_closes_its_window() -> None:
    output, status = _failed_run()
    assert status["status"] == "incomplete" and status["failed_step"] == "the run", status
    # The phase overran its time limit: its async job was stopped (run_phase.yml says so in the bench's words).
    assert "the measure phase did not complete within the requested time" in status["reason"], status
    assert "perflab_run.prom" not in on_host("loadgen[0]", "ls /var/lib/prometheus/node-exporter/"), tail(output)
    assert lab_lock() is None, "the lab's run lock is released once the failure is recorded"


def test_failed_run_with_db_delay_removes_the_delay() -> None:
    if not netem_works():
        pytest.skip("this kernel has no netem (sch_netem): tests/bench_runs' test_delay_refused_without_netem covers it")
    output, status = _failed_run("DB_DELAY_MS=100")
    assert "Delay the db hosts' packets with netem" in output
    assert status["status"] == "incomplete" and status["failed_step"] == "the run", status
    assert "netem" not in on_host("db[0]", "tc qdisc show"), tail(output)


def test_the_db_stopped_mid_run_is_invalid_with_its_errors_and_the_outage_named() -> None:
    run, output, code = _run_with_fault("db[0]", "systemctl stop mariadb", "systemctl start mariadb",
                                        "APP=quarkus", "SCENARIO=zipcodes")
    assert read_json(run / "status.json")["status"] == "complete", tail(output)
    audit, rules = read_json(run / "audit.json"), _rules(run)
    assert audit["status"] == "INVALID", audit
    # make bench fails for it (make's 2), and says why.
    assert code == 2 and f"perflab: make bench: run {run.name} {INVALID_LINE}" in output, tail(output)
    assert rules["no_errors"]["status"] == "INVALID", rules["no_errors"]
    assert rules["db_up"]["status"] == "INVALID" and "the DB was down for" in rules["db_up"]["evidence"], rules["db_up"]
    assert "not saturated" not in rules["app_is_bottleneck"]["evidence"], rules["app_is_bottleneck"]
    sessions = read_json(run / "db-sessions.json")
    assert "unavailable" in sessions or sessions.get("sessions") is not None, sessions
    attribution = read_json(run / "attribution.json")
    assert attribution["limiting_tier"] == "db" and "the DB was down" in attribution["sentence"], attribution
    assert "kept up" not in attribution["sentence"], attribution


def test_the_app_killed_mid_run_is_invalid_and_its_restart_is_named() -> None:
    run, output, code = _run_with_fault("app[0]", "systemctl kill -s KILL perflab-app", "true",
                                        "APP=quarkus", "SCENARIO=greeting")
    audit, rules = read_json(run / "audit.json"), _rules(run)
    assert audit["status"] == "INVALID" and code == 2 and invalid_said(output) == run.name, (audit, tail(output))
    restarted = rules["app_not_restarted"]
    assert restarted["status"] == "INVALID" and "the app restarted" in restarted["evidence"], restarted
    sentence = read_json(run / "attribution.json")["sentence"]
    assert sentence.startswith("the app restarted") and "kept up" not in sentence, sentence


def test_prometheus_stopped_mid_run_leaves_rules_not_evaluated_and_claims_no_health() -> None:
    run, output, _ = _run_with_fault("monitoring[0]", "systemctl stop prometheus", "systemctl start prometheus",
                                     "APP=quarkus", "SCENARIO=greeting")
    rules = _rules(run)
    for name in ("app_not_restarted", "db_up"):
        assert rules[name]["status"] == "NOT_EVALUATED" and "Prometheus" in rules[name]["evidence"], rules[name]
    assert "not saturated" not in rules["app_is_bottleneck"]["evidence"], rules["app_is_bottleneck"]
    sentence = read_json(run / "attribution.json")["sentence"]
    assert "no tier was saturated" not in sentence and "cannot be told" in sentence, sentence


def _fill(directory: Path, at: float) -> float:
    """DIRECTORY filled up with zeros from unix second AT; the moment it started."""
    started = sleep_until(at)
    subprocess.run(["dd", "if=/dev/zero", f"of={directory}/filler", "bs=64k"], capture_output=True, check=False)
    return started


def test_results_full_or_read_only_are_refused_before_the_run_and_filling_up_mid_run_is_recorded(tmp_path: Path) -> None:
    """RESULTS= on a 1 MiB tmpfs: the run's files would not fit (refused, naming the room and the
    need); the same read-only: refused as not writable. Nothing changed: no run directory, no lock.
    Then RESULTS filling up in the measured phase: the failed step recorded, the real path named."""
    tiny = tmp_path / "tiny"
    tiny.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(tiny)], capture_output=True, text=True)
    if mounted.returncode != 0:
        pytest.skip(f"this controller cannot mount a tmpfs here: {mounted.stderr.strip()}")
    try:
        done = make("bench", "APP=quarkus", "SCENARIO=greeting", "RATE=100", "DURATION=10s", "WARMUP=0s",
                        f"RESULTS={tiny}", timeout=600)
        assert done.returncode != 0, tail(done.stdout)
        text = " ".join(done.stdout.split())
        assert re.search(rf"bench: the results directory {tiny} has 1\.0 MiB free; this run needs about \d+\.\d MiB "
                         r"\((wrk2|vegeta) at 100 req/s for 10 s\): nothing was changed", text), tail(done.stdout)
        subprocess.run(["mount", "-o", "remount,ro", str(tiny)], check=True)
        done = make("bench", "APP=quarkus", "SCENARIO=greeting", "RATE=100", "DURATION=10s", "WARMUP=0s",
                        f"RESULTS={tiny}", timeout=600)
        text = " ".join(done.stdout.split())
        assert done.returncode != 0 and f"bench: the results directory {tiny} cannot be written" in text, tail(done.stdout)
        assert "Read-only file system" in text, tail(done.stdout)
        assert not list(tiny.iterdir()) and lab_lock() is None
        # Room for the run (3 MiB), filled 3 s into its measured phase: the failed step is recorded
        # with its reason, in the real results directory, the files removed to make room named.
        subprocess.run(["mount", "-o", "remount,rw,size=3m", str(tiny)], check=True)
        with in_measured_phase(lambda at: _fill(tiny, at), after_s=3) as filled:
            done = make("bench", "APP=quarkus", "SCENARIO=greeting", "RATE=100", "DURATION=15s", "WARMUP=0s",
                            f"RESULTS={tiny}", timeout=600)
        assert filled and done.returncode != 0, tail(done.stdout)
        (run,) = [p for p in tiny.iterdir() if p.is_dir()]
        assert f"bench: the run failed; {run}/status.json says why." in " ".join(done.stdout.split()), tail(done.stdout)
        status = read_json(run / "status.json")
        assert status["status"] == "incomplete" and status["failed_step"] == "the run", status
        assert re.match(r"The results directory ran out of room: the run's files \S.* were removed to record this\. ",
                        status["reason"]) and "No space left on device" in status["reason"], status
        assert lab_lock() is None and not loadgen_lock()["alive"]
    finally:
        subprocess.run(["umount", str(tiny)], check=False)
