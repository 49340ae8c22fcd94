"""make bench-loadgen-alone: what each load generator costs on a core of its own, so that the lab
knows the rate one loadgen core sends within the audit's 80% budget (issue 10, "Performance").
Prints figures; it is a benchmark, not a test, and needs no lab.

The lab's own sweep (make bench-loadgen) stops where the app under test or the loadgen host's
shared core gives out (on the local default the loadgen shares core 0 with the DB, Prometheus and
the controller). Here each tool runs alone, pinned to one core (taskset), against a static server
that is never the limit: nginx answering every path with 200 and a 13-byte body, pinned to another
core. Each tool runs as the lab runs it for a scenario, greeting by default (the cheapest workload,
so the tool's own cost is what is measured; --scenario takes a built-in's name or a file's path, and
nginx answers any method too), from its file compiled as the bench compiles it (`perflab scenario
compile`): wrk2 from the pinned source with the generic scenario player (perflab/wrk2_scenario.lua,
perflab.lua beside it) and its done() percentile table, vegeta with the lab's -lazy JSON targets
written beforehand by perflab/scenario_play.py and its -prometheus-addr exporter on (the lab scrapes
it), then vegeta without the exporter. For each rate: the requests sent, the rate achieved (wrk2:
over its recorded window; vegeta: the requests scheduled within the window that succeeded), the
tool's CPU (user + system of its process, from wait4) per 1,000 requests, and how busy it kept its
core; then the highest rate it kept within 80% of the core.

    python tests/bench/bench_loadgen_alone.py [--tools wrk2 vegeta vegeta-no-exporter] [--rates "5000 10000 20000"]
        [--seconds 20] [--tool-core 0] [--server-core 1] [--scenario greeting|FILE.yml]
        [--wrk2-script FILE.lua [--wrk2-env NAME=VALUE ...]]

--wrk2-script plays FILE.lua instead of the generic player (copied beside perflab.lua, which it may
dofile from its own folder; PERFLAB_SCENARIO_DATA still names the compiled scenario), with the
environment each --wrk2-env adds; its table is labelled "wrk2 (FILE.lua)", the generic player's
"wrk2 (generic player)". The per-scenario scripts the generic player replaced (issue 25 compares
them at 5,000 and 20,000 req/s) are in git before f7c4cd7, with the knobs they read:

    git show 3ed3cc4:roles/loadgen/files/wrk2/zipcodes.lua > /tmp/zipcodes.lua
    python tests/bench/bench_loadgen_alone.py --tools wrk2 --scenario zipcodes --rates "5000 20000" \
        --wrk2-script /tmp/zipcodes.lua --wrk2-env WRITE_RATIO=0.5
    git show 3ed3cc4:roles/loadgen/files/wrk2/greeting.lua > /tmp/greeting.lua
    python tests/bench/bench_loadgen_alone.py --tools wrk2 --rates "5000 20000" \
        --wrk2-script /tmp/greeting.lua --wrk2-env GREETING_NAME=perflab

and the same without --wrk2-script and --wrk2-env for the generic player's figures.

wrk2 is built once into build/wrk2-<commit>/ from the archive $PERFLAB_WRK2_ARCHIVE (its sha256
checked against the loadgen role's pin); without one it is left out, saying why. vegeta is
build/vegeta (make vegeta).
"""
from __future__ import annotations

import argparse
import hashlib
import math
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import yaml

from perflab import scenario as scenarios
from perflab import vegeta, wrk2

ROOT = Path(__file__).resolve().parents[2]
DEFAULTS = yaml.safe_load((ROOT / "roles/loadgen/defaults/main.yml").read_text(encoding="utf-8"))
PERFLAB_LUA = ROOT / "roles/loadgen/files/wrk2/perflab.lua"
PLAYER_LUA = ROOT / "perflab/wrk2_scenario.lua"
PLAYER = ROOT / "perflab/scenario_play.py"
VEGETA = ROOT / "build/vegeta"
BUDGET = 0.80  # the audit's loadgen_cpu threshold (perflab thresholds)
INFLIGHT_SLOS = int(DEFAULTS["loadgen_vegeta_inflight_slos"])
MIN_ACHIEVED = 0.95  # the audit's achieved_rate threshold
EXPORTER_PORT = 18880


