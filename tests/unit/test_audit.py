"""Every rule fires and keeps quiet; the wrk2 fixtures get the verdicts issue 5 asks for."""

import dataclasses

import pytest

from perflab import audit, wrk2
from perflab.audit import (
    THRESHOLDS,
    DbSessions,
    Observations,
    Placement,
    StatementsPerRequest,
    Status,
    TierCpu,
)
from perflab.model import ErrorCounts, RunResult, ScenarioRun, SchemaError

from .helpers import WRK2_TARGET_RATES, wrk2_text


def fixture_result(name: str) -> RunResult:
    return wrk2.to_run_result(wrk2.parse(wrk2_text(name)), target_rate=WRK2_TARGET_RATES[name])


STEADY = fixture_result("wrk2-steady-2000rps.txt")
SCENARIO = ScenarioRun(name="greeting", rate=2000, duration_s=20, warmup_s=30)
CONTRACT = StatementsPerRequest(select=1.0, insert=0.5, update=0.0, delete=0.0)


def rule_result(rule: audit.Rule, run: RunResult = STEADY, **observed: object) -> audit.RuleResult:
    return rule(run, Observations(**observed), THRESHOLDS)  # type: ignore[arg-type]


# --- the fixtures ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "status", "failing_rules"),
    [
        ("wrk2-steady-2000rps.txt", Status.VALID, []),
        ("wrk2-errors-non2xx.txt", Status.INVALID, ["no_errors"]),
        ("wrk2-server-killed-midrun.txt", Status.INVALID, ["no_errors", "achieved_rate"]),
        ("wrk2-overloaded-600rps-capacity-250.txt", Status.INVALID, ["achieved_rate"]),
        ("wrk2-overloaded-uncorrected.txt", Status.INVALID, ["achieved_rate"]),
    ],
)
def test_fixture_verdicts(name: str, status: Status, failing_rules: list[str]) -> None:
    verdict = audit.audit(fixture_result(name))
    assert verdict.status is status
    assert [r.rule for r in verdict.reasons] == failing_rules


def test_fixture_evidence_names_the_numbers() -> None:
    killed = {r.rule: r.evidence for r in audit.audit(fixture_result("wrk2-server-killed-midrun.txt")).rules}
    assert killed["no_errors"] == "80 errors in 11984 requests (timeout 80)"
    assert killed["achieved_rate"] == "achieved 597.65 req/s of 1000 asked (59.8%; minimum 95%)"
    overloaded = audit.audit(fixture_result("wrk2-overloaded-600rps-capacity-250.txt"))
    assert overloaded.reasons[0].evidence == "achieved 227.81 req/s of 600 asked (38.0%; minimum 95%)"


def test_rules_without_data_say_so_and_do_not_decide_the_verdict() -> None:
    verdict = audit.audit(STEADY)
    assert verdict.status is Status.VALID
    skipped = {r.rule: r.evidence for r in verdict.not_evaluated}
    assert set(skipped) == {
        "loadgen_cpu", "app_is_bottleneck", "tiers_not_colocated", "warmed_up", "steady_mix", "same_db_work",
        "jit_quiet",
    }
    assert skipped["loadgen_cpu"] == "not evaluated: no Prometheus data"
    assert all(text.startswith("not evaluated") for text in skipped.values())


def test_the_worst_rule_decides() -> None:
    warn_only = audit.audit(STEADY, Observations(write_share_by_third=(0.5, 0.5, 0.6)))
    assert warn_only.status is Status.WARN
    both = audit.audit(
        STEADY, Observations(write_share_by_third=(0.5, 0.5, 0.6), loadgen_cpu=TierCpu(1.9, 2))
    )
    assert both.status is Status.INVALID
    assert [r.rule for r in both.reasons] == ["loadgen_cpu", "steady_mix"]


def test_every_threshold_has_a_reason() -> None:
    for spec in dataclasses.fields(THRESHOLDS):
        threshold = getattr(THRESHOLDS, spec.name)
        assert len(threshold.reason) > 40, spec.name


# --- each rule: one case that fires, one that keeps quiet --------------------------------


def test_run_complete() -> None:
    assert rule_result(audit.run_complete).status is Status.VALID
    interrupted = dataclasses.replace(STEADY, incomplete_reason="interrupted by the operator at 12 s")
    fired = rule_result(audit.run_complete, interrupted)
    assert (fired.status, fired.evidence) == (
        Status.INVALID, "the run is incomplete: interrupted by the operator at 12 s",
    )


def test_no_errors() -> None:
    assert rule_result(audit.no_errors).status is Status.VALID
    one_error = dataclasses.replace(STEADY, errors=ErrorCounts(connect=1))
    fired = rule_result(audit.no_errors, one_error)
    assert (fired.status, fired.evidence) == (Status.INVALID, "1 errors in 39904 requests (connect 1)")
    failed_requests_and_checks = dataclasses.replace(STEADY, errors=ErrorCounts(failed_requests=3, failed_checks=2))
    assert rule_result(audit.no_errors, failed_requests_and_checks).evidence == (
        "5 errors in 39904 requests (failed_requests 3, failed_checks 2)"
    )


