"""perflab verify: before every measured run, the app answers the scenario's requests as the contract
says.

TechEmpower's `verify`, in the lab. Three steps, two of them here:

  perflab verify plan SCENARIO --base-url URL --output PLAN.json
      On the controller: for each request type of the scenario (method, route and the status its
      request sequence expects), a few concrete requests taken from that sequence (the vegeta
      targets generator, roles/loadgen/files/vegeta/perflab_targets.py, with the run's knobs from
      the environment and its own KEY_PHASE, so its fresh keys are never the run's), and what the
      contract expects of each answer: the status, the media type and body schema and the required
      headers (apps/contract/openapi.yaml, perflab/contract.py) and the DB statements per request
      (apps/contract/README.md, perflab/observe.py's CONTRACT_STATEMENTS).
  roles/bench/files/verify_app.py < PLAN.json > RESULTS.json
      On the first db host (stdlib only): per type a warm-up, then bursts of requests each after an
      idle interval, the server's Com_* counters read around both; every answer and the deltas.
  perflab verify check PLAN.json RESULTS.json --output verify.json
      On the controller: one line per type, ok or the failing check; exit 1 with the first failing
      check in one line on stderr when any fails.

Statements per request, from the counters: burst delta - the reader's own statements - the lab's
own at rest (the idle interval's delta less the reader's own, as a rate, times the burst's
length), divided by the burst's requests. What that correction cannot remove is a burst of the
lab's own: a mysqld_exporter scrape (every 5 s; about 10 selects, from observe.py's 0.03 to 0.05 a
request at 50 req/s) that falls into only one of the two intervals. Over a burst of 40 requests
that is 0.25 per request at most, so the tolerance is half a statement per request: the figure must
round to the contract's count, which makes one statement more (or fewer) per request, the smallest
real deviation, a failure. A type passes when one of its bursts is within the tolerance: noise does
not repeat itself, a deviation of the app does. The db host runs the second burst only when the
first was not clean (anything at rest, or not exactly the plan's statements): most runs pay for one.
"""

from __future__ import annotations

import argparse
import base64
import importlib.util
import json
import math
import os
import sys
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any
from urllib.parse import urlsplit

import yaml  # type: ignore[import-untyped]

from perflab import contract, observe, rundir
from perflab.contract import Answer, ContractError, OpenApi
from perflab.rundir import VerifyCheck, VerifyReport

ROOT = Path(__file__).resolve().parent.parent
TARGETS_SCRIPT = ROOT / "roles" / "loadgen" / "files" / "vegeta" / "perflab_targets.py"
SCENARIOS_DIR = ROOT / "scenarios"
PLAN_FORMAT = "perflab-verify-plan"
RESULTS_FORMAT = "perflab-verify-results"
FORMAT_VERSION = 1
CONTRACT_DOC = "apps/contract/README.md"

# The fresh keys of the verify's writes: KEY_PHASE 0 is the warm-up's and 1 the measured phase's
# (roles/loadgen/vars/main.yml); 9, the generator's last, is never a run's.
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
# Statements per request a burst may be off the contract's count (see the docstring).
TOLERANCE = 0.5
# Lines of the request sequence the plan reads at most to find enough requests of every type.
SEQUENCE_CAP = 200_000
# How much of a body verify.json keeps per answer shown.
SHOWN_BODY_CHARS = 1024

# The status each route's requests get in the scenarios' sequences (perflab_targets.py): reads of
# seeded zips (10000..49999), writes of fresh ZIP+4 keys, orders of seeded books (1..100) by
# seeded users (1..1000); the statements expected follow from it (CONTRACT_STATEMENTS).
SEQUENCE_STATUS: dict[tuple[str, str], int] = {
    ("GET", "/zipcodes/{zip}"): 200,
    ("POST", "/zipcodes"): 201,
    ("GET", "/books"): 200,
    ("POST", "/books"): 201,
    ("POST", "/orders"): 201,
    ("GET", "/greeting/{name}"): 200,
    ("GET", "/hello/{latency}"): 200,
    ("GET", "/plaintext"): 200,
    ("GET", "/json"): 200,
}
KINDS = observe.STATEMENT_KINDS


