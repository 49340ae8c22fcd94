"""The five built-in scenarios (scenarios/*.yml) keep the sequences the lab sent before they were
scenario files. The per-scenario code that sent them (roles/loadgen/files/vegeta/perflab_targets.py
and roles/loadgen/files/wrk2/<name>.lua) is retired; its requests, for every case below, are
golden fixtures in tests/unit/fixtures/builtin_sequences/ (README.md there: how they were made, and
why they cannot be made again). The compiled scenario files must send them, line for line:
vegeta's targets (perflab.scenario's compile, then scenario_play) and the generic wrk2 player
(perflab/wrk2_scenario.lua under luajit, tests/unit/scenario_lua.py), with the old knobs given as
parameters (`--set`) and weights (`--weight`). And both tools send the same requests."""

from __future__ import annotations

import base64
import hashlib
import json
import subprocess
import sys
from collections import Counter
from itertools import islice
from pathlib import Path
from typing import Any

import pytest

from perflab import scenario as sc

from .scenario_lua import LUAJIT, NO_LUAJIT, as_line, run_threads

REPO_ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = REPO_ROOT / "scenarios"
FIXTURES = REPO_ROOT / "tests" / "unit" / "fixtures" / "builtin_sequences"
# The scenarios the lab sent before they were files (TechEmpower's database tests, db, queries, updates and
# fortunes, came as files: they have no old sequences to keep).
BUILTINS = ["books-orders", "greeting", "hello-latency", "plaintext-json", "zipcodes"]
# (threads per host, host, hosts, KEY_PHASE): every built-in scenario's fixtures are at each.
PLACEMENTS = [(2, 0, 1, 0), (3, 0, 2, 1), (3, 1, 2, 1), (4, 1, 2, 0)]
# The fixtures' digests are per this many lines, and of all of them.
CHUNK = 1000

Case = dict[str, Any]


def fixture(tool: str) -> dict[str, Any]:
    document: dict[str, Any] = json.loads((FIXTURES / f"{tool}.json").read_text(encoding="utf-8"))
    assert document["format"] == "perflab-builtin-sequences/1" and document["tool"] == tool
    return document


VEGETA = fixture("vegeta")
WRK2 = fixture("wrk2")
BASE_URL: str = VEGETA["base_url"]


def cases(document: dict[str, Any], only: str | None = None) -> list[Any]:
    """The fixture's cases as pytest parameters, named by their ids; `only`: those whose id ends so."""
    return [pytest.param(case, id=case["id"]) for case in document["cases"]
            if only is None or case["id"].endswith(only)]


def compiled(case: Case) -> sc.Compiled:
    name = case["scenario"]
    return sc.compile_scenario(sc.load(SCENARIOS / f"{name}.yml"), SCENARIOS, case["parameters"], case["weights"])


def placement(case: Case) -> sc.Placement:
    where = case["placement"]
    return sc.Placement(where["threads"], where["host_index"], where["hosts"], where["key_phase"])


def digest(lines: list[str]) -> str:
    """sha256 of the lines, each ended by a newline (UTF-8), as the fixtures hold it."""
    return hashlib.sha256("".join(line + "\n" for line in lines).encode("utf-8")).hexdigest()


def assert_is_the_fixture(case: Case, lines: list[str]) -> None:
    """LINES are the case's, told where they first part: the lines in clear, then per CHUNK lines."""
    assert len(lines) == case["lines"], case["id"]
    assert lines[:len(case["first"])] == case["first"], f"{case['id']}: the first lines are not the old code's"
    for number, expected in enumerate(case["sha256_per_1000"]):
        chunk = lines[number * CHUNK:(number + 1) * CHUNK]
        assert digest(chunk) == expected, (f"{case['id']}: lines {number * CHUNK}..{number * CHUNK + len(chunk) - 1} "
                                           "are not the old code's")
    assert digest(lines) == case["sha256"], case["id"]


