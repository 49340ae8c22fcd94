"""A run over time, from the load generator's raw results (second by second) or, where the generator
keeps no request (wrk2), from the app's own histogram in Prometheus (scrape by scrape): timeseries.json.

Where the generator keeps every request (vegeta: one JSON line each, perflab.vegeta), each phase
of the run (the warm-up, the measured phase) gets, per second, the answers that ended in it:
how many succeeded (the achieved throughput of that second), how many failed (errors, as
perflab.vegeta counts them), and the p50 and p99 of their corrected latency, the definition of
perflab.vegeta: measured from the request's scheduled send time, (timestamp + latency) - (t0 +
seq/R), so that a request vegeta could not send on time carries its wait.

Why by the answers' end: it is when a figure becomes known, as the apps' own histograms record
it (issue 12, item 3, the fallback where the generator keeps no request), so both read alike on
one time axis; and it shows what happened in that second. A 1 s stop of the app shows as a
second with few answers, then one with the backlog and a p99 near 1 s; a generator that falls
behind shows its real pace, not the schedule it kept. Second k of a phase is [t0 + k, t0 + k + 1)
with t0 the phase's attack start (the earliest of its hosts'), for k from 0 to the phase's
duration; an answer that ended after the phase's window (the last requests' own latency) is
counted apart (`after_window_*`), not drawn as a second of its own.

Where the generator keeps no per-request record (wrk2 keeps a histogram of the whole run), the
series come from the app's own http_server_requests_seconds histogram on the scenario's routes
(issue 12, item 3), read from Prometheus at its scrape interval (`source` "app-histogram", `step_s`
the interval): per step, the answers the app counted (succeeded: 2xx and 3xx; failed: any other
status, as wrk2 and vegeta count them), and their p50 and p99 as the app measured them,
interpolated within the histogram's buckets (perflab.histogram): the app's time, without the
network, the generator or a queue in front of the app's request threads. Step k of a phase is the
answers scraped in (t0 + k x step, t0 + (k + 1) x step]: each at most a scrape interval after it
ended.

The file is small (a few numbers per second) and written once, by `perflab collect` (the one
owner of a run's files), from the results it parses anyway; the report reads it. Parsing the raw
results on every report would cost 30 to 45 us per request on this machine (a 60 s run at
2,000 req/s: 4 to 5 s), for every run, every time.

timeseries.json (docs/ARCHITECTURE.md): {"schema_version": 1, "source": "vegeta"|"app-histogram", "step_s":
<seconds each value covers: 1, or the scrape interval>, "origin_unix_s":
<the measured phase's t0>, "phases": [{"phase": "warmup"|"measure", "files": [...], "start_s":
<t0 - origin, s>, "duration_s", "target_rate", "ok": [per second], "errors": [...], "p50_ms":
[... or null], "p99_ms": [...], "after_window_ok", "after_window_errors", "after_window_s"}],
"notes": [sentences]}.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from perflab import histogram, tiers, vegeta
from perflab.model import dumps, loads, value_at_percentile
from perflab.observations import WarmupEnd
from perflab.prometheus import Prometheus, Series

SCHEMA_VERSION = 1
FILE_NAME = "timeseries.json"
PHASES = ("warmup", "measure")
NS_PER_S = 1_000_000_000
VEGETA_SOURCE = "vegeta"  # every request of vegeta's results, second by second
APP_HISTOGRAM_SOURCE = "app-histogram"  # the app's http_server_requests_seconds in Prometheus, scrape by scrape


@dataclass(frozen=True)
class Phase:
    """One phase, step by step: index k is [start_s + k x step, start_s + (k + 1) x step) on the run's
    axis, step the file's step_s (1 s: second by second)."""

    phase: str  # warmup | measure
    files: tuple[str, ...]
    start_s: float  # the phase's t0, in seconds after the measured phase's (0 for the measured phase)
    duration_s: float  # the window the phase was asked to run
    target_rate: float
    ok: tuple[int, ...]  # successful answers that ended in each step
    errors: tuple[int, ...]  # failed ones
    # The answers' latency in each step; None: none ended in it. vegeta: corrected, of every answer; the
    # app's histogram: as the app measured it, interpolated within its buckets.
    p50_ms: tuple[float | None, ...]
    p99_ms: tuple[float | None, ...]
    after_window_ok: int = 0  # answers that ended after the window
    after_window_errors: int = 0
    after_window_s: float = 0.0  # how long after the window the last one ended

    def __post_init__(self) -> None:
        if self.phase not in PHASES:
            raise ValueError(f"phase is {self.phase!r}, not one of {', '.join(PHASES)}")
        lengths = {len(self.ok), len(self.errors), len(self.p50_ms), len(self.p99_ms)}
        if len(lengths) != 1:
            raise ValueError(f"phase {self.phase}: ok, errors, p50_ms and p99_ms differ in length")
        for name in ("start_s", "duration_s", "target_rate", "after_window_s"):
            if not math.isfinite(getattr(self, name)):
                raise ValueError(f"phase {self.phase}: {name} is not a finite number")
        if self.duration_s <= 0 or self.target_rate <= 0:
            raise ValueError(f"phase {self.phase}: duration_s and target_rate must be > 0")
        if any(n < 0 for n in (*self.ok, *self.errors, self.after_window_ok, self.after_window_errors)):
            raise ValueError(f"phase {self.phase}: a count is negative")

    @property
    def seconds(self) -> int:
        return len(self.ok)


