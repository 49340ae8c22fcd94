#!/usr/bin/env python3
"""Turn what playbooks/bench.yml gathered (bench-inputs.json, db-sessions.json) and what
Prometheus saw over the measured window into the run's context.json, observations.json and
utilization.json (the files `perflab parse-* --context`, `perflab audit --observations` and
`make report` read); after the audit, attribute the run to its limiting tier (attribution.json).

Usage: bench_report.py RUN_DIR [--prometheus URL]   context, observations, utilization
       bench_report.py --attribute RUN_DIR          attribution.json from result.json + observations.json
The first prints one line: the CPU seconds each tier used in the measured phase (JSON); the
second prints the limiting tier's sentence and each tier's figures.
"""
from __future__ import annotations

import argparse
import datetime
import json
import re
import sys
import time
from pathlib import Path
from typing import Any

from perflab import attribution, observe
from perflab.audit import DbSessions, Observations, Placement, TierCpu
from perflab.model import AppSettings, HostFacts, RunContext, RunResult, ScenarioRun
from perflab.prometheus import DEFAULT_URL, Prometheus, PrometheusError

# Environment variables of the tool that are plumbing rather than the workload.
_PLUMBING = ("PERFLAB_PERCENTILES",)


def _context(inputs: dict[str, Any]) -> RunContext:
    run = inputs["run"]
    scenario = run["scenario"]
    environment = run["phases"]["measure"]["environment"]
    parameters = {k: str(v) for k, v in environment.items() if not k.startswith(_PLUMBING)}
    parameters.update(tool=run["tool"], tool_reason=run.get("tool_reason", ""), target_url=run["target_url"],
                      db_delay_ms=str(inputs["db_delay_ms"]))
    if inputs.get("start_skew_ms") is not None:
        # How far apart the loadgen hosts started, against the instant they agreed on.
        parameters["start_skew_ms"] = str(inputs["start_skew_ms"])
    host_rates = run.get("host_rates") or []
    if len(host_rates) > 1:
        # Each loadgen host's share of the rate, in the inventory's order ("50,50", as --host-rates takes them).
        parameters["host_rates"] = ",".join(
            str(int(rate)) if isinstance(rate, float) and rate.is_integer() else str(rate) for rate in host_rates)
    if int(run.get("calibration_ms") or 0) > 0:
        # wrk2 records nothing in its calibration: the measured invocation ran that much longer.
        parameters["wrk2_calibration_ms"] = str(run["calibration_ms"])
        recorded_from = _unix(inputs["measure_started_at"]) + int(run["calibration_ms"]) / 1000
        parameters["recorded_window"] = (
            f"{datetime.datetime.fromtimestamp(recorded_from, datetime.timezone.utc).strftime('%Y-%m-%dT%H:%M:%SZ')}"
            f" .. {inputs['measure_ended_at']}")
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
            threads=int(scenario["threads"]), parameters=parameters, slo_p99_ms=_slo_p99_ms(scenario),
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


def _slo_p99_ms(scenario: dict[str, Any]) -> float | None:
    """The scenario's p99 SLO as the bench ran it (SLO_P99_MS= applied); None where bench-inputs.json has none."""
    value = scenario.get("slo_p99_ms")
    return None if value is None else float(value)


def cpu_seconds(inputs: dict[str, Any]) -> dict[str, float]:
    """CPU seconds each tier's host used between the two samples around the measured phase."""
    return {
        tier: (inputs["cpu_end"][tier]["usage_usec"] - start["usage_usec"]) / 1e6
        for tier, start in inputs["cpu_start"].items()
    }


def sample_cpu(start: dict[str, Any], end: dict[str, Any]) -> TierCpu:
    """The CPU a host used between two cgroup samples ({"usage_usec", "cpus", "at", ...}): its busy
    cores over the seconds between them, against the CPUs it may use."""
    window_s = max(end["at"] - start["at"], 1e-3)
    used_s = (end["usage_usec"] - start["usage_usec"]) / 1e6
    return TierCpu(busy_cores=used_s / window_s, allotted_cores=len(start["cpus"]), window_s=window_s)


def loadgen_cpus(inputs: dict[str, Any]) -> tuple[TierCpu, dict[str, TierCpu] | None]:
    """The loadgen tier's CPU and, when several loadgen hosts shared the run (bench-inputs.json's
    loadgen_hosts_cpu: {host: {"start": sample, "end": sample}}), each one's; the tier's figure is
    then the busiest host's, the one that limits. With one host or none listed: the tier's samples."""
    hosts = inputs.get("loadgen_hosts_cpu") or {}
    if len(hosts) <= 1:
        return sample_cpu(inputs["cpu_start"]["loadgen"], inputs["cpu_end"]["loadgen"]), None
    by_host = {host: sample_cpu(samples["start"], samples["end"]) for host, samples in hosts.items()}
    return max(by_host.values(), key=lambda cpu: cpu.busy_fraction), by_host


def _unix(iso: str) -> float:
    return datetime.datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp()


def db_sessions(run_dir: Path) -> tuple[DbSessions | None, str]:
    """The DB's client sessions at the end of the window (roles/bench/tasks/db_sessions.yml)."""
    path = run_dir / "db-sessions.json"
    if not path.exists():
        return None, "the run recorded no DB sessions (db-sessions.json missing)"
    found = json.loads(path.read_text(encoding="utf-8"))
    sessions = found.get("sessions") or []
    if not sessions:
        return None, "no network session of the app's DB user was open at the end of the window"
    tls = sum(1 for s in sessions if s.get("tls"))
    return DbSessions(total=len(sessions), tls=tls), ""


