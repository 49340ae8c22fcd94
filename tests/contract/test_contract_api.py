"""Every endpoint's status, media type and body, and the DB statements each request issues.

Expected statement counts come from apps/contract/README.md's table, read at run time, so the
suite and the contract cannot drift apart.
"""

from __future__ import annotations

import re
import time
from email.utils import parsedate_to_datetime

import seed_facts

JSON = {"Accept": "application/json"}
TECHEMPOWER_ROW = "`GET /plaintext`, `GET /json`"
HELLO_WORLD = "Hello, World!"
# TechEmpower's Content-Type rules (its verifier's patterns), case-insensitive.
TECHEMPOWER_TYPES = {"/plaintext": r"text/plain(; ?charset=utf-8)?", "/json": r"application/json(; ?charset=utf-8)?"}
# The Accept headers TechEmpower's verifier sends: the apps must answer them with the same bodies.
TECHEMPOWER_ACCEPT = {
    "/plaintext": "text/plain,text/html;q=0.9,application/xhtml+xml;q=0.9,application/xml;q=0.8,*/*;q=0.7",
    "/json": "application/json,text/html;q=0.9,application/xhtml+xml;q=0.9,application/xml;q=0.8,*/*;q=0.7",
}


def test_get_zipcode_found(target, api, statement_table):
    seeded = seed_facts.zipcode(12_345)
    response = target.expect_statements(
        lambda: target.request("GET", f"/zipcodes/{seeded['zip']}", headers=JSON),
        statement_table["`GET /zipcodes/{zip}` (found or not)"],
    )
    assert response.status_code == 200, response.text
    assert api.check(response, "get", "/zipcodes/{zip}") == seeded


def test_get_zipcode_absent(target, api, statement_table):
    for zip_code in ("99999", "10000-0000"):
        response = target.expect_statements(
            lambda: target.request("GET", f"/zipcodes/{zip_code}", headers=JSON),
            statement_table["`GET /zipcodes/{zip}` (found or not)"],
        )
        assert response.status_code == 404, response.text
        api.check(response, "get", "/zipcodes/{zip}")
        api.error(response)


def test_zipcodes_by_city(target, api, statement_table):
    response = target.expect_statements(
        lambda: target.request("GET", "/zipcodes", params={"city": "City-0007"}, headers=JSON),
        statement_table["`GET /zipcodes?city=C`"],
    )
    assert response.status_code == 200, response.text
    assert api.check(response, "get", "/zipcodes") == seed_facts.city_zipcodes(7)


def test_zipcodes_by_unknown_city_is_empty(target, api, statement_table):
    # A quote-laden city is an ordinary value: bound as a parameter, it matches nothing.
    for city in ("Atlantis", "' OR '1'='1", 'x" OR 1=1 -- '):
        response = target.expect_statements(
            lambda: target.request("GET", "/zipcodes", params={"city": city}, headers=JSON),
            statement_table["`GET /zipcodes?city=C`"],
        )
        assert response.status_code == 200, response.text
        assert api.check(response, "get", "/zipcodes") == []


def test_post_zipcode_creates_then_returns_stored_row(target, api, statement_table):
    created = {}

    def create():
        created.clear()
        created.update(zip=seed_facts.fresh_zip(), city="Springfield", county="Sangamon",
                       state="IL", timezone="America/Chicago", type="STANDARD")
        return target.request("POST", "/zipcodes", json=created, headers=JSON)

    response = target.expect_statements(create, statement_table["`POST /zipcodes`, new zip"])
    assert response.status_code == 201, response.text
    assert api.check(response, "post", "/zipcodes") == created
    stored = target.query(
        "SELECT zip, city, county, state, timezone, type FROM zipcode WHERE zip = %s", (created["zip"],)
    )
    assert stored == [tuple(created[key] for key in ("zip", "city", "county", "state", "timezone", "type"))]

    other = dict(created, city="Shelbyville", county="Shelby", type="PO BOX")
    again = target.expect_statements(
        lambda: target.request("POST", "/zipcodes", json=other, headers=JSON),
        statement_table["`POST /zipcodes`, zip exists"],
    )
    assert again.status_code == 200, again.text
    assert api.check(again, "post", "/zipcodes") == created, "200 must carry the stored row, not the request's"


