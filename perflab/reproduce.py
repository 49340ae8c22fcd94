"""Run a field report's experiment on this lab and print the report's table beside the lab's.

perflab reproduce (make reproduce REPORT=1|2|3|4|all): the experiment of one of the four field reports
the lab is built on (docs/ARCHITECTURE.md) in the form this lab and its hosts allow, as
normal bench runs under results/<run-id>/, then:
- the report's own figures (theirs, from their hardware) beside the lab's runs (achieved rate,
  corrected p50/p99, verdict, what the app spent, the attribution);
- each relation the report found, marked `reproduced`, `not reproduced`, `not judged` (a run
  missing, incomplete, or without the figure) or `not runnable here` (an arm this lab's hosts
  refuse), with the figures it was decided on;
- results/<id>-reproduce-<report>/reproduction.json: the same, for the report page.

Report 1 (Quarkus reactive CRUD on MySQL: the method): each of its five steps staged on the lab as
zipcodes runs of Quarkus, each a state the verdict must catch: an app that answers with errors
(it accepts two connections); the DB slowed by its own host (DB_CPU_HOG busy loops on it) while the
app waits with CPU to spare; nothing slowed at a high rate, the app with CPU to spare; the app
constrained to a quarter of a CPU (PROFILE=app-bound), now the limit; and TLS on every DB session of
every run. The lab cannot slow the DB's disk: its CPU stands in for it.
Report 2 (Spring MVC vs WebFlux under blocking latency): /hello/{latency} with a 1 s delay at
300 req/s, the report's physics at a tenth of its rate so that one loadgen core suffices: MVC on
200 Tomcat threads caps near threads / latency = 200 req/s; 400 threads, WebFlux and MVC on
virtual threads hold the rate.
Report 3 (IO thread vs worker thread, Quarkus): the greeting on the Vert.x event loop and on a
worker thread, at one rate below saturation (the lab's single loadgen core cannot find
Quarkus' maximum): what each costs per request, its memory and its start. With the report's
constraints (PROFILE=io-vs-worker: 4 CPUs, 256 MB, -Xmx128m) where the app host has 4 CPUs;
elsewhere the lab says so and runs on the default profile.
Report 4 (virtual vs platform threads, Spring MVC, DB-heavy): books-orders on the report's one
CPU and 2 GB (PROFILE=virtual-threads-db) at one rate, then with the DB 100 ms away (netem on the
DB host, DB_DELAY_MS) at a rate below what the DB pool carries with that delay; where the DB host
has no netem the bench refuses the delay and those arms and their relation are `not runnable
here`, the rest still runs.
Exit status: 0 every run completed (whatever the relations: a relation not reproduced is a
finding, not a failure; report 1's broken app is refused by design), 1 a run did not complete,
2 bad input.
"""
from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import re
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from perflab import app_build, manifest, rundir
from perflab.compare import MIB
from perflab.model import database_name
from perflab.field_reports import (EXPERIMENTS, NOT_RUNNABLE, Arm, Experiment, Settings, achieved, attribution,
                                   audit_figure, p50, p99, start_ms, verdict)
from perflab.results import RunRow, read_run_row
from perflab.sweep import run_bench

EXIT_DONE, EXIT_RUN_FAILED, EXIT_USAGE = 0, 1, 2


# -- running and printing --------------------------------------------------------------------------

def bench_options(experiment: Experiment, arm: Arm, settings: Settings) -> list[str]:
    """playbooks/bench.yml's options for one arm (what `make bench` would pass)."""
    options = ["-e", f"app_name={arm.app}", "-e", json.dumps({"app_variants": arm.variants}),
               "-e", f"loadgen_scenario={experiment.scenario}", "-e", f"loadgen_rate={arm.offered(settings)}",
               "-e", f"loadgen_duration={settings.duration}", "-e", f"loadgen_warmup={settings.warmup}"]
    if arm.db_delay_ms:
        options += ["-e", f"bench_db_delay_ms={arm.db_delay_ms}"]
    if arm.db_cpu_hog:
        options += ["-e", f"bench_db_cpu_hog={arm.db_cpu_hog}"]
    if arm.jvm_options:
        options += ["-e", json.dumps({"app_jvm_opts": list(arm.jvm_options)})]
    if settings.latency_ms is not None:
        options += ["-e", f"loadgen_latency_ms={settings.latency_ms}"]
    if settings.slo_p99_ms is not None:
        options += ["-e", f"loadgen_slo_p99_ms={settings.slo_p99_ms:g}"]
    if arm.profile or settings.profile:
        options += ["-e", f"app_profile={arm.profile or settings.profile}"]
    return options


