"""The lab on PostgreSQL: the session's lab turns its db host to PostgreSQL (make lab-up with
lab_db_engine=postgresql) and back to MariaDB at the end, each time with the other engine stopped.
On it the lab's three apps run judged, with their statements per request counted from pg_stat_statements,
each of TechEmpower's four database tests runs on one of them (tests/matrix_lab runs the other cells on
MariaDB), and an app that speaks MySQL's protocol only is refused before anything changes."""
from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from bench_helpers import RESULTS, ROOT, read_json, run_dirs, run_make, tail
from dashkit import PROMETHEUS, RunWindow, panel_queries
from labkit import changed_counts, make, on_host
from runkit import assert_complete_without_errors, compare

ON_POSTGRESQL = "ANSIBLE_ARGS=-e lab_db_engine=postgresql"
# vegeta: what these runs judge is the database's engine, statements and answers, not the tool (wrk2's runs are the
# other tests'), and wrk2's calibration would add 11 s of load no one reads to each of seven runs.
TOOL = "vegeta"
APPS = ("quarkus", "spring-mvc", "spring-webflux")
# TechEmpower's database tests, each on one of the lab's apps (their checks and query counts are the verify's;
# the contract suite, make test-apps DB_ENGINE=postgresql, holds every app to each route on PostgreSQL).
TECHEMPOWER_DB_TESTS = {"db": "quarkus", "queries": "spring-mvc", "updates": "spring-webflux", "fortunes": "quarkus"}
# The statements per request the verify holds each to (scenarios/*.yml: select, insert, update, delete; updates'
# UPDATEs may be 1 to 20, as TechEmpower's verify takes one bulk UPDATE or one a row).
TECHEMPOWER_STATEMENTS = {"db": (1, 0, 0, 0), "queries": (20, 0, 0, 0), "updates": (20, 0, 1, 0), "fortunes": (1, 0, 0, 0)}
# And the rows those statements read and write (TechEmpower's verify counts them in pg_stat_statements too).
TECHEMPOWER_ROWS = {"db": (1, 0, 0, 0), "queries": (20, 0, 0, 0), "updates": (20, 0, 20, 0), "fortunes": (12, 0, 0, 0)}


def active(unit: str) -> str:
    """systemctl is-active UNIT on the db host: active, inactive, failed, or unknown where it is not installed."""
    return on_host("db[0]", f"systemctl is-active {unit} || true").split("(stdout)")[-1].strip()


@pytest.fixture(scope="module")
def postgresql_lab() -> Iterator[None]:
    up = make("lab-up", ON_POSTGRESQL)
    assert up.returncode == 0, tail(up.stdout, 60)
    try:
        assert (active("postgresql@15-main"), active("mariadb")) == ("active", "inactive")
        yield
    finally:
        back = make("lab-up")
        assert back.returncode == 0, tail(back.stdout, 60)
        assert (active("mariadb"), active("postgresql@15-main")) == ("active", "inactive")
        assert changed_counts(back.stdout), tail(back.stdout, 20)


def mariadb_alone(expr: str) -> bool:
    """A query of the database dashboard that reads MariaDB/MySQL's counters and none of PostgreSQL's (the
    InnoDB buffer pool's data and dirty pages, which postgres_exporter does not export)."""
    return "mysql_" in expr and "pg_" not in expr


def test_the_lab_apps_run_judged_on_postgresql_with_their_statements_counted(postgresql_lab: None) -> None:
    before, since = run_dirs(), int(time.time()) - 1
    compare("zipcodes", APPS, f"APPS={' '.join(APPS)}", ON_POSTGRESQL, tool=TOOL)
    # Quarkus' requests waiting for a DB connection read from its reactive pool's own waiters on PostgreSQL too
    # (its pool a PgPoolImpl: apps/quarkus Metrics.waitingGauge), not from the binder's gauge, which drifts below
    # zero; the app's log says so where it falls back.
    journal = on_host("app[0]", f"journalctl --unit perflab-app --since @{since} --no-pager --output cat")
    assert "(powered by Quarkus " in journal, "Quarkus' start is not in the app host's journal:\n" + journal[-2000:]
    assert "perflab_db_pool_waiting reads Vert.x's" not in journal, journal[-4000:]
    # The operator's database dashboard shows PostgreSQL too: each of its queries (MariaDB's alone aside)
    # returns a series over a run's window, as the dashboards' test asks on MariaDB.
    window = RunWindow(RESULTS / sorted(run_dirs() - before)[-1])
    queries = [expr for name, expr in panel_queries() if name.startswith("database: ") and not mariadb_alone(expr)]
    assert len(queries) >= 10, queries
    empty = [said for said in (window.empty(PROMETHEUS, expr) for expr in queries) if said]
    assert not empty, "\n".join(empty)
    for name in sorted(run_dirs() - before):
        result = read_json(RESULTS / name / "result.json")
        # Pointed at PostgreSQL's port; Quarkus in the profile of the jar built for PostgreSQL (role app deploys
        # perflab-quarkus-postgresql.jar, the manifest's artifact.by_db_engine).
        environment = result["app"]["environment"]
        assert environment["PERFLAB_DB_PORT"] == "5432", environment
        assert environment.get("QUARKUS_PROFILE", environment.get("PERFLAB_DB_ENGINE")) == "postgresql", environment
        assert result["versions"]["database"].startswith("postgres (PostgreSQL) 15."), result["versions"]
        observations = read_json(RESULTS / name / "observations.json")
        assert observations["db_name"].startswith("PostgreSQL 15."), observations["db_name"]
        # The contract's statements: one select per request, an insert per POST (half of zipcodes' requests).
        statements = observations["statements_per_request"]
        assert statements and statements["select"] == pytest.approx(1.0, abs=0.05), observations["unobserved"]
        assert statements["insert"] == pytest.approx(0.5, abs=0.05), statements
        # Each request type's statements as the verify counted them on the server, before any load.
        verify = read_json(RESULTS / name / "verify.json")
        assert [t["check"].split(" ok: ")[0] for t in verify["types"]] == ["verify: POST /zipcodes", "verify: GET /zipcodes/{zip}"]
        assert all(t["ok"] and "statements per request 1.00 select" in t["check"] for t in verify["types"]), verify["types"]
        rules = {rule["rule"]: rule for rule in read_json(RESULTS / name / "audit.json")["rules"]}
        assert rules["same_db_work"]["status"] == "VALID", rules["same_db_work"]
        # Every session the app opened (Quarkus' reactive pool opens them as the load needs them: 8 at this rate).
        assert re.match(r"all \d+ DB sessions used TLS; ", rules["same_db_work"]["evidence"]), rules["same_db_work"]
        assert rules["db_up"] == {"rule": "db_up", "status": "VALID", "evidence": (
            "the DB was up at every scrape of the measured window (postgres_exporter's pg_up 1)")}, rules["db_up"]


