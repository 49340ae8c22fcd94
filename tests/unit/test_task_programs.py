"""The small programs tasks run on hosts, each as its task runs it (`python3 -c <file> ARGS`), with stand-ins
for the commands they call: lab-status' units (playbooks/files/lab_units.py), a vegeta phase's files
(roles/bench/files/vegeta_results.py), the wrk2 mirror's sha256 (roles/loadgen/files/url_sha256.py) and the
firewall's preflight read (roles/lab_firewall/files/firewall_probe.py)."""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import stat
import subprocess
import sys
from pathlib import Path

from .helpers import host_program

ROOT = Path(__file__).resolve().parents[2]
LAB_UNITS = ROOT / "playbooks" / "files" / "lab_units.py"
VEGETA_RESULTS = ROOT / "roles" / "bench" / "files" / "vegeta_results.py"
URL_SHA256 = ROOT / "roles" / "loadgen" / "files" / "url_sha256.py"
FIREWALL_PROBE = ROOT / "roles" / "lab_firewall" / "files" / "firewall_probe.py"
RESULTS_ROOM = ROOT / "roles" / "bench" / "files" / "results_room.py"


def stand_in(directory: Path, name: str, script: str) -> Path:
    path = directory / name
    path.write_text(f"#!/bin/sh\n{script}\n", encoding="utf-8")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def run(program: Path, *args: str, path: Path | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PATH=f"{path}:{os.environ['PATH']}") if path else None
    return subprocess.run([sys.executable, "-c", program.read_text(encoding="utf-8"), *args], capture_output=True,
                          text=True, timeout=30, check=False, env=env, cwd=cwd)


def test_lab_status_counts_a_unit_enabled_or_running_and_skips_one_absent_or_disabled_and_stopped(tmp_path: Path) -> None:
    # mariadb: enabled and active; mysql: an alias, enabled and active; postgresql@15-main: generated (not
    # enabled) and inactive; grafana-server: absent; perflab-app: disabled but running.
    stand_in(tmp_path, "systemctl", r'''unit=$2
case "$1 $unit" in
  "cat grafana-server.service") exit 1;;
  "cat "*) exit 0;;
  "is-enabled mariadb.service"|"is-enabled mysql.service") echo enabled;;
  "is-enabled postgresql@15-main.service") echo generated;;
  "is-enabled perflab-app.service") echo disabled;;
  "is-active postgresql@15-main.service") echo inactive; exit 3;;
  "is-active "*) echo active;;
esac''')
    done = run(LAB_UNITS, "mariadb", "mysql", "postgresql@15-main", "grafana-server", "perflab-app", path=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["mariadb=active", "mysql=active", "perflab-app=active"]


def test_a_vegeta_phase_leaves_its_results_as_gzipped_json_lines_and_prints_its_report(tmp_path: Path) -> None:
    vegeta = stand_in(tmp_path, "vegeta", '''case "$1" in
  encode) [ "$2" = -to=json ] && [ -f "$3" ] && printf '{"code":200}\\n{"code":200}\\n';;
  report) echo "Requests [total] 2 from $2";;
esac''')
    (tmp_path / "vegeta-measure.bin").write_bytes(b"raw")
    done = run(VEGETA_RESULTS, str(vegeta), "measure", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "Requests [total] 2 from vegeta-measure.bin\n"
    with gzip.open(tmp_path / "vegeta-measure.jsonl.gz", "rt") as lines:
        assert [json.loads(line) for line in lines] == [{"code": 200}, {"code": 200}]


def test_a_vegeta_encode_that_fails_fails_the_task_with_its_status(tmp_path: Path) -> None:
    vegeta = stand_in(tmp_path, "vegeta", 'echo "encode: no such file" >&2; exit 3')
    done = run(VEGETA_RESULTS, str(vegeta), "warmup", cwd=tmp_path)
    assert done.returncode == 3
    assert "vegeta encode vegeta-warmup.bin exited with 3" in done.stderr


def test_the_mirrors_sha256_is_of_what_it_serves_or_why_it_cannot_be_read(tmp_path: Path) -> None:
    archive = tmp_path / "wrk2.tar.gz"
    archive.write_bytes(b"not really an archive" * 10000)
    done = run(URL_SHA256, archive.as_uri(), "5")
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"sha256 {hashlib.sha256(archive.read_bytes()).hexdigest()}\n"
    gone = run(URL_SHA256, (tmp_path / "absent.tar.gz").as_uri(), "5")
    assert gone.returncode == 0 and gone.stdout.startswith("unreadable ") and "absent.tar.gz" in gone.stdout


def test_the_controller_is_the_default_gateway_when_no_ssh_connection_says() -> None:
    probe = host_program(FIREWALL_PROBE)
    routes = ("Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\n"
              "eth0\t0000A8C0\t00000000\t0001\t0\t0\t0\t00FFFFFF\n"
              "eth0\t00000000\t0100A8C0\t0003\t0\t0\t0\t00000000\n")
    assert probe.default_gateway(routes) == "192.168.0.1"
    assert probe.default_gateway(routes.splitlines()[0] + "\n") is None


def test_the_firewall_probe_resolves_each_name_or_says_why_not() -> None:
    done = subprocess.run([sys.executable, "-c", FIREWALL_PROBE.read_text(encoding="utf-8"), "localhost",
                           "perflab-no-such-host.invalid"], capture_output=True, text=True, timeout=60, check=False,
                          env=dict(os.environ, SSH_CONNECTION="10.0.0.9 50000 10.0.0.3 22"))
    assert done.returncode == 0, done.stderr
    read = json.loads(done.stdout)
    assert read["controller"] == "10.0.0.9"
    assert "127.0.0.1" in read["resolved"]["localhost"]
    assert read["resolved"]["perflab-no-such-host.invalid"].startswith("does not resolve: ")
    assert isinstance(read["nftables"], str)


def test_a_results_directory_is_made_written_and_its_room_read_leaving_nothing(tmp_path: Path) -> None:
    directory = tmp_path / "a" / "results"
    done = run(RESULTS_ROOM, str(directory))
    assert done.returncode == 0, done.stderr
    read = json.loads(done.stdout)
    free = os.statvfs(tmp_path)
    assert read["unwritable"] is None and abs(read["avail_bytes"] - free.f_bavail * free.f_frsize) < 64 * 1048576
    assert directory.is_dir() and list(directory.iterdir()) == []  # the file written is removed


def test_a_results_directory_that_cannot_be_made_says_why() -> None:
    done = run(RESULTS_ROOM, "/proc/perflab-results")  # even root cannot create a directory in /proc
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"unwritable": "No such file or directory: /proc/perflab-results", "avail_bytes": None}
