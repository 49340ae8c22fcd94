"""The wrk2 parser against the real outputs in fixtures/wrk2, each with its trap; the percentile
tables of two more real runs, and merging tables of several hosts."""

import dataclasses
import json
import math
import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from perflab import wrk2
from perflab.model import SpectrumPoint
from perflab.wrk2 import ParseError, SocketErrors

from .helpers import SHARED_WRK2_FIXTURES, WRK2_FIXTURES, WRK2_TABLE_RUNS, WRK2_TARGET_RATES, wrk2_text

SUMMARY_KEYS = ["50", "75", "90", "99", "99.9", "99.99", "99.999", "100"]


def test_fixture_copies_are_identical_to_the_shared_originals() -> None:
    if not SHARED_WRK2_FIXTURES.is_dir():
        pytest.skip(f"{SHARED_WRK2_FIXTURES} is not in this checkout")
    for name in WRK2_TARGET_RATES:
        assert (WRK2_FIXTURES / name).read_bytes() == (SHARED_WRK2_FIXTURES / name).read_bytes(), name


def test_steady_run() -> None:
    out = wrk2.parse(wrk2_text("wrk2-steady-2000rps.txt"))
    assert out.url == "http://127.0.0.1:18081/ok"
    assert (out.threads, out.connections) == (2, 50)
    assert [(c.mean_latency_ms, c.rate_sampling_interval_ms) for c in out.calibrations] == [
        (0.914, 10.0),
        (0.911, 10.0),
    ]
    stats = out.thread_stats
    assert (stats.latency_mean_ms, stats.latency_stdev_ms, stats.latency_max_ms) == (0.9, 0.44266, 5.64)
    assert stats.latency_within_stdev_pct == 65.28
    assert (stats.req_per_sec_mean, stats.req_per_sec_stdev, stats.req_per_sec_max) == (1050.0, 118.6, 1670.0)
    assert stats.req_per_sec_within_stdev_pct == 81.9
    assert out.requests == 39904
    assert out.duration_s == 20.0
    assert out.bytes_read == round(4.60 * 1024 * 1024)
    assert out.requests_per_sec == 1995.12
    assert out.transfer_per_sec_bytes == round(235.75 * 1024)
    assert out.non_2xx_3xx == 0
    assert out.socket_errors == SocketErrors()
    recorded = out.recorded
    assert list(recorded.percentiles_ms) == SUMMARY_KEYS
    assert list(recorded.percentiles_ms.values()) == [0.89, 1.22, 1.44, 1.96, 3.05, 5.56, 5.64, 5.64]
    assert recorded.at(99.9) == 3.05
    assert (recorded.mean_ms, recorded.stdev_ms, recorded.max_ms, recorded.min_ms) == (0.896, 0.443, 5.636, 0.046)
    assert recorded.total_count == 19750
    assert len(recorded.spectrum) == 74
    assert recorded.spectrum[0] == SpectrumPoint(0.046, 0.0, 1)
    assert recorded.spectrum[5] == SpectrumPoint(0.891, 0.5, 9876)
    assert recorded.spectrum[-1] == SpectrumPoint(5.639, 1.0, 19750)
    assert out.uncorrected is None


def test_overloaded_run_keeps_seconds_nan_rates_and_the_calibration_gap() -> None:
    out = wrk2.parse(wrk2_text("wrk2-overloaded-600rps-capacity-250.txt"))
    assert [(c.mean_latency_ms, c.rate_sampling_interval_ms) for c in out.calibrations] == [
        (3112.378, 11206.0),
        (3114.051, 11239.0),
    ]
    stats = out.thread_stats
    assert (stats.latency_mean_ms, stats.latency_stdev_ms, stats.latency_max_ms) == (9310.0, 1780.0, 12390.0)
    # "Req/Sec -nan -nan 0.00 0.00%": no samples, so no mean and no stdev, never a number.
    assert (stats.req_per_sec_mean, stats.req_per_sec_stdev) == (None, None)
    assert (stats.req_per_sec_max, stats.req_per_sec_within_stdev_pct) == (0.0, 0.0)
    assert out.requests == 4559
    assert out.duration_s == 20.01
    assert out.bytes_read == round(543.16 * 1024)
    assert out.requests_per_sec == 227.81
    # wrk2 records only after calibration: the histogram holds about half of the requests.
    assert out.recorded.total_count == 2237
    assert out.recorded.total_count < out.requests
    assert list(out.recorded.percentiles_ms.values()) == [
        9320.0, 10850.0, 11770.0, 12320.0, 12390.0, 12390.0, 12390.0, 12390.0,
    ]
    assert (out.recorded.mean_ms, out.recorded.stdev_ms, out.recorded.max_ms) == (9313.733, 1776.625, 12386.304)
    assert len(out.recorded.spectrum) == 53
    assert out.recorded.spectrum[0] == SpectrumPoint(6246.399, 0.0, 1)
    assert out.recorded.spectrum[-1] == SpectrumPoint(12394.495, 1.0, 2237)
    assert out.uncorrected is None
    assert (out.non_2xx_3xx, out.socket_errors) == (0, SocketErrors())


