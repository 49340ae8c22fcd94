"""roles/loadgen/files/vegeta/perflab_targets.py, run as the loadgen host runs it (a subprocess).

The expected requests come from the Lua formulas, restated here (never imported from the script),
and, where luajit is installed, from the real wrk2 Lua scripts run through a harness that stubs
wrk.format. Then the properties a run relies on: a constant mix, fresh keys that never repeat
across phases and hosts, bodies the contract accepts, one-line refusals, and vegeta itself
sending exactly these requests.
"""

from __future__ import annotations

import base64
import http.server
import importlib
import importlib.util
import json
import math
import os
import re
import shutil
import subprocess
import sys
import threading
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import Any
from urllib.parse import urlsplit

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
SCRIPT = REPO_ROOT / "roles" / "loadgen" / "files" / "vegeta" / "perflab_targets.py"
WRK2_DIR = REPO_ROOT / "roles" / "loadgen" / "files" / "wrk2"
VEGETA = Path(os.environ.get("PERFLAB_VEGETA", REPO_ROOT / "build" / "vegeta"))
LUAJIT = shutil.which("luajit")
BASE_URL = "http://10.0.0.3:8080"
KNOBS = ("WRITE_RATIO", "LATENCY_MS", "GREETING_NAME", "GET_BOOKS_WEIGHT", "POST_BOOKS_WEIGHT",
         "POST_ORDERS_WEIGHT", "KEY_PHASE", "WRK_THREADS")
COUNTS_LINE = re.compile(r"perflab vegeta requests by operation: ((?:\w+=\d+ ?)+)")

# One request as both sides can state it: method, path, Content-Type ("" when none), body.
Request = tuple[str, str, str, str]


def run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """The script with exactly `env` as its knobs: none leak in from the test's environment."""
    clean = {name: value for name, value in os.environ.items() if name not in KNOBS}
    return subprocess.run([sys.executable, str(SCRIPT), *args], env=clean | (env or {}),
                          capture_output=True, text=True, timeout=120)


def generate(*args: str, env: dict[str, str] | None = None) -> tuple[list[Request], dict[str, int]]:
    """The targets as requests, and the counts of the stderr line."""
    done = run("--base-url", BASE_URL, *args, env=env)
    assert done.returncode == 0, done.stderr
    match = COUNTS_LINE.fullmatch(done.stderr.strip())
    assert match, done.stderr
    counts = {name: int(total) for name, total in (part.split("=") for part in match.group(1).split())}
    return [as_request(json.loads(line)) for line in done.stdout.splitlines()], counts


def target_lines(*args: str) -> list[str]:
    """The raw target lines, for the tests that only count: parsing 60,000 lines costs seconds."""
    done = run("--base-url", BASE_URL, *args)
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def as_request(target: dict[str, Any]) -> Request:
    assert set(target) <= {"method", "url", "body", "header"}, target
    url = urlsplit(target["url"])
    assert f"{url.scheme}://{url.netloc}" == BASE_URL, target
    content_type = target.get("header", {}).get("Content-Type", [""])
    assert len(content_type) == 1, target
    body = base64.b64decode(target["body"], validate=True).decode() if "body" in target else ""
    return target["method"], url.path, content_type[0], body


# The Lua formulas (perflab.lua, zipcodes.lua, books-orders.lua), restated.
STATES = ["AL", "CA", "FL", "GA", "IL", "MA", "NY", "OH", "TX", "WA"]


def lua_draw(n: int, thread_id: int) -> float:
    x = (n + 1) * 0.6180339887498949 + thread_id * 0.7548776662466927
    return x - math.floor(x)


