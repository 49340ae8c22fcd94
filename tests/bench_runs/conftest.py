"""The benchmark-run tests need the session's lab (tests/conftest.py: `lab`)."""
from __future__ import annotations

import pytest


@pytest.fixture(scope="session", autouse=True)
def lab_is_up(lab: str) -> None:
    """Every benchmark-run test runs on the lab the session brought up."""
