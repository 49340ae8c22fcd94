"""perflab collect RUN_DIR: everything a bench run leaves on the controller, from one process.

From what playbooks/bench.yml gathered (bench-inputs.json, db-sessions.json), the tool's raw
output and what Prometheus saw over the measured window, it writes the run's files in order:
context.json, observations.json, utilization.json, result.json (the tool's output parsed, as
`perflab parse-<tool> --context` prints it), timeseries.json (vegeta: the run second by second,
perflab.timeseries, from the results just parsed and the warm-up's; wrk2: step by step from the app's
histogram in Prometheus), audit.json (the verdict),
attribution.json (the limiting tier) and status.json `complete`, then prints the result, the
verdict, the attribution and each tier's CPU seconds. A file it cannot read or parse stops it
with one line (exit 4) before status.json changes: the run stays marked incomplete, with
everything written so far kept. `perflab collect --timeseries RUN_DIR` writes timeseries.json
alone, for a run collected before perflab wrote it (a wrk2 run's while Prometheus still holds its window).

The parsing and judging helpers here are the ones `perflab parse-*` and `perflab judge` use.
"""
from __future__ import annotations

import argparse
import datetime
import json
import re
import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from perflab import attribution, audit, observe, profile, rundir, sent, timeseries, vegeta, wrk2
from perflab.errors import InputError
from perflab.model import (AppSettings, HostFacts, LatencyDistribution, ParseError, RunContext, Repetition, RunResult,
                           ScenarioRun, database_name)
from perflab.observations import DbSessions, Observations, Placement, TierCpu
from perflab.observe import Utilization
from perflab.prometheus import DEFAULT_URL, Prometheus, PrometheusError
from perflab.rundir import BenchInputs, CpuSample, RunFileError
from perflab.tiers import INSTRUMENT_GROUP, SERVICE_GROUPS

EXIT_COLLECTED = 0
EXIT_BAD_INPUT = 4


def read_text(path: Path) -> str:
    try:
        return read_bytes(path).decode("utf-8")
    except UnicodeDecodeError:
        raise InputError(f"{path}: not text (binary or not UTF-8)") from None


