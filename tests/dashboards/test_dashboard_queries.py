"""Every query of every dashboard returns data on a live lab after a short run: a panel that shows
nothing is a bug. Grafana itself is not needed (nor installable where apt.grafana.com is out of
reach): each query is sent to Prometheus as Grafana would send it, with the dashboard variables
substituted as Grafana would (datasource -> this Prometheus, app -> the run's app, run -> its run
id, $__rate_interval -> 4 scrape intervals, $__interval -> the step, $__range -> the window) and
evaluated as a range query over the run's measured window (context.json). A query that reads
vegeta's exporter alone (Prometheus scrapes it only while a vegeta phase runs) is checked only when
the short run used vegeta; the loadgen dashboard's other queries fall back to the app's count.

PERFLAB_PROMETHEUS_URL names the lab's Prometheus (default http://127.0.0.1:9090, the local lab)."""
from __future__ import annotations

import json
import os
import re
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from labkit import ROOT, read_json
from perflab.prometheus import Prometheus

PROMETHEUS = os.environ.get("PERFLAB_PROMETHEUS_URL", "http://127.0.0.1:9090")
DASHBOARD_FILES = sorted((ROOT / "dashboards").glob("*.json"))
SCRAPE_INTERVAL_S = 5
# What Grafana gives $__rate_interval with a 5 s scrape interval and a 5 s step: 4 scrapes.
RATE_INTERVAL = f"{4 * SCRAPE_INTERVAL_S}s"
VARIABLE = re.compile(r"\$(?:\{(\w+)\}|(\w+))")


def panel_queries() -> list[Any]:
    cases = []
    for path in DASHBOARD_FILES:
        board = json.loads(path.read_text(encoding="utf-8"))
        for panel in board["panels"]:
            for target in panel.get("targets", []):
                cases.append(pytest.param(target["expr"], id=f"{path.stem}: {panel['title']} [{target['refId']}]"))
        for annotation in board["annotations"]["list"]:
            cases.append(pytest.param(annotation["expr"], id=f"{path.stem}: annotation {annotation['name']}"))
    return cases


def unix(timestamp: str) -> float:
    return datetime.fromisoformat(timestamp.replace("Z", "+00:00")).timestamp()


class RunWindow:
    def __init__(self, run_dir: Path) -> None:
        context = read_json(run_dir / "context.json")
        self.run_id: str = read_json(run_dir / "status.json")["run_id"]
        self.tool: str = read_json(run_dir / "result.json")["tool"]
        self.app: str = context["app"]["name"]
        self.start = unix(context["started_at"])
        self.end = unix(context["ended_at"])

    def substitute(self, expr: str) -> str:
        """EXPR with the dashboard variables replaced as Grafana would for this run."""
        values = {"app": self.app, "run": self.run_id, "__rate_interval": RATE_INTERVAL,
                  "__interval": f"{SCRAPE_INTERVAL_S}s", "__range": f"{round(self.end - self.start)}s"}

        def value(match: re.Match[str]) -> str:
            name = match.group(1) or match.group(2)
            assert name in values, f"no value for ${name} in {expr}"
            return values[name]

        return VARIABLE.sub(value, expr)


@pytest.fixture(scope="module")
def window(short_run: Path) -> RunWindow:
    return RunWindow(short_run)


def test_every_dashboard_is_checked() -> None:
    assert [p.name for p in DASHBOARD_FILES] == ["app.json", "database.json", "lab-overview.json", "loadgen.json"]


@pytest.mark.parametrize("expr", panel_queries())
def test_query_returns_a_series_over_the_run(expr: str, window: RunWindow) -> None:
    if 'job="vegeta"' in expr and 'job="app"' not in expr and window.tool != "vegeta":
        pytest.skip(f"reads vegeta's exporter alone; {window.run_id} ran {window.tool}")
    promql = window.substitute(expr)
    series = Prometheus(PROMETHEUS, timeout_s=30).query_range(promql, window.start, window.end, SCRAPE_INTERVAL_S)
    assert series, f"no series over {window.run_id}'s measured window for:\n  {promql}"


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