class VerifyInputError(Exception):
    """A scenario, plan or results file verify cannot use: one line."""


# -- the plan ---------------------------------------------------------------------------------


def targets_module() -> ModuleType:
    """The vegeta targets generator, the one source of the scenarios' requests, loaded from its file."""
    spec = importlib.util.spec_from_file_location("perflab_targets", TARGETS_SCRIPT)
    if spec is None or spec.loader is None:
        raise VerifyInputError(f"cannot load {TARGETS_SCRIPT}")
    module = importlib.util.module_from_spec(spec)
    # Its dataclasses look their module up by name while the file runs.
    sys.modules[spec.name] = module
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.modules[spec.name]
    return module


def scenario_file(name_or_path: str) -> Path:
    path = Path(name_or_path)
    if path.suffix not in (".yml", ".yaml"):
        path = SCENARIOS_DIR / f"{name_or_path}.yml"
    if not path.is_file():
        known = ", ".join(sorted(p.stem for p in SCENARIOS_DIR.glob("*.yml")))
        raise VerifyInputError(f"no scenario {name_or_path!r} ({path} is not a file); one of {known}")
    return path


def load_scenario(path: Path) -> dict[str, Any]:
    try:
        scenario = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise VerifyInputError(f"{path}: cannot read the scenario: {exc}") from None
    if not isinstance(scenario, dict):
        raise VerifyInputError(f"{path}: a scenario is a mapping")
    endpoints = scenario.get("endpoints")
    threads = scenario.get("threads")
    if not (isinstance(scenario.get("name"), str) and isinstance(scenario.get("script"), str)
            and isinstance(endpoints, list) and endpoints and all(isinstance(e, str) for e in endpoints)
            and isinstance(threads, int) and threads >= 1):
        raise VerifyInputError(f"{path}: a scenario needs name, script, endpoints (a list of 'METHOD /route') "
                               f"and threads (>= 1)")
    return scenario


def _request(target: Mapping[str, Any], base_url: str) -> dict[str, Any]:
    """A vegeta target line as the plan's request: method, path, headers, body text."""
    url = str(target["url"])
    if not url.startswith(base_url):
        raise VerifyInputError(f"the generator made a request outside {base_url}: {url}")
    request: dict[str, Any] = {"method": target["method"], "path": url[len(base_url):] or "/"}
    headers = {name: values[0] for name, values in target.get("header", {}).items()}
    if headers:
        request["headers"] = headers
    if "body" in target:
        request["body"] = base64.b64decode(target["body"]).decode("utf-8")
    return request


def _sequence(script: str, base_url: str, threads: int, env_options: Sequence[str],
              environment: Mapping[str, str]) -> Iterator[dict[str, Any]]:
    """The scenario's own request sequence, as vegeta gets it, with the verify's KEY_PHASE."""
    module = targets_module()
    argv = ["--script", script, "--base-url", base_url, "--count", str(SEQUENCE_CAP),
            "--key-phase", str(VERIFY_KEY_PHASE), "--host-index", "0", "--hosts", "1"]
    if "WRK_THREADS" not in environment:
        argv += ["--threads", str(threads)]
    for option in env_options:
        argv += ["--env", option]
    try:
        args = module.parse_args(argv)
        targets_plan = module.build_plan(args, dict(environment))
    except module.BadInput as exc:
        raise VerifyInputError(f"the scenario's request sequence: {exc}") from None
    except SystemExit:
        raise VerifyInputError(f"the scenario's request sequence: perflab_targets.py refused {argv}") from None
    counts = {operation: 0 for operation in module.OPERATIONS[script]}
    for line in module.targets(targets_plan, counts):
        yield _request(json.loads(line), targets_plan.base_url)


