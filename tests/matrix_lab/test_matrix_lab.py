"""Every app of the project on every scenario, each cell a short wrk2 run verified against the
scenario's contract and complete without an error (tests/runkit.py). `make test-bench` runs these
with the bench runs, on any lab (not `make test`: its 23 min of runs took CI past its 90 minutes);
each cell runs once, here or where another test needs that very run.

| scenario       | quarkus                     | spring-mvc                   | spring-webflux              |
| -------------- | --------------------------- | ---------------------------- | --------------------------- |
| zipcodes       | local: the session's short run | local: compare            | local: compare              |
| books-orders   | here                        | here                         | local: twice (REPEAT=2)     |
| greeting       | local: the sweep's steps    | here                         | here                        |
| plaintext-json | here, beside TechEmpower's  | here                         | here                        |
| hello-latency  | here                        | SSH lab: report 2 (400 threads) | SSH lab: report 2        |
| db             | local: PostgreSQL           | here                         | here                        |
| queries        | here                        | local: PostgreSQL            | here                        |
| updates        | here                        | here                         | local: PostgreSQL           |
| fortunes       | local: PostgreSQL           | here                         | here                        |

TechEmpower's database tests (db, queries, updates, fortunes) run here on the lab's default engine, and one
app each on PostgreSQL (tests/bench_runs/test_postgresql_runs.py). Their own implementations' database variants
(apps/peers/tfb-*-postgresql.yml) speak PostgreSQL only: they run here on the lab turned to PostgreSQL and back.
"""
from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from labkit import RESULTS, ROOT, changed_counts, judged, make, on_host, read_json, run_dirs, tail
from runkit import assert_complete_without_errors, compare

# TechEmpower's FrameworkBenchmarks checkout (their frameworks/Java/quarkus is what tfb-quarkus builds):
# the Makefile's PERFLAB_TFB_DIR (CI's copy beside the clone, unless set), which every make target exports.
TFB_DIR = os.environ.get("PERFLAB_TFB_DIR")

# Where each cell of the table above runs; "here" are this module's tests.
ELSEWHERE = {("zipcodes", "quarkus"), ("zipcodes", "spring-mvc"), ("zipcodes", "spring-webflux"),
             ("books-orders", "spring-webflux"), ("greeting", "quarkus"), ("hello-latency", "spring-mvc"),
             ("hello-latency", "spring-webflux"), ("db", "quarkus"), ("queries", "spring-mvc"),
             ("updates", "spring-webflux"), ("fortunes", "quarkus")}
HERE = {("books-orders", "quarkus"), ("books-orders", "spring-mvc"), ("greeting", "spring-mvc"),
        ("greeting", "spring-webflux"), ("plaintext-json", "quarkus"), ("plaintext-json", "spring-mvc"),
        ("plaintext-json", "spring-webflux"), ("hello-latency", "quarkus"), ("db", "spring-mvc"),
        ("db", "spring-webflux"), ("queries", "quarkus"), ("queries", "spring-webflux"), ("updates", "quarkus"),
        ("updates", "spring-mvc"), ("fortunes", "spring-mvc"), ("fortunes", "spring-webflux")}


def test_the_matrix_covers_every_app_on_every_scenario() -> None:
    """A new app or scenario gets its cells in the table, here or in the test that runs them."""
    apps = {p.parent.name for p in (ROOT / "apps").glob("*/perflab-app.yml")}
    scenarios = {p.stem for p in (ROOT / "scenarios").glob("*.yml")}
    assert HERE | ELSEWHERE == {(s, a) for s in scenarios for a in apps}, sorted(
        {(s, a) for s in scenarios for a in apps} ^ (HERE | ELSEWHERE))
    assert not HERE & ELSEWHERE


def test_books_orders_on_quarkus_and_spring_mvc() -> None:
    compare("books-orders", ("quarkus", "spring-mvc"), "APPS=quarkus spring-mvc")


def test_greeting_on_both_spring_apps() -> None:
    compare("greeting", ("spring-mvc", "spring-webflux"), "APPS=spring-mvc spring-webflux")


@pytest.mark.parametrize(("scenario", "apps"), [
    ("db", ("spring-mvc", "spring-webflux")), ("queries", ("quarkus", "spring-webflux")),
    ("updates", ("quarkus", "spring-mvc")), ("fortunes", ("spring-mvc", "spring-webflux")),
])
def test_techempowers_database_tests(scenario: str, apps: tuple[str, ...]) -> None:
    compare(scenario, apps, f"APPS={' '.join(apps)}")


