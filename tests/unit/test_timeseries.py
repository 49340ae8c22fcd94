"""perflab.timeseries: a vegeta run second by second, from real vegeta results (fixtures/vegeta,
README.md there says what each one holds)."""

from __future__ import annotations

import dataclasses
import json

import pytest

from perflab import timeseries, vegeta
from perflab.prometheus import Sample, Series
from perflab.timeseries import PhaseInput, TimeSeries

from .helpers import VEGETA_RUNS, vegeta_bytes


def _phase(name: str, phase: str = "measure", hosts: int = 1) -> PhaseInput:
    rate, duration_s = VEGETA_RUNS[name]
    attack = vegeta.parse(vegeta_bytes(name))
    return PhaseInput(phase, (attack,) * hosts, (rate,) * hosts, (name,) * hosts, duration_s)


def _measured(name: str) -> timeseries.Phase:
    measured = timeseries.from_vegeta(_phase(name)).phase("measure")
    assert measured is not None
    return measured


def test_a_steady_run_has_every_second_at_its_rate() -> None:
    measured = _measured("vegeta-steady-200rps.jsonl.gz")
    assert (measured.ok, measured.errors) == ((200, 200, 200), (0, 0, 0))
    assert measured.start_s == 0.0 and measured.seconds == 3 and measured.target_rate == 200.0
    assert all(p50 is not None and p99 is not None and 0 < p50 <= p99 < 10
               for p50, p99 in zip(measured.p50_ms, measured.p99_ms))


def test_a_1_s_freeze_is_a_dip_then_the_backlog_with_a_p99_near_1_s() -> None:
    """The stand-in answers nothing from 1.5 s to 2.5 s: second 1 gets the answers of its first half, second 2
    those of its second half and the backlog, whose corrected latency reaches 1 s; the others stay fast."""
    measured = _measured("vegeta-freeze-1s-200rps.jsonl.gz")
    assert measured.ok == (200, 101, 299, 200)
    p99 = measured.p99_ms
    assert p99[2] is not None and 950 < p99[2] < 1010
    assert all(v is not None and v < 15 for v in (p99[0], p99[1], p99[3]))
    # The backlog's median: half its answers waited up to 1 s.
    assert measured.p50_ms[2] is not None and 200 < measured.p50_ms[2] < 500


def test_errors_are_counted_in_the_second_their_answer_ended() -> None:
    measured = _measured("vegeta-errors-500-200rps.jsonl.gz")  # every 10th answer a 500
    assert sum(measured.errors) == 60 and sum(measured.ok) == 540
    assert [ok + errors for ok, errors in zip(measured.ok, measured.errors)] == [200, 199, 201]
    refused = _measured("vegeta-refused-20rps.jsonl.gz")
    assert (refused.ok, refused.errors) == ((0,), (20,))


def test_a_generator_that_falls_behind_shows_its_real_pace() -> None:
    """One worker, 50 ms an answer, 100 asked a second: about 20 a second, each waiting longer than the one
    before; the schedule it kept (every request sent in the first 0.59 s of it) would hide that."""
    measured = _measured("vegeta-behind-1worker-100rps.jsonl.gz")
    assert measured.ok == (19, 19, 19)
    assert (measured.after_window_ok, measured.after_window_errors) == (2, 0)
    assert 0 < measured.after_window_s < 0.1
    p50 = [v for v in measured.p50_ms if v is not None]
    assert len(p50) == 3 and p50 == sorted(p50) and p50[0] > 400 and p50[-1] > 2000


