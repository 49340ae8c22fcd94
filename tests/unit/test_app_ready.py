"""roles/app/files/perflab-app-ready, the app host's readiness probe, against stand-ins for systemctl
and journalctl and a local HTTP server: it waits for the manifest's readiness status, records start
to ready, and an app that does not start is one message with its exit status and its last log
lines, the unit stopped rather than left restarting."""

from __future__ import annotations

import http.server
import json
import mmap
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

PROBE = Path(__file__).resolve().parents[2] / "roles" / "app" / "files" / "perflab-app-ready"

FAKE_SYSTEMCTL = """\
import json, os, sys, time
state_file = os.environ["FAKE_SYSTEMD"]
with open(state_file) as f:
    state = json.load(f)
args = sys.argv[1:]
with open(state_file + ".log", "a") as log:
    log.write(" ".join(args) + "\\n")
if args[0] in ("restart", "start", "stop"):
    if args[0] in ("restart", "start"):
        state["props"].update(state.pop("after_restart", {}))
        state["props"]["ExecMainStartTimestampMonotonic"] = str(time.monotonic_ns() // 1000)
    with open(state_file, "w") as f:
        json.dump(state, f)
    # "job_fails": systemd saw the JVM exit before its exec's confirmation, and failed the start job itself.
    if args[0] in ("restart", "start") and state.get("job_fails"):
        sys.exit(f"Job for {args[1]}.service failed because the control process exited with error code.")
    sys.exit(0)
# "later": what systemd reports from the second question on (the app exited after the first).
state["calls"] = state.get("calls", 0) + 1
if state["calls"] >= 2:
    state["props"].update(state.pop("later", {}))
with open(state_file, "w") as f:
    json.dump(state, f)
names = [a.split("=", 1)[1] for a in args if a.startswith("--property=")]
if "--property" in args:
    names.append(args[args.index("--property") + 1])
if "--value" in args:
    print(state["props"].get(names[0], ""))
else:
    for name in names:
        print(f"{name}={state['props'].get(name, '')}")
"""
# Without --since, the lines of an earlier run come first (the journal keeps every start's).
FAKE_JOURNALCTL = ("import sys\n"
                   "if '--since' not in sys.argv: print('Started an earlier run of the app')\n"
                   "print('Starting the app\\njava.lang.IllegalStateException: PERFLAB_DB_PASSWORD is not set')\n")


class Answer(http.server.BaseHTTPRequestHandler):
    status = 200

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        self.send_response(self.status)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def server() -> Iterator[http.server.HTTPServer]:
    answering = http.server.HTTPServer(("127.0.0.1", 0), Answer)
    thread = threading.Thread(target=answering.serve_forever, daemon=True)
    thread.start()
    yield answering
    answering.shutdown()
    answering.server_close()


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def probe(tmp_path: Path, url: str, props: dict[str, str], after_restart: dict[str, str], *args: str,
          later: dict[str, str] | None = None, job_fails: bool = False) -> subprocess.CompletedProcess[str]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    for name, code in (("systemctl", FAKE_SYSTEMCTL), ("journalctl", FAKE_JOURNALCTL)):
        (bin_dir / name).write_text(f"#!{sys.executable}\n{code}")
        (bin_dir / name).chmod(0o755)
    state = tmp_path / "systemd.json"
    state.write_text(json.dumps({"props": {"ExecMainPID": "4242", "ExecMainStartTimestamp": "Mon 2026-11-23 10:00:00 UTC",
                                           **props}, "after_restart": after_restart, "later": later or {},
                                 "job_fails": job_fails}))
    (tmp_path / "app.json").write_text(json.dumps({"app": "tfb-quarkus", "profile": "default"}))
    env = dict(os.environ, PATH=f"{bin_dir}:{os.environ['PATH']}", FAKE_SYSTEMD=str(state))
    return subprocess.run(
        [sys.executable, str(PROBE), "--restart", f"--url={url}", "--deployment", str(tmp_path / "app.json"),
         "--fact-file", str(tmp_path / "facts" / "perflab_app.fact"), "--interval=0.01", *args],
        env=env, capture_output=True, text=True, timeout=60)


RUNNING = {"ActiveState": "active", "SubState": "running", "NRestarts": "0", "ExecMainStatus": "0"}


