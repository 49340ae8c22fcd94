"""Fixtures every lab-level test directory shares (tests/lab, tests/bench_runs, ...): one lab
per pytest session and one short benchmark run on it. See tests/labkit.py for the settings."""
from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from labkit import INVENTORY, REUSE_LAB, SHORT_RUN, make, new_run_dir, read_json, run_dirs, tail


@pytest.fixture(scope="session")
def lab() -> Iterator[str]:
    """`make lab-up` from nothing (any previous lab removed first), once per session; yields its
    output and removes the lab at the end. PERFLAB_TEST_REUSE_LAB=1 keeps the lab as it is."""
    if not REUSE_LAB:
        down = make("lab-down")
        assert down.returncode == 0, tail(down.stdout)
    up = make("lab-up")
    assert up.returncode == 0, f"make lab-up INVENTORY={INVENTORY} failed:\n" + tail(up.stdout, 120)
    yield up.stdout
    if not REUSE_LAB:
        make("lab-down")


@pytest.fixture(scope="session")
def short_run(lab: str) -> Path:
    """results/<run-id>/ of one complete short run (SHORT_RUN) on the session's lab."""
    before = run_dirs()
    done = make("bench", *SHORT_RUN)
    assert done.returncode == 0, "the short run failed:\n" + tail(done.stdout, 80)
    run_dir = new_run_dir(before)
    assert read_json(run_dir / "status.json")["status"] == "complete", run_dir
    return run_dir


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The lifecycle tests end with lab-down: run them after every other test using the lab."""
    items.sort(key=lambda item: item.nodeid.split("::")[0].endswith("test_lab_lifecycle.py"))


def pytest_report_teststatus(report: pytest.TestReport, config: pytest.Config) -> tuple[str, str, str] | None:
    """-v lines end with the wall clock and the test's own seconds: a CI log cut off by its time
    limit still says where the time went (the gap between two lines includes fixtures' setup,
    such as the session's lab-up)."""
    if report.when != "call" or hasattr(report, "wasxfail"):
        return None
    letter = {"passed": ".", "failed": "F", "skipped": "s"}[report.outcome]
    return report.outcome, letter, f"{report.outcome.upper()} ({time.strftime('%H:%M:%S')}, {report.duration:.0f} s)"
