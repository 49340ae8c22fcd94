"""Observations from Prometheus: the contract's statements for a mix, write shares by third, the
audit's new branches (DB starved on shared CPUs), and a run with no Prometheus that still yields
observations saying why."""

import dataclasses
import json
import re
import socket
import threading
from pathlib import Path

import pytest

from perflab import audit, observe, rundir, scenario, sent, tiers
from perflab.audit import THRESHOLDS, Status
from perflab.model import from_jsonable
from perflab.prometheus import Prometheus, PrometheusError, PrometheusUnreachable, Sample, Series
from perflab.observations import DbSessions, Observations, Saturation, StatementsPerRequest, TierCpu

from .test_audit import STEADY, rule_result

SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios"


def test_expected_statements_follow_the_mix_served() -> None:
    zipcodes = {("GET", "/zipcodes/{zip}", "200"): 300.0, ("POST", "/zipcodes", "201"): 100.0}
    expected, why = observe.expected_statements(zipcodes)
    assert why == ""
    assert expected == StatementsPerRequest(select=1.0, insert=0.25, update=0.0, delete=0.0)
    books = {("GET", "/books", "200"): 1.0, ("POST", "/books", "201"): 1.0, ("POST", "/orders", "201"): 1.0}
    expected, _ = observe.expected_statements(books)
    assert expected is not None and (expected.select, expected.insert) == (1.0, 2 / 3)


def test_a_few_requests_without_an_answer_leave_the_expectation_to_the_answered_ones() -> None:
    """wrk2 closes its connections with requests in flight when it stops; Quarkus counts those
    "RESET". A few of them (a CI run: some among 6,000) do not make the expectation unknowable."""
    served = {("GET", "/zipcodes/{zip}", "200"): 4500.0, ("POST", "/zipcodes", "201"): 1500.0,
              ("POST", "/zipcodes", "RESET"): 3.0}
    expected, why = observe.expected_statements(served)
    assert why == "" and expected == StatementsPerRequest(select=1.0, insert=0.25, update=0.0, delete=0.0)
    served[("POST", "/zipcodes", "RESET")] = 90.0  # 1.5%: what they ran would shift the count
    expected, why = observe.expected_statements(served)
    assert expected is None and why == ("90 of 6090 requests ended without an answer (e.g. 90 POST /zipcodes RESET), "
                                        "more than 1%: what they ran cannot be told")


def test_techempowers_plaintext_and_json_cost_no_statement() -> None:
    """Scenario plaintext-json: the contract's 0 statements per request, and an app that issues one
    (a session check, a stray query) is not doing the same work."""
    expected, why = observe.expected_statements({("GET", "/plaintext", "200"): 500.0, ("GET", "/json", "200"): 500.0})
    assert why == ""
    assert expected == StatementsPerRequest(select=0.0, insert=0.0, update=0.0, delete=0.0)
    quiet = rule_result(audit.same_db_work, statements_per_request=StatementsPerRequest(0.01, 0.0, 0.0, 0.0),
                        expected_statements_per_request=expected, db_sessions=DbSessions(total=8, tls=8))
    assert quiet.status is Status.VALID and quiet.evidence.endswith("statements per request as the contract says")
    stray = rule_result(audit.same_db_work, statements_per_request=StatementsPerRequest(0.5, 0.0, 0.0, 0.0),
                        expected_statements_per_request=expected, db_sessions=DbSessions(total=8, tls=8))
    assert (stray.status, stray.evidence) == (
        Status.INVALID, "not the same work: 0.50 select statements per request where the contract says 0.00")


def test_an_existing_zip_and_a_400_cost_what_the_contract_says() -> None:
    expected, _ = observe.expected_statements(
        {("POST", "/zipcodes", "200"): 1.0, ("POST", "/zipcodes", "201"): 1.0, ("GET", "/greeting/{name}", "400"): 2.0})
    assert expected == StatementsPerRequest(select=0.5, insert=0.25, update=0.0, delete=0.0)


def test_an_ambiguous_or_unknown_route_leaves_the_expectation_unknown() -> None:
    expected, why = observe.expected_statements({("POST", "/orders", "404"): 3.0})
    assert expected is None and why == "the contract has no statement count for POST /orders answered 404"
    assert observe.expected_statements({})[0] is None


def request(name: str, method: str, path: str, status: int, statements: dict[str, float] | None,
            weight: float = 1.0) -> rundir.ScenarioRequest:
    """A request of the scenario as run, as bench-inputs.json records it (loadgen.scenario.requests)."""
    recorded: dict[str, object] = {"name": name, "weight": weight, "method": method, "path": path,
                                   "expect": {"status": status}, "headers": {}}
    if statements is not None:
        recorded["statements"] = statements
    read = from_jsonable(rundir.ScenarioRequest, recorded, "request")
    assert isinstance(read, rundir.ScenarioRequest)
    return read


# Spring PetClinic as a user's scenario file would give it: its routes are not in the contract's
# table, and the app's uri label names the owner's id {ownerId} where the file says ${id}.
PETCLINIC = (
    request("find", "GET", "/owners?lastName=${last}", 200, {"select": 2}, weight=1),
    request("show", "GET", "/owners/${id}", 200, {"select": 3}, weight=3),
    request("add", "POST", "/owners/new", 302, {"insert": 1}, weight=1),
)
PETCLINIC_SERVED = {("GET", "/owners", "200"): 200.0, ("GET", "/owners/{ownerId}", "200"): 600.0,
                    ("POST", "/owners/new", "302"): 200.0}


def test_a_scenarios_statements_are_expected_of_routes_the_contract_does_not_know() -> None:
    assert observe.expected_statements(PETCLINIC_SERVED) == (
        None, "the contract has no statement count for GET /owners answered 200")
    table = observe.statements_table(PETCLINIC)
    # Keyed as Scenario.endpoints() spells the routes: the query dropped, ${id} as {id}; the exact status.
    assert table[("GET", "/owners", "200")] == (2.0, 0.0, 0.0, 0.0)
    assert table[("GET", "/owners/{id}", "200")] == (3.0, 0.0, 0.0, 0.0)
    assert table[("POST", "/owners/new", "302")] == (0.0, 1.0, 0.0, 0.0)  # kinds left out are 0
    expected, why = observe.expected_statements(PETCLINIC_SERVED, table)
    assert why == ""
    assert expected == StatementsPerRequest(select=(400 + 1800) / 1000, insert=0.2, update=0.0, delete=0.0)
    # The route's shape decides, not its variables' names; its literal segments and status must match.
    assert observe.route_shape("/owners/{ownerId}") == observe.route_shape("/owners/{id}") == ("", "owners", "{}")
    assert observe.expected_statements({("GET", "/owners/{ownerId}/pets", "200"): 1.0}, table) == (
        None, "neither the scenario's requests nor the contract give a statement count for GET "
              "/owners/{ownerId}/pets answered 200")
    assert observe.expected_statements({("POST", "/owners/new", "200"): 1.0}, table)[0] is None
    # A 4xx the table does not give still costs no statement (the contract's rule).
    assert observe.expected_statements({("GET", "/owners/{ownerId}", "404"): 1.0}, table)[0] == (
        StatementsPerRequest(0.0, 0.0, 0.0, 0.0))


