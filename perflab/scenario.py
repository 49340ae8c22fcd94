"""Scenario files: a workload as data the user writes, and the one compiler to each tool's input.

A scenario file (YAML) says how hard to push (rate, duration, warm-up, the p99 SLO and why,
connections, threads) and what to send: `requests`, each a template with a weight in the mix, and
`variables`, each drawn deterministically per request with no code. Its JSON Schema,
perflab/schemas/scenario.schema.json, is generated from the models below (`make schemas`); a
file that does not match it, or that the schema cannot judge (a weight of 0, a variable used but
not defined, a CSV that is missing or empty), is refused with one line per wrong field.

    name: orders
    rate: 400
    duration: 60s
    warmup: 30s
    slo_p99_ms: 50
    slo_reason: one indexed lookup or insert; above 50 ms requests queue
    connections: 32
    threads: 2
    requests:
      - name: lookup
        weight: 3
        method: GET
        path: /orders/${order}
        expect: {status: 200, media_type: application/json, json_field: id}
      - name: create
        weight: 1
        method: POST
        path: /orders
        headers: {Content-Type: application/json}
        body: {json: '{"ref":"${ref}","sku":"${sku}"}'}
        expect: {status: 201}
    variables:
      order: {uniform: {min: 1, max: 1000}}
      ref: {key: {digits: 9, format: "ORD-#########"}}
      sku: {csv: {file: skus.csv, column: sku}}

Where requests come from: the load generator runs T threads per host (H hosts); thread `thread`
(host K's threads are K*T .. K*T+T-1, so ids never repeat across hosts) makes its n-th request
(n = 0, 1, ...) from (thread, n) alone:
- the request: with `mix: draw` (the default) the golden-ratio draw of roles/loadgen/files/wrk2/
  perflab.lua against the weights' running sums, so every stretch of the run has the weights' mix;
  with `mix: turns` the requests in turn, each `weight` times, thread t starting t turns ahead;
- each variable the request uses, once per request (the same value wherever it appears in it):
  `sequence` start + (n x step + thread x thread_step) [mod modulo];
  `uniform`  min + (n x step + thread x thread_step) mod (max - min + 1), spread over the range by
             default steps 7919 and 104729 (primes: neighbouring requests and threads land far apart);
  `pick`     values[(n x step + thread x thread_step) mod len];
  `csv`      the same over a column of a CSV file beside the scenario;
  `key`      a key that never repeats across threads, hosts and phases: phase x 10^(digits-1) +
             (uses of it by this thread) x (H x T) + thread, zero-padded to `digits` and poured
             into `format` (one `#` a digit), KEY_PHASE being the phase (0..9);
  `parameter` a fixed value the operator may override when the scenario is compiled.
Both tools replay this one sequence from one compiled document (compile_scenario()):
perflab/scenario_play.py (standard library only, for the loadgen hosts) plays it into vegeta's
targets, thread i % T's requests in round-robin (what wrk2's threads send at the same rate), and
perflab/wrk2_scenario.lua plays it in wrk2 as a Lua table (compile_lua()), with the same arithmetic.

The command line (`perflab scenario ...`, registered in perflab/cli.py):
  perflab scenario check FILE                 refuse the file with one line per wrong field, or say OK
  perflab scenario show FILE [--first N] [--tool wrk2|vegeta] [--threads T] [--hosts H]
                        [--host-index K] [--key-phase P] [--set NAME=VALUE ...] [--weight REQUEST=W ...]
                        [--base-url URL]
      the first N requests each tool would send (wrk2: thread by thread in the same round-robin)
  perflab scenario label SCENARIO              its name in a run's or a sweep's name (scenario.label)
  perflab scenario compile FILE [--set NAME=VALUE ...] [--weight REQUEST=W ...] [--vegeta OUT.json] [--wrk2 OUT.lua]
                        [--as-run OUT.json|-]
      the compiled scenario: the document perflab/scenario_play.py plays into vegeta targets (on a
      loadgen host, stdlib only), the data file perflab/wrk2_scenario.lua plays, and the scenario as
      run (what the bench records: the file's fields, weights and parameters as run, endpoints)
Exit codes: 0 done; 2 refused (a wrong scenario file or option), one line per problem on stderr.
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import itertools
import json
import math
import re
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal
from urllib.parse import quote, quote_plus

import jsonschema  # type: ignore[import-untyped]
import yaml  # type: ignore[import-untyped]

from perflab import scenario_play, strict_yaml
from perflab.model import JsonValue, from_jsonable, json_schema, to_jsonable
from perflab.observations import STATEMENT_KINDS

EXIT_OK = 0
EXIT_REFUSED = 2

SCHEMA_FILE = "scenario.schema.json"
SCHEMA_TITLE = "a perflab scenario"
LUA_PLAYER = Path(__file__).resolve().with_name("wrk2_scenario.lua")

# uniform's default steps: primes, as the zipcodes scenario's seeded-zip reads have always used them.
UNIFORM_STEP = 7919
UNIFORM_THREAD_STEP = 104729
KEY_PHASE_MAX = scenario_play.KEY_PHASE_MAX

NAME = re.compile(r"[a-z][a-z0-9_]*")
SCENARIO_NAME = re.compile(r"[a-z][a-z0-9_-]*")
DURATION = re.compile(r"[1-9][0-9]*[smh]|0[smh]?")
METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")
HEADER_NAME = re.compile(r"[A-Za-z0-9!#$%&'*+.^_`|~-]+")
# ${name} in a template; $$ is a literal $.
PLACEHOLDER = re.compile(r"\$(\$|\{([^}]*)\}|\{?)")
# A key's format: characters no path, form or JSON string needs to escape.
KEY_FORMAT = re.compile(r"[#A-Za-z0-9._~-]+")
# A value put into a path is percent-encoded but for these (RFC 3986's unreserved characters).
PATH_VALUE_SAFE = "-._~"


# The built-in scenarios: scenarios/<name>.yml of the checkout.
BUILTIN_DIR = Path(__file__).resolve().parent.parent / "scenarios"


def is_file_name(name_or_path: str) -> bool:
    """Whether SCENARIO= names a file (a path, or a .yml/.yaml name) rather than a built-in."""
    return "/" in name_or_path or name_or_path.endswith((".yml", ".yaml"))


def builtin_names() -> list[str]:
    return sorted(path.stem for path in BUILTIN_DIR.glob("*.yml"))


def path_of(name_or_path: str) -> Path:
    """The file SCENARIO= names: a built-in's (scenarios/<name>.yml) or the path given."""
    return Path(name_or_path) if is_file_name(name_or_path) else BUILTIN_DIR / f"{name_or_path}.yml"


