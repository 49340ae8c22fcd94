#!/usr/bin/env python3
"""Plays a compiled perflab scenario: the requests of its one sequence, as vegeta JSON targets.

Standard library only, so that it runs on a loadgen host as it is (role loadgen installs it as
vegeta/scenario_play.py); perflab/scenario.py compiles a scenario file
into the document this reads (format perflab-compiled-scenario/1, JSON) and into the same
document as a Lua table for perflab/wrk2_scenario.lua, wrk2's player, which does what sent()
does here with the same arithmetic: both tools send the same requests.

The document: `mix` ("draw" or "turns"), `bounds` (the weights' running sums), `turns` (the
request of every turn), `values` (tables of values, each encoded for the place it is put),
`variables` (each {"kind": "integer", start, step, thread_step, modulo (0: none), digits},
{"kind": "index", step, thread_step, count}, {"kind": "key", name, digits, format}), and
`requests` (each {name, method, headers: [[name, value]], vars: the variables it draws, path
and body: lists of literal text and slots {"var": i} or {"var": i, "values": t}}); indices from 0.

Thread `thread`'s n-th request (n from 0; host K of H plays threads K*T .. K*T+T-1):
- the request: mix draw, perflab.lua's golden-ratio draw(n, thread) x the last bound against
  the bounds in order; mix turns, turns[(n + thread) mod len];
- integer: start + (n x step + thread x thread_step) [mod modulo], zero-padded to digits;
- index: (n x step + thread x thread_step) mod count, into its slot's table of values;
- key: KEY_PHASE x 10^(digits-1) + (this thread's uses of it) x H x T + thread, zero-padded,
  poured into format (one # a digit); past 10^(digits-1) keys it would be the next phase's: refused.

  python3 scenario_play.py --compiled FILE.json --base-url URL --count N --threads T
                           [--key-phase P] [--host-index K --hosts H] [--output FILE]
On exit one line on stderr counts the targets per operation:
  perflab vegeta requests by operation: read=.. write=..
Exit status 2 with one line on stderr for input it refuses.
"""

from __future__ import annotations

import argparse
import base64
import functools
import json
import math
import os
import re
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from itertools import islice
from typing import Any, NoReturn, TextIO
from urllib.parse import urlsplit

PROG = "perflab scenario_play"
FORMAT = "perflab-compiled-scenario/1"
# perflab.lua's draw: the same constants in the same order of operations, so the same doubles.
GOLDEN = 0.6180339887498949
THREAD_STEP = 0.7548776662466927
KEY_PHASE_MAX = 9
LINES_PER_WRITE = 4096  # one write() per batch

# One request as sent: (operation, method, path, headers, body).
Sent = tuple[str, str, str, tuple[tuple[str, str], ...], str]


class PlayError(ValueError):
    """A document or placement this player refuses: one line."""


@dataclass(frozen=True)
class Placement:
    """Where the requests are played: wrk2's -t per host, this host of `hosts`, KEY_PHASE."""

    threads: int
    host_index: int = 0
    hosts: int = 1
    key_phase: int = 0

    def __post_init__(self) -> None:
        if self.threads < 1 or self.hosts < 1 or not 0 <= self.host_index < self.hosts:
            raise PlayError(f"threads and hosts are 1 or more and the host index 0..hosts-1, got {self.threads} "
                            f"threads, host {self.host_index} of {self.hosts}")
        if not 0 <= self.key_phase <= KEY_PHASE_MAX:
            raise PlayError(f"the key phase is 0..{KEY_PHASE_MAX}, got {self.key_phase}")


def draw(n: int, thread_id: int) -> float:
    """perflab.lua's perflab.draw(n, id): in [0, 1), evenly spread over any stretch of n."""
    x = (n + 1) * GOLDEN + thread_id * THREAD_STEP
    return x - math.floor(x)


def pouring(shape: str | None) -> Callable[[str], str]:
    """A function that pours a key's digits into its format, one # a digit."""
    if shape is None:
        return str
    pieces: list[str | tuple[int, int]] = []
    position = 0
    for run in re.finditer(r"#+|[^#]+", shape):
        if run.group().startswith("#"):
            pieces.append((position, position + len(run.group())))
            position += len(run.group())
        else:
            pieces.append(run.group())
    return lambda digits: "".join([piece if isinstance(piece, str) else digits[piece[0]:piece[1]] for piece in pieces])


