"""The contract suite's targets: an app already running (--base-url) or apps it starts (--app).

    pytest tests/contract --base-url http://127.0.0.1:8080 [--db-engine E --db-host H --db-user U ...]
    pytest tests/contract --app quarkus --app spring-webflux --app spring-mvc --app spring-mvc+virtual
    pytest tests/contract --db-engine postgresql --app quarkus ...

With --app the suite starts a private MariaDB, or PostgreSQL with --db-engine postgresql, that requires
TLS (harness.py), then each app as its manifest (apps/<app>/perflab-app.yml) says, in turn, resetting
the DB to the seed between apps. Every test is parametrised by target, so the report says which app
passes which check. Without a DB connection (--base-url alone) the checks that need one skip and say so.
"""

from __future__ import annotations

import concurrent.futures
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import psycopg
import pymysql
import pytest
import requests

from contract_docs import COUNTERS, contract_statement_table
from harness import APPS, DB_NAME, ENGINES, REPO_ROOT, AppProcess, Database, database, statement_counts
from openapi_check import OpenApi
from perflab import manifest

# A statement count may only be retried for noise (a pool's housekeeping adds statements, it
# never removes any); the expected values never change.
STATEMENT_ATTEMPTS = 3
REQUEST_TIMEOUT_S = 30


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("contract", "perflab contract suite")
    group.addoption("--base-url", help="check the app already running at this URL")
    group.addoption(
        "--app", action="append", default=[],
        help=f"start this app as its manifest says and check it (repeatable): {', '.join(APPS)}; "
             "+option chooses a variant's option of its manifest, e.g. spring-mvc+virtual, quarkus+worker",
    )
    group.addoption("--app-name", help="with --base-url: the app's name, expected as the metrics' application tag")
    group.addoption("--pool-size", type=int, default=4, help="with --app: PERFLAB_DB_POOL_SIZE (default 4)")
    group.addoption("--work-dir", default=str(REPO_ROOT / "build" / "contract"),
                    help="with --app: where the DB and the app logs live (default build/contract)")
    group.addoption("--db-engine", choices=ENGINES, default="mariadb",
                    help="with --app: the private DB server the suite starts; with --db-host: that DB's engine "
                         "(default mariadb)")
    group.addoption("--db-host", help="with --base-url: the app's DB, for statement counts and the TLS check")
    group.addoption("--db-port", type=int, help="with --db-host (default: the engine's, 3306 or 5432)")
    group.addoption("--db-name", default="perflab")
    group.addoption("--db-user", default="root",
                    help="a user that may read global status and grants (on PostgreSQL a member of pg_monitor)")
    group.addoption("--db-password", default="")
    group.addoption("--db-ca", help="PEM of the CA that signed the DB server's certificate")
    group.addoption("--app-db-user", default="perflab", help="the DB user the app connects as")


class StatementCounter:
    """DB statements by kind, minus the monitor's own: on MariaDB the server's global Com_* counters, on
    PostgreSQL pg_stat_statements' calls by the statement's first word (the lab's view, which leaves out the
    monitoring roles' own: the calibration then finds none)."""

    def __init__(self, connection: Any, engine: str) -> None:
        self.connection = connection
        self.engine = engine
        self.own = self._calibrate()

    def snapshot(self) -> dict[str, int]:
        return statement_counts(self.engine, self.connection)

    def _calibrate(self) -> dict[str, int]:
        """The monitor's own statements between two snapshots: the least of a few tries."""
        tries = []
        for _ in range(5):
            before = self.snapshot()
            after = self.snapshot()
            tries.append({name: after[name] - before[name] for name in COUNTERS})
        return {name: min(t[name] for t in tries) for name in COUNTERS}

    def count(self, action: Callable[[], Any]) -> tuple[Any, dict[str, int]]:
        before = self.snapshot()
        result = action()
        after = self.snapshot()
        return result, {name: after[name] - before[name] - self.own[name] for name in COUNTERS}


@dataclass
class Target:
    """One app under test as the tests see it."""

    name: str
    base_url: str
    application: str | None
    engine: str = "mariadb"
    monitor: Any = None
    app_db_user: str = "perflab"
    process: AppProcess | None = None
    db: Database | None = None
    pool_size: int | None = None
    counter: StatementCounter | None = None
    http: requests.Session = field(default_factory=requests.Session)

    def url(self, path: str) -> str:
        return self.base_url + path

    def request(self, method: str, path: str, **kwargs: Any) -> requests.Response:
        kwargs.setdefault("timeout", REQUEST_TIMEOUT_S)
        return self.http.request(method, self.url(path), **kwargs)

    def query(self, sql: str, args: Any = None) -> list[tuple]:
        """The rows of one SELECT through the monitoring connection (%s placeholders on both engines)."""
        if self.monitor is None:
            pytest.skip("no DB connection: give --db-host (or run with --app)")
        with self.monitor.cursor() as cursor:
            cursor.execute(sql, args)
            return [tuple(row) for row in cursor.fetchall()]

    def statements(self, action: Callable[[], Any]) -> tuple[Any, dict[str, int]]:
        if self.counter is None:
            pytest.skip("no DB connection to count statements: give --db-host (or run with --app)")
        return self.counter.count(action)

    def expect_statements(self, action: Callable[[], Any], expected: dict[str, int]) -> Any:
        """Run `action` (a fresh request each time) until the counted statements equal `expected`.

        Retried only while every counter is at or above its expected value: background noise can
        add statements, never remove them.
        """
        seen = []
        for _ in range(STATEMENT_ATTEMPTS):
            result, counted = self.statements(action)
            if counted == expected:
                return result
            seen.append(counted)
            if any(counted[name] < expected[name] for name in COUNTERS):
                break
            time.sleep(0.5)
        raise AssertionError(f"DB statements {seen} (one per attempt), the contract says {expected}")


