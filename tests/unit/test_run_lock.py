"""The lab's run lock (roles/run_lock/files/run_lock.py), as the playbooks run it on the lock's host:
one run at a time, a gone holder taken over, saying whose and why."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

PROGRAM = Path(__file__).resolve().parents[2] / "roles" / "run_lock" / "files" / "run_lock.py"


def lock(*args: str, code: int = 0) -> dict[str, Any]:
    done = subprocess.run([sys.executable, str(PROGRAM), *args], capture_output=True, text=True, timeout=30)
    assert done.returncode == code, done.stderr
    return json.loads(done.stdout) if code == 0 else {"stderr": done.stderr}


def holder(run: str, pid: int | None = 4242) -> str:
    return json.dumps({"run": run, "what": f"bench quarkus zipcodes ({run})", "controller": "ctl", "controller_id": "ctl:boot",
                       "user": "sre", "pid": pid, "started": "2026-11-27T15:00:00Z"})


def test_a_free_lab_is_taken_and_its_file_names_the_holder_with_its_lease(tmp_path: Path) -> None:
    path = tmp_path / "perflab" / "run.lock"
    before = time.time()
    assert lock("take", str(path), holder("run-1"), "900") == {"taken": True, "took_over": None, "why": None}
    held = json.loads(path.read_text())
    assert (held["run"], held["user"], held["controller"], held["pid"]) == ("run-1", "sre", "ctl", 4242)
    assert before + 900 <= held["lease_until"] <= time.time() + 900


def test_a_second_run_is_refused_with_the_holder_and_changes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "run.lock"
    lock("take", str(path), holder("run-1"), "900")
    text = path.read_text()
    refused = lock("take", str(path), holder("run-2"), "900")
    assert refused["taken"] is False and refused["held_by"]["run"] == "run-1"
    assert path.read_text() == text


def test_the_holder_taking_it_again_keeps_it(tmp_path: Path) -> None:
    path = tmp_path / "run.lock"
    lock("take", str(path), holder("run-1"), "900")
    assert lock("take", str(path), holder("run-1"), "900")["taken"] is True


def test_a_holder_whose_lease_ran_out_is_taken_over_saying_so(tmp_path: Path) -> None:
    path = tmp_path / "run.lock"
    lock("take", str(path), holder("run-1"), "0")
    time.sleep(1.1)
    taken = lock("take", str(path), holder("run-2"), "900")
    assert taken["taken"] is True and taken["took_over"]["run"] == "run-1"
    assert taken["why"].startswith("its lease ran out ") and taken["why"].endswith(" s ago")
    assert json.loads(path.read_text())["run"] == "run-2"


def test_a_holder_whose_process_is_gone_is_taken_over_only_by_its_name(tmp_path: Path) -> None:
    """The controller saw that run-1's process is gone and names it: run-1's lock is taken; had
    another run taken it meanwhile, that run's is not."""
    path = tmp_path / "run.lock"
    lock("take", str(path), holder("run-1"), "900")
    assert lock("take", str(path), holder("run-3"), "900", "run-0")["taken"] is False
    taken = lock("take", str(path), holder("run-3"), "900", "run-1")
    assert taken["took_over"]["run"] == "run-1" and taken["why"] == "its process on its controller is gone"


def test_release_frees_only_the_holders_lock(tmp_path: Path) -> None:
    path = tmp_path / "run.lock"
    lock("take", str(path), holder("run-1"), "900")
    assert lock("release", str(path), "run-2") == {"released": False, "held_by": json.loads(path.read_text())}
    assert lock("release", str(path), "run-1") == {"released": True, "held_by": None}
    assert not path.exists()
    assert lock("release", str(path), "run-1")["released"] is False
    assert lock("take", str(path), holder("run-2"), "900")["taken"] is True


def test_a_lock_not_written_by_the_program_holds_nothing(tmp_path: Path) -> None:
    path = tmp_path / "run.lock"
    path.write_text("not json")
    assert lock("take", str(path), holder("run-1"), "900")["taken"] is True


def test_of_many_runs_taking_the_free_lab_at_once_exactly_one_gets_it(tmp_path: Path) -> None:
    path = tmp_path / "run.lock"
    with ThreadPoolExecutor(8) as pool:
        outcomes = list(pool.map(lambda i: lock("take", str(path), holder(f"run-{i}"), "900"), range(8)))
    winners = [i for i, outcome in enumerate(outcomes) if outcome["taken"]]
    assert len(winners) == 1
    assert json.loads(path.read_text())["run"] == f"run-{winners[0]}"
    assert all(o["held_by"]["run"] == f"run-{winners[0]}" for o in outcomes if not o["taken"])


def test_bad_arguments_print_the_usage() -> None:
    done = subprocess.run([sys.executable, str(PROGRAM), "take", "x"], capture_output=True, text=True)
    assert done.returncode == 2 and done.stderr.startswith("usage: run_lock.py take LOCK")
