"""plugins/callback/perflab.py: a refusal on one line, a stopped container called stopped."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

REPO = Path(__file__).resolve().parents[2]


def callback() -> ModuleType:
    spec = importlib.util.spec_from_file_location("perflab_callback", REPO / "plugins" / "callback" / "perflab.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# community.docker's docker_api connection on exec in a stopped container (Docker's 409), as the
# preflight's reachable.yml puts it in its refusal.
STOPPED = ('Unreachable: perflab-db (tier db) at perflab-db over community.docker.docker_api: The container '
           '"perflab-db" has been paused (409 Client Error for http+docker://localhost/v1.47/containers/perflab-db/'
           'exec: Conflict ("container 5d2b8c0f1e7a is not running")). Fix the address or start the host, then retry.')


def test_a_stopped_container_is_called_stopped_in_the_refusal() -> None:
    """Issue 24: a stopped host was reported as "paused", three times over."""
    said = callback().refusal("ansible.builtin.assert", {"msg": STOPPED})
    assert said == ('Unreachable: perflab-db (tier db) at perflab-db over community.docker.docker_api: the container '
                    '"perflab-db" is stopped (start it: docker start perflab-db). Fix the address or start the host, '
                    'then retry.')
    assert "paused" not in said


def test_a_paused_container_stays_paused_and_other_messages_are_untouched() -> None:
    plain = callback().plain
    paused = ('The container "perflab-db" has been paused (409 Client Error for http+docker://localhost/v1.47/'
              'containers/perflab-db/exec: Conflict ("cannot exec in a paused container: 5d2b8c0f1e7a"))')
    assert plain(paused) == paused
    assert plain("Failed to connect to the host via ssh: Connection refused") == (
        "Failed to connect to the host via ssh: Connection refused")
    assert callback().refusal("ansible.builtin.debug", {"msg": STOPPED}) is None