def judge(experiment: Experiment, rows: dict[str, RunRow], settings: Settings) -> list[dict[str, str]]:
    return [dict(zip(("claim", "status", "figures"), (r.claim, *r.check(rows, settings)))) for r in experiment.relations]


def table(experiment: Experiment, rows: dict[str, RunRow], relations: Sequence[dict[str, str]], settings: Settings,
          note: str = "") -> str:
    def cell(value: float | None, spec: str, unit: float = 1.0) -> str:
        return "-" if value is None else spec.format(value / unit)

    def figures(arm: Arm) -> str:
        row = rows[arm.key]
        if row.result is None:  # no figures to show: why
            return f"at {arm.offered(settings)} req/s: {row.state}"
        return (f"{cell(achieved(row), '{:.1f}')} of {arm.offered(settings)} req/s, "
                f"p50 {cell(p50(row), '{:.1f}')} ms, p99 {cell(p99(row), '{:.1f}')} ms, {verdict(row)}, app CPU-s/1k req "
                f"{cell(audit_figure(row, 'app_cpu_s_per_1000_requests'), '{:.3f}')}, max RSS "
                f"{cell(audit_figure(row, 'app_max_rss_bytes'), '{:.0f}', MIB)} MiB, start to first request "
                f"{cell(start_ms(row), '{:.0f}')} ms" + (f"\n      {attribution(row)}" if attribution(row) else ""))

    lab = [("lab: " + arm.label, figures(arm)) for arm in experiment.arms]
    width = max(len(label) for label, _ in [*((f"report: {t}", f) for t, f in experiment.theirs), *lab])
    # The DB the runs ran on (report 4's ran on PostgreSQL: make reproduce REPORT=4 DB_ENGINE=postgresql).
    databases = sorted({database_name(row.result.versions.get("database", "")) for row in rows.values()
                        if row.result is not None})
    lines = [f"Report {experiment.report}: {experiment.title}",
             f"  lab: {experiment.scenario} at {settings.rate} req/s"
             + (f", /hello/{settings.latency_ms}" if settings.latency_ms is not None else "")
             + f", {settings.duration} after {settings.warmup} of warm-up, profile {settings.profile or 'default'}"
             + (f", on {' and '.join(databases)}" if databases else "")]
    if note:
        lines.append(f"  note: {note}")
    lines += [f"  {('report: ' + label).ljust(width)}  {figures}" for label, figures in experiment.theirs]
    lines += [f"  {label.ljust(width)}  {figures}" for label, figures in lab]
    lines.append("  relations:")
    lines += [f"    [{r['status']}] {r['claim']}: {r['figures']}" for r in relations]
    return "\n".join(lines)


def reproduce(experiment: Experiment, settings: Settings, results: Path, inventory: str, extra: Sequence[str],
              run: Callable[[Path, str, Sequence[str], str], tuple[int, Path | None]] = run_bench) -> tuple[int, str]:
    """Every arm's run, the relations judged, reproduction.json written; (exit status, the table)."""
    rows: dict[str, RunRow] = {}
    note, complete, delay_refused = "", True, ""
    for arm in experiment.arms:
        if arm.db_delay_ms and delay_refused:
            rows[arm.key] = RunRow(arm.label, None, "", None, None, delay_refused)
            continue
        print(f"perflab reproduce: report {experiment.report}, {arm.label}", flush=True)
        named = f"-{manifest.resolve(arm.app).name}-{experiment.scenario}"
        code, run_dir = run(results, inventory, [*bench_options(experiment, arm, settings), *extra], named)
        if run_dir is None and arm.db_delay_ms and code != 0:
            # The bench refused the delay before the run opened (no netem on the DB host: its message
            # above): every delayed arm is not runnable on this lab, the others still are.
            delay_refused = (f"{NOT_RUNNABLE}: the bench refused DB_DELAY_MS={arm.db_delay_ms} before the run opened "
                             "(it needs netem on the DB host; the bench's output says why)")
            rows[arm.key] = RunRow(arm.label, None, "", None, None, delay_refused)
            print(f"perflab reproduce: {delay_refused}", flush=True)
            continue
        if run_dir is None and settings.profile and experiment.fallback_profile and code != 0:
            # Refused before the run opened: the profile the host cannot hold (the app role says why above).
            settings = dataclasses.replace(settings, profile=experiment.fallback_profile)
            note = experiment.fallback_why
            print(f"perflab reproduce: {note}", flush=True)
            code, run_dir = run(results, inventory, [*bench_options(experiment, arm, settings), *extra], named)
        rows[arm.key] = read_run_row(arm.label, run_dir)
        complete = complete and (arm.broken or code in (0, 1) and rows[arm.key].state == "complete")  # 1: judged INVALID
    relations = judge(experiment, rows, settings)
    text = table(experiment, rows, relations, settings, note)
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    where = results / f"{stamp}-reproduce-{experiment.report}"
    rundir.write_reproduction(where, rundir.Reproduction(
        report=experiment.report, title=experiment.title, scenario=experiment.scenario, settings=settings, note=note,
        theirs=experiment.theirs,
        runs={arm.key: rundir.ReproducedArm(label=arm.label, app=arm.app, variants=arm.variants,
                                            run=_name(rows[arm.key].run_dir), state=rows[arm.key].state)
              for arm in experiment.arms},
        relations=tuple(rundir.ReproducedRelation(**relation) for relation in relations)))
    return (EXIT_DONE if complete else EXIT_RUN_FAILED), text + f"\n  -> {where / rundir.REPRODUCTION}"


