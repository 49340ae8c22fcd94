"""The result of one benchmark run, as every part of perflab reads and writes it.

A RunResult holds what the load generator measured (rates, latency distributions, errors by
kind) and what the run knew about itself (target rate, start and end, the scenario as run, the
app and JVM settings, host facts, versions). It is stored as JSON next to the raw tool output;
SCHEMA_VERSION changes whenever a stored file could no longer be read the same way.

(De)serialisation is driven by the dataclass type hints, so adding a field needs no extra code,
and loading rejects unknown fields, missing fields and wrong types with a message that names the
field: a results file that does not match the schema is an error, never a half-filled object.
"""

from __future__ import annotations

import dataclasses
import datetime
import enum
import functools
import json
import math
import re
import types
import typing
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar, Union

SCHEMA_VERSION = 1

# A field's metadata that keeps it out of the file: the field is worked out while a command runs
# (e.g. a sweep step's p50, for the table it prints) and takes its default when the file is read.
NOT_STORED = {"perflab.stored": False}
# A field's metadata that leaves it out of the file while it holds its default: a key another
# program reads as absent or a value, never null (verify-plan.json's request headers and body,
# which roles/bench/files/verify_app.py sends as they are). Read back, an absent one is the default.
OMITTED_AT_DEFAULT = {"perflab.omitted_at_default": True}

JsonValue = Union[None, bool, int, float, str, list["JsonValue"], dict[str, "JsonValue"]]


class ParseError(ValueError):
    """A load generator's output cannot be parsed: truncated, corrupt or not from that tool."""


class SchemaError(ValueError):
    """A JSON document does not match the perflab schema."""


def percentile_key(percentile: float) -> str:
    """The one spelling of a percentile as a mapping key: 50.0 -> "50", 99.9 -> "99.9"."""
    if not 0.0 <= percentile <= 100.0:
        raise ValueError(f"percentile {percentile} is outside 0..100")
    return f"{percentile:.6f}".rstrip("0").rstrip(".")


@dataclass(frozen=True)
class SpectrumPoint:
    """One row of an HdrHistogram percentile spectrum."""

    value_ms: float
    percentile: float  # fraction, 0.0 .. 1.0, as HdrHistogram prints it
    total_count: int


# wrk2 prints its spectrum with 5 ticks per half distance (hdr_percentiles_print(..., 5, ...)):
# spectra computed here use the same, so that every tool's curve has the same points.
TICKS_PER_HALF_DISTANCE = 5


def value_at_percentile(sorted_values: Sequence[float], percentile: float) -> float:
    """The value at `percentile` percent of `sorted_values` (increasing), ranked as HdrHistogram
    ranks it (hdr_value_at_percentile: rank round(p/100 x n), at least 1), so that percentiles
    computed from raw requests read like the ones wrk2 prints."""
    if not sorted_values:
        raise ValueError("no values")
    if not 0.0 <= percentile <= 100.0:
        raise ValueError(f"percentile {percentile} is outside 0..100")
    rank = max(1, int(percentile / 100.0 * len(sorted_values) + 0.5))
    return sorted_values[min(rank, len(sorted_values)) - 1]


