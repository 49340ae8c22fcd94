"""Parse vegeta's raw results into the result model.

The bench runs `vegeta attack -lazy -format=json -rate=R/1s -duration=Ds -max-body=0 -redirects=-1 ...` and
keeps its results as `vegeta encode -to json` writes them: one JSON object per request and per
line (vegeta/lib/results.go: attack, seq, code, timestamp, latency in ns, bytes_out, bytes_in,
error, body, method, url, headers), plain or gzip (told apart by gzip's magic bytes). The
functions here are pure functions of those bytes; they raise ParseError, naming what is wrong,
on output that is empty, truncated or not vegeta's.

What vegeta does and what follows from it:
- Request `seq` is scheduled at t0 + seq/R (its constant pacer) and never sent before; vegeta
  records when it actually sent it (`timestamp`) and how long the answer took from then
  (`latency`). That latency alone hides coordinated omission: when vegeta cannot send on time
  (no free worker, -max-workers), the wait before the send is nowhere. The corrected latency is
  measured from the schedule: (timestamp + latency) - (t0 + seq/R), with t0 the attack's start,
  estimated as min(timestamp - seq/R) over the results because the file does not carry it.
- The achieved rate counts the successful requests SCHEDULED within [t0, t0 + duration), over
  the duration: the rate vegeta kept, not the process's run time (which includes waiting for the
  last answers). vegeta does not record its -duration; the caller gives it, else it is taken
  as (max seq + 1) / R, which cannot show a vegeta that fell behind (fewer requests sent than
  scheduled): the bench always passes the duration it asked for.
- A result succeeded when its code is 2xx or 3xx and it has no error (vegeta sets the error to
  the status line for any other code). Errors are counted by kind (ERROR_KINDS below).
- bytes_in counts the body vegeta kept, which -max-body=0 makes zero; the bytes read from the
  wire are not in the results.
- Several loadgen hosts each run their own attack at their share of the rate: each file keeps
  its own schedule (own t0, own rate), and the figures are merged exactly (to_run_result).
"""

from __future__ import annotations

import calendar
import functools
import gzip
import json
import math
import re
import statistics
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from perflab.model import (
    ErrorCounts,
    LatencyDistribution,
    LoadgenShare,
    RunResult,
    hdr_spectrum,
    percentile_key,
    value_at_percentile,
)
from perflab.model import ParseError as ParseError  # re-exported: callers catch vegeta.ParseError

GZIP_MAGIC = b"\x1f\x8b"
SUMMARY_PERCENTILES = (50.0, 75.0, 90.0, 99.0, 99.9, 99.99, 100.0)
NS_PER_MS = 1_000_000

# The kind of a failed request without an HTTP status >= 400, from the error text Go's HTTP
# client gives (first match wins; timeouts first, since their text also names the dial or read
# that timed out). Anything else counts as failed_requests.
ERROR_KINDS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("timeout", ("timeout", "Client.Timeout", "deadline exceeded")),  # -timeout, or the OS's
    ("connect", ("connection refused", "connect:", "no such host")),  # dial failed: nothing listens
    ("write", (": write: ",)),  # the request could not be sent (wrk2 counts these apart too)
    ("read", ("EOF", "reset by peer", "broken pipe")),  # the answer was cut off
)

# vegeta sends request 0 as the attack starts. When the start estimated from the rate given
# puts it later than this, that rate is not the one the attack ran at (a wrong --host-rates
# share), and every corrected latency would be off by as much: far above any scheduling delay
# of a send, far below the length of a run.
FIRST_SEND_LAG_MAX_S = 0.25

_REQUIRED_FIELDS = ("seq", "code", "timestamp", "latency", "bytes_in", "error")
# Go's time.Time JSON (RFC 3339 with up to nanoseconds); Python's datetime stops at microseconds.
_TIMESTAMP = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?(Z|[+-]\d{2}:\d{2})"
)


