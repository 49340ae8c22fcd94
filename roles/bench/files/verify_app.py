#!/usr/bin/env python3
"""The bench's verify phase, on the db host: send the plan's requests, count the DB's statements.

Reads a plan (perflab verify plan, perflab/verify.py) on stdin or from --plan FILE and, for each
request type in it: a warm-up (not counted: twice as many requests as are in flight, it opens
as many of the app's DB connections as a burst can use, so that no counted burst sees one being
opened), then for each measured burst the server's statements by kind (select/insert/update/delete)
read three times: before an idle interval as long as the previous burst, after it, and after the burst
(one session of the client, each reading timed at its middle). The idle interval is the lab's
own statements at rest (the exporter's scrapes, any keep-alive); perflab verify check takes it
off. The bursts after the first are there to see past those: a burst with nothing at rest that
counted exactly the plan's statements (each kind the plan gives as a range, expect.statements up to
expect.statements_max, anywhere in it) ends its type's bursts, and so does the first burst of a
type whose statements the plan does not judge (its expect.statements is null: the scenario gives
none). Before the first type it reads the counters three times back to back: the reader's own
statements per reading. It prints one JSON document (perflab-verify-results): per type every
answer (status, headers, body up to the plan's max_body_bytes) and the counters' deltas with the
intervals' lengths. Judging is perflab verify check's, on the controller.

The counters are read with the engine's local client (--engine), as root over the unix socket, as
the bench's other steps on the db host do, so this runs where the statements are counted:
MariaDB/MySQL's Com_select/insert/update/delete with `mysql`; on PostgreSQL the calls of
pg_stat_statements by the statement's first word, every user's but the monitoring roles' (pg_monitor's
members: this reader, the exporter), from role postgresql's view perflab_monitor.statements_by_kind,
which postgres_exporter reads too, with `psql` as the superuser (the root -> postgres peer map); there
also the rows of each kind's statements (pg_stat_statements' rows), as "<kind>_rows", which TechEmpower's
verify counts too: MariaDB/MySQL count rows by storage engine, not by statement, so there they are not read.
--client and --client-arg change the client. Standard library only (Python >= 3.8).

Exit status: 0 the results are printed (whatever they show); 2 a plan it cannot use; 3 the
counters cannot be read. Either failure is one line on stderr.
"""

from __future__ import annotations

import argparse
import http.client
import json
import queue
import socket
import subprocess
import sys
import threading
import time
from typing import Any, Dict, List, Optional, Tuple
from urllib.parse import urlsplit

PROG = "verify_app"
RESULTS_FORMAT = "perflab-verify-results"
PLAN_FORMAT = "perflab-verify-plan"
FORMAT_VERSION = 4
KINDS = ("select", "insert", "update", "delete")
# The rows of each kind's statements, where the engine counts them by statement (PostgreSQL).
ROWS = tuple(kind + "_rows" for kind in KINDS)
# Per engine: the client's command line (--client and --client-arg replace the first word and add
# options) and the statement printing one "kind<TAB>count[<TAB>rows]" line per kind, in KINDS' order.
MYSQL_SQL = ("SHOW GLOBAL STATUS WHERE Variable_name IN ("
             + ", ".join("'Com_%s'" % kind for kind in KINDS) + ")")
# PostgreSQL's by kind: role postgresql's view (roles/postgresql/files/statements_by_kind.sql), which
# postgres_exporter reads too. A kind no statement of has run yet counts 0, its rows too.
POSTGRESQL_SQL = (
    "SELECT k.kind, coalesce(sum(s.calls), 0), coalesce(sum(s.rows), 0) FROM unnest(ARRAY['" + "', '".join(KINDS) + "']) WITH ORDINALITY k(kind, n)"
    " LEFT JOIN perflab_monitor.statements_by_kind s USING (kind) GROUP BY k.kind, k.n ORDER BY k.n")
