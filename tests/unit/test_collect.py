"""`perflab collect RUN_DIR`: a bench run's files, in one process, from what the plays gathered and
the tool's real output (the fixtures); Prometheus is a closed port here, so every figure it would
give is unobserved and says why."""
from __future__ import annotations

import gzip
import json
import shutil
import socket
import subprocess
import sys
import threading
import urllib.parse
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from perflab import audit, collect, observe, rundir
from perflab.errors import InputError
from perflab.observations import DbSessions, Observations

from .helpers import VEGETA_FIXTURES, WRK2_FIXTURES
from .test_audit import STEADY
from .helpers import bench_inputs as load_inputs
from .test_cli import perflab

CLOSED_PROMETHEUS = "http://127.0.0.1:9"


def _sample(host: str, usage_usec: int, at: float, cpus: list[int]) -> dict[str, Any]:
    return {"host": host, "machine": "m1", "cpus": cpus, "usage_usec": usage_usec, "at": at}


def bench_inputs(tool: str, rate: int, raw_files: list[str], percentile_files: list[str]) -> dict[str, Any]:
    """bench-inputs.json as roles/bench/tasks/collect.yml writes it (one loadgen host)."""
    tiers = {"loadgen": ("perflab-loadgen", [0]), "app": ("perflab-app", [1]), "db": ("perflab-db", [0])}
    return {
        "run_id": "20261120T090000Z-quarkus-greeting", "raw_output": raw_files[0],
        "raw_files": raw_files, "percentile_files": percentile_files,
        "run": {"scenario": {"name": "greeting", "rate": rate, "connections": 10, "threads": 2, "slo_p99_ms": 25,
                             "endpoints": ["GET /greeting/{name}"]},
                "phases": {"measure": {"environment": {"GREETING_NAME": "perflab"}}}, "tool": tool,
                "target_url": "http://perflab-app:8080", "duration_s": 15, "warmup_s": 5,
                "calibration_ms": 10025 if tool == "wrk2" else 0, "host_rates": [rate]},
        "db_delay_ms": 0, "quiet_s": 7.0,
        "measure_started_at": "2026-11-20T09:00:00Z", "measure_ended_at": "2026-11-20T09:00:25Z",
        "deployment": {"app": "quarkus", "start_to_ready_ms": 900.0, "jvm_opts": ["-Xmx512m"], "cpu_affinity": [1]},
        "cpu_start": {tier: _sample(host, 0, 0.0, cpus) for tier, (host, cpus) in tiers.items()},
        "cpu_end": {tier: _sample(host, 5_000_000, 25.0, cpus) for tier, (host, cpus) in tiers.items()},
        "loadgen_hosts_cpu": {}, "start_skew_ms": None,
        "tiers": {tier: [host] for tier, (host, _) in tiers.items()},
        "hosts": {host: {"cpus": "2", "memory_mb": "2048", "os": "Debian 12", "kernel": "6.1"} for host, _ in tiers.values()},
        "versions": {"load_generator": tool, "java": "25", "database": "mariadb  Ver 15.1 Distrib 10.11.6-MariaDB"},
    }


def run_dir_with(tmp_path: Path, inputs: dict[str, Any], fixtures: dict[str, Path]) -> Path:
    run_dir: Path = tmp_path / str(inputs["run_id"])
    run_dir.mkdir()
    for name, source in fixtures.items():
        shutil.copy(source, run_dir / name)
    (run_dir / "bench-inputs.json").write_text(json.dumps(inputs))
    (run_dir / "status.json").write_text(json.dumps({"status": "incomplete", "reason": "the run is in progress"}))
    return run_dir