def _observations(inputs: dict[str, Any], run_dir: Path, prometheus_url: str) -> tuple[Observations, str]:
    def tier_cpu(tier: str) -> TierCpu:
        return sample_cpu(inputs["cpu_start"][tier], inputs["cpu_end"][tier])

    loadgen_cpu, loadgen_hosts = loadgen_cpus(inputs)
    window = observe.Window(_unix(inputs["measure_started_at"]), _unix(inputs["measure_ended_at"]),
                            quiet_s=float(inputs.get("quiet_s", 0.0)))
    # Wait for every target's first scrape after the window and after its quiet time, and for the
    # DB's next one (observe.REST_READ_S: the lab's own statements at rest), with a margin.
    time.sleep(max(0.0, window.end + max(12.0, window.quiet_s + observe.REST_READ_S + 2.0) - time.time()))
    tier_cpus = {tier: (sample["host"], tuple(sample["cpus"])) for tier, sample in inputs["cpu_start"].items()}
    found = observe.observe(Prometheus(prometheus_url), window, inputs["deployment"]["app"], tier_cpus)
    sessions, sessions_reason = db_sessions(run_dir)
    unobserved = dict(found.unobserved)
    if sessions is None:
        unobserved["db_sessions"] = sessions_reason
    version = re.search(r"(MariaDB|MySQL)?\S*\s+Ver\s+([0-9.]+)(-MariaDB)?", inputs["versions"].get("database") or "")
    database = (f"{'MariaDB' if version.group(3) or version.group(1) == 'MariaDB' else 'MySQL'} {version.group(2)}"
                if version else "the database")
    observations = Observations(
        source=f"cgroup cpu.stat of each tier's host, sampled by playbooks/bench.yml around the measured phase, "
               f"and Prometheus at {prometheus_url} "
               f"({inputs['measure_started_at']} .. {inputs['measure_ended_at']})",
        loadgen_cpu=loadgen_cpu,
        loadgen_hosts=loadgen_hosts,
        app_cpu=tier_cpu("app"),
        db_cpu=tier_cpu("db"),
        db_disk_busy=found.db_disk_busy,
        db_name=f"{database} on {inputs['cpu_start']['db']['host']}",
        placements=tuple(
            Placement(tier=tier, host=sample["host"], machine=sample["machine"], cpus=tuple(sample["cpus"]))
            for tier, sample in inputs["cpu_start"].items()
        ),
        warmup_s=float(inputs["run"]["warmup_s"]),
        write_share_by_third=found.write_share_by_third,
        db_sessions=sessions,
        statements_per_request=found.statements_per_request,
        expected_statements_per_request=found.expected_statements_per_request,
        jit_compile_s=found.jit_compile_s,
        app_max_rss_bytes=found.app_max_rss_bytes,
        cpus_busy=found.cpus_busy,
        saturation=found.saturation,
        unobserved=unobserved,
    )
    allotted = {tier: float(len(sample["cpus"])) for tier, sample in inputs["cpu_start"].items()}
    return observations, _utilization(prometheus_url, window, run_dir, allotted)


def _utilization(prometheus_url: str, window: observe.Window, run_dir: Path, allotted: dict[str, float]) -> str:
    """utilization.json (docs/ARCHITECTURE.md); absent when Prometheus had no data. Says what it did."""
    target = run_dir / "utilization.json"
    try:
        series = observe.utilization(Prometheus(prometheus_url), window, allotted)
    except PrometheusError as error:
        target.unlink(missing_ok=True)
        return f"utilization.json not written: {error}"
    if not series:
        target.unlink(missing_ok=True)
        return "utilization.json not written: Prometheus had no per-tier CPU or memory in the window"
    document = {
        "schema_version": 1, "source": prometheus_url, "start": window.start, "end": window.end, "step_s": 5.0,
        "tiers": {tier: {"allotted_cores": s.allotted_cores, "busy_cores": [list(p) for p in s.busy_cores],
                         "memory_bytes": [list(p) for p in s.memory_bytes]} for tier, s in series.items()},
    }
    target.write_text(json.dumps(document) + "\n", encoding="utf-8")
    return f"utilization.json: {', '.join(series)}"


def _attribute(run_dir: Path) -> int:
    run = RunResult.from_json((run_dir / "result.json").read_text(encoding="utf-8"))
    observations = Observations.from_json((run_dir / "observations.json").read_text(encoding="utf-8"))
    found = attribution.attribute(run, observations)
    (run_dir / "attribution.json").write_text(found.to_json(), encoding="utf-8")
    print(f"bottleneck: {found.sentence}")
    for line in found.evidence:
        print(f"  {line}")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("--prometheus", default=DEFAULT_URL, help="the lab's Prometheus (lab_prometheus_url)")
    parser.add_argument("--attribute", action="store_true", help="write attribution.json after the audit")
    args = parser.parse_args()
    run_dir: Path = args.run_dir
    if args.attribute:
        return _attribute(run_dir)
    inputs = json.loads((run_dir / "bench-inputs.json").read_text(encoding="utf-8"))
    (run_dir / "context.json").write_text(_context(inputs).to_json() + "\n", encoding="utf-8")
    observations, utilization_note = _observations(inputs, run_dir, args.prometheus)
    (run_dir / "observations.json").write_text(observations.to_json() + "\n", encoding="utf-8")
    print(json.dumps({tier: round(seconds, 3) for tier, seconds in cpu_seconds(inputs).items()}))
    print(utilization_note, file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