ENGINES = {
    "mariadb": (["mysql", "--batch", "--skip-column-names", "--unbuffered"], MYSQL_SQL),
    "mysql": (["mysql", "--batch", "--skip-column-names", "--unbuffered"], MYSQL_SQL),
    "postgresql": (["psql", "--no-psqlrc", "-X", "-q", "-A", "-t", "-F", "\t", "-U", "postgres", "-d", "perflab"],
                   POSTGRESQL_SQL),
}
# The idle interval: as long as the burst before it, within these bounds (seconds).
IDLE_MIN_S = 0.05
IDLE_MAX_S = 0.5
# Each header value is kept up to this many characters.
MAX_HEADER_CHARS = 512
CLIENT_TIMEOUT_S = 30


class Refused(Exception):
    """The plan or the counters cannot be used: one line, and the exit status."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


class Counters:
    """The server's statements by kind (and on PostgreSQL their rows) through one session of the local
    client, each reading timed at its middle (one client for every reading: a client started per reading
    costs tens of milliseconds)."""

    def __init__(self, command: List[str], sql: str) -> None:
        self.name = command[0]
        self.sql = sql
        try:
            self.process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                            stderr=subprocess.PIPE, text=True)
        except OSError as exc:
            raise Refused("cannot read the server's counters with %s: %s" % (self.name, exc), 3) from None
        self.lines: "queue.Queue[Optional[str]]" = queue.Queue()
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def _refuse(self, why: str) -> Refused:
        self.close()
        assert self.process.stderr is not None
        last = (self.process.stderr.read().strip().splitlines() or [why])[-1]
        return Refused("cannot read the server's counters with %s: %s" % (self.name, last), 3)

    def read(self) -> Tuple[float, Dict[str, int]]:
        """When it was read, and each kind's statements (and "<kind>_rows" where the engine gives them)."""
        assert self.process.stdin is not None
        started = time.monotonic()
        try:
            self.process.stdin.write(self.sql + ";\n")
            self.process.stdin.flush()
        except OSError:
            raise self._refuse("the client exited") from None
        values: Dict[str, str] = {}
        for _ in KINDS:
            try:
                line = self.lines.get(timeout=CLIENT_TIMEOUT_S)
            except queue.Empty:
                raise self._refuse("no answer in %d s" % CLIENT_TIMEOUT_S) from None
            if line is None:
                raise self._refuse("the client exited")
            name, _, value = line.partition("\t")
            name = name.strip().lower()
            name = name[len("com_"):] if name.startswith("com_") else name
            value, _, rows = value.partition("\t")
            values[name] = value.strip()
            if rows.strip():
                values[name + "_rows"] = rows.strip()
        at = (started + time.monotonic()) / 2
        try:
            counted = {kind: int(values[kind]) for kind in KINDS}
            if any(key in values for key in ROWS):
                counted.update({key: int(values[key]) for key in ROWS})
        except (KeyError, ValueError):
            raise Refused("the server has no whole counts of %s statements: %r" % ("/".join(KINDS), values), 3) from None
        return at, counted

    def close(self) -> None:
        if self.process.poll() is None:
            try:
                assert self.process.stdin is not None
                self.process.stdin.close()
                self.process.wait(timeout=5)
            except (OSError, subprocess.TimeoutExpired):
                self.process.kill()
                self.process.wait()


def delta(before: Dict[str, int], after: Dict[str, int]) -> Dict[str, int]:
    return {key: after[key] - before[key] for key in after}