def test_the_latency_is_vegetas_corrected_latency() -> None:
    """Second by second, the same definition as the run's: where every answer ended in one second, its p50
    and p99 are the run's corrected ones."""
    name = "vegeta-cut-body-200rps.jsonl.gz"
    rate, duration_s = VEGETA_RUNS[name]
    attack = vegeta.parse(vegeta_bytes(name))
    result = vegeta.to_run_result([attack], [rate], duration_s)
    measured = _measured(name)
    assert measured.seconds == 1 and measured.after_window_ok + measured.after_window_errors == 0
    assert measured.ok[0] + measured.errors[0] == result.requests == 200
    assert measured.p50_ms[0] == pytest.approx(result.latency_corrected.percentiles_ms["50"], abs=0.001)
    assert measured.p99_ms[0] == pytest.approx(result.latency_corrected.percentiles_ms["99"], abs=0.001)
    # And the freeze run's slowest second never exceeds the run's corrected max.
    freeze = vegeta.to_run_result([vegeta.parse(vegeta_bytes("vegeta-freeze-1s-200rps.jsonl.gz"))], [200.0], 4.0)
    assert max(v for v in _measured("vegeta-freeze-1s-200rps.jsonl.gz").p99_ms if v is not None) <= \
        freeze.latency_corrected.max_ms


def test_several_loadgen_hosts_add_up() -> None:
    one, two = _measured("vegeta-steady-200rps.jsonl.gz"), timeseries.from_vegeta(
        _phase("vegeta-steady-200rps.jsonl.gz", hosts=2)).phase("measure")
    assert two is not None
    assert two.ok == tuple(2 * n for n in one.ok) and two.target_rate == 400.0
    assert two.p50_ms == one.p50_ms and two.p99_ms == one.p99_ms


def test_the_warm_up_sits_before_the_measured_phase_on_one_clock() -> None:
    """Two phases: the warm-up's start is its t0 less the measured phase's, in seconds; both fixtures are
    real attacks recorded minutes apart."""
    warmup, measure = _phase("vegeta-steady-200rps.jsonl.gz", "warmup"), _phase("vegeta-freeze-1s-200rps.jsonl.gz")
    series = timeseries.from_vegeta(measure, warmup)
    assert [p.phase for p in series.phases] == ["warmup", "measure"]
    warmup_t0, _ = vegeta.corrected(warmup.attacks[0], 200.0)
    measure_t0, _ = vegeta.corrected(measure.attacks[0], 200.0)
    assert series.origin_unix_s == pytest.approx(measure_t0 / 1e9)
    found = series.phase("warmup")
    assert found is not None and found.start_s == pytest.approx((warmup_t0 - measure_t0) / 1e9, abs=1e-6)
    assert found.ok == (200, 200, 200)


def test_a_rate_that_does_not_match_the_results_is_refused() -> None:
    wrong = dataclasses.replace(_phase("vegeta-steady-200rps.jsonl.gz"), rates=(20.0,))
    with pytest.raises(vegeta.ParseError, match=r"^vegeta-steady-200rps.jsonl.gz: request 0 would have been sent"):
        timeseries.from_vegeta(wrong)
    with pytest.raises(ValueError, match="one rate and one file name per attack"):
        timeseries.from_vegeta(dataclasses.replace(wrong, rates=()))


def test_the_file_round_trips_and_refuses_what_is_not_one() -> None:
    series = timeseries.from_vegeta(_phase("vegeta-freeze-1s-200rps.jsonl.gz"),
                                    _phase("vegeta-steady-200rps.jsonl.gz", "warmup"), ["a note"])
    text = series.to_json()
    assert TimeSeries.from_json(text) == series
    document = json.loads(text)
    assert document["schema_version"] == 1 and document["notes"] == ["a note"]
    measure = document["phases"][1]
    bad = {
        "not JSON": text[:40],
        "schema_version is 2; this perflab reads 1": json.dumps({**document, "schema_version": 2}),
        "TimeSeries: no measured phase": json.dumps({**document, "phases": [document["phases"][0]]}),
        "TimeSeries.phases[1].ok[0]: expected an integer, found number": json.dumps(
            {**document, "phases": [document["phases"][0], {**measure, "ok": [1.5, 2, 3, 4]}]}),
        "TimeSeries.phases[1]: phase measure: ok, errors, p50_ms and p99_ms differ in length": json.dumps(
            {**document, "phases": [document["phases"][0], {**measure, "errors": [0]}]}),
        "TimeSeries.phases[1].p99_ms[0]: expected a number, found string": json.dumps(
            {**document, "phases": [document["phases"][0], {**measure, "p99_ms": ["1", 2, 3, 4]}]}),
        "TimeSeries.phases[1]: missing field duration_s": json.dumps(
            {**document, "phases": [document["phases"][0], {k: v for k, v in measure.items() if k != "duration_s"}]}),
    }
    for message, broken in bad.items():
        with pytest.raises(ValueError, match=message.replace("[", r"\[").replace("]", r"\]").replace(".", r"\.")):
            TimeSeries.from_json(broken)


