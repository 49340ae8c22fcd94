"""A PostgreSQL db host (lab_db_engine: postgresql): the database tier of playbooks/database.yml on
a fresh machine reached over SSH as a sudo user (tests/sshlab.py), as an operator's inventory gives
it. PostgreSQL and postgres_exporter from the distribution; the apps' user over TLS only, verified
against the lab CA; the superuser never over the network; nothing changes on a second run or under
--check; `make db-reset` restores the seed; the exporter counts statements by kind and sessions by TLS.

It runs in the SSH lab's share of `make test` (the Makefile's SSH_LAB_TESTS), before that share waits
for the local lab's to end, and needs no lab of its own: one machine, in the db group (and the app
group, where the lab's run lock lives, which `make db-reset` takes)."""
from __future__ import annotations

import os
import re
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
import yaml

from labkit import ROOT, SSH_LAB
from sshlab import docker, new_key, remove_inventory, ssh_host_image, start_host, write_connection

pytestmark = pytest.mark.skipif(not SSH_LAB, reason="runs in the SSH lab's share (PERFLAB_TEST_LAB=ssh, make test-lab)")

HOST = "pgdb1"
NETWORK = "perflab-ssh-pg"
INVENTORY = ROOT / "build" / "pg-inventory"
SECRETS = ROOT / "secrets" / INVENTORY.name
SEED_ROWS = {"zipcode": 40000, "book": 100, "app_user": 1000, "book_order": 0}


def remove_machine() -> None:
    subprocess.run(["docker", "rm", "-f", f"perflab-ssh-{HOST}"], capture_output=True, timeout=300, check=False)
    subprocess.run(["docker", "network", "rm", NETWORK], capture_output=True, timeout=120, check=False)


def playbook(name: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, ANSIBLE_NOCOLOR="1", ANSIBLE_FORCE_COLOR="0", PERFLAB_RUN_PID=str(os.getpid()))
    return subprocess.run([str(ROOT / ".venv/bin/ansible-playbook"), "-i", str(INVENTORY), f"playbooks/{name}", *args],
                          cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=1800,
                          check=False)


def changed(output: str) -> dict[str, int]:
    """changed= per host of the play recap."""
    return {host: int(count) for host, count in re.findall(r"^(\S+)\s+: ok=\d+\s+changed=(\d+)", output, re.M)}


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """The machine, its database tier converged once: its address and the first run's output."""
    key, public_key = new_key(INVENTORY)
    image = ssh_host_image()
    remove_machine()
    docker("network", "create", NETWORK)
    try:
        address = start_host(image, HOST, public_key, network=NETWORK)
        write_connection(INVENTORY, key)
        host = {"ansible_host": address, "lab_address": address}
        (INVENTORY / "hosts.yml").write_text(yaml.safe_dump({"all": {"children": {"lab": {"children": {
            "db": {"hosts": {HOST: host}}, "app": {"hosts": {HOST: {}}}}}}}}))
        (INVENTORY / "group_vars" / "lab" / "db_engine.yml").write_text("lab_db_engine: postgresql\n")
        first = playbook("database.yml")
        assert first.returncode == 0, first.stdout[-6000:]
        yield {"address": address, "first": first.stdout}
    finally:
        remove_machine()
        remove_inventory(INVENTORY)


def app_password() -> str:
    return (SECRETS / "mysql_app_password").read_text().strip()


def connect(address: str, user: str = "perflab", **options: str) -> psycopg.Connection[tuple[object, ...]]:
    return psycopg.connect(host=address, port=5432, dbname="perflab", user=user, password=app_password(),
                           connect_timeout=10, **options)


def tls_app(address: str) -> psycopg.Connection[tuple[object, ...]]:
    return connect(address, sslmode="verify-ca", sslrootcert=str(SECRETS / "ca.crt"))


def metrics(address: str) -> str:
    with urllib.request.urlopen(f"http://{address}:9187/metrics", timeout=30) as answer:
        return answer.read().decode()


def sample(text: str, name: str, **labels: str) -> float | None:
    """The value of the series NAME whose labels include LABELS, else None."""
    for line in text.splitlines():
        if line.startswith(name + "{") or line.startswith(name + " "):
            found = dict(re.findall(r'(\w+)="([^"]*)"', line.split("}")[0]))
            if all(found.get(k) == v for k, v in labels.items()):
                return float(line.rsplit(" ", 1)[1])
    return None


def installed(package: str) -> bool:
    done = subprocess.run(["docker", "exec", f"perflab-ssh-{HOST}", "dpkg-query", "--show", "--showformat=${db:Status-Status}",
                           package], capture_output=True, text=True, timeout=60, check=False)
    return done.stdout == "installed"


