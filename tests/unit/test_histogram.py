"""The apps' latency histogram read as Prometheus reads it: Java's `le` spellings compared as numbers,
two readings subtracted, histogram_quantile's interpolation with the bucket each quantile fell in;
and the app's server-side p50/p99/p99.9 that perflab.observe reads over a run's window on the
scenario's own routes, with the contract's buckets as every app exports them."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import pytest

from perflab import histogram, observe, tiers
from perflab.contract import OpenApi
from perflab.observations import ServerQuantile
from perflab.prometheus import Sample

# The buckets every app exports (apps/contract/openapi.yaml), in seconds; YAML gives some as ints.
CONTRACT_LE = tuple(float(le) for le in OpenApi().operation("get", "/metrics")["x-http-server-requests-le-seconds"])


def java_le(seconds: float) -> str:
    """A bound as Micrometer writes it: Java's Double.toString ("2.5E-4", "0.005", "1.0"), or "+Inf"."""
    if math.isinf(seconds):
        return "+Inf"
    if seconds < 1e-3:
        mantissa, exponent = f"{seconds:.1E}".split("E")
        return f"{mantissa}E{int(exponent)}"
    return repr(float(seconds))


def series(answers_ms: Mapping[float, int]) -> list[tuple[str, float]]:
    """The cumulative bucket series (le label, count) of a histogram holding ANSWERS_MS (ms -> how many)."""
    return [(java_le(le), float(sum(n for ms, n in answers_ms.items() if ms / 1000 <= le)))
            for le in (*CONTRACT_LE, math.inf)]


def test_the_contracts_bounds_in_javas_spelling_are_numbers() -> None:
    labels = [java_le(le) for le in CONTRACT_LE]
    assert labels[:3] == ["2.5E-4", "5.0E-4", "0.001"] and labels[CONTRACT_LE.index(1.0)] == "1.0"
    assert [histogram.bound(label) for label in labels] == list(CONTRACT_LE)
    assert histogram.bound("+Inf") == math.inf
    # Two spellings of one bound are one bucket, and the order is the numbers', not the text's.
    assert histogram.cumulative([("1.0", 3.0), ("1", 2.0), ("0.5", 1.0), ("+Inf", 9.0)]) == (
        (0.5, 1.0), (1.0, 5.0), (math.inf, 9.0))
    with pytest.raises(ValueError, match="a number >= 0 or \\+Inf"):
        histogram.bound("NaN")


def test_quantiles_interpolate_within_their_bucket_as_histogram_quantile_does() -> None:
    # Greeting on a warm app: 600 answers in 0.25-0.5 ms, 390 in 0.5-1 ms, 10 in 1-2 ms.
    counted = histogram.cumulative(series({0.4: 600, 0.8: 390, 1.5: 10}))
    assert histogram.total(counted) == 1000
    assert histogram.quantile(0.5, counted) == ServerQuantile(0.25 + 0.25 * 500 / 600, 0.25, 0.5)
    assert histogram.quantile(0.99, counted) == ServerQuantile(1.0, 0.5, 1.0)
    # Report 2's /hello/1000: every answer just after its 1 s delay, in the 5% bucket above it.
    hello = histogram.cumulative(series({1003.0: 300}))
    p50 = histogram.quantile(0.5, hello)
    assert p50 == ServerQuantile(1025.0, 1000.0, 1050.0)
    # Beyond the last finite bound: the bound itself, and no upper bound to the bucket.
    assert histogram.quantile(0.99, histogram.cumulative(series({0.4: 90, 12_000.0: 10}))) == (
        ServerQuantile(10_000.0, 10_000.0, None))
    assert histogram.quantile(0.5, histogram.cumulative(series({}))) is None  # no request: NaN in Prometheus
    assert histogram.quantile(0.5, ((0.5, 3.0),)) is None  # no +Inf bucket
    # The rank a scrape taken mid-request gives: 0.99 x 3.0303... rounds past the 3 counted by 5 ms. The
    # interpolation lands one ulp past 5 ms in floating point; the estimate stays in its bucket (a run
    # on the local lab failed on this).
    edge = ((0.002, 0.0), (0.005, 3.0), (math.inf, 3.0 / 0.99))
    assert histogram.quantile(0.99, edge) == ServerQuantile(5.0, 2.0, 5.0)


def test_two_readings_hold_the_requests_between_them() -> None:
    before = histogram.cumulative(series({0.4: 100}))
    after = histogram.cumulative(series({0.4: 100, 3.0: 50}))
    assert histogram.between(before, after) == histogram.cumulative(series({3.0: 50}))
    # A bucket series that appears with its first request counts from 0; a reset (a restart) from 0 again.
    assert histogram.between(((math.inf, 5.0),), ((0.5, 2.0), (math.inf, 3.0))) == ((0.5, 2.0), (math.inf, 3.0))