def _drawer(variable: dict[str, Any], placement: Placement) -> Callable[[int, int, int], Any]:
    """The variable as a function of (n, thread, this host's thread index): its text, or for an
    index into a table of values, the index. Worked out once, so a request looks at no kind."""
    kind = variable["kind"]
    if kind == "integer":
        start, step, thread_step, modulo = variable["start"], variable["step"], variable["thread_step"], variable["modulo"]
        shape = f"%0{variable['digits']}d"
        if modulo:
            return lambda n, thread, local: shape % (start + (n * step + thread * thread_step) % modulo)
        return lambda n, thread, local: shape % (start + n * step + thread * thread_step)
    if kind == "index":
        step, thread_step, count = variable["step"], variable["thread_step"], variable["count"]
        return lambda n, thread, local: (n * step + thread * thread_step) % count
    if kind != "key":
        return lambda n, thread, local: None  # a parameter: set in the templates, never drawn
    slots = placement.threads * placement.hosts
    span = 10 ** (variable["digits"] - 1)
    base = placement.key_phase * span
    digits, pour = f"%0{variable['digits']}d", pouring(variable["format"])
    uses = [0] * placement.threads

    def key(n: int, thread: int, local: int) -> str:
        offset = uses[local] * slots + thread
        if offset >= span:
            raise PlayError(f"key ${{{variable['name']}}} ran out of the {span} fresh keys of a phase "
                            f"across {slots} threads: raise its digits")
        uses[local] += 1
        return pour(digits % (base + offset))

    return key


def _template(parts: list[Any], values: list[list[str]]) -> tuple[Any, ...]:
    """Literal text, or (variable, its table of values or None)."""
    return tuple(part if isinstance(part, str) else (part["var"], values[part["values"]] if "values" in part else None)
                 for part in parts)


def _fill(template: tuple[Any, ...], current: list[Any]) -> str:
    return "".join([part if part.__class__ is str else
                    (current[part[0]] if part[1] is None else part[1][current[part[0]]]) for part in template])


def sent(document: dict[str, Any], placement: Placement) -> Iterator[Sent]:
    """Every request, thread by thread in round-robin: thread i % T's request i // T (what wrk2's
    threads send at the same rate; vegeta sends them in this order)."""
    if document.get("format") != FORMAT:
        raise PlayError(f"not a compiled scenario of format {FORMAT}: format is {document.get('format')!r}")
    first = placement.host_index * placement.threads
    bounds, turns, values = document["bounds"], document["turns"], document["values"]
    total, inner = bounds[-1], list(enumerate(bounds[:-1]))
    last = len(bounds) - 1
    drawers = [_drawer(variable, placement) for variable in document["variables"]]
    requests = [(r["name"], r["method"], _template(r["path"], values), tuple(map(tuple, r["headers"])),
                 None if r["body"] is None else _template(r["body"], values), tuple(r["vars"]))
                for r in document["requests"]]
    current: list[Any] = [None] * len(drawers)
    by_turns = document["mix"] == "turns"
    n = 0
    while True:
        for local in range(placement.threads):
            thread_id = first + local
            if by_turns:
                chosen = turns[(n + thread_id) % len(turns)]
            else:
                u = draw(n, thread_id) * total
                chosen = last
                for index, bound in inner:
                    if u < bound:
                        chosen = index
                        break
            name, method, path, headers, body, used = requests[chosen]
            for index in used:
                current[index] = drawers[index](n, thread_id, local)
            yield name, method, _fill(path, current), headers, "" if body is None else _fill(body, current)
        n += 1


@functools.lru_cache(maxsize=256)
def _header_suffix(headers: tuple[tuple[str, str], ...]) -> str:
    if not headers:
        return "}\n"
    return ',"header":' + json.dumps({name: [value] for name, value in headers}, separators=(",", ":")) + "}\n"


