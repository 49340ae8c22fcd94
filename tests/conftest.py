"""Fixtures every lab-level test directory shares (tests/lab, tests/bench_runs, ...): one lab
per pytest session and one short benchmark run on it. See tests/labkit.py for the settings."""
from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import sshlab
from labkit import (BEFORE_THE_FIRST_RUN, INVENTORY, NO_LOAD_MARK, REUSE_LAB, ROOT, SHORT_RUN, SSH_LAB, in_a_no_load_test,
                    judged, local_lab_session, make, new_run_dir, read_json, run_dirs, tail)


@pytest.fixture(scope="session")
def lab(request: pytest.FixtureRequest) -> Iterator[str]:
    """`make lab-up` from nothing (any previous lab removed first), once per session; yields its
    output and removes the lab at the end. PERFLAB_TEST_REUSE_LAB=1 keeps the lab as it is. With
    PERFLAB_TEST_LAB=ssh, on five fresh SSH machines (tests/sshlab.py), removed at the end."""
    if SSH_LAB:
        # Beside the local lab's share, whose runs wait until this lab-up has ended (sshlab.lab_up_ended).
        returncode = None
        try:
            with sshlab.machines(ROOT / INVENTORY):
                up = make("lab-up")
                returncode = up.returncode
                sshlab.lab_up_ended(returncode)
                assert up.returncode == 0, "make lab-up on the SSH machines failed:\n" + tail(up.stdout, 120)
                yield up.stdout
        finally:
            if returncode is None:
                sshlab.lab_up_ended(None)
        return
    # Beside the SSH lab's share, whose lock test waits for this session to end (labkit.after_the_local_lab).
    with local_lab_session():
        if not REUSE_LAB:
            down = make("lab-down")
            assert down.returncode == 0, tail(down.stdout)
        up = make("lab-up")
        assert up.returncode == 0, f"make lab-up INVENTORY={INVENTORY} failed:\n" + tail(up.stdout, 120)
        # An operator's next command: lab-up returns once Prometheus has scraped every target, so none
        # is "unknown" (issue 24: lab-status right after lab-up exited 2).
        status = make("lab-status")
        assert status.returncode == 0, "make lab-status right after make lab-up:\n" + tail(status.stdout, 40)
        # The lab's tests that run no load (its database, its monitoring) run now; its first run waits.
        capture = request.config.pluginmanager.getplugin("capturemanager")
        BEFORE_THE_FIRST_RUN.append(lambda: _wait_for_checks(capture))
        yield up.stdout
        if not REUSE_LAB:
            make("lab-down")


# make test runs lint and the unit, report and contract tests beside the local lab's lab-up, and the SSH lab's lab-up
# (make test and test-lab: apt and dpkg on five machines, at everyone's weight until it ends); they take both cores
# for minutes, which a run measured meanwhile would read as its own tiers' load. Each writes its file (its exit
# status) when it has ended, whatever it says (make test fails on it): the files, separated by ':', for which the
# lab's runs wait.
WAITS_FOR = [Path(p) for p in os.environ.get("PERFLAB_TEST_LAB_WAITS_FOR", "").split(os.pathsep) if p]
CHECKS_TIMEOUT_S = 1800


def _wait_for_checks(capture: Any) -> None:
    if not WAITS_FOR:
        return
    started = time.monotonic()

    def say(line: str) -> None:  # on the terminal, through pytest's capture of a fixture's output
        with capture.global_and_fixture_disabled():
            print(line, flush=True)

    say(f"\nthe lab's first run waits for what runs beside it to end ({', '.join(map(str, WAITS_FOR))})")
    for status in WAITS_FOR:
        while not status.exists():
            if time.monotonic() - started > CHECKS_TIMEOUT_S:
                pytest.fail(f"{status} was not written within {CHECKS_TIMEOUT_S} s: what runs beside the lab hangs")
            time.sleep(2)
        say(f"{status} was written (exit status {status.read_text().strip()}) after "
            f"{time.monotonic() - started:.0f} s")
    say("the lab's runs start")


@pytest.fixture(scope="session")
def short_run(lab: str) -> Path:
    """results/<run-id>/ of one complete short run (SHORT_RUN) on the session's lab."""
    before = run_dirs()
    done = make("bench", *SHORT_RUN)
    # Judged, whatever its verdict (labkit.judged); the tests that need it VALID say so themselves.
    assert judged(done), "the short run failed:\n" + tail(done.stdout, 80)
    run_dir = new_run_dir(before)
    assert read_json(run_dir / "status.json")["status"] == "complete", run_dir
    return run_dir


