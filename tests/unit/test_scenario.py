"""perflab/scenario.py: scenario files refused line by line, each variable kind, the compiler's
two outputs (vegeta targets, the generic wrk2 player's data) agreeing, and `perflab scenario`."""

from __future__ import annotations

import base64
import http.server
import json
import os
import re
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from itertools import islice
from pathlib import Path
from typing import Any

import jsonschema  # type: ignore[import-untyped]
import pytest

from perflab import contract
from perflab import scenario as sc
from perflab import scenario_play
from .scenario_lua import LUAJIT, NO_LUAJIT, WRK2_DIR, as_line, run_threads

REPO_ROOT = Path(__file__).resolve().parents[2]

# A scenario of an app that is not the lab's: every variable kind, a form body, a list value that
# must be escaped in a path, a CSV beside it.
SHOP = """\
name: shop
rate: 100
duration: 60s
warmup: 10s
slo_p99_ms: 80
slo_reason: one indexed query a request
connections: 8
threads: 2
requests:
  - name: search
    weight: 3
    method: GET
    path: /products?q=${term}&page=${page}
    expect: {status: 200, media_type: text/html, body_pattern: "<h1>"}
  - name: item
    weight: 2
    method: GET
    path: /products/${sku}
    headers: {Accept: application/json}
    expect: {status: 200, media_type: application/json, json_field: product.sku}
    statements: {select: 1}
  - name: signup
    weight: 1
    method: POST
    path: /customers/new
    body: {form: {name: "Customer ${ref}", city: "${city}", page: "${page}"}}
    expect: {status: 302}
    statements: {select: 1, insert: 1}
  - name: order
    weight: 1.5
    method: POST
    path: /orders
    body: {json: '{"ref":"${ref}","sku":"${sku}","qty":${qty},"city":"${city}","shop":"${shop}"}'}
    expect: {status: 201}
variables:
  term: {pick: {values: [red shoe, "tea & cake", café/bar], step: 1, thread_step: 1}}
  page: {sequence: {start: 1, modulo: 5}}
  sku: {csv: {file: skus.csv, column: sku, step: 7, thread_step: 3}}
  ref: {key: {digits: 8, format: "R-####-####"}}
  qty: {uniform: {min: 1, max: 9}}
  city: {pick: {values: [Zürich, "Saint \\"Q\\""]}}
  shop: {parameter: {default: main}}
"""
SKUS = "sku,title\nA-1,Shoe\nB 2,Tea\nC/3,Cake\n"


def write_shop(directory: Path, text: str = SHOP, skus: str | None = SKUS) -> Path:
    if skus is not None:
        (directory / "skus.csv").write_text(skus)
    file = directory / "shop.yml"
    file.write_text(text)
    return file


def refusal(file: Path) -> list[str]:
    """The lines of the refusal, without the file's name."""
    with pytest.raises(sc.ScenarioError) as refused:
        sc.load(file)
    assert all(line.startswith(f"{file}: ") for line in refused.value.problems)
    return [line.removeprefix(f"{file}: ") for line in refused.value.problems]


def shop_sent(directory: Path, threads: int = 2, host: int = 0, hosts: int = 1, phase: int = 0,
              count: int = 60, parameters: dict[str, str] | None = None) -> list[sc.Sent]:
    compiled = sc.compile_scenario(sc.load(write_shop(directory)), directory, parameters)
    return list(islice(sc.sent(compiled, sc.Placement(threads, host, hosts, phase)), count))


# -- refusals: one line per wrong field, nothing changed ------------------------------------------


def test_a_valid_file_loads_with_its_routes() -> None:
    loaded = sc.load(REPO_ROOT / "scenarios" / "zipcodes.yml")
    assert loaded.endpoints() == ("POST /zipcodes", "GET /zipcodes/{zip}")
    assert loaded.requests[0].statements == {"select": 1, "insert": 1}


