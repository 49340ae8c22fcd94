"""A vegeta phase's results in the run's files (roles/bench/tasks/run_phase.yml), in the loadgen run directory:
vegeta-PHASE.bin encoded as JSON lines into vegeta-PHASE.jsonl.gz (gzip level 1: the raw results perflab
parses), then vegeta's text report of it printed.

    python3 -c <this file> VEGETA PHASE

Exits with vegeta's status when either of its commands fails. Runs on the loadgen host under its python3:
standard library only.
"""
from __future__ import annotations

import gzip
import shutil
import subprocess
import sys


def main(vegeta: str, phase: str) -> int:
    results = f"vegeta-{phase}.bin"
    with subprocess.Popen([vegeta, "encode", "-to=json", results], stdout=subprocess.PIPE) as encode:
        assert encode.stdout is not None
        with gzip.open(f"vegeta-{phase}.jsonl.gz", "wb", compresslevel=1) as lines:
            shutil.copyfileobj(encode.stdout, lines, 1 << 20)
    if encode.returncode != 0:
        print(f"vegeta_results: vegeta encode {results} exited with {encode.returncode}", file=sys.stderr)
        return encode.returncode
    return subprocess.run([vegeta, "report", results], check=False).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