def make_plan(scenario_path: Path, base_url: str, environment: Mapping[str, str] | None = None,
              env_options: Sequence[str] = (), burst: int = BURST, attempts: int = ATTEMPTS,
              concurrency: int = CONCURRENCY, api: OpenApi | None = None) -> dict[str, Any]:
    """The verify plan of one scenario against the app at base_url (see the module's docstring)."""
    if burst < 1 or attempts < 1 or concurrency < 1:
        raise VerifyInputError(f"burst, attempts and concurrency are >= 1, got {burst}, {attempts}, {concurrency}")
    scenario = load_scenario(scenario_path)
    api = api or OpenApi()
    split = urlsplit(base_url)
    if split.scheme not in ("http", "https") or not split.hostname or split.path not in ("", "/"):
        raise VerifyInputError(f"--base-url must be http(s)://host[:port], got {base_url!r}")
    base_url = base_url.rstrip("/")
    endpoints: list[str] = scenario["endpoints"]
    warmup = 2 * concurrency  # enough to have every connection a burst can use open
    needed = warmup + burst * attempts
    found: dict[str, list[dict[str, Any]]] = {}
    environment = dict(os.environ if environment is None else environment)
    for request in _sequence(scenario["script"], base_url, scenario["threads"], env_options, environment):
        route = api.route_of(request["method"], request["path"].split("?")[0])
        name = f"{request['method']} {route}"
        if route is None or name not in endpoints:
            raise VerifyInputError(f"scenario {scenario['name']}: its sequence sends {request['method']} "
                                   f"{request['path']}, which is not one of its endpoints {endpoints}")
        requests = found.setdefault(name, [])
        if len(requests) < needed:
            requests.append(request)
        if len(found) == len(endpoints) and all(len(r) >= needed for r in found.values()):
            break
    types = []
    for name in endpoints:
        requests = found.get(name, [])
        if not requests:
            continue  # a weight of 0: the run sends none either
        if len(requests) < needed:
            raise VerifyInputError(f"scenario {scenario['name']}: {name} is too rare in its sequence: "
                                   f"{len(requests)} in {SEQUENCE_CAP} requests, the verify needs {needed}")
        method, route = name.split(" ", 1)
        types.append(_type_plan(api, method, route, requests[:warmup], requests[warmup:], burst))
    return {
        "format": PLAN_FORMAT, "version": FORMAT_VERSION, "scenario": scenario["name"], "base_url": base_url,
        "key_phase": VERIFY_KEY_PHASE, "burst": burst, "attempts": attempts, "concurrency": concurrency,
        "timeout_s": TIMEOUT_S, "max_body_bytes": MAX_BODY_BYTES, "tolerance": TOLERANCE,
        "skipped": [name for name in endpoints if name not in found],
        "types": types,
    }


def _type_plan(api: OpenApi, method: str, route: str, warmup: list[dict[str, Any]],
               measured: list[dict[str, Any]], burst: int) -> dict[str, Any]:
    status = SEQUENCE_STATUS.get((method, route))
    if status is None:
        raise VerifyInputError(f"verify knows no status for the scenarios' {method} {route} requests: "
                               "add it to perflab/verify.py's SEQUENCE_STATUS")
    try:
        answer = api.answer(method, route, status)
    except ContractError as exc:
        raise VerifyInputError(str(exc)) from None
    statements, why = observe.expected_statements({(method, route, str(status)): 1.0})
    if statements is None:
        raise VerifyInputError(why)
    return {
        "name": f"{method} {route}", "method": method, "route": route,
        "expect": {**answer.to_json(), "statements": {kind: getattr(statements, kind) for kind in KINDS}},
        "warmup": warmup,
        "bursts": [measured[start:start + burst] for start in range(0, len(measured), burst)],
    }


# -- the check --------------------------------------------------------------------------------


