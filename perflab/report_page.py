"""The report's page: one self-contained HTML document from a results directory's runs, sweeps
and reproductions (perflab.results) and the comparable sets (perflab.report_sets). What it shows
is in perflab/report.py's docstring; this module only writes it.

The page has no script and fetches nothing: its Content-Security-Policy forbids any request, so
a reference to anything outside the file would show up as an error in the browser. Its only way out
is a link, which is never fetched: each profiled run's flame graph (async-profiler's own page, beside
the run's files), by its path relative to the page.
"""

from __future__ import annotations

import datetime
import html
import math
import os
import urllib.parse
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from perflab import history, profile, rundir, timeseries
from perflab.audit import Status
from perflab.model import LatencyDistribution
from perflab.report_charts import PALETTE, Axis, Band, Chart, Panel, Series, TimeChart, render, render_time
from perflab.report_sets import (COMPARISON_ROWS, MIB, SET_COLUMNS, ComparableSet, Figure, bucket_text, compare, fmt,
                                 observability_costs, percentile, set_rows, set_title, side_by_side, sweep_variant)
from perflab.results import COMPARABLE, SERVER_LATENCY_NOT_RECORDED, Reproduction, Results, Run, SetKey
from perflab.rundir import Sweep

TIER_COLORS = {"loadgen": PALETTE[1], "app": PALETTE[0], "db": PALETTE[2], "monitoring": PALETTE[3]}


def _esc(value: object) -> str:
    return html.escape(str(value), quote=True)


def _spectrum_points(latency: LatencyDistribution) -> tuple[tuple[float, float], ...]:
    """(fraction, ms) of every percentile below 100%: the full spectrum where the tool printed one."""
    if latency.spectrum:
        points = [(p.percentile, p.value_ms) for p in latency.spectrum if p.percentile < 1.0]
    else:
        points = [(float(key) / 100.0, value) for key, value in latency.percentiles_ms.items() if float(key) < 100.0]
        if latency.min_ms is not None:
            points.append((0.0, latency.min_ms))
    return tuple(sorted(points))


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
                          recent: dict[SetKey, list[history.Row]], flame: Mapping[str, str]) -> str:
    sets = side_by_side(runs)
    if not sets:
        return "<p>No judged run yet: nothing to draw.</p>"
    # Where apps meet first: a set of one app answers nothing side by side.
    return "".join(_set_section(s, colors, recent.get(s.key, []), flame)
                   for s in sorted(sets, key=lambda s: -len(s.entries)))


def _set_section(comparable_set: ComparableSet, colors: dict[str, str], recent: Sequence[history.Row],
                 flame: Mapping[str, str]) -> str:
    series = []
    for entry in comparable_set.entries:
        result = entry.run.result
        assert result is not None
        latency = result.latency_corrected
        label = (f"{entry.variant}: {entry.run.state} ({entry.run.run_id[:16]}); p99 "
                 f"{fmt(latency.percentiles_ms.get('99'))} ms, max {fmt(latency.max_ms)} ms")
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
        title=f"{set_title(comparable_set.key)}: latency by percentile",
        x=Axis("percentile (log scale of 1/(1-p))", "percentile"),
        y=Axis("latency (ms, log scale)", "log"),
        series=tuple(series), notes=tuple(notes), css_class="chart chart-side-by-side",
    )
    return (f'<section class="side-by-side"><h3>{_esc(set_title(comparable_set.key))}</h3>{render(chart)}'
            f"{_set_table(comparable_set)}{_observability_cost(comparable_set)}{_layers_table(comparable_set, flame)}"
            f"{_recent_table(recent)}</section>")


