"""The report in a real browser (Debian's chromium, headless): it opens with no console error,
its charts are drawn and visible, and screenshots are kept in build/test-artifacts: report.png
(the top of the page), report-over-time.png (a vegeta run's section, with its chart over time) and
report-wrk2-over-time.png (a wrk2 run's, over time from the app's histogram) and report-repetitions.png
(runs repeated with REPEAT=3: the side-by-side medians and a repeated sweep's range bar).
The checker itself is shown to fail on pages with a console error, an uncaught exception, and a
request the report's Content-Security-Policy refuses."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from .builder import GOOD_RUNS, WARMUP_RUN, WRK2_OVER_TIME, add_repeated, full_results, perflab
from .chromium import visit

ARTIFACTS = Path(__file__).resolve().parents[2] / "build" / "test-artifacts"

# Every chart's box and its drawn lines, as the browser laid them out.
CHART_GEOMETRY = """
Array.from(document.querySelectorAll("svg.chart")).map(svg => {
  const box = svg.getBoundingClientRect();
  const style = getComputedStyle(svg);
  return {
    kind: svg.getAttribute("class"),
    width: box.width, height: box.height,
    visible: style.display !== "none" && style.visibility !== "hidden" && svg.checkVisibility(),
    lines: Array.from(svg.querySelectorAll("polyline.series")).map(line => line.getTotalLength()),
    ticks: svg.querySelectorAll("text.tick").length,
  };
})
"""


@pytest.fixture(scope="module")
def report_page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    results = full_results(tmp_path_factory.mktemp("results"))
    done = perflab("report", "--results", results)
    assert done.returncode == 3, done.stderr  # written, with the bad input listed
    return results / "report.html"


def test_report_opens_without_console_errors_and_draws_its_charts(report_page: Path) -> None:
    seen = visit(report_page, CHART_GEOMETRY)
    assert seen.errors == []
    charts: list[dict[str, Any]] = seen.evaluated
    kinds = [c["kind"] for c in charts]
    # The apps side by side first: greeting at 200 req/s with vegeta, its four judged runs (three apps and
    # an INVALID variant), then one chart per other (scenario, rate, tool, profile) with a judged run.
    side_by_side = [c for c in charts if c["kind"] == "chart chart-side-by-side"]
    assert charts[0]["kind"] == "chart chart-side-by-side" and len(charts[0]["lines"]) == 4
    assert len(side_by_side) == 7
    assert kinds.count("chart chart-latency") == 10  # one per judged run, none for the five left out
    assert kinds.count("chart chart-sweep") == 1
    assert kinds.count("chart chart-cpu") == 3 and kinds.count("chart chart-memory") == 3
    # Over time: the judged vegeta runs and the wrk2 run with utilization.json (test_report.OVER_TIME_CHARTS).
    assert kinds.count("chart chart-timeseries") == 8
    for chart in charts:
        assert chart["visible"] and chart["width"] > 100 and chart["height"] > 100, chart
        assert chart["ticks"] >= 4, chart
        assert chart["lines"] and all(length > 20 for length in chart["lines"]), chart

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    screenshot = ARTIFACTS / "report.png"
    screenshot.write_bytes(seen.screenshot_png)
    assert seen.screenshot_png.startswith(b"\x89PNG\r\n\x1a\n") and len(seen.screenshot_png) > 50_000


def over_time_view(run_id: str) -> str:
    """The section of RUN_ID, scrolled so that its chart over time ends at the bottom of the window."""
    return f"""
