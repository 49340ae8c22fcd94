"""`make sweep` end to end on the session's lab: one bench run per rate, in increasing order, each
in its own results/<run-id>/, judged and summed up in results/<id>-sweep/sweep.json, which
`make report` draws. Bad rates are refused before any run.

The SLO is set far above what a short greeting run shows (SLO_P99_MS=1000), so that both steps are
sustainable on a machine shared with other work; where the sweep stops at an SLO, at an INVALID
run or at an incomplete run is covered by tests/unit/test_sweep.py."""
from __future__ import annotations

import pytest

from labkit import RESULTS, make, read_json, run_dirs, tail

SWEEP = ("APP=quarkus", "SCENARIO=greeting", "RATES=100 200", "DURATION=10s", "WARMUP=5s", "SLO_P99_MS=1000")


def test_a_sweep_runs_each_rate_and_names_the_max_sustainable_throughput(lab: str) -> None:
    before = run_dirs()
    done = make("sweep", *SWEEP, timeout=1800)
    assert done.returncode == 0, tail(done.stdout, 80)
    created = sorted(run_dirs() - before)
    sweeps = [name for name in created if name.endswith("-quarkus-greeting-sweep")]
    runs = [name for name in created if name.endswith("-quarkus-greeting")]
    assert len(sweeps) == 1 and len(runs) == 2, created
    sweep = read_json(RESULTS / sweeps[0] / "sweep.json")
    assert sweep["kind"] == "sweep" and sweep["slo_p99_ms"] == 1000 and sweep["ended_at"], sweep
    assert [step["rate"] for step in sweep["steps"]] == [100, 200], sweep["steps"]
    assert [step["run_id"] for step in sweep["steps"]] == runs, (sweep["steps"], runs)
    for step in sweep["steps"]:
        assert step["status"] == "complete" and step["verdict"] in ("VALID", "WARN"), step
        assert step["within_slo"] and 0 < step["p99_ms"] <= 1000, step
        assert step["achieved_rate"] >= 0.95 * step["rate"], step
        result = read_json(RESULTS / step["run_id"] / "result.json")
        assert result["target_rate"] == step["rate"] and result["scenario"]["duration_s"] == 10, result["scenario"]
        # greeting x quarkus of the matrix (tests/matrix_lab): wrk2, every request answered without an error.
        assert result["tool"] == "wrk2" and not any(result["errors"].values()), (result["tool"], result["errors"])
    assert sweep["max_sustainable_rate"] == 200, sweep
    assert "max sustainable throughput (quarkus, greeting, p99 SLO 1000 ms): 200 req/s" in done.stdout, tail(done.stdout)

    report = make("report")
    assert report.returncode == 0, tail(report.stdout)
    page = (RESULTS / "report.html").read_text(encoding="utf-8")
    # The sweep's curve is labelled with the app, the sweep's start time and its outcome.
    # The app is named with its variant (Quarkus serves the greeting on its IO thread by default).
    assert f"quarkus (IO thread) ({sweeps[0][:16]}): max sustainable 200 req/s" in page, "the report does not show the sweep"


@pytest.mark.no_load
def test_bad_rates_are_refused_before_any_run(lab: str) -> None:
    before = run_dirs()
    for variables, message in [
        (("RATES=fast",), "RATES must be whole numbers of requests per second > 0, got 'fast'"),
        (("START=100",), "give RATES=\"R1 R2 ...\" or all of START=, STEP= and MAX="),
        (("START=100", "STEP=100", "MAX=99999"), "is more than 50: use a larger STEP or fewer RATES"),
    ]:
        done = make("sweep", "APP=quarkus", "SCENARIO=greeting", *variables)
        assert done.returncode != 0, tail(done.stdout)
        assert message in done.stdout, tail(done.stdout)
    refused = make("sweep", "APP=quarkus", "SCENARIO=nosuch", "RATES=100")
    assert refused.returncode != 0, tail(refused.stdout)
    assert "unknown SCENARIO 'nosuch'" in refused.stdout and "the bench refused the run at 100 req/s" in refused.stdout, \
        tail(refused.stdout)
    assert run_dirs() == before, "a refused sweep left a results directory"
