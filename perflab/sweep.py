"""A sweep: the highest rate an app sustains under a p99 SLO, and its latency-throughput curve.

`perflab sweep` runs one normal benchmark per rate (playbooks/bench.yml, each in its own
results/<run-id>/), in increasing order, and stops at the first step that is not sustainable:
a run that did not complete, an audit verdict INVALID, or a corrected p99 above the SLO (judged
by the audit's rule slo_p99). The last sustainable step before it is the maximum sustainable
throughput, and it is the app's only when the app limited the step that failed (its
attribution.json names the tier): when another tier did, or none is named, the sweep says it was
limited by that tier and that the app's maximum is above it. The SLO is the scenario's
`slo_p99_ms` (as the bench loaded it, from bench-inputs.json) unless --slo-p99-ms overrides it.
Everything lands in results/<UTC>-<app>-<scenario>-sweep/sweep.json (perflab.rundir.Sweep,
docs/ARCHITECTURE.md "A sweep"); the file is rewritten after every step, so an interrupted sweep
keeps the steps it made.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import math
import os
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from perflab import audit as judge
from perflab import manifest, repetitions, rundir
from perflab.rundir import RunFileError, Step, Sweep
from perflab.scenario import label as scenario_label

# A typo in START/STEP/MAX must not queue hours of runs.
MAX_STEPS = 50

EXIT_DONE = 0  # the sweep found the limit or ran every step
EXIT_RUN_FAILED = 1  # a step's run did not complete: the lab, not the app, stopped the sweep
EXIT_USAGE = 2
EXIT_REFUSED = 4  # the bench refused the input before any run started

# sweep.json's limited_by when the failing step's attribution names no tier (or there is none).
UNKNOWN_TIER = "unknown"
APP_TIER = "app"

ROOT = Path(__file__).resolve().parent.parent


class SweepInputError(ValueError):
    """Rates or an SLO the sweep cannot use; the message says what to change."""


def parse_rates(text: str) -> list[int]:
    """RATES="100 200 400" (or comma-separated): whole numbers > 0, run in increasing order."""
    words = text.replace(",", " ").split()
    if not words:
        raise SweepInputError("RATES is empty: give whole numbers of requests per second, e.g. RATES=\"100 200 400\"")
    bad = [w for w in words if not w.isdigit() or int(w) == 0]
    if bad:
        raise SweepInputError(f"RATES must be whole numbers of requests per second > 0, got {' '.join(bad)!r}")
    return _checked(sorted({int(w) for w in words}))


def stepped_rates(start: int, step: int, maximum: int) -> list[int]:
    """START, START+STEP, ... up to MAX included."""
    if start <= 0 or step <= 0 or maximum < start:
        raise SweepInputError(
            f"START and STEP must be whole numbers > 0 and MAX >= START, got START={start} STEP={step} MAX={maximum}"
        )
    return _checked(list(range(start, maximum + 1, step)))


def _checked(rates: list[int]) -> list[int]:
    if len(rates) > MAX_STEPS:
        raise SweepInputError(
            f"{len(rates)} steps ({rates[0]}..{rates[-1]} req/s) is more than {MAX_STEPS}: use a larger STEP or fewer RATES"
        )
    return rates


def scenario_slo(run_dir: Path) -> float | None:
    """The p99 SLO of the scenario as the bench ran it (bench-inputs.json), None when unknown."""
    try:
        value = rundir.read_bench_inputs(run_dir).run.scenario.slo_p99_ms
    except RunFileError:
        return None
    return value if value is not None and math.isfinite(value) and value > 0 else None


def _attribution(run_dir: Path) -> tuple[str | None, str | None]:
    """The limiting tier and the sentence of the run's attribution.json; None, None without one."""
    try:
        found = rundir.read_attribution(run_dir)
    except RunFileError:
        return None, None
    return found.limiting_tier or None, found.sentence


