"""Every rule fires and keeps quiet; the wrk2 fixtures get the verdicts issue 5 asks for."""

import dataclasses
import json
from collections.abc import Mapping
from pathlib import Path

import pytest

from perflab import audit, collect, wrk2
from perflab.audit import THRESHOLDS, Status
from perflab.model import ErrorCounts, LoadgenShare, RunResult, ScenarioRun, SchemaError
from perflab.observations import (DbSessions, Observations, Placement, Saturation, ServerLatency, ServerQuantile,
                                  StatementsPerRequest, TierCpu, WarmupEnd)

from .helpers import WRK2_TARGET_RATES, bench_inputs, wrk2_text


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
        # 1463 answers of status >= 400 in 14988: the rate achieved is the successful ones' (issue 14).
        ("wrk2-errors-non2xx.txt", Status.INVALID, ["no_errors", "achieved_rate"]),
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
        "app_not_restarted", "db_up", "slo_p99", "queue_outside_the_app", "loadgen_cpu", "app_is_bottleneck",
        "tiers_not_colocated", "warmed_up", "steady_mix", "same_db_work", "jit_quiet", "load_on_time",
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


# The measured window of WINDOWED: 09:00:00Z to 09:01:00Z.
WINDOWED = dataclasses.replace(STEADY, started_at="2026-11-20T09:00:00Z", ended_at="2026-11-20T09:01:00Z")
WINDOW_START = 1795165200.0


def test_app_not_restarted() -> None:
    """Issue 14: the JVM killed mid-run and restarted by systemd within 5 s."""
    started_before = rule_result(audit.app_not_restarted, WINDOWED, app_jvm_started_at=WINDOW_START - 95)
    assert (started_before.status, started_before.evidence) == (
        Status.VALID, "the app's JVM started at 08:58:25Z, 95 s before the measured window, and did not start again in it")
    restarted = rule_result(audit.app_not_restarted, WINDOWED, app_jvm_started_at=WINDOW_START + 12.4)
    assert (restarted.status, restarted.evidence) == (
        Status.INVALID, "the app restarted 12 s into the measured window (its JVM started at 09:00:12Z)")
    verdict = audit.audit(WINDOWED, Observations(app_jvm_started_at=WINDOW_START + 12.4))
    assert (verdict.status, [r.rule for r in verdict.reasons]) == (Status.INVALID, ["app_not_restarted"])


def test_app_not_restarted_unknown_is_not_evaluated_with_the_reason() -> None:
    reason = "process-exporter reported no running JVM of the app (group app-java on the app host) in the window"
    unknown = rule_result(audit.app_not_restarted, WINDOWED, unobserved={"app_jvm_started_at": reason})
    assert (unknown.status, unknown.evidence) == (Status.NOT_EVALUATED, f"not evaluated: {reason}")
    # Observations written before the figure existed: unknown, never "not restarted".
    assert rule_result(audit.app_not_restarted, WINDOWED).evidence == (
        "not evaluated: no Prometheus data on the app's JVM (process-exporter's group app-java)")
    no_window = rule_result(audit.app_not_restarted, STEADY, app_jvm_started_at=WINDOW_START)
    assert (no_window.status, no_window.evidence) == (
        Status.NOT_EVALUATED, "not evaluated: the run recorded no start of its measured window")


def test_db_up() -> None:
    """Issue 14: `systemctl stop mariadb` 10 s into the measured phase."""
    up = rule_result(audit.db_up, db_down_s=0.0)
    assert (up.status, up.evidence) == (
        Status.VALID, "the DB was up at every scrape of the measured window (mysqld_exporter's mysql_up 1)")
    down = rule_result(audit.db_up, db_down_s=35.0, db_down_from=WINDOW_START + 10.5)
    assert (down.status, down.evidence) == (
        Status.INVALID, "the DB was down for ~35 s from 09:00:10Z (mysqld_exporter's mysql_up 0)")
    reason = "mysqld_exporter reported no mysql_up in the window"
    unknown = rule_result(audit.db_up, unobserved={"db_down_s": reason})
    assert (unknown.status, unknown.evidence) == (Status.NOT_EVALUATED, f"not evaluated: {reason}")
    assert rule_result(audit.db_up).evidence == (
        "not evaluated: no Prometheus data on the DB's availability (mysqld_exporter's mysql_up)")


def test_the_restart_and_the_outage_come_before_the_errors_they_explain() -> None:
    crashed = dataclasses.replace(WINDOWED, errors=ErrorCounts(timeout=2000, connect=140))
    verdict = audit.audit(crashed, Observations(app_jvm_started_at=WINDOW_START + 12, db_down_s=10.0))
    assert [r.rule for r in verdict.reasons] == ["app_not_restarted", "db_up", "no_errors"]


def test_no_errors() -> None:
    assert rule_result(audit.no_errors).status is Status.VALID
    one_error = dataclasses.replace(STEADY, errors=ErrorCounts(connect=1))
    fired = rule_result(audit.no_errors, one_error)
    assert (fired.status, fired.evidence) == (Status.INVALID, "1 errors in 39904 requests (connect 1)")
    failed_requests_and_checks = dataclasses.replace(STEADY, errors=ErrorCounts(failed_requests=3, failed_checks=2))
    assert rule_result(audit.no_errors, failed_requests_and_checks).evidence == (
        "5 errors in 39904 requests (failed_requests 3, failed_checks 2)"
    )


