"""Every app under test runs in the lab from its manifest: a short wrk2 run (TOOL=auto: wrk2, built
from CI's mirror) is verified against the scenario's contract first (verify.json), then completes
with zero errors and a parsed result. zipcodes, the DB read scenario, runs with every app of the
project: Quarkus in the session's short run (tests/conftest.py), the others through `make compare`
(its table checked on the way: one row per app, each naming its run, complete, with the achieved
rate); plaintext-json runs our Quarkus beside TechEmpower's own (a foreign app built from their
checkout); books-orders (the write transaction) runs twice as one REPEAT=2 group; hello-latency
runs in field report 2's experiment, on the SSH lab (tests/ssh_lab), as do vegeta's runs. Every
app's answers to every scenario are the contract suite's subject (tests/contract), their wrk2
scripts run under luajit (tests/unit); here, each run is the lab's, whole."""
from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
import yaml

from bench_helpers import APPS, RESULTS, ROOT, changed_counts, on_host, read_json, run_dirs, run_make, tail
from labkit import SHORT_RUN

# These runs prove that every app serves every workload without an error at the offered rate. A cold
# JVM on a busy 2-core machine fell to 94% of it once (p90 2.2 s while Hibernate Reactive and the JIT
# warmed up), so every run has a 5 s warm-up. wrk2's calibration (11 s at the rate, not recorded)
# is no substitute: wrk2 counts the socket errors of the whole invocation, and a cold Quarkus on
# books-orders answered its first requests in 0.9 s on average there, 18-25 of them after wrk2's
# 2 s timeout, errors of a run whose recorded window had none.
RATE, DURATION, WARMUP = 50, "10s", "5s"
# The sha256 the loadgen role pins for wrk2's source archive.
PINNED_WRK2_SHA256 = yaml.safe_load((ROOT / "roles/loadgen/defaults/main.yml").read_text())["loadgen_wrk2_archive_sha256"]


# TechEmpower's FrameworkBenchmarks checkout (their frameworks/Java/quarkus is what tfb-quarkus builds):
# CI's copy beside the clone, or PERFLAB_TFB_DIR.
TFB_DIR = Path(os.environ.get("PERFLAB_TFB_DIR") or ROOT.parent / "shared" / "peers" / "tfb-57d92fb")