@dataclass(frozen=True)
class Result:
    """One request, as vegeta recorded it (the fields perflab uses)."""

    seq: int
    code: int
    timestamp_ns: int  # when vegeta sent it, ns since the Unix epoch
    latency_ns: int  # from the send to the end of the answer
    bytes_in: int
    error: str
    # The request, as vegeta (12.8 and later) records it: what perflab.sent tells its type by; "" in
    # results without them.
    method: str = ""
    url: str = ""

    @property
    def succeeded(self) -> bool:
        return 200 <= self.code < 400 and not self.error


@dataclass(frozen=True)
class Attack:
    """One attack: the results of one loadgen host, in seq order."""

    results: tuple[Result, ...]


def decode(data: bytes) -> str:
    """The text of a results file, gunzipped when it starts with gzip's magic bytes."""
    if data.startswith(GZIP_MAGIC):
        try:
            data = gzip.decompress(data)
        except EOFError:
            raise ParseError("the gzip stream ends early: the file is truncated") from None
        except (OSError, zlib.error) as exc:
            raise ParseError(f"corrupt gzip: {exc}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise ParseError(
            "not text: vegeta's binary (gob) results? keep them as `vegeta encode -to json` writes them"
        ) from None


def parse(data: bytes) -> Attack:
    """Parse one results file (plain or gzip) of one attack."""
    text = decode(data)
    if not text.strip():
        raise ParseError("the results are empty: vegeta recorded no request")
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()  # vegeta ends every result with a newline
    results: list[Result] = []
    for number, line in enumerate(lines, start=1):
        results.append(_result(line, number, last=number == len(lines)))
    results.sort(key=lambda r: r.seq)
    for before, after in zip(results, results[1:]):
        if before.seq == after.seq:
            raise ParseError(
                f"seq {after.seq} occurs twice: the results of more than one attack in one file? "
                "give each loadgen host's results as a file of its own"
            )
    return Attack(tuple(results))


def check(data: bytes) -> int:
    """How many results one results file holds, checked without reading every result: the gzip
    stream whole (gzip's CRC covers every byte), the text UTF-8, its first and last lines vegeta
    results (a last line cut off is a truncated file). For a reader that needs only to know the
    file is intact (the report, over hundreds of runs); parse() reads every result."""
    text = decode(data)
    if not text.strip():
        raise ParseError("the results are empty: vegeta recorded no request")
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    _result(lines[0], 1, last=len(lines) == 1)
    _result(lines[-1], len(lines), last=True)
    return len(lines)


def _result(line: str, number: int, last: bool) -> Result:
    try:
        document = json.loads(line)
    except json.JSONDecodeError:
        if last:
            raise ParseError(f"line {number}, the last, is cut off: the results are truncated") from None
        raise ParseError(
            f"line {number} is not JSON: not vegeta's JSON results (`vegeta encode -to json`)"
        ) from None
    if not isinstance(document, dict):
        raise ParseError(f"line {number} is not a vegeta result: a JSON {type(document).__name__}, not an object")
    missing = [name for name in _REQUIRED_FIELDS if name not in document]
    if missing:
        raise ParseError(f"line {number} is not a vegeta result: no {', '.join(missing)}")
    where = f"line {number}"
    error = document["error"]
    if not isinstance(error, str):
        raise ParseError(f"{where}: error should be a string, found {error!r}")
    return Result(
        seq=_whole(document, "seq", where),
        code=_whole(document, "code", where),
        timestamp_ns=_timestamp_ns(document["timestamp"], where),
        latency_ns=_whole(document, "latency", where),
        bytes_in=_whole(document, "bytes_in", where),
        error=error,
        method=_text(document, "method", where),
        url=_text(document, "url", where),
    )


def _whole(document: dict[str, Any], name: str, where: str) -> int:
    value = document[name]
    if type(value) is not int or value < 0:
        raise ParseError(f"{where}: {name} should be a whole number >= 0, found {value!r}")
    return value


def _text(document: dict[str, Any], name: str, where: str) -> str:
    value = document.get(name, "")
    if not isinstance(value, str):
        raise ParseError(f"{where}: {name} should be a string, found {value!r}")
    return value


