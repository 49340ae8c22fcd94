"""An app that breaks the contract is refused by the verify phase before any load, and one whose JVM does not
start fails its deploy with its own error. A delay is refused on a kernel without netem. A run interrupted with
Ctrl-C in its measured phase leaves its generator running: the next run stops it first, says so,
and measures alone. A host gone is named before a run opens. (A run that fails mid-way, faults in the measured
phase, and the results directory full: tests/fault_runs, which make test runs on the SSH lab.)"""
from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest
import yaml

from bench_helpers import INVENTORY, RESULTS, ROOT, loadgen_lock, new_run_dir, on_host, read_json, run_dirs, run_make, tail
from labkit import lab_lock, netem_works


@pytest.mark.no_load
def test_delay_refused_without_netem() -> None:
    if netem_works():
        pytest.skip("this kernel has netem: tests/fault_runs' test_failed_run_with_db_delay_removes_the_delay covers it")
    before = run_dirs()
    done = run_make("bench", "APP=quarkus", "SCENARIO=greeting", "DB_DELAY_MS=100", timeout=600)
    assert done.returncode != 0
    assert "needs the kernel's netem qdisc" in done.stdout, tail(done.stdout)
    assert run_dirs() == before
    assert "netem" not in on_host("db[0]", "tc qdisc show")


# Spring MVC with Hikari's connection test query run at every checkout (aliveBypassWindowMs -1:
# always, not only after 500 ms idle): one SELECT more per request, a real deploy-time setting.
EXTRA_SELECT = ["-Dspring.datasource.hikari.connection-test-query=SELECT 1",
                "-Dcom.zaxxer.hikari.aliveBypassWindowMs=-1"]


def test_an_app_with_an_extra_select_per_request_is_refused_before_any_load(tmp_path: Path) -> None:
    extra = tmp_path / "extra-select.json"
    extra.write_text(json.dumps({"app_jvm_opts": EXTRA_SELECT}))
    before = run_dirs()
    done = run_make("bench", "APP=spring-mvc", "SCENARIO=zipcodes", "RATE=50", "DURATION=10s", "WARMUP=0s",
                    f"ANSIBLE_ARGS=-e @{extra}")
    assert done.returncode != 0, tail(done.stdout)
    run_dir = new_run_dir(before)
    status = read_json(run_dir / "status.json")
    assert (status["status"], status["failed_step"]) == ("incomplete", "verifying the app"), status
    # Two selects a request, give or take what perflab/verify.py says its correction cannot remove: a
    # mysqld_exporter scrape in only one of a burst's two intervals, 0.25 a request at most (a CI run
    # here read 1.91 from a burst whose idle interval had the scrape, and 2.00 from the other).
    # The scenario's first request is the write (select + insert): it is the first to fail.
    said = re.fullmatch(r"verify: POST /zipcodes issued (?P<n>\d+\.\d\d) selects per request, "
                        r"the scenario says 1 \(scenarios/zipcodes\.yml\)", status["reason"])
    assert said and abs(float(said["n"]) - 2.0) <= 0.25, status
    verdict = read_json(run_dir / "verify.json")
    assert verdict["status"] == "failed" and verdict["reason"] == status["reason"], verdict
    # No load was sent: no phase ran, no tool output came back, the run window never opened.
    assert "Warm up (not measured)" not in done.stdout and "Start the phase on the agreed instant" not in done.stdout, \
        tail(done.stdout)
    assert not [p.name for p in run_dir.iterdir() if p.name.startswith(("wrk2-", "vegeta-"))]


@pytest.mark.no_load
def test_an_app_whose_jvm_does_not_start_is_its_own_error_and_no_load(tmp_path: Path) -> None:
    """The bench launches the JVM's start and readies the DB and the load generator meanwhile: a JVM that
    exits at once fails the deploy step, its reason this start's own journal lines, not an earlier run's
    (which, 30 lines of them, had pushed the error out of the reason's 2,000 characters)."""
    bad = tmp_path / "bad-jvm-option.json"
    bad.write_text(json.dumps({"app_jvm_opts": ["-XX:+PerflabNoSuchOption"]}))
    before = run_dirs()
    done = run_make("bench", "APP=quarkus", "SCENARIO=zipcodes", "RATE=50", "DURATION=10s", "WARMUP=0s",
                    f"ANSIBLE_ARGS=-e @{bad}")
    assert done.returncode != 0, tail(done.stdout)
    status = read_json(new_run_dir(before) / "status.json")
    assert (status["status"], status["failed_step"]) == ("incomplete", "deploying the app"), status
    assert "the app exited with status 1" in status["reason"], status
    assert "Unrecognized VM option 'PerflabNoSuchOption'" in status["reason"], status
    assert "Shutdown thread" not in status["reason"], "an earlier JVM's lines: " + status["reason"]
    assert "Start the phase on the agreed instant" not in done.stdout, tail(done.stdout)
    assert lab_lock() is None, "the lab's run lock is released once the failure is recorded"


