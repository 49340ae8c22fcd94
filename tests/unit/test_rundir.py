"""perflab.rundir, the one owner of a run's files: the runs stored before it (the report's lab run,
and a run and a sweep perflab wrote at 9627f40) still load and report, every file matches the
JSON Schema checked in for it (and that schema is what `make schemas` writes), and what Ansible
writes itself (status.json, db-sessions.json, bench-inputs.json) is what the models read: its
tasks are rendered here as Ansible renders them."""

from __future__ import annotations

import dataclasses
import datetime
import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import jinja2
import jsonschema  # type: ignore[import-untyped]
import pytest
import yaml  # type: ignore[import-untyped]

from perflab import rundir, scenario, sweep
from perflab.results import load
from perflab.model import dumps, load_document

from .helpers import UNIT_DIR, VEGETA_FIXTURES
from .test_cli import perflab
from .test_collect import CLOSED_PROMETHEUS, bench_inputs, run_dir_with
from .test_sweep import write_run

REPO = UNIT_DIR.parents[1]
REPORT_FIXTURES = REPO / "tests" / "report" / "fixtures"
BENCH_TASKS = REPO / "roles" / "bench" / "tasks"

# The stored runs at hand, each file as it was written then (tests/report/fixtures/README.md).
STORED = sorted(path for path in REPORT_FIXTURES.glob("*/*.json"))
# Every file of a run and a sweep as perflab wrote them before rundir (fixtures/runs-9627f40/README.md).
BEFORE = UNIT_DIR / "fixtures" / "runs-9627f40"
BEFORE_RUN = "20261120T090000Z-quarkus-greeting"
BEFORE_REPRODUCTION = "20261120T091000Z-reproduce-3"
READERS = {rundir.CONTEXT: rundir.read_context, rundir.OBSERVATIONS: rundir.read_observations,
           rundir.UTILIZATION: rundir.read_utilization}


def schema(file_name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((rundir.SCHEMAS_DIR / rundir.schema_name(file_name)).read_text())
    return loaded


def test_checked_in_schemas_are_what_make_schemas_writes(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "perflab.rundir", str(tmp_path)],
                          capture_output=True, text=True, timeout=120, cwd=REPO)
    assert done.returncode == 0, done.stderr
    generated = {path.name: path.read_text(encoding="utf-8") for path in tmp_path.iterdir()}
    checked_in = {path.name: path.read_text(encoding="utf-8") for path in rundir.SCHEMAS_DIR.iterdir()}
    stale = sorted(name for name in generated.keys() | checked_in.keys() if generated.get(name) != checked_in.get(name))
    assert not stale, f"perflab/schemas/: {', '.join(stale)} differ from the models: run `make schemas` and commit"


@pytest.mark.parametrize("path", STORED, ids=lambda path: f"{path.parent.name}/{path.name}")
def test_the_stored_runs_load_unchanged_and_match_their_schema(path: Path) -> None:
    document = json.loads(path.read_text())
    jsonschema.validate(document, schema(path.name))
    # Read and written again, a stored file says what it said: nothing of it dropped or reshaped
    # (fields added since are written too, as null: the file did not know them).
    assert _within(document, json.loads(dumps(READERS[path.name](path.parent))))


def _within(stored: Any, written: Any) -> bool:
    if isinstance(stored, dict):
        return isinstance(written, dict) and all(key in written and _within(value, written[key])
                                                 for key, value in stored.items())
    if isinstance(stored, list):
        return isinstance(written, list) and len(stored) == len(written) and all(map(_within, stored, written))
    return bool(stored == written)


