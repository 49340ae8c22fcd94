"""A run over time, second by second, from the load generator's raw results: timeseries.json.

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

The file is small (a few numbers per second) and written once, by `perflab collect` (the one
owner of a run's files), from the results it parses anyway; the report reads it. Parsing the raw
results on every report would cost 30 to 45 us per request on this machine (a 60 s run at
2,000 req/s: 4 to 5 s), for every run, every time.

timeseries.json (docs/ARCHITECTURE.md): {"schema_version": 1, "source": "vegeta", "origin_unix_s":
<the measured phase's t0>, "phases": [{"phase": "warmup"|"measure", "files": [...], "start_s":
<t0 - origin, s>, "duration_s", "target_rate", "ok": [per second], "errors": [...], "p50_ms":
[... or null], "p99_ms": [...], "after_window_ok", "after_window_errors", "after_window_s"}],
"notes": [sentences]}.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from perflab import vegeta
from perflab.model import dumps, loads, value_at_percentile

SCHEMA_VERSION = 1
FILE_NAME = "timeseries.json"
PHASES = ("warmup", "measure")
NS_PER_S = 1_000_000_000


@dataclass(frozen=True)
class Phase:
    """One phase, second by second: index k is [start_s + k, start_s + k + 1) on the run's axis."""

    phase: str  # warmup | measure
    files: tuple[str, ...]
    start_s: float  # the phase's t0, in seconds after the measured phase's (0 for the measured phase)
    duration_s: float  # the window the phase was asked to run
    target_rate: float
    ok: tuple[int, ...]  # successful answers that ended in each second
    errors: tuple[int, ...]  # failed ones
    p50_ms: tuple[float | None, ...]  # corrected latency of every answer that ended in the second; None: none did
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
    source: str = "vegeta"
    origin_unix_s: float  # the measured phase's t0: second 0 of the run's axis
    phases: tuple[Phase, ...]
    notes: tuple[str, ...] = ()  # what could not be computed, one sentence each

    def __post_init__(self) -> None:
        if self.phase("measure") is None:
            raise ValueError("no measured phase")

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
