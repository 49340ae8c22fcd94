"""What every lab-level test shares: which lab (PERFLAB_TEST_INVENTORY, default inventory/local),
where its results go (PERFLAB_RESULTS_DIR, default results/), and `make` on it."""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
INVENTORY = os.environ.get("PERFLAB_TEST_INVENTORY", "inventory/local")
RESULTS = Path(os.environ.get("PERFLAB_RESULTS_DIR") or ROOT / "results")
# PERFLAB_TEST_REUSE_LAB=1: take the lab as it is (a warm lab-up), leave it up afterwards.
REUSE_LAB = os.environ.get("PERFLAB_TEST_REUSE_LAB") == "1"
# The run every test that needs "a normal run" shares (conftest.py: short_run): the README's main
# job, shortened.
SHORT_RUN = ("APP=quarkus", "SCENARIO=zipcodes", "RATE=200", "DURATION=30s", "WARMUP=15s")


def make(target: str, *variables: str, timeout: float = 1800) -> subprocess.CompletedProcess[str]:
    """`make TARGET INVENTORY=<the test lab> VAR=...` (an INVENTORY= among VARIABLES wins); stdout and
    stderr together in .stdout."""
    env = dict(os.environ, ANSIBLE_NOCOLOR="1", ANSIBLE_FORCE_COLOR="0", PERFLAB_RESULTS_DIR=str(RESULTS))
    return subprocess.run(
        ["make", "--no-print-directory", target,
         *([] if any(v.startswith("INVENTORY=") for v in variables) else [f"INVENTORY={INVENTORY}"]), *variables],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=timeout, check=False,
    )


def run_dirs() -> set[str]:
    return {p.name for p in RESULTS.iterdir()} if RESULTS.is_dir() else set()


def new_run_dir(before: set[str]) -> Path:
    """The one results/<run-id>/ a make bench created since BEFORE."""
    created = sorted(run_dirs() - before)
    assert len(created) == 1, f"expected one new run directory under {RESULTS}, got {created}"
    return RESULTS / created[0]


def read_json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def tail(text: str, lines: int = 60) -> str:
    return "\n".join(text.splitlines()[-lines:])
