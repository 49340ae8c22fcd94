"""Paths and facts the unit tests share."""

from pathlib import Path

UNIT_DIR = Path(__file__).resolve().parent
FIXTURES = UNIT_DIR / "fixtures"
WRK2_FIXTURES = FIXTURES / "wrk2"
# Where the copies in fixtures/wrk2 come from (see its README), when this checkout has it.
SHARED_WRK2_FIXTURES = UNIT_DIR.parents[2] / "shared" / "fixtures" / "wrk2"

# The rate each fixture was asked for (fixtures/wrk2/README.md): wrk2 does not print it.
WRK2_TARGET_RATES = {
    "wrk2-steady-2000rps.txt": 2000.0,
    "wrk2-overloaded-600rps-capacity-250.txt": 600.0,
    "wrk2-overloaded-uncorrected.txt": 600.0,
    "wrk2-errors-non2xx.txt": 1000.0,
    "wrk2-server-killed-midrun.txt": 1000.0,
}


def wrk2_text(name: str) -> str:
    return (WRK2_FIXTURES / name).read_text()
