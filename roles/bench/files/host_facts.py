"""Reads a run's host in one round trip (roles/bench/tasks/host_facts.yml): its CPUs, memory, OS and
kernel, and the version of what its tier runs.

    python3 host_facts.py loadgen FACT_FILE
    python3 host_facts.py db ENGINE
    python3 host_facts.py app JAVA

Prints one line each: the CPUs this process may use (its affinity: a container's cpuset), the memory
in MiB, the OS ("Debian 12"), the kernel's release, then the version: on a loadgen host the loadgen
role's record FACT_FILE (JSON) on one line; on a db host the first line of `mariadbd --version` (or
`mysqld --version`), or of the newest `/usr/lib/postgresql/*/bin/postgres --version` when ENGINE (its
lab_db_engine) is postgresql; on an app host the IMPLEMENTOR and JAVA_VERSION of the release file of JAVA's
JDK, else the first line of `JAVA -version`. A version it cannot read is an empty line. Runs on the
lab's hosts under their python3: standard library only.
"""

from __future__ import annotations

import glob
import os
import shlex
import subprocess
import sys


def read(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8") as text:
            return text.read()
    except OSError:
        return None


def os_name(os_release: str) -> str:
    """ID with its first letter up, then VERSION_ID, as /etc/os-release gives them ("Debian 12")."""
    fields = release_fields(os_release)
    name = fields.get("ID", "")
    return f"{name[:1].upper()}{name[1:]} {fields.get('VERSION_ID', '')}"


def release_fields(text: str) -> dict[str, str]:
    """KEY="value" lines, shell-quoted, as /etc/os-release and a JDK's release file write them."""
    fields = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep and key.strip() and not key.startswith("#"):
            try:
                words = shlex.split(value) or [""]
            except ValueError:  # an unbalanced quote: the value as written
                words = [value.strip().strip('"')]
            fields[key.strip()] = words[0]
    return fields


def memory_mb(meminfo: str) -> int:
    return next(int(line.split()[1]) for line in meminfo.splitlines() if line.startswith("MemTotal:")) // 1024


def first_line(argv: list[str]) -> str | None:
    """The first line argv prints (stdout, then stderr: `java -version` writes there), None where it fails."""
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if done.returncode != 0:
        return None
    lines = (done.stdout or done.stderr).splitlines()
    return lines[0] if lines else ""


def major(path: str) -> int:
    """The major version in /usr/lib/postgresql/MAJOR/bin/postgres (0 where it is not a number)."""
    part = path.split("/")[-3]
    return int(part) if part.isdigit() else 0


def version(tier: str, given: list[str]) -> str:
    if tier == "loadgen":
        return (read(given[0]) or "").replace("\n", "")
    if tier == "db":
        # The engine's server (a host turned from one engine to the other may still have the other's).
        servers = (sorted(glob.glob("/usr/lib/postgresql/*/bin/postgres"), key=major)[-1:] if given[0] == "postgresql"
                   else ["mariadbd", "mysqld"])
        for server in servers:
            line = first_line([server, "--version"])
            if line is not None:
                return line
        return ""
    java = given[0]
    release = read(os.path.join(os.path.dirname(os.path.dirname(java)), "release"))
    if release is not None:
        fields = release_fields(release)
        return f"{fields.get('IMPLEMENTOR', '')} {fields.get('JAVA_VERSION', '')}"
    return first_line([java, "-version"]) or ""


def main(argv: list[str]) -> int:
    wanted = {"loadgen": 1, "db": 1, "app": 1}
    if not argv or argv[0] not in wanted or len(argv) - 1 != wanted[argv[0]]:
        print("usage: host_facts.py loadgen FACT_FILE | db ENGINE | app JAVA", file=sys.stderr)
        return 2
    print(len(os.sched_getaffinity(0)))
    print(memory_mb(read("/proc/meminfo") or "MemTotal: 0 kB"))
    print(os_name(read("/etc/os-release") or ""))
    print(os.uname().release)
    print(version(argv[0], argv[1:]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