def test_collect_writes_every_file_of_a_wrk2_run_and_marks_it_complete(tmp_path: Path) -> None:
    inputs = bench_inputs("wrk2", 1000, ["wrk2-measure.txt"], ["wrk2-measure-percentiles.json"])
    run_dir = run_dir_with(tmp_path, inputs, {
        "wrk2-measure.txt": WRK2_FIXTURES / "wrk2-steady-1000rps.txt",
        "wrk2-measure-percentiles.json": WRK2_FIXTURES / "wrk2-steady-1000rps-percentiles.json"})
    done = perflab("collect", run_dir, "--prometheus", CLOSED_PROMETHEUS)
    assert done.returncode == 0, done.stderr
    files = {path.name for path in run_dir.iterdir()}
    assert {"context.json", "observations.json", "result.json", "audit.json", "attribution.json"} <= files
    assert not [name for name in files if name.endswith(".partial")]
    # The result is what `perflab parse-wrk2 --context` gives for the same files.
    parsed = perflab("parse-wrk2", run_dir / "wrk2-measure.txt", "--percentiles", run_dir / "wrk2-measure-percentiles.json",
                     "--target-rate", "1000", "--context", run_dir / "context.json", "--json")
    assert json.loads((run_dir / "result.json").read_text()) == json.loads(parsed.stdout)
    # The verdict is `perflab judge`'s, and status.json carries it.
    judged = perflab("judge", run_dir / "result.json", "--observations", run_dir / "observations.json", "--json")
    assert json.loads((run_dir / "audit.json").read_text()) == json.loads(judged.stdout)
    status = rundir.read_status(run_dir)
    assert status == rundir.RunStatus(status="complete", run_id=str(inputs["run_id"]), verdict=rundir.read_audit(run_dir).status,
                                      started_at="2026-11-20T09:00:00Z", ended_at="2026-11-20T09:00:25Z")
    # Prometheus could not be asked: the observations say so rather than inventing figures.
    observations = json.loads((run_dir / "observations.json").read_text())
    assert "no Prometheus data" in observations["unobserved"]["statements_per_request"]
    lines = done.stdout.splitlines()
    assert not (run_dir / "timeseries.json").exists()
    assert f"timeseries.json not written: Prometheus at {CLOSED_PROMETHEUS} is unreachable" in "\n".join(lines)
    assert lines[0] == "wrk2-measure.txt: wrk2, 24994 requests in 25 s"
    assert status.verdict is not None and f"verdict: {status.verdict.value}" in lines and any(line.startswith("bottleneck: ") for line in lines)
    assert lines[-1].startswith('CPU seconds in the measured phase by tier: {"loadgen": 5.0, "app": 5.0, "db": 5.0}')


def test_collect_of_a_vegeta_run_reads_its_raw_results(tmp_path: Path) -> None:
    inputs = bench_inputs("vegeta", 200, ["vegeta-measure.jsonl.gz"], [])
    run_dir = run_dir_with(tmp_path, inputs, {"vegeta-measure.jsonl.gz": VEGETA_FIXTURES / "vegeta-steady-200rps.jsonl.gz"})
    done = perflab("collect", run_dir, "--prometheus", CLOSED_PROMETHEUS)
    assert done.returncode == 0, done.stderr
    result = json.loads((run_dir / "result.json").read_text())
    assert result["tool"] == "vegeta" and result["requests"] > 0 and result["scenario"]["name"] == "greeting"
    assert json.loads((run_dir / "status.json").read_text())["status"] == "complete"


