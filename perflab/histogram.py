"""The apps' latency histogram (http_server_requests_seconds_bucket) read as Prometheus reads it.

Every app exports the same buckets (apps/contract/openapi.yaml, /metrics
x-http-server-requests-le-seconds), with `le` written Java's way ("2.5E-4", "1.0", "+Inf"): a bound
is a number, compared as one, never as its text. Counts are cumulative (a bucket holds every
request at most its bound), read at two moments and subtracted, so that a window holds exactly
the requests counted between them (perflab.observe reads counters so, never with increase()).

quantile() is Prometheus' histogram_quantile (promql/quantile.go, bucketQuantile): the rank's
bucket, then a linear interpolation inside it, which is why it also returns the bucket's bounds:
the estimate is known only to within them.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from perflab.observations import ServerQuantile

# Cumulative counts by upper bound (seconds, +Inf last), in increasing order of the bound.
Cumulative = tuple[tuple[float, float], ...]


def bound(le: str) -> float:
    """A bucket's upper bound in seconds from its `le` label: "2.5E-4" -> 0.00025, "+Inf" -> inf."""
    value = float(le)
    if math.isnan(value) or value < 0:
        raise ValueError(f"a bucket's upper bound is a number >= 0 or +Inf, not {le!r}")
    return value


def cumulative(counts: Iterable[tuple[str, float]]) -> Cumulative:
    """(le label, cumulative count) pairs, e.g. one series per `le` of `sum by (le)`, as one histogram:
    labels that spell the same bound alike ("1", "1.0") added together, ordered by bound."""
    by_bound: dict[float, float] = {}
    for le, count in counts:
        if math.isfinite(count):
            by_bound[bound(le)] = by_bound.get(bound(le), 0.0) + count
    return tuple(sorted(by_bound.items()))


def between(before: Cumulative, after: Cumulative) -> Cumulative:
    """The counts of AFTER less BEFORE's, bound by bound: what was counted between two readings. A
    bound missing before counts from 0 (a series appears with its first request); one lower after
    than before was reset (the app restarted) and counts from 0 again, as Prometheus' rate() takes it."""
    earlier = dict(before)
    return tuple((le, count - earlier.get(le, 0.0) if count >= earlier.get(le, 0.0) else count)
                 for le, count in after)


def total(buckets: Cumulative) -> float:
    """The requests a histogram holds: its +Inf bucket's count (0 without one)."""
    return buckets[-1][1] if buckets and math.isinf(buckets[-1][0]) else 0.0


def quantile(q: float, buckets: Cumulative) -> ServerQuantile | None:
    """The q-quantile (0.99: p99) in milliseconds, interpolated as histogram_quantile does, with the
    bucket it fell in; None where Prometheus gives NaN: no +Inf bucket, fewer than two buckets, or
    no request."""
    if not 0.0 <= q <= 1.0:
        raise ValueError(f"a quantile is between 0 and 1, not {q}")
    if len(buckets) < 2 or not math.isinf(buckets[-1][0]) or total(buckets) <= 0:
        return None
    # Cumulative counts never decrease; a reading between two scrapes may make one look as if (Prometheus
    # evens them out the same way, ensureMonotonic).
    counts, highest = [], 0.0
    for _, count in buckets:
        highest = max(highest, count)
        counts.append(highest)
    rank = q * counts[-1]
    index = next(i for i, count in enumerate(counts) if count >= rank)
    if index == len(buckets) - 1:
        last_finite = buckets[-2][0] * 1000.0
        return ServerQuantile(last_finite, last_finite, None)
    high = buckets[index][0]
    low = buckets[index - 1][0] if index > 0 else 0.0
    below = counts[index - 1] if index > 0 else 0.0
    inside = counts[index] - below
    value = high if inside <= 0 else low + (high - low) * (rank - below) / inside
    # The interpolation lies within the bucket; in floating point it can land one ulp past a bound
    # (5.000000000000001 ms in a bucket ending at 5 ms, a local-lab run), so it is held to the bounds.
    low_ms, high_ms = low * 1000.0, high * 1000.0
    return ServerQuantile(min(max(value * 1000.0, low_ms), high_ms), low_ms, high_ms)