def _observability_cost(comparable_set: ComparableSet) -> str:
    """What the lab's own instrumentation costs each app that ran with it and without it in the set."""
    costs = observability_costs(comparable_set)
    if not costs:
        return ""
    each = "; ".join(f"{cost.variant} {fmt(cost.on.median)} with it, {fmt(cost.off.median)} without: "
                     + (f"{cost.share * 100:.0f}% of its CPU per request" if cost.told_apart
                        else "not told apart (the ranges of their runs overlap)") for cost in costs)
    return (f'<p class="observability-cost">The lab\'s instrumentation (the server histogram and the capacity '
            f"gauges; VARIANT=observability=off leaves it out), in app CPU-s per 1,000 requests: {_esc(each)}.</p>")


def flame_graph_hrefs(runs: Sequence[Run], page_dir: Path) -> dict[str, str]:
    """Run id -> its flame graph's address relative to the page in PAGE_DIR, for the runs that have one."""
    return {run.run_id: urllib.parse.quote(Path(os.path.relpath(run.path / rundir.FLAME_GRAPH, page_dir)).as_posix())
            for run in runs if run.flame_graph}


def _flame_link(run: Run, flame: Mapping[str, str]) -> str:
    href = flame.get(run.run_id)
    return f'<a class="flame-graph" href="{_esc(href)}">flame graph</a>' if href else ""


def _shares(summary: profile.ProfileSummary) -> dict[str, float]:
    """Layer -> its percentage of the samples, rounded to add up to 100."""
    shown = profile.percentages([entry.samples for entry in summary.layers])
    return {entry.layer: percent for entry, percent in zip(summary.layers, shown)}


def _layers_table(comparable_set: ComparableSet, flame: Mapping[str, str]) -> str:
    """The apps' samples by layer, side by side (PROFILE_APP): one row per variant whose drawn run was profiled
    or says why it was not, one column per layer any of them spent samples in. Nothing where none was profiled."""
    entries = [e for e in comparable_set.entries if e.run.app_samples is not None or e.run.app_samples_missing]
    if not any(e.run.app_samples is not None for e in entries):
        return ""
    layers = [layer for layer in profile.LAYERS
              if any(e.run.app_samples is not None and e.run.app_samples.share_of(layer) > 0 for e in entries)]
    rows = []
    for entry in entries:
        run = entry.run
        head = f"<th>{_esc(entry.variant)}</th>"
        if run.app_samples is None:
            rows.append(f'{head}<td colspan="{len(layers) + 1}" class="not-recorded">{_esc(run.app_samples_missing)}</td>')
            continue
        shares = _shares(run.app_samples)
        cells = "".join(f"<td>{shares[layer]:.1f}%</td>" for layer in layers)
        what = f"{run.app_samples.samples:,} samples" + (f", {run.app_samples_mode}" if run.app_samples_mode else "")
        rows.append(f"{head}{cells}<td>{_esc(what)} {_flame_link(run, flame)}</td>")
    header = "".join(f"<th>{_esc(profile.LAYERS[layer])}</th>" for layer in layers)
    return ('<table class="layers"><caption>Where each app\'s samples went over the measured window (async-profiler, '
            "PROFILE_APP): the share of its samples by layer, each stack charged to its innermost known layer"
            f"</caption><thead><tr><th>app</th>{header}<th>profile</th></tr></thead><tbody>"
            + "".join(f"<tr>{row}</tr>" for row in rows) + "</tbody></table>")


def _run_profile(run: Run, flame: Mapping[str, str]) -> str:
    """The run's own profile: its layers by share, its top frames, its flame graph; or why it has none."""
    summary = run.app_samples
    if summary is None:
        return (f'<p class="app-samples"><span class="not-recorded">The app\'s profile: {_esc(run.app_samples_missing)}'
                f"</span> {_flame_link(run, flame)}</p>") if run.app_samples_missing else ""
    shares = _shares(summary)
    ranked = sorted((entry for entry in summary.layers if entry.samples), key=lambda entry: -entry.samples)
    layers = ", ".join(f"{shares[entry.layer]:.1f}% {entry.title}" for entry in ranked)
    mode = f", {run.app_samples_mode}" if run.app_samples_mode else ""
    frames = "".join(f"<li>{frame.share * 100:.1f}% <code>{_esc(frame.frame)}</code> ({_esc(profile.LAYERS[frame.layer])})</li>"
                     for frame in summary.top_frames[:5])
    return (f'<p class="app-samples">Where the app\'s time went ({summary.samples:,} samples{_esc(mode)}): '
            f"{_esc(layers)}. {_flame_link(run, flame)}</p>"
            + (f'<details><summary>Top frames by self time</summary><ol class="top-frames">{frames}</ol></details>'
               if frames else ""))


