"""Shared fixtures of the lab end-to-end tests: they drive the real `make` targets on the
local default inventory (four systemd containers) and on temporary inventories."""
from __future__ import annotations

from collections.abc import Iterator

import pytest

from lab_helpers import run_make, tail


@pytest.fixture(scope="session")
def lab() -> Iterator[str]:
    """`make lab-up` on the local default from nothing (any previous lab is removed first),
    once per session; yields its output. At the end the lab is removed again."""
    down = run_make("lab-down")
    assert down.returncode == 0, tail(down.stdout)
    up = run_make("lab-up")
    assert up.returncode == 0, "make lab-up failed:\n" + tail(up.stdout, 120)
    yield up.stdout
    run_make("lab-down")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The lifecycle tests end with lab-down: run them after every other test using the lab."""
    items.sort(key=lambda item: item.nodeid.split("::")[0].endswith("test_lab_lifecycle.py"))
