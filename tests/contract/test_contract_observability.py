"""The variant observability=off (issue 23): the app without the lab's own instrumentation, to
measure what it costs. Its /metrics has no server histogram and no perflab_* gauge, while the app as
deployed by default has both; a value other than on or off stops the app before it serves.

Harness only: it starts the app a second time, beside the suite's, on the same private DB server.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import requests
from harness import AppProcess

LAB_SERIES = ("http_server_requests_seconds_bucket", "http_server_requests_seconds_count", "perflab_")


def series(base_url: str) -> list[str]:
    """The names of the series /metrics exports now."""
    text = requests.get(base_url + "/metrics", timeout=30).text
    return [line.split("{")[0].split(" ")[0] for line in text.splitlines() if line and not line.startswith("#")]


def serve_a_few(base_url: str) -> None:
    for path in ("/plaintext", "/json", "/greeting/observability"):
        assert requests.get(base_url + path, timeout=30).status_code == 200, path


def lab_series(names: list[str]) -> list[str]:
    return sorted({name for name in names if name.startswith(LAB_SERIES)})


@pytest.fixture
def project_app(target) -> str:
    if target.process is None or target.name != target.application:
        pytest.skip("needs the harness's own app in its default variant (--app quarkus, spring-mvc or spring-webflux)")
    return str(target.application)


@pytest.fixture
def without(project_app: str, target, work_dir: Path) -> Iterator[AppProcess]:
    app = AppProcess(app=project_app, db=target.db, workdir=work_dir / f"{project_app}-observability-off",
                     variant="observability=off")
    app.start()
    try:
        app.wait_ready()
        yield app
    finally:
        app.stop()


def test_observability_off_leaves_out_the_histogram_and_the_capacity_gauges(target, without: AppProcess) -> None:
    serve_a_few(target.base_url)
    serve_a_few(without.base_url)
    on, off = series(target.base_url), series(without.base_url)
    assert "http_server_requests_seconds_count" in on and any(name.startswith("perflab_") for name in on), \
        lab_series(on)
    assert lab_series(off) == [], lab_series(off)
    # The rest of /metrics stays: the JVM's own figures, which the lab reads beside the process' CPU.
    assert any(name.startswith("jvm_") for name in off), sorted(set(off))[:20]


def test_observability_other_than_on_or_off_stops_the_app(project_app: str, target, work_dir: Path) -> None:
    app = AppProcess(app=project_app, db=target.db, workdir=work_dir / f"{project_app}-observability-bad",
                     extra_env={"PERFLAB_OBSERVABILITY": "maybe"})
    app.start()
    try:
        with pytest.raises(RuntimeError, match="exited with"):
            app.wait_ready()
        assert "PERFLAB_OBSERVABILITY must be 'on' or 'off', not 'maybe'" in app.log_tail(), app.log_tail()
    finally:
        app.stop()
