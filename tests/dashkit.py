"""The dashboards' queries as Grafana sends them, for the lab tests that check each returns data
(tests/dashboards). Each query is sent to Prometheus with the dashboard variables substituted as
Grafana would (app -> the run's app, run -> its run id, $__rate_interval -> 4 scrape intervals,
$__interval -> the step, $__range -> the window) and evaluated as a range query over the run's
measured window (context.json)."""
from __future__ import annotations

import json
import os
import re
from datetime import datetime
from pathlib import Path

from labkit import ROOT, read_json, scrape_interval_s
from perflab.prometheus import Prometheus

# The lab's Prometheus: PERFLAB_PROMETHEUS_URL, by default the local lab's published port.
PROMETHEUS = os.environ.get("PERFLAB_PROMETHEUS_URL", "http://127.0.0.1:9090")
DASHBOARD_FILES = sorted((ROOT / "dashboards").glob("*.json"))
SCRAPE_INTERVAL_S = scrape_interval_s()
# What Grafana gives $__rate_interval with the scrape interval as the step: 4 scrapes.
RATE_INTERVAL = f"{4 * SCRAPE_INTERVAL_S}s"
VARIABLE = re.compile(r"\$(?:\{(\w+)\}|(\w+))")


def panel_queries() -> list[tuple[str, str]]:
    """(its name, "board: panel [refId]" or "board: annotation NAME"; the query) of every dashboard."""
    cases = []
    for path in DASHBOARD_FILES:
        board = json.loads(path.read_text(encoding="utf-8"))
        for panel in board["panels"]:
            for target in panel.get("targets", []):
                cases.append((f"{path.stem}: {panel['title']} [{target['refId']}]", target["expr"]))
        for annotation in board["annotations"]["list"]:
            cases.append((f"{path.stem}: annotation {annotation['name']}", annotation["expr"]))
    return cases


def reads_vegeta_alone(expr: str) -> bool:
    """A query of vegeta's exporter with no fallback to the app's count: data only from a vegeta run."""
    return 'job="vegeta"' in expr and 'job="app"' not in expr


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
            if name.isdigit():  # label_replace's $1, ${1}: no variable has that name, so Grafana leaves it
                return match.group(0)
            assert name in values, f"no value for ${name} in {expr}"
            return values[name]

        return VARIABLE.sub(value, expr)

    def empty(self, prometheus_url: str, expr: str) -> str | None:
        """None where EXPR returns a series over the window, else what to say (the query as sent)."""
        promql = self.substitute(expr)
        series = Prometheus(prometheus_url, timeout_s=30).query_range(promql, self.start, self.end, SCRAPE_INTERVAL_S)
        return None if series else f"no series over {self.run_id}'s measured window for:\n  {promql}"
