"""Every app under test runs in the lab from its manifest: a short wrk2 run (TOOL=auto: wrk2, built
from CI's mirror) is verified against the scenario's contract first (verify.json), then completes
with zero errors and a parsed result (tests/runkit.py). Here, on the local lab: zipcodes, the DB
read scenario, with every app of the project: Quarkus in the session's short run
(tests/conftest.py), the others through `make compare` (its table checked on the way: one row per
app, each naming its run, complete, with the achieved rate); books-orders (the write transaction)
on WebFlux, twice as one REPEAT=2 group. The other cells of every app x every scenario run on the
SSH lab beside these (tests/matrix_lab), with TechEmpower's Quarkus beside ours on plaintext-json,
as do vegeta's runs. Every app's answers to every scenario are the contract suite's subject
(tests/contract), their wrk2 scripts run under luajit (tests/unit); here, each run is the lab's, whole."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from bench_helpers import APPS, RESULTS, read_json, run_dirs, run_make, tail
from labkit import SHORT_RUN
from runkit import DURATION, RATE, WARMUP, assert_complete_without_errors, compare

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
    # The second JVM starts with the class data sharing archive of the app's classes, which the first wrote as it
    # stopped (or kept, mapped): the deployment says so (perflab-app-ready reads the JVM's mappings).
    deployment = read_json(RESULTS / created[1] / "bench-inputs.json")["deployment"]
    assert deployment["class_data_sharing"] == "archive mapped", deployment
    assert first["group"] == second["group"] and first["group"].endswith("-books-orders"), repetitions
    assert [(r["index"], r["of"]) for r, _ in repetitions] == [(1, 2), (2, 2)]
    summary = re.search(r"^  spring-webflux \((\d) runs?\): achieved/s (\S+) \[(\S+)-(\S+)\], p99 ms", done.stdout, re.MULTILINE)
    assert summary and summary[1] == "2", tail(done.stdout, 20)
    achieved = sorted(read_json(RESULTS / name / "result.json")["achieved_rate"] for name in created)
    assert (float(summary[3]), float(summary[4])) == pytest.approx(tuple(achieved), abs=0.51), (summary[0], achieved)
    page = run_make("report", "RESULTS=" + str(RESULTS))
    assert page.returncode in (0, 3), tail(page.stdout, 20)
    html = (RESULTS / "report.html").read_text(encoding="utf-8")
    # The set's heading names the DB engine the runs ran on (the report never sets engines side by side).
    section = html[html.index(f"<h3>books-orders at {RATE} req/s, wrk2, profile default, MariaDB</h3>"):]
    section = section[:section.index("</section>")]
    assert "spring-webflux<span class=\"ratio\">median of 2 runs</span>" in section, section[-2000:]
