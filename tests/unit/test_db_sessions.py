"""The DB's network sessions and their TLS (roles/bench/files/db_sessions.py), run as db_sessions.yml runs it,
against a stand-in for each engine's client on PATH: the document perflab collect reads, or why the sessions
are unknown."""
from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

PROGRAM = Path(__file__).resolve().parents[2] / "roles" / "bench" / "files" / "db_sessions.py"


def with_client(tmp_path: Path, name: str, script: str, *args: str) -> subprocess.CompletedProcess[str]:
    """The program with CLIENT on PATH: a shell script that records its arguments and runs SCRIPT."""
    client = tmp_path / name
    client.write_text(f'#!/bin/sh\necho "$@" >> {tmp_path}/calls\n{script}\n', encoding="utf-8")
    client.chmod(client.stat().st_mode | stat.S_IXUSR)
    env = dict(os.environ, PATH=f"{tmp_path}:{os.environ['PATH']}")
    return subprocess.run([sys.executable, "-c", PROGRAM.read_text(encoding="utf-8"), *args], capture_output=True,
                          text=True, timeout=30, check=False, env=env)


def test_postgresql_sessions_come_from_pg_stat_ssl_as_the_superuser(tmp_path: Path) -> None:
    done = with_client(tmp_path, "psql", r"printf '4242\tperflab\t10.0.0.3\tt\n4243\tperflab\t10.0.0.3\tf\n'", "postgresql")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"evidence": "each session's pg_stat_ssl", "sessions": [
        {"id": 4242, "user": "perflab", "host": "10.0.0.3", "tls": True},
        {"id": 4243, "user": "perflab", "host": "10.0.0.3", "tls": False}]}
    call = (tmp_path / "calls").read_text()
    assert call.startswith("--no-psqlrc -U postgres -d postgres") and "pg_stat_ssl" in call and "client_addr IS NOT NULL" in call


def test_mariadb_without_performance_schema_vouches_by_the_account(tmp_path: Path) -> None:
    script = ('case "$*" in *@@performance_schema*) echo 0;; '
              r"*PROCESSLIST*) printf '17\tperflab\t10.0.0.3\t1\n18\troot\t10.0.0.9\t0\n';; esac")
    done = with_client(tmp_path, "mysql", script, "mariadb")
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    assert found["evidence"].startswith("each session's account: REQUIRE SSL/X509")
    assert [(s["id"], s["tls"]) for s in found["sessions"]] == [(17, True), (18, False)]


def test_a_db_that_does_not_answer_is_said_so_and_no_failure(tmp_path: Path) -> None:
    done = with_client(tmp_path, "psql", 'echo "psql: error: connection to server on socket failed" >&2; exit 2', "postgresql")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"unavailable": "the DB did not answer: psql: error: connection to server on socket failed"}


def test_an_engine_it_does_not_know_is_a_usage_error(tmp_path: Path) -> None:
    done = with_client(tmp_path, "psql", "exit 0", "oracle")
    assert done.returncode == 2 and done.stderr.startswith("usage: db_sessions.py mariadb|mysql|postgresql")
