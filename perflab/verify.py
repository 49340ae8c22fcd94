"""perflab verify: before every measured run, the app answers the scenario's requests as the
scenario expects (and, on the lab's own routes, as the contract says).

TechEmpower's `verify`, in the lab. Three steps, two of them here:

  perflab verify plan SCENARIO --base-url URL [--set NAME=VALUE ...] [--weight REQUEST=W ...]
                      [--output PLAN.json]
      On the controller: the scenario file (a name under scenarios/, or a path to a .yml/.yaml
      file) loaded, checked and compiled with the run's parameters and weights exactly as `perflab
      scenario compile` takes them (perflab/scenario.py), then played as vegeta gets it
      (perflab/scenario_play.py, the path `perflab scenario show --tool vegeta` takes) by host 0
      of 1 with the scenario's threads and KEY_PHASE 9, whose fresh keys no run ever sends. One
      type per request of the scenario, named "METHOD /route" as Scenario.endpoints() spells its
      path ("GET /zipcodes/{zip}"; requests sharing a route are told apart by " (request-name)");
      a request whose weight is 0 (--weight NAME=0) is skipped, as the run sends none. Each type
      gets a few of its concrete requests from that sequence and what every answer must be:
        - the request's `expect`: its status, and when given its media type, a field the JSON body
          holds (`json_field`, a dotted path) and a pattern the body matches (`body_pattern`, a
          regular expression searched in the body), and the shape of the body: a JSON object holding
          named fields (`json_object`), a JSON array of so many such objects (`json_array`), the text of
          an HTML page's table rows (`html_table`), field names compared ignoring case and cells with
          their character references decoded, as TechEmpower's verify reads their answers;
        - when the contract (apps/contract/openapi.yaml, perflab/contract.py) documents the route
          and that status, its checks as well: a documented media type, the body against its
          schema, the required headers. A route the contract does not document (a user's app, say
          Spring PetClinic's GET /owners?lastName=...) is judged by the scenario's expect alone, and
          so is every route with --no-contract, which the bench passes for an app that is not one of
          the project's own (apps/<name>/): the contract binds the lab's apps, and TechEmpower's
          implementations answer as their verify asks (their WebFlux names a field `randomnumber`,
          which their verify, comparing names ignoring case, takes and the contract's schema does not);
        - the DB statements per request: the request's `statements` (kinds it leaves out are 0; a
          kind may be a range, {min, max}, where the work may be done either way);
          else the contract's count for the route and status (apps/contract/README.md,
          perflab/observe.py's CONTRACT_STATEMENTS); else none: the type's statements are not
          judged (its line says so), its answers still are.
        - the rows of those statements per request, by kind: the request's `rows` (a SELECT's rows
          read, the others' rows written), judged where the DB counts rows by statement (PostgreSQL's
          pg_stat_statements; the line says where it does not) within TechEmpower's margins
          (ROWS_SHORT, ROWS_SHORT_BULK, ROWS_OVER).
  roles/bench/files/verify_app.py < PLAN.json > RESULTS.json
      On the first db host (stdlib only): per type a warm-up, then bursts of requests each after an
      idle interval, the server's statement counters (Com_*, pg_stat_statements; there their rows too) read
      around both; every answer and the deltas.
  perflab verify check PLAN.json RESULTS.json --output verify.json
      On the controller: one line per type, ok or the failing check; exit 1 with the first failing
      check in one line on stderr when any fails.

The plan (verify-plan.json) and the verdict (verify.json) are perflab/rundir.py's files, VerifyPlan
and VerifyReport; the results are verify_app.py's own format, read here.

Statements per request, from the counters: burst delta - the reader's own statements - the lab's
own at rest (the idle interval's delta less the reader's own, as a rate, times the burst's
length), divided by the burst's requests. What that correction cannot remove is a burst of the
lab's own: a mysqld_exporter scrape (every 5 s; about 10 selects, from observe.py's 0.03 to 0.05 a
request at 50 req/s) that falls into only one of the two intervals. Over a burst of 40 requests
that is 0.25 per request at most, so the tolerance is half a statement per request: the figure must
round to the expected count, which makes one statement more (or fewer) per request, the smallest
real deviation, a failure. A type passes when one of its bursts is within the tolerance: noise does
not repeat itself, a deviation of the app does. The db host runs the second burst only when the
first was not clean (anything at rest, or not exactly the plan's statements; a type whose
statements are not judged has nothing to see past): most runs pay for one.
"""

from __future__ import annotations

import argparse
import base64
import dataclasses
import itertools
import json
import math
import re
import sys
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from typing import Any, Final
from urllib.parse import urlsplit

from perflab import contract, observe, rundir, scenario_play
from perflab import scenario as scenarios
from perflab.contract import Answer, ContractError, OpenApi
from perflab.model import dumps
from perflab.observations import STATEMENT_KINDS
from perflab.rundir import VerifyCheck, VerifyPlan, VerifyPlanExpect, VerifyPlanRequest, VerifyPlanType, VerifyReport

ROOT = Path(__file__).resolve().parent.parent
SCENARIOS_DIR = scenarios.BUILTIN_DIR
PLAN_FORMAT: Final = "perflab-verify-plan"
RESULTS_FORMAT = "perflab-verify-results"
# The plan's version (rundir.VerifyPlan says what changed), which verify_app.py writes its results in.
FORMAT_VERSION = VerifyPlan.version
CONTRACT_DOC = "apps/contract/README.md"