def _variant(spec: str) -> tuple[str, str]:
    """APP+option: the app (a manifest's name) and a variant's option of its manifest."""
    app, _, variant = spec.partition("+")
    if app not in APPS:
        raise pytest.UsageError(f"--app {spec}: unknown app {app!r}; one of {', '.join(APPS)}")
    try:
        manifest.choose(manifest.resolve(app), [variant] if variant else [])
    except manifest.ManifestError as error:
        raise pytest.UsageError(f"--app {spec}: {error}") from None
    return app, variant


def pytest_configure(config: pytest.Config) -> None:
    for spec in config.getoption("app", default=[]) or []:
        _variant(spec)
    if config.getoption("base_url", default=None) and config.getoption("app", default=None):
        raise pytest.UsageError("give either --base-url or --app, not both")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "target" not in metafunc.fixturenames:
        return
    config = metafunc.config
    specs = list(config.getoption("app", default=[]) or [])
    if config.getoption("base_url", default=None):
        specs = ["url"]
    if not specs:
        unconfigured = pytest.param(
            None, id="unconfigured",
            marks=pytest.mark.skip(reason="contract suite: give --base-url URL or --app NAME"),
        )
        metafunc.parametrize("target", [unconfigured], indirect=True, scope="session")
        return
    metafunc.parametrize("target", specs, indirect=True, scope="session")


@pytest.fixture(scope="session")
def api() -> OpenApi:
    return OpenApi()


@pytest.fixture(scope="session")
def statement_table() -> dict[str, dict[str, int]]:
    return contract_statement_table()


@pytest.fixture(scope="session")
def work_dir(request: pytest.FixtureRequest) -> Path:
    root = Path(request.config.getoption("work_dir"))
    root.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix=time.strftime("%Y%m%d-%H%M%S-"), dir=root))


@pytest.fixture(scope="session")
def harness_db(request: pytest.FixtureRequest, work_dir: Path):
    engine = request.config.getoption("db_engine")
    db = database(engine, work_dir / engine)
    try:
        db.start()
        yield db
    finally:
        db.stop()
        # The data directory is large and useless afterwards; the logs stay.
        shutil.rmtree(db.workdir / "data", ignore_errors=True)


def warm_up(target: Target, concurrency: int) -> None:
    """Fill the app's DB pool and exercise every route once, so counts see no connection opening."""
    # No /updates: World keeps its seed until the suite's own checks write to it.
    paths = ["/zipcodes/10000", "/zipcodes?city=City-0000", "/books", "/greeting/warm", "/hello/0", "/plaintext", "/json",
             "/db", "/queries?queries=3", "/fortunes"]
    for _ in range(3):
        with concurrent.futures.ThreadPoolExecutor(concurrency) as pool:
            for response in pool.map(lambda p: requests.get(target.url(p), timeout=REQUEST_TIMEOUT_S),
                                     paths * concurrency):
                response.close()


@pytest.fixture(scope="session")
def target(request: pytest.FixtureRequest):
    spec = request.param
    config = request.config
    engine = config.getoption("db_engine")
    if spec == "url":
        monitor = None
        if config.getoption("db_host"):
            monitor = monitor_connection(config)
        found = Target(
            name="url", base_url=config.getoption("base_url").rstrip("/"),
            application=config.getoption("app_name"), engine=engine, monitor=monitor,
            app_db_user=config.getoption("app_db_user"),
        )
        warm_up(found, 16)
        if monitor is not None:
            found.counter = StatementCounter(monitor, engine)
        yield found
        if monitor is not None:
            monitor.close()
        return
    app, variant = _variant(spec)
    db: Database = request.getfixturevalue("harness_db")
    db.reset()
    work_dir: Path = request.getfixturevalue("work_dir")
    pool_size = config.getoption("pool_size")
    process = AppProcess(app=app, db=db, workdir=work_dir / spec, pool_size=pool_size, variant=variant)
    monitor = db.monitor_connection(DB_NAME)
    try:
        process.start()
        process.wait_ready()
        started = Target(
            name=spec, base_url=process.base_url, application=app, engine=db.engine, monitor=monitor,
            process=process, db=db, pool_size=pool_size,
        )
        warm_up(started, 2 * pool_size)
        started.counter = StatementCounter(monitor, db.engine)
        yield started
    finally:
        process.stop()
        monitor.close()


def monitor_connection(config: pytest.Config) -> Any:
    """With --base-url: the connection to the app's DB given by --db-*, autocommit, TLS verified with --db-ca."""
    engine, ca = config.getoption("db_engine"), config.getoption("db_ca")
    host, user, password = config.getoption("db_host"), config.getoption("db_user"), config.getoption("db_password")
    if engine == "postgresql":
        tls = {"sslmode": "verify-ca", "sslrootcert": ca} if ca else {}
        return psycopg.connect(host=host, port=config.getoption("db_port") or 5432, user=user, password=password,
                               dbname=config.getoption("db_name"), autocommit=True, **tls)
    return pymysql.connect(host=host, port=config.getoption("db_port") or 3306, user=user, password=password,
                           database=config.getoption("db_name"), ssl={"ca": ca} if ca else None, autocommit=True)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    outcome = yield
    report = outcome.get_result()
    found = getattr(item, "funcargs", {}).get("target")
    if report.failed and isinstance(found, Target) and found.process is not None:
        report.sections.append((f"{found.name} log ({found.process.log_file})", found.process.log_tail(40)))