def test_collect_expects_the_statements_the_scenarios_requests_give(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """observe() gets the statements per request to expect from the scenario as run: its requests' own over
    the contract's table; the contract's alone for inputs recorded before the requests were."""
    given: list[object] = []
    real = observe.observe

    def recorded(*args: Any, **kwargs: Any) -> Observations:
        given.append(args[6] if len(args) > 6 else kwargs["statements"])
        return real(*args, **kwargs)

    monkeypatch.setattr(observe, "observe", recorded)
    inputs = bench_inputs("vegeta", 200, ["vegeta-measure.jsonl.gz"], [])
    inputs["run"]["scenario"]["requests"] = [
        {"name": "greet", "weight": 1, "method": "GET", "path": "/greeting/${name}", "expect": {"status": 200},
         "statements": {"select": 1}, "headers": {}}]
    run_dir = run_dir_with(tmp_path, inputs, {"vegeta-measure.jsonl.gz": VEGETA_FIXTURES / "vegeta-steady-200rps.jsonl.gz"})
    collect.collect(run_dir, CLOSED_PROMETHEUS)
    del inputs["run"]["scenario"]["requests"]
    (run_dir / "bench-inputs.json").write_text(json.dumps(inputs))
    collect.collect(run_dir, CLOSED_PROMETHEUS)
    own, before = given
    assert own == {**observe.CONTRACT_STATEMENTS, ("GET", "/greeting/{name}", "200"): (1.0, 0.0, 0.0, 0.0)}
    assert before is observe.CONTRACT_STATEMENTS


def test_a_missing_raw_output_stops_collect_with_one_line_and_leaves_the_run_incomplete(tmp_path: Path) -> None:
    inputs = bench_inputs("wrk2", 1000, ["wrk2-measure.txt"], ["wrk2-measure-percentiles.json"])
    run_dir = run_dir_with(tmp_path, inputs, {})
    done = perflab("collect", run_dir, "--prometheus", CLOSED_PROMETHEUS)
    assert done.returncode == 4
    assert done.stderr.strip().splitlines() == [f"perflab collect: error: {run_dir}/wrk2-measure.txt: no such file"]
    assert json.loads((run_dir / "status.json").read_text())["status"] == "incomplete"
    assert not (run_dir / "result.json").exists() and not (run_dir / "audit.json").exists()


def test_collect_of_a_directory_without_bench_inputs_says_so(tmp_path: Path) -> None:
    done = perflab("collect", tmp_path, "--prometheus", CLOSED_PROMETHEUS)
    assert done.returncode == 4
    assert done.stderr.strip() == f"perflab collect: error: {tmp_path}/bench-inputs.json: no such file"


def test_collect_writes_bench_inputs_given_on_standard_input_first_and_reads_them(tmp_path: Path) -> None:
    """The bench hands what its plays gathered to perflab collect (--inputs -): one command, not a copy and a command."""
    inputs = bench_inputs("vegeta", 200, ["vegeta-measure.jsonl.gz"], [])
    run_dir = run_dir_with(tmp_path, inputs, {"vegeta-measure.jsonl.gz": VEGETA_FIXTURES / "vegeta-steady-200rps.jsonl.gz"})
    (run_dir / "bench-inputs.json").unlink()
    done = subprocess.run([sys.executable, "-m", "perflab", "collect", str(run_dir), "--prometheus", CLOSED_PROMETHEUS,
                           "--inputs", "-"], input=json.dumps(inputs, indent=2), capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert json.loads((run_dir / "bench-inputs.json").read_text()) == inputs
    assert rundir.read_status(run_dir).status == "complete"
    # A file that is not there: one line, and the run left as it was.
    again = perflab("collect", run_dir, "--prometheus", CLOSED_PROMETHEUS, "--inputs", tmp_path / "nowhere.json")
    assert again.returncode == 4 and again.stderr.strip() == f"perflab collect: error: {tmp_path}/nowhere.json: No such file or directory"


def test_collect_of_a_vegeta_run_writes_its_seconds_with_the_warm_up(tmp_path: Path) -> None:
    """timeseries.json from the measured phase's results and, beside them, the warm-up's (here another real
    attack at the same rate: fixtures/vegeta/README.md)."""
    inputs = bench_inputs("vegeta", 200, ["vegeta-measure.jsonl.gz"], [])
    inputs["run"].update(duration_s=4, warmup_s=3)
    run_dir = run_dir_with(tmp_path, inputs, {
        "vegeta-measure.jsonl.gz": VEGETA_FIXTURES / "vegeta-freeze-1s-200rps.jsonl.gz",
        "vegeta-warmup.jsonl.gz": VEGETA_FIXTURES / "vegeta-steady-200rps.jsonl.gz"})
    done = perflab("collect", run_dir, "--prometheus", CLOSED_PROMETHEUS)
    assert done.returncode == 0, done.stderr
    assert "timeseries.json: 4 s of the measured phase, 3 s of warm-up" in done.stdout.splitlines()
    series = json.loads((run_dir / "timeseries.json").read_text())
    warmup, measure = series["phases"]
    assert (warmup["phase"], warmup["files"], warmup["ok"]) == ("warmup", ["vegeta-warmup.jsonl.gz"], [200, 200, 200])
    assert (measure["phase"], measure["start_s"], measure["ok"]) == ("measure", 0.0, [200, 101, 299, 200])
    assert series["notes"] == []
    # `perflab collect --timeseries` writes the same file again from the same files.
    written = (run_dir / "timeseries.json").read_text()
    (run_dir / "timeseries.json").unlink()
    again = perflab("collect", "--timeseries", run_dir)
    assert (again.returncode, again.stdout) == (0, "timeseries.json: 4 s of the measured phase, 3 s of warm-up\n")
    assert (run_dir / "timeseries.json").read_text() == written


def test_a_warm_up_that_cannot_be_read_is_a_note_not_a_failure(tmp_path: Path) -> None:
    inputs = bench_inputs("vegeta", 200, ["vegeta-measure.jsonl.gz"], [])
    inputs["run"].update(duration_s=3, warmup_s=3)
    run_dir = run_dir_with(tmp_path, inputs, {"vegeta-measure.jsonl.gz": VEGETA_FIXTURES / "vegeta-steady-200rps.jsonl.gz"})
    (run_dir / "vegeta-warmup.jsonl.gz").write_bytes((VEGETA_FIXTURES / "vegeta-steady-200rps.jsonl.gz").read_bytes()[:3000])
    done = perflab("collect", run_dir, "--prometheus", CLOSED_PROMETHEUS)
    assert done.returncode == 0, done.stderr
    assert "timeseries.json: 3 s of the measured phase, no warm-up" in done.stdout.splitlines()
    series = json.loads((run_dir / "timeseries.json").read_text())
    assert [p["phase"] for p in series["phases"]] == ["measure"]
    assert series["notes"] == [f"The warm-up is not shown: {run_dir}/vegeta-warmup.jsonl.gz: not usable vegeta "
                               "results: the gzip stream ends early: the file is truncated"]


def test_collect_timeseries_of_a_run_without_bench_inputs_reads_result_json(tmp_path: Path) -> None:
    """A run as older benches or `perflab parse-vegeta --context` left it: result.json names the raw output."""
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    shutil.copy(VEGETA_FIXTURES / "vegeta-behind-1worker-100rps.jsonl.gz", run_dir / "vegeta-measure.jsonl.gz")
    parsed = perflab("parse-vegeta", run_dir / "vegeta-measure.jsonl.gz", "--target-rate", "100", "--duration-s", "3",
                     "--json")
    stored = json.loads(parsed.stdout)
    (run_dir / "result.json").write_text(json.dumps({**stored, "raw_output": "vegeta-measure.jsonl.gz"}))
    done = perflab("collect", "--timeseries", run_dir)
    assert (done.returncode, done.stdout) == (0, "timeseries.json: 3 s of the measured phase, no warm-up\n"), done.stderr
    assert json.loads((run_dir / "timeseries.json").read_text())["phases"][0]["ok"] == [19, 19, 19]


def test_collect_timeseries_of_a_wrk2_run_reads_the_apps_histogram_or_says_why_not(tmp_path: Path) -> None:
    """wrk2 keeps no request: its series come from the app's histogram in Prometheus, over the window
    bench-inputs.json gives; Prometheus closed, none is written and the reason is the one line."""
    inputs = bench_inputs("wrk2", 1000, ["wrk2-measure.txt"], ["wrk2-measure-percentiles.json"])
    run_dir = run_dir_with(tmp_path, inputs, {"wrk2-measure.txt": WRK2_FIXTURES / "wrk2-steady-1000rps.txt"})
    done = perflab("collect", "--timeseries", run_dir, "--prometheus", CLOSED_PROMETHEUS)
    assert done.returncode == 4 and not (run_dir / "timeseries.json").exists()
    assert done.stderr.startswith(f"perflab collect: error: {run_dir}: a wrk2 run, its series from the app's "
                                  f"histogram: Prometheus at {CLOSED_PROMETHEUS} is unreachable"), done.stderr
    (run_dir / "bench-inputs.json").unlink()
    (run_dir / "result.json").write_text(perflab("parse-wrk2", run_dir / "wrk2-measure.txt", "--target-rate", "1000",
                                                 "--json").stdout)
    done = perflab("collect", "--timeseries", run_dir)
    assert done.returncode == 4 and done.stderr == (
        f"perflab collect: error: {run_dir}: a wrk2 run without bench-inputs.json: its series come from the app's "
        "histogram in Prometheus, over the window that file gives (wrk2 keeps no request)\n")


def test_db_sessions_the_db_could_not_list_are_unobserved_with_the_reason(tmp_path: Path) -> None:
    """The bench's DB-sessions step, when the DB does not answer, writes why instead of failing the run."""
    (tmp_path / "db-sessions.json").write_text(json.dumps(
        {"unavailable": "the DB did not answer: ERROR 2002 (HY000): Can't connect to local server through socket"}))
    assert collect.db_sessions(tmp_path) == (None, "the DB's sessions could not be listed: the DB did not answer: "
                                                   "ERROR 2002 (HY000): Can't connect to local server through socket")
    (tmp_path / "db-sessions.json").write_text(json.dumps({"evidence": "each session's Ssl_cipher (performance_schema)", "sessions": [
        {"id": 7, "user": "perflab", "host": "10.0.0.3", "tls": True},
        {"id": 8, "user": "perflab", "host": "10.0.0.3", "tls": False}]}))
    assert collect.db_sessions(tmp_path) == (DbSessions(total=2, tls=1), "")
    (tmp_path / "db-sessions.json").write_text('{"sessions": [')
    with pytest.raises(InputError, match=r"db-sessions.json: not JSON \(line 1"):
        collect.db_sessions(tmp_path)


class PrometheusThatStops:
    """A Prometheus on a local port that answers its first ANSWERS queries (with no series) and then
    stops listening: every later query is refused, as when it is stopped in the middle of a collection."""

    def __init__(self, answers: int) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}"
        self.queries: list[str] = []
        self.thread = threading.Thread(target=self._serve, args=(answers,), daemon=True)
        self.thread.start()

    def _serve(self, answers: int) -> None:
        body = json.dumps({"status": "success", "data": {"resultType": "vector", "result": []}}).encode()
        with self.listener:
            for _ in range(answers):
                connection, _ = self.listener.accept()
                with connection:
                    request = connection.recv(65536).decode("latin-1")
                    self.queries.append(urllib.parse.unquote_plus(request.split(" ")[1]))
                    connection.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "
                                       + str(len(body)).encode() + b"\r\nConnection: close\r\n\r\n" + body)