def read_step(rate: int, run_dir: Path, slo_p99_ms: float | None) -> Step:
    """Judge one step from its run directory: status.json, result.json, audit.json, attribution.json.

    The SLO is judged by the audit's rule slo_p99 against the sweep's SLO (the one the bench ran
    with), so its INVALID outcome in audit.json is no problem of its own: within_slo says it."""
    limiting_tier, attribution = _attribution(run_dir)
    try:
        status = rundir.read_status(run_dir)
    except RunFileError:
        status = None
    if status is None or status.status != "complete":
        why = "no readable status.json"
        if status is not None:
            why = f"{status.failed_step or 'not finished'}: {' '.join((status.reason or '').split())}"
        return Step(rate, run_dir.name, "incomplete", None, None, None, False, problem=why[:300],
                    limiting_tier=limiting_tier, attribution=attribution)
    try:
        result = rundir.read_result(run_dir)
    except RunFileError as exc:
        return Step(rate, run_dir.name, "incomplete", None, None, None, False, problem=exc.short[:300],
                    limiting_tier=limiting_tier, attribution=attribution)
    try:
        audit: judge.Verdict | None = rundir.read_audit(run_dir)
    except RunFileError:
        audit = None
    percentiles = result.latency_corrected.percentiles_ms
    p99 = percentiles.get("99")
    problem = None
    if audit is not None and audit.status is judge.Status.INVALID:
        invalid = [r for r in audit.rules if r.status is judge.Status.INVALID]
        others = [r for r in invalid if r.rule != "slo_p99"]
        if others or not invalid:  # an INVALID for the SLO alone is within_slo's to say
            problem = "; ".join(f"{r.rule}: {r.evidence}" for r in others)
    elif audit is None:
        problem = "no readable audit.json"
    return Step(
        rate=rate, run_id=run_dir.name, status="complete", verdict=audit.status.value if audit is not None else None,
        achieved_rate=result.achieved_rate, p99_ms=p99,
        within_slo=judge.p99_against_slo(p99, slo_p99_ms).status is judge.Status.VALID,
        p50_ms=percentiles.get("50"), p999_ms=percentiles.get("99.9"), errors=result.errors.total(), problem=problem,
        limiting_tier=limiting_tier, attribution=attribution,
    )