@dataclass(frozen=True, kw_only=True)
class TimeSeries:
    """timeseries.json (perflab.rundir reads and writes it)."""

    schema_version: int = SCHEMA_VERSION
    source: str = VEGETA_SOURCE  # or APP_HISTOGRAM_SOURCE
    step_s: float = 1.0  # seconds each value covers: 1 (vegeta), the scrape interval (the app's histogram)
    origin_unix_s: float  # the measured phase's t0: second 0 of the run's axis
    phases: tuple[Phase, ...]
    notes: tuple[str, ...] = ()  # what could not be computed, one sentence each

    def __post_init__(self) -> None:
        if self.phase("measure") is None:
            raise ValueError("no measured phase")
        if not (math.isfinite(self.step_s) and self.step_s > 0):
            raise ValueError(f"step_s is a positive number of seconds, not {self.step_s}")

    def phase(self, name: str) -> Phase | None:
        return next((p for p in self.phases if p.phase == name), None)

    def to_json(self) -> str:
        # On one line: a number per second and phase, which one per line would make ten times longer.
        return dumps(self, indent=None)

    @classmethod
    def from_json(cls, text: str) -> TimeSeries:
        """SchemaError (a ValueError), naming what is wrong, for anything but a timeseries.json."""
        return loads(cls, text)


# ---------------------------------------------------------------------------------------------
# From vegeta's results


@dataclass(frozen=True)
class PhaseInput:
    """One phase's attacks as vegeta.parse read them, one per loadgen host, each at its rate."""

    phase: str
    attacks: tuple[vegeta.Attack, ...]
    rates: tuple[float, ...]
    files: tuple[str, ...]  # their names, in the same order
    duration_s: float  # the window the phase was asked to run (vegeta's -duration)


