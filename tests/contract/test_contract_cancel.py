"""Clients that leave mid-request cost no later request its answer.

A load generator ends a phase by closing its connections, requests in flight included: every run's
warm-up ends so, right before its measured phase. An app whose DB work is cancelled with the request
may hand a later request a DB connection that never answers (a query cancelled half-read goes back
to the pool with the rest of its answer unread: r2dbc/r2dbc-pool#198). A CI simulation's books-orders
run on Spring WebFlux had one such request, unanswered past the load generators' 10 s timeout, after the
warm-up's end cancelled six. Here: requests that read and write the DB, each dropped by its client a
few milliseconds after it was sent (a reset, as a closing load generator's kernel sends), many at
once; then every DB connection of the app's pool must still answer.
"""

from __future__ import annotations

import json
import random
import re
import socket
import struct
import threading
import time
import urllib.parse

import requests
import yaml

from harness import REPO_ROOT

ABANDONED = 400  # requests dropped by their clients
AT_ONCE = 16
AFTER = 48  # requests after them, AT_ONCE at a time: each of the pool's connections is borrowed many times
# What the lab's load generators count as a timeout (roles/loadgen/defaults/main.yml loadgen_timeout_s).
ANSWER_WITHIN_S = yaml.safe_load((REPO_ROOT / "roles/loadgen/defaults/main.yml").read_text())["loadgen_timeout_s"]


def abandon(host: str, port: int, request: bytes, after_s: float) -> None:
    """Send REQUEST and reset the connection AFTER_S later, unread."""
    with socket.create_connection((host, port), timeout=5) as sock:
        sock.sendall(request)
        time.sleep(after_s)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))


def http_request(method: str, path: str, host: str, body: dict | None = None) -> bytes:
    payload = json.dumps(body).encode() if body is not None else b""
    head = f"{method} {path} HTTP/1.1\r\nHost: {host}\r\nAccept: application/json\r\n"
    if body is not None:
        head += f"Content-Type: application/json\r\nContent-Length: {len(payload)}\r\n"
    return (head + "\r\n").encode() + payload


def test_requests_dropped_by_their_clients_leave_every_db_connection_answering(target):
    where = urllib.parse.urlsplit(target.base_url)
    host, port = where.hostname or "127.0.0.1", where.port or 80
    drawn = random.Random(20261201)
    requests_to_drop = [
        http_request("GET", "/books", host),
        http_request("POST", "/orders", host, {"bookId": 1, "userId": 1}),
        http_request("POST", "/books", host, {"title": "Dropped", "author": "A client that left"}),
        http_request("GET", "/zipcodes?city=City-0000", host),
    ]
    failures: list[str] = []

    def drop_many(count: int, seed: int) -> None:
        local = random.Random(seed)
        for _ in range(count):
            try:
                abandon(host, port, local.choice(requests_to_drop), local.uniform(0.0, 0.004))
            except OSError as error:
                failures.append(f"could not send a request to drop: {error}")

    threads = [threading.Thread(target=drop_many, args=(ABANDONED // AT_ONCE, drawn.random()))
               for _ in range(AT_ONCE)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not failures, failures[:3]

    stalls: list[str] = []

    def ask(number: int) -> None:
        path = ("/books", "/zipcodes/10002")[number % 2]
        started = time.monotonic()
        try:
            answer = requests.get(target.url(path), timeout=ANSWER_WITHIN_S)
            if answer.status_code != 200:
                stalls.append(f"#{number} {path}: {answer.status_code} {answer.text[:120]}")
        except requests.Timeout:
            stalls.append(f"#{number} {path}: no answer in {time.monotonic() - started:.0f} s")
        except requests.RequestException as error:  # in a thread: unrecorded, it would pass unseen
            stalls.append(f"#{number} {path}: {error}")

    for start in range(0, AFTER, AT_ONCE):
        batch = [threading.Thread(target=ask, args=(n,)) for n in range(start, start + AT_ONCE)]
        for thread in batch:
            thread.start()
        for thread in batch:
            thread.join()
    assert not stalls, f"{len(stalls)} of {AFTER} requests after {ABANDONED} dropped ones went unanswered: {stalls[:5]}"
    # Every request answered, none holds or waits for a DB connection: the gauges the attribution averages say so
    # (Quarkus' Vert.x binder counted a failed command out of the pool's queue twice, and read -1 here for good).
    metrics = requests.get(target.url("/metrics"), headers={"Accept": "text/plain"}, timeout=ANSWER_WITHIN_S).text
    for gauge in ("perflab_db_pool_waiting", "perflab_db_pool_in_use"):
        values = [float(m.group(1)) for m in re.finditer(rf"^{gauge}(?:\{{[^}}]*\}})? (\S+)$", metrics, re.M)]
        assert values and sum(values) == 0, f"{gauge} at rest: {values}"