# The fresh keys of the verify's writes: KEY_PHASE 0 is the warm-up's and 1 the measured phase's
# (roles/loadgen/vars/main.yml); 9, the last, is never a run's.
VERIFY_KEY_PHASE = 9
# Requests per burst (see the module's docstring for why 40), bursts per type, requests in flight.
BURST = 40
ATTEMPTS = 2
# Enough for hello-latency's 100 ms answers to take 0.5 s a burst; each type's warm-up opens as
# many DB connections as a burst can use, so that no burst counts a connection being opened.
CONCURRENCY = 8
TIMEOUT_S = 10.0
# The db host keeps this much of each body: GET /books after a reset is about 5 KB.
MAX_BODY_BYTES = 65536
# Statements per request a burst may be off the expected count (see the docstring).
TOLERANCE = 0.5
# The rows per request of a kind's statements may be this share fewer than the scenario's count, or more:
# TechEmpower's verify's margins (their verifications.py, verify_queries_count): rows read or written 1% short
# ("the margin related to the database applies (1% by default)"), 5% short where the writes are bulk (the
# kind's statements a range here: one UPDATE for N rows, whose random ids may repeat), and "excessively
# high" past 5% over. A kind the scenario gives no rows for is 0, and may be off by TOLERANCE rows a request.
ROWS_SHORT = 0.01
ROWS_SHORT_BULK = 0.05
ROWS_OVER = 0.05
# Requests of the sequence the plan reads at most to find enough requests of every type.
SEQUENCE_CAP = 200_000
# How much of a body verify.json keeps per answer shown.
SHOWN_BODY_CHARS = 1024
KINDS = STATEMENT_KINDS
# The results' counters of the rows of each kind's statements, where the DB counts them (verify_app.py).
ROW_COUNTERS = {kind: f"{kind}_rows" for kind in KINDS}
# What a kind's statements do to their rows, in the verify's lines.
ROWS_VERB = {"select": "read", "insert": "inserted", "update": "updated", "delete": "deleted"}


class VerifyInputError(Exception):
    """A scenario, option, plan or results file verify cannot use: one line per problem."""

    def __init__(self, problems: str | Sequence[str]) -> None:
        self.problems = (problems,) if isinstance(problems, str) else tuple(problems)
        super().__init__("\n".join(self.problems))


# -- the plan ---------------------------------------------------------------------------------


def scenario_file(name_or_path: str) -> Path:
    """A scenario's file: a path to a .yml/.yaml file, or a name under scenarios/."""
    path = scenarios.path_of(name_or_path)
    if not path.is_file():
        known = ", ".join(scenarios.builtin_names())
        raise VerifyInputError(f"no scenario {name_or_path!r} ({path} is not a file); one of {known}, "
                               "or the path of a scenario file (.yml or .yaml)")
    return path


def _shown_path(path: Path) -> str:
    """The scenario file as the messages name it: relative to the checkout when it is in it."""
    try:
        return str(path.resolve().relative_to(ROOT))
    except ValueError:
        return str(path)


def type_names(scenario: scenarios.Scenario) -> list[str]:
    """Each request's type name, in the file's order: "METHOD /route" as Scenario.endpoints()
    spells its path, with " (request-name)" when another request shares it."""
    routes = [dataclasses.replace(scenario, requests=(request,)).endpoints()[0] for request in scenario.requests]
    return [route if routes.count(route) == 1 else f"{route} ({request.name})"
            for route, request in zip(routes, scenario.requests)]


def _request(target: Mapping[str, Any], base_url: str) -> VerifyPlanRequest:
    """A vegeta target line as the plan's request: method, path, headers, body text."""
    url = str(target["url"])
    if not url.startswith(base_url):
        raise VerifyInputError(f"the scenario made a request outside {base_url}: {url}")
    return VerifyPlanRequest(
        method=target["method"], path=url[len(base_url):] or "/",
        headers={name: values[0] for name, values in target.get("header", {}).items()},
        body=base64.b64decode(target["body"]).decode("utf-8") if "body" in target else None,
    )


def _sequence(compiled: scenarios.Compiled, threads: int, base_url: str) -> Iterator[tuple[str, VerifyPlanRequest]]:
    """The compiled scenario's requests as vegeta gets them (`perflab scenario show --tool vegeta`)
    from host 0 of 1 with the verify's KEY_PHASE: (the request's name, the plan's request)."""
    placement = scenarios.Placement(threads, 0, 1, VERIFY_KEY_PHASE)
    for sent in itertools.islice(scenarios.sent(compiled, placement), SEQUENCE_CAP):
        yield sent[0], _request(json.loads(scenarios.vegeta_line(sent, base_url)), base_url)


def compile_for_verify(scenario: scenarios.Scenario, directory: Path, parameters: Mapping[str, str],
                       weights: Mapping[str, float]) -> tuple[scenarios.Compiled, list[str]]:
    """The scenario compiled as the run compiles it with PARAMETERS and WEIGHTS (the compiler's own
    refusals), and the requests a weight of 0 leaves out: the run never sends them (a request of
    weight 0 is never drawn nor given a turn, so the others' sequence is the one without it)."""
    names = {request.name for request in scenario.requests}
    dropped = [name for name, weight in weights.items() if weight == 0 and name in names]
    if not dropped:
        return scenarios.compile_scenario(scenario, directory, parameters, weights), []
    left = {name: weight for name, weight in weights.items() if name not in dropped}
    # Every other weight and parameter as the compiler judges them, against every request.
    scenarios.compile_scenario(scenario, directory, parameters, left)
    kept = tuple(request for request in scenario.requests if request.name not in dropped)
    if not kept:
        raise VerifyInputError(f"{scenario.name}: every request has weight 0: the run would send nothing to verify")
    return scenarios.compile_scenario(dataclasses.replace(scenario, requests=kept), directory, parameters, left), dropped


