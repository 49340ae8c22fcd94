"""End to end on a lab: every run is judged from Prometheus and attributed to its limiting tier.

A normal run (the shared `short_run`) keeps up and is not attributed to the DB; its observations
hold the mix by third, the statements per request the contract expects, TLS on every DB session,
and utilization.json. A run during which a CPU hog runs on the db host is attributed to the DB.
A run driven past the app's CPU reads all of it over exactly its window, and its profile (PROFILE_APP=cpu)
names the app's layers in the attribution and writes a flame graph that opens in Chromium.

On the local default the db, loadgen and monitoring containers share core 0, so a hog "on the DB
host" also takes CPU from the load generator. Two things keep this test honest about it: the hog
runs inside the db container, whose processes share that container's CPU weight (cgroup
cpu.shares/cpu.weight) and so starve mysqld first, the other containers keeping their fair share;
and the attribution must name the DB from the queue in front of it (the app's requests waiting for
a DB connection), not from CPU alone. The controller itself (pytest, make, Ansible, perflab) runs
on this machine too: while the hog fills core 0, the kernel moves it to the app's core 1, which then
reads over 90% busy with other processes, and the attribution rightly declines to choose between a
starved app and a starved DB ("not attributed": seen in a CI run at 0.59 app cores + 0.35 others).
So the hogged run's controller processes are kept off the app's cores, as they are on any lab whose
controller is not the app's machine. The docker provider only: the hog is started with docker exec.
"""
from __future__ import annotations

import datetime
import json
import os
import re
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from labkit import INVENTORY, ROOT, in_measured_phase, judged, make, new_run_dir, read_json, run_dirs, sleep_until, tail
from perflab.attribution import THRESHOLDS as ATTRIBUTION
from perflab.attribution import cpu_limit
from perflab.audit import THRESHOLDS
from report.chromium import visit

AUDIT_DB_CPU = THRESHOLDS.db_cpu_busy.value  # the DB host's own CPU over this is named (the attribution's too)
# The requests that failed, which the sentence states before the attribution (perflab.attribution.failures):
# a machine loaded by others may time one out ("1 of 6035 requests failed (timeout 1); not attributed: ...").
FAILED_FIRST = re.compile(r"^\d+ (of \d+ )?requests failed \([^)]*\)(, \d+ completed)?; ")


def attributed(sentence: str) -> str:
    """The attribution's own sentence, without the failed requests stated before it."""
    return FAILED_FIRST.sub("", sentence)

# One short run under the hog, started a third of the way into its measured window (issue 24: a hog from
# 10 s into a 40 s window read 88% busy on average and went unnamed): no warm-up (the attribution, not
# the JIT, is under test), the short run's rate and app so the two runs differ only by the hog. wrk2's
# window is its 30 s and its calibration, about 41 s: the hog starts 14 s after the tool.
HOG_RUN = ("APP=quarkus", "SCENARIO=zipcodes", "RATE=200", "DURATION=30s", "WARMUP=0s")
HOG_FROM_S = 14.0
HOG_PROCESSES = 16  # busy loops in the db container: mysqld gets about 1/17 of its container's share
HOG_PIDS = "/run/perflab-test-hog.pids"


def inventory_hosts(group: str) -> list[str]:
    listed = subprocess.run([str(ROOT / ".venv/bin/ansible-inventory"), "-i", INVENTORY, "--list"],
                            cwd=ROOT, capture_output=True, text=True, check=True, timeout=120)
    hosts: list[str] = json.loads(listed.stdout)[group]["hosts"]
    return hosts


def stop_hog() -> None:
    db = inventory_hosts("db")[0]
    subprocess.run(["docker", "exec", db, "sh", "-c", f"kill $(cat {HOG_PIDS}) 2>/dev/null; rm -f {HOG_PIDS}"],
                   check=False, timeout=60)