def test_wrk2_errors_say_they_include_its_calibration() -> None:
    # A cold app's first requests timed out during wrk2's calibration, which records no latency
    # but counts socket errors: the evidence says so, and what keeps them out.
    calibrated = dataclasses.replace(SCENARIO, parameters={"wrk2_calibration_ms": "10050", "timeout_s": "10"})
    timeouts = dataclasses.replace(STEADY, errors=ErrorCounts(timeout=18), scenario=calibrated)
    assert timeouts.tool == "wrk2"
    fired = rule_result(audit.no_errors, timeouts)
    assert fired.status is Status.INVALID
    assert fired.evidence == (
        "18 errors in 39904 requests (timeout 18); a timeout is a request unanswered after 10 s, counted at each of "
        "wrk2's checks every 2 s; wrk2 counts them over its whole invocation, its 10.05 s of calibration included: a "
        "warm-up phase keeps a cold app's first requests out")


def test_timeouts_name_the_timeout_the_run_had_and_other_errors_do_not() -> None:
    # loadgen_timeout_s, the same for both tools: the evidence says what a timeout was in this run.
    with_timeout = dataclasses.replace(SCENARIO, parameters={"timeout_s": "10"})
    vegeta_timeouts = dataclasses.replace(STEADY, tool="vegeta", errors=ErrorCounts(timeout=3), scenario=with_timeout)
    assert rule_result(audit.no_errors, vegeta_timeouts).evidence == (
        "3 errors in 39904 requests (timeout 3); a timeout is a request unanswered after 10 s")
    refused = dataclasses.replace(vegeta_timeouts, errors=ErrorCounts(connect=2))
    assert rule_result(audit.no_errors, refused).evidence == "2 errors in 39904 requests (connect 2)"


def test_achieved_rate_at_the_threshold() -> None:
    just_enough = dataclasses.replace(STEADY, achieved_rate=1900.0)
    assert rule_result(audit.achieved_rate, just_enough).status is Status.VALID
    just_short = dataclasses.replace(STEADY, achieved_rate=1899.9)
    assert rule_result(audit.achieved_rate, just_short).status is Status.INVALID


def test_a_loadgen_host_short_of_its_share_is_invalid_even_when_the_sum_holds() -> None:
    """Two hosts at 1000 req/s each: one kept 1050 (catching up), the other 880: 96.5% of the sum,
    but the second host was not the generator it was asked to be."""
    shares = (LoadgenShare("lg1", 1000.0, 1050.0, 30000), LoadgenShare("lg2", 1000.0, 880.0, 26400))
    uneven = dataclasses.replace(STEADY, target_rate=2000.0, achieved_rate=1930.0, loadgen_shares=shares)
    fired = rule_result(audit.achieved_rate, uneven)
    assert fired.status is Status.INVALID
    assert fired.evidence == ("achieved 1930 req/s of 2000 asked (96.5%; minimum 95%); per loadgen host: "
                              "lg1 1050 of 1000 (105.0%), lg2 880 of 1000 (88.0%); short of its share: lg2")
    even = dataclasses.replace(uneven, loadgen_shares=(shares[0], LoadgenShare("lg2", 1000.0, 960.0, 28800)),
                               achieved_rate=2010.0)
    assert rule_result(audit.achieved_rate, even).status is Status.VALID


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
    old = Observations(saturation=Saturation(app_pool_waiting_avg=0.5)).to_json().replace(
        '"db_disk_await_ms": null,', '"db_disk_await_ms": null,\n    "loadgen_dropped_per_s": null,')
    assert '"loadgen_dropped_per_s": null' in old
    loaded = Observations.from_json(old)
    assert loaded.saturation == Saturation(app_pool_waiting_avg=0.5)
    with pytest.raises(SchemaError, match="unknown field.*loadgen_dropped_per_s"):
        Observations.from_json(old.replace('"loadgen_dropped_per_s": null', '"loadgen_dropped_per_s": 2.5'))
    with pytest.raises(SchemaError, match="not JSON"):
        Observations.from_json("{")


def _with_p99(p99_ms: float, slo_p99_ms: float | None) -> RunResult:
    latency = dataclasses.replace(STEADY.latency_corrected,
                                  percentiles_ms={**STEADY.latency_corrected.percentiles_ms, "99": p99_ms})
    return dataclasses.replace(STEADY, latency_corrected=latency,
                               scenario=dataclasses.replace(SCENARIO, slo_p99_ms=slo_p99_ms))


def test_a_p99_over_the_slo_is_a_warning_with_both_numbers() -> None:
    fired = rule_result(audit.slo_p99, _with_p99(4000.0, 1100.0))
    assert (fired.status, fired.evidence) == (
        Status.WARN,
        "corrected p99 4000 ms is over the p99 SLO of 1100 ms (364%; maximum 100%): latency beyond the SLO "
        "means the rate asked is not sustained",
    )
    assert audit.audit(_with_p99(4000.0, 1100.0)).status is Status.WARN


def test_a_p99_within_the_slo_is_valid() -> None:
    quiet = rule_result(audit.slo_p99, _with_p99(20.0, 25.0))
    assert (quiet.status, quiet.evidence) == (
        Status.VALID, "corrected p99 20 ms within the p99 SLO of 25 ms (80%; maximum 100%)")
    assert rule_result(audit.slo_p99, _with_p99(25.0, 25.0)).status is Status.VALID  # at the SLO is within it


