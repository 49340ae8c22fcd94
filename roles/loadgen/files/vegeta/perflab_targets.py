#!/usr/bin/env python3
"""Write vegeta JSON targets (one a line) for a perflab scenario: the same requests as wrk2's Lua.

The wrk2 scripts (../wrk2/*.lua) build each thread's n-th request from (thread id, n) alone, so
the sequence is deterministic. wrk2 runs T threads at the same rate; vegeta reads one sequence.
Target i here is thread i % T's request n = i // T: the requests wrk2's threads make, in the
order they would make them. The read/write draw uses the Lua's double arithmetic (a Python float
is the same IEEE double), so every decision is the Lua's. (wrk2 also calls thread 0's request()
once before the run, to check that it parses, and never sends that one: it sends thread 0's
requests from n = 1 and its done() counts include the unsent one. This is request()'s sequence.)

Knobs, as the Lua scripts read them from the environment (same names, same defaults):
  WRITE_RATIO (0.5), LATENCY_MS (100), GREETING_NAME (perflab), GET_BOOKS_WEIGHT,
  POST_BOOKS_WEIGHT, POST_ORDERS_WEIGHT (1 each), KEY_PHASE (0), WRK_THREADS (wrk2's -t).
--env NAME=VALUE overrides the environment; --threads and --key-phase override both.

Several loadgen hosts: host K of H plays threads K*T .. K*T+T-1 of one H*T-thread run, with
fresh ZIP+4 keys spaced H*T apart (KEY_PHASE * 10^8 + writes of the thread * H*T + thread id),
so no two hosts ever POST the same zip, and the hosts together send what one wrk2 with H*T
threads would. --host-index 0 --hosts 1 (the defaults) is the single-host sequence.

Give vegeta at least rate x seconds targets: with -lazy it stops at the last one; without it,
it cycles through them and repeats the "fresh" keys. On exit one line on stderr counts the
targets written per operation, like the Lua done():
  perflab vegeta requests by operation: read=.. write=..
"""

from __future__ import annotations

import argparse
import binascii
import json
import math
import os
import re
import sys
from dataclasses import dataclass
from itertools import count as naturals
from itertools import islice
from typing import Dict, Iterator, List, NoReturn, Optional, Sequence, TextIO, Tuple
from urllib.parse import urlsplit

PROG = "perflab_targets"

# perflab.lua's draw: a golden-ratio (Weyl) sequence per thread, offset by a second irrational
# step per thread id. Same constants, same order of operations, so the same doubles.
GOLDEN = 0.6180339887498949
THREAD_STEP = 0.7548776662466927

# zipcodes.lua
STATES = ("AL", "CA", "FL", "GA", "IL", "MA", "NY", "OH", "TX", "WA")
ZIPCODE_BODY = (
    '{"zip":"%s-%s","city":"City-%04d","county":"County-%03d","state":"%s",'
    '"timezone":"America/New_York","type":"STANDARD"}'
)
# KEY_PHASE * 10^8 + ...: a 9-digit ZIP+4 per key (apps/contract/openapi.yaml: ^[0-9]{5}-[0-9]{4}$).
KEY_PHASE_SPAN = 100_000_000
KEY_PHASE_MAX = 9

# books-orders.lua
BOOK_BODY = '{"title":"Load %d-%d","author":"Author %02d"}'
ORDER_BODY = '{"bookId":%d,"userId":%d}'

# plaintext-json.lua: thread id's n-th request is /plaintext when n + id is even, else /json.
TECHEMPOWER_PATHS = ("/plaintext", "/json")

# hello-latency.lua / greeting.lua: the contract's bounds of the path parameter.
LATENCY_MS_MAX = 10_000
GREETING_NAME_MAX = 64
# Characters a path segment may hold unescaped (RFC 3986 pchar without '%'): the Lua puts the
# name into the path as it is, so anything else would not be the same request in both tools.
PATH_SEGMENT = re.compile(r"[A-Za-z0-9._~!$&'()*+,;=:@-]+")
# What Lua's tonumber and Python's float both read as the same non-negative decimal.
DECIMAL = re.compile(r"(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")
WHOLE = re.compile(r"\d+")

