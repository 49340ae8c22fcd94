"""The requests the loadgen sent in the measured window, by request type and by third of the window: what
the mix and the statements per request are counted on where the app counts no requests of its own (an app
whose manifest declares no metrics endpoint, such as Spring PetClinic: perflab.observe reads the app's
http_server_requests_seconds_count where it has it).

- wrk2: perflab/wrk2_scenario.lua counts, in each thread, the requests it sends by type and by second of the
  loadgen host's clock, and prints their sums once the run is done, one line of the output:
  `perflab wrk2 requests by second: {"names": [...], "seconds": [[unix s, [count of each name]], ...]}`.
  A scenario of one fixed request is left to wrk2 itself (no Lua per request), which counts no second.
- vegeta: its results, each request with its method, URL and send time; the URL names the request type
  whose path template (the scenario file's) it fits.

A request is counted in the third of the window it was sent in (wrk2: a second in the third its middle
falls in). Its key is the app's counter's, (method, route, status): the scenario's route ("/owners/{id}")
and the status vegeta recorded, or the one it expects with wrk2 (which tells no status but failures). The
counts hold only for a run without errors: a request that failed may have run none, some or all of its
statements, and with wrk2 answered with another status than it expects.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol
from urllib.parse import urlsplit

from perflab import scenario
from perflab.vegeta import Attack

WRK2_LINE = "perflab wrk2 requests by second: "

Key = tuple[str, str, str]  # (method, route template, status: vegeta's answer, wrk2's expected), as observe.route_key
UNANSWERED: Key = ("sent", "by wrk2", "unanswered when it stopped")


class SentRequest(Protocol):
    """A request of the scenario as run (perflab.rundir.ScenarioRequest): what this module reads."""

    @property
    def name(self) -> str: ...
    @property
    def method(self) -> str: ...
    @property
    def path(self) -> str: ...  # the file's template, "/owners/${id}?x=${y}"
    @property
    def route(self) -> str: ...
    @property
    def status(self) -> str: ...


@dataclass(frozen=True)
class Sent:
    """Requests sent in each third of the window, by key; `counted_by` says which tool counted them how."""

    thirds: tuple[dict[Key, float], dict[Key, float], dict[Key, float]]
    counted_by: str
    # Sent but not answered when the tool stopped (wrk2 leaves the requests in flight): what they ran is not
    # known, and observe.expected_statements gives no expectation where they are more than its share.
    unanswered: float = 0.0

    def moments(self) -> list[dict[Key, float]]:
        """The running counts at the window's start, after each third and at its end, as observe reads the
        app's counters at four moments."""
        running: dict[Key, float] = {}
        moments = [dict(running)]
        for third in self.thirds:
            for key, count in third.items():
                running[key] = running.get(key, 0.0) + count
            moments.append(dict(running))
        return moments

    def counts(self) -> dict[Key, float]:
        """The window's requests by key, the unanswered apart under UNANSWERED (a status that is no number):
        which types they were is not known, so each type's count is its share of the answered ones."""
        sent = self.moments()[-1]
        total = sum(sent.values())
        if self.unanswered <= 0 or total <= 0:
            return sent
        answered = max(0.0, total - self.unanswered) / total
        return {key: count * answered for key, count in sent.items()} | {UNANSWERED: min(self.unanswered, total)}


class NotCounted(ValueError):
    """Why the loadgen's output does not give the requests sent by type and third; one line."""


def third_of(at_s: float, start_s: float, seconds: float) -> int:
    """The third of the window [start, start + seconds) AT falls in; before it the first, after it the last
    (a request sent a moment early or late is the run's still)."""
    return min(2, max(0, math.floor((at_s - start_s) * 3 / seconds)))


def _keys(requests: Sequence[SentRequest]) -> dict[str, Key]:
    return {request.name: (request.method, request.route, request.status) for request in requests}


