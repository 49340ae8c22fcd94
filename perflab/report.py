"""`perflab report`: one self-contained HTML page from a results directory.

Reads every run directory (result.json, audit.json, status.json, observations.json,
utilization.json, timeseries.json, the raw tool output) and every sweep directory (sweep.json) under the results
directory (docs/ARCHITECTURE.md, "Controller-side files") and writes results/report.html:
- side by side, per (scenario, asked rate, tool, resource profile): the app variants' corrected
  latency spectra on one chart with their verdicts, and a table of the same runs (achieved rate,
  p50/p99/p99.9, the app's own p99 beside the generator's with its histogram bucket, errors, the
  app's CPU-seconds per 1,000 requests, max RSS, start to first request) with each figure's ratio to the best, computed between the runs judged VALID or WARN,
  and the set's last 5 judged runs, newest first, with verdict and p99 (perflab.history's rows);
- the cost table per scenario and profile (the shape of the field report on IO threads against
  worker threads): start to first request, and from sweeps only, max throughput, the max RSS of
  that sweep's runs and throughput per MiB;
- per scenario, throughput against p99 latency from sweeps;
- per run, its latency spectrum (corrected; uncorrected dashed where the tool recorded it: wrk2
  -U, vegeta), each tier's CPU and memory over the measured phase, the verdict with every rule
  and the limiting tier (attribution.json), and the app's own p50/p99 (observations.json) beside the
  generator's;
- per run, the run over time on one axis (seconds from the measured phase's start, the warm-up
  before it shaded): per second, the answers that succeeded and failed and their corrected p50
  and p99 (timeseries.json, which `perflab collect` computes once from vegeta's raw results:
  perflab.timeseries), and the app's and the DB's busy cores every 5 s (utilization.json). wrk2
  keeps no per-request record: its runs get the same from the app's own histogram, every scrape
  interval, server-side (timeseries.json's source "app-histogram"), or the CPU alone with a line
  that says why.
An app is named by its variant everywhere (perflab.model.app_variant: MVC's threads, Quarkus'
dispatch, the profile). Only judged runs (readable, with a verdict) are drawn; only runs judged
VALID or WARN are compared: an INVALID run did not measure what it claims. A run without a
verdict, or whose files cannot be read, is named, never drawn.

The page has no script and fetches nothing: its Content-Security-Policy forbids any request, so
a reference to anything outside the file would show up as an error in the browser.

Every problem with the input (an empty or half-written run directory, an incomplete run, a run
without Prometheus data, a corrupt raw output or JSON file) is one line on stderr and one line
in the report's "Problems" list; the report is built from whatever else is readable.

Exit codes of `perflab report`:
  0  the report was written; every run was read
  3  the report was written, but problems were found (listed on stderr and in the report)
  4  no report: the results directory is missing or unreadable, or the output cannot be written
"""

from __future__ import annotations

import argparse
import datetime
import html
import math
import os
import statistics
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from perflab import repetitions, reproduce, rundir, timeseries, vegeta, wrk2
from perflab.audit import Status, Verdict
from perflab.model import LatencyDistribution, ParseError, RunResult, app_variant
from perflab.observations import ServerLatency, ServerQuantile
from perflab.observe import Utilization
from perflab.rundir import RunFileError, Sweep
from perflab.report_charts import PALETTE, Axis, Band, Chart, Panel, Series, TimeChart, render, render_time

if TYPE_CHECKING:  # perflab.history reads the runs this module loads; render_page imports it at run time
    from perflab import history

EXIT_WRITTEN = 0
EXIT_WRITTEN_WITH_PROBLEMS = 3
EXIT_NOT_WRITTEN = 4

REPORT_NAME = "report.html"
COMPARABLE = ("VALID", "WARN")  # verdicts whose figures may be compared
TIER_COLORS = {"loadgen": PALETTE[1], "app": PALETTE[0], "db": PALETTE[2], "monitoring": PALETTE[3]}
MIB = 1024.0 * 1024.0
SERVER_LATENCY_NOT_RECORDED = "not recorded (observations written before perflab read the app's histogram)"


# ---------------------------------------------------------------------------------------------
# What the report reads (every file through perflab.rundir)


@dataclass
class Run:
    run_id: str
    path: Path
    status: str = "unknown"  # complete | incomplete | empty | unknown
    result: RunResult | None = None
    verdict: Verdict | None = None
    attribution: tuple[str, tuple[str, ...]] | None = None  # attribution.json: sentence, evidence lines
    limiting_tier: str | None = None  # attribution.json's; None also when it names none
    app_max_rss_bytes: float | None = None
    server_latency: ServerLatency | None = None  # observations.json's: the app's own latency on the scenario's routes
    server_latency_missing: str = SERVER_LATENCY_NOT_RECORDED  # why there is none
    utilization: Utilization | None = None
    utilization_missing: str | None = None  # why there is no utilization to draw
    timeseries: timeseries.TimeSeries | None = None  # timeseries.json: the generator's figures per second
    timeseries_missing: str | None = None  # why there is none (None: the tool keeps no per-request record)
    raw_output_ok: bool = False
    problems: list[str] = field(default_factory=list)

    @property
    def readable(self) -> bool:
        """A complete run whose result and raw output were read."""
        return self.status == "complete" and self.result is not None and self.raw_output_ok

    @property
    def comparable(self) -> bool:
        """Its figures may be compared with other runs': readable and judged VALID or WARN."""
        return self.readable and self.verdict is not None and self.verdict.status.value in COMPARABLE

    @property
    def judged(self) -> bool:
        """Readable and with a verdict: the only runs any chart draws."""
        return self.readable and self.verdict is not None

    @property
    def state(self) -> str:
        """What the page says of the run: its verdict when it was judged, else why it is left out."""
        if self.judged:
            assert self.verdict is not None
            return self.verdict.status.value
        if self.readable:
            return "no verdict"
        return "unreadable" if self.status == "complete" else self.status

    @property
    def app(self) -> str:
        """The app's variant (perflab.model.app_variant): its identity everywhere in the page."""
        return app_variant(self.result.app) if self.result is not None else "?"

    @property
    def profile(self) -> str:
        if self.result is not None and self.result.app is not None and self.result.app.profile:
            return self.result.app.profile
        return "default"

    @property
    def scenario(self) -> str:
        if self.result is not None and self.result.scenario is not None:
            return self.result.scenario.name
        return "?"


