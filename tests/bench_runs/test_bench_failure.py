"""A run that fails mid-way is marked incomplete, closes its run window and never leaves a netem
delay on the db host. The failure: a measured phase that overruns its time limit
(bench_phase_grace_s < 0), a real failure path of the bench with no test hook in it. And an app
that breaks the contract is refused by the verify phase before any load."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench_helpers import new_run_dir, on_host, read_json, run_dirs, run_make, tail


def _netem_works() -> bool:
    probe = on_host("db[0]", "tc qdisc add dev lo root netem delay 0ms && tc qdisc del dev lo root && echo netem-ok || true")
    return "netem-ok" in probe


def _failed_run(*variables: str) -> tuple[str, dict[str, str]]:
    before = run_dirs()
    done = run_make("bench", "APP=quarkus", "SCENARIO=greeting", "RATE=50", "DURATION=10s", "WARMUP=0s",
                    "ANSIBLE_ARGS=-e bench_phase_grace_s=-5", *variables)
    assert done.returncode != 0, tail(done.stdout)
    status = read_json(new_run_dir(before) / "status.json")
    return done.stdout, status


def test_failed_run_is_marked_incomplete_and_closes_its_window() -> None:
    output, status = _failed_run()
    assert status["status"] == "incomplete" and status["failed_step"] == "the run", status
    # The phase overran its time limit (Ansible: "async task did not complete within the requested time").
    assert "did not complete within the requested time" in status["reason"], status
    assert "perflab_run.prom" not in on_host("loadgen[0]", "ls /var/lib/prometheus/node-exporter/"), tail(output)


def test_failed_run_with_db_delay_removes_the_delay() -> None:
    if not _netem_works():
        pytest.skip("this kernel has no netem (sch_netem): test_delay_refused_without_netem covers it")
    output, status = _failed_run("DB_DELAY_MS=100")
    assert "Delay the db hosts' packets with netem" in output
    assert status["status"] == "incomplete" and status["failed_step"] == "the run", status
    assert "netem" not in on_host("db[0]", "tc qdisc show"), tail(output)


def test_delay_refused_without_netem() -> None:
    if _netem_works():
        pytest.skip("this kernel has netem: test_failed_run_with_db_delay_removes_the_delay covers it")
    before = run_dirs()
    done = run_make("bench", "APP=quarkus", "SCENARIO=greeting", "DB_DELAY_MS=100", timeout=600)
    assert done.returncode != 0
    assert "needs the kernel's netem qdisc" in done.stdout, tail(done.stdout)
    assert run_dirs() == before
    assert "netem" not in on_host("db[0]", "tc qdisc show")


# Spring MVC with Hikari's connection test query run at every checkout (aliveBypassWindowMs -1:
# always, not only after 500 ms idle): one SELECT more per request, a real deploy-time setting.
EXTRA_SELECT = ["-Dspring.datasource.hikari.connection-test-query=SELECT 1",
                "-Dcom.zaxxer.hikari.aliveBypassWindowMs=-1"]


def test_an_app_with_an_extra_select_per_request_is_refused_before_any_load(tmp_path: Path) -> None:
    extra = tmp_path / "extra-select.json"
    extra.write_text(json.dumps({"app_jvm_opts": EXTRA_SELECT}))
    before = run_dirs()
    done = run_make("bench", "APP=spring-mvc", "SCENARIO=zipcodes", "RATE=50", "DURATION=10s", "WARMUP=0s",
                    f"ANSIBLE_ARGS=-e @{extra}")
    assert done.returncode != 0, tail(done.stdout)
    run_dir = new_run_dir(before)
    line = "verify: GET /zipcodes/{zip} issued 2.00 selects per request, the contract says 1 (apps/contract/README.md)"
    status = read_json(run_dir / "status.json")
    assert (status["status"], status["failed_step"], status["reason"]) == ("incomplete", "verifying the app", line), status
    verdict = read_json(run_dir / "verify.json")
    assert verdict["status"] == "failed" and verdict["reason"] == line, verdict
    # No load was sent: no phase ran, no tool output came back, the run window never opened.
    assert "Warm up (not measured)" not in done.stdout and "Run the phase" not in done.stdout, tail(done.stdout)
    assert not [p.name for p in run_dir.iterdir() if p.name.startswith(("wrk2-", "vegeta-"))]
