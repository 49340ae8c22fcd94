"""The vegeta parser against real vegeta results (fixtures/vegeta), each with its trap; the
figures are computed again here, independently, from the raw JSON lines with exact arithmetic."""

from __future__ import annotations

import dataclasses
import datetime
import gzip
import json
import math
from collections.abc import Callable
from fractions import Fraction

import pytest

from perflab import vegeta
from perflab.model import RunResult, SpectrumPoint, hdr_spectrum, value_at_percentile
from perflab.vegeta import Attack, ParseError, Result

from .helpers import VEGETA_FIXTURES, VEGETA_RUNS, vegeta_bytes

STEADY = "vegeta-steady-200rps.jsonl.gz"
ERRORS_500 = "vegeta-errors-500-200rps.jsonl.gz"
FREEZE = "vegeta-freeze-1s-200rps.jsonl.gz"
BEHIND = "vegeta-behind-1worker-100rps.jsonl.gz"
SUMMARY_KEYS = ["50", "75", "90", "99", "99.9", "99.99", "100"]


def _lines(name: str) -> list[dict[str, object]]:
    return [json.loads(line) for line in gzip.decompress(vegeta_bytes(name)).decode().splitlines()]


def _ns(timestamp: str) -> int:
    """Go's RFC 3339 nanosecond time, read another way than the parser does (UTC fixtures)."""
    whole, _, fraction = timestamp.removesuffix("Z").partition(".")
    moment = datetime.datetime.fromisoformat(whole).replace(tzinfo=datetime.timezone.utc)
    return int(moment.timestamp()) * 10**9 + int(fraction.ljust(9, "0"))


@dataclasses.dataclass
class Reference:
    corrected_ms: list[Fraction]
    uncorrected_ms: list[Fraction]
    successes_in_window: int


def _reference(name: str, rate: int, window_s: Fraction) -> Reference:
    """Each request's latency from its schedule t0 + seq/rate, with t0 = min(sent - seq/rate)."""
    lines = _lines(name)
    sent = [Fraction(_ns(str(line["timestamp"]))) for line in lines]
    schedule = [Fraction(int(str(line["seq"])) * 10**9, rate) for line in lines]
    t0 = min(s - at for s, at in zip(sent, schedule))
    latency = [int(str(line["latency"])) for line in lines]
    return Reference(
        corrected_ms=[(s + lat - (t0 + at)) / 10**6 for s, lat, at in zip(sent, latency, schedule)],
        uncorrected_ms=[Fraction(lat, 10**6) for lat in latency],
        successes_in_window=sum(
            1 for line, at in zip(lines, schedule)
            if 200 <= int(str(line["code"])) < 400 and not line["error"] and at < window_s * 10**9
        ),
    )


def _at(values: list[Fraction], percent: str) -> Fraction:
    """HdrHistogram's rank: round(p/100 x n) half up, at least 1."""
    ordered = sorted(values)
    rank = max(1, math.floor(Fraction(percent) / 100 * len(ordered) + Fraction(1, 2)))
    return ordered[rank - 1]


def _result(name: str, duration_s: float | None = None) -> RunResult:
    rate, _ = VEGETA_RUNS[name]
    return vegeta.parse_many([vegeta_bytes(name)], [rate], duration_s)


def test_fixtures_are_the_ones_described() -> None:
    assert sorted(p.name for p in VEGETA_FIXTURES.glob("*.jsonl.gz")) == sorted(VEGETA_RUNS)
    for name in VEGETA_RUNS:
        assert vegeta_bytes(name)[:2] == b"\x1f\x8b", name