KNOBS = (
    "WRITE_RATIO", "LATENCY_MS", "GREETING_NAME", "GET_BOOKS_WEIGHT", "POST_BOOKS_WEIGHT",
    "POST_ORDERS_WEIGHT", "KEY_PHASE", "WRK_THREADS",
)
SCRIPTS = ("zipcodes", "books-orders", "greeting", "hello-latency", "plaintext-json")
# The scripts whose sequence depends on the thread count (greeting and hello-latency send one fixed request).
THREADED = ("zipcodes", "books-orders", "plaintext-json")
OPERATIONS = {
    "zipcodes": ("read", "write"),
    "books-orders": ("get_books", "post_books", "post_orders"),
    "greeting": ("greeting",),
    "hello-latency": ("hello",),
    "plaintext-json": ("plaintext", "json"),
}
JSON_HEADER = ',"header":{"Content-Type":["application/json"]}}\n'
LINES_PER_WRITE = 4096  # one write() per batch: the per-line cost stays in string building


class BadInput(Exception):
    """Input the script refuses: one line, exit status 2."""


def fail(message: str) -> NoReturn:
    print(f"{PROG}: {message}", file=sys.stderr)
    sys.exit(2)


class OneLineParser(argparse.ArgumentParser):
    """argparse prints usage and the error on two lines; perflab's bad input is one line."""

    def error(self, message: str) -> NoReturn:
        fail(f"{message} (--help explains the options)")


def draw(n: int, thread_id: int) -> float:
    """perflab.draw(n, id): in [0, 1), evenly spread over any stretch of n."""
    x = (n + 1) * GOLDEN + thread_id * THREAD_STEP
    return x - math.floor(x)


@dataclass(frozen=True)
class Plan:
    script: str
    base_url: str
    count: int
    threads: int
    host_index: int
    hosts: int
    key_phase: int
    write_ratio: float
    weights: Tuple[float, float, float]
    greeting_name: str
    latency_ms: str

    @property
    def first_thread_id(self) -> int:
        return self.host_index * self.threads

    @property
    def key_slots(self) -> int:
        """Key spacing: every thread of every host owns one residue modulo this."""
        return self.hosts * self.threads


def base64_text(body: str) -> str:
    return binascii.b2a_base64(body.encode("ascii"), newline=False).decode("ascii")


def zipcodes(plan: Plan, url: str, counts: Dict[str, int]) -> Iterator[str]:
    read_prefix = '{"method":"GET","url":"' + url + "/zipcodes/"
    write_prefix = '{"method":"POST","url":"' + url + '/zipcodes","body":"'
    writes_of_thread = [0] * plan.threads
    key_base = plan.key_phase * KEY_PHASE_SPAN
    slots = plan.key_slots
    # Round n: each thread's n-th request, in thread order (wrk2's threads run at the same rate).
    for n in naturals():
        for local in range(plan.threads):
            thread_id = plan.first_thread_id + local
            if draw(n, thread_id) < plan.write_ratio:
                digits = "%09d" % (key_base + writes_of_thread[local] * slots + thread_id)
                body = ZIPCODE_BODY % (digits[:5], digits[5:], n % 2000, n % 300, STATES[n % len(STATES)])
                writes_of_thread[local] += 1
                counts["write"] += 1
                yield write_prefix + base64_text(body) + '"' + JSON_HEADER
            else:
                counts["read"] += 1
                yield '%s%d"}\n' % (read_prefix, 10000 + (n * 7919 + thread_id * 104729) % 40000)