def _seconds(phase: PhaseInput, origin_ns: float | None) -> tuple[Phase, float]:
    """The phase second by second, and its t0 (ns since the epoch)."""
    if not phase.attacks or len(phase.attacks) != len(phase.rates) or len(phase.files) != len(phase.attacks):
        raise ValueError(f"{phase.phase}: give one rate and one file name per attack")
    if not (math.isfinite(phase.duration_s) and phase.duration_s > 0):
        raise ValueError(f"{phase.phase}: the duration must be a positive number of seconds, not {phase.duration_s}")
    timed = [vegeta.corrected(attack, rate, f"{name}: ") for attack, rate, name in
             zip(phase.attacks, phase.rates, phase.files)]
    t0 = min(start for start, _ in timed)
    seconds = math.ceil(phase.duration_s - 1e-9)
    ok = [0] * seconds
    errors = [0] * seconds
    latencies: list[list[float]] = [[] for _ in range(seconds)]
    after_ok = after_errors = 0
    after_ns = 0.0
    window_ns = phase.duration_s * NS_PER_S
    for attack, (_, corrected_ms) in zip(phase.attacks, timed):
        for result, latency_ms in zip(attack.results, corrected_ms):
            since_ns = result.timestamp_ns + result.latency_ns - t0
            k = max(0, int(since_ns // NS_PER_S))  # never before t0, but for float rounding
            if since_ns >= window_ns or k >= seconds:
                after_ns = max(after_ns, since_ns - window_ns)
                if result.succeeded:
                    after_ok += 1
                else:
                    after_errors += 1
                continue
            if result.succeeded:
                ok[k] += 1
            else:
                errors[k] += 1
            latencies[k].append(latency_ms)
    p50: list[float | None] = []
    p99: list[float | None] = []
    for values in latencies:
        values.sort()
        p50.append(round(value_at_percentile(values, 50.0), 3) if values else None)
        p99.append(round(value_at_percentile(values, 99.0), 3) if values else None)
    start_s = 0.0 if origin_ns is None else round((t0 - origin_ns) / NS_PER_S, 6)
    return Phase(
        phase=phase.phase, files=phase.files, start_s=start_s, duration_s=phase.duration_s,
        target_rate=float(sum(phase.rates)), ok=tuple(ok), errors=tuple(errors), p50_ms=tuple(p50),
        p99_ms=tuple(p99), after_window_ok=after_ok, after_window_errors=after_errors,
        after_window_s=round(after_ns / NS_PER_S, 3),
    ), t0


def from_vegeta(measure: PhaseInput, warmup: PhaseInput | None = None, notes: Sequence[str] = ()) -> TimeSeries:
    """The run second by second: the measured phase, and the warm-up before it where its results
    are given. vegeta.ParseError when an attack does not match its rate (as to_run_result)."""
    measured, origin_ns = _seconds(measure, None)
    phases = [measured]
    if warmup is not None:
        phases.insert(0, _seconds(warmup, origin_ns)[0])
    return TimeSeries(origin_unix_s=origin_ns / NS_PER_S, phases=tuple(phases), notes=tuple(notes))


# ---------------------------------------------------------------------------------------------
# From the app's histogram in Prometheus (a run whose generator keeps no request: wrk2)


class NoHistogram(ValueError):
    """The app's histogram holds nothing to draw over the window: str() says why."""


@dataclass(frozen=True)
class PhaseWindow:
    """One phase of a run as the bench timed it: where the app's histogram is read."""

    phase: str
    start: float  # unix s
    duration_s: float
    target_rate: float


def _succeeded(status: str) -> bool:
    return status[:1] in ("2", "3")


def _steps(series: Sequence[Series], label: str, grid: Sequence[float]) -> dict[str, list[float]]:
    """Each series' value at each moment of GRID, by its LABEL (0 where it had none yet)."""
    values: dict[str, list[float]] = {}
    for found in series:
        at = {round(t, 3): v for t, v in found.points if math.isfinite(v)}
        mine = values.setdefault(found.labels.get(label, ""), [0.0] * len(grid))
        for i, t in enumerate(grid):
            mine[i] += at.get(round(t, 3), 0.0)
    return values


def histogram_phase(window: PhaseWindow, answers: Sequence[Series], buckets: Sequence[Series], step_s: float,
                    origin: float) -> Phase:
    """One phase step by step from two range queries over it at STEP_S (tiers.app_answers_by_status
    and tiers.app_latency_buckets): each step's answers and their p50 and p99, the differences of
    the counters between its two ends (a counter lower at the end was reset: counted from 0)."""
    steps = max(1, int(window.duration_s / step_s + 1e-9))
    grid = [window.start + k * step_s for k in range(steps + 1)]
    ok, errors = [0] * steps, [0] * steps
    for status, counts in _steps(answers, "status", grid).items():
        for k in range(steps):
            moved = counts[k + 1] - counts[k] if counts[k + 1] >= counts[k] else counts[k + 1]
            if _succeeded(status):
                ok[k] += round(moved)
            else:
                errors[k] += round(moved)
    by_le = _steps(buckets, "le", grid)
    p50: list[float | None] = []
    p99: list[float | None] = []
    for k in range(steps):
        counted = histogram.between(histogram.cumulative((le, v[k]) for le, v in by_le.items()),
                                    histogram.cumulative((le, v[k + 1]) for le, v in by_le.items()))
        for into, q in ((p50, 0.5), (p99, 0.99)):
            found = histogram.quantile(q, counted)
            into.append(round(found.value_ms, 3) if found is not None else None)
    return Phase(phase=window.phase, files=(), start_s=round(window.start - origin, 6), duration_s=window.duration_s,
                 target_rate=window.target_rate, ok=tuple(ok), errors=tuple(errors), p50_ms=tuple(p50),
                 p99_ms=tuple(p99))


def from_app_histogram(prometheus: Prometheus, app: str, endpoints: Sequence[str], phases: Sequence[PhaseWindow],
                       step_s: float) -> TimeSeries:
    """The run step by step from the app's histogram on its scenario's ENDPOINTS ("GET /zipcodes/{zip}"),
    each phase read from Prometheus every STEP_S (the scrape interval). PrometheusError when it cannot
    answer; NoHistogram when the app counted nothing on those routes in the measured phase."""
    measure = next((p for p in phases if p.phase == "measure"), None)
    if measure is None:
        raise ValueError("no measured phase")
    if not endpoints:
        raise NoHistogram("the scenario names no endpoint: which routes are its own is unknown")
    routes = [tiers.route(e) for e in endpoints]
    built = []
    for window in phases:
        end = window.start + window.duration_s
        answers = prometheus.query_range(tiers.app_answers_by_status(app, routes), window.start, end, step_s)
        buckets = prometheus.query_range(tiers.app_latency_buckets(app, routes), window.start, end, step_s)
        if answers or window is measure:  # a warm-up Prometheus holds nothing of is left out, not drawn as zeros
            built.append(histogram_phase(window, answers, buckets, step_s, measure.start))
    measured = next(p for p in built if p.phase == "measure")
    if not sum(measured.ok) + sum(measured.errors):
        raise NoHistogram(f"the app {app} counted no answer on {', '.join(endpoints)} in its "
                          f"{tiers.APP_LATENCY} histogram over the measured phase")
    note = (f"From the app's own {tiers.APP_LATENCY} histogram in Prometheus every {step_s:g} s, "
            f"its scrape interval, on {', '.join(endpoints)}: the answers it counted in each step (failed: not 2xx "
            "or 3xx) and their p50 and p99 as the app measured them (from taking a request up to its answer: "
            "without the network, the generator or a queue in front of its request threads), interpolated within "
            "its buckets; the generator keeps no per-request record.")
    return TimeSeries(source=APP_HISTOGRAM_SOURCE, step_s=step_s, origin_unix_s=measure.start,
                      phases=tuple(sorted(built, key=lambda p: PHASES.index(p.phase))), notes=(note,))


def warmup_end(series: TimeSeries, seconds: float) -> tuple[WarmupEnd | None, str]:
    """The warm-up's last SECONDS (whole steps covering at least that long: one 5 s step of the app's
    histogram, five seconds of vegeta's), or None with the reason where the series holds no warm-up."""
    warmup = series.phase("warmup")
    if warmup is None:
        return None, ("timeseries.json holds no warm-up (a vegeta run keeps it in vegeta-warmup*.jsonl.gz, a wrk2 "
                      "run reads it from the app's histogram)")
    steps = min(warmup.seconds, max(1, math.ceil(seconds / series.step_s - 1e-9)))
    if steps <= 0:
        return None, "timeseries.json's warm-up holds no step"
    covered = steps * series.step_s
    p99 = [v for v in warmup.p99_ms[-steps:] if v is not None]
    return WarmupEnd(seconds=covered, target_rate=warmup.target_rate,
                     answered_per_s=sum(warmup.ok[-steps:]) / covered, errors=sum(warmup.errors[-steps:]),
                     p99_ms=max(p99) if p99 else None, source=series.source), ""