def test_uncorrected_run_has_two_spectra() -> None:
    out = wrk2.parse(wrk2_text("wrk2-overloaded-uncorrected.txt"))
    assert list(out.recorded.percentiles_ms.values()) == [
        9450.0, 11030.0, 11930.0, 12480.0, 12570.0, 12570.0, 12570.0, 12570.0,
    ]
    assert (out.recorded.mean_ms, out.recorded.max_ms, out.recorded.total_count) == (9466.62, 12558.336, 2218)
    assert len(out.recorded.spectrum) == 51
    assert out.uncorrected is not None
    uncorrected = out.uncorrected
    assert list(uncorrected.percentiles_ms) == SUMMARY_KEYS
    assert list(uncorrected.percentiles_ms.values()) == [
        222.46, 223.36, 225.02, 227.58, 227.97, 227.97, 227.97, 227.97,
    ]
    assert (uncorrected.mean_ms, uncorrected.stdev_ms, uncorrected.max_ms) == (222.592, 1.612, 227.84)
    assert uncorrected.total_count == 2218
    assert len(uncorrected.spectrum) == 47
    assert uncorrected.spectrum[0] == SpectrumPoint(219.391, 0.0, 2)
    assert uncorrected.spectrum[-1] == SpectrumPoint(227.967, 1.0, 2218)
    # Coordinated omission: the uncorrected p99 hides 12 s of queueing.
    assert out.recorded.at(99) / uncorrected.at(99) > 50
    assert (out.requests, out.duration_s, out.requests_per_sec) == (4460, 20.01, 222.93)
    assert out.bytes_read == round(531.37 * 1024)


def test_non_2xx_responses_are_counted_while_latency_looks_fine() -> None:
    out = wrk2.parse(wrk2_text("wrk2-errors-non2xx.txt"))
    assert out.url == "http://127.0.0.1:18081/flaky"
    assert (out.threads, out.connections) == (2, 20)
    assert out.non_2xx_3xx == 1463
    assert out.socket_errors == SocketErrors()
    assert (out.requests, out.duration_s, out.requests_per_sec) == (14988, 15.0, 999.1)
    assert out.bytes_read == round(1.65 * 1024 * 1024)
    assert out.thread_stats.latency_stdev_ms == 0.40182
    assert out.thread_stats.req_per_sec_max == 890.0
    assert out.recorded.at(99) == 1.89
    assert out.recorded.at(100) == 4.17
    assert (out.recorded.mean_ms, out.recorded.stdev_ms, out.recorded.total_count) == (0.97, 0.402, 4948)
    assert len(out.recorded.spectrum) == 64


def test_server_killed_midrun_shows_socket_timeouts() -> None:
    out = wrk2.parse(wrk2_text("wrk2-server-killed-midrun.txt"))
    assert out.socket_errors == SocketErrors(connect=0, read=0, write=0, timeout=80)
    assert out.non_2xx_3xx == 0
    assert (out.requests, out.duration_s, out.requests_per_sec) == (11984, 20.05, 597.65)
    assert out.bytes_read == round(1.38 * 1024 * 1024)
    assert out.thread_stats.req_per_sec_mean == 102.42
    assert out.recorded.max_ms == 2.11
    assert out.recorded.at(99.9) == 2.1
    assert out.recorded.total_count == 1948
    assert len(out.recorded.spectrum) == 57


def test_run_result_carries_target_rate_and_errors_by_kind() -> None:
    killed = wrk2.to_run_result(wrk2.parse(wrk2_text("wrk2-server-killed-midrun.txt")), target_rate=1000)
    assert (killed.tool, killed.target_rate, killed.achieved_rate) == ("wrk2", 1000, 597.65)
    assert killed.errors.by_kind() == {"timeout": 80}
    non2xx = wrk2.to_run_result(wrk2.parse(wrk2_text("wrk2-errors-non2xx.txt")), target_rate=1000)
    assert non2xx.errors.by_kind() == {"http_status": 1463}
    assert non2xx.errors.total() == 1463
    steady = wrk2.to_run_result(wrk2.parse(wrk2_text("wrk2-steady-2000rps.txt")), target_rate=2000)
    assert steady.errors.total() == 0
    assert (steady.requests, steady.threads, steady.connections) == (39904, 2, 50)


@pytest.mark.parametrize("rate", [0, -5, float("nan"), float("inf")])
def test_run_result_rejects_a_target_rate_that_is_not_positive(rate: float) -> None:
    with pytest.raises(ValueError, match="target rate"):
        wrk2.to_run_result(wrk2.parse(wrk2_text("wrk2-steady-2000rps.txt")), target_rate=rate)


@pytest.mark.parametrize(
    ("text", "tool_said"),
    [
        ("1.00m", 60_000.0),
        ("401.82us", 0.40182),
        ("9.32s", 9320.0),
        ("2.5h", 9_000_000.0),
        (" 0.97ms ", 0.97),
    ],
)
def test_durations_are_normalised_to_ms(text: str, tool_said: float) -> None:
    assert wrk2.to_ms(text) == tool_said