def books_orders(plan: Plan, url: str, counts: Dict[str, int]) -> Iterator[str]:
    get_books = '{"method":"GET","url":"' + url + '/books"}\n'
    post_books = '{"method":"POST","url":"' + url + '/books","body":"'
    post_orders = '{"method":"POST","url":"' + url + '/orders","body":"'
    get_weight, post_books_weight, _ = plan.weights
    # Lua adds left to right: (w1 + w2) + w3, then compares against w1 and w1 + w2.
    total = plan.weights[0] + plan.weights[1] + plan.weights[2]
    books_bound = get_weight + post_books_weight
    for n in naturals():
        for thread_id in range(plan.first_thread_id, plan.first_thread_id + plan.threads):
            u = draw(n, thread_id) * total
            if u < get_weight:
                counts["get_books"] += 1
                yield get_books
            elif u < books_bound:
                counts["post_books"] += 1
                yield post_books + base64_text(BOOK_BODY % (thread_id, n, thread_id % 37)) + '"' + JSON_HEADER
            else:
                counts["post_orders"] += 1
                body = ORDER_BODY % (1 + (n * 31 + thread_id) % 100, 1 + (n * 7 + thread_id * 13) % 1000)
                yield post_orders + base64_text(body) + '"' + JSON_HEADER


def plaintext_json(plan: Plan, url: str, counts: Dict[str, int]) -> Iterator[str]:
    lines = tuple('{"method":"GET","url":"%s%s"}\n' % (url, path) for path in TECHEMPOWER_PATHS)
    operations = OPERATIONS["plaintext-json"]
    for n in naturals():
        for thread_id in range(plan.first_thread_id, plan.first_thread_id + plan.threads):
            turn = (n + thread_id) % 2
            counts[operations[turn]] += 1
            yield lines[turn]


def fixed(line: str, operation: str, counts: Dict[str, int]) -> Iterator[str]:
    """greeting.lua and hello-latency.lua: one request, built once."""
    while True:
        counts[operation] += 1
        yield line


def targets(plan: Plan, counts: Dict[str, int]) -> Iterator[str]:
    """The plan's count target lines; counts gets each operation's share as they are made."""
    url = json.dumps(plan.base_url)[1:-1]
    if plan.script == "zipcodes":
        lines = zipcodes(plan, url, counts)
    elif plan.script == "books-orders":
        lines = books_orders(plan, url, counts)
    elif plan.script == "plaintext-json":
        lines = plaintext_json(plan, url, counts)
    elif plan.script == "greeting":
        line = '{"method":"GET","url":"%s/greeting/%s"}\n' % (url, plan.greeting_name)
        lines = fixed(line, "greeting", counts)
    else:
        lines = fixed('{"method":"GET","url":"%s/hello/%s"}\n' % (url, plan.latency_ms), "hello", counts)
    return islice(lines, plan.count)


def decimal(name: str, text: str) -> float:
    if not DECIMAL.fullmatch(text.strip()):
        raise BadInput(f"{name} must be a decimal number >= 0, got {text!r}")
    return float(text)


def whole(name: str, text: str, low: int, high: Optional[int] = None) -> int:
    value = int(text) if WHOLE.fullmatch(text) else -1
    if value < low or (high is not None and value > high):
        bounds = f"{low}..{high}" if high is not None else f">= {low}"
        raise BadInput(f"{name} must be a whole number {bounds}, got {text!r}")
    return value


def base_url(text: str) -> str:
    """scheme://host[:port]: the Lua scripts send absolute paths, so wrk2 ignores any other path."""
    parts = urlsplit(text)
    if (parts.scheme not in ("http", "https") or not parts.hostname or parts.path not in ("", "/")
            or parts.query or parts.fragment or "@" in parts.netloc or not text.isascii()
            or any(c.isspace() for c in text)):
        raise BadInput(f"--base-url must be http(s)://host[:port] with no path, got {text!r}")
    try:
        parts.port  # urlsplit checks the port (a number 0..65535) only when it is read
    except ValueError:
        raise BadInput(f"--base-url has a bad port: {text!r}") from None
    return text.rstrip("/")