class HistogramLab:
    """Prometheus over an app whose histogram on the scenario's routes read BEFORE at the window's
    start and AFTER at rest after it (the window's end and its quiet time)."""

    def __init__(self, before: Mapping[float, int], after: Mapping[float, int], exported: bool = True,
                 resets: int = 0) -> None:
        self.readings = {WINDOW.start: series(before), WINDOW.end + WINDOW.quiet_s: series(after)}
        self.exported, self.resets = exported, resets  # resets: how often the app's counters went back in the window
        self.asked: list[tuple[str, float | None]] = []

    def query(self, expr: str, at: float | None = None) -> list[Sample]:
        self.asked.append((expr, at))
        if expr.startswith("sum(resets("):
            return [Sample({}, float(self.resets))]
        if not self.exported or at not in self.readings:
            return []
        return [Sample({"le": le}, count) for le, count in self.readings[at]]

    def value(self, expr: str, at: float | None = None) -> float | None:
        samples = self.query(expr, at)
        return samples[0].value if samples else None


WINDOW = observe.Window(1000.0, 1060.0, quiet_s=7.0)
ZIPCODES = ("GET /zipcodes/{zip}", "POST /zipcodes")


def server_latency(lab: HistogramLab, endpoints: Sequence[str] = ZIPCODES) -> observe.Observer:
    observer = observe.Observer(lab, WINDOW, "quarkus")  # type: ignore[arg-type]
    observer.server_latency(tuple(endpoints))
    return observer


def test_the_apps_latency_is_read_on_the_scenarios_routes_over_the_window() -> None:
    # zipcodes at 500 req/s for 60 s: 30,000 requests, a DB round trip each (1-2 ms), a few slower.
    lab = HistogramLab(before={1.5: 4000}, after={1.5: 4000 + 29_400, 4.0: 540, 30.0: 60})
    found = server_latency(lab).found.server_latency
    assert found is not None and found.routes == ZIPCODES and found.requests == 30_000
    assert found.p50.value_ms == pytest.approx(1.0 + 1.0 * 15_000 / 29_400)
    assert (found.p50.bucket_low_ms, found.p50.bucket_high_ms) == (1.0, 2.0)
    assert (found.p99.bucket_low_ms, found.p99.bucket_high_ms) == (2.0, 5.0)
    assert found.p999 is not None and (found.p999.bucket_low_ms, found.p999.bucket_high_ms) == (25.0, 50.0)
    # Read before the window and at rest after it, on the two routes alone (never /metrics or health).
    expr = ('sum by (le) (http_server_requests_seconds_bucket{job="app",application="quarkus",method="GET",'
            'uri="/zipcodes/{zip}"} or http_server_requests_seconds_bucket{job="app",application="quarkus",'
            'method="POST",uri="/zipcodes"})')
    assert expr == tiers.app_latency_buckets("quarkus", [tiers.route(e) for e in ZIPCODES])
    read = [asked for asked in lab.asked if not asked[0].startswith("sum(resets(")]
    assert sorted(read, key=lambda asked: asked[1] or 0) == [(expr, 1000.0), (expr, 1067.0)]


def test_p999_is_read_only_where_ten_requests_lie_beyond_it() -> None:
    # hello-latency at 300 req/s for 30 s: 9,000 requests, 9 beyond a p99.9.
    observer = server_latency(HistogramLab(before={}, after={1003.0: 9000}), ["GET /hello/{latency}"])
    found = observer.found.server_latency
    assert found is not None and found.p999 is None and found.p50.bucket_high_ms == 1050.0
    assert observer.found.unobserved["server_latency.p999"] == (
        "9000 requests in the window: the app's p99.9 is read from 10,000 on, so that 10 lie beyond it")


def test_an_app_without_the_histogram_or_a_scenario_without_routes_is_not_observed_with_the_reason() -> None:
    none = server_latency(HistogramLab({}, {}, exported=False)).found
    assert none.server_latency is None and none.unobserved["server_latency"] == (
        "the app quarkus exported no http_server_requests_seconds_bucket on GET /zipcodes/{zip}, POST /zipcodes "
        "in the window")
    idle = server_latency(HistogramLab({1.5: 10}, {1.5: 10})).found
    assert idle.server_latency is None and idle.unobserved["server_latency"] == (
        "the app quarkus's http_server_requests_seconds histogram counted no request on GET /zipcodes/{zip}, "
        "POST /zipcodes in the window")
    unnamed = server_latency(HistogramLab({}, {1.5: 10}), endpoints=()).found
    assert unnamed.unobserved["server_latency"] == "the scenario names no endpoint: which routes are its own is unknown"


def test_an_endpoint_is_a_method_and_a_route_template() -> None:
    assert tiers.route("GET /zipcodes/{zip}") == ("GET", "/zipcodes/{zip}")
    assert tiers.route(" post /zipcodes?city=C") == ("POST", "/zipcodes")
    with pytest.raises(ValueError, match="an endpoint is 'METHOD /route'"):
        tiers.route("/zipcodes")


def test_the_apps_latency_after_a_restart_in_the_window_is_not_read() -> None:
    """Issue 24: the JVM started again mid-window, its histogram from zero: the difference of the readings
    would hold a fraction of the window's requests, or none."""
    lab = HistogramLab(before={1.5: 4000}, after={1.5: 9_800, 4.0: 200}, resets=1)
    observer = server_latency(lab)
    assert observer.found.server_latency is None
    assert observer.found.unobserved["server_latency"].startswith("the app quarkus's counters went back 1 time(s) in "
                                                                  "the window")
