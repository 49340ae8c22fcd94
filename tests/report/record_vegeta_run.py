"""Record a vegeta run with its warm-up, for the report's time-series chart: real vegeta output
against the stand-in app of tests/unit/fixtures/vegeta/server.py on 127.0.0.1, and the stand-in's
CPU and resident memory as utilization.json (docs/ARCHITECTURE.md) on the same clock. Used once to
make tests/report/fixtures/vegeta-greeting-warmup-200rps (its README says how); the report tests
then read the files without vegeta.

Usage: python tests/report/record_vegeta_run.py VEGETA OUT_DIR

As the bench runs it (roles/loadgen/vars/main.yml): `vegeta attack -lazy -format=json
-rate=200/1s -duration=5s -max-body=0 ...` for the warm-up, the lab left at rest for 7 s
(bench_quiet_s), then the measured phase, 10 s at the same rate; each phase's results kept as `vegeta encode -to=json`
writes them, gzipped. utilization.json holds one tier, `app` (the stand-in's process; there is
no DB), every 5 s over the measured phase: busy cores as Prometheus' rate over 15 s would give
them (the CPU seconds of /proc/PID/stat sampled every second, over the 15 s before each step),
resident memory from /proc/PID/status.
"""

from __future__ import annotations

import gzip
import json
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

SERVER = Path(__file__).resolve().parents[1] / "unit" / "fixtures" / "vegeta" / "server.py"
STEP_S = 5.0
RATE_WINDOW_S = 15.0
TICKS = os.sysconf("SC_CLK_TCK")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


class _Sampler(threading.Thread):
    """(unix s, CPU seconds, resident bytes) of one process, every second."""

    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.pid = pid
        self.samples: list[tuple[float, float, float]] = []
        self.stop = threading.Event()

    def _read(self) -> tuple[float, float, float]:
        stat = Path(f"/proc/{self.pid}/stat").read_text().rsplit(")", 1)[1].split()
        cpu_s = (int(stat[11]) + int(stat[12])) / TICKS  # utime, stime (fields 14 and 15)
        rss_kb = next(int(line.split()[1]) for line in Path(f"/proc/{self.pid}/status").read_text().splitlines()
                      if line.startswith("VmRSS:"))
        return time.time(), cpu_s, rss_kb * 1024.0

    def run(self) -> None:
        while not self.stop.wait(1.0 - time.time() % 1.0):
            self.samples.append(self._read())


def _attack(vegeta: str, port: int, rate: int, duration_s: int, out: Path, phase: str) -> None:
    targets = out / f"vegeta-{phase}-targets.jsonl"
    line = json.dumps({"method": "GET", "url": f"http://127.0.0.1:{port}/zipcodes/10001"})
    targets.write_text((line + "\n") * (rate * (duration_s + 1)))
    binary = out / f"vegeta-{phase}.bin"
    subprocess.run([vegeta, "attack", "-lazy", "-format=json", f"-targets={targets}", f"-rate={rate}/1s",
                    f"-duration={duration_s}s", "-max-body=0", "-timeout=30s", "-workers=10", "-max-workers=64",
                    f"-output={binary}"], check=True)
    encoded = subprocess.run([vegeta, "encode", "-to=json", str(binary)], check=True, capture_output=True).stdout
    (out / f"vegeta-{phase}.jsonl.gz").write_bytes(gzip.compress(encoded, compresslevel=9, mtime=0))
    report = subprocess.run([vegeta, "report", str(binary)], check=True, capture_output=True, text=True).stdout
    (out / f"vegeta-{phase}.txt").write_text(report)
    binary.unlink()
    targets.unlink()


def _at(samples: list[tuple[float, float, float]], moment: float) -> tuple[float, float, float]:
    """The last sample at or before `moment` (the first one when none is)."""
    before = [s for s in samples if s[0] <= moment]
    return before[-1] if before else samples[0]


def main(vegeta: str, out: Path, rate: int = 200, warmup_s: int = 5, quiet_s: float = 7.0,
         duration_s: int = 10) -> None:
    out.mkdir(parents=True, exist_ok=True)
    port = _free_port()
    server = subprocess.Popen([sys.executable, str(SERVER), "--port", str(port), "--mode", "ok"])
    try:
        time.sleep(1.0)
        sampler = _Sampler(server.pid)
        sampler.start()
        time.sleep(2.0)
        _attack(vegeta, port, rate, warmup_s, out, "warmup")
        time.sleep(quiet_s)
        start = time.time()
        _attack(vegeta, port, rate, duration_s, out, "measure")
        end = time.time()
        time.sleep(2.0)
        sampler.stop.set()
        sampler.join()
    finally:
        server.terminate()
        server.wait(timeout=10)
    busy, memory = [], []
    step = start
    while step <= end + 1e-9:
        now, then = _at(sampler.samples, step), _at(sampler.samples, step - RATE_WINDOW_S)
        busy.append([step, round((now[1] - then[1]) / max(now[0] - then[0], 1e-3), 6)])
        memory.append([step, now[2]])
        step += STEP_S
    document = {
        "schema_version": 1, "source": "tests/report/record_vegeta_run.py (/proc of the stand-in app)",
        "start": start, "end": end, "step_s": STEP_S,
        "tiers": {"app": {"allotted_cores": float(os.cpu_count() or 1), "busy_cores": busy, "memory_bytes": memory}},
    }
    (out / "utilization.json").write_text(json.dumps(document) + "\n")


if __name__ == "__main__":
    main(sys.argv[1], Path(sys.argv[2]))
