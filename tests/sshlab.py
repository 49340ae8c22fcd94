"""The SSH lab of the tests: five machines reached over SSH as a sudo user, as inventory/example
describes a lab, two of them loadgen hosts. PERFLAB_TEST_LAB=ssh makes it the session's lab
(tests/conftest.py: `lab`), with its inventory at labkit.INVENTORY.

The "machines" are systemd containers from the lab's base image with sshd and sudo added (built
once as perflab-sshhost:<base tag>), on a docker network of their own; the inventory is a copy of
inventory/example with their addresses filled in, so every play runs as on cloud VMs: SSH with
pipelining, user `debian`, `become` through sudo, no docker anywhere in the plays. The controller
itself has no sudo here: a task that asked for privileges on the controller fails. The app gets
the jlink image of the controller's JDK (app_jdk_source: jlink; real hosts may use a JDK tarball
instead, which this machine cannot download). The machines share this machine's cores, unpinned,
with an eighth of the local lab's CPU weight (YIELDING).

Everything it creates (containers, network, the inventory and its key, secrets/<inventory>) goes
away at the end; the image is kept."""
from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import yaml

from labkit import ROOT

# Inventory host -> its tier.
HOSTS = {"loadgen1": "loadgen", "loadgen2": "loadgen", "db1": "db", "app1": "app", "monitoring1": "monitoring"}
NETWORK = "perflab-ssh"
SSH_USER = "debian"
# The same systemd container flags as roles/lab_containers (systemd as PID 1, cgroups).
SYSTEMD_FLAGS = ["--cap-add", "SYS_ADMIN", "--cap-add", "NET_ADMIN", "--security-opt", "seccomp=unconfined",
                 "--security-opt", "apparmor=unconfined", "--cgroupns=host", "-v", "/sys/fs/cgroup:/sys/fs/cgroup:rw",
                 "--tmpfs", "/run", "--tmpfs", "/run/lock", "--stop-signal", "SIGRTMIN+3"]
# The machines yield the CPU to the local lab's containers, which make test runs beside them: an eighth of their CPU
# weight (cpu.shares 128 against 1024; the Makefile runs this lab's pytest at nice 19 too, in a session of its own:
# scripts/yielding.sh). The local lab's runs are
# then measured nearly as if alone, and this lab takes what they leave, which is most of the time. At the least
# weight (2), sudo on all five machines missed Ansible's 12 s for its prompt beside the local lab's lab-up.
YIELDING = ["--cpu-shares", "128"]
# The file make test and test-lab name for this lab's share to write once its lab-up has ended: the local lab's runs
# wait for it, as for the checks (tests/conftest.py), and from then on this share yields (yield_cpu).
LAB_UP_DONE = os.environ.get("PERFLAB_TEST_LAB_UP_DONE")


def yield_cpu() -> None:
    """From now on, this process's session (scripts/yielding.sh started it in one of its own, its group at nice 0 for
    the lab-up) takes the CPU only where the local lab's share leaves it: its group at nice 19. Where the kernel has no
    autogroup, the session's nice 19 is what yields."""
    group = Path("/proc/self/autogroup")
    # Only a session this process leads (yielding.sh execs it): another's group is its caller's terminal's.
    if group.exists() and os.getsid(0) == os.getpid():
        group.write_text("19\n")


def lab_up_ended(returncode: int | None) -> None:
    """Says so to the local lab's share (LAB_UP_DONE: the lab-up's exit status, or 'none' where it did not run to its
    end), and yields from now on."""
    if LAB_UP_DONE:
        yield_cpu()
        Path(LAB_UP_DONE).write_text(f"{'none' if returncode is None else returncode}\n")


def docker(*args: str, check: bool = True, timeout: float = 600) -> str:
    done = subprocess.run(["docker", *args], capture_output=True, text=True, timeout=timeout, check=False)
    if check and done.returncode != 0:
        raise AssertionError(f"docker {' '.join(args)} failed:\n{done.stdout}\n{done.stderr}")
    return done.stdout


def base_image() -> str:
    """The lab's base image, from the recipe roles/lab_containers uses (built only if missing), on the
    Docker engine make lab-up would install and start (on a fresh machine the local lab's lab-up may not
    have got to it yet: the script lets one caller at a time do it)."""
    engine = subprocess.run([str(ROOT / "scripts/ensure-docker-engine.sh"), "--docker"],
                            capture_output=True, text=True, timeout=1200, check=False)
    assert engine.returncode == 0, engine.stderr[-3000:]
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
    names = [f"perflab-ssh-{host}" for host in HOSTS]
    subprocess.run(["docker", "rm", "-f", *names], capture_output=True, timeout=300, check=False)
    subprocess.run(["docker", "network", "rm", NETWORK], capture_output=True, timeout=120, check=False)