@dataclass
class Results:
    directory: Path
    runs: list[Run]
    sweeps: dict[str, Sweep]  # by directory name
    problems: list[str]  # one line each, "<directory>: <what is wrong>"
    reproductions: list[reproduce.Reproduction] = field(default_factory=list)


def load(directory: Path) -> Results:
    """Every run and sweep under `directory`; OSError when the directory itself cannot be listed."""
    entries = sorted(p for p in directory.iterdir() if p.is_dir() and not p.name.startswith("."))
    results = Results(directory=directory, runs=[], sweeps={}, problems=[])
    for path in entries:
        if (path / rundir.SWEEP).exists():
            try:
                results.sweeps[path.name] = rundir.read_sweep(path)
            except RunFileError as exc:
                results.problems.append(f"{path.name}: {exc.short}; sweep left out")
            continue
        if (path / reproduce.FILE_NAME).exists():
            try:
                results.reproductions.append(reproduce.read(path))
            except reproduce.ReproductionError as exc:
                results.problems.append(f"{path.name}: {exc}; reproduction left out")
            continue
        run = _load_run(path)
        results.runs.append(run)
        results.problems.extend(f"{path.name}: {problem}" for problem in run.problems)
    return results


def _load_run(path: Path) -> Run:
    run = Run(run_id=path.name, path=path)
    try:
        names = {p.name for p in path.iterdir()}
    except OSError as exc:
        run.problems.append(f"cannot list the directory: {exc.strerror}")
        return run
    if not names:
        run.status = "empty"
        run.problems.append("empty directory: a run that never started, or not a run; left out")
        return run
    if rundir.STATUS not in names:
        run.problems.append("no status.json: half-written or not a perflab run directory; left out")
        return run
    try:
        status = rundir.read_status(path)
    except RunFileError as exc:
        run.status = "unknown"
        run.problems.append(f"{_shorten(exc.short, 200)}; left out")
        return run
    run.status = status.status
    if status.status == "incomplete":
        reason = (status.reason or "no reason recorded").splitlines()[0].strip()
        where = f" at {status.failed_step!r}" if status.failed_step else ""
        run.problems.append(f"incomplete run{where}: {_shorten(reason, 160)}; left out")
        return run

    if rundir.RESULT not in names:
        run.problems.append("status.json says complete but result.json is missing; left out")
        return run
    try:
        run.result = rundir.read_result(path)
    except RunFileError as exc:
        run.problems.append(f"{_shorten(exc.short, 200)}; left out")
        return run

    problem = _check_raw_output(path, run.result)
    if problem:
        run.problems.append(problem)
    else:
        run.raw_output_ok = True

    if rundir.AUDIT in names:
        try:
            run.verdict = rundir.read_audit(path)
        except RunFileError as exc:
            run.problems.append(f"{_shorten(exc.short, 200)}; the run has no verdict and is left out of the charts")
    else:
        run.problems.append("no audit.json: the run has no verdict and is left out of the charts")

    if rundir.ATTRIBUTION in names:
        try:
            found = rundir.read_attribution(path)
            run.attribution = (found.sentence, found.evidence)
            run.limiting_tier = found.limiting_tier
        except RunFileError as exc:
            run.problems.append(f"{_shorten(exc.short, 200)}; the limiting tier is not shown")

    if rundir.OBSERVATIONS in names:
        try:
            observations = rundir.read_observations(path)
            run.app_max_rss_bytes = observations.app_max_rss_bytes
            run.server_latency = observations.server_latency
            run.server_latency_missing = observations.unobserved.get("server_latency", SERVER_LATENCY_NOT_RECORDED)
        except RunFileError as exc:
            run.problems.append(f"{_shorten(exc.short, 200)}; its figures are not used")

    if rundir.UTILIZATION in names:
        try:
            run.utilization = rundir.read_utilization(path)
            if not any(s.busy_cores or s.memory_bytes for s in run.utilization.tiers.values()):
                raise RunFileError(path / rundir.UTILIZATION,
                                   "holds no samples (Prometheus returned nothing for the window)")
        except RunFileError as exc:
            run.utilization = None
            run.utilization_missing = f"utilization.json cannot be used: {exc.problem}"
            run.problems.append(f"{_shorten(exc.short, 200)}; utilization not shown")
    else:
        run.utilization_missing = "not recorded: no utilization.json (Prometheus had no data for this run)"
        run.problems.append("no utilization.json: no Prometheus data for this run; utilization not recorded")

    if rundir.TIMESERIES in names:
        try:
            run.timeseries = rundir.read_timeseries(path)
        except RunFileError as exc:
            run.timeseries_missing = f"timeseries.json cannot be used ({_shorten(exc.problem, 120)})"
            run.problems.append(f"{run.timeseries_missing}; the run's per-second series are not shown")
    elif run.result.tool == "vegeta":
        run.timeseries_missing = ("not computed: the run was collected before perflab wrote timeseries.json; "
                                  f"perflab collect --timeseries {path.name} computes it once from vegeta's raw results")
    return run


def _check_raw_output(path: Path, result: RunResult) -> str | None:
    """A problem sentence when the tool's raw output beside result.json is missing or corrupt.

    wrk2: its text, and the percentile table beside it where the bench wrote one
    (wrk2-<phase>.txt, wrk2-<phase>-percentiles.json); vegeta: its results (JSON lines, gzip).
    """
    if result.tool == "k6":
        return "a k6 run: k6 was retired (AGPL) and its output is no longer read; left out"
    if result.tool not in ("wrk2", "vegeta"):
        return f"result.json names an unknown tool {result.tool!r}; left out"
    name = result.raw_output
    if not name:
        return "result.json names no raw output; left out"
    raw = path / name
    try:
        data = raw.read_bytes()
    except FileNotFoundError:
        return f"raw output {name} is missing; left out"
    except OSError as exc:
        return f"raw output {name} cannot be read ({exc}); left out"
    try:
        if result.tool == "vegeta":
            vegeta.check(data)
            return None
        output = wrk2.parse(_text(data, name))
    except ParseError as exc:
        return f"raw output {name} is corrupt ({_shorten(str(exc), 120)}); left out"
    table = raw.with_name(f"{raw.stem}-percentiles.json")
    if not table.is_file():
        return None
    try:
        wrk2.to_run_result(output, result.target_rate, wrk2.parse_percentiles(_text(table.read_bytes(), table.name)))
    except ParseError as exc:
        return f"percentile table {table.name} is corrupt ({_shorten(str(exc), 120)}); left out"
    except OSError as exc:
        return f"percentile table {table.name} cannot be read ({exc}); left out"
    return None


