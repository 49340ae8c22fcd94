"""make bench-loadgen: what the load generator costs on the lab, so that it is never the bottleneck
(issue 4, "Performance"). Prints figures; it is a benchmark, not a test.

Per tool (wrk2 where it can be built, and vegeta), a `perflab sweep` of the cheapest workload
(quarkus, greeting: the app does the least work per request) at rising rates on the lab as it is,
each step a normal `make bench` run. The sweep stops where the audit judges a run INVALID: the
load generator busier than 80% of its cores (rule loadgen_cpu), or the rate not achieved. For each
step it prints the loadgen host's CPU (cgroup, over the measured phase, from observations.json),
its CPU seconds per 1,000 requests, and the rate one fully busy loadgen core would sustain at that
cost; then the highest step the generator kept up with inside its 80% budget. Beside the host's
figure (which includes its exporters and Ansible's polling of the phase), the tool's own: its
processes' CPU (process-exporter's group `loadgen`: wrk2 or vegeta) over the measured phase.

    python tests/bench/bench_loadgen.py [--tools wrk2 vegeta] [--rates "500 1000 2000 4000 8000"]
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from perflab.prometheus import Prometheus, PrometheusError

ROOT = Path(__file__).resolve().parents[2]
RESULTS = Path(os.environ.get("PERFLAB_RESULTS_DIR") or ROOT / "results")
INVENTORY = os.environ.get("INVENTORY", "inventory/local")
APP, SCENARIO = "quarkus", "greeting"
DURATION = "20s"
# The same warm-up for both tools (wrk2's calibration runs on top of the measured DURATION).
WARMUP = {"wrk2": "10s", "vegeta": "10s"}
# The sweep must stop at the generator, not at latency: an SLO no short greeting run reaches.
SLO_P99_MS = 10_000
LOADGEN_CPU_MAX = 0.80  # the audit's loadgen_cpu threshold (perflab thresholds)
PROMETHEUS = os.environ.get("PERFLAB_PROMETHEUS_URL", "http://127.0.0.1:9090")
TOOL_CPU = 'sum(namedprocess_namegroup_cpu_seconds_total{tier="loadgen",groupname="loadgen"})'


def _unix(iso: str) -> float:
    return datetime.datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp()


def tool_cpu_s(result: dict[str, Any]) -> float | None:
    """CPU seconds the load generator's own processes used from the phase's start to its end."""
    try:
        prometheus = Prometheus(PROMETHEUS)
        before = prometheus.value(TOOL_CPU, _unix(result["started_at"]))
        after = prometheus.value(TOOL_CPU, _unix(result["ended_at"]) + 6)  # the next scrape after the end
    except (PrometheusError, KeyError, TypeError, ValueError):
        return None
    return None if before is None or after is None else max(0.0, after - before)


def _json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def sweep(tool: str, rates: str) -> tuple[int, Path | None, str]:
    before = set(RESULTS.iterdir()) if RESULTS.is_dir() else set()
    done = subprocess.run(
        [str(ROOT / ".venv/bin/perflab"), "sweep", "--app", APP, "--scenario", SCENARIO, "--inventory", INVENTORY,
         "--rates", rates, "--slo-p99-ms", str(SLO_P99_MS), "--results", str(RESULTS), "--",
         "-e", f"loadgen_duration={DURATION}", "-e", f"loadgen_warmup={WARMUP[tool]}", "-e", f"loadgen_tool={tool}",
         # This benchmark measures where the generator gives out: the bench's per-core bound is lifted.
         "-e", '{"loadgen_max_rate_per_core": {"wrk2": 1000000, "vegeta": 1000000}}'],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, check=False,
    )
    created = sorted(p for p in (set(RESULTS.iterdir()) if RESULTS.is_dir() else set()) - before
                     if p.name.endswith(f"-{APP}-{SCENARIO}-sweep"))
    return done.returncode, (created[-1] if created else None), done.stdout


def step_figures(step: dict[str, Any]) -> dict[str, Any]:
    run_dir = RESULTS / str(step["run_id"])
    figures: dict[str, Any] = {"rate": step["rate"], "verdict": step["verdict"] or step["status"],
                               "achieved": step["achieved_rate"]}
    try:
        result, observations = _json(run_dir / "result.json"), _json(run_dir / "observations.json")
    except (OSError, ValueError):
        return figures
    cpu = observations.get("loadgen_cpu") or {}
    busy, allotted = cpu.get("busy_cores"), cpu.get("allotted_cores")
    if busy is None or not allotted or not result.get("requests"):
        return figures
    cpu_s = busy * float(result["duration_s"])
    per_1000 = cpu_s * 1000 / int(result["requests"])
    tool_s = tool_cpu_s(result)
    figures.update(busy=busy, allotted=allotted, per_1000=per_1000, per_core=1000 / per_1000 if per_1000 else None,
                   tool_per_1000=None if tool_s is None else tool_s * 1000 / int(result["requests"]))
    return figures


def report(tool: str, sweep_dir: Path) -> None:
    document = _json(sweep_dir / "sweep.json")
    rows = [step_figures(step) for step in document["steps"]]
    if rows and all(row["verdict"] == "incomplete" for row in rows):  # e.g. the tool is not installed
        status = _json(RESULTS / str(document["steps"][0]["run_id"]) / "status.json")
        print(f"\n{tool}: not measured: {status.get('failed_step')}: {' '.join(str(status.get('reason')).split())}")
        return
    print(f"\n{tool}: {APP} {SCENARIO}, {DURATION} measured after {WARMUP[tool]} warm-up per step ({sweep_dir.name})")
    print(f"  {'rate/s':>7} {'achieved/s':>10} {'loadgen cores':>13} {'CPU-s/1000 req':>14} {'req/s per core':>14}"
          f" {'tool CPU-s/1000':>15}  verdict")
    for row in rows:
        def cell(key: str, spec: str) -> str:
            return "-" if row.get(key) is None else format(row[key], spec)
        cores = "-" if row.get("busy") is None else f"{row['busy']:.2f}/{row['allotted']:g}"
        print(f"  {row['rate']:>7} {cell('achieved', '10.1f')} {cores:>13} {cell('per_1000', '14.3f')}"
              f" {cell('per_core', '14.0f')} {cell('tool_per_1000', '15.4f')}  {row['verdict']}")
    kept_up = [r for r in rows if r.get("busy") is not None and r["verdict"] in ("VALID", "WARN")
               and r["busy"] <= LOADGEN_CPU_MAX * r["allotted"]]
    if kept_up:
        best = max(kept_up, key=lambda r: int(r["rate"]))
        print(f"{tool}: highest rate kept with the generator inside {LOADGEN_CPU_MAX:.0%} of its cores:"
              f" {best['rate']} req/s ({best['busy']:.2f} cores, {best['per_1000']:.3f} CPU-s per 1,000 requests,"
              f" so about {best['per_core']:.0f} req/s per fully busy core)")
    else:
        print(f"{tool}: no step kept the rate with the generator inside {LOADGEN_CPU_MAX:.0%} of its cores")
    print(f"{tool}: {document['stopped_because']}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tools", nargs="+", default=["wrk2", "vegeta"], choices=["wrk2", "vegeta"])
    parser.add_argument("--rates", default="500 1000 2000 4000 6000 8000")
    args = parser.parse_args()
    for tool in args.tools:
        code, sweep_dir, output = sweep(tool, args.rates)
        if sweep_dir is None or not (sweep_dir / "sweep.json").exists():
            reason = [line.strip() for line in output.splitlines() if "cannot run" in line or "FAILED! =>" in line]
            print(f"\n{tool}: not measured: the bench refused the first run (exit {code})"
                  + (f": {reason[-1]}" if reason else "\n" + "\n".join(output.splitlines()[-15:])))
            continue
        report(tool, sweep_dir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
