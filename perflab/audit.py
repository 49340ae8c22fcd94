"""Judge a run: is it valid, and may it be compared with other runs?

Each rule is a named function of the run's result and its observations (what Prometheus and the
inventory saw over the run window). A rule yields VALID, WARN or INVALID with evidence, or
NOT_EVALUATED with the reason when the data it needs is missing: a rule never passes silently.
The run's verdict is the worst verdict of the rules that were evaluated. Beside it the audit
states what the app spent (CPU seconds per 1,000 requests, max RSS): figures to compare apps by,
not a rule.

Every threshold lives in THRESHOLDS, with the reason for its value; the report numbers refer to
the four field reports the method comes from (README.md, "the method").

Two rules judge what happened to the lab in the window rather than how it performed: the app's JVM
starting again in it (app_not_restarted, from process-exporter) and the DB going down
(db_up, from the DB exporter's mysql_up or pg_up). They come first: a crash or an outage explains the
errors and the shortfall the rules after them find.
"""

from __future__ import annotations

import datetime
import enum
import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields

from perflab.model import RunResult, percentile_key
from perflab.observations import Observations, Saturation, StatementsPerRequest, TierCpu, WarmupEnd


class Status(enum.Enum):
    VALID = "VALID"
    WARN = "WARN"
    INVALID = "INVALID"
    NOT_EVALUATED = "NOT_EVALUATED"


_SEVERITY = {Status.VALID: 0, Status.WARN: 1, Status.INVALID: 2}


@dataclass(frozen=True)
class Threshold:
    value: float
    reason: str


@dataclass(frozen=True)
class Thresholds:
    max_app_restarts: Threshold
    max_db_down_s: Threshold
    max_errors: Threshold
    min_achieved_fraction: Threshold
    max_p99_to_slo: Threshold
    max_p50_beyond_server_ms: Threshold
    max_loadgen_cpu_busy: Threshold
    max_dropped_share: Threshold
    app_cpu_well_below: Threshold
    db_cpu_busy: Threshold
    db_disk_busy: Threshold
    db_pool_waiting: Threshold
    db_threads_running: Threshold
    max_write_share_drift: Threshold
    statements_per_request_tolerance: Threshold
    max_jit_compile_fraction: Threshold
    warmup_settled_s: Threshold
    max_load_start_late_fraction: Threshold


THRESHOLDS = Thresholds(
    max_app_restarts=Threshold(
        0,
        "Issue 14: the JVM killed mid-run and restarted by systemd within 5 s. A restarted app served the "
        "rest of the window cold (interpreted code, empty pools and caches) after failing what was in "
        "flight: the window measured a crash and a warm-up, not the app at the rate asked.",
    ),
    max_db_down_s=Threshold(
        0,
        "Issue 14: the DB stopped 10 s into the measured phase. Every request that needed it failed or "
        "waited while it was down: the window measured an outage, not the app. One scrape of the DB's exporter "
        "reporting it down (mysql_up or pg_up 0) is enough: the exporter could not reach the DB.",
    ),
    max_errors=Threshold(
        0,
        "Report 1, step 1: 10 non-2xx responses hid a deadlocked app that served 1.75 req/s. "
        "A failed request is not a fast request; one error means the app did not do the work.",
    ),
    min_achieved_fraction=Threshold(
        0.95,
        "A constant-rate run measures latency at the rate asked; below 95% of it the system "
        "could not keep up (or the generator could not), and the latency belongs to another rate.",
    ),
    max_p99_to_slo=Threshold(
        1.0,
        "The method: latency beyond the SLO means the rate is not sustained. A constant-rate run is "
        "sustainable only while its corrected p99 stays within the scenario's slo_p99_ms (its reason in "
        "scenarios/*.yml; SLO_P99_MS= overrides it): above it requests queued, and the latency measured is "
        "that of a system falling behind the rate asked. Over it a run is WARN, not INVALID: its figures "
        "are sound and a comparison at that rate must show the app that could not keep it. The value is "
        "the largest p99 / SLO; a p99 equal to the SLO is within it.",
    ),
    max_p50_beyond_server_ms=Threshold(
        5.0,
        "Issue 12: the generator's latency holds what the app's histogram cannot: the network's round trips, the "
        "generator's own sending and reading, and the time before the framework takes a request up (on Tomcat the "
        "wait for a thread, apps/contract/README.md). Against a server on the same machine wrk2's p50 read 0.89 ms "
        "where the server answered at once and 21.47 ms where it waited 20 ms (tests/unit/fixtures/wrk2): 1 to 1.5 ms "
        "more; the lab's bridge or LAN adds well under a millisecond. The app's p50 is known only to within its "
        "histogram bucket, so the generator's corrected p50 is held against that bucket's upper bound plus 5 ms: "
        "beyond it the requests queued outside the app's request handling, as in report 2 (the app's p50 near 1 s, "
        "the generator's 4 to 8 s behind 200 busy Tomcat threads). WARN: the figures are sound, the latency measured "
        "is partly a queue's.",
    ),
    max_loadgen_cpu_busy=Threshold(
        0.80,
        "Hyperfoil fails a run when a load-generator CPU is more than 80% busy: above that the "
        "generator's own scheduling delays show up as app latency.",
    ),
    max_dropped_share=Threshold(
        0.001,
        "Requests the load generator could not start on schedule, as a share of those it was to "
        "offer (sent + dropped). A few are scheduling noise: a CI run kept 100.0% of its rate with "
        "13 dropped in 45,000 (0.03%), and naming the generator for them blamed a tier that kept up. "
        "Above 0.1% of the offered requests the rate asked was not offered: the latency measured "
        "belongs to a lower load, and the generator limited the run unless a tier behind it queued.",
    ),
    app_cpu_well_below=Threshold(
        0.50,
        "Report 1, steps 2-3: the app used < 0.5 core, then 4.5 of 32, while MySQL and its disk "
        "limited the run. An app using under half its allotted cores is not what limited it.",
    ),
    db_cpu_busy=Threshold(
        0.80,
        "A DB using over 80% of its CPUs queues queries: it, not the app, sets the throughput.",
    ),
    db_disk_busy=Threshold(
        0.80,
        "Report 1, step 2: the DB disk was the bottleneck. A device busy over 80% of the window "
        "is saturated (its queue grows).",
    ),
    db_pool_waiting=Threshold(
        0.5,
        "Requests waiting for a DB connection, on average over the window: half a request always "
        "waiting means the DB's answers, not the app's CPU, set the pace (a pool that keeps up has 0). "
        "With the DB's CPUs busy (shared cores count: co-located tiers starve it too) the DB limited the run.",
    ),
    db_threads_running=Threshold(
        2.0,
        "Statements in progress in the DB (Threads_running), on average over the scrapes: the "
        "exporter's own SHOW STATUS is one; two or more means app statements were still in the DB "
        "at every scrape, where a DB keeping up at benchmark rates (~1 ms per statement) shows ~0. "
        "Without that queue, busy shared CPUs and pool waits point at the app's CPU, not the DB.",
    ),
    max_write_share_drift=Threshold(
        0.05,
        "Report 1's open problem: the mix drifted from write-heavy to read-heavy as the table "
        "filled. Over 5 percentage points of write share between the first and last third, the "
        "end of the run measured another workload than its start.",
    ),
    statements_per_request_tolerance=Threshold(
        0.05,
        "Every app must do the same work (apps/contract/README.md: DB statements per request). "
        "One statement more or less per request is a difference of 1.0. The lab's own statements "
        "(the DB exporter's queries) are measured at rest after the run and taken off; what "
        "remains (pools opening connections) stays far below 0.05 per request.",
    ),
    max_jit_compile_fraction=Threshold(
        0.01,
        "Report 1's open problem: without warm-up, interpreted and compiled code were mixed. A "
        "warmed-up JVM compiles almost nothing; JIT time over 1% of the window means it still was.",
    ),
    max_load_start_late_fraction=Threshold(
        0.02,
        "Issue 24: two loadgen hosts started 1,507 ms after the window's agreed start while the DB host ran "
        "four busy loops. A tool that starts late sends its share that much past the window's end: the window "
        "reads the CPU of fewer requests than it counts, and its first moments ran below the rate. Up to 2% of "
        "the window is within a scrape's own jitter and a CPU figure's noise; beyond it the run says so.",
    ),
    warmup_settled_s=Threshold(
        5,
        "Issue 24: a 10 s warm-up of zipcodes at 300 req/s ended answering 40 a second at a p99 of 9.2 s, and "
        "the window that followed measured the backlog of a cold app. A warm-up is long enough when its last "
        "seconds already hold what the window must: the rate asked (achieved_rate's 95%), no error, the p99 "
        "within the SLO. Its last 5 s (one step of the app's histogram at the lab's 5 s scrape) are judged: "
        "long enough that a second's jitter does not decide, short enough to be the warm-up's end.",
    ),
)