def _timestamp_ns(value: object, where: str) -> int:
    match = _TIMESTAMP.fullmatch(value) if isinstance(value, str) else None
    if match is None:
        raise ParseError(f"{where}: timestamp should be an RFC 3339 time, found {value!r}")
    seconds = _epoch_s(*match.group(1, 2, 3, 4, 5, 6, 8))
    if seconds is None:
        raise ParseError(f"{where}: timestamp {value!r} is not a valid time")
    fraction = (match.group(7) or "").ljust(9, "0")
    return seconds * 1_000_000_000 + int(fraction)


@functools.lru_cache(maxsize=4096)
def _epoch_s(year_: str, month_: str, day_: str, hour_: str, minute_: str, second_: str, zone: str) -> int | None:
    """Unix seconds of one whole second of a timestamp, None when it is no valid time: computed once
    per second of a run, not once per request (a run's requests share their seconds)."""
    year, month, day, hour, minute, second = (int(g) for g in (year_, month_, day_, hour_, minute_, second_))
    if not (1 <= month <= 12 and 1 <= day <= calendar.monthrange(year, month)[1] and hour < 24
            and minute < 60 and second < 60):
        return None
    offset_s = 0 if zone == "Z" else (1 if zone[0] == "+" else -1) * (int(zone[1:3]) * 3600 + int(zone[4:6]) * 60)
    return calendar.timegm((year, month, day, hour, minute, second, 0, 0, 0)) - offset_s


def error_kind(result: Result) -> str | None:
    """The ErrorCounts field a result counts in; None when it succeeded."""
    if result.succeeded:
        return None
    if result.code >= 400:
        return "http_status"
    for kind, markers in ERROR_KINDS:
        if any(marker in result.error for marker in markers):
            return kind
    return "failed_requests"


@dataclass(frozen=True)
class _Schedule:
    """One attack measured against its schedule."""

    corrected_ms: list[float]
    uncorrected_ms: list[float]
    max_seq: int
    start_ns: float  # t0: the attack's start, ns since the Unix epoch


def _schedule(attack: Attack, rate: float, where: str) -> _Schedule:
    # Times relative to the first send, in float ns: exact to far below a nanosecond over a run.
    base = min(r.timestamp_ns for r in attack.results)
    ns_per_request = 1e9 / rate
    # How much later than its place on a schedule starting at `base` each request was sent.
    lag = [(r.timestamp_ns - base) - r.seq * ns_per_request for r in attack.results]
    start = min(lag)  # t0 - base: no request is sent before its schedule
    first = attack.results[0]
    if first.seq == 0 and (lag[0] - start) / 1e9 > FIRST_SEND_LAG_MAX_S:
        raise ParseError(
            f"{where}request 0 would have been sent {(lag[0] - start) / 1e9:.3g} s after the attack's start, "
            f"as estimated from {rate:g} requests/s: the attack ran at another rate "
            "(is --target-rate, or this host's share in --host-rates, right?)"
        )
    return _Schedule(
        corrected_ms=[_ms(r.latency_ns + (delay - start)) for r, delay in zip(attack.results, lag)],
        uncorrected_ms=[_ms(r.latency_ns) for r in attack.results],
        max_seq=attack.results[-1].seq,
        start_ns=base + start,
    )


def corrected(attack: Attack, rate: float, where: str = "") -> tuple[float, list[float]]:
    """The attack's start t0 (ns since the Unix epoch, estimated as above) and every result's
    corrected latency in ms, in the attack's order: the definition to_run_result uses, for a
    reader that needs it per request (perflab.timeseries). `where` prefixes a ParseError."""
    schedule = _schedule(attack, rate, where)
    return schedule.start_ns, schedule.corrected_ms


def _ms(ns: float) -> float:
    return round(ns / NS_PER_MS, 6)  # vegeta's resolution is the nanosecond


def distribution(latencies_ms: Sequence[float]) -> LatencyDistribution:
    """The latency distribution of every request: summary percentiles, moments and full spectrum."""
    ordered = sorted(latencies_ms)
    counts: list[tuple[float, float]] = []
    for value in ordered:
        if counts and counts[-1][0] == value:
            counts[-1] = (value, counts[-1][1] + 1)
        else:
            counts.append((value, 1))
    return LatencyDistribution(
        percentiles_ms={percentile_key(p): value_at_percentile(ordered, p) for p in SUMMARY_PERCENTILES},
        mean_ms=round(statistics.fmean(ordered), 6),
        max_ms=ordered[-1],
        stdev_ms=round(statistics.pstdev(ordered), 6),
        min_ms=ordered[0],
        total_count=len(ordered),
        spectrum=hdr_spectrum(counts),
    )


