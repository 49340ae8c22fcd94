"""What every lab-level test shares: which lab (PERFLAB_TEST_INVENTORY, default inventory/local, or
the SSH lab with PERFLAB_TEST_LAB=ssh),
where its results go (PERFLAB_RESULTS_DIR, default results/), and `make` on it."""
from __future__ import annotations

import fcntl
import json
import os
import re
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import yaml

from perflab.observe import DEFAULT_SCRAPE_INTERVAL_S

ROOT = Path(__file__).resolve().parents[1]
# PERFLAB_TEST_LAB=ssh: the session's lab is five fresh machines reached over SSH (tests/sshlab.py),
# their inventory written at INVENTORY (default build/ssh-test-lab); `make test-lab` runs some of the
# lab's tests there, beside the others on the local lab.
SSH_LAB = os.environ.get("PERFLAB_TEST_LAB") == "ssh"
INVENTORY = os.environ.get("PERFLAB_TEST_INVENTORY") or ("build/ssh-test-lab" if SSH_LAB else "inventory/local")


def scrape_interval_s(inventory: str = INVENTORY) -> int:
    """lab_scrape_interval_s as INVENTORY sets it, in its one place (group_vars/all/lab.yml); perflab's default where
    it does not."""
    settings = yaml.safe_load((ROOT / inventory / "group_vars" / "all" / "lab.yml").read_text()) or {}
    return int(settings.get("lab_scrape_interval_s", DEFAULT_SCRAPE_INTERVAL_S))
RESULTS = Path(os.environ.get("PERFLAB_RESULTS_DIR") or ROOT / "results")
# PERFLAB_TEST_REUSE_LAB=1: take the lab as it is (a warm lab-up), leave it up afterwards.
REUSE_LAB = os.environ.get("PERFLAB_TEST_REUSE_LAB") == "1"
# The run every test that needs "a normal run" shares (conftest.py: short_run): the README's main
# job, shortened.
SHORT_RUN = ("APP=quarkus", "SCENARIO=zipcodes", "RATE=200", "DURATION=30s", "WARMUP=15s")


# The make targets that run load on the lab, whose figures the tests judge, and what each waits for before
# the first of them (conftest.py: under make test, for the checks and the SSH lab's lab-up beside the local
# lab to end; the lab's other tests run meanwhile).
RUN_TARGETS = frozenset({"bench", "compare", "sweep", "reproduce"})
BEFORE_THE_FIRST_RUN: list[Callable[[], None]] = []
# A test marked no_load makes runs that end before any load: refused, or failed before the warm-up. It runs
# while the lab's runs wait (conftest.py orders it there), and its runs do not wait: no figure of theirs is read.
NO_LOAD_MARK = "no_load"
_in_a_no_load_test = False


@contextmanager
def in_a_no_load_test() -> Iterator[None]:
    """While a test marked no_load runs (conftest.py): its make runs do not wait for BEFORE_THE_FIRST_RUN."""
    global _in_a_no_load_test
    _in_a_no_load_test = True
    try:
        yield
    finally:
        _in_a_no_load_test = False


def make(target: str, *variables: str, timeout: float = 1800) -> subprocess.CompletedProcess[str]:
    """`make TARGET INVENTORY=<the test lab> VAR=...` (an INVENTORY= among VARIABLES wins); stdout and
    stderr together in .stdout. A run (RUN_TARGETS) first waits for BEFORE_THE_FIRST_RUN, once, unless the
    test is marked no_load."""
    if target in RUN_TARGETS and not _in_a_no_load_test:
        while BEFORE_THE_FIRST_RUN:
            BEFORE_THE_FIRST_RUN.pop(0)()
    env = dict(os.environ, ANSIBLE_NOCOLOR="1", ANSIBLE_FORCE_COLOR="0", PERFLAB_RESULTS_DIR=str(RESULTS))
    return subprocess.run(
        ["make", "--no-print-directory", target,
         *([] if any(v.startswith("INVENTORY=") for v in variables) else [f"INVENTORY={INVENTORY}"]), *variables],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=timeout, check=False,
    )