@pytest.fixture(scope="module")
def db_hog(lab: str) -> Iterator[Callable[[float], float]]:
    """Starts, when called with a unix second, a CPU hog in the db container from then on (returns the
    moment it started), stopped once the hogged run is over (each loop also ends by itself after 10
    minutes, should the test be killed)."""
    db = inventory_hosts("db")[0]
    script = (f"rm -f {HOG_PIDS}; for i in $(seq {HOG_PROCESSES}); do "
              f"timeout 600 sh -c 'while :; do :; done' & echo $! >> {HOG_PIDS}; done")

    def hog(at: float) -> float:
        started = sleep_until(at)
        subprocess.run(["docker", "exec", db, "sh", "-c", script], check=True, timeout=60)
        return started

    try:
        yield hog
    finally:
        stop_hog()


def app_cpus() -> set[int]:
    """The cores the app container may use (lab_containers_cpuset_cpus, e.g. "1" or "2-5")."""
    listed = subprocess.run([str(ROOT / ".venv/bin/ansible-inventory"), "-i", INVENTORY, "--host", inventory_hosts("app")[0]],
                            cwd=ROOT, capture_output=True, text=True, check=True, timeout=120)
    cpus: set[int] = set()
    for part in str(json.loads(listed.stdout).get("lab_containers_cpuset_cpus", "")).split(","):
        if part:
            first, _, last = part.partition("-")
            cpus.update(range(int(first), int(last or first) + 1))
    return cpus


@pytest.fixture(scope="module")
def hogged_run(db_hog: Callable[[float], float]) -> Path:
    """The run, the hog started a third of the way into its measured phase (the DB reset and the app's
    deploy before it are not what is under test, and under the hog they took two minutes more)."""
    before = run_dirs()
    everywhere = os.sched_getaffinity(0)
    off_the_app = everywhere - app_cpus()
    os.sched_setaffinity(0, off_the_app or everywhere)  # make, Ansible and perflab inherit it
    try:
        with in_measured_phase(db_hog, after_s=HOG_FROM_S) as hogged:
            done = make("bench", *HOG_RUN)
    finally:
        os.sched_setaffinity(0, everywhere)
        # The module's next run measures the app alone: a hog left running until the module's end
        # made its DB host 0.93 busy with other processes, and the app's pool waits were rightly the DB's.
        stop_hog()
    assert hogged, "the hog never started: no measured phase seen\n" + tail(done.stdout, 80)
    # Judged, whatever its verdict (labkit.judged): what the test reads is the attribution.
    assert judged(done), "the run under the hog failed:\n" + tail(done.stdout, 80)
    run_dir = new_run_dir(before)
    assert "bottleneck: " in done.stdout, "the bench did not print the attribution"
    return run_dir