def test_a_run_interrupted_in_its_measured_phase_leaves_the_next_run_clean() -> None:
    """Ctrl-C 5 s into a 150 s measured phase: the generator on the loadgen host keeps running (Ansible
    does not stop it). The next run stops it before anything else, says so in one line, and measures alone."""
    before = run_dirs()
    env = dict(os.environ, ANSIBLE_NOCOLOR="1", PERFLAB_RESULTS_DIR=str(RESULTS))
    first = subprocess.Popen(
        ["make", "--no-print-directory", "bench", f"INVENTORY={INVENTORY}", "APP=quarkus", "SCENARIO=greeting",
         "RATE=200", "DURATION=150s", "WARMUP=0s"],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    output: list[str] = []
    assert first.stdout is not None
    for line in first.stdout:
        output.append(line)
        if "Start the phase on the agreed instant: measure" in line:
            break
    deadline = time.time() + 60
    while not loadgen_lock().get("alive") and time.time() < deadline:
        time.sleep(1)
    time.sleep(5)
    os.killpg(first.pid, signal.SIGINT)  # Ctrl-C on the terminal: the whole foreground group
    output.append(first.communicate(timeout=120)[0])
    interrupted = new_run_dir(before)
    held = loadgen_lock()
    assert held.get("run") == interrupted.name and held["alive"], (held, tail("".join(output)))

    before = run_dirs()
    done = run_make("bench", "APP=quarkus", "SCENARIO=greeting", "RATE=100", "DURATION=10s", "WARMUP=0s")
    assert done.returncode == 0, tail(done.stdout)
    text = " ".join(done.stdout.split())
    assert re.search(rf"took over the run lock of the lab from run {interrupted.name} \(bench quarkus greeting\) of .*: "
                     r"its process on its controller is gone", text), tail(done.stdout)
    assert re.search(rf"stopped the load generator an earlier run left running: run {interrupted.name}, phase measure, "
                     r"pid \d+, running for \d+ s", text), tail(done.stdout)
    run = new_run_dir(before)
    assert not loadgen_lock()["alive"], "a generator still runs after the run"
    assert on_host("loadgen[0]", "ls /var/lib/perflab/runs").split()[-1] == run.name
    result = read_json(run / "result.json")
    assert 95 <= result["achieved_rate"] <= 105 and not any(result["errors"].values()), result


@pytest.mark.no_load
def test_a_host_gone_is_named_in_one_line_before_a_run_opens(tmp_path: Path) -> None:
    """The loadgen host cannot be reached (here: an inventory whose loadgen points at no container)."""
    inventory = tmp_path / "gone"
    shutil.copytree(ROOT / INVENTORY, inventory)
    hosts = yaml.safe_load((inventory / "hosts.yml").read_text())
    loadgen = hosts["all"]["children"]["lab"]["children"]["loadgen"]["hosts"]
    name = next(iter(loadgen))
    loadgen[name] = {**(loadgen[name] or {}), "ansible_host": "perflab-gone-host.invalid"}
    (inventory / "hosts.yml").write_text(yaml.safe_dump(hosts))
    before = run_dirs()
    done = run_make("bench", f"INVENTORY={inventory}", "APP=quarkus", "SCENARIO=greeting", timeout=600)
    assert done.returncode != 0, tail(done.stdout)
    lines = [line for line in done.stdout.splitlines() if "Unreachable:" in line]
    assert len(lines) == 1 and f"{name} (tier loadgen) at perflab-gone-host.invalid" in lines[0], tail(done.stdout)
    assert run_dirs() == before, "no results directory for a run that cannot reach its hosts"
