"""The database tier of the local lab: TLS required and verified against the lab CA, the seed
state and its reset, the exporter's grants and mysqld_exporter's view of the server."""
from __future__ import annotations

import re
import ssl
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pymysql
import pytest
import requests

from lab_helpers import REPO, run_make, tail

DB_HOST = "perflab-db"
SECRETS = REPO / "secrets" / "local"
SEED_ROWS = {"zipcode": 40000, "book": 100, "app_user": 1000, "book_order": 0}


def db_address() -> str:
    """The db container's address on the docker network `perflab` (reachable from the controller)."""
    return subprocess.run(
        ["docker", "inspect", "--format", '{{(index .NetworkSettings.Networks "perflab").IPAddress}}', DB_HOST],
        capture_output=True, text=True, check=True).stdout.strip()


def app_password() -> str:
    return (SECRETS / "mysql_app_password").read_text().strip()


def lab_ca_context() -> ssl.SSLContext:
    """Verify the server's chain against the lab CA only. The controller dials an IP address that
    the certificate does not name, so the name is checked separately (test_server_certificate_names)."""
    context = ssl.create_default_context(cafile=str(SECRETS / "ca.crt"))
    context.check_hostname = False
    return context


def connect_app(**tls: object) -> pymysql.connections.Connection:
    return pymysql.connect(host=db_address(), port=3306, user="perflab", password=app_password(),
                           database="perflab", connect_timeout=10, **tls)


def root_sql(statement: str) -> str:
    """Run SQL as root over the db host's unix socket (root has no network login)."""
    result = subprocess.run(["docker", "exec", DB_HOST, "mysql", "-N", "-B", "-e", statement],
                            capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
    return result.stdout


def row_counts() -> dict[str, int]:
    counts = root_sql(";".join(f"SELECT COUNT(*) FROM perflab.{table}" for table in SEED_ROWS)).split()
    return dict(zip(SEED_ROWS, map(int, counts)))


@pytest.fixture(scope="module")
def tls_app(lab: str) -> Iterator[pymysql.connections.Connection]:
    connection = connect_app(ssl=lab_ca_context())
    yield connection
    connection.close()


def test_app_user_cannot_connect_without_tls(lab: str) -> None:
    with pytest.raises(pymysql.err.OperationalError) as refused:
        connect_app(ssl_disabled=True)
    assert refused.value.args[0] == 1045, refused.value


def test_app_user_connects_with_tls_verified_by_the_lab_ca(tls_app: pymysql.connections.Connection) -> None:
    with tls_app.cursor() as cursor:
        cursor.execute("SHOW SESSION STATUS LIKE 'Ssl_version'")
        (_, version), = cursor.fetchall()
    assert version.startswith("TLSv1."), version


def test_a_certificate_from_another_ca_is_refused(lab: str) -> None:
    """Verification is real: trusting only the system CAs, the lab's server certificate fails."""
    other = ssl.create_default_context()
    other.check_hostname = False
    with pytest.raises((pymysql.err.OperationalError, ssl.SSLError)):
        connect_app(ssl=other)


def test_server_certificate_names(tls_app: pymysql.connections.Connection) -> None:
    """The certificate names the db host as the apps dial it (its lab_address, the container name)."""
    peer = tls_app._sock.getpeercert()  # noqa: SLF001 - the only way PyMySQL exposes the peer certificate
    names = {value for kind, value in peer["subjectAltName"] if kind == "DNS"}
    assert DB_HOST in names, peer["subjectAltName"]


def test_the_lab_comes_up_seeded(lab: str) -> None:
    assert row_counts() == SEED_ROWS
    assert root_sql("SELECT MIN(zip), MAX(zip), COUNT(DISTINCT city) FROM perflab.zipcode").split() == \
        ["10000", "49999", "2000"]


def test_db_reset_restores_the_seed(tls_app: pymysql.connections.Connection) -> None:
    with tls_app.cursor() as cursor:
        cursor.execute("INSERT INTO zipcode VALUES ('99999-0001', 'Written', 'By', 'TX', 'UTC', 'TEST')")
        cursor.execute("INSERT INTO book_order (book_id, user_id) VALUES (1, 1)")
        cursor.execute("DELETE FROM book WHERE id > 90 AND id NOT IN (SELECT book_id FROM book_order)")
    tls_app.commit()
    assert row_counts() == {"zipcode": 40001, "book": 90, "app_user": 1000, "book_order": 1}

    reset = run_make("db-reset")
    assert reset.returncode == 0, tail(reset.stdout)
    assert row_counts() == SEED_ROWS
    assert root_sql("SELECT COUNT(*) FROM perflab.zipcode WHERE zip = '99999-0001'").split() == ["0"]
    # Ids restart where the seed leaves them: a run's first order is id 1, its first new book 101.
    assert "AUTO_INCREMENT=" not in root_sql("SHOW CREATE TABLE perflab.book_order")
    assert "AUTO_INCREMENT=101" in root_sql("SHOW CREATE TABLE perflab.book")


def test_exporter_user_has_exactly_the_grants_it_needs(lab: str) -> None:
    shown = root_sql("SHOW GRANTS FOR 'exporter'@'localhost'")
    grants = re.sub(r"PASSWORD '[^']*'", "PASSWORD '<hash>'", shown).strip().splitlines()
    assert len(grants) == 1, grants  # nothing on any database or table besides the global grant
    match = re.match(r"GRANT (.+) ON \*\.\* TO [`']exporter[`']@[`']localhost[`'].*WITH MAX_USER_CONNECTIONS 3$",
                     grants[0])
    assert match, grants[0]
    privileges = {privilege.strip() for privilege in match.group(1).split(",")}
    if "mariadb" in root_sql("SELECT VERSION()").lower():
        # MariaDB 10.5+ shows REPLICATION CLIENT under its new name, BINLOG MONITOR.
        assert privileges == {"SELECT", "PROCESS", "BINLOG MONITOR", "SLAVE MONITOR"}, privileges
    else:
        assert privileges == {"SELECT", "PROCESS", "REPLICATION CLIENT"}, privileges


def test_mysqld_exporter_reaches_the_database(lab: str) -> None:
    metrics = requests.get(f"http://{db_address()}:9104/metrics", timeout=10)
    assert metrics.status_code == 200
    assert re.search(r"^mysql_up 1$", metrics.text, re.MULTILINE), \
        [line for line in metrics.text.splitlines() if line.startswith("mysql_up")]
    assert re.search(r"^mysql_global_status_threads_connected \d+", metrics.text, re.MULTILINE)


def test_secrets_are_private_and_never_printed(lab: str) -> None:
    for name in ("mysql_root_password", "mysql_app_password", "mysql_exporter_password", "ca.key",
                 "db-server-perflab-db.key"):
        path: Path = SECRETS / name
        assert path.stat().st_mode & 0o077 == 0, f"{path} is readable by others"
    for name in ("mysql_app_password", "mysql_exporter_password"):
        assert (SECRETS / name).read_text().strip() not in lab, f"lab-up printed {name}"
    ignored = subprocess.run(["git", "check-ignore", "-q", str(SECRETS / "ca.key")], cwd=REPO, check=False)
    assert ignored.returncode == 0, "secrets/ is not git-ignored"