def make_plan(scenario_path: Path, base_url: str, parameters: Mapping[str, str] | None = None,
              weights: Mapping[str, float] | None = None, burst: int = BURST, attempts: int = ATTEMPTS,
              concurrency: int = CONCURRENCY, api: OpenApi | None = None, contract: bool = True) -> VerifyPlan:
    """The verify plan of the scenario in SCENARIO_PATH, with the run's PARAMETERS (--set) and
    WEIGHTS (--weight), against the app at BASE_URL (see the module's docstring); not CONTRACT: the
    scenario's expect and statements alone, for an app the lab's contract does not bind."""
    if burst < 1 or attempts < 1 or concurrency < 1:
        raise VerifyInputError(f"burst, attempts and concurrency are >= 1, got {burst}, {attempts}, {concurrency}")
    parameters, weights = dict(parameters or {}), dict(weights or {})
    try:
        scenario = scenarios.load(scenario_path)
        compiled, dropped = compile_for_verify(scenario, scenario_path.parent, parameters, weights)
    except scenarios.ScenarioError as error:
        raise VerifyInputError(error.problems) from None
    split = urlsplit(base_url)
    if split.scheme not in ("http", "https") or not split.hostname or split.path not in ("", "/"):
        raise VerifyInputError(f"--base-url must be http(s)://host[:port], got {base_url!r}")
    base_url = base_url.rstrip("/")
    api = api or OpenApi()
    names = dict(zip((request.name for request in scenario.requests), type_names(scenario)))
    wanted = [request for request in scenario.requests if request.name not in dropped]
    warmup = 2 * concurrency  # enough to have every connection a burst can use open
    needed = warmup + burst * attempts
    found: dict[str, list[VerifyPlanRequest]] = {request.name: [] for request in wanted}
    short = len(found)  # types with fewer requests than needed
    try:
        for name, planned in _sequence(compiled, scenario.threads, base_url):
            requests = found[name]
            if len(requests) < needed:
                requests.append(planned)
                if len(requests) == needed:
                    short -= 1
                    if not short:
                        break
    except scenario_play.PlayError as error:
        raise VerifyInputError(f"scenario {scenario.name}: {error}") from None
    types = []
    file = _shown_path(scenario_path)
    for request in wanted:
        requests = found[request.name]
        if len(requests) < needed:
            raise VerifyInputError(f"scenario {scenario.name}: {names[request.name]} is too rare in its sequence: "
                                   f"{len(requests)} in {SEQUENCE_CAP} requests, the verify needs {needed}")
        types.append(_type_plan(api if contract else None, request, names[request.name], file, requests[:warmup],
                                requests[warmup:], burst))
    return VerifyPlan(
        format=PLAN_FORMAT, scenario=scenario.name, scenario_file=file,
        parameters={name: parameters.get(name, variable.parameter.default)
                    for name, variable in scenario.variables.items() if variable.parameter is not None},
        weights={request.name: weights.get(request.name, request.weight) for request in scenario.requests},
        base_url=base_url, threads=scenario.threads, key_phase=VERIFY_KEY_PHASE, burst=burst,
        attempts=attempts, concurrency=concurrency, timeout_s=TIMEOUT_S, max_body_bytes=MAX_BODY_BYTES,
        tolerance=TOLERANCE,
        skipped=tuple(names[name] for name in dropped),
        types=tuple(types),
    )


def _type_plan(api: OpenApi | None, request: scenarios.Request, name: str, file: str, warmup: list[VerifyPlanRequest],
               measured: list[VerifyPlanRequest], burst: int) -> VerifyPlanType:
    """A request type's plan; API None: the contract left out (an app it does not bind)."""
    method, route = request.method, name.split(" ")[1]
    status = request.expect.status
    documented = None if api is None else api.route_of(method, route)
    answer: Answer | None = None
    if api is not None and documented is not None:
        try:
            answer = api.answer(method, documented, status)
        except ContractError:
            answer = None  # a status the contract does not document: the scenario's expect alone
    statements: dict[str, float] | None = None
    statements_max: dict[str, float] = {}
    said_by = doc = not_counted = None
    if request.statements is not None:
        given = {kind: request.statements.get(kind, 0) for kind in KINDS}
        statements = {kind: float(c.min if isinstance(c, scenarios.StatementRange) else c) for kind, c in given.items()}
        statements_max = {kind: float(c.max) for kind, c in given.items() if isinstance(c, scenarios.StatementRange)}
        said_by, doc = "the scenario", file
    elif documented is not None:
        counted, why = observe.expected_statements({(method, documented, str(status)): 1.0})
        if counted is not None:
            statements = {kind: float(getattr(counted, kind)) for kind in KINDS}
            said_by, doc = "the contract", CONTRACT_DOC
        else:
            not_counted = f"the scenario gives none and {why}"
    else:
        not_counted = "the scenario gives none"
    return VerifyPlanType(
        name=name, request=request.name, method=method, route=route,
        expect=VerifyPlanExpect(
            status=status,
            contract=None if answer is None else f"{method} {documented}",
            content={} if answer is None else answer.content,
            headers={} if answer is None else answer.headers,
            media_type=request.expect.media_type, required_headers=request.expect.headers,
            json_field=request.expect.json_field,
            body_pattern=request.expect.body_pattern, json_object=request.expect.json_object,
            json_array=request.expect.json_array, html_table=request.expect.html_table,
            statements=statements, statements_max=statements_max, statements_by=said_by, statements_doc=doc,
            statements_not_counted=not_counted,
            rows=None if request.rows is None else {kind: float(request.rows.get(kind, 0)) for kind in KINDS},
        ),
        warmup=tuple(warmup),
        bursts=tuple(tuple(measured[start:start + burst]) for start in range(0, len(measured), burst)),
    )