def lua_zipcodes(threads: int, rounds: int, write_ratio: float, key_phase: int, first_id: int = 0,
                 slots: int | None = None) -> list[Request]:
    slots = slots or threads
    writes = Counter[int]()
    expected = []
    for n in range(rounds):
        for thread_id in range(first_id, first_id + threads):
            if lua_draw(n, thread_id) < write_ratio:
                digits = f"{key_phase * 10**8 + writes[thread_id] * slots + thread_id:09d}"
                writes[thread_id] += 1
                body = (f'{{"zip":"{digits[:5]}-{digits[5:]}","city":"City-{n % 2000:04d}",'
                        f'"county":"County-{n % 300:03d}","state":"{STATES[n % 10]}",'
                        '"timezone":"America/New_York","type":"STANDARD"}')
                expected.append(("POST", "/zipcodes", "application/json", body))
            else:
                expected.append(("GET", f"/zipcodes/{10000 + (n * 7919 + thread_id * 104729) % 40000}", "", ""))
    return expected


def lua_books_orders(threads: int, rounds: int, weights: tuple[float, float, float]) -> list[Request]:
    expected = []
    for n in range(rounds):
        for thread_id in range(threads):
            u = lua_draw(n, thread_id) * (weights[0] + weights[1] + weights[2])
            if u < weights[0]:
                expected.append(("GET", "/books", "", ""))
            elif u < weights[0] + weights[1]:
                body = f'{{"title":"Load {thread_id}-{n}","author":"Author {thread_id % 37:02d}"}}'
                expected.append(("POST", "/books", "application/json", body))
            else:
                body = f'{{"bookId":{1 + (n * 31 + thread_id) % 100},"userId":{1 + (n * 7 + thread_id * 13) % 1000}}}'
                expected.append(("POST", "/orders", "application/json", body))
    return expected


def lua_plaintext_json(threads: int, rounds: int, first_id: int = 0) -> list[Request]:
    """plaintext-json.lua: thread id's n-th request is /plaintext when n + id is even, else /json."""
    return [("GET", "/plaintext" if (n + thread_id) % 2 == 0 else "/json", "", "")
            for n in range(rounds) for thread_id in range(first_id, first_id + threads)]


def test_zipcodes_first_requests_are_the_lua_threads_interleaved() -> None:
    requests, counts = generate("--script", "zipcodes", "--count", "30", "--threads", "3", "--key-phase", "1",
                                env={"WRITE_RATIO": "0.5"})
    assert requests == lua_zipcodes(threads=3, rounds=10, write_ratio=0.5, key_phase=1)
    # Anchors stated by hand: thread 0's draw 0.618 reads, thread 1's 0.373 writes its first key.
    assert requests[0] == ("GET", "/zipcodes/10000", "", "")
    assert json.loads(requests[1][3])["zip"] == "10000-0001"
    assert counts == {"read": sum(r[0] == "GET" for r in requests), "write": sum(r[0] == "POST" for r in requests)}


def test_books_orders_first_requests_are_the_lua_threads_interleaved() -> None:
    requests, counts = generate("--script", "books-orders", "--count", "40", "--threads", "4",
                                env={"GET_BOOKS_WEIGHT": "3", "POST_BOOKS_WEIGHT": "0.5", "POST_ORDERS_WEIGHT": "1.25"})
    assert requests == lua_books_orders(threads=4, rounds=10, weights=(3, 0.5, 1.25))
    assert counts == {"get_books": sum(r[1] == "/books" and r[0] == "GET" for r in requests),
                      "post_books": sum(r[1] == "/books" and r[0] == "POST" for r in requests),
                      "post_orders": sum(r[1] == "/orders" for r in requests)}


def test_fixed_scripts_send_their_one_request() -> None:
    greeting, counts = generate("--script", "greeting", "--count", "3", env={"GREETING_NAME": "alice"})
    assert greeting == [("GET", "/greeting/alice", "", "")] * 3 and counts == {"greeting": 3}
    hello, counts = generate("--script", "hello-latency", "--count", "2", "--env", "LATENCY_MS=250")
    assert hello == [("GET", "/hello/250", "", "")] * 2 and counts == {"hello": 2}
    defaults, _ = generate("--script", "greeting", "--count", "1")
    assert defaults == [("GET", "/greeting/perflab", "", "")]