def test_a_scenarios_statements_take_precedence_over_the_contracts() -> None:
    """A scenario that says GET /zipcodes/${code} costs 2 selects (the contract: 1) and POST /zipcodes 201 a
    select, an insert and an update: its own word counts for those, the contract's for the rest (404s)."""
    table = observe.statements_table((
        request("lookup", "GET", "/zipcodes/${code}", 200, {"select": 2}, weight=3),
        request("create", "POST", "/zipcodes", 201, {"select": 1, "insert": 1, "update": 1}),
    ))
    served = {("GET", "/zipcodes/{zip}", "200"): 300.0, ("POST", "/zipcodes", "201"): 100.0}
    assert observe.expected_statements(served, table) == (
        StatementsPerRequest(select=1.75, insert=0.25, update=0.25, delete=0.0), "")
    # The contract's entries of the same method, route shape and status are the scenario's now.
    assert ("GET", "/zipcodes/{zip}", "2xx") in table and ("POST", "/zipcodes", "201") in table
    assert observe.expected_statements({("GET", "/zipcodes/{zip}", "404"): 1.0}, table)[0] == (
        StatementsPerRequest(1.0, 0.0, 0.0, 0.0))  # the contract's, which the scenario does not say
    assert observe.expected_statements({("POST", "/zipcodes", "200"): 1.0}, table)[0] == (
        StatementsPerRequest(1.0, 0.0, 0.0, 0.0))


def test_requests_without_statements_fall_back_to_the_contract() -> None:
    zipcodes = (request("lookup", "GET", "/zipcodes/${zip}", 200, None, weight=3),
                request("create", "POST", "/zipcodes", 201, {"select": 1, "insert": 1, "update": 1}))
    served = {("GET", "/zipcodes/{zip}", "200"): 300.0, ("POST", "/zipcodes", "201"): 100.0}
    assert observe.expected_statements(served, observe.statements_table(zipcodes)) == (
        StatementsPerRequest(select=1.0, insert=0.25, update=0.25, delete=0.0), "")
    # None gives statements: the contract's table itself, as for a run recorded before the requests were.
    assert observe.statements_table(request(r.name, r.method, r.path, 200, None) for r in PETCLINIC) is (
        observe.CONTRACT_STATEMENTS)
    assert observe.statements_table(()) is observe.CONTRACT_STATEMENTS
    # A user's route without statements (nor a contract entry): unknown, and it says why.
    table = observe.statements_table((*PETCLINIC[1:], request("find", "GET", "/owners", 200, None)))
    assert observe.expected_statements(PETCLINIC_SERVED, table) == (
        None, "neither the scenario's requests nor the contract give a statement count for GET /owners answered 200")


def test_requests_that_share_a_route_share_its_expectation() -> None:
    """Two requests on one route and status: the app counts them together, so the expectation is their
    statements weighted by their weights as run; where one of them says nothing, the scenario says nothing
    for the route (a request not sent, weight 0, does not count)."""
    by_id = request("by-id", "GET", "/owners/${id}", 200, {"select": 3}, weight=3)
    by_owner = request("by-owner", "GET", "/owners/${ownerId}", 200, {"select": 1, "update": 1}, weight=1)
    table = observe.statements_table((by_id, by_owner))
    assert table == {("GET", "/owners/{id}", "200"): (2.5, 0.0, 0.25, 0.0)} | dict(observe.CONTRACT_STATEMENTS)
    silent = request("silent", "GET", "/owners/${x}", 200, None)
    assert observe.statements_table((by_id, silent)) is observe.CONTRACT_STATEMENTS
    unsent = request("unsent", "GET", "/owners/${x}", 200, None, weight=0)
    assert observe.statements_table((by_id, unsent))[("GET", "/owners/{id}", "200")] == (3.0, 0.0, 0.0, 0.0)


@pytest.mark.parametrize("path", sorted(SCENARIOS.glob("*.yml")), ids=lambda path: path.stem)
def test_the_lab_scenarios_statements_are_the_contracts(path: Path) -> None:
    """The lab's own scenario files say what the contract's table says of their routes: a run of them is
    judged as before their requests were recorded."""
    recorded = from_jsonable(rundir.ScenarioInputs, scenario.as_run(scenario.load(path), path), "scenario")
    assert isinstance(recorded, rundir.ScenarioInputs) and recorded.requests
    table = observe.statements_table(recorded.requests)
    for r in recorded.requests:
        served = {(r.method, r.route, r.status): 1.0}
        if path.stem in ("queries", "updates"):
            # Their count depends on ?queries=N: the contract's table has none for the route, the scenario's stands
            # (updates' is a range, which a run's readers do not take: the route's statements are not judged).
            assert observe.expected_statements(served)[0] is None
            said = observe.expected_statements(served, table)[0]
            assert (said and said.select) == (20 if path.stem == "queries" else None), r.name
            continue
        assert observe.expected_statements(served, table) == observe.expected_statements(served), r.name


def test_write_shares_by_interval() -> None:
    moments = [
        {("GET", "/zipcodes/{zip}", "200"): 0.0, ("POST", "/zipcodes", "201"): 0.0},
        {("GET", "/zipcodes/{zip}", "200"): 50.0, ("POST", "/zipcodes", "201"): 50.0},
        {("GET", "/zipcodes/{zip}", "200"): 110.0, ("POST", "/zipcodes", "201"): 90.0},
        {("GET", "/zipcodes/{zip}", "200"): 180.0, ("POST", "/zipcodes", "201"): 120.0},
    ]
    assert observe.write_shares(moments) == (0.5, 0.4, 0.3)
    assert observe.write_shares([moments[1], moments[1]]) is None  # an interval without requests


def test_lab_routes_are_not_workload() -> None:
    assert not observe.is_workload({"uri": "/metrics"}) and not observe.is_workload({"uri": "/health/ready"})
    assert observe.is_workload({"uri": "/zipcodes/{zip}"})


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_no_prometheus_leaves_every_figure_unobserved_with_the_reason() -> None:
    dead = Prometheus(f"http://127.0.0.1:{closed_port()}", timeout_s=2)
    found = observe.observe(dead, observe.Window(1000.0, 1060.0), "quarkus", {"db": ("h-db", (0,))})
    assert found.write_share_by_third is None and found.saturation is None
    assert set(found.unobserved) >= {"write_share_by_third", "statements_per_request", "jit_compile_s",
                                     "db_disk_busy", "app_max_rss_bytes", "cpus_busy", "saturation"}
    assert all(r.startswith("no Prometheus data: Prometheus at http://127.0.0.1:") for r in found.unobserved.values())
    obs = Observations(unobserved=found.unobserved)
    mix = audit.steady_mix(STEADY, obs, THRESHOLDS)
    assert mix.status is Status.NOT_EVALUATED
    assert mix.evidence.startswith("not evaluated: no Prometheus data: Prometheus at") and "unreachable" in mix.evidence


def test_a_window_must_end_after_it_starts() -> None:
    with pytest.raises(ValueError, match="ends after it starts"):
        observe.Window(10.0, 10.0)
    assert observe.Window(0.0, 30.4).range == "30s"


