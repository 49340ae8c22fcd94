"""What a role reads on a lab host in one round trip (roles/_common/files/probe.py, run by
roles/_common/tasks/probe.yml): its packages' state, its files' checksums, modes and owners, a user, a
directory's entries, PID 1's open-file limit, its CPUs and memory (its container's limit where lower, from
cgroup v1 or v2), and its clock; once on this machine as the role runs it."""

from __future__ import annotations

import grp
import hashlib
import json
import os
import pwd
import time
from pathlib import Path

import pytest

from .helpers import host_program, run_host_program

PROGRAM = Path(__file__).resolve().parents[2] / "roles" / "_common" / "files" / "probe.py"
probe = host_program(PROGRAM)

TOTAL = 24000 * 1048576
V2 = "0::/system.slice/docker-abc.scope\n"
V1 = "12:pids:/docker/abc\n11:memory:/docker/abc\n1:name=systemd:/docker/abc\n"


@pytest.mark.parametrize(("cgroup", "limits", "mb"), [
    (V2, {"/sys/fs/cgroup/system.slice/docker-abc.scope/memory.max": "4294967296\n"}, 4096),
    (V2, {"/sys/fs/cgroup/system.slice/docker-abc.scope/memory.max": "max\n"}, 24000),
    # A limit set on a parent cgroup holds for its children.
    (V2, {"/sys/fs/cgroup/system.slice/memory.max": "3221225472\n",
          "/sys/fs/cgroup/system.slice/docker-abc.scope/memory.max": "max\n"}, 3072),
    # Inside the container's own namespace its cgroup is the root.
    ("0::/\n", {"/sys/fs/cgroup/memory.max": "2147483648\n"}, 2048),
    (V1, {"/sys/fs/cgroup/memory/docker/abc/memory.limit_in_bytes": "2147483648\n"}, 2048),
    # A limit above the machine's memory (v1's "no limit" is a huge number) leaves the machine's.
    (V1, {"/sys/fs/cgroup/memory/docker/abc/memory.limit_in_bytes": "9223372036854771712\n"}, 24000),
    (V2, {}, 24000),  # the limit file not readable: the machine's memory
])
def test_the_memory_offered_is_the_lower_of_the_machines_and_its_containers_limit(
        cgroup: str, limits: dict[str, str], mb: int) -> None:
    assert probe.memory_bytes(TOTAL, cgroup, limits.get) // 1048576 == mb


def test_meminfo_is_read_in_bytes() -> None:
    assert probe.meminfo_bytes("MemTotal:       24576000 kB\nMemFree:        20000000 kB\n") == 24576000 * 1024


def test_the_probe_reads_this_machine_as_the_role_runs_it(tmp_path: Path) -> None:
    file, directory = tmp_path / "app.jar", tmp_path / "home"
    file.write_bytes(b"jar")
    file.chmod(0o640)
    directory.mkdir()
    (directory / "quarkus").mkdir()
    me = pwd.getpwuid(os.getuid())
    before = time.time()
    done = run_host_program(PROGRAM, "--package=dpkg", "--package=perflab-no-such-package", f"--path={file}",
                            f"--path={directory}", f"--path={tmp_path / 'absent'}", f"--user={me.pw_name}",
                            f"--home={directory}", "--pid1-nofile",
                            "--cpus", "--limits", "--clock")
    after = time.time()
    assert done.returncode == 0, done.stderr
    read = json.loads(done.stdout)
    assert read["missing"] == ["perflab-no-such-package"]
    assert isinstance(read["apt_lists"], int)
    owner = f"{me.pw_name}:{grp.getgrgid(os.getgid()).gr_name}"
    assert read["files"] == {str(file): f"{hashlib.sha256(b'jar').hexdigest()} 640 {owner}",
                             str(directory): f"dir {oct(directory.stat().st_mode & 0o7777)[2:]} {owner}",
                             str(tmp_path / "absent"): "absent"}
    assert read["user"] == f"{'system' if me.pw_uid < 1000 else 'regular'}:{me.pw_dir}:{me.pw_shell}"
    assert read["home"] == "quarkus/"
    assert read["pid1_nofile"] == Path("/proc/1/limits").read_text().split("Max open files")[1].split()[1]
    assert read["cpus"] == len(os.sched_getaffinity(0))
    total_mb = int(Path("/proc/meminfo").read_text().split()[1]) // 1024
    assert read["limits"]["cpus"] == sorted(os.sched_getaffinity(0))
    assert 0 < read["limits"]["memory_bytes"] // 1048576 <= total_mb
    assert read["limits"]["nofile"] > 0
    assert before <= float(read["clock"]) <= after


def test_a_user_and_a_directory_that_are_not_there_read_empty(tmp_path: Path) -> None:
    done = run_host_program(PROGRAM, "--user=perflab-no-such-user", f"--home={tmp_path / 'absent'}")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"missing": [], "apt_lists": json.loads(done.stdout)["apt_lists"], "files": {},
                                       "user": "", "home": ""}