def vegeta_line(request: Sent, base_url: str) -> str:
    """One vegeta JSON target (its -format=json)."""
    _, method, path, headers, body = request
    url = base_url + path
    # JSON escapes nothing in a plain ASCII URL: the common case skips json.dumps.
    if not (url.isascii() and url.isprintable()) or '"' in url or "\\" in url:
        url = json.dumps(url)[1:-1]
    line = '{"method":"' + method + '","url":"' + url + '"'
    if body:
        line += ',"body":"' + base64.b64encode(body.encode("utf-8")).decode("ascii") + '"'
    return line + _header_suffix(headers)


# ---------------------------------------------------------------------------------------------
# The command


def fail(message: str) -> NoReturn:
    print(f"{PROG}: {message}", file=sys.stderr)
    sys.exit(2)


class OneLineParser(argparse.ArgumentParser):
    """argparse prints usage and the error on two lines; perflab's bad input is one line."""

    def error(self, message: str) -> NoReturn:
        fail(f"{message} (--help explains the options)")


def write_targets(lines: Iterator[str], out: TextIO) -> bool:
    """Write every line; False when the reader closed the pipe first (vegeta -lazy stopped)."""
    batch = list(islice(lines, LINES_PER_WRITE))
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


def base_url(text: str) -> str:
    """scheme://host[:port]: the requests' paths are absolute, so wrk2 ignores any other path, and
    vegeta must send what wrk2 sends."""
    parts = urlsplit(text)
    if (parts.scheme not in ("http", "https") or not parts.hostname or parts.path not in ("", "/")
            or parts.query or parts.fragment or "@" in parts.netloc or not text.isascii()
            or any(c.isspace() for c in text)):
        raise PlayError(f"--base-url must be http(s)://host[:port] with no path, got {text!r}")
    try:
        parts.port  # urlsplit checks the port (a number 0..65535) only when it is read
    except ValueError:
        raise PlayError(f"--base-url has a bad port: {text!r}") from None
    return text.rstrip("/")


def main(argv: Sequence[str] | None = None) -> int:
    parser = OneLineParser(prog="scenario_play.py", description=__doc__, allow_abbrev=False,
                           formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--compiled", required=True, metavar="FILE.json", help="perflab scenario compile's --vegeta output")
    parser.add_argument("--base-url", required=True, metavar="URL", help="the app, http(s)://host[:port]")
    parser.add_argument("--count", required=True, type=int, metavar="N", help="targets to write (>= rate x seconds)")
    parser.add_argument("--threads", required=True, type=int, metavar="T", help="wrk2's -t, whose sequence this is")
    parser.add_argument("--key-phase", type=int, default=0, metavar="P", help=f"KEY_PHASE, 0..{KEY_PHASE_MAX} (default 0)")
    parser.add_argument("--host-index", type=int, default=0, metavar="K", help="this loadgen host, 0..H-1 (default 0)")
    parser.add_argument("--hosts", type=int, default=1, metavar="H", help="loadgen hosts sharing the run (default 1)")
    parser.add_argument("--output", metavar="FILE", help="write the targets here (default: stdout)")
    args = parser.parse_args(argv)
    if args.count < 1:
        fail(f"--count must be 1 or more, got {args.count}")
    try:
        with open(args.compiled, encoding="utf-8") as stream:
            document = json.load(stream)
        placement = Placement(args.threads, args.host_index, args.hosts, args.key_phase)
        url = base_url(args.base_url)
    except OSError as error:
        fail(f"cannot read --compiled {args.compiled}: {error.strerror}")
    except json.JSONDecodeError as error:
        fail(f"--compiled {args.compiled} is not JSON: {error}")
    except PlayError as error:
        fail(str(error))
    counts = {request["name"]: 0 for request in document.get("requests", [])}

    def lines() -> Iterator[str]:
        for request in islice(sent(document, placement), args.count):
            counts[request[0]] += 1
            yield vegeta_line(request, url)

    try:
        if args.output:
            with open(args.output, "w", encoding="utf-8", newline="\n") as out:
                complete = write_targets(lines(), out)
        else:
            complete = write_targets(lines(), sys.stdout)
    except PlayError as error:
        fail(str(error))
    except OSError as error:
        fail(f"cannot write --output {args.output}: {error.strerror}")
    note = "" if complete else " (the reader closed the pipe first)"
    summary = " ".join(f"{name}={total}" for name, total in counts.items())
    print(f"perflab vegeta requests by operation: {summary}{note}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
