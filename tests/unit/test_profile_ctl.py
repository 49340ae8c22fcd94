"""roles/app/files/perflab_profile.py against a real JVM: async-profiler (`make async-profiler`)
loaded over the JVM's attach socket into a busy Java program, a window profiled, its files read as an operator
would read them. One JVM serves every test (a JVM start costs seconds on two shared cores)."""

from __future__ import annotations

import datetime
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from perflab.profile import async_profiler_lib

REPO_ROOT = Path(__file__).resolve().parents[2]
SCRIPT = REPO_ROOT / "roles" / "app" / "files" / "perflab_profile.py"
LIB = async_profiler_lib(REPO_ROOT)
BUSY_JAVA = """
public class Busy {
    static long burnCpu(long n) { long s = 0; for (long i = 0; i < n; i++) { s += Long.toString(i).hashCode(); } return s; }
    public static void main(String[] args) throws Exception {
        long end = System.nanoTime() + 120_000_000_000L;
        long s = 0;
        System.out.println("busy");
        while (System.nanoTime() < end) { s += burnCpu(100_000); }
        System.out.println(s);
    }
}
"""


def newest_java() -> Path:
    """The newest JDK's java under /usr/lib/jvm, else PATH's java."""
    homes = sorted(
        (int(m.group(1)), home)
        for home in Path("/usr/lib/jvm").glob("*")
        if not home.is_symlink() and (home / "bin" / "java").is_file()
        and (m := re.search(r'JAVA_VERSION="(\d+)', (home / "release").read_text() if (home / "release").is_file() else ""))
    )
    return homes[-1][1] / "bin" / "java" if homes else Path("java")


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=120, check=False)


