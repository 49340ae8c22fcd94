"""Every file of a run and of a sweep: its name, its model, and the one way to read and write it.

A run's data travels between processes as files under results/<run-id>/ (docs/ARCHITECTURE.md,
"Controller-side files"); a sweep's as results/<id>-sweep/sweep.json. This module is the only
code that opens them: `read_<file>(directory)` and `write_<file>(directory, value)`, and where a
command is given the file's path instead of its directory (`perflab judge RESULT.json`, `perflab
verify plan --output`, `perflab verify check PLAN --output`), `load_<file>(path)` and
`save_<file>(path, value)`. Each file has one
typed model, read and written by perflab.model's loader (a field of the wrong type, a
missing or an unknown one is refused with its name), each with its own schema_version:

| file | model |
| --- | --- |
| status.json | RunStatus (here) |
| bench-inputs.json | BenchInputs (here) |
| db-sessions.json | DbSessionList (here) |
| context.json | perflab.model.RunContext |
| observations.json | perflab.observations.Observations |
| result.json | perflab.model.RunResult |
| audit.json | perflab.audit.Verdict |
| attribution.json | perflab.attribution.Attribution |
| utilization.json | perflab.observe.Utilization |
| timeseries.json | perflab.timeseries.TimeSeries |
| verify-plan.json | VerifyPlan (here; perflab.verify plans the verify phase, roles/bench/files/verify_app.py reads it) |
| verify.json | VerifyReport (here; perflab.verify judges the verify phase) |
| sweep.json | Sweep (here; perflab.sweep runs and judges it) |
| reproduction.json | Reproduction (here; perflab.reproduce runs a field report's experiment and writes it) |
| profile-summary.json | perflab.profile.ProfileSummary |

Their JSON Schemas, generated from these models, are perflab/schemas/<file>.schema.json (`make
schemas`; a unit test fails when they drift). Ansible writes status.json, bench-inputs.json and
db-sessions.json itself (roles/bench: a copy task costs the run nothing, a perflab process about a
second per file); they carry the version these models read, and are checked against the model
when read.

verify-plan.json is read on the DB host by roles/bench/files/verify_app.py, which has no perflab:
the file keeps the format and version it checks ({"format": "perflab-verify-plan", "version": 3}),
and its "version" is the model's schema_version (VerifyPlan says why).

Files written before they carried a schema_version (status.json, bench-inputs.json,
db-sessions.json) read as version 1, their shape then. Writes are atomic (perflab.atomic: a temporary file
renamed over the old one): a reader never sees half a file.
"""

from __future__ import annotations

import json
import math
import os
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Literal, TypeVar
from urllib.parse import urlsplit

from perflab import atomic, scenario
from perflab.attribution import Attribution
from perflab.audit import Status, Verdict
from perflab.model import (NOT_STORED, OMITTED_AT_DEFAULT, RunContext, RunResult, SchemaError, dumps, json_schema,
                           load_document)
from perflab.observations import Observations
from perflab.observations import STATEMENT_KINDS
from perflab.observe import DEFAULT_SCRAPE_INTERVAL_S, Utilization
from perflab.profile import ProfileSummary
from perflab.timeseries import TimeSeries

ROOT = Path(__file__).resolve().parent.parent

STATUS = "status.json"
BENCH_INPUTS = "bench-inputs.json"
DB_SESSIONS = "db-sessions.json"
CONTEXT = "context.json"
OBSERVATIONS = "observations.json"
RESULT = "result.json"
AUDIT = "audit.json"
ATTRIBUTION = "attribution.json"
UTILIZATION = "utilization.json"
TIMESERIES = "timeseries.json"
VERIFY_PLAN = "verify-plan.json"
VERIFY = "verify.json"
SWEEP = "sweep.json"
REPRODUCTION = "reproduction.json"  # results/<stamp>-reproduce-<report>/
# A profiled window's summary (perflab profile summarize), beside its collapsed stacks and flame graph.
PROFILE_SUMMARY = "profile-summary.json"
# The app host's files of a profiled window (roles/app/files/perflab_profile.py writes them, whose own formats
# they are; roles/bench/tasks/profile_fetch.yml fetches them): the stacks, the flame graph (async-profiler's own
# self-contained page), and, when the window has none, why ({"error": "..."}).
PROFILE_COLLAPSED = "profile.collapsed"
FLAME_GRAPH = "flamegraph.html"
PROFILE_ERROR = "profile-error.json"
PROFILE_WINDOW = "profile-window.json"

T = TypeVar("T")


