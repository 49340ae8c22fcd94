"""`perflab report`: one self-contained HTML page from a results directory.

Reads every run directory (result.json, audit.json, status.json, observations.json,
utilization.json, the raw tool output) and every sweep directory (sweep.json) under the results
directory (docs/ARCHITECTURE.md, "Controller-side files") and writes results/report.html:
- per app, the latency percentile spectrum on HdrHistogram's 1/(1-p) axis (corrected; the
  uncorrected one dashed beside it where the tool recorded it: wrk2 -U, vegeta);
- per scenario, throughput against p99 latency from sweeps;
- per run, each tier's CPU and memory over the measured phase, the verdict with every rule and
  the limiting tier (attribution.json);
- report 3's table per scenario: start to first request, max RSS, max throughput, per MiB.
Every readable run is drawn, its verdict in the legend; only runs judged VALID or WARN are compared
(report 3's table): an INVALID run did not measure what it claims.

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
import json
import math
import os
import statistics
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from perflab import vegeta, wrk2
from perflab.model import LatencyDistribution, ParseError, RunResult, SchemaError
from perflab.report_charts import PALETTE, Axis, Chart, Series, render

EXIT_WRITTEN = 0
EXIT_WRITTEN_WITH_PROBLEMS = 3
EXIT_NOT_WRITTEN = 4

REPORT_NAME = "report.html"
COMPARABLE = ("VALID", "WARN")  # verdicts whose figures may be compared
MAX_SPECTRA_PER_APP = 8  # more lines than colours stop being readable
TIER_COLORS = {"loadgen": PALETTE[1], "app": PALETTE[0], "db": PALETTE[2], "monitoring": PALETTE[3]}
MIB = 1024.0 * 1024.0


class ReportInputError(Exception):
    """One problem with one input file; the message is printed as one line."""


# ---------------------------------------------------------------------------------------------
# What the report reads


@dataclass(frozen=True)
class RuleOutcome:
    rule: str
    status: str
    evidence: str


@dataclass(frozen=True)
class VerdictDoc:
    """audit.json: the verdict, every rule, and any other sentence the audit stored."""

    status: str
    rules: tuple[RuleOutcome, ...]
    notes: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class TierSeries:
    allotted_cores: float | None
    busy_cores: tuple[tuple[float, float], ...]
    memory_bytes: tuple[tuple[float, float], ...]


@dataclass(frozen=True)
class Utilization:
    """utilization.json: each tier over the measured phase."""

    start: float
    end: float
    tiers: dict[str, TierSeries]


@dataclass
class Run:
    run_id: str
    path: Path
    status: str = "unknown"  # complete | incomplete | empty | unknown
    result: RunResult | None = None
    verdict: VerdictDoc | None = None
    attribution: tuple[str, tuple[str, ...]] | None = None  # attribution.json: sentence, evidence lines
    app_max_rss_bytes: float | None = None
    utilization: Utilization | None = None
    utilization_missing: str | None = None  # why there is no utilization to draw
    raw_output_ok: bool = False
    problems: list[str] = field(default_factory=list)

    @property
    def readable(self) -> bool:
        """A complete run whose result and raw output were read."""
        return self.status == "complete" and self.result is not None and self.raw_output_ok

    @property
    def comparable(self) -> bool:
        """Its figures may be compared with other runs': readable and judged VALID or WARN."""
        return self.readable and self.verdict is not None and self.verdict.status in COMPARABLE

    @property
    def app(self) -> str:
        return app_variant(self.result) if self.result is not None else "?"

    @property
    def scenario(self) -> str:
        if self.result is not None and self.result.scenario is not None:
            return self.result.scenario.name
        return "?"


@dataclass(frozen=True)
class SweepStep:
    rate: float
    run_id: str | None
    status: str
    verdict: str | None
    achieved_rate: float | None
    p99_ms: float | None
    within_slo: bool | None


@dataclass
class Sweep:
    sweep_id: str
    path: Path
    app: str
    scenario: str
    slo_p99_ms: float | None
    started_at: str | None
    steps: tuple[SweepStep, ...]
    max_sustainable_rate: float | None
    stopped_because: str | None