def start_host(image: str, host: str, public_key: str, network: str = NETWORK) -> str:
    """One SSH machine: systemd, sshd, a sudo user with our key; returns its address."""
    name = f"perflab-ssh-{host}"
    docker("run", "-d", "--name", name, "--hostname", name, "--network", network, *SYSTEMD_FLAGS, *YIELDING, image,
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


def new_key(inventory: Path) -> tuple[Path, str]:
    """A fresh SSH key beside INVENTORY (not in it: Ansible reads every file of an inventory directory),
    and an empty INVENTORY; returns the private key's path and the public key."""
    keys = inventory.with_name(inventory.name + ".ssh")
    for directory in (inventory, keys):
        shutil.rmtree(directory, ignore_errors=True)
        directory.mkdir(parents=True)
    key = keys / "id_ed25519"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True, timeout=60)
    return key, (keys / "id_ed25519.pub").read_text().strip()


def remove_inventory(inventory: Path) -> None:
    """INVENTORY, its key and its secrets (secrets/<its name>)."""
    shutil.rmtree(ROOT / "secrets" / inventory.name, ignore_errors=True)
    shutil.rmtree(inventory, ignore_errors=True)
    shutil.rmtree(inventory.with_name(inventory.name + ".ssh"), ignore_errors=True)


def write_connection(directory: Path, key: Path) -> None:
    """inventory/example's group_vars, with the SSH settings of these machines."""
    shutil.copytree(ROOT / "inventory" / "example" / "group_vars", directory / "group_vars")
    (directory / "group_vars" / "lab" / "ssh.yml").write_text(yaml.safe_dump({
        "ansible_ssh_private_key_file": str(key),
        # Fresh machines with throwaway host keys.
        "ansible_ssh_common_args": "-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null",
        # Machines that yield the CPU (YIELDING) answer late while the local lab is busy: sudo's prompt took
        # more than the default 10 s (+2) on all five at once, beside the local lab's lab-up and the checks.
        "ansible_ssh_timeout": 60,
    }))


def write_inventory(directory: Path, addresses: dict[str, str], key: Path) -> None:
    """inventory/example with the hosts filled in, as its comments ask an operator to do."""
    write_connection(directory, key)
    groups: dict[str, dict[str, Any]] = {}
    for host, address in addresses.items():
        groups.setdefault(HOSTS[host], {"hosts": {}})["hosts"][host] = {"ansible_host": address, "lab_address": address}
    (directory / "hosts.yml").write_text(yaml.safe_dump({"all": {"children": {"lab": {"children": groups}}}}))
    lab_settings = directory / "group_vars" / "all" / "lab.yml"
    lab_settings.write_text(lab_settings.read_text()
                            + f"\nlab_prometheus_url: \"http://{addresses['monitoring1']}:9090\"\n")
    # No JDK tarball can be downloaded here: the app host gets the jlink image of the controller's JDK.
    (directory / "group_vars" / "app").mkdir(exist_ok=True)
    (directory / "group_vars" / "app" / "jdk.yml").write_text(yaml.safe_dump({"app_jdk_source": "jlink"}))


def host_addresses(inventory: Path) -> dict[str, str]:
    """Inventory host -> its address, from the inventory machines() wrote."""
    groups = yaml.safe_load((inventory / "hosts.yml").read_text())["all"]["children"]["lab"]["children"]
    return {host: values["ansible_host"] for group in groups.values() for host, values in group["hosts"].items()}


@contextmanager
def machines(inventory: Path) -> Iterator[dict[str, str]]:
    """Five fresh SSH machines and their inventory at INVENTORY (its name is the directory's: the lab's
    secrets go to secrets/<name>); yields host -> address, removes everything at the end."""
    key, public_key = new_key(inventory)
    image = ssh_host_image()
    remove_hosts()
    docker("network", "create", NETWORK)
    try:
        with ThreadPoolExecutor(len(HOSTS)) as pool:
            found = dict(zip(HOSTS, pool.map(lambda host: start_host(image, host, public_key), HOSTS)))
        write_inventory(inventory, found, key)
        yield found
    finally:
        remove_hosts()
        remove_inventory(inventory)
