"""Write a file on the controller, in the task's own worker: `perflab.lab.controller_copy`.

`ansible.builtin.copy` with `delegate_to: localhost` runs a module (0.35 s on an idle controller, up to
1 s during a run; controller_command.py says why) to put a few lines into the run's
results directory. This action writes them itself: content to dest, with mode, through a temporary
file in dest's directory renamed over it, so a reader never sees half a file. It reports changed
only where dest's bytes or mode differ, writes nothing under --check, and gives a diff under --diff.

dest's directory must exist, unless create_dir: true makes it (mode 0755, its parents too). With
unsafe_writes: true, as the copy module's, dest is written in place where the temporary file cannot
be (a full disk: the record of a failed run must still get there).
"""
from __future__ import annotations

import os
import stat
import tempfile
from typing import Any

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase

ARGUMENTS: dict[str, Any] = {
    "content": {"type": "str", "required": True},
    "dest": {"type": "path", "required": True},
    "mode": {"type": "raw", "default": "0644"},
    "create_dir": {"type": "bool", "default": False},
    "unsafe_writes": {"type": "bool", "default": False},
}


def mode_of(given: Any) -> int:
    """'0644' (as ansible-lint wants modes written) or the number YAML read from an unquoted 0644."""
    if isinstance(given, int) and not isinstance(given, bool) and 0 <= given <= 0o7777:
        return given
    text = str(given)
    if not text.isdigit() or len(text) not in (3, 4) or any(digit in text for digit in "89"):
        raise AnsibleActionFail(f"controller_copy: mode must be octal digits such as '0644', got '{text}'")
    return int(text, 8)


def write(content: str, dest: str, mode: int, check: bool, create_dir: bool = False,
          unsafe_writes: bool = False) -> dict[str, Any]:
    """Writes CONTENT to DEST (mode MODE) unless it is there already; CHECK writes nothing."""
    data = content.encode()
    directory = os.path.dirname(os.path.abspath(dest))
    if not os.path.isdir(directory):
        if not create_dir:
            raise AnsibleActionFail(f"controller_copy: {dest}: its directory {directory} does not exist")
        if not check:
            os.makedirs(directory, mode=0o755, exist_ok=True)
    try:
        with open(dest, "rb") as current:
            before: bytes | None = current.read()
        before_mode: int | None = stat.S_IMODE(os.stat(dest).st_mode)
    except FileNotFoundError:
        before, before_mode = None, None
    changed = before != data or before_mode != mode
    if changed and not check:
        try:
            replace(data, dest, mode)
        except OSError:
            if not unsafe_writes:
                raise
            with open(dest, "wb") as out:
                out.write(data)
            os.chmod(dest, mode)
    return {"changed": changed, "dest": dest, "mode": f"{mode:04o}", "size": len(data),
            "diff": {"before": (before or b"").decode(errors="replace"), "after": content,
                     "before_header": dest, "after_header": dest}}


def replace(data: bytes, dest: str, mode: int) -> None:
    """DEST replaced whole by DATA: written to a temporary file beside it, then renamed over it."""
    handle, partial = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(dest)), prefix=f".{os.path.basename(dest)}.")
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
        os.chmod(partial, mode)
        os.replace(partial, dest)
    except BaseException:
        os.unlink(partial)
        raise


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = False

    def run(self, tmp: str | None = None, task_vars: dict[str, Any] | None = None) -> dict[str, Any]:
        result = super().run(tmp, task_vars)
        _, args = self.validate_argument_spec(argument_spec=ARGUMENTS)
        written = write(args["content"], args["dest"], mode_of(args["mode"]), bool(self._task.check_mode),
                        args["create_dir"], args["unsafe_writes"])
        if not self._task.diff:
            del written["diff"]
        result.update(written)
        return result
