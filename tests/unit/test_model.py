"""RunResult JSON: a round trip keeps everything; a file that does not match is refused."""

import dataclasses
import enum
import json
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

import jsonschema  # type: ignore[import-untyped]
import pytest

from perflab import wrk2
from perflab.model import (
    NOT_STORED,
    OMITTED_AT_DEFAULT,
    SCHEMA_VERSION,
    AppSettings,
    HostFacts,
    RunContext,
    RunResult,
    ScenarioRun,
    SchemaError,
    app_variant,
    database_name,
    dumps,
    from_jsonable,
    json_schema,
    loads,
    percentile_key,
)
from perflab.observations import Observations, Placement, TierCpu

from .helpers import wrk2_text


def full_result() -> RunResult:
    parsed = wrk2.parse(wrk2_text("wrk2-overloaded-uncorrected.txt"))
    return dataclasses.replace(
        wrk2.to_run_result(parsed, target_rate=600),
        started_at="2026-11-21T10:00:00Z",
        ended_at="2026-11-21T10:00:20Z",
        scenario=ScenarioRun(
            name="greeting", rate=600, duration_s=20, warmup_s=10, connections=50, threads=2,
            parameters={"path": "/serial"},
        ),
        app=AppSettings(
            name="quarkus", profile="io-vs-worker", jvm_options=("-Xmx128m", "-XX:+UseParallelGC"),
            environment={"PERFLAB_GREETING_DISPATCH": "io"}, cpus="0-3", memory_limit="256M",
            start_to_first_request_ms=868.3,
        ),
        hosts=(HostFacts(tier="app", host="perflab-app", machine="box1", cpus=4, memory_mb=256),),
        versions={"wrk2": "44a94c1", "java": "21.0.5"},
        raw_output="wrk2.txt",
    )


def test_round_trip_keeps_every_field() -> None:
    result = full_result()
    text = result.to_json()
    assert RunResult.from_json(text) == result
    document = json.loads(text)
    assert document["schema_version"] == SCHEMA_VERSION
    assert document["latency_corrected"]["percentiles_ms"]["99.9"] == 12570.0
    assert document["latency_uncorrected"]["spectrum"][0] == {"value_ms": 219.391, "percentile": 0.0, "total_count": 2}
    assert document["errors"]["timeout"] == 0


def test_observations_round_trip() -> None:
    observations = Observations(
        source="test",
        loadgen_cpu=TierCpu(busy_cores=0.5, allotted_cores=2),
        placements=(Placement(tier="app", host="a", machine="m", cpus=(0, 1)),),
        write_share_by_third=(0.5, 0.5, 0.49),
    )
    assert Observations.from_json(observations.to_json()) == observations


def _mutated(**changes: object) -> str:
    document = json.loads(full_result().to_json())
    for dotted, value in changes.items():
        *path, last = dotted.split("__")
        target = document
        for key in path:
            target = target[key]
        if value is KeyError:
            del target[last]
        else:
            target[last] = value
    return json.dumps(document)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{", "not JSON"),
        ("[]", "expected a JSON object"),
        (_mutated(schema_version=0), "schema_version is 0; this perflab reads 1"),
        (_mutated(schema_version=KeyError), "schema_version is None"),
        (_mutated(colour="blue"), "RunResult: unknown field\\(s\\) colour"),
        (_mutated(requests=KeyError), "RunResult: missing field requests"),
        (_mutated(requests="4460"), "RunResult.requests: expected an integer, found string"),
        (_mutated(requests=True), "RunResult.requests: expected an integer, found boolean"),
        (_mutated(target_rate=0), "RunResult: target rate must be a positive number"),
        (_mutated(errors__timeout=1.5), "RunResult.errors.timeout: expected an integer, found number"),
        (_mutated(latency_corrected=None), "RunResult.latency_corrected: expected an object, found null"),
        (
            _mutated(latency_corrected__spectrum=[{"value_ms": 1, "percentile": 0}]),
            "RunResult.latency_corrected.spectrum\\[0\\]: missing field total_count",
        ),
        (_mutated(app__jvm_options="-Xmx1g"), "RunResult.app.jvm_options: expected a list, found string"),
    ],
)
def test_files_that_do_not_match_the_schema_are_refused(text: str, message: str) -> None:
    with pytest.raises(SchemaError, match=message):
        RunResult.from_json(text)