def test_without_an_slo_the_p99_is_not_evaluated() -> None:
    no_slo = rule_result(audit.slo_p99, _with_p99(4000.0, None))
    assert (no_slo.status, no_slo.evidence) == (
        Status.NOT_EVALUATED,
        "not evaluated: no p99 SLO is known for the run (slo_p99_ms in the scenario, or SLO_P99_MS=)",
    )
    assert rule_result(audit.slo_p99, STEADY).status is Status.NOT_EVALUATED  # no scenario recorded
    assert audit.audit(_with_p99(4000.0, None)).status is Status.VALID


def test_the_slo_threshold_has_its_reason() -> None:
    assert THRESHOLDS.max_p99_to_slo.value == 1.0
    assert "latency beyond the SLO means the rate is not sustained" in THRESHOLDS.max_p99_to_slo.reason


def test_loadgen_cpu() -> None:
    quiet = rule_result(audit.loadgen_cpu, loadgen_cpu=TierCpu(busy_cores=1.6, allotted_cores=2))
    assert (quiet.status, quiet.evidence) == (
        Status.VALID, "load generator used 1.60 of 2 cores (80%; maximum 80%)",
    )
    fired = rule_result(audit.loadgen_cpu, loadgen_cpu=TierCpu(busy_cores=1.7, allotted_cores=2))
    assert fired.status is Status.INVALID


LOADGEN_1 = TierCpu(busy_cores=0.31, allotted_cores=1, window_s=70.0)
LOADGEN_2_CALM = TierCpu(busy_cores=0.62, allotted_cores=1, window_s=70.0)
LOADGEN_2_SATURATED = TierCpu(busy_cores=0.85, allotted_cores=1, window_s=70.0)


def _two_loadgens(second: TierCpu) -> Observations:
    return Observations(loadgen_cpu=max(LOADGEN_1, second, key=lambda cpu: cpu.busy_fraction),
                        loadgen_hosts={"perflab-loadgen": LOADGEN_1, "perflab-loadgen2": second})


def test_loadgen_cpu_judges_every_loadgen_host() -> None:
    quiet = audit.loadgen_cpu(STEADY, _two_loadgens(LOADGEN_2_CALM), THRESHOLDS)
    assert (quiet.status, quiet.evidence) == (
        Status.VALID, "2 load generators used perflab-loadgen 0.31 of 1 cores (31%), "
                      "perflab-loadgen2 0.62 of 1 cores (62%); maximum 80%",
    )
    fired = audit.loadgen_cpu(STEADY, _two_loadgens(LOADGEN_2_SATURATED), THRESHOLDS)
    assert (fired.status, fired.evidence) == (
        Status.INVALID, "2 load generators used perflab-loadgen 0.31 of 1 cores (31%), "
                        "perflab-loadgen2 0.85 of 1 cores (85%); maximum 80%, exceeded by perflab-loadgen2",
    )
    verdict = audit.audit(STEADY, _two_loadgens(LOADGEN_2_SATURATED))
    assert (verdict.status, [r.rule for r in verdict.reasons]) == (Status.INVALID, ["loadgen_cpu"])


def test_loadgen_cpu_is_the_busiest_loadgen_hosts() -> None:
    hosts = {"perflab-loadgen": LOADGEN_1, "perflab-loadgen2": LOADGEN_2_SATURATED}
    for wrong in (LOADGEN_1, None, TierCpu(busy_cores=0.85, allotted_cores=1)):
        with pytest.raises(ValueError, match="loadgen_cpu is the busiest host's figure"):
            Observations(loadgen_cpu=wrong, loadgen_hosts=hosts)
    with pytest.raises(ValueError, match="one host or more"):
        Observations(loadgen_cpu=LOADGEN_1, loadgen_hosts={})


def test_observations_keep_the_loadgen_hosts_and_load_without_them() -> None:
    both = _two_loadgens(LOADGEN_2_SATURATED)
    assert Observations.from_json(both.to_json()) == both
    document = json.loads(Observations(loadgen_cpu=LOADGEN_1).to_json())
    del document["loadgen_hosts"]  # observations.json written before several loadgen hosts
    old = Observations.from_json(json.dumps(document))
    assert (old.loadgen_cpu, old.loadgen_hosts) == (LOADGEN_1, None)
    assert rule_result(audit.loadgen_cpu, loadgen_cpu=LOADGEN_1).evidence == (
        "load generator used 0.31 of 1 cores (31%; maximum 80%)")


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


def test_a_db_that_was_down_is_never_not_saturated() -> None:
    # The lab's DB stopped 16 s into a zipcodes run: its CPU idle, the app's too, yet the DB limited it.
    down = rule_result(
        audit.app_is_bottleneck,
        app_cpu=TierCpu(busy_cores=0.38, allotted_cores=1),
        db_cpu=TierCpu(busy_cores=0.1, allotted_cores=1),
        db_disk_busy=0.01,
        db_down_s=15.0,
        db_name="MariaDB 10.11.18 on perflab-db",
    )
    assert (down.status, down.evidence) == (
        Status.INVALID, "not comparable: app used 0.38 of 1 cores (38%) while MariaDB 10.11.18 on perflab-db was down "
                        "for ~15 s of the window (rule db_up)")


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
    no_disk = rule_result(
        audit.app_is_bottleneck,
        app_cpu=TierCpu(busy_cores=0.1, allotted_cores=1),
        db_cpu=TierCpu(busy_cores=0.2, allotted_cores=1),
        unobserved={"db_disk_busy": "no Prometheus data: Prometheus at http://127.0.0.1:9090 is unreachable"},
    )
    no_db_data = rule_result(audit.app_is_bottleneck, app_cpu=TierCpu(busy_cores=0.4, allotted_cores=4))
    assert no_db_data.status is Status.NOT_EVALUATED