def test_ready_at_the_manifests_status_records_start_to_ready(tmp_path: Path, server: http.server.HTTPServer) -> None:
    Answer.status = 204
    url = f"http://127.0.0.1:{server.server_port}/plaintext"
    done = probe(tmp_path, url, RUNNING, {}, "--status=204")
    assert done.returncode == 0, done.stderr
    fact = json.loads((tmp_path / "facts" / "perflab_app.fact").read_text())
    assert fact["app"] == "tfb-quarkus" and fact["main_pid"] == 4242 and 0 <= fact["start_to_ready_ms"] < 5000
    assert fact["unit"] == "perflab-app"  # the unit it restarted and timed, which the bench's profile reads
    assert json.loads(done.stdout) == fact


def test_an_answer_with_another_status_is_not_ready(tmp_path: Path, server: http.server.HTTPServer) -> None:
    Answer.status = 503
    done = probe(tmp_path, f"http://127.0.0.1:{server.server_port}/health/ready", RUNNING, {}, "--timeout=1")
    assert done.returncode == 1
    assert done.stderr.startswith(f"http://127.0.0.1:{server.server_port}/health/ready did not answer 200 within 1 s; "
                                  "perflab-app is stopped\nlast lines of the perflab-app journal:\nStarting the app\n")
    assert (tmp_path / "systemd.json.log").read_text().splitlines()[-1] == "stop perflab-app"


def test_an_app_that_exits_at_start_is_its_exit_status_and_last_log_lines_at_once(tmp_path: Path) -> None:
    """systemd restarts an app that exits (Restart=on-failure): the probe does not wait its timeout out."""
    url = f"http://127.0.0.1:{closed_port()}/health/ready"
    exiting = {"ActiveState": "activating", "SubState": "auto-restart", "NRestarts": "1", "ExecMainStatus": "1"}
    done = probe(tmp_path, url, RUNNING, exiting, "--timeout=60")
    assert done.returncode == 1
    assert done.stderr == (
        f"perflab-app: the app exited with status 1 (unit activating/auto-restart) before {url} answered 200; "
        "perflab-app is stopped\nlast lines of the perflab-app journal:\nStarting the app\n"
        "java.lang.IllegalStateException: PERFLAB_DB_PASSWORD is not set\n\n")
    # Caught between two polls: systemd restarted it since the probe's restart (NRestarts grew).
    restarted_since = {"ActiveState": "activating", "SubState": "start", "NRestarts": "1", "ExecMainStatus": "1"}
    done = probe(tmp_path, url, RUNNING, {}, "--timeout=60", later=restarted_since)
    assert done.returncode == 1 and done.stderr.startswith(
        f"perflab-app: the app exited with status 1 (unit activating/start) before {url} answered 200"), done.stderr


def test_a_jvm_that_fails_its_start_job_is_its_exit_status_and_last_log_lines_too(tmp_path: Path) -> None:
    """A JVM that exits at once (a bad JVM option) can fail systemctl's start job itself, whose message names
    nothing of the JVM's: the probe says the app's exit status and its journal, as for an exit after the job (a
    CI simulation's run recorded systemctl's words alone as its reason)."""
    url = f"http://127.0.0.1:{closed_port()}/health/ready"
    exiting = {"ActiveState": "activating", "SubState": "auto-restart", "NRestarts": "0", "ExecMainStatus": "1"}
    done = probe(tmp_path, url, RUNNING, exiting, "--timeout=60", job_fails=True)
    assert done.returncode == 1
    assert done.stderr == (
        f"perflab-app: the app exited with status 1 (unit activating/auto-restart) before {url} answered 200; "
        "perflab-app is stopped\nlast lines of the perflab-app journal:\nStarting the app\n"
        "java.lang.IllegalStateException: PERFLAB_DB_PASSWORD is not set\n\n")
    # The unit not even started (no exit of the app to name): systemctl's own words.
    done = probe(tmp_path, url, RUNNING, {}, "--timeout=60", job_fails=True)
    assert done.returncode == 1 and done.stderr.startswith(
        "perflab-app: systemctl restart failed: Job for perflab-app.service failed because the control process exited "
        f"with error code. before {url} answered 200; perflab-app is stopped"), done.stderr