# --- From the app's histogram in Prometheus (wrk2 keeps no request) --------------------------------


START = 1_800_000_000.0
GRID = [START + 5 * k for k in range(5)]  # a 20 s phase read every 5 s


def _series(label: str, values: dict[str, list[float | None]]) -> list[Series]:
    """Range-query series by LABEL, a value per moment of GRID (None: no sample yet)."""
    return [Series({label: key}, tuple((t, v) for t, v in zip(GRID, points) if v is not None))
            for key, points in values.items()]


def test_a_phase_step_by_step_from_the_apps_counters() -> None:
    """Each step is what the counters moved between its two ends: 200s and a first 500 that appears in the
    third step; the app restarted in the last step (its counters start again from 0)."""
    answers = _series("status", {"200": [1000.0, 2140.0, 3280.0, 4420.0, 1100.0], "500": [None, None, 3.0, 3.0, None]})
    # Java's spelling of the bounds; every answer in 2-5 ms, but 10% in 5-10 ms in the second step.
    buckets = _series("le", {"0.002": [0.0] * 5, "0.005": [1000.0, 2026.0, 3169.0, 4309.0, 1100.0],
                             "0.01": [1000.0, 2140.0, 3283.0, 4423.0, 1100.0],
                             "+Inf": [1000.0, 2140.0, 3283.0, 4423.0, 1100.0]})
    phase = timeseries.histogram_phase(timeseries.PhaseWindow("measure", START, 20.0, 250.0), answers, buckets, 5.0,
                                       origin=START)
    assert (phase.ok, phase.errors) == ((1140, 1140, 1140, 1100), (0, 3, 0, 0))
    assert phase.p50_ms[0] == pytest.approx(2.0 + 3.0 * 570 / 1026, abs=1e-3)
    assert phase.p99_ms[0] is not None and 5.0 < phase.p99_ms[0] <= 10.0  # the slow tenth
    assert all(p is not None and 2.0 < p <= 5.0 for p in (*phase.p50_ms[1:], *phase.p99_ms[1:]))
    assert (phase.start_s, phase.files, phase.seconds) == (0.0, (), 4)


class RangeLab:
    """Prometheus answering range queries from a recorded answer per query kind (by its metric)."""

    def __init__(self, answers: list[Series], buckets: list[Series]) -> None:
        self.url = "http://prometheus:9090"
        self.answers, self.buckets = answers, buckets
        self.asked: list[tuple[str, float, float, float]] = []
        self.answers_from = START  # the earliest range it has series for

    def query_range(self, expr: str, start: float, end: float, step_s: float) -> list[Series]:
        self.asked.append((expr, start, end, step_s))
        if start < self.answers_from:
            return []
        return self.buckets if "_bucket" in expr else self.answers

    def query(self, expr: str, at: float | None = None) -> list[Sample]:
        raise AssertionError("a range query only")


