"""A run that fails mid-way is marked incomplete, closes its run window and never leaves a netem
delay on the db host. The failure: a measured phase that overruns its time limit
(bench_phase_grace_s < 0), a real failure path of the bench with no test hook in it. And an app
that breaks the contract is refused by the verify phase before any load. A run interrupted with
Ctrl-C in its measured phase leaves its generator running: the next run stops it first, says so,
and measures alone. A host gone is named before a run opens. Faults in the measured phase (the DB
stopped, the app's JVM killed, Prometheus stopped) end in a verdict that names them."""
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
from labkit import INVALID_LINE, in_measured_phase, judged, lab_lock


def _netem_works() -> bool:
    probe = on_host("db[0]", "tc qdisc add dev lo root netem delay 0ms && tc qdisc del dev lo root && echo netem-ok || true")
    return "netem-ok" in probe


def _failed_run(*variables: str) -> tuple[str, dict[str, str]]:
    before = run_dirs()
    done = run_make("bench", "APP=quarkus", "SCENARIO=greeting", "RATE=50", "DURATION=10s", "WARMUP=0s",
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
    if not _netem_works():
        pytest.skip("this kernel has no netem (sch_netem): test_delay_refused_without_netem covers it")
    output, status = _failed_run("DB_DELAY_MS=100")
    assert "Delay the db hosts' packets with netem" in output
    assert status["status"] == "incomplete" and status["failed_step"] == "the run", status
    assert "netem" not in on_host("db[0]", "tc qdisc show"), tail(output)


def test_delay_refused_without_netem() -> None:
    if _netem_works():
        pytest.skip("this kernel has netem: test_failed_run_with_db_delay_removes_the_delay covers it")
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
    said = re.fullmatch(r"verify: GET /zipcodes/\{zip\} issued (?P<n>\d+\.\d\d) selects per request, "
                        r"the contract says 1 \(apps/contract/README\.md\)", status["reason"])
    assert said and abs(float(said["n"]) - 2.0) <= 0.25, status
    verdict = read_json(run_dir / "verify.json")
    assert verdict["status"] == "failed" and verdict["reason"] == status["reason"], verdict
    # No load was sent: no phase ran, no tool output came back, the run window never opened.
    assert "Warm up (not measured)" not in done.stdout and "Start the phase on the agreed instant" not in done.stdout, \
        tail(done.stdout)
    assert not [p.name for p in run_dir.iterdir() if p.name.startswith(("wrk2-", "vegeta-"))]


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


def _run_with_fault(host: str, fault: str, repair: str, *variables: str) -> tuple[Path, str, int]:
    """A run during whose measured phase FAULT runs on HOST 16 s after its generator started (past
    wrk2's calibration, inside the recorded window); REPAIR runs afterwards whatever happened."""
    before = run_dirs()
    try:
        with in_measured_phase(lambda: on_host(host, fault), after_s=16) as injected:
            done = run_make("bench", *variables, "RATE=100", "DURATION=20s", "WARMUP=5s")
    finally:
        on_host(host, repair)
    assert injected, f"the fault never ran: no measured phase seen\n{tail(done.stdout)}"
    assert judged(done), tail(done.stdout)  # VALID or WARN (0), or INVALID (make's 2 and its line)
    return new_run_dir(before), done.stdout, done.returncode


def _rules(run: Path) -> dict[str, dict[str, str]]:
    return {rule["rule"]: rule for rule in read_json(run / "audit.json")["rules"]}


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
    assert audit["status"] == "INVALID" and code == 2 and INVALID_LINE in output, (audit, tail(output))
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
        done = run_make("bench", "APP=quarkus", "SCENARIO=greeting", "RATE=100", "DURATION=10s", "WARMUP=0s",
                        f"RESULTS={tiny}", timeout=600)
        assert done.returncode != 0, tail(done.stdout)
        text = " ".join(done.stdout.split())
        assert re.search(rf"bench: the results directory {tiny} has 1\.0 MiB free; this run needs about \d+\.\d MiB "
                         r"\((wrk2|vegeta) at 100 req/s for 10 s\): nothing was changed", text), tail(done.stdout)
        subprocess.run(["mount", "-o", "remount,ro", str(tiny)], check=True)
        done = run_make("bench", "APP=quarkus", "SCENARIO=greeting", "RATE=100", "DURATION=10s", "WARMUP=0s",
                        f"RESULTS={tiny}", timeout=600)
        text = " ".join(done.stdout.split())
        assert done.returncode != 0 and f"bench: the results directory {tiny} cannot be written" in text, tail(done.stdout)
        assert "Read-only file system" in text, tail(done.stdout)
        assert not list(tiny.iterdir()) and lab_lock() is None
        # Room for the run (3 MiB), filled 3 s into its measured phase: the failed step is recorded
        # with its reason, in the real results directory, the files removed to make room named.
        subprocess.run(["mount", "-o", "remount,rw,size=3m", str(tiny)], check=True)
        with in_measured_phase(lambda: subprocess.run(["dd", "if=/dev/zero", f"of={tiny}/filler", "bs=64k"],
                                                      capture_output=True, check=False), after_s=3) as filled:
            done = run_make("bench", "APP=quarkus", "SCENARIO=greeting", "RATE=100", "DURATION=15s", "WARMUP=0s",
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
