"""Helpers of the benchmark-run tests: drive `make bench` on the test lab (tests/labkit.py:
PERFLAB_TEST_INVENTORY, default inventory/local) and look at its hosts through Ansible."""
from __future__ import annotations

from labkit import INVENTORY, RESULTS, ROOT, changed_counts, loadgen_lock, make, new_run_dir, on_host, read_json, run_dirs, tail

__all__ = ["APPS", "INVENTORY", "RESULTS", "ROOT", "SCENARIOS", "changed_counts", "loadgen_lock", "new_run_dir", "on_host",
           "read_json", "run_dirs", "run_make", "tail"]

# The project's own apps, in the order `make compare` runs the apps claiming a scenario (their manifests' names).
APPS = tuple(sorted(p.parent.name for p in (ROOT / "apps").glob("*/perflab-app.yml")))
SCENARIOS = tuple(sorted(p.stem for p in (ROOT / "scenarios").glob("*.yml")))
run_make = make