def hdr_spectrum(
    counts: Sequence[tuple[float, float]], ticks_per_half_distance: int = TICKS_PER_HALF_DISTANCE
) -> tuple[SpectrumPoint, ...]:
    """HdrHistogram's percentile spectrum (the rows hdr_percentiles_print writes) of distinct
    values in increasing order, each with its count.

    Counts may be fractional (a distribution rebuilt from percentile tables); a row's total_count
    is then rounded. As HdrHistogram's percentile iterator does, every tick the cumulative count
    reaches at a value is a row at that value, the step halves each time the distance to 100%
    does, the last value gets one row at its first tick, and a row at 100% ends the spectrum.
    """
    total = sum(count for _, count in counts)
    if not counts or total <= 0:
        raise ValueError("no values")
    if any(b[0] < a[0] for a, b in zip(counts, counts[1:])):
        raise ValueError("values must be in increasing order")
    points: list[SpectrumPoint] = []
    target = 0.0
    cumulative = 0.0
    for value, count in counts:
        if count <= 0:
            continue
        cumulative += count
        # Ticks and fractional counts are sums of floats: a tick within their noise is reached.
        last = cumulative >= total * (1.0 - 1e-9)
        reached = 100.0 if last else 100.0 * cumulative / total * (1.0 + 1e-9)
        while target <= reached:
            points.append(SpectrumPoint(value, target / 100.0, round(cumulative)))
            if last:
                break
            # HdrHistogram's own arithmetic (hdr_histogram.c, _percentile_iter_next).
            half_distance = 2 ** (int(math.log(100.0 / (100.0 - target)) / math.log(2)) + 1)
            target += 100.0 / (ticks_per_half_distance * half_distance)
        if last:
            break
    points.append(SpectrumPoint(points[-1].value_ms, 1.0, round(total)))
    return tuple(points)


@dataclass(frozen=True)
class LatencyDistribution:
    """Latency of the measured requests, in milliseconds.

    percentiles_ms maps percentile_key(p) to the latency at p percent. spectrum is the full
    HdrHistogram spectrum: the one wrk2 prints (or its finer percentile table), or one computed
    from every request (vegeta); it is empty in results of k6, retired for its licence (AGPL),
    which printed only summary percentiles.
    total_count is how many requests the distribution holds; for wrk2 that is fewer than the
    requests made, because wrk2 records nothing during its calibration period.
    """

    percentiles_ms: dict[str, float]
    mean_ms: float
    max_ms: float
    stdev_ms: float | None = None
    min_ms: float | None = None
    total_count: int | None = None
    spectrum: tuple[SpectrumPoint, ...] = ()

    def at(self, percentile: float) -> float:
        """Latency at `percentile` percent; KeyError when the tool did not report it."""
        return self.percentiles_ms[percentile_key(percentile)]


