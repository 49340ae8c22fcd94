"""The report's comparable sets and what it compares in them, apart from how the page draws them.

- side_by_side(): per (scenario, asked rate, tool, profile, DB engine), one entry per app variant: its latest
  run judged VALID or WARN, else its latest judged run; with REPEAT=N, its repetitions;
- set_rows(): each entry's figures (SET_COLUMNS: the median over its repetitions and their range)
  and its ratio to the best figure of the set's VALID/WARN runs, and whether it can be told apart
  from the best (perflab.repetitions);
- observability_costs(): an app's CPU per request with the lab's instrumentation and without it
  (VARIANT=observability=off) where both ran in the set;
- compare(): the cost table per scenario, profile and DB engine: start to first request from every
  readable run; max throughput, the max RSS of that sweep's runs and throughput per MiB from
  sweeps only;
- fmt(), set_title(), bucket_text(): how a figure is written, in the sets' titles and notes and
  on the page alike.
Only runs judged VALID or WARN are compared: an INVALID run did not measure what it claims.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from perflab import repetitions
from perflab.model import app_variant, observability_off, with_observability
from perflab.observations import ServerQuantile
from perflab.results import Results, Run, SetKey, set_key
from perflab.rundir import Sweep


MIB = 1024.0 * 1024.0


def fmt(value: float | None, digits: int = 3) -> str:
    if value is None:
        return "—"
    if value == 0:
        return "0"
    if abs(value) >= 999.5:
        return f"{value:,.0f}"
    return f"{value:.{digits}g}"


def set_title(key: SetKey) -> str:
    """The set's heading: runs on different DB engines are never one set, and the heading says which."""
    return f"{key.scenario} at {fmt(key.rate)} req/s, {key.tool}, profile {key.profile}" + (f", {key.database}" if key.database else "")


@dataclass(frozen=True)
class Entry:
    """One variant of one set: the run drawn and tabled for it, and its other judged runs there.
    When the drawn run was one of several (REPEAT=N), `repeated` holds its group's runs in the set
    judged VALID or WARN: the table gives their median and range."""

    variant: str
    run: Run
    not_drawn: tuple[str, ...]  # run ids
    repeated: tuple[Run, ...] = ()

    @property
    def measured(self) -> tuple[Run, ...]:
        """The runs the table's figures come from: the repetitions, else the drawn run."""
        return self.repeated or (self.run,)


@dataclass(frozen=True)
class ComparableSet:
    key: SetKey
    entries: tuple[Entry, ...]  # one per variant, by name
    left_out: tuple[tuple[str, str], ...]  # (run id, state) of the set's runs that were not judged


def side_by_side(runs: Sequence[Run]) -> list[ComparableSet]:
    """Every (scenario, rate, tool, profile) with a judged run. Per variant, its latest run judged
    VALID or WARN, else its latest judged run (INVALID: drawn with its verdict, never compared).
    A run that was not judged (no verdict, unreadable) is never drawn: the set only names it."""
    by_key: dict[SetKey, list[Run]] = {}
    for run in runs:
        key = set_key(run)
        if key is not None:
            by_key.setdefault(key, []).append(run)
    sets = []
    for key in sorted(by_key):
        members = sorted(by_key[key], key=lambda r: r.run_id)
        judged = [r for r in members if r.judged]
        if not judged:
            continue
        entries = []
        for variant in sorted({r.app for r in judged}):
            mine = sorted((r for r in judged if r.app == variant), key=lambda r: (r.comparable, r.run_id))
            group = _repetition_group(mine[-1])
            repeated = tuple(r for r in mine if r.comparable and group is not None and _repetition_group(r) == group)
            entries.append(Entry(variant, mine[-1], tuple(r.run_id for r in mine[:-1]),
                                 repeated if len(repeated) > 1 else ()))
        sets.append(ComparableSet(key, tuple(entries), tuple((r.run_id, r.state) for r in members if not r.judged)))
    return sets


def _repetition_group(run: Run) -> str | None:
    repetition = run.result.repetition if run.result is not None else None
    return repetition.group if repetition is not None else None