@pytest.mark.parametrize("name", [STEADY, ERRORS_500, FREEZE, BEHIND])
def test_latencies_and_rate_match_an_independent_computation(name: str) -> None:
    rate, duration = VEGETA_RUNS[name]
    expected = _reference(name, int(rate), Fraction(duration))
    result = _result(name, duration)
    for got, want in ((result.latency_corrected, expected.corrected_ms),
                      (result.latency_uncorrected, expected.uncorrected_ms)):
        assert got is not None
        assert list(got.percentiles_ms) == SUMMARY_KEYS
        for key in SUMMARY_KEYS:
            assert got.percentiles_ms[key] == pytest.approx(float(_at(want, key)), abs=1e-6), key
        assert got.mean_ms == pytest.approx(float(sum(want) / len(want)), abs=1e-6)
        assert got.min_ms == pytest.approx(float(min(want)), abs=1e-6)
        assert got.max_ms == pytest.approx(float(max(want)), abs=1e-6)
        mean = sum(want) / len(want)
        assert got.stdev_ms == pytest.approx(math.sqrt(sum((v - mean) ** 2 for v in want) / len(want)), abs=1e-6)
        assert got.total_count == len(want) == result.requests
    assert result.achieved_rate == expected.successes_in_window / duration


def test_steady_run_achieves_exactly_the_asked_rate() -> None:
    result = _result(STEADY, 3.0)
    assert (result.tool, result.target_rate, result.achieved_rate) == ("vegeta", 200.0, 200.0)
    assert (result.requests, result.duration_s) == (600, 3.0)
    assert result.errors.by_kind() == {}
    assert (result.bytes_read, result.dropped_iterations) == (0, None)  # -max-body=0: vegeta keeps no body
    # vegeta's -duration is not in its results: by default the window is (max seq + 1) / rate.
    assert _result(STEADY) == result
    spectrum = result.latency_corrected.spectrum
    assert spectrum[0] == SpectrumPoint(result.latency_corrected.min_ms or 0.0, 0.0, 1)
    assert spectrum[-1] == SpectrumPoint(result.latency_corrected.max_ms, 1.0, 600)
    assert spectrum[-2].value_ms == result.latency_corrected.max_ms and spectrum[-2].percentile < 1.0
    # Measured from the schedule, never less than from the send.
    uncorrected = result.latency_uncorrected
    assert uncorrected is not None
    assert all(result.latency_corrected.at(p) >= uncorrected.at(p) for p in (50, 99, 100))


def test_500s_are_http_status_errors_and_not_achieved() -> None:
    result = _result(ERRORS_500, 3.0)
    assert result.errors.by_kind() == {"http_status": 60}
    assert result.achieved_rate == 540 / 3
    assert sum(1 for line in _lines(ERRORS_500) if line["error"] == "500 Internal Server Error") == 60


def test_a_freeze_shows_in_the_corrected_p99_and_not_in_vegetas_own() -> None:
    result = _result(FREEZE, 4.0)
    assert result.latency_uncorrected is not None
    assert result.latency_corrected.at(99) > 900  # the requests vegeta could not send while frozen
    assert result.latency_uncorrected.at(99) < 20  # 4 workers waited; the backlog left late, then fast
    assert result.latency_uncorrected.max_ms > 990  # only the 4 requests caught in the freeze
    assert (result.achieved_rate, result.errors.total()) == (200.0, 0)


def test_a_vegeta_that_falls_behind_achieves_well_below_the_target() -> None:
    result = _result(BEHIND, 3.0)
    assert (result.requests, result.duration_s) == (59, 3.0)
    assert result.achieved_rate == 59 / 3
    assert result.latency_uncorrected is not None
    assert result.latency_corrected.at(50) > 1000 > 60 > result.latency_uncorrected.at(50)
    # The trap: without the duration asked, the window is the 59 requests' schedule.
    assert _result(BEHIND).achieved_rate == 100.0


@pytest.mark.parametrize(("name", "kinds", "error"), [
    ("vegeta-refused-20rps.jsonl.gz", {"connect": 20}, "->127.0.0.1:18185: connect: connection refused"),
    ("vegeta-timeout-20rps.jsonl.gz", {"timeout": 20}, "(Client.Timeout exceeded while awaiting headers)"),
    ("vegeta-cut-body-200rps.jsonl.gz", {"read": 20}, "unexpected EOF"),
])
def test_errors_by_kind_from_real_error_texts(name: str, kinds: dict[str, int], error: str) -> None:
    rate, duration = VEGETA_RUNS[name]
    result = _result(name, duration)
    assert result.errors.by_kind() == kinds
    assert all(line["code"] == 0 and error in str(line["error"]) for line in _lines(name) if line["error"])
    assert result.achieved_rate == (result.requests - result.errors.total()) / duration


