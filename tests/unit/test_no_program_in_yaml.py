"""The house's rule for tasks (issue 27, ../shared/HOUSE_STYLE.md): a program a task runs is a file under its
role's files/, type-checked and unit-tested (make test-unit runs mypy --strict on every roles/*/files/*.py),
and a task passes it arguments. No shell or command task of a role or a playbook holds more than one line of
program, but for the few named below with their reason."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml  # type: ignore[import-untyped]

ROOT = Path(__file__).resolve().parents[2]
COMMANDS = ("ansible.builtin.shell", "ansible.builtin.command", "ansible.builtin.raw", "shell", "command", "raw")
NESTED = ("block", "rescue", "always", "tasks", "pre_tasks", "post_tasks", "handlers")

# Not made files yet: the probe that reads a role's packages and files in one round trip (its callers add shell
# lines of their own, _common_probe_extra: a file needs that interface changed first), vegeta's encoding of a
# phase (two of the tool's own commands) and lab-status' loop over the lab's units. A file costs no more round
# trips than inline shell: the task passes it to `python3 -c` (roles/bench/vars/main.yml, __bench_db_slowdown).
STILL_INLINE = {
    ("roles/_common/tasks/probe.yml", "Read the packages' state, the apt lists and the files' checksums, modes and owners"),
    ("roles/bench/tasks/run_phase.yml", "Write vegeta's raw results as JSON lines and its text report: {{ bench_phase }}"),
    ("playbooks/lab_status.yml", "Read the state of the lab's units present on this host"),
}


def tasks(items: Any) -> Iterator[dict[str, Any]]:
    for item in items or []:
        if isinstance(item, dict):
            yield item
            for key in NESTED:
                yield from tasks(item.get(key))


def programs() -> Iterator[tuple[str, str, int]]:
    """(file, task name, lines of program) of every shell or command task with more than one line."""
    files = [*ROOT.glob("roles/*/tasks/*.yml"), *ROOT.glob("roles/*/handlers/*.yml"), *ROOT.glob("playbooks/*.yml")]
    for path in sorted(files):
        for task in tasks(yaml.safe_load(path.read_text(encoding="utf-8"))):
            for module in COMMANDS:
                given = task.get(module)
                cmd = given.get("cmd") if isinstance(given, dict) else given
                lines = [line for line in cmd.splitlines() if line.strip()] if isinstance(cmd, str) else []
                if len(lines) > 1:
                    yield str(path.relative_to(ROOT)), str(task.get("name")), len(lines)


def test_no_task_holds_a_program_but_those_named() -> None:
    found = {(path, name): lines for path, name, lines in programs()}
    assert not found.keys() - STILL_INLINE, f"a program written inline in a task (make it a file under files/): {found}"


def test_the_ones_named_are_still_there() -> None:
    """A name left here after its program became a file would let another one in unseen."""
    found = {(path, name) for path, name, _ in programs()}
    assert STILL_INLINE <= found, STILL_INLINE - found


def test_the_reader_finds_a_program_in_a_block() -> None:
    play = [{"name": "p", "hosts": "all", "tasks": [{"block": [{"name": "t", "ansible.builtin.shell": {"cmd": "a\nb\n"}}]}]}]
    assert [task["name"] for task in tasks(play) if "ansible.builtin.shell" in task] == ["t"]
