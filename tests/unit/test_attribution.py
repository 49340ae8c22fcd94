"""Every branch of the bottleneck attribution fires, and stays quiet on a run that kept up."""

import dataclasses
import json
from pathlib import Path
from typing import Any

from perflab import rundir
from perflab.attribution import THRESHOLDS, attribute, db_stretches, with_app_layers
from perflab.audit import THRESHOLDS as AUDIT_THRESHOLDS
from perflab.audit import Status, Threshold, app_is_bottleneck, audit, host_cpu
from perflab.model import ErrorCounts, LatencyDistribution, RunResult, ScenarioRun
from perflab.observations import Observations, Saturation, TierCpu
from perflab.observe import TierSeries, Utilization
from perflab.profile import LayerShare

LATENCY = LatencyDistribution(percentiles_ms={"50": 2.0, "99": 9.0}, mean_ms=2.5, max_ms=20.0)


# Only results written before k6's retirement report requests the generator dropped.
RETIRED_TOOL = "k6"


def run(achieved: float = 200.0, target: float = 200.0, dropped: int | None = None,
        requests: int | None = None) -> RunResult:
    requests = int(achieved * 30) if requests is None else requests
    return RunResult(tool="wrk2" if dropped is None else RETIRED_TOOL, target_rate=target, achieved_rate=achieved,
                     requests=requests, duration_s=requests / achieved, latency_corrected=LATENCY,
                     errors=ErrorCounts(), dropped_iterations=dropped)


# The local default at 200 req/s: app on its own core, db/loadgen/monitoring sharing core 0.
CALM = Observations(
    loadgen_cpu=TierCpu(0.25, 1), app_cpu=TierCpu(0.30, 1), db_cpu=TierCpu(0.10, 1), db_disk_busy=0.05,
    cpus_busy={"loadgen": 0.55, "db": 0.55, "app": 0.35},
    saturation=Saturation(app_pool_waiting_avg=0.0, app_pool_waiting_max=0.0, app_threads_blocked_max=0.0,
                          db_threads_running_avg=1.0, db_disk_await_ms=0.4, network_link_fraction={"app": 0.001}),
)


def with_(obs: Observations, **saturation: Any) -> Observations:
    return dataclasses.replace(obs, saturation=dataclasses.replace(obs.saturation or Saturation(), **saturation))


def test_a_run_that_kept_up_names_no_tier() -> None:
    found = attribute(run(), CALM)
    assert found.limiting_tier is None
    assert found.sentence.startswith("no tier was saturated: the system kept up with the offered rate, 200 of 200")
    assert "busy without a queue" not in found.sentence
    assert [line.split(":")[0] for line in found.evidence] == ["loadgen", "app", "db"]
    assert "DB pool waits 0.00 avg / 0 max" in found.evidence[1]


def test_busy_without_a_queue_is_noted_but_not_blamed_nor_called_unsaturated() -> None:
    shared_core_busy = dataclasses.replace(CALM, cpus_busy={"loadgen": 0.97, "db": 0.97, "app": 0.35})
    found = attribute(run(), shared_core_busy)
    assert found.limiting_tier is None
    assert found.sentence.startswith("not attributed: the system kept up with the offered rate, 200 of 200 req/s "
                                     "(100%), but busy without a queue in front of them: loadgen (its CPUs 97% busy")
    assert "db (its CPUs 97% busy" in found.sentence and "no tier was saturated" not in found.sentence


def test_db_saturated_with_app_pool_waits_is_the_db() -> None:
    hogged = dataclasses.replace(
        with_(CALM, app_pool_waiting_avg=6.0, app_pool_waiting_max=40.0, db_threads_running_avg=9.0),
        db_cpu=TierCpu(0.7, 1), cpus_busy={"loadgen": 1.0, "db": 1.0, "app": 0.4})
    found = attribute(run(achieved=150.0, dropped=900), hogged)
    assert found.limiting_tier == "db"
    assert "database: the app had 6.0 requests waiting for a DB connection on average (at most 40)" in found.sentence
    assert "its CPUs 100% busy with every process of the machine" in found.sentence
    assert "9.0 statements in progress in the DB on average" in found.sentence
    # the generator dropped iterations, but the answers were slow: a symptom, not the limit
    assert "loadgen" not in found.sentence.split("while")[0]


STARVED = dataclasses.replace(
    with_(CALM, app_pool_waiting_avg=87.3, app_pool_waiting_max=228.0, db_threads_running_avg=1.0),
    app_cpu=TierCpu(0.15, 1), db_cpu=TierCpu(0.03, 1), cpus_busy={"loadgen": 0.5, "db": 0.5, "app": 0.93})


def test_pool_waits_with_the_apps_cpus_taken_by_others_are_the_app() -> None:
    found = attribute(run(achieved=139.452, dropped=1690), STARVED)
    assert found.limiting_tier == "app", found.sentence
    assert found.sentence.startswith("limited by the app's CPU: its CPUs 93% busy with every process of the machine, "
                                     "itself using 0.15 of 1 cores; it held its DB connections")


def test_pool_waits_with_the_dbs_cpus_taken_and_the_app_free_are_the_db() -> None:
    """The CPU hog on the DB host: its shared core saturated, the app's core free."""
    hog = dataclasses.replace(STARVED, cpus_busy={"loadgen": 1.0, "db": 1.0, "app": 0.4}, db_cpu=TierCpu(0.8, 1))
    found = attribute(run(achieved=139.452, dropped=1690), hog)
    assert found.limiting_tier == "db", found.sentence
    assert found.sentence.endswith("its CPUs 100% busy with every process of the machine; the app had CPU to spare, "
                                   "at 139.452 of 200 req/s (70%).")


def test_pool_waits_with_both_tiers_starved_are_not_attributed() -> None:
    """A machine loaded by others (seen with four labs on the 2-core dev box): nothing can tell."""
    both = dataclasses.replace(STARVED, cpus_busy={"loadgen": 1.0, "db": 1.0, "app": 0.93})
    found = attribute(run(achieved=139.452, dropped=1690), both)
    assert found.limiting_tier is None
    assert "both the app's CPUs (93%) and the DB's (100%) were busy with other processes" in found.sentence


def test_a_starved_app_that_kept_up_is_not_blamed() -> None:
    found = attribute(run(), dataclasses.replace(CALM, cpus_busy={"loadgen": 0.5, "db": 0.5, "app": 0.95}))
    assert found.limiting_tier is None


def test_db_disk_busy_with_pool_waits_is_the_db_disk() -> None:
    disk = dataclasses.replace(with_(CALM, app_pool_waiting_avg=3.0, app_pool_waiting_max=16.0, db_disk_await_ms=35.0),
                               db_disk_busy=0.93)
    found = attribute(run(achieved=120.0), disk)
    assert found.limiting_tier == "db"
    assert "disk busy 93% of the window, await 35.0 ms" in found.sentence


