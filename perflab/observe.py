"""What Prometheus saw over a run's measured window: the audit's observations (read/write mix by
third, DB statements per request against what the scenario's requests and the contract allow
(statements_table), JIT time, DB disk, the app's max RSS, whether the app's JVM restarted and
whether the DB went down), the saturation figures of the bottleneck attribution, and
utilization.json for the report.

A figure Prometheus cannot give is None with its reason in `unobserved`, never a zero (a zero
reads as idle): a query Prometheus refuses costs its own figure only; once Prometheus cannot be
reached (stopped, or gone in the middle of the collection) no further query is asked and every
figure not read yet says so.

Counters are read as the difference of two instant values (the last sample at or before each
moment), never with increase(), which extrapolates to the window's edges: two counters from two
targets scraped at different moments would extrapolate differently and their ratio (statements
per request) would be off by several percent. Counters of different targets are read at rest:
the bench leaves the lab without load for Window.quiet_s (more than a scrape interval) before the
measured phase starts, and after it `settle` finds the moment by which every target read at rest
(REST_TARGETS) has been scraped once the load was over (Window.at_rest), so the last sample of
every target before the start and the first after the end bound exactly the measured requests.
(Read at a moment under load, each target's last sample lags by its own scrape offset: up to a
scrape interval of requests more on one side than on the other.)
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Protocol

from perflab import histogram, tiers
from perflab.audit import THRESHOLDS
from perflab.observations import STATEMENT_KINDS, Observations, Saturation, ServerLatency, StatementsPerRequest
from perflab.prometheus import Prometheus, PrometheusError, PrometheusUnreachable

WRITE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})

# apps/contract/README.md "DB statements per request", by route and status class, as the
# scenarios exercise them: select, insert, update, delete. POST /zipcodes answers 201 for a new
# zip (select + insert) and 200 for one that existed (select). A 404 of POST /orders is ambiguous
# (unknown book: 1 select, unknown user: 2), so it makes the expectation unknowable. A scenario's
# requests that give their own `statements` take precedence (statements_table); this table stays for
# the requests that give none and for runs recorded before their requests were. TechEmpower's
# /queries and /updates have none here: theirs depend on the request's ?queries=N (the scenario gives
# them, scenarios/queries.yml and updates.yml).
CONTRACT_STATEMENTS: dict[tuple[str, str, str], tuple[float, float, float, float]] = {
    ("GET", "/zipcodes/{zip}", "2xx"): (1, 0, 0, 0),
    ("GET", "/zipcodes/{zip}", "404"): (1, 0, 0, 0),
    ("GET", "/zipcodes", "2xx"): (1, 0, 0, 0),
    ("POST", "/zipcodes", "201"): (1, 1, 0, 0),
    ("POST", "/zipcodes", "200"): (1, 0, 0, 0),
    ("GET", "/books", "2xx"): (1, 0, 0, 0),
    ("POST", "/books", "2xx"): (0, 1, 0, 0),
    ("POST", "/orders", "2xx"): (2, 1, 0, 0),
    ("GET", "/hello/{latency}", "2xx"): (0, 0, 0, 0),
    ("GET", "/greeting/{name}", "2xx"): (0, 0, 0, 0),
    ("GET", "/plaintext", "2xx"): (0, 0, 0, 0),
    ("GET", "/json", "2xx"): (0, 0, 0, 0),
    ("GET", "/db", "2xx"): (1, 0, 0, 0),
    ("GET", "/fortunes", "2xx"): (1, 0, 0, 0),
}

# Prometheus' scrape interval in runs whose inputs did not record it (the lab's default,
# lab_scrape_interval_s in playbooks/group_vars/all/lab.yml).
DEFAULT_SCRAPE_INTERVAL_S = 5.0

# The figures only the app's own metrics give (its requests by route, its JIT time, its latency histogram).
# The figures read on the requests counted by type: the app's own counters, else the loadgen's (perflab.sent).
MIX_FIGURES = ("write_share_by_third", "statements_per_request", "expected_statements_per_request")
APP_METRIC_FIGURES = (*MIX_FIGURES, "jit_compile_s", "server_latency")

# The app's p99.9 is read only where at least this many of the window's requests lie beyond it (10,000
# requests or more): below that it is the slowest few requests, one of them enough to move it, and no
# figure to set beside the generator's. p50 and p99 are always read, as the generator's are.
TAIL_REQUESTS = 10

# Micrometer's JvmCompilationMetrics (Spring Boot binds it; Quarkus does not).
JIT_METRIC = "jvm_compilation_time_ms_total"
# Why jit_compile_s is unobserved for an app without it ("the app quarkus does not export ..."): what
# perflab.collect.with_profiled_jit fills from a CPU profile, and only that (never a counter reset).
NO_JIT_METRIC = f"does not export {JIT_METRIC}"
# Why every figure of the app's own metrics is unobserved for an app Prometheus does not scrape (no metrics
# endpoint in its manifest: TechEmpower's apps, PetClinic); with_profiled_jit fills the JIT's from a profile.
NO_APP_METRICS = "the app's own metrics are unobserved"

# The start time of the app's JVM: process-exporter's group app-java (roles/process_exporter's
# process_exporter_groups) on the app host. An empty group reports Go's zero time (a large
# negative number), hence the `> 0` where it is read.
APP_JVM_START = 'namedprocess_namegroup_oldest_start_time_seconds{job="process",tier="app",groupname="app-java"}'
# The app's request counter, by route: its requests, and the one whose reset says the JVM started again.
APP_REQUESTS = 'http_server_requests_seconds_count{{job="app",application="{app}"}}'
# The DB's statement counters read for statements per request, either engine's (perflab/tiers.py).
DB_STATEMENTS = tiers.db_statements()


# The targets whose counters are read at rest after the window: the app's (its requests, latency
# histogram and JIT time), the DB exporter's (its statements) and the app host's process-exporter (its
# JVM's start time). Prometheus' own up of each: one sample at every scrape, at the scrape's moment.
REST_TARGETS = 'up{job=~"app|process|mysqld|postgres"}'


def is_rest_target(labels: Mapping[str, str]) -> bool:
    """Whether a series of REST_TARGETS is one read at rest: process-exporter's only on the app host."""
    return labels.get("job") != "process" or labels.get("tier") == "app"