def dropped_share(run: RunResult) -> float | None:
    """Requests the load generator dropped (could not start on schedule) as a share of those it
    was to offer, sent + dropped; None when its tool reports no drops (`dropped_iterations` is
    only in results of k6, retired: wrk2 and vegeta send late rather than drop)."""
    if run.dropped_iterations is None:
        return None
    offered = run.requests + run.dropped_iterations
    return run.dropped_iterations / offered if offered > 0 else None


NO_PROMETHEUS = "not evaluated: no Prometheus data"


def clock(unix_s: float) -> str:
    """A moment as the sentences give it: its UTC time of day, e.g. 09:00:12Z."""
    return datetime.datetime.fromtimestamp(unix_s, datetime.timezone.utc).strftime("%H:%M:%SZ")


def window_start(run: RunResult) -> float | None:
    """The measured window's start, unix seconds; None when the run did not record it."""
    if run.started_at is None:
        return None
    return datetime.datetime.fromisoformat(run.started_at.replace("Z", "+00:00")).timestamp()


def app_restart(run: RunResult, obs: Observations) -> str | None:
    """The app's restart as the sentences state it, when its JVM started in the measured window; else None."""
    start = window_start(run)
    started = obs.app_jvm_started_at
    if start is None or started is None or started <= start:
        return None
    return f"the app restarted {started - start:.0f} s into the measured window (its JVM started at {clock(started)})"


def db_up_metric(obs: Observations) -> str:
    """The metric that says the DB is up, as the sentences name it: the engine's (obs.db_name, "PostgreSQL 15.14
    on ..."), MariaDB/MySQL's where the run did not record it."""
    if (obs.db_name or "").startswith("PostgreSQL"):
        return "postgres_exporter's pg_up"
    return "mysqld_exporter's mysql_up"


def db_outage(obs: Observations) -> str | None:
    """The DB's outage as the sentences state it, when its exporter saw it down in the window; else None."""
    if not obs.db_down_s:
        return None
    since = f" from {clock(obs.db_down_from)}" if obs.db_down_from is not None else " in the measured window"
    return f"the DB was down for ~{obs.db_down_s:.0f} s{since} ({db_up_metric(obs)} 0)"


def _reasons(obs: Observations, names: list[str]) -> str:
    """Why figures are missing, as the observer said it; "not recorded why" where it did not."""
    return "; ".join(dict.fromkeys(obs.unobserved.get(n, "not recorded why") for n in names))


def _not_observed(obs: Observations, *names: str, what: str) -> str:
    """Why a rule could not be evaluated: the observer's reason where it gave one."""
    reasons = [obs.unobserved[n] for n in names if n in obs.unobserved]
    if reasons:
        return "not evaluated: " + "; ".join(dict.fromkeys(reasons))
    return f"{NO_PROMETHEUS} {what}"


@dataclass(frozen=True)
class RuleResult:
    rule: str
    status: Status
    evidence: str


Rule = Callable[[RunResult, Observations, Thresholds], RuleResult]


def _result(rule: str, status: Status, evidence: str) -> RuleResult:
    return RuleResult(rule, status, evidence)


def app_not_restarted(run: RunResult, obs: Observations, t: Thresholds) -> RuleResult:
    """The app's JVM started again inside the measured window (crashed and restarted): INVALID."""
    name = "app_not_restarted"
    if obs.app_jvm_started_at is None:
        return _result(name, Status.NOT_EVALUATED, _not_observed(
            obs, "app_jvm_started_at", what="on the app's JVM (process-exporter's group app-java)"))
    start = window_start(run)
    if start is None:
        return _result(name, Status.NOT_EVALUATED, "not evaluated: the run recorded no start of its measured window")
    restarted = app_restart(run, obs)
    # The latest start tells that the JVM started again, not how often: one restart at least.
    if restarted is not None and 1 > t.max_app_restarts.value:
        return _result(name, Status.INVALID, restarted)
    return _result(name, Status.VALID, f"the app's JVM started at {clock(obs.app_jvm_started_at)}, "
                                       f"{start - obs.app_jvm_started_at:.0f} s before the measured window, "
                                       "and did not start again in it")


