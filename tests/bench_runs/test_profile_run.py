"""The app's profile over the measured window (PROFILE_APP, roles/bench/tasks/profile_start.yml and
profile_fetch.yml, async-profiler through roles/app/files/perflab_profile.py): a run profiled writes
a flame graph that opens in Chromium with no console error, the collapsed stacks and their summary
by layer, adding up to 100%; a run that asks for none (the default, off) writes none."""
from __future__ import annotations

import datetime
import re
from pathlib import Path

from bench_helpers import new_run_dir, read_json, run_dirs, run_make, tail
from labkit import judged
from report.chromium import visit

PROFILE_FILES = ("flamegraph.html", "profile.collapsed", "profile-window.json", "profile-summary.json")


def _unix(iso: str) -> float:
    return datetime.datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp()


def test_a_profiled_run_writes_a_flame_graph_chromium_opens_and_layers_that_add_up(short_run: Path) -> None:
    assert not [name for name in PROFILE_FILES if (short_run / name).exists()], "PROFILE_APP is off by default"
    before = run_dirs()
    done = run_make("bench", "APP=quarkus", "SCENARIO=greeting", "RATE=200", "DURATION=15s", "WARMUP=5s", "PROFILE_APP=cpu")
    assert judged(done), tail(done.stdout, 80)  # VALID, WARN or INVALID: the profile is the test
    run = new_run_dir(before)
    assert [name for name in PROFILE_FILES if (run / name).exists()] == list(PROFILE_FILES), sorted(p.name for p in run.iterdir())
    said = " ".join(done.stdout.replace("''", "'").split())  # as Ansible folds and quotes collect's output
    assert re.search(r"the app's profile \(\d+ samples, flamegraph\.html\): \d+% ", said), tail(done.stdout)

    # Over the measured window: started at its start, stopped at its end. The attach listener is
    # started and the agent loaded before the window, over the JVM's socket: 0.09 s late on an idle
    # lab. jcmd, a JVM of its own to start, made it 3.0 s late in a CI run (a fifth of this window);
    # with the socket but no agent loaded ahead, 1.6 s on a machine running two CI simulations at once.
    # 2 s: the agent's own start (a perf event per JVM thread) on a loaded 2-core machine.
    window, status = read_json(run / "profile-window.json"), read_json(run / "status.json")
    assert window["mode"] == "cpu" and window["engine"] in ("perf_events", "ctimer"), window
    assert 0 <= _unix(window["started_at"]) - _unix(status["started_at"]) < 2, (window, status)
    assert 0 <= _unix(window["stopped_at"]) - _unix(status["ended_at"]) < 5, (window, status)

    summary = read_json(run / "profile-summary.json")
    assert summary["samples"] > 20 and abs(sum(layer["share"] for layer in summary["layers"]) - 1) < 1e-9, summary
    page = visit(run / "flamegraph.html", "document.documentElement.innerHTML.indexOf('quarkus greeting cpu') >= 0")
    assert page.errors == [], page.errors
    assert page.evaluated is True, "the flame graph's title names the app, the scenario and the mode"
