"""The programs the bench runs on the lab's hosts (roles/bench/files/): the CPU sampler at the
measured window's bounds and the wrapper that starts a phase at the agreed instant."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from types import ModuleType

import pytest
import yaml  # type: ignore[import-untyped]

FILES = Path(__file__).resolve().parents[2] / "roles" / "bench" / "files"


def load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, FILES / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


cpu_window = load("cpu_window")


class Clock:
    """Time that moves only when the sampler sleeps, or when a test says it moved."""

    def __init__(self, now: float) -> None:
        self.now = now
        self.slept: list[float] = []

    def time(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


def test_the_samples_are_read_at_the_window_bounds_not_when_the_sampler_was_started() -> None:
    clock = Clock(1000.0)
    usage = iter([5_000_000, 45_000_000])
    samples = cpu_window.at_bounds("perflab-app", 1003.5, 1043.5, lambda: next(usage), clock.time, clock.sleep)
    assert [samples["start"]["at"], samples["end"]["at"]] == [1003.5, 1043.5]
    assert clock.slept == [3.5, 40.0]
    assert (samples["end"]["usage_usec"] - samples["start"]["usage_usec"]) / 1e6 / 40.0 == 1.0  # one busy core
    assert samples["start"]["host"] == "perflab-app" and samples["start"]["cpus"] == sorted(os.sched_getaffinity(0))


def test_a_sampler_started_after_the_window_opened_reads_at_once_and_says_when() -> None:
    clock = Clock(1005.0)
    samples = cpu_window.at_bounds("perflab-db", 1003.5, 1043.5, lambda: 1, clock.time, clock.sleep)
    assert clock.slept == [0.0, 38.5]
    assert samples["start"]["at"] == 1005.0  # perflab collect divides by the 38.5 s it covered


def test_a_window_that_ends_before_it_starts_is_refused() -> None:
    with pytest.raises(SystemExit, match="ends"):
        cpu_window.at_bounds("h", 10.0, 10.0, lambda: 1)


def cgroup(tmp_path: Path, proc_line: str, files: dict[str, str]) -> tuple[str, str]:
    proc = tmp_path / "proc-1-cgroup"
    proc.write_text(proc_line + "\n")
    for relative, text in files.items():
        path = tmp_path / relative.lstrip("/")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return str(proc), str(tmp_path)


def test_a_container_reads_its_own_cgroup_v2_without_systemds_init_scope(tmp_path: Path) -> None:
    proc, root = cgroup(tmp_path, "0::/system.slice/docker-abc.scope/init.scope",
                        {"/sys/fs/cgroup/system.slice/docker-abc.scope/cpu.stat": "usage_usec 123456\nuser_usec 1\n"})
    assert cpu_window.container_usage_usec(proc, root) == 123456


def test_a_container_reads_its_cgroup_v1_cpuacct_in_microseconds(tmp_path: Path) -> None:
    proc, root = cgroup(tmp_path, "4:cpu,cpuacct:/docker/abc",
                        {"/sys/fs/cgroup/cpu,cpuacct/docker/abc/cpuacct.usage": "7000123456\n"})
    assert cpu_window.container_usage_usec(proc, root) == 7000123


def test_a_container_without_cpu_accounting_says_so(tmp_path: Path) -> None:
    proc, root = cgroup(tmp_path, "0::/nowhere", {})
    with pytest.raises(SystemExit, match="no cgroup CPU accounting"):
        cpu_window.container_usage_usec(proc, root)


def test_a_machine_counts_everything_but_idle_and_iowait(tmp_path: Path) -> None:
    stat = tmp_path / "stat"
    ticks = os.sysconf("SC_CLK_TCK")
    # user nice system idle iowait irq softirq steal
    stat.write_text(f"cpu  {ticks} 0 {ticks} {50 * ticks} {9 * ticks} 0 0 0 0 0\ncpu0 1 2 3\n")
    assert cpu_window.machine_usage_usec(str(stat)) == 2_000_000


def test_the_sampler_prints_both_bounds_as_perflab_reads_them() -> None:
    now = time.time()
    done = subprocess.run([sys.executable, str(FILES / "cpu_window.py"), "me", str(now - 1), str(now + 0.2)],
                          capture_output=True, text=True, check=True)
    samples = json.loads(done.stdout)
    assert set(samples) == {"start", "end"}
    assert set(samples["start"]) == {"host", "machine", "cpus", "usage_usec", "at", "used_usec", "waited_usec"}
    assert samples["end"]["at"] >= now + 0.2 and samples["end"]["usage_usec"] >= samples["start"]["usage_usec"]


# roles/process_exporter's groups, as its config.yml.j2 writes them for process-exporter (and the sampler).
GROUPS = yaml.safe_load((FILES.parents[2] / "roles/process_exporter/defaults/main.yml").read_text())["process_exporter_groups"]


def test_a_process_is_in_the_first_group_whose_every_matcher_matches_as_process_exporter_reads_them() -> None:
    group = cpu_window.group_of
    assert group("java", ["/usr/lib/jvm/temurin-25/bin/java", "-jar", "/opt/perflab/app.jar"], GROUPS) == "app-java"
    assert group("java", ["java", "-jar", "/opt/other/tool.jar"], GROUPS) == "other"  # comm alone is not enough
    assert group("mariadbd", ["/usr/sbin/mariadbd"], GROUPS) == "mysqld"
    assert group("prometheus-proc", ["/usr/bin/prometheus-process-exporter", "-config.path=x"], GROUPS) == "exporters"
    assert group("python3", ["python3", "-c", "while True: pass"], GROUPS) == "other"  # a hog
    assert group("(java)", ["(java)"], GROUPS) is None  # forked by systemd, not yet exec'd
    # exe with a '/' is argv[0] whole; without one, its basename.
    assert group("x", ["/opt/bin/tool"], [{"name": "a", "exe": ["/usr/bin/tool"]}, {"name": "b", "exe": ["tool"]}]) == "b"
    assert group("x", ["/usr/bin/tool"], [{"name": "a", "exe": ["/usr/bin/tool"]}, {"name": "b", "exe": ["tool"]}]) == "a"


def test_the_groups_are_process_exporters_own_config_found_from_its_running_command_line(tmp_path: Path) -> None:
    config = tmp_path / "config.yml"
    config.write_text("# Ansible managed\n# a comment\n" + json.dumps({"process_names": GROUPS}, indent=2) + "\n")
    procfs = tmp_path / "proc"
    for pid, argv in ((1, ["/sbin/init"]), (77, ["/usr/bin/prometheus-process-exporter", f"-config.path={config}",
                                                  "-threads=true"])):
        (procfs / str(pid)).mkdir(parents=True)
        (procfs / str(pid) / "cmdline").write_bytes(b"\0".join(a.encode() for a in argv) + b"\0")
    (procfs / "self").mkdir()
    assert cpu_window.process_groups(str(procfs)) == GROUPS
    assert yaml.safe_load(config.read_text()) == {"process_names": GROUPS}  # what process-exporter reads of it
    (procfs / "77" / "cmdline").write_bytes(b"/usr/sbin/mariadbd\0")
    assert cpu_window.process_groups(str(procfs)) == []


def test_a_groups_run_time_and_waits_are_its_threads_schedstat_on_the_real_kernel() -> None:
    """Two busy processes pinned to one CPU: each waits for it at least while the other runs, and each is always
    either on it or waiting for it. Their group's waits grow by about the seconds they shared it or more (other
    tasks on that CPU), its run time and waits together by twice those seconds, its run time by at most those
    seconds (one CPU); every other process is in the second group, apart."""
    marker = f"perflab-waits-{os.getpid()}"
    groups = [{"name": "busy", "cmdline": [marker]}, {"name": "rest", "cmdline": ["."]}]
    cpu = sorted(os.sched_getaffinity(0))[-1]
    loop = f"import sys, time\nend = time.monotonic() + 30\nwhile time.monotonic() < end: pass  # {marker}"
    busy = [subprocess.Popen(["taskset", "-c", str(cpu), sys.executable, "-c", loop]) for _ in range(2)]
    try:
        # Both in the group before the first read: one still forked and not yet exec'd would bring in the waits of
        # its whole life at the second (twice SECONDS and more, once, beside a CI simulation).
        deadline = time.monotonic() + 30
        while not all(marker.encode() in Path(f"/proc/{p.pid}/cmdline").read_bytes() for p in busy):
            assert time.monotonic() < deadline, "the busy loops did not start within 30 s"
            time.sleep(0.05)
        time.sleep(0.2)
        # Each task is read somewhere in each scan: its seconds between the two reads lie between the end of the
        # first scan and the start of the second (shortest), and the start of the first and the end of the second.
        t0 = time.monotonic()
        before = cpu_window.group_usec(groups)
        t1 = time.monotonic()
        time.sleep(2.0)
        t2 = time.monotonic()
        after = cpu_window.group_usec(groups)
        t3 = time.monotonic()
    finally:
        for process in busy:
            process.kill()
            process.wait(timeout=10)
    shortest, longest = t2 - t1, t3 - t0
    waited_s = (after["waited_usec"]["busy"] - before["waited_usec"]["busy"]) / 1e6
    ran_s = (after["used_usec"]["busy"] - before["used_usec"]["busy"]) / 1e6
    # The kernel adds a wait to a task's run delay when the wait ends, and its run time at a tick or a switch: a
    # read can miss the current one of each. 0.5 s over 4 task-seconds allows for that on a loaded machine, where
    # (beside a CI simulation's labs) the two loops got 0.26 s of their CPU in 1.19 s: run time has no floor there.
    assert shortest / 3 < waited_s < 2 * longest + 0.5, (waited_s, shortest, longest)
    assert 0 < ran_s < longest + 0.25, (ran_s, longest)
    assert 2 * shortest - 0.5 < ran_s + waited_s < 2 * longest + 0.5, (ran_s, waited_s, shortest, longest)
    assert {"busy", "rest"} <= set(after["waited_usec"]) and {"busy", "rest"} <= set(after["used_usec"])


# Seconds from a host program's launch to the instant it is given: longer than a Python start on a loaded machine.
LEAD_S = 3.0


def test_with_out_the_sampler_returns_at_once_and_writes_its_file_whole_when_the_window_ends(tmp_path: Path) -> None:
    out = tmp_path / "cpu-window.json"
    out.write_text('{"start": "an earlier window"}')
    # "At once" is before its window opens: the sampler does not wait for it. The window opens LEAD_S after the
    # launch, which a Python start takes a fraction of even on a loaded machine (0.36 s in a CI simulation, the
    # unit tests beside lint and a lab-up: an earlier 0.3 s bound failed there).
    now = time.time()
    start, end = now + LEAD_S, now + LEAD_S + 0.5
    launched = subprocess.run([sys.executable, str(FILES / "cpu_window.py"), "--out", str(out), "me", str(start),
                               str(end)], capture_output=True, text=True, check=True, timeout=LEAD_S)
    assert time.time() < start and launched.stdout == ""
    assert not out.exists()  # the earlier window's samples are gone before the sampler returns
    deadline = end + 10
    while not out.exists() and time.time() < deadline:
        time.sleep(0.05)
    samples = json.loads(out.read_text())
    assert samples["start"]["at"] >= start and samples["end"]["at"] >= end
    assert not list(tmp_path.glob("*.partial"))


def test_a_backwards_window_is_refused_before_the_sampler_detaches(tmp_path: Path) -> None:
    refused = subprocess.run([sys.executable, str(FILES / "cpu_window.py"), "--out", str(tmp_path / "o.json"), "me",
                              "10", "5"], capture_output=True, text=True)
    assert refused.returncode == 2 and "ends (5.0) after it starts (10.0)" in refused.stderr


def test_a_phase_starts_at_the_agreed_instant_and_says_when(tmp_path: Path) -> None:
    start_at = time.time() + LEAD_S  # the program is waiting for it, however long its own start took
    done = subprocess.run([sys.executable, str(FILES / "start_at.py"), str(tmp_path / "lock"), "run-1", "measure",
                           str(start_at), "sh", "-c", "echo tool ran"], capture_output=True, text=True, check=True)
    started = float(done.stderr.split("perflab: started ")[1])
    assert start_at <= started < start_at + 0.5  # its own sleep's wake-up, late by a scheduler's tick at most
    assert done.stdout == "tool ran\n"
    assert json.loads((tmp_path / "lock").read_text())["run"] == "run-1"


def test_a_phase_publishes_the_run_window_once_it_holds_the_generator_lock(tmp_path: Path) -> None:
    """The dashboards' and make watch's perflab_run_info, and the scenario's request types for the app dashboard's
    panels by request type, written by the phase's start program (no task of its own)."""
    labels = {"run_id": "20261203T140000Z-quarkus-zipcodes", "app": "quarkus", "scenario": 'odd "name"', "tool": "vegeta",
              "target_rate": 200, "phase": "measure"}
    types = [{"method": "POST", "route": "/zipcodes", "type": "write"},
             {"method": "GET", "route": "/zipcodes/{}", "type": "read+read_again"}]
    published = tmp_path / "perflab_run.prom"
    done = subprocess.run([sys.executable, str(FILES / "start_at.py"), "--run-info", str(published), json.dumps(labels),
                           json.dumps(types), str(tmp_path / "lock"), "run-1", "measure", "0", "cat", str(published)],
                          capture_output=True, text=True, check=True)
    assert done.stdout == published.read_text() == (
        "# HELP perflab_run_info A perflab benchmark run is in this phase on this load generator (1 while it lasts).\n"
        "# TYPE perflab_run_info gauge\n"
        'perflab_run_info{run_id="20261203T140000Z-quarkus-zipcodes",app="quarkus",scenario="odd \\"name\\"",'
        'tool="vegeta",target_rate="200",phase="measure"} 1\n'
        "# HELP perflab_request_type A request type of the running scenario and the app's route it is sent to.\n"
        "# TYPE perflab_request_type gauge\n"
        'perflab_request_type{run_id="20261203T140000Z-quarkus-zipcodes",app="quarkus",method="POST",route="/zipcodes",'
        'type="write"} 1\n'
        'perflab_request_type{run_id="20261203T140000Z-quarkus-zipcodes",app="quarkus",method="GET",route="/zipcodes/{}",'
        'type="read+read_again"} 1\n'), "written before the tool starts"
    assert oct(published.stat().st_mode & 0o777) == "0o644"
    assert {path.name for path in tmp_path.iterdir()} == {"lock", "perflab_run.prom"}, "no partial file left"


