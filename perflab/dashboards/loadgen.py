"""Load generator: did it send the rate it was asked for? Achieved against target rate, dropped
iterations, client-side latency and errors (k6's remote write), and the loadgen tier's CPU.

k6 pushes its metrics to Prometheus (remote write, names prefixed `k6_`, labels `scenario` and
`phase`, no `tier`/`host`); wrk2 pushes none, so these panels stay empty for wrk2 runs except CPU.
k6 panels show only the phases of the selected runs (`$app`, `$run`): they are joined on `phase`
with perflab_run_info, which is 1 while a phase runs.
"""

from __future__ import annotations

from grafana_foundation_sdk.builders import dashboard as dashboard_builder
from grafana_foundation_sdk.models import dashboard as dashboard_model
from grafana_foundation_sdk.models import units

from perflab import tiers
from perflab.dashboards.common import Panel, new_dashboard, number_panels, only_tier, queries, query, timeseries, zero_when_absent

UID = "perflab-loadgen"
WINDOW = "$__rate_interval"
SELECTED_RUN_PHASES = 'max by (phase) (perflab_run_info{job="node", app=~"$app", run_id=~"$run"})'


def during_selected_runs(expr: str) -> str:
    """EXPR (with a `phase` label) only while a phase of a selected run runs."""
    return f"({expr}) and on(phase) {SELECTED_RUN_PHASES}"


def is_the_target_rate_achieved() -> Panel:
    return timeseries(
        "Achieved and target request rate",
        "Requests k6 completed per second against the rate it was asked for (k6_perflab_target_rate), "
        "by phase. Achieved below target means the load generator or the system under test could not "
        "keep up: the run's figures then describe a lower load than asked.",
        units.RequestsPerSecond,
        queries((during_selected_runs(f"sum by (phase) (rate(k6_http_reqs_total[{WINDOW}]))"), "achieved: {{phase}}"),
                (during_selected_runs("max by (phase) (k6_perflab_target_rate)"), "target: {{phase}}")))


def how_many_iterations_are_dropped() -> Panel:
    dropped = f"sum by (phase) (rate(k6_dropped_iterations_total[{WINDOW}]))"
    started = f"sum by (phase) (rate(k6_iterations_total[{WINDOW}]))"
    return timeseries(
        "Dropped iterations per second",
        "Iterations k6 could not start on time because every VU was busy (max_vus reached): above 0 the "
        "open-model arrival rate was not kept and latency is under-reported (coordinated omission).",
        units.OpsPerSecond, [query(during_selected_runs(zero_when_absent(dropped, started)), "{{phase}}")])


def how_busy_is_the_loadgen_cpu() -> Panel:
    return timeseries(
        "Load generator CPU utilization",
        "Busy cores / allotted cores of the loadgen tier (perflab/tiers.py): a load generator near 100% "
        "measures itself, not the app.",
        units.PercentUnit, [query(only_tier(tiers.cpu_utilization(WINDOW), "loadgen"), "{{tier}}")], width=8)


def what_latency_does_the_client_see() -> Panel:
    return timeseries(
        "Response time seen by k6: p50, p99",
        "k6's http_req_duration percentiles by request name, over each remote-write period: the "
        "latency the client saw, queueing included.",
        units.Seconds,
        queries((during_selected_runs("max by (name, phase) (k6_http_req_duration_p50)"), "p50 {{name}} ({{phase}})"),
                (during_selected_runs("max by (name, phase) (k6_http_req_duration_p99)"), "p99 {{name}} ({{phase}})")),
        width=8)


def how_many_vus_are_busy() -> Panel:
    return timeseries(
        "Virtual users: active and allocated",
        "k6 VUs running an iteration and VUs allocated: active reaching allocated (max_vus) is when "
        "iterations start being dropped.",
        units.Short,
        queries((during_selected_runs("max by (phase) (k6_vus)"), "active: {{phase}}"),
                (during_selected_runs("max by (phase) (k6_vus_max)"), "allocated: {{phase}}")), width=8)


def which_requests_fail() -> Panel:
    failed = f"sum by (phase, kind) (rate(k6_perflab_errors_total[{WINDOW}]))"
    sent = f"sum by (phase) (rate(k6_perflab_requests_total[{WINDOW}]))"
    return timeseries(
        "Failed requests per second by kind",
        "Requests k6 counted as failed, by kind (timeout, connect, network, http_4xx, http_5xx, "
        "unexpected_status); 0 while none failed.",
        units.RequestsPerSecond, [query(during_selected_runs(zero_when_absent(failed, sent)), "{{kind}} ({{phase}})")])


def loadgen_dashboard() -> dashboard_model.Dashboard:
    board = new_dashboard(UID, "perflab: load generator",
                          "Did the load generator send the rate it was asked for, and what did it see?")
    board = (board.with_row(dashboard_builder.Row("Rate"))
             .with_panel(is_the_target_rate_achieved()).with_panel(how_many_iterations_are_dropped())
             .with_row(dashboard_builder.Row("Client side"))
             .with_panel(what_latency_does_the_client_see()).with_panel(how_many_vus_are_busy())
             .with_panel(how_busy_is_the_loadgen_cpu())
             .with_row(dashboard_builder.Row("Errors"))
             .with_panel(which_requests_fail()))
    return number_panels(board.build())