def assert_complete_without_errors(app: str, scenario: str, name: str, rate: int = RATE, duration: str = DURATION,
                                   warmup: str = WARMUP) -> None:
    """results/NAME: verified, complete, every request answered without an error at the offered rate."""
    run_dir = RESULTS / name
    for file in ("verify.json", "wrk2-measure.txt", "wrk2-measure-percentiles.json", "context.json",
                 "observations.json", "result.json", "audit.json"):
        assert (run_dir / file).is_file(), f"{run_dir}/{file} is missing"
    assert read_json(run_dir / "status.json")["status"] == "complete"
    assert read_json(run_dir / "verify.json")["status"] == "ok", read_json(run_dir / "verify.json")
    result = read_json(run_dir / "result.json")
    assert result["tool"] == "wrk2" and result["target_rate"] == rate
    if os.environ.get("PERFLAB_WRK2_ARCHIVE"):
        # CI's wrk2 comes from its mirror: built on the loadgen host after the archive's sha256 was checked there.
        assert (f"from archive sha256 {PINNED_WRK2_SHA256} (verified on this host)"
                in result["versions"]["load_generator"]), result["versions"]
    # wrk2 ran its calibration on top of DURATION, so the window it recorded is the measured phase.
    calibration_ms = 10000 + 5 * (result["scenario"]["connections"] // result["scenario"]["threads"])
    assert result["scenario"]["parameters"]["wrk2_calibration_ms"] == str(calibration_ms)
    assert result["scenario"]["parameters"]["recorded_window"].endswith(result["ended_at"])
    assert result["requests"] >= rate * int(duration.rstrip("s")) * 0.9, (app, result["requests"])
    assert not any(result["errors"].values()), (app, result["errors"])
    assert result["scenario"]["name"] == scenario and result["scenario"]["warmup_s"] == float(warmup.rstrip("s"))
    assert result["app"]["name"] == app and result["app"]["start_to_first_request_ms"] > 0
    assert {h["tier"] for h in result["hosts"]} == {"loadgen", "db", "app"}
    assert result["started_at"] < result["ended_at"]
    audit = read_json(run_dir / "audit.json")
    rules = {rule["rule"]: rule["status"] for rule in audit["rules"]}
    assert rules["no_errors"] == "VALID" and rules["achieved_rate"] == "VALID", (app, audit)


def compare(scenario: str, apps: tuple[str, ...], *variables: str) -> None:
    """`make compare SCENARIO=...`: one verified, complete run per app, in APPS' order, and its table."""
    before = run_dirs()
    done = run_make("compare", f"SCENARIO={scenario}", f"RATE={RATE}", f"DURATION={DURATION}", f"WARMUP={WARMUP}",
                    *variables, timeout=2400)
    assert done.returncode == 0, tail(done.stdout, 80)
    created = sorted(run_dirs() - before)
    assert [name.split("-", 1)[1] for name in created] == [f"{app}-{scenario}" for app in apps], created
    for app, name in zip(apps, created):
        assert_complete_without_errors(app, scenario, name)
        result = read_json(RESULTS / name / "result.json")
        # compare's table: this app's row names its run, complete, the target and the achieved rate.
        row = re.search(rf"^{re.escape(app)}\s+{re.escape(name)}\s+complete\s+{RATE}\s+(?P<achieved>[\d.]+)\s+wrk2\s", done.stdout,
                        re.MULTILINE)
        assert row and abs(float(row["achieved"]) - result["achieved_rate"]) < 0.1, tail(done.stdout, 20)


def test_every_app_completes_a_short_run_of_zipcodes_without_errors(short_run: Path) -> None:
    # Quarkus' run of zipcodes is the session's short run (one run fewer in CI); the others' a compare.
    settings = dict(variable.split("=", 1) for variable in SHORT_RUN)
    assert (settings["APP"], settings["SCENARIO"]) == ("quarkus", "zipcodes"), SHORT_RUN
    assert short_run.parent == RESULTS, short_run
    assert_complete_without_errors("quarkus", "zipcodes", short_run.name, int(settings["RATE"]), settings["DURATION"],
                                   settings["WARMUP"])
    others = tuple(app for app in APPS if app != "quarkus")
    assert others, APPS
    compare("zipcodes", others, f"APPS={' '.join(others)}")


def test_plaintext_json_runs_our_quarkus_beside_techempowers_own() -> None:
    """TechEmpower's Quarkus: built from their checkout (apps/peers/tfb-quarkus.yml), deployed, verified
    (their /plaintext answers 'Hello, world!': TechEmpower's verifier ignores the case, so does ours).
    Its artifact is a directory (quarkus-app/, deployed as one tar) and it declares no metrics
    endpoint: Prometheus does not scrape it, its run says its own metrics are unobserved, and a
    warm re-deploy after the run changes nothing."""
    if not (TFB_DIR / "frameworks" / "Java" / "quarkus" / "pom.xml").is_file():
        pytest.skip(f"no TechEmpower checkout at {TFB_DIR} (PERFLAB_TFB_DIR)")
    before = run_dirs()
    compare("plaintext-json", ("quarkus", "tfb-quarkus"), "APPS=quarkus tfb-quarkus", f"TFB_DIR={TFB_DIR}")
    theirs = sorted(run_dirs() - before)[-1]
    unobserved = read_json(RESULTS / theirs / "observations.json")["unobserved"]
    assert "declares no metrics endpoint is not scraped" in unobserved["statements_per_request"], unobserved
    listed = on_host("app[0]", "ls /opt/perflab/app /opt/perflab/app/quarkus-app")
    assert "quarkus-run.jar" in listed and "perflab-quarkus.jar" not in listed, listed
    assert "[]" in on_host("monitoring[0]", "cat /etc/prometheus/file_sd/app.yml")
    again = run_make("deploy", "APP=tfb-quarkus", f"TFB_DIR={TFB_DIR}", timeout=1200)
    assert again.returncode == 0, tail(again.stdout)
    assert all(count == 0 for count in changed_counts(again.stdout).values()), tail(again.stdout, 120)


def test_books_orders_runs_twice_on_fresh_jvms_and_the_report_gives_the_median() -> None:
    """The write transaction, twice as one group (make bench REPEAT=2): two complete runs without an
    error, each on a JVM of its own; compare's summary and the report's row are the median of the two
    with their range."""
    before = run_dirs()
    done = run_make("bench", "APP=spring-webflux", "SCENARIO=books-orders", f"RATE={RATE}", f"DURATION={DURATION}",
                    f"WARMUP={WARMUP}", "REPEAT=2")
    assert done.returncode == 0, tail(done.stdout, 80)
    created = sorted(run_dirs() - before)
    assert len(created) == 2, created
    repetitions = []
    for name in created:
        assert_complete_without_errors("spring-webflux", "books-orders", name)
        result = read_json(RESULTS / name / "result.json")
        repetitions.append((result["repetition"], result["app"]["start_to_first_request_ms"]))
    (first, _), (second, _) = repetitions
    assert first["group"] == second["group"] and first["group"].endswith("-books-orders"), repetitions
    assert [(r["index"], r["of"]) for r, _ in repetitions] == [(1, 2), (2, 2)]
    summary = re.search(r"^  spring-webflux \((\d) runs?\): achieved/s (\S+) \[(\S+)-(\S+)\], p99 ms", done.stdout, re.MULTILINE)
    assert summary and summary[1] == "2", tail(done.stdout, 20)
    achieved = sorted(read_json(RESULTS / name / "result.json")["achieved_rate"] for name in created)
    assert (float(summary[3]), float(summary[4])) == pytest.approx(tuple(achieved), abs=0.51), (summary[0], achieved)
    page = run_make("report", "RESULTS=" + str(RESULTS))
    assert page.returncode in (0, 3), tail(page.stdout, 20)
    html = (RESULTS / "report.html").read_text(encoding="utf-8")
    section = html[html.index(f"<h3>books-orders at {RATE} req/s, wrk2, profile default</h3>"):]
    section = section[:section.index("</section>")]
    assert "spring-webflux<span class=\"ratio\">median of 2 runs</span>" in section, section[-2000:]
