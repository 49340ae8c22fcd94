"""The bench's verify phase (perflab verify, roles/bench/files/verify_app.py) against real apps.

As the bench runs it, minus Ansible: `perflab verify plan` on the scenario file, the db-host script run
the way the bench's task runs it (`python3 -c <its source>`, the plan on stdin) with the private
server's own client over its socket (mariadb, or psql as the superuser), then `perflab verify check`.
Every app the suite starts passes it for every scenario; two deploy-time settings of Spring MVC that break the contract are
refused, each with its one line: Hikari's connection test query run at every checkout (one
select more per request) and Jackson's root wrapping (every JSON body the wrong shape).
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness import REPO_ROOT, AppProcess, Database

SCRIPT = REPO_ROOT / "roles" / "bench" / "files" / "verify_app.py"
SCENARIOS = sorted(path.stem for path in (REPO_ROOT / "scenarios").glob("*.yml"))
# The broken variants get a database of their own on the suite's server, so that their writes
# never meet the other tests' (the statement counters are the server's, and every other app idles).
VARIANT_DB = "perflab_verify"
# Hikari checks a connection before it hands it out when it has been idle longer than
# aliveBypassWindowMs (500 ms by default, so a busy pool almost never does); at -1 it checks it at
# every checkout, and with a connection test query that check is a SELECT: one more per request.
EXTRA_SELECT = ["-Dspring.datasource.hikari.connection-test-query=SELECT 1",
                "-Dcom.zaxxer.hikari.aliveBypassWindowMs=-1"]
# Jackson wraps every body it writes in an object named after its class: {"Message": {...}}.
WRAPPED_BODIES = ["-Dspring.jackson.serialization.wrap-root-value=true"]


def verify(base_url: str, db: Database, scenario: str, out: Path) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    """plan, send, check as the bench does; the check's process and verify.json."""
    plan_file, verify_file = out / f"verify-plan-{scenario}.json", out / f"verify-{scenario}.json"
    planned = subprocess.run([sys.executable, "-m", "perflab", "verify", "plan", scenario, "--base-url", base_url,
                              "--output", str(plan_file)], capture_output=True, text=True, timeout=120)
    assert planned.returncode == 0, planned.stderr
    sent = subprocess.run(
        [sys.executable, "-c", SCRIPT.read_text(), *db.verify_client_args()],
        input=plan_file.read_text(), capture_output=True, text=True, timeout=300,
    )
    assert sent.returncode == 0 and not sent.stderr, sent.stderr
    (out / f"verify-results-{scenario}.json").write_text(sent.stdout)
    checked = subprocess.run([sys.executable, "-m", "perflab", "verify", "check", str(plan_file), "-",
                              "--output", str(verify_file)], input=sent.stdout, capture_output=True, text=True,
                             timeout=120)
    assert checked.returncode in (0, 1), checked.stderr
    return checked, json.loads(verify_file.read_text())


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_every_scenario_verifies(target, scenario: str, work_dir: Path) -> None:
    if target.db is None:
        pytest.skip("needs the suite's own DB server (--app): the script reads its counters through its socket")
    checked, verdict = verify(target.base_url, target.db, scenario, work_dir)
    assert (checked.returncode, checked.stderr) == (0, ""), checked.stdout
    assert verdict["status"] == "ok" and verdict["reason"] is None, verdict
    lines = checked.stdout.splitlines()
    assert [line.split(" ok: ")[0] for line in lines] == [f"verify: {t['name']}" for t in verdict["types"]]


@pytest.fixture(scope="module")
def variant_db(request: pytest.FixtureRequest) -> Iterator[Database]:
    if "spring-mvc" not in (request.config.getoption("app", default=[]) or []):
        pytest.skip("the broken variants are Spring MVC's: run the suite with --app spring-mvc")
    db: Database = request.getfixturevalue("harness_db")
    db.create_app_database(VARIANT_DB)
    yield db
    db.drop_database(VARIANT_DB)


def started(db: Database, work_dir: Path, name: str, java_opts: list[str]) -> AppProcess:
    db.reset(VARIANT_DB)
    app = AppProcess(app="spring-mvc", db=db, workdir=work_dir / name, java_opts=java_opts,
                     extra_env={"PERFLAB_DB_NAME": VARIANT_DB})
    app.start()
    try:
        app.wait_ready()
    except BaseException:
        app.stop()
        raise
    return app


def test_an_extra_select_per_request_is_refused(variant_db: Database, work_dir: Path) -> None:
    app = started(variant_db, work_dir, "spring-mvc-extra-select", EXTRA_SELECT)
    try:
        checked, verdict = verify(app.base_url, variant_db, "zipcodes", work_dir)
    finally:
        app.stop()
    assert checked.returncode == 1, checked.stdout
    # The scenario's first request is the write; every type is judged, and the read issues its extra select too.
    line = "verify: POST /zipcodes issued 2.00 selects per request, the scenario says 1 (scenarios/zipcodes.yml)"
    assert checked.stderr == line + "\n"
    assert verdict["status"] == "failed" and verdict["reason"] == line
    assert [t["check"] for t in verdict["types"]][1] == (
        "verify: GET /zipcodes/{zip} issued 2.00 selects per request, the scenario says 1 (scenarios/zipcodes.yml)")


def test_a_wrong_body_is_refused(variant_db: Database, work_dir: Path) -> None:
    app = started(variant_db, work_dir, "spring-mvc-wrapped", WRAPPED_BODIES)
    try:
        checked, verdict = verify(app.base_url, variant_db, "plaintext-json", work_dir)
    finally:
        app.stop()
    assert checked.returncode == 1, checked.stdout
    line = ("verify: GET /json 200: body breaks openapi.yaml: Additional properties are not allowed ('Message' was "
            "unexpected) at []; body: '{\"Message\":{\"message\":\"Hello, World!\"}}'")
    assert checked.stderr == line + "\n"
    assert verdict["reason"] == line
    # /plaintext is text, which Jackson never writes: it passes.
    assert [t["ok"] for t in verdict["types"]] == [True, False]