(() => {{
  const section = document.getElementById("run-{run_id}");
  section.querySelector(".over-time").scrollIntoView({{block: "end"}});
  const svg = section.querySelector("svg.chart-timeseries");
  const box = svg.getBoundingClientRect();
  return {{top: box.top, bottom: box.bottom, height: window.innerHeight,
           panels: svg.querySelectorAll("g.panel").length, bands: svg.querySelectorAll("rect.band").length}};
}})()
"""


def test_a_run_over_time_in_the_browser(report_page: Path) -> None:
    """The chart over time of the run with a warm-up, in view: three panels, the warm-up shaded in each;
    the screenshot is kept in build/test-artifacts/report-over-time.png."""
    seen = visit(report_page, over_time_view(WARMUP_RUN.run_id), height=1000)
    assert seen.errors == []
    view: dict[str, Any] = seen.evaluated
    assert (view["panels"], view["bands"]) == (3, 3)
    assert 0 <= view["top"] < view["bottom"] <= view["height"], view  # the whole chart is in the screenshot
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    (ARTIFACTS / "report-over-time.png").write_bytes(seen.screenshot_png)
    assert seen.screenshot_png.startswith(b"\x89PNG\r\n\x1a\n") and len(seen.screenshot_png) > 30_000


def test_a_wrk2_run_over_time_from_the_apps_histogram_in_the_browser(report_page: Path) -> None:
    """wrk2 keeps no request: the app's answers and server-side p50/p99 every 5 s, and the CPU, in view;
    the screenshot is kept in build/test-artifacts/report-wrk2-over-time.png."""
    seen = visit(report_page, over_time_view(GOOD_RUNS[WRK2_OVER_TIME].run_id), height=1000)
    assert seen.errors == []
    view: dict[str, Any] = seen.evaluated
    assert (view["panels"], view["bands"]) == (3, 0)
    assert 0 <= view["top"] < view["bottom"] <= view["height"], view
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    (ARTIFACTS / "report-wrk2-over-time.png").write_bytes(seen.screenshot_png)
    assert seen.screenshot_png.startswith(b"\x89PNG\r\n\x1a\n") and len(seen.screenshot_png) > 30_000


# The repeated runs' side-by-side chart and table, and the repeated sweep's chart with its range bar.
REPETITIONS_VIEW = """
(() => {
  const sweep = document.querySelector("svg.chart-sweep");
  document.querySelector("table.side-by-side").scrollIntoView({block: "start"});
  return {bars: sweep.querySelectorAll("path.range").length, sweep_visible: sweep.checkVisibility(),
          rows: document.querySelectorAll("table.side-by-side tbody tr").length};
})()
"""


def test_repetitions_in_the_browser(tmp_path: Path) -> None:
    """REPEAT=3 of two apps and a sweep of one: the medians side by side and the sweep's range bar
    drawn; the screenshot is kept in build/test-artifacts/report-repetitions.png."""
    add_repeated(tmp_path)
    done = perflab("report", "--results", tmp_path)
    assert done.returncode == 3, done.stderr  # written, each run without utilization.json listed
    seen = visit(tmp_path / "report.html", REPETITIONS_VIEW, height=1900)
    assert seen.errors == []
    view: dict[str, Any] = seen.evaluated
    assert view["bars"] == 1 and view["sweep_visible"] and view["rows"] == 2, view
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    (ARTIFACTS / "report-repetitions.png").write_bytes(seen.screenshot_png)
    assert seen.screenshot_png.startswith(b"\x89PNG\r\n\x1a\n")


@pytest.mark.parametrize(("body", "expected"), [
    ('<script>console.error("deliberate console error")</script>', "console.error: deliberate console error"),
    ("<script>window.noSuchFunction()</script>", "uncaught exception: TypeError: window.noSuchFunction"),
    # The report's own policy: anything from outside the file is refused, and that is an error.
    ('<img src="http://192.0.2.1/chart.png" alt="">', "log (security): Loading the image 'http://192.0.2.1/chart.png' violates the following Content Security Policy"),
])
def test_the_check_catches_console_errors(tmp_path: Path, body: str, expected: str) -> None:
    policy = "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'" if "<script" in body \
        else "default-src 'none'; style-src 'unsafe-inline'"
    page = tmp_path / "broken.html"
    page.write_text(f'<!DOCTYPE html><html><head><meta http-equiv="Content-Security-Policy" content="{policy}">'
                    f"</head><body><svg class=\"chart\" width=\"100\" height=\"100\"></svg>{body}</body></html>")
    seen = visit(page, CHART_GEOMETRY)
    assert any(expected in error for error in seen.errors), seen.errors
    assert len(seen.evaluated) == 1  # the page itself loaded; only the error differs


def test_chromium_is_the_debian_package() -> None:
    """CI installs chromium from Debian's apt (.ci/run); the test must not silently use something else."""
    done = subprocess.run(["chromium", "--version"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout.startswith("Chromium "), done.stdout + done.stderr