def _name(run_dir: Path | None) -> str | None:
    return run_dir.name if run_dir is not None else None


def _reports(text: str) -> list[int]:
    wanted = [1, 2, 3, 4] if text == "all" else [int(text)] if text in ("1", "2", "3", "4") else []
    if not wanted:
        raise argparse.ArgumentTypeError(f"REPORT must be 1, 2, 3, 4 or all, got {text!r}")
    return wanted


def _settings(experiment: Experiment, args: argparse.Namespace) -> Settings:
    settings = experiment.settings
    if args.rate:
        settings = dataclasses.replace(settings, rate=int(args.rate))
    if args.duration:
        settings = dataclasses.replace(settings, duration=args.duration)
    if args.warmup:
        settings = dataclasses.replace(settings, warmup=args.warmup)
    return settings


def register(commands: Any) -> None:
    """Register `perflab reproduce` on the CLI's subcommands."""
    sub = commands.add_parser("reproduce", help="run a field report's experiment; its table beside the lab's",
                              description=__doc__.splitlines()[0])
    sub.add_argument("--report", type=_reports, required=True, help="1, 2, 3, 4 or all (REPORT=)")
    sub.add_argument("--inventory", default="inventory/local")
    sub.add_argument("--rate", default="", help="the offered rate instead of the experiment's (RATE=)")
    sub.add_argument("--duration", default="", help="the measured phase instead of the experiment's (DURATION=)")
    sub.add_argument("--warmup", default="", help="the warm-up instead of the experiment's (WARMUP=)")
    sub.add_argument("--results", type=Path, help=rundir.RESULTS_HELP)
    sub.add_argument("bench_options", nargs=argparse.REMAINDER, help="after --: more options for playbooks/bench.yml")
    sub.set_defaults(command=main)


def main(args: argparse.Namespace) -> int:
    if args.rate and not (args.rate.isdigit() and int(args.rate) > 0):
        print(f"perflab reproduce: RATE must be a whole number > 0, got {args.rate!r}", file=sys.stderr)
        return EXIT_USAGE
    extra = [o for o in args.bench_options if o != "--"]
    results = rundir.results_dir(args.results)
    worst, tables = EXIT_DONE, []
    for report in args.report:
        experiment = EXPERIMENTS[report]
        try:
            for arm in experiment.arms:
                found = manifest.resolve(arm.app)
                manifest.choose(found, manifest.variant_selections(arm.variants))
                app_build.build(found)
        except manifest.ManifestError as error:
            for line in error.problems:
                print(f"perflab reproduce: {line}", file=sys.stderr)
            return EXIT_USAGE
        except app_build.BuildError as error:
            print(f"perflab reproduce: {error}", file=sys.stderr)
            return EXIT_RUN_FAILED
        code, text = reproduce(experiment, _settings(experiment, args), results, args.inventory, extra)
        tables.append(text)
        worst = max(worst, code)
    print("\n\n".join(tables))
    return worst
