"""Readiness, liveness, Prometheus metrics, and TLS on the app's DB sessions."""

from __future__ import annotations

import math
import re
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
import requests

from openapi_check import media_type

SAMPLE = re.compile(r"^(?P<name>[a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(?P<labels>.*)\})?\s+(?P<value>\S+)(?:\s+\d+)?$")
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def parse_metrics(text: str) -> list[tuple[str, dict[str, str], float]]:
    """Prometheus text exposition samples: (name, labels, value); raise on a malformed line."""
    samples = []
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        match = SAMPLE.match(line)
        assert match, f"not a Prometheus sample line: {line!r}"
        labels = dict(LABEL.findall(match["labels"] or ""))
        samples.append((match["name"], labels, float(match["value"])))
    return samples


def test_ready(target, api):
    response = target.request("GET", "/health/ready", headers={"Accept": "application/json"})
    assert response.status_code == 200, response.text
    assert api.check(response, "get", "/health/ready")["status"] == "UP"


def test_live(target, api):
    response = target.request("GET", "/health/live", headers={"Accept": "application/json"})
    assert response.status_code == 200, response.text
    assert api.check(response, "get", "/health/live")["status"] == "UP"


def test_metrics(target, api):
    for path in ("/greeting/metricsprobe", "/zipcodes/10001", "/zipcodes/99999", "/greeting/%20", "/plaintext", "/json"):
        target.request("GET", path)
    response = target.request("GET", "/metrics", headers={"Accept": "text/plain"})
    assert response.status_code == 200, response.text[:300]
    assert media_type(response) == "text/plain", response.headers.get("Content-Type")
    samples = parse_metrics(api.check(response, "get", "/metrics"))
    names = {name for name, _, _ in samples}

    for required in ("http_server_requests_seconds_count", "jvm_memory_used_bytes",
                     "perflab_db_pool_in_use", "perflab_db_pool_waiting"):
        assert required in names, f"/metrics lacks {required}"
    for prefix in ("jvm_gc_", "jvm_threads_"):
        assert any(name.startswith(prefix) for name in names), f"/metrics has no {prefix}* metric"

    requests_by_route = {
        (labels.get("uri"), labels.get("status")): value
        for name, labels, value in samples if name == "http_server_requests_seconds_count"
    }
    for route, status in (("/greeting/{name}", "200"), ("/zipcodes/{zip}", "200"),
                          ("/zipcodes/{zip}", "404"), ("/greeting/{name}", "400"), ("/plaintext", "200"),
                          ("/json", "200")):
        assert requests_by_route.get((route, status), 0) >= 1, (
            f"no http_server_requests_seconds_count{{uri=\"{route}\",status=\"{status}\"}}; "
            f"uris: {sorted({str(k[0]) for k in requests_by_route})}"
        )
    raw_uris = sorted(str(uri) for uri, _ in requests_by_route if uri and ("metricsprobe" in uri or "10001" in uri))
    assert not raw_uris, f"uri labels must be route templates, found raw paths: {raw_uris}"

    for name in ("perflab_db_pool_in_use", "perflab_db_pool_waiting", "jvm_memory_used_bytes",
                 "http_server_requests_seconds_count"):
        tagged = [labels.get("application") for n, labels, _ in samples if n == name]
        expected = target.application
        assert all(tagged) and (expected is None or set(tagged) == {expected}), (
            f"{name}: application tags {sorted(set(map(str, tagged)))}, expected {expected or 'a non-empty tag'}"
        )
    pool = {n: value for n, _, value in samples if n.startswith("perflab_db_pool_")}
    limit = target.pool_size if target.pool_size is not None else float("inf")
    assert 0 <= pool["perflab_db_pool_in_use"] <= limit, pool
    assert pool["perflab_db_pool_waiting"] >= 0, pool


def scrape(target, api) -> list[tuple[str, dict[str, str], float]]:
    response = target.request("GET", "/metrics", headers={"Accept": "text/plain"})
    return parse_metrics(api.check(response, "get", "/metrics"))


def server_buckets(api) -> list[float]:
    """The contract's one bucket list of http_server_requests_seconds (openapi.yaml, which says why)."""
    return sorted(float(le) for le in api.operation("get", "/metrics")["x-http-server-requests-le-seconds"])


