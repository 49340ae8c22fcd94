"""Helpers of the benchmark-run tests: drive `make bench` on the test lab (tests/labkit.py:
PERFLAB_TEST_INVENTORY, default inventory/local) and look at its hosts through Ansible."""
from __future__ import annotations

import re
import subprocess

from labkit import INVENTORY, RESULTS, ROOT, make, new_run_dir, read_json, run_dirs, tail

__all__ = ["APPS", "INVENTORY", "RESULTS", "ROOT", "SCENARIOS", "changed_counts", "new_run_dir", "on_host",
           "read_json", "run_dirs", "run_make", "tail"]

# The project's own apps, in the order `make compare` runs the apps claiming a scenario (their manifests' names).
APPS = tuple(sorted(p.parent.name for p in (ROOT / "apps").glob("*/perflab-app.yml")))
SCENARIOS = tuple(sorted(p.stem for p in (ROOT / "scenarios").glob("*.yml")))
run_make = make


def on_host(pattern: str, command: str) -> str:
    """Run a shell command on the first host matching PATTERN (e.g. db[0]); its stdout."""
    done = subprocess.run(
        [str(ROOT / ".venv/bin/ansible"), "-i", INVENTORY, pattern, "-o", "-m", "ansible.builtin.shell", "-a", command],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )
    assert done.returncode == 0, f"ansible {pattern} {command!r} failed:\n{done.stdout}\n{done.stderr}"
    return done.stdout


def changed_counts(output: str) -> dict[str, int]:
    """changed=N of every host in the PLAY RECAP."""
    return {m.group(1): int(m.group(2)) for m in re.finditer(r"^(\S+)\s+:\s+ok=\d+\s+changed=(\d+)", output, re.M)}