@pytest.mark.parametrize(("code", "error", "kind"), [
    (200, "", None),
    (304, "", None),
    (404, "404 Not Found", "http_status"),
    (503, "503 Service Unavailable", "http_status"),
    (0, 'Get "http://h/": dial tcp 10.0.0.1:80: i/o timeout', "timeout"),
    (0, 'Get "http://h/": context deadline exceeded', "timeout"),
    (0, 'Get "http://h/": dial tcp: lookup h: no such host', "connect"),
    (0, 'Get "http://h/": write tcp 1.2.3.4:5->6.7.8.9:80: write: broken pipe', "write"),
    (0, 'Get "http://h/": read tcp 1.2.3.4:5->6.7.8.9:80: read: connection reset by peer', "read"),
    (0, 'Get "http://h/": EOF', "read"),
    (0, "no targets to attack", "failed_requests"),
    (101, "101 Switching Protocols", "failed_requests"),
])
def test_error_kinds(code: int, error: str, kind: str | None) -> None:
    assert vegeta.error_kind(Result(seq=0, code=code, timestamp_ns=0, latency_ns=1, bytes_in=0, error=error)) == kind


def _synthetic(rate: int, latencies_s: list[int], start_ns: int = 1_700_000_000 * 10**9) -> Attack:
    """An attack that sent every request exactly on schedule."""
    return Attack(tuple(
        Result(seq=i, code=200, timestamp_ns=start_ns + i * 10**9 // rate, latency_ns=latency * 10**9,
               bytes_in=0, error="")
        for i, latency in enumerate(latencies_s)
    ))


def test_slow_answers_at_exactly_the_asked_rate_achieve_exactly_that_rate() -> None:
    # 1 s and 2 s answers to 3 requests/s for 10 s: the process runs 12 s, the schedule 10 s.
    attack = _synthetic(3, [1, 2] * 15)
    result = vegeta.to_run_result([attack], [3.0])
    assert (result.achieved_rate, result.duration_s) == (3.0, 10.0)
    assert vegeta.to_run_result([attack], [3.0], duration_s=10.0).achieved_rate == 3.0
    # On time, so measured from the schedule or from the send, the same (at 4/s the schedule is
    # whole nanoseconds; at 3/s it is not, and the ns timestamps are up to 1 ns off it).
    on_time = vegeta.to_run_result([_synthetic(4, [1, 2] * 20)], [4.0])
    assert on_time.achieved_rate == 4.0
    assert on_time.latency_uncorrected is not None
    assert on_time.latency_corrected.percentiles_ms == on_time.latency_uncorrected.percentiles_ms
    assert (on_time.latency_corrected.at(50), on_time.latency_corrected.at(100)) == (1000.0, 2000.0)
    # A request scheduled at the window's end (vegeta sends one more at t0 + D) is not counted.
    longer = _synthetic(3, [1] * 31)
    assert vegeta.to_run_result([longer], [3.0], duration_s=10.0).achieved_rate == 3.0


def test_several_hosts_merge_exactly() -> None:
    steady, errors = vegeta.parse(vegeta_bytes(STEADY)), vegeta.parse(vegeta_bytes(ERRORS_500))
    # The two were recorded a minute apart: each host keeps its own t0 and its own rate.
    alone = [vegeta.to_run_result([a], [200.0], 3.0) for a in (steady, errors)]
    merged = vegeta.parse_many([vegeta_bytes(STEADY), vegeta_bytes(ERRORS_500)], [200.0, 200.0], 3.0)
    assert merged.target_rate == 400.0
    assert merged.requests == 1200 == sum(r.requests for r in alone)
    assert merged.latency_corrected.total_count == sum(r.latency_corrected.total_count or 0 for r in alone)
    assert merged.achieved_rate == sum(r.achieved_rate for r in alone) == (600 + 540) / 3
    assert merged.errors.by_kind() == {"http_status": 60}
    assert merged.latency_corrected.max_ms == max(r.latency_corrected.max_ms for r in alone)
    # The merged distribution is the one of every request, each against its own host's schedule.
    every = sorted(
        [float(v) for v in _reference(STEADY, 200, Fraction(3)).corrected_ms]
        + [float(v) for v in _reference(ERRORS_500, 200, Fraction(3)).corrected_ms]
    )
    for key in SUMMARY_KEYS:
        assert merged.latency_corrected.percentiles_ms[key] == pytest.approx(value_at_percentile(every, float(key)),
                                                                             abs=1e-6)
    # Hosts at different shares of the rate: 3/s and 1/s, both on time, both exactly achieved.
    uneven = vegeta.to_run_result([_synthetic(3, [1] * 30), _synthetic(1, [2] * 10, start_ns=5 * 10**9)],
                                  [3.0, 1.0])
    assert (uneven.target_rate, uneven.achieved_rate, uneven.requests) == (4.0, 4.0, 40)
    assert uneven.latency_corrected.at(100) == 2000.0