# -- the check --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Expected:
    """What the plan expects of a type's answers and statements."""

    status: int
    contract: Answer | None  # the contract's documented answer, when it documents the route and status
    media_type: str | None
    required_headers: tuple[str, ...]  # the scenario's expect.headers
    json_field: str | None
    body_pattern: re.Pattern[str] | None
    json_object: scenarios.JsonObject | None
    json_array: scenarios.JsonArray | None
    html_table: tuple[tuple[str, ...], ...] | None
    statements: dict[str, float] | None  # None: not judged; a range's lower bound
    statements_max: dict[str, float]  # the upper bound of the kinds given as a range
    statements_by: str  # "the scenario" or "the contract"
    statements_doc: str  # the file that says so
    not_counted: str  # why the statements are not judged
    rows: dict[str, float] | None = None  # the rows per request of each kind's statements; None: not judged


@dataclass
class TypeVerdict:
    name: str
    problem: str | None = None  # the failing check, one line; None when it passed
    answers: dict[str, int] = field(default_factory=dict)  # status (or "no answer") -> count
    per_request: list[dict[str, float]] = field(default_factory=list)  # each burst's statements per request
    expected: dict[str, float] = field(default_factory=dict)  # empty: the statements are not judged
    expected_max: dict[str, float] = field(default_factory=dict)  # the kinds given as a range: their upper bound
    shown: list[dict[str, Any]] = field(default_factory=list)  # a few answers, bodies cut short
    by_contract: bool = False  # the contract's checks applied to the answers
    not_counted: str = ""  # why the statements are not judged
    expected_rows: dict[str, float] = field(default_factory=dict)  # empty: the rows are not judged
    rows_per_request: list[dict[str, float]] = field(default_factory=list)  # each burst's, where the DB counts them
    rows_short: dict[str, float] = field(default_factory=dict)  # each kind's margin below its rows

    @property
    def line(self) -> str:
        if self.problem:
            return self.problem
        answers = ", ".join(f"{n} x {status}" for status, n in sorted(self.answers.items()))
        said = "as the scenario and the contract say" if self.by_contract else "as the scenario says"
        if not self.expected:
            return f"verify: {self.name} ok: {answers} {said}; statements not counted: {self.not_counted}"
        statements = ", ".join(f"{self.per_request_best[k]:.2f} {k}" for k in KINDS)
        return f"verify: {self.name} ok: {answers} {said}; statements per request {statements}{self.rows_text}"

    @property
    def rows_text(self) -> str:
        """The line's part on rows: those of the kinds the scenario gives rows for, or why they are not counted."""
        if not self.expected_rows:
            return ""
        if not self.rows_per_request:
            return "; rows not counted: the DB counts none by statement (PostgreSQL's pg_stat_statements does)"
        best = self.rows_best
        given = [kind for kind in KINDS if self.expected_rows[kind]] or list(KINDS)
        return "; rows per request " + ", ".join(f"{best[kind]:.2f} {ROWS_VERB[kind]}" for kind in given)

    @property
    def rows_best(self) -> dict[str, float]:
        """The burst whose rows are nearest the scenario's (any is within the margins when one is)."""
        return min(self.rows_per_request, key=lambda figures: max(self.rows_off_by(figures, k) for k in KINDS))

    def rows_bounds(self, kind: str) -> tuple[float, float]:
        """The rows per request of a kind that pass: TechEmpower's margins around the scenario's count."""
        count = self.expected_rows[kind]
        if not count:
            return 0.0, TOLERANCE
        return count * (1 - self.rows_short.get(kind, ROWS_SHORT)), count * (1 + ROWS_OVER)

    def rows_off_by(self, figures: Mapping[str, float], kind: str) -> float:
        """How far outside its bounds a burst's rows of a kind per request are, relative to the upper one."""
        low, high = self.rows_bounds(kind)
        return max(low - figures[kind], figures[kind] - high, 0.0) / high

    @property
    def per_request_best(self) -> dict[str, float]:
        if not self.per_request:
            return {}
        return min(self.per_request, key=self._deviation) if self.expected else self.per_request[0]

    def _deviation(self, figures: Mapping[str, float]) -> float:
        return max(self.off_by(figures, k) for k in KINDS)

    def off_by(self, figures: Mapping[str, float], kind: str) -> float:
        """How far a burst's statements of a kind per request are from the count expected, or outside the range."""
        low, high = self.expected[kind], self.expected_max.get(kind, self.expected[kind])
        return max(low - figures[kind], figures[kind] - high, 0.0)

    def expected_text(self, kind: str) -> str:
        high = self.expected_max.get(kind)
        return f"{self.expected[kind]:g}" if high is None else f"{self.expected[kind]:g} to {high:g}"

    def to_check(self) -> VerifyCheck:
        return VerifyCheck(name=self.name, ok=self.problem is None, check=self.line, answers=self.answers,
                           expected_statements_per_request=self.expected, expected_statements_max=self.expected_max,
                           statements_per_request=tuple(self.per_request), answers_shown=tuple(self.shown),
                           expected_rows_per_request=self.expected_rows, rows_per_request=tuple(self.rows_per_request))


