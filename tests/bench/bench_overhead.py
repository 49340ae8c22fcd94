"""make bench-overhead: what a warm run costs beyond its load, step by step.

On a lab that is up, with the app already built: one `make bench` (a warm run: the app's artifact
in place, the lab converged), then one two-app `make compare`, each timed from the make command to
its printed verdict. Every task's seconds come from the perflab_timings callback
(plugins/callback/perflab_timings.py); they are summed per play of playbooks/bench.yml (a step of
the run), and the load itself (the warm-up's and the measured phase's invocations, from each run's
bench-inputs.json) is taken off the total. Prints figures; it is a benchmark, not a test: it fails
only when a run fails.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))

from labkit import judged  # noqa: E402

TARGET_BEYOND_LOAD_S = 20.0
BENCH = ("APP=quarkus", "SCENARIO=zipcodes", "RATE=200", "DURATION=20s", "WARMUP=10s")
COMPARE = ("APPS=quarkus spring-mvc", "SCENARIO=plaintext-json", "RATE=500", "DURATION=20s", "WARMUP=10s")


def results_dir() -> Path:
    return Path(os.environ.get("PERFLAB_RESULTS_DIR") or ROOT / "results")


def timed(target: str, variables: tuple[str, ...], timings: Path) -> tuple[float, list[dict[str, object]], list[Path]]:
    """Runs make TARGET VARIABLES with every task timed: its wall seconds, the task lines, the new run directories."""
    before = set(results_dir().iterdir()) if results_dir().is_dir() else set()
    env = dict(os.environ, ANSIBLE_CALLBACKS_ENABLED="perflab_preload,perflab_timings", PERFLAB_TIMINGS=str(timings),
               ANSIBLE_NOCOLOR="1")
    started = time.time()
    done = subprocess.run(["make", "--no-print-directory", target, *variables], cwd=ROOT, env=env, text=True,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, check=False)
    wall = time.time() - started
    runs = sorted(p for p in set(results_dir().iterdir()) - before if (p / "bench-inputs.json").is_file())
    if not judged(done) or not runs:  # an INVALID run is a judged run all the same (make exits 2 for it)
        print("\n".join(done.stdout.splitlines()[-60:]))
        raise SystemExit(f"bench-overhead: make {target} failed after {wall:.0f} s")
    lines = [json.loads(line) for line in timings.read_text().splitlines()] if timings.exists() else []
    return wall, lines, runs


def load_s(run: Path) -> float:
    """The seconds the load generator ran: the warm-up's invocation (when there was one) and the measured one."""
    inputs = json.loads((run / "bench-inputs.json").read_text())["run"]
    phases = ["measure"] + (["warmup"] if float(inputs["warmup_s"]) > 0 else [])
    return sum(float(inputs["phases"][phase]["invocation_s"]) for phase in phases)


def report(title: str, wall: float, lines: list[dict[str, object]], runs: list[Path]) -> float:
    by_play: dict[str, float] = defaultdict(float)
    by_task: dict[tuple[str, str], float] = defaultdict(float)
    for line in lines:
        seconds = float(line["end"]) - float(line["start"])  # type: ignore[arg-type]
        by_play[str(line["play"])] += seconds
        by_task[(str(line["play"]), str(line["task"]))] += seconds
    in_ansible = sum(by_play.values())
    load = sum(load_s(run) for run in runs)
    beyond = wall - load
    print(f"\n{title}: {wall:.1f} s from make to the verdict, {len(runs)} run(s), {load:.1f} s of load")
    print(f"  {'before and between the playbooks (make, the app build check, perflab)':<72} {wall - in_ansible:6.1f} s")
    for play, seconds in sorted(by_play.items(), key=lambda kv: -kv[1]):
        print(f"  {play:<72} {seconds:6.1f} s")
    for run in runs:  # the JVM's own start, and whether it had its class data sharing archive
        deployment = json.loads((run / "bench-inputs.json").read_text())["deployment"]
        print(f"  {deployment['app']}: start to ready {float(deployment['start_to_ready_ms']) / 1000:.1f} s, "
              f"{deployment.get('class_data_sharing', 'class data sharing off')}")
    print("  the ten slowest tasks:")
    for (play, task), seconds in sorted(by_task.items(), key=lambda kv: -kv[1])[:10]:
        print(f"    {seconds:6.1f} s  {play} / {task}"[:140])
    per_run = beyond / max(1, len(runs))
    verdict = "ok" if per_run <= TARGET_BEYOND_LOAD_S else "MISSED"
    print(f"  beyond the load: {beyond:.1f} s, {per_run:.1f} s per run (target <= {TARGET_BEYOND_LOAD_S:.0f} s: {verdict})")
    return per_run


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-compare", action="store_true", help="only the one warm make bench")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        # The first run builds what is missing and converges; the second is the warm run measured.
        timed("bench", BENCH, Path(tmp) / "first.jsonl")
        report("make bench " + " ".join(BENCH), *timed("bench", BENCH, Path(tmp) / "bench.jsonl"))
        if not args.no_compare:
            report("make compare " + " ".join(COMPARE), *timed("compare", COMPARE, Path(tmp) / "compare.jsonl"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