def test_a_normal_run_is_judged_from_prometheus_and_not_blamed_on_the_db(short_run: Path) -> None:
    attribution = read_json(short_run / "attribution.json")
    observations = read_json(short_run / "observations.json")
    assert attribution["limiting_tier"] != "db", attribution["sentence"]
    result = read_json(short_run / "result.json")
    if result["achieved_rate"] >= 0.95 * result["target_rate"]:  # a machine loaded by others may fall short
        # Kept up; a tier whose shared CPUs read busy (with nothing queueing) is noted, not blamed. A tier over
        # its CPU threshold for a stretch of the window (issue 24) is named for it, and never as starved by
        # others where its own service filled it: in a CI simulation the app's JVM filled its core for 10 s
        # after the warm-up (0.90 of 1, others 0.02), and the run caught up (213 of 200 req/s, p99 over its SLO).
        sentence = attributed(attribution["sentence"])
        if "for a stretch of the window" in sentence:
            assert attribution["limiting_tier"] in ("app", "loadgen"), sentence
            assert "starved by other processes" not in sentence or "other processes of its host 0.0" not in sentence, sentence
        else:
            assert attribution["limiting_tier"] is None, sentence
            assert sentence.startswith(("no tier was saturated: the system kept up",
                                        "not attributed: the system kept up")), sentence
    thirds = observations["write_share_by_third"]
    assert thirds is not None and all(0.45 <= share <= 0.55 for share in thirds), thirds  # write_ratio 0.5
    observed, expected = observations["statements_per_request"], observations["expected_statements_per_request"]
    assert observed and expected, observations["unobserved"]
    assert abs(observed["select"] - expected["select"]) <= 0.05 and abs(observed["insert"] - expected["insert"]) <= 0.05
    # Issue 22: those counters were read at each target's first scrape after the load (settle), not at the fixed
    # 15 s after it: at a 5 s scrape, 1-6 s after the end and the DB again up to a scrape after that.
    rest = re.search(r"its counters at rest ([0-9.]+) s after its end \(each target's first scrape after the load\), "
                     r"the DB again ([0-9.]+) s after it", observations["source"])
    assert rest is not None, observations["source"]
    assert 1.0 < float(rest[1]) < float(rest[2]) < 15.0, observations["source"]
    sessions = observations["db_sessions"]
    assert sessions is not None and sessions["total"] > 0 and sessions["tls"] == sessions["total"], sessions
    assert observations["app_max_rss_bytes"] > 50e6
    # How long the app's and the DB's own threads waited for a CPU, read on their hosts at the window's bounds
    # (cpu_window.py, with the groups of the config process-exporter runs with): a JVM under load waits some.
    waited = observations["service_waited"]
    assert waited is not None and {"app", "db"} <= set(waited) and waited["app"] > 0, (
        waited, observations["unobserved"].get("service_waited"))
    rules = {rule["rule"]: rule for rule in read_json(short_run / "audit.json")["rules"]}
    for name in ("steady_mix", "same_db_work"):
        assert rules[name]["status"] == "VALID", rules[name]
    assert rules["jit_quiet"]["status"] == "NOT_EVALUATED"  # quarkus exports no JIT time: says so
    assert "jvm_compilation_time_ms_total" in rules["jit_quiet"]["evidence"]
    utilization = read_json(short_run / "utilization.json")
    assert {"loadgen", "app", "db"} <= set(utilization["tiers"])
    app = utilization["tiers"]["app"]
    assert app["allotted_cores"] >= 1 and max(v for _, v in app["busy_cores"]) > 0.05


def longest_over(series: dict[str, Any], threshold: float) -> int:
    """The most consecutive scrapes of a tier's utilization.json series at which its busy cores were over THRESHOLD
    of its allotted ones (counted here, not by the attribution under test)."""
    longest = current = 0
    for _, cores in series["busy_cores"]:
        current = current + 1 if cores / series["allotted_cores"] > threshold else 0
        longest = max(longest, current)
    return longest