def knob_values(env_options: Sequence[str], environment: Dict[str, str]) -> Dict[str, str]:
    """The knobs from the environment, each overridden by --env NAME=VALUE."""
    values = {name: environment[name] for name in KNOBS if name in environment}
    for option in env_options:
        name, equals, value = option.partition("=")
        if not equals or name not in KNOBS:
            raise BadInput(f"--env takes NAME=VALUE with NAME one of {', '.join(KNOBS)}, got {option!r}")
        values[name] = value
    return values


def build_plan(args: argparse.Namespace, environment: Dict[str, str]) -> Plan:
    knobs = knob_values(args.env, environment)
    if args.count < 1:
        raise BadInput(f"--count must be >= 1, got {args.count}")
    if args.threads is not None:
        threads = args.threads
    elif "WRK_THREADS" in knobs:
        threads = whole("WRK_THREADS", knobs["WRK_THREADS"], 1)
    elif args.script in THREADED:
        raise BadInput(f"{args.script} needs --threads (or WRK_THREADS): wrk2's -t, whose sequence this is")
    else:
        threads = 1
    if threads < 1:
        raise BadInput(f"--threads must be >= 1, got {threads}")
    if args.hosts < 1 or not 0 <= args.host_index < args.hosts:
        raise BadInput(f"--host-index must be in 0..--hosts-1 and --hosts >= 1, got {args.host_index} of {args.hosts}")
    key_phase = (args.key_phase if args.key_phase is not None
                 else whole("KEY_PHASE", knobs.get("KEY_PHASE", "0"), 0, KEY_PHASE_MAX))
    if not 0 <= key_phase <= KEY_PHASE_MAX:
        raise BadInput(f"--key-phase must be 0..{KEY_PHASE_MAX}, got {key_phase}")
    write_ratio = decimal("WRITE_RATIO", knobs.get("WRITE_RATIO", "0.5"))
    if write_ratio > 1:
        raise BadInput(f"WRITE_RATIO must be in 0..1, got {knobs['WRITE_RATIO']!r}")
    weights = (
        decimal("GET_BOOKS_WEIGHT", knobs.get("GET_BOOKS_WEIGHT", "1")),
        decimal("POST_BOOKS_WEIGHT", knobs.get("POST_BOOKS_WEIGHT", "1")),
        decimal("POST_ORDERS_WEIGHT", knobs.get("POST_ORDERS_WEIGHT", "1")),
    )
    if args.script == "books-orders" and not (math.isfinite(sum(weights)) and sum(weights) > 0):
        raise BadInput(f"the books-orders weights must be finite and add up to more than 0, got {weights}")
    greeting_name = knobs.get("GREETING_NAME", "perflab")
    if not (PATH_SEGMENT.fullmatch(greeting_name) and len(greeting_name) <= GREETING_NAME_MAX):
        raise BadInput(f"GREETING_NAME must be 1..{GREETING_NAME_MAX} of A-Z a-z 0-9 -._~!$&'()*+,;=:@ "
                       f"(sent unescaped, as wrk2 does), got {greeting_name!r}")
    latency_ms = knobs.get("LATENCY_MS", "100")
    whole("LATENCY_MS", latency_ms, 0, LATENCY_MS_MAX)
    plan = Plan(
        script=args.script, base_url=base_url(args.base_url), count=args.count, threads=threads,
        host_index=args.host_index, hosts=args.hosts, key_phase=key_phase, write_ratio=write_ratio,
        weights=weights, greeting_name=greeting_name, latency_ms=latency_ms,
    )
    # A thread makes at most ceil(count / T) writes; past 10^8 keys per phase a key would run into
    # the next phase's (or, at phase 9, get a 10th digit): refuse rather than repeat a "fresh" zip.
    if plan.script == "zipcodes" and plan.write_ratio > 0:
        most = KEY_PHASE_SPAN // plan.key_slots * plan.threads
        if plan.count > most:
            raise BadInput(f"--count {plan.count} could need more than the {KEY_PHASE_SPAN} fresh keys of one "
                           f"KEY_PHASE across {plan.hosts} host(s) x {plan.threads} threads: at most {most}")
    return plan