def test_an_idle_app_beside_a_db_whose_disk_was_not_seen_is_not_evaluated() -> None:
    """Issue 24: Prometheus stopped mid-run, the DB's CPU known from the bench's samples, its disk from
    nowhere: a DB not seen busy is not a DB seen idle, and the app's 10% names no tier."""
    unreachable = "no Prometheus data: Prometheus at http://127.0.0.1:9090 is unreachable"
    no_disk = rule_result(
        audit.app_is_bottleneck,
        app_cpu=TierCpu(busy_cores=0.1, allotted_cores=1),
        db_cpu=TierCpu(busy_cores=0.2, allotted_cores=1),
        db_name="MariaDB 10.11.18 on perflab-db",
        unobserved={"db_disk_busy": unreachable},
    )
    assert (no_disk.status, no_disk.evidence) == (
        Status.NOT_EVALUATED,
        "not evaluated: app used 0.10 of 1 cores (10%), well below its cores, and whether MariaDB 10.11.18 on "
        f"perflab-db limited it cannot be told: not observed: its disk ({unreachable})")
    # The app at 95% of its cores limited the run whatever the DB did: judged on what was seen.
    busy_app = rule_result(audit.app_is_bottleneck, app_cpu=TierCpu(busy_cores=0.95, allotted_cores=1),
                           db_cpu=TierCpu(busy_cores=0.2, allotted_cores=1), unobserved={"db_disk_busy": unreachable})
    assert (busy_app.status, busy_app.evidence) == (
        Status.VALID, f"app used 0.95 of 1 cores (95%); the database not observed: its disk ({unreachable}); the app "
                      "was not well below its cores")
    # Its shared CPUs 97% busy with the DB's queue unseen: whether the DB was starved cannot be told.
    starved_unseen = rule_result(
        audit.app_is_bottleneck, app_cpu=TierCpu(busy_cores=0.2, allotted_cores=1),
        db_cpu=TierCpu(busy_cores=0.3, allotted_cores=1), db_disk_busy=0.03, cpus_busy={"db": 0.97},
        saturation=Saturation(app_pool_waiting_avg=3.1),
        unobserved={"saturation.db_threads_running_avg":
                    "mysqld_exporter reported no mysql_global_status_threads_running in the window"})
    assert (starved_unseen.status, starved_unseen.evidence) == (
        Status.NOT_EVALUATED,
        "not evaluated: app used 0.20 of 1 cores (20%), well below its cores, and whether the database limited it "
        "cannot be told: not observed: whether its CPUs, 97% busy with every process of the machine, held statements "
        "queued and the app's requests waiting (mysqld_exporter reported no mysql_global_status_threads_running in "
        "the window)")


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


SETTLED = WarmupEnd(seconds=5, target_rate=2000, answered_per_s=1998.4, errors=0, p99_ms=3.1, source="vegeta")


def test_warm_up() -> None:
    with_scenario = dataclasses.replace(STEADY, scenario=dataclasses.replace(SCENARIO, scenario_warmup_s=30))
    settled = rule_result(audit.warmed_up, with_scenario, warmup_s=30, warmup_end=SETTLED)
    assert (settled.status, settled.evidence) == (
        Status.VALID, "warm-up 30 s (scenario greeting asks 30 s); its last 5 s answered 1998.4 of 2000 req/s (100%; "
                      "minimum 95%), corrected p99 3.1 ms (no SLO known)")
    short = rule_result(audit.warmed_up, with_scenario, warmup_s=10, warmup_end=SETTLED)
    assert (short.status, short.evidence) == (
        Status.WARN, "warm-up 10 s, shorter than the 30 s scenario greeting asks",
    )
    missing = rule_result(audit.warmed_up, STEADY, warmup_s=0)
    assert missing.status is Status.WARN
    assert rule_result(audit.warmed_up, STEADY, warmup_s=30).status is Status.NOT_EVALUATED


ZIPCODES = ScenarioRun(name="zipcodes", rate=300, duration_s=40, warmup_s=10, slo_p99_ms=50.0, scenario_warmup_s=30)


def test_warm_up_is_held_against_the_scenarios_own_not_the_override() -> None:
    """Issue 24: WARMUP=10s read "warm-up 10 s (scenario zipcodes asks 10 s)" and passed; zipcodes asks 30 s."""
    run = dataclasses.replace(STEADY, scenario=ZIPCODES)
    short = rule_result(audit.warmed_up, run, warmup_s=10, warmup_end=SETTLED)
    assert (short.status, short.evidence) == (Status.WARN, "warm-up 10 s, shorter than the 30 s scenario zipcodes asks")
    # A result written before the scenario's own was kept: the override cannot be told from it.
    old = dataclasses.replace(STEADY, scenario=dataclasses.replace(ZIPCODES, scenario_warmup_s=None))
    assert rule_result(audit.warmed_up, old, warmup_s=10).evidence == (
        "not evaluated: 10 s of warm-up ran; the warm-up scenario zipcodes's own file asks for was not recorded (a run "
        "made before perflab kept it beside WARMUP=)")


