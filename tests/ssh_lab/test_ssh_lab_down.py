"""`make lab-down` on the SSH lab (tests/sshlab.py), after its other tests (tests/conftest.py orders
this file last): every lab service stopped, the machines and the generated secrets kept."""
from __future__ import annotations

from pathlib import Path

import pytest

from labkit import INVENTORY, ROOT, SSH_LAB, make, tail
from sshlab import HOSTS, NETWORK, docker

pytestmark = pytest.mark.skipif(not SSH_LAB, reason="the SSH lab's tests run with PERFLAB_TEST_LAB=ssh (make test-lab)")
LAB_UNITS = ("prometheus-node-exporter", "prometheus-process-exporter", "mariadb", "prometheus-mysqld-exporter",
             "prometheus")


def unit_states(host: str) -> dict[str, str]:
    states = docker("exec", f"perflab-ssh-{host}", "systemctl", "is-active", *LAB_UNITS, check=False).split()
    return dict(zip(LAB_UNITS, states))


def test_lab_down_stops_every_service_and_keeps_the_machines_and_secrets(lab: str) -> None:
    inventory = INVENTORY
    down = make("lab-down", f"INVENTORY={inventory}")
    assert down.returncode == 0, "make lab-down on SSH hosts failed:\n" + tail(down.stdout, 80)
    for host in HOSTS:
        states = unit_states(host)
        assert all(state != "active" for state in states.values()), (host, states)
    # The machines stay: lab-down on SSH hosts stops services, it removes nothing.
    running = docker("ps", "--filter", f"network={NETWORK}", "--format", "{{.Names}}").split()
    assert sorted(running) == sorted(f"perflab-ssh-{host}" for host in HOSTS), running
    assert (ROOT / "secrets" / Path(INVENTORY).name / "ca.crt").is_file(), "lab-down must keep the generated secrets"
