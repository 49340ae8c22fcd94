"""The wrk2 parser against the five real outputs in fixtures/wrk2, each with its trap."""

import pytest

from perflab import wrk2
from perflab.model import SpectrumPoint
from perflab.wrk2 import ParseError, SocketErrors

from .helpers import SHARED_WRK2_FIXTURES, WRK2_FIXTURES, WRK2_TARGET_RATES, wrk2_text

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