def test_an_answer_that_is_not_http_is_not_ready(tmp_path: Path) -> None:
    """A probe of a port nobody listens on yet can connect to itself, the kernel having picked that very port as
    its source (the lab's ephemeral range starts at 1024): it reads its own request back. A CI run's probe died
    there on "BadStatusLine: GET /health/ready HTTP/1.1"; the app was still starting. Not ready, and polled on."""
    echo = socket.socket()
    echo.bind(("127.0.0.1", 0))
    echo.listen()

    def echo_back() -> None:
        while True:
            try:
                conn, _ = echo.accept()
            except OSError:
                return
            with conn:
                conn.sendall(conn.recv(4096).split(b"\r\n", 1)[0] + b"\r\n\r\n")

    threading.Thread(target=echo_back, daemon=True).start()
    url = f"http://127.0.0.1:{echo.getsockname()[1]}/health/ready"
    try:
        done = probe(tmp_path, url, RUNNING, {}, "--timeout=1")
    finally:
        echo.close()
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.startswith(f"{url} did not answer 200 within 1 s; perflab-app is stopped"), done.stderr


def test_a_new_artifact_or_jdk_forgets_the_class_data_sharing_archive(tmp_path: Path, server: http.server.HTTPServer) -> None:
    """The archive the replaced JVM writes as it stops is removed before the new one starts: a stale archive makes
    the JVM log "An error has occurred while processing the shared archive file" before it falls back."""
    Answer.status = 200
    archive = tmp_path / "perflab-app" / "quarkus.jsa"
    archive.parent.mkdir()
    archive.write_bytes(b"an archive of the jar this deployment replaces")
    done = probe(tmp_path, f"http://127.0.0.1:{server.server_port}/health/ready", RUNNING, {}, f"--forget-archive={archive}")
    assert done.returncode == 0, done.stderr
    assert not archive.exists()
    assert (tmp_path / "systemd.json.log").read_text().splitlines()[:2] == ["stop perflab-app", "start perflab-app"]
    assert json.loads(done.stdout)["start_to_ready_ms"] >= 0
    # Nothing to forget: the same stop and start.
    done = probe(tmp_path, f"http://127.0.0.1:{server.server_port}/health/ready", RUNNING, {}, f"--forget-archive={archive}")
    assert done.returncode == 0, done.stderr


def test_an_archive_written_for_the_same_code_is_kept_and_one_for_other_code_forgotten(
        tmp_path: Path, server: http.server.HTTPServer) -> None:
    """--code: the archive is forgotten only when it was written for other code than the app's now (its stamp
    JSA.code). An app that comes back after another one ran (a compare) keeps its archive; a new jar does not."""
    Answer.status = 200
    url = f"http://127.0.0.1:{server.server_port}/health/ready"
    archive = tmp_path / "perflab-app" / "quarkus.jsa"
    archive.parent.mkdir()
    log = tmp_path / "systemd.json.log"

    jar = tmp_path / "perflab-quarkus.jar"
    jar.write_bytes(b"the jar")
    os.utime(jar, ns=(1_795_928_612_000_000_000, 1_795_928_612_000_000_000))

    def restart(code: str) -> list[str]:
        log.unlink(missing_ok=True)
        done = probe(tmp_path, url, RUNNING, {}, f"--forget-archive={archive}", f"--code={code}", f"--jar={jar}")
        assert done.returncode == 0, done.stderr
        return [line for line in log.read_text().splitlines() if line.split()[0] in ("stop", "start", "restart")]

    archive.write_bytes(b"an archive of a jar no stamp names")
    assert restart("jar-a:jdk-1") == ["stop perflab-app", "start perflab-app"] and not archive.exists()
    # The stamp holds the jar as the JVM's archive checks it: its modification time and its size.
    assert (tmp_path / "perflab-app" / "quarkus.jsa.code").read_text() == "jar-a:jdk-1:1795928612000000000-7\n"
    archive.write_bytes(b"the archive the JVM of jar a wrote as it stopped")
    assert restart("jar-a:jdk-1") == ["restart perflab-app"] and archive.exists()
    # The same bytes copied again with another time (a copy over SSH that was not given the controller's): the JVM
    # would refuse the archive, so it goes.
    os.utime(jar, ns=(1_795_928_999_000_000_000, 1_795_928_999_000_000_000))
    assert restart("jar-a:jdk-1") == ["stop perflab-app", "start perflab-app"] and not archive.exists()
    archive.write_bytes(b"the archive of jar a at its new time")
    assert restart("jar-a:jdk-1") == ["restart perflab-app"] and archive.exists()
    assert restart("jar-b:jdk-1") == ["stop perflab-app", "start perflab-app"] and not archive.exists()
    archive.write_bytes(b"the archive of jar b")
    assert restart("jar-b:jdk-2") == ["stop perflab-app", "start perflab-app"] and not archive.exists()