def histogram(samples, uri: str, method: str = "GET", status: str = "200") -> dict[str, float]:
    """One route's http_server_requests_seconds, summed over the labels a framework adds (outcome,
    exception, error): {"count", "sum", le (as a float's repr) -> cumulative count}."""
    found: dict[str, float] = {}
    for name, labels, value in samples:
        if (labels.get("uri"), labels.get("method"), labels.get("status")) != (uri, method, status):
            continue
        key = {"http_server_requests_seconds_count": "count", "http_server_requests_seconds_sum": "sum"}.get(name)
        if name == "http_server_requests_seconds_bucket":
            key = repr(float(labels["le"]))
        if key is not None:
            found[key] = found.get(key, 0.0) + value
    return found


# The uri values besides the contract's route templates (openapi.yaml's paths) that the frameworks emit
# (apps/contract/README.md, "Metrics"): NOT_FOUND for a 404 no route matched, UNKNOWN for Spring's 405 of a
# method no route serves, and the Spring actuator's health route (MVC /health/**, WebFlux /health/{*path}).
FRAMEWORK_URIS = {"NOT_FOUND", "UNKNOWN", "/health/**", "/health/{*path}"}


def test_server_latency_histogram(target, api):
    """http_server_requests_seconds is a histogram with the contract's buckets on every series, counts
    each request once, in seconds, under its route template (issue 12: server p50/p99 in Prometheus)."""
    buckets = server_buckets(api)
    before = histogram(scrape(target, api), "/hello/{latency}")
    delays_ms = (1, 2, 60)  # three paths of one route; 60 ms is past the 50 ms bound, 1 and 2 ms are not
    for delay in delays_ms:
        assert target.request("GET", f"/hello/{delay}").status_code == 200
    # A framework records a request when its exchange ends, which can be just after the client has the
    # answer: wait for the count to arrive, then it must be exactly the requests made.
    deadline = time.monotonic() + 5
    while True:
        samples = scrape(target, api)
        after = histogram(samples, "/hello/{latency}")
        if after.get("count", 0) - before.get("count", 0) >= len(delays_ms) or time.monotonic() > deadline:
            break
        time.sleep(0.1)

    series: dict[tuple, list[float]] = {}
    for name, labels, _ in samples:
        if name == "http_server_requests_seconds_bucket":
            rest = tuple(sorted((k, v) for k, v in labels.items() if k != "le"))
            series.setdefault(rest, []).append(float(labels["le"]))
    assert series, "/metrics has no http_server_requests_seconds_bucket: the server timer is not a histogram"
    for labels, bounds in series.items():
        assert sorted(bounds) == [*buckets, math.inf], (
            f"http_server_requests_seconds_bucket{dict(labels)}: le {sorted(bounds)}, the contract's {buckets} and +Inf"
        )

    moved = {key: after.get(key, 0.0) - before.get(key, 0.0) for key in after}
    assert moved.get("count") == len(delays_ms), (
        f"http_server_requests_seconds_count{{uri=\"/hello/{{latency}}\"}} moved by {moved.get('count')} "
        f"for {len(delays_ms)} requests"
    )
    assert moved[repr(math.inf)] == len(delays_ms), moved
    assert moved[repr(10.0)] == len(delays_ms), f"a request of at most 60 ms counted above 10 s: {moved}"
    assert moved[repr(0.05)] <= len(delays_ms) - 1, f"the 60 ms request counted within 50 ms: {moved}"
    assert sum(delays_ms) / 1000 <= moved["sum"] < 10, f"_sum moved by {moved['sum']} s for {delays_ms} ms of delays"

    # Every uri so far (the suite's bad input included) is a route's template or a framework's fixed name.
    uris = {labels.get("uri") for name, labels, _ in samples if name.startswith("http_server_requests_seconds")}
    raw = sorted(str(uri) for uri in uris - set(api.spec["paths"]) - FRAMEWORK_URIS)
    assert not raw, f"uri labels must be route templates (/hello/{{latency}}, not /hello/60), found: {raw}"


# What each app exports of its request-handling capacity (docs/ARCHITECTURE.md), by target (app+variant):
# the pool tag of each family of gauges it has; it exports no gauge of the other families.
REQUEST_THREADS = ("perflab_request_threads_busy", "perflab_request_threads_max", "perflab_request_queue")
EVENT_LOOPS = ("perflab_event_loop_pending_tasks", "perflab_event_loops")
VIRTUAL_CARRIERS = ("perflab_virtual_thread_carriers_busy", "perflab_virtual_thread_carriers_max",
                    "perflab_virtual_thread_carriers", "perflab_virtual_thread_queue")