def test_prometheus_stopped_in_the_middle_of_collect_is_unobserved_never_health(tmp_path: Path) -> None:
    inputs = bench_inputs("wrk2", 1000, ["wrk2-measure.txt"], ["wrk2-measure-percentiles.json"])
    run_dir = run_dir_with(tmp_path, inputs, {
        "wrk2-measure.txt": WRK2_FIXTURES / "wrk2-steady-1000rps.txt",
        "wrk2-measure-percentiles.json": WRK2_FIXTURES / "wrk2-steady-1000rps-percentiles.json"})
    prometheus = PrometheusThatStops(answers=3)
    done = perflab("collect", run_dir, "--prometheus", prometheus.url)
    assert done.returncode == 0, done.stderr
    assert json.loads((run_dir / "status.json").read_text())["status"] == "complete"
    assert len(prometheus.queries) == 3  # answered, then refused
    observations = json.loads((run_dir / "observations.json").read_text())
    unreachable = f"no Prometheus data: Prometheus at {prometheus.url} is unreachable"
    for name in ("cpus_busy", "saturation", "app_jvm_started_at", "db_down_s"):
        assert observations[name] is None and observations["unobserved"][name].startswith(unreachable), name
    rules = {r["rule"]: r for r in json.loads((run_dir / "audit.json").read_text())["rules"]}
    for name in ("app_not_restarted", "db_up"):
        assert rules[name]["status"] == "NOT_EVALUATED" and rules[name]["evidence"].startswith(
            f"not evaluated: {unreachable}"), rules[name]
    sentence = json.loads((run_dir / "attribution.json").read_text())["sentence"]
    assert "no tier was saturated" not in sentence
    assert sentence.startswith("not attributed: the system kept up with the offered rate, ") and (
        "but whether a tier was saturated cannot be told: not observed: each tier's CPUs" in sentence), sentence


