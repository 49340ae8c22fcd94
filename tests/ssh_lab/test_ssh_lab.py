"""A lab on SSH hosts, as inventory/example describes one: `make lab-up`, `make lab-status` and
`make lab-down` with an inventory of four machines reached over SSH as a sudo user.

The "machines" are four more systemd containers from the lab's base image with sshd and sudo
added (built once as perflab-sshhost:<base tag>), on their own docker network; the inventory is
a copy of inventory/example with their addresses filled in, so every play runs as on cloud VMs:
SSH with pipelining, user `debian`, `become` through sudo, no docker anywhere in the plays. The
controller itself has no sudo here: a task that asked for privileges on the controller fails.
Everything this test creates (containers, network, image is kept, secrets/<inventory>) goes away
at the end."""
from __future__ import annotations

import json
import shutil
import re
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
import yaml

from labkit import ROOT, make, tail

TIERS = ("loadgen", "db", "app", "monitoring")
NETWORK = "perflab-ssh"
INVENTORY_NAME = "ssh-test-lab"
SSH_USER = "debian"
# The same systemd container flags as roles/lab_containers (systemd as PID 1, cgroups).
SYSTEMD_FLAGS = ["--cap-add", "SYS_ADMIN", "--cap-add", "NET_ADMIN", "--security-opt", "seccomp=unconfined",
                 "--security-opt", "apparmor=unconfined", "--cgroupns=host", "-v", "/sys/fs/cgroup:/sys/fs/cgroup:rw",
                 "--tmpfs", "/run", "--tmpfs", "/run/lock", "--stop-signal", "SIGRTMIN+3"]
LAB_UNITS = ("prometheus-node-exporter", "prometheus-process-exporter", "mariadb", "prometheus-mysqld-exporter",
             "prometheus")


def docker(*args: str, check: bool = True, timeout: float = 600) -> str:
    done = subprocess.run(["docker", *args], capture_output=True, text=True, timeout=timeout, check=False)
    if check and done.returncode != 0:
        raise AssertionError(f"docker {' '.join(args)} failed:\n{done.stdout}\n{done.stderr}")
    return done.stdout


def base_image() -> str:
    """The lab's base image, from the recipe roles/lab_containers uses (built only if missing)."""
    defaults = yaml.safe_load((ROOT / "roles/lab_containers/defaults/main.yml").read_text())
    built = subprocess.run(
        [str(ROOT / "roles/lab_containers/files/build-base-image.sh"), defaults["lab_containers_image_repository"],
         defaults["lab_containers_mirror"], ",".join(defaults["lab_containers_packages"])],
        capture_output=True, text=True, timeout=1800, check=False)
    assert built.returncode == 0, built.stderr[-3000:]
    return built.stdout.strip().splitlines()[-1]


def ssh_host_image() -> str:
    """perflab-sshhost:<base tag>: the base image plus sshd and sudo, built once per base image."""
    base = base_image()
    image = f"perflab-sshhost:{base.split(':', 1)[1]}"
    if docker("images", "-q", image).strip():
        return image
    builder = "perflab-sshhost-build"
    docker("rm", "-f", builder, check=False)
    docker("run", "--name", builder, base, "sh", "-c",
           "apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "
           "openssh-server sudo >/dev/null && apt-get clean", timeout=900)
    docker("commit", builder, image)
    docker("rm", "-f", builder)
    return image


def remove_hosts() -> None:
    names = [f"perflab-ssh-{tier}" for tier in TIERS]
    subprocess.run(["docker", "rm", "-f", *names], capture_output=True, timeout=300, check=False)
    subprocess.run(["docker", "network", "rm", NETWORK], capture_output=True, timeout=120, check=False)


def start_host(image: str, tier: str, public_key: str) -> str:
    """One SSH machine: systemd, sshd, a sudo user with our key; returns its address."""
    name = f"perflab-ssh-{tier}"
    docker("run", "-d", "--name", name, "--hostname", name, "--network", NETWORK, *SYSTEMD_FLAGS, image,
           "/lib/systemd/systemd")
    docker("exec", name, "sh", "-c",
           # systemd's bus appears a moment after the container starts.
           "for i in $(seq 120); do case $(systemctl is-system-running --wait 2>/dev/null) in running|degraded) break;; esac; "
           "sleep 1; done; "
           f"useradd --create-home --shell /bin/bash {SSH_USER} && "
           f"install -d -m 700 -o {SSH_USER} -g {SSH_USER} /home/{SSH_USER}/.ssh && "
           f"echo '{public_key}' > /home/{SSH_USER}/.ssh/authorized_keys && "
           f"chown {SSH_USER}: /home/{SSH_USER}/.ssh/authorized_keys && "
           f"echo '{SSH_USER} ALL=(ALL) NOPASSWD:ALL' > /etc/sudoers.d/{SSH_USER} && chmod 440 /etc/sudoers.d/{SSH_USER} && "
           "systemctl start ssh")
    address = docker("inspect", "-f", "{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}", name).strip()
    assert address, f"{name} has no address"
    return address


