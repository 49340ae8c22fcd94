"""A results directory as every command reads it: its runs, its sweeps, its reproductions.

One reader for the tree `perflab bench` and `perflab reproduce` write (docs/ARCHITECTURE.md,
"Controller-side files"), every file through perflab.rundir, so that the report, history, compare
and reproduce agree on what a run is:
- load(): every run directory (Run: its status, result, verdict, attribution, observations,
  utilization, per-second series, the app's profile and raw output, each problem one line), every sweep and every
  reproduction under the directory, for the report and history;
- SetKey: the comparable set a run belongs to (scenario, asked rate, tool, profile);
- read_run_row(): one run directory as a comparison's table reads it (status, result, verdict),
  for compare and reproduce, which name runs they have just made;
- read_reproduction(): a reproduction.json, which perflab reproduce writes.

Nothing here renders: the page is perflab.report_page's, the CSV perflab.history's, the tables
perflab.compare's and perflab.reproduce's.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from perflab import rundir, timeseries, vegeta, wrk2
from perflab.audit import Verdict
from perflab.model import ParseError, RunResult, app_variant, database_name
from perflab.observations import ServerLatency
from perflab.observe import Utilization
from perflab.profile import ProfileSummary
from perflab.rundir import RunFileError, Sweep

COMPARABLE = ("VALID", "WARN")  # verdicts whose figures may be compared
SERVER_LATENCY_NOT_RECORDED = "not recorded (observations written before perflab read the app's histogram)"


# ---------------------------------------------------------------------------------------------
# The runs, sweeps and reproductions of a results directory (the report's and history's view)


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
    # The app's profile of the window (PROFILE_APP): its samples by layer (profile-summary.json), what was sampled
    # (profile-window.json: "cpu (ctimer)"), whether its flame graph is there; or why the window has none.
    app_samples: ProfileSummary | None = None
    app_samples_mode: str = ""
    flame_graph: bool = False
    app_samples_missing: str = ""  # "": no profile was asked for (or it was and is shown)
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
    def database(self) -> str:
        """The DB server's engine the run ran on ("MariaDB", "MySQL", "PostgreSQL"); "" where it did not record it."""
        name = database_name(self.result.versions.get("database", "")) if self.result is not None else ""
        return "" if name == "the database" else name.split()[0]

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
    reproductions: list[Reproduction] = field(default_factory=list)


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
        if (path / rundir.REPRODUCTION).exists():
            try:
                results.reproductions.append(read_reproduction(path))
            except ReproductionError as exc:
                results.problems.append(f"{path.name}: {exc}; reproduction left out")
            continue
        run = _load_run(path)
        results.runs.append(run)
        results.problems.extend(f"{path.name}: {problem}" for problem in run.problems)
    return results


def refusal(directory: Path) -> str | None:
    """The one line a command that reads `directory` refuses it with; None when it is a directory."""
    if directory.is_dir():
        return None
    return f"perflab: error: {directory}: no such results directory (RESULTS=DIR or --results DIR chooses another)"


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

    _load_profile(run, names)

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


def _load_profile(run: Run, names: set[str]) -> None:
    """The app's profile of the window, where PROFILE_APP asked for one (roles/bench/tasks/profile_fetch.yml)."""
    run.flame_graph = rundir.FLAME_GRAPH in names
    try:
        if rundir.PROFILE_ERROR in names:
            run.app_samples_missing = f"not profiled: {rundir.read_profile_error(run.path)}"
            return
        if rundir.PROFILE_SUMMARY in names:
            run.app_samples = rundir.read_profile_summary(run.path)
            if rundir.PROFILE_WINDOW in names:
                run.app_samples_mode = rundir.read_profile_mode(run.path)
        elif rundir.PROFILE_COLLAPSED in names:
            run.app_samples_missing = (f"its stacks were not summarised: no {rundir.PROFILE_SUMMARY} "
                                       f"(perflab collect writes it from {rundir.PROFILE_COLLAPSED})")
    except RunFileError as exc:
        run.app_samples_missing = f"{_shorten(exc.short, 200)}"
        run.problems.append(f"{run.app_samples_missing}; the app's layers are not shown")


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


@dataclass(frozen=True, order=True)
class SetKey:
    """What makes runs comparable: the same scenario at the same asked rate, with the same load
    generator, on the same resource profile and the same DB engine ("" where a run did not record it)."""

    scenario: str
    rate: float
    tool: str
    profile: str
    database: str = ""


def set_key(run: Run) -> SetKey | None:
    if run.result is None:
        return None
    return SetKey(run.scenario, run.result.target_rate, run.result.tool, run.profile, run.database)


# ---------------------------------------------------------------------------------------------
# One run directory as a comparison's table reads it (compare's and reproduce's view)


@dataclass(frozen=True)
class RunRow:
    app: str
    run_dir: Path | None
    repetition: str  # "2/3", "" for a run made once
    result: RunResult | None  # result.json of a complete run
    audit: Verdict | None  # audit.json; None where it is missing or unreadable
    state: str  # "complete", "incomplete: <why>", "no run (...)"

    @property
    def verdict(self) -> str | None:
        return self.audit.status.value if self.audit is not None else None


def read_run_row(app: str, run_dir: Path | None, repetition: str = "") -> RunRow:
    if run_dir is None:
        return RunRow(app, None, repetition, None, None, "no run (rejected before it started)")
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
        return RunRow(app, run_dir, repetition, None, audit, f"incomplete: {reason}")
    return RunRow(app, run_dir, repetition, result, audit, "complete")


# ---------------------------------------------------------------------------------------------
# reproduction.json (perflab.rundir's Reproduction) as the report shows it


@dataclass(frozen=True)
class RecordedRun:
    key: str
    label: str
    run: str | None  # the run directory's name under results/; None: the run never opened
    state: str


@dataclass(frozen=True)
class Reproduction:
    """A reproduction.json (perflab reproduce writes it) as the report reads it."""

    directory: str
    report: int
    title: str
    summary: str  # the lab's settings in one line
    note: str
    theirs: tuple[tuple[str, str], ...]
    runs: tuple[RecordedRun, ...]
    relations: tuple[tuple[str, str, str], ...]  # claim, status, figures


class ReproductionError(ValueError):
    """A reproduction.json that cannot be read as one."""


def read_reproduction(directory: Path) -> Reproduction:
    """DIRECTORY/reproduction.json as the report reads it; ReproductionError naming what is wrong."""
    try:
        found = rundir.read_reproduction(directory)
    except RunFileError as error:
        raise ReproductionError(error.short) from None
    settings = found.settings
    summary = (f"{found.scenario} at {settings.rate} req/s"
               + (f", /hello/{settings.latency_ms}" if settings.latency_ms is not None else "")
               + f", {settings.duration} after {settings.warmup} of warm-up, profile {settings.profile or 'default'}")
    return Reproduction(
        directory=directory.name, report=found.report, title=found.title, summary=summary, note=found.note,
        theirs=found.theirs, runs=tuple(RecordedRun(key, arm.label, arm.run, arm.state) for key, arm in found.runs.items()),
        relations=tuple((r.claim, r.status, r.figures) for r in found.relations))
