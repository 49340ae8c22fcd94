"""Start what the contract suite and the app benchmark run against, on loopback.

`MariaDB` and `PostgreSQL` are private, throw-away database servers (the lab's two engines) that
require TLS from the apps' user, with a CA and server certificate generated here, the schema and the
seed of apps/db/ (apps/db/postgresql/ for PostgreSQL); `AppProcess` is one app under test started as
its manifest says (perflab/manifest.py: its artifact, JVM options, arguments, environment and
readiness endpoint, the lab's variables pointing at that server and a free port). None touches a
system service: they live under a temporary directory and are stopped by whoever started them.
"""

from __future__ import annotations

import datetime
import getpass
import ipaddress
import os
import pwd
import re
import secrets
import shutil
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import psycopg
import pymysql
import requests
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import NameOID

from contract_docs import COUNTERS
from perflab import app_build, manifest

REPO_ROOT = Path(__file__).resolve().parents[2]
SCHEMA_SQL = REPO_ROOT / "apps" / "db" / "schema.sql"
SEED_SQL = REPO_ROOT / "apps" / "db" / "seed.sql"
PG_SCHEMA_SQL = REPO_ROOT / "apps" / "db" / "postgresql" / "schema.sql"
PG_SEED_SQL = REPO_ROOT / "apps" / "db" / "postgresql" / "seed.sql"
# The statements by kind that the lab's exporter and the bench's verify read on PostgreSQL (role postgresql's one
# definition): the contract suite counts with it too.
PG_STATEMENTS_BY_KIND_SQL = REPO_ROOT / "roles" / "postgresql" / "files" / "statements_by_kind.sql"
# The lab's engines the suite can start a private server of (make test-apps DB_ENGINE=...).
ENGINES = ("mariadb", "postgresql")
STATEMENT_COUNTS_SQL = {
    "mariadb": "SHOW GLOBAL STATUS WHERE Variable_name IN (" + ", ".join(f"'Com_{kind}'" for kind in COUNTERS) + ")",
    # Every user's statements but the monitoring roles' (the superuser's and pg_monitor's: the suite's own).
    "postgresql": "SELECT kind, sum(calls) FROM perflab_monitor.statements_by_kind WHERE kind IN ("
                  + ", ".join(f"'{kind}'" for kind in COUNTERS) + ") GROUP BY kind",
}
# The project's own apps (apps/<name>/perflab-app.yml), which implement the whole contract.
APPS = tuple(name for name, file in manifest.known().items() if file.name == manifest.MANIFEST_FILE)
DB_NAME = "perflab"
APP_DB_USER = "perflab"

# Generous limits: two shared cores, a cold JVM and a first MariaDB start are slow.
DB_START_TIMEOUT_S = 60
APP_READY_TIMEOUT_S = 120


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def newest_java() -> str:
    """The java of the newest JDK under /usr/lib/jvm (virtual threads need 21+), else PATH's."""
    override = os.environ.get("PERFLAB_JAVA")
    if override:
        return override
    candidates = []
    for home in Path("/usr/lib/jvm").glob("*"):
        release = home / "release"
        java = home / "bin" / "java"
        if home.is_symlink() or not release.is_file() or not java.is_file():
            continue
        for line in release.read_text().splitlines():
            if line.startswith("JAVA_VERSION="):
                version = line.split("=", 1)[1].strip('"')
                major = version.split(".")[0]
                if major.isdigit():
                    candidates.append((int(major), str(java)))
    if candidates:
        return max(candidates)[1]
    found = shutil.which("java")
    if not found:
        raise RuntimeError("no JDK found: install one or set PERFLAB_JAVA")
    return found