def _field(data: Mapping[str, Any], name: str, kind: type | tuple[type, ...], where: str) -> Any:
    value = data.get(name) if isinstance(data, Mapping) else None
    if not isinstance(value, kind) or isinstance(value, bool):
        raise VerifyInputError(f"{where}: '{name}' is missing or not a {getattr(kind, '__name__', kind)}")
    return value


def _counters(data: Any, where: str, counters: Mapping[str, str] | None = None) -> dict[str, float]:
    """Each kind's figure from DATA's counters, COUNTERS naming each kind's (by default the kind: its statements)."""
    if not isinstance(data, Mapping):
        raise VerifyInputError(f"{where}: not an object of counters")
    found = {}
    for kind in KINDS:
        name = kind if counters is None else counters[kind]
        value = data.get(name)
        if not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value):
            raise VerifyInputError(f"{where}: no number for {name}")
        found[kind] = float(value)
    return found


def _check_format(document: Any, expected: str, where: str) -> Mapping[str, Any]:
    if not isinstance(document, Mapping) or document.get("format") != expected:
        raise VerifyInputError(f"{where}: not a {expected} document")
    if document.get("version") != FORMAT_VERSION:
        raise VerifyInputError(f"{where}: version {document.get('version')!r}, this perflab reads {FORMAT_VERSION}")
    return document


def expected_of(planned: VerifyPlanType) -> Expected:
    """The plan's expectations of a type (rundir's loader has checked their fields); VerifyInputError
    for a body_pattern that is no regular expression."""
    expect = planned.expect
    # Labelled with the type's name, so that the contract's messages name the type.
    answer = None if expect.contract is None else Answer(
        method=planned.method, route=planned.name.split(" ", 1)[-1], status=expect.status,
        content=expect.content, headers=expect.headers)
    try:
        body_pattern = None if expect.body_pattern is None else re.compile(expect.body_pattern)
    except re.error as exc:
        raise VerifyInputError(f"the plan's {planned.name}: body_pattern is not a regular expression: {exc}") from None
    return Expected(
        status=expect.status, contract=answer, media_type=expect.media_type, required_headers=expect.required_headers,
        json_field=expect.json_field,
        body_pattern=body_pattern, json_object=expect.json_object, json_array=expect.json_array,
        html_table=expect.html_table, statements=expect.statements, statements_max=dict(expect.statements_max),
        statements_by=expect.statements_by or "the plan", statements_doc=expect.statements_doc or "the verify plan",
        not_counted=expect.statements_not_counted or "the plan gives none", rows=expect.rows,
    )


def _shown(response: Mapping[str, Any]) -> dict[str, Any]:
    shown = dict(response)
    body = shown.get("body")
    if isinstance(body, str) and len(body) > SHOWN_BODY_CHARS:
        shown["body"] = body[:SHOWN_BODY_CHARS]
        shown["truncated"] = True
    return shown


def statements_per_request(attempt: Mapping[str, Any], own: Mapping[str, float], where: str) -> dict[str, float]:
    """One burst's statements per request, less the reader's own and the lab's own at rest."""
    return _per_request(attempt, own, {kind: kind for kind in KINDS}, where)


def rows_per_request(attempt: Mapping[str, Any], own: Any, where: str) -> dict[str, float] | None:
    """One burst's rows per request of each kind's statements, the same way; None where the results have no
    rows (the DB counts none by statement: MariaDB/MySQL)."""
    if not (isinstance(attempt, Mapping) and isinstance(attempt.get("burst"), Mapping)
            and ROW_COUNTERS["select"] in attempt["burst"]):
        return None
    return _per_request(attempt, _counters(own, "the results' own rows per reading", ROW_COUNTERS), ROW_COUNTERS, where)


def _per_request(attempt: Mapping[str, Any], own: Mapping[str, float], counters: Mapping[str, str],
                 where: str) -> dict[str, float]:
    """Per kind, the burst's delta of its counter less the reader's own and the lab's own at rest (the idle
    interval's rate over the burst's length), per request."""
    if not isinstance(attempt, Mapping):
        raise VerifyInputError(f"{where}: not an object")
    idle = _counters(attempt.get("idle"), f"{where} idle", counters)
    burst = _counters(attempt.get("burst"), f"{where} burst", counters)
    idle_s, burst_s = _field(attempt, "idle_s", (int, float), where), _field(attempt, "burst_s", (int, float), where)
    responses = _field(attempt, "responses", list, where)
    if not (idle_s > 0 and burst_s > 0 and responses):
        raise VerifyInputError(f"{where}: an attempt has idle_s and burst_s > 0 and at least one response")
    figures = {}
    for kind in KINDS:
        at_rest = max(0.0, idle[kind] - own[kind]) / idle_s
        figures[kind] = (burst[kind] - own[kind] - at_rest * burst_s) / len(responses)
    return figures


