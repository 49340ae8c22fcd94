"""Every app with every scenario: a short k6 run completes with zero errors and a parsed result."""
from __future__ import annotations

import pytest

from bench_helpers import APPS, SCENARIOS, new_run_dir, read_json, run_dirs, run_make, tail

RATE, DURATION, WARMUP = 50, "10s", "5s"


@pytest.mark.parametrize("scenario", SCENARIOS)
@pytest.mark.parametrize("app", APPS)
def test_short_run_completes_without_errors(app: str, scenario: str) -> None:
    before = run_dirs()
    done = run_make("bench", f"APP={app}", f"SCENARIO={scenario}", f"RATE={RATE}", f"DURATION={DURATION}", f"WARMUP={WARMUP}")
    assert done.returncode == 0, tail(done.stdout, 80)
    run_dir = new_run_dir(before)
    assert run_dir.name.endswith(f"-{app}-{scenario}")
    for name in ("k6-warmup-summary.json", "k6-measure-summary.json", "k6-measure.txt", "context.json",
                 "observations.json", "result.json", "audit.json"):
        assert (run_dir / name).is_file(), f"{run_dir}/{name} is missing"
    assert read_json(run_dir / "status.json")["status"] == "complete"
    result = read_json(run_dir / "result.json")
    assert result["tool"] == "k6" and result["target_rate"] == RATE
    assert result["requests"] >= RATE * 10 * 0.9, result["requests"]
    assert not any(result["errors"].values()), result["errors"]
    assert result["scenario"]["name"] == scenario and result["scenario"]["warmup_s"] == 5
    assert result["app"]["name"] == app and result["app"]["start_to_first_request_ms"] > 0
    assert {h["tier"] for h in result["hosts"]} == {"loadgen", "db", "app"}
    assert result["started_at"] < result["ended_at"]
    audit = read_json(run_dir / "audit.json")
    rules = {rule["rule"]: rule["status"] for rule in audit["rules"]}
    assert rules["no_errors"] == "VALID" and rules["achieved_rate"] == "VALID", audit