def test_a_run_and_a_sweep_written_before_rundir_load_and_report_as_they_did(tmp_path: Path) -> None:
    results = tmp_path / "results"
    shutil.copytree(BEFORE, results, ignore=shutil.ignore_patterns("*.md"))
    shutil.copy(VEGETA_FIXTURES / "vegeta-steady-200rps.jsonl.gz", results / BEFORE_RUN / "vegeta-measure.jsonl.gz")
    stored = sorted(results.glob("*/*.json"))
    # Runs were not profiled then (issue 23): no profile-summary.json. verify-plan.json, whose shape is unchanged since
    # (version 2): tests/unit/test_verify.py.
    assert {path.name for path in stored} == set(rundir.MODELS) - {rundir.UTILIZATION, rundir.PROFILE_SUMMARY,
                                                                   rundir.VERIFY_PLAN}
    for path in stored:
        jsonschema.validate(json.loads(path.read_text()), schema(path.name))
    run_dir = results / BEFORE_RUN
    assert rundir.read_status(run_dir).schema_version == 1  # written without one: read as the first
    assert rundir.read_bench_inputs(run_dir).run.scenario.name == "greeting"
    assert [s.tls for s in rundir.read_db_sessions(run_dir).sessions] == [True]
    assert rundir.read_timeseries(run_dir).phase("measure") is not None
    assert rundir.read_result(run_dir).app == rundir.read_context(run_dir).app
    verified = load_document(rundir.VerifyReport, json.loads((run_dir / rundir.VERIFY).read_text()), unversioned=True)
    assert verified.status == "ok" and len(verified.types) == 2  # no program reads it: the model can
    loaded = load(results)
    (run,) = loaded.runs
    assert run.judged and run.verdict == rundir.read_audit(run_dir) and run.attribution is not None
    assert loaded.problems == [f"{BEFORE_RUN}: no utilization.json: no Prometheus data for this run; utilization not recorded"]
    assert loaded.sweeps["20261120T085900Z-quarkus-greeting-sweep"].max_sustainable_rate == 200
    # reproduction.json as perflab reproduce wrote it before rundir owned it (no schema_version): read as version 1.
    reproduced = rundir.read_reproduction(results / BEFORE_REPRODUCTION)
    assert reproduced.schema_version == 1 and reproduced.settings.profile == "default"
    assert reproduced.runs["worker"].state == "incomplete: the run" and len(reproduced.relations) == 3
    assert _within(json.loads((results / BEFORE_REPRODUCTION / rundir.REPRODUCTION).read_text()),
                   json.loads(dumps(reproduced)))
    (shown,) = loaded.reproductions
    assert shown.summary == "greeting at 1500 req/s, 30s after 15s of warm-up, profile default"


def test_every_file_perflab_writes_matches_its_schema(tmp_path: Path) -> None:
    """A vegeta run as `perflab collect` leaves it (Prometheus closed: no utilization.json, whose
    stored examples are above), and a sweep over two such runs as perflab.sweep saves it
    (verify-plan.json and verify.json: tests/unit/test_verify.py; db-sessions.json: below)."""
    run_dir = run_dir_with(tmp_path, bench_inputs("vegeta", 200, ["vegeta-measure.jsonl.gz"], []),
                           {"vegeta-measure.jsonl.gz": VEGETA_FIXTURES / "vegeta-steady-200rps.jsonl.gz"})
    done = perflab("collect", run_dir, "--prometheus", CLOSED_PROMETHEUS)
    assert done.returncode == 0, done.stderr
    made = rundir.Sweep(app="quarkus", scenario="zipcodes", slo_p99_ms=50.0, started_at="2026-01-01T00:00:00Z")
    for rate, outcome in ((100, {}), (200, {"verdict": "INVALID"})):
        write_run(tmp_path / f"{rate}", rate, **outcome)  # type: ignore[arg-type]
        sweep.record(made, sweep.read_step(rate, tmp_path / f"{rate}", 50.0))
    rundir.write_sweep(tmp_path / "sweep", made)
    written = [*run_dir.glob("*.json"), tmp_path / "sweep" / rundir.SWEEP]
    for path in written:
        jsonschema.validate(json.loads(path.read_text()), schema(path.name))
    # profile-summary.json: tests/unit/test_profile.py; reproduction.json: tests/unit/test_reproduce.py.
    assert {path.name for path in written} == (set(rundir.MODELS) - {rundir.UTILIZATION, rundir.DB_SESSIONS, rundir.VERIFY,
                                                                     rundir.VERIFY_PLAN, rundir.PROFILE_SUMMARY,
                                                                     rundir.REPRODUCTION})


# A file written on the controller: the copy module, or the action that writes it without one (perflab.lab.controller_copy).
COPIES = ("ansible.builtin.copy", "perflab.lab.controller_copy")