def from_wrk2(outputs: Iterable[str], requests: Sequence[SentRequest], start_s: float, seconds: float,
              answered: int | None = None) -> Sent:
    """The requests each loadgen host's wrk2 sent (its output's line of requests by second), summed; ANSWERED,
    the run's requests (wrk2's count of answers), tells how many it sent without waiting for their answer."""
    keys = _keys(requests)
    thirds: tuple[dict[Key, float], dict[Key, float], dict[Key, float]] = ({}, {}, {})
    hosts = 0
    for number, text in enumerate(outputs, start=1):
        hosts += 1
        lines = [line[len(WRK2_LINE):] for line in text.splitlines() if line.startswith(WRK2_LINE)]
        if not lines:
            raise NotCounted(
                "wrk2 counted no request by second: a scenario of one fixed request is left to wrk2 itself, which "
                "counts none (or a wrk2 output written before perflab counted them)"
                if len(requests) == 1 else f"the output of loadgen host {number} has no line {WRK2_LINE.strip()!r}")
        try:
            document = json.loads(lines[-1])
            names, seconds_rows = document["names"], document["seconds"]
            rows = [(float(at), [float(n) for n in counts]) for at, counts in seconds_rows]
        except (ValueError, KeyError, TypeError) as exc:
            raise NotCounted(f"the output of loadgen host {number}: its requests by second are not readable ({exc})")
        unknown = [name for name in names if name not in keys]
        if unknown or any(len(counts) != len(names) for _, counts in rows):
            raise NotCounted(f"the output of loadgen host {number} counts requests the scenario as run does not "
                             f"hold ({', '.join(map(str, unknown)) or 'a row of another length'})")
        for at, counts in rows:
            third = thirds[third_of(at + 0.5, start_s, seconds)]
            for name, count in zip(names, counts):
                third[keys[name]] = third.get(keys[name], 0.0) + count
    if not hosts:
        raise NotCounted("no wrk2 output")
    sent_total = sum(sum(third.values()) for third in thirds)
    unanswered = max(0.0, sent_total - answered) if answered is not None else 0.0
    return Sent(thirds, f"wrk2 (each thread's requests by type and second, {hosts} loadgen host(s))", unanswered)


def template_pattern(path: str) -> re.Pattern[str]:
    """A path template ("/owners/${id}?q=${q}") as the pattern of the paths sent from it: its literal text,
    each ${name} any text ("$$" a "$")."""
    parts: list[str] = []
    at = 0
    for match in scenario.PLACEHOLDER.finditer(path):
        parts.append(re.escape(path[at:match.start()]))
        parts.append(re.escape("$") if match.group(1) == "$" else ".*?")
        at = match.end()
    parts.append(re.escape(path[at:]))
    return re.compile("".join(parts))


def from_vegeta(attacks: Iterable[Attack], requests: Sequence[SentRequest], start_s: float, seconds: float) -> Sent:
    """The requests of vegeta's results (each loadgen host's), each the type its method and URL fit, with the
    status it was answered with."""
    patterns = [(request.method, template_pattern(request.path), (request.method, request.route))
                for request in requests]
    seen: dict[tuple[str, str], tuple[str, str]] = {}
    thirds: tuple[dict[Key, float], dict[Key, float], dict[Key, float]] = ({}, {}, {})
    hosts = 0
    for attack in attacks:
        hosts += 1
        for result in attack.results:
            key = seen.get((result.method, result.url))
            if key is None:
                if not result.url:
                    raise NotCounted("vegeta's results name no request's method and URL (results written by a "
                                     "vegeta before 12.8)")
                parts = urlsplit(result.url)
                sent_path = parts.path + (f"?{parts.query}" if parts.query else "")
                fits = {k for method, pattern, k in patterns if method == result.method and pattern.fullmatch(sent_path)}
                if len(fits) != 1:
                    raise NotCounted(
                        f"vegeta sent {result.method} {sent_path}, which "
                        + ("no request of the scenario fits" if not fits else
                           f"several requests of the scenario fit ({', '.join(' '.join(k) for k in sorted(fits))})"))
                key = seen[(result.method, result.url)] = fits.pop()
            # The status it was answered with (vegeta follows no redirect: a 302 stays one), not the one expected.
            answered = (*key, str(result.code))
            third = thirds[third_of(result.timestamp_ns / 1e9, start_s, seconds)]
            third[answered] = third.get(answered, 0.0) + 1
    if not hosts:
        raise NotCounted("no vegeta results")
    return Sent(thirds, f"vegeta (its results, each by its method and URL, {hosts} loadgen host(s))")
