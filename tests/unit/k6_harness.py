"""Run real k6 briefly against a tiny HTTP server on 127.0.0.1, for the k6 parser tests."""

from __future__ import annotations

import http.server
import os
import shutil
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

K6 = shutil.which("k6")

# summaryTrendStats asks for the percentiles perflab reports; k6's default stops at p(95).
SCRIPT = """
import http from 'k6/http';
import { check } from 'k6';
export const options = {
  summaryTrendStats: ['avg', 'min', 'med', 'max', 'p(50)', 'p(75)', 'p(90)', 'p(99)', 'p(99.9)', 'count'],
  scenarios: {
    measured: {
      executor: 'constant-arrival-rate',
      rate: Number(__ENV.RATE), timeUnit: '1s', duration: __ENV.DURATION,
      preAllocatedVUs: Number(__ENV.VUS), maxVUs: Number(__ENV.VUS),
    },
  },
};
export default function () {
  const response = http.get(__ENV.URL);
  check(response, { 'status is 200': (r) => r.status === 200 });
}
export function handleSummary(data) {
  return { [__ENV.HANDLE_SUMMARY_FILE]: JSON.stringify(data, null, 1) };
}
"""


class _Handler(http.server.BaseHTTPRequestHandler):
    """Answers 200 at once; 500 when the path holds "fail"; after 100 ms when it holds "slow"."""

    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:  # noqa: N802 (the name http.server calls)
        if "slow" in self.path:
            time.sleep(0.1)
        status = 500 if "fail" in self.path else 200
        body = b"fail\n" if status == 500 else b"ok\n"
        self.send_response(status)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        """Keep the test output quiet."""


@contextmanager
def local_server() -> Iterator[str]:
    """A threaded HTTP server on an ephemeral 127.0.0.1 port; yields its base URL."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def run_k6(workdir: Path, url: str, rate: int, duration: str, vus: int) -> tuple[Path, Path]:
    """Run k6 once; returns the --summary-export file and the handleSummary file."""
    assert K6 is not None, "k6 is not installed"
    script = workdir / "load.js"
    script.write_text(SCRIPT)
    summary_export = workdir / "summary-export.json"
    handle_summary = workdir / "handle-summary.json"
    env = {
        **os.environ,
        "K6_NO_USAGE_REPORT": "true",
        "URL": url,
        "RATE": str(rate),
        "DURATION": duration,
        "VUS": str(vus),
        "HANDLE_SUMMARY_FILE": str(handle_summary),
    }
    subprocess.run(
        [K6, "run", "--quiet", f"--summary-export={summary_export}", str(script)],
        env=env,
        cwd=workdir,
        check=True,
        capture_output=True,
        timeout=60,
    )
    return summary_export, handle_summary