def db_up(run: RunResult, obs: Observations, t: Thresholds) -> RuleResult:
    """The DB's exporter saw it down (mysql_up or pg_up 0) in the measured window: INVALID."""
    name = "db_up"
    if obs.db_down_s is None:
        return _result(name, Status.NOT_EVALUATED, _not_observed(
            obs, "db_down_s", what=f"on the DB's availability ({db_up_metric(obs)})"))
    outage = db_outage(obs)
    if outage is not None and obs.db_down_s > t.max_db_down_s.value:
        return _result(name, Status.INVALID, outage)
    return _result(name, Status.VALID, f"the DB was up at every scrape of the measured window ({db_up_metric(obs)} 1)")


def service_name(tier: str, obs: Observations) -> str:
    """The tier's own service as the sentences name it: "MariaDB 10.11", "the app's JVM", "the load generator"."""
    if tier == "db":
        return (obs.db_name or "the DB's server").split(" on ")[0]
    return {"app": "the app's JVM", "loadgen": "the load generator"}.get(tier, f"the {tier} tier's service")


def cpu_split(tier: str, cpu: TierCpu | None, obs: Observations) -> tuple[float, float] | None:
    """The tier's busy cores split into its own service's (process-exporter's group of it over the window)
    and every other process of its host's (a neighbour, a hog); None where the service's was not observed."""
    service = (obs.service_cpu or {}).get(tier)
    if cpu is None or service is None:
        return None
    own = min(service, cpu.busy_cores)
    return own, cpu.busy_cores - own


def host_cpu(tier: str, cpu: TierCpu, obs: Observations, threshold: float) -> tuple[str, bool]:
    """A tier's busy CPU as the audit and the attribution both say it, and whether its own service is
    what filled it: False where the service alone stayed within THRESHOLD of the host's cores and other
    processes took at least the headroom above it (a host starved by something else, never credited to the
    service; a sliver of other processes on a host its service filled to the threshold is not that, as
    attribution.stretch_starved judges a stretch). Its share unseen, the host's figure stands for the
    service, as before the split was kept."""
    figure = f"{cpu.busy_cores:.2f} of {cpu.allotted_cores:g} cores ({cpu.busy_fraction:.0%})"
    split = cpu_split(tier, cpu, obs)
    if split is None:
        return figure, True
    own, other = split
    name = service_name(tier, obs)
    waited = (obs.service_waited or {}).get(tier)
    # How long its threads waited for a CPU over the same window: what tells a service its host starved from
    # one beside whose idle time other processes ran.
    waits = "" if waited is None else f" (its threads waited {waited:.2f} s per second for a CPU)"
    if not starved_by_others(own, cpu.busy_cores, cpu.allotted_cores, threshold):
        return f"{figure}, {name} itself {own:.2f} of them{waits}", True
    return (f"{figure}, of which {name} used {own:.2f} and other processes of its host {other:.2f}: starved by "
            f"other processes than {name}{waits}"), False


def error_kinds(run: RunResult) -> str:
    """The run's errors by kind, e.g. "timeout 2000, connect 140"."""
    return ", ".join(f"{kind} {count}" for kind, count in run.errors.by_kind().items())


def no_errors(run: RunResult, obs: Observations, t: Thresholds) -> RuleResult:
    """Any non-2xx response, socket error or timeout: INVALID."""
    name = "no_errors"
    total = run.errors.total()
    if total > t.max_errors.value:
        evidence = f"{total} errors in {run.requests} requests ({error_kinds(run)})"
        timeout_s = run.scenario.parameters.get("timeout_s") if run.scenario else None
        if run.errors.timeout and timeout_s:
            # vegeta gives up on such a request; wrk2 counts it at each of its checks (every 2 s) and takes its answer.
            evidence += f"; a timeout is a request unanswered after {timeout_s} s"
            evidence += ", counted at each of wrk2's checks every 2 s" if run.tool == "wrk2" else ""
        calibration_ms = run.scenario.parameters.get("wrk2_calibration_ms") if run.scenario else None
        if run.tool == "wrk2" and calibration_ms:
            # wrk.c counts socket errors from the first request on; only the histogram is reset.
            evidence += (f"; wrk2 counts them over its whole invocation, its {int(calibration_ms) / 1000:g} s of "
                         "calibration included: a warm-up phase keeps a cold app's first requests out")
        return _result(name, Status.INVALID, evidence)
    return _result(name, Status.VALID, f"no errors in {run.requests} requests")


def achieved_rate(run: RunResult, obs: Observations, t: Thresholds) -> RuleResult:
    """Achieved rate below 95% of the target: INVALID. With several loadgen hosts, each host's
    against its own share too: one that fell short is a generator that was not there, even where
    another host's surplus hides it in the sum."""
    name = "achieved_rate"
    minimum = t.min_achieved_fraction.value
    fraction = run.achieved_rate / run.target_rate
    evidence = f"achieved {run.achieved_rate:g} req/s of {run.target_rate:g} asked ({fraction:.1%}; minimum {minimum:.0%})"
    short = []
    if run.loadgen_shares:
        hosts = []
        for host in run.loadgen_shares:
            host_fraction = host.achieved_rate / host.target_rate
            hosts.append(f"{host.host} {host.achieved_rate:g} of {host.target_rate:g} ({host_fraction:.1%})")
            if host_fraction < minimum:
                short.append(host.host)
        evidence += f"; per loadgen host: {', '.join(hosts)}"
        if short:
            evidence += f"; short of its share: {', '.join(short)}"
    share = dropped_share(run)
    if run.dropped_iterations and share is not None:
        evidence += (f"; {run.dropped_iterations} of {run.requests + run.dropped_iterations} offered requests "
                     f"dropped by {run.tool} ({share:.2%}; tolerance {t.max_dropped_share.value:.1%})")
    status = Status.INVALID if fraction < minimum or short else Status.VALID
    return _result(name, status, evidence)


def p99_against_slo(p99_ms: float | None, slo_p99_ms: float | None, t: Thresholds = THRESHOLDS) -> RuleResult:
    """The slo_p99 rule on its two figures; `perflab sweep` judges each step against its SLO with it."""
    name = "slo_p99"
    if slo_p99_ms is None:
        return _result(name, Status.NOT_EVALUATED, "not evaluated: no p99 SLO is known for the run "
                                                   "(slo_p99_ms in the scenario, or SLO_P99_MS=)")
    if p99_ms is None:
        return _result(name, Status.NOT_EVALUATED, "not evaluated: the run reported no corrected p99")
    maximum = t.max_p99_to_slo.value
    shares = f"({p99_ms / slo_p99_ms:.0%}; maximum {maximum:.0%})"
    if p99_ms > slo_p99_ms * maximum:
        return _result(name, Status.WARN,
                       f"corrected p99 {p99_ms:g} ms is over the p99 SLO of {slo_p99_ms:g} ms {shares}: "
                       "latency beyond the SLO means the rate asked is not sustained")
    return _result(name, Status.VALID, f"corrected p99 {p99_ms:g} ms within the p99 SLO of {slo_p99_ms:g} ms {shares}")