@dataclass
class TypeVerdict:
    name: str
    problem: str | None = None  # the failing check, one line; None when it passed
    answers: dict[str, int] = field(default_factory=dict)  # status (or "no answer") -> count
    per_request: list[dict[str, float]] = field(default_factory=list)  # each burst's statements per request
    expected: dict[str, float] = field(default_factory=dict)
    shown: list[dict[str, Any]] = field(default_factory=list)  # a few answers, bodies cut short

    @property
    def line(self) -> str:
        if self.problem:
            return self.problem
        statements = ", ".join(f"{self.per_request_best[k]:.2f} {k}" for k in KINDS)
        answers = ", ".join(f"{n} x {status}" for status, n in sorted(self.answers.items()))
        return f"verify: {self.name} ok: {answers} as the contract says; statements per request {statements}"

    @property
    def per_request_best(self) -> dict[str, float]:
        return min(self.per_request, key=self._deviation) if self.per_request else {}

    def _deviation(self, figures: Mapping[str, float]) -> float:
        return max(abs(figures[k] - self.expected[k]) for k in KINDS)

    def to_check(self) -> VerifyCheck:
        return VerifyCheck(name=self.name, ok=self.problem is None, check=self.line, answers=self.answers,
                           expected_statements_per_request=self.expected,
                           statements_per_request=tuple(self.per_request), answers_shown=tuple(self.shown))


def _field(data: Mapping[str, Any], name: str, kind: type | tuple[type, ...], where: str) -> Any:
    value = data.get(name) if isinstance(data, Mapping) else None
    if not isinstance(value, kind) or isinstance(value, bool):
        raise VerifyInputError(f"{where}: '{name}' is missing or not a {getattr(kind, '__name__', kind)}")
    return value


def _counters(data: Any, where: str) -> dict[str, float]:
    if not isinstance(data, Mapping):
        raise VerifyInputError(f"{where}: not an object of counters")
    found = {}
    for kind in KINDS:
        value = data.get(kind)
        if not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value):
            raise VerifyInputError(f"{where}: no number for {kind}")
        found[kind] = float(value)
    return found


def _check_format(document: Any, expected: str, where: str) -> Mapping[str, Any]:
    if not isinstance(document, Mapping) or document.get("format") != expected:
        raise VerifyInputError(f"{where}: not a {expected} document")
    if document.get("version") != FORMAT_VERSION:
        raise VerifyInputError(f"{where}: version {document.get('version')!r}, this perflab reads {FORMAT_VERSION}")
    return document


def _shown(response: Mapping[str, Any]) -> dict[str, Any]:
    shown = dict(response)
    body = shown.get("body")
    if isinstance(body, str) and len(body) > SHOWN_BODY_CHARS:
        shown["body"] = body[:SHOWN_BODY_CHARS]
        shown["truncated"] = True
    return shown


def statements_per_request(attempt: Mapping[str, Any], own: Mapping[str, float], where: str) -> dict[str, float]:
    """One burst's statements per request, less the reader's own and the lab's own at rest."""
    if not isinstance(attempt, Mapping):
        raise VerifyInputError(f"{where}: not an object")
    idle, burst = _counters(attempt.get("idle"), f"{where} idle"), _counters(attempt.get("burst"), f"{where} burst")
    idle_s, burst_s = _field(attempt, "idle_s", (int, float), where), _field(attempt, "burst_s", (int, float), where)
    responses = _field(attempt, "responses", list, where)
    if not (idle_s > 0 and burst_s > 0 and responses):
        raise VerifyInputError(f"{where}: an attempt has idle_s and burst_s > 0 and at least one response")
    figures = {}
    for kind in KINDS:
        at_rest = max(0.0, idle[kind] - own[kind]) / idle_s
        figures[kind] = (burst[kind] - own[kind] - at_rest * burst_s) / len(responses)
    return figures