def test_plaintext_json_alternates_and_the_threads_are_out_of_step() -> None:
    requests, counts = generate("--script", "plaintext-json", "--count", "12", "--threads", "3")
    assert requests == lua_plaintext_json(threads=3, rounds=4)
    # Stated by hand: round 0 is threads 0, 1, 2 (plaintext, json, plaintext), round 1 the opposite.
    assert [path for _, path, _, _ in requests[:6]] == ["/plaintext", "/json", "/plaintext", "/json", "/plaintext", "/json"]
    assert counts == {"plaintext": 6, "json": 6}
    host_1_of_2, _ = generate("--script", "plaintext-json", "--count", "8", "--threads", "2", "--host-index", "1",
                              "--hosts", "2")
    assert host_1_of_2 == lua_plaintext_json(threads=2, rounds=4, first_id=2)
    one_thread, counts = generate("--script", "plaintext-json", "--count", "5", env={"WRK_THREADS": "1"})
    assert [path for _, path, _, _ in one_thread] == ["/plaintext", "/json", "/plaintext", "/json", "/plaintext"]
    assert counts == {"plaintext": 3, "json": 2}


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_the_plaintext_json_mix_of_every_stretch_is_half_and_half(threads: int) -> None:
    lines = target_lines("--script", "plaintext-json", "--count", "6000", "--threads", str(threads))
    for start in range(0, 6000, 600):
        part = lines[start:start + 600]
        assert sum(line.endswith('/plaintext"}') for line in part) == sum(line.endswith('/json"}') for line in part) == 300


def test_knobs_come_from_the_environment_then_env_options_then_options() -> None:
    from_environment, _ = generate("--script", "zipcodes", "--count", "12", env={"WRK_THREADS": "3", "WRITE_RATIO": "0.2",
                                                                                 "KEY_PHASE": "2"})
    assert from_environment == lua_zipcodes(threads=3, rounds=4, write_ratio=0.2, key_phase=2)
    overridden, _ = generate("--script", "zipcodes", "--count", "12", "--threads", "2", "--key-phase", "3",
                             "--env", "WRITE_RATIO=0.9", "--env", "KEY_PHASE=5",
                             env={"WRK_THREADS": "3", "WRITE_RATIO": "0.2", "KEY_PHASE": "2"})
    assert overridden == lua_zipcodes(threads=2, rounds=6, write_ratio=0.9, key_phase=3)


@pytest.mark.parametrize("write_ratio", [0.1, 0.5, 0.73])
def test_the_write_share_of_every_third_stays_at_write_ratio(write_ratio: float) -> None:
    lines = target_lines("--script", "zipcodes", "--count", "60000", "--threads", "2", "--env", f"WRITE_RATIO={write_ratio}")
    assert len(lines) == 60000
    for third in range(3):
        part = lines[third * 20000:(third + 1) * 20000]
        assert sum(line.startswith('{"method":"POST"') for line in part) / 20000 == pytest.approx(write_ratio, abs=0.002)


def test_the_books_orders_mix_of_every_third_stays_at_the_weights() -> None:
    lines = target_lines("--script", "books-orders", "--count", "60000", "--threads", "2",
                         "--env", "GET_BOOKS_WEIGHT=2", "--env", "POST_BOOKS_WEIGHT=1", "--env", "POST_ORDERS_WEIGHT=1")
    for third in range(3):
        part = Counter(line.split('"url":"' + BASE_URL)[1].split('"')[0] for line in lines[third * 20000:(third + 1) * 20000])
        assert part["/books"] / 20000 == pytest.approx(0.75, abs=0.002), third
        assert part["/orders"] / 20000 == pytest.approx(0.25, abs=0.002), third


def fresh_zips(requests: list[Request]) -> list[str]:
    return [json.loads(body)["zip"] for method, _, _, body in requests if method == "POST"]