def slo_p99(run: RunResult, obs: Observations, t: Thresholds) -> RuleResult:
    """Corrected p99 above the scenario's SLO: WARN. The figures are sound (an INVALID run is one whose
    figures cannot be trusted); they show an app that does not sustain the rate within its SLO, which a
    comparison at that rate must show rather than leave out. `make sweep` stops there."""
    slo = run.scenario.slo_p99_ms if run.scenario is not None else None
    return p99_against_slo(run.latency_corrected.percentiles_ms.get(percentile_key(99)), slo, t)


def _ms(value: float) -> str:
    """Milliseconds as the sentences give them: 0.458, 21.5, 1,025."""
    return f"{value:,.0f}" if value >= 100 else f"{value:.3g}"


def queues_in_front(obs: Observations) -> str | None:
    """What the app's gauges saw queue in front of its request handling in the window, as the sentences
    say it (the request threads' queue, virtual threads waiting for a carrier); None where nothing was seen."""
    saturation = obs.saturation or Saturation()
    seen = []
    if saturation.app_request_queue_max is not None and saturation.app_request_queue_max >= 1:
        seen.append(f"up to {saturation.app_request_queue_max:g} requests waited for one of the app's request threads "
                    f"({saturation.app_request_queue_avg or 0:.1f} on average, perflab_request_queue)")
    if saturation.app_virtual_queue_max is not None and saturation.app_virtual_queue_max >= 1:
        seen.append(f"up to {saturation.app_virtual_queue_max:g} virtual threads waited for a carrier "
                    f"({saturation.app_virtual_queue_avg or 0:.1f} on average, perflab_virtual_thread_queue)")
    return "; ".join(seen) or None


def queue_outside_the_app(run: RunResult, obs: Observations, t: Thresholds) -> RuleResult:
    """The generator's corrected p50 above the app's own p50 (the top of its histogram bucket) by more
    than the network explains: WARN (requests queued before the app's request handling timed them)."""
    name = "queue_outside_the_app"
    server = obs.server_latency
    if server is None:
        return _result(name, Status.NOT_EVALUATED, _not_observed(
            obs, "server_latency", what="on the app's latency histogram (http_server_requests_seconds)"))
    p50 = run.latency_corrected.percentiles_ms.get(percentile_key(50))
    if p50 is None:
        return _result(name, Status.NOT_EVALUATED, "not evaluated: the run reported no corrected p50")
    own, high = server.p50, server.p50.bucket_high_ms
    if high is None:
        return _result(name, Status.NOT_EVALUATED, f"not evaluated: the app's own p50 is beyond its histogram's last "
                                                   f"bound ({_ms(own.value_ms)} ms): how far cannot be told")
    allowance = t.max_p50_beyond_server_ms.value
    server_text = (f"the app's own p50 {_ms(own.value_ms)} ms (its histogram's bucket {_ms(own.bucket_low_ms)} to "
                   f"{_ms(high)} ms, over {server.requests:,.0f} requests on {', '.join(server.routes)})")
    if p50 > high + allowance:
        queued = queues_in_front(obs)
        where = f"; the app's gauges saw a queue there: {queued}" if queued is not None else ""
        return _result(name, Status.WARN,
                       f"the generator's corrected p50 {_ms(p50)} ms exceeds {server_text} by more than its bucket's "
                       f"top and {allowance:g} ms for the network ({_ms(high + allowance)} ms): requests queued outside "
                       "the app's request handling: in the generator, the network, or in front of the app's request "
                       f"threads{where}")
    return _result(name, Status.VALID, f"the generator's corrected p50 {_ms(p50)} ms is within {allowance:g} ms of the "
                                       f"top of the bucket of {server_text}")


def loadgen_cpu(run: RunResult, obs: Observations, t: Thresholds) -> RuleResult:
    """A load generator more than 80% busy: INVALID (the generator was measured, not the app).
    With several loadgen hosts, each is judged: one over the threshold makes the run INVALID."""
    name = "loadgen_cpu"
    maximum = t.max_loadgen_cpu_busy.value
    if obs.loadgen_hosts:
        hosts = obs.loadgen_hosts
        figures = ", ".join(f"{host} {cpu.busy_cores:.2f} of {cpu.allotted_cores:g} cores ({cpu.busy_fraction:.0%})"
                            for host, cpu in hosts.items())
        over = [host for host, cpu in hosts.items() if cpu.busy_fraction > maximum]
        evidence = f"{len(hosts)} load generators used {figures}; maximum {maximum:.0%}"
        if over:
            return _result(name, Status.INVALID, f"{evidence}, exceeded by {', '.join(over)}")
        return _result(name, Status.VALID, evidence)
    if obs.loadgen_cpu is None:
        return _result(name, Status.NOT_EVALUATED, NO_PROMETHEUS)
    cpu = obs.loadgen_cpu
    evidence = (
        f"load generator used {cpu.busy_cores:.2f} of {cpu.allotted_cores:g} cores "
        f"({cpu.busy_fraction:.0%}; maximum {t.max_loadgen_cpu_busy.value:.0%})"
    )
    status = Status.INVALID if cpu.busy_fraction > t.max_loadgen_cpu_busy.value else Status.VALID
    return _result(name, status, evidence)


@dataclass(frozen=True)
class DbStretch:
    """The DB host's longest stretch of the window over one of its thresholds, a fifth of the window or more
    (attribution.db_stretches, from utilization.json's series), and the app's CPU over the same scrapes: what
    app_is_bottleneck judges where the window's averages hide it (issue 24). FIGURE is what crossed its
    threshold at every scrape of it: "CPU" (db_cpu_busy), "disk" (db_disk_busy) or "statement queue"
    (db_threads_running)."""

    figure: str
    from_s: float  # after the window's start
    seconds: float
    # On average over the stretch: the host's busy cores over its allotted ones (CPU), the share of the time its
    # busiest disk was busy (disk), the statements in progress in the DB (statement queue).
    level: float
    app_busy_fraction: float | None  # the app's busy cores over its allotted ones over it; None: not observed
    allotted_cores: float | None = None  # CPU: the DB host's
    service_cores: float | None = None  # CPU: the DB's own service's cores over it; None: not observed