def repeated_step(rate: int, steps: Sequence[Step], slo_p99_ms: float | None) -> Step:
    """One step from its runs at RATE (REPEAT=N): sustainable only when every run completed and none
    was INVALID but for the SLO (one run the lab could not judge makes the rate unproven), its p99 and
    achieved rate the medians of its runs', with their ranges, within the SLO when the median is. The
    step stands for one run: the first unsustainable one (its problem and attribution say why the
    sweep stops), else the run whose p99 is the median."""
    if len(steps) == 1:
        return steps[0]
    p99s, rates = repetitions.spread([s.p99_ms for s in steps]), repetitions.spread([s.achieved_rate for s in steps])
    failing = [s for s in steps if s.status != "complete" or s.verdict not in ("VALID", "WARN", "INVALID")
               or s.problem is not None]
    if failing:
        shown = failing[0]
    else:
        ordered = sorted((s for s in steps if s.p99_ms is not None), key=lambda s: s.p99_ms or 0.0)
        shown = ordered[(len(ordered) - 1) // 2] if ordered else steps[0]
    verdicts = [s.verdict for s in steps if s.verdict is not None]
    worst = max(verdicts, key=("VALID", "WARN", "INVALID").index) if verdicts else None
    errors = [s.errors for s in steps if s.errors is not None]
    return dataclasses.replace(
        shown, rate=rate, verdict=worst if not failing else shown.verdict,
        achieved_rate=rates.median if rates else None, p99_ms=p99s.median if p99s else None,
        within_slo=not failing and p99s is not None
        and judge.p99_against_slo(p99s.median, slo_p99_ms).status is judge.Status.VALID,
        runs=tuple(s.run_id for s in steps if s.run_id), errors=sum(errors) if errors else None,
        p99_range_ms=(p99s.low, p99s.high) if p99s else None, achieved_range=(rates.low, rates.high) if rates else None)


def is_sustainable(step: Step) -> bool:
    """Complete, judged by the audit with no INVALID rule but the SLO's, and p99 within the SLO."""
    return (step.status == "complete" and step.verdict in ("VALID", "WARN", "INVALID") and step.problem is None
            and step.within_slo)


def stop_reason(step: Step, slo_p99_ms: float | None) -> str | None:
    """Why the sweep stops at this step; None when the step is sustainable and it goes on."""
    if step.status != "complete":
        return f"the run at {step.rate} req/s did not complete ({step.problem})"
    if step.verdict not in ("VALID", "WARN", "INVALID"):
        return f"the run at {step.rate} req/s has no audit verdict ({step.problem})"
    if step.problem is not None:
        return f"the audit judged the run at {step.rate} req/s INVALID ({step.problem})"
    if slo_p99_ms is None:
        return f"no p99 SLO is known for the run at {step.rate} req/s: set slo_p99_ms in the scenario or SLO_P99_MS="
    if step.p99_ms is None:
        return f"the run at {step.rate} req/s reported no p99"
    if not step.within_slo:
        return f"p99 {step.p99_ms:g} ms at {step.rate} req/s exceeds the SLO of {slo_p99_ms:g} ms"
    return None


def _utc_now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def max_sustainable_step(sweep: Sweep) -> Step | None:
    """The last sustainable step before the first one that is not (steps run in increasing rate)."""
    best = None
    for step in sweep.steps:
        if not is_sustainable(step):
            break
        best = step
    return best


def failed_step(sweep: Sweep) -> Step | None:
    """The first step that was not sustainable: where the sweep stopped; None when none failed."""
    return next((step for step in sweep.steps if not is_sustainable(step)), None)


def record(sweep: Sweep, step: Step) -> None:
    """Add STEP to SWEEP and judge the sweep again: its maximum sustainable rate, and the tier that
    limited the failed step (its attribution; UNKNOWN_TIER when it names none; None when no step
    failed: the limit was not reached)."""
    sweep.steps.append(step)
    best, failed = max_sustainable_step(sweep), failed_step(sweep)
    sweep.max_sustainable_rate = best.rate if best else None
    sweep.limited_by = None if failed is None else failed.limiting_tier or UNKNOWN_TIER


class BenchRefused(Exception):
    """The bench refused the input before a run started (it printed why)."""


def run_sweep(
    sweep: Sweep, rates: Sequence[int], run_step: Callable[[int, int], Path | None],
    save: Callable[[Sweep], None], slo_override: float | None = None, repeat: int = 1,
) -> Sweep:
    """Run RATES in order with RUN_STEP ((rate, run index from 1 to REPEAT) -> its run directory,
    None when the bench refused the input), REPEAT runs a rate (repeated_step makes them one
    step), stop at the first step that is not sustainable, SAVE after every step."""
    for number, rate in enumerate(rates, 1):
        runs = []
        for index in range(1, repeat + 1):
            print(f"perflab sweep: step {number}/{len(rates)}, {rate} req/s"
                  + (f", run {index}/{repeat}" if repeat > 1 else ""), flush=True)
            run_dir = run_step(rate, index)
            if run_dir is None:
                sweep.ended_at, sweep.stopped_because = _utc_now(), f"the bench refused the run at {rate} req/s"
                if sweep.steps:
                    save(sweep)
                raise BenchRefused(sweep.stopped_because)
            if slo_override is None and sweep.slo_p99_ms is None:
                sweep.slo_p99_ms = scenario_slo(run_dir)
            runs.append(read_step(rate, run_dir, sweep.slo_p99_ms))
        step = repeated_step(rate, runs, sweep.slo_p99_ms)
        record(sweep, step)
        sweep.stopped_because = stop_reason(step, sweep.slo_p99_ms)
        sweep.ended_at = _utc_now()
        if sweep.stopped_because is not None:
            save(sweep)
            return sweep
        sweep.stopped_because = (
            f"not finished: {number} of {len(rates)} steps run" if number < len(rates) else
            f"every step up to {rate} req/s was sustainable: raise MAX (or add RATES) to find the limit"
        )
        save(sweep)
    return sweep


def _number(value: float | None, digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _ranged(value: float | None, spread: tuple[float, float] | None, digits: int = 2) -> str:
    """A step's figure; a repeated step's median with its runs' range."""
    text = _number(value, digits)
    return text if spread is None else f"{text} [{_number(spread[0], digits)}-{_number(spread[1], digits)}]"


def table(sweep: Sweep) -> str:
    """The latency-throughput curve, one row per step, and the sweep's outcome."""
    header = ["rate/s", "achieved/s", "p50 ms", "p99 ms", "p99.9 ms", "errors", "verdict", "p99<=SLO", "run"]
    rows = [[
        str(s.rate), _ranged(s.achieved_rate, s.achieved_range, 1), _number(s.p50_ms), _ranged(s.p99_ms, s.p99_range_ms),
        _number(s.p999_ms), "-" if s.errors is None else str(s.errors), s.verdict or s.status,
        "yes" if s.within_slo else "no", (s.run_id or "-") + (f" (+{len(s.runs) - 1} runs)" if len(s.runs) > 1 else ""),
    ] for s in sweep.steps]
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in [header, *rows]]
    lines.insert(1, "  ".join("-" * w for w in widths))
    lines.append(outcome(sweep))
    lines.append(f"stopped because {sweep.stopped_because}")
    return "\n".join(lines)


def outcome(sweep: Sweep) -> str:
    """The sweep's maximum, as the app's only when the app limited the step that failed."""
    best, failed, tier = max_sustainable_step(sweep), failed_step(sweep), sweep.limited_by
    slo = "unknown" if sweep.slo_p99_ms is None else f"{sweep.slo_p99_ms:g} ms"
    what = f"{sweep.app}, {sweep.scenario}, p99 SLO {slo}"
    if failed is None or tier == APP_TIER:
        limit = "" if failed is None else f"; the app limited the run at {failed.rate} req/s"
        return f"max sustainable throughput ({what}): " + (
            f"{best.rate} req/s (achieved {_number(best.achieved_rate, 1)}, p99 {_number(best.p99_ms)} ms){limit}"
            if best else "none: not even the first step was sustainable")
    named = "an unknown tier" if tier == UNKNOWN_TIER else tier
    why = f"the run at {failed.rate} req/s: {failed.attribution or 'no attribution.json'}"
    if best is None:
        return f"max sustainable throughput ({what}): none: the first step was limited by {named} ({why})"
    return (f"limited by {named} at {best.rate} req/s: the app's maximum is above this ({what}; achieved "
            f"{_number(best.achieved_rate, 1)}, p99 {_number(best.p99_ms)} ms; {why})")


def _run_dirs(results: Path) -> set[Path]:
    return set(results.iterdir()) if results.is_dir() else set()


def run_bench(results: Path, inventory: str, options: Sequence[str], named: str) -> tuple[int, Path | None]:
    """`ansible-playbook playbooks/bench.yml` with OPTIONS, as `make bench` runs it: its exit status
    and the run directory it created whose name ends with NAMED ("-<app>-<scenario>"; None: none)."""
    ansible_playbook = Path(sys.executable).parent / "ansible-playbook"
    before = _run_dirs(results)
    # This process owns the run: the lab's run lock names it (roles/run_lock), and a next run from
    # this controller takes the lock over once it is gone.
    code = subprocess.call([str(ansible_playbook), "-i", inventory, str(ROOT / "playbooks" / "bench.yml"), *options],
                           cwd=ROOT, env={**os.environ, "PERFLAB_RUN_PID": str(os.getpid())})
    created = sorted(p for p in _run_dirs(results) - before if p.name.endswith(named))
    return code, created[-1] if created else None


def bench_runner(
    results: Path, app: str, scenario: str, inventory: str, bench_options: Sequence[str], slo_override: float | None,
    name: str | None = None, repeat: int = 1, group: str = "",
) -> Callable[[int, int], Path | None]:
    """One run = one bench run at that rate (run_bench). APP is what APP= gave (a manifest's name
    or path), NAME the app's name, which names the run directories. With REPEAT > 1 each run of a
    rate is tagged as one repetition group (GROUP-<rate>), as make bench REPEAT=N tags its runs."""

    def run(rate: int, index: int) -> Path | None:
        options = [*bench_options, "-e", f"app_name={app}", "-e", f"loadgen_scenario={scenario}", "-e", f"loadgen_rate={rate}"]
        if slo_override is not None:
            options += ["-e", f"loadgen_slo_p99_ms={slo_override:g}"]
        if repeat > 1:
            options += ["-e", json.dumps({"bench_repetition": {"group": f"{group}-{rate}", "index": index, "of": repeat}})]
        return run_bench(results, inventory, options, f"-{name or app}-{scenario_label(scenario)}")[1]

    return run


def _positive_int(text: str) -> int:
    if not text.isdigit() or int(text) == 0:
        raise argparse.ArgumentTypeError(f"must be a whole number > 0, not {text!r}")
    return int(text)


def _positive_ms(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of milliseconds: {text!r}") from None
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"must be a number of milliseconds > 0, not {text}")
    return value


def register(commands: Any) -> None:
    """Register `perflab sweep` on the CLI's subcommands."""
    sub = commands.add_parser(
        "sweep", help="raise the rate step by step until the verdict fails or p99 exceeds the SLO",
        description=__doc__.splitlines()[0],
    )
    sub.add_argument("--app", required=True)
    sub.add_argument("--scenario", required=True)
    sub.add_argument("--inventory", default="inventory/local")
    sub.add_argument("--rates", metavar="'R1 R2 ...'", help="the rates to run, req/s (instead of --start/--step/--max)")
    sub.add_argument("--start", type=_positive_int, metavar="R")
    sub.add_argument("--step", type=_positive_int, metavar="R")
    sub.add_argument("--max", type=_positive_int, metavar="R")
    sub.add_argument("--slo-p99-ms", type=_positive_ms, metavar="MS", help="overrides the scenario's slo_p99_ms")
    sub.add_argument("--repeat", type=repetitions.parse_repeat, default=1, metavar="N",
                     help="runs per rate on fresh JVMs (REPEAT=): the step is their median, with their range")
    sub.add_argument("--results", type=Path, help=rundir.RESULTS_HELP)
    sub.add_argument("bench_options", nargs=argparse.REMAINDER, help="after --: options for playbooks/bench.yml")
    sub.set_defaults(command=main)


def main(args: argparse.Namespace) -> int:
    try:
        if args.rates is not None:
            if any(v is not None for v in (args.start, args.step, args.max)):
                raise SweepInputError("give either RATES or START, STEP and MAX, not both")
            rates = parse_rates(args.rates)
        elif None in (args.start, args.step, args.max):
            raise SweepInputError("give RATES=\"R1 R2 ...\" or all of START=, STEP= and MAX= (requests per second)")
        else:
            rates = stepped_rates(args.start, args.step, args.max)
    except SweepInputError as exc:
        print(f"perflab sweep: {exc}", file=sys.stderr)
        return EXIT_USAGE
    try:
        name = manifest.resolve(args.app).name  # APP= may be a manifest's path: runs are named after the app
    except manifest.ManifestError as exc:
        print(f"perflab sweep: {exc}", file=sys.stderr)
        return EXIT_REFUSED
    results = rundir.results_dir(args.results)
    started = datetime.datetime.now(datetime.timezone.utc)
    sweep_dir = results / f"{started.strftime('%Y%m%dT%H%M%SZ')}-{name}-{scenario_label(args.scenario)}-sweep"
    sweep = Sweep(app=name, scenario=args.scenario, slo_p99_ms=args.slo_p99_ms,
                  started_at=started.strftime("%Y-%m-%dT%H:%M:%SZ"))

    def save(current: Sweep) -> None:
        rundir.write_sweep(sweep_dir, current)

    print(f"perflab sweep: {name}, {args.scenario}, rates {' '.join(map(str, rates))} req/s"
          + (f", {args.repeat} runs each" if args.repeat > 1 else "") + f" -> {sweep_dir}/", flush=True)
    options = [o for o in args.bench_options if o != "--"]
    runner = bench_runner(results, args.app, args.scenario, args.inventory, options, args.slo_p99_ms, name,
                          args.repeat, sweep_dir.name)
    try:
        run_sweep(sweep, rates, runner, save, slo_override=args.slo_p99_ms, repeat=args.repeat)
    except BenchRefused as exc:
        print(f"perflab sweep: {exc}: see the message above", file=sys.stderr)
        return EXIT_REFUSED
    print(table(sweep))
    print(f"perflab sweep: {sweep_dir / rundir.SWEEP}")
    return EXIT_RUN_FAILED if sweep.steps and sweep.steps[-1].status != "complete" else EXIT_DONE