def _copy_content(task_file: Path) -> str:
    """The content of the one copy task of TASK_FILE that writes a run file (one of rundir.MODELS, in the run's
    directory; open_results.yml also tells make bench the run's directory, in a file of the caller's)."""
    tasks = yaml.safe_load(task_file.read_text())
    copies = [task[module] for task in tasks for module in COPIES if module in task]
    contents = [copy["content"] for copy in copies if any(copy["dest"].endswith(f"/{name}") for name in rundir.MODELS)]
    assert len(contents) == 1, task_file
    content: str = contents[0]
    return content


def _render(template: str, **variables: Any) -> Any:
    """TEMPLATE as Ansible renders it, with the filters these tasks use."""
    environment = jinja2.Environment(undefined=jinja2.StrictUndefined)
    environment.filters.update(to_nice_json=lambda value: json.dumps(value, indent=4, sort_keys=True),
                               from_json=json.loads, combine=lambda a, b: {**a, **b})
    environment.globals["now"] = lambda utc=False: datetime.datetime.now(datetime.timezone.utc)
    return json.loads(environment.from_string(template).render(**variables))


def test_the_status_ansible_writes_is_a_run_status(tmp_path: Path) -> None:
    opened = _render(_copy_content(BENCH_TASKS / "open_results.yml"), bench_run_id="20260101T000000Z-quarkus-greeting")
    failed = _render(_copy_content(BENCH_TASKS / "mark_incomplete.yml"), __bench_run_id="20260101T000000Z-quarkus-greeting",
                     bench_failed_step="the run", __bench_reason="  perflab-app failed to start\n")
    for document in (opened, failed):
        jsonschema.validate(document, schema(rundir.STATUS))
        (tmp_path / rundir.STATUS).write_text(json.dumps(document))
        assert rundir.read_status(tmp_path).status == "incomplete"
    assert (rundir.read_status(tmp_path).failed_step, rundir.read_status(tmp_path).reason) == (
        "the run", "perflab-app failed to start")


def test_a_failed_run_names_the_real_results_directory() -> None:
    """Issue 24: with RESULTS=/mnt/full the failure named results/<run id>/status.json, where no such file was."""
    tasks = yaml.safe_load((BENCH_TASKS / "mark_incomplete.yml").read_text())
    messages = [task["ansible.builtin.fail"]["msg"] for task in tasks if "ansible.builtin.fail" in task]
    said = [jinja2.Environment(undefined=jinja2.StrictUndefined).from_string(message).render(
        bench_failed_step="the measured phase", bench_results_dir="/mnt/full/perflab",
        hostvars={"localhost": {"bench_run_id": "20261127T091500Z-quarkus-zipcodes"}}) for message in messages]
    assert said == ["bench: the measured phase failed; /mnt/full/perflab/20261127T091500Z-quarkus-zipcodes/status.json "
                    "says why."]


def test_the_db_sessions_ansible_writes_are_a_session_list(tmp_path: Path) -> None:
    content = _copy_content(BENCH_TASKS / "db_sessions.yml")
    listed = json.dumps({"evidence": "each session's Ssl_cipher (performance_schema)",
                         "sessions": [{"id": 12, "user": "perflab", "host": "10.89.0.4", "tls": True}]})
    answered = _render(content, __bench_db_sessions={"rc": 0, "stdout": listed})
    silent = _render(content, __bench_db_sessions={"rc": 1, "msg": "Failed to connect to the host via ssh"})
    for document in (answered, silent):
        jsonschema.validate(document, schema(rundir.DB_SESSIONS))
        (tmp_path / rundir.DB_SESSIONS).write_text(json.dumps(document))
        rundir.read_db_sessions(tmp_path)
    assert rundir.read_db_sessions(tmp_path).unavailable == "the DB host did not answer: Failed to connect to the host via ssh"


def test_the_bench_inputs_ansible_writes_have_the_models_fields(tmp_path: Path) -> None:
    variables = yaml.safe_load((REPO / "roles" / "bench" / "vars" / "main.yml").read_text())
    stored = [f.name for f in dataclasses.fields(rundir.BenchInputs)]
    assert sorted(variables["__bench_inputs"]) == sorted(stored)
    assert variables["__bench_inputs"]["schema_version"] == rundir.BenchInputs.schema_version
    # What the unit tests write as the bench does (one loadgen host), and its schema.
    document = bench_inputs("vegeta", 200, ["vegeta-measure.jsonl.gz"], []) | {"schema_version": 1}
    jsonschema.validate(document, schema(rundir.BENCH_INPUTS))
    (tmp_path / rundir.BENCH_INPUTS).write_text(json.dumps(document))
    assert rundir.read_bench_inputs(tmp_path).run.scenario.rate == 200.0