def starved_by_others(service_cores: float, busy_cores: float, allotted_cores: float, threshold: float) -> bool:
    """Whether a host's busy cores were other processes' doing: its service stayed within THRESHOLD of its
    cores and the other processes took at least the headroom above it (host_cpu's and the stretches' test)."""
    return service_cores / allotted_cores <= threshold and (busy_cores - service_cores) / allotted_cores >= 1 - threshold


def _stretch_where(what: str, from_s: float, seconds: float, there: str, whole: str | None) -> str:
    return f"{what} from {from_s:.0f} s for {seconds:.0f} s of the window ({there}{f'; {whole}' if whole else ''})"


def stretch_words(name: str, threshold: float, from_s: float, seconds: float, busy_fraction: float,
                  allotted_cores: float, service_cores: float | None, average: float | None = None) -> tuple[str, bool]:
    """A tier's stretch of the window over its CPU THRESHOLD as the audit and the attribution both say it
    (NAME its service), and whether its service filled it (False: starved by other processes)."""
    where = _stretch_where(f"its CPU over {threshold:.0%}", from_s, seconds, f"{busy_fraction:.0%} busy there",
                           f"{average:.0%} over the whole window" if average is not None else None)
    if service_cores is None:
        return f"{where}, by every process of the host ({name}'s own share not observed)", True
    busy = busy_fraction * allotted_cores
    if starved_by_others(service_cores, busy, allotted_cores, threshold):
        return (f"{where}, of which {name} used {service_cores:.2f} of {allotted_cores:g} cores and other processes "
                f"of its host {max(0.0, busy - service_cores):.2f}: starved by other processes than {name}"), False
    return f"{where}, {name} itself {service_cores:.2f} of {allotted_cores:g} cores", True


def disk_stretch_words(threshold: float, from_s: float, seconds: float, busy_fraction: float,
                       average: float | None = None) -> str:
    """The DB host's stretch of the window with its busiest disk busy THRESHOLD of the time or more, as the
    audit and the attribution both say it (AVERAGE: over the whole window)."""
    return _stretch_where(f"its disk busy {threshold:.0%} of the time or more", from_s, seconds,
                          f"{busy_fraction:.0%} busy there",
                          f"{average:.0%} over the whole window" if average is not None else None)


def statements_stretch_words(threshold: float, from_s: float, seconds: float, running: float,
                             average: float | None = None) -> str:
    """The DB's stretch of the window with THRESHOLD statements or more in progress, as the audit and the
    attribution both say it (AVERAGE: over the whole window)."""
    return _stretch_where(f"its statement queue at {threshold:g} or more statements in progress", from_s, seconds,
                          f"{running:.1f} on average there",
                          f"{average:.1f} over the whole window" if average is not None else None)


def _db_stretch_said(stretch: DbStretch, obs: Observations, t: Thresholds) -> tuple[str, bool]:
    """A DB stretch as the sentences say it, and whether the DB's own service filled it (False: its host
    starved by other processes; a disk or a statement queue is the DB's own)."""
    if stretch.figure == "CPU":
        return stretch_words(service_name("db", obs), t.db_cpu_busy.value, stretch.from_s, stretch.seconds,
                             stretch.level, stretch.allotted_cores or 1, stretch.service_cores,
                             obs.db_cpu.busy_fraction if obs.db_cpu is not None else None)
    if stretch.figure == "disk":
        return disk_stretch_words(t.db_disk_busy.value, stretch.from_s, stretch.seconds, stretch.level,
                                  obs.db_disk_busy), True
    running = (obs.saturation or Saturation()).db_threads_running_avg
    return statements_stretch_words(t.db_threads_running.value, stretch.from_s, stretch.seconds, stretch.level,
                                    running), True


def _db_stretch_judged(name: str, app_evidence: str, stretches: Sequence[DbStretch], obs: Observations,
                       t: Thresholds) -> RuleResult:
    """app_is_bottleneck where the window's averages passed it but the DB host was over its CPU, disk or
    statement-queue threshold for a stretch of the window: INVALID where the app was well below its cores over
    such a stretch (the DB, or whatever starved its host, limited that part of the run), else VALID saying the
    stretches. A lab run: 16 busy loops on the db host from a third of the window read "was not saturated" on
    the window's average while the attribution named the db host for its stretch."""
    db = obs.db_name or "the database"
    limited: list[str] = []
    unseen: list[str] = []
    fine: list[str] = []
    for stretch in stretches:
        text, own = _db_stretch_said(stretch, obs, t)
        if stretch.app_busy_fraction is None:
            unseen.append(text)
            continue
        app_text = f"the app used {stretch.app_busy_fraction:.0%} of its cores over it"
        if stretch.app_busy_fraction < t.app_cpu_well_below.value:
            by = f"{db} was the bottleneck there" if own else f"other processes of its host starved {service_name('db', obs)} there"
            limited.append(f"{db} had {text}; {app_text}, well below, while {by}")
        else:
            fine.append(f"{text}, and {app_text}, not well below them")
    if limited:
        return _result(name, Status.INVALID, f"not comparable for a stretch of the window: {'; '.join(limited)}")
    if unseen:
        return _result(name, Status.NOT_EVALUATED, f"not evaluated: {db} had {'; '.join(unseen)}, and the app's CPU "
                                                   f"over {'that stretch' if len(unseen) == 1 else 'those stretches'} "
                                                   "was not observed")
    return _result(name, Status.VALID, f"{app_evidence}; {db} had {'; '.join(fine)}")


