"""Parse the text wrk2 prints (run with --latency, optionally -U).

wrk2 prints its numbers with units chosen per value ("401.82us", "9.32s", "1.05k",
"543.16KB"); to_ms, to_count and to_bytes below are the only places that turn those into
milliseconds, plain counts and bytes. The parser is a pure function of the text; it raises
ParseError, naming what is missing, on output that is truncated, corrupt or not from wrk2.

Traps the fixtures (tests/unit/fixtures/wrk2) hold, and how the parser meets them:
- The histogram holds fewer requests than were made: wrk2 records nothing during its
  calibration period. Both counts are kept (requests vs. recorded.total_count).
- `Req/Sec -nan`: wrk2 prints it when a thread's rate sampling interval exceeds the run;
  those statistics become None, never a number.
- With -U a second spectrum ("Uncorrected Latency") follows the recorded (corrected) one.
- Errors are printed only when they occurred: "Socket errors: ..." and "Non-2xx or 3xx
  responses: N" (wrk counts statuses >= 400 there).

The target rate is not in wrk2's output; to_run_result takes it from the caller.

The achieved rate counts successful answers only: wrk2's Requests/sec and its histogram count every
answer, its "Non-2xx or 3xx responses" too (a 500 in 1 ms would read as a fast request achieved),
so those are taken off. wrk2 counts them over its whole invocation and does not say which fell in
the recorded window: every one is taken off the recorded requests, which never overstates the rate.
Connect, read and write errors are no answers and never counted; a timed-out request whose answer
came late is an answer, and stays in.

The percentile table. The bench's wrk2 script writes, from wrk2's done() hook, a JSON file
beside the text (`wrk2-<phase>-percentiles.json`, format PERCENTILES_FORMAT): the corrected
histogram as ~200 (percent, microseconds) rows, and what the text leaves out: how many requests
the histogram holds ("recorded") and the calibration period. With it:
- the corrected spectrum is the table's, finer than the text's 5 ticks per half distance;
- the achieved rate is the recorded requests over the RECORDED window, from the end of the
  calibration to the end of the invocation's -d: the text's Requests/sec divides every request by
  the whole invocation, calibration included, during which wrk2 runs its schedule but records
  nothing. The runtime wrk2 reports is no end: a thread stops counting answers at -d (wrk.c:
  an answer after stop_at stops the thread uncounted) but is joined up to a timeout tick later,
  and the runtime ran 0.0-0.8 s past -d here (0.6 s on a loaded machine, where runtime - calibration
  read 282.9 of 300 req/s for two hosts whose answers all came on time);
- several loadgen hosts' tables merge into one distribution (merge_tables), and their texts with
  their tables into one result (hosts_run_result).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from perflab.model import (
    ErrorCounts,
    LatencyDistribution,
    LoadgenShare,
    RunResult,
    SpectrumPoint,
    hdr_spectrum,
    percentile_key,
)
from perflab.model import ParseError as ParseError  # re-exported: callers catch wrk2.ParseError


# wrk formats durations with these units (stats.c format_time_us), counts with SI suffixes
# (format_metric) and sizes with binary ones (format_binary).
_MS_PER_UNIT = {"us": 0.001, "ms": 1.0, "s": 1_000.0, "m": 60_000.0, "h": 3_600_000.0}
_COUNT_MULTIPLIER = {"": 1.0, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15}
_BYTES_PER_UNIT = {"B": 1, "KB": 1024, "MB": 1024**2, "GB": 1024**3, "TB": 1024**4, "PB": 1024**5}

_NUMBER = r"[0-9]+(?:\.[0-9]+)?"


# wrk2 records nothing in the first CALIBRATE_DELAY_MS + 5 ms per connection of a thread of an invocation
# (src/wrk.c): the one statement of that window, read by the loadgen role (plugins/filter/perflab_wrk2.py,
# which hands it to the done() hook as PERFLAB_WRK2_CALIBRATION_MS) and by the tests.
WRK2_CALIBRATE_DELAY_MS = 10_000
WRK2_CALIBRATE_MS_PER_CONNECTION = 5


def calibration_ms(connections: int, threads: int) -> int:
    """The milliseconds at the start of a wrk2 invocation that it runs its schedule without recording:
    10 s and 5 ms for each connection of a thread (wrk.c: thread->connections = connections / threads)."""
    if threads <= 0 or connections < threads:
        raise ValueError(f"wrk2 needs at least one connection per thread, not {connections} for {threads}")
    return WRK2_CALIBRATE_DELAY_MS + WRK2_CALIBRATE_MS_PER_CONNECTION * (connections // threads)


def calibration_s(connections: int, threads: int) -> int:
    """calibration_ms in whole seconds, rounded up: what a measured invocation's -d adds to its duration."""
    return -(-calibration_ms(connections, threads) // 1000)


def to_ms(text: str) -> float:
    """"401.82us" -> 0.40182, "9.32s" -> 9320.0: a wrk duration in milliseconds."""
    match = re.fullmatch(rf"({_NUMBER})(us|ms|s|m|h)", text.strip())
    if not match:
        raise ParseError(f"not a wrk duration: {text!r}")
    return _round(float(match.group(1)) * _MS_PER_UNIT[match.group(2)])


def to_count(text: str) -> float | None:
    """"1.05k" -> 1050.0, "535.10" -> 535.1; "-nan"/"nan" -> None (no samples)."""
    if text.strip() in ("nan", "-nan"):
        return None
    match = re.fullmatch(rf"({_NUMBER})([kMGTP]?)", text.strip())
    if not match:
        raise ParseError(f"not a wrk count: {text!r}")
    return _round(float(match.group(1)) * _COUNT_MULTIPLIER[match.group(2)])


def to_bytes(text: str) -> int:
    """"543.16KB" -> 556196: a wrk size in bytes, as precise as wrk printed it."""
    match = re.fullmatch(rf"({_NUMBER})(B|KB|MB|GB|TB|PB)", text.strip())
    if not match:
        raise ParseError(f"not a wrk size: {text!r}")
    return round(float(match.group(1)) * _BYTES_PER_UNIT[match.group(2)])


def _round(value: float) -> float:
    """Drop the float noise of a unit conversion (0.40182000000000004 -> 0.40182)."""
    return round(value, 9)


@dataclass(frozen=True)
class Calibration:
    mean_latency_ms: float
    rate_sampling_interval_ms: float


@dataclass(frozen=True)
class ThreadStats:
    """The "Thread Stats" table; Req/Sec values are None where wrk2 printed -nan."""

    latency_mean_ms: float
    latency_stdev_ms: float
    latency_max_ms: float
    latency_within_stdev_pct: float
    req_per_sec_mean: float | None
    req_per_sec_stdev: float | None
    req_per_sec_max: float | None
    req_per_sec_within_stdev_pct: float | None


@dataclass(frozen=True)
class SocketErrors:
    connect: int = 0
    read: int = 0
    write: int = 0
    timeout: int = 0


@dataclass(frozen=True)
class Wrk2Output:
    url: str
    # The invocation's -d ("Running 21s test"): wrk2 counts no answer after it. wrk prints it rounded
    # to a whole unit ("Running 1m test" for -d 71s), so only a count of seconds gives it; None else.
    test_s: float | None
    threads: int
    connections: int
    calibrations: tuple[Calibration, ...]
    thread_stats: ThreadStats
    recorded: LatencyDistribution  # corrected for coordinated omission
    uncorrected: LatencyDistribution | None  # only with -U
    requests: int
    duration_s: float
    bytes_read: int
    requests_per_sec: float
    transfer_per_sec_bytes: int
    non_2xx_3xx: int
    socket_errors: SocketErrors


_HEADER = re.compile(r"Running (\S+) test @ (\S+)")
_THREADS = re.compile(r"(\d+) threads and (\d+) connections")
_CALIBRATION = re.compile(r"Thread calibration: mean lat\.: (\S+), rate sampling interval: (\S+)")
_LATENCY_STATS = re.compile(r"Latency\s+(\S+)\s+(\S+)\s+(\S+)\s+(" + _NUMBER + r")%")
_REQ_STATS = re.compile(r"Req/Sec\s+(\S+)\s+(\S+)\s+(\S+)\s+(\S+)%")
_DISTRIBUTION = re.compile(r"Latency Distribution \(HdrHistogram - (Recorded|Uncorrected) Latency")
_SUMMARY_ROW = re.compile(rf"({_NUMBER})%\s+(\S+)")
_SPECTRUM_ROW = re.compile(rf"({_NUMBER})\s+({_NUMBER})\s+(\d+)\s+(?:{_NUMBER}|inf)")
_MEAN_FOOTER = re.compile(rf"#\[Mean\s+=\s+({_NUMBER}), StdDeviation\s+=\s+({_NUMBER})\]")
_MAX_FOOTER = re.compile(rf"#\[Max\s+=\s+({_NUMBER}), Total count\s+=\s+(\d+)\]")
_REQUESTS = re.compile(r"(\d+) requests in (\S+), (\S+) read")
_SOCKET_ERRORS = re.compile(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)")
_NON_2XX = re.compile(r"Non-2xx or 3xx responses: (\d+)")
_REQUESTS_PER_SEC = re.compile(rf"Requests/sec:\s+({_NUMBER})")
_TRANSFER_PER_SEC = re.compile(r"Transfer/sec:\s+(\S+)")


def parse(text: str) -> Wrk2Output:
    """Parse the complete output of one wrk2 run."""
    lines = [line.strip() for line in text.splitlines()]
    first_line = next((line for line in lines if line), None)
    if first_line is None:
        raise ParseError("the output is empty")
    if not _find_all(lines, _HEADER):
        raise ParseError(f"missing the 'Running ... test @ URL' header; the output begins with {first_line[:80]!r}")
    header = _find_one(lines, _HEADER, "the 'Running ... test @ URL' header")
    threads = _find_one(lines, _THREADS, "the 'N threads and M connections' line")
    latency_stats = _find_one(lines, _LATENCY_STATS, "the Thread Stats 'Latency' row")
    req_stats = _find_one(lines, _REQ_STATS, "the Thread Stats 'Req/Sec' row")
    calibrations = tuple(
        Calibration(to_ms(m.group(1)), to_ms(m.group(2))) for m in _find_all(lines, _CALIBRATION)
    )
    if not calibrations:
        raise ParseError("missing the 'Thread calibration' lines: this is not wrk2 output (plain wrk has none)")

    distributions = _parse_distributions(lines)
    if "Recorded" not in distributions:
        raise ParseError(
            "missing the 'Latency Distribution (HdrHistogram - Recorded Latency)' block: run wrk2 with --latency"
        )

    requests = _find_one(lines, _REQUESTS, "the 'N requests in T, S read' line: the output is truncated")
    requests_per_sec = _find_one(lines, _REQUESTS_PER_SEC, "the 'Requests/sec:' line: the output is truncated")
    transfer_per_sec = _find_one(lines, _TRANSFER_PER_SEC, "the 'Transfer/sec:' line: the output is truncated")
    socket_errors = _find_optional(lines, _SOCKET_ERRORS)
    non_2xx = _find_optional(lines, _NON_2XX)

    return Wrk2Output(
        url=header.group(2),
        test_s=to_ms(header.group(1)) / 1000.0 if re.fullmatch(r"[0-9.]+s", header.group(1)) else None,
        threads=int(threads.group(1)),
        connections=int(threads.group(2)),
        calibrations=calibrations,
        thread_stats=ThreadStats(
            latency_mean_ms=to_ms(latency_stats.group(1)),
            latency_stdev_ms=to_ms(latency_stats.group(2)),
            latency_max_ms=to_ms(latency_stats.group(3)),
            latency_within_stdev_pct=float(latency_stats.group(4)),
            req_per_sec_mean=to_count(req_stats.group(1)),
            req_per_sec_stdev=to_count(req_stats.group(2)),
            req_per_sec_max=to_count(req_stats.group(3)),
            req_per_sec_within_stdev_pct=to_count(req_stats.group(4)),
        ),
        recorded=distributions["Recorded"],
        uncorrected=distributions.get("Uncorrected"),
        requests=int(requests.group(1)),
        duration_s=to_ms(requests.group(2)) / 1000.0,
        bytes_read=to_bytes(requests.group(3)),
        requests_per_sec=float(requests_per_sec.group(1)),
        transfer_per_sec_bytes=to_bytes(transfer_per_sec.group(1)),
        non_2xx_3xx=int(non_2xx.group(1)) if non_2xx else 0,
        socket_errors=(
            SocketErrors(*(int(g) for g in socket_errors.groups())) if socket_errors else SocketErrors()
        ),
    )


def to_run_result(output: Wrk2Output, target_rate: float, table: PercentileTable | None = None) -> RunResult:
    """The tool-independent result; the run adds its context (times, scenario, app, hosts).

    With the run's percentile table, the corrected spectrum is the table's and the achieved rate
    is the one over the recorded window (the module's docstring says why).
    """
    latency = output.recorded
    failed_share = min(1.0, output.non_2xx_3xx / output.requests) if output.requests else 0.0
    achieved_rate = output.requests_per_sec - output.requests_per_sec * failed_share
    if table is not None:
        table = check_table(output, table)
        latency = replace(latency, spectrum=table_spectrum(table))
        achieved_rate = table.recorded_success_rate
    return RunResult(
        tool="wrk2",
        target_rate=target_rate,
        achieved_rate=achieved_rate,
        requests=output.requests,
        duration_s=output.duration_s,
        latency_corrected=latency,
        latency_uncorrected=output.uncorrected,
        errors=ErrorCounts(
            http_status=output.non_2xx_3xx,
            connect=output.socket_errors.connect,
            read=output.socket_errors.read,
            write=output.socket_errors.write,
            timeout=output.socket_errors.timeout,
        ),
        threads=output.threads,
        connections=output.connections,
        bytes_read=output.bytes_read,
    )


def check_table(output: Wrk2Output, table: PercentileTable) -> PercentileTable:
    """Refuse a percentile table that is not from the run whose text this is; the table with the
    invocation's -d from the text, which ends its recorded window."""
    if (table.requests, table.recorded) != (output.requests, output.recorded.total_count):
        raise ParseError(
            f"the percentile table is not from this run: it counts {table.requests} requests and "
            f"{table.recorded} recorded, the text {output.requests} and {output.recorded.total_count}"
        )
    return replace(table, test_s=output.test_s)


def hosts_run_result(hosts: Sequence[tuple[Wrk2Output, PercentileTable]], target_rate: float,
                     shares: Sequence[tuple[str, float]] = ()) -> RunResult:
    """One result from several loadgen hosts that ran at once, each at its share of target_rate:
    each host's text with its percentile table (checked against each other). shares names each
    host and the rate it was asked for, in the same order (the result's loadgen_shares: each
    host's achieved rate over its recorded window).

    One host gives exactly to_run_result's result. With several: the requests, errors, threads,
    connections and bytes add up; the achieved rate is the sum of what each host kept over its own
    recorded window (the tables' recorded_success_rate; the hosts start at one agreed instant, so the
    windows coincide); the corrected latency is the merged histogram of every host's table
    (merge_tables); the duration is the longest host's.
    """
    if not hosts:
        raise ValueError("no wrk2 output to make a result of")
    if len(hosts) == 1:
        output, table = hosts[0]
        return to_run_result(output, target_rate=target_rate, table=table)
    hosts = [(output, check_table(output, table)) for output, table in hosts]
    outputs = [output for output, _ in hosts]
    if shares and len(shares) != len(hosts):
        raise ValueError(f"{len(shares)} hosts' shares for {len(hosts)} wrk2 outputs: give one per output")
    return RunResult(
        tool="wrk2",
        target_rate=target_rate,
        achieved_rate=sum(table.recorded_success_rate for _, table in hosts),
        requests=sum(o.requests for o in outputs),
        duration_s=max(o.duration_s for o in outputs),
        latency_corrected=merge_tables([table for _, table in hosts]),
        # Left out even when every host ran with -U: only the corrected histogram has a table; the
        # uncorrected one is in the text alone, as ~5 ticks per half distance rounded to 2 decimals,
        # whose merge would be coarser than its hosts' figures while looking as exact. The judge
        # reads the corrected latency only; each host's uncorrected spectrum stays in its text.
        latency_uncorrected=None,
        errors=ErrorCounts(
            http_status=sum(o.non_2xx_3xx for o in outputs),
            connect=sum(o.socket_errors.connect for o in outputs),
            read=sum(o.socket_errors.read for o in outputs),
            write=sum(o.socket_errors.write for o in outputs),
            timeout=sum(o.socket_errors.timeout for o in outputs),
        ),
        threads=sum(o.threads for o in outputs),
        connections=sum(o.connections for o in outputs),
        bytes_read=sum(o.bytes_read for o in outputs),
        loadgen_shares=tuple(LoadgenShare(host=host, target_rate=rate, achieved_rate=table.recorded_success_rate,
                                          requests=output.requests)
                             for (host, rate), (output, table) in zip(shares, hosts)),
    )


def _parse_distributions(lines: list[str]) -> dict[str, LatencyDistribution]:
    """Every 'Latency Distribution (HdrHistogram - X Latency ...)' block, by X."""
    distributions: dict[str, LatencyDistribution] = {}
    for index, line in enumerate(lines):
        match = _DISTRIBUTION.match(line)
        if not match:
            continue
        kind = match.group(1)
        if kind in distributions:
            raise ParseError(f"two '{kind} Latency' distributions in one output")
        distributions[kind] = _parse_distribution(lines, index + 1, kind)
    return distributions


def _parse_distribution(lines: list[str], start: int, kind: str) -> LatencyDistribution:
    """One block: summary percentiles, 'Detailed Percentile spectrum', #[Mean..] #[Max..] footer."""
    where = f"the {kind} Latency distribution"
    percentiles: dict[str, float] = {}
    index = start
    while index < len(lines) and (row := _SUMMARY_ROW.fullmatch(lines[index])):
        percentiles[percentile_key(float(row.group(1)))] = to_ms(row.group(2))
        index += 1
    if not percentiles:
        raise ParseError(f"{where} has no summary percentiles")
    index = _skip_to(lines, index, "Detailed Percentile spectrum:", where)
    index = _skip_to(lines, index, "Value Percentile TotalCount 1/(1-Percentile)", where)

    spectrum: list[SpectrumPoint] = []
    while index < len(lines) and not lines[index].startswith("#[Mean"):
        line = lines[index]
        index += 1
        if not line:
            continue
        row = _SPECTRUM_ROW.fullmatch(line)
        if not row and not any(lines[index:]):
            raise ParseError(f"{where} is cut off at {line!r}: the output is truncated")
        if not row:
            raise ParseError(f"{where}: unexpected line in the spectrum: {line!r}")
        spectrum.append(SpectrumPoint(float(row.group(1)), float(row.group(2)), int(row.group(3))))
    if index >= len(lines):
        raise ParseError(f"{where} ends before its '#[Mean = ...]' footer: the output is truncated")
    mean = _MEAN_FOOTER.fullmatch(lines[index])
    maximum = _MAX_FOOTER.fullmatch(lines[index + 1]) if index + 1 < len(lines) else None
    if not mean or not maximum:
        raise ParseError(f"{where}: the '#[Mean ...]' and '#[Max ...]' footer is incomplete")
    total_count = int(maximum.group(2))
    if not spectrum:
        raise ParseError(f"{where}: the percentile spectrum is empty")
    if spectrum[-1].total_count != total_count or spectrum[-1].percentile != 1.0:
        raise ParseError(
            f"{where}: the spectrum ends at percentile {spectrum[-1].percentile} with count "
            f"{spectrum[-1].total_count}, but the footer says Total count = {total_count}"
        )
    return LatencyDistribution(
        percentiles_ms=percentiles,
        mean_ms=float(mean.group(1)),
        stdev_ms=float(mean.group(2)),
        max_ms=float(maximum.group(1)),
        min_ms=spectrum[0].value_ms,
        total_count=total_count,
        spectrum=tuple(spectrum),
    )


def _skip_to(lines: list[str], index: int, wanted: str, where: str) -> int:
    """Index just after the line `wanted` (spacing aside), allowing only blank lines before it."""
    while index < len(lines):
        line = lines[index]
        index += 1
        if " ".join(line.split()) == wanted:
            return index
        if line:
            raise ParseError(f"{where}: expected {wanted!r}, found {line!r}")
    raise ParseError(f"{where} ends before {wanted!r}: the output is truncated")


def _find_all(lines: list[str], pattern: re.Pattern[str]) -> list[re.Match[str]]:
    return [m for line in lines if (m := pattern.fullmatch(line))]


def _find_optional(lines: list[str], pattern: re.Pattern[str]) -> re.Match[str] | None:
    matches = _find_all(lines, pattern)
    if len(matches) > 1:
        raise ParseError(f"{pattern.pattern!r} occurs {len(matches)} times: more than one run in one file?")
    return matches[0] if matches else None


def _find_one(lines: list[str], pattern: re.Pattern[str], what: str) -> re.Match[str]:
    match = _find_optional(lines, pattern)
    if match is None:
        raise ParseError(f"missing {what}")
    return match


PERCENTILES_FORMAT = "perflab-wrk2-percentiles/1"
# wrk2's own summary percentiles, as its text prints them: merged tables give the same keys.
SUMMARY_PERCENTILES = (50.0, 75.0, 90.0, 99.0, 99.9, 99.99, 99.999, 100.0)
_TABLE_ERRORS = ("connect", "read", "write", "status", "timeout")  # TableErrors' fields, in order
# wrk2's histograms keep 3 significant digits: the values HdrHistogram reports for one bucket
# (its lowest, e.g. latency.max, or its highest, latency:percentile(p)) differ by at most 1/1024.
HDR_RESOLUTION = 1.0 / 1024.0


@dataclass(frozen=True)
class TableErrors:
    connect: int
    read: int
    write: int
    status: int  # responses with status >= 400
    timeout: int


@dataclass(frozen=True)
class PercentileTable:
    """What the bench's wrk2 done() hook writes (PERCENTILES_FORMAT); times in microseconds."""

    runtime_us: int  # the whole invocation, calibration included
    requests: int  # every completed request, calibration included
    bytes: int
    recorded: int  # requests in the corrected histogram: those after the calibration period
    calibration_ms: int  # calibration_ms(connections, threads), as the done() hook was handed it
    threads: int
    connections: int
    errors: TableErrors
    min_us: float
    max_us: float
    mean_us: float
    stdev_us: float
    rows: tuple[tuple[float, float], ...]  # (percent 0..100, latency in us), percent increasing
    test_s: float | None = None  # the invocation's -d, from its text (within_test): where counting ends

    @property
    def recorded_window_s(self) -> float:
        """From the end of the calibration to the end of the invocation: its -d where the table
        knows it (within_test), else the runtime (which may run past -d)."""
        end_s = self.runtime_us / 1e6 if self.test_s is None else min(self.runtime_us / 1e6, self.test_s)
        return end_s - self.calibration_ms / 1000.0

    @property
    def recorded_rate(self) -> float:
        """Requests per second over the window wrk2 recorded."""
        return self.recorded / self.recorded_window_s

    @property
    def recorded_success_rate(self) -> float:
        """Successful requests per second over the window wrk2 recorded: its non-2xx/3xx answers of the
        whole invocation taken off the recorded requests (the module's docstring says why all of them)."""
        return max(0, self.recorded - self.errors.status) / self.recorded_window_s


def parse_percentiles(text: str) -> PercentileTable:
    """Parse and check one percentile table."""
    if not text.strip():
        raise ParseError("the percentile table is empty")
    try:
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ParseError(f"the percentile table is not JSON (truncated?): {exc}") from None
    if not isinstance(document, dict):
        raise ParseError(f"not a wrk2 percentile table: a JSON {type(document).__name__}, not an object")
    if document.get("format") != PERCENTILES_FORMAT:
        raise ParseError(f"not a wrk2 percentile table: format is {document.get('format')!r}, not {PERCENTILES_FORMAT!r}")
    errors = document.get("errors")
    if not isinstance(errors, dict):
        raise ParseError("the percentile table has no 'errors' object")
    recorded = _table_count(document, "recorded")
    if recorded == 0:
        raise ParseError("the table records no request: wrk2 recorded nothing after its calibration")
    rows = _table_rows(document.get("percentiles"))
    table = PercentileTable(
        runtime_us=_table_count(document, "runtime_us"),
        requests=_table_count(document, "requests"),
        bytes=_table_count(document, "bytes"),
        recorded=recorded,
        calibration_ms=_table_count(document, "calibration_ms"),
        threads=_table_count(document, "threads"),
        connections=_table_count(document, "connections"),
        errors=TableErrors(*(_table_count(errors, name, "errors.") for name in _TABLE_ERRORS)),
        min_us=_table_number(document, "min_us"),
        max_us=_table_number(document, "max_us"),
        mean_us=_table_number(document, "mean_us"),
        stdev_us=_table_number(document, "stdev_us"),
        rows=rows,
    )
    if table.recorded > table.requests:
        raise ParseError(f"the table records {table.recorded} of {table.requests} requests")
    if table.threads == 0 or table.connections < table.threads:
        raise ParseError(f"{table.connections} connections on {table.threads} threads")
    if table.recorded_window_s <= 0:
        # Before its calibration ends wrk2 never resets its histogram, which then holds the
        # calibration's requests: not the recorded window this table promises.
        raise ParseError(
            f"the invocation ran {table.runtime_us / 1e6:g} s, within wrk2's {table.calibration_ms / 1000:g} s "
            "calibration period: nothing was recorded after it"
        )
    if not (table.min_us <= table.mean_us <= table.max_us and table.min_us <= rows[0][1]
            and table.max_us <= rows[-1][1]):
        raise ParseError("min_us, mean_us and max_us disagree with each other or with the percentiles")
    return table


def _table_count(document: dict[str, Any], name: str, prefix: str = "") -> int:
    value = document.get(name)
    if type(value) is not int or value < 0:
        raise ParseError(f"the percentile table's {prefix}{name} should be a whole number >= 0, found {value!r}")
    return value


def _table_number(document: dict[str, Any], name: str) -> float:
    value = document.get(name)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise ParseError(f"the percentile table's {name} should be a finite number >= 0, found {value!r}")
    return float(value)


def _table_rows(raw: object) -> tuple[tuple[float, float], ...]:
    if not isinstance(raw, list) or len(raw) < 2:
        raise ParseError("the percentile table's 'percentiles' should be a list of [percent, us] rows")
    rows: list[tuple[float, float]] = []
    for index, row in enumerate(raw):
        if (not isinstance(row, list) or len(row) != 2
                or not all(not isinstance(x, bool) and isinstance(x, (int, float)) and math.isfinite(x) for x in row)):
            raise ParseError(f"percentiles[{index}] should be [percent, us] with finite numbers, found {row!r}")
        percent, value = float(row[0]), float(row[1])
        if rows and value < rows[-1][1] and value >= rows[-1][1] * (1.0 - HDR_RESOLUTION):
            value = rows[-1][1]  # the same bucket, read at its lowest value (e.g. latency.max): no decrease
        if rows and (percent <= rows[-1][0] or value < rows[-1][1]):
            raise ParseError(
                f"percentiles[{index}] {row!r} after {list(rows[-1])!r}: "
                "percents must increase and values never decrease"
            )
        rows.append((percent, value))
    if rows[0][0] != 0.0 or rows[-1][0] != 100.0 or rows[0][1] < 0:
        raise ParseError("the percentile table's rows should run from 0% to 100%")
    return tuple(rows)


def _rank(percent: float, total: int) -> int:
    """How many requests at least are at or below the value HdrHistogram gives for `percent`."""
    return min(total, max(1, int(percent / 100.0 * total + 0.5)))


def table_spectrum(table: PercentileTable) -> tuple[SpectrumPoint, ...]:
    """The table's rows as the corrected spectrum (ms; counts as HdrHistogram ranks them)."""
    return tuple(
        SpectrumPoint(round(value / 1000.0, 6), percent / 100.0, _rank(percent, table.recorded))
        for percent, value in table.rows
    )


def _atoms(table: PercentileTable) -> list[tuple[float, float]]:
    """The histogram rebuilt from the rows: the requests between two rows' percents, at the upper
    row's value (the value HdrHistogram gives for a percent bounds every request below it)."""
    return [
        (value, table.recorded * (percent - previous) / 100.0)
        for (previous, _), (percent, value) in zip(table.rows, table.rows[1:])
    ]


def merge_tables(tables: Sequence[PercentileTable]) -> LatencyDistribution:
    """One corrected distribution from several loadgen hosts' tables, weighted by what each recorded.

    Each table's histogram is rebuilt from its rows, the histograms are added and the percentiles
    read again: exact at every percent a table has a row for, and otherwise within the tables'
    resolution (the next row's value). Mean, standard deviation, min and max are exact.
    """
    if not tables:
        raise ValueError("no percentile table to merge")
    by_value: dict[float, float] = {}
    for table in tables:
        for value, count in _atoms(table):
            by_value[value] = by_value.get(value, 0.0) + count
    atoms = sorted(by_value.items())
    total = sum(t.recorded for t in tables)
    mean = sum(t.recorded * t.mean_us for t in tables) / total
    second_moment = sum(t.recorded * (t.stdev_us**2 + t.mean_us**2) for t in tables) / total
    min_us = min(t.min_us for t in tables)
    max_us = max(t.max_us for t in tables)
    percentiles = {percentile_key(p): _ms(_value_at(atoms, total, p, min_us)) for p in SUMMARY_PERCENTILES}
    spectrum = hdr_spectrum([(_ms(value), count) for value, count in atoms])
    # The rebuilt histogram has no count at the minimum (the 0% rows carry none): its row is exact.
    spectrum = (SpectrumPoint(_ms(min_us), 0.0, 1), *spectrum[1:])
    return LatencyDistribution(
        percentiles_ms=percentiles,
        mean_ms=_ms(mean),
        max_ms=_ms(max_us),
        stdev_ms=_ms(math.sqrt(max(0.0, second_moment - mean**2))),
        min_ms=_ms(min_us),
        total_count=total,
        spectrum=spectrum,
    )


def _value_at(atoms: Sequence[tuple[float, float]], total: int, percent: float, min_us: float) -> float:
    """The smallest value whose cumulative count reaches `percent` of `total`."""
    if percent == 0.0:
        return min_us
    wanted = percent / 100.0 * total * (1.0 - 1e-9)  # summing fractional counts leaves float noise
    cumulative = 0.0
    for value, count in atoms:
        cumulative += count
        if cumulative >= wanted:
            return value
    return atoms[-1][0]


def _ms(us: float) -> float:
    return round(us / 1000.0, 6)