def _write_ca_and_server_cert(directory: Path) -> tuple[Path, Path, Path]:
    """A throw-away CA and a server certificate for localhost / 127.0.0.1 signed by it."""
    now = datetime.datetime.now(datetime.timezone.utc)
    ca_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "perflab contract test CA")])
    ca_cert = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=2))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True, content_commitment=False, key_encipherment=False,
                data_encipherment=False, key_agreement=False, key_cert_sign=True, crl_sign=True,
                encipher_only=False, decipher_only=False,
            ),
            critical=True,
        )
        .sign(ca_key, hashes.SHA256())
    )
    server_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    server_cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")]))
        .issuer_name(ca_name)
        .public_key(server_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=2))
        .add_extension(
            x509.SubjectAlternativeName(
                [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
            ),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    ca_path = directory / "ca.crt"
    cert_path = directory / "server.crt"
    key_path = directory / "server.key"
    ca_path.write_bytes(ca_cert.public_bytes(serialization.Encoding.PEM))
    cert_path.write_bytes(server_cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        server_key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.TraditionalOpenSSL,
            serialization.NoEncryption(),
        )
    )
    key_path.chmod(0o600)
    return ca_path, cert_path, key_path



def tail_of(log_file: Path, lines: int) -> str:
    """The last lines of a server's log, for a failing test's message."""
    if not log_file.exists():
        return f"(no log at {log_file})"
    return "\n".join(log_file.read_text(errors="replace").splitlines()[-lines:])


def terminate(process: subprocess.Popen | None) -> None:
    """Stop a server started by the harness: SIGTERM, then SIGKILL after 30 s."""
    if process and process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()

def statement_counts(engine: str, connection: Any) -> dict[str, int]:
    """The server's statements by kind so far (the contract's COUNTERS), through a monitoring connection of ENGINE."""
    with connection.cursor() as cursor:
        cursor.execute(STATEMENT_COUNTS_SQL[engine])
        rows = cursor.fetchall()
    values = {str(name).lower().removeprefix("com_"): int(value) for name, value in rows}
    return {kind: values.get(kind, 0) for kind in COUNTERS}


@dataclass
class MariaDB:
    """A private mariadbd on 127.0.0.1:<free port>; the admin account through the unix socket only."""

    engine: ClassVar[str] = "mariadb"
    workdir: Path
    port: int = 0
    app_password: str = field(default_factory=lambda: secrets.token_urlsafe(24))
    process: subprocess.Popen | None = None

    @property
    def admin_user(self) -> str:
        """The account unix-socket authentication maps this OS user to."""
        return "root" if os.geteuid() == 0 else getpass.getuser()

    @property
    def socket_path(self) -> Path:
        return self.workdir / "mariadb.sock"

    @property
    def ca_file(self) -> Path:
        return self.workdir / "ca.crt"

    @property
    def log_file(self) -> Path:
        return self.workdir / "mariadbd.log"

    def start(self) -> None:
        for tool in ("mariadb-install-db", "mariadbd", "mariadb"):
            if not shutil.which(tool):
                raise RuntimeError(f"{tool} not found: apt-get install mariadb-server mariadb-client")
        self.workdir.mkdir(parents=True, exist_ok=True)
        datadir = self.workdir / "data"
        _, cert, key = _write_ca_and_server_cert(self.workdir)
        # mariadbd refuses to run as root unless told which user to run as; a non-root user gets
        # its own socket-authenticated admin account.
        user_option = ["--user=root"] if os.geteuid() == 0 else [f"--auth-root-socket-user={self.admin_user}"]
        subprocess.run(
            ["mariadb-install-db", "--no-defaults", f"--datadir={datadir}",
             "--auth-root-authentication-method=socket", "--skip-test-db", *user_option],
            check=True, capture_output=True, text=True,
        )
        self.port = self.port or free_port()
        command = [
            "mariadbd", "--no-defaults", f"--datadir={datadir}", f"--socket={self.socket_path}",
            f"--port={self.port}", "--bind-address=127.0.0.1", *user_option,
            f"--ssl-ca={self.ca_file}", f"--ssl-cert={cert}", f"--ssl-key={key}",
            # The app user connects from 127.0.0.1; no DNS round trip, no anonymous-user match.
            "--skip-name-resolve",
            f"--pid-file={self.workdir / 'mariadbd.pid'}", f"--log-error={self.log_file}",
            # Small and quick: this server holds a 40,000-row seed, not a benchmark's data.
            "--innodb-buffer-pool-size=64M", "--innodb-log-file-size=48M",
            "--performance-schema=OFF", "--max-connections=200",
        ]
        self.process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + DB_START_TIMEOUT_S
        while True:
            if self.process.poll() is not None:
                raise RuntimeError(f"mariadbd exited with {self.process.returncode}:\n{self.log_tail()}")
            try:
                self.root_connection().close()
                break
            except pymysql.err.OperationalError:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"mariadbd not ready in {DB_START_TIMEOUT_S} s:\n{self.log_tail()}")
                time.sleep(0.2)
        self.mariadb_cli(f"CREATE DATABASE IF NOT EXISTS {DB_NAME}")
        self.mariadb_cli(SCHEMA_SQL.read_text(), database=DB_NAME)
        # ARCHITECTURE.md: the apps' user needs TLS and owns perflab.*; no anonymous users.
        self.mariadb_cli(
            "DELETE FROM mysql.global_priv WHERE User = ''; FLUSH PRIVILEGES; "
            + " ".join(
                f"CREATE USER '{APP_DB_USER}'@'{host}' IDENTIFIED BY '{self.app_password}' REQUIRE SSL; "
                f"GRANT ALL PRIVILEGES ON {DB_NAME}.* TO '{APP_DB_USER}'@'{host}';"
                for host in ("%", "localhost")
            )
        )
        self.reset()

    def reset(self, database: str = DB_NAME) -> None:
        """Back to the deterministic seed state (the seed truncates and refills)."""
        self.mariadb_cli(SEED_SQL.read_text(), database=database)

    def mariadb_cli(self, sql: str, database: str | None = None) -> None:
        command = ["mariadb", "--no-defaults", f"--socket={self.socket_path}", f"--user={self.admin_user}"]
        if database:
            command.append(database)
        subprocess.run(command, input=sql, check=True, capture_output=True, text=True)

    def root_connection(self, **kwargs) -> pymysql.connections.Connection:
        return pymysql.connect(unix_socket=str(self.socket_path), user=self.admin_user, autocommit=True, **kwargs)

    def monitor_connection(self, database: str = DB_NAME) -> pymysql.connections.Connection:
        """The admin account's connection (autocommit), which reads the counters, grants and sessions."""
        return self.root_connection(database=database)

    def create_app_database(self, name: str) -> None:
        """A second database with the schema, owned by the app's user (seeded by reset(name))."""
        self.mariadb_cli(f"DROP DATABASE IF EXISTS {name}; CREATE DATABASE {name}")
        self.mariadb_cli(SCHEMA_SQL.read_text(), database=name)
        self.mariadb_cli(" ".join(f"GRANT ALL PRIVILEGES ON {name}.* TO '{APP_DB_USER}'@'{host}';"
                                  for host in ("%", "localhost")))

    def drop_database(self, name: str) -> None:
        self.mariadb_cli(f"DROP DATABASE IF EXISTS {name}")

    def verify_client_args(self) -> list[str]:
        """roles/bench/files/verify_app.py's options to read this server's counters with its own client."""
        return ["--engine", "mariadb", "--client", "mariadb", "--client-arg=--no-defaults",
                f"--client-arg=--socket={self.socket_path}", f"--client-arg=--user={self.admin_user}"]

    def app_accounts(self, monitor: Any) -> list[str]:
        with monitor.cursor() as cursor:
            cursor.execute("SELECT Host FROM mysql.user WHERE User = %s", (APP_DB_USER,))
            return [f"'{APP_DB_USER}'@'{host}'" for (host,) in cursor.fetchall()]

    def lock_app_user(self, monitor: Any) -> None:
        """The app's user can no longer log in, and its sessions are cut: the DB is gone for the app."""
        with monitor.cursor() as cursor:
            cursor.execute("ALTER USER " + ", ".join(self.app_accounts(monitor)) + " ACCOUNT LOCK")
            cursor.execute("SELECT ID FROM information_schema.PROCESSLIST WHERE USER = %s", (APP_DB_USER,))
            for (session_id,) in cursor.fetchall():
                try:
                    cursor.execute(f"KILL CONNECTION {int(session_id)}")
                except pymysql.err.OperationalError as error:  # the session may have ended on its own meanwhile
                    if "Unknown thread id" not in str(error):
                        raise

    def unlock_app_user(self, monitor: Any) -> None:
        with monitor.cursor() as cursor:
            cursor.execute("ALTER USER " + ", ".join(self.app_accounts(monitor)) + " ACCOUNT UNLOCK")

    def plaintext_login_refused(self) -> str:
        """Log in as the app's user with its password without TLS: the error that refused it (1045)."""
        try:
            pymysql.connect(host="127.0.0.1", port=self.port, user=APP_DB_USER, password=self.app_password,
                            ssl_disabled=True).close()
        except pymysql.err.OperationalError as error:
            assert error.args[0] == 1045, f"a plaintext login must be refused as access denied: {error}"
            return str(error)
        raise AssertionError("a plaintext login of the app's user was accepted")

    def log_tail(self, lines: int = 40) -> str:
        return tail_of(self.log_file, lines)

    def stop(self) -> None:
        terminate(self.process)