def test_pool_waits_with_an_idle_db_are_its_round_trips() -> None:
    delayed = with_(CALM, app_pool_waiting_avg=12.0, app_pool_waiting_max=30.0)
    found = attribute(run(achieved=160.0), delayed)
    assert found.limiting_tier == "db"
    assert "round trips" in found.sentence and "not saturated" in found.sentence


def test_app_cpu_saturated_is_the_app() -> None:
    found = attribute(run(achieved=150.0), dataclasses.replace(CALM, app_cpu=TierCpu(0.97, 1)))
    assert found.limiting_tier == "app"
    assert found.sentence.startswith("limited by the app: its CPU 0.97 of 1 cores (97%)")


def test_app_cpu_saturated_with_pool_waits_but_an_idle_db_is_still_the_app() -> None:
    busy_app = with_(dataclasses.replace(CALM, app_cpu=TierCpu(0.97, 1)), app_pool_waiting_avg=2.0)
    assert attribute(run(achieved=150.0), busy_app).limiting_tier == "app"


def test_statements_in_progress_in_an_idle_db_behind_a_saturated_app_wait_on_the_app() -> None:
    """A CI run of the app driven past its quarter core: 0.26 of 0.25 cores, 10.7 requests waiting for a
    connection, 2.3 statements in progress while the DB used 0.04 cores. The statements wait on the app
    (a client short of CPU reads its answers late); the same queue with the app's CPU to spare is the DB."""
    starved_app = with_(dataclasses.replace(CALM, app_cpu=TierCpu(0.26, 0.25), db_cpu=TierCpu(0.04, 1)),
                        app_pool_waiting_avg=10.7, app_pool_waiting_max=14.0, db_threads_running_avg=2.3)
    found = attribute(run(achieved=81.0, target=400.0), starved_app)
    assert found.limiting_tier == "app", found.sentence
    assert found.sentence.startswith("limited by the app's CPU: its CPU 0.26 of 0.25 cores"), found.sentence
    assert "the DB's own CPU and disk were idle (2.3 statements in progress on average, waiting on the app)" in found.sentence
    app_to_spare = with_(dataclasses.replace(CALM, db_cpu=TierCpu(0.04, 1)),
                         app_pool_waiting_avg=10.7, app_pool_waiting_max=14.0, db_threads_running_avg=2.3)
    assert attribute(run(achieved=81.0, target=400.0), app_to_spare).limiting_tier == "db"
    busy_db = with_(dataclasses.replace(CALM, app_cpu=TierCpu(0.26, 0.25), db_cpu=TierCpu(0.95, 1)),
                    app_pool_waiting_avg=10.7, app_pool_waiting_max=14.0, db_threads_running_avg=2.3)
    assert attribute(run(achieved=81.0, target=400.0), busy_db).limiting_tier == "db"


def test_blocked_threads_are_the_app() -> None:
    found = attribute(run(achieved=150.0), with_(CALM, app_threads_blocked_max=40.0))
    assert found.limiting_tier == "app"
    assert "up to 40 threads BLOCKED on monitors" in found.sentence


# Report 2 on the lab: MVC with 200 Tomcat threads at 300 req/s of 1 s requests achieved 195.7,
# its CPU idle, no DB in the request; 400 threads held the rate with 300 of them busy.
def test_every_request_thread_busy_while_requests_queue_is_the_apps_request_threads() -> None:
    capped = with_(CALM, app_request_threads_busy_avg=199.6, app_request_threads_max=200.0, app_request_queue_avg=95.3)
    found = attribute(run(achieved=195.7, target=300.0), capped)
    assert found.limiting_tier == "app"
    assert found.sentence.startswith(
        "limited by the app's request threads (200 of 200 busy on average; 95.3 requests waiting for one), "
        "at 195.7 of 300 req/s (65%)"), found.sentence
    assert "request threads 199.6 of 200 busy, 95.3 requests waiting" in found.evidence[1]


def test_a_full_pool_sampled_between_requests_is_still_full() -> None:
    # The lab, MVC with 200 threads at 300 req/s of 1 s requests: 160 of 200 busy on average over 10 s.
    sampled = with_(CALM, app_request_threads_busy_avg=159.6, app_request_threads_max=200.0, app_request_queue_avg=132.4)
    found = attribute(run(achieved=199.8, target=300.0), sampled)
    assert found.sentence.startswith("limited by the app's request threads (160 of 200 busy on average; "
                                     "132.4 requests waiting for one)"), found.sentence
    # A pool that queues while most of it is idle is not full (a core-sized pool growing late).
    idle = with_(CALM, app_request_threads_busy_avg=60.0, app_request_threads_max=200.0, app_request_queue_avg=5.0)
    assert attribute(run(achieved=200.0, target=200.0), idle).limiting_tier is None


def test_a_pool_with_threads_to_spare_or_no_queue_is_not_the_limit() -> None:
    roomy = with_(CALM, app_request_threads_busy_avg=300.0, app_request_threads_max=400.0, app_request_queue_avg=0.0)
    assert attribute(run(achieved=300.0, target=300.0), roomy).sentence.startswith("no tier was saturated")
    # All busy but nothing waiting (exactly at the cap): busy, not queueing.
    full = with_(CALM, app_request_threads_busy_avg=200.0, app_request_threads_max=200.0, app_request_queue_avg=0.2)
    assert attribute(run(achieved=200.0, target=200.0), full).limiting_tier is None
    # The lab, 400 threads at 300 req/s: a task waits now and then while the pool starts a thread.
    growing = with_(CALM, app_request_threads_busy_avg=267.1, app_request_threads_max=400.0, app_request_queue_avg=0.6)
    assert attribute(run(achieved=297.8, target=300.0), growing).sentence.startswith("no tier was saturated")


def test_drops_behind_exhausted_request_threads_are_not_the_generator() -> None:
    capped = with_(CALM, app_request_threads_busy_avg=200.0, app_request_threads_max=200.0, app_request_queue_avg=40.0)
    found = attribute(run(achieved=210.0, target=300.0, dropped=2700), capped)
    assert found.limiting_tier == "app" and "request threads" in found.sentence, found.sentence


def test_request_threads_waiting_for_db_connections_are_the_db() -> None:
    waiting = with_(CALM, app_request_threads_busy_avg=200.0, app_request_threads_max=200.0, app_request_queue_avg=30.0,
                    app_pool_waiting_avg=150.0, app_pool_waiting_max=184.0, db_threads_running_avg=15.0)
    found = attribute(run(achieved=150.0, target=300.0), waiting)
    assert found.limiting_tier == "db", found.sentence


def test_a_link_near_its_speed_is_the_network() -> None:
    found = attribute(run(achieved=150.0), with_(CALM, network_link_fraction={"app": 0.85}))
    assert found.limiting_tier == "network:app"
    assert "85% of its link speed" in found.sentence


def test_a_busy_generator_is_the_loadgen() -> None:
    found = attribute(run(achieved=150.0), dataclasses.replace(CALM, loadgen_cpu=TierCpu(0.9, 1)))
    assert found.limiting_tier == "loadgen"
    assert "load generator: its CPU 0.90 of 1 cores (90%)" in found.sentence