def test_a_cpu_hog_on_the_db_host_from_a_third_of_the_window_is_named_for_its_stretch_and_not_as_the_db(
        hogged_run: Path) -> None:
    """The DB host named saturated for the stretch the hog ran, from about a third of the window, and the
    hog's CPU never credited to MariaDB. The run's sentence names the DB from the queue in front of it, or
    from its host's CPU for that stretch; or, where no queue formed, "cannot tell" with the DB's busy CPUs
    in the evidence: on this 2-core default the hog's core is also the load generator's, and one CI run
    kept up (wrk2 fell behind, then caught up: 117% of the rate) with no request waiting for a DB
    connection. Never "no tier was saturated"."""
    attribution = read_json(hogged_run / "attribution.json")
    sentence = attributed(attribution["sentence"])
    db = next(t for t in attribution["tiers"] if t["tier"] == "db")
    assert db["saturated"], db  # the DB host's CPU (hog included) or its CPUs
    assert "no tier was saturated" not in sentence, sentence
    # The stretch: its first saturated scrape stands for the scrape interval before it, and the hog
    # started within a second of HOG_FROM_S. Each scrape's busy cores are a rate over three scrapes (15 s,
    # observe.utilization), so a hog shows over the threshold up to that much after it started (a lab run:
    # from 20 s for a hog from 14 s). It lasted to the window's end, well over a fifth of it.
    utilization = read_json(hogged_run / "utilization.json")
    step_s, window_s = utilization["step_s"], utilization["end"] - utilization["start"]
    rate_window_s = max(15.0, 3 * step_s)
    if longest_over(utilization["tiers"]["db"], cpu_limit("db", ATTRIBUTION).value) * step_s < window_s / 5:
        # The hog never filled its host's core for a fifth of the window: the machine's other processes took it.
        # A CI simulation, beside the SSH lab's share: the db container got 0.55 of its core with 16 busy loops in
        # it, its CPUs 100% busy with every process of the machine, and the attribution "not attributed: ... both
        # the app's CPUs (100%) and the DB's (100%) were busy with other processes of the machine". No stretch is
        # there to find: the DB's busy CPUs are named, never MariaDB's own.
        assert "DB's (" in sentence or "db (its CPU" in sentence or "starved by other processes" in sentence, sentence
        assert "MariaDB" not in sentence or "than MariaDB" in sentence, sentence
        assert db["stretch_from_s"] is None, db
        return
    assert db["stretch_from_s"] is not None, db
    assert HOG_FROM_S - step_s - 1 <= db["stretch_from_s"] <= HOG_FROM_S + rate_window_s, db
    assert db["stretch_s"] >= window_s / 5, db
    # The sentence of a fault-free DB host is never said of it (a lab run said, beside the app's waits for a
    # connection, "the DB host's CPU, disk and statement queue were not saturated").
    assert "were not saturated" not in sentence, sentence
    # Over the stretch, MariaDB's own CPU is the smaller part of its host's.
    busy = db["stretch_busy_fraction"] * db["allotted_cores"]
    assert db["stretch_service_cores"] is not None and busy - db["stretch_service_cores"] > db["stretch_service_cores"], db
    if (db["cpu_busy_fraction"] or 0.0) <= cpu_limit("db", ATTRIBUTION).value:
        # Its average under the threshold (the hog ran two thirds of the window): named for the stretch.
        assert any(said.startswith("its CPU over ") and f"from {db['stretch_from_s']:.0f} s" in said
                   for said in db["saturated"]), db["saturated"]
    if attribution["limiting_tier"] is None:
        assert sentence.startswith("not attributed: "), sentence
        # The DB named with its busy CPUs: over the attribution's 90% (16 busy loops on its core read
        # 100% in most CI runs and 99% in one; the figure is a rate over scrapes, not a constant).
        assert "db (its CPU" in sentence or "DB's (" in sentence, sentence
        assert max(db["cpu_busy_fraction"] or 0.0, db["cpus_busy_fraction"] or 0.0) >= 0.9, db
        # The hog's CPU is not MariaDB's (issue 24): its host's CPU is split into MariaDB's own and the
        # rest (here: MariaDB 0.05 of 0.94 busy cores; in a CI run beside the SSH lab, 0.08 of 0.64).
        assert db["service_cores"] is not None and db["other_cores"] > db["service_cores"], db
        # Where the host's own CPU reads over the DB's threshold, the sentence names it starved by the
        # rest. Beside the SSH lab's share, whose unpinned machines take the same core, the db
        # container got 0.64 of it with 16 busy loops: then only its busy CPUs are named, and never
        # credited to MariaDB.
        if (db["cpu_busy_fraction"] or 0.0) > AUDIT_DB_CPU:
            assert "starved by other processes than MariaDB" in sentence or "DB's (" in sentence, sentence
        assert "MariaDB" not in sentence or "than MariaDB" in sentence, sentence
    else:
        # Named from the app's waits for a connection, or from the DB host's own CPU starved by the hog
        # ("limited by the DB host's CPU: its own processes used 0.90 of 1 cores (90%), of which MariaDB
        # used 0.07 and other processes of its host 0.83: starved by other processes than MariaDB").
        assert attribution["limiting_tier"] == "db", sentence
        assert "waiting for a DB connection" in sentence or "starved by other processes than MariaDB" in sentence, sentence
        assert db["service_cores"] is not None and db["other_cores"] > db["service_cores"], db
    # The audit says of the DB host what the attribution says (issue 24): its app_is_bottleneck read "MariaDB ...
    # was not saturated" on the window's average while the attribution named the host for its stretch.
    rule = next(r for r in read_json(hogged_run / "audit.json")["rules"] if r["rule"] == "app_is_bottleneck")
    assert "was not saturated" not in rule["evidence"], rule
    if rule["status"] == "INVALID":  # the app well below its cores over the stretch: the hog, never MariaDB, named
        assert "starved" in rule["evidence"] or (db["cpu_busy_fraction"] or 0.0) > AUDIT_DB_CPU, rule


