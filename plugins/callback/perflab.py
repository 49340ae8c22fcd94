"""Ansible's default output, with a refusal shown once, on one line.

perflab refuses bad input with assert and fail tasks whose message says what is wrong and what to
do. Ansible's default callback prints such a message twice (an [ERROR] line with the task's source
quoted under it, then the result as YAML, its message wrapped over several lines), amid task
source an operator did not write. Here a failed assert or fail prints only
`fatal: [host]: FAILED! => <message>` (`failed: [host] (item=...) => <message>` in a loop), the
message on one line. Every other result is shown exactly as the default callback shows it.
"""
from __future__ import annotations

from typing import Any

from ansible import constants as C
from ansible.plugins.callback.default import CallbackModule as DefaultCallback

DOCUMENTATION = """
name: perflab
type: stdout
short_description: Ansible's default output, a refusal (failed assert or fail) on one line
description:
  - Shows everything as the default callback does, except a failed assert or fail task, whose
    message is printed once, on one line, without the task's source.
extends_documentation_fragment:
  - default_callback
  - result_format_callback
requirements:
  - set as stdout_callback in ansible.cfg
"""

# The actions perflab refuses bad input with: their message is the whole story.
REFUSING_ACTIONS = frozenset({"assert", "fail", "ansible.builtin.assert", "ansible.builtin.fail"})


def refusal(action: str, result: dict[str, Any]) -> str | None:
    """The one-line message of a failed assert or fail, else None (shown as Ansible shows it)."""
    msg = result.get("msg")
    if action not in REFUSING_ACTIONS or not isinstance(msg, str) or not msg.strip():
        return None
    return " ".join(msg.split())


class CallbackModule(DefaultCallback):  # type: ignore[misc]
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "stdout"
    CALLBACK_NAME = "perflab"

    def v2_runner_on_failed(self, result: Any, ignore_errors: bool = False) -> None:
        message = refusal(result.task.action, result.result)
        if message is None or ignore_errors or (result.task.loop and "results" in result.result):
            super().v2_runner_on_failed(result, ignore_errors)
            return
        if self._last_task_banner != result.task._uuid:
            self._print_task_banner(result.task)
        self._display.display(f"fatal: [{self.host_label(result)}]: FAILED! => {message}",
                              color=C.COLOR_ERROR, stderr=self.get_option("display_failed_stderr"))

    def v2_runner_item_on_failed(self, result: Any) -> None:
        message = refusal(result.task.action, result.result)
        if message is None:
            super().v2_runner_item_on_failed(result)
            return
        if self._last_task_banner != result.task._uuid:
            self._print_task_banner(result.task)
        self._display.display(
            f"failed: [{self.host_label(result)}] (item={self._get_item_label(result.result)}) => {message}",
            color=C.COLOR_ERROR, stderr=self.get_option("display_failed_stderr"))
