"""Readiness follows the DB: 503 while the app cannot reach it, 200 again once it can.

Harness only (it locks the app's DB account on the suite's own server: ACCOUNT LOCK on MariaDB, NOLOGIN on
PostgreSQL, and cuts its sessions), and the last check of each app: the file name sorts after the others.
"""

from __future__ import annotations

import time

import pytest
import requests

DOWN_DEADLINE_S = 90  # a pool may wait its connection timeout (30 s by default) before giving up
UP_DEADLINE_S = 90


def poll_ready(target, wanted: int, deadline_s: float) -> list[str]:
    """GET /health/ready until it answers `wanted`; return what it answered on the way."""
    seen = []
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        try:
            response = requests.get(target.url("/health/ready"), timeout=40)
            seen.append(str(response.status_code))
            if response.status_code == wanted:
                return seen
        except requests.RequestException as error:
            seen.append(type(error).__name__)
        time.sleep(1)
    raise AssertionError(f"/health/ready never answered {wanted} in {deadline_s} s; answers: {seen[-10:]}")


def test_ready_is_503_without_db_and_recovers(target, api):
    if target.db is None:
        pytest.skip("needs the suite's own DB server (--app): it locks the app's DB account")
    target.db.lock_app_user(target.monitor)
    try:
        poll_ready(target, 503, DOWN_DEADLINE_S)
        response = requests.get(target.url("/health/ready"), timeout=40,
                                headers={"Accept": "application/json"})
        assert response.status_code == 503, f"/health/ready answered {response.status_code} again without the DB"
        assert api.check(response, "get", "/health/ready")["status"] == "DOWN"
        live = requests.get(target.url("/health/live"), timeout=10)
        assert live.status_code == 200, f"/health/live must stay 200 without the DB: {live.status_code}"
        greeting = requests.get(target.url("/greeting/nodb"), timeout=10)
        assert greeting.status_code == 200 and greeting.text == "hello nodb", "routes without DB work keep working"
    finally:
        target.db.unlock_app_user(target.monitor)
    poll_ready(target, 200, UP_DEADLINE_S)
    response = requests.get(target.url("/zipcodes/10001"), timeout=30)
    assert response.status_code == 200, f"the app must serve DB routes again: {response.status_code} {response.text[:200]}"
