"""Write a run's utilization.json from a live Prometheus, as `make bench` writes it
(perflab.observe.utilization, docs/ARCHITECTURE.md). Used once to capture
tests/report/fixtures/*/utilization.json from a real run of the lab (a run from before the bench
wrote the file itself); the report tests then read that file without any lab.

Usage: python tests/report/capture_utilization.py PROMETHEUS_URL RUN_DIR OUT_DIR
(writes OUT_DIR/utilization.json through perflab.rundir; the window is RUN_DIR/result.json's
measured phase; the allotted cores, where Prometheus has no perflab_host_cpus, are the CPUs of
each tier bench-inputs.json sampled, as the bench does)
"""

from __future__ import annotations

import datetime
import sys
from pathlib import Path

from perflab import observe, rundir
from perflab.prometheus import Prometheus


def _unix(moment: str | None) -> float:
    assert moment is not None, "result.json has no measured window"
    return datetime.datetime.fromisoformat(moment).timestamp()


def main(url: str, run_dir: Path, out_dir: Path) -> None:
    result = rundir.read_result(run_dir)
    inputs = rundir.read_bench_inputs(run_dir)
    window = observe.Window(_unix(result.started_at), _unix(result.ended_at), scrape_interval_s=inputs.scrape_interval_s)
    allotted = {tier: float(len(sample.cpus)) for tier, sample in inputs.cpu_start.items()}
    utilization = observe.utilization(Prometheus(url), window, allotted)
    if utilization is None:
        sys.exit(f"{url} had no per-tier CPU or memory over {result.started_at} .. {result.ended_at}")
    rundir.write_utilization(out_dir, utilization)


if __name__ == "__main__":
    main(sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3]))