def test_post_seeded_zipcode_returns_seeded_row(target, api, statement_table):
    seeded = seed_facts.zipcode(31_000)
    response = target.expect_statements(
        lambda: target.request("POST", "/zipcodes", json=dict(seeded, city="Elsewhere"), headers=JSON),
        statement_table["`POST /zipcodes`, zip exists"],
    )
    assert response.status_code == 200, response.text
    assert api.check(response, "post", "/zipcodes") == seeded


def test_hello_without_latency(target, api, statement_table):
    response = target.expect_statements(
        lambda: target.request("GET", "/hello/0"),
        statement_table["`GET /hello/{latency}`, `GET /greeting/{name}`, any 400"],
    )
    assert response.status_code == 200, response.text
    assert api.check(response, "get", "/hello/{latency}") == "Welcome to reactive world ~"


def test_hello_waits_the_latency(target, api):
    started = time.monotonic()
    response = target.request("GET", "/hello/400")
    elapsed = time.monotonic() - started
    assert response.status_code == 200, response.text
    assert api.check(response, "get", "/hello/{latency}") == "Welcome to reactive world ~"
    assert 0.4 <= elapsed < 5, f"/hello/400 answered after {elapsed:.3f} s"


def test_greeting(target, api, statement_table):
    zero = statement_table["`GET /hello/{latency}`, `GET /greeting/{name}`, any 400"]
    for path, expected in (
        ("/greeting/perflab", "hello perflab"),
        ("/greeting/J%C3%BCrgen%20M%C3%BCller", "hello Jürgen Müller"),
        ("/greeting/" + "x" * 64, "hello " + "x" * 64),
        ("/greeting/%20padded%20", "hello  padded "),
    ):
        response = target.expect_statements(lambda: target.request("GET", path), zero)
        assert response.status_code == 200, f"{path}: {response.status_code} {response.text[:200]!r}"
        assert api.check(response, "get", "/greeting/{name}") == expected


def test_books_list_is_every_book_ordered_by_id(target, api, statement_table):
    response = target.expect_statements(
        lambda: target.request("GET", "/books", headers=JSON), statement_table["`GET /books`"]
    )
    assert response.status_code == 200, response.text
    books = api.check(response, "get", "/books")
    ids = [book["id"] for book in books]
    assert ids == sorted(ids), "books must be ordered by id"
    assert books[:seed_facts.BOOKS] == [seed_facts.book(i) for i in range(1, seed_facts.BOOKS + 1)]
    stored = target.query("SELECT id, title, author FROM book ORDER BY id")
    assert [(b["id"], b["title"], b["author"]) for b in books] == [tuple(row) for row in stored]


def test_post_book(target, api, statement_table):
    for title, author in (("Reactive Systems", "J. Bonér"), ("T" * 128, "A" * 128)):
        response = target.expect_statements(
            lambda: target.request("POST", "/books", json={"title": title, "author": author}, headers=JSON),
            statement_table["`POST /books`"],
        )
        assert response.status_code == 201, response.text
        book = api.check(response, "post", "/books")
        assert book["title"] == title and book["author"] == author
        assert book["id"] > seed_facts.BOOKS
        assert target.query("SELECT title, author FROM book WHERE id = %s", (book["id"],)) == [(title, author)]


def test_post_order(target, api, statement_table):
    response = target.expect_statements(
        lambda: target.request("POST", "/orders", json={"bookId": 3, "userId": 7}, headers=JSON),
        statement_table["`POST /orders`"],
    )
    assert response.status_code == 201, response.text
    order = api.check(response, "post", "/orders")
    assert order["bookId"] == 3 and order["userId"] == 7 and order["id"] >= 1
    assert target.query("SELECT book_id, user_id FROM book_order WHERE id = %s", (order["id"],)) == [(3, 7)]


