"""What preflight reads on a lab host (roles/preflight/files/host_probe.py): its memory, its container's
limit where lower, from cgroup v1 or v2, and its clock; once on this machine as the role runs it."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from .helpers import host_program, run_host_program

PROGRAM = Path(__file__).resolve().parents[2] / "roles" / "preflight" / "files" / "host_probe.py"
host_probe = host_program(PROGRAM)

MEMINFO = "MemTotal:       24576000 kB\nMemFree:        20000000 kB\n"
V2 = "0::/system.slice/docker-abc.scope\n"
V1 = "12:pids:/docker/abc\n11:memory:/docker/abc\n1:name=systemd:/docker/abc\n"


@pytest.mark.parametrize(("cgroup", "limits", "mb"), [
    (V2, {"/sys/fs/cgroup/system.slice/docker-abc.scope/memory.max": "4294967296\n"}, 4096),
    (V2, {"/sys/fs/cgroup/system.slice/docker-abc.scope/memory.max": "max\n"}, 24000),
    (V1, {"/sys/fs/cgroup/memory/docker/abc/memory.limit_in_bytes": "2147483648\n"}, 2048),
    # A limit above the machine's memory (v1's "no limit" is a huge number) leaves the machine's.
    (V1, {"/sys/fs/cgroup/memory/docker/abc/memory.limit_in_bytes": "9223372036854771712\n"}, 24000),
    (V2, {}, 24000),  # the limit file not readable: the machine's memory
])
def test_the_memory_offered_is_the_lower_of_the_machines_and_its_containers_limit(
        cgroup: str, limits: dict[str, str], mb: int) -> None:
    assert host_probe.memory_mb(MEMINFO, cgroup, limits.get) == mb


def test_the_probe_prints_this_machines_memory_then_its_clock_as_the_role_runs_it() -> None:
    before = time.time()
    done = run_host_program(PROGRAM)
    assert done.returncode == 0, done.stderr
    after = time.time()
    memory, clock = done.stdout.splitlines()
    total_mb = int(Path("/proc/meminfo").read_text().split()[1]) // 1024
    assert 0 < int(memory) <= total_mb
    assert before <= float(clock) <= after
