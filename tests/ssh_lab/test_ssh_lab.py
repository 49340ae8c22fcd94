"""A lab on SSH hosts, as inventory/example describes one: `make lab-up`, `make lab-status`, two
`make bench` runs and `make lab-down` with an inventory of five machines reached over SSH as a
sudo user, two of them loadgen hosts that send one run together.

The "machines" are five more systemd containers from the lab's base image with sshd and sudo
added (built once as perflab-sshhost:<base tag>), on their own docker network; the inventory is
a copy of inventory/example with their addresses filled in, so every play runs as on cloud VMs:
SSH with pipelining, user `debian`, `become` through sudo, no docker anywhere in the plays. The
controller itself has no sudo here: a task that asked for privileges on the controller fails.
The app gets the jlink image of the controller's JDK (app_jdk_source: jlink; real hosts may use
a JDK tarball instead, which this machine cannot download).

Two loadgen hosts send one run: each its share of the rate from one agreed instant; the merged
result counts exactly what the hosts sent, and the verdict and the attribution read both hosts;
with wrk2 (each host's percentile table, merged into one histogram) and with vegeta (raw results,
merged exactly). The machines share this machine's two cores, unpinned: the rate is one they
sustain, after a warm-up.

Everything this test creates (containers, network, image is kept, secrets/<inventory>) goes away
at the end."""
from __future__ import annotations

import gzip
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

from labkit import ROOT, make, new_run_dir, read_json, run_dirs, tail

# Inventory host -> its tier.
HOSTS = {"loadgen1": "loadgen", "loadgen2": "loadgen", "db1": "db", "app1": "app", "monitoring1": "monitoring"}
LOADGENS = tuple(host for host, tier in HOSTS.items() if tier == "loadgen")
RATE, DURATION, WARMUP = 50, "10s", "5s"
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
    names = [f"perflab-ssh-{host}" for host in HOSTS]
    subprocess.run(["docker", "rm", "-f", *names], capture_output=True, timeout=300, check=False)
    subprocess.run(["docker", "network", "rm", NETWORK], capture_output=True, timeout=120, check=False)


def start_host(image: str, host: str, public_key: str) -> str:
    """One SSH machine: systemd, sshd, a sudo user with our key; returns its address."""
    name = f"perflab-ssh-{host}"
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
    groups: dict[str, dict[str, Any]] = {}
    for host, address in addresses.items():
        groups.setdefault(HOSTS[host], {"hosts": {}})["hosts"][host] = {"ansible_host": address, "lab_address": address}
    (directory / "hosts.yml").write_text(yaml.safe_dump({"all": {"children": {"lab": {"children": groups}}}}))
    (directory / "group_vars" / "lab" / "ssh.yml").write_text(yaml.safe_dump({
        "ansible_ssh_private_key_file": str(key),
        # Fresh machines with throwaway host keys.
        "ansible_ssh_common_args": "-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null",
    }))
    lab_settings = directory / "group_vars" / "all" / "lab.yml"
    lab_settings.write_text(lab_settings.read_text()
                            + f"\nlab_prometheus_url: \"http://{addresses['monitoring1']}:9090\"\n")
    # No JDK tarball can be downloaded here: the app host gets the jlink image of the controller's JDK.
    (directory / "group_vars" / "app").mkdir(exist_ok=True)
    (directory / "group_vars" / "app" / "jdk.yml").write_text(yaml.safe_dump({"app_jdk_source": "jlink"}))


@pytest.fixture(scope="module")
def ssh_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, dict[str, str]]]:
    """An SSH inventory of five fresh machines; yields (INVENTORY, host -> address)."""
    work = tmp_path_factory.mktemp("ssh-lab")
    key = work / "id_ed25519"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True, timeout=60)
    public_key = (work / "id_ed25519.pub").read_text().strip()
    image = ssh_host_image()
    remove_hosts()
    docker("network", "create", NETWORK)
    secrets = ROOT / "secrets" / INVENTORY_NAME
    try:
        with ThreadPoolExecutor(len(HOSTS)) as pool:
            addresses = dict(zip(HOSTS, pool.map(lambda host: start_host(image, host, public_key), HOSTS)))
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