@pytest.mark.parametrize("scenario", sorted(TECHEMPOWER_DB_TESTS))
def test_techempowers_database_tests_run_judged_with_their_query_counts(postgresql_lab: None, scenario: str) -> None:
    app = TECHEMPOWER_DB_TESTS[scenario]
    before = run_dirs()
    # 20 req/s: /queries and /updates are 21 statements a request, and this lab's 2 cores are shared with the SSH
    # lab's runs in CI (spring-webflux's /updates reached 6 of 50 req/s beside a contract suite and a unit suite).
    done = run_make("bench", f"APP={app}", f"SCENARIO={scenario}", "RATE=20", "DURATION=10s", "WARMUP=5s", f"TOOL={TOOL}",
                    ON_POSTGRESQL)
    created = sorted(run_dirs() - before)
    assert len(created) == 1, tail(done.stdout, 60)
    assert_complete_without_errors(app, scenario, created[0], rate=20, tool=TOOL)
    # Counted on the server and within the verify's tolerance of the scenario's counts (half a statement: one more
    # or one fewer a request fails), as TechEmpower's verify counts them in pg_stat_statements.
    (checked,) = read_json(RESULTS / created[0] / "verify.json")["types"]
    expected = checked["expected_statements_per_request"]
    assert checked["ok"] and " ok: " in checked["check"] and "statements per request " in checked["check"], checked
    assert tuple(expected[k] for k in ("select", "insert", "update", "delete")) == TECHEMPOWER_STATEMENTS[scenario]
    assert checked["expected_statements_max"] == ({"update": 20} if scenario == "updates" else {}), checked
    # Their rows too, counted on PostgreSQL within TechEmpower's margins (1% short, 5% for a bulk UPDATE, 5% over).
    kinds = ("select", "insert", "update", "delete")
    assert tuple(checked["expected_rows_per_request"][k] for k in kinds) == TECHEMPOWER_ROWS[scenario], checked
    assert "; rows per request " in checked["check"] and checked["rows_per_request"], checked
    assert any(all(0.95 * n <= burst[k] <= 1.05 * n for k, n in zip(kinds, TECHEMPOWER_ROWS[scenario]) if n)
               for burst in checked["rows_per_request"]), checked
    assert read_json(RESULTS / created[0] / "result.json")["versions"]["database"].startswith("postgres (PostgreSQL) 15.")


def test_an_app_that_speaks_mysql_only_is_refused_before_anything_changes(postgresql_lab: None, tmp_path: Path) -> None:
    # Spring MVC's jar, under a manifest of a user's that leaves db_engines at its default (MariaDB, MySQL).
    document = yaml.safe_load((ROOT / "apps/spring-mvc/perflab-app.yml").read_text(encoding="utf-8"))
    del document["db_engines"]
    document["name"] = "orders"
    document["artifact"] = {"dir": str(ROOT / "apps/spring-mvc"), "path": "target/perflab-spring-mvc.jar"}
    own = tmp_path / "orders.yml"
    own.write_text(yaml.safe_dump(document, sort_keys=False), encoding="utf-8")
    before = run_dirs()
    done = run_make("bench", f"APP={own}", "SCENARIO=zipcodes", ON_POSTGRESQL)
    assert done.returncode == 2, tail(done.stdout, 40)
    assert (f"orders speaks mariadb, mysql ({own}: db_engines), and the lab's db host runs postgresql (lab_db_engine)"
            in done.stdout), tail(done.stdout, 40)
    assert run_dirs() == before
