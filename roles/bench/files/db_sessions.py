"""The DB's network sessions at the end of the measured phase, and whether each uses TLS
(roles/bench/tasks/db_sessions.yml), on the db host as root over the server's unix socket:

    python3 db_sessions.py mariadb|mysql|postgresql

Prints one JSON document (db-sessions.json without its schema_version): the sessions (the app's pool;
local sessions such as the exporter's are not clients of the run) and the evidence for their TLS.

- MariaDB / MySQL: with performance_schema on, each session's own Ssl_cipher says so; without it
  (MariaDB's default), the session's account does: a user created REQUIRE SSL (ssl_type ANY, X509
  or SPECIFIED) cannot hold a session without TLS, the server refuses it.
- PostgreSQL: each session's row of pg_stat_ssl (as the superuser, through the root -> postgres peer
  map the postgresql role writes).

A DB that does not answer (stopped mid-run) is not the run's failure: the document then says why
the sessions are unknown ({"unavailable": ...}) and the judge marks the TLS rule not evaluated.
Exit status 2: usage. Standard library only.
"""

from __future__ import annotations

import json
import subprocess
import sys

MYSQL_SESSIONS = (
    "SELECT p.ID, p.USER, SUBSTRING_INDEX(p.HOST, ':', 1),"
    " COALESCE((SELECT MIN(u.ssl_type <> '') FROM mysql.user u WHERE u.User = p.USER), 0)"
    " FROM information_schema.PROCESSLIST p"
    " WHERE p.HOST NOT IN ('localhost', '') AND p.USER NOT IN ('system user', 'event_scheduler')"
    " AND p.ID <> CONNECTION_ID()")
MYSQL_CIPHERS = (
    "SELECT t.PROCESSLIST_ID, s.VARIABLE_VALUE FROM performance_schema.status_by_thread s"
    " JOIN performance_schema.threads t USING (THREAD_ID) WHERE s.VARIABLE_NAME = 'Ssl_cipher'")
POSTGRESQL_SESSIONS = (
    "SELECT a.pid, a.usename, host(a.client_addr), s.ssl FROM pg_stat_activity a JOIN pg_stat_ssl s USING (pid)"
    " WHERE a.backend_type = 'client backend' AND a.client_addr IS NOT NULL AND a.pid <> pg_backend_pid()")
CLIENTS = {
    "mysql": ["mysql", "--batch", "--skip-column-names", "-e"],
    "postgresql": ["psql", "--no-psqlrc", "-U", "postgres", "-d", "postgres", "-X", "-A", "-t", "-F", "\t", "-c"],
}


class Unavailable(Exception):
    """The DB did not answer."""


def rows(client: list[str], sql: str) -> list[list[str]]:
    try:
        out = subprocess.run(client + [sql], check=True, capture_output=True, text=True, timeout=30).stdout
    except subprocess.CalledProcessError as exc:
        reason = (exc.stderr or "").strip().splitlines()
        raise Unavailable(reason[-1] if reason else f"exit {exc.returncode}") from None
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise Unavailable(str(exc)) from None
    return [line.split("\t") for line in out.splitlines() if line]


def mysql_sessions() -> dict[str, object]:
    client = CLIENTS["mysql"]
    ps_on = rows(client, "SELECT @@performance_schema")[0][0] == "1"
    sessions = rows(client, MYSQL_SESSIONS)
    ciphers = {pid: cipher for pid, cipher in rows(client, MYSQL_CIPHERS)} if ps_on else {}
    return {
        "evidence": "each session's Ssl_cipher (performance_schema)" if ps_on
                    else "each session's account: REQUIRE SSL/X509 makes the server refuse a session without TLS",
        "sessions": [{"id": int(pid), "user": user, "host": host,
                      "tls": bool(ciphers.get(pid)) if ps_on else required == "1"}
                     for pid, user, host, required in sessions],
    }


def postgresql_sessions() -> dict[str, object]:
    return {
        "evidence": "each session's pg_stat_ssl",
        "sessions": [{"id": int(pid), "user": user, "host": host, "tls": ssl == "t"}
                     for pid, user, host, ssl in rows(CLIENTS["postgresql"], POSTGRESQL_SESSIONS)],
    }


def main(argv: list[str]) -> int:
    if len(argv) != 1 or argv[0] not in ("mariadb", "mysql", "postgresql"):
        print("usage: db_sessions.py mariadb|mysql|postgresql", file=sys.stderr)
        return 2
    try:
        found = postgresql_sessions() if argv[0] == "postgresql" else mysql_sessions()
    except Unavailable as exc:
        found = {"unavailable": f"the DB did not answer: {exc}"}
    print(json.dumps(found))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