# What make bench prints after the verdict of a run judged INVALID (the Makefile's bench_once). make itself exits
# 2 then, as for any recipe that failed: the line tells a judged run from one that failed.
INVALID_LINE = "is INVALID (its verdict is above)"


def judged(done: subprocess.CompletedProcess[str]) -> bool:
    """make bench made its run and judged it: 0 (VALID or WARN), or make's 2 with the line of an INVALID run. The
    line as printed, at a line's start: make echoes the recipe, whose text holds it too (a run that failed to deploy
    read as judged before, and a test went on to look for its files)."""
    return done.returncode == 0 or (done.returncode == 2 and invalid_said(done.stdout) is not None)


def invalid_said(output: str) -> str | None:
    """The run make bench said was judged INVALID (the line's run id), if it said so."""
    said = re.search(r"^perflab: make bench: run (\S+) " + re.escape(INVALID_LINE) + "$", output, re.MULTILINE)
    return said[1] if said else None


# The local and the SSH lab share this machine's two cores (make test runs them side by side, beside the checks).
# The SSH lab yields the CPU to the local lab (its pytest at nice 19 in a session of its own: scripts/yielding.sh;
# its machines at an eighth of its CPU weight: tests/sshlab.py), whose tests judge its runs' figures; the SSH lab's tests judge what its own runs recorded
# (the counts two loadgen hosts merge, the verdict against each host's share), not a quiet machine. One of its
# measurements asks for a quiet machine, and is made after the local lab's share (after_the_local_lab): the lock
# test's first run, whose statements per request are the contract's (beside the local lab's run driven past its
# CPU, one read 1.05 selects per request: requests in flight at the window's bounds). (Field report 2, whose arms
# that hold the rate must not be INVALID, was the other: after the local lab's share it took CI past its 90
# minutes, and beside it CI simulations failed it twice, WebFlux's arm timing out 34 of 9,044 requests, the JIT
# compiling for 86% of its window. It is make test-reproduce's, on a lab of its own: report_2_reproduced.)
# The local lab's session holds this lock shared from its lab-up to its lab-down (conftest: lab), and they take
# it whole. Serializing every run of both labs instead cost CI 40 minutes (its 90 ran out).
MEASUREMENTS_LOCK = Path(tempfile.gettempdir()) / "perflab-test-measurements.lock"


@contextmanager
def local_lab_session() -> Iterator[None]:
    """Held by the local lab's session: a measurement that waits for the local lab (after_the_local_lab) waits for it."""
    with MEASUREMENTS_LOCK.open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_SH)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


@contextmanager
def after_the_local_lab(say: Callable[[str], None] = print) -> Iterator[None]:
    """Waits for the local lab's session beside this one, if any, to end; holds the machine's measurements until
    the block ends (no local lab session starts meanwhile)."""
    with MEASUREMENTS_LOCK.open("a") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            started = time.monotonic()
            say(f"waiting for the local lab's share beside this one to end ({MEASUREMENTS_LOCK})")
            fcntl.flock(lock, fcntl.LOCK_EX)
            say(f"the local lab's share ended after {time.monotonic() - started:.0f} s more")
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def run_dirs() -> set[str]:
    return {p.name for p in RESULTS.iterdir()} if RESULTS.is_dir() else set()


def new_run_dir(before: set[str]) -> Path:
    """The one results/<run-id>/ a make bench created since BEFORE."""
    created = sorted(run_dirs() - before)
    assert len(created) == 1, f"expected one new run directory under {RESULTS}, got {created}"
    return RESULTS / created[0]


def read_json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def tail(text: str, lines: int = 60) -> str:
    return "\n".join(text.splitlines()[-lines:])