def test_the_apps_cpu_is_against_what_its_profile_lets_it_use() -> None:
    """PROFILE=app-bound: a quarter of one CPU. The app host's 0.2 busy cores are 80% of what the app
    may use, not 20% of the host's core; without a quota, the affinity's CPUs."""
    inputs = bench_inputs("wrk2", 500, ["wrk2-measure.txt"], [])
    inputs["cpu_end"]["app"]["usage_usec"] = 5_000_000  # 5 s over 25 s: 0.2 cores
    free = collect.app_cpu(load_inputs(inputs))
    assert (free.busy_cores, free.allotted_cores) == (0.2, 1.0)
    inputs["deployment"]["cpu_quota_percent"] = 25
    bound = collect.app_cpu(load_inputs(inputs))
    assert bound.allotted_cores == 0.25 and bound.busy_fraction == pytest.approx(0.8)


def test_the_lab_s_exporters_cores_are_their_group_s_run_time_between_the_samples() -> None:
    """cpu_window.py reads each process-exporter group's run time with the host's CPU: the exporters' share of the
    host's busy cores (perflab.tiers.INSTRUMENT_GROUP), which the app's cost leaves out; not read where a sample
    lacks it (from before it was kept) or it went down (an exporter restarted in the window)."""
    inputs = bench_inputs("wrk2", 500, ["wrk2-measure.txt"], [])
    inputs["cpu_end"]["app"]["usage_usec"] = 5_000_000  # 5 s over 25 s: 0.2 cores
    inputs["cpu_start"]["app"]["used_usec"] = {"exporters": 1_000_000, "app-java": 7}
    inputs["cpu_end"]["app"]["used_usec"] = {"exporters": 1_500_000, "app-java": 4_000_000}
    app = collect.app_cpu(load_inputs(inputs))
    assert app.busy_cores == 0.2 and app.instrument_cores == pytest.approx(0.02)
    assert app.cpu_s_without_exporters == pytest.approx(4.5) and app.cpu_s == pytest.approx(5.0)
    inputs["cpu_end"]["app"]["used_usec"] = {"exporters": 10}  # restarted in the window
    assert collect.app_cpu(load_inputs(inputs)).instrument_cores is None
    del inputs["cpu_start"]["app"]["used_usec"]  # a sample from before it was kept
    assert collect.app_cpu(load_inputs(inputs)).cpu_s_without_exporters == pytest.approx(5.0)