def test_a_warm_up_that_had_not_settled_at_its_end() -> None:
    """Issue 24: the warm-up ended answering 40 of 300 a second at a p99 of 9.2 s, and warmed_up was VALID."""
    run = dataclasses.replace(STEADY, scenario=dataclasses.replace(ZIPCODES, warmup_s=30))
    cold = WarmupEnd(seconds=5, target_rate=300, answered_per_s=40.2, errors=0, p99_ms=9200.0, source="vegeta")
    fired = rule_result(audit.warmed_up, run, warmup_s=30, warmup_end=cold)
    assert (fired.status, fired.evidence) == (
        Status.WARN, "warm-up 30 s (scenario zipcodes asks 30 s) had not settled: its last 5 s answered 40.2 of 300 "
                     "req/s (13%; minimum 95%), corrected p99 9,200 ms over the SLO of 50 ms")
    # At the rate, but its answers still slow (the app's own p99 from its histogram, a wrk2 run).
    slow = WarmupEnd(seconds=5, target_rate=300, answered_per_s=299.6, errors=0, p99_ms=180.0, source="app-histogram")
    assert rule_result(audit.warmed_up, run, warmup_s=30, warmup_end=slow).evidence == (
        "warm-up 30 s (scenario zipcodes asks 30 s) had not settled: its last 5 s answered 299.6 of 300 req/s "
        "(100%; minimum 95%), the app's own p99 180 ms over the SLO of 50 ms")
    failing = WarmupEnd(seconds=5, target_rate=300, answered_per_s=296.0, errors=12, p99_ms=8.0, source="vegeta")
    assert rule_result(audit.warmed_up, run, warmup_s=30, warmup_end=failing).status is Status.WARN
    unseen = rule_result(audit.warmed_up, run, warmup_s=30, unobserved={
        "warmup_end": "timeseries.json holds no warm-up (a vegeta run keeps it in vegeta-warmup*.jsonl.gz, a wrk2 "
                      "run reads it from the app's histogram)"})
    assert unseen.status is Status.NOT_EVALUATED and unseen.evidence == (
        "not evaluated: warm-up 30 s (scenario zipcodes asks 30 s), but whether it settled was not observed: "
        "timeseries.json holds no warm-up (a vegeta run keeps it in vegeta-warmup*.jsonl.gz, a wrk2 run reads it "
        "from the app's histogram)")


def test_mix_drift() -> None:
    assert rule_result(audit.steady_mix, write_share_by_third=(0.50, 0.52, 0.55)).status is Status.VALID
    fired = rule_result(audit.steady_mix, write_share_by_third=(0.80, 0.50, 0.20))
    assert (fired.status, fired.evidence) == (
        Status.WARN, "write share 80.0% / 50.0% / 20.0% by third; drift 60.0 points (maximum 5)",
    )


def test_db_sessions_without_tls() -> None:
    fired = rule_result(audit.same_db_work, db_sessions=DbSessions(total=16, tls=15))
    assert (fired.status, fired.evidence) == (Status.INVALID, "not the same work: 1 of 16 DB sessions without TLS")
    half = rule_result(audit.same_db_work, db_sessions=DbSessions(total=16, tls=16),
                       unobserved={"statements_per_request": "no Prometheus data: Prometheus at "
                                                             "http://127.0.0.1:9090 is unreachable"})
    # Issue 24: Prometheus stopped mid-run left this VALID on its TLS half alone.
    assert (half.status, half.evidence) == (
        Status.NOT_EVALUATED,
        "not evaluated: statements per request not evaluated: no Prometheus data: Prometheus at "
        "http://127.0.0.1:9090 is unreachable (seen: all 16 DB sessions used TLS)",
    )
    # What was seen is enough to fail it, whatever was not.
    untls = rule_result(audit.same_db_work, db_sessions=DbSessions(total=16, tls=14))
    assert (untls.status, untls.evidence) == (Status.INVALID, "not the same work: 2 of 16 DB sessions without TLS")


def test_statements_per_request_after_a_restart_in_the_window_are_not_judged() -> None:
    """Issue 24: the JVM killed 20 s into the window and started again by systemd; the app's counters
    restarted from zero and same_db_work read "2.78 select statements per request" for the contract's 1."""
    run = dataclasses.replace(STEADY, started_at="2026-11-27T09:00:00Z")
    restarted = rule_result(
        audit.same_db_work, run, db_sessions=DbSessions(total=16, tls=16),
        statements_per_request=StatementsPerRequest(select=2.78, insert=0.0, update=0.0, delete=0.0),
        expected_statements_per_request=StatementsPerRequest(select=1.0, insert=0.0, update=0.0, delete=0.0),
        app_jvm_started_at=audit.window_start(run) + 24.0)  # type: ignore[operator]
    assert (restarted.status, restarted.evidence) == (
        Status.NOT_EVALUATED,
        "not evaluated: statements per request not evaluated: the app restarted 24 s into the measured window (its "
        "JVM started at 09:00:24Z), and its request counters started again from zero: the window's requests are not "
        "known (seen: all 16 DB sessions used TLS)")
    before = rule_result(
        audit.same_db_work, run, db_sessions=DbSessions(total=16, tls=16),
        statements_per_request=StatementsPerRequest(select=1.01, insert=0.0, update=0.0, delete=0.0),
        expected_statements_per_request=StatementsPerRequest(select=1.0, insert=0.0, update=0.0, delete=0.0),
        app_jvm_started_at=audit.window_start(run) - 95.0)  # type: ignore[operator]
    assert before.status is Status.VALID


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


