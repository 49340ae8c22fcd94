"""The matrix's runs need the session's lab (tests/conftest.py: `lab`): in `make test-lab`, the SSH lab."""
from __future__ import annotations

import pytest


@pytest.fixture(scope="session", autouse=True)
def lab_is_up(lab: str) -> None:
    """Every run of the matrix runs on the lab the session brought up."""
