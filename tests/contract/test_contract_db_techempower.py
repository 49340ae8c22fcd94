"""TechEmpower's database tests as the contract states them (apps/contract/README.md, "TechEmpower's
database tests"): /db, /queries, /updates and /fortunes on their World and Fortune tables.

Answers are compared with the DB as it is when they are given (read through the suite's monitoring
connection), writes read back, the statements per request counted against the contract's table, and
the fortunes page parsed as TechEmpower's verifier parses it: its tags, and every message as text.
"""

from __future__ import annotations

import re
from concurrent.futures import ThreadPoolExecutor
from html.parser import HTMLParser

import pytest
import requests

import seed_facts
from harness import DB_NAME, Database

DB_ROW = "`GET /db`"
QUERIES_20_ROW = "`GET /queries?queries=20`"
QUERIES_501_ROW = "`GET /queries?queries=501` (500 rows)"
QUERIES_ONE_ROW = "`GET /queries` with `queries` missing, `0` or `foo` (1 row)"
UPDATES_20_ROW = "`GET /updates?queries=20`"
UPDATES_ONE_ROW = "`GET /updates` with `queries` missing, `0` or `foo` (1 row)"
FORTUNES_ROW = "`GET /fortunes`"
# The Accept headers TechEmpower's verifier sends (its AbstractTestType.accept).
ACCEPT = {"json": "application/json,text/html;q=0.9,application/xhtml+xml;q=0.9,application/xml;q=0.8,*/*;q=0.7",
          "html": "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"}
# TechEmpower's Content-Type rules (its verifier's patterns): the page must name its charset.
CONTENT_TYPES = {"json": r"application/json(; ?charset=utf-8)?", "html": r"text/html; ?charset=utf-8"}
# `queries` values (TechEmpower's verifier sends 2, 0, foo, 501 and an empty one) and the rows each must give
# (clamped to 1..500; not a 32-bit integer, 1).
QUERIES_CASES = {"20": 20, "2": 2, "1": 1, "500": 500, "501": 500, "0": 1, "-5": 1, "foo": 1, "": 1, "1.5": 1,
                 "99999999999": 1, None: 1}
FORTUNES_HEAD = "<!DOCTYPE html><html><head><title>Fortunes</title></head><body><table><tr><th>id</th><th>message</th></tr>"
FORTUNES_TAIL = "</table></body></html>"
# The tags of TechEmpower's page, in order: the head, the header row, a row per fortune (13), the end.
PAGE_TAGS = (["<html>", "<head>", "<title>", "</title>", "</head>", "<body>", "<table>",
              "<tr>", "<th>", "</th>", "<th>", "</th>", "</tr>"]
             + ["<tr>", "<td>", "</td>", "<td>", "</td>", "</tr>"] * (len(seed_facts.FORTUNES) + 1)
             + ["</table>", "</body>", "</html>"])


def queries_path(route: str, queries: str | None) -> str:
    return route if queries is None else f"{route}?queries={queries}"


def check_techempower(target, response, kind: str) -> None:
    """TechEmpower's rules for every answer of its tests beyond openapi.yaml (which checks Server and Date)."""
    content_type = response.headers.get("Content-Type", "")
    assert re.fullmatch(CONTENT_TYPES[kind], content_type, re.IGNORECASE), f"Content-Type {content_type!r}"
    assert "Content-Length" in response.headers or "Transfer-Encoding" in response.headers, dict(response.headers)
    assert "Content-Encoding" not in response.headers, dict(response.headers)
    if target.application is not None:
        assert response.headers["Server"] == target.application, f"Server: {response.headers['Server']!r}"


def stored_numbers(target, ids) -> dict[int, int]:
    """World's randomnumber of each id, as the DB holds it now."""
    wanted = sorted(set(ids))
    marks = ", ".join(["%s"] * len(wanted))
    return dict(target.query(f"SELECT id, randomnumber FROM world WHERE id IN ({marks})", wanted))


def world_table(target) -> dict[int, int]:
    return dict(target.query("SELECT id, randomnumber FROM world"))


def check_rows_as_stored(target, rows: list[dict]) -> None:
    """Every row answered is a World row as the DB holds it (no write in between: the suite runs one request at a time)."""
    stored = stored_numbers(target, [row["id"] for row in rows])
    wrong = [row for row in rows if stored.get(row["id"]) != row["randomNumber"]]
    assert not wrong, f"rows not as stored: {wrong[:5]} (stored {[stored.get(row['id']) for row in wrong[:5]]})"


