"""`perflab prometheus interval`: the scrape interval the lab's Prometheus runs with, as the bench's input
check asks it (roles/bench/tasks/check_input.yml), from a server that answers /api/v1/status/config as
Prometheus does; an empty line where it cannot be asked."""
from __future__ import annotations

import http.server
import json
import subprocess
import sys
import threading
from collections.abc import Iterator

import pytest

from perflab.prometheus import duration_s

# The head of what Prometheus 2.x answers on /api/v1/status/config (its configuration as YAML).
CONFIG = """global:
  scrape_interval: {interval}
  scrape_timeout: 4s
  evaluation_interval: 1m
scrape_configs:
- job_name: node
  scrape_interval: 30s
"""


@pytest.fixture
def prometheus(request: pytest.FixtureRequest) -> Iterator[str]:
    interval = request.param

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (http.server's name)
            if self.path.split("?")[0] != "/api/v1/status/config":
                self.send_error(404)
                return
            body = json.dumps({"status": "success", "data": {"yaml": CONFIG.format(interval=interval)}}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:  # noqa: A002 (http.server's name)
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def interval(url: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "perflab", "prometheus", "interval", "--prometheus", url],
                          capture_output=True, text=True, check=False)


@pytest.mark.parametrize(("prometheus", "said"), [("5s", "5"), ("15s", "15"), ("1m30s", "90"), ("500ms", "0.5")],
                         indirect=["prometheus"])
def test_the_global_scrape_interval_in_seconds(prometheus: str, said: str) -> None:
    done = interval(prometheus)
    assert (done.returncode, done.stdout, done.stderr) == (0, said + "\n", "")


def test_an_empty_line_where_prometheus_cannot_be_asked() -> None:
    with http.server.ThreadingHTTPServer(("127.0.0.1", 0), http.server.BaseHTTPRequestHandler) as closed:
        url = f"http://127.0.0.1:{closed.server_address[1]}"  # bound, not serving: the connection is never answered
    done = interval(url)
    assert (done.returncode, done.stdout) == (0, "\n"), done.stderr


@pytest.mark.parametrize(("written", "seconds"), [("5s", 5.0), ("1m", 60.0), ("1h1m1s", 3661.0), ("250ms", 0.25)])
def test_durations_as_prometheus_writes_them(written: str, seconds: float) -> None:
    assert duration_s(written) == seconds


@pytest.mark.parametrize("written", ["", "5", "5 s", "s5", "1x", "5s junk"])
def test_anything_else_is_not_a_duration(written: str) -> None:
    with pytest.raises(ValueError, match="not a Prometheus duration"):
        duration_s(written)