@dataclass(frozen=True)
class ErrorCounts:
    """Failed requests by kind. Every kind makes a run invalid (report 1, step 1)."""

    http_status: int = 0  # responses with status >= 400 (wrk2: "Non-2xx or 3xx responses")
    connect: int = 0  # wrk2 socket errors
    read: int = 0
    write: int = 0
    timeout: int = 0
    failed_requests: int = 0  # no answer for any other reason (vegeta: an error of no kind above)
    # Checks of the retired k6 (AGPL) that did not pass: kept so that results stored then still load.
    failed_checks: int = 0

    def by_kind(self) -> dict[str, int]:
        """The kinds that occurred, with their counts."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if getattr(self, f.name)}

    def total(self) -> int:
        return sum(self.by_kind().values())


@dataclass(frozen=True)
class ScenarioRun:
    """The scenario as it was run (after the operator's overrides)."""

    name: str
    rate: float  # requests per second asked of the load generator
    duration_s: float  # measured phase
    warmup_s: float  # warm-up as run (the scenario's, or WARMUP=), excluded from the measurement
    connections: int | None = None
    threads: int | None = None
    parameters: dict[str, str] = field(default_factory=dict)
    # The corrected p99 the run must stay within (the scenario's slo_p99_ms, or SLO_P99_MS=); None
    # in results written before the SLO was carried, and where no SLO is known.
    slo_p99_ms: float | None = None
    # The warm-up the scenario's own file asks for, before WARMUP= (warmed_up judges against it); None in
    # results written before it was carried.
    scenario_warmup_s: float | None = None

    def __post_init__(self) -> None:
        if self.slo_p99_ms is not None and not (math.isfinite(self.slo_p99_ms) and self.slo_p99_ms > 0):
            raise ValueError(f"slo_p99_ms must be a positive number of milliseconds, not {self.slo_p99_ms}")


@dataclass(frozen=True)
class AppSettings:
    """The app under test as deployed."""

    name: str
    profile: str | None = None
    jvm_options: tuple[str, ...] = ()
    environment: dict[str, str] = field(default_factory=dict)  # PERFLAB_* variables, no secrets
    cpus: str | None = None  # CPU affinity, e.g. "0-3"
    memory_limit: str | None = None
    start_to_first_request_ms: float | None = None
    cpu_quota_percent: float | None = None  # the share of those CPUs it may use (CPUQuota=, 100 a whole CPU)


def database_name(version: str) -> str:
    """The DB server as the sentences name it, from its version line (host_facts.py): "MariaDB 10.11.14"
    from `mariadbd  Ver 10.11.14-MariaDB-0+deb12u2 ...`, "MySQL 8.0.43" from `mysqld  Ver 8.0.43-0ubuntu...`,
    "PostgreSQL 15.14" from `postgres (PostgreSQL) 15.14 (Debian ...)`."""
    postgres = re.search(r"\(PostgreSQL\)\s+([0-9.]+)", version)
    if postgres:
        return f"PostgreSQL {postgres.group(1)}"
    mysql = re.search(r"(MariaDB|MySQL)?\S*\s+Ver\s+([0-9.]+)(-MariaDB)?", version)
    if mysql:
        return f"{'MariaDB' if mysql.group(3) or mysql.group(1) == 'MariaDB' else 'MySQL'} {mysql.group(2)}"
    return "the database"


OBSERVABILITY = "PERFLAB_OBSERVABILITY"  # the project's apps' setting: "off" leaves the lab's instrumentation out


def observability_off(app: AppSettings | None) -> bool:
    """The app ran without the lab's own instrumentation (the manifests' variant observability=off)."""
    return app is not None and app.environment.get(OBSERVABILITY) == "off"


def with_observability(app: AppSettings) -> AppSettings:
    """The same app with the lab's instrumentation on: the variant an observability=off run is measured against."""
    return dataclasses.replace(app, environment={k: v for k, v in app.environment.items() if k != OBSERVABILITY})


def app_variant(app: AppSettings | None) -> str:
    """The app as deployed, one name per variant the lab tells apart (report 2: MVC's thread
    counts and virtual threads; report 3: Quarkus' greeting on the IO or a worker thread), with
    the resource profile where it is not the default: "quarkus (IO thread)", "spring-mvc (400
    threads)", "spring-mvc (virtual threads) [io-vs-worker]", "spring-webflux", "spring-webflux (observability
    off)" (the lab's instrumentation left out, issue 23).

    Only a setting the app reads names its variant (every app is given every PERFLAB_* variable,
    apps/README.md); an unset one counts as the app's default, as the app itself takes it."""
    if app is None:
        return "unknown app"
    environment = app.environment
    settings = []
    if app.name == "quarkus":
        dispatch = environment.get("PERFLAB_GREETING_DISPATCH", "io")
        settings.append(f"{'IO' if dispatch == 'io' else dispatch} thread")
    elif app.name == "spring-mvc":
        threads = environment.get("PERFLAB_THREADS", "platform")
        count = environment.get("PERFLAB_MAX_THREADS", "200") if threads == "platform" else threads
        settings.append(f"{count} threads")
    if app.name in ("quarkus", "spring-mvc", "spring-webflux") and observability_off(app):
        settings.append("observability off")
    name = f"{app.name} ({', '.join(settings)})" if settings else app.name
    if app.profile and app.profile != "default":
        name += f" [{app.profile}]"
    return name


@dataclass(frozen=True)
class HostFacts:
    tier: str
    host: str  # inventory hostname
    machine: str | None = None  # the physical machine (kernel) the host runs on
    cpus: int | None = None
    memory_mb: int | None = None
    os: str | None = None
    kernel: str | None = None


@dataclass(frozen=True)
class Repetition:
    """One run of a point run several times on fresh JVMs (REPEAT=N): its group (shared by the
    runs of one `make bench` or `make compare` invocation; with the app, what the report takes the
    median and range over) and its place in it."""

    group: str
    index: int  # 1 .. of
    of: int

    def __post_init__(self) -> None:
        if not self.group or not self.group.replace("-", "").replace("_", "").isalnum():
            raise ValueError(f"a repetition group is letters, digits, '-' and '_', not {self.group!r}")
        if not 1 <= self.index <= self.of:
            raise ValueError(f"repetition {self.index} of {self.of}: the index is 1 .. of")


@dataclass(frozen=True)
class LoadgenShare:
    """One loadgen host's part of a run that several hosts sent: the rate it was asked for (its
    loadgen_weight's share) and what it achieved, over the same window as the run's."""

    host: str
    target_rate: float
    achieved_rate: float
    requests: int


@dataclass(frozen=True)
class RunContext:
    """What the run knows about itself and the tool does not print; merged into its result."""

    started_at: str | None = None  # ISO 8601 with a zone, e.g. "2026-11-21T10:00:00Z"
    ended_at: str | None = None
    scenario: ScenarioRun | None = None
    app: AppSettings | None = None
    hosts: tuple[HostFacts, ...] = ()
    versions: dict[str, str] = field(default_factory=dict)  # tool, JDK, DB, OS versions
    raw_output: str | None = None
    incomplete_reason: str | None = None
    repetition: Repetition | None = None  # REPEAT=N; None for a run made once
    schema_version: int = SCHEMA_VERSION

    def __post_init__(self) -> None:
        _check_window(self.started_at, self.ended_at)

    def to_json(self) -> str:
        return dumps(self)

    @classmethod
    def from_json(cls, text: str) -> RunContext:
        return loads(cls, text)


def _check_window(started_at: str | None, ended_at: str | None) -> None:
    """Both times, when given, are ISO 8601 with a time zone, and the run does not end before it starts."""
    parsed: list[datetime.datetime] = []
    for name, value in (("started_at", started_at), ("ended_at", ended_at)):
        if value is None:
            continue
        try:
            moment = datetime.datetime.fromisoformat(value)
        except ValueError:
            raise ValueError(f"{name} is not an ISO 8601 time: {value!r}") from None
        if moment.tzinfo is None:
            raise ValueError(f"{name} has no time zone: {value!r} (write e.g. {value}Z for UTC)")
        parsed.append(moment)
    if len(parsed) == 2 and parsed[1] < parsed[0]:
        raise ValueError(f"the run ends ({ended_at}) before it starts ({started_at})")


@dataclass(frozen=True)
class RunResult:
    tool: str  # "wrk2" or "vegeta" ("k6" in results stored before k6 was retired)
    target_rate: float  # requests per second asked
    achieved_rate: float  # successful requests per second (wrk2, vegeta: see their modules)
    requests: int
    duration_s: float
    latency_corrected: LatencyDistribution  # measured from each request's intended send time
    errors: ErrorCounts
    latency_uncorrected: LatencyDistribution | None = None  # wrk2 -U; vegeta always
    threads: int | None = None
    connections: int | None = None
    bytes_read: int | None = None
    # Iterations the retired k6 could not start: kept so that results stored then still load.
    dropped_iterations: int | None = None
    started_at: str | None = None  # ISO 8601, UTC
    ended_at: str | None = None
    scenario: ScenarioRun | None = None
    app: AppSettings | None = None
    hosts: tuple[HostFacts, ...] = ()
    versions: dict[str, str] = field(default_factory=dict)
    raw_output: str | None = None  # file name of the tool's raw output, beside the JSON
    incomplete_reason: str | None = None  # set when the run was interrupted
    repetition: Repetition | None = None  # REPEAT=N (the run context's)
    # Several loadgen hosts: each one's share of the rate and what it achieved (empty with one host,
    # and in results written before the hosts' shares were kept).
    loadgen_shares: tuple[LoadgenShare, ...] = ()
    schema_version: int = SCHEMA_VERSION

    def __post_init__(self) -> None:
        if not (math.isfinite(self.target_rate) and self.target_rate > 0):
            raise ValueError(f"target rate must be a positive number of requests per second, not {self.target_rate}")
        if not all(math.isfinite(v) and v >= 0 for v in (self.achieved_rate, self.duration_s, self.requests)):
            raise ValueError("achieved_rate, duration_s and requests must be finite and not negative")
        _check_window(self.started_at, self.ended_at)

    def with_context(self, context: RunContext) -> RunResult:
        """This result with every field the run context carries taken from it."""
        carried = {f.name: getattr(context, f.name) for f in dataclasses.fields(context) if f.name != "schema_version"}
        return dataclasses.replace(self, **carried)

    def to_json(self) -> str:
        return dumps(self)

    @classmethod
    def from_json(cls, text: str) -> RunResult:
        return loads(cls, text)


T = TypeVar("T")


def _stored(spec: dataclasses.Field[Any]) -> bool:
    return spec.metadata.get("perflab.stored", True) is not False


def to_jsonable(value: object) -> JsonValue:
    """A dataclass tree as plain JSON values; floats must be finite."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        written: dict[str, JsonValue] = {}
        for spec in dataclasses.fields(value):
            held = getattr(value, spec.name)
            if _stored(spec) and not (spec.metadata.get("perflab.omitted_at_default") and held == _default(spec)):
                written[spec.name] = to_jsonable(held)
        return written
    if isinstance(value, enum.Enum):
        return to_jsonable(value.value)
    if isinstance(value, (list, tuple)):
        return [to_jsonable(item) for item in value]
    if isinstance(value, dict):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"{value} cannot be stored as JSON")
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    raise TypeError(f"cannot store {type(value).__name__} as JSON")


def _default(spec: dataclasses.Field[Any]) -> Any:
    return spec.default if spec.default_factory is dataclasses.MISSING else spec.default_factory()


def dumps(value: object, indent: int | None = 2) -> str:
    return json.dumps(to_jsonable(value), indent=indent, sort_keys=False, allow_nan=False) + "\n"


def version_field(cls: type) -> str:
    """The field that carries the version of the file a dataclass models: schema_version, unless
    the class names another in VERSION_FIELD (a file whose own format already carries a version,
    checked by a program without perflab: verify-plan.json's "version")."""
    return str(getattr(cls, "VERSION_FIELD", "schema_version"))


def schema_version(cls: type) -> int:
    """The version of the file a dataclass models: its version field's default (version_field())."""
    name = version_field(cls)
    spec = _schema(cls)[1].get(name)
    if spec is None or not isinstance(spec.default, int):
        raise TypeError(f"{cls.__name__} has no {name} field with a default")
    return spec.default


def loads(cls: type[T], text: str, *, unversioned: bool = False) -> T:
    """Parse JSON `text` into dataclass `cls`, checking the schema version first: it must be the
    class's (schema_version()); with `unversioned`, a document without one is read as that version
    too (a file written before it carried a version, in the same shape)."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SchemaError(f"not JSON: {exc}") from None
    return load_document(cls, data, unversioned=unversioned)


def load_document(cls: type[T], data: Any, *, unversioned: bool = False) -> T:
    """loads() of a document already parsed from JSON."""
    if not isinstance(data, dict):
        raise SchemaError(f"expected a JSON object, found {type(data).__name__}")
    current, name = schema_version(cls), version_field(cls)
    version = data.get(name)
    if not (version == current or (unversioned and name not in data)):
        raise SchemaError(f"{name} is {version!r}; this perflab reads {current}")
    value = from_jsonable(cls, data, cls.__name__)
    if not isinstance(value, cls):
        raise TypeError(f"{cls.__name__} is not a dataclass")
    return value


def open_fields(cls: type) -> bool:
    """Whether a dataclass reads a document that may hold fields it does not name (and drops
    them): one that another program writes and extends, e.g. the scenario file Ansible passes on."""
    return bool(getattr(cls, "OPEN", False))


def from_jsonable(hint: Any, data: Any, where: str) -> Any:
    """Build a value of type `hint` from plain JSON `data`; `where` names it in errors."""
    origin = typing.get_origin(hint)
    if hint is Any:
        return data
    if origin is Literal:
        choices = typing.get_args(hint)
        if data not in choices or isinstance(data, bool) != isinstance(choices[0], bool):
            raise SchemaError(f"{where}: expected {' or '.join(map(repr, choices))}, found {data!r}")
        return data
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        try:
            return hint(data)
        except ValueError:
            values = " or ".join(repr(member.value) for member in hint)
            raise SchemaError(f"{where}: expected {values}, found {data!r}") from None
    if origin in (Union, types.UnionType):
        options = typing.get_args(hint)
        if data is None:
            if type(None) in options:
                return None
            raise SchemaError(f"{where}: must not be null")
        non_null = [o for o in options if o is not type(None)]
        if len(non_null) == 1:
            return from_jsonable(non_null[0], data, where)
        for option in non_null:  # in the order the type names them; the first that reads it
            try:
                return from_jsonable(option, data, where)
            except SchemaError:
                continue
        names = " or ".join(_hint_name(o) for o in non_null)
        raise SchemaError(f"{where}: expected {names}, found {_json_type(data)}")
    if dataclasses.is_dataclass(hint) and isinstance(hint, type):
        if not isinstance(data, dict):
            raise SchemaError(f"{where}: expected an object, found {_json_type(data)}")
        hints, fields = _schema(hint)
        stored = {name: spec for name, spec in fields.items() if _stored(spec)}
        unknown = sorted(set(data) - set(stored))
        if unknown and not open_fields(hint):
            raise SchemaError(f"{where}: unknown field(s) {', '.join(unknown)}")
        kwargs: dict[str, Any] = {}
        for name, spec in stored.items():
            if name in data:
                kwargs[name] = from_jsonable(hints[name], data[name], f"{where}.{name}")
            elif spec.default is dataclasses.MISSING and spec.default_factory is dataclasses.MISSING:
                raise SchemaError(f"{where}: missing field {name}")
        try:
            return hint(**kwargs)
        except ValueError as exc:
            raise SchemaError(f"{where}: {exc}") from None
    if origin in (list, tuple):
        if not isinstance(data, list):
            raise SchemaError(f"{where}: expected a list, found {_json_type(data)}")
        args = typing.get_args(hint)
        if origin is tuple and len(args) == 2 and args[1] is Ellipsis:
            return tuple(from_jsonable(args[0], item, f"{where}[{i}]") for i, item in enumerate(data))
        if origin is tuple:
            if len(data) != len(args):
                raise SchemaError(f"{where}: expected {len(args)} items, found {len(data)}")
            return tuple(from_jsonable(a, item, f"{where}[{i}]") for i, (a, item) in enumerate(zip(args, data)))
        return [from_jsonable(args[0], item, f"{where}[{i}]") for i, item in enumerate(data)]
    if origin is dict:
        if not isinstance(data, dict):
            raise SchemaError(f"{where}: expected an object, found {_json_type(data)}")
        value_hint = typing.get_args(hint)[1]
        return {k: from_jsonable(value_hint, v, f"{where}.{k}") for k, v in data.items()}
    if hint is float:
        if isinstance(data, bool) or not isinstance(data, (int, float)):
            raise SchemaError(f"{where}: expected a number, found {_json_type(data)}")
        return float(data)
    if hint is int:
        if isinstance(data, bool) or not isinstance(data, int):
            raise SchemaError(f"{where}: expected an integer, found {_json_type(data)}")
        return data
    if hint in (str, bool):
        if not isinstance(data, hint):
            raise SchemaError(f"{where}: expected {hint.__name__}, found {_json_type(data)}")
        return data
    raise TypeError(f"{where}: unsupported type {hint!r}")


def json_schema(cls: type, title: str) -> dict[str, JsonValue]:
    """The JSON Schema (draft 2020-12) of the documents from_jsonable reads as dataclass `cls`:
    the same types, the same required fields, the same refusal of unknown ones. `cls` is the
    root; every dataclass it holds is one definition under $defs, named after its class."""
    definitions: dict[str, JsonValue] = {}
    _schema_of(cls, definitions)
    root = definitions.pop(cls.__name__)
    assert isinstance(root, dict)
    schema: dict[str, JsonValue] = {"$schema": "https://json-schema.org/draft/2020-12/schema", "title": title, **root}
    if definitions:
        schema["$defs"] = dict(sorted(definitions.items()))
    return schema


def _schema_of(hint: Any, definitions: dict[str, JsonValue]) -> JsonValue:
    origin = typing.get_origin(hint)
    if hint is Any:
        return {}
    if origin is Literal:
        return {"enum": list(typing.get_args(hint))}
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return {"enum": [member.value for member in hint]}
    if origin in (Union, types.UnionType):
        options: list[JsonValue] = [_schema_of(o, definitions) for o in typing.get_args(hint)]
        return {"anyOf": options}
    if dataclasses.is_dataclass(hint) and isinstance(hint, type):
        if hint.__name__ not in definitions:
            definitions[hint.__name__] = {}  # a placeholder: a class that holds itself refers to it
            hints, fields = _schema(hint)
            stored = [spec for spec in fields.values() if _stored(spec)]
            properties: dict[str, JsonValue] = {spec.name: _schema_of(hints[spec.name], definitions) for spec in stored}
            if version_field(hint) in properties:
                properties[version_field(hint)] = {"const": schema_version(hint)}
            required: list[JsonValue] = [spec.name for spec in stored if spec.default is dataclasses.MISSING
                                         and spec.default_factory is dataclasses.MISSING]
            definition: dict[str, JsonValue] = {"type": "object"}
            if hint.__doc__ and not hint.__doc__.startswith(f"{hint.__name__}("):
                definition["description"] = " ".join(hint.__doc__.split())
            definition.update(properties=properties, required=required, additionalProperties=open_fields(hint))
            definitions[hint.__name__] = definition
        return {"$ref": f"#/$defs/{hint.__name__}"}
    if origin in (list, tuple):
        args = typing.get_args(hint)
        if origin is tuple and not (len(args) == 2 and args[1] is Ellipsis):
            items: list[JsonValue] = [_schema_of(a, definitions) for a in args]
            return {"type": "array", "prefixItems": items, "minItems": len(args), "maxItems": len(args)}
        return {"type": "array", "items": _schema_of(args[0], definitions)}
    if origin is dict:
        return {"type": "object", "additionalProperties": _schema_of(typing.get_args(hint)[1], definitions)}
    simple: dict[Any, str] = {float: "number", int: "integer", str: "string", bool: "boolean", type(None): "null"}
    if hint in simple:
        return {"type": simple[hint]}
    raise TypeError(f"unsupported type {hint!r}")


@functools.cache
def _schema(cls: type) -> tuple[dict[str, Any], dict[str, dataclasses.Field[Any]]]:
    """A dataclass's type hints and fields, worked out once per class: a result holds hundreds of
    spectrum points, and typing.get_type_hints is the slow part of reading them (the report reads
    hundreds of results)."""
    return typing.get_type_hints(cls), {f.name: f for f in dataclasses.fields(cls)}


def _hint_name(hint: Any) -> str:
    return {float: "a number", int: "an integer", str: "a string", bool: "a boolean"}.get(hint, getattr(hint, "__name__", str(hint)))


def _json_type(data: object) -> str:
    if data is None:
        return "null"
    return {bool: "boolean", int: "integer", float: "number", str: "string", list: "list", dict: "object"}.get(
        type(data), type(data).__name__
    )
