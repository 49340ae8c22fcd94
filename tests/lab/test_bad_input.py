"""Bad input gets one clear error and changes nothing.

Inventory mistakes (unknown path, missing group, two tiers on one host) are caught on the
controller before any container exists: the tests use temporary copies of the local inventory
with their own container and network names and check that none of them was created.
Host problems (unreachable, unsupported distro) are caught after the hosts are reached and before
any change: the tests start plain systemd containers from the base image as stand-ins for SSH
hosts (lab_provider: ssh, reached over the Docker API), one of them claiming Ubuntu 20.04 in its
/etc/os-release (only the identity changes: the facts Ansible reads), and check that role common
left no trace on them (no perflab config file, apt lists never fetched).
"""
from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from lab_helpers import REPO, base_image, docker_names, run_make, tail

PREFIX = "perflab-bi"
TIERS = ("loadgen", "db", "app", "monitoring")
SYSTEMD_RUN_OPTIONS = [
    "--cap-add", "SYS_ADMIN", "--cap-add", "NET_ADMIN",
    "--security-opt", "seccomp=unconfined", "--security-opt", "apparmor=unconfined",
    "--cgroupns=host", "-v", "/sys/fs/cgroup:/sys/fs/cgroup:rw", "--tmpfs", "/run", "--tmpfs", "/run/lock",
]
UBUNTU_2004_OS_RELEASE = (
    'NAME="Ubuntu"\nVERSION="20.04.6 LTS (Focal Fossa)"\nID=ubuntu\nID_LIKE=debian\n'
    'PRETTY_NAME="Ubuntu 20.04.6 LTS"\nVERSION_ID="20.04"\nVERSION_CODENAME=focal\nUBUNTU_CODENAME=focal\n'
)
# What role common would leave behind on a host it touched.
COMMON_TRACES = ("/etc/security/limits.d/60-perflab.conf", "/etc/systemd/system.conf.d/60-perflab.conf")


def local_inventory(path: Path, groups: dict[str, list[str]]) -> Path:
    """A copy of inventory/local whose containers and network carry the test's names."""
    shutil.copytree(REPO / "inventory" / "local", path)
    (path / "group_vars" / "all" / "test.yml").write_text(yaml.safe_dump({"lab_containers_network": PREFIX}))
    children = {tier: {"hosts": {host: None for host in hosts}} for tier, hosts in groups.items()}
    (path / "hosts.yml").write_text(yaml.safe_dump({"all": {"children": {"lab": {"children": children}}}}))
    return path


def assert_nothing_created() -> None:
    assert docker_names("container", PREFIX) == [], "a container was created"
    assert docker_names("network", PREFIX) == [], "a network was created"


