"""Report 2 on the lab, through `make reproduce REPORT=2`: /hello/1000 at 300 req/s. Spring MVC on
200 Tomcat threads caps near threads / latency (200 req/s): its run is INVALID and attributed to
the app's request threads, not to the load generator; 400 threads, MVC on virtual threads and
WebFlux at the same rate are VALID or WARN and never attributed to request threads. The table
prints the report's figures beside the lab's, every relation marked.

Not in `make test` yet (four Spring runs, about 9 minutes, over the suite's time budget):
`make test-reproduce` on a lab that is up (PERFLAB_TEST_REUSE_LAB=1) or from nothing."""
from __future__ import annotations

import re
from pathlib import Path

from labkit import RESULTS, make, read_json, tail


def test_report_2_the_thread_cap_is_reproduced_and_attributed_to_the_request_threads(lab: str) -> None:
    done = make("reproduce", "REPORT=2", "DURATION=10s", "WARMUP=5s", timeout=2400)
    assert done.returncode == 0, tail(done.stdout, 80)
    written = re.search(r"-> (\S+/reproduction\.json)$", done.stdout, re.MULTILINE)
    assert written, tail(done.stdout, 40)
    document = read_json(Path(written[1]))
    runs = {key: RESULTS / run["run"] for key, run in document["runs"].items()}
    assert set(runs) == {"mvc200", "mvc400", "virtual", "webflux"}, document["runs"]

    capped = read_json(runs["mvc200"] / "attribution.json")
    assert read_json(runs["mvc200"] / "audit.json")["status"] == "INVALID"
    assert capped["limiting_tier"] == "app" and "the app's request threads (" in capped["sentence"], capped
    assert "load generator" not in capped["sentence"], capped
    assert 170 <= read_json(runs["mvc200"] / "result.json")["achieved_rate"] <= 220
    for key in ("mvc400", "virtual", "webflux"):
        assert read_json(runs[key] / "audit.json")["status"] in ("VALID", "WARN"), key
        assert "request threads" not in read_json(runs[key] / "attribution.json")["sentence"], key
        assert read_json(runs[key] / "result.json")["achieved_rate"] >= 0.95 * 300, key

    assert [relation["status"] for relation in document["relations"]] == ["reproduced"] * 5, document["relations"]
    assert "report: Spring MVC, 200 threads" in done.stdout and "lab: Spring MVC, 200 Tomcat threads" in done.stdout
    assert done.stdout.count("[reproduced]") == 5, tail(done.stdout, 40)