def test_sizes_and_counts_are_normalised() -> None:
    assert wrk2.to_bytes("512B") == 512
    assert wrk2.to_bytes("1.50GB") == round(1.5 * 1024**3)
    assert wrk2.to_count("1.67k") == 1670.0
    assert wrk2.to_count("2.00M") == 2_000_000.0
    assert wrk2.to_count("-nan") is None


@pytest.mark.parametrize("bad", ["12 ms", "ms", "1.2.3s", "5 parsecs", ""])
def test_unknown_units_are_refused(bad: str) -> None:
    with pytest.raises(ParseError):
        wrk2.to_ms(bad)
    with pytest.raises(ParseError):
        wrk2.to_bytes(bad)


def _cut_before(text: str, marker: str) -> str:
    position = text.index(marker)
    return text[:position]


STEADY = "wrk2-steady-2000rps.txt"


@pytest.mark.parametrize(
    ("mangle", "message"),
    [
        (lambda t: "", "the output is empty"),
        (lambda t: "unable to connect to 127.0.0.1:8080 Connection refused\n", "begins with 'unable to connect"),
        (lambda t: _cut_before(t, "       1.028     0.600000"), "ends before its '#\\[Mean"),
        (lambda t: _cut_before(t, "#[Max"), "footer is incomplete"),
        (lambda t: _cut_before(t, "0.300000         5941"), "cut off at '0.606': the output is truncated"),
        (lambda t: _cut_before(t, "  39904 requests"), "'N requests in T, S read' line: the output is truncated"),
        (lambda t: _cut_before(t, "Requests/sec:"), "'Requests/sec:' line"),
        (lambda t: _cut_before(t, "  Latency Distribution"), "run wrk2 with --latency"),
        (lambda t: t.replace("  Thread calibration", "  Calibration"), "not wrk2 output"),
        (lambda t: t.replace("       0.891     0.500000", "       0.891     0.5xx000"), "unexpected line"),
        (lambda t: t.replace("19750          inf", "19751          inf"), "footer says Total count = 19750"),
        (lambda t: t.replace("75.000%    1.22ms", "75.000%    1.22 parsecs"), "expected .Detailed Percentile spectrum"),
        (lambda t: t.replace("Latency     0.90ms", "Latency     0.90xs"), "not a wrk duration: '0.90xs'"),
        (lambda t: t + t, "more than one run in one file"),
    ],
    ids=[
        "empty",
        "connection-refused",
        "truncated-in-spectrum",
        "truncated-in-footer",
        "truncated-mid-row",
        "no-requests-line",
        "no-rate-line",
        "without-latency-flag",
        "plain-wrk",
        "corrupt-spectrum-row",
        "spectrum-disagrees-with-footer",
        "corrupt-summary-row",
        "unknown-unit",
        "two-runs",
    ],
)
def test_unparseable_output_raises_a_clear_error(mangle, message: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ParseError, match=message):
        wrk2.parse(mangle(wrk2_text(STEADY)))


def test_truncated_uncorrected_block_is_an_error() -> None:
    text = wrk2_text("wrk2-overloaded-uncorrected.txt")
    cut = text[: text.index("     223.999     0.850000")]
    with pytest.raises(ParseError, match="Uncorrected Latency distribution ends before"):
        wrk2.parse(cut)


# The percentile table the bench's wrk2 done() hook writes (fixtures/wrk2/README.md).

WRK2_LUA_DIR = Path(__file__).resolve().parents[2] / "roles" / "loadgen" / "files" / "wrk2"
STEADY_TABLE = "wrk2-steady-1000rps"
SLOW_TABLE = "wrk2-slow-20ms-200rps"


def _table_text(run: str) -> str:
    return wrk2_text(f"{run}-percentiles.json")


def _table(run: str) -> wrk2.PercentileTable:
    return wrk2.parse_percentiles(_table_text(run))


def test_the_achieved_rate_counts_successful_answers_only() -> None:
    """Issue 14: wrk2's Requests/sec (999.1) counts its 1463 answers of status >= 400 as achieved."""
    non2xx = wrk2.to_run_result(wrk2.parse(wrk2_text("wrk2-errors-non2xx.txt")), target_rate=1000)
    assert non2xx.achieved_rate == pytest.approx(999.1 * (14988 - 1463) / 14988)
    assert non2xx.requests == 14988  # every answer is still a request made
    # With its table: the failures of the whole invocation come off the recorded requests, all of them
    # (wrk2 does not say how many fell in the calibration): the rate is never overstated.
    table = dataclasses.replace(_table(STEADY_TABLE), errors=wrk2.TableErrors(connect=0, read=0, write=0,
                                                                            status=974, timeout=0))
    assert table.recorded_success_rate == pytest.approx((14974 - 974) / 14.976964)
    text = wrk2.parse(wrk2_text(f"{STEADY_TABLE}.txt"))
    # The window ends at the invocation's -d (25 s, from the text), not at the runtime (25.001964 s).
    assert wrk2.to_run_result(text, 1000, table).achieved_rate == pytest.approx((14974 - 974) / 14.975)
    assert wrk2.hosts_run_result([(text, table), (text, _table(STEADY_TABLE))], 2000).achieved_rate == pytest.approx(
        (14000 + 14974) / 14.975)