def test_achieved_rate_at_the_threshold() -> None:
    just_enough = dataclasses.replace(STEADY, achieved_rate=1900.0)
    assert rule_result(audit.achieved_rate, just_enough).status is Status.VALID
    just_short = dataclasses.replace(STEADY, achieved_rate=1899.9)
    assert rule_result(audit.achieved_rate, just_short).status is Status.INVALID


# Results written before k6's retirement carry the requests it dropped (dropped_iterations).
RETIRED_TOOL = "k6"


def test_achieved_rate_states_the_dropped_share_of_old_results() -> None:
    dropping = dataclasses.replace(STEADY, tool=RETIRED_TOOL, achieved_rate=1000.0, dropped_iterations=20000)
    fired = rule_result(audit.achieved_rate, dropping)
    assert fired.status is Status.INVALID
    assert fired.evidence.endswith(
        f"; 20000 of 59904 offered requests dropped by {RETIRED_TOOL} (33.39%; tolerance 0.1%)")


def test_the_dropped_share_is_of_the_offered_requests() -> None:
    assert audit.dropped_share(dataclasses.replace(STEADY, requests=44987, dropped_iterations=13)) == 13 / 45000
    assert audit.dropped_share(dataclasses.replace(STEADY, dropped_iterations=0)) == 0.0
    assert audit.dropped_share(STEADY) is None  # wrk2 reports no drops
    assert audit.dropped_share(dataclasses.replace(STEADY, requests=0, dropped_iterations=0)) is None
    assert THRESHOLDS.max_dropped_share.value == 0.001 and "45,000" in THRESHOLDS.max_dropped_share.reason


def test_observations_written_before_the_retirement_of_k6_still_load() -> None:
    """observations.json held saturation.loadgen_dropped_per_s (a k6 figure nothing filled: null)."""
    old = Observations(saturation=audit.Saturation(app_pool_waiting_avg=0.5)).to_json().replace(
        '"db_disk_await_ms": null,', '"db_disk_await_ms": null,\n    "loadgen_dropped_per_s": null,')
    assert '"loadgen_dropped_per_s": null' in old
    loaded = Observations.from_json(old)
    assert loaded.saturation == audit.Saturation(app_pool_waiting_avg=0.5)
    with pytest.raises(SchemaError, match="unknown field.*loadgen_dropped_per_s"):
        Observations.from_json(old.replace('"loadgen_dropped_per_s": null', '"loadgen_dropped_per_s": 2.5'))
    with pytest.raises(SchemaError, match="not JSON"):
        Observations.from_json("{")


def test_loadgen_cpu() -> None:
    quiet = rule_result(audit.loadgen_cpu, loadgen_cpu=TierCpu(busy_cores=1.6, allotted_cores=2))
    assert (quiet.status, quiet.evidence) == (
        Status.VALID, "load generator used 1.60 of 2 cores (80%; maximum 80%)",
    )
    fired = rule_result(audit.loadgen_cpu, loadgen_cpu=TierCpu(busy_cores=1.7, allotted_cores=2))
    assert fired.status is Status.INVALID


def test_app_not_the_bottleneck_names_the_db_and_the_disk() -> None:
    fired = rule_result(
        audit.app_is_bottleneck,
        app_cpu=TierCpu(busy_cores=0.4, allotted_cores=4),
        db_cpu=TierCpu(busy_cores=1.0, allotted_cores=8),
        db_disk_busy=0.97,
        db_name="MariaDB 10.11 on perflab-db",
    )
    assert fired.status is Status.INVALID
    assert fired.evidence == (
        "not comparable: app used 0.40 of 4 cores (10%) while MariaDB 10.11 on perflab-db was the "
        "bottleneck: disk busy 97% of the window"
    )


def test_app_not_the_bottleneck_names_the_db_cpu() -> None:
    fired = rule_result(
        audit.app_is_bottleneck,
        app_cpu=TierCpu(busy_cores=1.0, allotted_cores=4),
        db_cpu=TierCpu(busy_cores=7.5, allotted_cores=8),
    )
    assert fired.status is Status.INVALID
    assert "the database was the bottleneck: CPU 7.50 of 8 cores (94%)" in fired.evidence


def test_app_bottleneck_quiet_when_the_app_works_or_the_db_idles() -> None:
    busy_app = rule_result(
        audit.app_is_bottleneck,
        app_cpu=TierCpu(busy_cores=3.8, allotted_cores=4),
        db_disk_busy=0.9,
    )
    assert busy_app.status is Status.VALID
    idle_db = rule_result(
        audit.app_is_bottleneck,
        app_cpu=TierCpu(busy_cores=0.4, allotted_cores=4),
        db_cpu=TierCpu(busy_cores=1.0, allotted_cores=8),
        db_disk_busy=0.2,
    )
    assert (idle_db.status, idle_db.evidence) == (
        Status.VALID, "app used 0.40 of 4 cores (10%); the database was not saturated",
    )
    no_db_data = rule_result(audit.app_is_bottleneck, app_cpu=TierCpu(busy_cores=0.4, allotted_cores=4))
    assert no_db_data.status is Status.NOT_EVALUATED