class RunFileError(ValueError):
    """A run's file that cannot be read as its model: missing, not text, not JSON, or not matching."""

    def __init__(self, path: Path, problem: str) -> None:
        super().__init__(f"{path}: {problem}")
        self.path = path
        self.problem = problem

    @property
    def short(self) -> str:
        """The message with the file's name alone (for a page that lists runs by directory)."""
        return f"{self.path.name}: {self.problem}"


RESULTS_HELP = "the results directory (default: $PERFLAB_RESULTS_DIR, else the checkout's results/)"


def results_dir(given: Path | None = None) -> Path:
    """Where runs land and are read: GIVEN (--results), else $PERFLAB_RESULTS_DIR (the Makefile's
    RESULTS=), else the checkout's results/, where the bench writes by default (lab_results_dir)."""
    return given or Path(os.environ.get("PERFLAB_RESULTS_DIR") or ROOT / "results")


# ---------------------------------------------------------------------------------------------
# The models of the files only this module knows


@dataclass(frozen=True, kw_only=True)
class RunStatus:
    """status.json: whether the run completed. roles/bench writes it `incomplete` when the run
    opens (and with the failed step when a step fails); `perflab collect` writes it `complete`
    with the verdict once every other file is written."""

    schema_version: int = 1
    status: Literal["complete", "incomplete"]
    run_id: str | None = None
    verdict: Status | None = None  # the audit's, when complete
    started_at: str | None = None  # the measured phase, when complete
    ended_at: str | None = None
    failed_step: str | None = None  # incomplete: the bench's step that failed
    reason: str | None = None  # incomplete: why, as Ansible reported it
    recorded_at: str | None = None  # incomplete: when the failure was recorded


@dataclass(frozen=True)
class CpuSample:
    """A host's CPU time at one bound of the measured window (roles/bench/files/cpu_window.py)."""

    host: str
    machine: str  # the kernel's boot id: one machine
    cpus: tuple[int, ...]  # its CPU affinity
    usage_usec: int  # CPU time used so far
    at: float  # unix seconds
    # process-exporter group -> how long its threads have waited for a CPU so far (their run delay); empty where
    # the host's process-exporter was not found or in samples from before it was kept.
    waited_usec: dict[str, int] = field(default_factory=dict)
    # process-exporter group -> how long its threads have run so far (their schedstat's run time), read in the same
    # scan; empty as waited_usec is, and in samples from before it was kept.
    used_usec: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class HostCpuSamples:
    start: CpuSample
    end: CpuSample


@dataclass(frozen=True)
class HostInputs:
    """A host's facts (roles/bench/tasks/host_facts.yml); Ansible versions before 2.19 wrote the
    numbers as strings."""

    cpus: int | str | None = None
    memory_mb: int | str | None = None
    os: str | None = None
    kernel: str | None = None


@dataclass(frozen=True)
class ScenarioExpect:
    """What a request of the scenario as run expects of every answer: the status perflab reads;
    the rest (media_type, json_field, body_pattern) is passed over."""

    OPEN: ClassVar[bool] = True

    status: int


@dataclass(frozen=True)
class ScenarioRequest:
    """One request of the scenario as run, as the scenario file spells it (perflab/scenario.py's
    Request) with its weight as run: the fields perflab reads; headers, body and any other are
    passed over."""

    OPEN: ClassVar[bool] = True

    name: str
    weight: float  # as run: the file's, or the operator's --weight
    method: str
    path: str  # the file's template, "/owners/${id}?x=${y}"
    expect: ScenarioExpect
    # The DB statements per request the app's contract allows, by kind (kinds left out are 0); None:
    # the file gives none.
    statements: dict[str, float] | None = None

    def __post_init__(self) -> None:
        for kind, count in (self.statements or {}).items():
            if kind not in STATEMENT_KINDS:
                raise ValueError(f"statements.{kind}: unknown kind; allowed: {', '.join(STATEMENT_KINDS)}")
            if not (math.isfinite(count) and count >= 0):
                raise ValueError(f"statements.{kind}: {count:g} is out of range; allowed: 0 or more per request")

    @property
    def status(self) -> str:
        """The status it expects, as the app's metrics label it ("302")."""
        return str(self.expect.status)

    @property
    def route(self) -> str:
        """Its path as Scenario.endpoints() spells it: "/owners/{id}", ${name} as {name}, the query dropped."""
        def placeholder(match: re.Match[str]) -> str:
            return "$" if match.group(1) == "$" else "{" + (match.group(2) or "") + "}"

        return scenario.PLACEHOLDER.sub(placeholder, self.path.split("?")[0])


