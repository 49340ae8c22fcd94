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

from perflab import app_build, manifest, repetitions, rundir
from perflab.scenario import label as scenario_label
from perflab.results import RunRow, read_run_row
from perflab.sweep import run_bench

MIB = 1024 * 1024
EXIT_DONE, EXIT_RUN_FAILED, EXIT_USAGE = 0, 1, 2


@dataclass(frozen=True)
class App:
    given: str  # as APPS= named it: a manifest's name or path
    name: str  # the manifest's name, which names the run directories
    variants: str  # key=value words
    counterpart: str | None = None  # the project's app a foreign one does the same work as


def cells(row: RunRow) -> list[str]:
    """The row's cells in HEADER's order ("" where a run that did not complete has no figure)."""
    run = row.run_dir.name if row.run_dir else "-"
    if row.result is None:
        return [row.app, run, row.state, *[""] * (len(HEADER) - 4), row.repetition]
    percentiles = row.result.latency_corrected.percentiles_ms
    errors = " ".join(f"{kind}={count}" for kind, count in row.result.errors.by_kind().items()) or "none"
    return [
        row.app, run, row.state,
        f"{row.result.target_rate:g}", f"{row.result.achieved_rate:.1f}", row.result.tool,
        *(f"{percentiles[p]:.2f}" if p in percentiles else "-" for p in ("50", "99", "99.9")),
        errors, row.verdict or "?",
        _figure(_cpu(row), 1, "{:.3f}"),
        _figure(row.audit.app_max_rss_bytes if row.audit else None, MIB, "{:.1f}"),
        row.repetition,
        _figure(_start_ms(row), 1, "{:.0f}"),
    ]


def _figure(value: float | None, unit: float, spec: str) -> str:
    """An audit figure in UNIT, or "-" where the audit did not state it (not observed, older audit.json)."""
    return "-" if value is None else spec.format(value / unit)


HEADER = ["app", "run", "status", "target/s", "achieved/s", "tool", "p50 ms", "p99 ms", "p99.9 ms", "errors", "verdict",
          "app CPU-s/1k req", "app max RSS MiB", "repetition", "start to first request ms"]


def table(rows: Sequence[RunRow]) -> str:
    # New columns go at the end: tests/bench_runs reads a row by position up to the tool.
    rows_cells = [cells(row) for row in rows]
    widths = [max(len(str(r[i])) for r in [HEADER, *rows_cells]) for i in range(len(HEADER))]
    lines = ["  ".join(str(c).ljust(w) for c, w in zip(r, widths)).rstrip() for r in [HEADER, *rows_cells]]
    return "\n".join([lines[0], "  ".join("-" * w for w in widths), *lines[1:]])


def _achieved(row: RunRow) -> float | None:
    return row.result.achieved_rate if row.result else None


def _p99(row: RunRow) -> float | None:
    return row.result.latency_corrected.percentiles_ms.get("99") if row.result else None


def _cpu(row: RunRow) -> float | None:
    return row.audit.app_cpu_s_per_1000_requests if row.audit else None


def _rss(row: RunRow) -> float | None:
    return row.audit.app_max_rss_bytes if row.audit else None


def _start_ms(row: RunRow) -> float | None:
    return row.result.app.start_to_first_request_ms if row.result and row.result.app else None


# What ours/theirs compares: the app's cost per request, its memory and its start.
OURS_THEIRS: tuple[tuple[str, Callable[[RunRow], float | None], float, str], ...] = (
    ("app CPU-s/1k req", _cpu, 1, "{:.3f}"), ("max RSS MiB", _rss, MIB, "{:.0f}"),
    ("start to first request ms", _start_ms, 1, "{:.0f}"))