def test_not_evaluated_names_the_observers_reason() -> None:
    obs = Observations(unobserved={"jit_compile_s": "the app quarkus does not export jvm_compilation_time_ms_total"})
    jit = audit.jit_quiet(STEADY, obs, THRESHOLDS)
    assert jit.evidence == "not evaluated: the app quarkus does not export jvm_compilation_time_ms_total"
    assert audit.jit_quiet(STEADY, Observations(), THRESHOLDS).evidence == "not evaluated: no Prometheus data on JIT compilation"


APP_IDLE = {"app_cpu": TierCpu(0.2, 1), "db_cpu": TierCpu(0.1, 1), "db_disk_busy": 0.02}


def test_db_starved_on_shared_cpus_with_pool_waits_is_not_comparable() -> None:
    queued = Saturation(app_pool_waiting_avg=5.0, db_threads_running_avg=7.0)
    obs = Observations(**APP_IDLE, cpus_busy={"db": 0.99}, saturation=queued)  # type: ignore[arg-type]
    result = audit.app_is_bottleneck(STEADY, obs, THRESHOLDS)
    assert result.status is Status.INVALID
    assert ("its CPUs 99% busy with every process of the machine while 7.0 statements were in progress in it "
            "and the app's requests waited for a DB connection (5.0 on average)") in result.evidence


def test_pool_waits_without_a_statement_queue_in_the_db_keep_the_rule_quiet() -> None:
    no_queue = Saturation(app_pool_waiting_avg=5.0, db_threads_running_avg=1.0)
    obs = Observations(**APP_IDLE, cpus_busy={"db": 0.99}, saturation=no_queue)  # type: ignore[arg-type]
    assert audit.app_is_bottleneck(STEADY, obs, THRESHOLDS).status is Status.VALID


def test_busy_shared_cpus_without_pool_waits_keep_the_rule_quiet() -> None:
    obs = Observations(**APP_IDLE, cpus_busy={"db": 0.99}, saturation=Saturation(app_pool_waiting_avg=0.0))  # type: ignore[arg-type]
    assert audit.app_is_bottleneck(STEADY, obs, THRESHOLDS).status is Status.VALID