@dataclass(frozen=True)
class ScenarioInputs:
    """The scenario as the bench ran it (role loadgen's scenarios/<name>.yml with the operator's
    overrides): the fields perflab reads; the scenario file's others are passed over."""

    OPEN: ClassVar[bool] = True

    name: str
    rate: float
    connections: int
    threads: int
    slo_p99_ms: float | None = None
    max_workers: int | None = None  # vegeta's -max-workers as sized to the loadgen host (vegeta runs only)
    endpoints: tuple[str, ...] = ()  # its routes, "GET /zipcodes/{zip}": those whose server-side latency is read
    # Its requests as run (the file's, with their weights as run): () in inputs written before they were recorded.
    requests: tuple[ScenarioRequest, ...] = ()


@dataclass(frozen=True)
class PhaseInputs:
    """One phase of the load generator as role loadgen set it up: its environment is what perflab
    reads (the scenario's knobs); the argv and timings are passed over."""

    OPEN: ClassVar[bool] = True

    environment: dict[str, Any] = field(default_factory=dict)  # as the scenario gives them: strings, numbers


@dataclass(frozen=True)
class LoadgenRun:
    """role loadgen's loadgen_run: the tool and the scenario as run. Perflab reads these fields;
    the role's others are passed over."""

    OPEN: ClassVar[bool] = True

    tool: str
    target_url: str
    scenario: ScenarioInputs
    duration_s: float
    warmup_s: float  # as run: the scenario's, or WARMUP=
    tool_reason: str = ""
    # The scenario file's own warm-up, before WARMUP=; None in inputs written before it was carried.
    scenario_warmup_s: float | None = None
    host_rates: tuple[float, ...] = ()  # each loadgen host's share of the rate, in the inventory's order
    hosts: tuple[str, ...] = ()  # the loadgen hosts, in the same order
    calibration_ms: int = 0  # wrk2: the measured invocation's first milliseconds, not recorded
    # Seconds a request may wait for its answer before the tool counts a timeout (loadgen_timeout_s);
    # None in inputs written before it was carried.
    timeout_s: float | None = None
    phases: dict[str, PhaseInputs] = field(default_factory=dict)


@dataclass(frozen=True)
class Deployment:
    """role app's app_deployment (the perflab_app fact): the fields perflab reads; the others
    (main_pid, started_at, ...) are passed over."""

    OPEN: ClassVar[bool] = True

    app: str
    start_to_ready_ms: float
    profile: str | None = None
    jvm_opts: tuple[str, ...] = ()
    env: dict[str, Any] = field(default_factory=dict)  # PERFLAB_* variables, no secret
    cpu_affinity: tuple[int | str, ...] = ()
    cpu_quota_percent: float | None = None  # the profile's CPUQuota= (100 a whole CPU); None: no quota
    memory_max_mb: int | str | None = None  # "" or "None" where the profile sets no limit


@dataclass(frozen=True, kw_only=True)
class BenchInputs:
    """bench-inputs.json: what the bench's plays gathered about a run, for `perflab collect`
    (roles/bench/vars/main.yml __bench_inputs, whose keys are these fields: a unit test keeps
    them equal)."""

    schema_version: int = 1
    run_id: str
    raw_output: str
    run: LoadgenRun
    measure_started_at: str
    measure_ended_at: str
    cpu_start: dict[str, CpuSample]  # tier -> its host's sample before the measured phase
    cpu_end: dict[str, CpuSample]
    deployment: Deployment
    tiers: dict[str, tuple[str, ...]]  # tier -> its hosts
    hosts: dict[str, HostInputs]
    versions: dict[str, str | None]
    # The measured phase's raw output of every loadgen host, in the inventory's order (measured_files).
    raw_files: tuple[str, ...] = ()
    percentile_files: tuple[str, ...] = ()  # wrk2's percentile table of each loadgen host, in the same order
    db_delay_ms: int = 0
    db_cpu_hog: int = 0  # busy loops on the DB host during the measured phase (DB_CPU_HOG)
    quiet_s: float = 0.0
    scrape_interval_s: float = DEFAULT_SCRAPE_INTERVAL_S  # absent from inputs written before it was carried
    repetition: dict[str, str | int] = field(default_factory=dict)  # bench_repetition: {} for a run made once
    warmup_started_at: str | None = None
    warmup_ended_at: str | None = None  # its start plus its invocation's seconds; None in inputs written before
    loadgen_hosts_cpu: dict[str, HostCpuSamples] = field(default_factory=dict)  # several loadgen hosts: each one's
    start_skew_ms: int | float | None = None  # how far apart the loadgen hosts started (ms), as the play rounded it
    # How late the last loadgen host's tool started against the measured window's agreed start (ms);
    # None in inputs written before the window was agreed ahead (issue 22).
    start_late_ms: int | float | None = None

    @property
    def measured_files(self) -> tuple[str, ...]:
        """The measured phase's raw output of every loadgen host: raw_files, or raw_output alone in
        inputs written before the bench ran several loadgen hosts (and kept raw_files)."""
        return self.raw_files or (self.raw_output,)


