"""What every perflab dashboard shares: the datasource, app and run variables, the run window
annotation, the panel shapes (time series, stat) and PromQL helpers.

Every panel and query refers to the datasource through the variable `${datasource}` (default:
the Prometheus datasource roles/grafana provisions, uid `prometheus`), so a dashboard also works
against another Prometheus. Variables and placeholders Grafana substitutes (and the lab test
substitutes too, tests/dashboards): `$datasource`, `$app`, `$run`, `$__rate_interval`,
`$__interval`, `$__range`.
"""

from __future__ import annotations

import typing

from grafana_foundation_sdk.builders import common as common_builder
from grafana_foundation_sdk.builders import dashboard as dashboard_builder
from grafana_foundation_sdk.builders import prometheus as prometheus_builder
from grafana_foundation_sdk.builders import stat as stat_builder
from grafana_foundation_sdk.builders import timeseries as timeseries_builder
from grafana_foundation_sdk.cog import builder as cogbuilder
from grafana_foundation_sdk.models import common as common_model
from grafana_foundation_sdk.models import dashboard as dashboard_model

# The datasource roles/grafana provisions (grafana_datasource_uid, name "Prometheus").
PROVISIONED_DATASOURCE_UID = "prometheus"
PROVISIONED_DATASOURCE_NAME = "Prometheus"
DATASOURCE_VARIABLE = "datasource"
DATASOURCE = dashboard_model.DataSourceRef(type_val="prometheus", uid="${" + DATASOURCE_VARIABLE + "}")

# Every dashboard carries this tag; the dashboards' links list the dashboards that carry it.
TAG = "perflab"
# Prometheus scrapes every 5 s (roles/prometheus): 5 s is the finest step worth asking for.
SCRAPE_INTERVAL = "5s"
PANEL_HEIGHT = 8
GRID_WIDTH = 24

Panel = cogbuilder.Builder[dashboard_model.Panel]


def query(expr: str, legend: str = "__auto", ref_id: str = "A", instant: bool = False) -> prometheus_builder.Dataquery:
    """One PromQL query of a panel, on the datasource variable."""
    built = (prometheus_builder.Dataquery().expr(expr).legend_format(legend).ref_id(ref_id)
             .datasource(DATASOURCE))
    return built.instant() if instant else built.range()


def queries(*exprs_and_legends: tuple[str, str]) -> list[prometheus_builder.Dataquery]:
    """Several queries of one panel, ref ids A, B, C, ..."""
    return [query(expr, legend, chr(ord("A") + i)) for i, (expr, legend) in enumerate(exprs_and_legends)]


def timeseries(title: str, description: str, unit: str, targets: list[prometheus_builder.Dataquery],
               width: int = 12, stacked: bool = False, min_value: float | None = 0) -> timeseries_builder.Panel:
    """A time series panel: what it answers (title, description), one unit for all its series."""
    panel = (timeseries_builder.Panel().title(title).description(description).datasource(DATASOURCE)
             .unit(unit).targets(typing.cast(list[cogbuilder.Builder[typing.Any]], targets))
             .height(PANEL_HEIGHT).span(width).line_width(1).fill_opacity(10)
             .legend(common_builder.VizLegendOptions().display_mode(common_model.LegendDisplayMode.TABLE)
                     .placement(common_model.LegendPlacement.BOTTOM).show_legend(True)
                     .calcs(["mean", "max", "lastNotNull"]))
             .tooltip(common_builder.VizTooltipOptions().mode(common_model.TooltipDisplayMode.MULTI)
                      .sort(common_model.SortOrder.DESCENDING)))
    if stacked:
        panel = panel.stacking(common_builder.StackingConfig().mode(common_model.StackingMode.NORMAL))
    if min_value is not None:
        panel = panel.min(min_value)
    return panel


def stat(title: str, description: str, unit: str, target: prometheus_builder.Dataquery,
         width: int = 6, text_mode: common_model.BigValueTextMode = common_model.BigValueTextMode.VALUE_AND_NAME,
         ) -> stat_builder.Panel:
    """A stat panel showing the last value of its query (named by the query's legend)."""
    return (stat_builder.Panel().title(title).description(description).datasource(DATASOURCE).unit(unit)
            .targets([target]).height(PANEL_HEIGHT).span(width).text_mode(text_mode)
            .graph_mode(common_model.BigValueGraphMode.NONE)
            .color_mode(common_model.BigValueColorMode.BACKGROUND)
            .reduce_options(common_builder.ReduceDataOptions().calcs(["lastNotNull"]).values(False)))


def only_tier(expr: str, tier: str) -> str:
    """EXPR's series whose `tier` label is TIER (keeps a per-tier figure of perflab/tiers.py whole)."""
    return f'({expr}) and on(tier) label_replace(vector(1), "tier", "{tier}", "", "")'