def test_unknown_inventory_path_fails_before_anything_runs(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-inventory"
    result = run_make("lab-up", f"INVENTORY={missing}")
    assert result.returncode != 0
    assert f"perflab: inventory '{missing}' does not exist" in result.stdout
    assert [line for line in result.stdout.splitlines() if line.startswith("perflab:")] == [
        f"perflab: inventory '{missing}' does not exist: use INVENTORY=inventory/local (the default) "
        "or a copy of inventory/example"]
    assert "PLAY" not in result.stdout


def test_missing_group_is_named_and_nothing_is_created(tmp_path: Path) -> None:
    inventory = local_inventory(tmp_path / "nomonitoring", {
        "loadgen": [f"{PREFIX}-loadgen"], "db": [f"{PREFIX}-db"], "app": [f"{PREFIX}-app"]})
    result = run_make("lab-up", f"INVENTORY={inventory}")
    assert result.returncode != 0
    assert "has no host in group(s) monitoring" in result.stdout, tail(result.stdout)
    assert "failed=1" in result.stdout and result.stdout.count("FAILED!") == 1, tail(result.stdout)
    assert_nothing_created()


def test_empty_group_counts_as_missing(tmp_path: Path) -> None:
    inventory = local_inventory(tmp_path / "emptydb", {
        "loadgen": [f"{PREFIX}-loadgen"], "db": [], "app": [f"{PREFIX}-app"], "monitoring": [f"{PREFIX}-mon"]})
    result = run_make("lab-up", f"INVENTORY={inventory}")
    assert result.returncode != 0
    assert "has no host in group(s) db" in result.stdout, tail(result.stdout)
    assert_nothing_created()


def test_two_tiers_on_one_host_names_host_and_tiers(tmp_path: Path) -> None:
    shared = f"{PREFIX}-shared"
    inventory = local_inventory(tmp_path / "colocated", {
        "loadgen": [f"{PREFIX}-loadgen"], "db": [shared], "app": [shared], "monitoring": [f"{PREFIX}-mon"]})
    result = run_make("lab-up", f"INVENTORY={inventory}")
    assert result.returncode != 0
    assert f"tiers db (host {shared}), app (host {shared}) share machine {shared}" in result.stdout, tail(result.stdout)
    assert "lab_allow_colocation" in result.stdout
    assert result.stdout.count("FAILED!") == 1, tail(result.stdout)
    assert_nothing_created()


def test_two_hosts_on_one_machine_are_colocated(tmp_path: Path) -> None:
    inventory = local_inventory(tmp_path / "samemachine", {
        "loadgen": [f"{PREFIX}-loadgen"], "db": [f"{PREFIX}-db"], "app": [f"{PREFIX}-app"],
        "monitoring": [f"{PREFIX}-mon"]})
    hosts = yaml.safe_load((inventory / "hosts.yml").read_text())
    tiers = hosts["all"]["children"]["lab"]["children"]
    tiers["loadgen"]["hosts"][f"{PREFIX}-loadgen"] = {"ansible_host": "10.9.9.9"}
    tiers["app"]["hosts"][f"{PREFIX}-app"] = {"ansible_host": "10.9.9.9"}
    (inventory / "hosts.yml").write_text(yaml.safe_dump(hosts))
    result = run_make("lab-up", f"INVENTORY={inventory}")
    assert result.returncode != 0
    assert (f"tiers loadgen (host {PREFIX}-loadgen), app (host {PREFIX}-app) share machine 10.9.9.9"
            in result.stdout), tail(result.stdout)
    assert_nothing_created()


# Host checks: stand-in hosts (plain systemd containers, not created by the lab).

def docker(*args: str) -> str:
    return subprocess.run(["docker", *args], capture_output=True, text=True, check=True).stdout.strip()


@pytest.fixture(scope="module")
def standin_hosts() -> Iterator[dict[str, str]]:
    """Systemd containers standing in for SSH hosts: one per tier, plus one that claims Ubuntu 20.04.
    Removed at the end."""
    image = base_image()
    names = {tier: f"{PREFIX}-{tier}" for tier in ("loadgen", "db", "app", "monitoring")} | {"focal": f"{PREFIX}-focal"}
    try:
        for name in names.values():
            docker("run", "-d", "--name", name, "--hostname", name, *SYSTEMD_RUN_OPTIONS, image, "/lib/systemd/systemd")
        docker("exec", names["focal"], "sh", "-c", f"printf '%s' '{UBUNTU_2004_OS_RELEASE}' > /etc/os-release")
        for name in names.values():
            subprocess.run(["docker", "exec", name, "timeout", "60", "systemctl", "is-system-running", "--wait"],
                           capture_output=True, text=True, check=False)
        yield names
    finally:
        subprocess.run(["docker", "rm", "-f", *names.values()], capture_output=True, check=False)


def ssh_lab_inventory(path: Path, hosts: dict[str, dict]) -> Path:
    """An SSH-style inventory (lab_provider ssh: no container is created) over the given hosts."""
    path.mkdir()
    children = {tier: {"hosts": {name: hostvars}} for tier, (name, hostvars) in hosts.items()}
    inventory = {"all": {"vars": {"lab_provider": "ssh"}, "children": {"lab": {"children": children}}}}
    (path / "hosts.yml").write_text(yaml.safe_dump(inventory))
    return path


def over_docker(name: str) -> tuple[str, dict]:
    return name, {"ansible_connection": "community.docker.docker_api", "ansible_docker_container": name,
                  "ansible_user": "root"}


def assert_hosts_untouched(names: list[str]) -> None:
    for name in names:
        present = docker("exec", name, "sh", "-c",
                         "ls " + " ".join(COMMON_TRACES) + " /var/lib/apt/lists/*_Packages 2>/dev/null; true")
        assert present == "", f"{name} was changed: {present}"


def test_unreachable_host_is_named_and_nothing_changes(standin_hosts: dict[str, str], tmp_path: Path) -> None:
    inventory = ssh_lab_inventory(tmp_path / "unreachable", {
        "loadgen": over_docker(standin_hosts["loadgen"]),
        "db": over_docker(standin_hosts["db"]),
        "app": over_docker(standin_hosts["app"]),
        # Nothing listens on port 9 of the controller: SSH is refused at once.
        "monitoring": (f"{PREFIX}-gone", {"ansible_host": "127.0.0.1", "ansible_port": 9,
                                          "ansible_connection": "ssh", "ansible_user": "root"}),
    })
    result = run_make("lab-up", f"INVENTORY={inventory}")
    assert result.returncode != 0
    assert (f"Unreachable: {PREFIX}-gone (tier monitoring) at 127.0.0.1 over ssh: " in result.stdout), \
        tail(result.stdout)
    assert "TASK [common" not in result.stdout
    assert_hosts_untouched([standin_hosts[t] for t in ("loadgen", "db", "app")])


def test_unsupported_distro_is_named_and_nothing_changes(standin_hosts: dict[str, str], tmp_path: Path) -> None:
    inventory = ssh_lab_inventory(tmp_path / "focal", {
        "loadgen": over_docker(standin_hosts["loadgen"]),
        "db": over_docker(standin_hosts["db"]),
        "app": over_docker(standin_hosts["app"]),
        "monitoring": over_docker(standin_hosts["focal"]),
    })
    result = run_make("lab-up", f"INVENTORY={inventory}")
    assert result.returncode != 0
    assert (f"Host {standin_hosts['focal']} runs Ubuntu 20.04, which perflab does not support" in result.stdout), \
        tail(result.stdout)
    assert "TASK [common" not in result.stdout
    assert_hosts_untouched(list(standin_hosts.values()))


@pytest.mark.parametrize(("engine", "offered"), [("oracle", "mariadb or postgresql"), ("mysql", "mariadb or postgresql")])
def test_a_db_engine_the_release_does_not_offer_is_named_and_nothing_changes(
        standin_hosts: dict[str, str], tmp_path: Path, engine: str, offered: str) -> None:
    """lab_db_engine is checked with the hosts, before any change: a name that is no engine, and MySQL on
    Debian 12, which ships MariaDB."""
    db_name, db_vars = over_docker(standin_hosts["db"])
    inventory = ssh_lab_inventory(tmp_path / engine, {
        "loadgen": over_docker(standin_hosts["loadgen"]),
        "db": (db_name, db_vars | {"lab_db_engine": engine}),
        "app": over_docker(standin_hosts["app"]),
        "monitoring": over_docker(standin_hosts["monitoring"]),
    })
    result = run_make("lab-up", f"INVENTORY={inventory}")
    assert result.returncode != 0
    assert (f"Host {db_name} is a db host with lab_db_engine '{engine}', but on Debian 12" in result.stdout
            and f"it may be {offered}." in result.stdout), tail(result.stdout)
    assert "TASK [common" not in result.stdout
    assert_hosts_untouched([standin_hosts[t] for t in ("loadgen", "db", "app", "monitoring")])
