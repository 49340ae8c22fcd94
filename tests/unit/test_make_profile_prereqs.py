"""Every make target that runs the bench fetches async-profiler's agent library when PROFILE_APP asks for a
profile, and only then (Makefile PROFILE_PREREQS): `make compare PROFILE_APP=cpu` on a fresh clone once
stopped at the bench's check "run make async-profiler (make bench fetches it itself)".

Read with `make -n` (prints the recipes, runs none) and ASYNC_PROFILER_DIR in a directory without the
library, so the fetch is due as on a fresh clone.
"""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
FETCH = "dependency:copy -Dartifact=tools.profiler:async-profiler:"


def dry_run(target: str, profile: str | None, library_dir: Path) -> str:
    words = [f"ASYNC_PROFILER_DIR={library_dir}", "APP=quarkus", "SCENARIO=plaintext-json", "REPORT=1"]
    if profile is not None:
        words.append(f"PROFILE_APP={profile}")
    done = subprocess.run(["make", "--no-print-directory", "-n", target, *words], cwd=REPO, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.parametrize("target", ["bench", "compare", "sweep", "reproduce"])
def test_a_profiled_run_fetches_the_agent_library_first(target: str, tmp_path: Path) -> None:
    assert FETCH in dry_run(target, "cpu", tmp_path / "async-profiler")


@pytest.mark.parametrize("profile", [None, "off"])
@pytest.mark.parametrize("target", ["bench", "compare", "sweep", "reproduce"])
def test_a_run_without_a_profile_fetches_nothing(target: str, profile: str | None, tmp_path: Path) -> None:
    assert FETCH not in dry_run(target, profile, tmp_path / "async-profiler")
