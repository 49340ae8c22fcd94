"""App benchmark (issue 3, "Performance"): figures, not a timed test.

Per app, on loopback against a private TLS MariaDB (harness.py), with the app pinned to one core
and vegeta pinned to another:
- start time to first request: from exec to the first 200 of GET /greeting/{name};
- max RSS: VmHWM of the JVM after the load;
- throughput per core on GET /greeting/{name} and on GET /zipcodes/{zip}: the highest constant
  rate vegeta's attack (open model: each request leaves on its schedule, not after the previous
  answer) sustains: no error, >= 95% of the target rate served, <= 1% of the scheduled requests
  not sent. Rates double until a step fails, then one step bisects the last gap.
The requests are the lab's (scenarios/*.yml, compiled and played by perflab/scenario.py and
perflab/scenario_play.py as the bench plays them): the greeting scenario's one request, and the
zipcodes scenario's reads of the seeded zips (its `read` request alone).
Prints a table and flags any app more than 2x behind the best on /greeting.

    python tests/contract/bench_apps.py [--step-seconds 10] quarkus spring-webflux spring-mvc

vegeta: build/vegeta (`make vegeta` builds it), or the binary $PERFLAB_VEGETA names.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from itertools import islice
from pathlib import Path

import requests

from harness import APPS, REPO_ROOT, AppProcess, MariaDB

from perflab import scenario as sc

# Validity rules, thresholds in one place.
SERVED_FRACTION_MIN = 0.95  # below this the app did not keep up with the offered rate
DROPPED_FRACTION_MAX = 0.01  # vegeta had no free worker for more than 1% of its schedule: the app is saturated
LOADGEN_CPU_MAX = 0.80  # Hyperfoil's rule: a load generator busier than 80% of its core is suspect
APP_CPU_BOUND_MIN = 0.80  # below this share of its core at the first failed rate, the app's CPU was not the limit
BEHIND_BEST_MAX = 2.0  # issue 3: no app more than 2x behind the best on /greeting without a reason
FIRST_RATE = 1000
MIN_RATE = 100
MAX_RATE = 64_000
WARMUP_SECONDS = 30  # JIT-compile the hot paths (C2 needs ~10,000 calls) before any measured step

VEGETA = Path(os.environ.get("PERFLAB_VEGETA") or REPO_ROOT / "build" / "vegeta")
SCENARIOS = REPO_ROOT / "scenarios"
# Per endpoint: the scenario, its requests kept (None: all), its parameters, and the targets to
# write (one thread's sequence). vegeta cycles through the targets it read, which is right for
# reads only: one thread's zipcodes reads visit each of the 40,000 seeded zips (apps/db/seed.sql)
# once per 40,000 requests, so every request finds its row.
ENDPOINT_TARGETS: dict[str, tuple[str, tuple[str, ...] | None, dict[str, str], int]] = {
    "greeting": ("greeting", None, {"name": "vegeta"}, 1),
    "zipcodes": ("zipcodes", ("read",), {}, 40_000),
}


@dataclass
class Step:
    rate: int
    served_per_s: float
    requests: int
    failed: int
    dropped: int
    p99_ms: float
    app_cpu: float  # cores used by the app during the step
    app_cpu_seconds: float  # CPU time the app spent during the step
    loadgen_cpu: float  # cores used by vegeta during the step

    @property
    def requests_per_cpu_second(self) -> float:
        """Throughput per core that holds on a shared machine: requests per CPU-second the app used."""
        return self.requests / self.app_cpu_seconds if self.app_cpu_seconds else 0.0

    @property
    def sustained(self) -> bool:
        return (
            self.failed == 0
            and self.served_per_s >= SERVED_FRACTION_MIN * self.rate
            and self.dropped <= DROPPED_FRACTION_MAX * max(self.requests, 1)
        )


@dataclass
class AppFigures:
    app: str
    start_to_first_request_s: float = 0.0
    max_rss_mib: float = 0.0
    steps: dict[str, list[Step]] = field(default_factory=dict)
    error: str | None = None

    def best(self, endpoint: str) -> Step | None:
        sustained = [step for step in self.steps.get(endpoint, []) if step.sustained]
        return max(sustained, key=lambda step: step.served_per_s) if sustained else None


def load_average() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def cpu_seconds(pid: int) -> float:
    """utime + stime of a process, in seconds."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def write_targets(base_url: str, workdir: Path) -> dict[str, Path]:
    """Per endpoint, the vegeta targets file of the app at base_url (the port differs per app)."""
    workdir.mkdir(parents=True, exist_ok=True)
    files = {}
    for endpoint, (name, kept, parameters, count) in ENDPOINT_TARGETS.items():
        try:
            scenario = sc.load(SCENARIOS / f"{name}.yml")
            if kept is not None:
                scenario = dataclasses.replace(scenario, requests=tuple(r for r in scenario.requests if r.name in kept))
            compiled = sc.compile_scenario(scenario, SCENARIOS, parameters)
        except sc.ScenarioError as error:
            raise RuntimeError(f"scenario {name}: {'; '.join(error.problems)}") from None
        files[endpoint] = workdir / f"targets-{endpoint}.jsonl"
        files[endpoint].write_text("".join(sc.vegeta_line(request, base_url)
                                           for request in islice(sc.sent(compiled, sc.Placement(1)), count)))
    return files