def test_a_wrk2_run_over_time_from_the_apps_histogram_says_its_source_and_resolution() -> None:
    answers = _series("status", {"200": [0.0, 1140.0, 2280.0, 3420.0, 4560.0]})
    buckets = _series("le", {"0.005": [0.0, 1140.0, 2280.0, 3420.0, 4560.0], "+Inf": [0.0, 1140.0, 2280.0, 3420.0, 4560.0]})
    lab = RangeLab(answers, buckets)
    phases = [timeseries.PhaseWindow("warmup", START - 40.0, 30.0, 250.0),
              timeseries.PhaseWindow("measure", START, 20.0, 250.0)]
    series = timeseries.from_app_histogram(lab, "quarkus", ["GET /greeting/{name}"], phases, 5.0)  # type: ignore[arg-type]
    assert (series.source, series.step_s, series.origin_unix_s) == ("app-histogram", 5.0, START)
    measured, warmup = series.phase("measure"), series.phase("warmup")
    assert measured is not None and measured.ok == (1140,) * 4 and measured.p50_ms == (2.5,) * 4
    assert warmup is None  # Prometheus held nothing of it: left out, not drawn as six steps without an answer
    lab.answers_from = START - 40.0
    warm = timeseries.from_app_histogram(lab, "quarkus", ["GET /greeting/{name}"], phases, 5.0).phase("warmup")  # type: ignore[arg-type]
    assert warm is not None and warm.start_s == -40.0 and warm.seconds == 6
    assert series.notes[0].startswith("From the app's own http_server_requests_seconds histogram in Prometheus "
                                      "every 5 s, its scrape interval, on GET /greeting/{name}")
    assert lab.asked[2] == ('sum by (status) (http_server_requests_seconds_count{job="app",application="quarkus",'
                            'method="GET",uri="/greeting/{name}"})', START, START + 20.0, 5.0)
    stored = TimeSeries.from_json(series.to_json())
    assert stored == series and json.loads(series.to_json())["step_s"] == 5.0
    # An app that exports no histogram (TechEmpower's may not): nothing to draw, and why.
    with pytest.raises(timeseries.NoHistogram, match="the app tfb-quarkus counted no answer on GET /plaintext"):
        timeseries.from_app_histogram(RangeLab([], []), "tfb-quarkus", ["GET /plaintext"], phases, 5.0)  # type: ignore[arg-type]


def test_a_timeseries_json_written_before_step_s_reads_second_by_second() -> None:
    stored = json.loads(timeseries.from_vegeta(_phase("vegeta-steady-200rps.jsonl.gz")).to_json())
    del stored["step_s"]
    assert TimeSeries.from_json(json.dumps(stored)).step_s == 1.0


def test_the_warm_ups_end_from_vegetas_seconds() -> None:
    """A real warm-up that ended in a 1 s freeze (the stand-in answered nothing from 1.5 s to 2.5 s): its last
    seconds hold the dip and the backlog, and the worst second's corrected p99 near 1 s."""
    warmup, measure = _phase("vegeta-freeze-1s-200rps.jsonl.gz", "warmup"), _phase("vegeta-steady-200rps.jsonl.gz")
    end, why = timeseries.warmup_end(timeseries.from_vegeta(measure, warmup), 5.0)
    # A 4 s warm-up: its last 5 s are all of it.
    assert why == "" and end is not None
    assert (end.seconds, end.target_rate, end.answered_per_s, end.errors, end.source) == (4, 200.0, 200.0, 0, "vegeta")
    assert end.p99_ms is not None and 950 < end.p99_ms < 1010
    two, _ = timeseries.warmup_end(timeseries.from_vegeta(measure, warmup), 2.0)
    assert two is not None and (two.seconds, two.answered_per_s) == (2, 249.5)
    none, why = timeseries.warmup_end(timeseries.from_vegeta(measure), 5.0)
    assert none is None and why.startswith("timeseries.json holds no warm-up")


def test_the_warm_ups_end_from_the_apps_histogram_is_its_last_whole_step() -> None:
    """Issue 24's cold warm-up as a wrk2 run reads it: 300 req/s asked, the app's last 5 s step 201 answers
    (40.2 a second) at a p99 of 9.2 s."""
    warm = timeseries.Phase(phase="warmup", files=(), start_s=-47.0, duration_s=30.0, target_rate=300.0,
                            ok=(310, 620, 900, 1320, 640, 201), errors=(0,) * 6, p50_ms=(40.0,) * 6,
                            p99_ms=(900.0, 2400.0, 5100.0, 7700.0, 8800.0, 9200.0))
    measure = dataclasses.replace(warm, phase="measure", start_s=0.0, duration_s=40.0, ok=(1500,) * 8, errors=(0,) * 8,
                                  p50_ms=(4.0,) * 8, p99_ms=(9.0,) * 8)
    series = TimeSeries(source="app-histogram", step_s=5.0, origin_unix_s=START, phases=(warm, measure))
    end, _ = timeseries.warmup_end(series, 5.0)
    assert end is not None and (end.seconds, end.answered_per_s, end.p99_ms, end.source) == (
        5.0, 40.2, 9200.0, "app-histogram")