@dataclass
class Results:
    directory: Path
    runs: list[Run]
    sweeps: list[Sweep]
    problems: list[str]  # one line each, "<directory>: <what is wrong>"


def app_variant(result: RunResult) -> str:
    """The app as deployed, in the Makefile's spelling: quarkus+worker, spring-mvc+virtual [report3]."""
    app = result.app
    if app is None:
        return "unknown app"
    name = app.name
    environment = app.environment
    if environment.get("PERFLAB_GREETING_DISPATCH", "io") != "io":
        name += "+" + environment["PERFLAB_GREETING_DISPATCH"]
    if environment.get("PERFLAB_THREADS", "platform") != "platform":
        name += "+" + environment["PERFLAB_THREADS"]
    if app.profile and app.profile != "default":
        name += f" [{app.profile}]"
    return name


def load(directory: Path) -> Results:
    """Every run and sweep under `directory`; OSError when the directory itself cannot be listed."""
    entries = sorted(p for p in directory.iterdir() if p.is_dir() and not p.name.startswith("."))
    results = Results(directory=directory, runs=[], sweeps=[], problems=[])
    for path in entries:
        if (path / "sweep.json").exists():
            try:
                results.sweeps.append(_load_sweep(path))
            except ReportInputError as exc:
                results.problems.append(f"{path.name}: {exc}; sweep left out")
            continue
        run = _load_run(path)
        results.runs.append(run)
        results.problems.extend(f"{path.name}: {problem}" for problem in run.problems)
    return results


def _read_json(path: Path) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise ReportInputError(f"{path.name} is not text (binary or not UTF-8)") from None
    except OSError as exc:
        raise ReportInputError(f"{path.name} cannot be read: {exc.strerror}") from None
    if not text.strip():
        raise ReportInputError(f"{path.name} is empty (written only in part?)")
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ReportInputError(f"{path.name} is not JSON (line {exc.lineno}: {exc.msg}): corrupt or cut short") from None


def _field(document: Any, key: str, kinds: tuple[type, ...], where: str, required: bool = True) -> Any:
    if not isinstance(document, dict):
        raise ReportInputError(f"{where}: expected a JSON object")
    if key not in document or document[key] is None:
        if required:
            raise ReportInputError(f"{where}: missing field {key}")
        return None
    value = document[key]
    if isinstance(value, bool) and bool not in kinds or not isinstance(value, kinds):
        raise ReportInputError(f"{where}: field {key} has the wrong type ({type(value).__name__})")
    return value