# Field report 1's constrained app: a quarter of one CPU (PROFILE=app-bound, CPUQuota=25%), driven
# at twice what it answers there (report 1: 189.7 of 500 req/s). No warm-up: its CPU, not its JIT,
# is under test.
PAST_ITS_CPU = ("APP=quarkus", "SCENARIO=zipcodes", "PROFILE=app-bound", "RATE=400", "DURATION=20s", "WARMUP=0s")


@pytest.fixture(scope="module")
def past_its_cpu(lab: str) -> tuple[Path, str]:
    """The run PAST_ITS_CPU with its window profiled (PROFILE_APP=cpu): its directory and make's output. One run for
    the window's test and the profile's (issue 23 asks both of a profiled run and of a run driven past its CPU)."""
    before = run_dirs()
    done = make("bench", *PAST_ITS_CPU, "PROFILE_APP=cpu")
    assert judged(done) and run_dirs() - before, tail(done.stdout, 80)  # VALID, WARN or INVALID: its figures are the test
    return new_run_dir(before), done.stdout


def test_an_app_driven_past_its_cpu_reads_all_of_it_over_exactly_the_window(past_its_cpu: tuple[Path, str]) -> None:
    """The window is the tool's own interval and the CPU is read at its bounds: a saturated app reads
    within 5% of the cores it was given. Before, the window's end was taken after the bench's poll and
    the CPU sampled around the tasks that start and wait for the phase: a saturated app read 14-38%
    less busy than it was (issue 22: 0.43 cores over 70.0 s for 60 s of load). Its window is profiled,
    and the attribution names the app's top layers (issue 23)."""
    run_dir, output = past_its_cpu
    status = read_json(run_dir / "status.json")
    assert status["status"] == "complete", tail(output, 80)
    inputs = read_json(run_dir / "bench-inputs.json")
    scheduled_s = inputs["run"]["phases"]["measure"]["invocation_s"]
    window_s = _unix(status["ended_at"]) - _unix(status["started_at"])
    assert abs(window_s - scheduled_s) <= 1.0, (status["started_at"], status["ended_at"], scheduled_s)
    # The tool started when the window opened, and the samples were read at its bounds.
    started = [float(s) for s in re.findall(r"perflab: started ([0-9.]+)", output)]
    assert started and abs(started[-1] - _unix(status["started_at"])) <= 1.0, (started, status["started_at"])
    assert 0 <= inputs["start_late_ms"] <= 1000, inputs["start_late_ms"]
    # Each tier's samples lie within the window's load (a sampler launched after the tool's start
    # reads at once) and close it: never over the seconds before or after.
    start, end = _unix(status["started_at"]), _unix(status["ended_at"])
    for tier in ("app", "db", "loadgen"):
        first, last = inputs["cpu_start"][tier]["at"], inputs["cpu_end"][tier]["at"]
        assert start - 0.05 <= first < start + window_s / 2 and end - 0.05 <= last <= end + 1.0, (tier, first, last, start, end)
    app = next(t for t in read_json(run_dir / "attribution.json")["tiers"] if t["tier"] == "app")
    assert app["allotted_cores"] == pytest.approx(0.25), app
    assert app["busy_cores"] >= 0.95 * app["allotted_cores"], app
    # The judge's line of the app's cost reads the same seconds.
    over = re.search(r"app cost: .* cores over ([0-9.]+) s", output)
    assert over and abs(float(over.group(1)) - window_s) <= 0.2, tail(output, 40)
    # Its window profiled (PROFILE_APP=cpu), the attribution names where the app's CPU went (issue 23).
    found = read_json(run_dir / "attribution.json")
    assert found["limiting_tier"] == "app", found["sentence"]
    assert re.search(r"; the app's samples \(flamegraph\.html\): \d+% [^,]+(, \d+% [^,]+){0,2}\.$", found["sentence"]), found["sentence"]
    assert found["app_layers"] and found["app_layers"][0]["samples"] >= found["app_layers"][-1]["samples"], found["app_layers"]
    # Quarkus exports no JIT time (the short run's jit_quiet: not evaluated); its CPU profile gives it one.
    jit = {rule["rule"]: rule for rule in read_json(run_dir / "audit.json")["rules"]}["jit_quiet"]
    assert jit["status"] in ("VALID", "WARN") and ", counted by the app's profile, cpu (" in jit["evidence"], jit