def _two_loadgens(first: TierCpu, second: TierCpu) -> Observations:
    """Observations as perflab collect writes them for two loadgen hosts: each one's CPU,
    and the busiest one's as the tier's."""
    return dataclasses.replace(CALM, loadgen_cpu=max(first, second, key=lambda cpu: cpu.busy_fraction),
                               loadgen_hosts={"perflab-loadgen": first, "perflab-loadgen2": second})


def test_one_saturated_generator_of_two_is_the_loadgen() -> None:
    """The other host at 31% averages the tier below 80%; the busiest host is what limits."""
    found = attribute(run(achieved=150.0), _two_loadgens(TierCpu(0.31, 1), TierCpu(0.85, 1)))
    assert found.limiting_tier == "loadgen", found.sentence
    assert "load generator: its CPU 0.85 of 1 cores (85%)" in found.sentence
    assert found.evidence[0] == "loadgen: CPU 0.85 of 1 cores, its CPUs 55% busy (all processes)"
    calm = attribute(run(achieved=150.0), _two_loadgens(TierCpu(0.31, 1), TierCpu(0.62, 1)))
    assert calm.limiting_tier is None


def test_drops_with_nothing_downstream_queueing_are_the_loadgen() -> None:
    """5% of the offered requests dropped while the app and the DB were free: the generator."""
    found = attribute(run(achieved=190.0, requests=42750, dropped=2250), CALM)
    assert found.limiting_tier == "loadgen", found.sentence
    assert found.sentence == ("limited by the load generator: 5.00% of the offered requests dropped (10.0/s; "
                              "tolerance 0.1%), at 190 of 200 req/s (95%).")
    assert found.tiers[0].dropped_share == 0.05 and found.evidence[0].endswith(
        "5.00% of the offered requests dropped (10.0/s)")


def test_a_few_drops_in_a_run_that_kept_up_are_not_the_generator() -> None:
    """The flaky CI run: 13 requests dropped in 45,000 at 100.0% of the rate blamed the generator."""
    found = attribute(run(achieved=200.0, requests=45000, dropped=13), CALM)
    assert found.limiting_tier is None, found.sentence
    assert found.sentence == ("no tier was saturated: the system kept up with the offered rate, 200 of 200 req/s "
                              "(100%); 0.03% of the offered requests dropped (0.1/s), within the 0.1% tolerance.")
    assert found.tiers[0].saturated == ()


def test_drops_over_the_tolerance_behind_a_queueing_app_are_not_the_generator() -> None:
    queued = with_(CALM, app_threads_blocked_max=40.0)
    assert attribute(run(achieved=190.0, requests=42750, dropped=2250), queued).limiting_tier == "app"


def test_a_generator_whose_shared_cpus_others_keep_busy_is_not_named_for_them() -> None:
    """Its CPUs busy with every process of its machine: noted, but the drops are the reason."""
    contended = dataclasses.replace(CALM, cpus_busy={"loadgen": 0.99, "db": 0.4, "app": 0.35})
    found = attribute(run(achieved=190.0, requests=42750, dropped=2250), contended)
    assert found.limiting_tier == "loadgen"
    assert "its CPUs" not in found.sentence, found.sentence
    assert attribute(run(achieved=150.0), contended).limiting_tier is None  # short, no drops, own CPU free


def test_without_observations_nothing_is_attributed() -> None:
    found = attribute(run(achieved=100.0), Observations())
    assert found.limiting_tier is None
    assert found.sentence.startswith("not attributed: no utilization or saturation was observed")


def test_a_shortfall_without_any_threshold_crossed_says_so() -> None:
    found = attribute(run(achieved=100.0), CALM)
    assert found.limiting_tier is None
    assert "fell short (100 of 200 req/s (50%))" in found.sentence


def test_attribution_is_stored_as_json_and_thresholds_have_reasons() -> None:
    text = attribute(run(), CALM).to_json()
    assert '"limiting_tier": null' in text and '"schema_version": 1' in text
    for spec in dataclasses.fields(THRESHOLDS):
        threshold: Threshold = getattr(THRESHOLDS, spec.name)
        assert len(threshold.reason) > 40, spec.name


# --- issue 14: a run is never judged wrong --------------------------------------------------

UNREACHABLE = ("no Prometheus data: Prometheus at http://127.0.0.1:9090 is unreachable ([Errno 111] Connection "
               "refused): is the lab up (make lab-status) and the URL right?")
# Prometheus stopped mid-run: the CPU comes from the bench's cgroup samples, nothing else.
PROMETHEUS_STOPPED = Observations(
    loadgen_cpu=TierCpu(0.25, 1), app_cpu=TierCpu(0.30, 1), db_cpu=TierCpu(0.10, 1),
    unobserved=dict.fromkeys(("db_disk_busy", "cpus_busy", "saturation", "app_jvm_started_at", "db_down_s"),
                             UNREACHABLE))


def test_missing_saturation_is_never_read_as_health() -> None:
    found = attribute(run(), PROMETHEUS_STOPPED)
    assert found.limiting_tier is None
    assert found.sentence == (
        "not attributed: the system kept up with the offered rate, 200 of 200 req/s (100%), but whether a tier was "
        f"saturated cannot be told: not observed: each tier's CPUs, the DB's disk and saturation ({UNREACHABLE}).")


def test_each_missing_figure_is_named_with_its_reason() -> None:
    """An app Prometheus does not scrape (TechEmpower's, no metrics endpoint): its queues are unknown."""
    not_scraped = ("the app's own metrics are unobserved: Prometheus' app job has no target for tfb-quarkus (an app "
                   "whose manifest declares no metrics endpoint is not scraped)")
    unscraped = dataclasses.replace(
        with_(CALM, app_pool_waiting_avg=None, app_pool_waiting_max=None, app_threads_blocked_max=None),
        cpus_busy={"loadgen": 0.55, "db": 0.55},
        unobserved={"saturation.app_pool_waiting_avg": not_scraped, "saturation.app_threads_blocked_max": not_scraped})
    found = attribute(run(), unscraped)
    assert found.limiting_tier is None and "no tier was saturated" not in found.sentence
    assert found.sentence.endswith(
        "cannot be told: not observed: the app tier's CPUs (not recorded why); the app's DB pool waits and the app's "
        f"blocked threads ({not_scraped}).")
    # A shortfall with figures missing says which, too.
    short = attribute(run(achieved=100.0), unscraped)
    assert short.sentence.startswith("not attributed: the system fell short (100 of 200 req/s (50%)) but no tier's")
    assert short.sentence.endswith(f"the app's DB pool waits and the app's blocked threads ({not_scraped}).")


def windowed(result: RunResult, **errors: int) -> RunResult:
    """The run with its measured window (09:00:00Z on) and its errors."""
    return dataclasses.replace(result, started_at="2026-11-20T09:00:00Z", ended_at="2026-11-20T09:00:30Z",
                               errors=ErrorCounts(**errors))


WINDOW_START = 1795165200.0