# The order of the lab's tests, whatever the command line's: first those that read the lab as
# lab-up leaves it (the database at its seed, before any run writes to it), then the tests marked
# no_load (labkit.NO_LOAD_MARK: their runs end before any load, so they fill the local lab's wait for
# what runs beside it, and their runs do not wait; a CI simulation's first run had waited 6 min, and then
# 0 s, but the suite took only 1 min less, 47.3 min: that wait was the checks' and the SSH lab-up's CPU,
# which these runs took their share of, 2.5-4 times slower than among the runs), then make watch, which
# watches the shared short run as it happens (the first test to ask for it starts it: otherwise
# watch would run one more of its own), then the rest; on the SSH lab, the lock test's first run
# after the rest (it waits for the local lab's share to end: labkit.after_the_local_lab);
# the lifecycle tests end with lab-down (on the SSH lab, its own lab-down test).
FIRST = ("tests/lab/test_bad_input.py", "tests/lab/test_database.py", "tests/lab/test_monitoring.py")
THEN = ("tests/watch/",)
# Right before it: what fills the SSH lab's wait for the local lab's share (the lock test waits for it).
BEFORE_THE_WAIT = ("tests/ssh_lab/test_ssh_lab_scrape.py",)
AFTER_THE_REST = ("tests/ssh_lab/test_ssh_lab_lock.py::test_a_second_run_5_s_later",)
LAST = ("tests/lab/test_lab_lifecycle.py", "tests/ssh_lab/test_ssh_lab_down.py")


def _lab_order(item: pytest.Item) -> int:
    path = item.nodeid.split("::")[0]
    if item.nodeid.startswith(AFTER_THE_REST):
        return 5
    if path in FIRST:
        return 0
    if item.get_closest_marker(NO_LOAD_MARK):
        return 1
    return 2 if path.startswith(THEN) else 4 if path in BEFORE_THE_WAIT else 6 if path in LAST else 3


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    items.sort(key=_lab_order)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", f"{NO_LOAD_MARK}: the test's runs end before any load (refused, or failed "
                                       "before the warm-up): it runs while the lab's runs wait, and they do not wait")


@pytest.fixture(autouse=True)
def _no_load_runs_do_not_wait(request: pytest.FixtureRequest) -> Iterator[None]:
    if request.node.get_closest_marker(NO_LOAD_MARK):
        with in_a_no_load_test():
            yield
    else:
        yield


def pytest_report_teststatus(report: pytest.TestReport, config: pytest.Config) -> tuple[str, str, str] | None:
    """-v lines end with the wall clock and the test's own seconds: a CI log cut off by its time
    limit still says where the time went (the gap between two lines includes fixtures' setup,
    such as the session's lab-up)."""
    if report.when != "call" or hasattr(report, "wasxfail"):
        return None
    letter = {"passed": ".", "failed": "F", "skipped": "s"}[report.outcome]
    return report.outcome, letter, f"{report.outcome.upper()} ({time.strftime('%H:%M:%S')}, {report.duration:.0f} s)"


# What a bare `pytest` leaves out (pyproject's testpaths: what needs no lab, no database, no
# browser), and the make target that installs what each needs and runs it.
NOT_IN_A_BARE_RUN = (
    ("make test-report", "the report in headless Chromium (tests/report/test_report_browser.py)"),
    ("make test-apps", "the apps' contract suite: Maven, a private MariaDB (tests/contract)"),
    ("make test-local-lab", "the local lab's share, on docker containers (the Makefile's LOCAL_LAB_TESTS)"),
    ("make test-ssh-lab", "the SSH lab's share, on five fresh machines (the Makefile's SSH_LAB_TESTS)"),
    ("make test-reproduce", "field report 2 on the local lab (tests/reproduce_lab)"),
    ("make test", "all of it, as CI runs it"),
)


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    if config.args_source != pytest.Config.ArgsSource.TESTPATHS:
        return
    terminalreporter.write_sep("-", "a bare pytest runs only what needs no lab; the rest")
    width = max(len(target) for target, _ in NOT_IN_A_BARE_RUN)
    for target, what in NOT_IN_A_BARE_RUN:
        terminalreporter.write_line(f"  {target.ljust(width)}  {what}")