# --- the app's cost, beside the verdict --------------------------------------------------------

ROOT = Path(__file__).resolve().parents[2]


APP_CPU = TierCpu(busy_cores=0.5, allotted_cores=1, window_s=30.0)  # 15 CPU-s


def test_the_app_cost_is_cpu_seconds_per_1000_requests_and_max_rss() -> None:
    observations = Observations(app_cpu=APP_CPU, app_max_rss_bytes=300 * 1024 * 1024)
    verdict, cost = audit.audit(STEADY, observations), audit.app_cost(STEADY, observations)
    assert (verdict.app_cpu_s_per_1000_requests, verdict.app_max_rss_bytes, verdict.app_cost) == (
        cost.cpu_s_per_1000_requests, cost.max_rss_bytes, cost.sentence)
    assert cost.cpu_s_per_1000_requests == pytest.approx(15 * 1000 / 39904)
    assert cost.max_rss_bytes == 300 * 1024 * 1024
    assert cost.sentence == ("0.376 CPU-s per 1,000 requests (15.00 CPU-s, 0.50 cores over 30.0 s, "
                             "for 39904 requests); max RSS 300.0 MiB")
    assert verdict.status is Status.VALID  # figures, not a rule


def test_the_app_cost_leaves_out_the_lab_s_exporters_on_the_app_host() -> None:
    """The app host's CPU at the window's bounds holds the lab's own exporters too (node_exporter and
    process-exporter in its container: 0.02 of its core at a 2 s scrape, 0.01 at 5 s, against Quarkus' 0.16 at
    2,000 req/s): the app's cost counts the host's CPU less theirs, and says how much that was."""
    cpu = TierCpu(busy_cores=0.5, allotted_cores=1, window_s=30.0, instrument_cores=0.02)  # 15 CPU-s, 0.6 of them
    cost = audit.app_cost(STEADY, Observations(app_cpu=cpu))
    assert cost.cpu_s_per_1000_requests == pytest.approx(14.4 * 1000 / 39904)
    assert cost.sentence.startswith("0.361 CPU-s per 1,000 requests (14.40 CPU-s, 0.50 cores over 30.0 s less the "
                                    "lab's exporters' 0.020 on its host, for 39904 requests); ")
    # The busy cores the judge reads against the app's allotted ones stay the host's (its exporters compete for them).
    assert cpu.busy_fraction == 0.5 and cpu.cpu_s == 15.0
    with pytest.raises(ValueError, match="exporters"):
        TierCpu(busy_cores=0.5, allotted_cores=1, window_s=30.0, instrument_cores=0.6)


def test_the_app_cost_says_what_it_lacks() -> None:
    nothing = audit.app_cost(STEADY, Observations())
    assert (nothing.cpu_s_per_1000_requests, nothing.max_rss_bytes) == (None, None)
    assert nothing.sentence == ("CPU per 1,000 requests not evaluated: no CPU figure of the app; "
                                "max RSS not evaluated: no Prometheus data on the app's memory")
    # Observations written before the CPU window was kept: busy cores, but over how long is unknown.
    old = audit.app_cost(STEADY, Observations(app_cpu=TierCpu(0.5, 1), unobserved={
        "app_max_rss_bytes": "process-exporter reported no app-java group on the app host"}))
    assert old.cpu_s_per_1000_requests is None
    assert old.sentence == ("CPU per 1,000 requests not evaluated: the observations give the app's busy cores but "
                            "not the seconds they average over (written before perflab kept them); max RSS not "
                            "evaluated: process-exporter reported no app-java group on the app host")


def test_a_cpu_window_is_positive() -> None:
    assert APP_CPU.cpu_s == 15.0 and TierCpu(0.5, 1).cpu_s is None
    with pytest.raises(ValueError, match="positive number of seconds"):
        TierCpu(busy_cores=0.5, allotted_cores=1, window_s=0)


def _bench_inputs(scenario: Mapping[str, object]) -> dict[str, object]:
    """bench-inputs.json as playbooks/bench.yml writes it, with what perflab collect reads."""
    sample = {"host": "perflab-app", "machine": "m", "cpus": [1], "usage_usec": 0, "at": 0.0}
    return {
        "run": {"scenario": {"name": "zipcodes", "rate": 500, "connections": 16, "threads": 2, **scenario},
                "phases": {"measure": {"environment": {"WRITE_RATIO": "0.5"}}}, "tool": "wrk2",
                "target_url": "http://perflab-app:8080", "duration_s": 60, "warmup_s": 30, "calibration_ms": 0},
        "db_delay_ms": 0, "measure_started_at": "2026-11-24T00:07:50Z", "measure_ended_at": "2026-11-24T00:09:00Z",
        "deployment": {"app": "quarkus", "start_to_ready_ms": 900.0},
        "cpu_start": {"app": sample}, "cpu_end": {"app": sample}, "tiers": {"app": ["perflab-app"]}, "hosts": {},
        "versions": {}, "run_id": "20261124T000740Z-quarkus-zipcodes", "raw_files": ["wrk2-measure.txt"],
        "raw_output": "wrk2-measure.txt",
    }


