"""What a role needs to know about a host, read at once and changing nothing (roles/_common/tasks/probe.yml).

Prints one JSON object:
- "missing": the packages (--package) whose dpkg state is not "installed";
- "apt_lists": how many apt package lists /var/lib/apt/lists holds (a fresh image ships none);
- "files": each --path's state: "<sha256> <mode> <owner>:<group>" for a regular file, "dir <mode> <owner>:<group>"
  for a directory, "other <mode> <owner>:<group>" for anything else (a symbolic link among them), "absent";
- and what was asked besides: "user" (--user NAME: "system" or "regular", its home and its shell, joined by ":",
  or "" when there is no such user), "home" (--home DIR: the directory's entries, each followed by "/", or ""),
  "pid1_nofile" (--pid1-nofile: PID 1's hard open-file limit, a number or "unlimited"), "cpus" (--cpus: how many
  CPUs this process may run on, as nproc counts them), "limits" (--limits: what the host gives a process: "cpus",
  the CPUs it may run on (a container's cpuset); "memory_bytes", the machine's memory or its cgroup's limit where
  that is lower (a container's); "nofile", the hard open-file limit), "clock" (--clock: the host's clock as
  seconds since the epoch with nanoseconds, read last).

Runs on the lab's hosts under their python3 (`python3 -c <this file> ARGS`): standard library only.

Usage: probe.py [--package P]... [--path PATH]... [--user NAME] [--home DIR] [--pid1-nofile] [--cpus] [--limits]
                [--clock]
"""
from __future__ import annotations

import argparse
import grp
import hashlib
import json
import os
import pwd
import resource
import stat
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

APT_LISTS = Path("/var/lib/apt/lists")
FIRST_REGULAR_UID = 1000


def installed(package: str) -> bool:
    done = subprocess.run(["dpkg-query", "--show", "--showformat=${db:Status-Status}", package],
                          capture_output=True, text=True, check=False)
    return done.returncode == 0 and done.stdout == "installed"


def owner(info: os.stat_result) -> str:
    try:
        user = pwd.getpwuid(info.st_uid).pw_name
    except KeyError:
        user = "UNKNOWN"
    try:
        group = grp.getgrgid(info.st_gid).gr_name
    except KeyError:
        group = "UNKNOWN"
    return f"{stat.S_IMODE(info.st_mode):o} {user}:{group}"


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def state(path: Path) -> str:
    try:
        info = path.lstat()
    except FileNotFoundError:
        return "absent"
    if stat.S_ISDIR(info.st_mode):
        return f"dir {owner(info)}"
    if stat.S_ISREG(info.st_mode):
        return f"{sha256(path)} {owner(info)}"
    return f"other {owner(info)}"


def user(name: str) -> str:
    try:
        entry = pwd.getpwnam(name)
    except KeyError:
        return ""
    kind = "system" if entry.pw_uid < FIRST_REGULAR_UID else "regular"
    return f"{kind}:{entry.pw_dir}:{entry.pw_shell}"


def home(directory: Path) -> str:
    try:
        return "".join(f"{entry}/" for entry in sorted(os.listdir(directory)))
    except OSError:
        return ""


def pid1_nofile(limits: Path = Path("/proc/1/limits")) -> str:
    for line in limits.read_text().splitlines():
        if line.startswith("Max open files"):
            return line.split()[4]
    return ""


def meminfo_bytes(meminfo: str) -> int:
    """MemTotal of /proc/meminfo, in bytes."""
    return next(int(line.split()[1]) for line in meminfo.splitlines() if line.startswith("MemTotal:")) * 1024


def memory_bytes(total: int, cgroup: str, read: Callable[[str], str | None]) -> int:
    """TOTAL, or the lowest memory limit of this process's cgroup (/proc/self/cgroup's text) and its parents
    where that is lower: cgroup v2's memory.max, v1's memory controller's memory.limit_in_bytes ("max", or
    a file READ cannot read, is no limit). A container's limit sits on its own cgroup, whatever its
    namespace shows as the root."""
    memory = total
    for line in cgroup.splitlines():
        _, controllers, path = (line.split(":", 2) + ["", ""])[:3]
        if controllers and "memory" not in controllers.split(","):
            continue
        root, name = ("/sys/fs/cgroup", "memory.max") if not controllers else ("/sys/fs/cgroup/memory", "memory.limit_in_bytes")
        parts = [part for part in path.split("/") if part]
        for depth in range(len(parts), -1, -1):
            limit = (read("/".join([root, *parts[:depth], name])) or "").strip()
            if limit.isdigit():
                memory = min(memory, int(limit))
    return memory


def read_text(path: str) -> str | None:
    try:
        with open(path, encoding="ascii") as text:
            return text.read()
    except OSError:
        return None


def limits() -> dict[str, object]:
    total = meminfo_bytes(read_text("/proc/meminfo") or "")
    return {"cpus": sorted(os.sched_getaffinity(0)), "memory_bytes": memory_bytes(total, read_text("/proc/self/cgroup") or "", read_text),
            "nofile": resource.getrlimit(resource.RLIMIT_NOFILE)[1]}


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--package", action="append", default=[])
    parser.add_argument("--path", action="append", default=[])
    parser.add_argument("--user")
    parser.add_argument("--home")
    parser.add_argument("--pid1-nofile", action="store_true")
    parser.add_argument("--cpus", action="store_true")
    parser.add_argument("--limits", action="store_true")
    parser.add_argument("--clock", action="store_true")
    args = parser.parse_args(argv)
    found: dict[str, object] = {
        "missing": [package for package in args.package if not installed(package)],
        "apt_lists": sum(1 for entry in APT_LISTS.glob("*_Packages*")) if APT_LISTS.is_dir() else 0,
        "files": {path: state(Path(path)) for path in args.path},
    }
    if args.user is not None:
        found["user"] = user(args.user)
    if args.home is not None:
        found["home"] = home(Path(args.home))
    if args.pid1_nofile:
        found["pid1_nofile"] = pid1_nofile()
    if args.cpus:
        found["cpus"] = len(os.sched_getaffinity(0))
    if args.limits:
        found["limits"] = limits()
    if args.clock:  # last, so that the controller's readings before and after the task bracket it
        now = time.time_ns()
        found["clock"] = f"{now // 10**9}.{now % 10**9:09d}"
    print(json.dumps(found))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