def _number(document: Any, key: str, where: str, required: bool = True) -> float | None:
    value = _field(document, key, (int, float), where, required)
    if value is None:
        return None
    if not math.isfinite(value):
        raise ReportInputError(f"{where}: field {key} is not a finite number")
    return float(value)


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
    if "status.json" not in names:
        run.problems.append("no status.json: half-written or not a perflab run directory; left out")
        return run
    try:
        status = _read_json(path / "status.json")
        run.status = _field(status, "status", (str,), "status.json")
        if run.status not in ("complete", "incomplete"):
            raise ReportInputError(f"status.json: status is {run.status!r}, not complete or incomplete")
    except ReportInputError as exc:
        run.status = "unknown"
        run.problems.append(f"{exc}; left out")
        return run
    if run.status == "incomplete":
        step = status.get("failed_step")
        reason = str(status.get("reason") or "no reason recorded").splitlines()[0].strip()
        where = f" at {step!r}" if isinstance(step, str) and step else ""
        run.problems.append(f"incomplete run{where}: {_shorten(reason, 160)}; left out")
        return run

    if "result.json" not in names:
        run.problems.append("status.json says complete but result.json is missing; left out")
        return run
    try:
        run.result = RunResult.from_json((path / "result.json").read_text(encoding="utf-8"))
    except SchemaError as exc:
        run.problems.append(f"result.json is not a perflab result ({_shorten(str(exc), 160)}); left out")
        return run
    except (OSError, UnicodeDecodeError) as exc:
        run.problems.append(f"result.json cannot be read ({exc}); left out")
        return run

    problem = _check_raw_output(path, run.result)
    if problem:
        run.problems.append(problem)
    else:
        run.raw_output_ok = True

    if "audit.json" in names:
        try:
            run.verdict = _load_verdict(path / "audit.json")
        except ReportInputError as exc:
            run.problems.append(f"{exc}; the run has no verdict and is left out of the charts")
    else:
        run.problems.append("no audit.json: the run has no verdict and is left out of the charts")

    if "attribution.json" in names:
        try:
            document = _read_json(path / "attribution.json")
            evidence = _field(document, "evidence", (list,), "attribution.json", required=False) or []
            run.attribution = (_field(document, "sentence", (str,), "attribution.json"),
                               tuple(str(line) for line in evidence))
        except ReportInputError as exc:
            run.problems.append(f"{exc}; the limiting tier is not shown")

    if "observations.json" in names:
        try:
            observations = _read_json(path / "observations.json")
            run.app_max_rss_bytes = _number(observations, "app_max_rss_bytes", "observations.json", required=False)
        except ReportInputError as exc:
            run.problems.append(f"{exc}; its figures are not used")

    if "utilization.json" in names:
        try:
            run.utilization = _load_utilization(path / "utilization.json")
        except ReportInputError as exc:
            run.utilization_missing = f"utilization.json cannot be used: {exc}"
            run.problems.append(f"{exc}; utilization not shown")
    else:
        run.utilization_missing = "not recorded: no utilization.json (Prometheus had no data for this run)"
        run.problems.append("no utilization.json: no Prometheus data for this run; utilization not recorded")
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
            vegeta.parse(data)
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


def _load_verdict(path: Path) -> VerdictDoc:
    document = _read_json(path)
    status = _field(document, "status", (str,), path.name)
    rules = []
    for i, rule in enumerate(_field(document, "rules", (list,), path.name)):
        where = f"{path.name} rules[{i}]"
        rules.append(RuleOutcome(
            rule=_field(rule, "rule", (str,), where),
            status=_field(rule, "status", (str,), where),
            evidence=_field(rule, "evidence", (str,), where, required=False) or "",
        ))
    notes = tuple(
        (key, value) for key, value in document.items()
        if key not in ("status", "rules", "schema_version") and isinstance(value, str)
    )
    return VerdictDoc(status=status, rules=tuple(rules), notes=notes)


def _samples(document: Any, key: str, where: str) -> tuple[tuple[float, float], ...]:
    raw = _field(document, key, (list,), where, required=False) or []
    samples = []
    for i, pair in enumerate(raw):
        if (not isinstance(pair, list) or len(pair) != 2
                or not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in pair)):
            raise ReportInputError(f"{where}.{key}[{i}] is not a [unix seconds, value] pair")
        samples.append((float(pair[0]), float(pair[1])))
    return tuple(samples)


def _load_utilization(path: Path) -> Utilization:
    document = _read_json(path)
    start = _number(document, "start", path.name)
    end = _number(document, "end", path.name)
    assert start is not None and end is not None
    tiers = {}
    for tier, series in _field(document, "tiers", (dict,), path.name).items():
        where = f"{path.name} tiers.{tier}"
        tiers[tier] = TierSeries(
            allotted_cores=_number(series, "allotted_cores", where, required=False),
            busy_cores=_samples(series, "busy_cores", where),
            memory_bytes=_samples(series, "memory_bytes", where),
        )
    if not any(s.busy_cores or s.memory_bytes for s in tiers.values()):
        raise ReportInputError(f"{path.name} holds no samples (Prometheus returned nothing for the window)")
    return Utilization(start=start, end=end, tiers=tiers)


