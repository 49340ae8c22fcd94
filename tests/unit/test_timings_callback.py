"""The perflab_timings callback (plugins/callback/perflab_timings.py), which make bench-overhead reads:
each task's start and end, the lines tiling the playbook's time, nothing written without PERFLAB_TIMINGS."""

from __future__ import annotations

import importlib.util
import json
import time
from pathlib import Path
from types import ModuleType

import pytest

PLUGIN = Path(__file__).resolve().parents[2] / "plugins" / "callback" / "perflab_timings.py"


def load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("perflab_timings", PLUGIN)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class Named:
    """What Ansible hands the callback for a play or a task: something with a name."""

    def __init__(self, name: str) -> None:
        self.name = name

    def get_name(self) -> str:
        return self.name


def test_every_task_gets_one_line_and_the_lines_tile_the_playbook(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "timings.jsonl"
    monkeypatch.setenv("PERFLAB_TIMINGS", str(out))
    callback = load().CallbackModule()
    callback.v2_playbook_on_play_start(Named("Bench | run "))
    callback.v2_playbook_on_task_start(Named("Warm up"), False)
    time.sleep(0.05)
    callback.v2_playbook_on_task_start(Named("Measure"), False)
    callback.v2_playbook_on_play_start(Named("Bench | parse and judge"))
    callback.v2_playbook_on_task_start(Named("Collect"), False)
    callback.v2_playbook_on_stats(None)
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(line["play"], line["task"]) for line in lines] == [
        ("Bench | run", "Warm up"), ("Bench | run", "Measure"), ("Bench | parse and judge", "Collect")]
    assert lines[0]["end"] - lines[0]["start"] >= 0.05
    assert all(a["end"] <= b["start"] + 0.01 for a, b in zip(lines, lines[1:]))


def test_nothing_is_written_without_perflab_timings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PERFLAB_TIMINGS", raising=False)
    monkeypatch.chdir(tmp_path)
    callback = load().CallbackModule()
    callback.v2_playbook_on_task_start(Named("Measure"), False)
    callback.v2_playbook_on_stats(None)
    assert list(tmp_path.iterdir()) == []