def _holds(document: Any, dotted: str) -> bool:
    """Whether a parsed JSON body holds the field at a dotted path (owner.id; a number indexes a list)."""
    for part in dotted.split("."):
        if isinstance(document, Mapping) and part in document:
            document = document[part]
        elif isinstance(document, list) and part.isdigit() and int(part) < len(document):
            document = document[int(part)]
        else:
            return False
    return True


def _fields_missing(item: Any, fields: Sequence[str]) -> list[str]:
    """The fields an object lacks, their names compared ignoring case (TechEmpower's verify lower-cases the keys);
    every one where it is no object."""
    if not isinstance(item, Mapping):
        return list(fields)
    present = {str(key).lower() for key in item}
    return [name for name in fields if name.lower() not in present]


class _TableText(HTMLParser):
    """The text of each row of an HTML page's tables: each cell's (th or td) text, character references
    decoded and surrounding white space taken off, in order."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.rows: list[tuple[str, ...]] = []
        self._row: list[str] | None = None
        self._cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: Any) -> None:
        if tag == "tr":
            self._end_row()
            self._row = []
        elif tag in ("td", "th"):
            self._end_cell()
            if self._row is None:
                self._row = []
            self._cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th"):
            self._end_cell()
        elif tag in ("tr", "table"):
            self._end_row()

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)

    def _end_cell(self) -> None:
        if self._cell is not None and self._row is not None:
            self._row.append("".join(self._cell).strip())
        self._cell = None

    def _end_row(self) -> None:
        self._end_cell()
        if self._row is not None:
            self.rows.append(tuple(self._row))
        self._row = None

    def close(self) -> None:
        super().close()
        self._end_row()


def table_rows(body: str) -> list[tuple[str, ...]]:
    """The rows of the HTML tables in a body, each its cells' text (_TableText)."""
    parser = _TableText()
    parser.feed(body)
    parser.close()
    return parser.rows


def _shape_problem(expected: Expected, body: str) -> str | None:
    """What the scenario's json_object, json_array or html_table finds wrong with a body, or None."""
    if expected.json_object is not None or expected.json_array is not None:
        try:
            parsed = json.loads(body)
        except json.JSONDecodeError:
            return "the body is not JSON"
        if expected.json_object is not None:
            missing = _fields_missing(parsed, expected.json_object.fields)
            if not isinstance(parsed, Mapping):
                return f"the body is a JSON {type(parsed).__name__}, the scenario expects an object"
            if missing:
                return f"the JSON object has no {', '.join(missing)} (names compared ignoring case)"
        if expected.json_array is not None:
            shape = expected.json_array
            if not isinstance(parsed, list):
                return f"the body is not a JSON array, the scenario expects one of {shape.length} items"
            if len(parsed) != shape.length:
                return f"the JSON array has {len(parsed)} items, the scenario expects {shape.length}"
            for index, item in enumerate(parsed):
                missing = _fields_missing(item, shape.fields)
                if missing:
                    return (f"item {index} of the JSON array is not an object with {', '.join(missing)} "
                            "(names compared ignoring case)")
    if expected.html_table is not None:
        rows = table_rows(body)
        wanted = [tuple(row) for row in expected.html_table]
        if rows != wanted:
            for index, (got, want) in enumerate(zip(rows, wanted)):
                if got != want:
                    return f"the HTML table's row {index + 1} reads {list(got)!r}, the scenario expects {list(want)!r}"
            return f"the HTML table has {len(rows)} rows, the scenario expects {len(wanted)}"
    return None


def scenario_problem(name: str, expected: Expected, status: int, headers: Mapping[str, str], body: str) -> str | None:
    """What the scenario's own expect finds wrong with an answer of the expected status, in one line."""
    label = f"{name} {status}"
    received = {header.lower(): value for header, value in headers.items()}
    for required in expected.required_headers:
        if not any(received.get(header.lower()) for header in scenarios.header_alternatives(required)):
            return (f"verify: {label}: no {required} header, which the scenario expects; headers: "
                    f"{', '.join(sorted(received)) or 'none'}")
    if expected.media_type is not None:
        content_type = received.get("content-type")
        if contract.media_type(content_type) != contract.media_type(expected.media_type):
            return (f"verify: {label}: Content-Type {content_type!r}, the scenario expects {expected.media_type}; "
                    f"body: {contract.quote(body)}")
    if expected.json_field is not None:
        try:
            parsed = json.loads(body)
        except json.JSONDecodeError:
            return (f"verify: {label}: the body is not JSON, the scenario expects a field {expected.json_field} in "
                    f"it; body: {contract.quote(body)}")
        if not _holds(parsed, expected.json_field):
            return (f"verify: {label}: the JSON body has no field {expected.json_field}, which the scenario "
                    f"expects; body: {contract.quote(body)}")
    if expected.body_pattern is not None and not expected.body_pattern.search(body):
        return (f"verify: {label}: the body does not match the scenario's body_pattern "
                f"{expected.body_pattern.pattern!r}; body: {contract.quote(body)}")
    shape = _shape_problem(expected, body)
    if shape is not None:
        return f"verify: {label}: {shape}; body: {contract.quote(body)}"
    return None