PROFILE_FILES = ("flamegraph.html", "profile.collapsed", "profile-window.json", "profile-summary.json")


def test_a_profiled_run_writes_a_flame_graph_chromium_opens_and_layers_that_add_up(
        past_its_cpu: tuple[Path, str], short_run: Path) -> None:
    """The app's profile over the measured window (PROFILE_APP, roles/bench/tasks/profile_start.yml and
    profile_fetch.yml, async-profiler through roles/app/files/perflab_profile.py): the run profiled writes a
    flame graph that opens in Chromium with no console error, the collapsed stacks and their summary by layer,
    adding up to 100%; a run that asks for none (the default, off: the short run) writes none."""
    assert not [name for name in PROFILE_FILES if (short_run / name).exists()], "PROFILE_APP is off by default"
    run, output = past_its_cpu
    assert [name for name in PROFILE_FILES if (run / name).exists()] == list(PROFILE_FILES), sorted(p.name for p in run.iterdir())
    said = " ".join(output.replace("''", "'").split())  # as Ansible folds and quotes collect's output
    assert re.search(r"the app's profile \(\d+ samples, flamegraph\.html\): \d+% ", said), tail(output)

    # Over the measured window: started at its start, stopped at its end. The attach listener is
    # started and the agent loaded before the window, over the JVM's socket: 0.09 s late on an idle
    # lab. jcmd, a JVM of its own to start, made it 3.0 s late in a CI run (a fifth of this window);
    # with the socket but no agent loaded ahead, 1.6 s on a machine running two CI simulations at once.
    # 2 s: the agent's own start (a perf event per JVM thread) on a loaded 2-core machine.
    window, status = read_json(run / "profile-window.json"), read_json(run / "status.json")
    assert window["mode"] == "cpu" and window["engine"] in ("perf_events", "ctimer"), window
    assert 0 <= _unix(window["started_at"]) - _unix(status["started_at"]) < 2, (window, status)
    assert 0 <= _unix(window["stopped_at"]) - _unix(status["ended_at"]) < 5, (window, status)

    summary = read_json(run / "profile-summary.json")
    assert summary["samples"] > 20 and abs(sum(layer["share"] for layer in summary["layers"]) - 1) < 1e-9, summary
    page = visit(run / "flamegraph.html", "document.documentElement.innerHTML.indexOf('quarkus zipcodes cpu') >= 0")
    assert page.errors == [], page.errors
    assert page.evaluated is True, "the flame graph's title names the app, the scenario and the mode"

def _unix(iso: str) -> float:
    return datetime.datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp()