def app_is_bottleneck(run: RunResult, obs: Observations, t: Thresholds, stretches: Sequence[DbStretch] = ()) -> RuleResult:
    """App CPU well below its cores while the DB's CPU or disk is busy: INVALID for comparison. An app
    well below its cores beside a DB whose CPU or disk was not seen is NOT_EVALUATED: a DB not seen
    busy is not a DB seen idle. STRETCHES (the DB host's saturated stretches of its CPU, disk and statement
    queue, where the window's series were kept) are judged where the averages say the DB was not busy."""
    name = "app_is_bottleneck"
    if obs.app_cpu is None or (obs.db_cpu is None and obs.db_disk_busy is None):
        return _result(name, Status.NOT_EVALUATED, f"{NO_PROMETHEUS} for the app's and the DB's CPU and disk")
    app = obs.app_cpu
    app_evidence = f"app used {app.busy_cores:.2f} of {app.allotted_cores:g} cores ({app.busy_fraction:.0%})"
    db = obs.db_name or "the database"
    busy: list[str] = []
    starved: list[str] = []
    if obs.db_cpu is not None and obs.db_cpu.busy_fraction > t.db_cpu_busy.value:
        text, own = host_cpu("db", obs.db_cpu, obs, t.db_cpu_busy.value)
        (busy if own else starved).append(f"CPU {text}" if own else f"CPU was busy: {text}")
    if obs.db_disk_busy is not None and obs.db_disk_busy > t.db_disk_busy.value:
        busy.append(f"disk busy {obs.db_disk_busy:.0%} of the window")
    shared = (obs.cpus_busy or {}).get("db")
    saturation = obs.saturation or Saturation()
    waiting, running = saturation.app_pool_waiting_avg, saturation.db_threads_running_avg
    unseen: list[str] = []
    if shared is not None and shared > t.db_cpu_busy.value:
        if waiting is not None and waiting >= t.db_pool_waiting.value and running is not None \
                and running >= t.db_threads_running.value:
            busy.append(f"its CPUs {shared:.0%} busy with every process of the machine while {running:.1f} statements "
                        f"were in progress in it and the app's requests waited for a DB connection "
                        f"({waiting:.1f} on average)")
        elif (waiting is None or running is None) and (waiting is None or waiting >= t.db_pool_waiting.value) \
                and (running is None or running >= t.db_threads_running.value):
            # Busy shared CPUs name the DB only with its queue and the app's waits: without them, unknown.
            missing = ["saturation.app_pool_waiting_avg"] if waiting is None else []
            missing += ["saturation.db_threads_running_avg"] if running is None else []
            unseen.append(f"whether its CPUs, {shared:.0%} busy with every process of the machine, held statements "
                          f"queued and the app's requests waiting ({_reasons(obs, missing)})")
    well_below = app.busy_fraction < t.app_cpu_well_below.value
    if well_below and busy:
        also = f"; its host's {' and '.join(starved)}" if starved else ""  # (a disk bottleneck and a hog)
        return _result(
            name,
            Status.INVALID,
            f"not comparable: {app_evidence} while {db} was the bottleneck: {' and '.join(busy)}{also}",
        )
    if well_below and starved:
        # Issue 24: DB_CPU_HOG=4 read "MariaDB ... was the bottleneck: CPU 0.84 of 1 cores", the hog's CPU
        # counted as MariaDB's. The app was not what limited the run, and neither was MariaDB.
        return _result(name, Status.INVALID, f"not comparable: {app_evidence} while the DB host's "
                                             f"{' and '.join(starved)}")
    if obs.db_down_s:
        # Down is not "not saturated": whatever the app used, the DB was what its requests lacked.
        return _result(name, Status.INVALID, f"not comparable: {app_evidence} while {db} was down for "
                                             f"~{obs.db_down_s:g} s of the window (rule db_up)")
    unseen = [f"its {what} ({_reasons(obs, [figure])})"
              for what, figure, value in (("CPU", "db_cpu", obs.db_cpu), ("disk", "db_disk_busy", obs.db_disk_busy))
              if value is None] + unseen
    if well_below and unseen:
        return _result(name, Status.NOT_EVALUATED,
                       f"not evaluated: {app_evidence}, well below its cores, and whether {db} limited it cannot be "
                       f"told: not observed: {'; '.join(unseen)}")
    if stretches and not (busy or starved):
        return _db_stretch_judged(name, app_evidence, stretches, obs, t)
    db_state = f"busy: {', '.join(busy + starved)}" if busy or starved else "was not saturated"
    if not (busy or starved) and unseen:
        db_state = f"not observed: {'; '.join(unseen)}; the app was not well below its cores"
    return _result(name, Status.VALID, f"{app_evidence}; {db} {db_state}")


def tiers_not_colocated(run: RunResult, obs: Observations, t: Thresholds) -> RuleResult:
    """Two tiers on one machine (sharing its kernel, and maybe CPUs): WARN."""
    name = "tiers_not_colocated"
    if obs.placements is None:
        return _result(name, Status.NOT_EVALUATED, "not evaluated: no placement from the inventory")
    shared: list[str] = []
    for a, b in itertools.combinations(obs.placements, 2):
        if a.machine != b.machine:
            continue
        if a.cpus is None or b.cpus is None:
            cpus = "all CPUs shared"
        else:
            common = sorted(set(a.cpus) & set(b.cpus))
            cpus = f"CPUs {','.join(map(str, common))} shared" if common else "disjoint CPUs"
        shared.append(f"{a.tier} ({a.host}) and {b.tier} ({b.host}) on machine {a.machine}, {cpus}")
    if shared:
        return _result(name, Status.WARN, "co-located: " + "; ".join(shared))
    return _result(name, Status.VALID, f"{len(obs.placements)} tiers on separate machines")


def warmup_settled(end: WarmupEnd, slo_p99_ms: float | None, t: Thresholds) -> tuple[bool, str]:
    """Whether the warm-up's last seconds answered the rate asked, without error, within the SLO; and
    what they held, as the sentences say it."""
    minimum = t.min_achieved_fraction.value
    fraction = end.answered_per_s / end.target_rate
    latency = "corrected p99" if end.source == "vegeta" else "the app's own p99"
    figures = [f"its last {end.seconds:g} s answered {end.answered_per_s:.1f} of {end.target_rate:g} req/s "
               f"({fraction:.0%}; minimum {minimum:.0%})"]
    settled = fraction >= minimum
    if end.errors:
        figures.append(f"{end.errors} errors")
        settled = False
    if end.p99_ms is None:
        figures.append(f"no {latency}: no answer ended in them")
        settled = False
    elif slo_p99_ms is not None:
        within = end.p99_ms <= slo_p99_ms * t.max_p99_to_slo.value
        figures.append(f"{latency} {_ms(end.p99_ms)} ms {'within' if within else 'over'} the SLO of {slo_p99_ms:g} ms")
        settled = settled and within
    else:
        figures.append(f"{latency} {_ms(end.p99_ms)} ms (no SLO known)")
    return settled, ", ".join(figures)


