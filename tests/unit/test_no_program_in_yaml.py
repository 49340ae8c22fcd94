"""The house's rule for tasks (issue 27, ../shared/HOUSE_STYLE.md): a program a task runs is a file under its
role's files/, type-checked and unit-tested (make test-unit runs mypy --strict on every roles/*/files/*.py),
and a task passes it arguments. No shell or command task of a role or a playbook holds more than one line of
program, in its command or in an argv word, and no role variable holds one."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml  # type: ignore[import-untyped]

ROOT = Path(__file__).resolve().parents[2]
COMMANDS = ("ansible.builtin.shell", "ansible.builtin.command", "ansible.builtin.raw", "shell", "command", "raw",
            "perflab.lab.controller_command")
NESTED = ("block", "rescue", "always", "tasks", "pre_tasks", "post_tasks", "handlers")

# A task's program in a variable is a program in YAML too: a string of more lines than one that a role's
# vars or defaults hand to an interpreter (its first line a Python import or a shebang).
PROGRAM_START = ("import ", "from ", "#!")


def tasks(items: Any) -> Iterator[dict[str, Any]]:
    for item in items or []:
        if isinstance(item, dict):
            yield item
            for key in NESTED:
                yield from tasks(item.get(key))


def program_lines(text: object) -> int:
    return len([line for line in text.splitlines() if line.strip()]) if isinstance(text, str) else 0


def programs() -> Iterator[tuple[str, str, int]]:
    """(file, task name, lines of program) of every shell or command task with more than one line, in its
    command or in one of its argv's words."""
    files = [*ROOT.glob("roles/*/tasks/*.yml"), *ROOT.glob("roles/*/handlers/*.yml"), *ROOT.glob("playbooks/*.yml")]
    for path in sorted(files):
        for task in tasks(yaml.safe_load(path.read_text(encoding="utf-8"))):
            for module in COMMANDS:
                given = task.get(module)
                words = [given.get("cmd"), *(given.get("argv") or [])] if isinstance(given, dict) else [given]
                lines = max([program_lines(word) for word in words] or [0])
                if lines > 1:
                    yield str(path.relative_to(ROOT)), str(task.get("name")), lines


def programs_in_variables() -> Iterator[tuple[str, str]]:
    """(file, variable) of every role variable whose value is a program of more lines than one."""
    for path in sorted([*ROOT.glob("roles/*/vars/*.yml"), *ROOT.glob("roles/*/defaults/*.yml")]):
        for name, value in (yaml.safe_load(path.read_text(encoding="utf-8")) or {}).items():
            if program_lines(value) > 1 and value.lstrip().startswith(PROGRAM_START):
                yield str(path.relative_to(ROOT)), name


def test_no_task_holds_a_program() -> None:
    found = {(path, name): lines for path, name, lines in programs()}
    assert not found, f"a program written inline in a task (make it a file under files/): {found}"


def test_no_variable_holds_a_program() -> None:
    found = list(programs_in_variables())
    assert not found, f"a program written in a variable (make it a file under files/): {found}"


def test_the_reader_finds_a_program_in_a_block() -> None:
    play = [{"name": "p", "hosts": "all", "tasks": [{"block": [{"name": "t", "ansible.builtin.shell": {"cmd": "a\nb\n"}}]}]}]
    assert [task["name"] for task in tasks(play) if "ansible.builtin.shell" in task] == ["t"]


def test_the_reader_finds_a_program_in_an_argv_word() -> None:
    play = [{"name": "t", "ansible.builtin.command": {"argv": ["python3", "-c", "import os\nprint(os.getpid())\n"]}}]
    assert [program_lines(word) for task in tasks(play) for word in task["ansible.builtin.command"]["argv"]] == [1, 1, 2]