def zero_when_absent(expr: str, witness: str) -> str:
    """EXPR, or 0 while WITNESS has series: for counters that only appear with their first event
    (Micrometer creates a route's 4xx or 5xx series at its first such answer). WITNESS is a
    sibling that proves the source reports (its requests), so a misspelt metric still shows
    nothing instead of a reassuring 0."""
    return f"({expr}) or (0 * {witness})"


def datasource_variable() -> dashboard_builder.DatasourceVariable:
    return (dashboard_builder.DatasourceVariable(DATASOURCE_VARIABLE).label("Datasource").type("prometheus")
            .current(dashboard_model.VariableOption(text=PROVISIONED_DATASOURCE_NAME, value=PROVISIONED_DATASOURCE_UID)))


def label_values_variable(name: str, label: str, query_text: str, description: str) -> dashboard_builder.QueryVariable:
    """A variable listing the values of a label (multi-select, "All" by default). The query is the
    classic string `label_values(selector, label)`, which every Grafana version reads."""
    return (dashboard_builder.QueryVariable(name).label(label).description(description).datasource(DATASOURCE)
            .query(query_text)
            .refresh(dashboard_model.VariableRefresh.ON_TIME_RANGE_CHANGED)
            .sort(dashboard_model.VariableSort.ALPHABETICAL_DESC)
            .multi(True).include_all(True).all_value(".*")
            .current(dashboard_model.VariableOption(text="All", value="$__all")))


def app_variable() -> dashboard_builder.QueryVariable:
    return label_values_variable(
        "app", "App", 'label_values(jvm_info_total{job="app"}, application)',
        "The app under test (the `application` tag every app puts on its metrics).")


def run_variable() -> dashboard_builder.QueryVariable:
    return label_values_variable(
        "run", "Run", 'label_values(perflab_run_info{app=~"$app"}, run_id)',
        "Benchmark runs (perflab_run_info's run_id) in the time range: marks their windows; the load "
        "generator's panels show only the selected runs' phases.")


# The run window: perflab_run_info{run_id,app,scenario,tool,target_rate,phase} is 1 on the loadgen
# host while a phase of a run runs (docs/ARCHITECTURE.md), so each phase shows as one region.
RUN_WINDOW_EXPR = ('max by (run_id, phase, app, scenario, tool, target_rate) '
                   '(perflab_run_info{job="node", run_id=~"$run"})')


class PrometheusAnnotationQuery(dashboard_model.AnnotationQuery):
    """The SDK's AnnotationQuery plus the fields Grafana's Prometheus annotations read
    (titleFormat, textFormat, tagKeys, step, useValueForTime), which the SDK's generic type lacks."""

    def __init__(self, name: str, expr: str, title_format: str, text_format: str, tag_keys: str, step: str) -> None:
        super().__init__(name=name, datasource=DATASOURCE, enable=True, hide=False,
                         icon_color="rgba(255, 152, 48, 0.25)", expr=expr)
        self.title_format = title_format
        self.text_format = text_format
        self.tag_keys = tag_keys
        self.step = step

    def to_json(self) -> dict[str, object]:
        payload = super().to_json()
        payload.update(titleFormat=self.title_format, textFormat=self.text_format, tagKeys=self.tag_keys,
                       step=self.step, useValueForTime=False)
        return payload


class RunWindowAnnotation(cogbuilder.Builder[dashboard_model.AnnotationQuery]):
    """Builds the run window annotation (one region per phase of each selected run)."""

    def build(self) -> dashboard_model.AnnotationQuery:
        return PrometheusAnnotationQuery(
            name="Run window", expr=RUN_WINDOW_EXPR, title_format="{{run_id}}: {{phase}}",
            text_format="{{app}} {{scenario}} with {{tool}} at {{target_rate}} req/s",
            tag_keys="phase,app,scenario", step=SCRAPE_INTERVAL)


def links_to_every_perflab_dashboard() -> dashboard_builder.DashboardLink:
    return (dashboard_builder.DashboardLink("perflab").type(dashboard_model.DashboardLinkType.DASHBOARDS)
            .tags([TAG]).as_dropdown(True).include_vars(True).keep_time(True))


def new_dashboard(uid: str, title: str, description: str) -> dashboard_builder.Dashboard:
    """A dashboard with a stable uid, the shared variables, the run window and links to the others."""
    return (dashboard_builder.Dashboard(title).uid(uid).description(description).tags([TAG])
            .editable().refresh("10s").time("now-15m", "now").timezone("browser")
            .tooltip(dashboard_model.DashboardCursorSync.CROSSHAIR)
            .with_variable(datasource_variable()).with_variable(app_variable()).with_variable(run_variable())
            .annotation(RunWindowAnnotation()).link(links_to_every_perflab_dashboard()))


def number_panels(board: dashboard_model.Dashboard) -> dashboard_model.Dashboard:
    """Panel ids 1, 2, 3, ... in layout order (rows included): stable across regenerations."""
    next_id = 1
    for panel in board.panels or []:
        panel.id_val = next_id
        next_id += 1
        for nested in getattr(panel, "panels", None) or []:
            nested.id_val = next_id
            next_id += 1
    return board