@dataclass(frozen=True)
class Step:
    rate: int
    requests: int
    achieved: float
    cpu_s: float
    wall_s: float

    @property
    def per_1000(self) -> float:
        return self.cpu_s * 1000 / max(self.requests, 1)

    @property
    def busy(self) -> float:
        return self.cpu_s / self.wall_s

    @property
    def kept(self) -> bool:
        return self.busy <= BUDGET and self.achieved >= MIN_ACHIEVED * self.rate


def wrk2_binary() -> tuple[Path | None, str]:
    """build/wrk2-<commit>/wrk, built from $PERFLAB_WRK2_ARCHIVE once; or None and why not."""
    commit = str(DEFAULTS["loadgen_wrk2_version"])
    built = ROOT / "build" / f"wrk2-{commit}" / "wrk"
    if built.is_file():
        return built, f"wrk2 {commit[:12]}, built before from the pinned archive"
    archive = Path(os.environ.get("PERFLAB_WRK2_ARCHIVE") or "/nonexistent")
    if not archive.is_file():
        return None, "no wrk2 archive: set PERFLAB_WRK2_ARCHIVE to the pinned source (see roles/loadgen)"
    digest = hashlib.sha256(archive.read_bytes()).hexdigest()
    if digest != DEFAULTS["loadgen_wrk2_archive_sha256"]:
        return None, f"{archive} has sha256 {digest}, not the pinned {DEFAULTS['loadgen_wrk2_archive_sha256']}"
    source = built.parent
    shutil.rmtree(source, ignore_errors=True)
    source.mkdir(parents=True)
    subprocess.run(["tar", "-xzf", str(archive), "-C", str(source), "--strip-components=1"], check=True)
    print(f"building wrk2 {commit[:12]} into {source} (about 25 s)", flush=True)
    made = subprocess.run(["make", f"-j{os.cpu_count() or 1}"], cwd=source, capture_output=True, text=True, check=False)
    if made.returncode != 0:
        return None, "wrk2 did not build:\n" + made.stdout[-2000:] + made.stderr[-2000:]
    return built, f"wrk2 {commit[:12]}, built from {archive.name} (sha256 verified)"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@contextmanager
def static_server(core: int) -> Iterator[str]:
    """nginx on a free port of 127.0.0.1, one worker pinned to CORE, 200 and 'Hello, World!' for every path."""
    port = free_port()
    with tempfile.TemporaryDirectory(prefix="perflab-nginx-") as home:
        config = Path(home) / "nginx.conf"
        config.write_text(f"""
daemon off; worker_processes 1; pid {home}/nginx.pid; error_log stderr error;
events {{ worker_connections 65536; multi_accept on; }}
http {{
  access_log off; keepalive_requests 100000000; keepalive_timeout 300s;
  client_body_temp_path {home}; proxy_temp_path {home}; fastcgi_temp_path {home}; uwsgi_temp_path {home};
  scgi_temp_path {home};
  server {{ listen 127.0.0.1:{port} backlog=65535; location / {{ return 200 "Hello, World!"; }} }}
}}
""", encoding="utf-8")
        server = subprocess.Popen(["taskset", "-c", str(core), "nginx", "-c", str(config), "-p", home])
        try:
            for _ in range(50):
                if server.poll() is None and subprocess.run(["curl", "-sf", "-o", "/dev/null", f"http://127.0.0.1:{port}/"],
                                                            check=False, timeout=5).returncode == 0:
                    break
                time.sleep(0.1)
            else:
                raise RuntimeError(f"nginx did not answer on 127.0.0.1:{port} (exit status {server.poll()})")
            yield f"http://127.0.0.1:{port}"
        finally:
            server.terminate()
            server.wait(timeout=30)


def measured(argv: list[str], env: dict[str, str], core: int) -> tuple[float, float, str]:
    """Run ARGV pinned to CORE; its CPU seconds (user + system, from wait4), wall seconds, stdout."""
    with tempfile.TemporaryFile("w+") as out:
        started = time.monotonic()
        process = subprocess.Popen(["taskset", "-c", str(core), *argv], env={**os.environ, **env}, stdout=out,
                                   stderr=subprocess.STDOUT, text=True)
        _, status, usage = os.wait4(process.pid, 0)
        wall = time.monotonic() - started
        process.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        text = out.read()
    if process.returncode != 0:
        raise RuntimeError(f"{argv[0]} exited {process.returncode}:\n{text[-2000:]}")
    # taskset execs the tool: the process measured is the tool's.
    return usage.ru_utime + usage.ru_stime, wall, text


