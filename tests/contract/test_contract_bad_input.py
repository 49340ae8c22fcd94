"""Bad input never gets a 5xx: a 4xx with the JSON error body, and no DB statement at all."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import pytest
import requests

import seed_facts

ZERO_ROW = "`GET /hello/{latency}`, `GET /greeting/{name}`, any 400"
JSON_TYPE = {"Content-Type": "application/json", "Accept": "application/json"}
OVER_64_KIB = 64 * 1024 + 1024


def valid_zipcode() -> dict:
    return {"zip": seed_facts.fresh_zip(), "city": "Springfield", "county": "Sangamon", "state": "IL",
            "timezone": "America/Chicago", "type": "STANDARD"}


@dataclass
class Case:
    id: str
    method: str
    path: str
    body: object = None  # a dict/list is sent as JSON, bytes/str as they are
    headers: dict | None = None  # None: JSON for a body, else none (as the load generators send them)
    status: int | None = 400  # None: any 4xx (the route may not even match)
    message: str | None = None  # one of the errors must equal this
    field: str | None = None  # one of the errors must name this field ("<field>: ...")

    def request_headers(self) -> dict:
        if self.headers is not None:
            return self.headers
        return dict(JSON_TYPE) if self.body is not None else {}

    def data(self) -> bytes | None:
        if self.body is None:
            return None
        if isinstance(self.body, (dict, list)):
            return json.dumps(self.body).encode()
        if isinstance(self.body, str):
            return self.body.encode()
        assert isinstance(self.body, bytes), f"{self.id}: a body is a dict, list, str or bytes"
        return self.body


def padded_json(valid: dict) -> bytes:
    """A valid request made over 64 KiB with insignificant whitespace: only its size is wrong."""
    return ("{" + " " * OVER_64_KIB + json.dumps(valid)[1:]).encode()


def with_field(base: dict, **changes) -> dict:
    changed = dict(base)
    for key, value in changes.items():
        if value is ...:
            changed.pop(key)
        else:
            changed[key] = value
    return changed


ZIP = valid_zipcode()
BOOK = {"title": "A title", "author": "An author"}
ORDER = {"bookId": 1, "userId": 1}

CASES = [
    # Path parameters.
    Case("zip-letters", "GET", "/zipcodes/abcde"),
    Case("zip-short", "GET", "/zipcodes/1234"),
    Case("zip-plus4-short", "GET", "/zipcodes/12345-678"),
    Case("zip-traversal", "GET", "/zipcodes/..%2F..%2Fetc%2Fpasswd", status=None),
    Case("zip-dot-dot", "GET", "/zipcodes/%2e%2e", status=None),
    Case("zip-nul", "GET", "/zipcodes/%00", status=None),
    Case("zip-trailing-nul", "GET", "/zipcodes/12345%00", status=None),
    Case("zip-sql-quote", "GET", "/zipcodes/1'%20OR%20'1'%3D'1"),
    Case("zip-double-quote", "GET", "/zipcodes/%22%3E%3Cscript%3E"),
    # An encoded ';' belongs to the value (a bare one would start matrix parameters, RFC 3986).
    Case("zip-semicolon", "GET", "/zipcodes/12345%3BDROP%20TABLE%20zipcode"),
    Case("hello-non-numeric", "GET", "/hello/abc"),
    Case("hello-negative", "GET", "/hello/-1"),
    Case("hello-too-large", "GET", "/hello/10001"),
    Case("hello-fraction", "GET", "/hello/1.5"),
    Case("hello-overflow", "GET", "/hello/99999999999999999999"),
    Case("hello-blank", "GET", "/hello/%20"),
    Case("greeting-blank", "GET", "/greeting/%20", message="name: must not be blank"),
    Case("greeting-tab", "GET", "/greeting/%09", message="name: must not be blank"),
    Case("greeting-too-long", "GET", "/greeting/" + "x" * 65, message="name: size must be between 0 and 64"),
    # A method the route does not serve: a 405 on every route alike, TechEmpower's included.
    *[
        Case(f"{method.lower()}-{path[1:].split('/')[0]}-not-served", method, path, status=405)
        for method, path in (
            ("POST", "/plaintext"), ("PUT", "/plaintext"), ("DELETE", "/plaintext"),
            ("POST", "/json"), ("PUT", "/json"), ("DELETE", "/json"),
            ("POST", "/greeting/perflab"), ("DELETE", "/greeting/perflab"), ("PUT", "/hello/0"),
            ("POST", "/zipcodes/10000"), ("PUT", "/books"), ("DELETE", "/books"),
            ("POST", "/db"), ("PUT", "/queries"), ("POST", "/updates"), ("DELETE", "/fortunes"),
        )
    ],
    # Query parameters.
    Case("city-missing", "GET", "/zipcodes"),
    Case("city-empty", "GET", "/zipcodes?city="),
    Case("city-blank", "GET", "/zipcodes?city=%20%20"),
    Case("city-too-long", "GET", "/zipcodes?city=" + "c" * 65),
    # Bodies, on every write endpoint.
    *[
        case
        for path, valid in (("/zipcodes", ZIP), ("/books", BOOK), ("/orders", ORDER))
        for case in (
            Case(f"{path[1:]}-malformed-json", "POST", path, '{"a": '),
            Case(f"{path[1:]}-not-json", "POST", path, "not json at all"),
            Case(f"{path[1:]}-empty-body", "POST", path, b""),
            Case(f"{path[1:]}-json-null", "POST", path, "null"),
            Case(f"{path[1:]}-json-array", "POST", path, [valid]),
            Case(f"{path[1:]}-json-string", "POST", path, '"text"'),
            Case(f"{path[1:]}-unknown-field", "POST", path, with_field(valid, surprise=1)),
            Case(f"{path[1:]}-over-64-kib", "POST", path, padded_json(valid), status=413),
            Case(f"{path[1:]}-text-plain", "POST", path, json.dumps(valid),
                 headers={"Content-Type": "text/plain", "Accept": "application/json"}, status=415),
        )
    ],
    *[
        Case(f"zipcodes-{name}", "POST", "/zipcodes", with_field(ZIP, **{key: value}))
        for name, key, value in (
            ("missing-zip", "zip", ...), ("missing-city", "city", ...), ("missing-county", "county", ...),
            ("missing-state", "state", ...), ("missing-timezone", "timezone", ...), ("missing-type", "type", ...),
            ("null-zip", "zip", None), ("null-city", "city", None),
            ("zip-pattern", "zip", "1234"), ("zip-path-trick", "zip", "../../etc/passwd"),
            ("zip-object", "zip", {"v": "12345"}), ("city-array", "city", ["x"]),
            ("city-empty", "city", ""), ("city-too-long", "city", "c" * 65), ("county-empty", "county", ""),
            ("county-too-long", "county", "c" * 65), ("state-lower", "state", "il"),
            ("state-three", "state", "ILL"), ("timezone-too-long", "timezone", "t" * 33),
            ("type-too-long", "type", "t" * 17), ("type-empty", "type", ""), ("timezone-empty", "timezone", ""),
        )
    ],
    *[
        Case(f"books-{name}", "POST", "/books", with_field(BOOK, **{key: value}))
        for name, key, value in (
            ("missing-title", "title", ...), ("missing-author", "author", ...), ("null-title", "title", None),
            ("blank-title", "title", "  "), ("empty-author", "author", ""), ("title-too-long", "title", "t" * 129),
            ("author-too-long", "author", "a" * 129), ("title-object", "title", {"t": 1}),
        )
    ],
    *[
        Case(f"orders-{name}", "POST", "/orders", with_field(ORDER, **{key: value}))
        for name, key, value in (
            ("missing-book", "bookId", ...), ("missing-user", "userId", ...), ("null-book", "bookId", None),
            ("book-zero", "bookId", 0), ("book-negative", "bookId", -1), ("user-zero", "userId", 0),
            ("book-text", "bookId", "abc"), ("user-object", "userId", {"id": 1}), ("book-array", "bookId", [1]),
            ("book-overflow", "bookId", 2**63),
        )
    ],
    # A JSON value of the wrong type is refused, never converted: each of these would pass the
    # field's constraints once converted ("99998", "true", "42", 1), so only the type is wrong.
    *[
        Case(f"{path[1:]}-{name}", "POST", path, with_field(valid, **{key: value}), field=key)
        for path, valid, name, key, value in (
            ("/zipcodes", ZIP, "zip-number", "zip", 99998),
            ("/zipcodes", ZIP, "city-boolean", "city", True),
            ("/zipcodes", ZIP, "county-fraction", "county", 1.5),
            ("/zipcodes", ZIP, "type-false", "type", False),
            ("/books", BOOK, "title-number", "title", 42),
            ("/books", BOOK, "author-boolean", "author", True),
            ("/orders", ORDER, "book-numeric-string", "bookId", "1"),
            ("/orders", ORDER, "user-numeric-string", "userId", "1"),
            ("/orders", ORDER, "book-fraction", "bookId", 1.5),
            ("/orders", ORDER, "user-boolean", "userId", True),
        )
    ],
]


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_bad_input_gets_4xx_json_and_no_statement(target, api, statement_table, case):
    def send():
        return target.request(case.method, case.path, data=case.data(), headers=case.request_headers())

    if target.counter is not None:
        response = target.expect_statements(send, statement_table[ZERO_ROW])
    else:
        response = send()
    if case.status is not None:
        assert response.status_code == case.status, (
            f"{case.method} {case.path[:80]}: expected {case.status}, got {response.status_code}: "
            f"{response.text[:300]!r}"
        )
    body = api.error(response)
    if case.message is not None:
        assert case.message in body["errors"], f"expected the message {case.message!r} in {body['errors']}"
    if case.field is not None:
        assert any(error.startswith(f"{case.field}: ") for error in body["errors"]), (
            f"expected a message naming {case.field!r} in {body['errors']}"
        )


@pytest.mark.parametrize("path", ["/zipcodes", "/books"])
def test_chunked_body_over_64_kib_gets_413(target, api, path):
    """The 64 KiB limit holds when the size is not announced up front, too."""
    payload = padded_json(ZIP if path == "/zipcodes" else BOOK)
    chunks = (payload[i:i + 8192] for i in range(0, len(payload), 8192))
    response = target.request("POST", path, data=chunks, headers=JSON_TYPE)
    assert response.status_code == 413, f"{response.status_code}: {response.text[:300]!r}"
    api.error(response)


def test_connection_still_works_after_413(target):
    """A server that rejects a body unread must close the connection or drain the body: the
    requests after it on the same keep-alive connection get their own answers, promptly. Several
    rounds of several requests, because a half-drained connection fails only now and then."""
    payload = padded_json(BOOK)
    with requests.Session() as http:
        for round_number in range(8):
            for chunked in (False, True):
                data = (payload[i:i + 8192] for i in range(0, len(payload), 8192)) if chunked else payload
                rejected = http.post(target.url("/books"), data=data, headers=JSON_TYPE, timeout=30)
                assert rejected.status_code == 413, f"round {round_number}: {rejected.status_code}"
                for follow_up in range(3):
                    name = f"r{round_number}{'c' if chunked else 'l'}{follow_up}"
                    try:
                        after = http.get(target.url(f"/greeting/{name}"), timeout=10)
                    except requests.Timeout:
                        raise AssertionError(
                            f"round {round_number}: request {follow_up + 1} after a 413 "
                            f"({'chunked' if chunked else 'Content-Length'}) on the same connection got no "
                            "answer in 10 s (close the connection or drain the body)"
                        ) from None
                    assert (after.status_code, after.text) == (200, f"hello {name}")