def test_the_deployment_says_whether_the_jvm_maps_its_archive(tmp_path: Path, server: http.server.HTTPServer) -> None:
    """class_data_sharing in the fact: "archive mapped" when the app's main process maps the archive (here this test's
    own process maps the file, as the JVM does), "no archive" when it does not (a JVM that refused a stale one)."""
    Answer.status = 200
    url = f"http://127.0.0.1:{server.server_port}/health/ready"
    archive = tmp_path / "perflab-app" / "quarkus.jsa"
    archive.parent.mkdir()
    archive.write_bytes(b"\0" * mmap.PAGESIZE)
    this_process = {**RUNNING, "ExecMainPID": str(os.getpid())}
    done = probe(tmp_path, url, this_process, {}, f"--forget-archive={archive}", "--code=jar-a:jdk-1")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["class_data_sharing"] == "no archive"  # forgotten, and not mapped
    archive.write_bytes(b"\0" * mmap.PAGESIZE)  # the archive the stopping JVM writes, mapped by the next
    with archive.open("rb") as file, mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ):
        done = probe(tmp_path, url, this_process, {}, f"--forget-archive={archive}", "--code=jar-a:jdk-1")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["class_data_sharing"] == "archive mapped"
    # Without class data sharing (app_class_data_sharing: false) the fact says nothing of it.
    assert "class_data_sharing" not in json.loads(probe(tmp_path, url, this_process, {}).stdout)


def wait_for(tmp_path: Path, result: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(PROBE), "--wait", str(result), "--interval=0.01", *args],
                          capture_output=True, text=True, timeout=60)


def test_a_detached_start_returns_at_once_and_its_wait_gives_what_it_would_have(
        tmp_path: Path, server: http.server.HTTPServer) -> None:
    """--detach: the bench launches the JVM's start so (a plain command, no async job) and readies the DB and the
    load generator meanwhile; --wait then gives, in one round trip, the start-to-ready record the probe printed."""
    Answer.status = 200
    url = f"http://127.0.0.1:{server.server_port}/health/ready"
    result = tmp_path / "start.json"
    result.write_text(json.dumps({"rc": 0, "stdout": "an earlier run's outcome", "stderr": ""}))
    # The app answers ready only after a while: the launch returns before it is.
    Answer.status = 503
    launched = probe(tmp_path, url, RUNNING, {}, "--detach", str(result))
    assert (launched.returncode, launched.stdout, launched.stderr) == (0, "", "")
    assert not result.exists(), "an earlier outcome is removed at the launch"
    Answer.status = 200
    waited = wait_for(tmp_path, result)
    assert waited.returncode == 0, waited.stderr
    fact = json.loads((tmp_path / "facts" / "perflab_app.fact").read_text())
    assert json.loads(waited.stdout) == fact and fact["start_to_ready_ms"] >= 0
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("start.json")) == ["start.json"]


def test_a_detached_start_that_fails_is_its_own_error_at_the_wait(tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{closed_port()}/health/ready"
    exiting = {"ActiveState": "activating", "SubState": "auto-restart", "NRestarts": "1", "ExecMainStatus": "1"}
    result = tmp_path / "start.json"
    launched = probe(tmp_path, url, RUNNING, exiting, "--timeout=60", "--detach", str(result))
    assert launched.returncode == 0, launched.stderr
    waited = wait_for(tmp_path, result)
    assert waited.returncode == 1
    assert waited.stderr.startswith(f"perflab-app: the app exited with status 1 (unit activating/auto-restart) before "
                                    f"{url} answered 200; perflab-app is stopped\nlast lines of the perflab-app journal:"
                                    ), waited.stderr
    assert "PERFLAB_DB_PASSWORD is not set" in waited.stderr


def test_a_wait_without_a_start_says_so_within_its_time(tmp_path: Path) -> None:
    waited = subprocess.run([sys.executable, str(PROBE), "--wait", str(tmp_path / "never.json"), "--timeout=-59.5",
                             "--interval=0.01"], capture_output=True, text=True, timeout=60)
    assert waited.returncode == 1 and "was not written within 0 s: the detached start did not end" in waited.stderr


def test_detach_goes_with_restart(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, str(PROBE), "--detach", str(tmp_path / "start.json")],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "--detach goes with --restart" in done.stderr
