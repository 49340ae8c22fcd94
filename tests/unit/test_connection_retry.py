"""The local lab's connection survives the Docker daemon losing an exec's output
(plugins/callback/perflab_preload.py): the exec that makes Ansible's remote temporary directory and
the read of the user's ids before a file copy (bytes, as the connection passes it) are run again,
any other command is not. And the Jinja filters it loads before the workers fork are theirs without an import."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

PLUGIN = Path(__file__).resolve().parents[2] / "plugins" / "callback" / "perflab_preload.py"
# What ansible-core's ShellBase.mkdtemp gives the connection, wrapped in /bin/sh -c.
MKDTEMP = ("/bin/sh -c '( umask 77 && mkdir -p \"` echo ~/.ansible/tmp `\"&& mkdir \"` echo "
           "~/.ansible/tmp/ansible-tmp-1764-42 `\" && echo ansible-tmp-1764-42=\"` echo "
           "~/.ansible/tmp/ansible-tmp-1764-42 `\" ) && sleep 0'")


def load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("perflab_preload", PLUGIN)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["perflab_preload"] = module
    spec.loader.exec_module(module)
    return module


preload = load()


class Daemon:
    """Answers each exec with the next of its answers, and keeps the commands it was given."""

    def __init__(self, *answers: tuple[int, bytes, bytes]) -> None:
        self.answers = list(answers)
        self.commands: list[str | bytes] = []

    def exec_command(self, cmd: str | bytes, in_data: bytes | None = None, sudoable: bool = False) -> tuple[int, bytes, bytes]:
        self.commands.append(cmd)
        return self.answers.pop(0)


LOST = (0, b"", b"")
MADE = (0, b"ansible-tmp-1764-42=/root/.ansible/tmp/ansible-tmp-1764-42\n", b"")


def run(daemon: Daemon, cmd: str | bytes) -> tuple[int, bytes, bytes]:
    wrapped = preload.retrying_lost_output(type(daemon).exec_command)
    result: tuple[int, bytes, bytes] = wrapped(daemon, cmd)
    return result


def test_a_lost_output_of_the_remote_tmp_exec_costs_one_retry_with_mkdir_p(capsys: Any) -> None:
    daemon = Daemon(LOST, MADE)
    assert run(daemon, MKDTEMP) == MADE
    assert len(daemon.commands) == 2
    assert '&& mkdir "` echo ~/.ansible/tmp/ansible-tmp' in daemon.commands[0]
    assert '&& mkdir -p "` echo ~/.ansible/tmp/ansible-tmp' in daemon.commands[1]


def test_it_gives_up_after_three_tries_and_ansible_says_why() -> None:
    daemon = Daemon(LOST, LOST, LOST, MADE)
    assert run(daemon, MKDTEMP) == LOST
    assert len(daemon.commands) == preload.RETRIES == 3


@pytest.mark.parametrize("answer", [(1, b"", b"mkdir: cannot create directory: No space left on device\n"), MADE])
def test_an_answer_is_not_retried(answer: tuple[int, bytes, bytes]) -> None:
    daemon = Daemon(answer, MADE)
    assert run(daemon, MKDTEMP) == answer
    assert len(daemon.commands) == 1


def test_no_other_command_runs_twice_even_with_no_output() -> None:
    daemon = Daemon(LOST, MADE)
    assert run(daemon, "/bin/sh -c '/usr/bin/python3 && sleep 0'") == LOST
    assert len(daemon.commands) == 1
    assert run(Daemon(LOST, MADE), b"/bin/sh -c 'rm -f -r /tmp/x'") == LOST  # bytes too


IDS = (0, b"0\n0\n", b"")


def test_a_lost_output_of_the_ids_read_before_a_copy_costs_one_retry() -> None:
    """docker_api's put_file reads `id -u && id -g` as bytes: a CI lab-up lost its output once, and the
    wrapper, which took every command for text, failed the copy with a TypeError."""
    daemon = Daemon(LOST, IDS)
    assert run(daemon, b"id -u && id -g") == IDS
    assert daemon.commands == [b"id -u && id -g"] * 2
    assert run(Daemon(IDS, IDS), b"id -u && id -g") == IDS


def test_a_bytes_command_that_is_answered_goes_through_untouched() -> None:
    daemon = Daemon((0, b"x\n", b""))
    assert run(daemon, b"cat /etc/hostname") == (0, b"x\n", b"")
    assert daemon.commands == [b"cat /etc/hostname"]


def test_the_lab_connection_is_wrapped_once_however_often_a_playbook_starts() -> None:
    from ansible_collections.community.docker.plugins.connection import docker_api  # type: ignore[import-untyped]

    original = docker_api.Connection.exec_command
    try:
        preload.guard(docker_api.Connection)
        preload.guard(docker_api.Connection)
        wrapped = docker_api.Connection.exec_command
        assert wrapped.perflab_retries_lost_output
        assert wrapped.__closure__[0].cell_contents is original
    finally:
        docker_api.Connection.exec_command = original


# In a process of its own: Ansible's plugin loader configured from the project's ansible.cfg (plugins/filter), the
# preload run as at a playbook's start, then a fork, as Ansible forks a worker per task, that looks up the lab's filter.
FORKED_WORKER = """
import importlib.util, os, sys
from ansible.plugins.loader import filter_loader, init_plugin_loader
init_plugin_loader()
spec = importlib.util.spec_from_file_location("perflab_preload", sys.argv[1])
preload = importlib.util.module_from_spec(spec)
spec.loader.exec_module(preload)
preload.CallbackModule().v2_playbook_on_start(None)
pid = os.fork()
if pid == 0:
    before = set(sys.modules)
    found = filter_loader.get("wrk2_calibration_ms")
    os._exit(0 if found is not None and set(sys.modules) == before else 3)
os._exit(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))
"""


def test_a_worker_forked_after_the_preload_finds_the_filters_without_importing_them() -> None:
    """A worker that templated a filter loaded every filter plugin, perflab's wrk2 one with perflab.wrk2 among them
    (a third of the workers' CPU in a warm make bench): after the preload the controller holds them all."""
    import os
    import subprocess

    root = PLUGIN.parents[2]
    worker = subprocess.run([sys.executable, "-c", FORKED_WORKER, str(PLUGIN)], cwd=root, capture_output=True,
                            text=True, env=dict(os.environ, ANSIBLE_CONFIG=str(root / "ansible.cfg")), check=False)
    assert worker.returncode == 0, f"the forked worker imported plugins or did not find the filter: {worker.stderr}"