def test_a_run_with_errors_never_kept_up() -> None:
    found = attribute(windowed(run(), http_status=60), CALM)
    assert found.limiting_tier is None
    assert found.sentence == "60 of 6000 requests failed (http_status 60); no tier was saturated, at 200 of 200 req/s (100%)."
    # Whatever else it says comes after the failures.
    app_bound = attribute(windowed(run(achieved=150.0), timeout=12), dataclasses.replace(CALM, app_cpu=TierCpu(0.97, 1)))
    assert app_bound.limiting_tier == "app"
    assert app_bound.sentence.startswith("12 of 4500 requests failed (timeout 12); limited by the app: its CPU 0.97")
    blind = attribute(windowed(run(), connect=140), PROMETHEUS_STOPPED)
    assert blind.sentence.startswith("140 of 6000 requests failed (connect 140); not attributed: whether a tier was "
                                     "saturated cannot be told, at 200 of 200 req/s (100%): not observed: ")
    for sentence in (found.sentence, app_bound.sentence, blind.sentence):
        assert "kept up" not in sentence


def test_an_app_restart_is_told_first_and_never_kept_up() -> None:
    """The JVM killed mid-run and restarted by systemd within 5 s: 2,140 errors, 98% of the rate."""
    restarted = dataclasses.replace(CALM, app_jvm_started_at=WINDOW_START + 12.3)
    found = attribute(windowed(run(achieved=196.0, requests=5880), timeout=2000, connect=140), restarted)
    assert found.sentence == ("the app restarted 12 s into the measured window (its JVM started at 09:00:12Z); "
                              "2140 of 5880 requests failed (connect 140, timeout 2000); no tier was saturated, "
                              "at 196 of 200 req/s (98%).")
    quiet = attribute(windowed(run()), dataclasses.replace(CALM, app_jvm_started_at=WINDOW_START - 60))
    assert quiet.sentence.startswith("no tier was saturated: the system kept up")


def test_a_db_outage_is_named_first_as_the_limit() -> None:
    """`systemctl stop mariadb` 10 s into the measured phase: errors counted, the outage named."""
    outage = dataclasses.replace(CALM, db_down_s=15.0, db_down_from=WINDOW_START + 10.2)
    found = attribute(windowed(run(achieved=140.0, requests=4200), connect=1800), outage)
    assert found.limiting_tier == "db"
    assert found.sentence == ("limited by the database: the DB was down for ~15 s from 09:00:10Z (mysqld_exporter's "
                              "mysql_up 0); 1800 of 4200 requests failed (connect 1800), at 140 of 200 req/s (70%).")
    both = attribute(windowed(run(achieved=140.0, requests=4200), connect=1800),
                     dataclasses.replace(outage, app_jvm_started_at=WINDOW_START + 20))
    assert both.limiting_tier == "db"
    assert both.sentence.startswith("the app restarted 20 s into the measured window (its JVM started at 09:00:20Z); "
                                    "limited by the database: the DB was down")
    assert attribute(windowed(run()), dataclasses.replace(CALM, db_down_s=0.0)).limiting_tier is None


# Issue 14's field report: a CPU hog in the db host during zipcodes; p99 192 ms against a 50 ms SLO,
# the DB's cgroup 29 of 30 CPU-seconds (0.97 of its core), the app idle, no pool waits seen.
DB_HOST_HOGGED = dataclasses.replace(CALM, db_cpu=TierCpu(0.97, 1), cpus_busy={"loadgen": 0.6, "db": 1.0, "app": 0.3})


def slow(p99_ms: float, slo_ms: float | None = 50.0) -> RunResult:
    latency = LatencyDistribution(percentiles_ms={"50": 20.0, "99": p99_ms}, mean_ms=30.0, max_ms=478.0)
    scenario = ScenarioRun(name="zipcodes", rate=200, duration_s=30, warmup_s=5, slo_p99_ms=slo_ms)
    return dataclasses.replace(run(), latency_corrected=latency, scenario=scenario)


def test_a_db_host_whose_own_processes_fill_its_cpu_while_p99_misses_the_slo_is_the_db() -> None:
    found = attribute(slow(192.0), DB_HOST_HOGGED)
    assert found.limiting_tier == "db", found.sentence
    assert found.sentence == ("limited by the DB host's CPU: its own processes used 0.97 of 1 cores (97%), with p99 "
                              "192 ms over the SLO of 50 ms; the app used 0.30 of 1 cores, at 200 of 200 req/s (100%).")
    assert "not saturated" not in found.sentence


def test_a_busy_db_host_within_the_slo_and_the_rate_is_not_blamed() -> None:
    found = attribute(slow(40.0), DB_HOST_HOGGED)
    assert found.limiting_tier is None and found.sentence.startswith("not attributed: the system kept up"), found.sentence
    unknown_slo = attribute(slow(192.0, slo_ms=None), DB_HOST_HOGGED)
    assert unknown_slo.limiting_tier is None, unknown_slo.sentence


# --- the other request-handling schemes: event loops, virtual threads (issue 15, item 1) ---------

# Quarkus' worker pool (pool="quarkus-worker"), at rest: the /metrics scrape is a blocking route and
# takes one of its 200 threads (max(8 x CPUs, 200)); its event loops, one per CPU and at least 2.
QUARKUS_AT_REST = dict(app_request_threads_busy_avg=1.0, app_request_threads_max=200.0, app_request_queue_avg=0.0,
                       app_request_queue_max=0.0, app_event_loop_pending_avg=0.1, app_event_loop_pending_max=1.0,
                       app_event_loops=2.0)
# MVC on virtual threads on the app's one core: the scrape's own virtual thread holds the one carrier
# at every sample, and the requests that arrive meanwhile wait behind it.
VIRTUAL_AT_REST = dict(app_virtual_carriers_busy_avg=1.0, app_virtual_carriers_max=1.0,
                       app_virtual_carriers_started_max=1.0, app_virtual_queue_avg=0.0, app_virtual_queue_max=0.0)


def test_an_idle_app_whose_scrape_takes_a_thread_is_never_attributed() -> None:
    for at_rest in (QUARKUS_AT_REST, VIRTUAL_AT_REST):
        found = attribute(run(), with_(CALM, **at_rest))
        assert found.limiting_tier is None and found.sentence.startswith("no tier was saturated"), found.sentence
        app = next(f for f in found.tiers if f.tier == "app")
        assert app.saturated == ()
    # At 1,000 req/s the scrape (a few ms on the one carrier) finds a few requests waiting: 4 ms each.
    scraped = with_(CALM, **{**VIRTUAL_AT_REST, "app_virtual_queue_avg": 4.0, "app_virtual_queue_max": 7.0})
    assert attribute(run(achieved=1000.0, target=1000.0), scraped).limiting_tier is None
    # Quarkus' greeting on a worker thread at 1,500 req/s (report 3): a few of its 200 threads busy.
    worker = with_(CALM, **{**QUARKUS_AT_REST, "app_request_threads_busy_avg": 6.2, "app_request_queue_avg": 0.0})
    assert attribute(run(achieved=1500.0, target=1500.0), worker).limiting_tier is None