@dataclass(frozen=True)
class Window:
    start: float  # unix seconds
    end: float
    quiet_s: float = 0.0  # seconds without load the bench left before the window
    scrape_interval_s: float = DEFAULT_SCRAPE_INTERVAL_S  # Prometheus' (bench-inputs.json)
    # The moments the counters are read at rest, found by settle(); None: the fixed moments (at_rest).
    rest_at: float | None = None
    rest_later_at: float | None = None

    def __post_init__(self) -> None:
        if not self.end > self.start:
            raise ValueError(f"a window ends after it starts, not {self.start}..{self.end}")
        if self.quiet_s < 0:
            raise ValueError(f"a window's quiet time is >= 0 s, not {self.quiet_s}")
        if not (math.isfinite(self.scrape_interval_s) and self.scrape_interval_s > 0):
            raise ValueError(f"a scrape interval is > 0 s, not {self.scrape_interval_s}")
        if (self.rest_at is None) != (self.rest_later_at is None):
            raise ValueError("a window's moments at rest are both known or both not")
        if self.rest_at is not None and self.rest_later_at is not None and not self.end < self.rest_at < self.rest_later_at:
            raise ValueError(f"a window is at rest after its end ({self.end}), and the DB read again after that, "
                             f"not at {self.rest_at} and {self.rest_later_at}")

    @property
    def rest_after_s(self) -> float:
        """Seconds after the window's end from which a scrape counts as at rest: the margin the bench's
        quiet time leaves beyond a scrape interval before the window (bench_quiet_s, 1 s), for the tool's
        exit and the answers still in flight when it stopped (milliseconds at the lab's rates; an app that
        queues requests for longer is past its capacity, and its run is judged on that)."""
        return max(0.0, self.quiet_s - self.scrape_interval_s)

    @property
    def at_rest(self) -> float:
        """When every target read at rest has been scraped since the load ended (settle), else the
        window's end plus its quiet time, the fixed moment of runs collected before settle()."""
        return self.rest_at if self.rest_at is not None else self.end + self.quiet_s

    @property
    def at_rest_later(self) -> float:
        """When the DB has been scraped once more at rest (the lab's own statements' rate): settle's, else
        rest_read_s after at_rest."""
        return self.rest_later_at if self.rest_later_at is not None else self.at_rest + self.rest_read_s

    @property
    def settled_at(self) -> float:
        """When Prometheus holds all a run's observations: the DB's second reading at rest (settle),
        else settled_s after the end."""
        return self.rest_later_at if self.rest_later_at is not None else self.end + self.settled_s

    @property
    def rest_read_s(self) -> float:
        """Fixed moments: seconds after the first reading at rest that the DB's statements are read again,
        for the rate at which the lab alone issues them: more than one scrape interval, so a second sample."""
        return self.scrape_interval_s + 1.0

    @property
    def settled_s(self) -> float:
        """Fixed moments: seconds after the window's end by which every target has been scraped after
        the window and after its quiet time, and the DB once more (rest_read_s), with a margin. It also
        bounds settle()'s wait."""
        return max(2 * self.scrape_interval_s + 2.0, self.quiet_s + self.rest_read_s + 2.0)

    @property
    def step(self) -> str:
        """The scrape interval as a PromQL duration: the step of subqueries over the window."""
        return f"{max(1, round(self.scrape_interval_s))}s"

    @property
    def seconds(self) -> float:
        return self.end - self.start

    @property
    def range(self) -> str:
        """The window as a PromQL range, evaluated at its end."""
        return f"{max(1, round(self.seconds))}s"


def _latest_first_scrape(prometheus: Prometheus, selector: str, after: float, at: float, interval_s: float,
                         keep: Callable[[Mapping[str, str]], bool] = lambda _: True) -> float | None:
    """The latest of the first scrapes after AFTER, up to AT, of each target of SELECTOR (those KEEP keeps)
    scraped within two scrape intervals before it; None while one of them has not been scraped since (a
    scrape that failed, up 0, read nothing), or none was."""
    firsts = []
    for series in prometheus.samples(selector, after - 2 * interval_s, at):
        if not keep(series.labels):
            continue
        since = [t for t, up in series.points if t > after and up == 1]
        if not since:
            return None
        firsts.append(min(since))
    return max(firsts) if firsts else None


def settle(prometheus: Prometheus, window: Window, now: Callable[[], float] = time.time,
           sleep: Callable[[float], None] = time.sleep) -> Window:
    """Waits until Prometheus holds the run's readings at rest and returns WINDOW with their moments:
    rest_at, the latest first scrape of each target read at rest (REST_TARGETS) from rest_after_s after the
    window's end on; rest_later_at, the DB exporter's first scrape after that (the lab's own statements
    at rest, read between the two). Each target is scraped once every interval at its own offset, so
    with a scrape every 5 s they come 1-6 s and 6-11 s after the end, where the fixed moments waited
    14 s (Window.settled_s at a 6 s quiet time). Polled every half second; where Prometheus cannot say by then
    (unreachable, a target no longer scraped, no DB exporter), this waits until settled_s after the end
    and the window keeps its fixed moments."""
    after = window.end + window.rest_after_s
    deadline = window.end + window.settled_s
    while True:
        at = min(now(), deadline)  # a run collected later reads the same moments
        try:
            rest = (_latest_first_scrape(prometheus, REST_TARGETS, after, at, window.scrape_interval_s, is_rest_target)
                    if at > after else None)
            later = None if rest is None or not at > rest else _latest_first_scrape(
                prometheus, tiers.DB_SCRAPES, rest, at, window.scrape_interval_s)
        except PrometheusError:
            rest = later = None
        if rest is not None and later is not None:
            return replace(window, rest_at=rest, rest_later_at=later)
        if now() >= deadline:
            return window
        sleep(max(0.0, min(0.5, window.scrape_interval_s / 4, deadline - now())))


