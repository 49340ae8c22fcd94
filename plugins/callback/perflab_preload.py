"""Load the lab's connection plugin and the Jinja filters and tests once, in the controller, before
Ansible forks its workers, and make the connection's one transient failure cost a retry instead of a run.

Ansible forks a worker process per host and task, and the worker loads the connection plugin
itself. community.docker.docker_api (the local default's connection) imports requests, urllib3
and its Docker API client on every load: in a warm `make lab-up` that was over half of the
controller's CPU (py-spy, 5,400 samples). Loaded here once, every forked worker inherits it from
the parent process and finds it in sys.modules.

The filter and test plugins are the same case: a worker that templates a filter or a test loads every
one of them from the configured paths (ansible.builtin's and plugins/filter's perflab_wrk2, which
imports perflab.wrk2 and its model). In a warm `make bench` that was a third of the workers' CPU,
4.0 of their 12.6 CPU-s (py-spy, 2026-12-07), 3.3 of them perflab.wrk2's import. Loaded here once,
the workers inherit the loaders' caches.

The Docker daemon sometimes loses the output of a short-lived exec: the command ran, its stdout
never reached the client (moby/moby#27289, docker/docker-py#2042; community.docker#644 is the
same seen from Ansible). A loaded machine makes it likelier: on 2 cores, with the SSH lab, the
checks and a local lab-up at once, `make test`'s lab-up failed on perflab-monitoring with "failed
to resolve remote temporary directory from ansible-tmp-...: ... returned empty string", and every
local-lab test after it errored. Two execs that must print something are safe to run again:
- the one that makes Ansible's remote temporary directory (`mkdir ... && echo <its path>`): with
  its output lost Ansible cannot know the path; it is run again with `mkdir -p` (the lost run may
  have made the directory);
- the connection's own `id -u && id -g` before it copies a file (put_file), a read: with its output
  lost the copy failed (a CI lab-up: "Task failed: a bytes-like object is required, not 'str'", this
  wrapper's own mistake on that command, which comes as bytes; without it, "Error while determining
  user and group ID ... Got value: b''").
Where one of them exits 0 with no output at all, it is run again, up to RETRIES times, with a
warning. No other command is run twice: a module's run is not idempotent in general, and a lost
output there still fails the task.
"""
from __future__ import annotations

from typing import Any, Callable

from ansible.errors import AnsibleError
from ansible.plugins.callback import CallbackBase
from ansible.plugins.loader import connection_loader, filter_loader, test_loader
from ansible.utils.display import Display

DOCUMENTATION = """
name: perflab_preload
type: aggregate
short_description: load the lab's connection plugin once, before the workers fork
description:
  - Loads community.docker.docker_api in the controller process at the start of a playbook, so
    that the worker processes forked for every task inherit it instead of importing it again.
  - Loads the Jinja filter and test plugins there too (every worker that templates one loaded them all).
  - Runs the exec that makes Ansible's remote temporary directory, and the read of the user's ids
    before a file copy, again where the Docker daemon lost its output (the command ran, its stdout
    never arrived).
  - Changes nothing else; SSH labs pay one import of about a third of a second.
requirements:
  - enabled in ansible.cfg (callbacks_enabled)
"""

# The connection plugins worth loading ahead: the heavy ones a perflab inventory uses.
PRELOADED_CONNECTIONS = ("community.docker.docker_api",)

display = Display()

# Ansible's command that makes the remote temporary directory (ShellBase.mkdtemp) and prints it.
MKDTEMP_MARKS = ("mkdir ", "&& echo ansible-tmp-")
# The docker_api connection's read of the user's uid and gid before a file copy (put_file): bytes.
READ_IDS = "id -u && id -g"
RETRIES = 3

Exec = Callable[..., tuple[int, bytes, bytes]]


def _text(cmd: str | bytes) -> str:
    """A command as text: the connection passes some as bytes."""
    return cmd.decode(errors="replace") if isinstance(cmd, bytes) else cmd


def makes_remote_tmp(cmd: str | bytes) -> bool:
    return all(mark in _text(cmd) for mark in MKDTEMP_MARKS)


def reads_ids(cmd: str | bytes) -> bool:
    return _text(cmd).strip() == READ_IDS


def again(cmd: str | bytes) -> str | bytes | None:
    """CMD to run again after its output was lost (the same effect twice), or None: not to be run again."""
    if reads_ids(cmd):
        return cmd
    if makes_remote_tmp(cmd):
        return _text(cmd).replace('&& mkdir "', '&& mkdir -p "')
    return None


def retrying_lost_output(exec_command: Exec) -> Exec:
    """exec_command, with the remote temporary directory's exec run again when its output was lost."""

    def run(self: Any, cmd: str | bytes, *args: Any, **kwargs: Any) -> tuple[int, bytes, bytes]:
        rc, stdout, stderr = exec_command(self, cmd, *args, **kwargs)
        for attempt in range(2, RETRIES + 1):
            if rc != 0 or stdout or stderr:
                break
            retry = again(cmd)
            if retry is None:
                break
            what = "reads the user's ids before a copy" if reads_ids(cmd) else "makes Ansible's remote temporary directory"
            display.warning(f"perflab: the Docker daemon returned no output of the exec that {what} "
                            f"(a lost exec output, moby/moby#27289): try {attempt} of {RETRIES}")
            cmd = retry
            rc, stdout, stderr = exec_command(self, cmd, *args, **kwargs)
        return rc, stdout, stderr

    run.perflab_retries_lost_output = True  # type: ignore[attr-defined]
    return run


def guard(connection: Any) -> None:
    """The connection class's exec_command retrying a lost output, wrapped once however often it is called."""
    if not getattr(connection.exec_command, "perflab_retries_lost_output", False):
        connection.exec_command = retrying_lost_output(connection.exec_command)


class CallbackModule(CallbackBase):  # type: ignore[misc]
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "perflab_preload"
    CALLBACK_NEEDS_ENABLED = True

    def v2_playbook_on_start(self, playbook: Any) -> None:
        for name in PRELOADED_CONNECTIONS:
            try:
                connection = connection_loader.get(name, class_only=True)
            except (AnsibleError, ImportError) as exc:  # not installed: the workers will say so if it is used
                display.vvv(f"perflab_preload: {name} not preloaded: {exc}")
                continue
            if connection is not None:
                guard(connection)
        for loader in (filter_loader, test_loader):
            # Every filter (test) of the configured paths, wrapped once: the loader keeps them, the workers inherit them.
            for _plugin in loader.all():
                pass