def test_quarkus_worker_pool_full_with_a_backlog_is_the_apps_request_threads() -> None:
    full = with_(CALM, **{**QUARKUS_AT_REST, "app_request_threads_busy_avg": 198.0, "app_request_queue_avg": 410.0,
                          "app_request_queue_max": 655.0})
    found = attribute(run(achieved=190.0, target=300.0), full)
    assert found.limiting_tier == "app" and found.sentence.startswith(
        "limited by the app's request threads (198 of 200 busy on average; 410.0 requests waiting for one)")


def test_event_loops_with_a_backlog_of_tasks_are_the_app() -> None:
    """WebFlux with a blocking call on its 4 loops: the CPU has room, the loops' queues do not drain."""
    blocked = with_(CALM, app_event_loop_pending_avg=182.4, app_event_loop_pending_max=412.0, app_event_loops=4.0)
    found = attribute(run(achieved=151.0, target=300.0), blocked)
    assert found.limiting_tier == "app"
    assert found.sentence.startswith("limited by the app's event loops (4 loops; 182.4 tasks pending on average, "
                                     "412 at most), at 151 of 300 req/s (50%)"), found.sentence
    assert "request threads" not in found.sentence
    assert "event loops 4, 182.4 tasks pending on average (412 at most)" in found.evidence[1]
    # Below ten a loop (40 over 4): a busy loop's queue, not a backlog.
    busy = with_(CALM, app_event_loop_pending_avg=38.0, app_event_loop_pending_max=90.0, app_event_loops=4.0)
    assert attribute(run(), busy).limiting_tier is None


def test_virtual_threads_waiting_for_a_carrier_are_the_apps_carriers() -> None:
    """MVC on virtual threads, its carriers pinned: the JDK starts more, virtual threads wait, the CPU idles."""
    pinned = with_(CALM, app_virtual_carriers_busy_avg=1.0, app_virtual_carriers_max=1.0,
                   app_virtual_carriers_started_max=3.0, app_virtual_queue_avg=45.0, app_virtual_queue_max=120.0)
    found = attribute(run(achieved=180.0, target=300.0), pinned)
    assert found.limiting_tier == "app"
    assert found.sentence.startswith(
        "limited by the app's virtual-thread carriers (1.0 of 1 carriers busy on average, 3 started: the JDK adding "
        "carriers for blocked ones; 45.0 virtual threads waiting for one, about 250 ms a request), at 180 of 300 req/s"
    ), found.sentence
    assert "request threads" not in found.sentence


def test_a_saturated_cpu_is_named_before_the_loops_or_carriers_it_starves() -> None:
    starved = dataclasses.replace(
        with_(CALM, app_event_loop_pending_avg=90.0, app_event_loop_pending_max=200.0, app_event_loops=2.0),
        app_cpu=TierCpu(0.97, 1))
    found = attribute(run(achieved=250.0, target=300.0), starved)
    assert found.sentence.startswith("limited by the app: its CPU 0.97 of 1 cores (97%) and its event loops 90.0 "
                                     "tasks pending on average over 2 loops (at most 200)"), found.sentence


# Issue 24: four busy loops on the db host (one core) from a third of the way into a 40 s window; the
# window's averages read the DB host's CPU 62% busy and "no tier was saturated". utilization.json's series
# every 5 s (a 15 s rate: the hog shows from 20 s and fills the core from 25 s), mysqld's own ~0.1 core.
HOG_START = 1_795_000_000.0


def hogged_utilization(service: tuple[float, ...] = (0.12, 0.12, 0.12, 0.12, 0.11, 0.10, 0.10, 0.10, 0.10)
                       ) -> Utilization:
    grid = [HOG_START + 5 * k for k in range(9)]
    db = TierSeries(allotted_cores=1.0, busy_cores=tuple(zip(grid, (0.13, 0.13, 0.14, 0.27, 0.58, 0.93, 0.99, 1.0, 1.0))),
                    service_cores=tuple(zip(grid, service)))
    app = TierSeries(allotted_cores=1.0, busy_cores=tuple(zip(grid, (0.3,) * 9)))
    return Utilization(source="http://127.0.0.1:9090", start=HOG_START, end=HOG_START + 40, step_s=5.0,
                       tiers={"db": db, "app": app})


HOGGED_MIDWAY = dataclasses.replace(CALM, db_cpu=TierCpu(0.62, 1), db_name="MariaDB 10.11.18 on perflab-db",
                                    service_cpu={"loadgen": 0.2, "app": 0.3, "db": 0.11})


def test_a_db_host_hogged_for_a_stretch_is_named_for_it_and_the_hog_is_not_mariadb() -> None:
    found = attribute(run(), HOGGED_MIDWAY, utilization=hogged_utilization())
    assert found.limiting_tier == "db", found.sentence
    assert found.sentence == (
        "limited by the DB host's CPU for a stretch of the window: its CPU over 80% from 20 s for 20 s of the window "
        "(98% busy there; 62% over the whole window), of which MariaDB 10.11.18 used 0.10 of 1 cores and other "
        "processes of its host 0.88: starved by other processes than MariaDB 10.11.18; the app used 0.30 of 1 cores, "
        "at 200 of 200 req/s (100%).")
    db = next(f for f in found.tiers if f.tier == "db")
    assert (db.stretch_from_s, db.stretch_s, db.service_cores, db.other_cores) == (20.0, 20.0, 0.11, 0.51)
    # Without the series, the window's average alone: what issue 24 saw.
    assert attribute(run(), HOGGED_MIDWAY).sentence.startswith("no tier was saturated")
    # MariaDB itself filling the core for that stretch: credited to it.
    own = attribute(run(), HOGGED_MIDWAY, utilization=hogged_utilization(
        service=(0.12, 0.12, 0.13, 0.26, 0.57, 0.92, 0.98, 0.99, 0.99)))
    assert own.sentence.startswith("limited by the DB host's CPU for a stretch of the window: its CPU over 80% from "
                                   "20 s for 20 s of the window (98% busy there; 62% over the whole window), MariaDB "
                                   "10.11.18 itself 0.97 of 1 cores"), own.sentence


def test_the_apps_waits_for_a_connection_beside_a_db_host_hogged_for_a_stretch_name_that_stretch() -> None:
    """A lab run (issue 24's test): 16 busy loops in the db container from 10 s into a 41 s window, the DB
    host 80% busy on average, the app's requests waiting for a connection. The sentence said the DB host's
    CPU "not saturated (slow answers: network delay or locks)", the words of a fault-free run."""
    waiting = dataclasses.replace(HOGGED_MIDWAY, saturation=Saturation(app_pool_waiting_avg=0.7, app_pool_waiting_max=6.0))
    found = attribute(run(), waiting, utilization=hogged_utilization())
    assert found.limiting_tier == "db", found.sentence
    assert found.sentence == (
        "limited by the database: the app had 0.7 requests waiting for a DB connection on average (at most 6) while "
        "the DB host had its CPU over 80% from 20 s for 20 s of the window (98% busy there; 62% over the whole "
        "window), of which MariaDB 10.11.18 used 0.10 of 1 cores and other processes of its host 0.88: starved by "
        "other processes than MariaDB 10.11.18, at 200 of 200 req/s (100%).")
    # Without the series, the window's average alone: round trips, as before.
    assert "round trips" in attribute(run(), waiting).sentence