def _load_sweep(path: Path) -> Sweep:
    document = _read_json(path / "sweep.json")
    where = "sweep.json"
    steps = []
    for i, step in enumerate(_field(document, "steps", (list,), where)):
        at = f"{where} steps[{i}]"
        rate = _number(step, "rate", at)
        assert rate is not None
        steps.append(SweepStep(
            rate=rate,
            run_id=_field(step, "run_id", (str,), at, required=False),
            status=_field(step, "status", (str,), at, required=False) or "unknown",
            verdict=_field(step, "verdict", (str,), at, required=False),
            achieved_rate=_number(step, "achieved_rate", at, required=False),
            p99_ms=_number(step, "p99_ms", at, required=False),
            within_slo=_field(step, "within_slo", (bool,), at, required=False),
        ))
    return Sweep(
        sweep_id=path.name, path=path,
        app=_field(document, "app", (str,), where),
        scenario=_field(document, "scenario", (str,), where),
        slo_p99_ms=_number(document, "slo_p99_ms", where, required=False),
        started_at=_field(document, "started_at", (str,), where, required=False),
        steps=tuple(steps),
        max_sustainable_rate=_number(document, "max_sustainable_rate", where, required=False),
        stopped_because=_field(document, "stopped_because", (str,), where, required=False),
    )


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


def _latency_section(runs: Sequence[Run]) -> str:
    charted = [r for r in runs if r.readable]
    if not charted:
        return "<p>No complete run yet: nothing to draw.</p>"
    parts = []
    for app in sorted({r.app for r in charted}):
        latest: dict[tuple[str, float, str], Run] = {}
        for run in sorted((r for r in charted if r.app == app), key=lambda r: r.run_id):
            assert run.result is not None
            latest[(run.scenario, run.result.target_rate, run.result.tool)] = run
        drawn = sorted(latest.values(), key=lambda r: r.run_id, reverse=True)
        left_out = drawn[MAX_SPECTRA_PER_APP:]
        series = []
        for i, run in enumerate(drawn[:MAX_SPECTRA_PER_APP]):
            result = run.result
            assert result is not None
            color = PALETTE[i % len(PALETTE)]
            verdict = run.verdict.status if run.verdict else "no verdict"
            label = (f"{run.scenario} at {result.target_rate:g}/s, {result.tool}, {verdict} "
                     f"({run.run_id[:16]}); max {_fmt(result.latency_corrected.max_ms)} ms")
            series.append(Series(f"{label} — corrected", _spectrum_points(result.latency_corrected), color))
            if result.latency_uncorrected is not None:
                series.append(Series(f"{label} — uncorrected", _spectrum_points(result.latency_uncorrected),
                                     color, dashed=True))
        notes = ["Dashed: uncorrected latency (wrk2 -U; vegeta always), measured from the actual send; solid "
                 "lines are measured from each request's intended send time."]
        if left_out:
            notes.append(f"{len(left_out)} older configurations not drawn: "
                         + ", ".join(r.run_id for r in left_out))
        chart = Chart(
            title=f"{app}: latency by percentile",
            x=Axis("percentile (log scale of 1/(1-p))", "percentile"),
            y=Axis("latency (ms, log scale)", "log"),
            series=tuple(series), notes=tuple(notes), css_class="chart chart-latency",
        )
        parts.append(f'<section class="app-spectrum"><h3>{_esc(app)}</h3>{render(chart)}</section>')
    return "".join(parts)


def _sweep_variant(sweep: Sweep, runs_by_id: dict[str, Run]) -> str:
    for step in sweep.steps:
        run = runs_by_id.get(step.run_id or "")
        if run is not None and run.result is not None:
            return run.app
    return sweep.app


