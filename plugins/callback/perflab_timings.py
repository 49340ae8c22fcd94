"""Where a playbook's seconds go: each task's start and end, as JSON lines (make bench-overhead).

Enabled for one command by ANSIBLE_CALLBACKS_ENABLED=perflab_preload,perflab_timings with
PERFLAB_TIMINGS=<file>: every task (the tasks of included roles too) appends one line
{"play", "task", "start", "end"} (unix seconds) when the next task starts or the play ends,
so the lines tile the playbook's time. tests/bench/bench_overhead.py reads them.
"""
from __future__ import annotations

import json
import os
import time
from typing import Any

from ansible.plugins.callback import CallbackBase

DOCUMENTATION = """
name: perflab_timings
type: aggregate
short_description: each task's start and end as JSON lines in PERFLAB_TIMINGS
description:
  - Appends {"play", "task", "start", "end"} for every task to the file PERFLAB_TIMINGS names.
  - Writes nothing where PERFLAB_TIMINGS is unset.
requirements:
  - enabled through ANSIBLE_CALLBACKS_ENABLED (make bench-overhead does)
"""


class CallbackModule(CallbackBase):  # type: ignore[misc]
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "perflab_timings"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self) -> None:
        super().__init__()
        self.path = os.environ.get("PERFLAB_TIMINGS")
        self.play = ""
        self.task: tuple[str, float] | None = None

    def _close(self) -> None:
        if self.task is None or not self.path:
            return
        name, start = self.task
        with open(self.path, "a", encoding="utf-8") as out:
            out.write(json.dumps({"play": self.play, "task": name, "start": start, "end": time.time()}) + "\n")
        self.task = None

    def v2_playbook_on_play_start(self, play: Any) -> None:
        self._close()
        self.play = play.get_name().strip()

    def v2_playbook_on_task_start(self, task: Any, is_conditional: bool) -> None:
        self._close()
        self.task = (task.get_name().strip(), time.time())

    v2_playbook_on_handler_task_start = v2_playbook_on_task_start

    def v2_playbook_on_stats(self, stats: Any) -> None:
        self._close()