def changed_counts(output: str) -> dict[str, int]:
    """changed=N of every host in the PLAY RECAP."""
    return {m.group(1): int(m.group(2)) for m in re.finditer(r"^(\S+)\s+:\s+ok=\d+\s+changed=(\d+)", output, re.M)}


def on_host(pattern: str, command: str) -> str:
    """Run a shell command on the first host matching PATTERN (e.g. db[0]); its stdout."""
    done = subprocess.run(
        [str(ROOT / ".venv/bin/ansible"), "-i", INVENTORY, pattern, "-o", "-m", "ansible.builtin.shell", "-a", command],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )
    assert done.returncode == 0, f"ansible {pattern} {command!r} failed:\n{done.stdout}\n{done.stderr}"
    return done.stdout


def netem_works() -> bool:
    """Whether the db host's kernel can add a netem qdisc (DB_DELAY_MS needs it; this machine's has no sch_netem)."""
    probe = on_host("db[0]", "tc qdisc add dev lo root netem delay 0ms && tc qdisc del dev lo root && echo netem-ok || true")
    return "netem-ok" in probe


def loadgen_lock() -> dict[str, Any]:
    """What holds the first loadgen host's run lock (roles/bench: bench_loadgen_lock): its run, phase,
    pid and since ({} when no run has taken it yet), and whether that process still lives."""
    # The file read once, and the pid of what was read checked: read twice, a run's start program taking the lock
    # between the two reads paired the last run's "since" with its own live pid, and a CI simulation's hog
    # (in_measured_phase) started 14 s early, before the window.
    out = on_host("loadgen[0]", "held=$(cat /run/perflab-loadgen.lock 2>/dev/null); echo \"$held\"; "
                                "kill -0 $(echo \"$held\" | python3 -c 'import json,sys; print(json.load(sys.stdin)[\"pid\"])' "
                                "2>/dev/null) 2>/dev/null && echo ALIVE || echo GONE")
    found = re.search(r"(\{.*\})", out)
    return {**(json.loads(found.group(1)) if found else {}), "alive": "ALIVE" in out}


LAB_LOCK = "/var/lib/perflab/run.lock"  # roles/run_lock: run_lock_path, on the first app host


def lab_lock() -> dict[str, Any] | None:
    """Who holds the lab's run lock (roles/run_lock), None when it is free."""
    found = re.search(r"(\{.*\})", on_host("app[0]", f"cat {LAB_LOCK} 2>/dev/null || true"))
    return json.loads(found.group(1)) if found else None


def sleep_until(at: float) -> float:
    """Sleep here until unix second AT; returns the moment it woke."""
    time.sleep(max(0.0, at - time.time()))
    return time.time()


def on_host_at(pattern: str, command: str, at: float) -> float:
    """Run COMMAND on the first host matching PATTERN at unix second AT by that host's clock; the moment
    it started there. The host waits for the instant, not this controller: the Ansible that reaches it
    takes seconds (1.0-1.1 s on an idle controller, 2.4-2.7 s beside six busy loops, 2026-12-07), more
    on a CI machine beside the local lab's share, and that time is not added to AT: a fault meant for a
    window's middle does not land at its end."""
    out = on_host(pattern, f"python3 -c 'import time; time.sleep(max(0.0, {at!r} - time.time()))'; "
                           f"echo \"perflab-test: acting at $(date +%s.%N)\"; {command}")
    acted = re.search(r"perflab-test: acting at ([0-9.]+)", out)
    assert acted, out
    return float(acted.group(1))


