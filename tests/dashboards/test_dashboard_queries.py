"""Every query of every dashboard returns data on a live lab after a short run: a panel that shows
nothing is a bug. Grafana itself is not needed (nor installable where apt.grafana.com is out of
reach): each query is sent to Prometheus as Grafana would send it (tests/dashkit.py), over the
session's short run. A query that reads vegeta's exporter alone (Prometheus scrapes it only while a
vegeta phase runs; the short run uses wrk2, as `make lab` does where wrk2 can be built) is checked
over a short vegeta run of its own (greeting: zipcodes turns vegeta's exporter off); the loadgen
dashboard's other queries fall back to the app's count.

PERFLAB_PROMETHEUS_URL names the lab's Prometheus (default http://127.0.0.1:9090, the local lab)."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from dashkit import DASHBOARD_FILES, PROMETHEUS, SCRAPE_INTERVAL_S, RunWindow, panel_queries, reads_vegeta_alone
from labkit import ROOT, judged, make, new_run_dir, read_json, run_dirs, tail
from perflab.prometheus import Prometheus



# A scenario whose vegeta exporter is on (scenarios/*.yml's vegeta_exporter), for the queries of it alone.
VEGETA_RUN = ("APP=quarkus", "SCENARIO=greeting", "TOOL=vegeta", "RATE=100", "DURATION=10s", "WARMUP=0s")


@pytest.fixture(scope="module")
def window(short_run: Path) -> RunWindow:
    return RunWindow(short_run)


@pytest.fixture(scope="module")
def vegeta_window(lab: str) -> RunWindow:
    before = run_dirs()
    done = make("bench", *VEGETA_RUN)
    # Judged, whatever its verdict (labkit.judged): the queries read its window.
    assert judged(done), "the short vegeta run failed:\n" + tail(done.stdout, 80)
    run_dir = new_run_dir(before)
    assert read_json(run_dir / "bench-inputs.json")["run"]["exporter"] is True, "vegeta's exporter was not scraped"
    return RunWindow(run_dir)


def test_every_dashboard_is_checked() -> None:
    assert [p.name for p in DASHBOARD_FILES] == ["app.json", "database.json", "lab-overview.json", "loadgen.json"]


@pytest.mark.parametrize("expr", [pytest.param(expr, id=name) for name, expr in panel_queries()
                                  if not reads_vegeta_alone(expr)])
def test_query_returns_a_series_over_the_run(expr: str, window: RunWindow) -> None:
    said = window.empty(PROMETHEUS, expr)
    assert said is None, said


@pytest.mark.parametrize("expr", [pytest.param(expr, id=name) for name, expr in panel_queries()
                                  if reads_vegeta_alone(expr)])
def test_query_of_vegeta_alone_returns_a_series_over_a_vegeta_run(expr: str, vegeta_window: RunWindow) -> None:
    assert vegeta_window.tool == "vegeta"
    said = vegeta_window.empty(PROMETHEUS, expr)
    assert said is None, said


def test_some_queries_read_vegeta_alone() -> None:
    """The vegeta run above is there for them: were they gone, it would be wasted."""
    assert [expr for _, expr in panel_queries() if reads_vegeta_alone(expr)]


def test_variables_offer_the_run_and_its_app(window: RunWindow) -> None:
    prometheus = Prometheus(PROMETHEUS, timeout_s=30)
    board = json.loads((ROOT / "dashboards/lab-overview.json").read_text(encoding="utf-8"))
    for variable in board["templating"]["list"]:
        if variable["type"] != "query":
            continue
        # label_values(SELECTOR, LABEL): the values of LABEL among SELECTOR's series in the window.
        match = re.fullmatch(r"label_values\((.*), (\w+)\)", variable["query"])
        assert match, variable["query"]
        selector, label = window.substitute(match.group(1)), match.group(2)
        offered = {s.labels.get(label) for s in prometheus.query_range(
            f"group by ({label}) ({selector})", window.start, window.end, SCRAPE_INTERVAL_S)}
        expected = {"app": window.app, "run": window.run_id}[variable["name"]]
        assert expected in offered, f"${variable['name']} offers {offered}, not {expected}"


def test_the_panels_by_request_type_name_the_scenarios_requests_and_count_all_of_the_apps(
        window: RunWindow, short_run: Path) -> None:
    """The app dashboard by request type, as the operator reads it: one series per request of the scenario as run,
    under its name in the scenario file, and together every request the app counted on its routes."""
    panels = dict(panel_queries())
    prometheus = Prometheus(PROMETHEUS, timeout_s=30)

    def points(name: str, by: str) -> dict[str, dict[float, float]]:
        read: dict[str, dict[float, float]] = {}
        for series in prometheus.query_range(window.substitute(panels[name]), window.start, window.end, SCRAPE_INTERVAL_S):
            summed = read.setdefault(series.labels[by], {})
            for at, value in series.points:
                summed[at] = summed.get(at, 0.0) + value
        return read

    by_type = points("app: Requests per second by request type [A]", "type")
    scenario = read_json(short_run / "bench-inputs.json")["run"]["scenario"]
    assert sorted(by_type) == sorted(request["name"] for request in scenario["requests"])
    by_route = points("app: Requests per second by route [A]", "uri")
    routes_total = {at: sum(route.get(at, 0.0) for route in by_route.values()) for at in next(iter(by_route.values()))}
    types_total = {at: sum(kind.get(at, 0.0) for kind in by_type.values()) for at in routes_total}
    assert max(routes_total.values()) > 0
    assert types_total == pytest.approx(routes_total), "a route of the app's is missing from the request types"