def connections(scenario: scenarios.Scenario, rate: int) -> int:
    """The lab's connections for this rate (roles/loadgen vars: at most the scenario's)."""
    threads, most = scenario.threads, scenario.connections
    needed = max(threads, -(-rate // 10), -(-2 * rate * int(scenario.slo_p99_ms) // 1000), min(4 * threads, rate))
    needed = min(needed, max(threads, int(1.5 * rate)))
    return min(most, -(-needed // threads) * threads)


def max_workers(scenario: scenarios.Scenario, rate: int) -> int:
    """The lab's -max-workers for this rate (roles/loadgen vars): in flight at 4 x the SLO, at least the connections."""
    return max(connections(scenario, rate), math.ceil(rate * scenario.slo_p99_ms / 1000 * INFLIGHT_SLOS))


def compiled(file: Path, option: str, out: Path) -> Path:
    """The scenario FILE compiled for one tool (--wrk2 OUT.lua or --vegeta OUT.json), as the bench does."""
    subprocess.run([sys.executable, "-m", "perflab", "scenario", "compile", str(file), option, str(out)],
                   cwd=ROOT, check=True)
    return out


def run_wrk2(binary: Path, url: str, rate: int, seconds: int, core: int, file: Path, scenario: scenarios.Scenario,
             script: Path | None, script_env: dict[str, str]) -> Step:
    threads, conns = scenario.threads, connections(scenario, rate)
    with tempfile.TemporaryDirectory(prefix="perflab-wrk2-") as work:
        table_path = Path(work) / "percentiles.json"
        # The generic player (or SCRIPT), deployed beside perflab.lua (it loads it from its own folder).
        player = Path(work) / (script or PLAYER_LUA).name
        shutil.copy(script or PLAYER_LUA, player)
        shutil.copy(PERFLAB_LUA, Path(work) / PERFLAB_LUA.name)
        data = compiled(file, "--wrk2", Path(work) / "scenario-compiled.lua")
        env = {"WRK_THREADS": str(threads), "WRK_CONNECTIONS": str(conns), "PERFLAB_PERCENTILES": str(table_path),
               "PERFLAB_WRK2_CALIBRATION_MS": str(wrk2.calibration_ms(conns, threads)),
               "PERFLAB_SCENARIO_DATA": str(data), "KEY_PHASE": "1", **script_env}
        # wrk2 records nothing in its calibration: the invocation runs that much longer than the seconds
        # measured (as the lab's measured phase does).
        cpu, wall, text = measured(
            [str(binary), "-t", str(threads), "-c", str(conns), "-d", f"{seconds + wrk2.calibration_s(conns, threads)}s",
             "-R", str(rate),
             "--latency", "-s", str(player), url], env, core)
        output = wrk2.parse(text)
        table = wrk2.check_table(output, wrk2.parse_percentiles(table_path.read_text(encoding="utf-8")))
    return Step(rate, output.requests, table.recorded_success_rate, cpu, wall)


def run_vegeta(url: str, rate: int, seconds: int, core: int, file: Path, scenario: scenarios.Scenario,
               exporter: bool) -> Step:
    with tempfile.TemporaryDirectory(prefix="perflab-vegeta-") as work:
        targets, results = Path(work) / "targets.jsonl", Path(work) / "results.bin"
        # Written before the attack, as the bench does: not in the tool's CPU time.
        document = compiled(file, "--vegeta", Path(work) / "scenario-compiled.json")
        subprocess.run([sys.executable, "-I", "-S", str(PLAYER), "--compiled", str(document), "--base-url", url,
                        "--count", str(rate * (seconds + 1)), "--threads", str(scenario.threads), "--key-phase", "1",
                        "--output", str(targets)], check=True)
        argv = [str(VEGETA), "attack", "-lazy", "-format=json", f"-targets={targets}", f"-rate={rate}/1s",
                f"-duration={seconds}s", "-max-body=0", "-timeout=30s", f"-workers={connections(scenario, rate)}",
                f"-max-workers={max_workers(scenario, rate)}", f"-output={results}"]
        if exporter:
            argv.append(f"-prometheus-addr=127.0.0.1:{EXPORTER_PORT}")
        cpu, wall, _ = measured(argv, {}, core)
        encoded = subprocess.run([str(VEGETA), "encode", "-to", "json", str(results)], capture_output=True, check=True)
    result = vegeta.to_run_result([vegeta.parse(encoded.stdout)], [float(rate)], duration_s=float(seconds))
    return Step(rate, result.requests, result.achieved_rate, cpu, wall)


def table(name: str, scenario: str, steps: list[Step]) -> None:
    print(f"\n{name}: alone on one core, {scenario} against nginx on another")
    print(f"  {'rate/s':>7} {'requests':>9} {'achieved/s':>10} {'tool CPU-s':>10} {'core busy':>9} "
          f"{'CPU-s/1000 req':>14} {'req/s per core':>14}  within 80% and 95% of the rate")
    for step in steps:
        print(f"  {step.rate:>7} {step.requests:>9} {step.achieved:>10.1f} {step.cpu_s:>10.2f} {step.busy:>9.0%} "
              f"{step.per_1000:>14.4f} {1000 / step.per_1000:>14.0f}  {'yes' if step.kept else 'no'}")
    kept = [step for step in steps if step.kept]
    if kept:
        best = max(kept, key=lambda step: step.rate)
        print(f"{name}: highest rate kept within {BUDGET:.0%} of one core: {best.rate} req/s "
              f"({best.busy:.0%} busy, {best.per_1000:.4f} CPU-s per 1,000 requests)")
    else:
        print(f"{name}: no rate kept within {BUDGET:.0%} of one core")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tools", nargs="+", default=["wrk2", "vegeta", "vegeta-no-exporter"],
                        choices=["wrk2", "vegeta", "vegeta-no-exporter"])
    parser.add_argument("--rates", default="2000 5000 10000 20000 30000")
    parser.add_argument("--seconds", type=int, default=20)
    parser.add_argument("--tool-core", type=int, default=0)
    parser.add_argument("--server-core", type=int, default=1)
    parser.add_argument("--scenario", default="greeting", metavar="NAME_OR_FILE",
                        help="a built-in's name (scenarios/<name>.yml) or a scenario file's path (default greeting)")
    parser.add_argument("--wrk2-script", type=Path, metavar="FILE.lua",
                        help="play this wrk2 Lua script instead of the generic player (copied beside perflab.lua)")
    parser.add_argument("--wrk2-env", action="append", default=[], metavar="NAME=VALUE",
                        help="an environment variable for wrk2's script (repeatable)")
    args = parser.parse_args()
    rates = [int(rate) for rate in args.rates.split()]
    file = scenarios.path_of(args.scenario).resolve()
    try:
        scenario = scenarios.load(file)
    except scenarios.ScenarioError as error:
        parser.error("\n".join(error.problems))
    script_env = {}
    for text in args.wrk2_env:
        name, equals, value = text.partition("=")
        if not name or not equals:
            parser.error(f"--wrk2-env takes NAME=VALUE, got {text!r}")
        script_env[name] = value
    if args.wrk2_script is not None and not args.wrk2_script.is_file():
        parser.error(f"--wrk2-script: no file {args.wrk2_script}")
    if (args.wrk2_script is not None or script_env) and "wrk2" not in args.tools:
        parser.error("--wrk2-script and --wrk2-env are wrk2's: add wrk2 to --tools")
    wrk2_name = f"wrk2 ({args.wrk2_script.name if args.wrk2_script else 'generic player'})"
    binary, how = wrk2_binary() if "wrk2" in args.tools else (None, "")
    if binary is not None:
        print(how)
    with static_server(args.server_core) as url:
        for tool in args.tools:
            if tool == "wrk2" and binary is None:
                print(f"\nwrk2: not measured: {how}")
                continue
            if tool != "wrk2" and not VEGETA.is_file():
                print(f"\n{tool}: not measured: no {VEGETA} (make vegeta)")
                continue
            steps = []
            for rate in rates:
                step = (run_wrk2(binary, url, rate, args.seconds, args.tool_core, file, scenario, args.wrk2_script,
                                 script_env) if tool == "wrk2" and binary
                        else run_vegeta(url, rate, args.seconds, args.tool_core, file, scenario,
                                        exporter=tool == "vegeta"))
                steps.append(step)
                if step.busy > 1.0 or step.achieved < 0.5 * rate:
                    break  # the core is full: higher rates only fall further behind
            table(wrk2_name if tool == "wrk2" else tool, scenarios.label(args.scenario), steps)
    return 0


if __name__ == "__main__":
    sys.exit(main())
