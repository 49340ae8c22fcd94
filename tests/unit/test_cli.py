"""The perflab command, run as a subprocess, against expected output and exit codes."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from perflab import wrk2
from perflab.cli import MODULE_COMMANDS
from perflab.model import AppSettings, RunContext, RunResult, ScenarioRun
from perflab.observations import DbSessions, Observations, TierCpu

from .helpers import VEGETA_FIXTURES, WRK2_FIXTURES

PERFLAB_SCRIPT = Path(sys.executable).with_name("perflab")


def perflab(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "perflab", *map(str, args)], capture_output=True, text=True, timeout=60
    )


def test_installed_entry_point_runs() -> None:
    done = subprocess.run([PERFLAB_SCRIPT, "--help"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0
    assert "exit codes: 0 parsed or VALID, 1 INVALID, 2 usage error, 3 WARN, 4 bad input" in done.stdout


def test_parse_wrk2_prints_a_summary() -> None:
    done = perflab("parse-wrk2", WRK2_FIXTURES / "wrk2-overloaded-uncorrected.txt", "--target-rate", "600")
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout == (
        "wrk2-overloaded-uncorrected.txt: wrk2, 4460 requests in 20.01 s\n"
        "rate: 222.93 req/s achieved of 600 asked (37.2%)\n"
        "latency (corrected, ms): p50 9450  p75 11030  p90 11930  p99 12480  p99.9 12570  p99.99 12570  "
        "p99.999 12570  p100 12570  mean 9466.62  max 12558.3\n"
        "latency (uncorrected, ms): p50 222.46  p75 223.36  p90 225.02  p99 227.58  p99.9 227.97  "
        "p99.99 227.97  p99.999 227.97  p100 227.97  mean 222.592  max 227.84\n"
        "recorded: 2218 of 4460 requests (wrk2 records none during calibration)\n"
        "errors: none\n"
    )


def test_parse_wrk2_with_its_percentile_table() -> None:
    done = perflab("parse-wrk2", WRK2_FIXTURES / "wrk2-steady-1000rps.txt", "--target-rate", "1000",
                   "--percentiles", WRK2_FIXTURES / "wrk2-steady-1000rps-percentiles.json")
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.splitlines()[:3] == [
        "wrk2-steady-1000rps.txt: wrk2, 24994 requests in 25 s",
        "rate: 999.933 req/s achieved of 1000 asked (100.0%)",
        "achieved over the 14.975 s recorded after calibration (the text's Requests/sec, over the whole "
        "invocation: 999.68)",
    ]
    parsed = perflab("parse-wrk2", WRK2_FIXTURES / "wrk2-steady-1000rps.txt", "--target-rate", "1000",
                     "--percentiles", WRK2_FIXTURES / "wrk2-steady-1000rps-percentiles.json", "--json")
    assert len(RunResult.from_json(parsed.stdout).latency_corrected.spectrum) == 151


STEADY_HOST = (WRK2_FIXTURES / "wrk2-steady-1000rps.txt", WRK2_FIXTURES / "wrk2-steady-1000rps-percentiles.json")
SLOW_HOST = (WRK2_FIXTURES / "wrk2-slow-20ms-200rps.txt", WRK2_FIXTURES / "wrk2-slow-20ms-200rps-percentiles.json")


def test_parse_wrk2_merges_one_file_per_host() -> None:
    files, tables = (STEADY_HOST[0], SLOW_HOST[0]), (STEADY_HOST[1], SLOW_HOST[1])
    done = perflab("parse-wrk2", *files, "--percentiles", *tables, "--target-rate", "1200", "--json")
    assert (done.returncode, done.stderr) == (0, "")
    merged = RunResult.from_json(done.stdout)
    hosts = [(wrk2.parse(f.read_text()), wrk2.parse_percentiles(t.read_text())) for f, t in zip(files, tables)]
    assert merged == wrk2.hosts_run_result(hosts, target_rate=1200)
    assert (merged.requests, merged.threads, merged.connections) == (29996, 4, 20)
    assert merged.achieved_rate == pytest.approx(999.933 + 200.2, abs=0.001)
    text = perflab("parse-wrk2", *files, "--percentiles", *tables, "--target-rate", "1200")
    assert text.stdout.splitlines()[:3] == [
        "wrk2-steady-1000rps.txt + wrk2-slow-20ms-200rps.txt: wrk2, 29996 requests in 25.02 s",
        "rate: 1200.13 req/s achieved of 1200 asked (100.0%)",
        "achieved: 999.933 + 200.2 req/s, each host over its recorded window after calibration (14.975, 14.975 s; "
        "the texts' Requests/sec, over the whole invocations: 999.68 + 199.91)",
    ]
    assert "recorded: 17972 of 29996 requests (wrk2 records none during calibration)" in text.stdout.splitlines()


def test_parse_wrk2_of_one_file_is_the_single_host_result() -> None:
    done = perflab("parse-wrk2", STEADY_HOST[0], "--percentiles", STEADY_HOST[1], "--target-rate", "1000", "--json")
    text, table = wrk2.parse(STEADY_HOST[0].read_text()), wrk2.parse_percentiles(STEADY_HOST[1].read_text())
    assert done.stdout == wrk2.to_run_result(text, target_rate=1000.0, table=table).to_json()


@pytest.mark.parametrize(("args", "message"), [
    ((STEADY_HOST[0], SLOW_HOST[0]),
     "2 files need --percentiles, one table per file in the files' order: the hosts' histograms merge through "
     "their tables"),
    ((STEADY_HOST[0], SLOW_HOST[0], "--percentiles", STEADY_HOST[1]),
     "--percentiles gives 1 tables for 2 files: give one per file, in the files' order"),
    ((STEADY_HOST[0], "--percentiles", STEADY_HOST[1], SLOW_HOST[1]),
     "--percentiles gives 2 tables for 1 files: give one per file, in the files' order"),
], ids=["no-tables", "too-few-tables", "too-many-tables"])
def test_wrk2_files_without_one_table_each_are_a_usage_error(args: tuple[Path | str, ...], message: str) -> None:
    done = perflab("parse-wrk2", *args, "--target-rate", "1200")
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == f"perflab parse-wrk2: error: {message}\n"


def test_a_hosts_table_from_another_run_is_bad_input() -> None:
    done = perflab("parse-wrk2", STEADY_HOST[0], SLOW_HOST[0], "--percentiles", STEADY_HOST[1], STEADY_HOST[1],
                   "--target-rate", "1200")
    assert (done.returncode, done.stdout) == (4, "")
    assert done.stderr == (f"perflab: error: {STEADY_HOST[1]}: not a usable wrk2 percentile table: the percentile "
                           "table is not from this run: it counts 24994 requests and 14974 recorded, the text 5002 "
                           "and 2998\n")


def test_parse_vegeta_prints_a_summary() -> None:
    done = perflab("parse-vegeta", VEGETA_FIXTURES / "vegeta-freeze-1s-200rps.jsonl.gz", "--target-rate", "200",
                   "--duration-s", "4")
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout == (
        "vegeta-freeze-1s-200rps.jsonl.gz: vegeta, 800 requests in 4 s\n"
        "rate: 200 req/s achieved of 200 asked (100.0%)\n"
        "latency (corrected, ms): p50 2.13624  p75 69.4013  p90 630.843  p99 965.382  p99.9 994.891  "
        "p99.99 1001.75  p100 1001.75  mean 137.102  max 1001.75\n"
        "latency (uncorrected, ms): p50 1.04873  p75 1.66578  p90 2.43696  p99 9.78588  p99.9 993.67  "
        "p99.99 1000.59  p100 1000.59  mean 6.36352  max 1000.59\n"
        "errors: none\n"
    )


def test_parse_vegeta_merges_one_file_per_host() -> None:
    files = [VEGETA_FIXTURES / "vegeta-steady-200rps.jsonl.gz", VEGETA_FIXTURES / "vegeta-errors-500-200rps.jsonl.gz"]
    done = perflab("parse-vegeta", *files, "--target-rate", "400", "--json")
    assert (done.returncode, done.stderr) == (0, "")
    merged = RunResult.from_json(done.stdout)
    assert (merged.tool, merged.requests, merged.target_rate, merged.achieved_rate) == ("vegeta", 1200, 400, 380)
    assert merged.errors.by_kind() == {"http_status": 60}
    same = perflab("parse-vegeta", *files, "--target-rate", "400", "--host-rates", "200,200", "--json")
    assert same.stdout == done.stdout
    text = perflab("parse-vegeta", *files, "--target-rate", "400")
    assert text.stdout.splitlines()[0] == (
        "vegeta-steady-200rps.jsonl.gz + vegeta-errors-500-200rps.jsonl.gz: vegeta, 1200 requests in 3 s")


@pytest.mark.parametrize(("host_rates", "message"), [
    ("400", "--host-rates gives 1 rates for 2 files: give one per file"),
    ("200,100", "--host-rates add up to 300, not the target rate 400"),
    ("200,x", "argument --host-rates: not a number: 'x'"),
    ("200,-200", "argument --host-rates: must be a positive number of requests per second, not -200"),
])
def test_bad_host_rates_are_a_usage_error(host_rates: str, message: str) -> None:
    files = [VEGETA_FIXTURES / "vegeta-steady-200rps.jsonl.gz", VEGETA_FIXTURES / "vegeta-errors-500-200rps.jsonl.gz"]
    done = perflab("parse-vegeta", *files, "--target-rate", "400", f"--host-rates={host_rates}")
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.splitlines()[-1] == f"perflab parse-vegeta: error: {message}"


@pytest.mark.parametrize("args", [("parse-k6",), ("parse-k6", "summary.json", "--target-rate", "20", "--json")])
def test_parse_k6_is_refused_with_what_replaces_it(args: tuple[str, ...]) -> None:
    done = perflab(*args)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == ("perflab: k6 is no longer supported (AGPL, retired): use wrk2 (perflab parse-wrk2) "
                           "or vegeta (perflab parse-vegeta)\n")
    assert "parse-k6" not in perflab("--help").stdout


@pytest.mark.parametrize(
    ("fixture", "rate", "exit_code", "verdict"),
    [
        ("wrk2-steady-2000rps.txt", "2000", 0, "VALID"),
        ("wrk2-errors-non2xx.txt", "1000", 1, "INVALID"),
        ("wrk2-server-killed-midrun.txt", "1000", 1, "INVALID"),
        ("wrk2-overloaded-600rps-capacity-250.txt", "600", 1, "INVALID"),
        ("vegeta-steady-200rps.jsonl.gz", "200", 0, "VALID"),
        ("vegeta-errors-500-200rps.jsonl.gz", "200", 1, "INVALID"),
        ("vegeta-behind-1worker-100rps.jsonl.gz", "100", 1, "INVALID"),
    ],
)
def test_parse_then_judge(tmp_path: Path, fixture: str, rate: str, exit_code: int, verdict: str) -> None:
    if fixture.startswith("vegeta"):
        parsed = perflab("parse-vegeta", VEGETA_FIXTURES / fixture, "--target-rate", rate, "--duration-s", "3",
                         "--json")
    else:
        parsed = perflab("parse-wrk2", WRK2_FIXTURES / fixture, "--target-rate", rate, "--json")
    assert parsed.returncode == 0
    result = tmp_path / "result.json"
    result.write_text(parsed.stdout)
    judged = perflab("judge", result)
    assert judged.returncode == exit_code
    assert judged.stdout.splitlines()[0] == f"verdict: {verdict}"


@pytest.mark.parametrize(("fixture", "exit_code", "verdict"), [("wrk2-steady-2000rps.txt", 0, "VALID"),
                                                                ("wrk2-errors-non2xx.txt", 1, "INVALID")])
def test_a_runs_directory_gives_its_recorded_verdict_and_make_bench_its_exit_status(
        tmp_path: Path, fixture: str, exit_code: int, verdict: str) -> None:
    """perflab judge RUN_DIR: the verdict perflab collect recorded (audit.json), with the judge's exit status, which
    make bench reads to fail a run judged INVALID (the Makefile's bench_once)."""
    parsed = perflab("parse-wrk2", WRK2_FIXTURES / fixture, "--target-rate", "1000", "--json")
    (tmp_path / "result.json").write_text(parsed.stdout)
    recorded = perflab("judge", tmp_path / "result.json", "--json")
    (tmp_path / "audit.json").write_text(recorded.stdout)
    (tmp_path / "result.json").unlink()  # the recorded verdict, not a new one from the result
    judged = perflab("judge", tmp_path)
    assert (judged.returncode, judged.stderr) == (exit_code, "")
    assert judged.stdout.splitlines()[0] == f"verdict: {verdict}"
    assert json.loads(perflab("judge", tmp_path, "--json").stdout) == json.loads(recorded.stdout)
    refused = perflab("judge", tmp_path, "--observations", tmp_path / "observations.json")
    assert (refused.returncode, refused.stderr) == (4, f"perflab: error: {tmp_path} is a run's directory: its verdict "
                                                       "is recorded, --observations is for a result file\n")
    (tmp_path / "audit.json").unlink()
    missing = perflab("judge", tmp_path)
    assert missing.returncode == 4 and missing.stderr.startswith(f"perflab: error: {tmp_path / 'audit.json'}: ")
    assert len(missing.stderr.splitlines()) == 1, missing.stderr


def test_audit_prints_the_reasons_first(tmp_path: Path) -> None:
    result = tmp_path / "killed.json"
    parsed = perflab("parse-wrk2", WRK2_FIXTURES / "wrk2-server-killed-midrun.txt", "--target-rate", "1000", "--json")
    result.write_text(parsed.stdout)
    done = perflab("judge", result)
    assert done.returncode == 1
    assert done.stdout == (
        "verdict: INVALID\n"
        "  INVALID       no_errors: 80 errors in 11984 requests (timeout 80)\n"
        "  INVALID       achieved_rate: achieved 597.65 req/s of 1000 asked (59.8%; minimum 95%)\n"
        "  VALID         run_complete: the run completed\n"
        "  NOT_EVALUATED app_not_restarted: not evaluated: no Prometheus data on the app's JVM (process-exporter's "
        "group app-java)\n"
        "  NOT_EVALUATED db_up: not evaluated: no Prometheus data on the DB's availability (mysqld_exporter's "
        "mysql_up)\n"
        "  NOT_EVALUATED slo_p99: not evaluated: no p99 SLO is known for the run (slo_p99_ms in the scenario, or "
        "SLO_P99_MS=)\n"
        "  NOT_EVALUATED queue_outside_the_app: not evaluated: no Prometheus data on the app's latency histogram "
        "(http_server_requests_seconds)\n"
        "  NOT_EVALUATED loadgen_cpu: not evaluated: no Prometheus data\n"
        "  NOT_EVALUATED app_is_bottleneck: not evaluated: no Prometheus data for the app's and the DB's CPU and disk\n"
        "  NOT_EVALUATED tiers_not_colocated: not evaluated: no placement from the inventory\n"
        "  NOT_EVALUATED warmed_up: not evaluated: the run recorded no warm-up\n"
        "  NOT_EVALUATED steady_mix: not evaluated: no Prometheus data on the read/write mix\n"
        "  NOT_EVALUATED same_db_work: not evaluated: no Prometheus data on DB sessions and statements\n"
        "  NOT_EVALUATED jit_quiet: not evaluated: no Prometheus data on JIT compilation\n"
        "  NOT_EVALUATED load_on_time: not evaluated: the run recorded no start of the load against the window\n"
        "app cost: CPU per 1,000 requests not evaluated: no CPU figure of the app; max RSS not evaluated: "
        "no Prometheus data on the app's memory\n"
    )


def test_audit_judges_the_slo_and_states_the_apps_cost(tmp_path: Path) -> None:
    """The run as the bench audits it: its context carries the scenario's SLO, its observations
    the app's CPU (busy cores over their window) and max RSS."""
    context = tmp_path / "context.json"
    context.write_text(RunContext(scenario=ScenarioRun(name="greeting", rate=1000, duration_s=25, warmup_s=30,
                                                       slo_p99_ms=25.0)).to_json())
    parsed = perflab("parse-wrk2", WRK2_FIXTURES / "wrk2-steady-1000rps.txt", "--target-rate", "1000",
                     "--percentiles", WRK2_FIXTURES / "wrk2-steady-1000rps-percentiles.json", "--context", context,
                     "--json")
    result = tmp_path / "result.json"
    result.write_text(parsed.stdout)
    observations = tmp_path / "observations.json"
    observations.write_text(Observations(app_cpu=TierCpu(busy_cores=0.25, allotted_cores=1, window_s=40.0),
                                         app_max_rss_bytes=200 * 1024 * 1024).to_json())
    done = perflab("judge", result, "--observations", observations)
    assert done.returncode == 3  # WARN
    lines = done.stdout.splitlines()
    assert lines[:2] == [
        "verdict: WARN",
        "  WARN          slo_p99: corrected p99 28.82 ms is over the p99 SLO of 25 ms (115%; maximum 100%): "
        "latency beyond the SLO means the rate asked is not sustained",
    ]
    assert lines[-1] == ("app cost: 0.400 CPU-s per 1,000 requests (10.00 CPU-s, 0.25 cores over 40.0 s, "
                         "for 24994 requests); max RSS 200.0 MiB")
    document = json.loads(perflab("judge", result, "--observations", observations, "--json").stdout)
    assert document["app_cost"] == lines[-1].removeprefix("app cost: ")
    assert document["app_cpu_s_per_1000_requests"] == pytest.approx(10 * 1000 / 24994)
    assert document["app_max_rss_bytes"] == 200 * 1024 * 1024
    assert {"rule": "slo_p99", "status": "WARN", "evidence": lines[1].split("slo_p99: ", 1)[1]} in document["rules"]


def test_audit_with_observations_warns_and_fails(tmp_path: Path) -> None:
    parsed = perflab("parse-wrk2", WRK2_FIXTURES / "wrk2-steady-2000rps.txt", "--target-rate", "2000", "--json")
    result = tmp_path / "steady.json"
    result.write_text(parsed.stdout)
    warn = tmp_path / "warn.json"
    warn.write_text(Observations(source="test", jit_compile_s=2.0).to_json())
    done = perflab("judge", result, "--observations", warn)
    assert (done.returncode, done.stdout.splitlines()[:2]) == (
        3,
        ["verdict: WARN", "  WARN          jit_quiet: JIT compiled for 2 s in the 20 s window (10.00%; maximum 1%)"],
    )
    invalid = tmp_path / "invalid.json"
    invalid.write_text(
        Observations(loadgen_cpu=TierCpu(busy_cores=0.5, allotted_cores=2), db_sessions=DbSessions(10, 0)).to_json()
    )
    done = perflab("judge", result, "--observations", invalid, "--json")
    assert done.returncode == 1
    document = json.loads(done.stdout)
    assert document["status"] == "INVALID"
    by_rule = {r["rule"]: r for r in document["rules"]}
    assert by_rule["same_db_work"] == {
        "rule": "same_db_work",
        "status": "INVALID",
        "evidence": "not the same work: 10 of 10 DB sessions without TLS",
    }
    assert by_rule["loadgen_cpu"]["status"] == "VALID"


def test_bad_input_gets_one_line_and_no_traceback(tmp_path: Path) -> None:
    truncated = tmp_path / "truncated.txt"
    steady = (WRK2_FIXTURES / "wrk2-steady-2000rps.txt").read_text()
    truncated.write_text(steady[: len(steady) // 2])
    binary = tmp_path / "binary.txt"
    binary.write_bytes(b"\xff\xfe\x00garbage")
    stale = tmp_path / "stale.json"
    stale.write_text('{"schema_version": 0}')
    cut_gzip = tmp_path / "cut.jsonl.gz"
    cut_gzip.write_bytes((VEGETA_FIXTURES / "vegeta-steady-200rps.jsonl.gz").read_bytes()[:2000])
    cases = [
        (("parse-wrk2", tmp_path / "missing.txt", "--target-rate", "10"), f"{tmp_path}/missing.txt: no such file"),
        (("parse-wrk2", tmp_path, "--target-rate", "10"), f"{tmp_path}: is a directory, not a file"),
        (("parse-wrk2", binary, "--target-rate", "10"), f"{binary}: not text (binary or not UTF-8)"),
        (
            ("parse-wrk2", truncated, "--target-rate", "10"),
            f"{truncated}: not complete wrk2 --latency output: the Recorded Latency distribution is cut off "
            "at '1.942     0.989062': the output is truncated",
        ),
        (
            ("parse-vegeta", cut_gzip, "--target-rate", "200"),
            f"{cut_gzip}: not usable vegeta results: the gzip stream ends early: the file is truncated",
        ),
        (
            ("parse-vegeta", VEGETA_FIXTURES / "vegeta-steady-200rps.jsonl.gz", "--target-rate", "100"),
            f"{VEGETA_FIXTURES / 'vegeta-steady-200rps.jsonl.gz'}: request 0 would have been sent 3 s after the "
            "attack's start, as estimated from 100 requests/s: the attack ran at another rate (is --target-rate, "
            "or this host's share in --host-rates, right?)",
        ),
        (
            ("parse-wrk2", WRK2_FIXTURES / "wrk2-steady-1000rps.txt", "--target-rate", "1000",
             "--percentiles", WRK2_FIXTURES / "wrk2-slow-20ms-200rps-percentiles.json"),
            f"{WRK2_FIXTURES / 'wrk2-slow-20ms-200rps-percentiles.json'}: not a usable wrk2 percentile table: the "
            "percentile table is not from this run: it counts 5002 requests and 2998 recorded, the text 24994 "
            "and 14974",
        ),
        (
            ("judge", stale),
            f"{stale}: not a perflab result: schema_version is 0; this perflab reads 1",
        ),
        (
            ("judge", stale, "--observations", tmp_path / "none.json"),
            f"{stale}: not a perflab result: schema_version is 0; this perflab reads 1",
        ),
    ]
    for args, message in cases:
        done = perflab(*args)
        assert (done.returncode, done.stdout, done.stderr) == (4, "", f"perflab: error: {message}\n"), args


@pytest.mark.parametrize("rate", ["0", "-3", "abc", "nan"])
def test_a_bad_target_rate_is_a_usage_error(rate: str) -> None:
    done = perflab("parse-wrk2", WRK2_FIXTURES / "wrk2-steady-2000rps.txt", "--target-rate", rate)
    assert done.returncode == 2
    assert "argument --target-rate" in done.stderr
    assert "Traceback" not in done.stderr


def test_thresholds_are_listed_with_reasons() -> None:
    done = perflab("thresholds")
    assert done.returncode == 0
    assert "max_loadgen_cpu_busy = 0.8\n    Hyperfoil fails a run" in done.stdout


def test_context_goes_into_the_result_json(tmp_path: Path) -> None:
    context = tmp_path / "context.json"
    context.write_text(
        RunContext(
            started_at="2026-11-21T10:00:00Z",
            ended_at="2026-11-21T10:00:20Z",
            scenario=ScenarioRun(name="greeting", rate=2000, duration_s=20, warmup_s=30, connections=50, threads=2),
            app=AppSettings(name="quarkus", jvm_options=("-Xmx128m",), cpus="0-3"),
        ).to_json()
    )
    done = perflab(
        "parse-wrk2", WRK2_FIXTURES / "wrk2-steady-2000rps.txt", "--target-rate", "2000", "--context", context, "--json"
    )
    assert done.returncode == 0
    result = RunResult.from_json(done.stdout)
    assert (result.started_at, result.achieved_rate) == ("2026-11-21T10:00:00Z", 1995.12)
    assert result.app is not None and result.app.jvm_options == ("-Xmx128m",)
    assert result.scenario is not None and result.scenario.warmup_s == 30


def test_a_bad_context_is_bad_input(tmp_path: Path) -> None:
    context = tmp_path / "context.json"
    context.write_text('{"schema_version": 1, "started_at": "10 o\'clock"}')
    done = perflab("parse-vegeta", VEGETA_FIXTURES / "vegeta-steady-200rps.jsonl.gz", "--target-rate", "200",
                   "--context", context)
    assert (done.returncode, done.stdout) == (4, "")
    assert done.stderr == (
        f"perflab: error: {context}: not a perflab run context: RunContext: started_at is not an ISO 8601 time: "
        "\"10 o'clock\"\n"
    )


def test_the_old_name_audit_points_at_judge(tmp_path: Path) -> None:
    done = perflab("audit", tmp_path / "result.json")
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr == ("perflab: `perflab audit` is now `perflab judge` (same arguments: RESULT.json "
                           "[--observations OBS.json] [--json]); the verdict it writes is still audit.json\n")


def test_a_bad_repeat_of_make_bench_is_refused_in_one_line_naming_make_bench() -> None:
    """Issue 24: `make bench REPEAT=abc` printed four lines of perflab compare's usage, then named
    "perflab compare". The Makefile says which command was run (PERFLAB_AS)."""
    done = subprocess.run([sys.executable, "-m", "perflab", "compare", "--scenario", "zipcodes", "--repeat", "abc",
                           "--apps", "quarkus"], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PERFLAB_AS": "make bench"})
    assert (done.returncode, done.stdout, done.stderr) == (
        2, "", "make bench: REPEAT must be a whole number of runs from 1 to 20, got 'abc'\n")
    alone = perflab("compare", "--repeat", "0")
    assert alone.returncode == 2 and alone.stderr.startswith("usage: perflab compare")
    assert alone.stderr.endswith("perflab compare: error: argument --repeat: REPEAT must be a whole number of runs "
                                 "from 1 to 20, got '0'\n")



def test_a_command_imports_its_own_module_and_help_lists_every_command() -> None:
    # A bench run calls perflab about ten times; `perflab app show` imported the whole package (0.64 s) before
    # cli.MODULE_COMMANDS, collect's observer and Prometheus client included.
    probe = ("import sys; from perflab import cli; code = cli.main(['app', 'show', 'quarkus']); "
             "print(' '.join(sorted(m for m in sys.modules if m.startswith('perflab.'))), file=sys.stderr); sys.exit(code)")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and "quarkus" in done.stdout, done.stderr
    imported = set(done.stderr.split())
    assert "perflab.app_cli" in imported, imported
    assert not imported & {"perflab.collect", "perflab.observe", "perflab.prometheus", "perflab.report",
                           "perflab.compare", "perflab.verify"}, imported
    listed = perflab("--help")
    assert listed.returncode == 0 and all(name in listed.stdout for name in MODULE_COMMANDS), listed.stdout
