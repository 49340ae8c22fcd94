"""A user's app with its own database and its own workload, end to end: Spring PetClinic (a real Spring
Boot 4 app nobody on this project wrote, built from ../shared/peers) with its scenario file
(apps/peers/petclinic/scenario.yml), on its own database (petclinic, from its own schema.sql and
data.sql) on the lab's MariaDB. Two judged runs without an error; the verify phase counted each
request type's statements on that database as the scenario gives them; the database is restored from
the app's seed before each run (a row planted between the two runs is gone, the seeded owners are
back). What it asserts is what the runs recorded, not a figure a busy machine moves: make test runs
it on the SSH lab, beside the local lab's share."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml  # type: ignore[import-untyped]

from labkit import ROOT, judged, make, new_run_dir, on_host, read_json, run_dirs, tail

SCENARIO = "apps/peers/petclinic/scenario.yml"
# A slow start on a shared core is not the app's failure: the rate is low, the run short. Nor is a pause of a few
# seconds while the local lab's share takes the machine: an answer is a timeout (an error) only after the lab's
# loadgen_timeout_s (10 s). wrk2's own 2 s counted one such pause in a CI run as 7 timeouts (no_errors INVALID),
# where alone on the SSH lab these runs' slowest answer took 88 ms.
RATE, DURATION, WARMUP = 40, "20s", "10s"
MARKER = "Planted-between-runs"


@pytest.fixture(scope="session", autouse=True)
def lab_is_up(lab: str) -> None:
    """Every test here runs on the lab the session brought up (tests/conftest.py: `lab`)."""


def petclinic_sql(query: str) -> str:
    """QUERY on the db host's petclinic database, as root over the local socket; its rows, tab-separated."""
    return on_host("db[0]", f"mariadb --batch --skip-column-names petclinic -e {subprocess.list2cmdline([query])}")


def owners() -> list[str]:
    """The owners' last names in the petclinic database, ordered by id (ansible -o: one line, \\n escaped)."""
    out = petclinic_sql("SELECT last_name FROM owners ORDER BY id")
    return out.split("(stdout) ", 1)[1].strip().split("\\n") if "(stdout) " in out else []


def bench() -> tuple[Path, str]:
    before = run_dirs()
    done = make("bench", "APP=petclinic", f"SCENARIO={SCENARIO}", f"RATE={RATE}", f"DURATION={DURATION}",
                f"WARMUP={WARMUP}")
    assert judged(done), "make bench APP=petclinic failed:\n" + tail(done.stdout, 80)
    return new_run_dir(before), done.stdout


def test_petclinic_runs_its_own_workload_on_its_own_database_restored_before_each_run() -> None:
    scenario = yaml.safe_load((ROOT / SCENARIO).read_text())
    stated = {r["name"]: r["statements"] for r in scenario["requests"]}
    first, output = bench()
    assert first.name.endswith("-petclinic-petclinic"), first
    result, audit = read_json(first / "result.json"), read_json(first / "audit.json")
    rules = {rule["rule"]: rule for rule in audit["rules"]}
    assert rules["no_errors"]["status"] == "VALID", rules["no_errors"]
    assert sum(result["errors"].values()) == 0 and result["requests"] > 0, result["errors"]
    # The scenario as run is the file's, kept with the run, and so is what each tool played.
    as_run = read_json(first / "scenario-as-run.json")
    assert as_run["name"] == "petclinic" and [r["name"] for r in as_run["requests"]] == list(stated)
    assert (first / "scenario-compiled.lua").is_file() and (first / "scenario-compiled.json").is_file()
    # The verify phase: every request type answered as the scenario expects, its statements counted
    # on the app's own database as the scenario gives them (no contract knows PetClinic's routes).
    verify = read_json(first / "verify.json")
    assert verify["status"] == "ok", verify["reason"]
    assert [t["name"] for t in verify["types"]] == ["GET /owners", "GET /owners/{owner}", "GET /vets", "POST /owners/new"]
    for check, name in zip(verify["types"], stated):
        expected = {kind: float(stated[name].get(kind, 0)) for kind in ("select", "insert", "update", "delete")}
        assert check["ok"] and check["expected_statements_per_request"] == expected, check
        assert "as the scenario says" in check["check"], check
    # PetClinic counts no requests of its own (no metrics): the mix and the statements per request are counted on
    # the requests wrk2 sent, by type and second (a real run: 11.0% / 10.9% / 11.3% writes by third, 2.31
    # selects per request where the scenario's mix makes 2.34).
    observations = read_json(first / "observations.json")
    assert observations["requests_counted_by"].startswith("wrk2 (each thread's requests by type and second"), observations
    shares = observations["write_share_by_third"]
    assert shares is not None and all(0.05 < share < 0.2 for share in shares), shares  # new_owner: 1 in 9
    assert rules["steady_mix"]["status"] == "VALID" and "requests counted by the loadgen" in rules["steady_mix"]["evidence"]
    # Its statements on its own database, against the scenario's: the same work, or (more than 1% of the requests
    # left in flight when wrk2 stopped, on a loaded machine) not evaluated with that reason; never a false INVALID.
    db_work = rules["same_db_work"]
    counted = "statements per request as the contract says (requests counted by the loadgen"
    assert (db_work["status"] == "VALID" and counted in db_work["evidence"]) or (
        db_work["status"] == "NOT_EVALUATED" and "ended without an answer" in db_work["evidence"]), db_work

    # The run's new owners are in the app's database, the seeded ones first.
    after_first = owners()
    assert after_first[:2] == ["Franklin", "Davis"] and any(name.startswith("Load") for name in after_first), after_first
    petclinic_sql(f"INSERT INTO owners (first_name, last_name, address, city, telephone) "
                  f"VALUES ('A', '{MARKER}', 'x', 'y', '0123456789')")
    assert MARKER in owners()

    second, output = bench()
    assert read_json(second / "verify.json")["status"] == "ok", tail(output)
    after_second = owners()
    # Restored from data.sql before the second run: the planted row is gone and the seed's owners come first. The
    # first run's owners cannot be told from the second's by name (each run draws the same keys), nor by count: the
    # runs send different numbers of POSTs (a CI run's verify phases sent 40 and 80), and a second run that sent
    # more made 282 owners against the first's 239. Without the restore the table would be the first run's rows,
    # the planted one and the second run's, one more than the seed and the new owners (the planted row).
    assert MARKER not in after_second and after_second[:10] == after_first[:10], after_second
    assert len(after_second) == 10 + len([n for n in after_second if n.startswith("Load")]), after_second[:12]