def _recent_table(recent: Sequence[history.Row]) -> str:
    """The set's last judged runs, every variant, newest first: perflab history's rows."""
    if not recent:
        return ""
    rows = "".join(
        f'<tr><td>{_esc(r.started_at or "?")}</td><td><a href="#run-{_esc(r.run_id)}">{_esc(r.run_id)}</a></td>'
        f'<td>{_esc(r.variant)}</td><td class="verdict {_esc(r.verdict)}">{_esc(r.verdict)}</td>'
        f"<td>{_esc(fmt(r.achieved_rate))}</td><td>{_esc(fmt(r.p99_ms))}</td></tr>"
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
            spread = (f'<span class="range">{_esc(fmt(found.low))}–{_esc(fmt(found.high))}</span>'
                      if found is not None and found.runs > 1 else "")
            noted = f'<span class="source">{_esc(note)}</span>' if note else ""
            cells.append(f'<td>{_esc(fmt(value))}{spread}<span class="ratio">{_esc(_ratio_text(ratio, alike))}</span>'
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
    series = [Series(f"corrected; max {fmt(result.latency_corrected.max_ms)} ms",
                     _spectrum_points(result.latency_corrected), color)]
    if result.latency_uncorrected is not None:
        series.append(Series(f"uncorrected (from the actual send); max {fmt(result.latency_uncorrected.max_ms)} ms",
                             _spectrum_points(result.latency_uncorrected), color, dashed=True))
    chart = Chart(
        title=f"{run.app}, {run.scenario} at {result.target_rate:g}/s, {result.tool}, {run.state}",
        x=Axis("percentile (log scale of 1/(1-p))", "percentile"), y=Axis("latency (ms, log scale)", "log"),
        series=tuple(series), width=460, height=240, css_class="chart chart-latency",
    )
    return render(chart)


def _reproduction_section(reproductions: Sequence[Reproduction]) -> str:
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
            best = (f"max sustainable {fmt(sweep.max_sustainable_rate)} req/s"
                    if sweep.max_sustainable_rate is not None else "no sustainable rate")
            label = f"{sweep_variant(sweep, runs_by_id)} ({sweep_id[:16]}): {best}"
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
            horizontal_lines=((result.target_rate, f"asked {fmt(result.target_rate)}/s"),)))
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
                run.app, run.scenario, result.tool, fmt(result.target_rate), fmt(result.achieved_rate),
                fmt(latency.percentiles_ms.get("50")), fmt(latency.percentiles_ms.get("99")),
                fmt(latency.percentiles_ms.get("99.9")), str(result.errors.total()),
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
    own = ", ".join(f"{name} {fmt(q.value_ms)} ms ({bucket_text(q)})" for name, q in quantiles)
    generator = ", ".join(f"p{key} {fmt(percentile(run, key))} ms" for key in ("50", "99")
                          if percentile(run, key) is not None)
    return (f"Server-side latency (the app's own histogram, {server.requests:,.0f} requests on "
            f"{', '.join(server.routes)}): {own}; the generator's corrected {generator}.")