def postgresql_bin() -> Path:
    """The newest PostgreSQL's server programs (Debian and Ubuntu keep initdb and postgres off PATH)."""
    found = sorted((path for path in Path("/usr/lib/postgresql").glob("*/bin") if (path / "postgres").is_file()),
                   key=lambda path: int(path.parent.name) if path.parent.name.isdigit() else 0)
    if found:
        return found[-1]
    on_path = shutil.which("postgres")
    if on_path:
        return Path(on_path).parent
    raise RuntimeError("postgres not found: apt-get install postgresql postgresql-client")


@dataclass
class PostgreSQL:
    """A private PostgreSQL on 127.0.0.1:<free port>, set up as role postgresql sets up the lab's: the apps'
    user over TLS only (hostssl, scram-sha-256, the server's certificate from a throw-away CA), pg_stat_statements
    and the lab's view of the statements by kind, the schema applied as the apps' user; the superuser only
    through the unix socket (peer: this OS user maps to postgres). PostgreSQL refuses to run as root: as root,
    the server runs as the OS user postgres, its data in a directory of its own under /tmp."""

    engine: ClassVar[str] = "postgresql"
    workdir: Path
    port: int = 0
    app_password: str = field(default_factory=lambda: secrets.token_urlsafe(24))
    process: subprocess.Popen | None = None
    datadir: Path | None = None
    admin_user: str = "postgres"

    @property
    def ca_file(self) -> Path:
        return self.workdir / "ca.crt"

    @property
    def log_file(self) -> Path:
        return self.workdir / "postgres.log"

    @property
    def socket_dir(self) -> Path:
        if self.datadir is None:
            raise RuntimeError("PostgreSQL was not started")
        return self.datadir

    @property
    def server_user(self) -> pwd.struct_passwd:
        """Who runs the server: this user, or postgres when this is root."""
        return pwd.getpwnam("postgres") if os.geteuid() == 0 else pwd.getpwuid(os.geteuid())

    def _as_server(self, command: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
        user = self.server_user
        return subprocess.run(command, user=user.pw_uid, group=user.pw_gid, check=True, capture_output=True,
                              text=True, **kwargs)

    def start(self) -> None:
        programs = postgresql_bin()
        if not shutil.which("psql"):
            raise RuntimeError("psql not found: apt-get install postgresql-client")
        self.workdir.mkdir(parents=True, exist_ok=True)
        _, cert, key = _write_ca_and_server_cert(self.workdir)
        user = self.server_user
        # Under /tmp, owned by the server's user: the run's directory (0700, root's) is not theirs to enter.
        self.datadir = Path(tempfile.mkdtemp(prefix="perflab-contract-pg-"))
        os.chown(self.datadir, user.pw_uid, user.pw_gid)
        data = self.datadir / "data"
        self._as_server([str(programs / "initdb"), f"--pgdata={data}", "--username=postgres", "--encoding=UTF8",
                         "--locale=C", "--auth-local=peer", "--auth-host=reject"])
        # The server's key must belong to the user the server runs as (0600), else it refuses to start.
        for source, name in ((cert, "server.crt"), (key, "server.key")):
            shutil.copyfile(source, data / name)
            os.chown(data / name, user.pw_uid, user.pw_gid)
            (data / name).chmod(0o600)
        me = pwd.getpwuid(os.geteuid()).pw_name
        (data / "pg_ident.conf").write_text(f"admin {me} postgres\nadmin {user.pw_name} postgres\n")
        # role postgresql's rules (roles/postgresql/templates/pg_hba.conf.j2): the superuser through the socket,
        # the apps' user over TLS with scram-sha-256 to any of its databases, everyone else refused by name.
        (data / "pg_hba.conf").write_text(
            "local all postgres peer map=admin\n"
            f"hostssl all {APP_DB_USER} 127.0.0.1/32 scram-sha-256\n"
            "host all all 0.0.0.0/0 reject\n"
            "host all all ::/0 reject\n"
        )
        self.port = self.port or free_port()
        command = [
            str(programs / "postgres"), "-D", str(data), "-p", str(self.port), "-h", "127.0.0.1",
            "-k", str(self.socket_dir),
            "-c", "ssl=on", "-c", "ssl_cert_file=server.crt", "-c", "ssl_key_file=server.key",
            "-c", "ssl_min_protocol_version=TLSv1.2", "-c", "password_encryption=scram-sha-256",
            # Counted as the lab counts them (roles/postgresql's perflab.conf.j2 says why top).
            "-c", "shared_preload_libraries=pg_stat_statements", "-c", "pg_stat_statements.track=top",
            "-c", "max_connections=200",
            # Small and quick: this server holds a seed, not a benchmark's data, and nothing of it must outlive a crash.
            "-c", "shared_buffers=64MB", "-c", "fsync=off", "-c", "synchronous_commit=off",
            "-c", "full_page_writes=off", "-c", "logging_collector=off",
        ]
        with self.log_file.open("ab") as log:
            self.process = subprocess.Popen(command, user=user.pw_uid, group=user.pw_gid, stdout=log,
                                            stderr=subprocess.STDOUT)
        deadline = time.monotonic() + DB_START_TIMEOUT_S
        while True:
            if self.process.poll() is not None:
                raise RuntimeError(f"postgres exited with {self.process.returncode}:\n{self.log_tail()}")
            try:
                self.monitor_connection("postgres").close()
                break
            except psycopg.OperationalError:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"postgres not ready in {DB_START_TIMEOUT_S} s:\n{self.log_tail()}")
                time.sleep(0.2)
        with self.monitor_connection("postgres") as admin:
            admin.execute(f"CREATE ROLE {APP_DB_USER} LOGIN PASSWORD '{self.app_password}'")
        self.create_app_database(DB_NAME)
        self.reset()

    def psql(self, *args: str, database: str = DB_NAME) -> None:
        """psql as the superuser through the socket, stopping at the first error."""
        subprocess.run(["psql", "--no-psqlrc", "--quiet", "--set=ON_ERROR_STOP=1", f"--host={self.socket_dir}",
                        f"--port={self.port}", f"--username={self.admin_user}", f"--dbname={database}", *args],
                       check=True, capture_output=True, text=True)

    def create_app_database(self, name: str) -> None:
        """A database owned by the apps' user, with pg_stat_statements, the lab's view of the statements by kind
        and the schema, applied as the apps' user (its tables are then its own), as role postgresql does."""
        self.drop_database(name)
        with self.monitor_connection("postgres") as admin:
            admin.execute(f"CREATE DATABASE {name} OWNER {APP_DB_USER} ENCODING 'UTF8' TEMPLATE template0")
        self.psql("--command=CREATE EXTENSION IF NOT EXISTS pg_stat_statements",
                  f"--file={PG_STATEMENTS_BY_KIND_SQL}", database=name)
        self.psql(f"--command=SET ROLE {APP_DB_USER}", f"--file={PG_SCHEMA_SQL}", database=name)

    def drop_database(self, name: str) -> None:
        with self.monitor_connection("postgres") as admin:
            admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")

    def reset(self, database: str = DB_NAME) -> None:
        """Back to the deterministic seed state, applied as the apps' user as role postgresql applies it."""
        self.psql(f"--command=SET ROLE {APP_DB_USER}", f"--file={PG_SEED_SQL}", database=database)

    def monitor_connection(self, database: str = DB_NAME) -> psycopg.Connection:
        """The superuser's connection through the socket (autocommit: no snapshot held between reads)."""
        return psycopg.connect(host=str(self.socket_dir), port=self.port, user=self.admin_user, dbname=database,
                               autocommit=True)

    def verify_client_args(self) -> list[str]:
        """roles/bench/files/verify_app.py's options to read this server's counters with psql (as the superuser)."""
        return ["--engine", "postgresql", f"--client-arg=--host={self.socket_dir}", f"--client-arg=--port={self.port}"]

    def lock_app_user(self, monitor: Any) -> None:
        """The app's user can no longer log in, and its sessions are cut: the DB is gone for the app."""
        with monitor.cursor() as cursor:
            cursor.execute(f"ALTER ROLE {APP_DB_USER} NOLOGIN")
            cursor.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = %s", (APP_DB_USER,))

    def unlock_app_user(self, monitor: Any) -> None:
        with monitor.cursor() as cursor:
            cursor.execute(f"ALTER ROLE {APP_DB_USER} LOGIN")

    def plaintext_login_refused(self) -> str:
        """Log in as the app's user with its password without TLS: the error that refused it (pg_hba.conf)."""
        try:
            psycopg.connect(host="127.0.0.1", port=self.port, user=APP_DB_USER, password=self.app_password,
                            dbname=DB_NAME, sslmode="disable", connect_timeout=10).close()
        except psycopg.OperationalError as error:
            assert re.search(r"pg_hba\.conf rejects connection|no pg_hba\.conf entry", str(error)), (
                f"a plaintext login must be refused by pg_hba.conf: {error}")
            return str(error)
        raise AssertionError("a plaintext login of the app's user was accepted")

    def log_tail(self, lines: int = 40) -> str:
        return tail_of(self.log_file, lines)

    def stop(self) -> None:
        terminate(self.process)
        if self.datadir is not None:
            shutil.rmtree(self.datadir, ignore_errors=True)