def test_fresh_zips_never_repeat_across_phases_and_hosts() -> None:
    zips: list[str] = []
    for key_phase in ("0", "1"):
        for host in range(3):
            requests, counts = generate("--script", "zipcodes", "--count", "10000", "--threads", "2",
                                        "--key-phase", key_phase, "--host-index", str(host), "--hosts", "3")
            phase_zips = fresh_zips(requests)
            assert len(phase_zips) == counts["write"] > 4500
            assert all(z.startswith(key_phase) for z in phase_zips), "a key left its KEY_PHASE's span"
            zips += phase_zips
    assert len(set(zips)) == len(zips)


def test_hosts_together_send_what_one_run_with_all_their_threads_sends() -> None:
    """Host K of H plays threads K*T.. of an H*T-thread run, keys spaced H*T apart."""
    host_1_of_2, _ = generate("--script", "zipcodes", "--count", "300", "--threads", "3", "--host-index", "1",
                              "--hosts", "2")
    assert host_1_of_2 == lua_zipcodes(threads=3, rounds=100, write_ratio=0.5, key_phase=0, first_id=3, slots=6)
    single, _ = generate("--script", "zipcodes", "--count", "300", "--threads", "3")
    explicit, _ = generate("--script", "zipcodes", "--count", "300", "--threads", "3", "--host-index", "0",
                           "--hosts", "1")
    assert explicit == single