def test_percentile_table() -> None:
    table = _table(STEADY_TABLE)
    assert (table.runtime_us, table.requests, table.bytes, table.recorded) == (25001964, 24994, 4448932, 14974)
    assert (table.calibration_ms, table.threads, table.connections) == (10025, 2, 10)
    assert table.errors == wrk2.TableErrors(connect=0, read=0, write=0, status=0, timeout=0)
    assert (table.min_us, table.max_us, table.mean_us, table.stdev_us) == (241, 122880, 2587.36109256, 5820.87959301)
    assert len(table.rows) == 151
    assert table.rows[:3] == ((0.0, 241.0), (5.0, 676.0), (10.0, 835.0))
    assert table.rows[-2:] == ((99.9966430664, 113215.0), (100.0, 122943.0))
    # The recorded window: the invocation less wrk2's calibration (10 s + 5 ms x 5 connections a thread).
    assert table.recorded_window_s == pytest.approx(25.001964 - 10.025)
    assert table.recorded_rate == pytest.approx(14974 / 14.976964)


def test_the_table_agrees_with_the_text_of_its_run() -> None:
    for run in WRK2_TABLE_RUNS:
        text, table = wrk2.parse(wrk2_text(f"{run}.txt")), _table(run)
        assert (table.requests, table.recorded) == (text.requests, text.recorded.total_count)
        assert table.mean_us / 1000 == pytest.approx(text.recorded.mean_ms, abs=0.0005)
        assert table.max_us / 1000 == pytest.approx(text.recorded.max_ms, abs=0.0005)
        merged = wrk2.merge_tables([table])
        for percent in (50, 75, 90, 100):  # rows of both; the text rounds to 2 decimals
            assert merged.at(percent) == pytest.approx(text.recorded.at(percent), abs=0.005)


def test_with_its_table_the_spectrum_is_the_tables_and_the_rate_the_recorded_windows() -> None:
    text = wrk2.parse(wrk2_text(f"{STEADY_TABLE}.txt"))
    plain = wrk2.to_run_result(text, target_rate=1000)
    with_table = wrk2.to_run_result(text, target_rate=1000, table=_table(STEADY_TABLE))
    assert plain.achieved_rate == 999.68  # the text's Requests/sec: every request over the whole 25 s
    assert with_table.achieved_rate == pytest.approx(14974 / 14.975)  # from 10.025 s to -d, 25 s
    spectrum = with_table.latency_corrected.spectrum
    assert (len(plain.latency_corrected.spectrum), len(spectrum)) == (72, 151)
    assert spectrum[0] == SpectrumPoint(0.241, 0.0, 1)
    assert spectrum[2] == SpectrumPoint(0.835, 0.1, 1497)
    assert spectrum[-1] == SpectrumPoint(122.943, 1.0, 14974)
    # The rest is the text's: its summary percentiles, mean, errors, requests.
    assert with_table.latency_corrected.percentiles_ms == plain.latency_corrected.percentiles_ms
    assert (with_table.requests, with_table.errors, with_table.duration_s) == (24994, plain.errors, 25.0)


def test_a_table_from_another_run_is_refused() -> None:
    text = wrk2.parse(wrk2_text(f"{STEADY_TABLE}.txt"))
    with pytest.raises(ParseError, match="not from this run: it counts 5002 requests and 2998 recorded, the text "
                                         "24994 and 14974"):
        wrk2.to_run_result(text, target_rate=1000, table=_table(SLOW_TABLE))


def _edit_table(change: Callable[[dict[str, Any]], None]) -> str:
    document = json.loads(_table_text(STEADY_TABLE))
    change(document)
    return json.dumps(document)


def _set(key: str, value: object) -> Callable[[dict[str, Any]], None]:
    return lambda d: d.__setitem__(key, value)


def _set_row(index: int, row: object) -> Callable[[dict[str, Any]], None]:
    return lambda d: d["percentiles"].__setitem__(index, row)