@pytest.mark.parametrize(("file_name", "document", "message"), [
    (rundir.STATUS, {"status": "incomplete", "reason": "still running"}, None),  # before status.json carried a version
    (rundir.STATUS, {"status": "running"}, "status.json: not a perflab run status: RunStatus.status: expected "
                                           "'complete' or 'incomplete', found 'running'"),
    (rundir.STATUS, {"schema_version": 2, "status": "complete"},
     "status.json: not a perflab run status: schema_version is 2; this perflab reads 1"),
    (rundir.DB_SESSIONS, {"unavailable": "the DB did not answer"}, None),
    (rundir.AUDIT, {"status": "VALID", "rules": []},
     "audit.json: not a perflab verdict: schema_version is None; this perflab reads 1"),
    (rundir.AUDIT, {"schema_version": 1, "status": "VALID", "rules": []}, None),  # before the app's cost was stated
])
def test_what_is_read_and_what_is_refused(tmp_path: Path, file_name: str, document: dict[str, Any],
                                          message: str | None) -> None:
    (tmp_path / file_name).write_text(json.dumps(document))
    read = {rundir.STATUS: rundir.read_status, rundir.DB_SESSIONS: rundir.read_db_sessions,
            rundir.AUDIT: rundir.read_audit}[file_name]
    if message is None:
        read(tmp_path)
        return
    with pytest.raises(rundir.RunFileError) as refused:
        read(tmp_path)
    assert refused.value.short == message


@pytest.mark.parametrize(("content", "message"), [
    (None, "no such file"),
    (b"", "empty (written only in part?)"),
    (b"\xff\xfe", "not text (binary or not UTF-8)"),
    (b'{"status": "compl', "not JSON (line 1: Unterminated string starting at): corrupt or cut short"),
])
def test_a_file_that_is_not_there_or_not_json_says_so(tmp_path: Path, content: bytes | None, message: str) -> None:
    if content is not None:
        (tmp_path / rundir.STATUS).write_bytes(content)
    with pytest.raises(rundir.RunFileError) as refused:
        rundir.read_status(tmp_path)
    assert (refused.value.path, refused.value.problem) == (tmp_path / rundir.STATUS, message)


def test_a_write_is_whole_or_nothing(tmp_path: Path) -> None:
    rundir.write_status(tmp_path, rundir.RunStatus(status="incomplete"))
    assert [path.name for path in tmp_path.iterdir()] == [rundir.STATUS]  # no partial file left behind
    assert rundir.read_status(tmp_path) == rundir.RunStatus(status="incomplete")


