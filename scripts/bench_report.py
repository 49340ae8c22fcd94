#!/usr/bin/env python3
"""Turn what playbooks/bench.yml gathered (bench-inputs.json) into the run's context.json and
observations.json, the files `perflab parse-* --context` and `perflab audit --observations` read.

Usage: bench_report.py RUN_DIR  (reads RUN_DIR/bench-inputs.json, writes the two files beside it)
Prints one line: the CPU seconds each tier used in the measured phase.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from perflab.audit import Observations, Placement, TierCpu
from perflab.model import AppSettings, HostFacts, RunContext, ScenarioRun

# Environment variables of the tool that describe the workload rather than the plumbing.
_PLUMBING = ("K6_", "SUMMARY_FILE", "BASE_URL")


def _context(inputs: dict[str, Any]) -> RunContext:
    run = inputs["run"]
    scenario = run["scenario"]
    environment = run["phases"]["measure"]["environment"]
    parameters = {k: str(v) for k, v in environment.items() if not k.startswith(_PLUMBING)}
    parameters.update(tool=run["tool"], target_url=run["target_url"], db_delay_ms=str(inputs["db_delay_ms"]))
    deployment = inputs["deployment"]
    memory = deployment.get("memory_max_mb")
    machines = {tier: sample["machine"] for tier, sample in inputs["cpu_start"].items()}
    hosts = []
    for tier, names in inputs["tiers"].items():
        for name in names:
            facts = inputs["hosts"].get(name, {})
            hosts.append(HostFacts(
                tier=tier, host=name, machine=machines.get(tier) if name == inputs["cpu_start"][tier]["host"] else None,
                cpus=int(facts["cpus"]) if facts.get("cpus") else None,
                memory_mb=int(facts["memory_mb"]) if facts.get("memory_mb") else None,
                os=facts.get("os") or None, kernel=facts.get("kernel") or None,
            ))
    return RunContext(
        started_at=inputs["measure_started_at"],
        ended_at=inputs["measure_ended_at"],
        scenario=ScenarioRun(
            name=scenario["name"], rate=float(scenario["rate"]), duration_s=float(run["duration_s"]),
            warmup_s=float(run["warmup_s"]), connections=int(scenario["connections"]),
            threads=int(scenario["threads"]), parameters=parameters,
        ),
        app=AppSettings(
            name=deployment["app"], profile=deployment.get("profile"),
            jvm_options=tuple(str(o) for o in deployment.get("jvm_opts") or ()),
            environment={k: str(v) for k, v in (deployment.get("env") or {}).items()},
            cpus=",".join(str(c) for c in deployment.get("cpu_affinity") or ()) or None,
            memory_limit=f"{memory} MB" if memory not in (None, "", "None") else None,
            start_to_first_request_ms=float(deployment["start_to_ready_ms"]),
        ),
        hosts=tuple(hosts),
        versions={k: str(v) for k, v in inputs["versions"].items() if v},
        raw_output=inputs["raw_output"],
    )


def cpu_seconds(inputs: dict[str, Any]) -> dict[str, float]:
    """CPU seconds each tier's host used between the two samples around the measured phase."""
    return {
        tier: (inputs["cpu_end"][tier]["usage_usec"] - start["usage_usec"]) / 1e6
        for tier, start in inputs["cpu_start"].items()
    }


def _observations(inputs: dict[str, Any]) -> Observations:
    used = cpu_seconds(inputs)

    def tier_cpu(tier: str) -> TierCpu:
        start, end = inputs["cpu_start"][tier], inputs["cpu_end"][tier]
        return TierCpu(busy_cores=used[tier] / max(end["at"] - start["at"], 1e-3), allotted_cores=len(start["cpus"]))

    return Observations(
        source=f"cgroup cpu.stat of each tier's host, sampled by playbooks/bench.yml around the measured phase "
               f"({inputs['measure_started_at']} .. {inputs['measure_ended_at']})",
        loadgen_cpu=tier_cpu("loadgen"),
        app_cpu=tier_cpu("app"),
        db_cpu=tier_cpu("db"),
        placements=tuple(
            Placement(tier=tier, host=sample["host"], machine=sample["machine"], cpus=tuple(sample["cpus"]))
            for tier, sample in inputs["cpu_start"].items()
        ),
        warmup_s=float(inputs["run"]["warmup_s"]),
    )


def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    run_dir = Path(sys.argv[1])
    inputs = json.loads((run_dir / "bench-inputs.json").read_text(encoding="utf-8"))
    (run_dir / "context.json").write_text(_context(inputs).to_json() + "\n", encoding="utf-8")
    (run_dir / "observations.json").write_text(_observations(inputs).to_json() + "\n", encoding="utf-8")
    print(json.dumps({tier: round(seconds, 3) for tier, seconds in cpu_seconds(inputs).items()}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