def tfb_dir() -> str:
    """TechEmpower's checkout; a missing one fails a cell on CI and through make, and skips it in a bare pytest."""
    # Through make (test, test-lab, test-ssh-lab, test-bench: the Makefile exports PERFLAB_TFB_DIR) or on
    # CI, a missing checkout fails the cell: a cell that skips there vanishes from CI unseen. Only a
    # pytest run by hand, which names no checkout, skips it.
    if TFB_DIR is None:
        message = "PERFLAB_TFB_DIR is not set: run it through make, which sets it, or set it to their checkout"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return TFB_DIR


@pytest.fixture(scope="module")
def on_postgresql() -> Iterator[str]:
    """The lab's db host turned to PostgreSQL for the module's tests that ask it, and back at the end."""
    up = make("lab-up", "DB_ENGINE=postgresql")
    assert up.returncode == 0, tail(up.stdout, 60)
    try:
        yield "DB_ENGINE=postgresql"
    finally:
        back = make("lab-up")
        assert back.returncode == 0, tail(back.stdout, 60)


@pytest.mark.parametrize("scenario", ["db", "queries", "updates", "fortunes"])
def test_techempowers_database_tests_on_their_implementations(on_postgresql: str, scenario: str) -> None:
    """Their Quarkus (Hibernate Reactive), Spring (jdbc) and WebFlux (r2dbc) against the lab's PostgreSQL: verified
    by the scenario's checks and query counts (not the lab's contract: its schema names randomNumber, their WebFlux
    randomnumber, which their verify takes), complete, without an error."""
    apps = ("tfb-quarkus-postgresql", "tfb-spring-postgresql", "tfb-spring-webflux-postgresql")
    compare(scenario, apps, f"APPS={' '.join(apps)}", f"TFB_DIR={tfb_dir()}", on_postgresql)


def test_hello_latency_on_quarkus() -> None:
    before = run_dirs()
    done = make("bench", "APP=quarkus", "SCENARIO=hello-latency", "RATE=50", "DURATION=10s", "WARMUP=5s")
    # Judged, whatever its verdict (labkit.judged): the cell asks a complete run without errors, checked below.
    assert judged(done), tail(done.stdout, 80)
    created = sorted(run_dirs() - before)
    assert len(created) == 1, created
    assert_complete_without_errors("quarkus", "hello-latency", created[0])


def test_plaintext_json_runs_ours_beside_techempowers_quarkus() -> None:
    """Our three apps and TechEmpower's Quarkus: built from their checkout (apps/peers/tfb-quarkus.yml),
    deployed, verified (their /plaintext answers 'Hello, world!': TechEmpower's verifier ignores the
    case, so does ours). Its artifact is a directory (quarkus-app/, deployed as one tar) and it
    declares no metrics endpoint: Prometheus does not scrape it, its run says its own metrics are
    unobserved, and a warm re-deploy after the run changes nothing."""
    checkout = tfb_dir()
    pom = Path(checkout) / "frameworks" / "Java" / "quarkus" / "pom.xml"
    assert pom.is_file(), f"no TechEmpower checkout at PERFLAB_TFB_DIR={checkout}: {pom} is missing"
    before = run_dirs()
    apps = ("quarkus", "spring-mvc", "spring-webflux", "tfb-quarkus")
    compare("plaintext-json", apps, f"APPS={' '.join(apps)}", f"TFB_DIR={checkout}")
    theirs = sorted(run_dirs() - before)[-1]
    unobserved = read_json(RESULTS / theirs / "observations.json")["unobserved"]
    assert "declares no metrics endpoint is not scraped" in unobserved["statements_per_request"], unobserved
    listed = on_host("app[0]", "ls /opt/perflab/app /opt/perflab/app/quarkus-app")
    assert "quarkus-run.jar" in listed and "perflab-quarkus.jar" not in listed, listed
    assert "[]" in on_host("monitoring[0]", "cat /etc/prometheus/file_sd/app.yml")
    again = make("deploy", "APP=tfb-quarkus", f"TFB_DIR={checkout}", timeout=1200)
    assert again.returncode == 0, tail(again.stdout)
    assert all(count == 0 for count in changed_counts(again.stdout).values()), tail(again.stdout, 120)