def parse_args(argv: Optional[Sequence[str]]) -> argparse.Namespace:
    parser = OneLineParser(
        prog="perflab_targets.py",
        allow_abbrev=False,
        usage="%(prog)s --script {" + ",".join(SCRIPTS) + "} --base-url URL --count N [--threads T]\n"
              "       [--key-phase P] [--host-index K --hosts H] [--env NAME=VALUE]... [--output FILE]",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="example: python3 perflab_targets.py --script zipcodes --base-url http://10.0.0.3:8080 "
               "--count 30000 --threads 2 --key-phase 1 --env WRITE_RATIO=0.5 --output targets.jsonl\n"
               "         vegeta attack -lazy -format=json -targets=targets.jsonl -rate=500/1s -duration=60s",
    )
    parser.add_argument("--script", required=True, choices=SCRIPTS, help="the wrk2 script (scenario's `script`)")
    parser.add_argument("--base-url", required=True, metavar="URL", help="the app, http(s)://host[:port]")
    parser.add_argument("--count", required=True, type=int, metavar="N", help="targets to write (>= rate x seconds)")
    parser.add_argument("--threads", type=int, metavar="T",
                        help="wrk2's -t, whose sequence this is (default: WRK_THREADS; "
                             "zipcodes, books-orders and plaintext-json need one of them)")
    parser.add_argument("--key-phase", type=int, metavar="P",
                        help=f"0..{KEY_PHASE_MAX}: keeps the fresh keys of warm-up and measured phase apart "
                             "(default: KEY_PHASE, else 0)")
    parser.add_argument("--host-index", type=int, default=0, metavar="K", help="this loadgen host, 0..H-1 (default 0)")
    parser.add_argument("--hosts", type=int, default=1, metavar="H", help="loadgen hosts sharing the run (default 1)")
    parser.add_argument("--env", action="append", default=[], metavar="NAME=VALUE",
                        help="a knob, overriding the environment (repeatable)")
    parser.add_argument("--output", metavar="FILE", help="write the targets here (default: stdout)")
    return parser.parse_args(argv)


def write_targets(lines: Iterator[str], out: TextIO) -> bool:
    """Write every line; False when the reader closed the pipe first (vegeta -lazy stopped)."""
    batch: List[str] = list(islice(lines, LINES_PER_WRITE))
    try:
        while batch:
            out.write("".join(batch))
            batch = list(islice(lines, LINES_PER_WRITE))
        out.flush()
    except BrokenPipeError:
        # Python would print a traceback at exit when flushing to the closed pipe again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), out.fileno())
        return False
    return True


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = parse_args(argv)
    try:
        plan = build_plan(args, dict(os.environ))
    except BadInput as error:
        fail(str(error))
    counts = {operation: 0 for operation in OPERATIONS[plan.script]}
    lines = targets(plan, counts)
    if args.output:
        try:
            with open(args.output, "w", encoding="ascii", newline="\n") as out:
                complete = write_targets(lines, out)
        except OSError as error:
            fail(f"cannot write --output {args.output}: {error.strerror}")
    else:
        complete = write_targets(lines, sys.stdout)
    summary = " ".join(f"{operation}={total}" for operation, total in counts.items())
    # A closed pipe is how `... | vegeta attack -lazy -duration=..` ends: the counts are then of
    # the targets made before it closed (vegeta read at most those).
    note = "" if complete else " (the reader closed the pipe first)"
    print(f"perflab vegeta requests by operation: {summary}{note}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
