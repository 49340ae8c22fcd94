"""The five built-in scenarios as scenario files (workloads/*.yml) keep today's sequences: the
compiled vegeta targets are, line for line, what roles/loadgen/files/vegeta/perflab_targets.py
writes, and the generic wrk2 player sends, request for request, what each scenario's own Lua
script (roles/loadgen/files/wrk2/<name>.lua) sends, with its knobs at the values the file holds."""

from __future__ import annotations

import os
import subprocess
import sys
from itertools import islice
from pathlib import Path

import pytest
import yaml  # type: ignore[import-untyped]

from perflab import scenario as sc

from .scenario_lua import KNOBS, LUAJIT, NO_LUAJIT, WRK2_DIR, as_line, run_threads

REPO_ROOT = Path(__file__).resolve().parents[2]
WORKLOADS = REPO_ROOT / "workloads"
TARGETS_SCRIPT = REPO_ROOT / "roles" / "loadgen" / "files" / "vegeta" / "perflab_targets.py"
BUILTINS = sorted(path.stem for path in (REPO_ROOT / "scenarios").glob("*.yml"))
BASE_URL = "http://10.0.0.3:8080"
# (threads per host, host, hosts, KEY_PHASE)
PLACEMENTS = [(2, 0, 1, 0), (3, 0, 2, 1), (3, 1, 2, 1), (4, 1, 2, 0)]


# Today's knobs (the scripts' environment) and what the scenario file takes instead: parameters
# (`--set`) and weights (`--weight`); WRITE_RATIO w is the weights w and 1 - w.
KNOB_CASES = [
    ("zipcodes", {"WRITE_RATIO": "0.37"}, {}, {"write": 0.37, "read": 1 - 0.37}),
    ("zipcodes", {"WRITE_RATIO": "0.9"}, {}, {"write": 0.9, "read": 1 - 0.9}),
    ("books-orders", {"GET_BOOKS_WEIGHT": "3", "POST_BOOKS_WEIGHT": "0.5", "POST_ORDERS_WEIGHT": "1.25"}, {},
     {"get_books": 3, "post_books": 0.5, "post_orders": 1.25}),
    ("greeting", {"GREETING_NAME": "alice"}, {"name": "alice"}, {}),
    ("hello-latency", {"LATENCY_MS": "250"}, {"latency": "250"}, {}),
]
KNOB_IDS = [f"{name}-{'-'.join(env.values())}" for name, env, _, _ in KNOB_CASES]


def compiled(name: str, parameters: dict[str, str] | None = None, weights: dict[str, float] | None = None) -> sc.Compiled:
    return sc.compile_scenario(sc.load(WORKLOADS / f"{name}.yml"), WORKLOADS, parameters, weights)


def targets_today(name: str, count: int, threads: int, host: int, hosts: int, phase: int,
                  env: dict[str, str] | None = None) -> list[str]:
    environment = {key: value for key, value in os.environ.items() if key not in KNOBS} | (env or {})
    today = subprocess.run(
        [sys.executable, str(TARGETS_SCRIPT), "--script", name, "--base-url", BASE_URL, "--count", str(count),
         "--threads", str(threads), "--host-index", str(host), "--hosts", str(hosts), "--key-phase", str(phase)],
        env=environment, capture_output=True, text=True, timeout=120)
    assert today.returncode == 0, today.stderr
    return today.stdout.splitlines(keepends=True)


def test_every_builtin_scenario_has_its_scenario_file() -> None:
    assert BUILTINS == sorted(path.stem for path in WORKLOADS.glob("*.yml"))
    for name in BUILTINS:
        assert sc.load(WORKLOADS / f"{name}.yml").name == name


@pytest.mark.parametrize("name", BUILTINS)
@pytest.mark.parametrize(("threads", "host", "hosts", "phase"), PLACEMENTS)
def test_the_vegeta_targets_are_perflab_targets_lines(name: str, threads: int, host: int, hosts: int,
                                                      phase: int) -> None:
    count = 6000
    placement = sc.Placement(threads, host, hosts, phase)
    lines = [sc.vegeta_line(request, BASE_URL) for request in islice(sc.sent(compiled(name), placement), count)]
    assert lines == targets_today(name, count, threads, host, hosts, phase)


@pytest.mark.parametrize(("name", "env", "parameters", "weights"), KNOB_CASES, ids=KNOB_IDS)
def test_todays_knobs_are_parameters_and_weights(name: str, env: dict[str, str], parameters: dict[str, str],
                                                 weights: dict[str, float]) -> None:
    placement = sc.Placement(3, 1, 2, 1)
    lines = [sc.vegeta_line(request, BASE_URL)
             for request in islice(sc.sent(compiled(name, parameters, weights), placement), 6000)]
    assert lines == targets_today(name, 6000, 3, 1, 2, 1, env)


