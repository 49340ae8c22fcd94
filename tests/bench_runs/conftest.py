"""The benchmark-run tests need a lab that is up (make lab-up INVENTORY=$BENCH_INVENTORY)."""
from __future__ import annotations

import subprocess

import pytest

from bench_helpers import INVENTORY, ROOT


@pytest.fixture(scope="session", autouse=True)
def lab_is_up() -> None:
    done = subprocess.run(
        [str(ROOT / ".venv/bin/ansible"), "-i", INVENTORY, "loadgen[0]:db[0]:app[0]", "-o", "-m", "ansible.builtin.ping"],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )
    if done.returncode != 0:
        pytest.fail(f"the lab of {INVENTORY} does not answer: run `make lab-up INVENTORY={INVENTORY}` first\n{done.stdout}")