def _check_answers(verdict: TypeVerdict, answer: Answer, responses: Sequence[Any], base_url: str,
                   where: str) -> None:
    for response in responses:
        if not isinstance(response, Mapping):
            raise VerifyInputError(f"{where}: a response is not an object")
        status = response.get("status")
        key = str(status) if isinstance(status, int) else "no answer"
        verdict.answers[key] = verdict.answers.get(key, 0) + 1
        if verdict.problem:
            continue
        if "error" in response or not isinstance(status, int):
            verdict.problem = f"verify: {verdict.name}: no answer from {base_url}: {response.get('error', 'no status')}"
        elif status != answer.status:
            verdict.problem = (f"verify: {verdict.name} answered {status}, the contract says {answer.status} for the "
                               f"scenario's requests ({CONTRACT_DOC}); body: {contract.quote(str(response.get('body', '')))}")
        elif response.get("truncated"):
            verdict.problem = (f"verify: {verdict.name}: a body over {response.get('body_bytes')} bytes, more than "
                               "the verify keeps: it cannot check its shape")
        else:
            headers = response.get("headers", {})
            try:
                contract.check_answer(answer, status, headers if isinstance(headers, Mapping) else {},
                                      str(response.get("body", "")))
            except ContractError as exc:
                verdict.problem = f"verify: {exc}"
        if verdict.problem:
            verdict.shown.append(_shown(response))


def check(plan: Mapping[str, Any], results: Mapping[str, Any]) -> list[TypeVerdict]:
    """Each type's verdict, in the plan's order."""
    plan = _check_format(plan, PLAN_FORMAT, "the plan")
    results = _check_format(results, RESULTS_FORMAT, "the results")
    base_url = _field(plan, "base_url", str, "the plan")
    tolerance = float(_field(plan, "tolerance", (int, float), "the plan"))
    own = _counters(results.get("own"), "the results' own statements per reading")
    received = {t.get("name"): t for t in _field(results, "types", list, "the results") if isinstance(t, Mapping)}
    verdicts = []
    for planned in _field(plan, "types", list, "the plan"):
        name = _field(planned, "name", str, "a type of the plan")
        expect = _field(planned, "expect", Mapping, f"the plan's {name}")
        try:
            answer = Answer.from_json(planned["method"], planned["route"], expect)
        except (ContractError, KeyError) as exc:
            raise VerifyInputError(f"the plan's {name}: {exc}") from None
        verdict = TypeVerdict(name=name, expected=_counters(expect.get("statements"), f"the plan's {name} statements"))
        verdicts.append(verdict)
        got = received.get(name)
        if got is None:
            raise VerifyInputError(f"the results have no {name}, which the plan has")
        attempts = _field(got, "attempts", list, f"the results' {name}")
        if not 1 <= len(attempts) <= len(_field(planned, "bursts", list, f"the plan's {name}")):
            raise VerifyInputError(f"the results' {name}: {len(attempts)} bursts, the plan has 1 to "
                                   f"{len(planned['bursts'])}")
        for index, attempt in enumerate(attempts):
            where = f"the results' {name} burst {index + 1}"
            verdict.per_request.append(statements_per_request(attempt, own, where))
            _check_answers(verdict, answer, attempt["responses"], base_url, where)
            verdict.shown.append(_shown(attempt["responses"][0]))
        if verdict.problem:
            continue
        best = verdict.per_request_best
        for kind in KINDS:
            if abs(best[kind] - verdict.expected[kind]) >= tolerance:
                verdict.problem = (f"verify: {name} issued {best[kind]:.2f} {kind}s per request, the contract says "
                                   f"{verdict.expected[kind]:g} ({CONTRACT_DOC})")
                break
    return verdicts