FAMILIES = {"request threads": REQUEST_THREADS, "event loops": EVENT_LOOPS, "virtual-thread carriers": VIRTUAL_CARRIERS}
CAPACITY_POOLS = {
    "spring-mvc": {"request threads": "tomcat"},
    "spring-mvc+virtual": {"virtual-thread carriers": "virtual"},  # on JDK 24+, which has the scheduler's MXBean
    "spring-webflux": {"event loops": "netty"},
    "quarkus": {"request threads": "quarkus-worker", "event loops": "vertx"},
    "quarkus+worker": {"request threads": "quarkus-worker", "event loops": "vertx"},
}
# The first JDK with jdk.management.VirtualThreadSchedulerMXBean.
VIRTUAL_THREAD_SCHEDULER_MXBEAN_JDK = 24


def jdk_feature(samples) -> int | None:
    """The app's JDK feature release from Micrometer's jvm_info{version="25.0.3+9-LTS"} (Quarkus: jvm_info_total)."""
    for name, labels, _ in samples:
        if name in ("jvm_info", "jvm_info_total") and re.match(r"\d+", labels.get("version", "")):
            return int(re.match(r"\d+", labels["version"])[0])
    return None


def test_request_capacity_gauges_under_slow_requests(target, api):
    """Each app's request-handling capacity in one naming scheme (issue 15), read while six slow requests
    (/hello/1500) are in progress: the gauges of the app's own pools, each tagged with its pool, and no
    other; their values as each framework serves a delay (a Tomcat thread sleeps in it; WebFlux and Quarkus
    wait on a timer, holding no thread; a virtual thread unmounts from its carrier)."""
    expected = CAPACITY_POOLS.get(target.name if target.process is not None else target.application)
    if expected is None:
        pytest.skip("the capacity gauges are known by app and variant: run with --app, or --app-name for a default variant")
    in_flight = 6
    with ThreadPoolExecutor(in_flight) as senders:
        slow = [senders.submit(target.request, "GET", "/hello/1500") for _ in range(in_flight)]
        time.sleep(0.7)  # every slow request accepted and waiting in the app
        samples = scrape(target, api)
        answered = [future.result() for future in slow]
    assert all(answer.status_code == 200 for answer in answered), [a.status_code for a in answered]
    if "virtual-thread carriers" in expected and (jdk_feature(samples) or 0) < VIRTUAL_THREAD_SCHEDULER_MXBEAN_JDK:
        expected = {family: pool for family, pool in expected.items() if family != "virtual-thread carriers"}
    capacity_names = {name for names in FAMILIES.values() for name in names}
    gauges = {name: (labels, value) for name, labels, value in samples if name in capacity_names}
    for family, names in FAMILIES.items():
        if family not in expected:
            extra = sorted(set(names) & set(gauges))
            assert not extra, f"{target.name} has no {family}, yet exports {extra}"
            continue
        assert set(names) <= set(gauges), f"/metrics lacks {sorted(set(names) - set(gauges))}"
        for name in names:
            labels = gauges[name][0]
            assert labels.get("pool") == expected[family] and labels.get("application") == target.application, (
                name, labels)
    value = {name: found for name, (_, found) in gauges.items()}
    cpus = next((found for name, _, found in samples if name == "system_cpu_count"), None)
    assert cpus is not None and cpus >= 1, "/metrics lacks system_cpu_count (the JVM's available processors)"

    pool = expected.get("request threads")
    busy, size, queue = (value.get(name) for name in REQUEST_THREADS)
    if pool == "tomcat":
        assert size == 200, f"perflab_request_threads_max {size}, Tomcat's pool is PERFLAB_MAX_THREADS=200"
        # The slow requests and the scrape's own, each on a thread of the pool; none waiting for one.
        assert in_flight + 1 <= busy <= size, f"perflab_request_threads_busy {busy} with {in_flight + 1} requests in progress"
    if pool == "quarkus-worker":
        # Quarkus' default quarkus.thread-pool.max-threads (the app sets none): 8 per CPU, at least 200.
        assert size == max(8 * cpus, 200), f"perflab_request_threads_max {size} with {cpus:g} CPUs"
        # The scrape runs on a worker (Quarkus' /metrics is a blocking route); a delay on Mutiny's timer holds
        # none. -1 is JBoss Threads' "not counted" (its statistics off).
        assert 1 <= busy < in_flight, f"perflab_request_threads_busy {busy} with {in_flight} delays in progress"
    if pool is not None:
        assert queue == 0, f"perflab_request_queue {queue} (-1: not counted)"

    pool = expected.get("event loops")
    pending, loops = (value.get(name) for name in EVENT_LOOPS)
    if pool == "vertx":
        # Quarkus' default quarkus.vertx.event-loops-pool-size (the app sets none): one per CPU, at least 2
        # (fewer only on a heap under 10 MiB per loop).
        assert loops == max(cpus, 2), f"perflab_event_loops {loops}: Quarkus' default is 1 per CPU, at least 2"
    if pool == "netty":
        assert loops == max(cpus, 4), f"perflab_event_loops {loops}: Reactor Netty's default is 1 per CPU, at least 4"
    if pool is not None:
        assert pending >= 0 and pending == int(pending), f"perflab_event_loop_pending_tasks {pending}"

    if "virtual-thread carriers" in expected:
        busy, size, carriers, queue = (value.get(name) for name in VIRTUAL_CARRIERS)
        assert size == cpus, f"perflab_virtual_thread_carriers_max {size}: the JDK's default is one per CPU ({cpus:g})"
        # The sleeping requests' virtual threads have unmounted; the scrape's own runs on a carrier.
        assert 1 <= busy <= carriers, f"perflab_virtual_thread_carriers_busy {busy} of {carriers} carriers"
        assert queue >= 0, f"perflab_virtual_thread_queue {queue}"


