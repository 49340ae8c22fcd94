"""A run that proves an app serves a workload: a short wrk2 run (TOOL=auto: wrk2, built from CI's
mirror; vegeta where a test asks, as the PostgreSQL runs do), verified against the scenario's contract first, complete, every request answered without an
error at the offered rate. Shared by the local lab's bench tests (tests/bench_runs) and the SSH
lab's matrix (tests/matrix_lab): together they run every app of the project on every scenario."""
from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import yaml

from labkit import RESULTS, ROOT, make, read_json, run_dirs, tail
from perflab import wrk2

# These runs prove that every app serves every workload without an error at the offered rate. A cold
# JVM on a busy 2-core machine fell to 94% of it once (p90 2.2 s while Hibernate Reactive and the JIT
# warmed up), so every run has a 5 s warm-up. wrk2's calibration (11 s at the rate, not recorded)
# is no substitute: wrk2 counts the socket errors of the whole invocation, and a cold Quarkus on
# books-orders answered its first requests in 0.9 s on average there, 18-25 of them after wrk2's own
# 2 s timeout (the lab gives both tools loadgen_timeout_s now), errors of a run whose recorded window had none.
RATE, DURATION, WARMUP = 50, "10s", "5s"
# The project's own apps: each exports the lab's http_server_requests histogram.
OWN_APPS = tuple(sorted(p.parent.name for p in (ROOT / "apps").glob("*/perflab-app.yml")))
LOADGEN_DEFAULTS = yaml.safe_load((ROOT / "roles/loadgen/defaults/main.yml").read_text())
# The sha256 the loadgen role pins for wrk2's source archive.
PINNED_WRK2_SHA256 = LOADGEN_DEFAULTS["loadgen_wrk2_archive_sha256"]


def assert_complete_without_errors(app: str, scenario: str, name: str, rate: int = RATE, duration: str = DURATION,
                                   warmup: str = WARMUP, tool: str = "wrk2") -> None:
    """results/NAME: verified, complete, every request answered without an error at the offered rate, by TOOL."""
    run_dir = RESULTS / name
    for file in ("verify.json", "context.json", "observations.json", "result.json", "audit.json"):
        assert (run_dir / file).is_file(), f"{run_dir}/{file} is missing"
    result = read_json(run_dir / "result.json")
    assert result["tool"] == tool and result["target_rate"] == rate, (result["tool"], result["target_rate"])
    if tool == "wrk2":
        _assert_wrk2_ran(run_dir, result)
    else:
        assert (run_dir / "vegeta-measure.jsonl.gz").is_file() and (run_dir / "vegeta-measure.txt").is_file(), run_dir
    assert read_json(run_dir / "status.json")["status"] == "complete"
    assert read_json(run_dir / "verify.json")["status"] == "ok", read_json(run_dir / "verify.json")
    # The timeout both tools count by (roles/loadgen/defaults/main.yml loadgen_timeout_s), as the run had it.
    assert result["scenario"]["parameters"]["timeout_s"] == str(LOADGEN_DEFAULTS["loadgen_timeout_s"])
    assert result["requests"] >= rate * int(duration.rstrip("s")) * 0.9, (app, result["requests"])
    assert not any(result["errors"].values()), (app, result["errors"])
    assert result["scenario"]["name"] == scenario and result["scenario"]["warmup_s"] == float(warmup.rstrip("s"))
    assert result["app"]["name"] == app and result["app"]["start_to_first_request_ms"] > 0
    assert {h["tier"] for h in result["hosts"]} == {"loadgen", "db", "app"}
    assert result["started_at"] < result["ended_at"]
    audit = read_json(run_dir / "audit.json")
    rules = {rule["rule"]: rule["status"] for rule in audit["rules"]}
    assert rules["no_errors"] == "VALID" and rules["achieved_rate"] == "VALID", (app, audit)
    if app in OWN_APPS:
        # The app's own latency from its histogram in Prometheus (the same buckets in every app): its p99
        # on the scenario's routes, within a bucket of the figure, over the requests the generator sent.
        observations = read_json(run_dir / "observations.json")
        server = observations["server_latency"]
        assert server, (app, observations["unobserved"].get("server_latency"))
        p99 = server["p99"]
        assert p99["bucket_low_ms"] <= p99["value_ms"] <= (p99["bucket_high_ms"] or float("inf")), (app, server)
        assert server["requests"] >= result["requests"] * 0.9, (app, server["requests"], result["requests"])


def _assert_wrk2_ran(run_dir: Path, result: dict[str, Any]) -> None:
    # wrk2's text and percentile table, one each (wrk2-measure.<host>.txt where several loadgen hosts sent).
    texts, tables = sorted(run_dir.glob("wrk2-measure*.txt")), sorted(run_dir.glob("wrk2-measure-percentiles*.json"))
    assert texts and len(texts) == len(tables), f"{run_dir}: wrk2's output {texts} and tables {tables}"
    if os.environ.get("PERFLAB_WRK2_ARCHIVE"):
        # CI's wrk2 comes from its mirror: built on the loadgen host after the archive's sha256 was checked there.
        assert (f"from archive sha256 {PINNED_WRK2_SHA256} (verified on this host)"
                in result["versions"]["load_generator"]), result["versions"]
    # wrk2 ran its calibration on top of DURATION, so the window it recorded is the measured phase.
    calibration_ms = wrk2.calibration_ms(result["scenario"]["connections"], result["scenario"]["threads"])
    assert result["scenario"]["parameters"]["wrk2_calibration_ms"] == str(calibration_ms)
    assert result["scenario"]["parameters"]["recorded_window"].endswith(result["ended_at"])


def compare(scenario: str, apps: tuple[str, ...], *variables: str, tool: str = "wrk2") -> None:
    """`make compare SCENARIO=...` with TOOL (auto's wrk2, else TOOL=tool): one verified, complete run per app, in
    APPS' order, and its table."""
    before = run_dirs()
    done = make("compare", f"SCENARIO={scenario}", f"RATE={RATE}", f"DURATION={DURATION}", f"WARMUP={WARMUP}",
                *([] if tool == "wrk2" else [f"TOOL={tool}"]), *variables, timeout=2400)
    assert done.returncode == 0, tail(done.stdout, 80)
    created = sorted(run_dirs() - before)
    assert [name.split("-", 1)[1] for name in created] == [f"{app}-{scenario}" for app in apps], created
    for app, name in zip(apps, created):
        assert_complete_without_errors(app, scenario, name, tool=tool)
        result = read_json(RESULTS / name / "result.json")
        # compare's table: this app's row names its run, complete, the target and the achieved rate.
        row = re.search(rf"^{re.escape(app)}\s+{re.escape(name)}\s+complete\s+{RATE}\s+(?P<achieved>[\d.]+)\s+{tool}\s",
                        done.stdout, re.MULTILINE)
        assert row and abs(float(row["achieved"]) - result["achieved_rate"]) < 0.1, tail(done.stdout, 20)
