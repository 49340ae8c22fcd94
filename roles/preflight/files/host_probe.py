"""Reads what preflight checks on a lab host (roles/preflight/tasks/hosts.yml): the memory it offers
and its clock.

    python3 host_probe.py

Prints two lines: the host's memory in MiB, its container's limit where that is lower (the memory
cgroup of this process, v1 or v2), then the host's clock as seconds since the epoch with
nanoseconds, read last so that the controller's readings bracket it. Runs on the lab's hosts under
their python3: standard library only.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable


def limit_file(cgroup: str) -> str | None:
    """The file holding this process' memory limit: cgroup v1's memory controller, else v2's unified group."""
    unified = None
    for line in cgroup.splitlines():
        number, controllers, path = (line.split(":", 2) + ["", ""])[:3]
        if controllers == "memory":
            return f"/sys/fs/cgroup/memory{path}/memory.limit_in_bytes"
        if number == "0" and controllers == "":
            unified = f"/sys/fs/cgroup{path}/memory.max"
    return unified


def memory_mb(meminfo: str, cgroup: str, read: Callable[[str], str | None]) -> int:
    """MemTotal, or the cgroup's limit where it is lower ("max": none), in MiB."""
    total_kb = next(int(line.split()[1]) for line in meminfo.splitlines() if line.startswith("MemTotal:"))
    path = limit_file(cgroup)
    limit = read(path) if path else None
    if limit is not None and limit.strip() not in ("", "max"):
        total_kb = min(total_kb, int(limit) // 1024)
    return total_kb // 1024


def read_text(path: str) -> str | None:
    try:
        with open(path, encoding="ascii") as text:
            return text.read()
    except OSError:
        return None


def main() -> int:
    meminfo, cgroup = read_text("/proc/meminfo"), read_text("/proc/self/cgroup")
    if meminfo is None:
        print("host_probe: /proc/meminfo is not readable", file=sys.stderr)
        return 1
    print(memory_mb(meminfo, cgroup or "", read_text))
    now = time.time_ns()
    print(f"{now // 10**9}.{now % 10**9:09d}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