@pytest.mark.parametrize(("given", "carried"), [(50.0, 50.0), (None, None)])
def test_the_context_carries_the_scenarios_slo(given: float | None, carried: float | None) -> None:
    """The SLO the bench ran with (bench-inputs.json); bench-inputs written before it carried one has none."""
    scenario = {} if given is None else {"slo_p99_ms": given}
    context = collect.context(bench_inputs(_bench_inputs(scenario)))
    assert context.scenario is not None and context.scenario.slo_p99_ms == carried
    result = STEADY.with_context(context)
    assert rule_result(audit.slo_p99, result).status is (Status.NOT_EVALUATED if carried is None else Status.VALID)


def _sample(host: str, usage_usec: int, at: float, cpus: tuple[int, ...] = (0,)) -> dict[str, object]:
    return {"usage_usec": usage_usec, "cpus": list(cpus), "machine": "m", "at": at, "host": host}


def _loadgen_inputs(hosts_cpu: Mapping[str, object] | None) -> dict[str, object]:
    inputs = _bench_inputs({})
    inputs["cpu_start"] = {"loadgen": _sample("perflab-loadgen", 1_000_000, 100.0)}
    inputs["cpu_end"] = {"loadgen": _sample("perflab-loadgen", 22_700_000, 170.0)}  # 21.7 CPU-s in 70 s
    if hosts_cpu is not None:
        inputs["loadgen_hosts_cpu"] = hosts_cpu
    return inputs


def test_one_loadgen_host_is_the_tiers_cpu_as_before() -> None:
    tier = TierCpu(busy_cores=21.7 / 70, allotted_cores=1, window_s=70.0)
    one = {"perflab-loadgen": {"start": _sample("perflab-loadgen", 5, 0.0), "end": _sample("perflab-loadgen", 9, 1.0)}}
    for inputs in (_loadgen_inputs(None), _loadgen_inputs(one)):
        assert collect.loadgen_cpus(bench_inputs(inputs)) == (tier, None)


def test_several_loadgen_hosts_each_get_their_cpu_and_the_tier_the_busiest() -> None:
    inputs = _loadgen_inputs({
        "perflab-loadgen": {"start": _sample("perflab-loadgen", 1_000_000, 100.0),
                            "end": _sample("perflab-loadgen", 22_700_000, 170.0)},
        "perflab-loadgen2": {"start": _sample("perflab-loadgen2", 0, 100.5, cpus=(0, 1)),
                             "end": _sample("perflab-loadgen2", 119_000_000, 170.5, cpus=(0, 1))},
    })
    tier, hosts = collect.loadgen_cpus(bench_inputs(inputs))
    assert hosts == {"perflab-loadgen": TierCpu(busy_cores=21.7 / 70, allotted_cores=1, window_s=70.0),
                     "perflab-loadgen2": TierCpu(busy_cores=119 / 70, allotted_cores=2, window_s=70.0)}
    assert tier == hosts["perflab-loadgen2"]  # 1.70 of 2 cores (85%) against 0.31 of 1 (31%)
    judged = rule_result(audit.loadgen_cpu, loadgen_cpu=tier, loadgen_hosts=hosts)
    assert judged.status is Status.INVALID
    assert judged.evidence.endswith("perflab-loadgen2 1.70 of 2 cores (85%); maximum 80%, exceeded by perflab-loadgen2")


@pytest.mark.parametrize(("extra", "run", "expected"), [
    ({}, {}, {}),
    ({"start_skew_ms": 3.5}, {"host_rates": [50, 50]}, {"start_skew_ms": "3.5", "host_rates": "50,50"}),
    ({"start_skew_ms": 12}, {"host_rates": [300.0, 133.5, 1]}, {"start_skew_ms": "12", "host_rates": "300,133.5,1"}),
    ({"start_skew_ms": 0}, {"host_rates": [500]}, {"start_skew_ms": "0"}),
    ({"start_skew_ms": None}, {"host_rates": []}, {}),
], ids=["absent", "two-hosts", "three-hosts", "one-host", "null"])
def test_the_context_carries_the_hosts_start_skew_and_rates(
        extra: dict[str, object], run: dict[str, object], expected: dict[str, str]) -> None:
    inputs = {**_bench_inputs({}), **extra}
    inputs["run"] = {**inputs["run"], **run}  # type: ignore[dict-item]
    scenario = collect.context(bench_inputs(inputs)).scenario
    assert scenario is not None
    parameters = scenario.parameters
    assert {k: v for k, v in parameters.items() if k in ("start_skew_ms", "host_rates")} == expected


# --- queue_outside_the_app: the generator's p50 against the app's own (issue 12, item 3) ------------


def with_p50(p50_ms: float) -> RunResult:
    """STEADY with its corrected p50 set to P50_MS."""
    latency = dataclasses.replace(STEADY.latency_corrected,
                                  percentiles_ms={**STEADY.latency_corrected.percentiles_ms, "50": p50_ms})
    return dataclasses.replace(STEADY, latency_corrected=latency)


# Report 2's /hello/1000 at 300 req/s as the lab ran it: every answer of the app just after its 1 s delay.
HELLO_1000 = ServerLatency(routes=("GET /hello/{latency}",), requests=5871.0, p50=ServerQuantile(1025.5, 1000.0, 1050.0),
                           p99=ServerQuantile(1049.0, 1000.0, 1050.0))
# Greeting on a warm app: the app's p50 in its 0.25 to 0.5 ms bucket.
GREETING = ServerLatency(routes=("GET /greeting/{name}",), requests=40_000.0, p50=ServerQuantile(0.41, 0.25, 0.5),
                         p99=ServerQuantile(0.93, 0.5, 1.0), p999=ServerQuantile(1.8, 1.0, 2.0))