def test_request_types_name_the_apps_routes_by_shape_and_join_the_names_that_share_one(tmp_path: Path) -> None:
    """What the bench publishes for the app dashboard's panels by request type (perflab_request_type): the route with
    each placeholder as {} (the app's own names for them differ: Spring's /products/{productId}), the query dropped, and
    one type per route, the names of the requests that share it joined."""
    text = SHOP.replace("  - name: signup", "  - name: item_again\n    weight: 1\n    method: GET\n    path: /products/${sku}\n"
                                             "    expect: {status: 200}\n  - name: signup")
    loaded = sc.load(write_shop(tmp_path, text))
    assert loaded.request_types() == [
        {"method": "GET", "route": "/products", "type": "search"},
        {"method": "GET", "route": "/products/{}", "type": "item+item_again"},
        {"method": "POST", "route": "/customers/new", "type": "signup"},
        {"method": "POST", "route": "/orders", "type": "order"}]
    assert sc.as_run(loaded, tmp_path / "shop.yml")["request_types"] == loaded.request_types()
    assert sc.route_shape("/owners/{ownerId}/pets/{petId}/edit") == "/owners/{}/pets/{}/edit"


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (("threads: 2", "threads: 2\ncolour: blue"),
         ["colour: unknown field; the fields here are name, rate, duration, warmup, slo_p99_ms, slo_reason, "
          "connections, threads, requests, description, mix, variables, vegeta_exporter"]),
        (("    weight: 3", "    weight: 0"),
         ["requests[0].weight: 0 is out of range; allowed: more than 0 (its share of the mix)"]),
        (("/products/${sku}", "/products/${skew}"),
         ["requests[1].path: uses ${skew}, which is not defined; the variables are term, page, sku, ref, qty, city, shop"]),
        (("{status: 302}", "{status: found}"), ["requests[2].expect.status: 'found' is a string, not a whole number"]),
        (("{status: 201}", '{status: "201"}'), ["requests[3].expect.status: '201' is a string, not a whole number"]),
        (("    expect: {status: 201}\n", "    expect: {status: 201}\n    rows: {insert: 1}\n"),
         ["requests[3].rows: needs statements beside it: the verify counts rows with the statements they come from"]),
        (("statements: {select: 1, insert: 1}", "statements: {select: 1, insert: 1}\n    rows: {upsert: 1}"),
         ["requests[2].rows.upsert: unknown kind; allowed: select, insert, update, delete"]),
        (("{status: 201}", '{status: 201, headers: [Location, "X or Y Z"]}'),
         ["requests[3].expect.headers[1]: 'X or Y Z' is not a header's name; allowed: a name (Server), or names "
          "joined by ' or ' where either does (Content-Length or Transfer-Encoding)"]),
        (("    method: POST\n    path: /orders", "    method: POST\n    verb: PUT\n    path: /orders"),
         ["requests[3].verb: unknown field; the fields here are name, weight, method, path, expect, headers, body, statements, rows"]),
    ],
    ids=["unknown-field", "weight-0", "undefined-variable", "status-word", "status-string", "rows-alone",
         "rows-kind", "header-name",
         "unknown-request-field"],
)
def test_a_wrong_field_is_refused_in_one_line(tmp_path: Path, change: tuple[str, str], expected: list[str]) -> None:
    assert change[0] in SHOP
    file = write_shop(tmp_path, SHOP.replace(change[0], change[1], 1))
    before = file.read_text()
    assert refusal(file) == expected
    assert file.read_text() == before


def test_every_wrong_field_gets_its_own_line(tmp_path: Path) -> None:
    wrong = SHOP.replace("    weight: 3", "    weight: 0").replace("{status: 302}", "{status: x}").replace(
        "threads: 2", "threads: 2\ncolour: blue")
    lines = refusal(write_shop(tmp_path, wrong))
    # The schema's problems first: the weight is judged once the file has the schema's shape.
    assert lines == ["colour: unknown field; the fields here are name, rate, duration, warmup, slo_p99_ms, slo_reason, "
                     "connections, threads, requests, description, mix, variables, vegeta_exporter",
                     "requests[2].expect.status: 'x' is a string, not a whole number"]
    lines = refusal(write_shop(tmp_path, SHOP.replace("    weight: 3", "    weight: 0").replace(
        "    weight: 2", "    weight: -1").replace("/products/${sku}", "/products/${x}")))
    assert lines == ["requests[0].weight: 0 is out of range; allowed: more than 0 (its share of the mix)",
                     "requests[1].weight: -1 is out of range; allowed: more than 0 (its share of the mix)",
                     "requests[1].path: uses ${x}, which is not defined; the variables are term, page, sku, ref, qty, city, shop"]


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ("statements: {select: 1, update: {min: 1, max: 20}}", []),
        ("statements: {select: 1, update: {min: 20, max: 1}}",
         ["requests[1].statements.update.max: 1 is below min (20); allowed: min or more"]),
        ("statements: {select: 1, update: {min: 1}}",
         ["requests[1].statements.update.max: missing"]),
        ("statements: {select: 1, update: many}",
         ["requests[1].statements.update: 'many' is a string, not a number or a mapping"]),
        ("expect: {status: 200, json_object: {fields: [sku]}, json_array: {length: 2}}",
         ["requests[1].expect: has both json_object and json_array; allowed: one of them (a body is one or the other)"]),
        ("expect: {status: 200, json_object: {fields: []}}",
         ["requests[1].expect.json_object.fields: is empty; allowed: the names of the fields the object holds"]),
        ("expect: {status: 200, json_array: {length: -1, fields: [sku, '']}}",
         ["requests[1].expect.json_array.length: -1 is out of range; allowed: 0 or more items",
          "requests[1].expect.json_array.fields[1]: is empty; allowed: a field's name"]),
        ("expect: {status: 200, html_table: [[id, message], []]}",
         ["requests[1].expect.html_table[1]: is empty; allowed: the row's cells' text"]),
    ],
    ids=["range", "range-reversed", "range-half", "range-word", "two-shapes", "no-fields", "bad-array", "empty-row"],
)
def test_a_body_shape_and_a_range_of_statements(tmp_path: Path, change: str, expected: list[str]) -> None:
    """TechEmpower's checks as a scenario gives them (scenarios/db.yml, updates.yml, fortunes.yml)."""
    old = ("    expect: {status: 200, media_type: application/json, json_field: product.sku}\n"
           "    statements: {select: 1}\n")
    assert old in SHOP
    text = SHOP.replace(old, (f"    expect: {{status: 200}}\n    {change}\n" if change.startswith("statements")
                              else f"    {change}\n    statements: {{select: 1}}\n"))
    file = write_shop(tmp_path, text)
    if expected:
        assert refusal(file) == expected
    else:
        update = sc.load(file).requests[1].statements["update"]  # type: ignore[index]
        assert update == sc.StatementRange(min=1, max=20)
        assert sc.as_run(sc.load(file), file)["requests"][1]["statement_ranges"] == {
            "select": 1, "update": {"min": 1, "max": 20}}