def test_postgresql_comes_up_and_a_second_run_and_check_change_nothing(db: dict[str, str]) -> None:
    assert installed("postgresql-15") and installed("prometheus-postgres-exporter")
    assert not installed("mariadb-server") and not installed("prometheus-mysqld-exporter")
    for args in ((), ("--check",)):
        again = playbook("database.yml", *args)
        assert again.returncode == 0, again.stdout[-4000:]
        recap = changed(again.stdout)
        assert HOST in recap and set(recap.values()) == {0}, (args, again.stdout[-4000:])


def test_the_apps_password_is_never_printed(db: dict[str, str]) -> None:
    assert app_password() not in db["first"]


def test_the_apps_user_is_refused_without_tls(db: dict[str, str]) -> None:
    with pytest.raises(psycopg.OperationalError) as refused:
        connect(db["address"], sslmode="disable")
    assert "no encryption" in str(refused.value), refused.value


def test_the_apps_user_connects_over_tls_verified_by_the_lab_ca_to_the_seed(db: dict[str, str]) -> None:
    with tls_app(db["address"]) as connection:
        ssl, version = connection.execute("SELECT ssl, version FROM pg_stat_ssl WHERE pid = pg_backend_pid()").fetchone()
        assert ssl is True and str(version).startswith("TLSv1."), (ssl, version)
        counts = {table: connection.execute(f"SELECT count(*) FROM {table}").fetchone()[0] for table in SEED_ROWS}
        assert counts == SEED_ROWS
        # The same rows as apps/db/seed.sql gives MariaDB (its comments name these keys).
        assert connection.execute("SELECT city, county, state, timezone, type FROM zipcode WHERE zip = '10007'").fetchone() \
            == ("City-0007", "County-007", "OH", "America/Los_Angeles", "PO BOX")
        assert connection.execute("SELECT title, author FROM book WHERE id = 37").fetchone() == ("Book 037", "Author 00")


def test_a_server_certificate_from_another_ca_is_refused(db: dict[str, str], tmp_path: Path) -> None:
    """Verification is real: trusting only the system CAs, the lab's server certificate fails."""
    with pytest.raises(psycopg.OperationalError) as refused:
        connect(db["address"], sslmode="verify-ca", sslrootcert="/etc/ssl/certs/ca-certificates.crt")
    assert "certificate verify failed" in str(refused.value), refused.value


def test_the_superuser_cannot_log_in_over_the_network(db: dict[str, str]) -> None:
    for options in ({"sslmode": "disable"}, {"sslmode": "verify-ca", "sslrootcert": str(SECRETS / "ca.crt")}):
        with pytest.raises(psycopg.OperationalError) as refused:
            connect(db["address"], user="postgres", **options)
        assert "rejects connection" in str(refused.value), refused.value


def test_the_exporter_counts_the_apps_statements_and_tls_sessions(db: dict[str, str]) -> None:
    before = sample(metrics(db["address"]), "pg_stat_statements_calls", datname="perflab", usename="perflab",
                    command="select") or 0.0
    with tls_app(db["address"]) as connection:
        for zip_code in range(10000, 10020):
            connection.execute("SELECT city FROM zipcode WHERE zip = %s", (str(zip_code),)).fetchone()
        text = metrics(db["address"])
        assert sample(text, "pg_up") == 1.0
        assert (sample(text, "pg_stat_ssl_sessions", usename="perflab", ssl="true") or 0) >= 1, text[-3000:]
        assert sample(text, "pg_stat_ssl_sessions", usename="perflab", ssl="false") is None
    # A statement is counted when its portal is dropped: the last one at the commit that closes the block.
    after = sample(metrics(db["address"]), "pg_stat_statements_calls", datname="perflab", usename="perflab",
                   command="select")
    assert after is not None and after - before == 20, (before, after)


def test_db_reset_restores_the_seed(db: dict[str, str]) -> None:
    with tls_app(db["address"]) as connection:
        connection.execute("INSERT INTO zipcode VALUES ('99999-0001', 'x', 'x', 'XX', 'x', 'x')")
        connection.execute("INSERT INTO book_order (book_id, user_id) VALUES (1, 1)")
        connection.execute("DELETE FROM book WHERE id = 100")
    started = time.monotonic()
    reset = playbook("db_reset.yml")
    assert reset.returncode == 0, reset.stdout[-4000:]
    with tls_app(db["address"]) as connection:
        counts = {table: connection.execute(f"SELECT count(*) FROM {table}").fetchone()[0] for table in SEED_ROWS}
        assert counts == SEED_ROWS
        # Ids restart where the seed leaves them, as on MariaDB.
        assert connection.execute("INSERT INTO book (title, author) VALUES ('t', 'a') RETURNING id").fetchone() == (101,)
    print(f"db-reset on PostgreSQL: {time.monotonic() - started:.1f} s")