class ScrapedLab:
    """Prometheus over a lab whose app and DB are scraped every INTERVAL seconds (the lab's default:
    5 s) at different offsets (app at :x4, mysqld at :x0.5 by default): an instant query answers
    each target's last sample at or before the moment. Load: rate req/s of
    GET /zipcodes/{zip} (one select each) over the given spans; the exporter's own queries:
    at_rest selects at every mysqld scrape."""

    def __init__(self, rate: float, spans: list[tuple[float, float]], at_rest: float = 0.0, interval: float = 5.0,
                 offsets: tuple[float, float] = (4.0, 0.5), app_restarts: tuple[float, ...] = (),
                 db_restarts: tuple[float, ...] = ()) -> None:
        self.rate, self.spans, self.at_rest, self.interval = rate, spans, at_rest, interval
        self.app_offset, self.db_offset = offsets
        # Moments the app's JVM (the DB) started again: its counters count from zero after them.
        self.app_restarts, self.db_restarts = app_restarts, db_restarts

    def _served(self, t: float, since: float = float("-inf")) -> float:
        return sum(self.rate * max(0.0, min(t, end) - max(start, since)) for start, end in self.spans)

    def _resets(self, expr: str, at: float) -> list[Sample]:
        span = float(re.search(r"\[(\d+)s\]", expr).group(1))  # type: ignore[union-attr]
        restarts = self.app_restarts if "http_server_requests" in expr else self.db_restarts
        return [Sample({}, float(sum(1 for r in restarts if at - span < r <= at)))]

    def _last_scrape(self, t: float, offset: float) -> float:
        return offset + self.interval * ((t - offset) // self.interval)

    def query(self, expr: str, at: float | None = None) -> list[Sample]:
        assert at is not None
        db_scrape = self._last_scrape(at, self.db_offset)
        if expr.startswith("sum(resets("):
            return self._resets(expr, at)
        if "http_server_requests_seconds_count" in expr:
            app_scrape = self._last_scrape(at, self.app_offset)
            served = self._served(app_scrape, since=max((r for r in self.app_restarts if r <= app_scrape), default=-1e9))
            return [Sample({"method": "GET", "uri": "/zipcodes/{zip}", "status": "200"}, served)]
        if "timestamp(" in expr:
            return [Sample({}, db_scrape)]
        if expr.startswith('sum({__name__=~"mysql_global_status_commands_total|pg_stat_statements_calls",job=~"mysqld|postgres",'
                           'command=~"select"})'):
            since = max((r for r in self.db_restarts if r <= db_scrape), default=-1e9)
            return [Sample({}, self._served(db_scrape, since) + self.at_rest * (db_scrape // self.interval))]
        if "mysql_global_status_commands_total" in expr:
            return [Sample({}, 0.0)]
        raise AssertionError(f"not scripted: {expr}")

    def value(self, expr: str, at: float | None = None) -> float | None:
        samples = self.query(expr, at)
        return samples[0].value if samples else None


def statements(lab: ScrapedLab, window: observe.Window) -> Observations:
    def count_sent() -> str:  # what the loadgen sent is counted only where the app counts nothing
        raise AssertionError("the loadgen's requests were counted though the app counts its own")

    observer = observe.Observer(lab, window, "quarkus", sent=count_sent)  # type: ignore[arg-type]
    observer.mix_and_statements()
    return observer.found


def test_statements_per_request_are_read_at_rest_on_both_targets() -> None:
    # The bench's shape: warm-up, bench_quiet_s (7 s) without load, the measured phase until just
    # before the window's end (its end is noted when the tool has exited), 7 s at rest again.
    lab = ScrapedLab(200.0, [(900.0, 993.0), (1000.5, 1029.8)])
    found = statements(lab, observe.Window(1000.0, 1030.0, quiet_s=7.0))
    # One select per request, exactly: the requests and the statements of the same 29.3 s.
    assert found.statements_per_request == StatementsPerRequest(select=1.0, insert=0.0, update=0.0, delete=0.0)
    assert found.expected_statements_per_request == found.statements_per_request
    # Read at the window's end instead (no quiet time), each target's last sample lags by its own
    # offset and the ratio would be off by a scrape's worth of requests (CI saw 1.11 selects per
    # request for 1.0): the "at rest" readings are not, and the figure is not given.
    found = statements(lab, observe.Window(1000.0, 1030.0))
    assert found.statements_per_request is None
    assert "cannot be told from the lab's own" in found.unobserved["statements_per_request"]


def test_the_exporters_own_statements_are_not_the_workloads() -> None:
    # 100 req/s for 10 s and 7 selects at every mysqld scrape: 0.028 selects per request more than
    # the app's if they were counted.
    lab = ScrapedLab(100.0, [(900.0, 993.0), (1000.5, 1010.5)], at_rest=7.0)
    found = statements(lab, observe.Window(1000.0, 1012.0, quiet_s=7.0))
    assert found.statements_per_request is not None
    assert found.statements_per_request.select == pytest.approx(1.0)

    # Without a second sample at rest (Prometheus had no later one) nothing is taken off.
    class WithoutLaterSample(ScrapedLab):
        def query(self, expr: str, at: float | None = None) -> list[Sample]:
            return [] if at is not None and at > 1019.0 and "timestamp(" in expr else super().query(expr, at)

    found = statements(WithoutLaterSample(100.0, [(900.0, 993.0), (1000.5, 1010.5)], at_rest=7.0),
                       observe.Window(1000.0, 1012.0, quiet_s=7.0))
    assert found.statements_per_request is not None and found.statements_per_request.select > 1.02


def test_statements_per_request_stay_right_at_a_15_s_scrape_interval() -> None:
    # lab_scrape_interval_s: 15 -> the bench's quiet time is 17 s (bench_quiet_s), bench-inputs.json
    # says 15 and the window reads at rest one scrape later (16 s), where 6 s found the same sample
    # again and left the exporter's own 7 selects a scrape in the workload's figure.
    # The DB is scraped at 1074 and 1089 after the window, the app at 1062 (offsets 9 s and 12 s).
    lab = ScrapedLab(200.0, [(900.0, 983.0), (1000.5, 1059.8)], at_rest=7.0, interval=15.0, offsets=(12.0, 9.0))
    window = observe.Window(1000.0, 1060.0, quiet_s=17.0, scrape_interval_s=15.0)
    assert (window.rest_read_s, window.settled_s, window.step) == (16.0, 35.0, "15s")
    found = statements(lab, window)
    assert found.statements_per_request is not None
    assert found.statements_per_request.select == pytest.approx(1.0)
    # The same lab read with the 5 s interval assumed: the second reading at rest is the first
    # one again, and the exporter's statements count as the workload's.
    assumed = statements(lab, observe.Window(1000.0, 1060.0, quiet_s=17.0))
    assert assumed.statements_per_request is not None and assumed.statements_per_request.select > 1.002
    with pytest.raises(ValueError, match="a scrape interval is > 0 s, not 0.0"):
        observe.Window(1000.0, 1060.0, scrape_interval_s=0.0)


class ScrapedTargets(ScrapedLab):
    """ScrapedLab's Prometheus with each target's raw scrapes (samples()): the app at its offset, mysqld at
    its own, process-exporter on the app host at :x2 and on the loadgen host at :x0.9 (not read at rest),
    every scrape up 1 except the app's from APP_DOWN_FROM on. Prometheus holds a scrape from its moment on."""

    def __init__(self, *args: object, app_down_from: float = float("inf"), **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.app_down_from = app_down_from
        self.asked: list[tuple[str, float, float]] = []

    def samples(self, selector: str, since: float, at: float) -> list[Series]:
        self.asked.append((selector, since, at))
        targets = {"app": ({"job": "app", "tier": "app"}, self.app_offset),
                   "mysqld": ({"job": "mysqld", "tier": "db"}, self.db_offset),
                   "process-app": ({"job": "process", "tier": "app"}, 2.0),
                   "process-loadgen": ({"job": "process", "tier": "loadgen"}, 0.9)}
        if selector == tiers.DB_SCRAPES:
            targets = {"mysqld": targets["mysqld"]}
        else:
            assert selector == observe.REST_TARGETS, selector
        found = []
        for name, (labels, offset) in targets.items():
            moments = [self._last_scrape(at, offset) - self.interval * i for i in range(int((at - since) // self.interval) + 2)]
            points = tuple((t, 0.0 if name == "app" and t >= self.app_down_from else 1.0) for t in sorted(moments) if t > since)
            found.append(Series(labels=labels, points=points))
        return found


class Clock:
    """A fake time.time and time.sleep: sleeping moves the clock."""

    def __init__(self, now: float) -> None:
        self.now = now

    def time(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        assert seconds > 0, "settle sleeps only forward"
        self.now += seconds


def test_the_counters_are_read_at_rest_at_each_targets_first_scrape_after_the_load() -> None:
    """Issue 22: the fixed moments after the window's end (15 s) became each target's first scrape after it. The load
    ends at 1060 (and 1 s for what is still in flight): the app is scraped again at 1064, process-exporter on
    the app host at 1062, mysqld at 1065.5 and again at 1070.5; process-exporter on the loadgen host (1065.9)
    is not read at rest. collect starts at 1061.5, after the run play's last tasks."""
    lab = ScrapedTargets(200.0, [(900.0, 994.0), (1000.5, 1059.8)], at_rest=7.0)
    window = observe.Window(1000.0, 1060.0, quiet_s=6.0)  # bench_quiet_s: the 5 s scrape and 1 s
    assert window.rest_after_s == 1.0
    clock = Clock(1061.5)
    settled = observe.settle(lab, window, clock.time, clock.sleep)  # type: ignore[arg-type]
    assert (settled.rest_at, settled.rest_later_at) == (1065.5, 1070.5)
    assert (settled.at_rest, settled.at_rest_later, settled.settled_at) == (1065.5, 1070.5, 1070.5)
    assert 1070.5 <= clock.now <= 1071.0  # half a second's polls, where the fixed moments waited until 1074
    # The statements per request read at those moments: one select each, the exporter's own taken off.
    found = statements(lab, settled)
    assert found.statements_per_request is not None
    assert found.statements_per_request.select == pytest.approx(1.0)
    # A run collected later reads the same moments, and does not wait.
    later = Clock(5000.0)
    assert observe.settle(lab, window, later.time, later.sleep) == settled  # type: ignore[arg-type]
    assert later.now == 5000.0


def test_a_target_not_scraped_after_the_load_keeps_the_fixed_moments() -> None:
    """The app's scrapes fail from 1062 (up 0: nothing read): settle waits as long as the fixed moments
    did (14 s after the end) and keeps them; so does a Prometheus that cannot be reached."""
    lab = ScrapedTargets(200.0, [(1000.5, 1059.8)], app_down_from=1062.0)
    window = observe.Window(1000.0, 1060.0, quiet_s=6.0)
    clock = Clock(1061.5)
    assert observe.settle(lab, window, clock.time, clock.sleep) == window  # type: ignore[arg-type]
    assert clock.now == 1074.0 == window.end + window.settled_s
    assert (window.at_rest, window.at_rest_later, window.settled_at) == (1066.0, 1072.0, 1074.0)
    clock = Clock(1061.5)
    dead = Prometheus(f"http://127.0.0.1:{closed_port()}", timeout_s=2)
    assert observe.settle(dead, window, clock.time, clock.sleep) == window
    assert clock.now == 1074.0
    with pytest.raises(ValueError, match="at rest after its end"):
        observe.Window(1000.0, 1060.0, rest_at=1059.0, rest_later_at=1065.0)
    with pytest.raises(ValueError, match="both known or both not"):
        observe.Window(1000.0, 1060.0, rest_at=1062.0)


def test_counters_that_went_back_in_the_window_give_no_statements_per_request() -> None:
    """Issue 24: the JVM killed mid-window and started again by systemd; its request counters began again
    from zero and same_db_work read 2.78 selects per request. 300 req/s, the JVM down from 1024 to 1031
    (what was sent then failed), the app's counters from zero after 1031."""
    spans = [(900.0, 993.0), (1000.5, 1024.0), (1031.0, 1059.8)]
    window = observe.Window(1000.0, 1060.0, quiet_s=7.0)
    # Without the reset seen, the differences would give a false figure: the DB's selects over the app's
    # requests since its restart, against its requests before the window.
    blind = ScrapedLab(300.0, spans, app_restarts=(1031.0,))
    requests = blind.value("http_server_requests_seconds_count", 1067.0) - blind.value(  # type: ignore[operator]
        "http_server_requests_seconds_count", 1000.0)
    assert requests < 0  # 8,640 since the restart against 27,900 before the window
    found = statements(ScrapedLab(300.0, spans, app_restarts=(1031.0,)), window)
    assert found.statements_per_request is None and found.write_share_by_third is None
    reason = ("the app quarkus's counters went back 1 time(s) in the window (http_server_requests_seconds_count: its "
              "JVM started again, counting from zero): what they counted before cannot be added to what they counted "
              "after")
    assert {name: found.unobserved[name] for name in
            ("statements_per_request", "expected_statements_per_request", "write_share_by_third")} == dict.fromkeys(
        ("statements_per_request", "expected_statements_per_request", "write_share_by_third"), reason)
    rule = audit.same_db_work(STEADY, Observations(db_sessions=DbSessions(16, 16), unobserved=found.unobserved),
                              THRESHOLDS)
    assert (rule.status, rule.evidence) == (
        Status.NOT_EVALUATED, f"not evaluated: statements per request not evaluated: {reason} (seen: all 16 DB sessions "
                              "used TLS)")
    # The DB started again instead (its Com_* from zero, the app's requests all counted).
    db_back = statements(ScrapedLab(300.0, [(900.0, 993.0), (1000.5, 1059.8)], db_restarts=(1030.0,)), window)
    assert db_back.statements_per_request is None and db_back.expected_statements_per_request is not None
    assert db_back.unobserved["statements_per_request"] == (
        "the DB's statement counters went back 1 time(s) in the window (the DB started again, counting from "
        "zero): the window's statements are not known")
    # A restart in the warm-up, before the window's last sample before it, is not the window's.
    warm = statements(ScrapedLab(300.0, spans[:1] + [(1000.5, 1059.8)], app_restarts=(950.0,)), window)
    assert warm.statements_per_request == StatementsPerRequest(select=1.0, insert=0.0, update=0.0, delete=0.0)


def test_too_few_requests_to_tell_the_workloads_statements_from_the_exporters() -> None:
    # 500 requests against 7 selects per scrape, which a reading may or may not include: 0.028
    # per request of uncertainty, more than half of same_db_work's tolerance.
    lab = ScrapedLab(50.0, [(900.0, 993.0), (1000.5, 1010.5)], at_rest=7.0)
    found = statements(lab, observe.Window(1000.0, 1012.0, quiet_s=7.0))
    assert found.statements_per_request is None and found.expected_statements_per_request is not None
    assert found.unobserved["statements_per_request"].startswith(
        "the workload's statements cannot be told from the lab's own: the DB ran 7 between two readings at rest, "
        "which makes the figure uncertain by 0.028 per request over 500 requests"), found.unobserved
    rule = audit.same_db_work(STEADY, Observations(statements_per_request=None,
                                                   expected_statements_per_request=found.expected_statements_per_request,
                                                   unobserved=found.unobserved), THRESHOLDS)
    assert rule.status is Status.NOT_EVALUATED and "cannot be told from the lab's own" in rule.evidence, rule


class EmptyLab:
    """A Prometheus that answers every query with nothing, but `up` of the app job when SCRAPED."""

    def __init__(self, scraped: bool) -> None:
        self.scraped = scraped
        self.asked: list[str] = []

    def query(self, expr: str, at: float | None = None) -> list[Sample]:
        self.asked.append(expr)
        return [Sample({}, 1.0)] if self.scraped and expr == 'up{job="app",application="tfb-quarkus"}' else []

    def value(self, expr: str, at: float | None = None) -> float | None:
        samples = self.query(expr, at)
        return samples[0].value if samples else None


def test_an_app_that_is_not_scraped_leaves_its_own_metrics_unobserved_with_that_reason() -> None:
    """An app whose manifest declares no metrics endpoint: the figures only its metrics give are
    unobserved because it is not scraped, and their rules are not evaluated, never failed."""
    lab = EmptyLab(scraped=False)
    found = observe.observe(lab, observe.Window(1000.0, 1060.0), "tfb-quarkus", {})  # type: ignore[arg-type]
    reason = ("the app's own metrics are unobserved: Prometheus' app job has no target for tfb-quarkus (an app whose "
              "manifest declares no metrics endpoint is not scraped)")
    assert {name: found.unobserved[name] for name in observe.APP_METRIC_FIGURES} == dict.fromkeys(observe.APP_METRIC_FIGURES, reason)
    assert not any("http_server_requests_seconds_count" in expr for expr in lab.asked)
    rule = audit.same_db_work(STEADY, Observations(unobserved=found.unobserved), THRESHOLDS)
    assert rule.status is Status.NOT_EVALUATED and reason in rule.evidence
    scraped = observe.observe(EmptyLab(scraped=True), observe.Window(1000.0, 1060.0), "tfb-quarkus", {})  # type: ignore[arg-type]
    assert scraped.unobserved["write_share_by_third"] == "the app tfb-quarkus exported no http_server_requests_seconds_count in the window"



class UncountedLab(ScrapedLab):
    """ScrapedLab with an app that exports no request counters (PetClinic's manifest declares no metrics); the
    figures of other series than the DB's statements have no data."""

    def query(self, expr: str, at: float | None = None) -> list[Sample]:
        if "http_server_requests_seconds_count" in expr or not ("timestamp(" in expr or "commands_total" in expr):
            return []
        return super().query(expr, at)


def test_an_app_that_counts_no_requests_has_its_mix_and_statements_counted_by_the_loadgen() -> None:
    # 200 selects a second from 1000.5 to 1029.8, each of the GET /zipcodes/{zip} wrk2 sent in those seconds.
    lab = UncountedLab(200.0, [(900.0, 993.0), (1000.5, 1029.8)])
    window = observe.Window(1000.0, 1030.0, quiet_s=7.0)
    zipcode = rundir.ScenarioRequest(name="zipcode", weight=1, method="GET", path="/zipcodes/${zip}",
                                     expect=rundir.ScenarioExpect(status=200), statements={"select": 1})
    rows = [[1000, [100]], *([s, [200]] for s in range(1001, 1029)), [1029, [160]]]
    output = "perflab wrk2 requests by second: " + json.dumps({"names": ["zipcode"], "seconds": rows})
    counted = sent.from_wrk2([output], [zipcode], window.start, window.seconds)
    found = observe.observe(lab, window, "petclinic", {}, sent=lambda: counted)  # type: ignore[arg-type]
    assert found.statements_per_request is not None and found.statements_per_request.select == pytest.approx(1.0)
    assert found.expected_statements_per_request == StatementsPerRequest(select=1.0, insert=0.0, update=0.0, delete=0.0)
    assert found.write_share_by_third == (0.0, 0.0, 0.0) and found.requests_counted_by == counted.counted_by
    for rule in (audit.steady_mix, audit.same_db_work):
        judged = rule(STEADY, dataclasses.replace(found, db_sessions=DbSessions(total=4, tls=4)), THRESHOLDS)
        assert judged.status is Status.VALID, judged
        assert "requests counted by the loadgen: wrk2 (each thread's requests by type and second" in judged.evidence
    # Where the loadgen did not count them either, both reasons are given.
    found = observe.observe(lab, window, "petclinic", {}, sent=lambda: "the run had 3 errors")  # type: ignore[arg-type]
    assert found.unobserved["write_share_by_third"].endswith(
        "is not scraped); nor did the loadgen count them: the run had 3 errors"), found.unobserved
    assert found.requests_counted_by is None


# --- issue 14: the app's restarts, the DB's outages, Prometheus gone mid-collection ----------

WINDOW = observe.Window(1000.0, 1060.0, quiet_s=7.0)  # settled 15 s after its end: read at 1075


class LifeLab:
    """A Prometheus that answers the restart and outage queries: the app's JVM started at
    JVM_STARTS (each later one replacing the one before), mysql_up 0 from DB_DOWN over the given
    scrapes (every 5 s from 1000.5). Any other query: nothing."""

    def __init__(self, jvm_starts: list[float], db_down: list[float] | None = None, db_scraped: bool = True,
                 held: int | None = None) -> None:
        self.jvm_starts, self.db_down, self.db_scraped = jvm_starts, db_down or [], db_scraped
        self.held = held  # samples Prometheus holds of each series in the window (None: does not say)
        self.asked: list[tuple[str, float | None]] = []

    def query(self, expr: str, at: float | None = None) -> list[Sample]:
        self.asked.append((expr, at))
        assert at is not None
        if expr.startswith("max(count_over_time("):
            return [] if self.held is None else [Sample({}, float(self.held))]
        if expr.startswith("max(max_over_time(((namedprocess_namegroup_oldest_start_time_seconds"):
            # The filter: a start after the window's end is not this window's.
            seen = [start for start in self.jvm_starts if start <= WINDOW.end]
            return [Sample({}, max(seen))] if seen else []
        scrapes = [1000.5 + 5 * i for i in range(12)] if self.db_scraped else []
        up = [0.0 if t in self.db_down else 1.0 for t in scrapes]
        if expr.startswith("min(min_over_time({__name__=~\"mysql_up|pg_up\""):
            return [Sample({}, min(up))] if up else []
        if expr.startswith("sum(count_over_time({__name__=~\"mysql_up|pg_up\""):
            return [Sample({}, len(up) - sum(up))]
        if expr.startswith("min(min_over_time((timestamp({__name__=~\"mysql_up|pg_up\""):
            return [Sample({}, min(self.db_down))] if self.db_down else []
        return []

    def value(self, expr: str, at: float | None = None) -> float | None:
        samples = self.query(expr, at)
        return samples[0].value if samples else None


def test_an_app_restart_in_the_window_is_read_from_process_exporter() -> None:
    restarted = LifeLab([400.0, 1012.0])
    found = observe.observe(restarted, WINDOW, "quarkus", {})  # type: ignore[arg-type]
    assert found.app_jvm_started_at == 1012.0 and "app_jvm_started_at" not in found.unobserved
    query, at = next((q, at) for q, at in restarted.asked if "oldest_start_time" in q)
    assert query == ('max(max_over_time(((namedprocess_namegroup_oldest_start_time_seconds{job="process",tier="app",'
                     'groupname="app-java"} > 0) <= 1060.000)[75s:5s]))')
    assert at == WINDOW.end + WINDOW.settled_s == 1075.0
    # A JVM started after the window (the quiet time's) does not hide the restart in it.
    assert observe.observe(LifeLab([400.0, 1012.0, 1065.0]), WINDOW, "quarkus", {}).app_jvm_started_at == 1012.0  # type: ignore[arg-type]
    assert observe.observe(LifeLab([400.0]), WINDOW, "quarkus", {}).app_jvm_started_at == 400.0  # type: ignore[arg-type]
    gone = observe.observe(LifeLab([]), WINDOW, "quarkus", {})  # type: ignore[arg-type]
    assert gone.app_jvm_started_at is None
    assert gone.unobserved["app_jvm_started_at"] == (
        "process-exporter reported no running JVM of the app (group app-java on the app host) in the window")


def test_a_db_outage_is_read_from_mysql_up() -> None:
    down = LifeLab([400.0], db_down=[1010.5, 1015.5, 1020.5])
    found = observe.observe(down, WINDOW, "quarkus", {})  # type: ignore[arg-type]
    assert (found.db_down_s, found.db_down_from) == (15.0, 1010.5)
    either = '{__name__=~"mysql_up|pg_up",job=~"mysqld|postgres"}'
    assert [q for q, _ in down.asked if "mysql_up" in q] == [
        f'min(min_over_time({either}[60s]))',
        f'sum(count_over_time({either}[60s]) - sum_over_time({either}[60s]))',
        f'min(min_over_time((timestamp({either}) and {either} == 0)[60s:5s]))',
    ]
    up = observe.observe(LifeLab([400.0]), WINDOW, "quarkus", {})  # type: ignore[arg-type]
    assert (up.db_down_s, up.db_down_from) == (0.0, None) and "db_down_s" not in up.unobserved
    unknown = observe.observe(LifeLab([400.0], db_scraped=False), WINDOW, "quarkus", {})  # type: ignore[arg-type]
    assert unknown.db_down_s is None
    assert unknown.unobserved["db_down_s"] == (
        "the DB's exporter (mysqld_exporter or postgres_exporter) reported no mysql_up or pg_up in the window")
    obs = Observations(db_down_s=found.db_down_s, db_down_from=found.db_down_from)
    assert audit.db_up(STEADY, obs, THRESHOLDS).evidence == (
        "the DB was down for ~15 s from 00:16:50Z (mysqld_exporter's mysql_up 0)")


class GoneMidway(ScrapedLab):
    """The scraped lab, whose Prometheus stops answering after its first ANSWERS queries."""

    def __init__(self, answers: int) -> None:
        super().__init__(200.0, [(900.0, 993.0), (1000.5, 1059.8)])
        self.answers, self.asked = answers, 0

    def query(self, expr: str, at: float | None = None) -> list[Sample]:
        self.asked += 1
        if self.asked > self.answers:
            raise PrometheusUnreachable("Prometheus at http://127.0.0.1:9090 is unreachable ([Errno 111] Connection "
                                        "refused): is the lab up (make lab-status) and the URL right?")
        if expr.startswith("up{"):
            return [Sample({}, 1.0)]
        return super().query(expr, at) if "http_server_requests" in expr or "mysql_global_status" in expr else []


def test_prometheus_gone_in_the_middle_leaves_every_figure_not_read_unobserved() -> None:
    """Prometheus answers the app's requests, then goes away: nothing escapes, no figure reads as
    zero (idle), each one not read says why, and no query is asked after the first refused."""
    lab = GoneMidway(answers=8)
    found = observe.observe(lab, observe.Window(1000.0, 1060.0, quiet_s=7.0), "quarkus", {"db": ("h-db", (0,))})  # type: ignore[arg-type]
    assert found.write_share_by_third is not None and lab.asked == 9
    for name in ("statements_per_request", "jit_compile_s", "app_max_rss_bytes", "cpus_busy", "saturation",
                 "app_jvm_started_at", "db_down_s", "db_down_from"):
        assert getattr(found, name) is None, name
        assert found.unobserved[name].startswith("no Prometheus data: Prometheus at http://127.0.0.1:9090 is "
                                                 "unreachable"), name
    assert "write_share_by_third" not in found.unobserved


def test_the_statements_to_expect_reach_the_observer() -> None:
    """observe() judges the app's requests against the table it is given (collect: the scenario's over the
    contract's): 2 selects per GET /zipcodes/{zip} where the scenario says so, the contract's 1 by default."""
    window = observe.Window(1000.0, 1060.0, quiet_s=7.0)
    table = observe.statements_table((request("lookup", "GET", "/zipcodes/${code}", 200, {"select": 2}),))
    found = observe.observe(GoneMidway(answers=8), window, "quarkus", {}, statements=table)  # type: ignore[arg-type]
    assert found.expected_statements_per_request == StatementsPerRequest(2.0, 0.0, 0.0, 0.0)
    found = observe.observe(GoneMidway(answers=8), window, "quarkus", {})  # type: ignore[arg-type]
    assert found.expected_statements_per_request == StatementsPerRequest(1.0, 0.0, 0.0, 0.0)


def test_a_query_prometheus_refuses_costs_its_own_figure_only() -> None:
    class Refusing(LifeLab):
        def query(self, expr: str, at: float | None = None) -> list[Sample]:
            if "oldest_start_time" in expr:
                raise PrometheusError("Prometheus at http://127.0.0.1:9090 refused it: HTTP 400 bad_data")
            return super().query(expr, at)

    found = observe.observe(Refusing([400.0]), WINDOW, "quarkus", {})  # type: ignore[arg-type]
    assert found.unobserved["app_jvm_started_at"] == (
        "no Prometheus data: Prometheus at http://127.0.0.1:9090 refused it: HTTP 400 bad_data")
    assert found.db_down_s == 0.0  # asked after it, and answered


def test_saturation_figures_left_none_say_why() -> None:
    found = observe.observe(EmptyLab(scraped=False), WINDOW, "tfb-quarkus", {})  # type: ignore[arg-type]
    assert found.saturation == Saturation()
    assert found.unobserved["saturation.app_pool_waiting_avg"] == found.unobserved["write_share_by_third"]
    assert found.unobserved["saturation.db_threads_running_avg"] == (
        "the DB's exporter (mysqld_exporter or postgres_exporter) reported no sessions running statements in the window")
    scraped = observe.observe(EmptyLab(scraped=True), WINDOW, "tfb-quarkus", {})  # type: ignore[arg-type]
    assert scraped.unobserved["saturation.app_threads_blocked_max"] == (
        'the app tfb-quarkus exported no jvm_threads_states_threads{state="blocked"} in the window')
    # No bounded request-thread pool is said as such, not as a gap.
    assert scraped.unobserved["saturation.app_request_threads_max"].endswith(
        "it serves requests on no bounded thread pool (event loops or virtual threads)")
    assert scraped.unobserved["saturation.app_event_loops"].endswith(
        "in the window: it reports no event loop (Quarkus and Spring WebFlux do)")
    assert scraped.unobserved["saturation.app_virtual_queue_avg"].endswith(
        "in the window: it reports no virtual threads (Spring MVC on virtual threads does, on JDK 24 and later)")


def test_prometheus_gone_in_the_middle_of_an_answer_is_unreachable_not_a_crash() -> None:
    """http.client's IncompleteRead is neither an OSError nor a ValueError: it escaped collect."""
    listener = socket.create_server(("127.0.0.1", 0))

    def cut_short() -> None:
        with listener:
            connection, _ = listener.accept()
            with connection:
                connection.recv(65536)
                connection.sendall(b'HTTP/1.1 200 OK\r\nContent-Length: 500\r\n\r\n{"status": "succ')

    server = threading.Thread(target=cut_short, daemon=True)
    server.start()
    prometheus = Prometheus(f"http://127.0.0.1:{listener.getsockname()[1]}", timeout_s=5)
    with pytest.raises(PrometheusUnreachable, match=r"is unreachable \(IncompleteRead"):
        prometheus.query("up", 1000.0)
    server.join(timeout=5)


def test_the_request_handling_gauges_are_read_over_the_window() -> None:
    """Each scheme's gauges summed over the app's pools, averaged (or their most) over the window's scrapes."""
    gauges = {"perflab_request_queue": 3.0, "perflab_event_loop_pending_tasks": 40.0, "perflab_event_loops": 4.0,
              "perflab_virtual_thread_carriers_busy": 1.0, "perflab_virtual_thread_carriers_max": 2.0,
              "perflab_virtual_thread_carriers{": 3.0, "perflab_virtual_thread_queue": 12.0}

    class Gauges(EmptyLab):
        def query(self, expr: str, at: float | None = None) -> list[Sample]:
            self.asked.append(expr)
            found = [value for name, value in gauges.items() if name in expr]
            # avg_over_time gives half the most: a queue that came and went.
            return [Sample({}, found[0] / 2 if expr.startswith("avg_") else found[0])] if found else []

    lab = Gauges(scraped=True)
    observer = observe.Observer(lab, WINDOW, "quarkus")  # type: ignore[arg-type]
    observer.saturation(None)
    found = observer.found.saturation
    assert found is not None
    assert (found.app_request_queue_avg, found.app_request_queue_max) == (1.5, 3.0)
    assert (found.app_event_loop_pending_avg, found.app_event_loop_pending_max, found.app_event_loops) == (20.0, 40.0, 4.0)
    assert (found.app_virtual_carriers_busy_avg, found.app_virtual_carriers_max, found.app_virtual_carriers_started_max,
            found.app_virtual_queue_avg, found.app_virtual_queue_max) == (0.5, 2.0, 3.0, 6.0, 12.0)
    assert 'max_over_time((sum(perflab_event_loops{job="app",application="quarkus"}))[60s:5s])' in lab.asked


def test_each_tiers_own_service_cpu_is_read_apart_from_its_hosts() -> None:
    """Issue 24: DB_CPU_HOG=4 counted the hog's CPU as MariaDB's. The service's own cores come from its
    process-exporter group on the tier's hosts (mysqld on db, app-java on app, loadgen on loadgen)."""
    expr = tiers.cpu_service_cores("40s")
    assert expr == " or ".join(
        f'sum by (tier) (rate(namedprocess_namegroup_cpu_seconds_total{{job="process",tier="{tier}",'
        f'groupname=~"{group}"}}[40s]))' for tier, group in (("loadgen", "loadgen"), ("app", "app-java"), ("db", "mysqld|postgres")))

    class Groups:
        def query(self, asked: str, at: float | None = None) -> list[Sample]:
            assert asked == expr and at == 1040.0
            return [Sample({"tier": "db"}, 0.09), Sample({"tier": "app"}, 0.31)]

        def value(self, asked: str, at: float | None = None) -> float | None:
            raise AssertionError("by tier")

    observer = observe.Observer(Groups(), observe.Window(1000.0, 1040.0), "quarkus")  # type: ignore[arg-type]
    observer.service_cpu()
    assert observer.found.service_cpu == {"db": 0.09, "app": 0.31}
    hogged = Observations(db_cpu=TierCpu(0.84, 1), app_cpu=TierCpu(0.3, 1), db_disk_busy=0.02,
                          service_cpu=observer.found.service_cpu, db_name="MariaDB 10.11.18 on perflab-db")
    assert "starved by other processes than MariaDB 10.11.18" in audit.app_is_bottleneck(STEADY, hogged, THRESHOLDS).evidence
    # How long MariaDB's threads waited for a CPU over the window, where the samples read it: what tells a DB its
    # host starved from one beside whose idle time the hog ran.
    waited = audit.app_is_bottleneck(STEADY, dataclasses.replace(hogged, service_waited={"db": 0.62, "app": 0.01}),
                                     THRESHOLDS)
    assert waited.evidence.endswith("starved by other processes than MariaDB 10.11.18 (its threads waited 0.62 s per "
                                    "second for a CPU)"), waited.evidence
    # MariaDB itself at 0.85 of its core: the bottleneck is MariaDB's, as before the split.
    own = audit.app_is_bottleneck(STEADY, dataclasses.replace(hogged, service_cpu={"db": 0.85}), THRESHOLDS)
    assert own.evidence == ("not comparable: app used 0.30 of 1 cores (30%) while MariaDB 10.11.18 on perflab-db was the "
                            "bottleneck: CPU 0.84 of 1 cores (84%), MariaDB 10.11.18 itself 0.84 of them")
    empty = observe.Observer(EmptyLab(scraped=True), observe.Window(1000.0, 1040.0), "quarkus")  # type: ignore[arg-type]
    empty.service_cpu()
    assert empty.found.service_cpu is None and empty.found.unobserved["service_cpu"] == (
        "process-exporter reported no CPU of the tiers' services (groups loadgen, app-java, mysqld or postgres) in the window")


def test_prometheus_stopped_mid_run_cannot_vouch_for_the_db_or_the_jvm() -> None:
    """Issue 24: Prometheus stopped 20 s into a 60 s window and started again: the 5 samples it holds say the DB
    was up and the JVM did not restart, but not for the 35 s it did not see."""
    partial = observe.observe(LifeLab([400.0], held=5), WINDOW, "quarkus", {})  # type: ignore[arg-type]
    reason = ("Prometheus holds 5 samples of {what} in the 60 s window where a scrape every 5 s makes 12: what the "
              "missing part held is not known")
    assert partial.db_down_s is None and partial.app_jvm_started_at is None
    assert partial.unobserved["db_down_s"] == reason.format(what="the DB exporter's up")
    assert partial.unobserved["app_jvm_started_at"] == reason.format(what="the app JVM's start time (process-exporter)")
    assert audit.db_up(STEADY, partial, THRESHOLDS).status is Status.NOT_EVALUATED
    # A restart it did see is one, whatever it missed; one scrape missed is a scrape's jitter.
    assert observe.observe(LifeLab([400.0, 1012.0], held=5), WINDOW, "quarkus", {}).app_jvm_started_at == 1012.0  # type: ignore[arg-type]
    whole = observe.observe(LifeLab([400.0], held=11), WINDOW, "quarkus", {})  # type: ignore[arg-type]
    assert (whole.db_down_s, whole.app_jvm_started_at) == (0.0, 400.0)


def test_utilization_keeps_the_db_disk_and_statement_queue() -> None:
    """utilization.json's db tier: its busiest disk's busy share (node_exporter) and the statements in progress,
    Threads_running from mysqld_exporter, every scrape over the same three scrapes as the CPU's rate (issue 24:
    the attribution's stretches of the DB's disk and queue). Not PostgreSQL's active backends, postgres_exporter's
    own among them (tiers.db_sessions_running_avg says why): no queue stretch is judged there."""
    disk = tiers.db_disk_busy("15s")
    running = tiers.db_sessions_running_avg("15s")
    assert disk == 'max(rate(node_disk_io_time_seconds_total{job="node",tier="db"}[15s]))'
    assert running == 'sum(avg_over_time(mysql_global_status_threads_running{job="mysqld"}[15s]))'
    # The live figures of make watch and the dashboards read the same series.
    assert tiers.DB_SESSIONS_RUNNING == ('sum(mysql_global_status_threads_running{job="mysqld"}) or '
                                         'sum(pg_stat_activity_count{job="postgres",state="active"})')
    assert [f.expr for f in tiers.saturation("1m") if f.name.startswith("disk busy")] == [tiers.db_disk_busy("1m")]
    grid = [1000.0 + 5 * k for k in range(9)]
    asked: list[str] = []

    class Lab:
        url = "http://127.0.0.1:9090"

        def query_range(self, expr: str, start: float, end: float, step_s: float) -> list[Series]:
            asked.append(expr)
            assert (start, end, step_s) == (1000.0, 1040.0, 5.0)
            if expr == disk:  # a rate over scrapes a little apart reads a little over 1
                return [Series({}, tuple(zip(grid, (0.2, 0.9, 1.02, float("nan"), 0.5, 0.5, 0.5, 0.5, 0.5))))]
            if expr == running:  # MariaDB's Threads_running
                return [Series({}, tuple(zip(grid, (1.0, 4.0, 6.5, 3.0, 1.0, 1.0, 1.0, 1.0, 1.0))))]
            if "namedprocess_namegroup_memory_bytes" in expr:
                return [Series({"tier": "db"}, tuple(zip(grid, (5e8,) * 9)))]
            return [Series({"tier": tier}, tuple(zip(grid, (0.3,) * 9))) for tier in ("db", "app")]

        def query(self, expr: str, at: float | None = None) -> list[Sample]:
            return [Sample({"tier": "db"}, 1.0), Sample({"tier": "app"}, 1.0)]

    found = observe.utilization(Lab(), observe.Window(1000.0, 1040.0), {})  # type: ignore[arg-type]
    assert found is not None and {disk, running} <= set(asked)
    db, app = found.tiers["db"], found.tiers["app"]
    assert [v for _, v in db.disk_busy] == [0.2, 0.9, 1.0, 0.5, 0.5, 0.5, 0.5, 0.5]  # at most 1, NaN left out
    # The queue's samples whose 15 s of scrapes all lie in the window: from 15 s after its start (the 4.0 and 6.5
    # before averaged scrapes of the verify and the warm-up, before the window).
    assert db.statements_running == tuple(zip(grid[3:], (3.0, 1.0, 1.0, 1.0, 1.0, 1.0)))
    assert (app.disk_busy, app.statements_running) == ((), ())  # the db tier's alone