def test_post_order_unknown_book_is_checked_first(target, api, statement_table):
    for body in ({"bookId": 999_999, "userId": 7}, {"bookId": 999_999, "userId": 999_999}):
        response = target.expect_statements(
            lambda: target.request("POST", "/orders", json=body, headers=JSON),
            statement_table["`POST /orders`, unknown book"],
        )
        assert response.status_code == 404, response.text
        api.check(response, "post", "/orders")
        api.error(response)


def test_post_order_unknown_user(target, api, statement_table):
    response = target.expect_statements(
        lambda: target.request("POST", "/orders", json={"bookId": 3, "userId": 999_999}, headers=JSON),
        statement_table["`POST /orders`, unknown user"],
    )
    assert response.status_code == 404, response.text
    api.check(response, "post", "/orders")
    api.error(response)


def check_techempower(target, api, response, path):
    """What TechEmpower requires of every /plaintext and /json answer beyond openapi.yaml (which
    checks the status, the media type, the body and the Server and Date headers' presence and form)."""
    content_type = response.headers.get("Content-Type", "")
    assert re.fullmatch(TECHEMPOWER_TYPES[path], content_type, re.IGNORECASE), f"{path}: Content-Type {content_type!r}"
    assert "Content-Length" in response.headers or "Transfer-Encoding" in response.headers, dict(response.headers)
    # requests asks for gzip and deflate; TechEmpower forbids compressing these answers.
    assert "Content-Encoding" not in response.headers, dict(response.headers)
    if target.application is not None:
        assert response.headers["Server"] == target.application, f"Server: {response.headers['Server']!r}"
    return api.check(response, "get", path)


def test_plaintext(target, api, statement_table):
    response = target.expect_statements(lambda: target.request("GET", "/plaintext"), statement_table[TECHEMPOWER_ROW])
    assert response.status_code == 200, response.text
    assert check_techempower(target, api, response, "/plaintext") == HELLO_WORLD
    assert response.content == HELLO_WORLD.encode()


def test_json(target, api, statement_table):
    response = target.expect_statements(lambda: target.request("GET", "/json"), statement_table[TECHEMPOWER_ROW])
    assert response.status_code == 200, response.text
    assert check_techempower(target, api, response, "/json") == {"message": HELLO_WORLD}
    assert response.content == b'{"message":"Hello, World!"}', response.content


def test_techempower_endpoints_answer_the_verifiers_accept_headers(target, api):
    for path, expected in (("/plaintext", HELLO_WORLD), ("/json", {"message": HELLO_WORLD})):
        response = target.request("GET", path, headers={"Accept": TECHEMPOWER_ACCEPT[path]})
        assert response.status_code == 200, f"{path}: {response.status_code} {response.text[:200]!r}"
        assert check_techempower(target, api, response, path) == expected


def test_date_is_the_time_of_the_answer(target):
    """Date is the current second's, not one formatted once and kept: it moves with the clock."""
    for path in ("/plaintext", "/json"):
        first = target.request("GET", path)
        time.sleep(1.2)
        second = target.request("GET", path)
        dates = [parsedate_to_datetime(r.headers["Date"]).timestamp() for r in (first, second)]
        assert 1 <= dates[1] - dates[0] <= 10, f"{path}: Date went from {first.headers['Date']!r} to {second.headers['Date']!r}"
        if target.process is not None:  # the app runs here, on this clock
            assert abs(dates[1] - time.time()) <= 5, f"{path}: Date {second.headers['Date']!r}, the clock reads {time.time()}"


def test_server_and_date_on_the_apps_other_answers(target):
    """The apps send Server and Date on every answer of theirs, errors included, not only TechEmpower's two."""
    for method, path in (("GET", "/greeting/perflab"), ("GET", "/greeting/%20"), ("GET", "/zipcodes/10000"),
                         ("GET", "/zipcodes/99999"), ("POST", "/plaintext"), ("GET", "/no-such-route"),
                         ("GET", "/health/ready"), ("GET", "/metrics")):
        response = target.request(method, path)
        missing = [name for name in ("Server", "Date") if not response.headers.get(name)]
        assert not missing, f"{method} {path} {response.status_code}: no {missing}; headers {dict(response.headers)}"
        parsedate_to_datetime(response.headers["Date"])