def ours_theirs(rows: Sequence[RunRow], apps: Sequence[App]) -> list[str]:
    """For each foreign app that ran beside its counterpart (the project's app doing the same work),
    each figure of OURS_THEIRS as ours / theirs, from the median of each app's complete runs judged
    VALID or WARN (REPEAT=N gives N; repetitions.spread, with the range where there are several)."""
    judged: dict[str, list[RunRow]] = {}
    for row in rows:
        if row.result is not None and row.verdict in ("VALID", "WARN"):
            judged.setdefault(row.app, []).append(row)
    by_name = {app.name: app.given for app in apps}
    lines = []
    most = 1
    for app in apps:
        ours = by_name.get(app.counterpart or "")
        if ours is None or app.given not in judged or ours not in judged:
            continue
        most = max(most, len(judged[ours]), len(judged[app.given]))
        figures = []
        for label, figure, unit, spec in OURS_THEIRS:
            mine = repetitions.spread([figure(row) for row in judged[ours]])
            theirs = repetitions.spread([figure(row) for row in judged[app.given]])
            if mine is None or theirs is None or theirs.median == 0:
                figures.append(f"{label} -")
                continue
            figures.append(f"{label} {_spread_text(mine, unit, spec)} / {_spread_text(theirs, unit, spec)}"
                           f" = {mine.median / theirs.median:.2f}")
        runs = f" ({len(judged[ours])} / {len(judged[app.given])} runs)" if most > 1 else ""
        lines.append(f"  {ours} / {app.given}{runs}: {', '.join(figures)}")
    each = "one run each" if most == 1 else "the medians of each app's judged runs, [their range]"
    return [f"perflab compare: ours / theirs ({each}; a ratio over 1 is ours costing more)", *lines] if lines else []


def _spread_text(spread: repetitions.Spread, unit: float, spec: str) -> str:
    median = spec.format(spread.median / unit)
    if spread.runs == 1 or spread.low == spread.high:
        return median
    return f"{median} [{spec.format(spread.low / unit)}-{spec.format(spread.high / unit)}]"


# The figures summed up over repetitions: name, lower is better, the figure of one row.
SUMMARY: tuple[tuple[str, bool, Callable[[RunRow], float | None]], ...] = (
    ("achieved/s", False, _achieved), ("p99 ms", True, _p99), ("app CPU-s/1k req", True, _cpu))


def summary(rows: Sequence[RunRow]) -> list[str]:
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
            raise manifest.ManifestError([f"no app claims scenario {scenario!r} (perflab app list shows what each claims); "
                                          "name the apps to run it with: APPS=\"a b\""])
    unclaimed = [found.name for _, found in pairs if scenario in manifest.scenario_names() and not manifest.claims(found, scenario)]
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
        app_build.build(found)
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
    except app_build.BuildError as error:
        print(f"perflab compare: {error}", file=sys.stderr)
        return EXIT_RUN_FAILED
    results = rundir.results_dir(args.results)
    group = f"{datetime.datetime.now(datetime.timezone.utc).strftime('%Y%m%dT%H%M%SZ')}-{scenario_label(args.scenario) or 'compare'}"
    if args.repeat > 1:
        print(f"perflab compare: {' '.join(a.name for a in apps)}, {args.repeat} runs each in turns "
              f"(repetition group {group})", flush=True)
    rows: list[RunRow] = []
    all_complete = True
    for index in range(1, args.repeat + 1):
        for app in apps:
            repetition = f"{index}/{args.repeat}" if args.repeat > 1 else ""
            print(f"perflab compare: {app.given}{f' (run {repetition})' if repetition else ''}", flush=True)
            run_options = [*options, "-e", f"app_name={app.given}", "-e", json.dumps({"app_variants": app.variants})]
            if args.repeat > 1:
                run_options += ["-e", json.dumps({"bench_repetition": {"group": group, "index": index, "of": args.repeat}})]
            code, run_dir = run_bench(results, args.inventory, run_options, f"-{app.name}-{scenario_label(args.scenario)}")
            row = read_run_row(app.given, run_dir, repetition)
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