def test_non_finite_numbers_are_refused() -> None:
    result = full_result()
    with pytest.raises(ValueError, match="must be finite and not negative"):
        dataclasses.replace(result, achieved_rate=float("nan"))
    latency = dataclasses.replace(result.latency_corrected, mean_ms=float("inf"))
    with pytest.raises(ValueError, match="inf cannot be stored as JSON"):
        dataclasses.replace(result, latency_corrected=latency).to_json()


def test_percentile_keys_have_one_spelling() -> None:
    assert [percentile_key(p) for p in (50, 50.0, 99.9, 99.999, 100)] == ["50", "50", "99.9", "99.999", "100"]
    with pytest.raises(ValueError):
        percentile_key(100.5)


def test_context_is_merged_into_the_tool_result() -> None:
    parsed = wrk2.to_run_result(wrk2.parse(wrk2_text("wrk2-steady-2000rps.txt")), target_rate=2000)
    context = RunContext(
        started_at="2026-11-21T10:00:00+00:00",
        ended_at="2026-11-21T10:00:20Z",
        scenario=ScenarioRun(name="greeting", rate=2000, duration_s=20, warmup_s=30),
        versions={"wrk2": "44a94c1"},
    )
    merged = parsed.with_context(RunContext.from_json(context.to_json()))
    assert (merged.started_at, merged.ended_at, merged.scenario, merged.versions) == (
        context.started_at, context.ended_at, context.scenario, context.versions,
    )
    assert (merged.achieved_rate, merged.latency_corrected) == (parsed.achieved_rate, parsed.latency_corrected)