def test_tiers_colocated() -> None:
    fired = rule_result(
        audit.tiers_not_colocated,
        placements=(
            Placement("loadgen", "perflab-loadgen", "box", (0,)),
            Placement("app", "perflab-app", "box", (1, 2)),
            Placement("db", "perflab-db", "box", (2, 3)),
        ),
    )
    assert fired.status is Status.WARN
    assert fired.evidence == (
        "co-located: loadgen (perflab-loadgen) and app (perflab-app) on machine box, disjoint CPUs; "
        "loadgen (perflab-loadgen) and db (perflab-db) on machine box, disjoint CPUs; "
        "app (perflab-app) and db (perflab-db) on machine box, CPUs 2 shared"
    )
    quiet = rule_result(
        audit.tiers_not_colocated,
        placements=(Placement("loadgen", "lg", "m1"), Placement("app", "app", "m2"), Placement("db", "db", "m3")),
    )
    assert (quiet.status, quiet.evidence) == (Status.VALID, "3 tiers on separate machines")


def test_warm_up() -> None:
    with_scenario = dataclasses.replace(STEADY, scenario=SCENARIO)
    assert rule_result(audit.warmed_up, with_scenario, warmup_s=30).status is Status.VALID
    short = rule_result(audit.warmed_up, with_scenario, warmup_s=10)
    assert (short.status, short.evidence) == (
        Status.WARN, "warm-up 10 s, shorter than the 30 s scenario greeting asks",
    )
    missing = rule_result(audit.warmed_up, STEADY, warmup_s=0)
    assert missing.status is Status.WARN
    assert rule_result(audit.warmed_up, STEADY, warmup_s=30).status is Status.NOT_EVALUATED


def test_mix_drift() -> None:
    assert rule_result(audit.steady_mix, write_share_by_third=(0.50, 0.52, 0.55)).status is Status.VALID
    fired = rule_result(audit.steady_mix, write_share_by_third=(0.80, 0.50, 0.20))
    assert (fired.status, fired.evidence) == (
        Status.WARN, "write share 80.0% / 50.0% / 20.0% by third; drift 60.0 points (maximum 5)",
    )


def test_db_sessions_without_tls() -> None:
    fired = rule_result(audit.same_db_work, db_sessions=DbSessions(total=16, tls=15))
    assert (fired.status, fired.evidence) == (Status.INVALID, "not the same work: 1 of 16 DB sessions without TLS")
    quiet = rule_result(audit.same_db_work, db_sessions=DbSessions(total=16, tls=16))
    assert (quiet.status, quiet.evidence) == (
        Status.VALID,
        "all 16 DB sessions used TLS; statements per request not evaluated: no statement counts",
    )


def test_statements_per_request_against_the_contract() -> None:
    quiet = rule_result(
        audit.same_db_work,
        db_sessions=DbSessions(total=16, tls=16),
        statements_per_request=StatementsPerRequest(select=1.02, insert=0.49, update=0.0, delete=0.0),
        expected_statements_per_request=CONTRACT,
    )
    assert (quiet.status, quiet.evidence) == (
        Status.VALID, "all 16 DB sessions used TLS; statements per request as the contract says",
    )
    fired = rule_result(
        audit.same_db_work,
        statements_per_request=StatementsPerRequest(select=2.0, insert=0.5, update=0.0, delete=0.0),
        expected_statements_per_request=CONTRACT,
    )
    assert (fired.status, fired.evidence) == (
        Status.INVALID,
        "not the same work: 2.00 select statements per request where the contract says 1.00",
    )


def test_jit_still_compiling() -> None:
    assert rule_result(audit.jit_quiet, jit_compile_s=0.1).status is Status.VALID
    fired = rule_result(audit.jit_quiet, jit_compile_s=1.5)
    assert (fired.status, fired.evidence) == (
        Status.WARN, "JIT compiled for 1.5 s in the 20 s window (7.50%; maximum 1%)",
    )


def test_impossible_cpu_use_is_refused() -> None:
    with pytest.raises(ValueError, match="allotted_cores > 0"):
        TierCpu(busy_cores=1, allotted_cores=0)


@pytest.mark.parametrize(
    "bad",
    [{"db_disk_busy": 1.5}, {"write_share_by_third": (0.5, -0.1, 0.5)}, {"jit_compile_s": -1.0}],
)
def test_impossible_observations_are_refused(bad: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        Observations(**bad)  # type: ignore[arg-type]