def test_an_app_filling_its_core_to_the_threshold_for_a_stretch_is_not_starved_by_others() -> None:
    """A CI simulation's short run (quarkus zipcodes, 200 req/s after 15 s of warm-up): the app's JVM at 0.90 of
    its 1 core from 25 s for 10 s, the host 91% busy there, other processes 0.01. It was called "starved by
    other processes than the app's JVM"; the JVM itself filled the core (its JIT after the warm-up)."""
    grid = [HOG_START + 5 * k for k in range(9)]
    app = TierSeries(allotted_cores=1.0, busy_cores=tuple(zip(grid, (0.8, 0.8, 0.8, 0.8, 0.8, 0.91, 0.91, 0.91, 0.8))),
                     service_cores=tuple(zip(grid, (0.79, 0.79, 0.79, 0.79, 0.79, 0.90, 0.90, 0.90, 0.79))))
    utilization = Utilization(source="http://127.0.0.1:9090", start=HOG_START, end=HOG_START + 40, step_s=5.0,
                              tiers={"app": app})
    busy_app = dataclasses.replace(CALM, app_cpu=TierCpu(0.82, 1), service_cpu={"app": 0.81})
    found = attribute(run(), busy_app, utilization=utilization)
    assert found.limiting_tier == "app", found.sentence
    assert "starved" not in found.sentence and "itself 0.90 of 1 cores" in found.sentence, found.sentence
    # The audit judges the window's average the same way: a sliver of other processes does not starve a host.
    sliver = dataclasses.replace(CALM, service_cpu={"app": 0.89})
    assert host_cpu("app", TierCpu(0.91, 1), sliver, 0.90) == ("0.91 of 1 cores (91%), the app's JVM itself 0.89 of them", True)
    hogged = dataclasses.replace(CALM, service_cpu={"app": 0.60})
    assert host_cpu("app", TierCpu(0.91, 1), hogged, 0.90)[1] is False  # 0.31 of others: starved


def test_a_stretch_under_a_fifth_of_the_window_is_noise() -> None:
    # The core full at 35 s and 40 s only: 10 s of 40, over a fifth; at 40 s alone: 5 s, under it.
    grid = [HOG_START + 5 * k for k in range(9)]
    brief = Utilization(source="http://127.0.0.1:9090", start=HOG_START, end=HOG_START + 40, step_s=5.0, tiers={
        "db": TierSeries(allotted_cores=1.0, busy_cores=tuple(zip(grid, (0.13,) * 8 + (0.95,))))})
    assert attribute(run(), HOGGED_MIDWAY, utilization=brief).sentence.startswith("no tier was saturated")


def test_the_audit_and_the_attribution_name_the_same_hog() -> None:
    """Issue 24: DB_CPU_HOG=4 had audit.json say "MariaDB ... was the bottleneck: CPU 0.84 of 1 cores" while
    attribution.json said no tier was saturated. Both now judge the DB host's CPU by one threshold (the
    audit's 80%) and say it was busy with other processes than MariaDB."""
    hogged = dataclasses.replace(HOGGED_MIDWAY, db_cpu=TierCpu(0.84, 1), service_cpu={"app": 0.3, "db": 0.09})
    verdict = app_is_bottleneck(run(), hogged, AUDIT_THRESHOLDS)
    said = ("its CPU 0.84 of 1 cores (84%), of which MariaDB 10.11.18 used 0.09 and other processes of its host 0.75: "
            "starved by other processes than MariaDB 10.11.18")
    assert (verdict.status, verdict.evidence) == (
        Status.INVALID, "not comparable: app used 0.30 of 1 cores (30%) while the DB host's CPU was busy: "
                        + said.removeprefix("its CPU "))
    for utilization in (None, hogged_utilization(service=(0.09,) * 9)):
        found = attribute(run(), hogged, utilization=utilization)
        assert found.sentence.startswith("not attributed: the system kept up with the offered rate, 200 of 200 req/s "
                                         f"(100%), but busy without a queue in front of them: db ({said})"), found.sentence
    # MariaDB itself at 0.84: the audit's bottleneck is MariaDB's, and the attribution names MariaDB's CPU too.
    own = dataclasses.replace(hogged, service_cpu={"app": 0.3, "db": 0.83})
    assert "MariaDB 10.11.18 itself 0.83 of them" in app_is_bottleneck(run(), own, AUDIT_THRESHOLDS).evidence
    assert "db (its CPU 0.84 of 1 cores (84%), MariaDB 10.11.18 itself 0.83 of them)" in attribute(run(), own).sentence


def test_a_host_over_its_threshold_on_average_is_judged_by_the_average_not_the_stretch() -> None:
    """DB_CPU_HOG=4 from the window's start: the DB host 96% busy on average, the run kept up within its SLO.
    Busy without a queue, not attributed, and the hog named as what filled it, as the audit names it."""
    grid = [HOG_START + 5 * k for k in range(9)]
    full = Utilization(source="http://127.0.0.1:9090", start=HOG_START, end=HOG_START + 40, step_s=5.0, tiers={
        "db": TierSeries(allotted_cores=1.0, busy_cores=tuple(zip(grid, (0.96,) * 9)),
                         service_cores=tuple(zip(grid, (0.09,) * 9)))})
    hogged = dataclasses.replace(HOGGED_MIDWAY, db_cpu=TierCpu(0.96, 1), service_cpu={"db": 0.09})
    found = attribute(run(), hogged, utilization=full)
    assert found.limiting_tier is None and found.sentence.startswith(
        "not attributed: the system kept up with the offered rate, 200 of 200 req/s (100%), but busy without a queue "
        "in front of them: db (its CPU 0.96 of 1 cores (96%), of which MariaDB 10.11.18 used 0.09 and other processes "
        "of its host 0.87: starved by other processes than MariaDB 10.11.18"), found.sentence
    db = next(f for f in found.tiers if f.tier == "db")
    assert (db.stretch_from_s, db.stretch_s) == (0.0, 40.0)


def test_an_app_limited_run_with_a_profile_names_its_top_layers_and_keeps_them(tmp_path: Path) -> None:
    """PROFILE_APP: the app's samples by layer (profile-summary.json's) in the sentence and in attribution.json."""
    layers = (LayerShare("http_server", "HTTP server", 380, 0.38), LayerShare("json", "JSON", 210, 0.21),
              LayerShare("metrics", "metrics and observability", 120, 0.12), LayerShare("gc", "GC", 0, 0.0),
              LayerShare("app", "the app's own code", 290, 0.29))
    limited = attribute(run(achieved=150.0), dataclasses.replace(CALM, app_cpu=TierCpu(0.97, 1)))
    named = with_app_layers(limited, layers)
    assert named.sentence.startswith(limited.sentence.rstrip("."))
    assert named.sentence.endswith("; the app's samples (flamegraph.html): 38% HTTP server, 29% the app's own code, 21% JSON.")
    assert [entry.layer for entry in named.app_layers] == ["http_server", "app", "json", "metrics"]
    rundir.write_attribution(tmp_path, named)
    assert rundir.read_attribution(tmp_path) == named
    # Another tier's limit, or a run that kept up, is said as it was.
    assert with_app_layers(attribute(run(), CALM), layers) == attribute(run(), CALM)


