"""scripts/test-failures.sh: what make test prints again at its end for the SSH lab's share and the
checks, whose own failures scrolled by long before the local lab's summary."""

from __future__ import annotations

import subprocess
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "test-failures.sh"

LOG = """\
tests/ssh_lab/test_a.py::test_one PASSED (15:27:56, 100 s) [ 50%]
tests/ssh_lab/test_a.py::test_two FAILED (15:33:27, 129 s) [100%]

=================================== FAILURES ===================================
___________________________________ test_two ___________________________________

    def test_two() -> None:
>       assert per_host == {"loadgen1": 250}, per_host
E       AssertionError: {'loadgen1': 249}
E       line 2
E       line 3
E       line 4
E       line 5
E       line 6
E       line 7
E       assert False

tests/ssh_lab/test_a.py:12: AssertionError
=========================== short test summary info ============================
FAILED (15:33:27, 129 s) tests/ssh_lab/test_a.py::test_two
========================= 1 failed, 1 passed in 229.53s =========================
"""


def test_each_failure_keeps_its_header_its_first_and_last_lines_and_the_summary(tmp_path: Path) -> None:
    log = tmp_path / "pytest.log"
    log.write_text(LOG)
    done = subprocess.run([str(SCRIPT), "test: the SSH lab's tests", str(log)], capture_output=True, text=True, check=True)
    assert done.stdout.splitlines() == [
        f"test: the SSH lab's tests: what failed (the whole output is above, and in {log}):",
        "___________________________________ test_two ___________________________________",
        "E       AssertionError: {'loadgen1': 249}",
        "E       line 2",
        "E       ...",
        "E       line 5",
        "E       line 6",
        "E       line 7",
        "E       assert False",
        "FAILED (15:33:27, 129 s) tests/ssh_lab/test_a.py::test_two",
    ]


def test_a_missing_log_is_said_and_not_an_error(tmp_path: Path) -> None:
    done = subprocess.run([str(SCRIPT), "test: checks", str(tmp_path / "none.log")], capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout.strip() == f"test: checks: no log at {tmp_path / 'none.log'}"
