"""Reads the kernel settings the lab wants and sets the CPU frequency governor (roles/common/tasks/
sysctl.yml, governor.yml).

    python3 kernel_settings.py probe KEY...
    python3 kernel_settings.py governor GOVERNOR

probe prints, as JSON, each sysctl KEY's state on this host: {"KEY": {"state": "missing" |
"writable" | "readonly", "value": "its current value, whitespace folded to single spaces"}}. In a
container /proc/sys is read-only: the role reports such settings rather than fail on them.
governor writes GOVERNOR to every CPU's scaling_governor that holds another one and prints
"changed=yes" or "changed=no". Runs on the lab's hosts under their python3: standard library only.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import sys

PROC_SYS = "/proc/sys"
GOVERNORS = "/sys/devices/system/cpu/cpu*/cpufreq/scaling_governor"


def probe(keys: list[str], root: str = PROC_SYS) -> dict[str, dict[str, str]]:
    found = {}
    for key in keys:
        path = os.path.join(root, *key.split("."))
        if not os.path.exists(path):
            found[key] = {"state": "missing", "value": ""}
            continue
        try:
            with open(path, encoding="utf-8") as current:
                value = " ".join(current.read().split())
        except OSError:
            value = ""
        found[key] = {"state": "writable" if os.access(path, os.W_OK) else "readonly", "value": value}
    return found


def set_governor(governor: str, pattern: str = GOVERNORS) -> bool:
    """True when some CPU's governor was another one (and now is GOVERNOR)."""
    changed = False
    for path in sorted(glob.glob(pattern)):
        with open(path, encoding="ascii") as current:
            if current.read().strip() == governor:
                continue
        with open(path, "w", encoding="ascii") as new:
            new.write(governor)
        changed = True
    return changed


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="kernel_settings.py", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    read = commands.add_parser("probe")
    read.add_argument("keys", nargs="+")
    governor = commands.add_parser("governor")
    governor.add_argument("governor")
    args = parser.parse_args(argv)
    if args.command == "probe":
        print(json.dumps(probe(args.keys), sort_keys=True))
    else:
        print(f"changed={'yes' if set_governor(args.governor) else 'no'}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
