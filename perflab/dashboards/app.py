"""App under test: HTTP rate, latency and errors by route and by the running scenario's request type;
JVM heap, GC and threads; the DB pool.

Every app exports Micrometer's histogram `http_server_requests_seconds_{bucket,count,sum}` (labels
`method`, `uri`, `status`; the same buckets everywhere, apps/contract/README.md "Metrics"), `jvm_*`
and perflab's `perflab_db_pool_in_use` / `perflab_db_pool_waiting`, all tagged `application="<app>"`
(docs/ARCHITECTURE.md); `$app` selects the app.
"""

from __future__ import annotations

from grafana_foundation_sdk.builders import dashboard as dashboard_builder
from grafana_foundation_sdk.models import dashboard as dashboard_model
from grafana_foundation_sdk.models import units

from perflab import tiers
from perflab.dashboards.common import Panel, new_dashboard, number_panels, only_tier, queries, query, timeseries, zero_when_absent

UID = "perflab-app"
WINDOW = "$__rate_interval"
APP = 'job="app", application=~"$app"'
# Routes of the API; Prometheus' scrapes (/metrics) and health probes are not the workload.
ROUTES = f'{APP}, uri!~"/metrics|/health.*|/q/.*"'


def how_many_requests_per_route() -> Panel:
    return timeseries(
        "Requests per second by route",
        "Responses the app completed per second, by route (Micrometer's uri template) and status.",
        units.RequestsPerSecond,
        [query(f"sum by (uri, status) (rate(http_server_requests_seconds_count{{{ROUTES}}}[{WINDOW}]))",
               "{{uri}} {{status}}")], stacked=True)


def how_long_do_requests_take_per_route() -> Panel:
    return timeseries(
        "Mean response time by route",
        "Server-side time per request (sum / count of http_server_requests_seconds): excludes the "
        "time requests waited in the load generator or the network. Its percentiles: the panel "
        "\"Response time seen by the app\".",
        units.Seconds,
        [query(f"sum by (uri) (rate(http_server_requests_seconds_sum{{{ROUTES}}}[{WINDOW}])) / "
               f"sum by (uri) (rate(http_server_requests_seconds_count{{{ROUTES}}}[{WINDOW}]))", "{{uri}}")])


def how_long_do_requests_take_at_the_app() -> Panel:
    return timeseries(
        "Response time seen by the app: p50, p99",
        "The app's own p50 and p99 over its routes (http_server_requests_seconds' histogram, interpolated "
        "within its buckets): from the moment its framework took a request up to its answer, without the "
        "network, the load generator or a queue in front of its request threads. Beside the load generator's "
        "p50/p99, a gap is time spent outside the app.",
        units.Seconds,
        queries((tiers.app_latency_quantile(0.5, WINDOW, ROUTES), "p50 {{application}}"),
                (tiers.app_latency_quantile(0.99, WINDOW, ROUTES), "p99 {{application}}")))


def what_is_the_slowest_request_per_route() -> Panel:
    return timeseries(
        "Slowest response by route",
        "The longest request of each route in Micrometer's recent window (http_server_requests_seconds_max).",
        units.Seconds, [query(f"max by (uri) (http_server_requests_seconds_max{{{ROUTES}}})", "{{uri}}")])


def which_routes_fail() -> Panel:
    failed = f'sum by (uri, status) (rate(http_server_requests_seconds_count{{{ROUTES}, status=~"[45].."}}[{WINDOW}]))'
    every_route = f"sum by (uri) (rate(http_server_requests_seconds_count{{{ROUTES}}}[{WINDOW}]))"
    return timeseries(
        "Error responses by route and status",
        "4xx and 5xx responses per second by route; 0 for a route that answered without error.",
        units.RequestsPerSecond, [query(zero_when_absent(failed, every_route), "{{uri}} {{status}}")])


# The running scenario's request types (perflab.scenario's Scenario.request_types): the bench publishes
# perflab_request_type{run_id, app, method, route, type} 1 beside perflab_run_info on the loadgen hosts
# while a phase runs (roles/bench/files/start_at.py), the route as its shape ("/owners/{}").
REQUEST_TYPES = 'max by (method, route, type) (perflab_request_type{job="node", app=~"$app", run_id=~"$run"})'
# The app's uri label as the same shape: each label_replace turns its first named placeholder into {}
# (perflab.scenario.route_shape), so routes of up to this many placeholders find their type.
ROUTE_PLACEHOLDERS = 4


def by_request_type(expr: str, by: str = "") -> str:
    """EXPR, summed by (method, uri[, BY]), summed by the scenario's request type instead (and BY):
    its uri joined on the running scenario's routes. Outside a run's phases it has no series."""
    shaped = f'label_replace({expr}, "route", "$1", "uri", "(.*)")'
    for _ in range(ROUTE_PLACEHOLDERS):
        shaped = f'label_replace({shaped}, "route", "${{1}}{{}}${{2}}", "route", "(.*?)[{{][^}}/]+[}}](.*)")'
    return f"sum by (type{by}) ({shaped} * on (method, route) group_left (type) {REQUEST_TYPES})"


def count_by(by: str) -> str:
    return f"sum by ({by}) (rate(http_server_requests_seconds_count{{{ROUTES}}}[{WINDOW}]))"