Database = MariaDB | PostgreSQL


def database(engine: str, workdir: Path) -> Database:
    """A private server of ENGINE (one of ENGINES), not started yet."""
    if engine == "postgresql":
        return PostgreSQL(workdir)
    if engine == "mariadb":
        return MariaDB(workdir)
    raise ValueError(f"no private server of {engine!r}: one of {', '.join(ENGINES)}")


@dataclass
class AppProcess:
    """One app under test started as its manifest says, with its `variant` (a variant's option, e.g.
    "virtual", or key=value); `extra_env` overrides the manifest's environment."""

    app: str
    db: Database
    workdir: Path
    pool_size: int = 4
    variant: str = ""
    extra_env: dict[str, str] = field(default_factory=dict)
    command_prefix: list[str] = field(default_factory=list)
    java_opts: list[str] = field(default_factory=list)
    port: int = 0
    readiness: dict[str, Any] = field(default_factory=lambda: {"path": "/health/ready", "status": 200})
    process: subprocess.Popen | None = None
    started_at: float = 0.0
    ready_after_s: float = 0.0

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def running(self) -> subprocess.Popen:
        """The JVM's process; only after start()."""
        if self.process is None:
            raise RuntimeError(f"{self.app} was not started")
        return self.process

    @property
    def log_file(self) -> Path:
        return self.workdir / f"{self.app}.log"

    def deployment(self) -> dict[str, Any]:
        """What role app would deploy of this app (manifest.deploy_vars), pointed at this DB and port."""
        found = manifest.resolve(self.app)
        lab = {"db_host": "127.0.0.1", "db_port": str(self.db.port), "db_name": DB_NAME, "db_user": APP_DB_USER,
               "db_password_file": str(self.workdir / "db-password"), "db_ca_file": str(self.db.ca_file),
               "db_pool_size": str(self.pool_size), "db_engine": self.db.engine}
        variants = manifest.choose(found, [self.variant] if self.variant else [])
        return manifest.deploy_vars(found, variants, lab, port=self.port or None)

    def environment(self) -> dict[str, str]:
        deployed = self.deployment()
        env = dict(os.environ)
        env.update(deployed["env"])
        env.update(dict.fromkeys(deployed["password_env"], self.db.app_password))
        env.update(self.extra_env)
        return env

    @property
    def private_artifact(self) -> Path:
        return self.workdir / "artifact"

    def start(self) -> None:
        self.port = self.port or free_port()
        self.workdir.mkdir(parents=True, exist_ok=True)
        deployed = self.deployment()
        artifact = Path(deployed["artifact"]["path"])
        found = manifest.resolve(self.app)
        problem = app_build.artifact_problem(found, artifact)
        if problem is not None:
            raise RuntimeError(f"{self.app}: {problem}: run `make apps` (or `perflab app build {self.app}`) first")
        if deployed["password_file"]:
            (self.workdir / "db-password").write_text(self.db.app_password)
            (self.workdir / "db-password").chmod(0o600)
        # Run a private copy: a rebuild of apps/ during the run must not swap classes under the JVM.
        shutil.rmtree(self.private_artifact, ignore_errors=True)
        self.private_artifact.mkdir()
        if deployed["artifact"]["kind"] == "directory":
            shutil.copytree(artifact, self.private_artifact / artifact.name)
        else:
            shutil.copyfile(artifact, self.private_artifact / artifact.name)
        self.readiness = deployed["readiness"]
        command = [*self.command_prefix, newest_java(), *deployed["launch"]["jvm_options"], *self.java_opts,
                   "-jar", str(self.private_artifact / deployed["launch"]["jar"]), *deployed["launch"]["args"]]
        self.started_at = time.monotonic()
        with self.log_file.open("wb") as log:
            self.process = subprocess.Popen(
                command, env=self.environment(), stdout=log, stderr=subprocess.STDOUT, cwd=self.workdir
            )

    def wait_ready(self, timeout_s: float = APP_READY_TIMEOUT_S) -> None:
        """Poll the manifest's readiness endpoint until it answers its status (/health/ready, 200 for
        the project's apps); the first such answer marks the start time to first request."""
        deadline = self.started_at + timeout_s
        while True:
            if self.running.poll() is not None:
                raise RuntimeError(f"{self.app} exited with {self.running.returncode}:\n{self.log_tail()}")
            try:
                if requests.get(self.base_url + self.readiness["path"], timeout=2).status_code == self.readiness["status"]:
                    self.ready_after_s = time.monotonic() - self.started_at
                    return
            except requests.RequestException:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"{self.app} not ready in {timeout_s} s:\n{self.log_tail()}")
            time.sleep(0.02)

    def max_rss_kib(self) -> int:
        """VmHWM of the JVM: the peak resident set size, in KiB."""
        status = Path(f"/proc/{self.running.pid}/status").read_text()
        for line in status.splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
        raise RuntimeError(f"no VmHWM in /proc/{self.running.pid}/status")

    def log_tail(self, lines: int = 80) -> str:
        return tail_of(self.log_file, lines)

    def stop(self) -> None:
        terminate(self.process)
        shutil.rmtree(self.private_artifact, ignore_errors=True)
        (self.workdir / "db-password").unlink(missing_ok=True)
