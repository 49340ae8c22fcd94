"""Every endpoint's status, media type and body, and the DB statements each request issues.

Expected statement counts come from apps/contract/README.md's table, read at run time, so the
suite and the contract cannot drift apart.
"""

from __future__ import annotations

import time

import seed_facts

JSON = {"Accept": "application/json"}


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