@pytest.mark.parametrize(
    ("skus", "expected"),
    [
        (None, "variables.sku.csv.file: 'skus.csv' cannot be read (No such file or directory); "
               "allowed: a CSV file beside the scenario"),
        ("", "variables.sku.csv.file: 'skus.csv' is empty; allowed: a header row and one row or more"),
        ("sku,title\n", "variables.sku.csv.file: 'skus.csv' is empty; allowed: a header row and one row or more"),
        ("code,title\nA,B\n", "variables.sku.csv.file: 'skus.csv' has no column 'sku'; its columns are code, title"),
    ],
    ids=["missing", "empty", "header-only", "no-column"],
)
def test_a_csv_that_is_missing_or_empty_is_refused(tmp_path: Path, skus: str | None, expected: str) -> None:
    assert refusal(write_shop(tmp_path, skus=skus)) == [expected]


def test_a_csv_outside_the_scenarios_folder_is_refused(tmp_path: Path) -> None:
    file = write_shop(tmp_path, SHOP.replace("file: skus.csv", "file: ../skus.csv"))
    assert refusal(file) == [f"variables.sku.csv.file: '../skus.csv' is not beside the scenario; allowed: a file name in {tmp_path}"]


def test_yaml_that_is_not_a_scenario_is_refused(tmp_path: Path) -> None:
    assert refusal(write_shop(tmp_path, "- a list\n")) == [
        "not a mapping of fields but a list; see perflab/schemas/scenario.schema.json"]
    assert refusal(write_shop(tmp_path, SHOP + "rate: 5\n"))[0].startswith("not valid YAML at line")


# -- each variable kind ---------------------------------------------------------------------------


def test_the_mix_of_every_stretch_is_the_weights(tmp_path: Path) -> None:
    names = [request[0] for request in shop_sent(tmp_path, count=7500)]
    for third in (names[:2500], names[2500:5000], names[5000:]):
        shares = {name: third.count(name) / len(third) for name in ("search", "item", "signup", "order")}
        assert shares == pytest.approx({"search": 3 / 7.5, "item": 2 / 7.5, "signup": 1 / 7.5, "order": 1.5 / 7.5}, abs=0.01)


def by_thread(requests: list[sc.Sent], threads: int, thread: int) -> list[sc.Sent]:
    return requests[thread::threads]


def test_sequence_counts_each_threads_requests(tmp_path: Path) -> None:
    requests = shop_sent(tmp_path, count=40)
    for thread in range(2):
        for n, request in enumerate(by_thread(requests, 2, thread)):
            if request[0] == "search":
                assert request[2].endswith(f"&page={1 + n % 5}")


def test_pick_takes_the_values_in_turn_escaped_for_their_place(tmp_path: Path) -> None:
    requests = shop_sent(tmp_path, count=200)
    terms = ["red%20shoe", "tea%20%26%20cake", "caf%C3%A9%2Fbar"]
    for thread in range(2):
        for n, request in enumerate(by_thread(requests, 2, thread)):
            if request[0] == "search":
                assert request[2].startswith(f"/products?q={terms[(n + thread) % 3]}&")
            if request[0] == "order":
                assert json.loads(request[4])["city"] == ["Zürich", 'Saint "Q"'][n % 2]
            if request[0] == "signup":
                assert f"&city={['Z%C3%BCrich', 'Saint+%22Q%22'][n % 2]}&" in request[4]


def test_csv_picks_from_the_column(tmp_path: Path) -> None:
    requests = shop_sent(tmp_path, count=200)
    skus = ["A-1", "B%202", "C%2F3"]
    for thread in range(2):
        for n, request in enumerate(by_thread(requests, 2, thread)):
            if request[0] == "item":
                assert request[2] == f"/products/{skus[(n * 7 + thread * 3) % 3]}"
    assert {json.loads(r[4])["sku"] for r in requests if r[0] == "order"} == {"A-1", "B 2", "C/3"}


def test_uniform_stays_in_its_range_and_covers_it(tmp_path: Path) -> None:
    quantities = [json.loads(r[4])["qty"] for r in shop_sent(tmp_path, count=2000) if r[0] == "order"]
    assert set(quantities) == set(range(1, 10))