def test_each_hosts_share_is_its_requests_scheduled_within_the_window() -> None:
    """Host 2 sent 6 of its 10 requests in time (it fell behind): its share reads 0.6 of 1 req/s,
    which the sum (3.6 of 4) would not show as clearly."""
    behind = _synthetic(1, [2] * 6, start_ns=5 * 10**9)
    result = vegeta.to_run_result([_synthetic(3, [1] * 30), behind], [3.0, 1.0], duration_s=10.0, hosts=["lg1", "lg2"])
    assert [(s.host, s.target_rate, s.achieved_rate, s.requests) for s in result.loadgen_shares] == [
        ("lg1", 3.0, 3.0, 30), ("lg2", 1.0, 0.6, 6)]
    assert result.achieved_rate == 3.6
    assert vegeta.to_run_result([behind], [1.0], duration_s=10.0).loadgen_shares == ()
    with pytest.raises(ValueError, match="1 hosts for 2 attacks"):
        vegeta.to_run_result([_synthetic(3, [1] * 30), behind], [3.0, 1.0], hosts=["lg1"])


def test_a_rate_below_the_one_the_attack_ran_at_is_refused() -> None:
    with pytest.raises(ParseError, match=r"request 0 would have been sent [0-9.]+ s after .* from 100 requests/s: "
                                         r"the attack ran at another rate"):
        vegeta.to_run_result([vegeta.parse(vegeta_bytes(STEADY))], [100.0])
    with pytest.raises(ParseError, match="^file 2: request 0 would have been sent"):
        vegeta.parse_many([vegeta_bytes(STEADY), vegeta_bytes(ERRORS_500)], [200.0, 100.0])


def test_plain_and_gzip_give_the_same_result() -> None:
    plain = gzip.decompress(vegeta_bytes(STEADY))
    assert vegeta.parse(plain) == vegeta.parse(vegeta_bytes(STEADY))


def test_timestamps_keep_nanoseconds_and_zones() -> None:
    line = json.dumps({"seq": 0, "code": 200, "timestamp": "2026-11-23T23:47:31.000000001+01:30",
                       "latency": 5, "bytes_in": 3, "error": ""})
    result = vegeta.parse(line.encode() + b"\n").results[0]
    utc = datetime.datetime(2026, 11, 23, 22, 17, 31, tzinfo=datetime.timezone.utc)
    assert result.timestamp_ns == int(utc.timestamp()) * 10**9 + 1
    no_fraction = json.loads(line) | {"timestamp": "2026-11-23T22:17:31Z"}
    assert vegeta.parse(json.dumps(no_fraction).encode()).results[0].timestamp_ns == int(utc.timestamp()) * 10**9


def _plain() -> bytes:
    return gzip.decompress(vegeta_bytes(STEADY))


def _replace_first_line(change: Callable[[dict[str, object]], object]) -> bytes:
    first, rest = _plain().split(b"\n", 1)
    return json.dumps(change(json.loads(first))).encode() + b"\n" + rest


