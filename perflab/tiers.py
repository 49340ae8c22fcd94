"""The per-tier figures every view of the lab shares (the overview dashboard, `make watch`, the
audit's bottleneck attribution), as PromQL over the lab's Prometheus (docs/ARCHITECTURE.md).

CPU is counted per host from process-exporter: its groups (app-java, mysqld, loadgen, ...,
other) cover every process of a host, so their sum is the host's CPU use even when the hosts
are containers on one kernel, where node_exporter sees the whole machine. The cores a host may
use come from `perflab_host_cpus` (node_exporter's textfile, written by the node_exporter role).
Utilization = busy cores / allotted cores: 1.0 means every allotted core was busy.

What the load generator sent and what failed come from the generator's own metrics where it
exports any, else from the app's request counter, and say which in their `source` label (see
"Requests" below): wrk2 exports no metrics, vegeta does while a phase runs.

`window` is a PromQL range: "30s" for a live view, "$__rate_interval" in Grafana, the run's
length (e.g. "60s", evaluated at the run's end) for a judgement over a run window.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

TIERS = ("loadgen", "app", "db", "monitoring")


# The DB's series, either engine's: a db host runs MariaDB/MySQL with mysqld_exporter (job mysqld) or
# PostgreSQL with postgres_exporter (job postgres), and each selector below matches both exporters'
# metric, so that one query reads whichever the lab has (a range, resets() and timestamp() included).
DB_EXPORTER = "the DB's exporter (mysqld_exporter or postgres_exporter)"
_DB_JOBS = 'job=~"mysqld|postgres"'


def db_statements(command: str = "select|insert|update|delete") -> str:
    """The DB's statement counters by kind (label command): MariaDB/MySQL's Com_*, and PostgreSQL's
    pg_stat_statements summed by the statement's first word (roles/postgres_exporter's queries file)."""
    return ('{__name__=~"mysql_global_status_commands_total|pg_stat_statements_calls",' + _DB_JOBS
            + f',command=~"{command}"}}')


# 1 while the exporter can reach the DB, 0 at each scrape it cannot (the exporter keeps running).
DB_UP = '{__name__=~"mysql_up|pg_up",' + _DB_JOBS + "}"
# Prometheus' own up of each DB exporter's target: one sample at every scrape, at the scrape's moment.
DB_SCRAPES = 'up{' + _DB_JOBS + '}'
# The DB server the db tier runs, named in its label engine by the exporter Prometheus scrapes.
DB_ENGINE = ('label_replace(count(mysql_up{job="mysqld"}), "engine", "MariaDB/MySQL", "", "") '
             'or label_replace(count(pg_up{job="postgres"}), "engine", "PostgreSQL", "", "")')
# The DB's sessions running a statement (its statement queue), one gauge per engine's exporter: MariaDB/MySQL's
# Threads_running (mysqld_exporter's global status; its own SHOW STATUS is one of them), PostgreSQL's backends in
# state active (postgres_exporter's built-in pg_stat_activity_count, by database and state; its own query is one).
DB_SESSIONS_RUNNING_SERIES = ('mysql_global_status_threads_running{job="mysqld"}',
                              'pg_stat_activity_count{job="postgres",state="active"}')
DB_SESSIONS_RUNNING = " or ".join(f"sum({series})" for series in DB_SESSIONS_RUNNING_SERIES)


def db_sessions_running_avg(window: str) -> str:
    """MariaDB/MySQL's sessions running a statement, averaged over the samples of WINDOW: one sample is a moment,
    and a queue that drains for an instant between two statements would read as none (the audit's
    db_threads_running is an average over scrapes, too). Not PostgreSQL's: postgres_exporter's sessions are among
    its active backends (at rest on the lab 1, and 1.5 to 2.0 over runs of 200 cheap selects a second with the
    DB's CPU 5% busy), so its figure would cross db_threads_running, whose reason counts one exporter statement,
    without a queue; the PostgreSQL side of DB_SESSIONS_RUNNING stays a live figure."""
    return f"sum(avg_over_time({DB_SESSIONS_RUNNING_SERIES[0]}[{window}]))"


# The db hosts' disks: the seconds each device had I/O in progress (node_exporter), the same for either engine.
DB_DISK_IO_TIME = 'node_disk_io_time_seconds_total{job="node",tier="db"}'


def db_disk_busy(window: str) -> str:
    """The share of WINDOW the db hosts' busiest disk was busy (1: I/O in progress all along)."""
    return f"max(rate({DB_DISK_IO_TIME}[{window}]))"


def cpu_busy_cores(window: str, by: str = "tier") -> str:
    """Cores in use, averaged over the window, summed over the tier's processes and hosts."""
    return f'sum by ({by}) (rate(namedprocess_namegroup_cpu_seconds_total{{job="process"}}[{window}]))'


# Each tier's own service: its process-exporter group (roles/process_exporter's process_exporter_groups),
# and the name the sentences give it. What else runs on the tier's hosts (exporters, a neighbour, a
# hog in "other") is the rest of cpu_busy_cores: a host starved by it is not its service's doing.
# The db tier's is either engine's (a regular expression of groups).
SERVICE_GROUPS = {"loadgen": "loadgen", "app": "app-java", "db": "mysqld|postgres"}
# The lab's own exporters on every host (node_exporter, process-exporter, the DB's exporter): its instruments, whose
# CPU the app's cost leaves out (TierCpu.instrument_cores; docs/ARCHITECTURE.md gives what they use).
INSTRUMENT_GROUP = "exporters"


def cpu_service_cores(window: str, by: str = "tier") -> str:
    """Cores the tier's own service used (its group on the tier's hosts), averaged over the window; a
    tier whose service ran nothing has no series."""
    return " or ".join(
        f'sum by ({by}) (rate(namedprocess_namegroup_cpu_seconds_total{{job="process",tier="{tier}",'
        f'groupname=~"{group}"}}[{window}]))' for tier, group in SERVICE_GROUPS.items())


def cpu_allotted_cores(by: str = "tier") -> str:
    """Cores the tier's hosts may use (cpusets / affinity), summed over its hosts."""
    return f'sum by ({by}) (perflab_host_cpus{{job="node"}})'


def cpu_utilization(window: str, by: str = "tier") -> str:
    """Busy cores / allotted cores per tier: 0 idle, 1 every allotted core busy."""
    return f"{cpu_busy_cores(window, by)} / {cpu_allotted_cores(by)}"


def busiest_tier(window: str) -> str:
    """The one tier with the highest CPU utilization (its `tier` label names it)."""
    return f"topk(1, {cpu_utilization(window)})"


def memory_resident_bytes(by: str = "tier") -> str:
    """Resident memory of the tier's processes."""
    return f'sum by ({by}) (namedprocess_namegroup_memory_bytes{{job="process",memtype="resident"}})'


# --- Requests: the load generator's own count where it exports one, else the app's -------------
#
# vegeta (`vegeta attack -prometheus-addr`, lib/prom of v12.13.0) exports the histogram
# `request_seconds` (labels method, url, status) of every request it completed, answered or not:
# status is the HTTP status, "0" when no response came (connect error, timeout); vegeta counts a
# request as failed when its status is not 2xx or 3xx. Its counter `request_fail_count` is never
# incremented in v12.13.0 (a series appears at 0 with the first failure), so failures are read
# from the histogram's status. Prometheus scrapes it as job `vegeta` (tier loadgen) only while a
# vegeta phase runs. wrk2 exports nothing: without vegeta series, the figures read the app's
# request counter (Micrometer's http_server_requests_seconds_count), which counts the requests
# that reached the app, without the lab's own (scrapes, health probes).
SOURCE_LABEL = "source"  # which count a figure below was read from: VEGETA_SOURCE or APP_SOURCE
VEGETA_SOURCE, APP_SOURCE = "vegeta", "app"
VEGETA_JOB = "vegeta"
VEGETA_REQUESTS = f'request_seconds_count{{job="{VEGETA_JOB}"}}'
VEGETA_FAILED = f'request_seconds_count{{job="{VEGETA_JOB}",status!~"[23].."}}'
VEGETA_LATENCY_BUCKETS = f'request_seconds_bucket{{job="{VEGETA_JOB}"}}'
NOT_WORKLOAD = ("/metrics", "/health", "/q/")  # URI prefixes of routes that serve the lab, not the workload
APP_REQUESTS = f'http_server_requests_seconds_count{{job="app",uri!~"({"|".join(NOT_WORKLOAD)}).*"}}'
APP_FAILED = f'http_server_requests_seconds_count{{job="app",uri!~"({"|".join(NOT_WORKLOAD)}).*",status=~"[45].."}}'


def _from_source(source: str, expr: str) -> str:
    return f'label_replace({expr}, "{SOURCE_LABEL}", "{source}", "", "")'


def _first_reporting(vegeta: str, app: str) -> str:
    """VEGETA labelled source="vegeta" while it has a series, else APP labelled source="app"
    (`or on()` takes its right side only when the left side is empty)."""
    return f"{_from_source(VEGETA_SOURCE, vegeta)} or on() {_from_source(APP_SOURCE, app)}"


def _zero_while_reporting(expr: str, witness: str) -> str:
    """EXPR, or 0 while WITNESS (the requests of the same source) has a series: failures appear
    only with the first failure, and a source that reports without any shows 0, not nothing."""
    return f"({expr}) or on() (0 * {witness})"


def request_rate(window: str) -> str:
    """Requests/s the load generator completed (answered or failed), from vegeta's own count;
    where vegeta exports nothing (wrk2, or no run), the requests/s that reached the app."""
    return _first_reporting(f"sum(rate({VEGETA_REQUESTS}[{window}]))", app_request_rate(window))


def app_request_rate(window: str) -> str:
    """Requests/s of the workload the app answered (its own counter, whichever tool runs)."""
    return f"sum(rate({APP_REQUESTS}[{window}]))"


def failed_request_rate(window: str, by: str = "") -> str:
    """Failed requests/s: vegeta's (no answer, or not 2xx/3xx), else the app's 4xx and 5xx
    answers (wrk2's connect errors and timeouts reach no counter: they are in its summary)."""
    total = f"sum by ({by}) " if by else "sum"
    vegeta = _zero_while_reporting(f"{total}(rate({VEGETA_FAILED}[{window}]))",
                                   f"sum(rate({VEGETA_REQUESTS}[{window}]))")
    app = _zero_while_reporting(f"{total}(rate({APP_FAILED}[{window}]))", app_request_rate(window))
    return _first_reporting(vegeta, app)


def vegeta_latency_quantile(quantile: float, window: str, by: str = "") -> str:
    """vegeta's response time at QUANTILE (0.99: p99), from each request's send to its answer
    (not from its schedule: uncorrected for coordinated omission), interpolated within its
    histogram's buckets (client_golang's defaults: 5 ms to 10 s)."""
    labels = f"le, {by}" if by else "le"
    return f"histogram_quantile({quantile:g}, sum by ({labels}) (rate({VEGETA_LATENCY_BUCKETS}[{window}])))"


# --- The app's own latency: the histogram http_server_requests_seconds ---------------------------
#
# Every app exports it with the same buckets (apps/contract/README.md "Metrics"), by method, uri (the
# route's template) and status. A run reads it on the scenario's own routes, each a (method, uri
# template) pair, e.g. ("GET", "/zipcodes/{zip}"), never the lab's (/metrics, health).
APP_LATENCY = "http_server_requests_seconds"


def route(endpoint: str) -> tuple[str, str]:
    """A scenario's endpoint as the histogram labels it: "GET /zipcodes/{zip}" -> ("GET", "/zipcodes/{zip}")."""
    method, _, path = endpoint.strip().partition(" ")
    path = path.strip().split("?")[0]
    if not method.isalpha() or not path.startswith("/"):
        raise ValueError(f"an endpoint is 'METHOD /route', not {endpoint!r}")
    return method.upper(), path


def _on_routes(series: str, app: str, routes: Sequence[tuple[str, str]]) -> str:
    """SERIES of APP on each of ROUTES: one selector a route, joined by `or` (a method and a uri
    together, which one regex on each label could not say)."""
    if not routes:
        raise ValueError("no route to read")
    return " or ".join(f'{series}{{job="app",application="{app}",method="{method}",uri="{uri}"}}'
                       for method, uri in routes)


def app_latency_buckets(app: str, routes: Sequence[tuple[str, str]]) -> str:
    """APP's cumulative latency histogram on ROUTES, one series per bucket (`le`), every status."""
    return f"sum by (le) ({_on_routes(f'{APP_LATENCY}_bucket', app, routes)})"


def app_answers_by_status(app: str, routes: Sequence[tuple[str, str]]) -> str:
    """APP's count of answers on ROUTES, one series per status."""
    return f"sum by (status) ({_on_routes(f'{APP_LATENCY}_count', app, routes)})"


def app_latency_quantile(quantile: float, window: str, selector: str, by: str = "application") -> str:
    """The app's response time at QUANTILE over WINDOW as the app measured it (from the moment its
    framework took the request up), interpolated within the histogram's buckets; SELECTOR picks the
    series (the app, its routes)."""
    return (f"histogram_quantile({quantile:g}, sum by (le, {by}) "
            f"(rate({APP_LATENCY}_bucket{{{selector}}}[{window}])))")


@dataclass(frozen=True)
class Figure:
    """One named figure of a tier: what it answers, its unit (Grafana's unit ids), its PromQL.
    A figure read from whichever source reports (the load generator's own metrics, else the
    app's) labels its series with SOURCE_LABEL; `sources` says what each of its values counts."""

    tier: str
    name: str
    unit: str
    expr: str
    sources: tuple[tuple[str, str], ...] = ()

    def source_note(self, source: str | None) -> str | None:
        """What the figure counted when read from SOURCE (None: it has no source label)."""
        if source is None:
            return None
        return dict(self.sources).get(source, source)


def saturation(window: str) -> tuple[Figure, ...]:
    """Per tier, the queue that grows when the tier is the limit. A load generator that cannot
    keep up shows no queue of its own: it falls short of its target rate (perflab_run_info's
    target_rate), so its figure is the rate it achieved."""
    return (
        Figure("loadgen", "requests/s achieved", "reqps", request_rate(window),
               sources=((VEGETA_SOURCE, "vegeta's count"), (APP_SOURCE, "the app's count"))),
        Figure("app", "requests waiting for a DB connection", "short",
               "sum(perflab_db_pool_waiting)"),
        Figure("app", "JVM threads blocked", "short",
               'sum(jvm_threads_states_threads{state="blocked"})'),
        Figure("db", "sessions running statements", "short", DB_SESSIONS_RUNNING),
        Figure("db", "disk busy (fraction of time)", "percentunit", db_disk_busy(window)),
    )


def errors(window: str) -> tuple[Figure, ...]:
    """Per tier, the failures it reports."""
    answers = 'http_server_requests_seconds_count{job="app"}'
    server_errors = 'http_server_requests_seconds_count{job="app",status=~"5.."}'
    return (
        Figure("loadgen", "failed requests/s", "reqps", failed_request_rate(window),
               sources=((VEGETA_SOURCE, "vegeta's count"), (APP_SOURCE, "the app's 4xx/5xx"))),
        Figure("app", "5xx responses/s", "reqps",
               _zero_while_reporting(f"sum(rate({server_errors}[{window}]))", f"sum(rate({answers}[{window}]))")),
        Figure("db", "aborted connections/s", "ops",
               f"sum(rate(mysql_global_status_aborted_connects[{window}]))"),
    )