@pytest.mark.skipif(LUAJIT is None, reason=NO_LUAJIT)
@pytest.mark.parametrize("name", BUILTINS)
@pytest.mark.parametrize(("threads", "host", "hosts", "phase"), PLACEMENTS[1:3])
def test_the_generic_wrk2_player_sends_what_the_scenarios_own_script_sends(
        tmp_path: Path, name: str, threads: int, host: int, hosts: int, phase: int) -> None:
    rounds = 2000
    env = {"KEY_PHASE": str(phase)}
    today = run_threads(tmp_path / "today", WRK2_DIR / f"{name}.lua", threads, host, hosts, rounds, env)
    data = tmp_path / f"{name}.lua"
    data.write_text(sc.compile_lua(compiled(name)))
    generic = run_threads(tmp_path / "generic", sc.LUA_PLAYER, threads, host, hosts, rounds,
                          env | {"PERFLAB_SCENARIO_DATA": str(data)})
    assert generic == today
    # And the Python side of the compiler, which vegeta's targets come from, agrees with both.
    placement = sc.Placement(threads, host, hosts, phase)
    assert [as_line(m, p, h, b) for _, m, p, h, b in islice(sc.sent(compiled(name), placement), len(today))] == today


@pytest.mark.skipif(LUAJIT is None, reason=NO_LUAJIT)
@pytest.mark.parametrize(("name", "env", "parameters", "weights"), KNOB_CASES, ids=KNOB_IDS)
def test_the_generic_wrk2_player_with_todays_knobs_as_parameters_and_weights(
        tmp_path: Path, name: str, env: dict[str, str], parameters: dict[str, str], weights: dict[str, float]) -> None:
    today = run_threads(tmp_path / "today", WRK2_DIR / f"{name}.lua", 2, 1, 2, 2000, env | {"KEY_PHASE": "1"})
    data = tmp_path / f"{name}.lua"
    data.write_text(sc.compile_lua(compiled(name, parameters, weights)))
    generic = run_threads(tmp_path / "generic", sc.LUA_PLAYER, 2, 1, 2, 2000,
                          {"KEY_PHASE": "1", "PERFLAB_SCENARIO_DATA": str(data)})
    assert generic == today


@pytest.mark.parametrize("name", BUILTINS)
def test_compiled_and_played_on_a_loadgen_host_the_targets_are_todays(tmp_path: Path, name: str) -> None:
    """perflab scenario compile on the controller, then scenario_play.py with the standard library
    alone (-I -S: no perflab, no site packages), as a loadgen host would run it."""
    document = tmp_path / f"{name}.json"
    done = subprocess.run([sys.executable, "-m", "perflab", "scenario", "compile", str(WORKLOADS / f"{name}.yml"),
                           "--vegeta", str(document)], capture_output=True, text=True, timeout=120, cwd=REPO_ROOT)
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    played = subprocess.run(
        [sys.executable, "-I", "-S", str(REPO_ROOT / "perflab" / "scenario_play.py"), "--compiled", str(document),
         "--base-url", BASE_URL, "--count", "20000", "--threads", "3", "--host-index", "1", "--hosts", "2",
         "--key-phase", "1"], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert played.returncode == 0, played.stderr
    environment = {key: value for key, value in os.environ.items() if key not in KNOBS}
    today = subprocess.run(
        [sys.executable, str(TARGETS_SCRIPT), "--script", name, "--base-url", BASE_URL, "--count", "20000",
         "--threads", "3", "--host-index", "1", "--hosts", "2", "--key-phase", "1"],
        env=environment, capture_output=True, text=True, timeout=120)
    assert played.stdout == today.stdout
    assert counts(played.stderr) == counts(today.stderr)


def counts(stderr: str) -> dict[str, int]:
    """The one stderr line, `perflab vegeta requests by operation: read=.. write=..`, as counts."""
    prefix = "perflab vegeta requests by operation: "
    assert stderr.startswith(prefix) and stderr.count("\n") == 1, stderr
    return {name: int(total) for name, total in (part.split("=") for part in stderr.removeprefix(prefix).split())}


@pytest.mark.parametrize("name", BUILTINS)
def test_the_routes_are_the_scenarios_endpoints(name: str) -> None:
    """What the lab reads the app's per-route latency by (scenarios/*.yml's endpoints)."""
    today = yaml.safe_load((REPO_ROOT / "scenarios" / f"{name}.yml").read_text())["endpoints"]
    assert sorted(sc.load(WORKLOADS / f"{name}.yml").endpoints()) == sorted(today)
