"""Lab overview: which tier is the limit? One row per tier (loadgen, app, db, monitoring) with its
CPU utilization, memory, saturation and errors side by side; the busiest tier named on top.

Per-tier CPU, memory, saturation and errors are perflab/tiers.py's PromQL (shared with `make
watch` and the audit); this module only lays them out. What tiers.py does not define yet (the
monitoring tier's saturation and errors) is defined here, in MONITORING_FIGURES.
"""

from __future__ import annotations

from grafana_foundation_sdk.builders import dashboard as dashboard_builder
from grafana_foundation_sdk.models import common as common_model
from grafana_foundation_sdk.models import dashboard as dashboard_model
from grafana_foundation_sdk.models import units

from perflab import tiers
from perflab.dashboards.common import (
    GRID_WIDTH, Panel, new_dashboard, number_panels, only_tier, query, queries, stat, timeseries,
)

UID = "perflab-overview"
WINDOW = "$__rate_interval"

TIER_TITLES = {"loadgen": "Load generator", "app": "App under test", "db": "Database", "monitoring": "Monitoring"}


def monitoring_saturation() -> tuple[tiers.Figure, ...]:
    """The monitoring tier's saturation (tiers.py has none for it yet): scrapes taking longer."""
    return (tiers.Figure("monitoring", "slowest scrape (s; the scrape interval is 5 s)", units.Seconds,
                         "max(scrape_duration_seconds)"),)


def monitoring_errors() -> tuple[tiers.Figure, ...]:
    """The monitoring tier's errors (tiers.py has none for it yet): targets it cannot scrape."""
    return (tiers.Figure("monitoring", "scrape targets down", units.Short, "sum(1 - up)"),)


def legend(figure: tiers.Figure) -> str:
    """The figure's name, and for a figure read from whichever source reports, which one."""
    return f"{figure.name} ({{{{{tiers.SOURCE_LABEL}}}}})" if figure.sources else figure.name


def described(figures: list[tiers.Figure]) -> str:
    """The figures' names, with what each source counts for those read from either."""
    def one(figure: tiers.Figure) -> str:
        if not figure.sources:
            return figure.name
        return f"{figure.name} ({', else '.join(f'{source}: {note}' for source, note in figure.sources)})"
    return "; ".join(one(f) for f in figures)


def which_tier_is_busiest() -> Panel:
    return stat(
        "Busiest tier (CPU, over the time range)",
        "The tier whose processes used the largest share of the cores it may use, averaged over the "
        "dashboard's time range (set the range to a run to judge that run, as the audit does).",
        units.PercentUnit, query(tiers.busiest_tier("$__range"), "{{tier}}", instant=True), width=6,
        text_mode=common_model.BigValueTextMode.VALUE_AND_NAME)


def how_busy_is_each_tier() -> Panel:
    return timeseries(
        "CPU utilization by tier",
        "Busy cores / allotted cores (perflab_host_cpus) per tier: 100% = every allotted core busy. "
        "Process-exporter's groups add up to each host's whole CPU use.",
        units.PercentUnit, [query(tiers.cpu_utilization(WINDOW), "{{tier}}")], width=18)


def how_busy_is_the_tier(tier: str, width: int) -> Panel:
    return timeseries(
        f"{TIER_TITLES[tier]}: CPU utilization",
        f"Busy cores / allotted cores of the {tier} tier.",
        units.PercentUnit, [query(only_tier(tiers.cpu_utilization(WINDOW), tier), "{{tier}}")], width)


def how_much_memory_does_the_tier_hold(tier: str, width: int) -> Panel:
    return timeseries(
        f"{TIER_TITLES[tier]}: resident memory",
        f"Resident memory of the {tier} tier's processes.",
        units.BytesIEC, [query(only_tier(tiers.memory_resident_bytes(), tier), "{{tier}}")], width)


# What the saturation panel of a tier shows (default: its queue).
SATURATION_MEANS = {
    "loadgen": "A load generator has no queue of its own: when it cannot keep up, the rate it achieves falls "
               "below the run's target (the run window's annotation names it)",
}


def what_queues_in_the_tier(tier: str, figures: list[tiers.Figure], width: int) -> Panel:
    means = SATURATION_MEANS.get(tier, "The queue that grows when this tier is the limit")
    return timeseries(
        f"{TIER_TITLES[tier]} saturation: " + ", ".join(f.name for f in figures),
        f"{means}: {described(figures)}.",
        figures[0].unit, queries(*((f.expr, legend(f)) for f in figures)), width)


def what_fails_in_the_tier(tier: str, figures: list[tiers.Figure], width: int) -> Panel:
    return timeseries(
        f"{TIER_TITLES[tier]} errors: " + ", ".join(f.name for f in figures),
        "Failures this tier reports: " + described(figures) + ".",
        figures[0].unit, queries(*((f.expr, legend(f)) for f in figures)), width)


def by_unit(figures: list[tiers.Figure]) -> list[list[tiers.Figure]]:
    """Figures grouped by unit (a panel has one unit), in tiers.py's order."""
    return [[f for f in figures if f.unit == unit] for unit in dict.fromkeys(f.unit for f in figures)]


def tier_row_panels(tier: str) -> list[Panel]:
    """The tier's row: CPU utilization, memory, its saturation and its errors, filling the width."""
    saturation = by_unit([f for f in (*tiers.saturation(WINDOW), *monitoring_saturation()) if f.tier == tier])
    errors = by_unit([f for f in (*tiers.errors(WINDOW), *monitoring_errors()) if f.tier == tier])
    count = 2 + len(saturation) + len(errors)
    widths = [GRID_WIDTH // count] * (count - 1) + [GRID_WIDTH - GRID_WIDTH // count * (count - 1)]
    return [
        how_busy_is_the_tier(tier, widths[0]),
        how_much_memory_does_the_tier_hold(tier, widths[1]),
        *(what_queues_in_the_tier(tier, group, widths[2 + i]) for i, group in enumerate(saturation)),
        *(what_fails_in_the_tier(tier, group, widths[2 + len(saturation) + i]) for i, group in enumerate(errors)),
    ]


def lab_overview() -> dashboard_model.Dashboard:
    board = new_dashboard(
        UID, "perflab: lab overview",
        "Which tier is the bottleneck? Each tier's utilization, saturation and errors side by side; "
        "the run window is marked.")
    board = board.with_row(dashboard_builder.Row("Which tier is the limit?"))
    board = board.with_panel(which_tier_is_busiest()).with_panel(how_busy_is_each_tier())
    for tier in tiers.TIERS:
        board = board.with_row(dashboard_builder.Row(TIER_TITLES[tier]))
        for panel in tier_row_panels(tier):
            board = board.with_panel(panel)
    return number_panels(board.build())