def _check_answers(verdict: TypeVerdict, expected: Expected, responses: Sequence[Any], base_url: str,
                   scenario_file: str, where: str) -> None:
    for response in responses:
        if not isinstance(response, Mapping):
            raise VerifyInputError(f"{where}: a response is not an object")
        status = response.get("status")
        key = str(status) if isinstance(status, int) else "no answer"
        verdict.answers[key] = verdict.answers.get(key, 0) + 1
        if verdict.problem:
            continue
        body = str(response.get("body", ""))
        if "error" in response or not isinstance(status, int):
            verdict.problem = f"verify: {verdict.name}: no answer from {base_url}: {response.get('error', 'no status')}"
        elif status != expected.status:
            verdict.problem = (f"verify: {verdict.name} answered {status}, the scenario expects {expected.status} "
                               f"({scenario_file}); body: {contract.quote(body)}")
        elif response.get("truncated"):
            verdict.problem = (f"verify: {verdict.name}: a body over {response.get('body_bytes')} bytes, more than "
                               "the verify keeps: it cannot check its shape")
        else:
            headers = response.get("headers", {})
            headers = headers if isinstance(headers, Mapping) else {}
            if expected.contract is not None:
                try:
                    contract.check_answer(expected.contract, status, headers, body)
                except ContractError as exc:
                    verdict.problem = f"verify: {exc}"
            if not verdict.problem:
                verdict.problem = scenario_problem(verdict.name, expected, status, headers, body)
        if verdict.problem:
            verdict.shown.append(_shown(response))


def check(plan: VerifyPlan, results: Mapping[str, Any]) -> list[TypeVerdict]:
    """Each type's verdict, in the plan's order."""
    results = _check_format(results, RESULTS_FORMAT, "the results")
    own = _counters(results.get("own"), "the results' own statements per reading")
    received = {t.get("name"): t for t in _field(results, "types", list, "the results") if isinstance(t, Mapping)}
    verdicts = []
    for planned in plan.types:
        name = planned.name
        expected = expected_of(planned)
        verdict = TypeVerdict(name=name, expected=dict(expected.statements or {}), expected_max=expected.statements_max,
                              by_contract=expected.contract is not None, not_counted=expected.not_counted,
                              expected_rows=dict(expected.rows or {}),
                              rows_short={kind: ROWS_SHORT_BULK for kind in expected.statements_max})
        verdicts.append(verdict)
        got = received.get(name)
        if got is None:
            raise VerifyInputError(f"the results have no {name}, which the plan has")
        attempts = _field(got, "attempts", list, f"the results' {name}")
        if not 1 <= len(attempts) <= len(planned.bursts):
            raise VerifyInputError(f"the results' {name}: {len(attempts)} bursts, the plan has 1 to {len(planned.bursts)}")
        for index, attempt in enumerate(attempts):
            where = f"the results' {name} burst {index + 1}"
            verdict.per_request.append(statements_per_request(attempt, own, where))
            counted = rows_per_request(attempt, results.get("own"), where) if verdict.expected_rows else None
            if counted is not None:
                verdict.rows_per_request.append(counted)
            _check_answers(verdict, expected, attempt["responses"], plan.base_url, plan.scenario_file, where)
            verdict.shown.append(_shown(attempt["responses"][0]))
        if verdict.problem or not verdict.expected:
            continue
        best = verdict.per_request_best
        for kind in KINDS:
            if verdict.off_by(best, kind) >= plan.tolerance:
                verdict.problem = (f"verify: {name} issued {best[kind]:.2f} {kind}s per request, "
                                   f"{expected.statements_by} says {verdict.expected_text(kind)} ({expected.statements_doc})")
                break
        if verdict.problem or not verdict.rows_per_request:
            continue
        if len(verdict.rows_per_request) != len(attempts):
            raise VerifyInputError(f"the results' {name}: rows counted in some of its bursts and not in others")
        rows = verdict.rows_best
        for kind in KINDS:
            if verdict.rows_off_by(rows, kind) > 0:
                low, high = verdict.rows_bounds(kind)
                count = verdict.expected_rows[kind]
                said = (f"says {count:g} ({low:.2f} to {high:.2f} with TechEmpower's margins" if count
                        else f"gives none (under {high:g} a request")
                verdict.problem = (f"verify: {name}'s {kind}s {ROWS_VERB[kind]} {rows[kind]:.2f} rows per request, "
                                   f"the scenario {said}; {expected.statements_doc})")
                break
    return verdicts


def document(plan: VerifyPlan, results: Mapping[str, Any], verdicts: Sequence[TypeVerdict]) -> VerifyReport:
    """verify.json: the verdict, each type's, and where and how it was measured (check() has
    checked the results' fields it reads; the others are kept as given, or None)."""
    failed = [v for v in verdicts if v.problem]

    def given(document: Mapping[str, Any], key: str, kind: type | tuple[type, ...]) -> Any:
        value = document.get(key)
        return value if isinstance(value, kind) and not isinstance(value, bool) else None

    return VerifyReport(
        status="failed" if failed else "ok",
        reason=failed[0].problem if failed else None,
        scenario=plan.scenario, base_url=plan.base_url,
        db_host=given(results, "host", str), burst=plan.burst, attempts=plan.attempts,
        tolerance=plan.tolerance, skipped=plan.skipped,
        own_statements_per_reading=_counters(results.get("own"), "the results' own statements per reading"),
        seconds=given(results, "seconds", (int, float)),
        types=tuple(v.to_check() for v in verdicts),
    )


# -- the command ------------------------------------------------------------------------------


EXIT_OK = 0
EXIT_FAILED = 1
EXIT_BAD_INPUT = 4


