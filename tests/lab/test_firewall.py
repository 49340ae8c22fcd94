"""The lab network lets in only what belongs (issue 14 item 9; role lab_firewall): a container
on the lab's docker network that is not in the inventory is refused by every exporter, the DB,
the app and Prometheus (its query and write endpoints); a lab host is refused by a service it
does not need (the loadgen by the DB and the exporters, the app by Prometheus); the paths the lab
uses stay open. Connections are plain TCP connects from inside each container (bash's
/dev/tcp): "open", or "refused" (the rule's TCP reset, at once)."""
from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from lab_helpers import LAB_NETWORK, base_image
from perflab import manifest

STRANGER = "perflab-stranger"
PROMETHEUS_PORT, MYSQL_PORT, MYSQLD_EXPORTER_PORT = 9090, 3306, 9104
EXPORTER_PORTS = {"node_exporter": 9100, "process-exporter": 9256}
LAB_HOSTS = ("perflab-loadgen", "perflab-db", "perflab-app", "perflab-monitoring")


def connect(source: str, host: str, port: int) -> str:
    """'open', 'refused' or what else bash said, for a TCP connect from container SOURCE."""
    done = subprocess.run(["docker", "exec", source, "timeout", "10", "bash", "-c", f"exec 3<>/dev/tcp/{host}/{port}"],
                          capture_output=True, text=True, timeout=30, check=False)
    if done.returncode == 0:
        return "open"
    return "refused" if "Connection refused" in done.stderr else f"exit {done.returncode}: {done.stderr.strip()}"


@pytest.fixture(scope="module")
def stranger(lab: str) -> Iterator[str]:
    """A container from the lab's base image on the lab's network, in no inventory."""
    subprocess.run(["docker", "rm", "-f", STRANGER], capture_output=True, check=False)
    subprocess.run(["docker", "run", "-d", "--name", STRANGER, "--network", LAB_NETWORK, base_image(), "sleep", "900"],
                   capture_output=True, text=True, check=True)
    yield STRANGER
    subprocess.run(["docker", "rm", "-f", STRANGER], capture_output=True, check=False)


@pytest.fixture(scope="module")
def app_port(short_run: Path) -> int:
    """The port of the app the session's short run deployed (quarkus)."""
    return manifest.resolve("quarkus").port


def test_a_host_not_in_the_inventory_is_refused_by_every_lab_service(stranger: str, app_port: int) -> None:
    wanted = {(host, port): "refused" for host in LAB_HOSTS for port in EXPORTER_PORTS.values()}
    wanted |= {("perflab-db", MYSQL_PORT): "refused", ("perflab-db", MYSQLD_EXPORTER_PORT): "refused",
               ("perflab-app", app_port): "refused", ("perflab-monitoring", PROMETHEUS_PORT): "refused"}
    assert {(host, port): connect(stranger, host, port) for host, port in wanted} == wanted


def test_a_lab_host_is_refused_by_a_service_it_does_not_need(app_port: int) -> None:
    wanted = {("perflab-loadgen", "perflab-db", MYSQL_PORT): "refused",
              ("perflab-loadgen", "perflab-db", MYSQLD_EXPORTER_PORT): "refused",
              ("perflab-loadgen", "perflab-app", EXPORTER_PORTS["node_exporter"]): "refused",
              ("perflab-app", "perflab-monitoring", PROMETHEUS_PORT): "refused",
              ("perflab-db", "perflab-monitoring", PROMETHEUS_PORT): "refused"}
    assert {key: connect(*key) for key in wanted} == wanted


def test_the_paths_the_lab_uses_stay_open(app_port: int) -> None:
    wanted = {("perflab-app", "perflab-db", MYSQL_PORT): "open",
              ("perflab-loadgen", "perflab-app", app_port): "open",
              ("perflab-db", "perflab-app", app_port): "open",
              ("perflab-monitoring", "perflab-db", MYSQLD_EXPORTER_PORT): "open",
              ("perflab-monitoring", "perflab-app", app_port): "open"}
    wanted |= {("perflab-monitoring", host, port): "open" for host in LAB_HOSTS for port in EXPORTER_PORTS.values()}
    assert {key: connect(*key) for key in wanted} == wanted


def test_every_host_runs_the_firewall_unit_and_counts_what_it_refused(stranger: str) -> None:
    connect(stranger, "perflab-db", MYSQL_PORT)
    for host in LAB_HOSTS:
        state = subprocess.run(["docker", "exec", host, "systemctl", "is-active", "perflab-firewall"],
                               capture_output=True, text=True, check=False).stdout.strip()
        assert state == "active", (host, state)
    rules = subprocess.run(["docker", "exec", "perflab-db", "nft", "list", "table", "inet", "perflab"],
                           capture_output=True, text=True, check=True).stdout
    refused = [line for line in rules.splitlines() if "only app and the controller" in line]
    assert refused and "packets 0 " not in refused[0], rules