@dataclass(frozen=True)
class DbSession:
    id: int
    user: str
    host: str
    tls: bool


@dataclass(frozen=True, kw_only=True)
class DbSessionList:
    """db-sessions.json: the DB's network sessions at the end of the measured phase
    (roles/bench/tasks/db_sessions.yml), or why they are unknown."""

    schema_version: int = 1
    sessions: tuple[DbSession, ...] = ()
    evidence: str | None = None  # how each session's TLS is known
    unavailable: str | None = None  # why the DB did not list them


@dataclass(frozen=True, kw_only=True)
class VerifyPlanRequest:
    """One request of the verify plan as verify_app.py sends it: the scenario's own, its path under the
    plan's base_url. A request without headers or body has no such key (verify_app.py sends the headers
    as they are: null is no header list)."""

    method: str
    path: str  # "/zipcodes/12345", the query included
    headers: dict[str, str] = field(default_factory=dict, metadata=OMITTED_AT_DEFAULT)
    body: str | None = field(default=None, metadata=OMITTED_AT_DEFAULT)


@dataclass(frozen=True, kw_only=True)
class VerifyPlanExpect:
    """What every answer of a request type must be (the scenario's expect, and the contract's on the
    routes it documents), and the DB statements per request it must issue."""

    status: int
    contract: str | None  # the contract's operation ("GET /zipcodes/{zip}"); None: it documents not the route and status
    content: dict[str, Any]  # the contract's: media type -> JSON schema of the body ({} off the contract)
    headers: dict[str, Any]  # the contract's: header name -> {"required": bool, "schema": JSON schema}
    media_type: str | None  # the scenario's expect
    # The headers every answer must carry (the scenario's expect.headers: a name, or "A or B").
    required_headers: tuple[str, ...] = ()
    json_field: str | None
    body_pattern: str | None
    json_object: scenario.JsonObject | None
    json_array: scenario.JsonArray | None
    html_table: tuple[tuple[str, ...], ...] | None
    # Statements per request by kind, every kind (verify_app.py ends a type's bursts on a clean one): the count,
    # or the lower bound of a kind the scenario gives as a range; None: not judged.
    statements: dict[str, float] | None
    # The upper bound of each kind the scenario gives as a range (the others are exactly `statements`').
    statements_max: dict[str, float]
    statements_by: str | None  # "the scenario" or "the contract"; None: not judged
    statements_doc: str | None  # the file that says so
    statements_not_counted: str | None  # why they are not judged
    # The rows per request each kind's statements return (select) or write, by kind, every kind (kinds the
    # scenario leaves out are 0): judged where the DB counts them by statement (PostgreSQL); None: not judged.
    rows: dict[str, float] | None = None

    def __post_init__(self) -> None:
        if not 100 <= self.status <= 599:
            raise ValueError(f"status: an expected status is an HTTP status code, not {self.status}")
        if self.statements is not None:
            if sorted(self.statements) != sorted(STATEMENT_KINDS) or not all(map(math.isfinite, self.statements.values())):
                raise ValueError(f"statements: a number for each of {', '.join(STATEMENT_KINDS)} and no other, "
                                 "or null (not judged)")
        if not set(self.statements_max) <= set(STATEMENT_KINDS) or not all(map(math.isfinite, self.statements_max.values())):
            raise ValueError(f"statements_max: a number for some of {', '.join(STATEMENT_KINDS)} and no other")
        if self.statements_max and (self.statements is None or any(
                high < self.statements[kind] for kind, high in self.statements_max.items())):
            raise ValueError("statements_max: an upper bound of statements at or above its lower bound")
        if self.rows is not None and (sorted(self.rows) != sorted(STATEMENT_KINDS) or not all(
                math.isfinite(n) and n >= 0 for n in self.rows.values())):
            raise ValueError(f"rows: a number >= 0 for each of {', '.join(STATEMENT_KINDS)} and no other, "
                             "or null (not judged)")


@dataclass(frozen=True, kw_only=True)
class VerifyPlanType:
    """One request type of the verify plan: a request of the scenario, its warm-up and its measured bursts."""

    name: str  # "GET /zipcodes/{zip}", " (request-name)" after it when requests share a route
    request: str  # the scenario's request
    method: str
    route: str
    expect: VerifyPlanExpect
    warmup: tuple[VerifyPlanRequest, ...]  # sent first, not counted
    bursts: tuple[tuple[VerifyPlanRequest, ...], ...]  # up to `attempts`, `burst` requests each

    def __post_init__(self) -> None:
        if not self.warmup or not self.bursts or not all(self.bursts):
            raise ValueError("a type has requests to warm up with and bursts of requests")