@pytest.mark.parametrize(("text", "message"), [
    (lambda: "", "the percentile table is empty"),
    (lambda: _table_text(STEADY_TABLE)[:500], "not JSON \\(truncated\\?\\)"),
    (lambda: _edit_table(_set("format", "perflab-wrk2-percentiles/2")), "format is 'perflab-wrk2-percentiles/2'"),
    (lambda: "[]", "not a wrk2 percentile table: a JSON list, not an object"),
    (lambda: _edit_table(lambda d: d.pop("recorded")), "recorded should be a whole number >= 0, found None"),
    (lambda: _edit_table(_set("recorded", 0)), "records no request: wrk2 recorded nothing after its calibration"),
    (lambda: _edit_table(_set("recorded", 30000)), "records 30000 of 24994 requests"),
    (lambda: _edit_table(_set("runtime_us", 9_000_000)),
     "ran 9 s, within wrk2's 10.025 s calibration period: nothing was recorded after it"),
    (lambda: _edit_table(_set("errors", [])), "no 'errors' object"),
    (lambda: _edit_table(lambda d: d["errors"].pop("status")), "errors.status should be a whole number"),
    (lambda: _edit_table(_set("mean_us", float("nan"))), "mean_us should be a finite number"),
    (lambda: _edit_table(_set("mean_us", 1.0)), "min_us, mean_us and max_us disagree"),
    (lambda: _edit_table(_set_row(5, [25, 900])), "percentiles\\[5\\] \\[25, 900\\] after \\[20.0, 1073.0\\]: "
                                                  "percents must increase and values never decrease"),
    (lambda: _edit_table(_set_row(5, [25, "1166"])), "percentiles\\[5\\] should be \\[percent, us\\] with finite"),
    (lambda: _edit_table(_set_row(5, [25, float("inf")])), "with finite numbers"),
    (lambda: _edit_table(lambda d: d["percentiles"].pop()), "rows should run from 0% to 100%"),
    (lambda: _edit_table(_set("percentiles", [])), "a list of \\[percent, us\\] rows"),
], ids=["empty", "truncated", "other-format", "not-an-object", "no-recorded", "nothing-recorded", "too-many-recorded",
        "within-calibration", "no-errors", "no-status-errors", "nan", "mean-below-min", "values-decrease",
        "string-value", "infinite-value", "no-100-row", "no-rows"])
def test_unusable_tables_raise_a_clear_error(text: Callable[[], str], message: str) -> None:
    with pytest.raises(ParseError, match=message):
        wrk2.parse_percentiles(text())


def test_a_last_row_read_at_its_buckets_lowest_value_is_accepted() -> None:
    """A hook that ends with [100, latency.max] gives the maximum's bucket at its lowest value,
    below the row before it (latency:percentile(p) gives a bucket's highest): the same bucket."""
    def ending_at(max_us: int) -> Callable[[dict[str, Any]], None]:
        def change(document: dict[str, Any]) -> None:
            document["percentiles"][-1] = [100, max_us]
            document["max_us"] = max_us
        return change

    # 113215 us is the highest value of the bucket [113152, 113215] (64 us wide at that magnitude).
    same_bucket = wrk2.parse_percentiles(_edit_table(ending_at(113152)))
    assert same_bucket.rows[-1] == (100.0, 113215.0)
    with pytest.raises(ParseError, match="values never decrease"):
        wrk2.parse_percentiles(_edit_table(ending_at(113000)))  # more than a bucket below


def test_merging_a_table_with_itself_changes_nothing() -> None:
    table = _table(STEADY_TABLE)
    alone, twice = wrk2.merge_tables([table]), wrk2.merge_tables([table, table])
    assert twice.percentiles_ms == alone.percentiles_ms
    assert list(alone.percentiles_ms) == SUMMARY_KEYS
    assert (twice.mean_ms, twice.min_ms, twice.max_ms) == (alone.mean_ms, alone.min_ms, alone.max_ms)
    assert twice.stdev_ms == pytest.approx(alone.stdev_ms)
    assert (alone.total_count, twice.total_count) == (14974, 2 * 14974)
    assert [(p.value_ms, p.percentile) for p in twice.spectrum] == [(p.value_ms, p.percentile) for p in alone.spectrum]
    # Every percent the table has a row for reads back exactly, alone or merged with itself: the
    # merged spectrum's ticks (5 per half distance) are every other row of the table's (10).
    by_percent = {round(percent, 6): value / 1000 for percent, value in table.rows}
    for merged in (alone, twice):
        on_rows = [p for p in merged.spectrum[1:-1] if round(p.percentile * 100, 6) in by_percent]
        assert len(on_rows) == len(merged.spectrum) - 3  # all but the 0%, the 100% and the last value's first tick
        assert all(p.value_ms == by_percent[round(p.percentile * 100, 6)] for p in on_rows)
    assert [(p.value_ms, p.percentile) for p in wrk2.table_spectrum(table)] == [
        (value / 1000, percent / 100) for percent, value in table.rows
    ]


def _table_of(samples_us: list[int], ticks_per_half_distance: int = 10) -> wrk2.PercentileTable:
    """A table as the hook writes it, from known samples: HdrHistogram's ticks, each at the value
    of rank round(p/100 x n) (exact values: no bucket)."""
    ordered = sorted(samples_us)
    n = len(ordered)
    rows: list[list[float]] = []
    percent = 0.0
    while percent < 100 * (1 - 0.5 / n):
        rows.append([percent, ordered[max(1, int(percent / 100 * n + 0.5)) - 1]])
        percent += 100 / (ticks_per_half_distance * 2 ** (int(math.log2(100 / (100 - percent))) + 1))
    rows.append([100, ordered[-1]])
    mean = sum(ordered) / n
    return wrk2.parse_percentiles(json.dumps({
        "format": "perflab-wrk2-percentiles/1", "runtime_us": 30_000_000, "requests": n, "bytes": 0,
        "recorded": n, "calibration_ms": 10025, "threads": 2, "connections": 10,
        "errors": {"connect": 0, "read": 0, "write": 0, "status": 0, "timeout": 0},
        "min_us": ordered[0], "max_us": ordered[-1], "mean_us": mean,
        "stdev_us": math.sqrt(sum((x - mean) ** 2 for x in ordered) / n), "percentiles": rows,
    }))