# The app's request-handling capacity, one naming scheme (apps/contract/README.md "Metrics"): each
# scheme's gauges as the saturation reads them over the window (field -> avg or max over the window's
# scrapes, the gauge summed over the app's pools), and what an app without them lacks. Not a gap in what
# was seen: an app exports the schemes it has (event loops and virtual threads have no bounded pool).
REQUEST_HANDLING: tuple[tuple[dict[str, tuple[str, str]], str], ...] = (
    ({"app_request_threads_busy_avg": ("avg", "perflab_request_threads_busy"),
      "app_request_threads_max": ("max", "perflab_request_threads_max"),
      "app_request_queue_avg": ("avg", "perflab_request_queue"),
      "app_request_queue_max": ("max", "perflab_request_queue")},
     "perflab_request_threads_busy/max or perflab_request_queue in the window: it serves requests on no bounded "
     "thread pool (event loops or virtual threads)"),
    ({"app_event_loop_pending_avg": ("avg", "perflab_event_loop_pending_tasks"),
      "app_event_loop_pending_max": ("max", "perflab_event_loop_pending_tasks"),
      "app_event_loops": ("max", "perflab_event_loops")},
     "perflab_event_loop_pending_tasks or perflab_event_loops in the window: it reports no event loop (Quarkus and "
     "Spring WebFlux do)"),
    ({"app_virtual_carriers_busy_avg": ("avg", "perflab_virtual_thread_carriers_busy"),
      "app_virtual_carriers_max": ("max", "perflab_virtual_thread_carriers_max"),
      "app_virtual_carriers_started_max": ("max", "perflab_virtual_thread_carriers"),
      "app_virtual_queue_avg": ("avg", "perflab_virtual_thread_queue"),
      "app_virtual_queue_max": ("max", "perflab_virtual_thread_queue")},
     "perflab_virtual_thread_carriers_busy/max, perflab_virtual_thread_carriers or perflab_virtual_thread_queue in "
     "the window: it reports no virtual threads (Spring MVC on virtual threads does, on JDK 24 and later)"),
)


def route_key(labels: Mapping[str, str]) -> tuple[str, str, str]:
    return labels.get("method", ""), labels.get("uri", ""), labels.get("status", "")


def is_workload(labels: Mapping[str, str]) -> bool:
    """Routes that serve the lab (tiers.NOT_WORKLOAD) are never counted as requests of the run."""
    return not labels.get("uri", "").startswith(tiers.NOT_WORKLOAD)


# A request that ended without an answer (its status not an HTTP code: Quarkus counts "RESET" when
# the client closed the connection first, as wrk2 does with the requests in flight when it stops)
# ran all, some or none of its statements. Up to this share of the requests the expectation is the
# answered requests' (off by at most that share of one request's statements, under the audit's
# tolerance); beyond it, unknowable. A CI run of zipcodes at 200 req/s on a loaded machine counted
# a few POST /zipcodes "RESET" among 6,000 requests, and lost its statement check to them.
UNANSWERED_SHARE = 0.01


Statements = tuple[float, float, float, float]  # per request: select, insert, update, delete
# (method, route template, status or status class "2xx") -> the statements per request of such a request.
StatementsTable = Mapping[tuple[str, str, str], Statements]


class StatedRequest(Protocol):
    """A request of the scenario as run (perflab.rundir.ScenarioRequest): what statements_table reads."""

    @property
    def method(self) -> str: ...
    @property
    def route(self) -> str: ...  # "/owners/{id}", as Scenario.endpoints() spells it
    @property
    def status(self) -> str: ...  # the status it expects, "302"
    @property
    def weight(self) -> float: ...
    @property
    def statements(self) -> Mapping[str, float] | None: ...


class Sent(Protocol):
    """The requests the loadgen sent (perflab.sent.Sent, which reads perflab.scenario, which reads this
    module): what the mix and the statements per request are counted on where the app counts none."""

    @property
    def counted_by(self) -> str: ...
    def moments(self) -> list[dict[tuple[str, str, str], float]]: ...
    def counts(self) -> dict[tuple[str, str, str], float]: ...


# Counts the requests the loadgen sent, or says why it has none (perflab.collect.requests_sent).
CountSent = Callable[[], "Sent | str"]


def route_shape(uri: str) -> tuple[str, ...]:
    """A route template's segments with each "{...}" segment as "{}": the scenario's /owners/{id} and
    Spring's uri label /owners/{ownerId} are one route."""
    return tuple("{}" if part.startswith("{") and part.endswith("}") else part for part in uri.split("/"))


def statements_table(requests: Iterable[StatedRequest]) -> StatementsTable:
    """The statements per request to expect of a run: the scenario's requests' own `statements` (kinds
    left out are 0), by (method, route, the exact status each expects), over CONTRACT_STATEMENTS, which
    keeps what they do not say. Where the scenario gives statements for a route and status, the
    contract's entries for that method, route shape and status are dropped: the scenario's win.
    Requests that share a method, route shape and status share the app's counter: their entry is the
    mean of their statements weighted by their weights as run, and none when one of them (sent, weight
    > 0) gives no statements (the contract's, if any, then stands for them all). CONTRACT_STATEMENTS
    itself when the requests give no statements (and for runs recorded before their requests were)."""
    groups: dict[tuple[str, tuple[str, ...], str], list[StatedRequest]] = {}
    for request in requests:
        if request.weight > 0:
            groups.setdefault((request.method, route_shape(request.route), request.status), []).append(request)
    own: dict[tuple[str, str, str], Statements] = {}
    for (method, shape, status), group in groups.items():
        stated = [(r.weight, r.statements) for r in group if r.statements is not None]
        if not stated or len(stated) < len(group):
            continue
        weight = sum(w for w, _ in stated)
        kinds = [sum(w * float(given.get(kind, 0.0)) for w, given in stated) / weight for kind in STATEMENT_KINDS]
        own[(method, group[0].route, status)] = (kinds[0], kinds[1], kinds[2], kinds[3])
    if not own:
        return CONTRACT_STATEMENTS
    shapes = {(method, route_shape(route), status) for method, route, status in own}
    kept = {key: n for key, n in CONTRACT_STATEMENTS.items() if (key[0], route_shape(key[1]), key[2]) not in shapes}
    return kept | own


def _statements_of(table: StatementsTable, method: str, uri: str, status: str) -> Statements | None:
    """TABLE's entry for a request the app counted (its uri label the framework's template): the exact
    status before its class ("2xx"); for each, the same route before one of the same shape."""
    shape = route_shape(uri)
    for wanted in (status, f"{status[:1]}xx"):
        found = table.get((method, uri, wanted))
        if found is not None:
            return found
        for (m, route, s), per_request in table.items():
            if (m, s) == (method, wanted) and route_shape(route) == shape:
                return per_request
    return None


