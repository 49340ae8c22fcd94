"""Report 1's race: N parallel get-or-creates of one new zip code make exactly one row."""

from __future__ import annotations

import threading

import requests

import seed_facts

PARALLEL = 16
ROUNDS = 3


def race(target, zipcode: dict) -> list[requests.Response]:
    """PARALLEL POSTs of `zipcode`, released together, each on its own connection."""
    barrier = threading.Barrier(PARALLEL)
    responses: list[requests.Response | BaseException | None] = [None] * PARALLEL

    def post(slot: int) -> None:
        with requests.Session() as http:
            http.get(target.url("/greeting/connect"), timeout=30)  # the connection is open before the race
            barrier.wait()
            try:
                responses[slot] = http.post(target.url("/zipcodes"), json=zipcode, timeout=60)
            except requests.RequestException as error:
                responses[slot] = error

    threads = [threading.Thread(target=post, args=(slot,)) for slot in range(PARALLEL)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    answered = [r for r in responses if isinstance(r, requests.Response)]
    assert len(answered) == PARALLEL, f"requests failed: {[r for r in responses if not isinstance(r, requests.Response)]}"
    return answered


def new_zipcode(round_number: int) -> dict:
    return {"zip": seed_facts.fresh_zip(), "city": f"Race-{round_number}", "county": "Concurrency",
            "state": "CA", "timezone": "America/Los_Angeles", "type": "UNIQUE"}


def test_parallel_posts_of_one_new_zip_create_one_row(target, api):
    for round_number in range(ROUNDS):
        zipcode = new_zipcode(round_number)
        responses = race(target, zipcode)
        statuses = sorted(r.status_code for r in responses)
        assert statuses == [200] * (PARALLEL - 1) + [201], (
            f"round {round_number}: statuses {statuses}, bodies {[r.text[:120] for r in responses if r.status_code >= 300]}"
        )
        bodies = [api.check(r, "post", "/zipcodes") for r in responses]
        assert all(body == zipcode for body in bodies), f"round {round_number}: bodies differ: {bodies}"
        rows = target.query("SELECT COUNT(*) FROM zipcode WHERE zip = %s", (zipcode["zip"],))
        assert rows == [(1,)], f"round {round_number}: {rows[0][0]} rows for {zipcode['zip']}"


def race_statements_ok(engine: str, counted: dict[str, int]) -> bool:
    """Winner: 1 select + 1 insert; a loser: 1 select, or 2 selects + 1 failed insert when it raced.

    MariaDB counts the failed inserts: selects - inserts = PARALLEL - 1, 1 <= inserts <= PARALLEL.
    PostgreSQL's pg_stat_statements counts a statement once it completes, so only the winner's insert:
    inserts = 1, PARALLEL <= selects <= 2 PARALLEL - 1. No update or delete on either.
    """
    if counted["update"] or counted["delete"]:
        return False
    if engine == "postgresql":
        return counted["insert"] == 1 and PARALLEL <= counted["select"] <= 2 * PARALLEL - 1
    return counted["select"] - counted["insert"] == PARALLEL - 1 and 1 <= counted["insert"] <= PARALLEL


def test_race_statements_follow_the_contract(target):
    """The statements of a race (apps/contract/README.md), retried with a new zip only while noise could explain a miss."""
    seen = []
    for round_number in range(3):
        _, counted = target.statements(lambda: race(target, new_zipcode(round_number)))
        if race_statements_ok(target.engine, counted):
            return
        seen.append(counted)
    raise AssertionError(f"statements per race of {PARALLEL} on {target.engine}: {seen}; "
                         f"{race_statements_ok.__doc__}")