@pytest.mark.parametrize(
    ("started", "ended", "message"),
    [
        ("yesterday", None, "started_at is not an ISO 8601 time: 'yesterday'"),
        ("2026-11-21T10:00:00", None, "started_at has no time zone"),
        ("2026-11-21T10:00:20Z", "2026-11-21T10:00:00Z", "the run ends .* before it starts"),
    ],
)
def test_run_window_must_make_sense(started: str, ended: str | None, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        RunContext(started_at=started, ended_at=ended)


def test_the_scenarios_slo_round_trips_and_files_without_it_still_load() -> None:
    result = full_result()
    assert result.scenario is not None
    with_slo = dataclasses.replace(result, scenario=dataclasses.replace(result.scenario, slo_p99_ms=25.0))
    assert RunResult.from_json(with_slo.to_json()) == with_slo
    # result.json and context.json written before the SLO was carried have no slo_p99_ms.
    old_result = _mutated(scenario__slo_p99_ms=KeyError)
    assert "slo_p99_ms" not in json.loads(old_result)["scenario"]
    loaded = RunResult.from_json(old_result)
    assert loaded.scenario is not None and loaded.scenario.slo_p99_ms is None
    context = json.loads(RunContext(scenario=ScenarioRun(name="greeting", rate=2000, duration_s=20, warmup_s=30))
                         .to_json())
    del context["scenario"]["slo_p99_ms"]
    old_context = RunContext.from_json(json.dumps(context))
    assert old_context.scenario is not None and old_context.scenario.slo_p99_ms is None
    assert json.loads(with_slo.to_json())["schema_version"] == SCHEMA_VERSION == 1


@pytest.mark.parametrize("slo", [0, -5, float("nan")])
def test_an_slo_is_a_positive_number_of_milliseconds(slo: float) -> None:
    with pytest.raises(ValueError, match="slo_p99_ms must be a positive number of milliseconds"):
        ScenarioRun(name="greeting", rate=2000, duration_s=20, warmup_s=30, slo_p99_ms=slo)
    with pytest.raises(SchemaError, match="RunResult.scenario: slo_p99_ms must be a positive number"):
        RunResult.from_json(_mutated(scenario__slo_p99_ms=-1))


def test_observations_without_a_cpu_window_still_load() -> None:
    """observations.json written before each tier's CPU window was kept."""
    observations = Observations(app_cpu=TierCpu(busy_cores=0.5, allotted_cores=1, window_s=22.9))
    assert Observations.from_json(observations.to_json()) == observations
    document = json.loads(observations.to_json())
    del document["app_cpu"]["window_s"]
    old = Observations.from_json(json.dumps(document))
    assert old.app_cpu == TierCpu(busy_cores=0.5, allotted_cores=1) and old.app_cpu.cpu_s is None


@pytest.mark.parametrize(("name", "environment", "profile", "variant"), [
    ("quarkus", {}, None, "quarkus (IO thread)"),
    ("quarkus", {"PERFLAB_GREETING_DISPATCH": "io", "PERFLAB_MAX_THREADS": "400"}, "default", "quarkus (IO thread)"),
    ("quarkus", {"PERFLAB_GREETING_DISPATCH": "worker"}, "default", "quarkus (worker thread)"),
    ("spring-mvc", {}, "default", "spring-mvc (200 threads)"),
    ("spring-mvc", {"PERFLAB_THREADS": "platform", "PERFLAB_MAX_THREADS": "200"}, None, "spring-mvc (200 threads)"),
    ("spring-mvc", {"PERFLAB_THREADS": "platform", "PERFLAB_MAX_THREADS": "400"}, None, "spring-mvc (400 threads)"),
    ("spring-mvc", {"PERFLAB_THREADS": "virtual", "PERFLAB_MAX_THREADS": "200"}, None, "spring-mvc (virtual threads)"),
    ("spring-mvc", {"PERFLAB_GREETING_DISPATCH": "worker"}, "io-vs-worker", "spring-mvc (200 threads) [io-vs-worker]"),
    ("spring-webflux", {"PERFLAB_THREADS": "virtual", "PERFLAB_GREETING_DISPATCH": "worker"}, None, "spring-webflux"),
    ("spring-webflux", {}, "virtual-threads-db", "spring-webflux [virtual-threads-db]"),
    ("spring-webflux", {"PERFLAB_OBSERVABILITY": "off"}, None, "spring-webflux (observability off)"),
    ("spring-mvc", {"PERFLAB_OBSERVABILITY": "on"}, None, "spring-mvc (200 threads)"),
    ("quarkus", {"PERFLAB_OBSERVABILITY": "off"}, "app-bound", "quarkus (IO thread, observability off) [app-bound]"),
    ("tfb-spring", {"PERFLAB_OBSERVABILITY": "off"}, None, "tfb-spring"),
])
def test_a_variant_is_named_by_the_settings_its_app_reads(
        name: str, environment: dict[str, str], profile: str | None, variant: str) -> None:
    """Report 2's MVC thread counts and virtual threads, report 3's Quarkus dispatch: each its own name; a
    setting the app does not read (every app gets every PERFLAB_* variable) names nothing."""
    assert app_variant(AppSettings(name=name, profile=profile, environment=environment)) == variant


def test_a_result_without_app_settings_has_an_unknown_app() -> None:
    assert app_variant(None) == "unknown app"


# --- the loader's types beyond RunResult's, and the JSON Schema it is checked against ---------------

class Colour(enum.Enum):
    RED = "red"
    BLUE = "blue"


@dataclass(frozen=True, kw_only=True)
class Document:
    """A document of every kind of field the run files use."""

    schema_version: int = 3
    colour: Colour
    state: Literal["complete", "incomplete"]
    count: int | str  # either, in that order
    anything: Any = None
    kept: float | None = None
    worked_out: float | None = field(default=None, metadata=NOT_STORED)


@dataclass(frozen=True)
class Scenario:
    """A document another program writes and extends: its other fields are passed over."""

    OPEN: ClassVar[bool] = True

    name: str


def test_enums_literals_unions_and_fields_not_stored_round_trip() -> None:
    document = Document(colour=Colour.BLUE, state="complete", count="7", anything={"a": [1]}, worked_out=2.0)
    stored = json.loads(dumps(document))
    assert stored == {"schema_version": 3, "colour": "blue", "state": "complete", "count": "7",
                      "anything": {"a": [1]}, "kept": None}
    assert loads(Document, dumps(document)) == dataclasses.replace(document, worked_out=None)
    assert loads(Document, json.dumps({**stored, "count": 7})).count == 7


@pytest.mark.parametrize(("change", "message"), [
    ({"colour": "green"}, "Document.colour: expected 'red' or 'blue', found 'green'"),
    ({"state": "done"}, "Document.state: expected 'complete' or 'incomplete', found 'done'"),
    ({"count": 1.5}, "Document.count: expected an integer or a string, found number"),
    ({"worked_out": 1.0}, "Document: unknown field\\(s\\) worked_out"),
    ({"schema_version": 1}, "schema_version is 1; this perflab reads 3"),
])
def test_the_new_kinds_of_field_say_what_is_wrong(change: dict[str, object], message: str) -> None:
    stored = {"schema_version": 3, "colour": "red", "state": "complete", "count": 1, **change}
    with pytest.raises(SchemaError, match=message):
        loads(Document, json.dumps(stored))


def test_a_file_written_before_it_carried_a_version_reads_as_the_first_only_when_allowed() -> None:
    stored = json.dumps({"colour": "red", "state": "complete", "count": 1})
    with pytest.raises(SchemaError, match="schema_version is None; this perflab reads 3"):
        loads(Document, stored)
    assert loads(Document, stored, unversioned=True).schema_version == 3


@dataclass(frozen=True, kw_only=True)
class Foreign:
    """A document whose own format carries its version (checked by a program without perflab), and
    keys that are there only when they say something."""

    VERSION_FIELD: ClassVar[str] = "version"

    version: int = 2
    path: str
    headers: dict[str, str] = field(default_factory=dict, metadata=OMITTED_AT_DEFAULT)
    body: str | None = field(default=None, metadata=OMITTED_AT_DEFAULT)


def test_a_document_may_name_its_version_field_and_leave_out_keys_at_their_default() -> None:
    bare, full = Foreign(path="/"), Foreign(path="/", headers={"Accept": "text/plain"}, body="")
    assert json.loads(dumps(bare)) == {"version": 2, "path": "/"}
    assert json.loads(dumps(full)) == {"version": 2, "path": "/", "headers": {"Accept": "text/plain"}, "body": ""}
    assert (loads(Foreign, dumps(bare)), loads(Foreign, dumps(full))) == (bare, full)
    with pytest.raises(SchemaError, match="^version is 1; this perflab reads 2$"):
        loads(Foreign, json.dumps({"version": 1, "path": "/"}))
    with pytest.raises(SchemaError, match="^Foreign: unknown field\\(s\\) schema_version$"):
        loads(Foreign, json.dumps({"version": 2, "schema_version": 2, "path": "/"}))
    with pytest.raises(SchemaError, match="^Foreign.headers: expected an object, found null$"):
        loads(Foreign, json.dumps({"version": 2, "path": "/", "headers": None}))
    schema: dict[str, Any] = json_schema(Foreign, "foreign")
    assert (schema["properties"]["version"], schema["required"]) == ({"const": 2}, ["path"])
    jsonschema.validate(json.loads(dumps(bare)), schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"version": 1, "path": "/"}, schema)