def expected_statements(counts: Mapping[tuple[str, str, str], float],
                        table: StatementsTable = CONTRACT_STATEMENTS) -> tuple[StatementsPerRequest | None, str]:
    """The statements per request to expect of the requests served, by route and status, from TABLE
    (statements_table: the scenario's over the contract's; the contract's alone by default); None
    with the reason when a route's count is not in the table, or when more than UNANSWERED_SHARE of
    the requests ended without an answer."""
    total = sum(counts.values())
    if total <= 0:
        return None, "no request of the workload reached the app"
    unanswered = {key: count for key, count in counts.items() if count > 0 and not key[2].isdigit()}
    if sum(unanswered.values()) > UNANSWERED_SHARE * total:
        (method, uri, status), count = max(unanswered.items(), key=lambda item: item[1])
        return None, (f"{sum(unanswered.values()):.0f} of {total:.0f} requests ended without an answer (e.g. {count:.0f} "
                      f"{method} {uri} {status}), more than {UNANSWERED_SHARE:.0%}: what they ran cannot be told")
    total -= sum(unanswered.values())
    sums = [0.0, 0.0, 0.0, 0.0]
    for (method, uri, status), count in counts.items():
        if count <= 0 or (method, uri, status) in unanswered:
            continue
        per_request = _statements_of(table, method, uri, status)
        if per_request is None:
            if status.startswith("4") and not (method, uri) == ("POST", "/orders"):
                per_request = (0, 0, 0, 0)  # any 400: no statement (the contract)
            elif table is CONTRACT_STATEMENTS:
                return None, f"the contract has no statement count for {method} {uri} answered {status}"
            else:
                return None, (f"neither the scenario's requests nor the contract give a statement count for {method} "
                              f"{uri} answered {status}")
        sums = [s + count * n for s, n in zip(sums, per_request)]
    return StatementsPerRequest(*(s / total for s in sums)), ""


def write_shares(values: Iterable[Mapping[tuple[str, str, str], float]]) -> tuple[float, ...] | None:
    """Write share of each interval, from the per-route request counts of consecutive moments."""
    moments = list(values)
    shares: list[float] = []
    for before, after in zip(moments, moments[1:]):
        deltas = {k: max(0.0, after.get(k, 0.0) - before.get(k, 0.0)) for k in after}
        total = sum(deltas.values())
        if total <= 0:
            return None
        shares.append(sum(v for k, v in deltas.items() if k[0] in WRITE_METHODS) / total)
    return tuple(shares)


