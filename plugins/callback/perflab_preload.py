"""Load the lab's connection plugin once, in the controller, before Ansible forks its workers.

Ansible forks a worker process per host and task, and the worker loads the connection plugin
itself. community.docker.docker_api (the local default's connection) imports requests, urllib3
and its Docker API client on every load: in a warm `make lab-up` that was over half of the
controller's CPU (py-spy, 5,400 samples). Loaded here once, every forked worker inherits it from
the parent process and finds it in sys.modules.
"""
from __future__ import annotations

from typing import Any

from ansible.errors import AnsibleError
from ansible.plugins.callback import CallbackBase
from ansible.plugins.loader import connection_loader
from ansible.utils.display import Display

DOCUMENTATION = """
name: perflab_preload
type: aggregate
short_description: load the lab's connection plugin once, before the workers fork
description:
  - Loads community.docker.docker_api in the controller process at the start of a playbook, so
    that the worker processes forked for every task inherit it instead of importing it again.
  - Changes nothing else; SSH labs pay one import of about a third of a second.
requirements:
  - enabled in ansible.cfg (callbacks_enabled)
"""

# The connection plugins worth loading ahead: the heavy ones a perflab inventory uses.
PRELOADED_CONNECTIONS = ("community.docker.docker_api",)

display = Display()


class CallbackModule(CallbackBase):  # type: ignore[misc]
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "perflab_preload"
    CALLBACK_NEEDS_ENABLED = True

    def v2_playbook_on_start(self, playbook: Any) -> None:
        for name in PRELOADED_CONNECTIONS:
            try:
                connection_loader.get(name, class_only=True)
            except (AnsibleError, ImportError) as exc:  # not installed: the workers will say so if it is used
                display.vvv(f"perflab_preload: {name} not preloaded: {exc}")