def test_the_results_directory_has_one_default(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("PERFLAB_RESULTS_DIR", raising=False)
    assert rundir.results_dir() == REPO / "results"
    monkeypatch.setenv("PERFLAB_RESULTS_DIR", str(tmp_path))
    assert rundir.results_dir() == tmp_path
    assert rundir.results_dir(tmp_path / "given") == tmp_path / "given"


def test_bench_inputs_from_before_several_loadgen_hosts_still_load(tmp_path: Path) -> None:
    """bench-inputs.json as the bench wrote it on 2026-11-23 (de90f87..bd45f77): one raw output, no
    raw_files, percentile tables, scrape interval, repetition or loadgen hosts' CPU."""
    document = bench_inputs("vegeta", 200, ["vegeta-measure.jsonl.gz"], [])
    for key in ("raw_files", "percentile_files", "scrape_interval_s", "repetition", "loadgen_hosts_cpu", "start_skew_ms"):
        document.pop(key, None)
    (tmp_path / rundir.BENCH_INPUTS).write_text(json.dumps(document))
    inputs = rundir.read_bench_inputs(tmp_path)
    assert (inputs.measured_files, inputs.scrape_interval_s, inputs.repetition) == (("vegeta-measure.jsonl.gz",), 5.0, {})


# The scenario as run with its requests, as role loadgen records it (perflab scenario compile --as-run):
# each request as the file spells it, its weight as run, `statements` only where the file gives them.
PETCLINIC_AS_RUN = {
    "name": "petclinic", "rate": 100, "connections": 8, "threads": 2, "slo_p99_ms": 100,
    "endpoints": ["GET /owners", "GET /owners/{id}", "POST /owners/new"],
    "requests": [
        {"name": "find", "weight": 2, "method": "GET", "path": "/owners?lastName=${last}",
         "expect": {"status": 200, "media_type": "text/html", "body_pattern": "Owners"}, "statements": {"select": 2},
         "headers": {"Accept": "text/html"}},
        {"name": "show", "weight": 3.5, "method": "GET", "path": "/owners/${id}", "expect": {"status": 200},
         "headers": {}},
        {"name": "add", "weight": 1, "method": "POST", "path": "/owners/new", "expect": {"status": 302},
         "statements": {"insert": 1}, "headers": {}, "body": {"form": {"lastName": "${last}"}}},
    ],
    "parameters": {}, "file": "scenarios/petclinic.yml",
}


def test_the_scenarios_requests_as_run_are_read_and_older_inputs_load_without_them(tmp_path: Path) -> None:
    document = bench_inputs("vegeta", 100, ["vegeta-measure.jsonl.gz"], [])
    document["run"]["scenario"] = PETCLINIC_AS_RUN
    jsonschema.validate(document | {"schema_version": 1}, schema(rundir.BENCH_INPUTS))
    (tmp_path / rundir.BENCH_INPUTS).write_text(json.dumps(document))
    find, show, add = rundir.read_bench_inputs(tmp_path).run.scenario.requests
    assert (find.name, find.method, find.weight, find.status, find.route, find.statements) == (
        "find", "GET", 2.0, "200", "/owners", {"select": 2.0})
    assert (show.route, show.weight, show.statements) == ("/owners/{id}", 3.5, None)  # the file gives none
    assert (add.status, add.route, add.statements) == ("302", "/owners/new", {"insert": 1.0})
    # Before the requests were recorded: none, and the rest as it was read.
    older = bench_inputs("vegeta", 100, ["vegeta-measure.jsonl.gz"], [])
    (tmp_path / rundir.BENCH_INPUTS).write_text(json.dumps(older))
    assert rundir.read_bench_inputs(tmp_path).run.scenario.requests == ()
    assert rundir.read_bench_inputs(BEFORE / BEFORE_RUN).run.scenario.requests == ()
    # A statement kind no DB counts is refused with its place.
    wrong = json.loads(json.dumps(document))
    wrong["run"]["scenario"]["requests"][0]["statements"] = {"selects": 2}
    (tmp_path / rundir.BENCH_INPUTS).write_text(json.dumps(wrong))
    with pytest.raises(rundir.RunFileError, match=r"BenchInputs.run.scenario.requests\[0\]: statements.selects: "
                                                  "unknown kind; allowed: select, insert, update, delete"):
        rundir.read_bench_inputs(tmp_path)


@pytest.mark.parametrize("path", sorted((REPO / "scenarios").glob("*.yml")), ids=lambda path: path.stem)
def test_every_scenario_as_run_is_read_with_its_requests(tmp_path: Path, path: Path) -> None:
    """What `perflab scenario compile --as-run` writes of each scenario file, the bench records as
    loadgen.scenario: it reads, requests and all, with the routes Scenario.endpoints() spells."""
    loaded = scenario.load(path)
    document = bench_inputs("vegeta", 100, ["vegeta-measure.jsonl.gz"], [])
    document["run"]["scenario"] = scenario.as_run(loaded, path)
    (tmp_path / rundir.BENCH_INPUTS).write_text(json.dumps(document))
    read = rundir.read_bench_inputs(tmp_path).run.scenario
    assert [r.name for r in read.requests] == [r.name for r in loaded.requests]
    assert tuple(dict.fromkeys(f"{r.method} {r.route}" for r in read.requests)) == loaded.endpoints()
    # A request whose statements include a range (scenarios/updates.yml) has none a run's readers hold it to: the
    # file's are kept beside them (statement_ranges), and the observer takes the contract's count for its route.
    ranged = [any(isinstance(n, scenario.StatementRange) for n in (r.statements or {}).values()) for r in loaded.requests]
    assert [r.statements for r in read.requests] == [None if k else r.statements for k, r in zip(ranged, loaded.requests)]
    assert any(ranged) == (path.stem == "updates")
    assert [int(r.status) for r in read.requests] == [r.expect.status for r in loaded.requests]