def test_a_phase_does_not_start_beside_another_runs_generator(tmp_path: Path) -> None:
    lock = tmp_path / "lock"
    holder = subprocess.Popen([sys.executable, str(FILES / "start_at.py"), str(lock), "run-1", "measure", "0",
                               "sleep", "5"], stderr=subprocess.PIPE, text=True)
    try:
        assert holder.stderr is not None and holder.stderr.readline().startswith("perflab: started")
        refused = subprocess.run([sys.executable, str(FILES / "start_at.py"), "--run-info", str(tmp_path / "run.prom"),
                                  '{"run_id": "run-2"}', "[]", str(lock), "run-2", "warmup", "0", "true"],
                                 capture_output=True, text=True)
        assert refused.returncode == 1
        assert "another load generator still runs on this host" in refused.stderr and '"run-1"' in refused.stderr
        assert not (tmp_path / "run.prom").exists(), "the refused phase published no window"
    finally:
        holder.kill()
        holder.wait()


def test_stopping_without_a_generator_changes_nothing_and_says_so(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, str(FILES / "stop_loadgen.py"), str(tmp_path / "lock")],
                          capture_output=True, text=True, check=True)
    assert json.loads(done.stdout) == {}


def test_an_earlier_runs_generator_is_stopped_and_named(tmp_path: Path) -> None:
    lock = tmp_path / "lock"
    generator = subprocess.Popen([sys.executable, str(FILES / "start_at.py"), str(lock), "run-1", "measure", "0",
                                  "sleep", "60"], stderr=subprocess.PIPE, text=True)
    try:
        assert generator.stderr is not None and generator.stderr.readline().startswith("perflab: started")
        done = subprocess.run([sys.executable, str(FILES / "stop_loadgen.py"), str(lock)],
                              capture_output=True, text=True, check=True, timeout=30)
        stopped = json.loads(done.stdout)
        assert (stopped["run"], stopped["phase"], stopped["pid"]) == ("run-1", "measure", generator.pid)
        assert generator.wait(timeout=5) == -15  # SIGTERM was enough
    finally:
        generator.kill()
        generator.wait()
