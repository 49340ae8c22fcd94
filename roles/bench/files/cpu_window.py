"""A host's CPU time at the two bounds of the measured window (roles/bench/tasks/window.yml).

    python3 cpu_window.py [--out FILE] HOST START_AT END_AT

Sleeps until START_AT (unix seconds, the instant every loadgen host starts the measured phase),
reads the CPU time the host has used so far, sleeps until END_AT (the start plus the phase's
duration) and reads it again, then prints both as JSON: {"start": sample, "end": sample}, each
sample {"host", "machine", "cpus", "usage_usec", "used_usec", "waited_usec", "at"} as perflab.rundir.CpuSample
reads it.
With --out it returns at once and a detached child writes FILE (whole, by a rename) once the
window has ended: the bench launches it with one plain command per host and reads FILE after the
phase, instead of keeping an Ansible async job per host (several round trips each).
The samples are taken at the window's bounds, not around the tasks that start and wait for the
phase: a busy core over the window reads as busy (a sample taken after the bench's poll would
count its seconds at rest as well). `at` is when each was read: a sampler started after START_AT
reads at once, and perflab collect divides by the seconds it really covered.

A container's CPU time is its cgroup's (v1 or v2); a machine's is /proc/stat without idle and
iowait. `waited_usec` is how long the threads of each of process-exporter's groups on the host
(the config its running process names: the groups the tiers' CPU figures come from) have waited
for a CPU so far, summed over their tasks' run delay (/proc/<pid>/task/<tid>/schedstat), and
`used_usec` how long they have run (its first field), read in the same scan: the lab's own
exporters' part of the host's CPU, which the app's cost leaves out. A task that ended in the
window takes its times with it. {} where process-exporter does not run, or the kernel keeps no
schedstat. Runs on the lab's hosts under their python3 (3.9 or later): standard
library only.
"""

from __future__ import annotations

import json
import os
import re
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


# process-exporter's command line (roles/process_exporter's override.conf.j2: -config.path=FILE).
EXPORTERS = ("prometheus-process-exporter", "process-exporter")
CONFIG_FLAG = "-config.path="


def argv_of(proc: Path) -> list[str]:
    return [arg.decode(errors="replace") for arg in (proc / "cmdline").read_bytes().split(b"\0")[:-1]]


def process_groups(procfs: str = "/proc") -> list[dict[str, Any]]:
    """The groups the host's running process-exporter matches processes with (its config's process_names:
    JSON under comment lines, which YAML reads too, roles/process_exporter's config.yml.j2); [] where none
    runs."""
    for proc in Path(procfs).iterdir():
        try:
            argv = argv_of(proc) if proc.name.isdigit() else []
        except OSError:
            continue
        if argv and os.path.basename(argv[0]) in EXPORTERS:
            for arg in argv[1:]:
                if arg.startswith(CONFIG_FLAG):  # JSON below the template's comment lines
                    lines = Path(arg[len(CONFIG_FLAG):]).read_text().splitlines()
                    config = json.loads("\n".join(line for line in lines if not line.startswith("#")))
                    return list(config["process_names"])
    return []


def group_of(comm: str, argv: list[str], groups: list[dict[str, Any]]) -> str | None:
    """The first group whose every given matcher matches, as process-exporter reads them: comm, the kernel's
    name; exe, argv[0] (whole where the entry has a '/', else its basename); cmdline, regular expressions
    that each match somewhere in the arguments joined by spaces."""
    for group in groups:
        if "comm" in group and comm not in group["comm"]:
            continue
        if "exe" in group and not (argv and any(argv[0] == exe if "/" in exe else os.path.basename(argv[0]) == exe
                                                for exe in group["exe"])):
            continue
        if "cmdline" in group and not all(re.search(regex, " ".join(argv)) for regex in group["cmdline"]):
            continue
        return str(group["name"])
    return None


def group_usec(groups: list[dict[str, Any]], procfs: str = "/proc") -> dict[str, dict[str, int]]:
    """Each group's threads' time on a CPU ("used_usec") and waiting for one ("waited_usec") so far (the first and
    second fields of each task's schedstat, ns), in microseconds; a process that ends while it is read is left out."""
    used: dict[str, int] = {}
    waited: dict[str, int] = {}
    for proc in Path(procfs).iterdir():
        if not proc.name.isdigit():
            continue
        try:
            group = group_of((proc / "comm").read_text().rstrip("\n"), argv_of(proc), groups)
            if group is None:
                continue
            stats = [(task / "schedstat").read_text().split() for task in (proc / "task").iterdir()]
            ran, ns = sum(int(stat[0]) for stat in stats), sum(int(stat[1]) for stat in stats)
        except (OSError, IndexError, ValueError):
            continue
        used[group] = used.get(group, 0) + ran // 1000
        waited[group] = waited.get(group, 0) + ns // 1000
    return {"used_usec": used, "waited_usec": waited}


def no_groups() -> dict[str, dict[str, int]]:
    return {"used_usec": {}, "waited_usec": {}}


def in_container() -> bool:
    return os.path.exists("/run/systemd/container") or os.path.exists("/.dockerenv")


def sample(host: str, usage: Callable[[], int], clock: Callable[[], float] = time.time,
           groups: Callable[[], dict[str, dict[str, int]]] = no_groups) -> dict[str, Any]:
    """USAGE read first, and `at` is when: the groups' times, read after them, take a scan of /proc."""
    read = {"host": host, "machine": Path("/proc/sys/kernel/random/boot_id").read_text().strip(),
            "cpus": sorted(os.sched_getaffinity(0)), "usage_usec": usage(), "at": clock()}
    return {**read, **groups()}


def at_bounds(host: str, start_at: float, end_at: float, usage: Callable[[], int],
              clock: Callable[[], float] = time.time, sleep: Callable[[float], None] = time.sleep,
              groups: Callable[[], dict[str, dict[str, int]]] = no_groups) -> dict[str, dict[str, Any]]:
    """The two samples, each read as soon as its bound has come (at once when it has passed)."""
    if not end_at > start_at:
        raise SystemExit(f"cpu_window: the window ends ({end_at}) after it starts ({start_at})")
    samples = {}
    for name, bound in (("start", start_at), ("end", end_at)):
        sleep(max(0.0, bound - clock()))
        samples[name] = sample(host, usage, clock, groups)
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
    try:  # read before the window opens
        groups = process_groups()
    except (OSError, ValueError, KeyError, TypeError):  # a config from before it was JSON: no groups' times read
        groups = []

    def times() -> dict[str, dict[str, int]]:  # never at the cost of the CPU samples
        try:
            return group_usec(groups)
        except Exception:  # e.g. a regular expression Go reads and Python does not: no groups' times, the CPU kept
            return no_groups()

    if out is None:
        print(json.dumps(at_bounds(host, start_at, end_at, usage, groups=times)))
        return 0
    out.unlink(missing_ok=True)  # a reader never finds an earlier window's samples
    if detach():
        try:
            write_whole(out, json.dumps(at_bounds(host, start_at, end_at, usage, groups=times)))
        except BaseException as exc:  # the reader is told why there are no samples
            write_whole(out, json.dumps({"error": f"{type(exc).__name__}: {exc}"}))
        finally:
            os._exit(0)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
