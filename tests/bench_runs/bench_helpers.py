"""Helpers of the benchmark-run tests: drive `make bench` on the lab named by BENCH_INVENTORY
(default inventory/local) and look at its hosts through Ansible."""
from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "results"
INVENTORY = os.environ.get("BENCH_INVENTORY", "inventory/local")
APPS = ("quarkus", "spring-webflux", "spring-mvc")
SCENARIOS = tuple(sorted(p.stem for p in (ROOT / "scenarios").glob("*.yml")))


def run_make(target: str, *variables: str, timeout: float = 1800) -> subprocess.CompletedProcess[str]:
    """`make TARGET INVENTORY=... VAR=...`, output (stdout and stderr) in .stdout."""
    return subprocess.run(
        ["make", "--no-print-directory", target, f"INVENTORY={INVENTORY}", *variables],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=timeout,
    )


def on_host(pattern: str, command: str) -> str:
    """Run a shell command on the first host matching PATTERN (e.g. db[0]); its stdout."""
    done = subprocess.run(
        [str(ROOT / ".venv/bin/ansible"), "-i", INVENTORY, pattern, "-o", "-m", "ansible.builtin.shell", "-a", command],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )
    assert done.returncode == 0, f"ansible {pattern} {command!r} failed:\n{done.stdout}\n{done.stderr}"
    return done.stdout


def run_dirs() -> set[str]:
    return {p.name for p in RESULTS.iterdir()} if RESULTS.is_dir() else set()


def new_run_dir(before: set[str]) -> Path:
    """The one results/<run-id>/ a make bench created since BEFORE."""
    created = sorted(run_dirs() - before)
    assert len(created) == 1, f"expected one new run directory under results/, got {created}"
    return RESULTS / created[0]


def read_json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def changed_counts(output: str) -> dict[str, int]:
    """changed=N of every host in the PLAY RECAP."""
    return {m.group(1): int(m.group(2)) for m in re.finditer(r"^(\S+)\s+:\s+ok=\d+\s+changed=(\d+)", output, re.M)}


def tail(text: str, lines: int = 60) -> str:
    return "\n".join(text.splitlines()[-lines:])