@contextmanager
def in_measured_phase(action: Callable[[float], float], after_s: float) -> Iterator[list[float]]:
    """While the body runs the bench, call ACTION from a thread with the instant AFTER_S seconds after the
    next measured phase's generator started, as soon as that phase is seen: ACTION waits for the instant
    itself (on_host_at on the host it acts on, sleep_until here) and returns the moment it acted. Yields
    the list that gets that moment (empty if it never acted)."""
    ran: list[float] = []
    done = threading.Event()

    def wait_and_act() -> None:
        while not done.is_set():
            held = loadgen_lock()
            if held.get("phase") == "measure" and held["alive"]:
                ran.append(action(float(held["since"]) + after_s))
                return
            done.wait(1)

    thread = threading.Thread(target=wait_and_act, daemon=True)
    thread.start()
    try:
        yield ran
    finally:
        done.set()
        thread.join(timeout=60)


def report_2_reproduced(inventory: str = INVENTORY, *variables: str) -> dict[str, Any]:
    """`make reproduce REPORT=2` on INVENTORY's lab (perflab/reproduce.py: /hello/1000 at 300 req/s),
    shortened: Spring MVC on 200 Tomcat threads caps near threads / latency (200 req/s), its run
    INVALID and attributed to the app's request threads, not to the load generator; 400 threads,
    MVC on virtual threads and WebFlux at the same rate VALID or WARN, holding the rate, never
    attributed to request threads; the table prints the report's figures beside the lab's with
    every relation reproduced. Returns reproduction.json."""
    # 20 s measured: the capped app's answers are read from its histogram over the window, whose two
    # end scrapes the app answers late (up to the 1 s latency): 5% of 20 s at most, 10% of 10 s.
    # 20 s of warm-up, what hello-latency asks: after 5 s, beside the local lab's share, WebFlux still
    # compiled for 65% of its window and 34 of 9044 requests timed out in wrk2's calibration (INVALID:
    # "WebFlux holds the rate" not reproduced, a CI simulation's failure).
    done = make("reproduce", f"INVENTORY={inventory}", "REPORT=2", "DURATION=20s", "WARMUP=20s", *variables,
                timeout=2400)
    assert done.returncode == 0, tail(done.stdout, 80)
    written = re.search(r"-> (\S+/reproduction\.json)$", done.stdout, re.MULTILINE)
    assert written, tail(done.stdout, 40)
    document: dict[str, Any] = read_json(Path(written[1]))
    runs = {key: RESULTS / run["run"] for key, run in document["runs"].items()}
    assert set(runs) == {"mvc200", "mvc400", "virtual", "webflux"}, document["runs"]

    capped = read_json(runs["mvc200"] / "attribution.json")
    assert read_json(runs["mvc200"] / "audit.json")["status"] == "INVALID"
    # The app named by its request threads (report 2's cap), as the relation judges it: alone ("limited
    # by the app's request threads (...)"), or after its CPUs where other processes of a shared machine
    # keep them busy too (a CI run beside the local lab's share: "limited by the app: its CPUs 92% busy
    # with every process of the machine and its request threads 172 of 200 busy on average, ...").
    assert capped["limiting_tier"] == "app" and re.search(r"(the app's request threads \(|and its request threads "
                                                          r"\d+ of 200 busy)", capped["sentence"]), capped
    assert "load generator" not in capped["sentence"], capped
    assert 170 <= read_json(runs["mvc200"] / "result.json")["achieved_rate"] <= 220
    for key in ("mvc400", "virtual", "webflux"):
        assert read_json(runs[key] / "audit.json")["status"] in ("VALID", "WARN"), key
        assert "request threads" not in read_json(runs[key] / "attribution.json")["sentence"], key
        result = read_json(runs[key] / "result.json")
        assert result["achieved_rate"] >= 0.95 * 300, key
        # hello-latency's cells of the matrix (tests/matrix_lab): every request answered, without an error.
        assert not any(result["errors"].values()), (key, result["errors"])

    assert [relation["status"] for relation in document["relations"]] == ["reproduced"] * 5, document["relations"]
    assert "report: Spring MVC, 200 threads" in done.stdout and "lab: Spring MVC, 200 Tomcat threads" in done.stdout
    assert done.stdout.count("[reproduced]") == 5, tail(done.stdout, 40)
    return document