def document(plan: Mapping[str, Any], results: Mapping[str, Any], verdicts: Sequence[TypeVerdict]) -> VerifyReport:
    """verify.json: the verdict, each type's, and where and how it was measured (check() has
    checked the plan's and the results' fields it reads; the others are kept as given, or None)."""
    failed = [v for v in verdicts if v.problem]

    def given(document: Mapping[str, Any], key: str, kind: type | tuple[type, ...]) -> Any:
        value = document.get(key)
        return value if isinstance(value, kind) and not isinstance(value, bool) else None

    return VerifyReport(
        status="failed" if failed else "ok",
        reason=failed[0].problem if failed else None,
        scenario=given(plan, "scenario", str), base_url=given(plan, "base_url", str),
        db_host=given(results, "host", str), burst=given(plan, "burst", int), attempts=given(plan, "attempts", int),
        tolerance=given(plan, "tolerance", (int, float)), skipped=tuple(str(name) for name in plan.get("skipped", [])),
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


def _write_json(path: Path | None, data: Any) -> None:
    if path is None:
        return
    try:
        path.write_text(json.dumps(data, indent=2) + "\n")
    except OSError as exc:
        raise VerifyInputError(f"cannot write {path}: {exc.strerror}") from None


def _positive(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"must be a whole number >= 1, not {text!r}")
    return int(text)


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add `perflab verify plan|check` to the CLI."""
    sub = commands.add_parser(
        "verify", help="before a run: the app answers the scenario's requests as the contract says (plan, check)",
        description="The bench's verify phase (TechEmpower's verify): `plan` writes the requests and what the "
                    "contract expects of them, roles/bench/files/verify_app.py sends them from the db host and "
                    "counts the DB statements, `check` judges its results.",
    )
    steps = sub.add_subparsers(required=True, metavar="STEP")
    plan = steps.add_parser(
        "plan", help="the verify's requests and expectations for one scenario (JSON)",
        description="For each request type of the scenario, requests from its own sequence (the vegeta "
                    "targets generator, knobs from the environment as the loadgen host reads them, fresh keys "
                    f"of KEY_PHASE {VERIFY_KEY_PHASE}) and the contract's expectations.",
        epilog="exit codes: 0 written; 2 usage error; 4 bad input (one line says which and why)",
    )
    plan.add_argument("scenario", metavar="SCENARIO", help="a scenario file, or a name under scenarios/")
    plan.add_argument("--base-url", required=True, metavar="URL", help="the app as the load generator reaches it")
    plan.add_argument("--env", action="append", default=[], metavar="NAME=VALUE",
                      help="a knob of the request sequence (WRITE_RATIO, LATENCY_MS, ...), over the environment")
    plan.add_argument("--burst", type=_positive, default=BURST, metavar="N", help=f"requests per burst ({BURST})")
    plan.add_argument("--attempts", type=_positive, default=ATTEMPTS, metavar="A",
                      help=f"measured bursts per type ({ATTEMPTS})")
    plan.add_argument("--concurrency", type=_positive, default=CONCURRENCY, metavar="C",
                      help=f"requests in flight ({CONCURRENCY})")
    plan.add_argument("--output", type=Path, metavar="PLAN.json", help="write the plan here (default: stdout)")
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


def _fail(message: str) -> int:
    print(f"perflab verify: error: {message}", file=sys.stderr)
    return EXIT_BAD_INPUT


def _plan(args: argparse.Namespace) -> int:
    try:
        plan = make_plan(scenario_file(args.scenario), args.base_url, env_options=args.env, burst=args.burst,
                         attempts=args.attempts, concurrency=args.concurrency)
        if args.output is None:
            print(json.dumps(plan, indent=2))
        else:
            _write_json(args.output, plan)
            print(f"verify plan: {plan['scenario']}: "
                  + "; ".join(f"{t['name']} {t['expect']['status']}" for t in plan["types"])
                  + f" ({plan['burst']} requests a burst, {plan['attempts']} bursts) -> {args.output}")
    except VerifyInputError as exc:
        return _fail(str(exc))
    return EXIT_OK


def _check(args: argparse.Namespace) -> int:
    try:
        plan = _read_json(args.plan, "the plan")
        results = _read_json(args.results, "the results")
        verdicts = check(plan, results)
        verdict = document(plan, results, verdicts)
        if args.output is not None:
            rundir.save_verify(args.output, verdict)
    except VerifyInputError as exc:
        return _fail(str(exc))
    except OSError as exc:
        return _fail(f"cannot write {args.output}: {exc.strerror}")
    for type_verdict in verdicts:
        print(type_verdict.line)
    if verdict.reason:
        print(verdict.reason, file=sys.stderr)
        return EXIT_FAILED
    return EXIT_OK