def warmed_up(run: RunResult, obs: Observations, t: Thresholds) -> RuleResult:
    """Warm-up missing, shorter than the scenario's own (not WARMUP='s: that is what ran), or not settled
    at its end (its last seconds short of the rate, failing, or over the SLO): WARN."""
    name = "warmed_up"
    if obs.warmup_s is None:
        return _result(name, Status.NOT_EVALUATED, "not evaluated: the run recorded no warm-up")
    if obs.warmup_s <= 0:
        return _result(name, Status.WARN, "no warm-up ran: interpreted and compiled code mixed in the measurement")
    if run.scenario is None:
        ran = f"{obs.warmup_s:g} s of warm-up ran, but no scenario was recorded"
        return _result(name, Status.NOT_EVALUATED, f"not evaluated: {ran}")
    asked, scenario = run.scenario.scenario_warmup_s, run.scenario.name
    if asked is None:
        return _result(name, Status.NOT_EVALUATED, f"not evaluated: {obs.warmup_s:g} s of warm-up ran; the warm-up "
                                                   f"scenario {scenario}'s own file asks for was not recorded (a run "
                                                   "made before perflab kept it beside WARMUP=)")
    if obs.warmup_s < asked:
        shorter = f"warm-up {obs.warmup_s:g} s, shorter than the {asked:g} s scenario {scenario} asks"
        return _result(name, Status.WARN, shorter)
    length = f"warm-up {obs.warmup_s:g} s (scenario {scenario} asks {asked:g} s)"
    if obs.warmup_end is None:
        why = obs.unobserved.get("warmup_end", "not recorded why")
        return _result(name, Status.NOT_EVALUATED, f"not evaluated: {length}, but whether it settled was not "
                                                   f"observed: {why}")
    settled, figures = warmup_settled(obs.warmup_end, run.scenario.slo_p99_ms, t)
    if not settled:
        return _result(name, Status.WARN, f"{length} had not settled: {figures}")
    return _result(name, Status.VALID, f"{length}; {figures}")


def _counted_by(obs: Observations) -> str:
    """Where the requests the mix and the statements are of were counted by the loadgen, not the app."""
    return f" (requests counted by the loadgen: {obs.requests_counted_by})" if obs.requests_counted_by else ""


def steady_mix(run: RunResult, obs: Observations, t: Thresholds) -> RuleResult:
    """Read/write mix drifting more than 5 points between the first and last third: WARN."""
    name = "steady_mix"
    if obs.write_share_by_third is None:
        return _result(name, Status.NOT_EVALUATED,
                       _not_observed(obs, "write_share_by_third", what="on the read/write mix"))
    first, middle, last = obs.write_share_by_third
    drift = round(abs(last - first), 9)  # 0.55 - 0.50 is 0.05000000000000004 in binary floats
    evidence = (
        f"write share {first:.1%} / {middle:.1%} / {last:.1%} by third; drift {drift * 100:.1f} points "
        f"(maximum {t.max_write_share_drift.value * 100:g}){_counted_by(obs)}"
    )
    return _result(name, Status.WARN if drift > t.max_write_share_drift.value else Status.VALID, evidence)


def same_db_work(run: RunResult, obs: Observations, t: Thresholds) -> RuleResult:
    """DB sessions without TLS, or statements per request not the contract's: INVALID. Either half
    unseen leaves the rule NOT_EVALUATED, whole, unless the other half found the work not the same:
    TLS seen alone does not make the work the same (issue 24: VALID on "statements per request not
    evaluated: no Prometheus data")."""
    name = "same_db_work"
    if obs.db_sessions is None and obs.statements_per_request is None:
        return _result(name, Status.NOT_EVALUATED, _not_observed(
            obs, "db_sessions", "statements_per_request", what="on DB sessions and statements"))
    problems: list[str] = []
    checked: list[str] = []
    unseen: list[str] = []
    if obs.db_sessions is None:
        unseen.append("TLS " + _not_observed(obs, "db_sessions", what="on DB sessions"))
    elif obs.db_sessions.tls < obs.db_sessions.total:
        untls = obs.db_sessions.total - obs.db_sessions.tls
        problems.append(f"{untls} of {obs.db_sessions.total} DB sessions without TLS")
    else:
        checked.append(f"all {obs.db_sessions.total} DB sessions used TLS")
    observed, expected = obs.statements_per_request, obs.expected_statements_per_request
    restarted = app_restart(run, obs)
    if observed is not None and restarted is not None:
        # Figures written before the observer detected counter resets: the app's request counters
        # started again from zero with the JVM, so the requests the statements are divided by are
        # not the window's (issue 24: "2.78 select statements per request" after a restart).
        unseen.append(f"statements per request not evaluated: {restarted}, and its request counters started again "
                      "from zero: the window's requests are not known")
    elif observed is None or expected is None:
        missing = "expected_statements_per_request" if observed else "statements_per_request"
        default = "no contract figures for the scenario" if observed else "no statement counts"
        reason = obs.unobserved.get(missing, default)
        unseen.append(f"statements per request not evaluated: {reason}")
    else:
        tolerance = t.statements_per_request_tolerance.value
        differing = [
            f"{getattr(observed, kind):.2f} {kind} statements per request where the contract says "
            f"{getattr(expected, kind):.2f}"
            for kind in (f.name for f in fields(StatementsPerRequest))
            if abs(getattr(observed, kind) - getattr(expected, kind)) > tolerance
        ]
        problems.extend(differing)
        if not differing:
            checked.append(f"statements per request as the contract says{_counted_by(obs)}")
    if problems:
        return _result(name, Status.INVALID, "not the same work: " + "; ".join(problems))
    if unseen:
        seen = f" (seen: {'; '.join(checked)})" if checked else ""
        return _result(name, Status.NOT_EVALUATED, f"not evaluated: {'; '.join(unseen)}{seen}")
    return _result(name, Status.VALID, "; ".join(checked))


def jit_quiet(run: RunResult, obs: Observations, t: Thresholds) -> RuleResult:
    """JIT compilation still busy in the measured window: WARN. Its seconds are the app's own counter's
    (jvm_compilation_time_ms_total), or where it exports none, its CPU profile's (collect.with_profiled_jit)."""
    name = "jit_quiet"
    if obs.jit_compile_s is None:
        return _result(name, Status.NOT_EVALUATED, _not_observed(obs, "jit_compile_s", what="on JIT compilation"))
    if run.duration_s <= 0:
        return _result(name, Status.NOT_EVALUATED, "not evaluated: the measured window is empty")
    fraction = obs.jit_compile_s / run.duration_s
    evidence = (
        f"JIT compiled for {obs.jit_compile_s:g} s in the {run.duration_s:g} s window ({fraction:.2%}; "
        f"maximum {t.max_jit_compile_fraction.value:.0%})"
        + (f", counted by {obs.jit_counted_by}" if obs.jit_counted_by else "")
    )
    return _result(name, Status.WARN if fraction > t.max_jit_compile_fraction.value else Status.VALID, evidence)