def test_a_queue_in_front_of_the_apps_request_threads_warns_and_is_named() -> None:
    """Report 2's MVC with 200 threads: the generator's p50 3.96 s, the app's 1 s; Tomcat's queue held the rest."""
    tomcat_full = Saturation(app_request_threads_busy_avg=178.0, app_request_threads_max=200.0,
                             app_request_queue_avg=152.3, app_request_queue_max=174.0)
    result = rule_result(audit.queue_outside_the_app, with_p50(3960.0), server_latency=HELLO_1000,
                         saturation=tomcat_full)
    assert (result.status, result.evidence) == (Status.WARN, (
        "the generator's corrected p50 3,960 ms exceeds the app's own p50 1,026 ms (its histogram's bucket 1,000 to "
        "1,050 ms, over 5,871 requests on GET /hello/{latency}) by more than its bucket's top and 5 ms for the network "
        "(1,055 ms): requests queued outside the app's request handling: in the generator, the network, or in front "
        "of the app's request threads; the app's gauges saw a queue there: up to 174 requests waited for one of the "
        "app's request threads (152.3 on average, perflab_request_queue)"))
    # Where the app's gauges saw no queue, the sentence names none: the generator or the network remain.
    quiet_pool = Saturation(app_request_queue_avg=0.0, app_request_queue_max=0.0)
    elsewhere = rule_result(audit.queue_outside_the_app, with_p50(7.2), server_latency=GREETING, saturation=quiet_pool)
    assert elsewhere.status is Status.WARN and elsewhere.evidence.endswith("in front of the app's request threads")
    carriers = Saturation(app_virtual_queue_avg=3.5, app_virtual_queue_max=12.0)
    virtual = rule_result(audit.queue_outside_the_app, with_p50(90.0), server_latency=GREETING, saturation=carriers)
    assert virtual.evidence.endswith("up to 12 virtual threads waited for a carrier (3.5 on average, "
                                     "perflab_virtual_thread_queue)")


def test_a_generator_that_agrees_with_the_app_within_the_network_keeps_the_rule_quiet() -> None:
    # MVC with 400 threads at the same rate: the generator's p50 1,003 ms inside the app's bucket.
    kept_up = rule_result(audit.queue_outside_the_app, with_p50(1003.0), server_latency=HELLO_1000)
    assert (kept_up.status, kept_up.evidence) == (Status.VALID, (
        "the generator's corrected p50 1,003 ms is within 5 ms of the top of the bucket of the app's own p50 1,026 ms "
        "(its histogram's bucket 1,000 to 1,050 ms, over 5,871 requests on GET /hello/{latency})"))
    # wrk2's steady greeting (p50 0.89 ms) over an app answering in 0.25 to 0.5 ms, and the edge: 5.5 ms is not over.
    assert rule_result(audit.queue_outside_the_app, STEADY, server_latency=GREETING).status is Status.VALID
    assert rule_result(audit.queue_outside_the_app, with_p50(5.5), server_latency=GREETING).status is Status.VALID
    assert rule_result(audit.queue_outside_the_app, with_p50(5.51), server_latency=GREETING).status is Status.WARN


def test_without_the_apps_histogram_the_rule_is_not_evaluated_and_says_why() -> None:
    """TechEmpower's apps may export nothing: not observed, never an error."""
    reason = ("the app's own metrics are unobserved: Prometheus' app job has no target for tfb-quarkus (an app whose "
              "manifest declares no metrics endpoint is not scraped)")
    unscraped = rule_result(audit.queue_outside_the_app, unobserved={"server_latency": reason})
    assert (unscraped.status, unscraped.evidence) == (Status.NOT_EVALUATED, f"not evaluated: {reason}")
    beyond = ServerLatency(routes=("GET /hello/{latency}",), requests=100.0, p50=ServerQuantile(10_000.0, 10_000.0, None),
                           p99=ServerQuantile(10_000.0, 10_000.0, None))
    assert rule_result(audit.queue_outside_the_app, with_p50(20_000.0), server_latency=beyond).evidence == (
        "not evaluated: the app's own p50 is beyond its histogram's last bound (10,000 ms): how far cannot be told")
    assert audit.audit(STEADY, Observations(server_latency=GREETING)).status is Status.VALID


def test_a_load_that_started_late_against_the_window_warns() -> None:
    """Issue 24: two loadgen hosts started 1,507 ms after the window's agreed start; over a 20 s window
    that is 7.5% of the load run past the window's end."""
    window = STEADY.duration_s
    on_time = rule_result(audit.load_on_time, load_start_late_ms=12.0)
    assert on_time.status is Status.VALID
    assert on_time.evidence.startswith(f"the load started 12 ms after the window's agreed start ({0.012 / window:.2%} of the")
    late = rule_result(audit.load_on_time, load_start_late_ms=1507.5, load_start_skew_ms=1507.5)
    assert late.status is Status.WARN
    assert f"({1.5075 / window:.2%} of the {window:g} s window; maximum 2%); the loadgen hosts started 1507.5 ms apart" \
        in late.evidence
    assert "ran past the window's end" in late.evidence
    # Exactly at the tolerance is still on time; unknown is said so, not judged.
    assert rule_result(audit.load_on_time, load_start_late_ms=0.02 * window * 1000).status is Status.VALID
    assert rule_result(audit.load_on_time).status is Status.NOT_EVALUATED
