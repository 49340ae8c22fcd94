"""Ansible's default output, with a refusal shown once, on one line.

perflab refuses bad input with assert and fail tasks whose message says what is wrong and what to
do. Ansible's default callback prints such a message twice (an [ERROR] line with the task's source
quoted under it, then the result as YAML, its message wrapped over several lines), amid task
source an operator did not write. Here a failed assert or fail prints only
`fatal: [host]: FAILED! => <message>` (`failed: [host] (item=...) => <message>` in a loop), the
message on one line. A host unreachable in a task that ignores it (preflight's reach, lab-status,
the bench's DB sessions) is not shown there: the check after it names every such host, once, with
the reason. A stopped container is called stopped (community.docker's docker_api connection calls
every HTTP 409 of Docker "paused", a stopped container's "is not running" included). Every other
result is shown exactly as the default callback shows it.
"""
from __future__ import annotations

import re
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


# docker_api's message for Docker's 409 ("Conflict") on exec: a paused container, or a stopped one, whose
# error inside the parentheses says "is not running" (Docker: 'container <id> is not running').
_DOCKER_CONFLICT = re.compile(r'The container "(?P<name>[^"]+)" has been paused '
                              r'\((?P<error>(?:[^()]|\([^()]*\))*)\)')


def plain(message: str) -> str:
    """MESSAGE with docker_api's "has been paused" said as Docker said it: a stopped container is stopped."""
    def said(found: re.Match[str]) -> str:
        if "is not running" in found.group("error"):
            return f'the container "{found.group("name")}" is stopped (start it: docker start {found.group("name")})'
        return found.group(0)
    return _DOCKER_CONFLICT.sub(said, message)


def refusal(action: str, result: dict[str, Any]) -> str | None:
    """The one-line message of a failed assert or fail, else None (shown as Ansible shows it)."""
    msg = result.get("msg")
    if action not in REFUSING_ACTIONS or not isinstance(msg, str) or not msg.strip():
        return None
    return plain(" ".join(msg.split()))


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

    def v2_runner_on_unreachable(self, result: Any) -> None:
        # The check after a task that ignores unreachable hosts names each one with its reason.
        if result.task.ignore_unreachable and self._display.verbosity < 1:
            return
        super().v2_runner_on_unreachable(result)

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