@pytest.fixture(scope="module")
def busy_jvm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    assert LIB.is_file(), f"no {LIB}: run `make async-profiler` first"
    directory = tmp_path_factory.mktemp("busy")
    (directory / "Busy.java").write_text(BUSY_JAVA)
    log = (directory / "busy.log").open("w")
    process = subprocess.Popen([str(newest_java()), "Busy.java"], cwd=directory, stdout=log, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 60
    while "busy" not in (directory / "busy.log").read_text() and time.monotonic() < deadline:
        assert process.poll() is None, (directory / "busy.log").read_text()
        time.sleep(0.2)
    yield process.pid
    process.kill()
    process.wait()
    log.close()


def busy_thread_cpu_s(pid: int) -> float:
    """The CPU time the busy thread used so far: of the JVM's threads (/proc/PID/task/*/stat, utime and stime),
    the one that used the most, which is the one running burnCpu since the JVM started."""
    used = []
    for stat in Path(f"/proc/{pid}/task").glob("*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except FileNotFoundError:  # a thread that ended between the listing and the read
            continue
        used.append((int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK"))
    return max(used)


def while_it_burns(pid: int, cpu_s: float, timeout_s: float = 90) -> None:
    """Waits until the busy thread has used cpu_s more seconds of CPU, and 2 s at least. A
    profile's samples follow the CPU the thread got, not the time on the clock, nor the JVM's whole CPU: on CI's
    machine, busy with the labs and the other checks, 2 s of waiting gave the busy JVM 0.17 s of CPU (17 samples
    of burnCpu where 20 were asked), and a wait for 1 s of the JVM's CPU still gave 19."""
    begun, used = time.monotonic(), busy_thread_cpu_s(pid)
    while busy_thread_cpu_s(pid) - used < cpu_s or time.monotonic() - begun < 2:
        assert time.monotonic() - begun < timeout_s, \
            f"the busy thread used {busy_thread_cpu_s(pid) - used:.2f} s of CPU in {timeout_s} s"
        time.sleep(0.1)


def load_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("perflab_profile", SCRIPT)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def stack_counts(collapsed: Path) -> dict[str, int]:
    counts = {}
    for line in collapsed.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        counts[stack] = int(count)
    return counts


def test_a_cpu_window_writes_collapsed_stacks_and_an_offline_flame_graph(busy_jvm: int, tmp_path: Path) -> None:
    started = run("start", "--pid", str(busy_jvm), "--lib", str(LIB), "--mode", "cpu", "--interval", "5ms")
    assert started.returncode == 0, started.stderr
    assert json.loads(started.stdout)["engine"] in ("perf_events", "ctimer")
    while_it_burns(busy_jvm, 1.0)
    stopped = run("stop", "--pid", str(busy_jvm), "--lib", str(LIB), "--out", str(tmp_path), "--title", 'busy, "cpu"')
    assert stopped.returncode == 0, stopped.stderr

    counts = stack_counts(tmp_path / "profile.collapsed")
    in_busy = sum(n for stack, n in counts.items() if "Busy.burnCpu" in stack)
    # 1 s of CPU or more, most of it the busy thread's, at 5 ms: ~200 samples; never a handful.
    assert in_busy >= 50, counts
    assert in_busy / sum(counts.values()) > 0.5
    page = (tmp_path / "flamegraph.html").read_text()
    assert page.lstrip().lower().startswith("<!doctype html>")
    assert "burnCpu" in page and "busy  'cpu'" in page  # the title: its comma a space, its quotes single
    assert not re.search(r"""(src|href)\s*=\s*['"]?(https?:)?//""", page.replace("href='https://github.com/async-profiler", ""))
    window = json.loads((tmp_path / "profile-window.json").read_text())
    assert window["mode"] == "cpu" and window["interval"] == "5ms"
    assert window["started_at"] < window["stopped_at"]
    # The JVM's directory is gone: a second stop has nothing to stop.
    again = run("stop", "--pid", str(busy_jvm), "--lib", str(LIB), "--out", str(tmp_path))
    assert again.returncode == 1
    assert again.stderr.strip() == f"perflab_profile: process {busy_jvm} has no profile started by this program: run `start` first"


def test_where_perf_events_are_refused_cpu_falls_back_to_ctimer(
    busy_jvm: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    script = load_script()
    real_agent = script.agent

    def no_perf_events(pid: int, lib: Path, options: str) -> str:
        # What a container's seccomp profile does to perf_event_open: the agent refuses to start.
        if "event=cpu-clock" in options:
            raise script.AgentError("start", "return code: 200", 200)
        return str(real_agent(pid, lib, options))

    monkeypatch.setattr(script, "agent", no_perf_events)
    window = script.start(busy_jvm, LIB, "cpu", None)
    assert (window["event"], window["engine"]) == ("ctimer", "ctimer")
    assert window["not_used"] and window["not_used"][0].startswith("cpu-clock: ")
    while_it_burns(busy_jvm, 1.0)
    script.stop(busy_jvm, LIB, tmp_path, None)
    counts = stack_counts(tmp_path / "profile.collapsed")
    assert sum(n for stack, n in counts.items() if "Busy.burnCpu" in stack) >= 20, counts


def test_alloc_mode_samples_allocations(busy_jvm: int, tmp_path: Path) -> None:
    assert run("start", "--pid", str(busy_jvm), "--lib", str(LIB), "--mode", "alloc").returncode == 0
    while_it_burns(busy_jvm, 1.0)
    assert run("stop", "--pid", str(busy_jvm), "--lib", str(LIB), "--out", str(tmp_path)).returncode == 0
    counts = stack_counts(tmp_path / "profile.collapsed")
    # Long.toString allocates the String and its bytes; alloc stacks end in the allocated class.
    assert any("Busy.burnCpu" in stack and stack.endswith(("java.lang.String_[i]", "byte[]_[i]", "java.lang.String_[k]",
                                                           "byte[]_[k]")) for stack in counts), list(counts)[:5]


def wait_for_file(directory: Path, *names: str, timeout_s: float = 60) -> Path:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for name in names:
            if (directory / name).exists():
                return directory / name
        time.sleep(0.2)
    raise AssertionError(f"none of {names} in {directory} after {timeout_s} s")


def test_a_window_returns_at_once_and_profiles_from_its_start_to_its_end(busy_jvm: int, tmp_path: Path) -> None:
    """The bench's way (run_phase.yml): asked before the window, the profile covers the window."""
    out = tmp_path / "profile"
    # Asked 4 s ahead, as the bench asks before its window: `window` returns before it opens (its own start,
    # the JVM's attach listener and the agent's preload take a fraction of that on a loaded machine).
    start_at = time.time() + 4
    done = run("window", "--pid", str(busy_jvm), "--lib", str(LIB), "--mode", "cpu", "--interval", "5ms",
               "--start-at", str(start_at), "--end-at", str(start_at + 2), "--out", str(out))
    assert done.returncode == 0, done.stderr
    assert time.time() < start_at and json.loads(done.stdout)["pid"] == busy_jvm
    assert Path(f"/tmp/.java_pid{busy_jvm}").is_socket()
    # The busy thread's CPU over the window, read at its bounds: its samples follow it (a CI simulation's
    # busy machine gave it about 0.2 s of the window's 2, and 42 samples of burnCpu where 50 were asked).
    time.sleep(max(0.0, start_at - time.time()))
    cpu_before = busy_thread_cpu_s(busy_jvm)
    time.sleep(max(0.0, start_at + 2 - time.time()))
    cpu_in_window = busy_thread_cpu_s(busy_jvm) - cpu_before
    assert wait_for_file(out, "profile-window.json", "profile-error.json").name == "profile-window.json"
    window = json.loads((out / "profile-window.json").read_text())
    started = datetime.datetime.fromisoformat(window["started_at"]).timestamp()
    stopped = datetime.datetime.fromisoformat(window["stopped_at"]).timestamp()
    # The attach listener was started before the window (its socket is there once `window` returned),
    # so the agent starts within a moment of the window's start (jcmd, a JVM of its own, took 3 s on
    # a loaded machine).
    assert start_at <= started < start_at + 1 and stopped >= start_at + 2, window
    counts = stack_counts(out / "profile.collapsed")
    # At 5 ms, 2 s of a whole core give ~400 samples: half of what the thread's CPU there gives, 50 at most asked.
    asked = max(1, min(50, int(cpu_in_window / 0.005 / 2)))
    in_busy = sum(n for stack, n in counts.items() if "Busy.burnCpu" in stack)
    assert in_busy >= asked, (window, cpu_in_window, in_busy, sum(counts.values()), list(counts)[:3])
    assert (out / "flamegraph.html").is_file()


def test_a_window_that_fails_after_returning_says_why_in_its_directory(busy_jvm: int, tmp_path: Path) -> None:
    out = tmp_path / "profile"
    not_an_agent = tmp_path / "libnot-an-agent.so"  # a file, so the check passes; the JVM cannot load it
    not_an_agent.write_bytes(b"not an ELF library")
    done = run("window", "--pid", str(busy_jvm), "--lib", str(not_an_agent), "--mode", "cpu",
               "--start-at", str(time.time()), "--end-at", str(time.time() + 1), "--out", str(out))
    assert done.returncode == 0, done.stderr
    error = json.loads(wait_for_file(out, "profile-error.json").read_text())["error"]
    assert error.startswith(f"async-profiler could not start in process {busy_jvm}: "), error
    assert not (out / "profile-window.json").exists()


def test_a_window_refuses_what_it_can_check_at_once(tmp_path: Path) -> None:
    no_unit = run("window", "--unit", "perflab-no-such-unit", "--lib", str(LIB), "--mode", "cpu", "--start-at", "1",
                  "--end-at", "2", "--out", str(tmp_path / "p"))
    assert no_unit.returncode == 1 and no_unit.stderr.startswith("perflab_profile: "), no_unit.stderr
    backwards = run("window", "--pid", str(os.getpid()), "--lib", str(LIB), "--mode", "cpu", "--start-at", "2",
                    "--end-at", "1", "--out", str(tmp_path / "p"))
    assert backwards.returncode == 1 and "the window ends (1.0) before it starts (2.0)" in backwards.stderr


def test_bad_input_is_refused_in_one_line(busy_jvm: int, tmp_path: Path) -> None:
    not_a_jvm = run("start", "--pid", str(os.getpid()), "--lib", str(LIB), "--mode", "cpu")
    assert not_a_jvm.returncode == 1
    assert "not a JVM: it cannot be profiled with async-profiler" in not_a_jvm.stderr
    assert len(not_a_jvm.stderr.strip().splitlines()) == 1
    no_lib = run("start", "--pid", str(busy_jvm), "--lib", str(tmp_path / "missing.so"), "--mode", "cpu")
    assert no_lib.returncode == 1 and "run `make async-profiler`" in no_lib.stderr
    bad_interval = run("start", "--pid", str(busy_jvm), "--lib", str(LIB), "--mode", "cpu", "--interval", "ten")
    assert bad_interval.returncode == 2 and "give a number with an optional unit" in bad_interval.stderr
    bad_mode = run("start", "--pid", str(busy_jvm), "--lib", str(LIB), "--mode", "heap")
    assert bad_mode.returncode == 2 and "invalid choice: 'heap'" in bad_mode.stderr


@pytest.mark.skipif(os.geteuid() != 0, reason="a private /tmp (a mount namespace) needs root, as on the lab's hosts")
def test_a_jvm_with_a_private_tmp_is_profiled_through_proc_root(tmp_path: Path) -> None:
    """The lab's unit has PrivateTmp=yes: the JVM's /tmp (its attach socket, the agent's files) is
    not this process's /tmp. unshare gives the JVM its own, as systemd does. The library handed over
    lies in this process's /tmp, which the JVM does not see (as a checkout under /tmp would): the
    JVM loads a copy in its own agent directory."""
    (tmp_path / "Busy.java").write_text(BUSY_JAVA)
    hidden_dir = tempfile.TemporaryDirectory(dir="/tmp", prefix="perflab-hidden-lib-")
    hidden = Path(hidden_dir.name) / LIB.name
    shutil.copyfile(LIB, hidden)
    command = f"mount -t tmpfs tmpfs /tmp && exec {newest_java()} Busy.java"
    process = subprocess.Popen(["unshare", "-m", "--propagation", "private", "sh", "-c", command], cwd=tmp_path,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        assert process.stdout is not None and process.stdout.readline().strip() == "busy"
        assert not Path(f"/tmp/perflab-profile-{process.pid}").exists()
        started = run("start", "--pid", str(process.pid), "--lib", str(hidden), "--mode", "cpu")
        assert started.returncode == 0, started.stderr
        assert Path(f"/proc/{process.pid}/root/tmp/perflab-profile-{process.pid}").is_dir()
        assert not Path(f"/tmp/perflab-profile-{process.pid}").exists()
        assert f"/tmp/perflab-profile-{process.pid}/{LIB.name}" in Path(f"/proc/{process.pid}/maps").read_text()
        time.sleep(1)
        stopped = run("stop", "--pid", str(process.pid), "--lib", str(hidden), "--out", str(tmp_path / "out"))
        assert stopped.returncode == 0, stopped.stderr
        assert any("Busy.burnCpu" in stack for stack in stack_counts(tmp_path / "out" / "profile.collapsed"))
    finally:
        process.kill()
        process.wait()
        hidden_dir.cleanup()


def test_a_window_loads_the_agent_before_it_opens(tmp_path: Path) -> None:
    """`window` returns with the agent already in the JVM (an idle `status`, then one start and stop), so that
    the window's start is not the agent's first: a fresh JVM, never profiled, has the library mapped at once."""
    (tmp_path / "Busy.java").write_text(BUSY_JAVA)
    process = subprocess.Popen([str(newest_java()), "Busy.java"], cwd=tmp_path, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True)
    try:
        assert process.stdout is not None and process.stdout.readline().strip() == "busy"
        assert "libasyncProfiler.so" not in Path(f"/proc/{process.pid}/maps").read_text()
        done = run("window", "--pid", str(process.pid), "--lib", str(LIB), "--mode", "cpu",
                   "--start-at", str(time.time() + 60), "--end-at", str(time.time() + 61), "--out", str(tmp_path / "p"))
        assert done.returncode == 0, done.stderr
        assert "libasyncProfiler.so" in Path(f"/proc/{process.pid}/maps").read_text()
        assert not (tmp_path / "p" / "profile-window.json").exists()  # loaded, not yet profiling
        # Its first start and stop are behind it too: they stalled a large app, and must not fall in the window.
        assert Path(f"/tmp/perflab-profile-{process.pid}/first-start.collapsed").is_file()
    finally:
        process.kill()
        process.wait()
