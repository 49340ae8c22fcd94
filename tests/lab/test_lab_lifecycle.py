"""The lab's lifecycle on the local default: up from nothing, idempotent, --check, status, down.
Runs last (see conftest.py): it ends by taking the lab down."""
from __future__ import annotations

import re
import subprocess

from lab_helpers import LAB_HOSTS, LAB_NETWORK, docker_names, play_recap, run_make, tail


def test_lab_up_converges_every_host(lab: str) -> None:
    recap = play_recap(lab)
    assert set(LAB_HOSTS) <= set(recap), recap
    for host, counters in recap.items():
        assert counters["failed"] == 0 and counters["unreachable"] == 0, (host, counters)


def test_containers_are_separated_and_constrained(lab: str) -> None:
    inspected = subprocess.run(
        ["docker", "inspect", "--format",
         "{{.Name}} {{.HostConfig.CpusetCpus}} {{.HostConfig.Memory}} {{.State.Running}}", *LAB_HOSTS],
        capture_output=True, text=True, check=True).stdout.split("\n")
    rows = {line.split()[0].lstrip("/"): line.split()[1:] for line in inspected if line}
    assert rows["perflab-app"][0] == "1", rows
    assert all(row[2] == "true" and int(row[1]) > 0 for row in rows.values()), rows
    for host in LAB_HOSTS:
        pid1 = subprocess.run(["docker", "exec", host, "cat", "/proc/1/comm"],
                              capture_output=True, text=True, check=True).stdout.strip()
        assert pid1 == "systemd", (host, pid1)
    somaxconn = subprocess.run(["docker", "exec", "perflab-loadgen", "cat", "/proc/sys/net/core/somaxconn"],
                               capture_output=True, text=True, check=True).stdout.strip()
    assert somaxconn == "65535"


def test_no_outgoing_connection_can_take_a_port_the_lab_listens_on(lab: str) -> None:
    """A port in a host's outgoing range may be given to a connection the host opens (the app's DB pool opens
    16 before its web server binds): then the service's start fails, 'address in use'. Seen once, on 8080."""
    for host in LAB_HOSTS:
        read = subprocess.run(["docker", "exec", host, "sh", "-c",
                               "cat /proc/sys/net/ipv4/ip_local_port_range; ss -Hltn"],
                              capture_output=True, text=True, check=True).stdout.splitlines()
        low, high = (int(port) for port in read[0].split())
        # Docker's embedded DNS (127.0.0.11) binds a port of its own as the container starts, before any connection.
        addresses = [line.split()[3].rsplit(":", 1) for line in read[1:] if line.strip()]
        listening = {int(port) for address, port in addresses if address != "127.0.0.11"}
        assert listening and not {port for port in listening if low <= port <= high}, (host, low, high, listening)


def test_check_mode_names_only_what_drifted_and_a_second_lab_up_changes_only_that(lab: str) -> None:
    # Idempotence and drift in one second lab-up (after every other test's runs): it changes exactly
    # the drifted files, modes and services below and nothing else on any host. The roles read their files' checksums in one probe and write only what differs: a drifted
    # file must still be noticed, written back with its mode, and its service restarted. --check
    # first: it reports the drift on exactly the hosts that drifted and changes nothing.
    dropin = "/etc/systemd/system/prometheus-node-exporter.service.d/perflab.conf"
    limits = "/etc/security/limits.d/60-perflab.conf"
    grouping = "/etc/prometheus-process-exporter/config.yml"
    subprocess.run(["docker", "exec", "perflab-app", "sh", "-c", f"echo '# drift' >> {dropin}"], check=True)
    subprocess.run(["docker", "exec", "perflab-loadgen", "chmod", "600", limits], check=True)
    subprocess.run(["docker", "exec", "perflab-db", "rm", "-f", grouping], check=True)

    def read(host: str, command: str) -> str:
        return subprocess.run(["docker", "exec", host, "sh", "-c", command], capture_output=True, text=True,
                              check=False).stdout

    checked = run_make("lab-up", "ANSIBLE_ARGS=--check")
    assert checked.returncode == 0, tail(checked.stdout, 120)
    would_change = {host for host, counters in play_recap(checked.stdout).items() if counters["changed"]}
    assert would_change == {"perflab-app", "perflab-db", "perflab-loadgen"}, tail(checked.stdout, 200)
    assert "# drift" in read("perflab-app", f"cat {dropin}"), "--check wrote the file back"
    assert read("perflab-loadgen", f"stat -c %a {limits}").strip() == "600", "--check changed the mode"
    assert read("perflab-db", f"cat {grouping}") == "", "--check wrote the grouping back"

    again = run_make("lab-up")
    assert again.returncode == 0, tail(again.stdout, 120)
    recap = play_recap(again.stdout)
    changed = {host: counters["changed"] for host, counters in recap.items() if counters["changed"]}
    # The file and its exporter's restart on app and db; the mode on loadgen.
    assert changed == {"perflab-app": 2, "perflab-db": 2, "perflab-loadgen": 1}, \
        f"{changed}\n" + tail(again.stdout, 200)
    assert "# drift" not in read("perflab-app", f"cat {dropin}")
    assert read("perflab-loadgen", f"stat -c %a {limits}").strip() == "644"
    assert "process_names" in read("perflab-db", f"cat {grouping}")


def test_lab_status_names_every_host_and_tier(lab: str) -> None:
    status = run_make("lab-status")
    assert status.returncode == 0, tail(status.stdout)
    for host, tier in zip(LAB_HOSTS, ("loadgen", "db", "app", "monitoring")):
        assert f"{host} [{tier}]" in status.stdout, tail(status.stdout)
        # The host's entry, however the YAML output wrapped it: up to the next entry or section.
        entry = re.search(rf"{re.escape(host)} \[{tier}\](.*?)(?: - perflab-|prometheus targets)", " ".join(status.stdout.split()))
        assert entry and "perflab-firewall=active" in entry.group(1), tail(status.stdout)
    assert "prometheus targets" in status.stdout
    assert "UNREACHABLE" not in status.stdout.split("prometheus targets")[0], tail(status.stdout)
    # A service down: still every line, then one naming it and its target, and a non-zero exit.
    subprocess.run(["docker", "exec", "perflab-db", "systemctl", "stop", "prometheus-mysqld-exporter.service"], check=True)
    try:
        down = run_make("lab-status")
    finally:
        subprocess.run(["docker", "exec", "perflab-db", "systemctl", "start", "prometheus-mysqld-exporter.service"], check=True)
    assert down.returncode != 0, tail(down.stdout)
    assert "perflab-db [db]" in down.stdout and "perflab-app [app]" in down.stdout, tail(down.stdout)
    problems = re.search(r"lab-status: (\d+) problem\(s\): (.*?)\"?$", down.stdout, re.MULTILINE)
    assert problems, tail(down.stdout)
    assert problems[2].split("; ")[0] == "perflab-db prometheus-mysqld-exporter=inactive", problems[0]


def test_lab_down_leaves_no_container_or_network(lab: str) -> None:
    down = run_make("lab-down")
    assert down.returncode == 0, tail(down.stdout)
    assert [name for name in docker_names("container", "perflab") if name in LAB_HOSTS] == []
    assert LAB_NETWORK not in docker_names("network", LAB_NETWORK)
