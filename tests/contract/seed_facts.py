"""The seeded rows, computed with apps/db/seed.sql's own formulas (see its header).

The suite compares answers for seeded keys with these; writes only ever use fresh ZIP+4 keys
and new books/orders, so seeded rows never change during a run.
"""

from __future__ import annotations

import itertools
import random

ZIPCODES = 40_000
CITIES = 2_000
BOOKS = 100
USERS = 1_000
STATES = ("AL", "CA", "FL", "GA", "IL", "MA", "NY", "OH", "TX", "WA")
TIMEZONES = ("America/New_York", "America/Chicago", "America/Denver", "America/Los_Angeles")
TYPES = ("STANDARD", "PO BOX", "UNIQUE")


def zipcode(i: int) -> dict[str, str]:
    """Seeded zip code number i (0..39,999): zip '10000' + i."""
    assert 0 <= i < ZIPCODES
    return {
        "zip": str(10_000 + i),
        "city": f"City-{i % CITIES:04d}",
        "county": f"County-{i % 300:03d}",
        "state": STATES[i % 10],
        "timezone": TIMEZONES[i % 4],
        "type": TYPES[i % 3],
    }


def city_zipcodes(city_number: int) -> list[dict[str, str]]:
    """The seeded zip codes of City-<city_number>, ordered by zip."""
    return [zipcode(i) for i in range(city_number, ZIPCODES, CITIES)]


def book(book_id: int) -> dict[str, object]:
    assert 1 <= book_id <= BOOKS
    return {"id": book_id, "title": f"Book {book_id:03d}", "author": f"Author {book_id % 37:02d}"}


WORLD_ROWS = 10_000
# TechEmpower's Fortune rows (their create-postgres.sql), as apps/db/seed.sql holds them.
FORTUNES = (
    (1, "fortune: No such file or directory"),
    (2, "A computer scientist is someone who fixes things that aren't broken."),
    (3, "After enough decimal places, nobody gives a damn."),
    (4, "A bad random number generator: 1, 1, 1, 1, 1, 4.33e+67, 1, 1, 1"),
    (5, "A computer program does what you tell it to do, not what you want it to do."),
    (6, "Emacs is a nice operating system, but I prefer UNIX. — Tom Christaensen"),
    (7, "Any program that runs right is obsolete."),
    (8, "A list is only as strong as its weakest link. — Donald Knuth"),
    (9, "Feature: A bug with seniority."),
    (10, "Computers make very fast, very accurate mistakes."),
    (11, '<script>alert("This should not be displayed in a browser alert box.");</script>'),
    (12, "フレームワークのベンチマーク"),
)
ADDED_FORTUNE = (0, "Additional fortune added at request time.")


def world_number(world_id: int) -> int:
    """World row `world_id`'s seeded randomnumber (1..10000, each once)."""
    assert 1 <= world_id <= WORLD_ROWS
    return 1 + (world_id * 7919) % WORLD_ROWS


_fresh = itertools.count(random.SystemRandom().randrange(10_000))


def fresh_zip() -> str:
    """A ZIP+4 key no seed holds and no earlier call returned (run after run, on the same DB)."""
    n = next(_fresh)
    return f"{50_000 + random.SystemRandom().randrange(50_000):05d}-{n % 10_000:04d}"
