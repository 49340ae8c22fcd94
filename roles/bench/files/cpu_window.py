"""A host's CPU time at the two bounds of the measured window (roles/bench/tasks/window.yml).

    python3 cpu_window.py [--out FILE] HOST START_AT END_AT

Sleeps until START_AT (unix seconds, the instant every loadgen host starts the measured phase),
reads the CPU time the host has used so far, sleeps until END_AT (the start plus the phase's
duration) and reads it again, then prints both as JSON: {"start": sample, "end": sample}, each
sample {"host", "machine", "cpus", "usage_usec", "at"} as perflab.rundir.CpuSample reads it.
With --out it returns at once and a detached child writes FILE (whole, by a rename) once the
window has ended: the bench launches it with one plain command per host and reads FILE after the
phase, instead of keeping an Ansible async job per host (several round trips each).
The samples are taken at the window's bounds, not around the tasks that start and wait for the
phase: a busy core over the window reads as busy (a sample taken after the bench's poll would
count its seconds at rest as well). `at` is when each was read: a sampler started after START_AT
reads at once, and perflab collect divides by the seconds it really covered.

A container's CPU time is its cgroup's (v1 or v2); a machine's is /proc/stat without idle and
iowait. Runs on the lab's hosts under their python3 (3.9 or later): standard library only.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any, Callable

CGROUP_ROOTS_V2 = ("/sys/fs/cgroup", "/sys/fs/cgroup/unified")
CGROUP_ROOTS_V1 = ("/sys/fs/cgroup/cpuacct", "/sys/fs/cgroup/cpu,cpuacct")


def container_usage_usec(proc_cgroup: str = "/proc/1/cgroup", root: str = "") -> int:
    """The CPU time of the container's own cgroup: PID 1's, without systemd's init.scope."""
    for line in Path(proc_cgroup).read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        path = path.removesuffix("/init.scope").removesuffix("/")
        if controllers == "":
            for base in CGROUP_ROOTS_V2:
                stat = Path(f"{root}{base}{path}/cpu.stat")
                if stat.exists():
                    for entry in stat.read_text().splitlines():
                        if entry.startswith("usage_usec "):
                            return int(entry.split()[1])
        if "cpuacct" in controllers.split(","):
            for base in CGROUP_ROOTS_V1:
                usage = Path(f"{root}{base}{path}/cpuacct.usage")
                if usage.exists():
                    return int(usage.read_text()) // 1000
    raise SystemExit("cpu_window: no cgroup CPU accounting found for this container")


def machine_usage_usec(proc_stat: str = "/proc/stat") -> int:
    """user nice system idle iowait irq softirq steal: everything but idle and iowait."""
    with open(proc_stat) as stat:
        fields = [int(v) for v in stat.readline().split()[1:9]]
    busy = sum(fields) - fields[3] - fields[4]
    return busy * 1_000_000 // os.sysconf("SC_CLK_TCK")


def in_container() -> bool:
    return os.path.exists("/run/systemd/container") or os.path.exists("/.dockerenv")


def sample(host: str, usage: Callable[[], int], clock: Callable[[], float] = time.time) -> dict[str, Any]:
    return {"host": host, "machine": Path("/proc/sys/kernel/random/boot_id").read_text().strip(),
            "cpus": sorted(os.sched_getaffinity(0)), "usage_usec": usage(), "at": clock()}


def at_bounds(host: str, start_at: float, end_at: float, usage: Callable[[], int],
              clock: Callable[[], float] = time.time,
              sleep: Callable[[float], None] = time.sleep) -> dict[str, dict[str, Any]]:
    """The two samples, each read as soon as its bound has come (at once when it has passed)."""
    if not end_at > start_at:
        raise SystemExit(f"cpu_window: the window ends ({end_at}) after it starts ({start_at})")
    samples = {}
    for name, bound in (("start", start_at), ("end", end_at)):
        sleep(max(0.0, bound - clock()))
        samples[name] = sample(host, usage, clock)
    return samples


def detach() -> bool:
    """True in a child that outlives the caller (its own session, stdio on /dev/null), False in the
    caller, which returns at once: nothing holds the command's output open."""
    if os.fork() > 0:
        return False
    os.setsid()
    if os.fork() > 0:
        os._exit(0)
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    return True


def write_whole(path: Path, text: str) -> None:
    partial = path.with_name(path.name + ".partial")
    partial.write_text(text)
    partial.rename(path)


def main(argv: list[str]) -> int:
    args = argv[1:]
    out = None
    if args[:1] == ["--out"] and len(args) > 1:
        out, args = Path(args[1]), args[2:]
    if len(args) != 3:
        sys.stderr.write("usage: cpu_window.py [--out FILE] HOST START_AT END_AT (unix seconds)\n")
        return 2
    host, start_at, end_at = args[0], float(args[1]), float(args[2])
    if not end_at > start_at:
        sys.stderr.write(f"cpu_window: the window ends ({end_at}) after it starts ({start_at})\n")
        return 2
    usage = container_usage_usec if in_container() else machine_usage_usec
    if out is None:
        print(json.dumps(at_bounds(host, start_at, end_at, usage)))
        return 0
    out.unlink(missing_ok=True)  # a reader never finds an earlier window's samples
    if detach():
        try:
            write_whole(out, json.dumps(at_bounds(host, start_at, end_at, usage)))
        except BaseException as exc:  # the reader is told why there are no samples
            write_whole(out, json.dumps({"error": f"{type(exc).__name__}: {exc}"}))
        finally:
            os._exit(0)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