def test_each_tiers_service_threads_waits_for_a_cpu_are_read_per_second_of_the_samples() -> None:
    """The run delay of each tier's own service's process-exporter group (the db tier's either engine's) between
    its samples, per second; a group whose waits went down (its service restarted in the window) is not read, and
    where no tier's was, the observations say why."""
    inputs = bench_inputs("wrk2", 500, ["wrk2-measure.txt"], [])
    waits = {"app": ({"app-java": 1_000_000, "other": 5}, {"app-java": 6_000_000, "other": 9_000_000}),
             "db": ({"mysqld": 2_000_000, "other": 0}, {"mysqld": 27_000_000, "other": 50_000_000}),
             "loadgen": ({"loadgen": 9_000_000}, {"loadgen": 1_000})}  # wrk2 restarted: fewer waits than before
    for tier, (start, end) in waits.items():
        inputs["cpu_start"][tier]["waited_usec"], inputs["cpu_end"][tier]["waited_usec"] = start, end
    waited, reason = collect.service_waited(load_inputs(inputs))
    # 5 s of the JVM's threads' waits and 25 s of MariaDB's over 25 s; the hog's ("other") are not the service's.
    assert waited == {"app": 0.2, "db": 1.0} and reason == ""
    # Two loadgen hosts: the tier's waits are those of the host whose CPU is its figure, the busiest (issue 24: the
    # first host's were read whatever the others did).
    inputs["loadgen_hosts_cpu"] = {
        name: {"start": {**_sample(name, 0, 0.0, [0]), "waited_usec": {"loadgen": 0}},
               "end": {**_sample(name, busy, 25.0, [0]), "waited_usec": {"loadgen": waits}}}
        for name, busy, waits in (("perflab-loadgen", 2_000_000, 10_000_000), ("perflab-loadgen-2", 20_000_000, 5_000_000))}
    waited, _ = collect.service_waited(load_inputs(inputs))
    assert waited == {"app": 0.2, "db": 1.0, "loadgen": 0.2}
    assert collect.loadgen_cpus(load_inputs(inputs))[0].busy_cores == 0.8  # the same host's
    inputs["loadgen_hosts_cpu"] = {}
    inputs["cpu_start"]["db"]["waited_usec"] = inputs["cpu_end"]["db"]["waited_usec"] = {}  # no process-exporter
    del inputs["cpu_start"]["app"]["waited_usec"], inputs["cpu_end"]["app"]["waited_usec"]  # a sample from before
    waited, reason = collect.service_waited(load_inputs(inputs))
    assert waited is None and reason.startswith("no tier's service's run delay was read at the window's bounds")


