"""Paths and facts the unit tests share."""

import importlib.util
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from types import ModuleType

from perflab.model import load_document
from perflab.rundir import BenchInputs

UNIT_DIR = Path(__file__).resolve().parent
FIXTURES = UNIT_DIR / "fixtures"
WRK2_FIXTURES = FIXTURES / "wrk2"
VEGETA_FIXTURES = FIXTURES / "vegeta"
# The test data's originals, in a directory beside the checkout that only the project's own test
# machines have (../shared/fixtures/wrk2): test_wrk2 checks the copies in fixtures/wrk2 against
# them there and skips elsewhere. fixtures/wrk2/README.md says how the copies were recorded.
SHARED_WRK2_FIXTURES = UNIT_DIR.parents[2] / "shared" / "fixtures" / "wrk2"

# The rate each fixture was asked for (fixtures/wrk2/README.md): wrk2 does not print it.
WRK2_TARGET_RATES = {
    "wrk2-steady-2000rps.txt": 2000.0,
    "wrk2-overloaded-600rps-capacity-250.txt": 600.0,
    "wrk2-overloaded-uncorrected.txt": 600.0,
    "wrk2-errors-non2xx.txt": 1000.0,
    "wrk2-server-killed-midrun.txt": 1000.0,
}
# The runs recorded with their percentile table (X.txt beside X-percentiles.json), made here.
WRK2_TABLE_RUNS = {"wrk2-steady-1000rps": 1000.0, "wrk2-slow-20ms-200rps": 200.0}

# The rate and -duration each vegeta fixture was asked for (fixtures/vegeta/README.md).
VEGETA_RUNS = {
    "vegeta-steady-200rps.jsonl.gz": (200.0, 3.0),
    "vegeta-errors-500-200rps.jsonl.gz": (200.0, 3.0),
    "vegeta-freeze-1s-200rps.jsonl.gz": (200.0, 4.0),
    "vegeta-behind-1worker-100rps.jsonl.gz": (100.0, 3.0),
    "vegeta-refused-20rps.jsonl.gz": (20.0, 1.0),
    "vegeta-timeout-20rps.jsonl.gz": (20.0, 1.0),
    "vegeta-cut-body-200rps.jsonl.gz": (200.0, 1.0),
}


def wrk2_text(name: str) -> str:
    return (WRK2_FIXTURES / name).read_text()


def vegeta_bytes(name: str) -> bytes:
    return (VEGETA_FIXTURES / name).read_bytes()


def bench_inputs(document: Mapping[str, object]) -> BenchInputs:
    """bench-inputs.json as perflab.rundir reads it, from the document a test writes as the bench does."""
    return load_document(BenchInputs, dict(document), unversioned=True)


def host_program(path: Path) -> ModuleType:
    """A program a role runs on lab hosts (roles/*/files/*.py: its own module, standard library only), imported."""
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run_host_program(path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """PATH run as its role's task runs it: `python3 -c <its source> ARGS` (e.g. roles/bench/vars/main.yml)."""
    return subprocess.run([sys.executable, "-c", path.read_text(encoding="utf-8"), *args], capture_output=True,
                          text=True, timeout=30, check=False)