def unit_states(host: str) -> dict[str, str]:
    name = f"perflab-ssh-{host}"
    states = docker("exec", name, "systemctl", "is-active", *LAB_UNITS, check=False).split()
    return dict(zip(LAB_UNITS, states))


def sent(path: Path) -> int:
    with gzip.open(path, "rt") as results:
        return sum(1 for line in results if line.strip())


def bench(inventory: str, tool: str) -> tuple[Path, str]:
    """zipcodes, the scenario `make lab` runs: results/<run id>/ and the bench's output."""
    before = run_dirs()
    done = make("bench", f"INVENTORY={inventory}", "APP=quarkus", "SCENARIO=zipcodes", f"TOOL={tool}",
                f"RATE={RATE}", f"DURATION={DURATION}", f"WARMUP={WARMUP}")
    assert done.returncode == 0, f"make bench TOOL={tool} over SSH failed:\n" + tail(done.stdout, 80)
    return new_run_dir(before), done.stdout


def judged_on_both_hosts(run_dir: Path) -> dict[str, Any]:
    """The result, after checking that the split, the start, the verdict and the attribution read both hosts."""
    assert read_json(run_dir / "status.json")["status"] == "complete", run_dir
    result: dict[str, Any] = read_json(run_dir / "result.json")
    assert not any(result["errors"].values()), result["errors"]
    parameters = result["scenario"]["parameters"]
    assert parameters["host_rates"] == f"{RATE // 2},{RATE // 2}"
    assert float(parameters["start_skew_ms"]) < 1000, parameters["start_skew_ms"]  # one agreed instant
    assert {h["host"] for h in result["hosts"] if h["tier"] == "loadgen"} == set(LOADGENS)
    rules = {rule["rule"]: rule for rule in read_json(run_dir / "audit.json")["rules"]}
    assert rules["achieved_rate"]["status"] == "VALID", rules["achieved_rate"]
    assert all(f"{host} " in rules["loadgen_cpu"]["evidence"] for host in LOADGENS), rules["loadgen_cpu"]
    assert read_json(run_dir / "observations.json")["loadgen_hosts"].keys() == set(LOADGENS)
    # Both hosts' figures are read and neither is blamed. What else the attribution names depends on
    # this machine: the five unpinned machines share two cores with the local lab, and a vegeta run
    # here kept 50 of 50 req/s with the app waiting 0.5 requests on average for a DB connection
    # while no tier was busy: "limited by the database's round trips", a fair reading of that queue.
    attribution = read_json(run_dir / "attribution.json")
    assert attribution["limiting_tier"] != "loadgen", attribution["sentence"]
    return result