def _text(data: bytes, name: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise ParseError(f"{name} is not text (binary or not UTF-8)") from None


def _shorten(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


# ---------------------------------------------------------------------------------------------
# The page


def _esc(value: object) -> str:
    return html.escape(str(value), quote=True)


def _fmt(value: float | None, digits: int = 3) -> str:
    if value is None:
        return "—"
    if value == 0:
        return "0"
    if abs(value) >= 999.5:
        return f"{value:,.0f}"
    return f"{value:.{digits}g}"


def _spectrum_points(latency: LatencyDistribution) -> tuple[tuple[float, float], ...]:
    """(fraction, ms) of every percentile below 100%: the full spectrum where the tool printed one."""
    if latency.spectrum:
        points = [(p.percentile, p.value_ms) for p in latency.spectrum if p.percentile < 1.0]
    else:
        points = [(float(key) / 100.0, value) for key, value in latency.percentiles_ms.items() if float(key) < 100.0]
        if latency.min_ms is not None:
            points.append((0.0, latency.min_ms))
    return tuple(sorted(points))


# ---------------------------------------------------------------------------------------------
# Side by side: the apps at one scenario, rate, tool and profile


@dataclass(frozen=True, order=True)
class SetKey:
    """What makes runs comparable: the same scenario at the same asked rate, with the same load
    generator, on the same resource profile."""

    scenario: str
    rate: float
    tool: str
    profile: str

    @property
    def title(self) -> str:
        return f"{self.scenario} at {_fmt(self.rate)} req/s, {self.tool}, profile {self.profile}"


def set_key(run: Run) -> SetKey | None:
    if run.result is None:
        return None
    return SetKey(run.scenario, run.result.target_rate, run.result.tool, run.profile)


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


def _percentile(run: Run, key: str) -> float | None:
    return run.result.latency_corrected.percentiles_ms.get(key) if run.result is not None else None


def _start_ms(run: Run) -> float | None:
    app = run.result.app if run.result is not None else None
    return app.start_to_first_request_ms if app is not None else None


def _server_p99(run: Run) -> float | None:
    return run.server_latency.p99.value_ms if run.server_latency is not None else None


def bucket_text(quantile: ServerQuantile) -> str:
    """The histogram bucket an app's quantile fell in: the estimate's resolution."""
    high = f"{_fmt(quantile.bucket_high_ms)} ms" if quantile.bucket_high_ms is not None else "∞"
    return f"bucket {_fmt(quantile.bucket_low_ms)}–{high}"


@dataclass(frozen=True)
class Column:
    header: str
    figure: Callable[[Run], float | None]
    better: Literal["lower", "higher"] | None  # None: no ratio to the best (errors: a judged run has none)
    note: Callable[[Run], str] | None = None  # a line under the figure of a run tabled alone


SET_COLUMNS = (
    Column("achieved req/s", lambda r: r.result.achieved_rate if r.result is not None else None, "higher"),
    Column("p50 ms", lambda r: _percentile(r, "50"), "lower"),
    Column("p99 ms", lambda r: _percentile(r, "99"), "lower"),
    # The app's own p99 (its histogram), beside the generator's: an estimate within its bucket, not ranked.
    Column("server p99 ms", _server_p99, None,
           lambda r: bucket_text(r.server_latency.p99) if r.server_latency is not None else ""),
    Column("p99.9 ms", lambda r: _percentile(r, "99.9"), "lower"),
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


def _ratio_text(ratio: float | None, alike: bool = False) -> str:
    if ratio is None:
        return ""
    if math.isclose(ratio, 1.0, rel_tol=1e-9):
        return "best"
    return f"{ratio:.3g}× best, not distinguishable (ranges overlap)" if alike else f"{ratio:.3g}× best"


def variant_colors(runs: Sequence[Run]) -> dict[str, str]:
    """One colour per variant for the whole page, so that an app reads the same in every chart."""
    variants = sorted({r.app for r in runs if r.judged})
    return {variant: PALETTE[i % len(PALETTE)] for i, variant in enumerate(variants)}


def _side_by_side_section(runs: Sequence[Run], colors: dict[str, str],
                          recent: dict[SetKey, list[history.Row]]) -> str:
    sets = side_by_side(runs)
    if not sets:
        return "<p>No judged run yet: nothing to draw.</p>"
    # Where apps meet first: a set of one app answers nothing side by side.
    return "".join(_set_section(s, colors, recent.get(s.key, []))
                   for s in sorted(sets, key=lambda s: -len(s.entries)))


def _set_section(comparable_set: ComparableSet, colors: dict[str, str], recent: Sequence[history.Row]) -> str:
    series = []
    for entry in comparable_set.entries:
        result = entry.run.result
        assert result is not None
        latency = result.latency_corrected
        label = (f"{entry.variant}: {entry.run.state} ({entry.run.run_id[:16]}); p99 "
                 f"{_fmt(latency.percentiles_ms.get('99'))} ms, max {_fmt(latency.max_ms)} ms")
        series.append(Series(label, _spectrum_points(latency), colors.get(entry.variant, PALETTE[6])))
    notes = ["Corrected latency: measured from each request's intended send time; server p99: the app's own, from "
             "its histogram on the scenario's routes (without the network, the generator or a queue in front of its "
             "request threads), known to within the bucket shown. Ratios compare only the "
             "runs judged VALID or WARN."]
    earlier = [run_id for e in comparable_set.entries for run_id in e.not_drawn]
    if earlier:
        notes.append("Other judged runs of these variants, not drawn (the latest VALID or WARN run is): "
                     + ", ".join(earlier))
    if comparable_set.left_out:
        notes.append("Not drawn, not compared: " + ", ".join(f"{run_id} ({state})"
                                                             for run_id, state in comparable_set.left_out))
    chart = Chart(
        title=f"{comparable_set.key.title}: latency by percentile",
        x=Axis("percentile (log scale of 1/(1-p))", "percentile"),
        y=Axis("latency (ms, log scale)", "log"),
        series=tuple(series), notes=tuple(notes), css_class="chart chart-side-by-side",
    )
    return (f'<section class="side-by-side"><h3>{_esc(comparable_set.key.title)}</h3>{render(chart)}'
            f"{_set_table(comparable_set)}{_recent_table(recent)}</section>")


def _recent_table(recent: Sequence[history.Row]) -> str:
    """The set's last judged runs, every variant, newest first: perflab history's rows."""
    if not recent:
        return ""
    rows = "".join(
        f'<tr><td>{_esc(r.started_at or "?")}</td><td><a href="#run-{_esc(r.run_id)}">{_esc(r.run_id)}</a></td>'
        f'<td>{_esc(r.variant)}</td><td class="verdict {_esc(r.verdict)}">{_esc(r.verdict)}</td>'
        f"<td>{_esc(_fmt(r.achieved_rate))}</td><td>{_esc(_fmt(r.p99_ms))}</td></tr>"
        for r in recent
    )
    return (f'<table class="recent"><caption>The last {len(recent)} judged run(s) of this set, newest first '
            "(<code>make history</code> writes every one)</caption><thead><tr><th>started</th><th>run</th>"
            "<th>app</th><th>verdict</th><th>achieved req/s</th><th>p99 ms</th></tr></thead>"
            f"<tbody>{rows}</tbody></table>")


def _set_table(comparable_set: ComparableSet) -> str:
    rows = []
    for row in set_rows(comparable_set):
        cells = []
        for value, ratio, found, alike, note in zip(row.figures, row.ratios, row.spreads, row.alike, row.notes):
            spread = (f'<span class="range">{_esc(_fmt(found.low))}–{_esc(_fmt(found.high))}</span>'
                      if found is not None and found.runs > 1 else "")
            noted = f'<span class="source">{_esc(note)}</span>' if note else ""
            cells.append(f'<td>{_esc(_fmt(value))}{spread}<span class="ratio">{_esc(_ratio_text(ratio, alike))}</span>'
                         f"{noted}</td>")
        compared = "" if row.state in COMPARABLE else '<span class="ratio">not compared</span>'
        repeated = f'<span class="ratio">median of {row.runs} runs</span>' if row.runs > 1 else ""
        rows.append(f'<tr><th>{_esc(row.variant)}{repeated}</th><td><a href="#run-{_esc(row.run_id)}">{_esc(row.run_id)}</a>'
                    f'</td><td class="verdict {_esc(row.state)}">{_esc(row.state)}{compared}</td>{"".join(cells)}</tr>')
    header = "".join(f"<th>{_esc(c.header)}</th>" for c in SET_COLUMNS)
    return (f'<table class="side-by-side"><thead><tr><th>app</th><th>run</th><th>verdict</th>{header}</tr></thead>'
            f"<tbody>{''.join(rows)}</tbody></table>")


def _run_latency_chart(run: Run, color: str) -> str:
    """One judged run's spectrum: corrected, and uncorrected dashed where the tool recorded it."""
    result = run.result
    assert result is not None
    series = [Series(f"corrected; max {_fmt(result.latency_corrected.max_ms)} ms",
                     _spectrum_points(result.latency_corrected), color)]
    if result.latency_uncorrected is not None:
        series.append(Series(f"uncorrected (from the actual send); max {_fmt(result.latency_uncorrected.max_ms)} ms",
                             _spectrum_points(result.latency_uncorrected), color, dashed=True))
    chart = Chart(
        title=f"{run.app}, {run.scenario} at {result.target_rate:g}/s, {result.tool}, {run.state}",
        x=Axis("percentile (log scale of 1/(1-p))", "percentile"), y=Axis("latency (ms, log scale)", "log"),
        series=tuple(series), width=460, height=240, css_class="chart chart-latency",
    )
    return render(chart)


def _sweep_variant(sweep: Sweep, runs_by_id: dict[str, Run]) -> str:
    for step in sweep.steps:
        run = runs_by_id.get(step.run_id or "")
        if run is not None and run.result is not None:
            return run.app
    return sweep.app


def _reproduction_section(reproductions: Sequence[reproduce.Reproduction]) -> str:
    """Each field report's experiment as the lab ran it (make reproduce): their figures, the lab's
    runs, and every relation the report found, reproduced or not."""
    if not reproductions:
        return "<p>No reproduction recorded (<code>make reproduce REPORT=1|2|3|4|all</code> makes one).</p>"
    parts = []
    for found in sorted(reproductions, key=lambda r: (r.report, r.directory)):
        theirs = "".join(f"<tr><th>{_esc(label)}</th><td>{_esc(figures)}</td></tr>" for label, figures in found.theirs)
        runs = "".join(f"<tr><th>{_esc(run.label)}</th><td>{_esc(run.run or '-')}</td><td>{_esc(run.state)}</td></tr>"
                       for run in found.runs)
        relations = "".join(
            f'<li class="relation {_esc(status.replace(" ", "-"))}"><strong>{_esc(status)}</strong>: {_esc(claim)}'
            f"<br><small>{_esc(figures)}</small></li>" for claim, status, figures in found.relations)
        note = f"<p>{_esc(found.note)}</p>" if found.note else ""
        parts.append(
            f'<section class="reproduction"><h3>Report {found.report}: {_esc(found.title)}</h3>'
            f"<p>On this lab: {_esc(found.summary)} ({_esc(found.directory)}).</p>{note}"
            f"<table><caption>The report's figures (theirs, from their hardware)</caption>{theirs}</table>"
            f"<table><caption>The lab's runs (each in the runs below)</caption>{runs}</table>"
            f"<ul>{relations}</ul></section>")
    return "".join(parts)


def _sweep_section(sweeps: dict[str, Sweep], runs_by_id: dict[str, Run]) -> str:
    if not sweeps:
        return "<p>No sweep recorded (<code>make sweep APP=... SCENARIO=...</code> makes one).</p>"
    parts = []
    for scenario in sorted({s.scenario for s in sweeps.values()}):
        series = []
        slos = set()
        mine = sorted((sweep_id, s) for sweep_id, s in sweeps.items() if s.scenario == scenario)
        for i, (sweep_id, sweep) in enumerate(mine):
            points: list[tuple[float, float]] = []
            ranges: list[tuple[float, float] | None] = []
            hollow: set[int] = set()
            for step in sweep.steps:
                if step.p99_ms is None or step.verdict is None:  # never judged: not drawn
                    continue
                if step.verdict not in COMPARABLE or step.within_slo is False or step.status != "complete":
                    hollow.add(len(points))
                points.append((step.achieved_rate if step.achieved_rate is not None else step.rate, step.p99_ms))
                ranges.append(step.p99_range_ms)
            if sweep.slo_p99_ms is not None:
                slos.add(sweep.slo_p99_ms)
            best = (f"max sustainable {_fmt(sweep.max_sustainable_rate)} req/s"
                    if sweep.max_sustainable_rate is not None else "no sustainable rate")
            label = f"{_sweep_variant(sweep, runs_by_id)} ({sweep_id[:16]}): {best}"
            if sweep.stopped_because:
                label += f"; stopped: {sweep.stopped_because}"
            repeated = max((len(step.runs) for step in sweep.steps), default=0)
            if repeated > 1:
                label += f"; each rate {repeated} runs: their median p99, the bar their range"
            series.append(Series(label, tuple(points), PALETTE[i % len(PALETTE)], markers=True,
                                 hollow=frozenset(hollow), ranges=tuple(ranges) if repeated > 1 else ()))
        chart = Chart(
            title=f"{scenario}: p99 latency against throughput",
            x=Axis("achieved throughput (req/s)", "linear", minimum=0.0),
            y=Axis("p99 latency (ms, log scale)", "log"),
            series=tuple(series),
            horizontal_lines=tuple((slo, f"SLO p99 {slo:g} ms") for slo in sorted(slos)),
            notes=("Open circles: a step that failed the audit, missed the SLO or did not complete.",),
            css_class="chart chart-sweep",
        )
        parts.append(f'<section class="sweep"><h3>{_esc(scenario)}</h3>{render(chart)}</section>')
    return "".join(parts)


def _utilization_charts(run: Run) -> str:
    utilization = run.utilization
    if utilization is None:
        return f'<p class="not-recorded">Per-tier utilization {_esc(run.utilization_missing or "not recorded")}.</p>'
    cpu, memory = [], []
    for tier in sorted(utilization.tiers, key=lambda t: (list(TIER_COLORS).index(t) if t in TIER_COLORS else 99, t)):
        series = utilization.tiers[tier]
        color = TIER_COLORS.get(tier, PALETTE[6])
        if series.busy_cores and series.allotted_cores:
            allotted = series.allotted_cores
            cpu.append(Series(f"{tier} ({allotted:g} cores)",
                              tuple((t - utilization.start, v / allotted) for t, v in series.busy_cores), color))
        if series.memory_bytes:
            memory.append(Series(tier, tuple((t - utilization.start, v / MIB) for t, v in series.memory_bytes), color))
    seconds = Axis("seconds into the measured phase", "linear", minimum=0.0)
    charts = [
        Chart("CPU busy / allotted cores", seconds, Axis("utilization (1 = every allotted core)", "linear",
              minimum=0.0, maximum=1.0), tuple(cpu), width=460, height=240, css_class="chart chart-cpu"),
        Chart("resident memory", seconds, Axis("MiB", "linear", minimum=0.0), tuple(memory),
              width=460, height=240, css_class="chart chart-memory"),
    ]
    return '<div class="pair">' + "".join(render(c) for c in charts) + "</div>"


# The run over time: the generator's per-second figures and the tiers' CPU on one axis
CLOCK_TOLERANCE_S = 10.0  # utilization.json's window start against vegeta's t0: whole seconds, clock skew, Ansible's lag
OVER_TIME_COLORS = {"ok": PALETTE[6], "errors": PALETTE[1], "p50": PALETTE[5], "p99": PALETTE[3]}
WRK2_OVER_TIME = ("wrk2 keeps only a histogram, no per-request records: its throughput and latency over time come from "
                  "the app's own histogram in Prometheus, and this run has no timeseries.json from it (the app exported "
                  "none, Prometheus did not answer at collect, or the run was collected before: perflab collect "
                  "--timeseries RUN_DIR reads it while Prometheus holds the window).")
CPU_NOTE = ("CPU: busy cores from utilization.json (Prometheus, each sample a rate over the scrapes before it), "
            "over the measured phase only.")
_GAP = (math.nan, math.nan)


def _per_step(series: timeseries.TimeSeries, values: Callable[[timeseries.Phase], Sequence[float | None]],
              per_second: bool = False) -> tuple[tuple[float, float], ...]:
    """One figure of every step (a second, or a scrape interval) of every phase at the middle of its
    step (PER_SECOND: a count over the step, as a count a second); a gap between phases and where a
    step has no value."""
    step = series.step_s
    points: list[tuple[float, float]] = []
    scale = 1.0 / step if per_second else 1.0
    for phase in sorted(series.phases, key=lambda p: p.start_s):
        if points:
            points.append(_GAP)
        points += [(phase.start_s + (k + 0.5) * step, math.nan if v is None else v * scale)
                   for k, v in enumerate(values(phase))]
    return tuple(points)


def _cpu_panel(run: Run, origin: float) -> Panel | None:
    """The app's and the DB's busy cores, each sample at its time on the run's axis."""
    utilization = run.utilization
    if utilization is None:
        return None
    series = []
    for tier in ("app", "db"):
        samples = utilization.tiers.get(tier)
        if samples is None or not samples.busy_cores:
            continue
        cores = f" of {samples.allotted_cores:g} allotted" if samples.allotted_cores else ""
        series.append(Series(f"{tier} CPU: busy cores{cores} (utilization.json)",
                             tuple((t - origin, v) for t, v in samples.busy_cores), TIER_COLORS[tier]))
    if not series:
        return None
    return Panel("cpu", Axis("CPU (busy cores)", "linear", minimum=0.0), tuple(series))


def _over_time(run: Run) -> str:
    """The run over time (module docstring): one chart, or one line that says why there is none."""
    result = run.result
    assert result is not None
    utilization, series = run.utilization, run.timeseries
    panels: list[Panel] = []
    bands: list[Band] = []
    notes: list[str] = []
    if series is not None:
        origin = series.origin_unix_s
        from_app = series.source == timeseries.APP_HISTOGRAM_SOURCE
        whose = "the app histogram's" if from_app else "vegeta's"
        ok = _per_step(series, lambda p: p.ok, per_second=True)
        errors = _per_step(series, lambda p: p.errors, per_second=True)
        total_errors = sum(sum(p.errors) + p.after_window_errors for p in series.phases)
        succeeded = (f"succeeded per second, every {series.step_s:g} s (the app's count)" if from_app
                     else "succeeded per second (achieved throughput)")
        panels.append(Panel(
            "throughput", Axis("answers / s", "linear", minimum=0.0),
            (Series(succeeded, ok, OVER_TIME_COLORS["ok"]),
             Series(f"failed per second ({total_errors} in all)", errors, OVER_TIME_COLORS["errors"])),
            horizontal_lines=((result.target_rate, f"asked {_fmt(result.target_rate)}/s"),)))
        latency = ("of the step's answers, server-side (the app's histogram)" if from_app
                   else "of the second's answers (corrected)")
        panels.append(Panel(
            "latency", Axis("latency (ms, log scale)", "log"),
            (Series(f"p50 {latency}", _per_step(series, lambda p: p.p50_ms), OVER_TIME_COLORS["p50"]),
             Series(f"p99 {latency}", _per_step(series, lambda p: p.p99_ms), OVER_TIME_COLORS["p99"]))))
        if not from_app:  # the app's series say where they come from in the file's own note
            notes.append("Per second of the answers' end, from vegeta's raw results; latency corrected: measured from "
                         "each request's scheduled send.")
        warmup = series.phase("warmup")
        if warmup is not None:
            bands.append(Band(warmup.start_s, warmup.start_s + warmup.duration_s, "warm-up (not measured)"))
        elif result.scenario is not None and result.scenario.warmup_s > 0:
            missing = ("the app's histogram was not read over it" if from_app
                       else "its raw results are not in the run directory")
            notes.append(f"The {result.scenario.warmup_s:g} s warm-up is not shown: {missing}.")
        late = [(p, p.after_window_ok + p.after_window_errors) for p in series.phases]
        notes += [f"{count} answer(s) of the {'warm-up' if p.phase == 'warmup' else 'measured phase'} ended after its "
                  f"{p.duration_s:g} s window (up to {p.after_window_s:g} s after): not in its seconds."
                  for p, count in late if count]
        notes += list(series.notes)
        if utilization is not None and abs(utilization.start - origin) > CLOCK_TOLERANCE_S:
            notes.append(f"CPU not drawn here: utilization.json's window starts {utilization.start - origin:+,.0f} s "
                         f"from {whose} measured phase (other clocks, or files of another run).")
        else:
            cpu = _cpu_panel(run, origin)
            if cpu is not None:
                panels.append(cpu)
                notes.append(CPU_NOTE)
    else:
        if utilization is None:
            why = WRK2_OVER_TIME if result.tool == "wrk2" else f"Per-second figures {run.timeseries_missing}."
            return (f'<p class="not-recorded">Over time: nothing to draw. No utilization.json (Prometheus had no data '
                    f"for this run). {_esc(why)}</p>")
        cpu = _cpu_panel(run, utilization.start)
        if cpu is None:
            return '<p class="not-recorded">Over time: nothing to draw: utilization.json has no app or DB CPU.</p>'
        panels.append(cpu)
        notes += [CPU_NOTE,
                  WRK2_OVER_TIME if result.tool == "wrk2" else f"Per-second figures {run.timeseries_missing}."]
    chart = TimeChart(
        title=f"{run.app}, {run.scenario} at {result.target_rate:g}/s, {result.tool}: over time",
        x=Axis("seconds from the start of the measured phase", "linear"),
        panels=tuple(panels), bands=tuple(bands), notes=tuple(notes), css_class="chart chart-timeseries",
    )
    return '<div class="over-time">' + render_time(chart) + "</div>"


def _run_rows(runs: Sequence[Run]) -> str:
    rows = []
    for run in sorted(runs, key=lambda r: r.run_id, reverse=True):
        result = run.result
        verdict = run.state
        cells: list[str]
        if result is not None:
            latency = result.latency_corrected
            cells = [
                run.app, run.scenario, result.tool, _fmt(result.target_rate), _fmt(result.achieved_rate),
                _fmt(latency.percentiles_ms.get("50")), _fmt(latency.percentiles_ms.get("99")),
                _fmt(latency.percentiles_ms.get("99.9")), str(result.errors.total()),
            ]
        else:
            cells = ["", "", "", "", "", "", "", "", ""]
        link = f'<a href="#run-{_esc(run.run_id)}">{_esc(run.run_id)}</a>'
        rows.append(f"<tr><td>{link}</td>" + "".join(f"<td>{_esc(c)}</td>" for c in cells)
                    + f'<td class="verdict {_esc(verdict)}">{_esc(verdict)}</td></tr>')
    header = ["run", "app", "scenario", "tool", "target/s", "achieved/s", "p50 ms", "p99 ms", "p99.9 ms",
              "errors", "verdict"]
    return ('<table class="runs"><thead><tr>' + "".join(f"<th>{h}</th>" for h in header)
            + "</tr></thead><tbody>" + "".join(rows) + "</tbody></table>")


_STATUS_ORDER = (Status.INVALID, Status.WARN, Status.VALID, Status.NOT_EVALUATED)


def server_latency_text(run: Run) -> str:
    """The app's own p50/p99 (p99.9) with their buckets, beside the generator's; or why they are not known."""
    server = run.server_latency
    if server is None:
        missing = run.server_latency_missing
        return f"Server-side latency {missing}." if missing == SERVER_LATENCY_NOT_RECORDED else \
            f"Server-side latency not observed: {missing}."
    quantiles = [("p50", server.p50), ("p99", server.p99), *([("p99.9", server.p999)] if server.p999 else [])]
    own = ", ".join(f"{name} {_fmt(q.value_ms)} ms ({bucket_text(q)})" for name, q in quantiles)
    generator = ", ".join(f"p{key} {_fmt(_percentile(run, key))} ms" for key in ("50", "99")
                          if _percentile(run, key) is not None)
    return (f"Server-side latency (the app's own histogram, {server.requests:,.0f} requests on "
            f"{', '.join(server.routes)}): {own}; the generator's corrected {generator}.")


def _run_section(run: Run, colors: dict[str, str]) -> str:
    parts = [f'<section class="run" id="run-{_esc(run.run_id)}"><h3>{_esc(run.run_id)}: '
             f'<span class="verdict {_esc(run.state)}">{_esc(run.state)}</span></h3>']
    if run.result is not None:
        result = run.result
        start = result.app.start_to_first_request_ms if result.app else None
        parts.append(f"<p>{_esc(run.app)}, scenario {_esc(run.scenario)}, {_esc(result.tool)}: "
                     f"{_fmt(result.achieved_rate)} of {_fmt(result.target_rate)} req/s, "
                     f"{result.requests} requests in {result.duration_s:.1f} s, "
                     f"{_esc(result.started_at or '?')} to {_esc(result.ended_at or '?')}; "
                     f"start to first request {_fmt(start)} ms.</p>")
        parts.append(f'<p class="server-latency">{_esc(server_latency_text(run))}</p>')
    for problem in run.problems:
        parts.append(f'<p class="problem">{_esc(problem)}</p>')
    if run.verdict is not None:
        verdict = run.verdict
        status = verdict.status.value
        parts.append(f'<p>Verdict: <span class="verdict {_esc(status)}">{_esc(status)}</span></p>')
        if verdict.app_cost:
            parts.append(f"<p>app cost: {_esc(verdict.app_cost)}</p>")
        if run.attribution is not None:
            sentence, evidence = run.attribution
            parts.append(f'<p class="attribution">Limiting tier: {_esc(sentence)}</p>')
            if evidence:
                parts.append("<ul>" + "".join(f"<li>{_esc(line)}</li>" for line in evidence) + "</ul>")
        rules = sorted(verdict.rules, key=lambda r: _STATUS_ORDER.index(r.status))
        parts.append('<table class="rules"><thead><tr><th>rule</th><th>outcome</th><th>evidence</th></tr></thead><tbody>'
                     + "".join(f'<tr><td>{_esc(r.rule)}</td><td class="verdict {_esc(r.status.value)}">'
                               f'{_esc(r.status.value)}</td><td>{_esc(r.evidence)}</td></tr>' for r in rules)
                     + "</tbody></table>")
    if run.judged:
        parts.append('<div class="pair">' + _run_latency_chart(run, colors.get(run.app, PALETTE[0])) + "</div>")
        parts.append(_utilization_charts(run))
        parts.append(_over_time(run))
    elif run.readable:
        parts.append('<p class="not-recorded">Not drawn: the run has no verdict.</p>')
    parts.append("</section>")
    return "".join(parts)


@dataclass(frozen=True)
class Figure:
    """One cell of the comparison: a value (None: not recorded) and where it comes from."""

    value: float | None
    source: str = ""


@dataclass(frozen=True)
class AppFigures:
    """The cost table's four figures of one app variant in one scenario and profile."""

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


def compare(results: Results) -> dict[tuple[str, str], dict[str, AppFigures]]:
    """The cost table per scenario and profile: (scenario, profile) -> app variant -> its
    figures. Start to first request from every readable run (it does not depend on the load);
    max throughput, and the RSS and throughput per MiB that go with it, from sweeps only: a run
    at the rate it was asked for says nothing of the most the app sustains."""
    runs_by_id = {r.run_id: r for r in results.runs}
    readable = [r for r in results.runs if r.readable]
    sweeps: dict[tuple[str, str, str], list[tuple[str, Sweep]]] = {}
    for sweep_id, sweep in results.sweeps.items():
        sweep_runs = _sweep_runs(sweep, runs_by_id)
        profile = sweep_runs[0].profile if sweep_runs else "default"
        sweeps.setdefault((sweep.scenario, profile, _sweep_variant(sweep, runs_by_id)), []).append((sweep_id, sweep))
    groups = {(r.scenario, r.profile, r.app) for r in readable} | set(sweeps)
    table: dict[tuple[str, str], dict[str, AppFigures]] = {}
    for scenario, profile, app in sorted(groups):
        mine = [r for r in readable if (r.scenario, r.profile, r.app) == (scenario, profile, app)]
        starts = [s for s in (_start_ms(r) for r in mine) if s is not None]
        start = Figure(statistics.fmean(starts), f"mean of {len(starts)} run(s)") if starts else Figure(None)
        throughput, rss = _sweep_figures(sweeps.get((scenario, profile, app), []), runs_by_id)
        per_mib = (Figure(throughput.value / rss.value, "max throughput / max RSS of that sweep")
                   if throughput.value is not None and rss.value else Figure(None))
        table.setdefault((scenario, profile), {})[app] = AppFigures(start, throughput, rss, per_mib)
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


def _comparison_section(results: Results) -> str:
    table = compare(results)
    if not table:
        return "<p>No complete run yet.</p>"
    parts = []
    for (scenario, profile), apps in table.items():
        rows = []
        for label, attribute, better in COMPARISON_ROWS:
            figures: dict[str, Figure] = {app: getattr(f, attribute) for app, f in apps.items()}
            known = [f.value for f in figures.values() if f.value is not None]
            best = (max(known) if better == "higher" else min(known)) if len(known) > 1 else None
            cells = []
            for figure in figures.values():
                ratio = figure.value / best if figure.value is not None and best else None
                source = figure.source or "not recorded"
                cells.append(f'<td>{_esc(_fmt(figure.value, 4))}<span class="ratio">{_esc(_ratio_text(ratio))}</span>'
                             f'<span class="source">{_esc(source)}</span></td>')
            rows.append(f"<tr><th>{_esc(label)}</th>{''.join(cells)}</tr>")
        header = "".join(f"<th>{_esc(a)}</th>" for a in apps)
        parts.append(f'<h3>{_esc(scenario)}, profile {_esc(profile)}</h3><table class="compare"><thead><tr><th></th>'
                     f"{header}</tr></thead><tbody>{''.join(rows)}</tbody></table>")
    return "".join(parts)


_STYLE = """
body { font: 14px/1.4 "DejaVu Sans", Arial, sans-serif; margin: 1.5em auto; max-width: 1200px; color: #222; }
h1 { font-size: 1.6em; } h2 { border-bottom: 1px solid #ccc; margin-top: 2em; } h3 { margin-bottom: .3em; }
table { border-collapse: collapse; margin: .5em 0; } caption { text-align: left; color: #555; font-size: .9em; } th, td { border: 1px solid #ddd; padding: 2px 6px; text-align: left; }
td { vertical-align: top; } .runs td:nth-child(n+5) { text-align: right; }
.verdict.VALID { background: #d9f2d9; } .verdict.WARN { background: #fff0c2; } .verdict.INVALID { background: #f8d0d0; }
.relation.reproduced strong { color: #1b6e1b; } .relation.not-reproduced strong { color: #a11; } .relation.not-judged strong { color: #666; } .relation.not-runnable-here strong { color: #666; }
.verdict.NOT_EVALUATED { color: #777; } .problem { color: #a00000; } .not-recorded { color: #777; font-style: italic; }
.source { display: block; color: #777; font-size: .8em; } .ratio { display: block; color: #555; font-size: .8em; }
.range { display: block; color: #333; font-size: .8em; }
table.side-by-side td { text-align: right; } table.side-by-side td:nth-child(2), table.side-by-side td:nth-child(3) { text-align: left; }
.figure { display: inline-block; margin: .5em 1em .5em 0; vertical-align: top; }
.figure figcaption { max-width: 640px; font-size: .85em; }
.legend { list-style: none; padding: 0; margin: .2em 0; } .legend li { margin: .1em 0; }
.swatch { display: inline-block; width: 24px; height: 0; border-top: 3px solid; margin-right: 6px; vertical-align: middle; }
.swatch.dashed { border-top-style: dashed; } .note { color: #555; margin: .2em 0; }
svg text { font: 11px "DejaVu Sans", Arial, sans-serif; fill: #333; } svg .chart-title { font-weight: bold; font-size: 12px; }
svg .plot-area { fill: #fbfbfb; stroke: #999; } svg .grid { stroke: #e4e4e4; }
svg .series { fill: none; stroke-width: 1.8; } svg .range { fill: none; stroke-width: 1.2; } svg .reference { stroke: #a00000; stroke-dasharray: 3 3; }
svg .reference-label { fill: #a00000; } .pair { display: flex; flex-wrap: wrap; }
svg .band { fill: #000; fill-opacity: .09; } svg .band-label { fill: #555; font-style: italic; }
.swatch.band { height: 10px; border-top: 0; background: rgba(0, 0, 0, .09); } .figure figcaption.wide { max-width: 920px; }
"""


def render_page(results: Results, generated_at: datetime.datetime) -> str:
    runs_by_id = {r.run_id: r for r in results.runs}
    problems = ("<ul class=\"problems\">" + "".join(f'<li class="problem">{_esc(p)}</li>' for p in results.problems)
                + "</ul>") if results.problems else "<p>None: every run directory was read.</p>"
    summary = (f"{len(results.runs)} run directories ({sum(r.readable for r in results.runs)} complete and readable, "
               f"{sum(r.comparable for r in results.runs)} judged VALID or WARN), {len(results.sweeps)} sweep(s), "
               f"{len(results.problems)} problem(s).")
    colors = variant_colors(results.runs)
    from perflab import history  # here, not at the top: perflab.history imports this module

    recent = history.recent(history.rows(results.runs))
    body = [
        f"<h1>perflab report</h1><p>From <code>{_esc(results.directory)}</code>, written "
        f"{generated_at.strftime('%Y-%m-%d %H:%M:%S %Z')}. {_esc(summary)} "
        '<a href="#problems">Problems</a> are listed below the comparisons.</p>',
        "<p>Every judged run is drawn with its verdict; a run without a verdict, or whose files cannot be read, is "
        "never drawn. Only runs judged VALID or WARN are compared: an INVALID run did not measure what it claims "
        "(see its verdict below). An app is named with its variant (threads, dispatch) and, where it is not the "
        "default, its resource profile.</p>",
        f'<h2 id="side-by-side">Apps side by side, per scenario, rate, tool and profile</h2>'
        f"{_side_by_side_section(results.runs, colors, recent)}",
        f'<h2 id="compare">Apps compared: what each costs</h2><p>Per scenario and profile: start to first request, and '
        f"from sweeps only, max throughput, the max RSS of that sweep's runs and throughput per MiB of it.</p>"
        f"{_comparison_section(results)}",
        f'<h2 id="sweeps">Throughput against latency (sweeps)</h2>{_sweep_section(results.sweeps, runs_by_id)}',
        f'<h2 id="reproductions">Field reports reproduced</h2>{_reproduction_section(results.reproductions)}',
        f'<h2 id="problems">Problems ({len(results.problems)})</h2>{problems}',
        f'<h2 id="runs">Runs, verdicts and per-tier utilization</h2>{_run_rows(results.runs)}',
        "".join(_run_section(r, colors) for r in sorted(results.runs, key=lambda r: r.run_id, reverse=True)),
    ]
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
        f"<title>perflab report</title><style>{_STYLE}</style></head><body>"
        + "\n".join(body) + "</body></html>\n"
    )


def build(results_dir: Path, output: Path) -> Results:
    """Read `results_dir`, write the page to `output`; OSError when either cannot be used."""
    results = load(results_dir)
    page = render_page(results, datetime.datetime.now(datetime.timezone.utc))
    partial = output.with_name(output.name + ".partial")
    partial.write_text(page, encoding="utf-8")
    os.replace(partial, output)
    return results


# ---------------------------------------------------------------------------------------------
# The command


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add `perflab report` to the CLI."""
    sub = commands.add_parser(
        "report", help="one self-contained HTML page from a results directory",
        description="Write one self-contained HTML page (no network) from every run and sweep under the "
                    "results directory.",
        epilog="exit codes: 0 written, every run read; 3 written, problems listed on stderr and in the report; "
               "4 not written (results directory or output unusable)",
    )
    sub.add_argument("--results", type=Path, metavar="DIR", help=rundir.RESULTS_HELP)
    sub.add_argument("--output", type=Path, metavar="FILE", help=f"the page to write (default: DIR/{REPORT_NAME})")
    sub.set_defaults(command=_report)


def _report(args: argparse.Namespace) -> int:
    results_dir = rundir.results_dir(args.results)
    output: Path = args.output or results_dir / REPORT_NAME
    if not results_dir.is_dir():
        print(f"perflab: error: {results_dir}: no such results directory (RESULTS=DIR or --results DIR chooses "
              "another)", file=sys.stderr)
        return EXIT_NOT_WRITTEN
    try:
        results = build(results_dir, output)
    except OSError as exc:
        print(f"perflab: error: {exc.filename or output}: {exc.strerror}: no report written", file=sys.stderr)
        return EXIT_NOT_WRITTEN
    for problem in results.problems:
        print(f"perflab: report: {problem}", file=sys.stderr)
    comparable = sum(r.comparable for r in results.runs)
    print(f"{output}: {len(results.runs)} runs ({comparable} VALID or WARN), {len(results.sweeps)} sweeps, "
          f"{len(results.problems)} problems")
    return EXIT_WRITTEN_WITH_PROBLEMS if results.problems else EXIT_WRITTEN