def test_the_warm_ups_end_reaches_the_audit_from_timeseries_json(tmp_path: Path) -> None:
    """collect hands the audit the warm-up's last 5 s from the timeseries.json it wrote, or why it cannot."""
    from perflab import timeseries
    from perflab.observations import Observations

    without = collect.with_warmup_end(Observations(warmup_s=30.0), tmp_path)
    assert without.warmup_end is None and without.unobserved["warmup_end"] == (
        "timeseries.json was not written (the collection's output says why)")
    warm = timeseries.Phase(phase="warmup", files=(), start_s=-37.0, duration_s=30.0, target_rate=300.0,
                            ok=(300,) * 25 + (52, 44, 40, 38, 27), errors=(0,) * 30, p50_ms=(3.0,) * 30,
                            p99_ms=(8.0,) * 25 + (4100.0, 6900.0, 8300.0, 9200.0, 9100.0))
    measure = timeseries.Phase(phase="measure", files=("vegeta-measure.jsonl.gz",), start_s=0.0, duration_s=2.0,
                               target_rate=300.0, ok=(300, 300), errors=(0, 0), p50_ms=(3.0, 3.0), p99_ms=(7.0, 7.0))
    rundir.write_timeseries(tmp_path, timeseries.TimeSeries(origin_unix_s=1_790_000_000.0, phases=(warm, measure)))
    found = collect.with_warmup_end(Observations(warmup_s=30.0), tmp_path)
    assert found.warmup_end is not None and "warmup_end" not in found.unobserved
    assert (found.warmup_end.seconds, found.warmup_end.answered_per_s, found.warmup_end.p99_ms) == (5, 40.2, 9200.0)


PROFILES = Path(__file__).parent / "fixtures" / "profiles"


def test_a_profiled_window_gets_its_summary_and_one_line_naming_the_top_layers(tmp_path: Path) -> None:
    """PROFILE_APP=cpu: profile_fetch.yml put the app's collapsed stacks in the run's directory."""
    (tmp_path / rundir.PROFILE_COLLAPSED).write_bytes(
        gzip.decompress((PROFILES / "quarkus-plaintext-json-cpu.collapsed.gz").read_bytes()))
    written, line = collect.profile_of(tmp_path)
    summary = rundir.read_profile_summary(tmp_path)
    assert written == summary
    assert summary.samples > 0 and abs(sum(entry.share for entry in summary.layers) - 1) < 1e-9
    top = max(summary.layers, key=lambda entry: entry.samples)
    assert line.startswith(f"the app's profile ({summary.samples} samples, flamegraph.html): ")
    assert f"% {top.title}" in line.split(": ", 1)[1].split(", ")[0]