def test_merging_two_known_tables_gives_the_percentiles_of_all_their_requests() -> None:
    # Host A: 4000 requests spread over 1.000-4.999 ms; host B: 1000 over 10.000-19.990 ms.
    a_samples = [1000 + i for i in range(4000)]
    b_samples = [10000 + 10 * i for i in range(1000)]
    merged = wrk2.merge_tables([_table_of(a_samples), _table_of(b_samples)])
    every = sorted(a_samples + b_samples)
    # Within the tables' resolution: at p the rebuilt histogram is exact between two rows'
    # percents of each table; p50 falls on rows of A, p99 between rows of B (step 0.3125% there).
    assert merged.at(50) * 1000 == every[2500 - 1]  # 3.499 ms, A's 62.5th percentile
    assert merged.at(90) * 1000 == every[4500 - 1]  # 14.99 ms, B's 50th
    # B's 95th: its rows there are 0.3125% of its 1000 requests apart, 10 us each: 31.25 us.
    assert merged.at(99) * 1000 == pytest.approx(every[4950 - 1], abs=31.25)
    assert merged.at(100) == 19.99 and merged.min_ms == 1.0
    assert merged.mean_ms == pytest.approx(sum(every) / len(every) / 1000)
    mean = sum(every) / len(every)
    assert merged.stdev_ms == pytest.approx(math.sqrt(sum((x - mean) ** 2 for x in every) / len(every)) / 1000)
    assert merged.total_count == 5000
    assert merged.spectrum[0] == SpectrumPoint(1.0, 0.0, 1) and merged.spectrum[-1] == SpectrumPoint(19.99, 1.0, 5000)


def test_merging_two_real_hosts() -> None:
    steady, slow = _table(STEADY_TABLE), _table(SLOW_TABLE)
    merged = wrk2.merge_tables([steady, slow])
    assert merged.total_count == 14974 + 2998
    assert merged.mean_ms == pytest.approx((14974 * 2587.36109256 + 2998 * 22207.2261508) / (14974 + 2998) / 1000)
    assert (merged.min_ms, merged.max_ms) == (0.241, 122.88)
    # 83.3% of the requests are the fast host's: p50 is one of its values, p90 one of the slow host's.
    assert merged.at(50) in {value / 1000 for _, value in steady.rows}
    assert merged.at(90) in {value / 1000 for _, value in slow.rows}
    assert steady.recorded_rate + slow.recorded_rate == pytest.approx(999.802 + 199.921, abs=0.001)
    with pytest.raises(ValueError, match="no percentile table"):
        wrk2.merge_tables([])


def test_slow_answers_at_exactly_the_rate_give_exactly_the_rate_over_the_recorded_window() -> None:
    """A table as the done() hook writes it for -R100 with 1 s and 2 s answers: 20 s recorded after
    the calibration, 2000 requests in it. The rate is theirs over the recorded window, not every
    request over the invocation (calibration included) as the text's Requests/sec counts it."""
    table = wrk2.parse_percentiles(json.dumps({
        "format": wrk2.PERCENTILES_FORMAT, "runtime_us": 30_025_000, "requests": 2800, "bytes": 0, "recorded": 2000,
        "calibration_ms": 10_025, "threads": 2, "connections": 10,
        "errors": {"connect": 0, "read": 0, "write": 0, "status": 0, "timeout": 0},
        "min_us": 1_000_000, "max_us": 2_000_000, "mean_us": 1_500_000, "stdev_us": 500_000,
        "percentiles": [[0, 1_000_000], [50, 1_000_000], [50.05, 2_000_000], [100, 2_000_000]],
    }))
    assert table.recorded_window_s == 20.0
    assert table.recorded_rate == 100.0
    assert table.requests / (table.runtime_us / 1e6) < 94  # what the whole invocation would say