def test_db_sessions_use_tls(target):
    """The app's DB user must use TLS wherever it may log in, the app has sessions, and so they are TLS; a
    plaintext login with its password is refused. MariaDB: REQUIRE SSL on every host of the user.
    PostgreSQL: pg_hba.conf lets it in over hostssl only, and pg_stat_ssl shows each of its sessions on TLS."""
    assert target.request("GET", "/health/ready").status_code == 200
    if target.engine == "postgresql":
        sessions = target.query("SELECT a.pid, s.ssl FROM pg_stat_activity a JOIN pg_stat_ssl s USING (pid) "
                                "WHERE a.usename = %s", (target.app_db_user,))
        assert sessions, "the app holds no DB session"
        assert all(ssl for _, ssl in sessions), f"sessions (pid, ssl) of {target.app_db_user}: {sessions}"
        if target.db is not None:  # the superuser reads the rules; a monitoring user may not
            rules = target.query("SELECT type, database, user_name, auth_method FROM pg_hba_file_rules "
                                 "WHERE type <> 'local' AND auth_method <> 'reject' "
                                 "AND (%s = ANY(user_name) OR 'all' = ANY(user_name))", (target.app_db_user,))
            assert rules and all(rule[0] == "hostssl" and rule[3] == "scram-sha-256" for rule in rules), rules
    else:
        hosts = [host for (host,) in target.query("SELECT Host FROM mysql.user WHERE User = %s", (target.app_db_user,))]
        assert hosts, f"no DB user {target.app_db_user!r}"
        for host in hosts:
            grants = " ".join(row[0] for row in target.query("SHOW GRANTS FOR %s@%s", (target.app_db_user, host)))
            assert re.search(r"REQUIRE (SSL|X509|ISSUER|SUBJECT|CIPHER)", grants), (
                f"{target.app_db_user}@{host} does not require TLS: {grants}"
            )
        sessions = target.query("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE USER = %s",
                                (target.app_db_user,))
        assert sessions[0][0] >= 1, "the app holds no DB session"
    if target.db is not None:
        target.db.plaintext_login_refused()


def test_keep_alive_requests_answer_promptly(target):
    """Load generators reuse connections: 250 requests in a row on one keep-alive connection each
    get their answer within 10 s (they take milliseconds; a stall here is a stuck connection)."""
    paths = ("/greeting/keepalive", "/zipcodes/10002", "/hello/0", "/health/live", "/metrics", "/plaintext", "/json")
    stalls = []
    with requests.Session() as http:
        for number in range(250):
            path = paths[number % len(paths)]
            started = time.monotonic()
            try:
                response = http.get(target.url(path), timeout=10)
                assert response.status_code == 200, f"{path}: {response.status_code}"
            except requests.Timeout:
                stalls.append(f"#{number} {path}: no answer in {time.monotonic() - started:.0f} s")
    assert not stalls, f"{len(stalls)} of 250 keep-alive requests stalled: {stalls[:5]}"


def test_a_keep_alive_connection_is_never_closed_by_the_app(target):
    """Every app keeps a connection for any number of requests, the same connection semantics for every
    framework: Tomcat closed one after 100 requests by default, so at 2,000 req/s the load generator opened
    20 connections a second to the Spring MVC app alone, each an accept and a new socket on the app's CPU."""
    closed = []
    with requests.Session() as http:
        for number in range(250):
            response = http.get(target.url("/plaintext"), timeout=10)
            assert response.status_code == 200, f"#{number}: {response.status_code}"
            if response.headers.get("Connection", "").lower() == "close":
                closed.append(number + 1)
    assert not closed, f"the app closed its keep-alive connection after requests {closed[:5]} of 250"