def write_inventory(directory: Path, addresses: dict[str, str], key: Path) -> None:
    """inventory/example with the hosts filled in, as its comments ask an operator to do."""
    shutil.copytree(ROOT / "inventory" / "example" / "group_vars", directory / "group_vars")
    hosts = {tier: {"hosts": {f"{tier}1": {"ansible_host": address, "lab_address": address}}}
             for tier, address in addresses.items()}
    (directory / "hosts.yml").write_text(yaml.safe_dump({"all": {"children": {"lab": {"children": hosts}}}}))
    (directory / "group_vars" / "lab" / "ssh.yml").write_text(yaml.safe_dump({
        "ansible_ssh_private_key_file": str(key),
        # Fresh machines with throwaway host keys.
        "ansible_ssh_common_args": "-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null",
    }))
    lab_settings = directory / "group_vars" / "all" / "lab.yml"
    lab_settings.write_text(lab_settings.read_text()
                            + f"\nlab_prometheus_url: \"http://{addresses['monitoring']}:9090\"\n")


@pytest.fixture(scope="module")
def ssh_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, dict[str, str]]]:
    """An SSH inventory of four fresh machines; yields (INVENTORY, tier -> address)."""
    work = tmp_path_factory.mktemp("ssh-lab")
    key = work / "id_ed25519"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True, timeout=60)
    public_key = (work / "id_ed25519.pub").read_text().strip()
    image = ssh_host_image()
    remove_hosts()
    docker("network", "create", NETWORK)
    secrets = ROOT / "secrets" / INVENTORY_NAME
    try:
        with ThreadPoolExecutor(len(TIERS)) as pool:
            addresses = dict(zip(TIERS, pool.map(lambda tier: start_host(image, tier, public_key), TIERS)))
        inventory = work / INVENTORY_NAME
        inventory.mkdir()
        write_inventory(inventory, addresses, key)
        yield str(inventory), addresses
    finally:
        remove_hosts()
        shutil.rmtree(secrets, ignore_errors=True)


def targets_up(address: str, expected: list[tuple[str, str]], timeout_s: float = 90) -> list[dict[str, Any]]:
    """Prometheus' active targets once every (job, host) of EXPECTED is there and up."""
    deadline, seen = time.monotonic() + timeout_s, []
    while time.monotonic() < deadline:
        with urllib.request.urlopen(f"http://{address}:9090/api/v1/targets?state=active", timeout=30) as answer:
            targets: list[dict[str, Any]] = json.load(answer)["data"]["activeTargets"]
        seen = sorted((t["labels"]["job"], t["labels"]["host"], t["health"]) for t in targets)
        if seen == sorted((job, host, "up") for job, host in expected):
            return targets
        time.sleep(2)
    raise AssertionError(f"Prometheus targets (job, host, health) after {timeout_s:.0f} s: {seen}")


def unit_states(address_tier: str) -> dict[str, str]:
    name = f"perflab-ssh-{address_tier}"
    states = docker("exec", name, "systemctl", "is-active", *LAB_UNITS, check=False).split()
    return dict(zip(LAB_UNITS, states))


def test_lab_up_status_and_down_over_ssh(ssh_lab: tuple[str, dict[str, str]]) -> None:
    inventory, addresses = ssh_lab
    up = make("lab-up", f"INVENTORY={inventory}")
    assert up.returncode == 0, "make lab-up on SSH hosts failed:\n" + tail(up.stdout, 120)
    assert "TASK [lab_containers :" not in up.stdout, "an SSH lab must not touch containers"

    expected = sorted([("node", f"{tier}1") for tier in TIERS] + [("process", f"{tier}1") for tier in TIERS]
                      + [("mysqld", "db1"), ("prometheus", "monitoring1")])
    targets = targets_up(addresses["monitoring"], expected)
    # Scraped at the lab addresses of the inventory.
    assert {t["scrapeUrl"].split("//")[1].split(":")[0] for t in targets} == set(addresses.values()), targets

    again = make("lab-up", f"INVENTORY={inventory}")
    assert again.returncode == 0, tail(again.stdout, 80)
    changed = {m[1]: int(m[2]) for m in re.finditer(r"^(\S+)\s+:\s+ok=\d+\s+changed=(\d+)", again.stdout, re.M)}
    assert changed and not any(changed.values()), f"a second lab-up over SSH changed something: {changed}"

    status = make("lab-status", f"INVENTORY={inventory}")
    assert status.returncode == 0, tail(status.stdout)
    for tier in TIERS:
        assert f"{tier}1" in status.stdout and tier in status.stdout, tail(status.stdout)

    down = make("lab-down", f"INVENTORY={inventory}")
    assert down.returncode == 0, "make lab-down on SSH hosts failed:\n" + tail(down.stdout, 80)
    for tier in TIERS:
        states = unit_states(tier)
        assert all(state != "active" for state in states.values()), (tier, states)
    # The machines stay: lab-down on SSH hosts stops services, it removes nothing.
    running = docker("ps", "--filter", f"network={NETWORK}", "--format", "{{.Names}}").split()
    assert sorted(running) == sorted(f"perflab-ssh-{tier}" for tier in TIERS), running
    assert (ROOT / "secrets" / INVENTORY_NAME / "ca.crt").is_file(), "lab-down must keep the generated secrets"
