"""The k6 summary parser: committed real summaries with exact values, then live k6 runs."""

import json
from pathlib import Path

import pytest

from perflab import k6
from perflab.k6 import ParseError

from .helpers import FIXTURES
from .k6_harness import K6, local_server, run_k6

K6_FIXTURES = FIXTURES / "k6"
SHAPES = {"summary-export": "summary-export.json", "handleSummary": "handle-summary.json"}


def fixture(name: str) -> str:
    return (K6_FIXTURES / name).read_text()


@pytest.mark.parametrize(("shape", "suffix"), SHAPES.items())
def test_steady_summary(shape: str, suffix: str) -> None:
    summary = k6.parse(fixture(f"steady-20rps.{suffix}"))
    assert summary.shape == shape
    assert summary.requests == 41
    assert summary.requests_per_sec == 20.485062425632133
    assert summary.duration_s == pytest.approx(2.001458387, abs=1e-9)
    assert summary.latency.percentiles_ms == {
        "50": 0.363936,
        "75": 0.415427,
        "90": 0.792501,
        "99": 2.3786986000000017,
        "99.9": 2.734773160000008,
    }
    assert (summary.latency.mean_ms, summary.latency.min_ms, summary.latency.max_ms) == (
        0.5058471463414633,
        0.302366,
        2.774337,
    )
    assert summary.latency.total_count == 41
    assert (summary.failed_requests, summary.checks_passed, summary.checks_failed) == (0, 41, 0)
    assert summary.dropped_iterations == 0
    assert summary.data_received_bytes == 5740


@pytest.mark.parametrize("suffix", SHAPES.values())
def test_failing_summary_counts_failures_and_dropped_iterations(suffix: str) -> None:
    summary = k6.parse(fixture(f"failing-dropping-20rps.{suffix}"))
    assert summary.requests == 14
    assert summary.requests_per_sec == 6.8551247229740655
    # http_req_failed is a Rate: its "passes" are the requests that failed.
    assert summary.failed_requests == 14
    assert (summary.checks_passed, summary.checks_failed) == (0, 14)
    assert summary.dropped_iterations == 27
    assert summary.latency.at(99) == 147.62648225
    result = k6.to_run_result(summary, target_rate=20)
    assert (result.tool, result.target_rate, result.achieved_rate) == ("k6", 20, 6.8551247229740655)
    assert result.errors.by_kind() == {"failed_requests": 14, "failed_checks": 14}
    assert result.dropped_iterations == 27
    assert result.latency_uncorrected is None


def _without(document: dict, metric: str) -> str:  # type: ignore[type-arg]
    return json.dumps({**document, "metrics": {k: v for k, v in document["metrics"].items() if k != metric}})


STEADY_EXPORT = json.loads((K6_FIXTURES / "steady-20rps.summary-export.json").read_text())
STEADY_HANDLE = json.loads((K6_FIXTURES / "steady-20rps.handle-summary.json").read_text())


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "empty"),
        (fixture("steady-20rps.summary-export.json")[:700], "not JSON \\(truncated\\?\\)"),
        ("[1, 2]", "no 'metrics' object"),
        (_without(STEADY_EXPORT, "http_reqs"), "no http_reqs metric"),
        (_without(STEADY_EXPORT, "http_req_failed"), "no http_req_failed metric"),
        (_without(STEADY_HANDLE, "http_req_duration"), "no http_req_duration metric"),
        (
            json.dumps({"metrics": {**STEADY_EXPORT["metrics"], "http_reqs": {"count": "41", "rate": 20}}}),
            "http_reqs: 'count' should be a non-negative number, found '41'",
        ),
        (
            json.dumps({"metrics": {**STEADY_EXPORT["metrics"], "http_reqs": {"count": 4.5, "rate": 20}}}),
            "should be a whole number",
        ),
        (
            json.dumps({"metrics": {**STEADY_EXPORT["metrics"], "http_req_duration": {"avg": 1, "max": 2}}}),
            "add p\\(..\\) to the script's summaryTrendStats",
        ),
        (json.dumps({**STEADY_HANDLE, "state": None}), "without a 'state' object"),
    ],
    ids=[
        "empty",
        "truncated",
        "not-a-summary",
        "no-http-reqs",
        "no-http-req-failed",
        "no-duration",
        "string-count",
        "fractional-count",
        "no-percentiles",
        "no-state",
    ],
)
def test_bad_summaries_raise_a_clear_error(text: str, message: str) -> None:
    with pytest.raises(ParseError, match=message):
        k6.parse(text)


needs_k6 = pytest.mark.skipif(K6 is None, reason="k6 is not installed")


@needs_k6
def test_live_k6_run_at_a_rate_the_server_keeps(tmp_path: Path) -> None:
    with local_server() as base:
        export_file, handle_file = run_k6(tmp_path, f"{base}/ok", rate=25, duration="2s", vus=5)
    exported = k6.parse(export_file.read_text())
    handled = k6.parse(handle_file.read_text())
    # Both shapes of one run say the same thing.
    assert exported.requests == handled.requests
    assert exported.latency.percentiles_ms == handled.latency.percentiles_ms
    assert exported.duration_s == pytest.approx(handled.duration_s, rel=1e-6)
    # 25/s for 2 s: k6 starts the iteration at t=0 and may start one at t=2 s.
    assert 49 <= exported.requests <= 51
    assert exported.requests_per_sec == pytest.approx(25, rel=0.05)
    assert (exported.failed_requests, exported.checks_failed, exported.dropped_iterations) == (0, 0, 0)
    assert list(exported.latency.percentiles_ms) == ["50", "75", "90", "99", "99.9"]


@needs_k6
def test_live_k6_run_against_a_failing_slow_server(tmp_path: Path) -> None:
    with local_server() as base:
        export_file, _ = run_k6(tmp_path, f"{base}/fail/slow", rate=20, duration="2s", vus=1)
    summary = k6.parse(export_file.read_text())
    assert summary.requests > 0
    assert summary.failed_requests == summary.requests == summary.checks_failed
    # One VU at 100 ms per request cannot start 20 per second: k6 drops the rest.
    assert summary.dropped_iterations > 0
    assert summary.requests_per_sec < 15
    assert summary.latency.at(50) >= 100