def how_many_requests_per_type() -> Panel:
    return timeseries(
        "Requests per second by request type",
        "Responses the app completed per second, by the running scenario's request type (its requests' names; "
        "names joined by + share a route the app cannot tell apart). Shown while a run's phase runs.",
        units.RequestsPerSecond, [query(by_request_type(count_by("method, uri")), "{{type}}")], stacked=True)


def how_long_do_requests_take_per_type() -> Panel:
    buckets = f"sum by (method, uri, le) (rate(http_server_requests_seconds_bucket{{{ROUTES}}}[{WINDOW}]))"
    total = f"sum by (method, uri) (rate(http_server_requests_seconds_sum{{{ROUTES}}}[{WINDOW}]))"
    return timeseries(
        "Response time by request type: mean, p99",
        "Server-side time per request of each of the running scenario's request types: the mean (sum / count) and "
        "the p99 (the histogram, interpolated within its buckets).",
        units.Seconds,
        queries((f"{by_request_type(total)} / {by_request_type(count_by('method, uri'))}", "mean {{type}}"),
                (f"histogram_quantile(0.99, {by_request_type(buckets, ', le')})", "p99 {{type}}")))


def which_request_types_fail() -> Panel:
    failed = (f'sum by (method, uri, status) (rate(http_server_requests_seconds_count{{{ROUTES}, status=~"[45].."}}'
              f'[{WINDOW}]))')
    return timeseries(
        "Error responses by request type and status",
        "4xx and 5xx responses per second of each of the running scenario's request types; 0 for a type answered "
        "without error.",
        units.RequestsPerSecond,
        [query(zero_when_absent(by_request_type(failed, ", status"), by_request_type(count_by("method, uri"))),
               "{{type}} {{status}}")], width=24)


def how_busy_is_the_app_cpu() -> Panel:
    return timeseries(
        "App tier CPU utilization",
        "Busy cores / allotted cores of the app tier (perflab/tiers.py): near 100% the app's CPU is the limit.",
        units.PercentUnit, [query(only_tier(tiers.cpu_utilization(WINDOW), "app"), "{{tier}}")], width=8)


def how_full_is_the_heap() -> Panel:
    return timeseries(
        "JVM heap: used and committed",
        "Heap in use by memory pool (stacked) and the heap the JVM has committed; the heap's cap is the "
        "JVM's -Xmx (or its default from the host's memory).",
        units.BytesIEC,
        queries((f'sum by (id) (jvm_memory_used_bytes{{{APP}, area="heap"}})', "used: {{id}}"),
                (f'sum(jvm_memory_committed_bytes{{{APP}, area="heap"}})', "committed")), width=8)


def how_much_time_goes_to_gc() -> Panel:
    return timeseries(
        "Time in GC pauses",
        "Share of wall time the JVM spent in stop-the-world GC pauses, by collector.",
        units.PercentUnit,
        [query(f"sum by (gc) (rate(jvm_gc_pause_seconds_sum{{{APP}}}[{WINDOW}]))", "{{gc}}")], width=8)


def how_often_does_gc_pause() -> Panel:
    return timeseries(
        "GC pauses per second",
        "Stop-the-world GC pauses per second, by collector and cause.",
        units.OpsPerSecond,
        [query(f"sum by (gc, cause) (rate(jvm_gc_pause_seconds_count{{{APP}}}[{WINDOW}]))", "{{gc}}: {{cause}}")],
        width=8)


def how_many_threads_in_which_state() -> Panel:
    return timeseries(
        "JVM threads by state",
        "Live threads by state: many blocked threads mean lock contention; many waiting, a pool or "
        "a queue that is empty or full.",
        units.Short, [query(f"sum by (state) (jvm_threads_states_threads{{{APP}}})", "{{state}}")], stacked=True, width=8)


def is_the_db_pool_exhausted() -> Panel:
    return timeseries(
        "DB pool: connections in use and requests waiting",
        "Connections of the app's DB pool in use, and requests waiting for one: waiting > 0 means "
        "the pool (PERFLAB_DB_POOL_SIZE) or the database is the limit.",
        units.Short,
        queries((f"sum(perflab_db_pool_in_use{{{APP}}})", "in use"),
                (f"sum(perflab_db_pool_waiting{{{APP}}})", "waiting")), width=8)


def app_dashboard() -> dashboard_model.Dashboard:
    board = new_dashboard(UID, "perflab: app under test",
                          "The app under test: HTTP by route, JVM heap, GC and threads, the DB pool.")
    board = (board.with_row(dashboard_builder.Row("HTTP by route"))
             .with_panel(how_many_requests_per_route()).with_panel(how_long_do_requests_take_at_the_app())
             .with_panel(how_long_do_requests_take_per_route()).with_panel(what_is_the_slowest_request_per_route())
             .with_panel(which_routes_fail())
             .with_row(dashboard_builder.Row("HTTP by request type (the running scenario's)"))
             .with_panel(how_many_requests_per_type()).with_panel(how_long_do_requests_take_per_type())
             .with_panel(which_request_types_fail())
             .with_row(dashboard_builder.Row("JVM and DB pool"))
             .with_panel(how_busy_is_the_app_cpu()).with_panel(how_full_is_the_heap())
             .with_panel(how_much_time_goes_to_gc()).with_panel(how_often_does_gc_pause())
             .with_panel(how_many_threads_in_which_state()).with_panel(is_the_db_pool_exhausted()))
    return number_panels(board.build())
