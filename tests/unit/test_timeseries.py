"""perflab.timeseries: a vegeta run second by second, from real vegeta results (fixtures/vegeta,
README.md there says what each one holds)."""

from __future__ import annotations

import dataclasses
import json

import pytest

from perflab import timeseries, vegeta
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
