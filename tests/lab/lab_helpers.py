"""Helpers of the lab end-to-end tests: run make targets, read PLAY RECAPs, list docker objects."""
from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]
LAB_HOSTS = ("perflab-loadgen", "perflab-db", "perflab-app", "perflab-monitoring")
LAB_NETWORK = "perflab"
RECAP_LINE = re.compile(r"^(\S+)\s*:\s*((?:\w+=\d+\s*)+)$")


def run_make(*args: str, timeout: int = 1800) -> subprocess.CompletedProcess[str]:
    """Run `make ARGS` at the repository root; stdout and stderr together in .stdout."""
    env = dict(os.environ, ANSIBLE_NOCOLOR="1", ANSIBLE_FORCE_COLOR="0")
    return subprocess.run(
        ["make", "--no-print-directory", *args],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=timeout,
        check=False,
    )


def play_recap(output: str) -> dict[str, dict[str, int]]:
    """Counters per host from the last PLAY RECAP of an ansible-playbook output."""
    recap_at = output.rfind("PLAY RECAP")
    if recap_at < 0:
        raise AssertionError("no PLAY RECAP in the output:\n" + output[-3000:])
    hosts: dict[str, dict[str, int]] = {}
    for line in output[recap_at:].splitlines()[1:]:
        match = RECAP_LINE.match(line.strip())
        if match:
            hosts[match.group(1)] = {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", match.group(2))}
    return hosts


def docker_names(kind: str, prefix: str) -> list[str]:
    """Names of docker containers (kind 'container') or networks ('network') starting with prefix."""
    command = ["docker", "ps", "-a"] if kind == "container" else ["docker", "network", "ls"]
    listed = subprocess.run([*command, "--format", "{{.Names}}" if kind == "container" else "{{.Name}}"],
                            capture_output=True, text=True, check=True).stdout.split()
    return [name for name in listed if name == prefix or name.startswith(prefix + "-")]


def tail(output: str, lines: int = 60) -> str:
    return "\n".join(output.splitlines()[-lines:])


def base_image() -> str:
    """The lab's base image (built by its own recipe if missing)."""
    defaults = yaml.safe_load((REPO / "roles/lab_containers/defaults/main.yml").read_text())
    return subprocess.run(
        ["bash", str(REPO / "roles/lab_containers/files/build-base-image.sh"),
         defaults["lab_containers_image_repository"], defaults["lab_containers_mirror"],
         ",".join(defaults["lab_containers_packages"])],
        capture_output=True, text=True, check=True).stdout.strip()
