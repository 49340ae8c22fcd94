"""The per-tier figures every view of the lab shares (the overview dashboard, `make watch`, the
audit's bottleneck attribution), as PromQL over the lab's Prometheus (docs/ARCHITECTURE.md).

CPU is counted per host from process-exporter: its groups (app-java, mysqld, loadgen, ...,
other) cover every process of a host, so their sum is the host's CPU use even when the hosts
are containers on one kernel, where node_exporter sees the whole machine. The cores a host may
use come from `perflab_host_cpus` (node_exporter's textfile, written by the node_exporter role).
Utilization = busy cores / allotted cores: 1.0 means every allotted core was busy.

`window` is a PromQL range: "30s" for a live view, "$__rate_interval" in Grafana, the run's
length (e.g. "60s", evaluated at the run's end) for a judgement over a run window.
"""

from __future__ import annotations

from dataclasses import dataclass

TIERS = ("loadgen", "app", "db", "monitoring")


def cpu_busy_cores(window: str, by: str = "tier") -> str:
    """Cores in use, averaged over the window, summed over the tier's processes and hosts."""
    return f'sum by ({by}) (rate(namedprocess_namegroup_cpu_seconds_total{{job="process"}}[{window}]))'


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


@dataclass(frozen=True)
class Figure:
    """One named figure of a tier: what it answers, its unit (Grafana's unit ids), its PromQL."""

    tier: str
    name: str
    unit: str
    expr: str


def saturation(window: str) -> tuple[Figure, ...]:
    """Per tier, the queue that grows when the tier is the limit."""
    return (
        Figure("loadgen", "dropped iterations/s (k6 could not keep the rate)", "ops",
               f"sum(rate(k6_dropped_iterations_total[{window}]))"),
        Figure("app", "requests waiting for a DB connection", "short",
               "sum(perflab_db_pool_waiting)"),
        Figure("app", "JVM threads blocked", "short",
               'sum(jvm_threads_states_threads{state="blocked"})'),
        Figure("db", "threads running queries", "short",
               "sum(mysql_global_status_threads_running)"),
        Figure("db", "disk busy (fraction of time)", "percentunit",
               f'max(rate(node_disk_io_time_seconds_total{{job="node",tier="db"}}[{window}]))'),
    )


def errors(window: str) -> tuple[Figure, ...]:
    """Per tier, the failures it reports."""
    return (
        Figure("loadgen", "failed requests/s (k6)", "reqps",
               f"sum(rate(k6_perflab_errors_total[{window}]))"),
        Figure("app", "5xx responses/s", "reqps",
               f'sum(rate(http_server_requests_seconds_count{{job="app",status=~"5.."}}[{window}]))'),
        Figure("db", "aborted connections/s", "ops",
               f"sum(rate(mysql_global_status_aborted_connects[{window}]))"),
    )
