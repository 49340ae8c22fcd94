"""Run a command on the controller, in the task's own worker: `perflab.lab.controller_command`.

`ansible.builtin.command` with `delegate_to: localhost` runs a module: Ansible packs it with its
module_utils, starts a Python for it and that Python imports the utils again from the zip, with no
bytecode cache. That is 0.35 s on an idle controller and 0.7-1.1 s during a run, for a command that
takes 0.2 s (`perflab app show`). A run calls perflab about ten times on the controller; this action
starts the command itself, as the lookup plugins do, and returns what the command module returns:
rc, stdout, stderr and their lines, cmd, start, end and delta.

Arguments: argv (a list, no shell), chdir, stdin (with a newline added, unless stdin_add_newline: false, as
the command module's), env (added to the controller's environment).
A non-zero exit fails the task, as the command module does ("non-zero return code"), unless
failed_when says otherwise. It changes nothing of its own, so changed_when decides (default: changed,
as the command module says). Under --check it is skipped, as the command module is, unless the task
sets check_mode: false.
"""
from __future__ import annotations

import datetime
import os
import subprocess
from typing import Any

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase

ARGUMENTS: dict[str, Any] = {
    "argv": {"type": "list", "elements": "str", "required": True},
    "chdir": {"type": "path"},
    "stdin": {"type": "str"},
    "stdin_add_newline": {"type": "bool", "default": True},
    "env": {"type": "dict", "default": {}},
}


def run_command(argv: list[str], chdir: str | None, stdin: str | None, env: dict[str, Any]) -> dict[str, Any]:
    """The command module's result for ARGV run here: rc, stdout, stderr (trailing newline removed), lines, times."""
    if not argv:
        raise AnsibleActionFail("controller_command: argv is empty")
    started = datetime.datetime.now()
    try:
        done = subprocess.run(argv, cwd=chdir, input=stdin, capture_output=True, text=True, check=False,
                              env=dict(os.environ, **{str(k): str(v) for k, v in env.items()}))
    except OSError as error:  # the program is missing or not executable: the command module's rc 2
        return {"failed": True, "rc": 2, "cmd": argv, "msg": f"[Errno {error.errno}] {error.strerror}: {argv[0]!r}",
                "stdout": "", "stderr": "", "stdout_lines": [], "stderr_lines": []}
    ended = datetime.datetime.now()
    stdout, stderr = done.stdout.rstrip("\n"), done.stderr.rstrip("\n")
    result: dict[str, Any] = {
        "changed": True, "rc": done.returncode, "cmd": argv, "stdout": stdout, "stderr": stderr,
        "stdout_lines": stdout.splitlines(), "stderr_lines": stderr.splitlines(),
        "start": str(started), "end": str(ended), "delta": str(ended - started),
    }
    if done.returncode != 0:
        result.update(failed=True, msg="non-zero return code")
    return result


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = False

    def run(self, tmp: str | None = None, task_vars: dict[str, Any] | None = None) -> dict[str, Any]:
        result = super().run(tmp, task_vars)
        _, args = self.validate_argument_spec(argument_spec=ARGUMENTS)
        if self._task.check_mode:
            return dict(result, skipped=True, changed=False, msg="Command would have run if not in check mode")
        stdin = args["stdin"] + "\n" if args["stdin"] is not None and args["stdin_add_newline"] else args["stdin"]
        result.update(run_command(args["argv"], args["chdir"], stdin, args["env"]))
        return result
