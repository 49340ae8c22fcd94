"""Bad input: one clear error, no results directory and no change on any host."""
from __future__ import annotations

import pytest

from bench_helpers import changed_counts, run_dirs, run_make, tail

BAD_INPUT = [
    (["APP=struts", "SCENARIO=greeting"], "unknown APP 'struts'"),
    (["APP=quarkus", "SCENARIO=nosuch"], "unknown SCENARIO 'nosuch'"),
    (["APP=quarkus", "SCENARIO=greeting", "RATE=0"], "RATE must be a whole number of requests per second > 0, got '0'"),
    (["APP=quarkus", "SCENARIO=greeting", "RATE=-5"], "RATE must be a whole number of requests per second > 0, got '-5'"),
    (["APP=quarkus", "SCENARIO=greeting", "RATE=fast"], "RATE must be a whole number of requests per second > 0, got 'fast'"),
    (["APP=quarkus", "SCENARIO=greeting", "DURATION=0s"], "DURATION must be a number > 0"),
    (["APP=quarkus", "SCENARIO=greeting", "TOOL=wrk2", "DURATION=10s", "WARMUP=0s"], "must be at least 20s with loadgen_tool=wrk2"),
    (["APP=quarkus", "SCENARIO=greeting", "TOOL=gatling"], "TOOL must be k6 or wrk2"),
    (["APP=quarkus", "SCENARIO=greeting", "DB_DELAY_MS=lots"], "DB_DELAY_MS a whole number"),
    (["APP=quarkus", "SCENARIO=greeting", "PROFILE=report3"], "app: profile 'report3' asks for 4 CPUs"),
    (["APP=quarkus", "SCENARIO=greeting", "ANSIBLE_ARGS=-e bench_quiet_s=3"],
     "bench_quiet_s must be whole seconds longer than the scrape interval (5 s), at least 6: got '3'"),
]


@pytest.mark.parametrize(("variables", "message"), BAD_INPUT, ids=[" ".join(v) for v, _ in BAD_INPUT])
def test_bad_input_is_refused_before_any_change(variables: list[str], message: str) -> None:
    before = run_dirs()
    done = run_make("bench", *variables, timeout=600)
    assert done.returncode != 0, tail(done.stdout)
    assert message in " ".join(done.stdout.split()), tail(done.stdout)
    assert run_dirs() == before, "a refused run must not create results/<run-id>/"
    changed = changed_counts(done.stdout)
    assert all(count == 0 for count in changed.values()), f"a refused run changed something: {changed}\n{tail(done.stdout)}"