def run_vegeta(targets: Path, rate: int, seconds: int, core: int, app_pid: int, workdir: Path) -> Step:
    results = workdir / f"vegeta-{targets.stem}-{rate}.bin"
    # Workers all started up front and capped: a saturated app then shows as requests vegeta
    # could not send on schedule (dropped) instead of an ever-growing crowd of workers.
    workers = max(50, min(2000, rate // 10))
    # -max-body=0: the figures need no response body, and vegeta still reads each one to its end. -redirects=-1:
    # a 3xx is the answer, as the bench's vegeta and wrk2 take it (vegeta follows 10 by default).
    command = ["taskset", "-c", str(core), str(VEGETA), "attack", "-format=json", f"-targets={targets}",
               f"-rate={rate}/1s", f"-duration={seconds}s", f"-workers={workers}", f"-max-workers={workers}",
               "-max-body=0", "-redirects=-1", f"-output={results}"]
    app_before = cpu_seconds(app_pid)
    started = time.monotonic()
    vegeta = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    loadgen_cpu = 0.0
    while vegeta.poll() is None:
        try:
            loadgen_cpu = cpu_seconds(vegeta.pid)
        except (FileNotFoundError, ProcessLookupError):
            break
        time.sleep(0.5)
    _, stderr = vegeta.communicate()
    elapsed = time.monotonic() - started
    app_cpu_seconds = cpu_seconds(app_pid) - app_before
    if vegeta.returncode != 0 or not results.exists():
        raise RuntimeError(f"vegeta attack failed ({vegeta.returncode}): {stderr[-2000:]}")
    report = subprocess.run([str(VEGETA), "report", "-type=json", str(results)], capture_output=True, text=True)
    results.unlink()  # ~170 bytes a request: a step at the top rate would leave 100 MB behind
    if report.returncode != 0:
        raise RuntimeError(f"vegeta report failed ({report.returncode}): {report.stderr[-2000:]}")
    metrics = json.loads(report.stdout)
    requests_made = int(metrics["requests"])
    return Step(
        rate=rate,
        # Successful answers per second from the first request to the last answer: an app that
        # falls behind ends the step with a backlog, which lengthens that time.
        served_per_s=float(metrics["throughput"]),
        requests=requests_made,
        failed=requests_made - round(float(metrics["success"]) * requests_made),
        dropped=max(0, rate * seconds - requests_made),
        p99_ms=float(metrics["latencies"]["99th"]) / 1e6,
        app_cpu=app_cpu_seconds / elapsed,
        app_cpu_seconds=app_cpu_seconds,
        loadgen_cpu=loadgen_cpu / elapsed,
    )


def find_max_rate(targets: Path, process: AppProcess, endpoint: str, seconds: int, core: int,
                  workdir: Path) -> list[Step]:
    """Double the rate while it is sustained (halve it while it is not), then bisect the last gap once."""
    steps: list[Step] = []

    def measure(rate: int) -> Step:
        step = run_vegeta(targets, rate, seconds, core, process.running.pid, workdir)
        steps.append(step)
        print(f"    {endpoint:9} rate {rate:6}/s: served {step.served_per_s:9.1f}/s failed {step.failed} "
              f"dropped {step.dropped} p99 {step.p99_ms:8.1f} ms app {step.app_cpu:4.2f} core "
              f"vegeta {step.loadgen_cpu:4.2f} core {'ok' if step.sustained else 'NOT SUSTAINED'}", flush=True)
        return step

    good, bad = 0, 0
    rate = FIRST_RATE
    while MIN_RATE <= rate <= MAX_RATE:
        if measure(rate).sustained:
            good = rate
            if bad:
                break
            rate *= 2
        else:
            bad = rate
            if good:
                break
            rate //= 2
    if good and bad and bad - good > good // 4:
        measure((good + bad) // 2)
    return steps


def wait_first_request(process: AppProcess, timeout_s: float = 120) -> float:
    """Seconds from exec to the first 200 of GET /greeting/{name}."""
    while True:
        if process.running.poll() is not None:
            raise RuntimeError(f"{process.app} exited:\n{process.log_tail()}")
        try:
            if requests.get(process.base_url + "/greeting/first", timeout=2).status_code == 200:
                return time.monotonic() - process.started_at
        except requests.RequestException:
            pass
        if time.monotonic() - process.started_at > timeout_s:
            raise RuntimeError(f"{process.app}: no answer in {timeout_s} s:\n{process.log_tail()}")
        time.sleep(0.005)


def bench_app(spec: str, db: MariaDB, workdir: Path, seconds: int,
              app_core: int, loadgen_core: int, java_opts: list[str]) -> AppFigures:
    app, _, variant = spec.partition("+")
    figures = AppFigures(spec)
    db.reset()
    process = AppProcess(app=app, db=db, workdir=workdir / spec, pool_size=16, variant=variant,
                         command_prefix=["taskset", "-c", str(app_core)], java_opts=java_opts)
    try:
        process.start()
        figures.start_to_first_request_s = wait_first_request(process)
        process.wait_ready()
        print(f"  {spec}: first request after {figures.start_to_first_request_s:.2f} s; warming up", flush=True)
        targets = write_targets(process.base_url, workdir / spec)
        for endpoint in ("greeting", "zipcodes"):
            run_vegeta(targets[endpoint], FIRST_RATE // 2, WARMUP_SECONDS // 2, loadgen_core, process.running.pid,
                       workdir)
        for endpoint in ("greeting", "zipcodes"):
            figures.steps[endpoint] = find_max_rate(targets[endpoint], process, endpoint, seconds, loadgen_core,
                                                    workdir)
        figures.max_rss_mib = process.max_rss_kib() / 1024
    except (RuntimeError, KeyError, json.JSONDecodeError) as error:
        figures.error = str(error)[:500]
        print(f"  {spec}: FAILED: {figures.error}", flush=True)
    finally:
        process.stop()
    return figures


def report(all_figures: list[AppFigures]) -> None:
    """Print the table, flagging apps more than BEHIND_BEST_MAX behind the best on /greeting."""
    def cpu_bound(figures: AppFigures, endpoint: str) -> bool:
        """The app fell behind while using most of its core: its figure is the app's own limit."""
        return any(not step.sustained and step.app_cpu >= APP_CPU_BOUND_MIN for step in figures.steps.get(endpoint, []))

    def rate(figures: AppFigures, endpoint: str) -> float:
        best = figures.best(endpoint)
        return best.served_per_s if best else 0.0

    # The 2x rule compares limits, so it only judges apps whose /greeting figure is CPU-bound.
    judged = [f for f in all_figures if not f.error and cpu_bound(f, "greeting")]
    best_greeting = max((rate(f, "greeting") for f in judged), default=0.0)
    header = (f"{'app':20} {'start→1st req':>13} {'max RSS':>8} | {'/greeting':>9} {'req/CPU-s':>9} {'p99':>7} "
              f"| {'/zipcodes':>9} {'req/CPU-s':>9} {'p99':>7} | note")
    units = (f"{'':20} {'(s)':>13} {'(MiB)':>8} | {'(req/s)':>9} {'':>9} {'(ms)':>7} "
             f"| {'(req/s)':>9} {'':>9} {'(ms)':>7} |")
    print("\n" + header + "\n" + units + "\n" + "-" * len(header))
    for figures in all_figures:
        if figures.error:
            print(f"{figures.app:20} FAILED: {figures.error.splitlines()[0]}")
            continue
        notes = []
        if figures in judged and rate(figures, "greeting") * BEHIND_BEST_MAX < best_greeting:
            notes.append(f"MORE THAN {BEHIND_BEST_MAX:g}x BEHIND THE BEST ON /greeting: its README must say why")
        elif figures not in judged:
            notes.append(f"{BEHIND_BEST_MAX:g}x rule not judged: /greeting was not CPU-bound")
        columns = []
        for endpoint in ("greeting", "zipcodes"):
            steps = figures.steps.get(endpoint, [])
            best = figures.best(endpoint)
            if steps and steps[-1].sustained and steps[-1].rate >= MAX_RATE:
                notes.append(f"/{endpoint}: sustained the top rate {MAX_RATE}/s, not the app's limit")
            if any(step.loadgen_cpu > LOADGEN_CPU_MAX for step in steps):
                notes.append(f"/{endpoint}: vegeta over {LOADGEN_CPU_MAX:.0%} of its core: figure may be the loadgen's")
            if best is None:
                notes.append(f"/{endpoint}: no rate down to {MIN_RATE}/s sustained")
            failed = [step for step in steps if not step.sustained]
            if failed and not cpu_bound(figures, endpoint):
                notes.append(f"/{endpoint}: not CPU-bound (at most {max(step.app_cpu for step in failed):.2f} core "
                             "where it fell behind: other load on its core, the DB or vegeta set the limit)")
            columns.append(f"{rate(figures, endpoint):9.0f} {best.requests_per_cpu_second if best else 0:9.0f} "
                           f"{best.p99_ms if best else 0:7.1f}")
        print(f"{figures.app:20} {figures.start_to_first_request_s:13.2f} {figures.max_rss_mib:8.1f} | "
              f"{columns[0]} | {columns[1]} | {'; '.join(notes)}")
    print(f"\nreq/s: the highest constant arrival rate served with no error, >= {SERVED_FRACTION_MIN:.0%} served "
          f"and <= {DROPPED_FRACTION_MAX:.0%} not sent on schedule, the app pinned to one core. req/CPU-s: requests per "
          "CPU-second the app used at that rate (at low utilisation it includes the JVM's background work). "
          f"The {BEHIND_BEST_MAX:g}x rule compares the req/s of apps whose /greeting limit was CPU-bound "
          f"(>= {APP_CPU_BOUND_MIN:.0%} of the core where they fell behind).")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("apps", nargs="*", default=list(APPS),
                        help="apps (app+option for a variant's option of its manifest: spring-mvc+virtual, quarkus+worker)")
    parser.add_argument("--step-seconds", type=int, default=10, help="length of each rate step (default 10)")
    parser.add_argument("--app-core", type=int, default=1, help="the core the app is pinned to (default 1)")
    parser.add_argument("--loadgen-core", type=int, default=0, help="the core vegeta is pinned to (default 0)")
    parser.add_argument("--work-dir", default=str(REPO_ROOT / "build" / "bench-apps"))
    # The same JVM options for every app (the deployment's business, not the app's): a fixed heap
    # cap makes max RSS comparable; without one each JVM sizes its heap from the machine's RAM.
    parser.add_argument("--java-opts", default="-Xmx256m", help="JVM options for every app (default -Xmx256m)")
    args = parser.parse_args(argv)
    if not os.access(VEGETA, os.X_OK):
        print(f"bench-apps: no vegeta at {VEGETA}: `make vegeta` builds it (or set PERFLAB_VEGETA)", file=sys.stderr)
        return 2
    if not shutil.which("taskset"):
        print("bench-apps: taskset not found (Debian: apt-get install util-linux)", file=sys.stderr)
        return 2
    for spec in args.apps:
        if spec.partition("+")[0] not in APPS:
            print(f"bench-apps: unknown app {spec!r}; one of {', '.join(APPS)}", file=sys.stderr)
            return 2
    root = Path(args.work_dir)
    root.mkdir(parents=True, exist_ok=True)
    workdir = Path(tempfile.mkdtemp(prefix=time.strftime("%Y%m%d-%H%M%S-"), dir=root))
    db = MariaDB(workdir / "mariadb")
    print(f"bench-apps: work dir {workdir}; apps on core {args.app_core}, vegeta on core {args.loadgen_core}; "
          f"JVM options {args.java_opts!r}; load average {load_average()} on {os.cpu_count()} cores", flush=True)
    try:
        db.start()
        all_figures = [bench_app(spec, db, workdir, args.step_seconds, args.app_core, args.loadgen_core,
                                 args.java_opts.split()) for spec in args.apps]
    finally:
        db.stop()
        shutil.rmtree(db.workdir / "data", ignore_errors=True)
    report(all_figures)
    print(f"load average at the end: {load_average()} (well above 0 means other work shared the cores)")
    # Figures, not a test: only an app that could not be measured fails the run.
    return 1 if any(figures.error for figures in all_figures) else 0


if __name__ == "__main__":
    sys.exit(main())
