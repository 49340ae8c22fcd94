"""Write a run's utilization.json from a live Prometheus, as `make bench` writes it
(perflab.observe.utilization, docs/ARCHITECTURE.md). Used once to capture
tests/report/fixtures/*/utilization.json from a real run of the lab (a run from before the bench
wrote the file itself); the report tests then read that file without any lab.

Usage: python tests/report/capture_utilization.py PROMETHEUS_URL RUN_DIR OUT.json
(the window is RUN_DIR/result.json's measured phase; the allotted cores, where Prometheus has no
perflab_host_cpus, are the CPUs of each tier bench-inputs.json sampled, as the bench does)
"""

from __future__ import annotations

import datetime
import json
import sys
from pathlib import Path

from perflab import observe
from perflab.model import RunResult
from perflab.prometheus import Prometheus


def _unix(moment: str | None) -> float:
    assert moment is not None, "result.json has no measured window"
    return datetime.datetime.fromisoformat(moment).timestamp()


def main(url: str, run_dir: Path, out: Path) -> None:
    result = RunResult.from_json((run_dir / "result.json").read_text(encoding="utf-8"))
    inputs = json.loads((run_dir / "bench-inputs.json").read_text(encoding="utf-8"))
    window = observe.Window(_unix(result.started_at), _unix(result.ended_at),
                            scrape_interval_s=float(inputs.get("scrape_interval_s", observe.DEFAULT_SCRAPE_INTERVAL_S)))
    allotted = {tier: float(len(sample["cpus"])) for tier, sample in inputs["cpu_start"].items()}
    series = observe.utilization(Prometheus(url), window, allotted)
    document = {
        "schema_version": 1, "source": url, "start": window.start, "end": window.end, "step_s": window.scrape_interval_s,
        "tiers": {tier: {"allotted_cores": s.allotted_cores, "busy_cores": [list(p) for p in s.busy_cores],
                         "memory_bytes": [list(p) for p in s.memory_bytes]} for tier, s in series.items()},
    }
    out.write_text(json.dumps(document) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main(sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3]))
