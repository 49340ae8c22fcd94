"""perflab.atomic, the one atomic write: a write that fails leaves the old file as it was and
nothing beside it, whichever command writes (a run's files, history.csv, report.html)."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from perflab import atomic
from report.builder import perflab

OLD = "run_id,verdict\nold,VALID\n"


def _target(tmp_path: Path) -> Path:
    target = tmp_path / "history.csv"
    target.write_text(OLD, encoding="utf-8")
    return target


def test_a_write_replaces_the_file_whole(tmp_path: Path) -> None:
    target = _target(tmp_path)
    atomic.write_text(target, "a,b\r\nnew\n", newline="")
    assert target.read_bytes() == b"a,b\r\nnew\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["history.csv"]


def test_a_write_that_fails_halfway_leaves_the_old_file_and_no_partial(tmp_path: Path) -> None:
    target = _target(tmp_path)
    # open() has created the .partial when the encoder refuses the lone surrogate.
    with pytest.raises(UnicodeEncodeError):
        atomic.write_text(target, "run_id,verdict\n" + "\ud800\n")
    assert target.read_text(encoding="utf-8") == OLD
    assert sorted(p.name for p in tmp_path.iterdir()) == ["history.csv"]


def test_a_rename_that_fails_leaves_the_old_file_and_no_partial(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = _target(tmp_path)

    def refused(source: object, destination: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", refused)
    with pytest.raises(OSError):
        atomic.write_text(target, "new\n")
    assert target.read_text(encoding="utf-8") == OLD
    assert sorted(p.name for p in tmp_path.iterdir()) == ["history.csv"]


def test_report_and_history_leave_nothing_behind_when_they_cannot_write(tmp_path: Path) -> None:
    """Their output named as an existing directory: the rename fails (IsADirectoryError). Before
    perflab.atomic, `perflab report` left out.html.partial beside it."""
    results = tmp_path / "results"
    results.mkdir()
    for name in ("out.html", "out.csv"):
        (tmp_path / name).mkdir()
    refused = [perflab(command, "--results", results, "--output", tmp_path / output)
               for command, output in (("report", "out.html"), ("history", "out.csv"))]
    assert [done.returncode for done in refused] == [4, 4], [done.stderr for done in refused]
    assert all("Is a directory: no " in done.stderr for done in refused), [done.stderr for done in refused]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.csv", "out.html", "results"]
    assert [list((tmp_path / name).iterdir()) for name in ("out.html", "out.csv")] == [[], []]