def test_an_open_document_drops_the_fields_it_does_not_name() -> None:
    assert from_jsonable(Scenario, {"name": "zipcodes", "mix": {"write_ratio": 0.5}}, "Scenario") == Scenario("zipcodes")


def test_the_json_schema_refuses_what_the_loader_refuses() -> None:
    schema = json_schema(Document, "document")
    good = {"schema_version": 3, "colour": "red", "state": "complete", "count": "1"}
    jsonschema.validate(good, schema)
    assert schema["required"] == ["colour", "state", "count"]
    assert "worked_out" not in schema["properties"]  # type: ignore[operator]
    for bad in ({**good, "colour": "green"}, {**good, "count": 1.5}, {**good, "extra": 1}, {**good, "schema_version": 2},
                {k: v for k, v in good.items() if k != "state"}):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(bad, schema)
    jsonschema.validate({"name": "zipcodes", "mix": {}}, json_schema(Scenario, "scenario"))
    jsonschema.validate(json.loads(full_result().to_json()), json_schema(RunResult, "result"))


@pytest.mark.parametrize(("version", "name"), [
    ("mariadbd  Ver 10.11.14-MariaDB-0+deb12u2 for debian-linux-gnu on x86_64 (Debian 12)", "MariaDB 10.11.14"),
    ("/usr/sbin/mysqld  Ver 8.0.43-0ubuntu0.24.04.1 for Linux on x86_64 ((Ubuntu))", "MySQL 8.0.43"),
    ("postgres (PostgreSQL) 15.18 (Debian 15.18-0+deb12u1)", "PostgreSQL 15.18"),
    ("", "the database"),
])
def test_the_db_server_is_named_from_its_version_line(version: str, name: str) -> None:
    # host_facts.py's line for the db host: the run's sentences, the report's sets and history.csv name the engine by it.
    assert database_name(version) == name