def run_max_rss(run: Run) -> Figure:
    """The app's max RSS in MiB over one run: the JVM process's own (audit.json, observations.json)
    where recorded, else the app tier's resident memory (utilization.json)."""
    own = run.verdict.app_max_rss_bytes if run.verdict is not None else None
    if own is None:
        own = run.app_max_rss_bytes
    if own is not None:
        return Figure(own / MIB, "the app's max RSS (observations)")
    if run.utilization is not None and "app" in run.utilization.tiers:
        tier = [v for _, v in run.utilization.tiers["app"].memory_bytes]
        if tier:
            return Figure(max(tier) / MIB, "app tier's resident memory, all its processes (utilization.json)")
    return Figure(None)


def percentile(run: Run, key: str) -> float | None:
    return run.result.latency_corrected.percentiles_ms.get(key) if run.result is not None else None


def _start_ms(run: Run) -> float | None:
    app = run.result.app if run.result is not None else None
    return app.start_to_first_request_ms if app is not None else None


def _server_p99(run: Run) -> float | None:
    return run.server_latency.p99.value_ms if run.server_latency is not None else None


def bucket_text(quantile: ServerQuantile) -> str:
    """The histogram bucket an app's quantile fell in: the estimate's resolution."""
    high = f"{fmt(quantile.bucket_high_ms)} ms" if quantile.bucket_high_ms is not None else "∞"
    return f"bucket {fmt(quantile.bucket_low_ms)}–{high}"


@dataclass(frozen=True)
class Column:
    header: str
    figure: Callable[[Run], float | None]
    better: Literal["lower", "higher"] | None  # None: no ratio to the best (errors: a judged run has none)
    note: Callable[[Run], str] | None = None  # a line under the figure of a run tabled alone


SET_COLUMNS = (
    Column("achieved req/s", lambda r: r.result.achieved_rate if r.result is not None else None, "higher"),
    Column("p50 ms", lambda r: percentile(r, "50"), "lower"),
    Column("p99 ms", lambda r: percentile(r, "99"), "lower"),
    # The app's own p99 (its histogram), beside the generator's: an estimate within its bucket, not ranked.
    Column("server p99 ms", _server_p99, None,
           lambda r: bucket_text(r.server_latency.p99) if r.server_latency is not None else ""),
    Column("p99.9 ms", lambda r: percentile(r, "99.9"), "lower"),
    Column("errors", lambda r: float(r.result.errors.total()) if r.result is not None else None, None),
    Column("app CPU-s per 1,000 requests",
           lambda r: r.verdict.app_cpu_s_per_1000_requests if r.verdict is not None else None, "lower"),
    Column("max RSS MiB", lambda r: run_max_rss(r).value, "lower"),
    Column("start to first request ms", _start_ms, "lower"),
)


@dataclass(frozen=True)
class SetRow:
    """One variant's line of a set's table: each column's figure (the median over its repetitions,
    with their range) and its ratio to the best figure of the set's VALID/WARN runs (None: not
    compared, not recorded, or nothing to compare with); `alike`: per column, whether its range
    overlaps the best's (REPEAT=N on both: the two cannot be told apart)."""

    variant: str
    run_id: str
    state: str
    figures: tuple[float | None, ...]  # in SET_COLUMNS' order
    ratios: tuple[float | None, ...]
    spreads: tuple[repetitions.Spread | None, ...] = ()
    alike: tuple[bool, ...] = ()
    runs: int = 1
    notes: tuple[str, ...] = ()  # per column, a line under its figure (where the row is one run)


def entry_spread(entry: Entry, column: Column) -> repetitions.Spread | None:
    return repetitions.spread([column.figure(run) for run in entry.measured])


def set_rows(comparable_set: ComparableSet) -> tuple[SetRow, ...]:
    entries = comparable_set.entries
    ratios = [ratios_to_best(entries, column) for column in SET_COLUMNS]
    alike = [alike_the_best(entries, column) for column in SET_COLUMNS]
    rows = []
    for e in entries:
        spreads = tuple(entry_spread(e, c) for c in SET_COLUMNS)
        notes = tuple(c.note(e.run) if c.note is not None and len(e.measured) == 1 else "" for c in SET_COLUMNS)
        rows.append(SetRow(e.variant, e.run.run_id, e.run.state, tuple(s.median if s else None for s in spreads),
                           tuple(r.get(e.variant) for r in ratios), spreads,
                           tuple(a.get(e.variant, False) for a in alike), len(e.measured), notes))
    return tuple(rows)