def read_bytes(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise InputError(f"{path}: is a directory, not a file") from None
    except OSError as exc:
        raise InputError(f"{path}: {exc.strerror}") from None


# ---------------------------------------------------------------------------------------------
# The tool's output -> a run result (perflab parse-wrk2, parse-vegeta)


def wrk2_result(files: Sequence[Path], tables: Sequence[Path], target_rate: float,
                shares: Sequence[tuple[str, float]] = ()) -> tuple[RunResult, list[str]]:
    """wrk2 --latency outputs, one per loadgen host, with their percentile tables (none, or one per
    file in the same order) -> one run result and the notes that say over which window it was achieved.
    shares: each host's name and rate, in the same order, where several hosts sent the run."""
    outputs = []
    for path in files:
        try:
            outputs.append(wrk2.parse(read_text(path)))
        except ParseError as exc:
            raise InputError(f"{path}: not complete wrk2 --latency output: {exc}") from None
    parsed_tables = []
    for output, path in zip(outputs, tables):
        try:
            table = wrk2.check_table(output, wrk2.parse_percentiles(read_text(path)))
        except ParseError as exc:
            raise InputError(f"{path}: not a usable wrk2 percentile table: {exc}") from None
        parsed_tables.append(table)
    if parsed_tables:
        result = wrk2.hosts_run_result(list(zip(outputs, parsed_tables)), target_rate=target_rate, shares=shares)
    else:
        result = wrk2.to_run_result(outputs[0], target_rate=target_rate)
    notes = []
    if len(parsed_tables) == 1:
        table, output = parsed_tables[0], outputs[0]
        notes.append(f"achieved over the {table.recorded_window_s:g} s recorded after calibration "
                     f"(the text's Requests/sec, over the whole invocation: {output.requests_per_sec:g})")
    elif parsed_tables:
        rates = " + ".join(f"{table.recorded_rate:g}" for table in parsed_tables)
        windows = ", ".join(f"{table.recorded_window_s:g}" for table in parsed_tables)
        texts = " + ".join(f"{output.requests_per_sec:g}" for output in outputs)
        notes.append(f"achieved: {rates} req/s, each host over its recorded window after calibration ({windows} s; "
                     f"the texts' Requests/sec, over the whole invocations: {texts})")
    return result, notes


def vegeta_attacks(files: Sequence[Path]) -> list[vegeta.Attack]:
    """vegeta results, one file per loadgen host, parsed."""
    attacks = []
    for path in files:
        try:
            attacks.append(vegeta.parse(read_bytes(path)))
        except ParseError as exc:
            raise InputError(f"{path}: not usable vegeta results: {exc}") from None
    return attacks


def vegeta_result(files: Sequence[Path], rates: Sequence[float], duration_s: float | None,
                  target_rate: float, attacks: Sequence[vegeta.Attack] | None = None,
                  hosts: Sequence[str] = ()) -> RunResult:
    """vegeta results, one file per loadgen host at its share of the rate (or their attacks,
    already parsed) -> one run result; hosts name the loadgen hosts where several sent the run."""
    if attacks is None:
        attacks = vegeta_attacks(files)
    try:
        return vegeta.to_run_result(attacks, list(rates), duration_s, target_rate, names=list(map(str, files)),
                                    hosts=hosts)
    except ParseError as exc:
        raise InputError(str(exc)) from None


def write_timeseries(run_dir: Path, files: Sequence[Path], rates: Sequence[float], duration_s: float,
                     warmup_s: float, attacks: Sequence[vegeta.Attack] | None = None) -> str:
    """timeseries.json of a vegeta run (perflab.timeseries): the measured phase from its results
    (or their attacks, already parsed) and the warm-up from vegeta-warmup*.jsonl.gz beside them,
    where the run has one; a warm-up that cannot be read is a note in the file, not a failure.
    Says what it wrote."""
    if attacks is None:
        attacks = vegeta_attacks(files)
    names = tuple(path.name for path in files)
    measure = timeseries.PhaseInput("measure", tuple(attacks), tuple(rates), names, duration_s)
    warmup, notes = None, []
    warmup_files = [path.with_name(path.name.replace("vegeta-measure", "vegeta-warmup", 1)) for path in files]
    series = None
    if warmup_s > 0 and all(path.is_file() for path in warmup_files):
        try:
            warmup = timeseries.PhaseInput("warmup", tuple(vegeta_attacks(warmup_files)), tuple(rates),
                                           tuple(path.name for path in warmup_files), warmup_s)
            series = timeseries.from_vegeta(measure, warmup)
        except (InputError, ParseError) as exc:
            notes.append(f"The warm-up is not shown: {exc}")
    if series is None:
        try:
            series = timeseries.from_vegeta(measure, None, notes)
        except ParseError as exc:
            raise InputError(str(exc)) from None
    rundir.write_timeseries(run_dir, series)
    measured = series.phase("measure")
    assert measured is not None
    warm = series.phase("warmup")
    return (f"{rundir.TIMESERIES}: {measured.seconds} s of the measured phase"
            + (f", {warm.seconds} s of warm-up" if warm is not None else ", no warm-up"))


def histogram_series(inputs: BenchInputs, prometheus_url: str) -> timeseries.TimeSeries:
    """A run whose generator keeps no request (wrk2), step by step from the app's histogram in
    Prometheus over the measured phase and the warm-up before it, at the scrape interval
    (perflab.timeseries). PrometheusError when it cannot answer; timeseries.NoHistogram when the app
    counted nothing on the scenario's routes (an app without the histogram: the report says so)."""
    window = observe.Window(_unix(inputs.measure_started_at), _unix(inputs.measure_ended_at),
                            quiet_s=inputs.quiet_s, scrape_interval_s=inputs.scrape_interval_s)
    phases = [timeseries.PhaseWindow("measure", window.start, window.seconds, inputs.run.scenario.rate)]
    if inputs.warmup_started_at is not None and inputs.run.warmup_s > 0:
        warmup_start = _unix(inputs.warmup_started_at)
        # It ran its invocation's seconds (bench-inputs.json keeps its end since the window is the
        # tool's interval); in inputs written before, until the quiet time before the window.
        warmup_s = (_unix(inputs.warmup_ended_at) if inputs.warmup_ended_at is not None
                    else window.start - window.quiet_s) - warmup_start
        if warmup_s > 0:
            phases.insert(0, timeseries.PhaseWindow("warmup", warmup_start, warmup_s, inputs.run.scenario.rate))
    return timeseries.from_app_histogram(Prometheus(prometheus_url), inputs.deployment.app,
                                         inputs.run.scenario.endpoints, phases, window.scrape_interval_s)


def write_histogram_timeseries(run_dir: Path, series: timeseries.TimeSeries) -> str:
    """timeseries.json from the app's histogram, written; says what it holds."""
    rundir.write_timeseries(run_dir, series)
    measured = series.phase("measure")
    assert measured is not None
    warm = series.phase("warmup")
    return (f"{rundir.TIMESERIES}: {measured.seconds} steps of {series.step_s:g} s of the measured phase from the "
            f"app's histogram" + (f", {warm.seconds} of warm-up" if warm is not None else ", no warm-up"))


def timeseries_of(run_dir: Path, prometheus_url: str = DEFAULT_URL) -> str:
    """`perflab collect --timeseries`: timeseries.json of a run already collected, from the files
    bench-inputs.json names, else from result.json's (one loadgen host); a wrk2 run's from the app's
    histogram in Prometheus, over the window bench-inputs.json gives. Says what it wrote."""
    try:
        if (run_dir / rundir.BENCH_INPUTS).exists():
            inputs = rundir.read_bench_inputs(run_dir)
            if inputs.run.tool == "wrk2":
                try:
                    return write_histogram_timeseries(run_dir, histogram_series(inputs, prometheus_url))
                except (PrometheusError, timeseries.NoHistogram) as exc:
                    raise InputError(f"{run_dir}: a wrk2 run, its series from the app's histogram: {exc}") from None
            tool, names = inputs.run.tool, list(inputs.measured_files)
            duration_s, warmup_s = inputs.run.duration_s, inputs.run.warmup_s
            rates = host_rates(inputs)
        else:
            result = rundir.read_result(run_dir)
            tool, names = result.tool, [result.raw_output or ""]
            rates, duration_s = [result.target_rate], result.duration_s
            warmup_s = result.scenario.warmup_s if result.scenario is not None else 0.0
    except RunFileError as exc:
        raise InputError(str(exc)) from None
    if tool != "vegeta":
        raise InputError(f"{run_dir}: a {tool} run without {rundir.BENCH_INPUTS}: its series come from the app's "
                         "histogram in Prometheus, over the window that file gives (wrk2 keeps no request)")
    return write_timeseries(run_dir, [run_dir / name for name in names], rates, duration_s, warmup_s)


def host_rates(inputs: BenchInputs) -> list[float]:
    """Each loadgen host's share of the rate, in measured_files' order: as the bench split it, else equal shares."""
    hosts = len(inputs.measured_files)
    return list(inputs.run.host_rates) or [inputs.run.scenario.rate / hosts] * hosts


def with_context(result: RunResult, context_file: Path) -> RunResult:
    try:
        return result.with_context(rundir.load_context(context_file))
    except RunFileError as exc:
        raise InputError(str(exc)) from None


def result_text(name: str, result: RunResult, notes: Sequence[str] = ()) -> str:
    """What `perflab parse-*` prints: the requests, the rate achieved, the latencies, the errors."""
    lines = [
        f"{name}: {result.tool}, {result.requests} requests in {result.duration_s:g} s",
        f"rate: {result.achieved_rate:g} req/s achieved of {result.target_rate:g} asked "
        f"({result.achieved_rate / result.target_rate:.1%})",
        *notes,
        _latency_line("latency (corrected, ms)", result.latency_corrected),
    ]
    if result.latency_uncorrected is not None:
        lines.append(_latency_line("latency (uncorrected, ms)", result.latency_uncorrected))
    recorded = result.latency_corrected.total_count
    if result.tool == "wrk2" and recorded is not None:
        lines.append(f"recorded: {recorded} of {result.requests} requests (wrk2 records none during calibration)")
    if result.dropped_iterations:
        lines.append(f"dropped iterations: {result.dropped_iterations}")
    kinds = result.errors.by_kind()
    lines.append("errors: " + (", ".join(f"{k} {n}" for k, n in kinds.items()) if kinds else "none"))
    return "\n".join(lines)


def _latency_line(label: str, latency: LatencyDistribution) -> str:
    values = "  ".join(f"p{key} {value:g}" for key, value in latency.percentiles_ms.items())
    return f"{label}: {values}  mean {latency.mean_ms:g}  max {latency.max_ms:g}"


# ---------------------------------------------------------------------------------------------
# The verdict (perflab judge)


def verdict_text(verdict: audit.Verdict) -> str:
    """The verdict, then every rule, the failed ones first, then the app's cost."""
    order = [audit.Status.INVALID, audit.Status.WARN, audit.Status.VALID, audit.Status.NOT_EVALUATED]
    lines = [f"verdict: {verdict.status.value}"]
    lines += [f"  {rule.status.value:<13} {rule.rule}: {rule.evidence}"
              for rule in sorted(verdict.rules, key=lambda r: order.index(r.status))]
    lines.append(f"app cost: {verdict.app_cost}")
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------
# What the plays gathered and Prometheus saw -> context.json, observations.json, utilization.json


# Environment variables of the tool that are plumbing rather than the workload.
_PLUMBING = ("PERFLAB_PERCENTILES",)


def context(inputs: BenchInputs) -> RunContext:
    run = inputs.run
    scenario = run.scenario
    measure = run.phases.get("measure")
    environment = measure.environment if measure is not None else {}
    parameters = {k: str(v) for k, v in environment.items() if not k.startswith(_PLUMBING)}
    parameters.update(tool=run.tool, tool_reason=run.tool_reason, target_url=run.target_url,
                      db_delay_ms=str(inputs.db_delay_ms))
    if inputs.db_cpu_hog:
        # The DB slowed by its own host: busy loops on it during the measured phase (DB_CPU_HOG).
        parameters["db_cpu_hog"] = str(inputs.db_cpu_hog)
    if inputs.start_skew_ms is not None:
        # How far apart the loadgen hosts started, against the instant they agreed on.
        parameters["start_skew_ms"] = str(inputs.start_skew_ms)
    if inputs.start_late_ms is not None:
        # How late the tool started against the window's agreed start: its first milliseconds without load.
        parameters["start_late_ms"] = str(inputs.start_late_ms)
    if len(run.host_rates) > 1:
        # Each loadgen host's share of the rate, in the inventory's order ("50,50", as --host-rates takes them).
        parameters["host_rates"] = ",".join(
            str(int(rate)) if rate.is_integer() else str(rate) for rate in run.host_rates)
    if run.scenario.max_workers is not None:
        # vegeta's -max-workers as sized to the loadgen host: past it, vegeta sends late.
        parameters["vegeta_max_workers"] = str(run.scenario.max_workers)
    if run.timeout_s is not None:
        # How long a request may wait for its answer before the tool counts it a timeout (both tools).
        parameters["timeout_s"] = f"{run.timeout_s:g}"
    if run.calibration_ms > 0:
        # wrk2 records nothing in its calibration: the measured invocation ran that much longer.
        parameters["wrk2_calibration_ms"] = str(run.calibration_ms)
        recorded_from = _unix(inputs.measure_started_at) + run.calibration_ms / 1000
        parameters["recorded_window"] = (
            f"{datetime.datetime.fromtimestamp(recorded_from, datetime.timezone.utc).strftime('%Y-%m-%dT%H:%M:%SZ')}"
            f" .. {inputs.measure_ended_at}")
    deployment = inputs.deployment
    memory = deployment.memory_max_mb
    machines = {tier: sample.machine for tier, sample in inputs.cpu_start.items()}
    hosts = []
    for tier, names in inputs.tiers.items():
        for name in names:
            facts = inputs.hosts.get(name) or rundir.HostInputs()
            hosts.append(HostFacts(
                tier=tier, host=name, machine=machines.get(tier) if name == inputs.cpu_start[tier].host else None,
                cpus=int(facts.cpus) if facts.cpus else None,
                memory_mb=int(facts.memory_mb) if facts.memory_mb else None,
                os=facts.os or None, kernel=facts.kernel or None,
            ))
    return RunContext(
        started_at=inputs.measure_started_at,
        ended_at=inputs.measure_ended_at,
        scenario=ScenarioRun(
            name=scenario.name, rate=scenario.rate, duration_s=run.duration_s, warmup_s=run.warmup_s,
            connections=scenario.connections, threads=scenario.threads, parameters=parameters,
            slo_p99_ms=scenario.slo_p99_ms, scenario_warmup_s=run.scenario_warmup_s,
        ),
        app=AppSettings(
            name=deployment.app, profile=deployment.profile,
            jvm_options=deployment.jvm_opts,
            environment={k: str(v) for k, v in deployment.env.items()},
            cpus=",".join(str(c) for c in deployment.cpu_affinity) or None,
            memory_limit=f"{memory} MB" if memory not in (None, "", "None") else None,
            start_to_first_request_ms=deployment.start_to_ready_ms,
            cpu_quota_percent=deployment.cpu_quota_percent,
        ),
        hosts=tuple(hosts),
        versions={k: v for k, v in inputs.versions.items() if v},
        raw_output=inputs.raw_output,
        repetition=_repetition(inputs.repetition),
    )


def _repetition(given: dict[str, str | int]) -> Repetition | None:
    """bench_repetition as bench-inputs.json keeps it ({}: a run made once)."""
    if not given:
        return None
    return Repetition(group=str(given["group"]), index=int(given["index"]), of=int(given["of"]))


def cpu_seconds(inputs: BenchInputs) -> dict[str, float]:
    """CPU seconds each tier's host used between the two samples around the measured phase."""
    return {tier: (inputs.cpu_end[tier].usage_usec - start.usage_usec) / 1e6 for tier, start in inputs.cpu_start.items()}


def sample_cpu(start: CpuSample, end: CpuSample, window_s: float | None = None) -> TierCpu:
    """The CPU a host used between two cgroup samples: its busy cores over the seconds between
    them, against the CPUs it may use. The samples are read at the measured window's bounds
    (roles/bench/files/cpu_window.py); a sampler launched after the window opened read at once, a
    part of the window under the same load: its busy cores stand for the window's, and WINDOW_S
    (the window's seconds) is what they average over. Without it, the seconds between the samples."""
    sampled_s = max(end.at - start.at, 1e-3)
    used_s = (end.usage_usec - start.usage_usec) / 1e6
    busy = used_s / sampled_s
    return TierCpu(busy_cores=busy, allotted_cores=len(start.cpus), window_s=window_s or sampled_s,
                   instrument_cores=_instrument_cores(start, end, sampled_s, busy))


def _instrument_cores(start: CpuSample, end: CpuSample, sampled_s: float, busy: float) -> float | None:
    """The lab's exporters' cores on the host between its two samples (tiers.INSTRUMENT_GROUP's run time), at most
    the host's busy cores (both are read a scan apart); None where a sample has none (no process-exporter found,
    samples from before they were kept) or they went down (an exporter restarted in the window)."""
    if INSTRUMENT_GROUP not in start.used_usec or INSTRUMENT_GROUP not in end.used_usec:
        return None
    ran_s = (end.used_usec[INSTRUMENT_GROUP] - start.used_usec[INSTRUMENT_GROUP]) / 1e6
    return min(ran_s / sampled_s, busy) if ran_s >= 0 else None


def service_waited(inputs: BenchInputs) -> tuple[dict[str, float] | None, str]:
    """Per tier, the seconds per second its own service's threads (perflab.tiers.SERVICE_GROUPS) waited for a
    CPU between the window's samples; the tiers whose waits were not read are left out, and where none was
    read, why. Of several loadgen hosts, the one whose CPU is the tier's figure (loadgen_cpus: the busiest)."""
    waited: dict[str, float] = {}
    samples = {tier: (start, inputs.cpu_end[tier]) for tier, start in inputs.cpu_start.items()}
    if len(inputs.loadgen_hosts_cpu) > 1:
        busiest = max(inputs.loadgen_hosts_cpu.values(),
                      key=lambda host: sample_cpu(host.start, host.end, window_s(inputs)).busy_fraction)
        samples["loadgen"] = (busiest.start, busiest.end)
    for tier, (start, end) in samples.items():
        groups = [g for g in start.waited_usec if g in end.waited_usec and re.fullmatch(SERVICE_GROUPS.get(tier, ""), g)]
        delta = sum(end.waited_usec[g] - start.waited_usec[g] for g in groups)
        if groups and delta >= 0:  # a service restarted in the window lost its threads' waits: not read
            waited[tier] = delta / 1e6 / max(end.at - start.at, 1e-3)
    if waited:
        return waited, ""
    return None, ("no tier's service's run delay was read at the window's bounds: cpu_window.py found no running "
                  "process-exporter whose JSON config it reads (a lab set up before it was JSON: make lab-up), the "
                  "kernel keeps no schedstat, or each service restarted in the window")


def window_s(inputs: BenchInputs) -> float:
    """The measured window's seconds: the tool's own interval (docs/ARCHITECTURE.md)."""
    return _unix(inputs.measure_ended_at) - _unix(inputs.measure_started_at)


def app_cpu(inputs: BenchInputs) -> TierCpu:
    """The app host's CPU, against what the app may use: its profile's CPUs (the unit's affinity,
    where the deployment records it) times its quota (CPUQuota=, PROFILE=app-bound's quarter of a
    CPU), not the host's: an app throttled at a quarter of a core is saturated at 0.25 busy cores."""
    sampled = sample_cpu(inputs.cpu_start["app"], inputs.cpu_end["app"], window_s(inputs))
    deployment = inputs.deployment
    cpus = len(deployment.cpu_affinity) or sampled.allotted_cores
    quota = deployment.cpu_quota_percent
    allotted = min(cpus, sampled.allotted_cores) * (quota / 100 if quota else 1.0)
    return replace(sampled, allotted_cores=allotted)


def loadgen_cpus(inputs: BenchInputs) -> tuple[TierCpu, dict[str, TierCpu] | None]:
    """The loadgen tier's CPU and, when several loadgen hosts shared the run (bench-inputs.json's
    loadgen_hosts_cpu), each one's; the tier's figure is then the busiest host's, the one that
    limits. With one host or none listed: the tier's samples."""
    hosts = inputs.loadgen_hosts_cpu
    if len(hosts) <= 1:
        return sample_cpu(inputs.cpu_start["loadgen"], inputs.cpu_end["loadgen"], window_s(inputs)), None
    by_host = {host: sample_cpu(samples.start, samples.end, window_s(inputs)) for host, samples in hosts.items()}
    return max(by_host.values(), key=lambda cpu: cpu.busy_fraction), by_host


def _unix(iso: str) -> float:
    return datetime.datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp()


def db_sessions(run_dir: Path) -> tuple[DbSessions | None, str]:
    """The DB's client sessions at the end of the window (roles/bench/tasks/db_sessions.yml); where
    the DB did not answer, the bench wrote why instead."""
    if not (run_dir / rundir.DB_SESSIONS).exists():
        return None, f"the run recorded no DB sessions ({rundir.DB_SESSIONS} missing)"
    try:
        found = rundir.read_db_sessions(run_dir)
    except RunFileError as exc:
        raise InputError(str(exc)) from None
    if found.unavailable is not None:
        return None, f"the DB's sessions could not be listed: {found.unavailable}"
    if not found.sessions:
        return None, "no network session of the app's DB user was open at the end of the window"
    return DbSessions(total=len(found.sessions), tls=sum(1 for s in found.sessions if s.tls)), ""


def requests_sent(inputs: BenchInputs, files: Sequence[Path], attacks: Sequence[vegeta.Attack] | None,
                  result: RunResult) -> sent.Sent | str:
    """The requests the loadgen sent in the window by type and third (perflab.sent), or why they are not
    counted: what the mix and the statements per request are counted on where the app counts none."""
    errors = result.errors.total()
    if errors:
        return (f"the run had {errors} errors, and the loadgen counts the requests it sent, not what the app ran "
                "of them")
    requests = inputs.run.scenario.requests
    start, end = _unix(inputs.measure_started_at), _unix(inputs.measure_ended_at)
    try:
        if inputs.run.tool == "wrk2":
            return sent.from_wrk2([read_text(path) for path in files], requests, start, end - start, result.requests)
        return sent.from_vegeta(attacks or vegeta_attacks(files), requests, start, end - start)
    except sent.NotCounted as exc:
        return str(exc)


def _observations(inputs: BenchInputs, run_dir: Path, prometheus_url: str,
                  sent_requests: observe.CountSent | None = None) -> tuple[Observations, str]:
    """The run's observations (the bench's CPU samples and DB sessions, then what Prometheus saw)
    and utilization.json, written; says what became of the latter. SENT_REQUESTS: requests_sent's."""
    loadgen_cpu, loadgen_hosts = loadgen_cpus(inputs)
    # Wait until Prometheus has scraped every target read at rest after the window, and the DB once
    # more (the lab's own statements at rest).
    window = observe.settle(Prometheus(prometheus_url), observe.Window(
        _unix(inputs.measure_started_at), _unix(inputs.measure_ended_at),
        quiet_s=inputs.quiet_s, scrape_interval_s=inputs.scrape_interval_s))
    rest = (f"at rest {window.at_rest - window.end:.1f} s after its end (each target's first scrape after the load), "
            f"the DB again {window.at_rest_later - window.end:.1f} s after it" if window.rest_at is not None else
            f"at rest {window.at_rest - window.end:.1f} s after its end (fixed: Prometheus did not show each "
            f"target's scrape after the load within {window.settled_s:.0f} s)")
    sessions, sessions_reason = db_sessions(run_dir)
    database = database_name(inputs.versions.get("database") or "")
    sampled = Observations(
        source=f"cgroup cpu.stat of each tier's host, read at the measured window's bounds (cpu_window.py), "
               f"and Prometheus at {prometheus_url} "
               f"({inputs.measure_started_at} .. {inputs.measure_ended_at}; its counters {rest})",
        loadgen_cpu=loadgen_cpu,
        loadgen_hosts=loadgen_hosts,
        app_cpu=app_cpu(inputs),
        db_cpu=sample_cpu(inputs.cpu_start["db"], inputs.cpu_end["db"], window_s(inputs)),
        db_name=f"{database} on {inputs.cpu_start['db'].host}",
        placements=tuple(Placement(tier=tier, host=sample.host, machine=sample.machine, cpus=sample.cpus)
                         for tier, sample in inputs.cpu_start.items()),
        warmup_s=inputs.run.warmup_s,
        db_sessions=sessions,
        load_start_late_ms=None if inputs.start_late_ms is None else float(inputs.start_late_ms),
        load_start_skew_ms=None if inputs.start_skew_ms is None else float(inputs.start_skew_ms),
    )
    tier_cpus = {tier: (sample.host, sample.cpus) for tier, sample in inputs.cpu_start.items()}
    # The statements per request to expect: the scenario's requests' own, over the contract's table.
    statements = observe.statements_table(inputs.run.scenario.requests)
    observations = observe.observe(Prometheus(prometheus_url), window, inputs.deployment.app, tier_cpus, sampled,
                                   inputs.run.scenario.endpoints, statements, sent_requests)
    waited, waited_reason = service_waited(inputs)
    observations = replace(observations, service_waited=waited)
    if waited is None:
        observations = replace(observations, unobserved={**observations.unobserved, "service_waited": waited_reason})
    if sessions is None:  # after Prometheus' reasons, where the rules' evidence has always listed it
        observations = replace(observations, unobserved={**observations.unobserved, "db_sessions": sessions_reason})
    if inputs.start_late_ms is None:
        observations = replace(observations, unobserved={
            **observations.unobserved,
            "load_start_late_ms": "the bench recorded no start of the load against the window (inputs written before it did)"})
    allotted = {tier: float(len(sample.cpus)) for tier, sample in inputs.cpu_start.items()}
    allotted["app"] = app_cpu(inputs).allotted_cores
    return observations, _utilization(prometheus_url, window, run_dir, allotted)


def _utilization(prometheus_url: str, window: observe.Window, run_dir: Path, allotted: dict[str, float]) -> str:
    """utilization.json (docs/ARCHITECTURE.md); absent when Prometheus had no data. Says what it did."""
    try:
        utilization = observe.utilization(Prometheus(prometheus_url), window, allotted)
    except PrometheusError as error:
        rundir.write_utilization(run_dir, None)
        return f"utilization.json not written: {error}"
    rundir.write_utilization(run_dir, utilization)
    if utilization is None:
        return "utilization.json not written: Prometheus had no per-tier CPU or memory in the window"
    return f"utilization.json: {', '.join(utilization.tiers)}"


def with_warmup_end(observations: Observations, run_dir: Path) -> Observations:
    """The observations with the warm-up's last seconds from the run's timeseries.json (the audit's
    warmed_up judges whether they settled), or why they are not known."""
    if not (run_dir / rundir.TIMESERIES).exists():
        end, why = None, f"{rundir.TIMESERIES} was not written (the collection's output says why)"
    else:
        try:
            end, why = timeseries.warmup_end(rundir.read_timeseries(run_dir), audit.THRESHOLDS.warmup_settled_s.value)
        except RunFileError as exc:
            end, why = None, str(exc)
    if end is None:
        return replace(observations, unobserved={**observations.unobserved, "warmup_end": why})
    return replace(observations, warmup_end=end)


def profile_mode(run_dir: Path) -> str:
    """What the run's profile sampled ("cpu (perf_events)", profile-window.json's), or "" where it does not say."""
    try:
        return rundir.read_profile_mode(run_dir) if (run_dir / rundir.PROFILE_WINDOW).exists() else ""
    except RunFileError:
        return ""


def with_profiled_jit(observations: Observations, summary: profile.ProfileSummary | None, mode: str,
                      duration_s: float) -> Observations:
    """The observations with the JIT's seconds in the window from the app's CPU profile, where the app exports no
    compile time (Quarkus) or no metrics at all (TechEmpower's apps): its JIT compiler threads' share of the
    samples times the CPU its service used over the window. A CPU profile samples by CPU time, so the share is one
    of its CPU. Any other mode (alloc, lock, wall), no service CPU observed, or a JIT time unobserved for another
    reason (the app's counters reset: its JVM restarted in the window) leaves them as they were."""
    why = observations.unobserved.get("jit_compile_s", "")
    exports_none = why.endswith(observe.NO_JIT_METRIC) or why.startswith(observe.NO_APP_METRICS)
    if not exports_none or summary is None or not summary.samples or not mode.startswith("cpu "):
        return observations
    cores = (observations.service_cpu or {}).get("app")
    if cores is None or duration_s <= 0:
        return observations
    jit = next((entry for entry in summary.layers if entry.layer == "jit"), None)
    share = jit.samples / summary.samples if jit is not None else 0.0
    cpu_s = cores * duration_s
    unobserved = {key: reason for key, reason in observations.unobserved.items() if key != "jit_compile_s"}
    return replace(observations, jit_compile_s=round(share * cpu_s, 3), unobserved=unobserved,
                   jit_counted_by=(f"the app's profile, {mode}: its JIT compiler threads {share:.0%} of its "
                                   f"{summary.samples} samples, of {cpu_s:.1f} CPU-s"))


def utilization_of(run_dir: Path) -> Utilization | None:
    """utilization.json as _observations wrote it (each tier's busy cores every scrape, for the attribution's
    stretches); None where Prometheus had none."""
    if not (run_dir / rundir.UTILIZATION).exists():
        return None
    try:
        return rundir.read_utilization(run_dir)
    except RunFileError as exc:
        raise InputError(str(exc)) from None


def attribution_text(found: attribution.Attribution) -> str:
    return "\n".join([f"bottleneck: {found.sentence}", *(f"  {line}" for line in found.evidence)])


def profile_of(run_dir: Path) -> tuple[profile.ProfileSummary | None, str]:
    """profile-summary.json from the app's collapsed stacks over the window (PROFILE_APP=cpu|alloc|lock|wall,
    roles/bench/tasks/profile_fetch.yml), and one line on what was done ("": no profile was asked for)."""
    collapsed = run_dir / rundir.PROFILE_COLLAPSED
    if (run_dir / rundir.PROFILE_ERROR).exists():
        return None, f"the app was not profiled: {rundir.read_profile_error(run_dir)}"
    if not collapsed.exists():
        return None, ""
    try:
        summary = profile.summarize(profile.read_collapsed(collapsed), collapsed.name)
    except profile.ProfileError as exc:
        return None, f"{rundir.PROFILE_SUMMARY} not written: {exc}"
    rundir.write_profile_summary(run_dir, summary)
    shares = profile.percentages([entry.samples for entry in summary.layers])
    top = sorted(zip(summary.layers, shares), key=lambda pair: -pair[0].samples)[:3]
    return summary, (f"the app's profile ({summary.samples} samples, {rundir.FLAME_GRAPH}): "
                     + ", ".join(f"{share:.0f}% {entry.title}" for entry, share in top if entry.samples))


def collect(run_dir: Path, prometheus_url: str) -> str:
    """Write every file of the run in order (see the module's docstring); returns what to print."""
    try:
        inputs = rundir.read_bench_inputs(run_dir)
    except RunFileError as exc:
        raise InputError(str(exc)) from None
    run = inputs.run
    run_context = context(inputs)
    rundir.write_context(run_dir, run_context)

    files = [run_dir / name for name in inputs.measured_files]
    notes: list[str] = []
    rates = host_rates(inputs)
    # Several loadgen hosts (run.hosts, in the order of the raw files): each one's share is judged too.
    hosts = list(run.hosts) if len(files) > 1 else []
    attacks = None
    if run.tool == "wrk2":
        result, notes = wrk2_result(files, [run_dir / name for name in inputs.percentile_files], run.scenario.rate,
                                    shares=list(zip(hosts, rates)))
    else:
        attacks = vegeta_attacks(files)
        result = vegeta_result(files, rates, run.duration_s, run.scenario.rate, attacks, hosts=hosts)
    result = result.with_context(run_context)
    observations, utilization_note = _observations(inputs, run_dir, prometheus_url,
                                                   lambda: requests_sent(inputs, files, attacks, result))
    rundir.write_result(run_dir, result)
    if run.tool == "wrk2":
        try:
            timeseries_note = write_histogram_timeseries(run_dir, histogram_series(inputs, prometheus_url))
        except (PrometheusError, timeseries.NoHistogram) as exc:
            timeseries_note = f"{rundir.TIMESERIES} not written: {exc}"
    else:
        timeseries_note = write_timeseries(run_dir, files, host_rates(inputs), run.duration_s, run.warmup_s, attacks)

    observations = with_warmup_end(observations, run_dir)
    app_profile, profile_note = profile_of(run_dir)
    if app_profile is not None:
        observations = with_profiled_jit(observations, app_profile, profile_mode(run_dir), result.duration_s)
    rundir.write_observations(run_dir, observations)
    utilization = utilization_of(run_dir)
    verdict = audit.audit(result, observations, db_stretches=attribution.db_stretches(utilization))
    rundir.write_audit(run_dir, verdict)
    found = attribution.attribute(result, observations, utilization=utilization)
    if app_profile is not None:
        found = attribution.with_app_layers(found, app_profile.layers)
    rundir.write_attribution(run_dir, found)
    rundir.write_status(run_dir, rundir.RunStatus(
        status="complete", run_id=inputs.run_id, verdict=verdict.status,
        started_at=inputs.measure_started_at, ended_at=inputs.measure_ended_at))

    seconds = cpu_seconds(inputs)
    loadgen_per_1000 = seconds.get("loadgen", 0.0) * 1000 / max(result.requests, 1)
    return "\n".join([
        result_text(" + ".join(path.name for path in files), result, notes),
        verdict_text(verdict),
        attribution_text(found),
        utilization_note,
        timeseries_note,
        *([profile_note] if profile_note else []),
        f"CPU seconds in the measured phase by tier: {json.dumps({t: round(s, 3) for t, s in seconds.items()})}; "
        f"loadgen per 1000 requests: {loadgen_per_1000:.3f}",
    ])


# ---------------------------------------------------------------------------------------------
# The command


def _given_inputs(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(f"{path}: {exc.strerror or exc}") from None


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add `perflab collect` to the CLI."""
    sub = commands.add_parser(
        "collect", help="a bench run's files from what it gathered: context, observations, result, verdict, attribution",
        description="Write a bench run's context.json, observations.json, utilization.json, result.json, "
                    "timeseries.json, audit.json, attribution.json and status.json (complete) from its "
                    "bench-inputs.json, the tool's raw output and Prometheus; print the result, the verdict and the "
                    "attribution. With --timeseries, write timeseries.json alone, for a run collected before "
                    "perflab wrote it.",
        epilog="exit codes: 0 collected (whatever the verdict: status.json has it); 4 bad input (one line says "
               "which file and why; status.json is left as it was)",
    )
    sub.add_argument("run_dir", type=Path, metavar="RUN_DIR", help="results/<run id>/ with bench-inputs.json")
    sub.add_argument("--prometheus", default=DEFAULT_URL, metavar="URL", help="the lab's Prometheus (lab_prometheus_url)")
    sub.add_argument("--inputs", metavar="FILE",
                     help="write RUN_DIR's bench-inputs.json first, from FILE (- for standard input): what the bench's plays "
                          "gathered, in the command that reads it")
    sub.add_argument("--timeseries", action="store_true",
                     help="write timeseries.json alone for a run already collected: vegeta's from its raw results, "
                          "wrk2's from the app's histogram in Prometheus (--prometheus)")
    sub.set_defaults(command=_collect)


def _collect(args: argparse.Namespace) -> int:
    try:
        if args.inputs is not None:
            given = sys.stdin.read() if args.inputs == "-" else _given_inputs(Path(args.inputs))
            rundir.write_bench_inputs(args.run_dir, given)
        print(timeseries_of(args.run_dir, args.prometheus) if args.timeseries else collect(args.run_dir, args.prometheus))
    except InputError as exc:
        print(f"perflab collect: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    return EXIT_COLLECTED
