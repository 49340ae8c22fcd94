"""What the loadgen role reads of the load generators a host has (roles/loadgen/files/installed.py), run as
facts.yml runs it: wrk2's commit and vegeta's sha256, an empty line for what is not there."""

from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path

from .helpers import run_host_program

PROGRAM = Path(__file__).resolve().parents[2] / "roles" / "loadgen" / "files" / "installed.py"


def installed(*args: str) -> subprocess.CompletedProcess[str]:
    return run_host_program(PROGRAM, *args)


def test_the_commit_and_the_binarys_sha256_one_line_each(tmp_path: Path) -> None:
    (tmp_path / "wrk.commit").write_text("e0109df5b9de09251adb6f4b7ca7b6e4ac8c4d82\n")
    vegeta = tmp_path / "vegeta"
    vegeta.write_bytes(bytes(range(256)) * 9000)  # more than one read's block
    done = installed(str(tmp_path / "wrk.commit"), str(vegeta))
    assert done.returncode == 0
    assert done.stdout.splitlines() == ["e0109df5b9de09251adb6f4b7ca7b6e4ac8c4d82",
                                        hashlib.sha256(vegeta.read_bytes()).hexdigest()]


def test_what_is_not_installed_is_an_empty_line(tmp_path: Path) -> None:
    done = installed(str(tmp_path / "wrk.commit"), str(tmp_path / "vegeta"))
    assert done.returncode == 0 and done.stdout == "\n\n"


def test_a_wrong_call_says_how_to_call_it() -> None:
    done = installed("only-one")
    assert done.returncode == 2 and done.stderr.startswith("usage: installed.py")