def _sweep_section(sweeps: Sequence[Sweep], runs_by_id: dict[str, Run]) -> str:
    if not sweeps:
        return "<p>No sweep recorded (<code>make sweep APP=... SCENARIO=...</code> makes one).</p>"
    parts = []
    for scenario in sorted({s.scenario for s in sweeps}):
        series = []
        slos = set()
        for i, sweep in enumerate(sorted((s for s in sweeps if s.scenario == scenario), key=lambda s: s.sweep_id)):
            points: list[tuple[float, float]] = []
            hollow: set[int] = set()
            for step in sweep.steps:
                if step.p99_ms is None:
                    continue
                if step.verdict not in COMPARABLE or step.within_slo is False or step.status != "complete":
                    hollow.add(len(points))
                points.append((step.achieved_rate if step.achieved_rate is not None else step.rate, step.p99_ms))
            if sweep.slo_p99_ms is not None:
                slos.add(sweep.slo_p99_ms)
            best = (f"max sustainable {_fmt(sweep.max_sustainable_rate)} req/s"
                    if sweep.max_sustainable_rate is not None else "no sustainable rate")
            label = f"{_sweep_variant(sweep, runs_by_id)} ({sweep.sweep_id[:16]}): {best}"
            if sweep.stopped_because:
                label += f"; stopped: {sweep.stopped_because}"
            series.append(Series(label, tuple(points), PALETTE[i % len(PALETTE)], markers=True,
                                 hollow=frozenset(hollow)))
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


def _run_rows(runs: Sequence[Run]) -> str:
    rows = []
    for run in sorted(runs, key=lambda r: r.run_id, reverse=True):
        result = run.result
        verdict = run.verdict.status if run.verdict else ("—" if run.readable else run.status)
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


_STATUS_ORDER = ("INVALID", "WARN", "VALID", "NOT_EVALUATED")


def _run_section(run: Run) -> str:
    parts = [f'<section class="run" id="run-{_esc(run.run_id)}"><h3>{_esc(run.run_id)}</h3>']
    if run.result is not None:
        result = run.result
        start = result.app.start_to_first_request_ms if result.app else None
        parts.append(f"<p>{_esc(run.app)}, scenario {_esc(run.scenario)}, {_esc(result.tool)}: "
                     f"{_fmt(result.achieved_rate)} of {_fmt(result.target_rate)} req/s, "
                     f"{result.requests} requests in {result.duration_s:.1f} s, "
                     f"{_esc(result.started_at or '?')} to {_esc(result.ended_at or '?')}; "
                     f"start to first request {_fmt(start)} ms.</p>")
    for problem in run.problems:
        parts.append(f'<p class="problem">{_esc(problem)}</p>')
    if run.verdict is not None:
        verdict = run.verdict
        parts.append(f'<p>Verdict: <span class="verdict {_esc(verdict.status)}">{_esc(verdict.status)}</span></p>')
        for key, value in verdict.notes:
            parts.append(f"<p>{_esc(key.replace('_', ' '))}: {_esc(value)}</p>")
        if run.attribution is not None:
            sentence, evidence = run.attribution
            parts.append(f'<p class="attribution">Limiting tier: {_esc(sentence)}</p>')
            if evidence:
                parts.append("<ul>" + "".join(f"<li>{_esc(line)}</li>" for line in evidence) + "</ul>")
        rules = sorted(verdict.rules, key=lambda r: _STATUS_ORDER.index(r.status) if r.status in _STATUS_ORDER else 9)
        parts.append('<table class="rules"><thead><tr><th>rule</th><th>outcome</th><th>evidence</th></tr></thead><tbody>'
                     + "".join(f'<tr><td>{_esc(r.rule)}</td><td class="verdict {_esc(r.status)}">{_esc(r.status)}</td>'
                               f"<td>{_esc(r.evidence)}</td></tr>" for r in rules)
                     + "</tbody></table>")
    if run.readable:
        parts.append(_utilization_charts(run))
    parts.append("</section>")
    return "".join(parts)


@dataclass(frozen=True)
class Figure:
    """One cell of the comparison: a value (None: not recorded) and where it comes from."""

    value: float | None
    source: str = ""


@dataclass(frozen=True)
class AppFigures:
    """Report 3's four figures of one app in one scenario."""

    start_to_first_request_ms: Figure
    max_rss_mib: Figure
    max_throughput: Figure  # req/s
    throughput_per_mib: Figure  # req/s per MiB of max RSS


COMPARISON_ROWS = (
    ("start to first request (ms)", "start_to_first_request_ms"),
    ("max RSS (MiB)", "max_rss_mib"),
    ("max throughput (req/s)", "max_throughput"),
    ("max throughput per MiB (req/s/MiB)", "throughput_per_mib"),
)