def test_a_window_without_a_profile_says_why_and_none_asked_says_nothing(tmp_path: Path) -> None:
    assert collect.profile_of(tmp_path) == (None, "") and not (tmp_path / rundir.PROFILE_SUMMARY).exists()
    (tmp_path / rundir.PROFILE_ERROR).write_text(json.dumps({"error": "process 812 is /usr/bin/node, not a JVM"}))
    assert collect.profile_of(tmp_path) == (None, "the app was not profiled: process 812 is /usr/bin/node, not a JVM")


def test_the_jit_of_an_app_that_exports_no_compile_time_is_read_from_its_cpu_profile(tmp_path: Path) -> None:
    """Quarkus and TechEmpower's apps export no jvm_compilation_time_ms_total: with PROFILE_APP=cpu the JIT's
    seconds are its compiler threads' share of the samples times the CPU the app's service used, and jit_quiet
    judges them (a lab run of quarkus after 15 s of warm-up: 21% of 177 samples of 3.8 CPU-s, WARN)."""
    (tmp_path / rundir.PROFILE_COLLAPSED).write_bytes(
        gzip.decompress((PROFILES / "quarkus-plaintext-json-cpu.collapsed.gz").read_bytes()))
    summary, _ = collect.profile_of(tmp_path)
    assert summary is not None
    jit = next(entry for entry in summary.layers if entry.layer == "jit")
    assert jit.samples > 0
    no_metric = {"jit_compile_s": f"the app quarkus {observe.NO_JIT_METRIC}"}
    unseen = Observations(service_cpu={"app": 0.5}, unobserved=no_metric)
    found = collect.with_profiled_jit(unseen, summary, "cpu (ctimer)", 30.0)
    assert found.jit_compile_s == pytest.approx(jit.samples / summary.samples * 0.5 * 30.0, abs=1e-3)
    assert "jit_compile_s" not in found.unobserved
    assert found.jit_counted_by == (f"the app's profile, cpu (ctimer): its JIT compiler threads "
                                    f"{jit.samples / summary.samples:.0%} of its {summary.samples} samples, of 15.0 CPU-s")
    assert Observations.from_json(found.to_json()) == found
    # An app Prometheus does not scrape at all (TechEmpower's: no metrics endpoint) the same.
    unscraped = {"jit_compile_s": f"{observe.NO_APP_METRICS}: Prometheus' app job has no target for tfb-spring"}
    bare = collect.with_profiled_jit(Observations(service_cpu={"app": 0.5}, unobserved=unscraped), summary,
                                     "cpu (perf_events)", 30.0)
    assert bare.jit_compile_s == found.jit_compile_s and bare.jit_counted_by, bare
    # What the rule reads, and says where it came from.
    rule = audit.jit_quiet(replace(STEADY, duration_s=30.0), found, audit.THRESHOLDS)
    assert rule.status == audit.Status.WARN and rule.evidence.endswith(f", counted by {found.jit_counted_by}")
    # The app's own counter stays the figure; its counters reset (its JVM restarted in the window), a profile of
    # something else than CPU, or no CPU of the app's service observed, gives none.
    counted = Observations(service_cpu={"app": 0.5}, jit_compile_s=0.2)
    assert collect.with_profiled_jit(counted, summary, "cpu (ctimer)", 30.0) == counted
    restarted = Observations(service_cpu={"app": 0.5},
                             unobserved={"jit_compile_s": "the app's counters reset in the window"})
    assert collect.with_profiled_jit(restarted, summary, "cpu (ctimer)", 30.0) == restarted
    assert collect.with_profiled_jit(unseen, summary, "alloc (alloc)", 30.0) == unseen
    assert collect.with_profiled_jit(unseen, summary, "wall (wall)", 30.0) == unseen
    no_cpu = Observations(unobserved=no_metric)
    assert collect.with_profiled_jit(no_cpu, summary, "cpu (ctimer)", 30.0) == no_cpu
    assert collect.with_profiled_jit(unseen, None, "cpu (ctimer)", 30.0) == unseen