@dataclass(frozen=True)
class ObservabilityCost:
    """One app of a set measured with the lab's instrumentation (on) and without it (off): the server
    histogram and the capacity gauges. `share` is the part of its CPU per request they cost."""

    variant: str  # the app with it on
    on: repetitions.Spread
    off: repetitions.Spread

    @property
    def share(self) -> float:
        return (self.on.median - self.off.median) / self.on.median

    @property
    def told_apart(self) -> bool:
        """False where both were repeated and their ranges overlap: the share is then noise, not a cost."""
        return not repetitions.indistinguishable(self.on, self.off)


def observability_costs(comparable_set: ComparableSet) -> tuple[ObservabilityCost, ...]:
    """Each app of the set judged VALID or WARN both with the lab's instrumentation and without it,
    with its CPU-seconds per 1,000 requests in each (the median over the repetitions)."""
    cpu = next(column for column in SET_COLUMNS if column.header == "app CPU-s per 1,000 requests")
    on: dict[str, repetitions.Spread] = {}
    off: dict[str, repetitions.Spread] = {}
    for entry in comparable_set.entries:
        app = entry.run.result.app if entry.run.result is not None else None
        found = entry_spread(entry, cpu) if entry.run.comparable else None
        if app is None or found is None or found.median <= 0:
            continue
        if observability_off(app):
            off[app_variant(with_observability(app))] = found
        else:
            on[entry.variant] = found
    return tuple(ObservabilityCost(variant, on[variant], off[variant]) for variant in on if variant in off)


def _known(entries: Sequence[Entry], column: Column) -> dict[str, repetitions.Spread]:
    """variant -> its figure's spread, for the entries judged VALID or WARN alone (an INVALID run
    did not measure what it claims)."""
    known = {}
    for entry in entries:
        found = entry_spread(entry, column) if entry.run.comparable else None
        if found is not None:
            known[entry.variant] = found
    return known


def _best(known: dict[str, repetitions.Spread], column: Column) -> str | None:
    if column.better is None or len(known) < 2:
        return None
    medians = {variant: s.median for variant, s in known.items()}
    return max(medians, key=medians.__getitem__) if column.better == "higher" else min(medians, key=medians.__getitem__)


def ratios_to_best(entries: Sequence[Entry], column: Column) -> dict[str, float]:
    """variant -> its figure (median over its repetitions) / the best one, between the runs
    judged VALID or WARN; empty when fewer than two such entries have it."""
    known = _known(entries, column)
    best = _best(known, column)
    if best is None or known[best].median <= 0:
        return {}
    return {variant: s.median / known[best].median for variant, s in known.items()}


def alike_the_best(entries: Sequence[Entry], column: Column) -> dict[str, bool]:
    """variant -> True where its range and the best's overlap, both made of several runs."""
    known = _known(entries, column)
    best = _best(known, column)
    if best is None:
        return {}
    return {variant: variant != best and repetitions.indistinguishable(known[best], s) for variant, s in known.items()}


@dataclass(frozen=True)
class Figure:
    """One cell of the comparison: a value (None: not recorded) and where it comes from."""

    value: float | None
    source: str = ""


@dataclass(frozen=True)
class AppFigures:
    """The cost table's four figures of one app variant in one scenario, profile and DB engine."""

    start_to_first_request_ms: Figure
    max_throughput: Figure  # req/s: the highest max sustainable rate of its sweeps; never a single run's rate
    max_rss_mib: Figure  # over the runs of that sweep
    throughput_per_mib: Figure  # req/s per MiB of that max RSS


