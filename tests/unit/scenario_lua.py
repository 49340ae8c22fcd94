"""Runs wrk2's Lua player of a compiled scenario (perflab/wrk2_scenario.lua) under luajit as wrk2
would, thread by thread, for the scenario tests.

wrk.format is stubbed to print what the request holds; each wrk2 thread has its own Lua state, so
one luajit process per thread, `id` set as perflab.setup's thread:set("id", ...) sets it. As in
wrk2 (wrk.lua, script.c), the Host header is set after the script is loaded, then init() runs,
then request() (or, for a script without one, the request wrk2 builds once from wrk.method,
wrk.path, wrk.headers and wrk.body: the player leaves a scenario of one fixed request to wrk2).
The lines it prints (as_line) are those of the golden fixtures of the retired per-scenario Lua
scripts (tests/unit/fixtures/builtin_sequences/wrk2.json): change their format and those no
longer match.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Mapping
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
WRK2_DIR = REPO_ROOT / "roles" / "loadgen" / "files" / "wrk2"
LUAJIT = shutil.which("luajit")
NO_LUAJIT = "luajit is not installed (scripts/apt-need.sh 'the Lua tests' luajit): the wrk2 Lua cannot be run"
# The environment the player and perflab.lua read: none may leak in from the test's.
KNOBS = ("KEY_PHASE", "WRK_THREADS", "PERFLAB_HOST_INDEX", "PERFLAB_HOSTS", "PERFLAB_SCENARIO_DATA")

HARNESS = r"""
local script, thread_id, rounds = arg[1], tonumber(arg[2]), tonumber(arg[3])
wrk = { method = "GET", path = "/", headers = {} }
function wrk.format(method, path, headers, body)
   assert(wrk.headers["Host"], "wrk.format before wrk.init: the request would have no Host header")
   local merged = {}
   for name, value in pairs(wrk.headers) do merged[name] = value end
   for name, value in pairs(headers or {}) do merged[name] = value end
   local lines = {}
   for name, value in pairs(merged) do
      if name ~= "Host" then table.insert(lines, name .. ": " .. value) end
   end
   table.sort(lines)
   local sent = body or wrk.body or ""
   return table.concat({ method or wrk.method, path or wrk.path, table.concat(lines, "; "), (sent:gsub("\n", "\\n")) }, "\t")
end
dofile(script)
id = thread_id
wrk.headers["Host"] = "app.example:8080"
if init then init({}) end
for _ = 1, rounds do
   io.write(request and request() or wrk.format(), "\n")
end
"""


def as_line(method: str, path: str, headers: Mapping[str, str] | tuple[tuple[str, str], ...], body: str) -> str:
    """One request as the harness prints it."""
    pairs = headers.items() if isinstance(headers, Mapping) else headers
    shown = "; ".join(sorted(f"{name}: {value}" for name, value in pairs))
    return "\t".join((method, path, shown, body.replace("\n", "\\n")))


def run_threads(work: Path, script: Path, threads: int, host: int, hosts: int, rounds: int,
                env: Mapping[str, str]) -> list[str]:
    """The requests of host `host`'s threads, in round-robin (thread i % T's request i // T).
    The script runs from `work`, beside a copy of perflab.lua, as it is deployed."""
    assert LUAJIT
    work.mkdir(parents=True, exist_ok=True)
    shutil.copy(WRK2_DIR / "perflab.lua", work / "perflab.lua")
    if script.parent != work:
        shutil.copy(script, work / script.name)
    harness = work / "harness.lua"
    harness.write_text(HARNESS)
    lua_env = {name: value for name, value in os.environ.items() if name not in KNOBS} | dict(env)
    lua_env |= {"WRK_THREADS": str(threads), "PERFLAB_HOST_INDEX": str(host), "PERFLAB_HOSTS": str(hosts)}
    per_thread = []
    for thread_id in range(host * threads, (host + 1) * threads):
        done = subprocess.run([LUAJIT, str(harness), str(work / script.name), str(thread_id), str(rounds)],
                              env=lua_env, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        per_thread.append(done.stdout.splitlines())
    return [per_thread[local][n] for n in range(rounds) for local in range(threads)]
