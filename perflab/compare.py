"""Run a scenario with several apps in turn under the same options, then one table of the runs.

perflab compare (make compare): every app claiming the scenario (or those --apps names) in turn,
with the same options, then one table of the runs: tool, achieved rate, corrected p50/p99/p99.9,
errors, verdict, and what the app spent as the audit states it (CPU seconds per 1,000 requests,
max RSS). Runs of different tools (TOOL=auto picks per run) are never compared silently: the
table says so.

--repeat N (REPEAT=N; `make bench REPEAT=N` is a comparison of one app): every app N times on
fresh JVMs, in turns (A B A B ...: a drift of the machine falls on every app alike), each run
tagged with the comparison's repetition group; then, per app, the median and the range of each
figure, and which apps cannot be told apart (perflab/repetitions.py).

Every app is checked and built first (perflab app build), so that a wrong manifest or a failing
build stops the comparison before any run. A variant applies to the apps that have it (THREADS=
concerns only the apps with threads); one that no app has is refused. Each run is a normal bench
run under results/<run-id>/. Exit status: 0 when every run completed, 1 otherwise (the table
still lists every run, with the status of those that did not complete), 2 for bad input.
"""
from __future__ import annotations

import argparse
import datetime
import json
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from perflab import manifest, repetitions, rundir
from perflab.audit import Verdict
from perflab.model import RunResult
from perflab.rundir import RunFileError
from perflab.sweep import run_bench

MIB = 1024 * 1024
EXIT_DONE, EXIT_RUN_FAILED, EXIT_USAGE = 0, 1, 2


@dataclass(frozen=True)
class App:
    given: str  # as APPS= named it: a manifest's name or path
    name: str  # the manifest's name, which names the run directories
    variants: str  # key=value words
    counterpart: str | None = None  # the project's app a foreign one does the same work as


@dataclass(frozen=True)
class Row:
    app: str
    run_dir: Path | None
    repetition: str  # "2/3", "" for a run made once
    result: RunResult | None  # result.json of a complete run
    audit: Verdict | None  # audit.json; None where it is missing or unreadable
    state: str  # "complete", "incomplete: <why>", "no run (...)"

    @property
    def verdict(self) -> str | None:
        return self.audit.status.value if self.audit is not None else None

    def cells(self) -> list[str]:
        """The row's cells in HEADER's order ("" where a run that did not complete has no figure)."""
        run = self.run_dir.name if self.run_dir else "-"
        if self.result is None:
            return [self.app, run, self.state, *[""] * (len(HEADER) - 4), self.repetition]
        percentiles = self.result.latency_corrected.percentiles_ms
        errors = " ".join(f"{kind}={count}" for kind, count in self.result.errors.by_kind().items()) or "none"
        return [
            self.app, run, self.state,
            f"{self.result.target_rate:g}", f"{self.result.achieved_rate:.1f}", self.result.tool,
            *(f"{percentiles[p]:.2f}" if p in percentiles else "-" for p in ("50", "99", "99.9")),
            errors, self.verdict or "?",
            _figure(_cpu(self), 1, "{:.3f}"),
            _figure(self.audit.app_max_rss_bytes if self.audit else None, MIB, "{:.1f}"),
            self.repetition,
            _figure(_start_ms(self), 1, "{:.0f}"),
        ]


def read_row(app: str, run_dir: Path | None, repetition: str = "") -> Row:
    if run_dir is None:
        return Row(app, None, repetition, None, None, "no run (rejected before it started)")
    status: rundir.RunStatus | None
    result: RunResult | None
    audit: Verdict | None
    try:
        status = rundir.read_status(run_dir)
    except RunFileError:
        status = None
    try:
        result = rundir.read_result(run_dir)
    except RunFileError:
        result = None
    try:
        audit = rundir.read_audit(run_dir)
    except RunFileError:
        audit = None
    if status is None or status.status != "complete" or result is None:
        reason = ("no status.json" if status is None else status.failed_step or status.reason
                  or ("no readable result.json" if status.status == "complete" else "no reason recorded"))
        return Row(app, run_dir, repetition, None, audit, f"incomplete: {reason}")
    return Row(app, run_dir, repetition, result, audit, "complete")


def _figure(value: float | None, unit: float, spec: str) -> str:
    """An audit figure in UNIT, or "-" where the audit did not state it (not observed, older audit.json)."""
    return "-" if value is None else spec.format(value / unit)


HEADER = ["app", "run", "status", "target/s", "achieved/s", "tool", "p50 ms", "p99 ms", "p99.9 ms", "errors", "verdict",
          "app CPU-s/1k req", "app max RSS MiB", "repetition", "start to first request ms"]


