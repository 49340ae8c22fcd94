"""Profile apps on the plaintext-json scenario (or zipcodes' reads), on loopback (issue 23): figures
and fixtures, not a test.

Per app, one at a time: started as its manifest says (harness.py; the project's apps against a
private TLS MariaDB), pinned to one core with vegeta on the other, warmed up, then a window at a
constant rate of GET /plaintext and GET /json alternating (scenarios/plaintext-json.yml's
endpoints) profiled with async-profiler through roles/app/files/perflab_profile.py, as a lab host
would. The window's files land in OUT/<app>/. With --cost, the same window first runs without the
profiler, right before the profiled one: the app's CPU-seconds per 1,000 requests in each, from
/proc/<pid>/stat, are the profiler's cost.

    python tests/contract/profile_apps.py --out build/profiles [--scenario zipcodes] [--rate 1500] [--seconds 15] [--warmup 30]
        [--interval 10ms] [--cost] [--repeat N] [--settle S] APP...

vegeta: build/vegeta (`make vegeta`); the agent: `make async-profiler`.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import bench_apps
from bench_apps import VEGETA, Step, run_vegeta
from harness import APPS, REPO_ROOT, AppProcess, MariaDB

from perflab.profile import async_profiler_lib

PROFILE_CTL = REPO_ROOT / "roles" / "app" / "files" / "perflab_profile.py"
AGENT = async_profiler_lib(REPO_ROOT)
ENDPOINTS = ("/plaintext", "/json")  # scenarios/plaintext-json.yml
APP_CORE, LOADGEN_CORE = 1, 0


def write_targets(base_url: str, workdir: Path) -> Path:
    """vegeta's targets: the scenario's two requests, which vegeta takes in turn."""
    targets = workdir / "targets-plaintext-json.jsonl"
    targets.write_text("".join(json.dumps({"method": "GET", "url": base_url + path}) + "\n" for path in ENDPOINTS))
    return targets


def profile_ctl(*args: str) -> dict[str, object]:
    done = subprocess.run([sys.executable, str(PROFILE_CTL), *args], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"perflab_profile.py {args[0]} failed: {done.stderr.strip()}")
    return dict(json.loads(done.stdout))


def per_1k(step: Step) -> float:
    return 1000 * step.app_cpu_seconds / step.requests


def describe(label: str, step: Step) -> str:
    return (f"{label}: {step.requests} requests, {step.failed} failed, p99 {step.p99_ms:.1f} ms, "
            f"app {step.app_cpu_seconds:.2f} CPU-s = {per_1k(step):.4f} CPU-s / 1k req")


def profile_app(app: str, db: MariaDB, workdir: Path, out: Path, args: argparse.Namespace) -> None:
    rate, seconds = args.rate, args.seconds
    process = AppProcess(app=app, db=db, workdir=workdir / app, pool_size=4,
                         command_prefix=["taskset", "-c", str(APP_CORE)])
    try:
        process.start()
        process.wait_ready()
        if args.scenario == "zipcodes":  # the DB's driver, pool and TLS at work: reads of the seeded zips
            targets = bench_apps.write_targets(process.base_url, workdir / app)["zipcodes"]
        else:
            targets = write_targets(process.base_url, workdir / app)
        pid = process.running.pid
        run_vegeta(targets, rate, args.warmup, LOADGEN_CORE, pid, workdir)
        for _ in range(args.repeat):
            if args.cost:
                print(f"  {app}: " + describe("without the profiler", run_vegeta(targets, rate, seconds, LOADGEN_CORE,
                                                                                pid, workdir)), flush=True)
            window = profile_ctl("start", "--pid", str(pid), "--lib", str(AGENT), "--mode", args.mode,
                                 *(["--interval", args.interval] if args.interval else []))
            time.sleep(args.settle)
            profiled = run_vegeta(targets, rate, seconds, LOADGEN_CORE, pid, workdir)
            profile_ctl("stop", "--pid", str(pid), "--lib", str(AGENT), "--out", str(out / app),
                        "--title", f"{app} {args.scenario} {rate} req/s {args.mode}")
            print(f"  {app}: " + describe(f"profiled ({window['engine']})", profiled), flush=True)
    finally:
        process.stop()


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--rate", type=int, default=1500)
    parser.add_argument("--seconds", type=int, default=15)
    parser.add_argument("--scenario", default="plaintext-json", choices=("plaintext-json", "zipcodes"))
    parser.add_argument("--mode", default="cpu", choices=("cpu", "alloc", "lock", "wall"))
    parser.add_argument("--interval", help="the profiler's sampling interval (default: async-profiler's, 10ms for cpu)")
    # C2 compiles the hot paths (~10,000 calls each) before the window; a loaded machine needs longer.
    parser.add_argument("--warmup", type=int, default=30, help="seconds of load before the window (default 30)")
    parser.add_argument("--cost", action="store_true", help="run the window without the profiler first")
    # Pairs one after the other on the same JVM: on a shared machine one pair's difference is noise.
    parser.add_argument("--settle", type=float, default=0.0,
                        help="seconds between the profiler's start and the window (its attach kept out of the window)")
    parser.add_argument("--repeat", type=int, default=1, help="windows (with --cost: pairs) in a row (default 1)")
    parser.add_argument("apps", nargs="+")
    args = parser.parse_args(argv)
    for missing in (VEGETA, AGENT):
        if not missing.is_file():
            print(f"profile-apps: no {missing}: `make vegeta async-profiler` first", file=sys.stderr)
            return 2
    with tempfile.TemporaryDirectory(prefix="perflab-profile-apps-") as tmp:
        workdir = Path(tmp)
        db = MariaDB(workdir / "db")
        if any(app in APPS for app in args.apps):
            db.start()
        try:
            for app in args.apps:
                profile_app(app, db, workdir, args.out, args)
        finally:
            db.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