class Observer:
    """Queries one Prometheus about one window; each figure failing alone leaves a reason.

    `found` is the run's observations as far as they are known: each figure read replaces its
    field; each one left None says why in found.unobserved."""

    def __init__(self, prometheus: Prometheus, window: Window, app: str, found: Observations | None = None,
                 statements: StatementsTable = CONTRACT_STATEMENTS, sent: CountSent | None = None) -> None:
        self.prom = prometheus
        self.window = window
        self.app = app
        self.statements = statements  # the statements per request to expect (statements_table)
        # What counts the requests the loadgen sent (perflab.sent), or says why it has none: what the mix and
        # the statements per request are counted on where the app counts no requests. Asked only then: it
        # reads every one of vegeta's results.
        self.count_sent = sent
        base = found if found is not None else Observations()
        self.found = replace(base, unobserved=dict(base.unobserved))
        self._app_reset: str | None = None  # app_counters_reset's answer once asked ("" = no reset)

    # -- small helpers ------------------------------------------------------------------------

    def _by_route(self, at: float) -> dict[tuple[str, str, str], float]:
        samples = self.prom.query(
            f"sum by (method, uri, status) ({APP_REQUESTS.format(app=self.app)})",
            at,
        )
        return {route_key(s.labels): s.value for s in samples if is_workload(s.labels) and math.isfinite(s.value)}

    def _delta(self, expr: str, end: float | None = None) -> float | None:
        before = self.prom.value(expr, self.window.start)
        after = self.prom.value(expr, self.window.end if end is None else end)
        if before is None or after is None:
            return None
        return max(0.0, after - before)

    def _over_window(self, fn: str, expr: str) -> float | None:
        """fn_over_time of a gauge over the window, e.g. avg or max."""
        return self.prom.value(f"{fn}_over_time(({expr})[{self.window.range}:{self.window.step}])", self.window.end)

    def _resets(self, series: str, at: float) -> float:
        """How often SERIES went down from the last sample before the window's start to AT: a counter that
        restarted from zero (its process started again). The range reaches one scrape before the start for
        the sample the differences start from. 0 where Prometheus has no sample: nothing seen go down."""
        span = f"{max(1, math.ceil(at - self.window.start + self.window.scrape_interval_s))}s"
        return self.prom.value(f"sum(resets({series}[{span}]))", at) or 0.0

    def missed_scrapes(self, series: str, what: str) -> str | None:
        """Why SERIES cannot vouch for the whole window: Prometheus holds fewer of its samples in it than
        one a scrape interval, less one (Prometheus stopped mid-run and started again, a target down);
        None when it holds them all, or cannot say how many."""
        w = self.window
        expected = math.floor(w.seconds / w.scrape_interval_s)
        held = self.prom.value(f"max(count_over_time({series}[{w.range}]))", w.end)
        if held is None or held >= expected - 1:
            return None
        return (f"Prometheus holds {held:.0f} samples of {what} in the {w.seconds:.0f} s window where a scrape every "
                f"{w.scrape_interval_s:g} s makes {expected}: what the missing part held is not known")

    def app_counters_reset(self) -> str | None:
        """Why the app's counters cannot be read as differences over the window: its request counter went
        down between the window's start and the reading at rest after it (the JVM started again, and every
        counter of the app with it, from zero). None when it did not. Asked once."""
        if self._app_reset is None:
            resets = self._resets(APP_REQUESTS.format(app=self.app), self.window.at_rest)
            self._app_reset = (f"the app {self.app}'s counters went back {resets:.0f} time(s) in the window "
                               "(http_server_requests_seconds_count: its JVM started again, counting from zero): "
                               "what they counted before cannot be added to what they counted after"
                               if resets > 0 else "")
        return self._app_reset or None

    def scraped(self) -> bool:
        """Whether Prometheus' app job had this app as a target: an app whose manifest declares no
        metrics endpoint is not scraped (role app leaves the job's list empty)."""
        return bool(self.prom.query(f'up{{job="app",application="{self.app}"}}', self.window.end))

    # -- the figures --------------------------------------------------------------------------

    def mix_and_statements(self) -> None:
        """The write share of each third of the window and the statements per request, on the app's own
        request counters; on the loadgen's counts (self.count_sent) where the app exports none."""
        w = self.window
        moments = [w.start + w.seconds * i / 3 for i in range(4)]
        by_moment = [self._by_route(at) for at in moments]
        if not by_moment[-1]:
            reason = f"the app {self.app} exported no http_server_requests_seconds_count in the window"
            self.mix_and_statements_sent(reason)
            return
        reset = self.app_counters_reset()
        if reset is not None:
            # Issue 24: after a restart the window's requests read 2.78 selects each where the contract says 1.
            for name in MIX_FIGURES:
                self.found.unobserved[name] = reset
            return
        self._mix_and_statements(by_moment, {k: v - by_moment[0].get(k, 0.0)
                                             for k, v in self._by_route(w.at_rest).items()})

    def mix_and_statements_sent(self, app_reason: str) -> None:
        """The same figures on the requests the loadgen sent (perflab.sent), where the app counts none
        (APP_REASON says why); where it gives the reason they are not counted, every figure unobserved."""
        counted = self.count_sent() if self.count_sent is not None else None
        if counted is None or isinstance(counted, str):
            why = f"; nor did the loadgen count them: {counted}" if counted else ""
            for name in MIX_FIGURES:
                self.found.unobserved[name] = app_reason + why
            return
        self.found = replace(self.found, requests_counted_by=counted.counted_by)
        self._mix_and_statements(counted.moments(), counted.counts())

    def _mix_and_statements(self, by_moment: list[dict[tuple[str, str, str], float]],
                            counts: dict[tuple[str, str, str], float]) -> None:
        """BY_MOMENT: the requests counted by key at the window's start, after each third and at its end;
        COUNTS: the window's requests by key, up to the reading at rest."""
        w = self.window
        shares = write_shares(by_moment)
        if shares is None or len(shares) != 3:
            self.found.unobserved["write_share_by_third"] = "a third of the window saw no request at the app"
        else:
            self.found = replace(self.found, write_share_by_third=(shares[0], shares[1], shares[2]))
        # Statements against requests: both read at rest, once every target was scraped after the phase.
        at_rest = w.at_rest
        requests = sum(counts.values())
        expected, why = expected_statements(counts, self.statements)
        if expected is None:
            self.found.unobserved["expected_statements_per_request"] = why
        self.found = replace(self.found, expected_statements_per_request=expected)
        read = [self._workload_statements(kind, at_rest) for kind in STATEMENT_KINDS]
        if any(r is None for r in read):
            self.found.unobserved["statements_per_request"] = f"{tiers.DB_EXPORTER} had no statement counters in the window"
            return
        if requests <= 0:
            self.found.unobserved["statements_per_request"] = "no request of the workload reached the app"
            return
        # The exporter runs its queries while it reads the counters: each reading may or may not
        # count one scrape's worth of them, so the figure is known to within two scrapes' worth.
        at_rest_per_scrape = max(r[1] for r in read if r is not None)
        resolution, tolerance = 2 * at_rest_per_scrape / requests, THRESHOLDS.statements_per_request_tolerance.value
        if resolution > tolerance / 2:
            self.found.unobserved["statements_per_request"] = (
                f"the workload's statements cannot be told from the lab's own: the DB ran {at_rest_per_scrape:.0f} "
                f"between two readings at rest, which makes the figure uncertain by {resolution:.3f} per request "
                f"over {requests:.0f} requests, more than half of same_db_work's tolerance ({tolerance}); "
                "run longer or at a higher rate")
            return
        db_resets = self._resets(DB_STATEMENTS, w.at_rest_later)
        if db_resets > 0:
            self.found.unobserved["statements_per_request"] = (
                f"the DB's statement counters went back {db_resets:.0f} time(s) in the window (the DB started again, "
                "counting from zero): the window's statements are not known")
            return
        per_request = StatementsPerRequest(*(float(r[0]) / requests for r in read if r is not None))
        self.found = replace(self.found, statements_per_request=per_request)

    def _workload_statements(self, kind: str, at_rest: float) -> tuple[float, float] | None:
        """The DB's statements of one kind from the window's start to at_rest, less the lab's own:
        the exporter's queries at every scrape (and any keep-alive) go on at rest too. Their rate is
        read between two samples at rest, at_rest and the DB's next scrape (Window.at_rest_later), and taken off
        for the time between the first and the last sample read; at 50 req/s they were 0.03 to 0.05
        selects per request, the tolerance of same_db_work. Returns (the workload's statements,
        the lab's own between the two samples at rest: one scrape's worth)."""
        # PostgreSQL's counters have a series per kind only once a statement of the kind ran: a kind
        # without one counts 0 wherever the DB has counters of another kind. Every kind is scraped at once.
        series = tiers.db_statements(kind)
        start, rest, later = self.window.start, at_rest, self.window.at_rest_later
        values = [self.prom.value(f"sum({series}) or 0 * sum({DB_STATEMENTS})", at) for at in (start, rest, later)]
        times = [self.prom.value(f"max(timestamp({DB_STATEMENTS}))", at) for at in (start, rest, later)]
        if values[0] is None or values[1] is None:
            return None
        delta = max(0.0, values[1] - values[0])
        if values[2] is None or None in times or not times[2] > times[1] > times[0]:  # type: ignore[operator]
            return delta, 0.0
        t0, t1, t2 = (float(t or 0.0) for t in times)
        at_rest = max(0.0, values[2] - values[1])
        return max(0.0, delta - at_rest / (t2 - t1) * (t1 - t0)), at_rest

    def jit(self) -> None:
        reset = self.app_counters_reset()
        if reset is not None:
            self.found.unobserved["jit_compile_s"] = reset
            return
        delta = self._delta(f'sum({JIT_METRIC}{{job="app",application="{self.app}"}})')
        if delta is None:
            self.found.unobserved["jit_compile_s"] = f"the app {self.app} {NO_JIT_METRIC}"
        else:
            self.found = replace(self.found, jit_compile_s=delta / 1000.0)

    def disk(self) -> float | None:
        """The busy fraction of the db host's busiest disk; returns that disk's await (ms)."""
        r = self.window.range

        def per_device(metric: str) -> dict[str, float]:
            expr = f'sum by (device) (rate({metric}{{job="node",tier="db"}}[{r}]))'
            return {s.labels.get("device", ""): s.value for s in self.prom.query(expr, self.window.end)
                    if math.isfinite(s.value)}

        busy = per_device("node_disk_io_time_seconds_total")
        if not busy:
            self.found.unobserved["db_disk_busy"] = "node_exporter on the db host reported no disk"
            return None
        device = max(busy, key=busy.__getitem__)
        self.found = replace(self.found, db_disk_busy=min(1.0, busy[device]))
        ios = sum(per_device(m).get(device, 0.0) for m in ("node_disk_reads_completed_total",
                                                          "node_disk_writes_completed_total"))
        io_time = sum(per_device(m).get(device, 0.0) for m in ("node_disk_read_time_seconds_total",
                                                              "node_disk_write_time_seconds_total"))
        return io_time / ios * 1000.0 if ios > 0 else None

    def rss(self) -> None:
        expr = f'max_over_time(namedprocess_namegroup_memory_bytes{{job="process",tier="app",groupname="app-java",memtype="resident"}}[{self.window.range}])'
        value = self.prom.value(f"max({expr})", self.window.end)
        if value is None:
            self.found.unobserved["app_max_rss_bytes"] = "process-exporter reported no app-java group on the app host"
        else:
            self.found = replace(self.found, app_max_rss_bytes=value)

    def service_cpu(self) -> None:
        """Per tier, the cores its own service used over the window (tiers.SERVICE_GROUPS): what of the
        host's busy CPU was MariaDB's, the JVM's, the generator's, and not a neighbour's or a hog's."""
        found = {s.labels.get("tier", ""): s.value
                 for s in self.prom.query(tiers.cpu_service_cores(self.window.range), self.window.end)
                 if math.isfinite(s.value)}
        if found:
            self.found = replace(self.found, service_cpu=found)
        else:
            self.found.unobserved["service_cpu"] = ("process-exporter reported no CPU of the tiers' services "
                                                    f"(groups {', '.join(g.replace('|', ' or ') for g in tiers.SERVICE_GROUPS.values())}) in the window")

    def cpus(self, tier_cpus: Mapping[str, tuple[str, tuple[int, ...]]]) -> None:
        """Per tier, the fraction of its CPUs busy with any process of its machine (node_exporter
        sees the whole machine's CPUs, also from a container): a shared core shows its contention."""
        r = self.window.range
        samples = self.prom.query(
            f'sum by (host, cpu) (rate(node_cpu_seconds_total{{job="node",mode!~"idle|iowait"}}[{r}]))', self.window.end)
        per_host: dict[str, dict[str, float]] = {}
        for s in samples:
            per_host.setdefault(s.labels.get("host", ""), {})[s.labels.get("cpu", "")] = s.value
        busy: dict[str, float] = {}
        for tier, (host, cpus) in tier_cpus.items():
            values = [per_host.get(host, {}).get(str(c)) for c in cpus]
            if cpus and all(v is not None for v in values):
                busy[tier] = min(1.0, sum(float(v or 0.0) for v in values) / len(cpus))
        if busy:
            self.found = replace(self.found, cpus_busy=busy)
        else:
            self.found.unobserved["cpus_busy"] = "node_exporter reported no per-CPU time for the tiers' hosts"

    def saturation(self, await_ms: float | None, app_unobserved: str | None = None) -> None:
        """The queues of the attribution; each one left None says why in unobserved["saturation.<field>"]
        (app_unobserved: the reason for every figure of the app's own metrics, when it is not scraped)."""
        app = f'{{job="app",application="{self.app}"}}'
        r = self.window.range
        link = self.prom.query(
            f'max by (tier) ((rate(node_network_receive_bytes_total{{job="node",device="eth0"}}[{r}]) '
            f'> rate(node_network_transmit_bytes_total{{job="node",device="eth0"}}[{r}]) '
            f'or rate(node_network_transmit_bytes_total{{job="node",device="eth0"}}[{r}])) '
            f'/ (node_network_speed_bytes{{job="node",device="eth0"}} > 0))', self.window.end)
        saturation = Saturation(
            app_pool_waiting_avg=self._over_window("avg", f"sum(perflab_db_pool_waiting{app})"),
            app_pool_waiting_max=self._over_window("max", f"sum(perflab_db_pool_waiting{app})"),
            app_pool_in_use_max=self._over_window("max", f"sum(perflab_db_pool_in_use{app})"),
            app_threads_blocked_max=self._over_window(
                "max", f'sum(jvm_threads_states_threads{{job="app",application="{self.app}",state="blocked"}})'),
            **{name: self._over_window(how, f"sum({gauge}{app})")
               for gauges, _ in REQUEST_HANDLING for name, (how, gauge) in gauges.items()},
            db_threads_running_avg=self._over_window("avg", tiers.DB_SESSIONS_RUNNING),
            db_disk_await_ms=await_ms,
            network_link_fraction={s.labels["tier"]: s.value for s in link
                                   if "tier" in s.labels and math.isfinite(s.value)} or None,
        )
        self.found = replace(self.found, saturation=saturation)
        exported = f"the app {self.app} exported no"
        why = {
            "app_pool_waiting_avg": app_unobserved or f"{exported} perflab_db_pool_waiting in the window",
            "app_pool_waiting_max": app_unobserved or f"{exported} perflab_db_pool_waiting in the window",
            "app_pool_in_use_max": app_unobserved or f"{exported} perflab_db_pool_in_use in the window",
            "app_threads_blocked_max": app_unobserved or f'{exported} jvm_threads_states_threads{{state="blocked"}} '
                                                         "in the window",
            **{name: app_unobserved or f"{exported} {absent}" for gauges, absent in REQUEST_HANDLING for name in gauges},
            "db_threads_running_avg": f"{tiers.DB_EXPORTER} reported no sessions running statements in the window",
            "db_disk_await_ms": self.found.unobserved.get("db_disk_busy", "the DB's busiest disk completed no I/O in the window"),
            "network_link_fraction": "node_exporter reported no eth0 traffic against a link speed for any tier",
        }
        for name, reason in why.items():
            if getattr(saturation, name) is None:
                self.found.unobserved[f"saturation.{name}"] = reason

    def server_latency(self, endpoints: tuple[str, ...]) -> None:
        """The app's own p50, p99 (and p99.9 where TAIL_REQUESTS allow) over the window, on the scenario's
        routes, from its latency histogram read at the window's start and at rest after it (as the
        requests by route: exactly the measured requests), with each quantile's bucket."""
        if not endpoints:
            self.found.unobserved["server_latency"] = "the scenario names no endpoint: which routes are its own is unknown"
            return
        reset = self.app_counters_reset()
        if reset is not None:
            self.found.unobserved["server_latency"] = reset
            return
        w = self.window
        expr = tiers.app_latency_buckets(self.app, [tiers.route(e) for e in endpoints])

        def buckets(at: float) -> histogram.Cumulative:
            return histogram.cumulative((s.labels.get("le", ""), s.value) for s in self.prom.query(expr, at))

        after = buckets(w.at_rest)
        routes = ", ".join(endpoints)
        if not after:
            self.found.unobserved["server_latency"] = (
                f"the app {self.app} exported no {tiers.APP_LATENCY}_bucket on {routes} in the window")
            return
        counted = histogram.between(buckets(w.start), after)
        requests = histogram.total(counted)
        p50, p99 = histogram.quantile(0.5, counted), histogram.quantile(0.99, counted)
        if p50 is None or p99 is None:
            self.found.unobserved["server_latency"] = (
                f"the app {self.app}'s {tiers.APP_LATENCY} histogram counted no request on {routes} in the window")
            return
        p999 = histogram.quantile(0.999, counted) if requests * (1 - 0.999) >= TAIL_REQUESTS else None
        if p999 is None:
            self.found.unobserved["server_latency.p999"] = (
                f"{requests:.0f} requests in the window: the app's p99.9 is read from {TAIL_REQUESTS / (1 - 0.999):,.0f} "
                f"on, so that {TAIL_REQUESTS} lie beyond it")
        self.found = replace(self.found, server_latency=ServerLatency(
            routes=tuple(endpoints), requests=requests, p50=p50, p99=p99, p999=p999))

    def app_jvm(self) -> None:
        """When the app's JVM that ran last in the window started: the latest start time process-exporter
        reported up to the window's end. Read after the window's settling, so that a JVM started in the
        window's last scrape interval has been scraped; a start after the window's end is not this
        window's (a later sample of the same JVM would hide an earlier restart, hence the filter)."""
        w = self.window
        at = w.settled_at
        span = f"{max(1, math.ceil(at - w.start))}s"
        started = self.prom.value(
            f"max(max_over_time((({APP_JVM_START} > 0) <= {w.end:.3f})[{span}:{w.step}]))", at)
        missed = self.missed_scrapes(APP_JVM_START, "the app JVM's start time (process-exporter)")
        if started is None:
            self.found.unobserved["app_jvm_started_at"] = (
                "process-exporter reported no running JVM of the app (group app-java on the app host) in the window")
        elif missed is not None and started <= w.start:
            # A restart in the part Prometheus did not see would not show: "not restarted" is unproven.
            self.found.unobserved["app_jvm_started_at"] = missed
        else:
            self.found = replace(self.found, app_jvm_started_at=started)

    def db_up(self) -> None:
        """Whether the DB's exporter reached the DB at every scrape of the window; else for how long it did
        not (its samples at 0, one scrape interval each) and from when (the first of them)."""
        w, r = self.window, self.window.range
        lowest = self.prom.value(f"min(min_over_time({tiers.DB_UP}[{r}]))", w.end)
        if lowest is None:
            reason = f"{tiers.DB_EXPORTER} reported no mysql_up or pg_up in the window"
            self.found.unobserved.update(db_down_s=reason, db_down_from=reason)
            return
        if lowest >= 1:
            missed = self.missed_scrapes(tiers.DB_UP, "the DB exporter's up")
            if missed is not None:
                # Issue 24: up at every scrape Prometheus holds is not up through the window.
                self.found.unobserved.update(db_down_s=missed, db_down_from=missed)
                return
            self.found = replace(self.found, db_down_s=0.0)
            return
        down = self.prom.value(f"sum(count_over_time({tiers.DB_UP}[{r}]) - sum_over_time({tiers.DB_UP}[{r}]))", w.end)
        down_from = self.prom.value(f"min(min_over_time((timestamp({tiers.DB_UP}) and {tiers.DB_UP} == 0)[{r}:{w.step}]))", w.end)
        self.found = replace(self.found, db_down_s=max(1.0, down or 0.0) * w.scrape_interval_s, db_down_from=down_from)
        if down_from is None:
            self.found.unobserved["db_down_from"] = "Prometheus gave no time for the DB's first up 0 in the window"


