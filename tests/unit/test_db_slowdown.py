"""The program that slows a db host for a run and undoes it (roles/bench/files/db_slowdown.py), run as the
tasks run it: `python3 -c <its source> ARGS`. The busy loops are real processes; netem's delay needs a
kernel with sch_netem and root, which the lab's tests reach (this kernel has none: the bench refuses
DB_DELAY_MS there, tests/bench_runs)."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest

from .helpers import host_program, run_host_program

PROGRAM = Path(__file__).resolve().parents[2] / "roles" / "bench" / "files" / "db_slowdown.py"
db_slowdown = host_program(PROGRAM)


def slowdown(*args: str) -> subprocess.CompletedProcess[str]:
    return run_host_program(PROGRAM, *args)


def state(pid: int) -> str | None:
    """The process' state letter (R running, S sleeping, Z exited and not yet reaped), None when it is gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return None


def alive(pid: int) -> bool:
    return state(pid) not in (None, "Z")


def spinning_child(pid: int) -> int:
    """The busy loop `timeout` PID runs (it forks it just after its own start)."""
    deadline = time.monotonic() + 5
    while not (children := Path(f"/proc/{pid}/task/{pid}/children").read_text().split()):
        assert time.monotonic() < deadline, f"timeout {pid} started no busy loop"
        time.sleep(0.02)
    return int(children[0])


def loops(pids: Path) -> list[int]:
    return [int(line) for line in pids.read_text().split()]


def test_busy_loops_outlive_their_start_and_stop_when_told(tmp_path: Path) -> None:
    pids = tmp_path / "hog.pids"
    started = slowdown("hog-on", "--count", "2", "--max-s", "60", "--pids", str(pids))
    assert started.returncode == 0 and started.stdout == "2\n", started
    running = loops(pids)
    try:
        assert len(running) == 2 and all(alive(pid) for pid in running), running
        # Each one's child spins: its CPU time grows while the program that started it is long gone.
        child = spinning_child(running[0])
        before = int(Path(f"/proc/{child}/stat").read_text().rsplit(")", 1)[1].split()[11])
        time.sleep(0.5)
        assert int(Path(f"/proc/{child}/stat").read_text().rsplit(")", 1)[1].split()[11]) > before

        stopped = slowdown("hog-off", "--pids", str(pids))
        assert stopped.returncode == 0 and stopped.stdout == "stopped\n", stopped
        deadline = time.monotonic() + 5
        while any(alive(pid) for pid in [*running, child]) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not any(alive(pid) for pid in [*running, child])
        assert not pids.exists()
    finally:
        subprocess.run(["kill", *map(str, running)], capture_output=True, check=False)
    # Nothing left to stop: says nothing, changes nothing (the task reads "stopped" as changed).
    again = slowdown("hog-off", "--pids", str(pids))
    assert again.returncode == 0 and again.stdout == "", again


def test_a_busy_loop_ends_by_itself_after_its_longest_life(tmp_path: Path) -> None:
    pids = tmp_path / "hog.pids"
    assert slowdown("hog-on", "--count", "1", "--max-s", "1", "--pids", str(pids)).returncode == 0
    running = loops(pids)
    deadline = time.monotonic() + 10
    while alive(running[0]) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not alive(running[0]), "a busy loop outlived its --max-s"


@pytest.mark.parametrize(("routes", "device"), [
    ("default via 172.18.0.1 dev eth0 proto static \n", "eth0"),
    ("default via 10.0.0.1 dev ens5 proto dhcp src 10.0.0.7 metric 100 \ndefault via 10.1.0.1 dev ens6 \n", "ens5"),
])
def test_the_delay_goes_on_the_default_routes_interface(routes: str, device: str) -> None:
    assert db_slowdown.default_device(routes) == device


def test_no_default_route_names_the_variable_to_set() -> None:
    with pytest.raises(SystemExit, match="no default route to put the delay on .* set bench_db_delay_interface"):
        db_slowdown.default_device("")


def test_a_delay_without_its_milliseconds_is_refused_before_anything_changes() -> None:
    refused = slowdown("delay-on", "--dev", "lo")
    assert refused.returncode == 2 and "the following arguments are required: --ms" in refused.stderr