def test_the_recorded_window_ends_at_the_invocations_end_not_at_its_runtime() -> None:
    """wrk2 counts no answer after -d (wrk.c: an answer after stop_at stops its thread uncounted),
    but its threads are joined up to a timeout tick later: the runtime ran 0.6 s past -d on the SSH
    lab, and two hosts whose 1 s answers all came on time read 282.9 of 300 req/s over runtime -
    calibration. Their tables: 1538 and 1582 recorded, 21.6 s of a 21 s invocation, 10.565 s of
    calibration."""
    text = wrk2.parse(wrk2_text(f"{STEADY_TABLE}.txt"))
    for recorded, expected in ((1538, 147.4), (1582, 151.6)):
        table = dataclasses.replace(_table(STEADY_TABLE), runtime_us=21_596_000, calibration_ms=10_565,
                                    recorded=recorded)
        assert table.recorded_rate == pytest.approx(recorded / 11.031)  # without the text: the runtime
        bounded = dataclasses.replace(table, test_s=21.0)
        assert bounded.recorded_window_s == pytest.approx(10.435)
        assert bounded.recorded_rate == pytest.approx(expected, abs=0.05)
    assert wrk2.check_table(text, _table(STEADY_TABLE)).test_s == text.test_s == 25.0
    # A runtime shorter than -d (a thread that stopped early) is the end.
    assert dataclasses.replace(_table(STEADY_TABLE), runtime_us=20_000_000, test_s=25.0).recorded_window_s == \
        pytest.approx(20.0 - 10.025)



def test_a_header_rounded_to_minutes_does_not_end_the_recorded_window() -> None:
    """make lab's own run: DURATION=60s and 11 s of calibration, -d 71s, which wrk prints as "Running
    1m test". Read as 60 s, its recorded window was 49.92 s and the achieved rate 610.2 of 500 req/s
    (122%); the runtime ends it at 60.92 s: 500.0 req/s."""
    run = "wrk2-lab-71s-invocation"
    text = wrk2.parse(wrk2_text(f"{run}.txt"))
    assert text.test_s is None
    table = wrk2.check_table(text, _table(run))
    assert table.recorded_window_s == pytest.approx(60.92, abs=0.01)
    assert table.recorded_rate == pytest.approx(500.0, abs=0.5)


# Several loadgen hosts in one run: each host's text with its table, one result.


def _host(run: str) -> tuple[wrk2.Wrk2Output, wrk2.PercentileTable]:
    return wrk2.parse(wrk2_text(f"{run}.txt")), _table(run)


def test_two_hosts_make_one_result_of_all_their_requests() -> None:
    (steady_text, steady), (slow_text, slow) = _host(STEADY_TABLE), _host(SLOW_TABLE)
    merged = wrk2.hosts_run_result([(steady_text, steady), (slow_text, slow)], target_rate=1200)
    assert (merged.tool, merged.target_rate) == ("wrk2", 1200)
    assert merged.requests == 24994 + 5002
    # Each host's rate over its own recorded window, not the texts' Requests/sec (999.68 + 199.91).
    assert merged.achieved_rate == (wrk2.check_table(steady_text, steady).recorded_rate
                                    + wrk2.check_table(slow_text, slow).recorded_rate)
    assert merged.achieved_rate == pytest.approx(14974 / 14.975 + 2998 / 14.975)
    assert merged.latency_corrected == wrk2.merge_tables([steady, slow])
    assert merged.latency_corrected.total_count == 14974 + 2998
    # 83% of the requests are the fast host's: p50 is one of its values, p90 one of the slow host's.
    assert (merged.latency_corrected.at(50), merged.latency_corrected.at(99)) == (1.794, 35.455)
    assert merged.latency_corrected.at(50) in {value / 1000 for _, value in steady.rows}
    assert merged.latency_corrected.at(90) in {value / 1000 for _, value in slow.rows}
    assert merged.latency_uncorrected is None
    assert (merged.threads, merged.connections) == (4, 20)
    assert merged.duration_s == 25.02  # the longest host's (25.00 s and 25.02 s)
    assert merged.bytes_read == steady_text.bytes_read + slow_text.bytes_read
    assert merged.errors.total() == 0


def test_each_hosts_share_is_kept_with_its_achieved_rate() -> None:
    """Two hosts asked 1000 and 200 req/s: each one's achieved rate over its own recorded window."""
    (steady_text, steady), (slow_text, slow) = _host(STEADY_TABLE), _host(SLOW_TABLE)
    merged = wrk2.hosts_run_result([(steady_text, steady), (slow_text, slow)], target_rate=1200,
                                   shares=[("lg1", 1000.0), ("lg2", 200.0)])
    assert [(s.host, s.target_rate, s.requests) for s in merged.loadgen_shares] == [("lg1", 1000.0, 24994),
                                                                                  ("lg2", 200.0, 5002)]
    assert [s.achieved_rate for s in merged.loadgen_shares] == pytest.approx([14974 / 14.975, 2998 / 14.975])
    assert sum(s.achieved_rate for s in merged.loadgen_shares) == merged.achieved_rate
    with pytest.raises(ValueError, match="1 hosts' shares for 2 wrk2 outputs"):
        wrk2.hosts_run_result([(steady_text, steady), (slow_text, slow)], target_rate=1200, shares=[("lg1", 1000.0)])