class Sender:
    """Sends requests to the app, `concurrency` in flight, each worker on its own keep-alive connection."""

    def __init__(self, base_url: str, concurrency: int, timeout_s: float, max_body: int) -> None:
        parts = urlsplit(base_url)
        self.https = parts.scheme == "https"
        self.host = parts.hostname or ""
        self.port = parts.port or (443 if self.https else 80)
        self.concurrency = concurrency
        self.timeout_s = timeout_s
        self.max_body = max_body

    def _connection(self) -> http.client.HTTPConnection:
        if self.https:
            return http.client.HTTPSConnection(self.host, self.port, timeout=self.timeout_s)
        return http.client.HTTPConnection(self.host, self.port, timeout=self.timeout_s)

    def _one(self, connection: http.client.HTTPConnection, request: Dict[str, Any]) -> Dict[str, Any]:
        body = request.get("body")
        payload = body.encode("utf-8") if isinstance(body, str) else None
        started = time.monotonic()
        try:
            connection.request(request["method"], request["path"], body=payload, headers=request.get("headers", {}))
            response = connection.getresponse()
            data = response.read()
        except (OSError, http.client.HTTPException, socket.timeout) as exc:
            connection.close()
            return {"error": "%s: %s" % (type(exc).__name__, exc), "seconds": round(time.monotonic() - started, 6)}
        headers: Dict[str, str] = {}
        for name, value in response.getheaders():
            name = name.lower()
            headers[name] = (headers[name] + ", " + value if name in headers else value)[:MAX_HEADER_CHARS]
        return {
            "status": response.status, "headers": headers,
            "body": data[:self.max_body].decode("utf-8", errors="replace"), "body_bytes": len(data),
            "truncated": len(data) > self.max_body, "seconds": round(time.monotonic() - started, 6),
        }

    def send(self, requests: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
        """Every request's answer, in the requests' order."""
        answers: List[Optional[Dict[str, Any]]] = [None] * len(requests)
        lock = threading.Lock()
        pending = iter(range(len(requests)))

        def worker() -> None:
            connection = self._connection()
            try:
                while True:
                    with lock:
                        index = next(pending, None)
                    if index is None:
                        return
                    answers[index] = self._one(connection, requests[index])
            finally:
                connection.close()

        workers = [threading.Thread(target=worker) for _ in range(min(self.concurrency, len(requests)))]
        for thread in workers:
            thread.start()
        for thread in workers:
            thread.join()
        return [answer if answer is not None else {"error": "not sent"} for answer in answers]


def statuses(answers: List[Dict[str, Any]]) -> Dict[str, int]:
    counted: Dict[str, int] = {}
    for answer in answers:
        key = str(answer["status"]) if "status" in answer else "no answer"
        counted[key] = counted.get(key, 0) + 1
    return counted


def clean(attempt: Dict[str, Any], own: Dict[str, int], expect: Dict[str, Any]) -> bool:
    """Nothing at rest and exactly the plan's statements in the burst (within the range of a kind given
    as one), or no statements to judge: the further bursts, which are there to see past the lab's own
    statements, would add nothing (judging is the controller's)."""
    expected = expect["statements"]
    if expected is None:
        return True
    highest = expect.get("statements_max") or {}
    requests = len(attempt["responses"])
    return all(attempt["idle"][kind] == own[kind]
               and expected[kind] * requests <= attempt["burst"][kind] - own[kind]
               <= highest.get(kind, expected[kind]) * requests
               for kind in KINDS)


def verify_type(planned: Dict[str, Any], sender: Sender, counters: Counters, own: Dict[str, int]) -> Dict[str, Any]:
    started = time.monotonic()
    warmup = sender.send(planned["warmup"])
    warmup_s = previous_s = time.monotonic() - started
    attempts = []
    for burst in planned["bursts"]:
        at_0, before_idle = counters.read()
        time.sleep(min(IDLE_MAX_S, max(IDLE_MIN_S, previous_s)))
        at_1, before_burst = counters.read()
        answers = sender.send(burst)
        at_2, after_burst = counters.read()
        attempts.append({
            "idle_s": round(at_1 - at_0, 6), "idle": delta(before_idle, before_burst),
            "burst_s": round(at_2 - at_1, 6), "burst": delta(before_burst, after_burst),
            "responses": answers,
        })
        previous_s = at_2 - at_1
        if clean(attempts[-1], own, planned["expect"]):
            break
    return {
        "name": planned["name"],
        "warmup": {"requests": len(warmup), "seconds": round(warmup_s, 6), "answers": statuses(warmup)},
        "attempts": attempts,
    }


def own_statements(counters: Counters) -> Dict[str, int]:
    """The reader's own statements (and rows) per reading: the least of two back-to-back deltas."""
    _, first = counters.read()
    _, second = counters.read()
    _, third = counters.read()
    return {key: min(second[key] - first[key], third[key] - second[key]) for key in third}


def check_plan(plan: Any) -> Dict[str, Any]:
    if not isinstance(plan, dict) or plan.get("format") != PLAN_FORMAT or plan.get("version") != FORMAT_VERSION:
        raise Refused("not a %s document, version %d (perflab verify plan writes one)" % (PLAN_FORMAT, FORMAT_VERSION), 2)
    url = urlsplit(str(plan.get("base_url", "")))
    if url.scheme not in ("http", "https") or not url.hostname:
        raise Refused("the plan's base_url is not http(s)://host[:port]: %r" % plan.get("base_url"), 2)
    for name in ("concurrency", "max_body_bytes"):
        if not isinstance(plan.get(name), int) or plan[name] < 1:
            raise Refused("the plan's %s is not a whole number >= 1" % name, 2)
    if not isinstance(plan.get("timeout_s"), (int, float)) or plan["timeout_s"] <= 0:
        raise Refused("the plan's timeout_s is not a number > 0", 2)
    types = plan.get("types")
    if not isinstance(types, list):
        raise Refused("the plan has no list of types", 2)
    for planned in types:
        requests = [planned.get("warmup")] + list(planned.get("bursts") or []) if isinstance(planned, dict) else []
        if not (requests and isinstance(planned.get("name"), str) and planned.get("bursts")
                and all(isinstance(r, list) and r and all(isinstance(q, dict) and isinstance(q.get("method"), str)
                                                          and isinstance(q.get("path"), str) for q in r)
                        for r in requests)):
            raise Refused("the plan's type %r needs a name, a warm-up and bursts of requests with a method and a "
                          "path" % (planned.get("name") if isinstance(planned, dict) else planned), 2)
        expect = planned.get("expect")
        statements = expect.get("statements", False) if isinstance(expect, dict) else False
        if not (statements is None or isinstance(statements, dict)
                and all(isinstance(statements.get(kind), (int, float)) for kind in KINDS)):
            raise Refused("the plan's type %r has expected statements per request that are neither null nor a "
                          "number per kind" % planned["name"], 2)
        highest = expect.get("statements_max", {}) if isinstance(expect, dict) else None
        if not (isinstance(highest, dict) and all(kind in KINDS and isinstance(n, (int, float))
                                                  for kind, n in highest.items())):
            raise Refused("the plan's type %r has upper bounds of statements that are not a number per kind"
                          % planned["name"], 2)
    return plan


def parse_args(argv: Optional[List[str]]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="verify_app.py", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--plan", default="-", metavar="FILE", help="the plan (default: stdin)")
    parser.add_argument("--engine", default="mariadb", choices=sorted(ENGINES),
                        help="the DB's engine, the db host's lab_db_engine (default: mariadb)")
    parser.add_argument("--client", help="the DB's command-line client (default: the engine's, mysql or psql)")
    parser.add_argument("--client-arg", action="append", default=[], metavar="ARG",
                        help="an option of the client before the engine's own, e.g. --client-arg=--socket=/run/mysqld/mysqld.sock "
                             "(repeatable)")
    return parser.parse_args(argv)


def main(argv: Optional[List[str]] = None) -> int:
    args = parse_args(argv)
    try:
        try:
            text = sys.stdin.read() if args.plan == "-" else open(args.plan, encoding="utf-8").read()
            plan = check_plan(json.loads(text))
        except (OSError, ValueError) as exc:
            raise Refused("cannot read the plan %s: %s" % (args.plan, exc), 2) from None
        sender = Sender(plan["base_url"], plan["concurrency"], float(plan["timeout_s"]), plan["max_body_bytes"])
        started = time.monotonic()
        command, sql = ENGINES[args.engine]
        counters = Counters([args.client or command[0]] + args.client_arg + command[1:], sql)
        try:
            own = own_statements(counters)
            types = [verify_type(planned, sender, counters, own) for planned in plan["types"]]
        finally:
            counters.close()
    except Refused as exc:
        print("%s: %s" % (PROG, exc), file=sys.stderr)
        return exc.status
    print(json.dumps({
        "format": RESULTS_FORMAT, "version": FORMAT_VERSION, "host": socket.gethostname(),
        "seconds": round(time.monotonic() - started, 3), "own": own, "types": types,
    }))
    return 0


if __name__ == "__main__":
    sys.exit(main())