def observe(prometheus: Prometheus, window: Window, app: str,
            tier_cpus: Mapping[str, tuple[str, tuple[int, ...]]], found: Observations | None = None,
            endpoints: tuple[str, ...] = (), statements: StatementsTable = CONTRACT_STATEMENTS,
            sent: CountSent | None = None) -> Observations:
    """FOUND (the run's observations from elsewhere: the bench's CPU samples, the DB's sessions)
    with every figure of the window Prometheus gives; ENDPOINTS, the scenario's ("GET /zipcodes/{zip}"),
    are the routes whose server-side latency is read; STATEMENTS (statements_table of the scenario's
    requests) the DB statements per request to expect; SENT gives the loadgen's counts of the requests
    it sent (perflab.sent), or why it has none: what the mix and the statements per request are counted
    on where the app counts no requests, and called only then. A query Prometheus fails leaves its figures unobserved with the
    reason; once it cannot be reached, every figure not read yet is unobserved with that reason."""
    observer = Observer(prometheus, window, app, found, statements, sent)
    unreachable: list[PrometheusError] = []

    def read(figures: tuple[str, ...], figure: Callable[[], None]) -> None:
        if not unreachable:
            try:
                figure()
                return
            except PrometheusUnreachable as error:
                unreachable.append(error)
            except PrometheusError as error:
                unobserved(observer.found, figures, error)
                return
        unobserved(observer.found, figures, unreachable[0])

    await_ms: list[float | None] = [None]

    def disk() -> None:
        await_ms[0] = observer.disk()

    scraped: list[bool] = []
    read(APP_METRIC_FIGURES, lambda: scraped.append(observer.scraped()))
    app_unobserved = None
    if scraped == [False]:
        app_unobserved = (f"{NO_APP_METRICS}: Prometheus' app job has no target for {app} "
                          "(an app whose manifest declares no metrics endpoint is not scraped)")
        for name in APP_METRIC_FIGURES:
            observer.found.unobserved[name] = app_unobserved
    read(("db_disk_busy",), disk)
    if scraped == [True]:
        read(MIX_FIGURES, observer.mix_and_statements)
        read(("jit_compile_s",), observer.jit)
    elif scraped == [False]:
        for name in MIX_FIGURES:
            del observer.found.unobserved[name]
        read(MIX_FIGURES, lambda: observer.mix_and_statements_sent(str(app_unobserved)))
    read(("app_max_rss_bytes",), observer.rss)
    read(("cpus_busy",), lambda: observer.cpus(tier_cpus))
    read(("service_cpu",), observer.service_cpu)
    read(("saturation",), lambda: observer.saturation(await_ms[0], app_unobserved))
    read(("app_jvm_started_at",), observer.app_jvm)
    read(("db_down_s", "db_down_from"), observer.db_up)
    if scraped == [True]:
        read(("server_latency",), lambda: observer.server_latency(endpoints))
    return observer.found