@pytest.mark.parametrize(("data", "message"), [
    (lambda: b"", "the results are empty"),
    (lambda: gzip.compress(b"\n"), "the results are empty"),
    (lambda: _plain()[:-40], r"line 600, the last, is cut off: the results are truncated"),
    (lambda: vegeta_bytes(STEADY)[:-100], "the gzip stream ends early: the file is truncated"),
    (lambda: b"\x1f\x8b" + b"garbage" * 10, "corrupt gzip"),
    (lambda: b"\x0e\xff\x81\x03\x01\x01\x06Result\x01\xff\x82", r"not text: vegeta's binary \(gob\) results"),
    (lambda: b"1700000000000000000,200,1000,0,34,,,,0,GET,http://h/,\n" * 2,
     r"line 1 is not JSON: not vegeta's JSON results \(`vegeta encode -to json`\)"),
    (lambda: b'{"metrics": {"http_reqs": {"count": 10}}}\n', "line 1 is not a vegeta result: no seq, code, timestamp"),
    (lambda: b"[1, 2]\n", "line 1 is not a vegeta result: a JSON list"),
    (lambda: _replace_first_line(lambda d: d | {"seq": -1}), "line 1: seq should be a whole number >= 0, found -1"),
    (lambda: _replace_first_line(lambda d: d | {"latency": 1.5}), "line 1: latency should be a whole number"),
    (lambda: _replace_first_line(lambda d: d | {"code": True}), "line 1: code should be a whole number"),
    (lambda: _replace_first_line(lambda d: d | {"error": None}), "line 1: error should be a string"),
    (lambda: _replace_first_line(lambda d: d | {"timestamp": "yesterday"}), "line 1: timestamp should be an RFC 3339"),
    (lambda: _replace_first_line(lambda d: d | {"timestamp": "2026-02-30T10:00:00Z"}), "is not a valid time"),
    (lambda: _plain() + _plain(), "seq 0 occurs twice: the results of more than one attack in one file"),
], ids=["empty", "empty-gzip", "truncated-last-line", "truncated-gzip", "corrupt-gzip", "gob", "csv", "not-vegeta",
        "json-list", "negative-seq", "float-latency", "boolean-code", "null-error", "bad-timestamp", "bad-date",
        "two-attacks"])
def test_unusable_results_raise_a_clear_error(data: Callable[[], bytes], message: str) -> None:
    with pytest.raises(ParseError, match=message):
        vegeta.parse(data())


@pytest.mark.parametrize("name", sorted(VEGETA_RUNS))
def test_check_counts_every_result_of_an_intact_file(name: str) -> None:
    assert vegeta.check(vegeta_bytes(name)) == len(vegeta.parse(vegeta_bytes(name)).results)


@pytest.mark.parametrize(("data", "message"), [
    (lambda: b"", "the results are empty"),
    (lambda: _plain()[:-40], r"line 600, the last, is cut off: the results are truncated"),
    (lambda: vegeta_bytes(STEADY)[:-100], "the gzip stream ends early: the file is truncated"),
    (lambda: vegeta_bytes(STEADY)[:-8] + b"\0" * 8, "corrupt gzip"),  # a byte changed: gzip's CRC says so
    (lambda: b"\x0e\xff\x81\x03\x01\x01\x06Result\x01\xff\x82", r"not text: vegeta's binary \(gob\) results"),
    (lambda: b'{"metrics": {"http_reqs": {"count": 10}}}\n', "line 1 is not a vegeta result: no seq, code, timestamp"),
    (lambda: _replace_first_line(lambda d: d | {"timestamp": "yesterday"}), "line 1: timestamp should be an RFC 3339"),
], ids=["empty", "truncated-last-line", "truncated-gzip", "bad-crc", "gob", "not-vegeta", "bad-first-line"])
def test_check_refuses_a_file_cut_short_or_not_vegetas(data: Callable[[], bytes], message: str) -> None:
    """The report's check, without reading every result: what a full disk, a copy cut short or another
    file in its place leaves."""
    with pytest.raises(ParseError, match=message):
        vegeta.check(data())


def test_results_cut_at_a_line_end_lose_nothing() -> None:
    assert len(vegeta.parse(_plain().rstrip(b"\n")).results) == 600