def _read_json(name: str, where: str) -> Any:
    try:
        text = sys.stdin.read() if name == "-" else Path(name).read_text()
    except OSError as exc:
        raise VerifyInputError(f"{where} {name}: {exc.strerror}") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise VerifyInputError(f"{where} {name}: not JSON (line {exc.lineno}: {exc.msg})") from None


def _positive(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"must be a whole number >= 1, not {text!r}")
    return int(text)


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add `perflab verify plan|check` to the CLI."""
    sub = commands.add_parser(
        "verify", help="before a run: the app answers the scenario's requests as it expects (plan, check)",
        description="The bench's verify phase (TechEmpower's verify): `plan` writes the scenario's requests and "
                    "what the scenario (and the contract, on its routes) expects of them, "
                    "roles/bench/files/verify_app.py sends them from the db host and counts the DB statements, "
                    "`check` judges its results.",
    )
    steps = sub.add_subparsers(required=True, metavar="STEP")
    plan = steps.add_parser(
        "plan", help="the verify's requests and expectations for one scenario (JSON)",
        description="For each request of the scenario file, requests from its own sequence (compiled with "
                    "--set and --weight as `perflab scenario compile` takes them, played as vegeta gets it "
                    f"with fresh keys of KEY_PHASE {VERIFY_KEY_PHASE}), what the scenario expects of the answers "
                    "(and the contract, on the routes it documents) and the DB statements per request.",
        epilog="exit codes: 0 written; 2 usage error; 4 bad input (one line per problem says which and why)",
    )
    plan.add_argument("scenario", metavar="SCENARIO", help="a scenario file (.yml or .yaml), or a name under scenarios/")
    plan.add_argument("--base-url", required=True, metavar="URL", help="the app as the load generator reaches it")
    # --set NAME=VALUE and --weight REQUEST=W, as `perflab scenario compile` takes them.
    scenarios._add_mix_options(plan)
    plan.add_argument("--burst", type=_positive, default=BURST, metavar="N", help=f"requests per burst ({BURST})")
    plan.add_argument("--attempts", type=_positive, default=ATTEMPTS, metavar="A",
                      help=f"measured bursts per type ({ATTEMPTS})")
    plan.add_argument("--concurrency", type=_positive, default=CONCURRENCY, metavar="C",
                      help=f"requests in flight ({CONCURRENCY})")
    plan.add_argument("--output", type=Path, metavar="PLAN.json", help="write the plan here (default: stdout)")
    plan.add_argument("--no-contract", dest="contract", action="store_false",
                      help="leave the lab's contract out: the scenario's expect and statements alone (an app that is not "
                           "one of the project's own, which the contract does not bind: the bench passes it for those)")
    plan.set_defaults(command=_plan)
    judge = steps.add_parser(
        "check", help="judge verify_app.py's results against the plan; one line per type",
        description="One line per request type, ok or the failing check; on a failure the first failing check "
                    "in one line on stderr.",
        epilog="exit codes: 0 every check passed; 1 a check failed; 2 usage error; 4 bad input",
    )
    judge.add_argument("plan", metavar="PLAN", help="the plan (perflab verify plan)")
    judge.add_argument("results", metavar="RESULTS", help="verify_app.py's output; - reads stdin")
    judge.add_argument("--output", type=Path, metavar="VERIFY.json", help="write the verdict here (verify.json)")
    judge.set_defaults(command=_check)


def _fail(problems: str | Sequence[str]) -> int:
    for line in (problems,) if isinstance(problems, str) else problems:
        print(f"perflab verify: error: {line}", file=sys.stderr)
    return EXIT_BAD_INPUT


def _plan(args: argparse.Namespace) -> int:
    parameters, weights, wrong = scenarios._mix_options(args)
    if wrong:
        return _fail(wrong)
    try:
        plan = make_plan(scenario_file(args.scenario), args.base_url, parameters, weights, burst=args.burst,
                         attempts=args.attempts, concurrency=args.concurrency, contract=args.contract)
    except VerifyInputError as exc:
        return _fail(exc.problems)
    if args.output is None:
        sys.stdout.write(dumps(plan))
        return EXIT_OK
    try:
        rundir.save_verify_plan(args.output, plan)
    except OSError as exc:
        return _fail(f"cannot write {args.output}: {exc.strerror}")
    print(f"verify plan: {plan.scenario}: "
          + "; ".join(f"{t.name} {t.expect.status}" for t in plan.types)
          + (f" (skipped, weight 0: {', '.join(plan.skipped)})" if plan.skipped else "")
          + f" ({plan.burst} requests a burst, {plan.attempts} bursts) -> {args.output}")
    return EXIT_OK


def _check(args: argparse.Namespace) -> int:
    try:
        plan = rundir.load_verify_plan(Path(args.plan))
        results = _read_json(args.results, "the results")
        verdicts = check(plan, results)
        verdict = document(plan, results, verdicts)
        if args.output is not None:
            rundir.save_verify(args.output, verdict)
    except VerifyInputError as exc:
        return _fail(exc.problems)
    except rundir.RunFileError as exc:
        return _fail(str(exc))
    except OSError as exc:
        return _fail(f"cannot write {args.output}: {exc.strerror}")
    for type_verdict in verdicts:
        print(type_verdict.line)
    if verdict.reason:
        print(verdict.reason, file=sys.stderr)
        return EXIT_FAILED
    return EXIT_OK
