"""What a run records of each host (roles/bench/files/host_facts.py), run as host_facts.yml runs it: its CPUs,
memory, OS, kernel, and its tier's version read from what the tier installed."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from .helpers import host_program, run_host_program

PROGRAM = Path(__file__).resolve().parents[2] / "roles" / "bench" / "files" / "host_facts.py"
host_facts = host_program(PROGRAM)


def facts(*args: str) -> subprocess.CompletedProcess[str]:
    return run_host_program(PROGRAM, *args)


def test_a_loadgen_host_gives_its_figures_then_its_record_on_one_line(tmp_path: Path) -> None:
    record = {"wrk2": {"available": True, "commit": "e0109df"}, "vegeta": {"version": "v12.13.0"}}
    fact = tmp_path / "perflab_loadgen.fact"
    fact.write_text(json.dumps(record, indent=2) + "\n")
    done = facts("loadgen", str(fact))
    assert done.returncode == 0, done.stderr
    cpus, memory, os_name, kernel, version = done.stdout.splitlines()
    assert int(cpus) == len(os.sched_getaffinity(0)) and int(memory) > 0
    assert os_name == host_facts.os_name(Path("/etc/os-release").read_text()) and kernel == os.uname().release
    assert json.loads(version) == record


def test_an_app_hosts_version_comes_from_its_jdks_release_file(tmp_path: Path) -> None:
    (tmp_path / "bin").mkdir()
    (tmp_path / "release").write_text('IMPLEMENTOR="Eclipse Adoptium"\nJAVA_VERSION="25.0.1"\nMODULES="java.base java.sql"\n')
    done = facts("app", str(tmp_path / "bin" / "java"))
    assert done.returncode == 0 and done.stdout.splitlines()[4] == "Eclipse Adoptium 25.0.1", done


def test_a_version_it_cannot_read_is_an_empty_line(tmp_path: Path) -> None:
    done = facts("app", str(tmp_path / "bin" / "java"))  # no release file, no java to ask
    assert done.returncode == 0 and done.stdout.splitlines()[4:] == [""], done


@pytest.mark.parametrize(("os_release", "name"), [
    ('PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"\nID=debian\nVERSION_ID="12"\n', "Debian 12"),
    ('ID=ubuntu\nVERSION_ID="24.04"\n', "Ubuntu 24.04"),
    ("ID=arch\n", "Arch "),  # no VERSION_ID: as /etc/os-release's own shell reading left it
])
def test_the_os_is_its_id_capitalized_and_its_version(os_release: str, name: str) -> None:
    assert host_facts.os_name(os_release) == name


def test_a_wrong_call_says_how_to_call_it() -> None:
    done = facts("loadgen")
    assert done.returncode == 2 and done.stderr.startswith("usage: host_facts.py")


def test_a_db_hosts_server_is_its_engines(tmp_path: Path) -> None:
    # A PostgreSQL host's server is the newest /usr/lib/postgresql/MAJOR/bin/postgres, by number (16 after 9).
    paths = ["/usr/lib/postgresql/9/bin/postgres", "/usr/lib/postgresql/16/bin/postgres", "/usr/lib/postgresql/15/bin/postgres"]
    assert max(paths, key=host_facts.major) == "/usr/lib/postgresql/16/bin/postgres"
    assert host_facts.major("/usr/lib/postgresql/main/bin/postgres") == 0
    # The engine is required: a db host without it is a wrong call.
    done = facts("db")
    assert done.returncode == 2 and "db ENGINE" in done.stderr