def unobserved(found: Observations, figures: Iterable[str], error: PrometheusError) -> None:
    """Each of FIGURES that Prometheus' failure left None: unobserved, with the failure as its reason."""
    for name in figures:
        if getattr(found, name) is None:
            found.unobserved.setdefault(name, f"no Prometheus data: {error}")


@dataclass(frozen=True)
class TierSeries:
    """One tier over the measured phase: [unix s, value] every scrape interval."""

    allotted_cores: float
    busy_cores: tuple[tuple[float, float], ...] = ()  # every process of the tier's hosts
    memory_bytes: tuple[tuple[float, float], ...] = ()
    # Of busy_cores, its own service's (tiers.SERVICE_GROUPS); empty in files written before it was kept.
    service_cores: tuple[tuple[float, float], ...] = ()
    # The db tier's alone (empty for the others, and in files written before they were kept), each sample over the
    # same scrapes as busy_cores' rate: the share of the time its busiest disk was busy (tiers.db_disk_busy), and the
    # statements in progress in the DB on average (tiers.db_sessions_running_avg: MariaDB/MySQL's, from the samples
    # whose scrapes all lie in the window; empty on PostgreSQL).
    disk_busy: tuple[tuple[float, float], ...] = ()
    statements_running: tuple[tuple[float, float], ...] = ()