def to_run_result(
    attacks: Sequence[Attack],
    rates: Sequence[float],
    duration_s: float | None = None,
    target_rate: float | None = None,
    names: Sequence[str] | None = None,
    hosts: Sequence[str] = (),
) -> RunResult:
    """The tool-independent result of one attack per loadgen host, each at its own rate.

    The target rate is the one the run asked for, by default the sum of the hosts' rates. The
    latency distributions hold every request of every host, each measured against its own
    host's schedule; the achieved rate is every host's successful requests scheduled within the
    window, over the window. duration_s is the window the attacks were asked to run (vegeta's
    -duration); by default the longest host's (max seq + 1) / rate. names (the files') name the
    attacks in errors; hosts (the loadgen hosts', in the same order, two or more) give the result's
    loadgen_shares: each host's rate and its successful requests scheduled within the window.
    """
    if not attacks or len(attacks) != len(rates):
        raise ValueError(f"{len(attacks)} attacks for {len(rates)} rates: give one rate per attack")
    for rate in rates:
        if not (math.isfinite(rate) and rate > 0):
            raise ValueError(f"target rate must be a positive number of requests per second, not {rate}")
    if duration_s is not None and not (math.isfinite(duration_s) and duration_s > 0):
        raise ValueError(f"the duration must be a positive number of seconds, not {duration_s}")
    if names is None:
        names = [f"attack {i + 1}" for i in range(len(attacks))] if len(attacks) > 1 else [""]
    schedules = [
        _schedule(attack, rate, f"{name}: " if name else "") for attack, rate, name in zip(attacks, rates, names)
    ]
    # Exact arithmetic: a run that kept its rate has exactly the rate asked for.
    window = (
        Fraction(duration_s) if duration_s is not None
        else max(Fraction(s.max_seq + 1) / Fraction(rate) for s, rate in zip(schedules, rates))
    )
    if hosts and len(hosts) != len(attacks):
        raise ValueError(f"{len(hosts)} hosts for {len(attacks)} attacks: name one host per attack")
    on_time = []
    for attack, rate in zip(attacks, rates):
        seq_limit = window * Fraction(rate)  # scheduled before t0 + window: seq / rate < window
        on_time.append(sum(1 for r in attack.results if r.succeeded and r.seq < seq_limit))
    errors: dict[str, int] = {}
    for attack in attacks:
        for result in attack.results:
            kind = error_kind(result)
            if kind is not None:
                errors[kind] = errors.get(kind, 0) + 1
    return RunResult(
        tool="vegeta",
        target_rate=target_rate if target_rate is not None else float(sum(Fraction(rate) for rate in rates)),
        achieved_rate=float(Fraction(sum(on_time)) / window),
        requests=sum(len(attack.results) for attack in attacks),
        duration_s=float(window),
        latency_corrected=distribution([v for s in schedules for v in s.corrected_ms]),
        latency_uncorrected=distribution([v for s in schedules for v in s.uncorrected_ms]),
        errors=ErrorCounts(**errors),
        bytes_read=sum(r.bytes_in for attack in attacks for r in attack.results),
        dropped_iterations=None,
        loadgen_shares=tuple(LoadgenShare(host=host, target_rate=float(rate), achieved_rate=float(Fraction(count) / window),
                                          requests=len(attack.results))
                             for host, rate, count, attack in zip(hosts, rates, on_time, attacks)),
    )


def parse_many(
    files: Sequence[bytes], rates: Sequence[float], duration_s: float | None = None, target_rate: float | None = None
) -> RunResult:
    """One result from several hosts' results files (their bytes), each host at its own rate."""
    attacks = []
    for index, data in enumerate(files):
        try:
            attacks.append(parse(data))
        except ParseError as exc:
            raise ParseError(f"file {index + 1}: {exc}") from None
    return to_run_result(attacks, rates, duration_s, target_rate, [f"file {i + 1}" for i in range(len(files))])