def test_seed_holds_techempowers_tables(request) -> None:
    """apps/db's seed, applied to a database of its own on the suite's server: World's 10,000 rows with the
    seed's numbers (seed_facts.world_number) and TechEmpower's 12 fortunes, UTF-8 intact."""
    if not request.config.getoption("app"):
        pytest.skip("needs the suite's own DB server (--app)")
    harness_db: Database = request.getfixturevalue("harness_db")
    name = f"{DB_NAME}_seed_check"
    harness_db.create_app_database(name)
    try:
        harness_db.reset(name)
        with harness_db.monitor_connection(name) as connection, connection.cursor() as cursor:
            cursor.execute("SELECT id, randomnumber FROM world ORDER BY id")
            world = [tuple(row) for row in cursor.fetchall()]
            cursor.execute("SELECT id, message FROM fortune ORDER BY id")
            fortunes = [tuple(row) for row in cursor.fetchall()]
    finally:
        harness_db.drop_database(name)
    assert world == [(i, seed_facts.world_number(i)) for i in range(1, seed_facts.WORLD_ROWS + 1)]
    assert sorted(number for _, number in world) == list(range(1, seed_facts.WORLD_ROWS + 1))
    assert fortunes == list(seed_facts.FORTUNES)


def test_db(target, api, statement_table):
    response = target.expect_statements(lambda: target.request("GET", "/db", headers={"Accept": ACCEPT["json"]}),
                                        statement_table[DB_ROW])
    assert response.status_code == 200, response.text
    check_techempower(target, response, "json")
    row = api.check(response, "get", "/db")
    assert list(row) == ["id", "randomNumber"], row
    check_rows_as_stored(target, [row])


def test_db_draws_its_row_at_random(target, api):
    rows = [api.check(target.request("GET", "/db"), "get", "/db") for _ in range(40)]
    ids = {row["id"] for row in rows}
    # 40 draws of 10,000 ids: fewer than 30 distinct would happen once in far more than 10^20 runs.
    assert len(ids) >= 30, f"/db answered only the ids {sorted(ids)} in 40 requests"
    check_rows_as_stored(target, rows)


@pytest.mark.parametrize("queries", list(QUERIES_CASES), ids=[f"queries={q}" if q is not None else "no-queries"
                                                               for q in QUERIES_CASES])
def test_queries_answers_n_rows_clamped(target, api, queries):
    response = target.request("GET", queries_path("/queries", queries), headers={"Accept": ACCEPT["json"]})
    assert response.status_code == 200, response.text
    check_techempower(target, response, "json")
    rows = api.check(response, "get", "/queries")
    assert len(rows) == QUERIES_CASES[queries], f"queries={queries!r}: {len(rows)} rows"
    check_rows_as_stored(target, rows)


@pytest.mark.parametrize(("queries", "row"), [("20", QUERIES_20_ROW), ("501", QUERIES_501_ROW), (None, QUERIES_ONE_ROW),
                                              ("0", QUERIES_ONE_ROW), ("foo", QUERIES_ONE_ROW)])
def test_queries_reads_each_row_with_its_own_select(target, api, statement_table, queries, row):
    response = target.expect_statements(lambda: target.request("GET", queries_path("/queries", queries)),
                                        statement_table[row])
    assert response.status_code == 200, response.text
    assert len(api.check(response, "get", "/queries")) == statement_table[row]["select"]


def test_queries_draws_rows_at_random(target, api):
    rows = api.check(target.request("GET", "/queries?queries=500"), "get", "/queries")
    ids = [row["id"] for row in rows]
    # 500 draws of 10,000 ids: about 12 repeats are expected, more than 60 would be a broken draw; a row
    # drawn twice is read twice (TechEmpower's rule), so it appears twice.
    assert 440 <= len(set(ids)) <= 500 and min(ids) >= 1 and max(ids) <= seed_facts.WORLD_ROWS, sorted(ids)[:20]
    assert max(ids) - min(ids) > seed_facts.WORLD_ROWS // 2, f"ids from {min(ids)} to {max(ids)}: not spread"


@pytest.mark.parametrize(("queries", "row"), [("20", UPDATES_20_ROW), (None, UPDATES_ONE_ROW), ("0", UPDATES_ONE_ROW),
                                              ("foo", UPDATES_ONE_ROW)])
def test_updates_statements(target, api, statement_table, queries, row):
    response = target.expect_statements(lambda: target.request("GET", queries_path("/updates", queries)),
                                        statement_table[row])
    assert response.status_code == 200, response.text
    check_techempower(target, response, "json")
    assert len(api.check(response, "get", "/updates")) == statement_table[row]["select"]


@pytest.mark.parametrize("queries", ["501", "20", "1", "0", "foo", None])
def test_updates_write_every_row_drawn_and_nothing_else(target, api, queries):
    """The answer is what is stored afterwards: each row drawn has a new number, other than the one it held
    (a row drawn twice: one number, in each of its entries), and no other row changed."""
    before = world_table(target)
    response = target.request("GET", queries_path("/updates", queries), headers={"Accept": ACCEPT["json"]})
    after = world_table(target)
    assert response.status_code == 200, response.text
    rows = api.check(response, "get", "/updates")
    assert len(rows) == QUERIES_CASES[queries], f"queries={queries!r}: {len(rows)} rows"
    answered: dict[int, set[int]] = {}
    for row in rows:
        answered.setdefault(row["id"], set()).add(row["randomNumber"])
    repeated = {world_id: numbers for world_id, numbers in answered.items() if len(numbers) > 1}
    assert not repeated, f"a row drawn twice answered with different numbers: {repeated}"
    not_stored = {world_id: (numbers, after[world_id]) for world_id, numbers in answered.items()
                  if numbers != {after[world_id]}}
    assert not not_stored, f"answered (number, stored number): {dict(list(not_stored.items())[:5])}"
    unchanged = sorted(world_id for world_id in answered if after[world_id] == before[world_id])
    assert not unchanged, f"rows drawn but not changed: {unchanged[:10]}"
    others = sorted(world_id for world_id in after if world_id not in answered and after[world_id] != before[world_id])
    assert not others, f"rows not drawn but changed: {others[:10]}"