def test_the_audit_judges_the_db_hosts_stretch_as_the_attribution_names_it() -> None:
    """Issue 24: audit.json and attribution.json never contradict each other about a tier. On the window's
    average the hogged run's app_is_bottleneck read "MariaDB ... was not saturated" while the attribution
    named the DB host for its stretch; over that stretch the app was well below its cores."""
    (stretch,) = db_stretches(hogged_utilization())
    assert (stretch.figure, stretch.from_s, stretch.seconds, stretch.app_busy_fraction) == ("CPU", 20.0, 20.0, 0.3)
    averaged = {r.rule: r for r in audit(run(), HOGGED_MIDWAY).rules}["app_is_bottleneck"]
    assert averaged.status is Status.VALID and "was not saturated" in averaged.evidence  # what the lab saw
    judged = {r.rule: r for r in audit(run(), HOGGED_MIDWAY, db_stretches=[stretch]).rules}["app_is_bottleneck"]
    assert judged.status is Status.INVALID, judged
    assert judged.evidence == (
        "not comparable for a stretch of the window: MariaDB 10.11.18 on perflab-db had its CPU over 80% from 20 s "
        "for 20 s of the window (98% busy there; 62% over the whole window), of which MariaDB 10.11.18 used 0.10 of 1 "
        "cores and other processes of its host 0.88: starved by other processes than MariaDB 10.11.18; the app used "
        "30% of its cores over it, well below, while other processes of its host starved MariaDB 10.11.18 there")
    # An app busy over the stretch was what limited it: VALID, the stretch said.
    busy_app = dataclasses.replace(hogged_utilization(), tiers={
        **hogged_utilization().tiers,
        "app": TierSeries(allotted_cores=1.0, busy_cores=tuple((HOG_START + 5 * k, 0.7) for k in range(9)))})
    busy = {r.rule: r for r in audit(run(), HOGGED_MIDWAY, db_stretches=db_stretches(busy_app)).rules}["app_is_bottleneck"]
    assert busy.status is Status.VALID and "was not saturated" not in busy.evidence, busy
    assert busy.evidence.endswith("and the app used 70% of its cores over it, not well below them"), busy
    # The app's series missing over the stretch: not evaluated, whole.
    no_app = dataclasses.replace(hogged_utilization(), tiers={"db": hogged_utilization().tiers["db"]})
    unseen = {r.rule: r for r in audit(run(), HOGGED_MIDWAY, db_stretches=db_stretches(no_app)).rules}["app_is_bottleneck"]
    assert unseen.status is Status.NOT_EVALUATED, unseen
    # A calm DB host has no stretch.
    calm = dataclasses.replace(hogged_utilization(), tiers={
        **hogged_utilization().tiers, "db": TierSeries(allotted_cores=1.0, busy_cores=tuple(
            (HOG_START + 5 * k, 0.2) for k in range(9)))})
    assert db_stretches(calm) == ()


# Issue 24's last item: the DB's disk and statement queue judged over the window's series as its CPU is. The
# DB host's CPU calm all along (0.2 of its core), the app at 0.3 of its own; each 5 s sample over the 15 s before it.
def db_utilization(disk: tuple[float, ...] = (0.1,) * 9, statements: tuple[float, ...] = (1.0,) * 9) -> Utilization:
    grid = [HOG_START + 5 * k for k in range(9)]
    db = TierSeries(allotted_cores=1.0, busy_cores=tuple(zip(grid, (0.2,) * 9)), service_cores=tuple(zip(grid, (0.18,) * 9)),
                    disk_busy=tuple(zip(grid, disk)), statements_running=tuple(zip(grid, statements)))
    app = TierSeries(allotted_cores=1.0, busy_cores=tuple(zip(grid, (0.3,) * 9)))
    return Utilization(source="http://127.0.0.1:9090", start=HOG_START, end=HOG_START + 40, step_s=5.0,
                       tiers={"db": db, "app": app})


# A disk busy 80% of the time or more at the scrapes of 20 to 35 s (the 15 s to 35 s of the window they stand for).
DISK_STRETCH = (0.1, 0.1, 0.1, 0.4, 0.85, 0.95, 0.97, 0.91, 0.3)
# 2 statements or more in progress at the same scrapes: MariaDB's exporter counts its own SHOW STATUS as one.
QUEUE_STRETCH = (1.0, 1.0, 1.1, 1.0, 3.5, 6.0, 7.0, 5.1, 1.2)
MARIADB = dataclasses.replace(CALM, db_cpu=TierCpu(0.2, 1), db_name="MariaDB 10.11.18 on perflab-db",
                              service_cpu={"loadgen": 0.2, "app": 0.3, "db": 0.18})
DISK_ON_AVERAGE = dataclasses.replace(MARIADB, db_disk_busy=0.45)
QUEUE_ON_AVERAGE = with_(MARIADB, db_threads_running_avg=1.9)


def app_is_bottleneck_of(obs: Observations, utilization: Utilization) -> Any:
    """The audit's app_is_bottleneck as perflab collect judges it: with the DB's stretches of the same series."""
    return {r.rule: r for r in audit(run(), obs, db_stretches=db_stretches(utilization)).rules}["app_is_bottleneck"]


def test_a_db_disk_saturated_for_a_stretch_names_the_db_tier_with_its_times() -> None:
    utilization = db_utilization(disk=DISK_STRETCH)
    found = attribute(run(), DISK_ON_AVERAGE, utilization=utilization)
    said = ("its disk busy 80% of the time or more from 15 s for 20 s of the window (92% busy there; 45% over the "
            "whole window)")
    assert found.limiting_tier == "db", found.sentence
    assert found.sentence == (f"limited by the DB host's disk for a stretch of the window: {said}; the app used 0.30 of "
                              "1 cores, at 200 of 200 req/s (100%).")
    db = next(f for f in found.tiers if f.tier == "db")
    assert (db.disk_stretch_from_s, db.disk_stretch_s, db.stretch_s, db.statements_stretch_s) == (15.0, 20.0, None, None)
    assert round(db.disk_stretch_busy_fraction or 0, 3) == 0.92 and said in db.saturated
    # The app's requests waiting for a connection beside it: the database, its disk's stretch the evidence.
    waiting = with_(DISK_ON_AVERAGE, app_pool_waiting_avg=0.7, app_pool_waiting_max=6.0)
    assert attribute(run(), waiting, utilization=utilization).sentence == (
        f"limited by the database: the app had 0.7 requests waiting for a DB connection on average (at most 6) while "
        f"the DB host had {said}, at 200 of 200 req/s (100%).")
    # Without the series, the window's average alone (45%): not saturated, the words of a fault-free run.
    assert attribute(run(), DISK_ON_AVERAGE).sentence.startswith("no tier was saturated")
    assert "round trips" in attribute(run(), waiting).sentence