def test_keys_never_repeat_across_threads_hosts_and_phases(tmp_path: Path) -> None:
    keys: list[str] = []
    for phase in (0, 1):
        for host in (0, 1):
            for request in shop_sent(tmp_path, threads=3, host=host, hosts=2, phase=phase, count=3000):
                if request[0] == "order":
                    keys.append(json.loads(request[4])["ref"])
    assert len(keys) > 1000
    assert len(set(keys)) == len(keys)
    assert all(len(key) == len("R-0000-0000") and key.startswith(("R-0", "R-1")) for key in keys)
    assert {key[2] for key in keys} == {"0", "1"}  # the phase is the key's first digit


def test_hosts_together_send_what_one_run_with_all_their_threads_sends(tmp_path: Path) -> None:
    """Host K of H plays threads K*T .. K*T+T-1 of one H*T-thread run, keys spaced H*T apart."""
    one_run = shop_sent(tmp_path, threads=6, count=600)
    for host in (0, 1):
        played = shop_sent(tmp_path, threads=3, host=host, hosts=2, count=300)
        assert played == [request for index, request in enumerate(one_run) if index % 6 // 3 == host]
    assert shop_sent(tmp_path, threads=3, count=300) == shop_sent(tmp_path, threads=3, host=0, hosts=1, count=300)


def builtin(name: str, parameters: dict[str, str] | None = None) -> sc.Compiled:
    """A built-in scenario (scenarios/NAME.yml), compiled."""
    directory = REPO_ROOT / "scenarios"
    return sc.compile_scenario(sc.load(directory / f"{name}.yml"), directory, parameters)


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_mix_turns_takes_the_requests_in_turn_and_the_threads_out_of_step(threads: int) -> None:
    """scenarios/plaintext-json.yml, `mix: turns`: thread t's n-th request is /plaintext when n + t
    is even, so every stretch is half of each."""
    paths = [request[2] for request in islice(sc.sent(builtin("plaintext-json"), sc.Placement(threads)), 6000)]
    assert paths == ["/plaintext" if (n + thread) % 2 == 0 else "/json"
                     for n in range(6000 // threads) for thread in range(threads)]
    for start in range(0, 6000, 600):
        assert paths[start:start + 600].count("/plaintext") == paths[start:start + 600].count("/json") == 300


def test_every_builtin_request_is_one_the_contract_accepts() -> None:
    """The built-in scenarios' requests, bodies and paths, against apps/contract/openapi.yaml."""
    openapi = contract.OpenApi()
    validators = {route: jsonschema.Draft7Validator(openapi.schema(name))
                  for route, name in {"/zipcodes": "ZipCode", "/books": "NewBook", "/orders": "NewOrder"}.items()}
    zip_path = re.compile(openapi.schema("Zip")["pattern"].replace("^", "^/zipcodes/"))
    hello = openapi.operation("GET", "/hello/{latency}")["parameters"][0]["schema"]
    greeting = re.compile(openapi.operation("GET", "/greeting/{name}")["parameters"][0]["schema"]["pattern"])
    requests = (list(islice(sc.sent(builtin("zipcodes"), sc.Placement(4, key_phase=9)), 4000))
                + list(islice(sc.sent(builtin("books-orders"), sc.Placement(2)), 4000))
                + list(islice(sc.sent(builtin("hello-latency", {"latency": str(hello["maximum"])}), sc.Placement(1)), 1))
                + list(islice(sc.sent(builtin("greeting"), sc.Placement(1)), 1))
                + list(islice(sc.sent(builtin("plaintext-json"), sc.Placement(2)), 4)))
    techempower = {path for path, item in openapi.spec["paths"].items()
                   if "techempower" in item.get("get", {}).get("tags", [])}
    assert techempower == {"/plaintext", "/json"}
    for _, method, path, headers, body in requests:
        if method == "POST":
            assert headers == (("Content-Type", "application/json"),)
            validators[path].validate(json.loads(body))
        else:
            assert (headers, body) == ((), "")
            assert (path in {"/books", f"/hello/{hello['maximum']}"} | techempower or zip_path.fullmatch(path)
                    or (path.startswith("/greeting/") and greeting.search(path.removeprefix("/greeting/")))), path


def test_a_parameter_is_its_default_unless_set(tmp_path: Path) -> None:
    orders = [r for r in shop_sent(tmp_path, count=100) if r[0] == "order"]
    assert {json.loads(r[4])["shop"] for r in orders} == {"main"}
    orders = [r for r in shop_sent(tmp_path, count=100, parameters={"shop": "east"}) if r[0] == "order"]
    assert {json.loads(r[4])["shop"] for r in orders} == {"east"}
    with pytest.raises(sc.ScenarioError, match="qty is not a parameter of the scenario; its parameters are shop"):
        shop_sent(tmp_path, parameters={"qty": "3"})


def test_weights_set_when_compiling_change_the_mix(tmp_path: Path) -> None:
    directory = tmp_path
    compiled = sc.compile_scenario(sc.load(write_shop(directory)), directory, weights={"search": 1, "order": 0.5})
    names = [request[0] for request in islice(sc.sent(compiled, sc.Placement(2)), 4500)]
    assert {name: names.count(name) / len(names) for name in set(names)} == pytest.approx(
        {"search": 1 / 4.5, "item": 2 / 4.5, "signup": 1 / 4.5, "order": 0.5 / 4.5}, abs=0.01)


def test_bodies_get_their_content_type_and_headers_stay(tmp_path: Path) -> None:
    requests = {r[0]: r for r in shop_sent(tmp_path, count=100)}
    assert requests["signup"][3] == (("Content-Type", "application/x-www-form-urlencoded"),)
    assert requests["order"][3] == (("Content-Type", "application/json"),)
    assert requests["item"][3] == (("Accept", "application/json"),)
    assert requests["signup"][4].startswith("name=Customer+R-")


# -- the compiler: vegeta's targets and the generic wrk2 player send the same requests ------------


def compiled_shop(directory: Path) -> sc.Compiled:
    return sc.compile_scenario(sc.load(write_shop(directory)), directory)


def test_vegeta_targets_are_the_requests(tmp_path: Path) -> None:
    compiled = compiled_shop(tmp_path)
    for request in islice(sc.sent(compiled, sc.Placement(2)), 200):
        target = json.loads(sc.vegeta_line(request, "http://shop.example:80"))
        assert target["method"] == request[1]
        assert target["url"] == "http://shop.example:80" + request[2]
        assert base64.b64decode(target.get("body", "")).decode() == request[4]
        assert target.get("header", {}) == {name: [value] for name, value in request[3]}


@pytest.mark.skipif(LUAJIT is None, reason=NO_LUAJIT)
@pytest.mark.parametrize(("threads", "host", "hosts", "phase"), [(2, 0, 1, 0), (3, 0, 2, 1), (3, 1, 2, 1), (4, 1, 2, 0)])
def test_the_generic_wrk2_player_sends_vegetas_sequence(tmp_path: Path, threads: int, host: int, hosts: int,
                                                        phase: int) -> None:
    compiled = compiled_shop(tmp_path)
    data = tmp_path / "shop.lua"
    data.write_text(sc.compile_lua(compiled))
    rounds = 1500
    lua = run_threads(tmp_path / "wrk2", sc.LUA_PLAYER, threads, host, hosts, rounds,
                      {"PERFLAB_SCENARIO_DATA": str(data), "KEY_PHASE": str(phase)})
    vegeta = [json.loads(sc.vegeta_line(r, "http://h"))
              for r in islice(sc.sent(compiled, sc.Placement(threads, host, hosts, phase)), rounds * threads)]
    assert lua == [as_line(t["method"], t["url"].removeprefix("http://h"),
                           {name: values[0] for name, values in t.get("header", {}).items()},
                           base64.b64decode(t.get("body", "")).decode()) for t in vegeta]


@pytest.mark.skipif(LUAJIT is None, reason=NO_LUAJIT)
def test_the_generic_wrk2_player_counts_each_operation(tmp_path: Path) -> None:
    compiled = compiled_shop(tmp_path)
    data = tmp_path / "shop.lua"
    data.write_text(sc.compile_lua(compiled))
    harness = tmp_path / "counts.lua"
    # wrk2 runs done() in the main thread, perflab.report summing thread:get("sent_by_second") over
    # the threads setup() was given: here one, whose table is this state's.
    harness.write_text(
        'wrk = { headers = { Host = "h" }, format = function() return "" end }\n'
        f'dofile("{tmp_path / "wrk2" / "wrk2_scenario.lua"}")\n'
        'id = 0\nfor _ = 1, 750 do request() end\n'
        'setup({ set = function() end, get = function(_, name) return _G[name] end })\n'
        'done({}, {}, {})\n')
    run_threads(tmp_path / "wrk2", sc.LUA_PLAYER, 1, 0, 1, 1, {"PERFLAB_SCENARIO_DATA": str(data)})
    assert LUAJIT
    started = time.time()
    done = subprocess.run([LUAJIT, str(harness)], capture_output=True, text=True, timeout=60,
                          env={"PERFLAB_SCENARIO_DATA": str(data), "WRK_THREADS": "1"})
    expected = [r[0] for r in islice(sc.sent(compiled, sc.Placement(1)), 750)]
    assert done.returncode == 0, done.stderr
    by_operation, by_second = done.stdout.strip().splitlines()
    names = ("search", "item", "signup", "order")
    assert by_operation == "perflab wrk2 requests by operation: " + " ".join(
        f"{name}={expected.count(name)}" for name in names)
    # And by the second each was sent in (perflab/sent.py reads it): this host's clock, the same counts.
    assert by_second.startswith("perflab wrk2 requests by second: "), by_second
    document = json.loads(by_second.removeprefix("perflab wrk2 requests by second: "))
    assert document["names"] == list(names)
    assert all(started - 1 <= second <= time.time() for second, _ in document["seconds"]), document
    assert [sum(counts[i] for _, counts in document["seconds"]) for i in range(4)] == [expected.count(n) for n in names]


# -- the command ------------------------------------------------------------------------------------


def perflab(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "perflab", "scenario", *args], capture_output=True, text=True,
                          timeout=120, cwd=REPO_ROOT)


def test_check_says_ok_for_a_good_file(tmp_path: Path) -> None:
    done = perflab("check", str(write_shop(tmp_path)))
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout == (f"{tmp_path / 'shop.yml'}: OK: 4 request(s) (search, item, signup, order), "
                           "7 variable(s), 100 req/s for 60s\n")


def test_check_refuses_a_bad_file_line_by_line_with_status_2(tmp_path: Path) -> None:
    file = write_shop(tmp_path, SHOP.replace("    weight: 3", "    weight: 0"), skus="")
    done = perflab("check", str(file))
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.splitlines() == [
        f"perflab scenario: {file}: requests[0].weight: 0 is out of range; allowed: more than 0 (its share of the mix)",
        f"perflab scenario: {file}: variables.sku.csv.file: 'skus.csv' is empty; allowed: a header row and one row or more"]


def test_show_prints_vegetas_targets(tmp_path: Path) -> None:
    file = write_shop(tmp_path)
    done = perflab("show", str(file), "--first", "25", "--tool", "vegeta", "--threads", "3", "--host-index", "1",
                   "--hosts", "2", "--key-phase", "1", "--base-url", "http://shop:80/", "--set", "shop=east")
    assert done.returncode == 0, done.stderr
    compiled = sc.compile_scenario(sc.load(file), tmp_path, {"shop": "east"})
    assert done.stdout == "".join(sc.vegeta_line(r, "http://shop:80")
                                  for r in islice(sc.sent(compiled, sc.Placement(3, 1, 2, 1)), 25))


def test_show_prints_wrk2s_requests_thread_by_thread() -> None:
    done = perflab("show", "scenarios/books-orders.yml", "--first", "4", "--tool", "wrk2")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "thread 0 request 0 (post_books): POST /books",
        "  Content-Type: application/json",
        '  {"title":"Load 0-0","author":"Author 00"}',
        "thread 1 request 0 (post_books): POST /books",
        "  Content-Type: application/json",
        '  {"title":"Load 1-0","author":"Author 01"}',
        "thread 0 request 1 (get_books): GET /books",
        "thread 1 request 1 (post_orders): POST /orders",
        "  Content-Type: application/json",
        '  {"bookId":33,"userId":21}',
    ]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--set", "shop"], "perflab scenario: --set takes NAME=VALUE, got 'shop'"),
        (["--first", "0"], "perflab scenario: --first must be 1 or more, got 0"),
        (["--host-index", "2", "--hosts", "2"],
         "perflab scenario: threads and hosts are 1 or more and the host index 0..hosts-1, got 2 threads, host 2 of 2"),
        (["--key-phase", "10"], "perflab scenario: the key phase is 0..9, got 10"),
        (["--weight", "search"], "perflab scenario: --weight takes REQUEST=NUMBER, got 'search'"),
        (["--weight", "search=0"], "perflab scenario: shop: the weight of search must be a number above 0, got 0"),
        (["--weight", "browse=1"], "perflab scenario: shop: browse is not a request of the scenario; its requests are "
                                   "search, item, signup, order"),
    ],
)
def test_show_refuses_bad_options_in_one_line(tmp_path: Path, args: list[str], message: str) -> None:
    done = perflab("show", str(write_shop(tmp_path)), *args)
    assert (done.returncode, done.stdout, done.stderr) == (2, "", message + "\n")