def run_complete(run: RunResult, obs: Observations, t: Thresholds) -> RuleResult:
    """An interrupted run: INVALID (its window does not hold what the scenario asked)."""
    if run.incomplete_reason:
        return _result("run_complete", Status.INVALID, f"the run is incomplete: {run.incomplete_reason}")
    return _result("run_complete", Status.VALID, "the run completed")


def load_on_time(run: RunResult, obs: Observations, t: Thresholds) -> RuleResult:
    """The load started late against the window's agreed start (on its latest loadgen host): WARN when by
    more than max_load_start_late_fraction of the window, since the window's figures then miss that much
    of the load (its CPU ran past the window's end)."""
    name = "load_on_time"
    if obs.load_start_late_ms is None:
        return _result(name, Status.NOT_EVALUATED, "not evaluated: " + obs.unobserved.get(
            "load_start_late_ms", "the run recorded no start of the load against the window"))
    if run.duration_s <= 0:
        return _result(name, Status.NOT_EVALUATED, "not evaluated: the measured window is empty")
    late_ms = max(0.0, obs.load_start_late_ms)
    fraction = late_ms / 1000 / run.duration_s
    apart = (f"; the loadgen hosts started {obs.load_start_skew_ms:g} ms apart"
             if obs.load_start_skew_ms is not None and obs.load_start_skew_ms > 0 else "")
    evidence = (f"the load started {late_ms:g} ms after the window's agreed start ({fraction:.2%} of the "
                f"{run.duration_s:g} s window; maximum {t.max_load_start_late_fraction.value:.0%}){apart}")
    if fraction > t.max_load_start_late_fraction.value:
        return _result(name, Status.WARN, evidence + ": that much of the load ran past the window's end, where "
                       "its CPU is not read, and the window's first moments ran below the rate")
    return _result(name, Status.VALID, evidence)


RULES: tuple[Rule, ...] = (
    run_complete,
    app_not_restarted,
    db_up,
    no_errors,
    achieved_rate,
    slo_p99,
    queue_outside_the_app,
    loadgen_cpu,
    app_is_bottleneck,
    tiers_not_colocated,
    warmed_up,
    steady_mix,
    same_db_work,
    jit_quiet,
    load_on_time,
)


MIB = 1024 * 1024


@dataclass(frozen=True)
class AppCost:
    """What the app spent on the run: CPU seconds per 1,000 requests and its largest resident
    memory. Not a rule (nothing is judged against them); figures to compare apps by. None = not
    known, and the sentence says why."""

    cpu_s_per_1000_requests: float | None
    max_rss_bytes: float | None
    sentence: str


def app_cost(run: RunResult, obs: Observations) -> AppCost:
    """The app's CPU over the measured phase (its host's busy cores x their window, from the CPU samples
    at the window's bounds, less the lab's exporters on that host where they were read) per 1,000 requests
    the load generator made, and the app's max RSS."""
    per_1000 = None
    cpu = obs.app_cpu
    cpu_s = None if cpu is None else cpu.cpu_s_without_exporters
    if cpu is None:
        cpu_text = "CPU per 1,000 requests not evaluated: no CPU figure of the app"
    elif cpu_s is None:
        cpu_text = ("CPU per 1,000 requests not evaluated: the observations give the app's busy cores but not "
                    "the seconds they average over (written before perflab kept them)")
    elif run.requests <= 0:
        cpu_text = f"{cpu_s:.2f} CPU-s for no request"
    else:
        per_1000 = cpu_s * 1000 / run.requests
        exporters = ("" if cpu.instrument_cores is None
                     else f" less the lab's exporters' {cpu.instrument_cores:.3f} on its host")
        cpu_text = (f"{per_1000:.3f} CPU-s per 1,000 requests ({cpu_s:.2f} CPU-s, {cpu.busy_cores:.2f} cores "
                    f"over {cpu.window_s:.1f} s{exporters}, for {run.requests} requests)")
    if obs.app_max_rss_bytes is None:
        rss_text = "max RSS " + _not_observed(obs, "app_max_rss_bytes", what="on the app's memory")
    else:
        rss_text = f"max RSS {obs.app_max_rss_bytes / MIB:.1f} MiB"
    return AppCost(per_1000, obs.app_max_rss_bytes, f"{cpu_text}; {rss_text}")


@dataclass(frozen=True, kw_only=True)
class Verdict:
    """The run's verdict, every rule's outcome and what the app spent: audit.json (perflab.rundir
    reads and writes it; `perflab judge --json` prints it)."""

    schema_version: int = 1
    status: Status  # the worst of the evaluated rules; never NOT_EVALUATED
    rules: tuple[RuleResult, ...]
    # The app's cost (AppCost), stated beside the verdict, never part of it; absent from audit.json
    # written before perflab stated it.
    app_cost: str = ""
    app_cpu_s_per_1000_requests: float | None = None
    app_max_rss_bytes: float | None = None

    @property
    def not_evaluated(self) -> tuple[RuleResult, ...]:
        return tuple(r for r in self.rules if r.status is Status.NOT_EVALUATED)

    @property
    def reasons(self) -> tuple[RuleResult, ...]:
        """The rules that made the verdict what it is (empty when VALID)."""
        return tuple(r for r in self.rules if r.status in (Status.WARN, Status.INVALID))


def audit(run: RunResult, observations: Observations | None = None, thresholds: Thresholds = THRESHOLDS,
          db_stretches: Sequence[DbStretch] = ()) -> Verdict:
    """The run's verdict from its result and observations; DB_STRETCHES (attribution.db_stretches, where
    utilization.json has the series) let app_is_bottleneck judge the stretches the window's averages hide."""
    obs = observations if observations is not None else Observations()
    results = tuple(app_is_bottleneck(run, obs, thresholds, db_stretches) if rule is app_is_bottleneck
                    else rule(run, obs, thresholds) for rule in RULES)
    evaluated = [r.status for r in results if r.status is not Status.NOT_EVALUATED]
    status = max(evaluated, key=_SEVERITY.__getitem__, default=Status.VALID)
    cost = app_cost(run, obs)
    return Verdict(status=status, rules=results, app_cost=cost.sentence,
                   app_cpu_s_per_1000_requests=cost.cpu_s_per_1000_requests, app_max_rss_bytes=cost.max_rss_bytes)