def table(rows: Sequence[Row]) -> str:
    # New columns go at the end: tests/bench_runs reads a row by position up to the tool.
    cells = [row.cells() for row in rows]
    widths = [max(len(str(r[i])) for r in [HEADER, *cells]) for i in range(len(HEADER))]
    lines = ["  ".join(str(c).ljust(w) for c, w in zip(r, widths)).rstrip() for r in [HEADER, *cells]]
    return "\n".join([lines[0], "  ".join("-" * w for w in widths), *lines[1:]])


def _achieved(row: Row) -> float | None:
    return row.result.achieved_rate if row.result else None


def _p99(row: Row) -> float | None:
    return row.result.latency_corrected.percentiles_ms.get("99") if row.result else None


def _cpu(row: Row) -> float | None:
    return row.audit.app_cpu_s_per_1000_requests if row.audit else None


def _rss(row: Row) -> float | None:
    return row.audit.app_max_rss_bytes if row.audit else None


def _start_ms(row: Row) -> float | None:
    return row.result.app.start_to_first_request_ms if row.result and row.result.app else None


# What ours/theirs compares: the app's cost per request, its memory and its start.
OURS_THEIRS: tuple[tuple[str, Callable[[Row], float | None], float, str], ...] = (
    ("app CPU-s/1k req", _cpu, 1, "{:.3f}"), ("max RSS MiB", _rss, MIB, "{:.0f}"),
    ("start to first request ms", _start_ms, 1, "{:.0f}"))


def ours_theirs(rows: Sequence[Row], apps: Sequence[App]) -> list[str]:
    """For each foreign app that ran beside its counterpart (the project's app doing the same work),
    each figure of OURS_THEIRS as ours / theirs, from their first complete runs judged VALID or WARN."""
    judged: dict[str, Row] = {}
    for row in rows:
        if row.result is not None and row.verdict in ("VALID", "WARN"):
            judged.setdefault(row.app, row)
    by_name = {app.name: app.given for app in apps}
    lines = []
    for app in apps:
        ours = by_name.get(app.counterpart or "")
        if ours is None or app.given not in judged or ours not in judged:
            continue
        figures = []
        for label, figure, unit, spec in OURS_THEIRS:
            mine, theirs = figure(judged[ours]), figure(judged[app.given])
            if mine is None or theirs is None or theirs == 0:
                figures.append(f"{label} -")
                continue
            figures.append(f"{label} {spec.format(mine / unit)} / {spec.format(theirs / unit)} = {mine / theirs:.2f}")
        lines.append(f"  {ours} / {app.given}: {', '.join(figures)}")
    return ["perflab compare: ours / theirs (one run each; a ratio over 1 is ours costing more)", *lines] if lines else []


# The figures summed up over repetitions: name, lower is better, the figure of one row.
SUMMARY: tuple[tuple[str, bool, Callable[[Row], float | None]], ...] = (
    ("achieved/s", False, _achieved), ("p99 ms", True, _p99), ("app CPU-s/1k req", True, _cpu))


def summary(rows: Sequence[Row]) -> list[str]:
    """Per app, each figure's median [range] over its complete runs judged VALID or WARN, and per
    figure which apps cannot be told from the best (their ranges overlap)."""
    apps = list(dict.fromkeys(row.app for row in rows))
    judged = [row for row in rows if row.result is not None and row.verdict in ("VALID", "WARN")]
    lines = ["perflab compare: median [lowest-highest] over each app's complete runs judged VALID or WARN"]
    spreads: dict[str, dict[str, repetitions.Spread | None]] = {}
    for app in apps:
        mine = [row for row in judged if row.app == app]
        spreads[app] = {name: repetitions.spread([figure(row) for row in mine]) for name, _, figure in SUMMARY}
        figures = ", ".join(f"{name} {s.text() if s else '-'}" for name, s in spreads[app].items())
        lines.append(f"  {app} ({len(mine)} run{'s' if len(mine) != 1 else ''}): {figures}")
    if len(apps) < 2:
        return lines
    for name, lower_better, _ in SUMMARY:
        known = {app: found for app, by_name in spreads.items() if (found := by_name[name]) is not None}
        if len(known) < 2:
            continue
        medians = {app: found.median for app, found in known.items()}
        best = min(medians, key=medians.__getitem__) if lower_better else max(medians, key=medians.__getitem__)
        alike = [app for app in known if app != best and repetitions.indistinguishable(known[best], known[app])]
        if alike:
            lines.append(f"  {name}: {best} is best by its median, not distinguishable from {', '.join(alike)} "
                         "(the ranges overlap)")
        elif all(found.runs > 1 for found in known.values()):
            lines.append(f"  {name}: {best} is best, apart from every other app (no range overlaps its own)")
    return lines