@dataclass(frozen=True, kw_only=True)
class VerifyPlan:
    """verify-plan.json: the verify phase's requests of each type of the scenario and what their answers
    and DB statements must be (perflab.verify; `perflab verify plan --output`), sent from the DB host by
    roles/bench/files/verify_app.py and judged by `perflab verify check`."""

    # verify_app.py, on the DB host without perflab, checks the format and the version: the file's
    # version is this model's schema_version, and no second number says the same (a change of shape
    # verify_app.py must know of is one version more, of the plan and of the results it writes).
    # 2: the types come from the scenario file (expect.statements may be null: not judged; the scenario's
    # media_type, json_field and body_pattern; expect.contract null off the contract).
    # 3: a kind's statements may be a range (expect.statements_max); the body's shape (expect.json_object,
    # json_array, html_table).
    # 4: the rows of each kind's statements (expect.rows; the results' "<kind>_rows" counters on PostgreSQL), the
    # headers the scenario requires (expect.required_headers).
    VERSION_FIELD: ClassVar[str] = "version"

    format: Literal["perflab-verify-plan"]
    version: int = 4
    scenario: str
    scenario_file: str  # as the messages name it: relative to the checkout when it is in it
    parameters: dict[str, str]  # the scenario's parameters as run (--set, else their defaults)
    weights: dict[str, float]  # each request's weight as run (--weight, else the file's)
    base_url: str  # http(s)://host[:port], the app as the load generator reaches it
    threads: int
    key_phase: int  # KEY_PHASE of the fresh keys, a run's never
    burst: int  # requests a burst
    attempts: int  # measured bursts a type at most
    concurrency: int  # requests in flight
    timeout_s: float
    max_body_bytes: int  # what verify_app.py keeps of each body
    tolerance: float  # statements per request a burst may be off by
    skipped: tuple[str, ...]  # the types of the requests of weight 0, which the run never sends
    types: tuple[VerifyPlanType, ...]

    def __post_init__(self) -> None:
        # What verify_app.py refuses, refused here too.
        url = urlsplit(self.base_url)
        if url.scheme not in ("http", "https") or not url.hostname:
            raise ValueError(f"base_url: not http(s)://host[:port]: {self.base_url!r}")
        for name in ("burst", "attempts", "concurrency", "max_body_bytes"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name}: {getattr(self, name)} is not a whole number >= 1")
        if not (math.isfinite(self.timeout_s) and self.timeout_s > 0):
            raise ValueError(f"timeout_s: {self.timeout_s} is not a number > 0")


@dataclass(frozen=True)
class VerifyCheck:
    """One request type of the verify phase: its answers and DB statements against the contract."""

    name: str  # "GET /zipcodes/{zip}"
    ok: bool
    check: str  # the check that failed, or what passed, one line
    answers: dict[str, int]  # status (or "no answer") -> count
    expected_statements_per_request: dict[str, float]  # the contract's, by kind (a range's lower bound)
    statements_per_request: tuple[dict[str, float], ...]  # each burst's
    answers_shown: tuple[dict[str, Any], ...]  # a few answers as verify_app.py received them, bodies cut short
    # The upper bound of the kinds the scenario gives as a range (absent in verify.json before ranges were).
    expected_statements_max: dict[str, float] = field(default_factory=dict)
    # The rows per request the scenario gives, by kind ({}: not judged), and each burst's where the DB counts
    # them by statement (PostgreSQL; () elsewhere, and in verify.json before rows were).
    expected_rows_per_request: dict[str, float] = field(default_factory=dict)
    rows_per_request: tuple[dict[str, float], ...] = ()


@dataclass(frozen=True, kw_only=True)
class VerifyReport:
    """verify.json: the verify phase's verdict before any load (perflab.verify; `perflab verify check
    --output`), with where and how it was measured."""

    schema_version: int = 1
    status: Literal["ok", "failed"]
    reason: str | None  # the first failing check
    scenario: str | None
    base_url: str | None
    db_host: str | None  # where the statements were counted
    burst: int | None  # requests a burst
    attempts: int | None  # measured bursts a type
    tolerance: float | None  # statements per request a type may be off by
    skipped: tuple[str, ...]  # the scenario's endpoints the verify has no request for
    own_statements_per_reading: dict[str, float] | None  # the reader's own, taken off
    seconds: float | None  # how long verify_app.py took
    types: tuple[VerifyCheck, ...]