def compare(results: Results) -> dict[str, dict[str, AppFigures]]:
    """Report 3's table per scenario: scenario -> app -> its figures, from every readable run and sweep."""
    runs_by_id = {r.run_id: r for r in results.runs}
    readable = [r for r in results.runs if r.readable]
    table: dict[str, dict[str, AppFigures]] = {}
    for scenario in sorted({r.scenario for r in readable} | {s.scenario for s in results.sweeps}):
        apps = sorted({r.app for r in readable if r.scenario == scenario}
                      | {_sweep_variant(s, runs_by_id) for s in results.sweeps if s.scenario == scenario})
        table[scenario] = {}
        for app in apps:
            mine = [r for r in readable if r.app == app and r.scenario == scenario]
            starts = [r.result.app.start_to_first_request_ms for r in mine
                      if r.result is not None and r.result.app is not None
                      and r.result.app.start_to_first_request_ms is not None]
            start = Figure(statistics.fmean(starts), f"mean of {len(starts)} run(s)") if starts else Figure(None)
            rss = _max_rss(mine)
            throughput = _max_throughput(app, scenario, mine, results.sweeps, runs_by_id)
            per_mib = (Figure(throughput.value / rss.value, "max throughput / max RSS")
                       if throughput.value is not None and rss.value else Figure(None))
            table[scenario][app] = AppFigures(start, rss, throughput, per_mib)
    return table


def _comparison_section(results: Results) -> str:
    table = compare(results)
    if not table:
        return "<p>No complete run yet.</p>"
    parts = []
    for scenario, apps in table.items():
        first = next(iter(apps))
        rows = []
        for label, attribute in COMPARISON_ROWS:
            cells = []
            for app, figures in apps.items():
                figure: Figure = getattr(figures, attribute)
                base: float | None = getattr(apps[first], attribute).value
                text = _fmt(figure.value, 4)
                if app != first and figure.value is not None and base:
                    text += f" ({figure.value / base:.1%} of {first})"
                source = figure.source if figure.value is not None else "not recorded"
                cells.append(f'<td>{_esc(text)}<span class="source">{_esc(source)}</span></td>')
            rows.append(f"<tr><th>{_esc(label)}</th>{''.join(cells)}</tr>")
        header = "".join(f"<th>{_esc(a)}</th>" for a in apps)
        parts.append(f'<h3>{_esc(scenario)}</h3><table class="compare"><thead><tr><th></th>{header}</tr></thead>'
                     f"<tbody>{''.join(rows)}</tbody></table>")
    return "".join(parts)


def _max_rss(runs: Sequence[Run]) -> Figure:
    """The app's max RSS in MiB: the JVM's own (observations) where recorded, else the app tier's (Prometheus)."""
    own = [r.app_max_rss_bytes for r in runs if r.app_max_rss_bytes is not None]
    if own:
        return Figure(max(own) / MIB, "the app's max RSS (observations.json)")
    tier = [v for r in runs if r.utilization is not None and "app" in r.utilization.tiers
            for _, v in r.utilization.tiers["app"].memory_bytes]
    if tier:
        return Figure(max(tier) / MIB, "app tier's resident memory, all its processes (utilization.json)")
    return Figure(None)


def _max_throughput(app: str, scenario: str, runs: Sequence[Run], sweeps: Sequence[Sweep],
                    runs_by_id: dict[str, Run]) -> Figure:
    swept = [s.max_sustainable_rate for s in sweeps
             if s.scenario == scenario and _sweep_variant(s, runs_by_id) == app and s.max_sustainable_rate is not None]
    if swept:
        return Figure(max(swept), "max sustainable rate of a sweep")
    judged = [r.result.achieved_rate for r in runs if r.comparable and r.result is not None]
    if judged:
        return Figure(max(judged), "highest achieved rate of a VALID/WARN run (no sweep)")
    return Figure(None)