def select_apps(given: str, scenario: str, selections: list[str]) -> list[App]:
    """Every app to run, with its variants as key=value words, each checked and built."""
    if given:
        pairs = [(app, manifest.resolve(app)) for app in given.split()]
    else:
        pairs = [(found.name, found) for found in manifest.claiming(scenario)]
        if not pairs:
            raise manifest.ManifestError([f"no app claims scenario {scenario!r} (perflab app list shows what each claims)"])
    unclaimed = [found.name for _, found in pairs if scenario in manifest.scenario_names() and scenario not in found.scenarios]
    if unclaimed:
        raise manifest.ManifestError([f"{', '.join(unclaimed)} do(es) not claim scenario {scenario!r} (perflab app list)"])
    variants = [manifest.choose(found, selections, strict=False) for _, found in pairs]
    for selection in selections:
        key = selection.partition("=")[0] if "=" in selection else None
        if not any(key in found.variants if key else any(selection in v.options for v in found.variants.values())
                   for _, found in pairs):
            raise manifest.ManifestError([f"no app of this comparison ({', '.join(f.name for _, f in pairs)}) has the "
                                          f"variant {selection!r}"])
    for _, found in pairs:
        manifest.build(found)
    return [App(app, found.name, " ".join(f"{k}={v}" for k, v in chosen.items()), found.counterpart)
            for (app, found), chosen in zip(pairs, variants)]


def register(commands: Any) -> None:
    """Register `perflab compare` on the CLI's subcommands."""
    sub = commands.add_parser("compare", help="run a scenario with several apps (and REPEAT= times each), then a table",
                              description=__doc__.splitlines()[0])
    sub.add_argument("--inventory", default="inventory/local")
    sub.add_argument("--scenario", default="", help="the scenario (SCENARIO=): by default every app claiming it runs")
    sub.add_argument("--apps", default="", help="space-separated app names or manifest paths (APPS=)")
    sub.add_argument("--variants", default="", help="VARIANT= words, key=value: each applies to the apps that have it")
    sub.add_argument("--repeat", type=repetitions.parse_repeat, default=1, metavar="N", help="runs per app on fresh JVMs (REPEAT=)")
    sub.add_argument("--results", type=Path, help=rundir.RESULTS_HELP)
    sub.add_argument("bench_options", nargs=argparse.REMAINDER, help="after --: options for playbooks/bench.yml")
    sub.set_defaults(command=main)


def main(args: argparse.Namespace) -> int:
    options = [o for o in args.bench_options if o != "--"]
    try:
        apps = select_apps(args.apps, args.scenario, manifest.variant_selections(args.variants))
    except manifest.ManifestError as error:
        for line in error.problems:
            print(f"perflab compare: {line}", file=sys.stderr)
        return EXIT_USAGE
    except manifest.BuildError as error:
        print(f"perflab compare: {error}", file=sys.stderr)
        return EXIT_RUN_FAILED
    results = rundir.results_dir(args.results)
    group = f"{datetime.datetime.now(datetime.timezone.utc).strftime('%Y%m%dT%H%M%SZ')}-{args.scenario or 'compare'}"
    if args.repeat > 1:
        print(f"perflab compare: {' '.join(a.name for a in apps)}, {args.repeat} runs each in turns "
              f"(repetition group {group})", flush=True)
    rows: list[Row] = []
    all_complete = True
    for index in range(1, args.repeat + 1):
        for app in apps:
            repetition = f"{index}/{args.repeat}" if args.repeat > 1 else ""
            print(f"perflab compare: {app.given}{f' (run {repetition})' if repetition else ''}", flush=True)
            run_options = [*options, "-e", f"app_name={app.given}", "-e", json.dumps({"app_variants": app.variants})]
            if args.repeat > 1:
                run_options += ["-e", json.dumps({"bench_repetition": {"group": group, "index": index, "of": args.repeat}})]
            code, run_dir = run_bench(results, args.inventory, run_options, f"-{app.name}-{args.scenario}")
            row = read_row(app.given, run_dir, repetition)
            rows.append(row)
            all_complete = all_complete and code == 0 and row.state == "complete"
            if run_dir is None and code != 0:
                print(table(rows))
                return EXIT_RUN_FAILED  # bad input is the same for every app: one clear error is enough
    print(table(rows))
    tools = sorted({row.result.tool for row in rows if row.result is not None})
    if len(tools) > 1:
        print(f"perflab compare: these runs used different load generators ({', '.join(tools)}): their latencies are "
              "not comparable side by side; run again with TOOL= one of them")
    if args.repeat > 1:
        print("\n".join(summary(rows)))
    if pairs := ours_theirs(rows, apps):
        print("\n".join(pairs))
    return EXIT_DONE if all_complete else EXIT_RUN_FAILED