def test_concurrent_updates_all_succeed(target, api):
    """Updates sent side by side, as a load generator sends them (one N at a time, as TechEmpower's runs do),
    overlap on rows now and then: each still gets its 200 and its 20 rows (no deadlock, no lock wait timeout)."""
    senders, each = 8, 10

    def send(_: int) -> list:
        with requests.Session() as http:
            return [http.get(target.url("/updates?queries=20"), timeout=60) for _ in range(each)]

    with ThreadPoolExecutor(senders) as pool:
        answers = [answer for answered in pool.map(send, range(senders)) for answer in answered]
    failed = [(answer.status_code, answer.text[:200]) for answer in answers if answer.status_code != 200]
    assert not failed, f"{len(failed)} of {len(answers)} concurrent /updates failed: {failed[:3]}"
    for answer in answers:
        assert len(api.check(answer, "get", "/updates")) == 20


class FortunesPage(HTMLParser):
    """The page's tags and text, character references resolved (as a browser shows it)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.declarations: list[str] = []
        self.tags: list[str] = []
        self.cells: list[str] = []
        self.title = ""

    def handle_decl(self, decl: str) -> None:
        self.declarations.append(decl.lower())

    def handle_starttag(self, tag: str, attrs) -> None:
        self.tags.append(f"<{tag}>")
        if tag in ("td", "th", "title"):
            self.cells.append("")

    def handle_endtag(self, tag: str) -> None:
        self.tags.append(f"</{tag}>")

    def handle_data(self, data: str) -> None:
        if self.tags and self.tags[-1] in ("<td>", "<th>", "<title>"):
            self.cells[-1] += data
        elif data.strip():
            raise AssertionError(f"text outside a cell: {data!r}")


def expected_fortunes() -> list[tuple[int, str]]:
    """Every fortune and the one added at request time, sorted by message (for these, Java's String order)."""
    return sorted([*seed_facts.FORTUNES, seed_facts.ADDED_FORTUNE], key=lambda fortune: fortune[1])


def test_fortunes(target, api, statement_table):
    response = target.expect_statements(
        lambda: target.request("GET", "/fortunes", headers={"Accept": ACCEPT["html"]}), statement_table[FORTUNES_ROW])
    assert response.status_code == 200, response.text
    check_techempower(target, response, "html")
    body = response.content.decode("utf-8")
    assert api.check(response, "get", "/fortunes") == body
    page = FortunesPage()
    page.feed(body)
    page.close()
    assert page.declarations == ["doctype html"], page.declarations
    # An unescaped <script> message would add its tags here (and hide its text from the cells).
    assert page.tags == PAGE_TAGS, page.tags
    assert page.cells[:3] == ["Fortunes", "id", "message"], page.cells[:3]
    rows = [(int(page.cells[i]), page.cells[i + 1]) for i in range(3, len(page.cells), 2)]
    assert rows == expected_fortunes()
    # The contract's page, compact as the three apps write it.
    assert body.startswith(FORTUNES_HEAD) and body.rstrip("\n").endswith(FORTUNES_TAIL), body
    assert "&lt;script&gt;alert(" in body and "フレームワークのベンチマーク" in body


def test_fortunes_are_read_at_each_request(target):
    """Not a page kept from an earlier request: a message changed in the DB shows at the next request, escaped."""
    if target.db is None:
        pytest.skip("changes a fortune: only on the suite's own DB (--app)")
    changed = "<b>Changed</b> & 'quoted' \"twice\""
    with target.monitor.cursor() as cursor:
        cursor.execute("UPDATE fortune SET message = %s WHERE id = 1", (changed,))
    try:
        body = target.request("GET", "/fortunes").content.decode("utf-8")
    finally:
        with target.monitor.cursor() as cursor:
            cursor.execute("UPDATE fortune SET message = %s WHERE id = 1", (dict(seed_facts.FORTUNES)[1],))
    page = FortunesPage()
    page.feed(body)
    page.close()
    assert page.tags == PAGE_TAGS, page.tags
    assert (1, changed) in [(int(page.cells[i]), page.cells[i + 1]) for i in range(3, len(page.cells), 2)]
    assert "<b>" not in body and "&lt;b&gt;Changed&lt;/b&gt; &amp; " in body, body