def test_every_builtin_scenario_has_its_scenario_file_and_its_fixtures() -> None:
    assert set(BUILTINS) <= {path.stem for path in SCENARIOS.glob("*.yml")}
    for name in BUILTINS:
        assert sc.load(SCENARIOS / f"{name}.yml").name == name
    for document in (VEGETA, WRK2):
        covered = {(case["scenario"], tuple(case["placement"].values())) for case in document["cases"]
                   if not case["old_knobs"]}
        assert covered == {(name, where) for name in BUILTINS for where in PLACEMENTS}, document["tool"]
        # The old knobs (WRITE_RATIO, the books-orders weights, GREETING_NAME, LATENCY_MS), as
        # parameters and weights: one case each.
        knobs = [case for case in document["cases"] if case["old_knobs"]]
        assert len(knobs) == 5 and {case["scenario"] for case in knobs} == set(BUILTINS) - {"plaintext-json"}
        for case in document["cases"]:
            assert len(case["sha256_per_1000"]) == -(-case["lines"] // CHUNK) and len(case["first"]) == 20


@pytest.mark.parametrize("case", cases(VEGETA))
def test_the_vegeta_targets_are_the_old_targets(case: Case) -> None:
    requests = list(islice(sc.sent(compiled(case), placement(case)), case["lines"]))
    assert_is_the_fixture(case, [sc.vegeta_line(request, BASE_URL).removesuffix("\n") for request in requests])
    # What perflab_targets.py counted on stderr, per operation: the request names count the same.
    assert Counter(request[0] for request in requests) == case["counts"]


def decoded(target_line: str) -> str:
    """A vegeta target as the Lua harness prints a request (tests/unit/scenario_lua.py)."""
    target = json.loads(target_line)
    assert target["url"].startswith(BASE_URL), target_line
    return as_line(target["method"], target["url"].removeprefix(BASE_URL),
                   {name: values[0] for name, values in target.get("header", {}).items()},
                   base64.b64decode(target.get("body", "")).decode())


@pytest.mark.parametrize("case", cases(WRK2))
def test_vegetas_targets_are_the_requests_the_old_wrk2_scripts_sent(case: Case) -> None:
    """Both tools send the same requests: vegeta's targets, read back, are wrk2's fixture."""
    targets = [sc.vegeta_line(request, BASE_URL) for request in islice(sc.sent(compiled(case), placement(case)),
                                                                       case["lines"])]
    assert_is_the_fixture(case, [decoded(line) for line in targets])


@pytest.mark.skipif(LUAJIT is None, reason=NO_LUAJIT)
@pytest.mark.parametrize("case", cases(WRK2))
def test_the_generic_wrk2_player_sends_what_the_old_scripts_sent(tmp_path: Path, case: Case) -> None:
    where = case["placement"]
    data = tmp_path / f"{case['scenario']}.lua"
    data.write_text(sc.compile_lua(compiled(case)))
    generic = run_threads(tmp_path / "generic", sc.LUA_PLAYER, where["threads"], where["host_index"], where["hosts"],
                          case["lines"] // where["threads"],
                          {"KEY_PHASE": str(where["key_phase"]), "PERFLAB_SCENARIO_DATA": str(data)})
    assert_is_the_fixture(case, generic)
    # And the Python side of the compiler, which vegeta's targets come from, agrees with it.
    assert [as_line(m, p, h, b) for _, m, p, h, b in islice(sc.sent(compiled(case), placement(case)),
                                                              len(generic))] == generic


def counts(stderr: str) -> dict[str, int]:
    """The one stderr line, `perflab vegeta requests by operation: read=.. write=..`, as counts."""
    prefix = "perflab vegeta requests by operation: "
    assert stderr.startswith(prefix) and stderr.count("\n") == 1, stderr
    return {name: int(total) for name, total in (part.split("=") for part in stderr.removeprefix(prefix).split())}


@pytest.mark.parametrize("case", cases(VEGETA, only="-t3-host1of2-phase1"))
def test_compiled_and_played_on_a_loadgen_host_the_targets_are_the_old_ones(tmp_path: Path, case: Case) -> None:
    """perflab scenario compile on the controller (the old knobs as --set and --weight), then
    scenario_play.py with the standard library alone (-I -S: no perflab, no site packages), as a
    loadgen host would run it."""
    document = tmp_path / f"{case['scenario']}.json"
    options = [item for name, value in case["parameters"].items() for item in ("--set", f"{name}={value}")]
    options += [item for name, weight in case["weights"].items() for item in ("--weight", f"{name}={weight!r}")]
    done = subprocess.run([sys.executable, "-m", "perflab", "scenario", "compile",
                           str(SCENARIOS / f"{case['scenario']}.yml"), *options, "--vegeta", str(document)],
                          capture_output=True, text=True, timeout=120, cwd=REPO_ROOT)
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    where = case["placement"]
    played = subprocess.run(
        [sys.executable, "-I", "-S", str(REPO_ROOT / "perflab" / "scenario_play.py"), "--compiled", str(document),
         "--base-url", BASE_URL, "--count", str(case["lines"]), "--threads", str(where["threads"]),
         "--host-index", str(where["host_index"]), "--hosts", str(where["hosts"]), "--key-phase",
         str(where["key_phase"])], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert played.returncode == 0, played.stderr
    assert played.stdout.endswith("\n")
    assert_is_the_fixture(case, played.stdout[:-1].split("\n"))
    assert counts(played.stderr) == case["counts"]


# The routes the lab reads the app's per-route latency by: what the old scenario files listed as
# their `endpoints`, now what the requests' methods and paths say (Scenario.endpoints).
ENDPOINTS = {
    "books-orders": ["GET /books", "POST /books", "POST /orders"],
    "greeting": ["GET /greeting/{name}"],
    "hello-latency": ["GET /hello/{latency}"],
    "plaintext-json": ["GET /plaintext", "GET /json"],
    "zipcodes": ["GET /zipcodes/{zip}", "POST /zipcodes"],
}


@pytest.mark.parametrize("name", BUILTINS)
def test_the_routes_are_the_old_scenarios_endpoints(name: str) -> None:
    assert sorted(sc.load(SCENARIOS / f"{name}.yml").endpoints()) == sorted(ENDPOINTS[name])
