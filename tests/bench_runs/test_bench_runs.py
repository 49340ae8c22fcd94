"""Every app with every scenario: a short k6 run completes with zero errors and a parsed result.
The runs go through `make compare` (one scenario, every app in turn, same options), so its table is
checked on the way: one row per app, each naming its run, complete, with the achieved rate."""
from __future__ import annotations

import re

import pytest

from bench_helpers import APPS, RESULTS, SCENARIOS, read_json, run_dirs, run_make, tail

# A short warm-up all the same: these runs prove that every app serves every workload without an
# error at the offered rate, and a cold JVM on a busy 2-core machine fell to 94% of it once
# (p90 2.2 s while Hibernate Reactive and the JIT warmed up, k6 dropping iterations).
RATE, DURATION, WARMUP = 50, "10s", "5s"


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_every_app_completes_a_short_run_without_errors(scenario: str) -> None:
    before = run_dirs()
    done = run_make("compare", f"SCENARIO={scenario}", f"RATE={RATE}", f"DURATION={DURATION}", f"WARMUP={WARMUP}",
                    timeout=1800)
    assert done.returncode == 0, tail(done.stdout, 80)
    created = sorted(run_dirs() - before)
    assert [name.split("-", 1)[1] for name in created] == [f"{app}-{scenario}" for app in APPS], created
    for app, name in zip(APPS, created):
        run_dir = RESULTS / name
        for file in ("k6-warmup-summary.json", "k6-measure-summary.json", "k6-measure.txt", "context.json",
                     "observations.json", "result.json", "audit.json"):
            assert (run_dir / file).is_file(), f"{run_dir}/{file} is missing"
        assert read_json(run_dir / "status.json")["status"] == "complete"
        result = read_json(run_dir / "result.json")
        assert result["tool"] == "k6" and result["target_rate"] == RATE
        assert result["requests"] >= RATE * 10 * 0.9, (app, result["requests"])
        assert not any(result["errors"].values()), (app, result["errors"])
        assert result["scenario"]["name"] == scenario and result["scenario"]["warmup_s"] == 5
        assert result["app"]["name"] == app and result["app"]["start_to_first_request_ms"] > 0
        assert {h["tier"] for h in result["hosts"]} == {"loadgen", "db", "app"}
        assert result["started_at"] < result["ended_at"]
        audit = read_json(run_dir / "audit.json")
        rules = {rule["rule"]: rule["status"] for rule in audit["rules"]}
        assert rules["no_errors"] == "VALID" and rules["achieved_rate"] == "VALID", (app, audit)
        # compare's table: this app's row names its run, complete, the target and the achieved rate.
        row = re.search(rf"^{re.escape(app)}\s+{re.escape(name)}\s+complete\s+{RATE}\s+(?P<achieved>[\d.]+)\s", done.stdout,
                        re.MULTILINE)
        assert row and abs(float(row["achieved"]) - result["achieved_rate"]) < 0.1, tail(done.stdout, 20)