def test_a_statement_queue_for_a_stretch_names_the_db_tier_with_its_times() -> None:
    utilization = db_utilization(statements=QUEUE_STRETCH)
    found = attribute(run(), QUEUE_ON_AVERAGE, utilization=utilization)
    said = ("its statement queue at 2 or more statements in progress from 15 s for 20 s of the window (5.4 on "
            "average there; 1.9 over the whole window)")
    assert found.limiting_tier == "db", found.sentence
    assert found.sentence == (f"limited by the DB's statement queue for a stretch of the window: {said}; the app used "
                              "0.30 of 1 cores, at 200 of 200 req/s (100%).")
    db = next(f for f in found.tiers if f.tier == "db")
    assert (db.statements_stretch_from_s, db.statements_stretch_s, db.disk_stretch_s) == (15.0, 20.0, None)
    assert round(db.statements_stretch_running_avg or 0, 2) == 5.4
    # With the app's waits: the database, never its "round trips" with the queue "not saturated".
    waiting = with_(QUEUE_ON_AVERAGE, app_pool_waiting_avg=3.0, app_pool_waiting_max=12.0)
    assert attribute(run(), waiting, utilization=utilization).sentence == (
        "limited by the database: the app had 3.0 requests waiting for a DB connection on average (at most 12) while "
        f"the DB host had {said}, at 200 of 200 req/s (100%).")
    # An app whose CPU is saturated holds its connections and its statements stay in progress: the app, the DB's
    # stretch of statements named as waiting on it (never "the DB had no statement queue").
    app_bound = dataclasses.replace(waiting, app_cpu=TierCpu(0.97, 1))
    bound = attribute(run(achieved=170.0), app_bound, utilization=utilization)
    assert bound.limiting_tier == "app", bound.sentence
    assert f"and the DB's own CPU and disk were idle ({said}, waiting on the app)" in bound.sentence, bound.sentence


def test_the_dbs_cpu_disk_and_queue_stretches_are_named_together() -> None:
    hogged = hogged_utilization()
    both = dataclasses.replace(hogged, tiers={**hogged.tiers, "db": dataclasses.replace(
        hogged.tiers["db"], disk_busy=db_utilization(disk=DISK_STRETCH).tiers["db"].disk_busy,
        statements_running=db_utilization(statements=QUEUE_STRETCH).tiers["db"].statements_running)})
    found = attribute(run(), with_(dataclasses.replace(HOGGED_MIDWAY, db_disk_busy=0.45), db_threads_running_avg=1.9),
                      utilization=both)
    assert found.sentence.startswith(
        "limited by the DB host's CPU and disk and statement queue for a stretch of the window: its CPU over 80% from "
        "20 s for 20 s of the window"), found.sentence
    assert "; its disk busy 80% of the time or more from 15 s" in found.sentence
    assert "; its statement queue at 2 or more statements in progress from 15 s" in found.sentence
    assert [s.figure for s in db_stretches(both)] == ["CPU", "disk", "statement queue"]


def test_a_db_below_its_disk_and_queue_thresholds_has_no_stretch() -> None:
    # Just under each threshold at every scrape, and over it at one scrape only (5 s of 40: under a fifth).
    for utilization in (db_utilization(disk=(0.79,) * 9, statements=(1.9,) * 9),
                        db_utilization(disk=(0.1,) * 8 + (0.99,), statements=(1.0,) * 8 + (9.0,))):
        found = attribute(run(), MARIADB, utilization=utilization)
        assert found.limiting_tier is None and found.sentence.startswith("no tier was saturated"), found.sentence
        db = next(f for f in found.tiers if f.tier == "db")
        assert (db.disk_stretch_s, db.statements_stretch_s, db.saturated) == (None, None, ())
        assert db_stretches(utilization) == ()
        judged = app_is_bottleneck_of(MARIADB, utilization)
        assert judged.status is Status.VALID and judged.evidence.endswith("MariaDB 10.11.18 on perflab-db was not "
                                                                          "saturated"), judged


def test_the_audit_and_the_attribution_agree_on_the_dbs_disk_and_queue_stretches() -> None:
    """audit.json's app_is_bottleneck and attribution.json, from the same utilization.json, never contradict each
    other about the db tier: where the attribution names its stretch, the audit judges the same one, same words."""
    cases = ((DISK_ON_AVERAGE, db_utilization(disk=DISK_STRETCH)),
             (QUEUE_ON_AVERAGE, db_utilization(statements=QUEUE_STRETCH)))
    for obs, utilization in cases:
        found = attribute(run(), obs, utilization=utilization)
        said = found.sentence.split("for a stretch of the window: ")[1].split("; the app used")[0]
        judged = app_is_bottleneck_of(obs, utilization)
        assert judged.status is Status.INVALID, judged
        assert judged.evidence == (f"not comparable for a stretch of the window: MariaDB 10.11.18 on perflab-db had "
                                   f"{said}; the app used 30% of its cores over it, well below, while MariaDB 10.11.18 "
                                   "on perflab-db was the bottleneck there"), judged
        # An app busy over the stretch: VALID, and the stretch said, never "was not saturated".
        busy_app = dataclasses.replace(utilization, tiers={**utilization.tiers, "app": TierSeries(
            allotted_cores=1.0, busy_cores=tuple((HOG_START + 5 * k, 0.7) for k in range(9)))})
        busy = app_is_bottleneck_of(obs, busy_app)
        assert busy.status is Status.VALID and f"MariaDB 10.11.18 on perflab-db had {said}, and the app used 70% of " \
            "its cores over it, not well below them" in busy.evidence, busy
        # The app's series missing: not evaluated, whole.
        no_app = dataclasses.replace(utilization, tiers={"db": utilization.tiers["db"]})
        assert app_is_bottleneck_of(obs, no_app).status is Status.NOT_EVALUATED
    # Both thresholds are the audit's, read by the attribution: one owner each.
    assert THRESHOLDS.disk_busy.value == AUDIT_THRESHOLDS.db_disk_busy.value
    assert THRESHOLDS.db_threads_running is AUDIT_THRESHOLDS.db_threads_running


def test_the_dbs_disk_and_queue_series_survive_utilization_json(tmp_path: Path) -> None:
    utilization = db_utilization(disk=DISK_STRETCH, statements=QUEUE_STRETCH)
    rundir.write_utilization(tmp_path, utilization)
    assert rundir.read_utilization(tmp_path) == utilization
    # A file written before they were kept: no series, no stretch, the CPU's as before.
    older = json.loads((tmp_path / rundir.UTILIZATION).read_text())
    for series in older["tiers"].values():
        del series["disk_busy"], series["statements_running"]
    (tmp_path / rundir.UTILIZATION).write_text(json.dumps(older))
    assert rundir.read_utilization(tmp_path).tiers["db"].disk_busy == ()
    assert db_stretches(rundir.read_utilization(tmp_path)) == ()
