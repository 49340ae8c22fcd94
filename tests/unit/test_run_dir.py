"""roles/bench/files/run_dir.py, as targets.yml runs it on a loadgen host (python3 -c, the spec on its standard
input): what an interrupted run left removed, the run's own directory with the compiled scenario in it, and
each phase's request sequence written by its command, in one round trip."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

PROGRAM = Path(__file__).resolve().parents[2] / "roles" / "bench" / "files" / "run_dir.py"


def run_dir(spec: dict[str, Any] | str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", PROGRAM.read_text()], input=spec if isinstance(spec, str) else json.dumps(spec),
                          capture_output=True, text=True, check=False)


def test_the_run_directory_alone_with_its_scenario_and_each_phases_sequence(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    (runs / "20261203T000000Z-earlier" / "sub").mkdir(parents=True)
    (runs / "stray-file").write_text("left by hand")
    window = tmp_path / "perflab_run.prom"
    window.write_text('perflab_run_info{run_id="earlier"} 1\n')
    run = runs / "20261204T000000Z-quarkus-zipcodes"
    # Each phase's command writes its sequence where the bench says, from the compiled scenario, with its environment.
    writer = ("import os, sys; compiled = open('scenario-compiled.json').read(); "
              "open(sys.argv[1], 'w').write(compiled + os.environ['KEY_PHASE'])")
    done = run_dir({
        "runs_dir": str(runs), "run_dir": str(run), "remove": [str(window), str(tmp_path / "never-there.prom")],
        "files": {"scenario-compiled.json": '{"requests": []}'},
        "commands": [{"argv": [sys.executable, "-c", writer, "vegeta-warmup-targets.jsonl"], "env": {"KEY_PHASE": "0"}},
                     {"argv": [sys.executable, "-c", writer, "vegeta-measure-targets.jsonl"], "env": {"KEY_PHASE": 1}}],
    })
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"run_dir": str(run), "files": ["scenario-compiled.json"], "commands": 2}
    assert sorted(p.name for p in runs.iterdir()) == [run.name]
    assert sorted(p.name for p in run.iterdir()) == ["scenario-compiled.json", "vegeta-measure-targets.jsonl",
                                                     "vegeta-warmup-targets.jsonl"]
    assert (run / "vegeta-warmup-targets.jsonl").read_text() == '{"requests": []}0'
    assert (run / "vegeta-measure-targets.jsonl").read_text() == '{"requests": []}1'
    assert oct((run / "scenario-compiled.json").stat().st_mode & 0o777) == "0o644"
    assert oct(run.stat().st_mode & 0o777) == "0o755"
    assert not window.exists()


def test_a_failing_command_stops_it_with_its_own_words(tmp_path: Path) -> None:
    done = run_dir({"runs_dir": str(tmp_path), "run_dir": str(tmp_path / "run"), "files": {},
                    "commands": [{"argv": [sys.executable, "-c", "import sys; sys.exit('no compiled scenario')"]},
                                 {"argv": [sys.executable, "-c", "open('second', 'w')"]}]})
    assert done.returncode == 1
    assert "exited 1: no compiled scenario" in done.stderr
    assert not (tmp_path / "run" / "second").exists()


def test_a_spec_that_would_write_elsewhere_is_refused_before_anything_changes(tmp_path: Path) -> None:
    kept = tmp_path / "runs" / "kept"
    kept.mkdir(parents=True)
    for spec, said in (
        ({"runs_dir": str(tmp_path / "runs"), "run_dir": str(tmp_path / "elsewhere")}, "is not a directory of runs_dir"),
        ({"runs_dir": "runs", "run_dir": "runs/x"}, "is not a directory of runs_dir"),
        ({"runs_dir": str(tmp_path / "runs"), "run_dir": str(tmp_path / "runs" / "x"), "files": {"../escape": ""}},
         "is not a plain name"),
        ({"runs_dir": str(tmp_path / "runs"), "run_dir": str(tmp_path / "runs" / "x"), "commands": [{"argv": []}]},
         "has no argv"),
        ({"runs_dir": str(tmp_path / "runs"), "run_dir": str(tmp_path / "runs" / "x"), "remove": ["relative.prom"]},
         "names a relative path"),
        ("not json", "bad spec"),
    ):
        done = run_dir(spec)
        assert done.returncode == 2 and said in done.stderr, (spec, done.stderr)
    assert kept.is_dir()