@dataclass(frozen=True)
class Step:
    """One rate of a sweep, as its run's files judge it (perflab.sweep.read_step)."""

    rate: int
    run_id: str | None
    status: str  # "complete" or "incomplete"
    verdict: str | None  # the audit's: VALID, WARN or INVALID; None when there is no audit
    achieved_rate: float | None
    p99_ms: float | None
    within_slo: bool
    # REPEAT=N: every run of the step (run_id is the one its figures stand for) and the range of its
    # runs' p99 and achieved rate (the step's p99 and achieved rate are their medians); () and None
    # for a step run once, and in sweep.json written before sweeps were repeated.
    runs: tuple[str, ...] = ()
    p99_range_ms: tuple[float, float] | None = None
    achieved_range: tuple[float, float] | None = None
    # Not in sweep.json: what the printed table and the stop sentence need while the sweep runs.
    p50_ms: float | None = field(default=None, metadata=NOT_STORED)
    p999_ms: float | None = field(default=None, metadata=NOT_STORED)
    errors: int | None = field(default=None, metadata=NOT_STORED)
    # Why the run is unusable or INVALID (the SLO aside: within_slo says that).
    problem: str | None = field(default=None, metadata=NOT_STORED)
    # Its attribution.json's limiting tier (None when it names none or there is none), and sentence.
    limiting_tier: str | None = field(default=None, metadata=NOT_STORED)
    attribution: str | None = field(default=None, metadata=NOT_STORED)


@dataclass(frozen=True)
class ReproductionSettings:
    """The lab's settings of a field report's experiment (perflab.field_reports' Settings): its own, or
    what RATE=, DURATION= and WARMUP= gave."""

    rate: int
    duration: str
    warmup: str
    latency_ms: int | None = None
    slo_p99_ms: float | None = None
    profile: str = ""


@dataclass(frozen=True)
class ReproducedArm:
    label: str
    app: str
    variants: str
    run: str | None  # the run directory's name under the results directory; None: the run never opened
    state: str  # "complete", "incomplete: <why>", "no run (...)" (perflab.results.RunRow's)


@dataclass(frozen=True)
class ReproducedRelation:
    claim: str
    status: str  # reproduced | not reproduced | not judged | not runnable here (perflab.field_reports)
    figures: str


@dataclass(frozen=True, kw_only=True)
class Reproduction:
    """reproduction.json: a field report's experiment as `perflab reproduce` ran it on the lab: the report's
    own figures (theirs: label, figures), the runs it made, and each relation the report found, judged."""

    schema_version: int = 1
    report: int
    title: str
    scenario: str
    settings: ReproductionSettings
    note: str = ""
    theirs: tuple[tuple[str, str], ...]
    runs: dict[str, ReproducedArm]  # arm key -> its run
    relations: tuple[ReproducedRelation, ...]


@dataclass(kw_only=True)
class Sweep:
    """sweep.json: a sweep's steps and its outcome, rewritten after every step (perflab.sweep)."""

    schema_version: int = 1
    kind: Literal["sweep"] = "sweep"
    app: str
    scenario: str
    slo_p99_ms: float | None
    started_at: str
    ended_at: str | None = None
    steps: list[Step] = field(default_factory=list)
    # The outcome as the sweep judged its steps (perflab.sweep.record): the file's readers cannot
    # judge them again, sweep.json keeps no step's problem.
    max_sustainable_rate: int | None = None
    limited_by: str | None = None  # the tier that limited the failed step ("unknown"); None: none failed
    stopped_because: str | None = None


# ---------------------------------------------------------------------------------------------
# Reading and writing