@dataclass(frozen=True, kw_only=True)
class Utilization:
    """utilization.json: each tier's busy cores and resident memory over the measured phase, for
    the report, and the db tier's disk and statement queue, for the attribution's stretches (absent when
    Prometheus had no data)."""

    schema_version: int = 1
    source: str  # the Prometheus that answered
    start: float  # the measured phase, unix s
    end: float
    step_s: float  # between two samples: the scrape interval
    tiers: dict[str, TierSeries]


def utilization(prometheus: Prometheus, window: Window, allotted_fallback: Mapping[str, float]) -> Utilization | None:
    """Per tier, busy cores and resident memory every scrape interval over the window (utilization.json), and
    the db tier's disk busy and statements in progress; allotted cores from perflab_host_cpus, else from
    allotted_fallback (the affinity the bench sampled); tiers without data are left out, and None when none
    has any; PrometheusError when it cannot answer."""
    step_s = window.scrape_interval_s
    rate_window_s = max(15, round(3 * step_s))
    rate_window = f"{rate_window_s}s"  # three scrapes: a rate never falls between two

    def by_tier(expr: str) -> dict[str, tuple[tuple[float, float], ...]]:
        return {s.labels.get("tier", ""): s.points for s in prometheus.query_range(expr, window.start, window.end, step_s)}

    def db_series(expr: str, most: float = math.inf) -> tuple[tuple[float, float], ...]:
        """EXPR's one series (the db tier's), each value at most MOST; empty where the exporter gave none."""
        found = prometheus.query_range(expr, window.start, window.end, step_s)
        return tuple((at, min(most, value)) for at, value in (found[0].points if found else ()) if math.isfinite(value))

    busy = by_tier(tiers.cpu_busy_cores(rate_window))
    memory = by_tier(tiers.memory_resident_bytes())
    service = by_tier(tiers.cpu_service_cores(rate_window))
    # A device's io_time grows by at most the time elapsed; a rate over scrapes a little apart can read above 1.
    disk = db_series(tiers.db_disk_busy(rate_window), most=1.0)
    # The statement queue from the samples whose three scrapes all lie in the window: a sample averages the scrapes
    # before it, and the window's first ones reached back into the verify and the warm-up (a 10 s run on MariaDB read
    # 2.3 there, then 1.0, and its 5 s made a fifth of the window: INVALID, "limited by the DB's statement queue", at
    # 50 of 50 req/s). A window shorter than the three scrapes has none, and no queue stretch is judged there.
    statements = tuple((at, value) for at, value in db_series(tiers.db_sessions_running_avg(rate_window))
                       if at - rate_window_s >= window.start)
    allotted = dict(allotted_fallback)
    allotted.update({s.labels.get("tier", ""): s.value
                     for s in prometheus.query(tiers.cpu_allotted_cores(), window.end)})
    series = {
        tier: TierSeries(allotted[tier], busy.get(tier, ()), memory.get(tier, ()), service.get(tier, ()),
                         disk_busy=disk if tier == "db" else (), statements_running=statements if tier == "db" else ())
        for tier in tiers.TIERS
        if tier in allotted and (tier in busy or tier in memory)
    }
    if not series:
        return None
    return Utilization(source=prometheus.url, start=window.start, end=window.end, step_s=step_s, tiers=series)