@pytest.mark.parametrize(("rates", "duration", "message"), [
    ([200.0, 200.0], None, "1 attacks for 2 rates"),
    ([0.0], None, "target rate must be a positive number"),
    ([200.0], -1.0, "the duration must be a positive number of seconds"),
])
def test_to_run_result_refuses_bad_arguments(rates: list[float], duration: float | None, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        vegeta.to_run_result([vegeta.parse(vegeta_bytes(STEADY))], rates, duration)


def test_the_spectrum_follows_hdrhistograms_ticks() -> None:
    """hdr_spectrum on 1..10 ms, one request each, 5 ticks per half distance, worked out by hand:
    steps of 10% up to 50%, 5% up to 75%, 2.5% up to 87.5%, then 1.25%."""
    expected = [(1, 0.0), (1, 0.1), (2, 0.2), (3, 0.3), (4, 0.4), (5, 0.5), (6, 0.55), (6, 0.6), (7, 0.65),
                (7, 0.7), (8, 0.75), (8, 0.775), (8, 0.8), (9, 0.825), (9, 0.85), (9, 0.875), (9, 0.8875),
                (9, 0.9), (10, 0.9125), (10, 1.0)]
    spectrum = hdr_spectrum([(float(v), 1) for v in range(1, 11)])
    assert [p.value_ms for p in spectrum] == [float(v) for v, _ in expected]
    assert [p.percentile for p in spectrum] == pytest.approx([p for _, p in expected])
    assert [p.total_count for p in spectrum] == [round(v) for v, _ in expected]
    # Counts may be fractional (a histogram rebuilt from percentiles); values must increase.
    assert hdr_spectrum([(1.0, 0.5), (2.0, 1.5)])[-1] == SpectrumPoint(2.0, 1.0, 2)
    with pytest.raises(ValueError, match="increasing"):
        hdr_spectrum([(2.0, 1), (1.0, 1)])
    with pytest.raises(ValueError, match="no values"):
        hdr_spectrum([])


def test_value_at_percentile_ranks_as_hdrhistogram() -> None:
    values = [float(v) for v in range(1, 11)]
    assert [value_at_percentile(values, p) for p in (0, 4.9, 5, 50, 99, 100)] == [1.0, 1.0, 1.0, 5.0, 10.0, 10.0]
    assert value_at_percentile([1.0, 2.0, 3.0], 50) == 2.0  # rank round(1.5) = 2, as hdr_value_at_percentile
    with pytest.raises(ValueError):
        value_at_percentile([], 50)


def _raw_lines(rate: int, latencies_s: list[int], start_s: int = 1_764_000_000) -> bytes:
    """Raw results as `vegeta encode -to json` writes them: every request sent on its schedule
    (Go's timestamps: RFC 3339, nanoseconds, whole ns as vegeta's pacer gives them)."""
    lines = []
    for seq, latency in enumerate(latencies_s):
        sent_ns = seq * 10**9 // rate
        stamp = datetime.datetime.fromtimestamp(start_s + sent_ns // 10**9, datetime.timezone.utc)
        lines.append(json.dumps({"attack": "", "seq": seq, "code": 200,
                                 "timestamp": f"{stamp:%Y-%m-%dT%H:%M:%S}.{sent_ns % 10**9:09d}Z",
                                 "latency": latency * 10**9, "bytes_out": 0, "bytes_in": 0, "error": "", "body": None}))
    return ("\n".join(lines) + "\n").encode()


def test_raw_results_of_1s_and_2s_answers_at_exactly_the_rate_give_exactly_the_rate() -> None:
    # 3 requests/s for 10 s, answered in 1 s and 2 s: the last answer comes 11.67 s after the
    # first send, but the rate is over the scheduled window, which the requests filled exactly.
    raw = _raw_lines(3, [1, 2] * 15)
    for data in (raw, gzip.compress(raw)):
        result = vegeta.parse_many([data], [3.0], 10.0)
        assert (result.requests, result.duration_s, result.achieved_rate) == (30, 10.0, 3.0)
        assert vegeta.parse_many([data], [3.0]).achieved_rate == 3.0  # the window from (max seq + 1) / rate
    assert result.latency_uncorrected is not None
    assert (result.latency_uncorrected.at(50), result.latency_uncorrected.at(100)) == (1000.0, 2000.0)