# (label, AppFigures attribute, which figure is the best)
COMPARISON_ROWS: tuple[tuple[str, str, Literal["lower", "higher"]], ...] = (
    ("start to first request (ms)", "start_to_first_request_ms", "lower"),
    ("max throughput (req/s)", "max_throughput", "higher"),
    ("max RSS over that sweep's runs (MiB)", "max_rss_mib", "lower"),
    ("max throughput per MiB (req/s/MiB)", "throughput_per_mib", "higher"),
)

NO_SWEEP = "no sweep (make sweep APP=... SCENARIO=... finds it)"


def compare(results: Results) -> dict[tuple[str, str, str], dict[str, AppFigures]]:
    """The cost table per scenario, profile and DB engine: (scenario, profile, engine) -> app variant
    -> its figures ("" for a run that did not record its engine). Start to first request from every
    readable run (it does not depend on the load); max throughput, and the RSS and throughput per MiB
    that go with it, from sweeps only: a run at the rate it was asked for says nothing of the most the
    app sustains. Engines are never mixed in one table, as in the sets side by side."""
    runs_by_id = {r.run_id: r for r in results.runs}
    readable = [r for r in results.runs if r.readable]
    sweeps: dict[tuple[str, str, str, str], list[tuple[str, Sweep]]] = {}
    for sweep_id, sweep in results.sweeps.items():
        sweep_runs = _sweep_runs(sweep, runs_by_id)
        profile = sweep_runs[0].profile if sweep_runs else "default"
        database = sweep_runs[0].database if sweep_runs else ""
        sweeps.setdefault((sweep.scenario, profile, database, sweep_variant(sweep, runs_by_id)), []).append((sweep_id, sweep))
    groups = {(r.scenario, r.profile, r.database, r.app) for r in readable} | set(sweeps)
    table: dict[tuple[str, str, str], dict[str, AppFigures]] = {}
    for scenario, profile, database, app in sorted(groups):
        mine = [r for r in readable if (r.scenario, r.profile, r.database, r.app) == (scenario, profile, database, app)]
        starts = [s for s in (_start_ms(r) for r in mine) if s is not None]
        start = Figure(statistics.fmean(starts), f"mean of {len(starts)} run(s)") if starts else Figure(None)
        throughput, rss = _sweep_figures(sweeps.get((scenario, profile, database, app), []), runs_by_id)
        per_mib = (Figure(throughput.value / rss.value, "max throughput / max RSS of that sweep")
                   if throughput.value is not None and rss.value else Figure(None))
        table.setdefault((scenario, profile, database), {})[app] = AppFigures(start, throughput, rss, per_mib)
    return table


def _sweep_runs(sweep: Sweep, runs_by_id: dict[str, Run]) -> list[Run]:
    """Every run of the sweep's steps: each step's run, or all of its runs where it was repeated."""
    ids = [run_id for step in sweep.steps for run_id in (step.runs or (step.run_id,))]
    return [runs_by_id[run_id] for run_id in ids if run_id in runs_by_id]


def _sweep_figures(sweeps: Sequence[tuple[str, Sweep]], runs_by_id: dict[str, Run]) -> tuple[Figure, Figure]:
    """The highest max sustainable rate of `sweeps` (by directory name), and the app's max RSS over
    that sweep's runs."""
    found = [(sweep_id, s) for sweep_id, s in sweeps if s.max_sustainable_rate is not None]
    if not found:
        return Figure(None, NO_SWEEP if not sweeps else "no sustainable rate in its sweep(s)"), Figure(None, NO_SWEEP)
    best_id, best = max(found, key=lambda found: found[1].max_sustainable_rate or 0.0)
    throughput = Figure(best.max_sustainable_rate, f"max sustainable rate of sweep {best_id}")
    rss = [f.value for f in (run_max_rss(r) for r in _sweep_runs(best, runs_by_id) if r.readable)
           if f.value is not None]
    return throughput, (Figure(max(rss), f"largest of {len(rss)} run(s) of sweep {best_id}") if rss
                        else Figure(None))


def sweep_variant(sweep: Sweep, runs_by_id: dict[str, Run]) -> str:
    for step in sweep.steps:
        run = runs_by_id.get(step.run_id or "")
        if run is not None and run.result is not None:
            return run.app
    return sweep.app