def _text(path: Path) -> str:
    try:
        text = path.read_bytes().decode("utf-8")
    except FileNotFoundError:
        raise RunFileError(path, "no such file") from None
    except IsADirectoryError:
        raise RunFileError(path, "is a directory, not a file") from None
    except OSError as exc:
        raise RunFileError(path, f"cannot be read: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise RunFileError(path, "not text (binary or not UTF-8)") from None
    if not text.strip():
        raise RunFileError(path, "empty (written only in part?)")
    return text


def _document(path: Path, text: str | None = None) -> Any:
    try:
        return json.loads(_text(path) if text is None else text)
    except json.JSONDecodeError as exc:
        raise RunFileError(path, f"not JSON (line {exc.lineno}: {exc.msg}): corrupt or cut short") from None


def _read(path: Path, cls: type[T], *, unversioned: bool = False) -> T:
    try:
        return load_document(cls, _document(path), unversioned=unversioned)
    except SchemaError as exc:
        raise RunFileError(path, f"not {_WHAT[cls]}: {exc}") from None


def _parsed(path: Path, cls: type[T], parse: Callable[[str], T]) -> T:
    """A file whose model parses its own text (Observations drops a retired field first): its
    errors as RunFileError."""
    text = _text(path)
    _document(path, text)  # what is not JSON is refused in the same words as every other file
    try:
        return parse(text)
    except ValueError as exc:
        raise RunFileError(path, f"not {_WHAT[cls]}: {exc}") from None


# What each model is, for the message that refuses a file.
_WHAT: dict[type, str] = {
    RunStatus: "a perflab run status", BenchInputs: "the bench's inputs", DbSessionList: "the DB's sessions",
    RunContext: "a perflab run context", Observations: "perflab observations", RunResult: "a perflab result",
    Verdict: "a perflab verdict", Attribution: "a perflab attribution", Utilization: "a perflab utilization",
    TimeSeries: "a perflab time series", VerifyPlan: "a perflab verify plan", VerifyReport: "a perflab verify report",
    Sweep: "a perflab sweep",
    ProfileSummary: "a perflab profile summary", Reproduction: "a perflab reproduction",
}


def read_status(run_dir: Path) -> RunStatus:
    return _read(run_dir / STATUS, RunStatus, unversioned=True)


def write_status(run_dir: Path, status: RunStatus) -> None:
    atomic.write_text(run_dir / STATUS, dumps(status))


def read_bench_inputs(run_dir: Path) -> BenchInputs:
    return _read(run_dir / BENCH_INPUTS, BenchInputs, unversioned=True)


def write_bench_inputs(run_dir: Path, text: str) -> None:
    """bench-inputs.json as the bench's plays gathered it (perflab collect --inputs), read back by read_bench_inputs()."""
    atomic.write_text(run_dir / BENCH_INPUTS, text if text.endswith("\n") else text + "\n")


def read_db_sessions(run_dir: Path) -> DbSessionList:
    return _read(run_dir / DB_SESSIONS, DbSessionList, unversioned=True)


def load_context(path: Path) -> RunContext:
    """A run context at PATH (`perflab parse-* --context`); read_context() reads a run's."""
    return _read(path, RunContext)


def read_context(run_dir: Path) -> RunContext:
    return load_context(run_dir / CONTEXT)


def write_context(run_dir: Path, context: RunContext) -> None:
    atomic.write_text(run_dir / CONTEXT, dumps(context))


def load_observations(path: Path) -> Observations:
    """Observations at PATH (`perflab judge --observations`); read_observations() reads a run's."""
    return _parsed(path, Observations, Observations.from_json)


def read_observations(run_dir: Path) -> Observations:
    return load_observations(run_dir / OBSERVATIONS)


def write_observations(run_dir: Path, observations: Observations) -> None:
    atomic.write_text(run_dir / OBSERVATIONS, dumps(observations))


def load_result(path: Path) -> RunResult:
    """A run result at PATH (`perflab judge`); read_result() reads a run's."""
    return _read(path, RunResult)


def read_result(run_dir: Path) -> RunResult:
    return load_result(run_dir / RESULT)


def write_result(run_dir: Path, result: RunResult) -> None:
    atomic.write_text(run_dir / RESULT, dumps(result))


def read_audit(run_dir: Path) -> Verdict:
    return _read(run_dir / AUDIT, Verdict)


def write_audit(run_dir: Path, verdict: Verdict) -> None:
    atomic.write_text(run_dir / AUDIT, dumps(verdict))


def read_attribution(run_dir: Path) -> Attribution:
    return _read(run_dir / ATTRIBUTION, Attribution)


def write_attribution(run_dir: Path, attribution: Attribution) -> None:
    atomic.write_text(run_dir / ATTRIBUTION, dumps(attribution))


def read_utilization(run_dir: Path) -> Utilization:
    return _read(run_dir / UTILIZATION, Utilization)


def write_utilization(run_dir: Path, utilization: Utilization | None) -> None:
    """utilization.json, or none (None: Prometheus had no data, and no earlier file is left to mislead)."""
    if utilization is None:
        (run_dir / UTILIZATION).unlink(missing_ok=True)
    else:
        atomic.write_text(run_dir / UTILIZATION, dumps(utilization))


def read_timeseries(run_dir: Path) -> TimeSeries:
    return _read(run_dir / TIMESERIES, TimeSeries)


def write_timeseries(run_dir: Path, series: TimeSeries) -> None:
    atomic.write_text(run_dir / TIMESERIES, series.to_json())


def load_verify_plan(path: Path) -> VerifyPlan:
    """The verify plan at PATH (`perflab verify check PLAN`)."""
    return _read(path, VerifyPlan)


def save_verify_plan(path: Path, plan: VerifyPlan) -> None:
    """verify-plan.json where `perflab verify plan --output` is told to put it (roles/bench: the run's
    directory, whence the bench sends it to verify_app.py on the DB host)."""
    atomic.write_text(path, dumps(plan))


def save_verify(path: Path, report: VerifyReport) -> None:
    """verify.json where `perflab verify check --output` is told to put it (roles/bench/tasks/verify.yml:
    the run's directory)."""
    atomic.write_text(path, dumps(report))


def load_profile_summary(path: Path) -> ProfileSummary:
    """A profile summary at PATH; read_profile_summary() reads a run's."""
    return _read(path, ProfileSummary)


def read_profile_summary(run_dir: Path) -> ProfileSummary:
    return load_profile_summary(run_dir / PROFILE_SUMMARY)


def save_profile_summary(path: Path, summary: ProfileSummary) -> None:
    """The summary where `perflab profile summarize --json` is told to put it."""
    atomic.write_text(path, dumps(summary))


def write_profile_summary(run_dir: Path, summary: ProfileSummary) -> None:
    save_profile_summary(run_dir / PROFILE_SUMMARY, summary)


def read_profile_error(run_dir: Path) -> str:
    """Why the run's window has no profile (profile-error.json's "error"), for a run whose profile was asked."""
    path = run_dir / PROFILE_ERROR
    data = _json_object(path)
    error = data.get("error")
    if not isinstance(error, str):
        raise RunFileError(path, 'has no "error" text')
    return error


def read_profile_mode(run_dir: Path) -> str:
    """What profile-window.json says was sampled: "cpu (ctimer)", "wall (wall)"... (its "mode" and "engine")."""
    path = run_dir / PROFILE_WINDOW
    data = _json_object(path)
    mode, engine = data.get("mode"), data.get("engine")
    if not isinstance(mode, str) or not isinstance(engine, str):
        raise RunFileError(path, 'has no "mode" and "engine" text')
    return f"{mode} ({engine})"


def _json_object(path: Path) -> dict[str, Any]:
    data = _document(path)
    if not isinstance(data, dict):
        raise RunFileError(path, "not a JSON object")
    return data


def read_reproduction(directory: Path) -> Reproduction:
    # Written without a schema_version before this model: the same shape, version 1.
    return _read(directory / REPRODUCTION, Reproduction, unversioned=True)


def write_reproduction(directory: Path, reproduction: Reproduction) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    atomic.write_text(directory / REPRODUCTION, dumps(reproduction))


def read_sweep(sweep_dir: Path) -> Sweep:
    return _read(sweep_dir / SWEEP, Sweep)


def write_sweep(sweep_dir: Path, sweep: Sweep) -> None:
    sweep_dir.mkdir(parents=True, exist_ok=True)
    atomic.write_text(sweep_dir / SWEEP, dumps(sweep))


# ---------------------------------------------------------------------------------------------
# The files' JSON Schemas: perflab/schemas/<file>.schema.json, generated from the models


SCHEMAS_DIR = Path(__file__).resolve().with_name("schemas")
MODELS: dict[str, type] = {
    STATUS: RunStatus, BENCH_INPUTS: BenchInputs, DB_SESSIONS: DbSessionList, CONTEXT: RunContext,
    OBSERVATIONS: Observations, RESULT: RunResult, AUDIT: Verdict, ATTRIBUTION: Attribution,
    UTILIZATION: Utilization, TIMESERIES: TimeSeries, VERIFY_PLAN: VerifyPlan, VERIFY: VerifyReport, SWEEP: Sweep,
    PROFILE_SUMMARY: ProfileSummary, REPRODUCTION: Reproduction,
}


def schema_name(file_name: str) -> str:
    """status.json -> status.schema.json"""
    return file_name.removesuffix(".json") + ".schema.json"


def schemas() -> dict[str, str]:
    """Every run file's JSON Schema, and the scenario file's (perflab/scenario.py owns it), by
    its file name under perflab/schemas/."""
    written = {schema_name(name): json.dumps(json_schema(model, name), indent=2) + "\n" for name, model in MODELS.items()}
    return written | {scenario.SCHEMA_FILE: scenario.schema_text()}


def main(argv: list[str]) -> int:
    """python -m perflab.rundir [DIR] (make schemas): write every run file's JSON Schema into DIR
    (default: perflab/schemas/)."""
    if len(argv) > 1:
        print("usage: python -m perflab.rundir [DIR]", file=sys.stderr)
        return 2
    directory = Path(argv[0]) if argv else SCHEMAS_DIR
    if not directory.is_dir():
        print(f"perflab rundir: {directory} is not a directory", file=sys.stderr)
        return 2
    for name, text in schemas().items():
        (directory / name).write_text(text, encoding="utf-8")
        print(f"wrote {directory / name}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
