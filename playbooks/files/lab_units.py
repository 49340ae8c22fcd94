"""The state of the lab's units present on a host (playbooks/lab_status.yml): one "UNIT=STATE" line per unit,
STATE as `systemctl is-active` says it.

    python3 -c <this file> UNIT...

A unit counts only when it is enabled (not just at runtime by a generator) or running: an instance of a
template (postgresql@16-main) exists whenever the template does, and the engine a db host ran before its
lab_db_engine changed stays installed, stopped and disabled. Runs on the lab's hosts under their python3:
standard library only.
"""
from __future__ import annotations

import subprocess
import sys


def systemctl(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["systemctl", *args], capture_output=True, text=True, check=False)


def state(unit: str) -> str | None:
    """UNIT's state, or None when it does not count (absent, or disabled and not running)."""
    service = f"{unit}.service"
    if systemctl("cat", service).returncode != 0:
        return None
    active = systemctl("is-active", service).stdout.strip()
    if systemctl("is-enabled", service).stdout.strip() != "enabled" and active != "active":
        return None
    return active


def main(units: list[str]) -> int:
    for unit in units:
        found = state(unit)
        if found is not None:
            print(f"{unit}={found}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