def _run_section(run: Run, colors: dict[str, str], flame: Mapping[str, str]) -> str:
    parts = [f'<section class="run" id="run-{_esc(run.run_id)}"><h3>{_esc(run.run_id)}: '
             f'<span class="verdict {_esc(run.state)}">{_esc(run.state)}</span></h3>']
    if run.result is not None:
        result = run.result
        start = result.app.start_to_first_request_ms if result.app else None
        parts.append(f"<p>{_esc(run.app)}, scenario {_esc(run.scenario)}, {_esc(result.tool)}: "
                     f"{fmt(result.achieved_rate)} of {fmt(result.target_rate)} req/s, "
                     f"{result.requests} requests in {result.duration_s:.1f} s, "
                     f"{_esc(result.started_at or '?')} to {_esc(result.ended_at or '?')}; "
                     f"start to first request {fmt(start)} ms.</p>")
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
        parts.append(_run_profile(run, flame))
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


def _comparison_section(results: Results) -> str:
    table = compare(results)
    if not table:
        return "<p>No complete run yet.</p>"
    parts = []
    for (scenario, profile, database), apps in table.items():
        rows = []
        for label, attribute, better in COMPARISON_ROWS:
            figures: dict[str, Figure] = {app: getattr(f, attribute) for app, f in apps.items()}
            known = [f.value for f in figures.values() if f.value is not None]
            best = (max(known) if better == "higher" else min(known)) if len(known) > 1 else None
            cells = []
            for figure in figures.values():
                ratio = figure.value / best if figure.value is not None and best else None
                source = figure.source or "not recorded"
                cells.append(f'<td>{_esc(fmt(figure.value, 4))}<span class="ratio">{_esc(_ratio_text(ratio))}</span>'
                             f'<span class="source">{_esc(source)}</span></td>')
            rows.append(f"<tr><th>{_esc(label)}</th>{''.join(cells)}</tr>")
        header = "".join(f"<th>{_esc(a)}</th>" for a in apps)
        heading = f"{scenario}, profile {profile}" + (f", {database}" if database else "")
        parts.append(f'<h3>{_esc(heading)}</h3><table class="compare"><thead><tr><th></th>'
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
table.side-by-side td, table.layers td { text-align: right; } table.layers td:last-child { text-align: left; } table.side-by-side td:nth-child(2), table.side-by-side td:nth-child(3) { text-align: left; }
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


def render_page(results: Results, generated_at: datetime.datetime, page_dir: Path | None = None) -> str:
    """The page, whose links (each run's flame graph) are relative to PAGE_DIR (default: the results directory)."""
    runs_by_id = {r.run_id: r for r in results.runs}
    flame = flame_graph_hrefs(results.runs, page_dir or results.directory)
    problems = ("<ul class=\"problems\">" + "".join(f'<li class="problem">{_esc(p)}</li>' for p in results.problems)
                + "</ul>") if results.problems else "<p>None: every run directory was read.</p>"
    summary = (f"{len(results.runs)} run directories ({sum(r.readable for r in results.runs)} complete and readable, "
               f"{sum(r.comparable for r in results.runs)} judged VALID or WARN), {len(results.sweeps)} sweep(s), "
               f"{len(results.problems)} problem(s).")
    colors = variant_colors(results.runs)
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
        f"{_side_by_side_section(results.runs, colors, recent, flame)}",
        f'<h2 id="compare">Apps compared: what each costs</h2><p>Per scenario and profile: start to first request, and '
        f"from sweeps only, max throughput, the max RSS of that sweep's runs and throughput per MiB of it.</p>"
        f"{_comparison_section(results)}",
        f'<h2 id="sweeps">Throughput against latency (sweeps)</h2>{_sweep_section(results.sweeps, runs_by_id)}',
        f'<h2 id="reproductions">Field reports reproduced</h2>{_reproduction_section(results.reproductions)}',
        f'<h2 id="problems">Problems ({len(results.problems)})</h2>{problems}',
        f'<h2 id="runs">Runs, verdicts and per-tier utilization</h2>{_run_rows(results.runs)}',
        "".join(_run_section(r, colors, flame) for r in sorted(results.runs, key=lambda r: r.run_id, reverse=True)),
    ]
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
        f"<title>perflab report</title><style>{_STYLE}</style></head><body>"
        + "\n".join(body) + "</body></html>\n"
    )