def test_the_hosts_errors_add_up_by_kind() -> None:
    (steady_text, steady), (slow_text, slow) = _host(STEADY_TABLE), _host(SLOW_TABLE)
    failing = dataclasses.replace(steady_text, non_2xx_3xx=7, socket_errors=SocketErrors(connect=1, timeout=2))
    timing_out = dataclasses.replace(slow_text, socket_errors=SocketErrors(read=3, write=4, timeout=5))
    merged = wrk2.hosts_run_result([(failing, steady), (timing_out, slow)], target_rate=1200)
    assert merged.errors.by_kind() == {"http_status": 7, "connect": 1, "read": 3, "write": 4, "timeout": 7}


def test_the_hosts_uncorrected_latencies_are_not_merged() -> None:
    uncorrected = wrk2.parse(wrk2_text("wrk2-overloaded-uncorrected.txt")).uncorrected
    assert uncorrected is not None
    hosts = [(dataclasses.replace(text, uncorrected=uncorrected), table) for text, table in
             (_host(STEADY_TABLE), _host(SLOW_TABLE))]
    assert wrk2.hosts_run_result(hosts, target_rate=1200).latency_uncorrected is None


def test_a_host_whose_table_is_another_runs_is_refused() -> None:
    (steady_text, steady), (slow_text, slow) = _host(STEADY_TABLE), _host(SLOW_TABLE)
    with pytest.raises(ParseError, match="not from this run: it counts 5002 requests and 2998 recorded, the text "
                                         "24994 and 14974"):
        wrk2.hosts_run_result([(steady_text, slow), (slow_text, steady)], target_rate=1200)
    with pytest.raises(ValueError, match="no wrk2 output"):
        wrk2.hosts_run_result([], target_rate=1200)


def test_one_host_gives_exactly_the_single_run_result() -> None:
    text, table = _host(STEADY_TABLE)
    alone = wrk2.hosts_run_result([(text, table)], target_rate=1000)
    assert alone == wrk2.to_run_result(text, target_rate=1000, table=table)
    assert alone.to_json() == wrk2.to_run_result(text, target_rate=1000, table=table).to_json()


def test_the_calibration_window_is_stated_once_and_matches_what_wrk2_recorded() -> None:
    """perflab/wrk2.py's calibration_ms is the one statement the role, its done() hook and the tests read
    (issue 27): it gives the window the recorded runs' tables hold (2 threads and 10 connections: 10,025 ms;
    the lab's 71 s invocation, 2 threads and 32 connections: 10,080 ms, the 11 s it ran on top of its 60 s)."""
    for run in [*WRK2_TABLE_RUNS, "wrk2-lab-71s-invocation"]:
        table = _table(run)
        assert wrk2.calibration_ms(table.connections, table.threads) == table.calibration_ms, run
    assert (wrk2.calibration_ms(10, 2), wrk2.calibration_s(10, 2)) == (10025, 11)
    assert (wrk2.calibration_ms(1000, 2), wrk2.calibration_s(1000, 2)) == (12500, 13)
    assert wrk2.calibration_s(400, 2) == 11  # exactly 11 000 ms: no second more
    with pytest.raises(ValueError, match="at least one connection per thread"):
        wrk2.calibration_ms(1, 2)


def test_the_lua_hook_writes_the_roles_calibration_and_invents_none(tmp_path: Path) -> None:
    """roles/loadgen/files/wrk2/perflab.lua's done() hook writes the calibration the role hands it
    (PERFLAB_WRK2_CALIBRATION_MS), not a second copy of the formula; without it, a table the parser refuses."""
    luajit = shutil.which("luajit")
    if luajit is None:
        pytest.skip("luajit is not installed (make test-unit installs it)")
    hook = tmp_path / "hook.lua"
    hook.write_text(f"""
package.path = "{WRK2_LUA_DIR}/?.lua;" .. package.path
local perflab = require("perflab")
-- wrk2's latency is userdata (# is its count, as Lua 5.1 gives __len to userdata alone).
local latency = newproxy(true)
local fields = {{min = 100, max = 1000, mean = 500, stdev = 10,
  percentile = function(_, p) return math.max(100, math.floor(p * 10)) end}}
getmetatable(latency).__len = function() return 4 end
getmetatable(latency).__index = fields
perflab.write_percentiles({{duration = 21000000, requests = 10, bytes = 100,
  errors = {{connect = 0, read = 0, write = 0, status = 0, timeout = 0}}}}, latency)
""")
    table = tmp_path / "table.json"
    base = {"PATH": os.environ["PATH"], "PERFLAB_PERCENTILES": str(table), "WRK_THREADS": "2", "WRK_CONNECTIONS": "50"}
    done = subprocess.run([luajit, str(hook)], env={**base, "PERFLAB_WRK2_CALIBRATION_MS": "10125"},
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert json.loads(table.read_text())["calibration_ms"] == 10125
    done = subprocess.run([luajit, str(hook)], env=base, capture_output=True, text=True, check=False)
    assert done.returncode == 0 and "PERFLAB_WRK2_CALIBRATION_MS is not set" in done.stderr, done.stderr
    with pytest.raises(ParseError, match="calibration_ms should be a whole number >= 0, found -1"):
        wrk2.parse_percentiles(table.read_text())