def test_the_readmes_example_is_the_checked_example_file() -> None:
    example = REPO_ROOT / "docs" / "examples" / "notes.yml"
    assert f"```yaml\n{example.read_text()}```" in (REPO_ROOT / "README.md").read_text()
    done = perflab("check", str(example.relative_to(REPO_ROOT)))
    assert (done.returncode, done.stderr) == (0, ""), done.stderr


def key_scenario(directory: Path) -> sc.Compiled:
    # 3 digits: 100 keys a phase, 25 per thread with 2 threads on each of 2 hosts.
    text = SHOP.replace('ref: {key: {digits: 8, format: "R-####-####"}}', 'ref: {key: {digits: 3}}')
    return sc.compile_scenario(sc.load(write_shop(directory, text)), directory)


def test_a_key_that_runs_out_of_a_phases_keys_stops_rather_than_repeat(tmp_path: Path) -> None:
    compiled = key_scenario(tmp_path)
    with pytest.raises(scenario_play.PlayError,
                       match=r"key \$\{ref\} ran out of the 100 fresh keys of a phase across 4 threads: raise its digits"):
        list(islice(sc.sent(compiled, sc.Placement(2, 1, 2, 3)), 10_000))
    keys = [json.loads(r[4])["ref"] for r in islice(sc.sent(compiled, sc.Placement(2, 1, 2, 3)), 100) if r[0] == "order"]
    assert keys and all(key.startswith("3") for key in keys)


