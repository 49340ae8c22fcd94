"""Sets up a run's directory on a loadgen host in one round trip (roles/bench/tasks/targets.yml): what an
interrupted run left removed (its run window's file, its directory), the run's own directory created, the
compiled scenario its tool plays written into it, then the commands that write each phase's request
sequence (vegeta's) run there.

    python3 run_dir.py < SPEC.json

SPEC: {"runs_dir": RUNS, "run_dir": RUN, "remove": [PATH, ...], "files": {NAME: CONTENT, ...},
       "commands": [{"argv": [...], "env": {...}}, ...]}
Each PATH is removed where it is a file (absent is fine). RUN is a directory of RUNS; RUNS is emptied of
everything else (a generator of another run never writes where this one reads). Each file is written whole (a temporary file renamed over it), mode 0644. Each
command runs in RUN with the environment and ENV; the first that fails stops here, exit 1, its argv and
its standard error on stderr. Prints {"run_dir": RUN, "files": [...], "commands": N}. Bad input: exit 2.
Runs on the lab's hosts under their python3: standard library only.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from typing import Any


def spec_of(text: str) -> dict[str, Any]:
    """The spec, checked: run_dir inside runs_dir, file names without a directory, commands with an argv."""
    spec = json.loads(text)
    runs, run = os.path.normpath(spec["runs_dir"]), os.path.normpath(spec["run_dir"])
    if not os.path.isabs(runs) or os.path.dirname(run) != runs:
        raise ValueError(f"run_dir {run} is not a directory of runs_dir {runs}")
    for name in spec.get("files", {}):
        if not name or os.path.basename(name) != name or name in (".", ".."):
            raise ValueError(f"file name {name!r} is not a plain name")
    for command in spec.get("commands", []):
        if not command.get("argv") or not all(isinstance(word, str) for word in command["argv"]):
            raise ValueError(f"command {command!r} has no argv of strings")
    remove = [str(path) for path in spec.get("remove", [])]
    if not all(os.path.isabs(path) for path in remove):
        raise ValueError(f"remove {remove} names a relative path")
    return {"runs_dir": runs, "run_dir": run, "remove": remove, "files": dict(spec.get("files", {})),
            "commands": list(spec.get("commands", []))}


def start(runs_dir: str, run_dir: str) -> None:
    """RUNS_DIR holding only RUN_DIR, empty."""
    if os.path.isdir(runs_dir):
        for entry in os.listdir(runs_dir):
            path = os.path.join(runs_dir, entry)
            if os.path.isdir(path) and not os.path.islink(path):
                shutil.rmtree(path)
            else:
                os.remove(path)
    os.makedirs(run_dir, mode=0o755)
    os.chmod(run_dir, 0o755)


def write(run_dir: str, name: str, content: str) -> None:
    path = os.path.join(run_dir, name)
    temporary = path + ".tmp"
    with open(temporary, "w", encoding="utf-8") as out:
        out.write(content)
    os.chmod(temporary, 0o644)
    os.replace(temporary, path)


def main() -> int:
    try:
        spec = spec_of(sys.stdin.read())
    except (ValueError, KeyError, TypeError, json.JSONDecodeError) as exc:
        print(f"run_dir: bad spec: {exc}", file=sys.stderr)
        return 2
    for path in spec["remove"]:
        try:
            os.remove(path)
        except FileNotFoundError:
            pass
    start(spec["runs_dir"], spec["run_dir"])
    for name, content in spec["files"].items():
        write(spec["run_dir"], name, content)
    for command in spec["commands"]:
        env = dict(os.environ, **{key: str(value) for key, value in command.get("env", {}).items()})
        done = subprocess.run(command["argv"], cwd=spec["run_dir"], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, check=False)
        if done.returncode != 0:
            print(f"run_dir: {' '.join(command['argv'])} exited {done.returncode}: {done.stderr.strip()}", file=sys.stderr)
            return 1
    print(json.dumps({"run_dir": spec["run_dir"], "files": sorted(spec["files"]), "commands": len(spec["commands"])}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