def label(name_or_path: str) -> str:
    """SCENARIO= as a run's and a sweep's name carry it: a built-in's name, a file's `name` (its file
    name without .yml when it has none); the bench names its runs with it (perflab scenario label)."""
    if not is_file_name(name_or_path):
        return name_or_path
    try:
        data = yaml.safe_load(Path(name_or_path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        data = None
    name = data.get("name") if isinstance(data, dict) else None
    if not isinstance(name, str) or not name:
        name = Path(name_or_path).name.removesuffix(".yaml").removesuffix(".yml")
    return re.sub(r"[^a-z0-9_-]", "-", name)


class ScenarioError(strict_yaml.FileRefused):
    """A scenario file, or what was asked of it, is refused; one line per problem."""


# ---------------------------------------------------------------------------------------------
# The model: what a valid scenario file holds (its schema is generated from these classes)


@dataclass(frozen=True)
class JsonObject:
    """The body is a JSON object that holds every one of `fields` (their names compared ignoring case,
    as TechEmpower's verify compares them: it lower-cases the keys; other fields may be there too)."""

    fields: tuple[str, ...]


@dataclass(frozen=True)
class JsonArray:
    """The body is a JSON array of exactly `length` items, each a JSON object holding every one of
    `fields` (names compared ignoring case, as in json_object)."""

    length: int
    fields: tuple[str, ...] = ()


@dataclass(frozen=True)
class Expect:
    """What every answer to the request must be: its status, and optionally its media type (with a
    charset when it names one), a field its JSON body holds (a dotted path, e.g. owner.id), a pattern
    its body matches, the shape of its JSON body (json_object, json_array), the rows of the HTML
    table it holds (html_table: each row's cells as text, character references decoded, in order) and
    the headers it carries (headers: each a name, compared ignoring case, or "A or B" where either does,
    as TechEmpower's verify asks for Server, Date, Content-Type and Content-Length or Transfer-Encoding)."""

    status: int
    media_type: str | None = None
    json_field: str | None = None
    body_pattern: str | None = None
    json_object: JsonObject | None = None
    json_array: JsonArray | None = None
    html_table: tuple[tuple[str, ...], ...] | None = None
    headers: tuple[str, ...] = ()


@dataclass(frozen=True)
class Body:
    """The request body: `json`, a template sent as it reads once the variables are filled in
    (Content-Type application/json unless the headers say otherwise), or `form`, fields each a
    template, sent form-encoded (application/x-www-form-urlencoded)."""

    json: str | None = None
    form: dict[str, str] | None = None


@dataclass(frozen=True)
class StatementRange:
    """Statements of a kind per request anywhere from `min` to `max`: where the work may be done either
    way (TechEmpower's updates: N rows written by one bulk UPDATE, or by N)."""

    min: float
    max: float


@dataclass(frozen=True)
class Request:
    """One kind of request: its name (the operation the tools count), its share of the mix, and
    what is sent; `statements` are the DB statements per request the app's contract allows, by
    kind (select, insert, update, delete), each a count or a range, which the verify phase counts;
    `rows` the rows per request those statements return (select) or write (the others), by kind,
    which the verify phase counts where the DB counts rows by statement (PostgreSQL), within
    TechEmpower's margins (perflab/verify.py)."""

    name: str
    weight: float
    method: str
    path: str
    expect: Expect
    headers: dict[str, str] = field(default_factory=dict)
    body: Body | None = None
    statements: dict[str, float | StatementRange] | None = None
    rows: dict[str, float] | None = None


@dataclass(frozen=True)
class SequenceDraw:
    """start + (n x step + thread x thread_step), mod `modulo` when given; zero-padded to `digits`."""

    start: int = 0
    step: int = 1
    thread_step: int = 0
    modulo: int | None = None
    digits: int = 0


@dataclass(frozen=True)
class UniformDraw:
    """An integer spread evenly over min..max: min + (n x step + thread x thread_step) mod (max - min + 1)."""

    min: int
    max: int
    step: int = UNIFORM_STEP
    thread_step: int = UNIFORM_THREAD_STEP
    digits: int = 0


@dataclass(frozen=True)
class PickDraw:
    """values[(n x step + thread x thread_step) mod len]: in turn by default."""

    values: tuple[str, ...]
    step: int = 1
    thread_step: int = 0


@dataclass(frozen=True)
class CsvDraw:
    """A pick from one column of a CSV file (with a header row) beside the scenario file."""

    file: str
    column: str
    step: int = 1
    thread_step: int = 0


@dataclass(frozen=True)
class KeyDraw:
    """A key no thread, loadgen host or phase (KEY_PHASE) ever sends twice: `digits` digits, the
    first one the phase, poured into `format` (one # per digit)."""

    digits: int = 9
    format: str | None = None


@dataclass(frozen=True)
class ParameterDraw:
    """One value for the whole run, `default` unless the operator sets it when compiling."""

    default: str


@dataclass(frozen=True)
class Variable:
    """Exactly one of the kinds."""

    sequence: SequenceDraw | None = None
    uniform: UniformDraw | None = None
    pick: PickDraw | None = None
    csv: CsvDraw | None = None
    key: KeyDraw | None = None
    parameter: ParameterDraw | None = None

    def kind(self) -> str:
        return next(f.name for f in dataclasses.fields(self) if getattr(self, f.name) is not None)


@dataclass(frozen=True)
class Scenario:
    """A workload: how hard to push, and what to send."""

    name: str
    rate: int
    duration: str
    warmup: str
    slo_p99_ms: float
    slo_reason: str
    connections: int
    threads: int
    requests: tuple[Request, ...]
    description: str = ""
    mix: Literal["draw", "turns"] = "draw"
    variables: dict[str, Variable] = field(default_factory=dict)
    vegeta_exporter: bool = True

    def endpoints(self) -> tuple[str, ...]:
        """Its routes as the app names them, "GET /owners/{id}": each once, in the file's order."""
        def route(match: re.Match[str]) -> str:
            return "$" if match.group(1) == "$" else "{" + (match.group(2) or "") + "}"

        routes = [f"{r.method} {PLACEHOLDER.sub(route, r.path.split('?')[0])}" for r in self.requests]
        return tuple(dict.fromkeys(routes))

    def request_types(self) -> list[dict[str, str]]:
        """Which of the app's routes each request type is, for the app dashboard's panels by request
        type (perflab/dashboards/app.py): {"method", "route" (its shape: route_shape), "type" (the
        requests' names, "+"-joined where several share a route: the app cannot tell them apart)},
        one per route, in the file's order."""
        names: dict[tuple[str, str], list[str]] = {}
        for request in self.requests:
            endpoint = dataclasses.replace(self, requests=(request,)).endpoints()[0]
            method, route = endpoint.split(" ", 1)
            names.setdefault((method, route_shape(route)), []).append(request.name)
        return [{"method": method, "route": route, "type": "+".join(types)} for (method, route), types in names.items()]


# A {placeholder} of a route as the app's metrics name it ("/owners/{ownerId}"): whatever its name,
# the same route. The app dashboard's panels by request type match the uri labels the same way, in
# PromQL (perflab/dashboards/app.py's by_request_type).
ROUTE_PLACEHOLDER = re.compile(r"\{[^}/]*\}")


def route_shape(route: str) -> str:
    """ROUTE with each {placeholder} as {}: "/owners/{ownerId}/pets/{petId}" is "/owners/{}/pets/{}"."""
    return ROUTE_PLACEHOLDER.sub("{}", route)


def schema() -> dict[str, JsonValue]:
    return json_schema(Scenario, SCHEMA_TITLE)


def schema_text() -> str:
    """perflab/schemas/scenario.schema.json as `make schemas` writes it."""
    return json.dumps(schema(), indent=2) + "\n"


# ---------------------------------------------------------------------------------------------
# Loading: one line per wrong field


def _where(path: Sequence[Any]) -> str:
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text or "(the file)"


_JSON_KINDS = {"string": "a string", "integer": "a whole number", "number": "a number", "boolean": "true or false",
               "array": "a list", "object": "a mapping", "null": "nothing"}


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return "true or false"
    return {str: "a string", int: "a whole number", float: "a number", list: "a list", dict: "a mapping",
            type(None): "nothing"}.get(type(value), type(value).__name__)


def _schema_problem(error: Any) -> Iterator[tuple[str, str]]:
    path, keyword, instance = list(error.absolute_path), error.validator, error.instance
    if keyword == "required":
        for missing in error.validator_value:
            if missing not in instance:
                yield _where([*path, missing]), "missing"
    elif keyword == "additionalProperties":
        known = list(error.schema.get("properties", {}))
        for extra in instance:
            if extra not in known:
                yield _where([*path, extra]), f"unknown field; the fields here are {', '.join(known)}"
    elif keyword == "type":
        wanted: list[str] = error.validator_value if isinstance(error.validator_value, list) else [error.validator_value]
        yield _where(path), f"{instance!r} is {_kind(instance)}, not {' or '.join(_JSON_KINDS.get(w) or w for w in wanted)}"
    elif keyword == "anyOf":
        # An optional field (T | None) or one of several kinds (a count or a range): where the value is of a
        # branch's kind, what is wrong inside it; else what kinds it may be.
        branches = [b for b in error.context if b.validator != "type" or b.validator_value != "null"]
        inside = [b for b in branches if b.validator != "type"]
        if inside:
            for branch in inside:
                yield from _schema_problem(branch)
        elif branches:
            kinds = dict.fromkeys(_JSON_KINDS.get(b.validator_value, str(b.validator_value)) for b in branches)
            yield _where(path), f"{instance!r} is {_kind(instance)}, not {' or '.join(kinds)}"
        else:
            yield _where(path), str(error.message)
    elif keyword == "enum":
        yield _where(path), f"{instance!r} is not allowed; allowed: {', '.join(map(str, error.validator_value))}"
    else:
        yield _where(path), str(error.message)


def _read(file: Path) -> dict[str, Any]:
    return strict_yaml.read_mapping(file, str(file), ScenarioError, _kind, f"perflab/schemas/{SCHEMA_FILE}")


def load(file: Path) -> Scenario:
    """The scenario in FILE; ScenarioError with one line per wrong field (FILE: field: what is wrong)."""
    data = _read(file)
    problems: dict[str, str] = {}
    errors = jsonschema.Draft202012Validator(schema()).iter_errors(data)
    for error in sorted(errors, key=lambda e: list(map(str, e.absolute_path))):
        for where, problem in _schema_problem(error):
            problems.setdefault(where, problem)
    if not problems:
        scenario: Scenario = from_jsonable(Scenario, data, "scenario")
        for where, problem in _problems(scenario, file.parent):
            problems.setdefault(where, problem)
    if problems:
        raise ScenarioError([f"{file}: {where}: {problem}" for where, problem in problems.items()])
    return scenario


def placeholders(template: str) -> list[str]:
    """The variables a template uses, in order; ValueError for a `$` that is neither ${name} nor $$."""
    names = []
    for match in PLACEHOLDER.finditer(template):
        if match.group(1) == "$":
            continue
        if match.group(2) is None:
            raise ValueError("has a '$' that is not ${name} (write $$ for a literal $)")
        names.append(match.group(2))
    return names


def _templates(request: Request) -> Iterator[tuple[str, str]]:
    yield "path", request.path
    if request.body is not None and request.body.json is not None:
        yield "body.json", request.body.json
    if request.body is not None and request.body.form is not None:
        yield from ((f"body.form.{name}", value) for name, value in request.body.form.items())


def _problems(scenario: Scenario, directory: Path) -> Iterator[tuple[str, str]]:
    """What the schema cannot say: ranges, names, a variable used but not defined, the CSV files."""
    if not SCENARIO_NAME.fullmatch(scenario.name):
        yield "name", f"{scenario.name!r} is not allowed; allowed: a-z first, then a-z, 0-9, - and _"
    if scenario.rate < 1:
        yield "rate", f"{scenario.rate} is out of range; allowed: requests per second, 1 or more"
    for name in ("duration", "warmup"):
        if not DURATION.fullmatch(getattr(scenario, name)):
            yield name, f"{getattr(scenario, name)!r} is not allowed; allowed: a whole number with s, m or h (60s, 2m)"
    if not (math.isfinite(scenario.slo_p99_ms) and scenario.slo_p99_ms > 0):
        yield "slo_p99_ms", f"{scenario.slo_p99_ms} is out of range; allowed: milliseconds, more than 0"
    if not scenario.slo_reason.strip():
        yield "slo_reason", "is empty; allowed: why a p99 above slo_p99_ms means the app is failing this workload"
    if scenario.threads < 1:
        yield "threads", f"{scenario.threads} is out of range; allowed: 1 or more"
    if scenario.connections < scenario.threads:
        yield "connections", f"{scenario.connections} is out of range; allowed: threads ({scenario.threads}) or more"
    if not scenario.requests:
        yield "requests", "is empty; allowed: one request or more"
    names: set[str] = set()
    for index, request in enumerate(scenario.requests):
        yield from _request_problems(scenario, f"requests[{index}]", request, names)
    for name, variable in scenario.variables.items():
        yield from _variable_problems(f"variables.{name}", name, variable, directory)


def _request_problems(scenario: Scenario, where: str, request: Request, names: set[str]) -> Iterator[tuple[str, str]]:
    if not NAME.fullmatch(request.name):
        yield f"{where}.name", f"{request.name!r} is not allowed; allowed: a-z first, then a-z, 0-9, _ (the tools count it by name)"
    elif request.name in names:
        yield f"{where}.name", f"{request.name!r} is another request's name; allowed: a name of its own"
    names.add(request.name)
    if not (math.isfinite(request.weight) and request.weight > 0):
        yield f"{where}.weight", f"{request.weight:g} is out of range; allowed: more than 0 (its share of the mix)"
    elif scenario.mix == "turns" and request.weight != int(request.weight):
        yield f"{where}.weight", f"{request.weight:g} is not allowed; allowed: a whole number of turns (mix: turns)"
    if request.method not in METHODS:
        yield f"{where}.method", f"{request.method!r} is not allowed; allowed: {', '.join(METHODS)}"
    if not request.path.startswith("/") or any(c.isspace() for c in request.path):
        yield f"{where}.path", f"{request.path!r} is not allowed; allowed: an absolute path (/...) with no spaces"
    for header, value in request.headers.items():
        if not HEADER_NAME.fullmatch(header):
            yield f"{where}.headers.{header}", "is not a header name; allowed: letters, digits and -"
        elif "$" in value or "\r" in value or "\n" in value:
            yield f"{where}.headers.{header}", f"{value!r} is not allowed; allowed: one line, no variables"
    if request.body is not None and (request.body.json is None) == (request.body.form is None):
        yield f"{where}.body", "needs exactly one of json, form"
    if request.body is not None and request.method in ("GET", "HEAD"):
        yield f"{where}.body", f"is not allowed on {request.method}; allowed: none"
    for part, template in _templates(request):
        try:
            used = placeholders(template)
        except ValueError as error:
            yield f"{where}.{part}", f"{template!r} {error}"
            continue
        for name in used:
            if name not in scenario.variables:
                defined = ", ".join(scenario.variables) or "none"
                yield f"{where}.{part}", f"uses ${{{name}}}, which is not defined; the variables are {defined}"
    if not 100 <= request.expect.status <= 599:
        yield f"{where}.expect.status", f"{request.expect.status} is out of range; allowed: an HTTP status, 100..599"
    if request.expect.body_pattern is not None:
        try:
            re.compile(request.expect.body_pattern)
        except re.error as error:
            yield f"{where}.expect.body_pattern", f"is not a regular expression: {error}"
    yield from _expect_problems(f"{where}.expect", request.expect)
    for kind, count in (request.statements or {}).items():
        if kind not in STATEMENT_KINDS:
            yield f"{where}.statements.{kind}", f"unknown kind; allowed: {', '.join(STATEMENT_KINDS)}"
        elif isinstance(count, StatementRange):
            if not all(math.isfinite(bound) and bound >= 0 for bound in (count.min, count.max)):
                yield f"{where}.statements.{kind}", (f"{count.min:g} to {count.max:g} is out of range; allowed: "
                                                     "min and max 0 or more per request")
            elif count.max < count.min:
                yield f"{where}.statements.{kind}.max", f"{count.max:g} is below min ({count.min:g}); allowed: min or more"
        elif not (math.isfinite(count) and count >= 0):
            yield f"{where}.statements.{kind}", f"{count:g} is out of range; allowed: 0 or more per request"
    if request.rows is not None and request.statements is None:
        yield f"{where}.rows", "needs statements beside it: the verify counts rows with the statements they come from"
    for kind, count in (request.rows or {}).items():
        if kind not in STATEMENT_KINDS:
            yield f"{where}.rows.{kind}", f"unknown kind; allowed: {', '.join(STATEMENT_KINDS)}"
        elif not (math.isfinite(count) and count >= 0):
            yield f"{where}.rows.{kind}", f"{count:g} is out of range; allowed: 0 or more per request"


# An HTTP header's name (RFC 9110's token).
_HEADER_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")


def header_alternatives(required: str) -> list[str]:
    """The names an expected header may be given by: "Content-Length or Transfer-Encoding" -> both."""
    return required.split(" or ")


def _expect_problems(where: str, expect: Expect) -> Iterator[tuple[str, str]]:
    """The shape checks' own: one shape of JSON body, fields named, a length and a table that can be."""
    if expect.json_object is not None and expect.json_array is not None:
        yield where, "has both json_object and json_array; allowed: one of them (a body is one or the other)"
    if expect.json_object is not None and not expect.json_object.fields:
        yield f"{where}.json_object.fields", "is empty; allowed: the names of the fields the object holds"
    if expect.json_array is not None and expect.json_array.length < 0:
        yield f"{where}.json_array.length", f"{expect.json_array.length} is out of range; allowed: 0 or more items"
    shapes = [("json_object", expect.json_object), ("json_array", expect.json_array)]
    for name, shape in shapes:
        for index, field_name in enumerate(shape.fields if shape is not None else ()):
            if not field_name:
                yield f"{where}.{name}.fields[{index}]", "is empty; allowed: a field's name"
    for index, required in enumerate(expect.headers):
        if not all(_HEADER_NAME.fullmatch(name) for name in header_alternatives(required)):
            yield (f"{where}.headers[{index}]", f"{required!r} is not a header's name; allowed: a name (Server), or "
                                                "names joined by ' or ' where either does (Content-Length or Transfer-Encoding)")
    if expect.html_table is not None:
        if not expect.html_table:
            yield f"{where}.html_table", "is empty; allowed: the table's rows, each a list of its cells' text"
        for index, row in enumerate(expect.html_table):
            if not row:
                yield f"{where}.html_table[{index}]", "is empty; allowed: the row's cells' text"


def _variable_problems(where: str, name: str, variable: Variable, directory: Path) -> Iterator[tuple[str, str]]:
    if not NAME.fullmatch(name):
        yield where, "is not allowed as a name; allowed: a-z first, then a-z, 0-9, _"
    kinds = [f.name for f in dataclasses.fields(variable) if getattr(variable, f.name) is not None]
    if len(kinds) != 1:
        yield where, f"needs exactly one kind, has {len(kinds)}; allowed: {', '.join(f.name for f in dataclasses.fields(Variable))}"
        return
    draw = getattr(variable, kinds[0])
    where = f"{where}.{kinds[0]}"
    for step in ("step", "thread_step", "digits"):
        if getattr(draw, step, 0) < 0:
            yield f"{where}.{step}", f"{getattr(draw, step)} is out of range; allowed: 0 or more"
    if isinstance(draw, SequenceDraw) and draw.modulo is not None and draw.modulo < 1:
        yield f"{where}.modulo", f"{draw.modulo} is out of range; allowed: 1 or more"
    if isinstance(draw, UniformDraw) and draw.max < draw.min:
        yield f"{where}.max", f"{draw.max} is below min ({draw.min}); allowed: min or more"
    if isinstance(draw, PickDraw) and not draw.values:
        yield f"{where}.values", "is empty; allowed: one value or more"
    if isinstance(draw, CsvDraw):
        try:
            csv_values(directory, draw)
        except ValueError as error:
            yield f"{where}.file", str(error)
    if isinstance(draw, KeyDraw):
        if not 2 <= draw.digits <= 15:
            yield f"{where}.digits", f"{draw.digits} is out of range; allowed: 2..15 (the first is the phase)"
        elif draw.format is not None and draw.format.count("#") != draw.digits:
            yield f"{where}.format", f"{draw.format!r} has {draw.format.count('#')} '#', not digits ({draw.digits})"
        elif draw.format is not None and not KEY_FORMAT.fullmatch(draw.format):
            yield f"{where}.format", f"{draw.format!r} is not allowed; allowed: '#' and A-Z a-z 0-9 - . _ ~ (sent as they are)"


def csv_values(directory: Path, draw: CsvDraw) -> tuple[str, ...]:
    """The column's values, in the file's order; ValueError (one line) when they cannot be read."""
    path = directory / draw.file
    if Path(draw.file).is_absolute() or ".." in Path(draw.file).parts:
        raise ValueError(f"{draw.file!r} is not beside the scenario; allowed: a file name in {directory}")
    try:
        with path.open(encoding="utf-8", newline="") as stream:
            rows = list(csv.DictReader(stream))
            columns = list(rows[0]) if rows else []
    except OSError as error:
        raise ValueError(f"{draw.file!r} cannot be read ({error.strerror}); allowed: a CSV file beside the scenario") from None
    except (csv.Error, UnicodeDecodeError) as error:
        raise ValueError(f"{draw.file!r} is not a UTF-8 CSV file: {error}") from None
    if not rows:
        raise ValueError(f"{draw.file!r} is empty; allowed: a header row and one row or more")
    if draw.column not in columns:
        raise ValueError(f"{draw.file!r} has no column {draw.column!r}; its columns are {', '.join(columns)}")
    values = tuple(row[draw.column] or "" for row in rows)
    return values


# ---------------------------------------------------------------------------------------------
# The compiler: one sequence, replayed by vegeta's targets and by wrk2's generic Lua player


Encoding = Literal["path", "form", "json"]


@dataclass(frozen=True)
class Slot:
    """A variable's value where a template puts it, encoded for that place."""

    variable: str
    encoding: Encoding


Template = tuple["str | Slot", ...]


@dataclass(frozen=True)
class CompiledRequest:
    name: str
    method: str
    path: Template
    headers: tuple[tuple[str, str], ...]
    body: Template | None
    variables: tuple[str, ...]  # those it uses, drawn once per request


# A scenario as both tools play it: perflab/scenario_play.py's document (format FORMAT there).
Compiled = dict[str, Any]


def _split(template: str, encoding: Encoding, literal: Callable[[str], str] | None = None) -> list[str | Slot]:
    """A template as literal text (escaped by `literal` when given) and slots; _settled joins the text."""
    parts: list[str | Slot] = []
    position = 0
    for match in PLACEHOLDER.finditer(template):
        text = template[position:match.start()] + ("$" if match.group(1) == "$" else "")
        if text:
            parts.append(literal(text) if literal else text)
        if match.group(2) is not None:
            parts.append(Slot(match.group(2), encoding))
        position = match.end()
    if template[position:]:
        parts.append(literal(template[position:]) if literal else template[position:])
    return parts


def _settled(parts: Sequence[str | Slot], parameters: Mapping[str, str]) -> tuple[str | Slot, ...]:
    """PARTS with each parameter's slot replaced by its value, encoded for its place, and the
    neighbouring literal text joined: a request with only parameters is then fixed."""
    merged: list[str | Slot] = []
    for part in parts:
        if isinstance(part, Slot) and part.variable in parameters:
            part = encode(parameters[part.variable], part.encoding)
        if merged and isinstance(part, str) and isinstance(merged[-1], str):
            merged[-1] += part
        else:
            merged.append(part)
    return tuple(merged)


def _compile_request(request: Request, parameters: Mapping[str, str]) -> CompiledRequest:
    headers = dict(request.headers)
    body: list[str | Slot] | None = None
    if request.body is not None and request.body.json is not None:
        body = _split(request.body.json, "json")
        default_type = "application/json"
    elif request.body is not None and request.body.form is not None:
        body = []
        for index, (name, value) in enumerate(request.body.form.items()):
            body += [("&" if index else "") + quote_plus(name) + "="]
            body += _split(value, "form", quote_plus)
        default_type = "application/x-www-form-urlencoded"
    if body is not None and not any(name.lower() == "content-type" for name in headers):
        headers["Content-Type"] = default_type
    path = _settled(_split(request.path, "path"), parameters)
    settled_body = None if body is None else _settled(body, parameters)
    used = [part.variable for part in [*path, *(settled_body or ())] if isinstance(part, Slot)]
    return CompiledRequest(request.name, request.method, path, tuple(headers.items()), settled_body,
                           tuple(dict.fromkeys(used)))


def compile_scenario(scenario: Scenario, directory: Path, parameters: Mapping[str, str] | None = None,
                     weights: Mapping[str, float] | None = None) -> Compiled:
    """The scenario as both tools play it; `parameters` set parameter variables and `weights` the
    weights of requests by name (a mix changed without editing the file: make's WEIGHTS=); ScenarioError for a name the scenario does not have or a weight not above 0.
    `directory` holds its CSV files."""
    parameters = dict(parameters or {})
    weights = dict(weights or {})
    problems = []
    known = [name for name, v in scenario.variables.items() if v.parameter is not None]
    problems += [f"{scenario.name}: {name} is not a parameter of the scenario; its parameters are "
                 f"{', '.join(known) or 'none'}" for name in parameters if name not in known]
    request_names = [request.name for request in scenario.requests]
    problems += [f"{scenario.name}: {name} is not a request of the scenario; its requests are {', '.join(request_names)}"
                 for name in weights if name not in request_names]
    problems += [f"{scenario.name}: the weight of {name} must be a number above 0, got {weight:g}"
                 for name, weight in weights.items() if name in request_names and not (math.isfinite(weight) and weight > 0)]
    if scenario.mix == "turns":
        problems += [f"{scenario.name}: the weight of {name} must be a whole number of turns (mix: turns), got {weight:g}"
                     for name, weight in weights.items() if math.isfinite(weight) and weight != int(weight)]
    if problems:
        raise ScenarioError(problems)
    settled = {name: parameters.get(name, v.parameter.default)
               for name, v in scenario.variables.items() if v.parameter is not None}
    raw_values: dict[str, tuple[str, ...]] = {}
    for name, variable in scenario.variables.items():
        if variable.pick is not None:
            raw_values[name] = variable.pick.values
        elif variable.csv is not None:
            try:
                raw_values[name] = csv_values(directory, variable.csv)
            except ValueError as error:
                raise ScenarioError([f"{scenario.name}: variables.{name}.csv.file: {error}"]) from None
    index_of = {name: index for index, name in enumerate(scenario.variables)}
    tables: dict[tuple[str, str], int] = {}
    values: list[list[str]] = []

    def template(parts: Template) -> list[Any]:
        played: list[Any] = []
        for part in parts:
            if isinstance(part, str):
                played.append(part)
            elif part.variable in raw_values:
                key = (part.variable, part.encoding)
                if key not in tables:
                    tables[key] = len(values)
                    values.append([encode(value, part.encoding) for value in raw_values[part.variable]])
                played.append({"var": index_of[part.variable], "values": tables[key]})
            else:
                played.append({"var": index_of[part.variable]})
        return played

    requests: list[dict[str, Any]] = []
    for request in scenario.requests:
        compiled = _compile_request(request, settled)
        requests.append({"name": compiled.name, "method": compiled.method, "headers": [list(h) for h in compiled.headers],
                         "vars": [index_of[name] for name in compiled.variables], "path": template(compiled.path),
                         "body": None if compiled.body is None else template(compiled.body)})
    chosen = [weights.get(r.name, r.weight) for r in scenario.requests]
    bounds, total = [], 0.0
    for weight in chosen:  # left to right, as the players add them: the same doubles
        total = total + weight
        bounds.append(total)
    turns = [index for index, weight in enumerate(chosen) for _ in range(int(weight))] if scenario.mix == "turns" else []
    return {"format": scenario_play.FORMAT, "name": scenario.name, "mix": scenario.mix, "bounds": bounds, "turns": turns,
            "values": values, "variables": [_played_variable(name, v, raw_values) for name, v in scenario.variables.items()],
            "requests": requests}


def as_run(scenario: Scenario, file: Path, parameters: Mapping[str, str] | None = None,
           weights: Mapping[str, float] | None = None) -> dict[str, Any]:
    """The scenario as a run plays it (compile_scenario has accepted PARAMETERS and WEIGHTS): the
    file's fields, each request with its weight as run, `parameters` with every parameter's value as
    run, `endpoints` (Scenario.endpoints), `request_types` (Scenario.request_types) and `file`, the
    file it was read from. What the bench records of the scenario (bench-inputs.json's
    loadgen.scenario)."""
    parameters, weights = dict(parameters or {}), dict(weights or {})
    data = to_jsonable(scenario)
    assert isinstance(data, dict)
    requests: list[JsonValue] = []
    for request in scenario.requests:
        recorded = to_jsonable(request)
        assert isinstance(recorded, dict)
        if any(isinstance(count, StatementRange) for count in (request.statements or {}).values()):
            # What a run's readers take as `statements` is one count per kind (perflab.rundir's ScenarioRequest:
            # the statements per request the observer holds the run to); a range is kept as the file gives it,
            # under a name of its own, and the observer falls back to the contract's count for the route.
            recorded["statement_ranges"] = recorded.pop("statements")
        requests.append(_without_nulls({**recorded, "weight": weights.get(request.name, request.weight)}))
    data["requests"] = requests
    data["parameters"] = {name: parameters.get(name, v.parameter.default)
                          for name, v in scenario.variables.items() if v.parameter is not None}
    data["endpoints"] = list(scenario.endpoints())
    request_types: list[JsonValue] = [{**request_type} for request_type in scenario.request_types()]
    data["request_types"] = request_types
    data["file"] = str(file)
    return data


def _without_nulls(value: JsonValue) -> JsonValue:
    """VALUE with the keys whose value is None left out, at every depth (what the file left out)."""
    if isinstance(value, dict):
        return {key: _without_nulls(item) for key, item in value.items() if item is not None}
    if isinstance(value, list):
        return [_without_nulls(item) for item in value]
    return value


def _played_variable(name: str, variable: Variable, raw_values: Mapping[str, tuple[str, ...]]) -> dict[str, Any]:
    if variable.uniform is not None:
        uniform = variable.uniform
        return {"kind": "integer", "start": uniform.min, "step": uniform.step, "thread_step": uniform.thread_step,
                "modulo": uniform.max - uniform.min + 1, "digits": uniform.digits}
    if variable.sequence is not None:
        sequence = variable.sequence
        return {"kind": "integer", "start": sequence.start, "step": sequence.step,
                "thread_step": sequence.thread_step, "modulo": sequence.modulo or 0, "digits": sequence.digits}
    pick = variable.pick or variable.csv
    if pick is not None:
        return {"kind": "index", "step": pick.step, "thread_step": pick.thread_step, "count": len(raw_values[name])}
    if variable.key is not None:
        return {"kind": "key", "name": name, "digits": variable.key.digits, "format": variable.key.format}
    return {"kind": "parameter"}  # set in the templates when compiling: never drawn


def encode(value: str, encoding: Encoding) -> str:
    if encoding == "path":
        return quote(value, safe=PATH_VALUE_SAFE)
    if encoding == "form":
        return quote_plus(value)
    return json.dumps(value, ensure_ascii=False)[1:-1]


# Both tools' sequence, played from the compiled document (stdlib only: it runs on loadgen hosts too).
Placement = scenario_play.Placement
Sent = scenario_play.Sent
sent = scenario_play.sent
vegeta_line = scenario_play.vegeta_line


def _lua(value: Any) -> str:
    """VALUE (the compiled document's JSON values) as a Lua literal: strings as their UTF-8 bytes
    with decimal escapes (Lua 5.1 and LuaJIT read them), numbers by repr (the shortest text that
    reads back as the same double)."""
    if value is None:
        return "nil"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return '"' + "".join(chr(b) if 32 <= b < 127 and chr(b) not in '"\\' else f"\\{b:03d}"
                             for b in value.encode("utf-8")) + '"'
    if isinstance(value, list):
        return "{ " + ", ".join(_lua(item) for item in value) + " }"
    return "{ " + ", ".join(f"[{_lua(key)}] = {_lua(item)}" for key, item in value.items()) + " }"


def compile_lua(compiled: Compiled) -> str:
    """The data file perflab/wrk2_scenario.lua plays (PERFLAB_SCENARIO_DATA): the compiled
    document as a Lua chunk that returns it."""
    return f"-- Compiled by perflab/scenario.py from scenario {_lua(compiled['name'])}: do not edit.\nreturn {_lua(compiled)}\n"


# ---------------------------------------------------------------------------------------------
# The command


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add `perflab scenario` to the CLI."""
    command = commands.add_parser(
        "scenario", help="scenario files: check one, show the requests each tool would send",
        description="Scenario files (perflab/scenario.py, perflab/schemas/scenario.schema.json).",
        epilog="exit codes: 0 done; 2 refused (a wrong scenario file or option), one line per problem")
    sub = command.add_subparsers(required=True, metavar="ACTION")
    check = sub.add_parser("check", help="refuse FILE with one line per wrong field, or say it is OK")
    check.add_argument("file", type=Path, metavar="FILE")
    check.set_defaults(command=_check)
    show = sub.add_parser("show", help="the first requests each tool would send")
    show.add_argument("file", type=Path, metavar="FILE")
    show.add_argument("--first", type=int, default=10, metavar="N", help="how many requests (default 10)")
    show.add_argument("--tool", choices=("wrk2", "vegeta"), default="vegeta",
                      help="vegeta: its JSON targets; wrk2: each thread's requests, round-robin (default vegeta)")
    show.add_argument("--threads", type=int, metavar="T", help="threads per loadgen host (default: the scenario's)")
    show.add_argument("--hosts", type=int, default=1, metavar="H", help="loadgen hosts sharing the run (default 1)")
    show.add_argument("--host-index", type=int, default=0, metavar="K", help="this loadgen host, 0..H-1 (default 0)")
    show.add_argument("--key-phase", type=int, default=0, metavar="P", help=f"KEY_PHASE, 0..{KEY_PHASE_MAX} (default 0)")
    _add_mix_options(show)
    show.add_argument("--base-url", default="http://app:8080", metavar="URL", help="vegeta's targets' base (default http://app:8080)")
    show.set_defaults(command=_show)
    naming = sub.add_parser("label", help="the scenario's name in a run's or a sweep's name (a file's own name)")
    naming.add_argument("scenario", metavar="SCENARIO", help="a built-in's name or a scenario file's path")
    naming.set_defaults(command=_label)
    compiling = sub.add_parser("compile", help="the compiled scenario: for vegeta's player and wrk2's")
    compiling.add_argument("file", type=Path, metavar="FILE")
    _add_mix_options(compiling)
    compiling.add_argument("--vegeta", type=Path, metavar="OUT.json",
                           help="the document perflab/scenario_play.py plays into vegeta targets")
    compiling.add_argument("--wrk2", type=Path, metavar="OUT.lua",
                           help="the data file perflab/wrk2_scenario.lua plays (its PERFLAB_SCENARIO_DATA)")
    compiling.add_argument("--as-run", type=Path, metavar="OUT.json",
                           help="the scenario as run (JSON): the file's fields with the weights and parameters "
                                "as compiled, its endpoints and its file (what the bench records); - prints it")
    compiling.set_defaults(command=_compile)


def _add_mix_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--set", action="append", default=[], metavar="NAME=VALUE", help="a parameter's value (repeatable)")
    parser.add_argument("--weight", action="append", default=[], metavar="REQUEST=W",
                        help="a request's weight instead of the file's (repeatable)")


def _refuse(problems: Sequence[str]) -> int:
    for line in problems:
        print(f"perflab scenario: {line}", file=sys.stderr)
    return EXIT_REFUSED


def _check(args: argparse.Namespace) -> int:
    try:
        scenario = load(args.file)
    except ScenarioError as error:
        return _refuse(error.problems)
    print(f"{args.file}: OK: {len(scenario.requests)} request(s) ({', '.join(r.name for r in scenario.requests)}), "
          f"{len(scenario.variables)} variable(s), {scenario.rate} req/s for {scenario.duration}")
    return EXIT_OK


def _mix_options(args: argparse.Namespace) -> tuple[dict[str, str], dict[str, float], list[str]]:
    """--set and --weight as parameters and weights, and what is wrong with them."""
    parameters: dict[str, str] = {}
    weights: dict[str, float] = {}
    wrong = []
    for text in args.set:
        name, equals, value = text.partition("=")
        parameters[name] = value
        if not equals:
            wrong.append(f"--set takes NAME=VALUE, got {text!r}")
    for text in args.weight:
        name, equals, value = text.partition("=")
        try:
            weights[name] = float(value)
        except ValueError:
            equals = ""
        if not equals:
            wrong.append(f"--weight takes REQUEST=NUMBER, got {text!r}")
    return parameters, weights, wrong


def _label(args: argparse.Namespace) -> int:
    print(label(args.scenario))
    return EXIT_OK


def _compile(args: argparse.Namespace) -> int:
    parameters, weights, wrong = _mix_options(args)
    if args.vegeta is None and args.wrk2 is None and args.as_run is None:
        wrong.append("say what to write: --vegeta OUT.json, --wrk2 OUT.lua, --as-run OUT.json or several")
    if wrong:
        return _refuse(wrong)
    try:
        scenario = load(args.file)
        compiled = compile_scenario(scenario, args.file.parent, parameters, weights)
    except ScenarioError as error:
        return _refuse(error.problems)
    try:
        if args.as_run is not None:
            document = json.dumps(as_run(scenario, args.file, parameters, weights), indent=1, ensure_ascii=False) + "\n"
            if str(args.as_run) == "-":
                sys.stdout.write(document)
            else:
                args.as_run.write_text(document, encoding="utf-8")
        if args.vegeta is not None:
            args.vegeta.write_text(json.dumps(compiled, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        if args.wrk2 is not None:
            args.wrk2.write_text(compile_lua(compiled), encoding="utf-8")
    except OSError as error:
        return _refuse([f"cannot write {error.filename}: {error.strerror}"])
    return EXIT_OK


def _show(args: argparse.Namespace) -> int:
    parameters, weights, wrong = _mix_options(args)
    if args.first < 1:
        wrong.append(f"--first must be 1 or more, got {args.first}")
    if wrong:
        return _refuse(wrong)
    try:
        scenario = load(args.file)
        compiled = compile_scenario(scenario, args.file.parent, parameters, weights)
        placement = Placement(args.threads or scenario.threads, args.host_index, args.hosts, args.key_phase)
        shown = list(itertools.islice(sent(compiled, placement), args.first))
    except ScenarioError as error:
        return _refuse(error.problems)
    except ValueError as error:
        return _refuse([str(error)])
    first_thread = placement.host_index * placement.threads
    for index, request in enumerate(shown):
        if args.tool == "vegeta":
            print(vegeta_line(request, args.base_url.rstrip("/")), end="")
            continue
        name, method, path, headers, body = request
        thread, n = first_thread + index % placement.threads, index // placement.threads
        print(f"thread {thread} request {n} ({name}): {method} {path}")
        for header, value in headers:
            print(f"  {header}: {value}")
        if body:
            print(f"  {body}")
    return EXIT_OK
