"""perflab's Grafana dashboards as code (grafana-foundation-sdk), written to dashboards/*.json.

`make dashboards` (python -m perflab.dashboards) regenerates the files; they are checked in, and
roles/grafana provisions them from files. tests/unit/test_dashboards.py fails when the checked-in
JSON differs from what this package generates.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from grafana_foundation_sdk.cog.encoder import JSONEncoder
from grafana_foundation_sdk.models import dashboard as dashboard_model

from perflab.dashboards.app import app_dashboard
from perflab.dashboards.database import database_dashboard
from perflab.dashboards.loadgen import loadgen_dashboard
from perflab.dashboards.overview import lab_overview

# File name under dashboards/ -> the function that builds it.
DASHBOARDS: dict[str, Callable[[], dashboard_model.Dashboard]] = {
    "lab-overview.json": lab_overview,
    "app.json": app_dashboard,
    "database.json": database_dashboard,
    "loadgen.json": loadgen_dashboard,
}


def render(board: dashboard_model.Dashboard) -> str:
    """The dashboard as the JSON text checked in (stable: same input, same bytes)."""
    return json.dumps(board, cls=JSONEncoder, indent=2, ensure_ascii=False) + "\n"


def generate() -> dict[str, str]:
    """File name -> JSON text of every dashboard."""
    return {name: render(build()) for name, build in DASHBOARDS.items()}


def write(directory: Path) -> list[Path]:
    """Write every dashboard into DIRECTORY; returns the files written."""
    written = []
    for name, text in generate().items():
        path = directory / name
        path.write_text(text, encoding="utf-8")
        written.append(path)
    return written