_STYLE = """
body { font: 14px/1.4 "DejaVu Sans", Arial, sans-serif; margin: 1.5em auto; max-width: 1200px; color: #222; }
h1 { font-size: 1.6em; } h2 { border-bottom: 1px solid #ccc; margin-top: 2em; } h3 { margin-bottom: .3em; }
table { border-collapse: collapse; margin: .5em 0; } th, td { border: 1px solid #ddd; padding: 2px 6px; text-align: left; }
td { vertical-align: top; } .runs td:nth-child(n+5) { text-align: right; }
.verdict.VALID { background: #d9f2d9; } .verdict.WARN { background: #fff0c2; } .verdict.INVALID { background: #f8d0d0; }
.verdict.NOT_EVALUATED { color: #777; } .problem { color: #a00000; } .not-recorded { color: #777; font-style: italic; }
.source { display: block; color: #777; font-size: .8em; }
.figure { display: inline-block; margin: .5em 1em .5em 0; vertical-align: top; }
.figure figcaption { max-width: 640px; font-size: .85em; }
.legend { list-style: none; padding: 0; margin: .2em 0; } .legend li { margin: .1em 0; }
.swatch { display: inline-block; width: 24px; height: 0; border-top: 3px solid; margin-right: 6px; vertical-align: middle; }
.swatch.dashed { border-top-style: dashed; } .note { color: #555; margin: .2em 0; }
svg text { font: 11px "DejaVu Sans", Arial, sans-serif; fill: #333; } svg .chart-title { font-weight: bold; font-size: 12px; }
svg .plot-area { fill: #fbfbfb; stroke: #999; } svg .grid { stroke: #e4e4e4; }
svg .series { fill: none; stroke-width: 1.8; } svg .reference { stroke: #a00000; stroke-dasharray: 3 3; }
svg .reference-label { fill: #a00000; } .pair { display: flex; flex-wrap: wrap; }
"""


def render_page(results: Results, generated_at: datetime.datetime) -> str:
    runs_by_id = {r.run_id: r for r in results.runs}
    problems = ("<ul class=\"problems\">" + "".join(f'<li class="problem">{_esc(p)}</li>' for p in results.problems)
                + "</ul>") if results.problems else "<p>None: every run directory was read.</p>"
    summary = (f"{len(results.runs)} run directories ({sum(r.readable for r in results.runs)} complete and readable, "
               f"{sum(r.comparable for r in results.runs)} judged VALID or WARN), {len(results.sweeps)} sweep(s), "
               f"{len(results.problems)} problem(s).")
    body = [
        f"<h1>perflab report</h1><p>From <code>{_esc(results.directory)}</code>, written "
        f"{generated_at.strftime('%Y-%m-%d %H:%M:%S %Z')}. {_esc(summary)}</p>",
        "<p>Every complete run is drawn with its verdict; only runs judged VALID or WARN are compared: an "
        "INVALID run did not measure what it claims (see its verdict below).</p>",
        f'<h2 id="problems">Problems ({len(results.problems)})</h2>{problems}',
        f'<h2 id="compare">Apps compared</h2><p>As report 3: start to first request, max RSS, max throughput '
        f"and throughput per MiB of RSS, per scenario.</p>{_comparison_section(results)}",
        f'<h2 id="latency">Latency spectrum per app</h2>{_latency_section(results.runs)}',
        f'<h2 id="sweeps">Throughput against latency (sweeps)</h2>{_sweep_section(results.sweeps, runs_by_id)}',
        f'<h2 id="runs">Runs, verdicts and per-tier utilization</h2>{_run_rows(results.runs)}',
        "".join(_run_section(r) for r in sorted(results.runs, key=lambda r: r.run_id, reverse=True)),
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
    sub.add_argument("--results", type=Path, default=Path(os.environ.get("PERFLAB_RESULTS_DIR") or "results"),
                     metavar="DIR", help="the results directory (default: $PERFLAB_RESULTS_DIR, else results)")
    sub.add_argument("--output", type=Path, metavar="FILE", help=f"the page to write (default: DIR/{REPORT_NAME})")
    sub.set_defaults(command=_report)


def _report(args: argparse.Namespace) -> int:
    results_dir: Path = args.results
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