@pytest.mark.skipif(LUAJIT is None, reason=NO_LUAJIT)
def test_the_generic_wrk2_player_stops_too(tmp_path: Path) -> None:
    data = tmp_path / "shop.lua"
    data.write_text(sc.compile_lua(key_scenario(tmp_path)))
    with pytest.raises(AssertionError, match=r"perflab: key \$\{ref\} ran out of the 100 fresh keys of a phase"):
        run_threads(tmp_path / "wrk2", sc.LUA_PLAYER, 2, 1, 2, 5000, {"PERFLAB_SCENARIO_DATA": str(data), "KEY_PHASE": "3"})


PLAYER = REPO_ROOT / "perflab" / "scenario_play.py"


def play(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-I", "-S", str(PLAYER), *args], capture_output=True, text=True,
                          timeout=120, cwd=cwd)


def test_compile_writes_both_tools_inputs_and_the_player_plays_them(tmp_path: Path) -> None:
    file = write_shop(tmp_path)
    done = perflab("compile", str(file), "--set", "shop=east", "--weight", "order=4",
                   "--vegeta", str(tmp_path / "shop.json"), "--wrk2", str(tmp_path / "shop.lua"))
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    compiled = sc.compile_scenario(sc.load(file), tmp_path, {"shop": "east"}, {"order": 4})
    assert json.loads((tmp_path / "shop.json").read_text()) == compiled
    assert (tmp_path / "shop.lua").read_text() == sc.compile_lua(compiled)
    played = play("--compiled", "shop.json", "--base-url", "http://shop:80/", "--count", "500", "--threads", "2",
                  "--output", "targets.jsonl", cwd=tmp_path)
    assert played.returncode == 0, played.stderr
    expected = list(islice(sc.sent(compiled, sc.Placement(2)), 500))
    assert (tmp_path / "targets.jsonl").read_text() == "".join(sc.vegeta_line(r, "http://shop:80") for r in expected)
    names = [r[0] for r in expected]
    assert played.stderr == ("perflab vegeta requests by operation: "
                             + " ".join(f"{n}={names.count(n)}" for n in ("search", "item", "signup", "order")) + "\n")


