"""The controller's own command and file actions (perflab.lab: collections/ansible_collections/perflab/lab/plugins/action), run by a
real ansible-playbook on the controller with the lab's ansible.cfg: what a task gets back, its failures, --check
and --diff. What they save a run is make bench-overhead's to print (a timed test would judge the machine)."""
from __future__ import annotations

import errno
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import yaml  # type: ignore[import-untyped]

ROOT = Path(__file__).resolve().parents[2]
ACTIONS = ROOT / "collections" / "ansible_collections" / "perflab" / "lab" / "plugins" / "action"
PLAYBOOK_BIN = Path(sys.executable).parent / "ansible-playbook"


def load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, ACTIONS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def play(tmp_path: Path, tasks: list[dict[str, Any]], *options: str) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    """Runs TASKS on the controller (localhost) with the lab's ansible.cfg; returns the run and each task's
    registered result by the name it registers."""
    results = tmp_path / "results.json"
    registers = [task["register"] for task in tasks if "register" in task]
    playbook = [{"hosts": "localhost", "gather_facts": False, "tasks": [
        *tasks,
        {"name": "Keep the results", "check_mode": False, "perflab.lab.controller_copy": {
            "content": "{{ {" + ", ".join(f"'{name}': {name}" for name in registers) + "} | to_json }}",
            "dest": str(results)}}]}]
    path = tmp_path / "play.yml"
    path.write_text(yaml.safe_dump(playbook))
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), ANSIBLE_NOCOLOR="1",
               ANSIBLE_LOCALHOST_WARNING="0", ANSIBLE_INVENTORY_UNPARSED_WARNING="0")
    done = subprocess.run([str(PLAYBOOK_BIN), "-i", "localhost,", "-c", "local",
                           "-e", f"ansible_python_interpreter={sys.executable}", str(path), *options],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=False)
    return done, (json.loads(results.read_text()) if results.exists() else {})


def test_a_command_on_the_controller_returns_what_the_command_module_returns(tmp_path: Path) -> None:
    tasks: list[dict[str, Any]] = [
        {"name": "Echo", "register": "echoed", "perflab.lab.controller_command": {
            "argv": ["sh", "-c", 'printf "one\\ntwo\\n"; echo warn >&2; pwd; cat; echo "$PERFLAB_X"'],
            "chdir": str(tmp_path), "stdin": "from stdin", "env": {"PERFLAB_X": "x"}}},
        {"name": "Exit 3 where that is not a failure", "register": "three", "failed_when": "three.rc not in [0, 3]",
         "changed_when": False, "perflab.lab.controller_command": {"argv": ["sh", "-c", "exit 3"]}},
    ]
    done, got = play(tmp_path, tasks)
    assert done.returncode == 0, done.stdout + done.stderr
    echoed = got["echoed"]
    assert (echoed["rc"], echoed["stdout_lines"], echoed["stderr"], echoed["changed"]) == (
        0, ["one", "two", str(tmp_path), "from stdin", "x"], "warn", True)
    assert echoed["cmd"][0] == "sh" and echoed["delta"].startswith("0:00:")
    assert (got["three"]["rc"], got["three"]["changed"], got["three"].get("failed")) == (3, False, False)


def test_a_failing_command_fails_its_task_with_its_stderr(tmp_path: Path) -> None:
    done, _ = play(tmp_path, [{"name": "Fail", "perflab.lab.controller_command": {
        "argv": ["sh", "-c", "echo 'perflab app: no app named nosuch' >&2; exit 2"]}}])
    assert done.returncode == 2, done.stdout
    assert "non-zero return code" in done.stdout and "perflab app: no app named nosuch" in done.stdout, done.stdout
    done, _ = play(tmp_path, [{"name": "Missing", "perflab.lab.controller_command": {"argv": ["/nonexistent/perflab"]}}])
    assert done.returncode == 2 and "No such file or directory: '/nonexistent/perflab'" in done.stdout, done.stdout


def test_under_check_a_command_is_skipped_unless_its_task_says_check_mode_false(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    tasks: list[dict[str, Any]] = [
        {"name": "Would change", "register": "skipped", "perflab.lab.controller_command": {"argv": ["touch", str(marker)]}},
        {"name": "Reads", "register": "read", "check_mode": False, "perflab.lab.controller_command": {"argv": ["echo", "read"]}},
    ]
    done, got = play(tmp_path, tasks, "--check")
    assert done.returncode == 0, done.stdout + done.stderr
    assert not marker.exists() and got["skipped"]["skipped"] is True and got["read"]["stdout"] == "read"


def test_a_file_on_the_controller_is_written_once_with_its_mode(tmp_path: Path) -> None:
    dest = tmp_path / "run" / "status.json"
    task = {"name": "Write", "register": "written", "perflab.lab.controller_copy": {
        "content": '{"status": "incomplete"}\n', "dest": str(dest), "mode": "0600", "create_dir": True}}
    done, got = play(tmp_path, [task])
    assert done.returncode == 0, done.stdout + done.stderr
    assert dest.read_text() == '{"status": "incomplete"}\n' and oct(dest.stat().st_mode & 0o777) == "0o600"
    assert got["written"]["changed"] is True
    done, got = play(tmp_path, [task])
    assert got["written"]["changed"] is False, "the same bytes and mode again: no change"
    assert [path.name for path in dest.parent.iterdir()] == ["status.json"], "no temporary file left"


def test_under_check_a_file_is_not_written_and_diff_shows_the_change(tmp_path: Path) -> None:
    dest = tmp_path / "out.txt"
    dest.write_text("before\n")
    done, got = play(tmp_path, [{"name": "Write", "register": "written", "perflab.lab.controller_copy": {
        "content": "after\n", "dest": str(dest)}}], "--check", "--diff")
    assert done.returncode == 0, done.stdout + done.stderr
    assert dest.read_text() == "before\n" and got["written"]["changed"] is True
    assert "-before" in done.stdout and "+after" in done.stdout, done.stdout


def test_a_file_whose_directory_is_missing_is_refused_unless_create_dir(tmp_path: Path) -> None:
    done, _ = play(tmp_path, [{"name": "Write", "perflab.lab.controller_copy": {
        "content": "x", "dest": str(tmp_path / "nosuch" / "out.txt")}}])
    assert done.returncode == 2 and f"its directory {tmp_path / 'nosuch'} does not exist" in done.stdout, done.stdout
    done, _ = play(tmp_path, [{"name": "Write", "perflab.lab.controller_copy": {
        "content": "x", "dest": str(tmp_path / "out.txt"), "mode": "0999"}}])
    assert done.returncode == 2 and "mode must be octal digits such as '0644', got '0999'" in done.stdout, done.stdout


def test_with_unsafe_writes_a_full_disk_still_gets_the_record(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """mark_incomplete.yml's status.json, on a results directory without room for a temporary file beside it."""
    copy = load("controller_copy")
    dest = tmp_path / "status.json"
    dest.write_text("{}")

    def full(*_: object, **__: object) -> tuple[int, str]:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(tempfile, "mkstemp", full)
    with pytest.raises(OSError):
        copy.write('{"status": "incomplete"}', str(dest), 0o644, check=False)
    assert dest.read_text() == "{}"
    assert copy.write('{"status": "incomplete"}', str(dest), 0o644, check=False, unsafe_writes=True)["changed"]
    assert dest.read_text() == '{"status": "incomplete"}'

