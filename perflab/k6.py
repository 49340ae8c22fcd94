"""Parse k6's end-of-test summary JSON into the result model.

Two shapes exist and both are read:
- `k6 run --summary-export=FILE`: {"metrics": {"http_reqs": {"count": .., "rate": ..}, ...}};
- the `data` handed to handleSummary, as JSON.stringify(data) writes it:
  {"metrics": {"http_reqs": {"type": "counter", "values": {...}}, ...}, "state": {...}}.

What is read: http_reqs (count, rate), http_req_duration (avg, min, max, med and every p(N)
the script's summaryTrendStats asked for; times are already in ms), http_req_failed (a Rate:
"passes" counts the requests that failed), checks (optional: "fails" counts failed checks),
dropped_iterations (present only when iterations were dropped: absent means zero).

k6 latency is measured from when the request is sent. With an arrival-rate executor every
iteration starts on schedule while a VU is free, so the latency includes no waiting hidden by
the generator (no coordinated omission) as long as no iteration was dropped; dropped iterations
are kept in the result so that a reader sees the schedule was not kept.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Any

from perflab.model import ErrorCounts, LatencyDistribution, RunResult, percentile_key
from perflab.model import ParseError as ParseError  # re-exported: callers catch k6.ParseError

_PERCENTILE_STAT = re.compile(r"p\(([0-9]+(?:\.[0-9]+)?)\)")


@dataclass(frozen=True)
class K6Summary:
    shape: str  # "summary-export" or "handleSummary"
    requests: int
    requests_per_sec: float
    duration_s: float
    latency: LatencyDistribution
    failed_requests: int
    checks_passed: int
    checks_failed: int
    dropped_iterations: int
    data_received_bytes: int | None


def parse(text: str) -> K6Summary:
    """Parse one summary JSON document."""
    if not text.strip():
        raise ParseError("the k6 summary is empty")
    try:
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ParseError(f"the k6 summary is not JSON (truncated?): {exc}") from None
    if not isinstance(document, dict) or not isinstance(document.get("metrics"), dict):
        raise ParseError("not a k6 summary: no 'metrics' object")
    raw_metrics: dict[str, Any] = document["metrics"]
    handle_summary = "state" in document or any(
        isinstance(m, dict) and "values" in m for m in raw_metrics.values()
    )
    metrics = {
        name: (_values_of(name, metric) if handle_summary else _stats_of(name, metric))
        for name, metric in raw_metrics.items()
    }

    http_reqs = _require(metrics, "http_reqs")
    requests = _count(http_reqs, "http_reqs", "count")
    rate = _number(http_reqs, "http_reqs", "rate")
    if handle_summary:
        state = document.get("state")
        if not isinstance(state, dict):
            raise ParseError("handleSummary data without a 'state' object")
        duration_s = _number(state, "state", "testRunDurationMs") / 1000.0
    else:
        # summary-export carries no duration; k6 computes every rate as count / duration.
        duration_s = requests / rate if rate > 0 else 0.0

    failed = _require(metrics, "http_req_failed")
    checks = metrics.get("checks")
    dropped = metrics.get("dropped_iterations")
    data_received = metrics.get("data_received")
    return K6Summary(
        shape="handleSummary" if handle_summary else "summary-export",
        requests=requests,
        requests_per_sec=rate,
        duration_s=duration_s,
        latency=_latency(_require(metrics, "http_req_duration")),
        failed_requests=_count(failed, "http_req_failed", "passes"),
        checks_passed=_count(checks, "checks", "passes") if checks is not None else 0,
        checks_failed=_count(checks, "checks", "fails") if checks is not None else 0,
        dropped_iterations=_count(dropped, "dropped_iterations", "count") if dropped is not None else 0,
        data_received_bytes=(
            _count(data_received, "data_received", "count") if data_received is not None else None
        ),
    )


def to_run_result(summary: K6Summary, target_rate: float) -> RunResult:
    """The tool-independent result; the run adds its context (times, scenario, app, hosts)."""
    return RunResult(
        tool="k6",
        target_rate=target_rate,
        achieved_rate=summary.requests_per_sec,
        requests=summary.requests,
        duration_s=summary.duration_s,
        latency_corrected=summary.latency,
        errors=ErrorCounts(failed_requests=summary.failed_requests, failed_checks=summary.checks_failed),
        bytes_read=summary.data_received_bytes,
        dropped_iterations=summary.dropped_iterations,
    )


def _latency(stats: dict[str, Any]) -> LatencyDistribution:
    percentiles: dict[float, float] = {}
    for stat in stats:
        match = _PERCENTILE_STAT.fullmatch(stat)
        if match:
            percentiles[float(match.group(1))] = _number(stats, "http_req_duration", stat)
    if "med" in stats:
        percentiles.setdefault(50.0, _number(stats, "http_req_duration", "med"))
    if not percentiles:
        raise ParseError("http_req_duration has no percentiles: add p(..) to the script's summaryTrendStats")
    try:
        keyed = {percentile_key(p): percentiles[p] for p in sorted(percentiles)}
    except ValueError as exc:
        raise ParseError(f"http_req_duration: {exc}") from None
    return LatencyDistribution(
        percentiles_ms=keyed,
        mean_ms=_number(stats, "http_req_duration", "avg"),
        max_ms=_number(stats, "http_req_duration", "max"),
        min_ms=_number(stats, "http_req_duration", "min") if "min" in stats else None,
        total_count=_count(stats, "http_req_duration", "count") if "count" in stats else None,
    )


def _values_of(name: str, metric: Any) -> dict[str, Any]:
    if not isinstance(metric, dict) or not isinstance(metric.get("values"), dict):
        raise ParseError(f"metric {name}: no 'values' object")
    values: dict[str, Any] = metric["values"]
    return values


def _stats_of(name: str, metric: Any) -> dict[str, Any]:
    if not isinstance(metric, dict):
        raise ParseError(f"metric {name}: expected an object")
    return metric


def _require(metrics: dict[str, dict[str, Any]], name: str) -> dict[str, Any]:
    if name not in metrics:
        raise ParseError(f"the k6 summary has no {name} metric: did the script make HTTP requests?")
    return metrics[name]


def _number(stats: dict[str, Any], metric: str, stat: str) -> float:
    value = stats.get(stat)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise ParseError(f"{metric}: '{stat}' should be a non-negative number, found {value!r}")
    return float(value)


def _count(stats: dict[str, Any], metric: str, stat: str) -> int:
    value = _number(stats, metric, stat)
    if not value.is_integer():
        raise ParseError(f"{metric}: '{stat}' should be a whole number, found {value!r}")
    return int(value)
