"""Load generator: did it send the rate it was asked for? The rate it achieved against the app's
count, failed requests, the response time vegeta saw, and the loadgen tier's CPU.

The rate and the failures are perflab/tiers.py's figures: vegeta's own count while vegeta runs
(Prometheus scrapes its exporter as job `vegeta` only then), else the app's count (wrk2 exports no
metrics); their legend names the source. The response time is vegeta's alone: wrk2 reports its
latency distribution only at the end of a phase (result.json), so that panel is empty for wrk2
runs. Panels show only the phases of the selected runs (`$app`, `$run`): each series is joined
with perflab_run_info (1 on the loadgen host while a phase runs), which adds its phase and
target rate.
"""

from __future__ import annotations

from grafana_foundation_sdk.builders import dashboard as dashboard_builder
from grafana_foundation_sdk.models import dashboard as dashboard_model
from grafana_foundation_sdk.models import units

from perflab import tiers
from perflab.dashboards.common import Panel, new_dashboard, number_panels, only_tier, queries, query, timeseries

UID = "perflab-loadgen"
WINDOW = "$__rate_interval"
# The phase of a selected run in progress; topk(1, ...) keeps one even if two loadgen hosts said so.
SELECTED_RUN_PHASE = ('topk(1, max by (run_id, phase, target_rate) '
                      '(perflab_run_info{job="node", app=~"$app", run_id=~"$run"}))')
SOURCE = "{{" + tiers.SOURCE_LABEL + "}}"


def during_selected_runs(expr: str) -> str:
    """EXPR only while a phase of a selected run runs, with that phase's labels (run_id, phase,
    target_rate) added to each of its series."""
    return f"({expr}) * on() group_left(run_id, phase, target_rate) {SELECTED_RUN_PHASE}"


def is_the_target_rate_achieved() -> Panel:
    return timeseries(
        "Achieved request rate (target in the legend)",
        "Requests per second the load generator completed, by its own count (vegeta) or, where it "
        "exports none (wrk2), by the app's; and the requests per second of the workload the app "
        "answered. Below the target the load generator or the system under test could not keep up: "
        "the run's figures then describe a lower load than asked. With vegeta, completed above "
        "answered are requests that got no answer (connect errors, timeouts).",
        units.RequestsPerSecond,
        queries((during_selected_runs(tiers.request_rate(WINDOW)),
                 f"achieved ({SOURCE}'s count): {{{{phase}}}}, target {{{{target_rate}}}} req/s"),
                (during_selected_runs(tiers.app_request_rate(WINDOW)), "answered by the app: {{phase}}")))


def which_requests_fail() -> Panel:
    return timeseries(
        "Failed requests per second by status",
        "Requests vegeta counted as failed, by status (0: no answer, a connect error or timeout; else an "
        "HTTP status other than 2xx/3xx) or, where the load generator exports no metrics (wrk2), the "
        "app's 4xx and 5xx answers (wrk2's socket errors and timeouts are in its summary only); 0 while "
        "none failed.",
        units.RequestsPerSecond,
        [query(during_selected_runs(tiers.failed_request_rate(WINDOW, by="status")),
               f"failed ({SOURCE}'s count) {{{{status}}}}: {{{{phase}}}}")])


def what_latency_does_the_client_see() -> Panel:
    return timeseries(
        "Response time seen by vegeta: p50, p99",
        "vegeta's response time by HTTP method, from each request's send to its answer, interpolated "
        "within its histogram's buckets (5 ms to 10 s: coarse). A request vegeta sent late (no free "
        "worker) does not count its wait before the send: the run's result.json has the distribution "
        "corrected for it (from each request's schedule). vegeta runs only: wrk2 exports no metrics.",
        units.Seconds,
        queries((during_selected_runs(tiers.vegeta_latency_quantile(0.5, WINDOW, by="method")),
                 "p50 {{method}}: {{phase}}"),
                (during_selected_runs(tiers.vegeta_latency_quantile(0.99, WINDOW, by="method")),
                 "p99 {{method}}: {{phase}}")))


def how_busy_is_the_loadgen_cpu() -> Panel:
    return timeseries(
        "Load generator CPU utilization",
        "Busy cores / allotted cores of the loadgen tier (perflab/tiers.py): a load generator near 100% "
        "measures itself, not the app.",
        units.PercentUnit, [query(only_tier(tiers.cpu_utilization(WINDOW), "loadgen"), "{{tier}}")])


def loadgen_dashboard() -> dashboard_model.Dashboard:
    board = new_dashboard(UID, "perflab: load generator",
                          "Did the load generator send the rate it was asked for, and what did it see?")
    board = (board.with_row(dashboard_builder.Row("Rate and failures"))
             .with_panel(is_the_target_rate_achieved()).with_panel(which_requests_fail())
             .with_row(dashboard_builder.Row("Client side"))
             .with_panel(what_latency_does_the_client_see()).with_panel(how_busy_is_the_loadgen_cpu()))
    return number_panels(board.build())
