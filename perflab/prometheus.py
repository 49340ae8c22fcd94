"""A small client of Prometheus' HTTP API (instant and range queries, raw samples), stdlib only.

Every failure (unreachable, HTTP error, a query Prometheus rejects, an answer that is not
Prometheus') raises PrometheusError with one sentence an operator can act on; one that no later
query can escape (Prometheus unreachable, or gone in the middle of an answer) raises its subclass
PrometheusUnreachable, so that a caller stops asking rather than waiting out each query.

`perflab prometheus interval` says the scrape interval the lab's Prometheus runs with (the bench's input
check compares it with lab_scrape_interval_s); reading its configuration, YAML, is the one use of PyYAML.
"""

from __future__ import annotations

import argparse
import http.client
import json
import math
import re
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from typing import Any

DEFAULT_URL = "http://127.0.0.1:9090"


class PrometheusError(Exception):
    """Prometheus could not answer a query; str() says why and where."""


class PrometheusUnreachable(PrometheusError):
    """Prometheus could not be reached, or went away in the middle of an answer."""


@dataclass(frozen=True)
class Sample:
    """One series of an instant query: its labels and value (NaN stays NaN)."""

    labels: dict[str, str]
    value: float


@dataclass(frozen=True)
class Series:
    """One series of a range query: its labels and (unix time, value) points."""

    labels: dict[str, str]
    points: tuple[tuple[float, float], ...]


class Prometheus:
    def __init__(self, url: str = DEFAULT_URL, timeout_s: float = 10.0) -> None:
        self.url = url.rstrip("/")
        self.timeout_s = timeout_s

    def _get(self, path: str, params: dict[str, str]) -> Any:
        address = f"{self.url}{path}?{urllib.parse.urlencode(params)}"
        try:
            with urllib.request.urlopen(address, timeout=self.timeout_s) as response:
                body = json.load(response)
        except urllib.error.HTTPError as error:
            try:
                detail = json.load(error).get("error", "")
            except ValueError:
                detail = ""
            raise PrometheusError(f"Prometheus at {self.url} refused {params.get('query', path)!r}: "
                                  f"HTTP {error.code} {detail}".rstrip()) from error
        except (urllib.error.URLError, OSError, http.client.HTTPException) as error:
            # HTTPException: the connection broke in the middle of an answer (IncompleteRead).
            reason = getattr(error, "reason", error)
            raise PrometheusUnreachable(f"Prometheus at {self.url} is unreachable ({reason}): is the lab up "
                                        f"(make lab-status) and the URL right?") from error
        except ValueError as error:
            raise PrometheusError(f"{self.url} did not answer like Prometheus (not JSON)") from error
        if not isinstance(body, dict) or body.get("status") != "success" or "data" not in body:
            raise PrometheusError(f"Prometheus at {self.url} failed {params.get('query', path)!r}: "
                                  f"{body.get('error', body) if isinstance(body, dict) else body}")
        return body["data"]

    def query(self, expr: str, at: float | None = None) -> list[Sample]:
        """Instant query; at = unix time (default: now)."""
        params = {"query": expr}
        if at is not None:
            params["time"] = f"{at:.3f}"
        data = self._get("/api/v1/query", params)
        if data.get("resultType") == "scalar":
            return [Sample({}, float(data["result"][1]))]
        return [Sample(dict(r["metric"]), float(r["value"][1])) for r in data.get("result", [])]

    def query_range(self, expr: str, start: float, end: float, step_s: float) -> list[Series]:
        """Range query from start to end (unix times) every step_s seconds."""
        if not (end > start and step_s > 0):
            raise ValueError(f"a range query needs end > start and step > 0, not {start}..{end} step {step_s}")
        params = {"query": expr, "start": f"{start:.3f}", "end": f"{end:.3f}", "step": f"{step_s:g}"}
        data = self._get("/api/v1/query_range", params)
        return [
            Series(dict(r["metric"]), tuple((float(t), float(v)) for t, v in r["values"]))
            for r in data.get("result", [])
        ]

    def samples(self, selector: str, since: float, at: float) -> list[Series]:
        """The raw samples of SELECTOR (a series selector) after SINCE up to AT (unix times), each at the
        moment of its scrape: a range-vector selector asked as an instant query."""
        if not at > since:
            raise ValueError(f"samples are asked over a span that ends after it starts, not {since}..{at}")
        data = self._get("/api/v1/query", {"query": f"{selector}[{math.ceil((at - since) * 1000)}ms]", "time": f"{at:.3f}"})
        return [
            Series(dict(r["metric"]), tuple((float(t), float(v)) for t, v in r.get("values", []) if float(t) > since))
            for r in data.get("result", [])
        ]

    def value(self, expr: str, at: float | None = None) -> float | None:
        """The single value of an instant query that yields at most one series; None when empty."""
        samples = [s for s in self.query(expr, at) if not math.isnan(s.value)]
        if len(samples) > 1:
            raise PrometheusError(f"{expr!r} yields {len(samples)} series where one was expected")
        return samples[0].value if samples else None

    def scrape_interval_s(self) -> float | None:
        """The global scrape interval of the configuration Prometheus runs with, in seconds (its
        /api/v1/status/config); None where the configuration names none."""
        import yaml  # type: ignore[import-untyped]  # only here: the rest of the client is stdlib only

        config = yaml.safe_load(self._get("/api/v1/status/config", {}).get("yaml") or "") or {}
        written = str((config.get("global") or {}).get("scrape_interval") or "")
        return duration_s(written) if written else None


# Prometheus writes a duration as 5s, 1m, 1m30s or 500ms.
_DURATION_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0, "w": 604800.0, "y": 31536000.0}


def duration_s(written: str) -> float:
    """Prometheus' duration (5s, 1m30s, 500ms) in seconds; ValueError for anything else."""
    parts = re.findall(r"(\d+)(ms|[smhdwy])", written)
    if not parts or "".join(n + unit for n, unit in parts) != written:
        raise ValueError(f"not a Prometheus duration: {written!r}")
    return sum(int(n) * _DURATION_UNITS[unit] for n, unit in parts)


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add `perflab prometheus` to the CLI."""
    command = commands.add_parser("prometheus", help="what the lab's Prometheus runs with",
                                  epilog="exit codes: 0 done (an empty line where Prometheus cannot say)")
    sub = command.add_subparsers(required=True, metavar="ACTION")
    interval = sub.add_parser("interval", help="the scrape interval it runs with, in seconds (an empty line where "
                                               "it cannot be asked: the bench then judges without it)")
    interval.add_argument("--prometheus", default=DEFAULT_URL, metavar="URL", help=f"its URL (default {DEFAULT_URL})")
    interval.add_argument("--timeout", type=float, default=3.0, metavar="S", help="seconds to wait for it (default 3)")
    interval.set_defaults(command=_interval)


def _interval(args: argparse.Namespace) -> int:
    try:
        seconds = Prometheus(args.prometheus, timeout_s=args.timeout).scrape_interval_s()
    except (PrometheusError, ValueError):
        seconds = None
    print("" if seconds is None else f"{seconds:g}")
    return 0