def load_openapi() -> Any:
    """tests/contract/openapi_check.py owns the contract's schemas; load it from its file."""
    spec = importlib.util.spec_from_file_location("openapi_check", REPO_ROOT / "tests" / "contract" / "openapi_check.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.OpenApi()


def test_every_request_is_one_the_contract_accepts() -> None:
    openapi = load_openapi()
    jsonschema: ModuleType = importlib.import_module("jsonschema")  # no type stubs in the venv
    validators = {route: jsonschema.Draft7Validator(openapi.schema(name))
                  for route, name in {"/zipcodes": "ZipCode", "/books": "NewBook", "/orders": "NewOrder"}.items()}
    zip_path = re.compile(openapi.schema("Zip")["pattern"].replace("^", "^/zipcodes/"))
    hello = openapi.operation("GET", "/hello/{latency}")["parameters"][0]["schema"]
    requests = (generate("--script", "zipcodes", "--count", "4000", "--threads", "4", "--key-phase", "9")[0]
                + generate("--script", "books-orders", "--count", "4000", "--threads", "2")[0]
                + generate("--script", "hello-latency", "--count", "1", env={"LATENCY_MS": str(hello["maximum"])})[0]
                + generate("--script", "plaintext-json", "--count", "4", "--threads", "2")[0])
    techempower = {path for path, item in openapi.spec["paths"].items() if "techempower" in item.get("get", {}).get("tags", [])}
    assert techempower == {"/plaintext", "/json"}
    for method, path, content_type, body in requests:
        if method == "POST":
            assert content_type == "application/json"
            validators[path].validate(json.loads(body))
        else:
            assert (content_type, body) == ("", "")
            assert path in {"/books", f"/hello/{hello['maximum']}"} | techempower or zip_path.fullmatch(path), path


@pytest.mark.parametrize(
    ("args", "env", "message"),
    [
        ([], {}, "the following arguments are required: --script, --base-url, --count"),
        (["--script", "k6", "--base-url", BASE_URL, "--count", "1"], {}, "invalid choice: 'k6'"),
        (["--script", "zipcodes", "--base-url", BASE_URL, "--count", "0", "--threads", "2"], {}, "--count must be >= 1"),
        (["--script", "zipcodes", "--base-url", BASE_URL, "--count", "x"], {}, "--count: invalid int value"),
        (["--script", "zipcodes", "--base-url", BASE_URL, "--count", "1"], {}, "zipcodes needs --threads"),
        (["--script", "zipcodes", "--base-url", BASE_URL, "--count", "1", "--threads", "0"], {}, "--threads must be >= 1"),
        (["--script", "plaintext-json", "--base-url", BASE_URL, "--count", "1"], {}, "plaintext-json needs --threads"),
        (["--script", "zipcodes", "--base-url", BASE_URL, "--count", "1"], {"WRK_THREADS": "two"}, "WRK_THREADS must be"),
        (["--script", "greeting", "--base-url", "ftp://h", "--count", "1"], {}, "--base-url must be http(s)"),
        (["--script", "greeting", "--base-url", BASE_URL + "/app", "--count", "1"], {}, "with no path"),
        (["--script", "greeting", "--base-url", "http://h:99999", "--count", "1"], {}, "bad port"),
        (["--script", "zipcodes", "--base-url", BASE_URL, "--count", "1", "--threads", "2", "--key-phase", "10"], {},
         "--key-phase must be 0..9"),
        (["--script", "zipcodes", "--base-url", BASE_URL, "--count", "1", "--threads", "2", "--host-index", "2",
          "--hosts", "2"], {}, "--host-index must be in 0..--hosts-1"),
        (["--script", "zipcodes", "--base-url", BASE_URL, "--count", "1", "--threads", "2"], {"WRITE_RATIO": "1.5"},
         "WRITE_RATIO must be in 0..1"),
        (["--script", "zipcodes", "--base-url", BASE_URL, "--count", "1", "--threads", "2"], {"WRITE_RATIO": "nan"},
         "WRITE_RATIO must be a decimal number"),
        (["--script", "zipcodes", "--base-url", BASE_URL, "--count", "1", "--threads", "2", "--env", "RATE=5"], {},
         "--env takes NAME=VALUE"),
        (["--script", "zipcodes", "--base-url", BASE_URL, "--count", "1", "--threads", "2", "--env", "KEY_PHASE"], {},
         "--env takes NAME=VALUE"),
        (["--script", "greeting", "--base-url", BASE_URL, "--count", "1"], {"GREETING_NAME": "a b"}, "GREETING_NAME must"),
        (["--script", "greeting", "--base-url", BASE_URL, "--count", "1"], {"GREETING_NAME": "x" * 65}, "GREETING_NAME must"),
        (["--script", "hello-latency", "--base-url", BASE_URL, "--count", "1"], {"LATENCY_MS": "10001"},
         "LATENCY_MS must be a whole number 0..10000"),
        (["--script", "books-orders", "--base-url", BASE_URL, "--count", "1", "--threads", "1"],
         {"GET_BOOKS_WEIGHT": "0", "POST_BOOKS_WEIGHT": "0", "POST_ORDERS_WEIGHT": "0"}, "add up to more than 0"),
        (["--script", "zipcodes", "--base-url", BASE_URL, "--count", "50000001", "--threads", "2", "--hosts", "2"], {},
         "fresh keys of one KEY_PHASE"),
        (["--script", "greeting", "--base-url", BASE_URL, "--count", "1", "--output", "/nonexistent/dir/t.jsonl"], {},
         "cannot write --output"),
        (["--script", "greeting", "--base-url", BASE_URL, "--count", "1", "--scrip", "x"], {}, "unrecognized arguments"),
    ],
)
def test_bad_input_is_refused_in_one_line_with_status_2(args: list[str], env: dict[str, str], message: str) -> None:
    done = run(*args, env=env)
    assert done.returncode == 2, done.stderr
    assert done.stdout == ""
    assert len(done.stderr.splitlines()) == 1 and done.stderr.startswith("perflab_targets: "), done.stderr
    assert message in done.stderr


def test_help_explains_the_usage() -> None:
    done = run("--help")
    assert done.returncode == 0
    assert done.stdout.startswith("usage: perflab_targets.py --script {zipcodes,books-orders,greeting,hello-latency,"
                                  "plaintext-json} "
                                  "--base-url URL --count N")
    assert "--host-index K --hosts H" in done.stdout


def test_a_reader_that_stops_early_ends_the_script_quietly() -> None:
    """`perflab_targets.py ... | vegeta attack -lazy -duration=..`: vegeta closes the pipe when done."""
    clean = {name: value for name, value in os.environ.items() if name not in KNOBS}
    with subprocess.Popen([sys.executable, str(SCRIPT), "--base-url", BASE_URL, "--script", "zipcodes",
                           "--count", "5000000", "--threads", "2"], env=clean, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True) as script:
        assert script.stdout and script.stderr
        assert json.loads(script.stdout.readline())["url"] == BASE_URL + "/zipcodes/10000"
        script.stdout.close()
        assert script.wait(timeout=60) == 0
        stderr = script.stderr.read()
    assert len(stderr.splitlines()) == 1 and stderr.endswith(" (the reader closed the pipe first)\n"), stderr
    assert COUNTS_LINE.match(stderr), stderr


def test_output_file_holds_what_stdout_would(tmp_path: Path) -> None:
    args = ("--base-url", BASE_URL, "--script", "zipcodes", "--count", "500", "--threads", "2")
    target_file = tmp_path / "targets.jsonl"
    done = run(*args, "--output", str(target_file))
    assert done.returncode == 0 and done.stdout == ""
    assert target_file.read_text() == run(*args).stdout


# The real wrk2 scripts: wrk.format stubbed, one luajit process per wrk2 thread (each wrk2 thread
# has its own Lua state); `id` set as perflab.setup's thread:set("id", ...) sets it, a global. As in
# wrk2 (wrk.lua, script.c), the Host header is set after the script is loaded, then init() runs,
# then request(): a request formatted before that would go out without the app's host and port.
LUA_HARNESS = r"""
local script, thread_id, rounds = arg[1], tonumber(arg[2]), tonumber(arg[3])
wrk = { method = "GET", path = "/", headers = {} }
function wrk.format(method, path, headers, body)
   assert(wrk.headers["Host"], "wrk.format before wrk.init: the request would have no Host header")
   local content_type = headers and headers["Content-Type"] or ""
   return table.concat({ method or wrk.method, path or wrk.path, content_type, body or wrk.body or "" }, "\t")
end
dofile(script)
id = thread_id
wrk.headers["Host"] = "app.example:8080"
if init then init({}) end
for _ = 1, rounds do
   io.write(request and request() or wrk.format(), "\n")
end
local counts = {}
for name, value in pairs(_G) do
   if type(name) == "string" and name:match("^count_") then table.insert(counts, name:sub(7) .. "=" .. value) end
end
table.sort(counts)
io.write("#", table.concat(counts, " "), "\n")
"""


@pytest.mark.skipif(LUAJIT is None, reason="luajit is not installed (apt-get install -y luajit): "
                                           "the real wrk2 Lua scripts cannot be run")
@pytest.mark.parametrize(
    ("script", "threads", "host", "hosts", "env"),
    [
        ("zipcodes", 2, 0, 1, {"WRITE_RATIO": "0.5", "KEY_PHASE": "1"}),
        ("zipcodes", 3, 1, 2, {"WRITE_RATIO": "0.37", "KEY_PHASE": "0"}),
        ("books-orders", 2, 0, 1, {}),
        ("books-orders", 4, 0, 1, {"GET_BOOKS_WEIGHT": "3", "POST_BOOKS_WEIGHT": "0.5", "POST_ORDERS_WEIGHT": "1.25"}),
        ("greeting", 2, 0, 1, {"GREETING_NAME": "alice"}),
        ("hello-latency", 2, 0, 1, {"LATENCY_MS": "250"}),
        ("plaintext-json", 2, 0, 1, {}),
        ("plaintext-json", 3, 1, 2, {}),
    ],
)
def test_the_sequence_is_the_real_lua_scripts(tmp_path: Path, script: str, threads: int, host: int, hosts: int,
                                              env: dict[str, str]) -> None:
    assert LUAJIT
    rounds = 3000
    harness = tmp_path / "harness.lua"
    harness.write_text(LUA_HARNESS)
    # The Lua side of host K of H: threads K*T.. of one run with H*T threads (perflab.setup gives
    # them those ids: tested below; the harness sets `id` itself).
    lua_env = {name: value for name, value in os.environ.items() if name not in KNOBS} | env
    lua_env |= {"WRK_THREADS": str(threads), "PERFLAB_HOST_INDEX": str(host), "PERFLAB_HOSTS": str(hosts)}
    per_thread: list[list[str]] = []
    lua_counts = Counter[str]()
    for thread_id in range(host * threads, (host + 1) * threads):
        lua = subprocess.run([LUAJIT, str(harness), str(WRK2_DIR / f"{script}.lua"), str(thread_id), str(rounds)],
                             env=lua_env, capture_output=True, text=True, timeout=60, check=True)
        *lines, counts_line = lua.stdout.splitlines()
        per_thread.append(lines)
        lua_counts.update({name: int(total) for name, total in
                           (part.split("=") for part in counts_line.lstrip("#").split())})
    lua_sequence = [per_thread[local][n] for n in range(rounds) for local in range(threads)]
    requests, counts = generate("--script", script, "--count", str(rounds * threads), "--threads", str(threads),
                                "--host-index", str(host), "--hosts", str(hosts), env=env)
    assert ["\t".join(request) for request in requests] == lua_sequence
    if lua_counts:  # the fixed scripts keep no counters
        assert counts == dict(lua_counts)


@pytest.mark.skipif(LUAJIT is None, reason="luajit is not installed (apt-get install -y luajit)")
def test_perflab_setup_numbers_the_threads_of_host_k_after_those_of_the_hosts_before(tmp_path: Path) -> None:
    assert LUAJIT
    harness = tmp_path / "setup.lua"
    harness.write_text(
        f'local perflab = dofile("{WRK2_DIR / "perflab.lua"}")\n'
        'local ids = {}\n'
        'for _ = 1, 3 do perflab.setup({set = function(_, _, value) table.insert(ids, value) end}) end\n'
        'io.write(table.concat(ids, " "))\n')
    env = dict(os.environ, WRK_THREADS="3", PERFLAB_HOST_INDEX="2", PERFLAB_HOSTS="4")
    done = subprocess.run([LUAJIT, str(harness)], env=env, capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout == "6 7 8"


@contextmanager
def recording_server() -> Iterator[tuple[str, list[Request]]]:
    """An HTTP server on 127.0.0.1 that answers 200 and records every request it gets."""
    seen: list[Request] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def answer(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0)).decode()
            seen.append((self.command, self.path, self.headers.get("Content-Type") or "", body))
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        do_GET = do_POST = answer  # noqa: N815 (the names http.server calls)

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", seen
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.skipif(not VEGETA.is_file(), reason=f"no vegeta at {VEGETA}: `make vegeta` builds it")
def test_vegeta_sends_exactly_these_requests(tmp_path: Path) -> None:
    targets = tmp_path / "targets.jsonl"
    with recording_server() as (url, seen):
        done = run("--script", "zipcodes", "--base-url", url, "--count", "200", "--threads", "2",
                   "--output", str(targets))
        assert done.returncode == 0, done.stderr
        subprocess.run([str(VEGETA), "attack", "-lazy", "-format=json", f"-targets={targets}", "-rate=200/1s",
                        "-duration=1s", f"-output={tmp_path / 'results.bin'}"], check=True, timeout=60)
    expected = lua_zipcodes(threads=2, rounds=100, write_ratio=0.5, key_phase=0)
    # vegeta's workers send concurrently: the same requests, not necessarily in the same order.
    assert sorted(seen) == sorted(expected)