def test_compile_prints_the_scenario_as_run_with_as_run_dash_and_writes_no_file(tmp_path: Path) -> None:
    """The bench's check of a scenario (roles/loadgen scenario.yml without a run's directory): the scenario as run on
    standard output, the same document --as-run FILE writes."""
    file = write_shop(tmp_path)
    printed = perflab("compile", str(file), "--set", "shop=east", "--as-run", "-")
    assert printed.returncode == 0 and printed.stderr == "", printed.stderr
    written = perflab("compile", str(file), "--set", "shop=east", "--as-run", str(tmp_path / "as-run.json"))
    assert written.returncode == 0 and written.stdout == ""
    assert printed.stdout == (tmp_path / "as-run.json").read_text(encoding="utf-8")
    assert json.loads(printed.stdout)["name"] == "shop"
    assert not (tmp_path / "-").exists()


def test_compile_refuses_without_an_output_and_a_wrong_scenario(tmp_path: Path) -> None:
    done = perflab("compile", str(write_shop(tmp_path)))
    assert (done.returncode, done.stderr) == (
        2, "perflab scenario: say what to write: --vegeta OUT.json, --wrk2 OUT.lua, --as-run OUT.json or several\n")
    done = perflab("compile", str(write_shop(tmp_path, skus="")), "--wrk2", str(tmp_path / "out.lua"))
    assert done.returncode == 2 and "variables.sku.csv.file: 'skus.csv' is empty" in done.stderr
    assert not (tmp_path / "out.lua").exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--compiled", "missing.json"], "cannot read --compiled missing.json: No such file or directory"),
        (["--compiled", "bad.json"], "--compiled bad.json is not JSON: Expecting value: line 1 column 1 (char 0)"),
        (["--compiled", "other.json"], "not a compiled scenario of format perflab-compiled-scenario/1: format is 'x'"),
        (["--compiled", "other.json", "--hosts", "0"],
         "threads and hosts are 1 or more and the host index 0..hosts-1, got 2 threads, host 0 of 0"),
        (["--compiled", "other.json", "--count", "0"], "--count must be 1 or more, got 0"),
        (["--compiled", "other.json", "--count", "x"], "argument --count: invalid int value: 'x' (--help explains the options)"),
        (["--compiled", "other.json", "--key-phase", "10"], "the key phase is 0..9, got 10"),
        (["--compiled", "other.json", "--host-index", "2", "--hosts", "2"],
         "threads and hosts are 1 or more and the host index 0..hosts-1, got 2 threads, host 2 of 2"),
        (["--compiled", "other.json", "--output", "/nonexistent/dir/t.jsonl"],
         "cannot write --output /nonexistent/dir/t.jsonl: No such file or directory"),
        (["--compiled", "other.json", "--compile", "x"], "unrecognized arguments: --compile x (--help explains the options)"),
        (["--compiled", "other.json", "--base-url", "http://h/api"],
         "--base-url must be http(s)://host[:port] with no path, got 'http://h/api'"),
        (["--compiled", "other.json", "--base-url", "ftp://h"], "--base-url must be http(s)://host[:port] with no path, got 'ftp://h'"),
        (["--compiled", "other.json", "--base-url", "http://h:99999"], "--base-url has a bad port: 'http://h:99999'"),
    ],
)
def test_the_player_refuses_bad_input_in_one_line(tmp_path: Path, args: list[str], message: str) -> None:
    (tmp_path / "bad.json").write_text("not json")
    (tmp_path / "other.json").write_text('{"format": "x", "requests": []}')
    done = play(*args, *([] if "--count" in args else ["--count", "5"]),
                *([] if "--base-url" in args else ["--base-url", "http://h"]), "--threads", "2", cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (2, "", f"perflab scenario_play: {message}\n")


def test_the_player_without_its_options_says_which_are_missing_and_help_explains_them(tmp_path: Path) -> None:
    done = play(cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (
        2, "", "perflab scenario_play: the following arguments are required: --compiled, --base-url, --count, "
               "--threads (--help explains the options)\n")
    done = play("--help", cwd=tmp_path)
    assert done.returncode == 0
    assert " ".join(done.stdout.split()).startswith("usage: scenario_play.py [-h] --compiled FILE.json --base-url URL "
                                                    "--count N --threads T [--key-phase P] [--host-index K] [--hosts H]")


def compiled_zipcodes(directory: Path) -> Path:
    document = directory / "zipcodes.json"
    document.write_text(json.dumps(builtin("zipcodes")))
    return document


def test_a_reader_that_stops_early_ends_the_player_quietly(tmp_path: Path) -> None:
    """`scenario_play.py ... | vegeta attack -lazy -duration=..`: vegeta closes the pipe when done."""
    with subprocess.Popen([sys.executable, "-I", "-S", str(PLAYER), "--compiled", str(compiled_zipcodes(tmp_path)),
                           "--base-url", "http://h", "--count", "5000000", "--threads", "2"],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as player:
        assert player.stdout and player.stderr
        assert json.loads(player.stdout.readline())["method"] in ("GET", "POST")
        player.stdout.close()
        assert player.wait(timeout=60) == 0
        stderr = player.stderr.read()
    assert len(stderr.splitlines()) == 1 and stderr.endswith(" (the reader closed the pipe first)\n"), stderr
    assert re.match(r"perflab vegeta requests by operation: write=\d+ read=\d+ \(", stderr), stderr


@pytest.mark.skipif(LUAJIT is None, reason=NO_LUAJIT)
def test_perflab_setup_numbers_the_threads_of_host_k_after_those_of_the_hosts_before(tmp_path: Path) -> None:
    """perflab.lua, beside the generic player: wrk2's thread ids across loadgen hosts."""
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


VEGETA = Path(os.environ.get("PERFLAB_VEGETA", REPO_ROOT / "build" / "vegeta"))
# One request as a server sees it: method, path, Content-Type ("" when none), body.
Seen = tuple[str, str, str, str]


@contextmanager
def recording_server() -> Iterator[tuple[str, list[Seen]]]:
    """An HTTP server on 127.0.0.1 that answers 200 and records every request it gets."""
    seen: list[Seen] = []

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
def test_vegeta_sends_exactly_the_players_requests(tmp_path: Path) -> None:
    targets = tmp_path / "targets.jsonl"
    with recording_server() as (url, seen):
        done = play("--compiled", str(compiled_zipcodes(tmp_path)), "--base-url", url, "--count", "200",
                    "--threads", "2", "--output", str(targets), cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        # No -duration: the attack ends when the targets do (the file's end stops it), each of the 200 sent. With
        # -duration=1s, vegeta's pacer stops at the second and never sends the ticks it was behind on: a CI
        # simulation's vegeta, the checks beside two lab-ups on two cores, sent 198.
        subprocess.run([str(VEGETA), "attack", "-lazy", "-format=json", f"-targets={targets}", "-rate=200/1s",
                        f"-output={tmp_path / 'results.bin'}"], check=True, timeout=60)
    expected = [(method, path, dict(headers).get("Content-Type", ""), body)
                for _, method, path, headers, body in islice(sc.sent(builtin("zipcodes"), sc.Placement(2)), 200)]
    # vegeta's workers send concurrently: the same requests, not necessarily in the same order.
    assert sorted(seen) == sorted(expected)


def test_a_scenarios_label_is_a_builtins_name_or_a_files_own_name(tmp_path: Path) -> None:
    """What runs, sweeps and compares are named by (the bench asks perflab scenario label)."""
    named = tmp_path / "scenario.yml"
    named.write_text("name: shop\nrate: 10\n")
    unnamed = tmp_path / "orders v2.yaml"
    unnamed.write_text("rate: 10\n")
    assert sc.label("zipcodes") == "zipcodes"
    assert sc.label(str(named)) == "shop"
    # No name in it, or no file at all: the file's name, in the characters a run's directory name takes.
    assert sc.label(str(unnamed)) == "orders-v2"
    assert sc.label(str(tmp_path / "gone.yml")) == "gone"
    done = perflab("label", str(named))
    assert (done.returncode, done.stdout, done.stderr) == (0, "shop\n", "")