def two_loadgen_hosts_send_one_wrk2_run_merged_from_their_tables(inventory: str) -> None:
    run_dir, _ = bench(inventory, "wrk2")
    result = judged_on_both_hosts(run_dir)
    assert result["tool"] == "wrk2"
    texts = {host: (run_dir / f"wrk2-measure.{host}.txt").read_text() for host in LOADGENS}
    tables = {host: json.loads((run_dir / f"wrk2-measure-percentiles.{host}.json").read_text()) for host in LOADGENS}
    requests = {host: int(re.search(r"^\s*(\d+) requests in ", text, re.MULTILINE)[1]) for host, text in texts.items()}
    # Each host ran its half, calibration included (11 s at the rate before the 10 s recorded).
    assert all(RATE // 2 * 20 <= n <= RATE // 2 * 23 for n in requests.values()), requests
    assert result["requests"] == sum(requests.values()), (result["requests"], requests)
    assert all(tables[host]["requests"] == requests[host] for host in LOADGENS), (tables, requests)
    # The merged histogram holds every request either host recorded after its calibration.
    assert result["latency_corrected"]["total_count"] == sum(t["recorded"] for t in tables.values()), result


def two_loadgen_hosts_send_one_vegeta_run_merged_exactly(inventory: str, prometheus: str) -> None:
    """vegeta, the tool a fresh machine gets (`make lab` with no wrk2 source)."""
    run_dir, output = bench(inventory, "vegeta")
    assert "loadgen: TOOL=vegeta: vegeta v12.13.0 from the controller" in output, tail(output, 80)
    result = judged_on_both_hosts(run_dir)
    assert result["latency_corrected"]["spectrum"], "vegeta's raw results give the full spectrum"
    # No scrape of vegeta is left behind (job vegeta's file_sd is emptied after every run).
    with urllib.request.urlopen(f"http://{prometheus}:9090/api/v1/targets", timeout=30) as answer:
        targets = json.load(answer)["data"]["activeTargets"]
    assert not [t for t in targets if t["labels"].get("job") == "vegeta"], targets
    per_host = {host: sent(run_dir / f"vegeta-measure.{host}.jsonl.gz") for host in LOADGENS}
    # Each host sent its half of the rate for the whole phase, and the merged count is their sum.
    assert per_host == {host: RATE // 2 * 10 for host in LOADGENS}, per_host
    assert result["requests"] == sum(per_host.values()), (result["requests"], per_host)


def test_lab_up_status_two_loadgen_runs_and_down_over_ssh(ssh_lab: tuple[str, dict[str, str]]) -> None:
    inventory, addresses = ssh_lab
    up = make("lab-up", f"INVENTORY={inventory}")
    assert up.returncode == 0, "make lab-up on SSH hosts failed:\n" + tail(up.stdout, 120)
    assert "TASK [lab_containers :" not in up.stdout, "an SSH lab must not touch containers"

    expected = sorted([("node", host) for host in HOSTS] + [("process", host) for host in HOSTS]
                      + [("mysqld", "db1"), ("prometheus", "monitoring1")])
    targets = targets_up(addresses["monitoring1"], expected)
    # Scraped at the lab addresses of the inventory.
    assert {t["scrapeUrl"].split("//")[1].split(":")[0] for t in targets} == set(addresses.values()), targets

    again = make("lab-up", f"INVENTORY={inventory}")
    assert again.returncode == 0, tail(again.stdout, 80)
    changed = {m[1]: int(m[2]) for m in re.finditer(r"^(\S+)\s+:\s+ok=\d+\s+changed=(\d+)", again.stdout, re.M)}
    assert changed and not any(changed.values()), f"a second lab-up over SSH changed something: {changed}"

    status = make("lab-status", f"INVENTORY={inventory}")
    assert status.returncode == 0, tail(status.stdout)
    for host, tier in HOSTS.items():
        assert host in status.stdout and tier in status.stdout, tail(status.stdout)

    two_loadgen_hosts_send_one_wrk2_run_merged_from_their_tables(inventory)
    two_loadgen_hosts_send_one_vegeta_run_merged_exactly(inventory, addresses["monitoring1"])

    down = make("lab-down", f"INVENTORY={inventory}")
    assert down.returncode == 0, "make lab-down on SSH hosts failed:\n" + tail(down.stdout, 80)
    for host in HOSTS:
        states = unit_states(host)
        assert all(state != "active" for state in states.values()), (host, states)
    # The machines stay: lab-down on SSH hosts stops services, it removes nothing.
    running = docker("ps", "--filter", f"network={NETWORK}", "--format", "{{.Names}}").split()
    assert sorted(running) == sorted(f"perflab-ssh-{host}" for host in HOSTS), running
    assert (ROOT / "secrets" / INVENTORY_NAME / "ca.crt").is_file(), "lab-down must keep the generated secrets"
