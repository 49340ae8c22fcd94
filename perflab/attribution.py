"""Which tier limited a run: each tier's utilization and saturation over the measured window, and
one sentence naming the limiting tier with its evidence, or saying that no tier was saturated
(the system kept up with the offered rate).

What happened in the window comes first, in this order: the app's JVM restarting in it, the DB
being down (then the limit: the DB), the requests that failed. A run with any of them never "kept
up", whatever its rate. "No tier was saturated" is said only when every figure the branches below
read was observed; otherwise the sentence says it cannot tell and names each figure missing with
the reason observations.json gives (`unobserved`): missing data is never read as health.

A tier limits a run when the queue in front of it grows, not merely when it is busy: a DB at 90%
CPU that answers promptly did not slow the run down. So the evidence each tier needs is a busy
resource AND a sign that the work waited for it:
- db: the app's requests waited for a DB connection (the pool's queue; every statement took
  longer than the pool could absorb) while the DB host's CPU, its disk or its statement queue
  were saturated, or its CPUs (shared cores) were while the app's were not; pool waits with an
  idle DB and an idle app mean slow round trips (network delay, locks), still the DB tier; pool
  waits with both tiers' CPUs taken by other processes are not attributed (nothing tells which);
- app: its own CPU saturated against its allotted cores, or many threads BLOCKED on monitors,
  with no wait on the DB; or its request threads (a bounded pool: Tomcat's workers, Quarkus'
  worker pool) full, with a backlog of requests waiting for one (report 2: a blocking server caps
  near threads / latency); or, where the CPU says nothing, its event loops with a backlog of tasks
  (saturated or blocked loops of a reactive app), or every carrier of its virtual threads taken
  while virtual threads wait for one (carriers pinned or blocked);
- loadgen: its own CPU over the audit's 80% (its own processes' figures, not its shared CPUs'),
  or more of the offered requests dropped than the audit tolerates (max_dropped_share, 0.1%;
  only results of the retired k6 report drops) while no tier downstream was saturated or queued
  (a generator that cannot start requests because the answers are slow is a symptom of the tier
  behind it, not the limit; a few drops in a long run are noise);
- network: a tier's interface near its link speed.
The window is judged, not only its average (issue 24): a tier's CPU, and the db tier's disk and statement
queue, over its threshold at every scrape of a stretch of a fifth of the window or more (utilization.json's
series) count as saturated, named for that stretch with its start, length and figure; the audit's
app_is_bottleneck judges the DB's stretches (db_stretches) with the same words.
Co-location matters: on the local default the db, loadgen and monitoring containers share one
core, so "the DB's CPUs were busy" may be anyone's doing; the sentence names how much the tier
itself used and how busy its CPUs were with everything, and the DB is named only with the app's
pool waits (or the DB's own CPU/disk) as evidence.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields, replace

from perflab.audit import THRESHOLDS as AUDIT_THRESHOLDS
from perflab.audit import (DbStretch, Threshold, app_restart, cpu_split, db_outage, disk_stretch_words, dropped_share,
                           error_kinds, host_cpu, service_name, starved_by_others, statements_stretch_words, stretch_words)
from perflab.observations import Observations, Saturation, TierCpu
from perflab.observe import TierSeries, Utilization
from perflab.model import SCHEMA_VERSION, RunResult, dumps, percentile_key
from perflab.profile import LayerShare, percentages


@dataclass(frozen=True)
class AttributionThresholds:
    cpu_saturated: Threshold
    db_cpu_busy: Threshold
    cpus_contended: Threshold
    db_threads_running: Threshold
    disk_busy: Threshold
    pool_waiting: Threshold
    threads_blocked: Threshold
    request_threads_busy: Threshold
    request_queue: Threshold
    event_loop_pending: Threshold
    virtual_thread_wait_ms: Threshold
    loadgen_cpu: Threshold
    dropped_share: Threshold
    network_link: Threshold
    kept_up: Threshold
    stretch_share: Threshold


THRESHOLDS = AttributionThresholds(
    cpu_saturated=Threshold(
        0.90,
        "A tier using over 90% of its allotted cores has no headroom: its run queue grows with any "
        "burst, and a constant-rate load has bursts (Poisson-like arrivals at the server).",
    ),
    db_cpu_busy=Threshold(
        AUDIT_THRESHOLDS.db_cpu_busy.value,
        "The audit's DB CPU threshold (its reason: over 80% of its CPUs a DB queues queries), for the db tier in "
        "place of cpu_saturated: issue 24 had audit.json name the DB host's CPU at 0.84 of 1 core while "
        "attribution.json said no tier was saturated. One threshold, one judgement of the same tier.",
    ),
    cpus_contended=Threshold(
        0.90,
        "The CPUs a tier may use, over 90% busy with every process of the machine (co-located tiers "
        "included): the tier waits for a core even when its own use is small.",
    ),
    db_threads_running=AUDIT_THRESHOLDS.db_threads_running,
    disk_busy=Threshold(
        AUDIT_THRESHOLDS.db_disk_busy.value,
        "The audit's DB disk threshold (report 1, step 2): a device busy over 80% of the window queues I/O.",
    ),
    pool_waiting=AUDIT_THRESHOLDS.db_pool_waiting,
    threads_blocked=Threshold(
        8,
        "JVM threads BLOCKED on a monitor at the same moment: a few is normal churn, eight or more is "
        "lock contention inside the app (report 4: pinned virtual threads).",
    ),
    request_threads_busy=Threshold(
        0.50,
        "An app's bounded pool of request threads is full when requests wait for a thread (Tomcat's "
        "executor queues a task only once every thread is taken, as Quarkus' worker pool does: JBoss "
        "Threads' EnhancedQueueExecutor, 200 threads, one of them busy with the /metrics scrape at rest, "
        "0.5% of it) while it was busy half its size or more on average: a blocking server serves at most threads / latency requests a second "
        "(report 2: 200 Tomcat threads / 0.1 s = 2,000 req/s). The average is not the pool's size: a "
        "thread between two requests is idle for an instant and a scrape samples one moment (the lab, "
        "200 threads full: 178 of 200 busy on average over 30 s, 160 over 10 s, with 130 to 175 "
        "requests waiting).",
    ),
    request_queue=Threshold(
        0.10,
        "Requests waiting for a request thread, a tenth of the pool's size or more on average: a "
        "backlog, not the moment a task waits while the pool starts a thread (the lab: 400 Tomcat "
        "threads at 300 req/s of 1 s requests queued 0.4 to 0.6 on average and kept up; 200 threads, "
        "full, queued 132 to 174).",
    ),
    event_loop_pending=Threshold(
        10.0,
        "Tasks queued on the app's event loops, per loop, on average over the window's scrapes "
        "(perflab_event_loop_pending_tasks / perflab_event_loops). A loop that keeps up runs a queued task "
        "within microseconds, so a scrape finds its queue nearly empty: even 90% busy, a loop's queue holds "
        "about 4 on average (M/D/1: rho^2 / 2(1 - rho)), 9 at 95%. Ten or more a loop is a backlog that does "
        "not drain between scrapes: the loops are saturated, or blocked by a call that must not run on them. "
        "The scrape itself adds none: Quarkus' /metrics runs on a worker thread, WebFlux's actuator runs its "
        "blocking operations off the loops. Only tasks handed to a loop count (an answer written from another "
        "thread, Vert.x's runOnContext): a request read and answered on its own loop adds none, so a loop "
        "blocked on such requests shows in the CPU or the generator's latency, not here.",
    ),
    virtual_thread_wait_ms=Threshold(
        20.0,
        "Virtual threads ready to run and waiting for a carrier, on average, divided by the requests served a "
        "second: how long a request waited for a carrier (Little's law). Every scrape reads the gauge from a "
        "virtual thread of its own, which holds a carrier meanwhile (at rest the carriers read 1 busy); with "
        "one carrier (an app on one core) the requests that arrive during the scrape wait behind it, as long "
        "as the scrape takes to reach the gauge: a few milliseconds, whatever the rate. 20 ms a request is "
        "more than a scrape explains and near the tightest SLO (greeting's 25 ms): every carrier was taken, "
        "pinned or blocked in the JDK where the app's CPU had room (report 4), else by the CPU, named first.",
    ),
    loadgen_cpu=Threshold(
        AUDIT_THRESHOLDS.max_loadgen_cpu_busy.value,
        "The audit's load-generator threshold (Hyperfoil's 80%): above it the generator's own "
        "scheduling delays become the measurement.",
    ),
    dropped_share=AUDIT_THRESHOLDS.max_dropped_share,
    network_link=Threshold(
        0.70,
        "An interface over 70% of its link speed on average is near saturation (queueing grows fast "
        "past it; bursts reach the line rate).",
    ),
    kept_up=Threshold(
        AUDIT_THRESHOLDS.min_achieved_fraction.value,
        "The audit's achieved-rate threshold: at 95% of the target or more the system kept up.",
    ),
    stretch_share=Threshold(
        0.2,
        "Issue 24: four busy loops on the db host from 10 s into a 40 s window took its one core and moved the "
        "per-second p99 from 5-11 ms to 10-23 ms (spikes to 163 ms), yet the window's average read 88% busy and "
        "'no tier was saturated'. A tier's CPU over its threshold (cpu_saturated, or the generator's or the DB's), "
        "or the DB's disk or statement queue over theirs (disk_busy, db_threads_running), at every scrape of a "
        "stretch of a fifth of the window or more (utilization.json's series) limited that stretch: long enough to "
        "move the window's percentiles, and at the lab's 5 s scrape two scrapes or more of a 40 s window, never one "
        "sample's noise.",
    ),
)


@dataclass(frozen=True)
class TierFigures:
    """One tier over the window: what it used and what queued in front of it."""

    tier: str
    busy_cores: float | None = None  # its own processes
    allotted_cores: float | None = None
    cpu_busy_fraction: float | None = None  # busy_cores / allotted_cores
    cpus_busy_fraction: float | None = None  # its CPUs, busy with any process of the machine
    disk_busy_fraction: float | None = None
    disk_await_ms: float | None = None
    network_link_fraction: float | None = None
    pool_waiting_avg: float | None = None
    pool_waiting_max: float | None = None
    threads_blocked_max: float | None = None
    request_threads_busy_avg: float | None = None  # the app's bounded request-thread pool
    request_threads_max: float | None = None
    request_queue_avg: float | None = None
    event_loop_pending_avg: float | None = None  # tasks queued on the app's event loops, summed over them
    event_loop_pending_max: float | None = None
    event_loops: float | None = None  # how many
    virtual_carriers_busy_avg: float | None = None  # the carriers of the app's virtual threads
    virtual_carriers_max: float | None = None  # the scheduler's parallelism
    virtual_carriers_started_max: float | None = None  # above the parallelism: compensating for blocked carriers
    virtual_queue_avg: float | None = None  # virtual threads waiting for a carrier
    virtual_wait_ms: float | None = None  # the same, per request served: the wait for a carrier (Little's law)
    threads_running_avg: float | None = None
    dropped_per_s: float | None = None  # requests the load generator could not start on schedule
    dropped_share: float | None = None  # the same, as a share of the requests it was to offer
    # Of busy_cores, its own service's (process-exporter's group: mysqld, app-java, loadgen) and every other
    # process of its host's (a neighbour, a hog); None where the service's was not observed.
    service_cores: float | None = None
    other_cores: float | None = None
    # The longest stretch of the window in which its CPU was over its threshold at every scrape, when it
    # lasted a fifth of the window or more (THRESHOLDS.stretch_share): from when (seconds after the window's
    # start), for how long, how busy on average, and its service's cores over it (None: not observed).
    stretch_from_s: float | None = None
    stretch_s: float | None = None
    stretch_busy_fraction: float | None = None
    stretch_service_cores: float | None = None
    # The db tier's alone, found as its CPU's: the longest stretch with its busiest disk busy disk_busy of the
    # time or more (how busy on average over it), and with db_threads_running statements or more in progress
    # (how many on average over it).
    disk_stretch_from_s: float | None = None
    disk_stretch_s: float | None = None
    disk_stretch_busy_fraction: float | None = None
    statements_stretch_from_s: float | None = None
    statements_stretch_s: float | None = None
    statements_stretch_running_avg: float | None = None
    saturated: tuple[str, ...] = ()  # the figures over their threshold, as text


@dataclass(frozen=True)
class Attribution:
    limiting_tier: str | None  # "loadgen" | "app" | "db" | "network:<tier>" | None (kept up / unknown)
    sentence: str
    evidence: tuple[str, ...]
    tiers: tuple[TierFigures, ...]
    schema_version: int = SCHEMA_VERSION
    # When the app limits the run and its window was profiled (PROFILE_APP): its samples by layer,
    # the largest first (profile-summary.json's), which the sentence names.
    app_layers: tuple[LayerShare, ...] = ()

    def to_json(self) -> str:
        return dumps(self)


APP_LAYERS_NAMED = 3  # the layers the sentence names


def with_app_layers(found: Attribution, layers: Sequence[LayerShare]) -> Attribution:
    """FOUND naming the app's top layers where it names the app as the limit ("the app's samples:
    38% HTTP server, 21% JSON, 12% metrics"); as it was otherwise."""
    ranked = tuple(sorted((entry for entry in layers if entry.samples), key=lambda entry: -entry.samples))
    if found.limiting_tier != "app" or not ranked:
        return found
    shown = percentages([entry.samples for entry in layers])
    share = {entry.layer: percent for entry, percent in zip(layers, shown)}
    named = ", ".join(f"{share[entry.layer]:.0f}% {entry.title}" for entry in ranked[:APP_LAYERS_NAMED])
    sentence = f"{found.sentence.rstrip('.')}; the app's samples (flamegraph.html): {named}."
    return replace(found, sentence=sentence, app_layers=ranked)


def _cpu(cpu: TierCpu | None) -> tuple[float | None, float | None, float | None]:
    if cpu is None:
        return None, None, None
    return cpu.busy_cores, cpu.allotted_cores, cpu.busy_fraction


def cpu_limit(tier: str, t: AttributionThresholds = THRESHOLDS) -> Threshold:
    """The CPU threshold a tier's own CPU is judged by: the generator's, the DB's (the audit's), else cpu_saturated."""
    return {"loadgen": t.loadgen_cpu, "db": t.db_cpu_busy}.get(tier, t.cpu_saturated)


def _over(value: float | None, threshold: Threshold, strictly: bool = False) -> bool:
    if value is None:
        return False
    return value > threshold.value if strictly else value >= threshold.value


@dataclass(frozen=True)
class Stretch:
    """A stretch of the window in which one of a tier's figures was over its threshold at every scrape."""

    from_s: float  # after the window's start
    seconds: float
    # On average over the stretch: the tier's busy cores over its allotted ones (CPU), the share of the time the
    # DB's busiest disk was busy (disk), the statements in progress in the DB (statement queue).
    level: float
    service_cores: float | None = None  # CPU: its own service's cores over it; None: not observed
    scrapes: tuple[float, float] = (0.0, 0.0)  # its first and last scrape's times (unix seconds)


# What a stretch is found in (DbStretch.figure's names): a tier's CPU; the db tier's disk and statement queue.
CPU, DISK, STATEMENTS = "CPU", "disk", "statement queue"


def longest_stretch(points: Sequence[tuple[float, float]], start: float, end: float, step_s: float,
                    over: Callable[[float], bool]) -> Stretch | None:
    """The longest run of consecutive scrapes of POINTS ([unix s, value]) inside the window whose value is
    OVER its threshold, each scrape standing for the STEP_S before it; None when none was."""
    best: list[tuple[float, float]] = []
    current: list[tuple[float, float]] = []
    for at, value in points:
        if start <= at <= end and over(value):
            current.append((at, value))
            if len(current) > len(best):
                best = list(current)
        else:
            current = []
    if not best:
        return None
    first, last = best[0][0], best[-1][0]
    return Stretch(from_s=max(0.0, first - step_s - start), seconds=min(len(best) * step_s, end - start),
                   level=sum(value for _, value in best) / len(best), scrapes=(first, last))


def saturated_stretch(series: TierSeries, start: float, end: float, step_s: float, threshold: float,
                      strictly: bool = False) -> Stretch | None:
    """The longest run of consecutive scrapes in which SERIES' busy cores were over THRESHOLD of its
    allotted cores, each scrape standing for the STEP_S before it; None when none was."""
    fractions = [(at, cores / series.allotted_cores) for at, cores in series.busy_cores]
    stretch = longest_stretch(fractions, start, end, step_s,
                              lambda fraction: fraction > threshold if strictly else fraction >= threshold)
    if stretch is None:
        return None
    first, last = stretch.scrapes
    service = [cores for at, cores in series.service_cores if first <= at <= last]
    return replace(stretch, service_cores=sum(service) / len(service) if service else None)


def stretches(utilization: Utilization | None, t: AttributionThresholds = THRESHOLDS) -> dict[str, dict[str, Stretch]]:
    """Each tier's longest saturated stretch of each figure (its CPU; the db tier's disk and statement queue)
    that lasted a fifth of the window or more (stretch_share), by tier and figure."""
    if utilization is None:
        return {}
    start, end, step_s = utilization.start, utilization.end, utilization.step_s
    window_s = end - start
    found: dict[str, dict[str, Stretch]] = {}
    for tier, series in utilization.tiers.items():
        if tier not in CPU_TIERS:
            continue
        limit = cpu_limit(tier, t)
        candidates = {CPU: saturated_stretch(series, start, end, step_s, limit.value, strictly=tier != "app")}
        if tier == "db":
            candidates[DISK] = longest_stretch(series.disk_busy, start, end, step_s,
                                               lambda busy: _over(busy, t.disk_busy))
            candidates[STATEMENTS] = longest_stretch(series.statements_running, start, end, step_s,
                                                     lambda running: _over(running, t.db_threads_running))
        long_enough = {figure: stretch for figure, stretch in candidates.items()
                       if stretch is not None and stretch.seconds >= t.stretch_share.value * window_s}
        if long_enough:
            found[tier] = long_enough
    return found


def db_stretches(utilization: Utilization | None, t: AttributionThresholds = THRESHOLDS) -> tuple[DbStretch, ...]:
    """The DB host's saturated stretches (stretches: its CPU, disk, statement queue), each with the app's CPU
    over the same scrapes, for the audit's app_is_bottleneck; none where the DB host had none or the series
    are missing."""
    if utilization is None:
        return ()
    app = utilization.tiers.get("app")
    found = []
    for figure, stretch in stretches(utilization, t).get("db", {}).items():
        first, last = stretch.scrapes
        app_cores = [cores for at, cores in app.busy_cores if first <= at <= last] if app is not None else []
        found.append(DbStretch(
            figure=figure, from_s=stretch.from_s, seconds=stretch.seconds, level=stretch.level,
            app_busy_fraction=(sum(app_cores) / len(app_cores) / app.allotted_cores
                               if app is not None and app_cores else None),
            allotted_cores=utilization.tiers["db"].allotted_cores if figure == CPU else None,
            service_cores=stretch.service_cores))
    return tuple(found)


def tier_figures(run: RunResult, obs: Observations, t: AttributionThresholds = THRESHOLDS,
                 stretched: dict[str, dict[str, Stretch]] | None = None) -> tuple[TierFigures, ...]:
    sat = obs.saturation or Saturation()
    cpus_busy = obs.cpus_busy or {}
    link = sat.network_link_fraction or {}
    share = dropped_share(run)
    virtual_wait_ms = (sat.app_virtual_queue_avg / run.achieved_rate * 1000.0
                       if sat.app_virtual_queue_avg is not None and run.achieved_rate > 0 else None)
    dropped = (run.dropped_iterations / run.duration_s
               if run.dropped_iterations is not None and run.duration_s > 0 else None)
    rows: list[TierFigures] = []
    for tier, cpu in (("loadgen", obs.loadgen_cpu), ("app", obs.app_cpu), ("db", obs.db_cpu)):
        busy, allotted, fraction = _cpu(cpu)
        split = cpu_split(tier, cpu, obs)
        found = (stretched or {}).get(tier, {})
        stretch, disk, statements = found.get(CPU), found.get(DISK), found.get(STATEMENTS)
        figures = TierFigures(
            tier=tier, busy_cores=busy, allotted_cores=allotted, cpu_busy_fraction=fraction,
            cpus_busy_fraction=cpus_busy.get(tier), network_link_fraction=link.get(tier),
            disk_busy_fraction=obs.db_disk_busy if tier == "db" else None,
            disk_await_ms=sat.db_disk_await_ms if tier == "db" else None,
            pool_waiting_avg=sat.app_pool_waiting_avg if tier == "app" else None,
            pool_waiting_max=sat.app_pool_waiting_max if tier == "app" else None,
            threads_blocked_max=sat.app_threads_blocked_max if tier == "app" else None,
            request_threads_busy_avg=sat.app_request_threads_busy_avg if tier == "app" else None,
            request_threads_max=sat.app_request_threads_max if tier == "app" else None,
            request_queue_avg=sat.app_request_queue_avg if tier == "app" else None,
            event_loop_pending_avg=sat.app_event_loop_pending_avg if tier == "app" else None,
            event_loop_pending_max=sat.app_event_loop_pending_max if tier == "app" else None,
            event_loops=sat.app_event_loops if tier == "app" else None,
            virtual_carriers_busy_avg=sat.app_virtual_carriers_busy_avg if tier == "app" else None,
            virtual_carriers_max=sat.app_virtual_carriers_max if tier == "app" else None,
            virtual_carriers_started_max=sat.app_virtual_carriers_started_max if tier == "app" else None,
            virtual_queue_avg=sat.app_virtual_queue_avg if tier == "app" else None,
            virtual_wait_ms=virtual_wait_ms if tier == "app" else None,
            threads_running_avg=sat.db_threads_running_avg if tier == "db" else None,
            dropped_per_s=dropped if tier == "loadgen" else None,
            dropped_share=share if tier == "loadgen" else None,
            service_cores=split[0] if split else None, other_cores=split[1] if split else None,
            stretch_from_s=stretch.from_s if stretch else None, stretch_s=stretch.seconds if stretch else None,
            stretch_busy_fraction=stretch.level if stretch else None,
            stretch_service_cores=stretch.service_cores if stretch else None,
            disk_stretch_from_s=disk.from_s if disk else None, disk_stretch_s=disk.seconds if disk else None,
            disk_stretch_busy_fraction=disk.level if disk else None,
            statements_stretch_from_s=statements.from_s if statements else None,
            statements_stretch_s=statements.seconds if statements else None,
            statements_stretch_running_avg=statements.level if statements else None,
        )
        rows.append(_with_saturated(figures, t, obs, cpu))
    return tuple(rows)


def _with_saturated(f: TierFigures, t: AttributionThresholds, obs: Observations, cpu: TierCpu | None) -> TierFigures:
    limit = cpu_limit(f.tier, t)
    found: list[str] = []
    if cpu is not None and _over(f.cpu_busy_fraction, limit, strictly=f.tier != "app"):
        # In the audit's words (audit.host_cpu): a host starved by other processes is never the service's doing.
        found.append(f"its CPU {host_cpu(f.tier, cpu, obs, limit.value)[0]}")
    if f.stretch_s is not None and not _over(f.cpu_busy_fraction, limit, strictly=f.tier != "app"):
        found.append(stretch_text(f, service_name(f.tier, obs), limit))
    if _over(f.cpus_busy_fraction, t.cpus_contended):
        found.append(f"its CPUs {f.cpus_busy_fraction:.0%} busy with every process of the machine")
    if _over(f.disk_busy_fraction, t.disk_busy):
        wait = f", await {f.disk_await_ms:.1f} ms" if f.disk_await_ms is not None else ""
        found.append(f"disk busy {f.disk_busy_fraction:.0%} of the window{wait}")
    elif f.disk_stretch_s is not None:
        found.append(disk_stretch_words(t.disk_busy.value, f.disk_stretch_from_s or 0, f.disk_stretch_s,
                                        f.disk_stretch_busy_fraction or 0, f.disk_busy_fraction))
    if _over(f.network_link_fraction, t.network_link):
        found.append(f"network at {f.network_link_fraction:.0%} of its link speed")
    if _over(f.threads_running_avg, t.db_threads_running):
        found.append(f"{f.threads_running_avg:.1f} statements in progress in the DB on average")
    elif f.statements_stretch_s is not None:
        found.append(statements_stretch_words(t.db_threads_running.value, f.statements_stretch_from_s or 0,
                                              f.statements_stretch_s, f.statements_stretch_running_avg or 0,
                                              f.threads_running_avg))
    if _over(f.pool_waiting_avg, t.pool_waiting):
        found.append(f"{f.pool_waiting_avg:.1f} requests waiting for a DB connection on average "
                     f"(at most {f.pool_waiting_max or 0:g})")
    if _over(f.threads_blocked_max, t.threads_blocked):
        found.append(f"up to {f.threads_blocked_max:g} threads BLOCKED on monitors")
    if threads_exhausted(f, t):
        found.append(_request_threads_text(f))
    if loops_backlogged(f, t):
        found.append(f"its event loops {f.event_loop_pending_avg or 0:.1f} tasks pending on average over "
                     f"{f.event_loops or 0:g} loops (at most {f.event_loop_pending_max or 0:g})")
    if carriers_exhausted(f, t):
        found.append(f"its virtual threads {f.virtual_queue_avg or 0:.1f} waiting for a carrier on average "
                     f"(about {f.virtual_wait_ms or 0:.0f} ms a request), {_carriers_text(f)}")
    if _over(f.dropped_share, t.dropped_share, strictly=True):
        found.append(_dropped_text(f, f"tolerance {t.dropped_share.value:.1%}"))
    return TierFigures(**{**{x.name: getattr(f, x.name) for x in fields(f)}, "saturated": tuple(found)})


def stretch_starved(f: TierFigures, limit: Threshold) -> bool:
    """Whether the tier's saturated stretch was other processes' doing: its service, where observed, stayed
    within LIMIT of the host's cores over it, and the other processes took at least the headroom above LIMIT.
    (A CI simulation: the app's JVM at 0.90 of its 1 core for 10 s, other processes 0.02, was called "starved
    by other processes" when the JVM itself had filled the core to the threshold.)"""
    if f.stretch_service_cores is None or f.allotted_cores is None:
        return False
    return starved_by_others(f.stretch_service_cores, (f.stretch_busy_fraction or 0) * f.allotted_cores,
                             f.allotted_cores, limit.value)


def stretch_text(f: TierFigures, name: str, limit: Threshold) -> str:
    """The tier's saturated stretch as the sentences say it, its service's share with it."""
    return stretch_words(name, limit.value, f.stretch_from_s or 0, f.stretch_s or 0, f.stretch_busy_fraction or 0,
                         f.allotted_cores or 1, f.stretch_service_cores if f.allotted_cores is not None else None,
                         f.cpu_busy_fraction)[0]


# How the sentences open each figure's stretch (audit.stretch_words, disk_stretch_words, statements_stretch_words).
STRETCH_OPENINGS = {CPU: "its CPU over ", DISK: "its disk busy ", STATEMENTS: "its statement queue at "}


def stretches_said(f: TierFigures) -> list[tuple[str, float, str]]:
    """The stretches the tier's saturated figures name (each where the window's average of its figure stayed
    under the threshold), as (figure, its seconds, its text)."""
    seconds = {CPU: f.stretch_s, DISK: f.disk_stretch_s, STATEMENTS: f.statements_stretch_s}
    return [(figure, seconds[figure] or 0.0, said) for said in f.saturated
            for figure, opening in STRETCH_OPENINGS.items() if said.startswith(opening)]


def threads_exhausted(f: TierFigures, t: AttributionThresholds = THRESHOLDS) -> bool:
    """The app's bounded request-thread pool full: busy half its size or more on average, with a
    backlog of requests waiting for a thread (THRESHOLDS' reasons say why not 100% and not 1)."""
    if f.request_threads_busy_avg is None or not f.request_threads_max or f.request_queue_avg is None:
        return False
    return (f.request_threads_busy_avg / f.request_threads_max >= t.request_threads_busy.value
            and f.request_queue_avg >= t.request_queue.value * f.request_threads_max)


def loops_backlogged(f: TierFigures, t: AttributionThresholds = THRESHOLDS) -> bool:
    """The app's event loops with a backlog of tasks: event_loop_pending a loop or more on average."""
    if f.event_loop_pending_avg is None or not f.event_loops:
        return False
    return f.event_loop_pending_avg / f.event_loops >= t.event_loop_pending.value


def carriers_exhausted(f: TierFigures, t: AttributionThresholds = THRESHOLDS) -> bool:
    """Virtual threads waiting for a carrier long enough that a scrape does not explain it
    (virtual_thread_wait_ms): every carrier taken."""
    return _over(f.virtual_wait_ms, t.virtual_thread_wait_ms)


def _carriers_text(f: TierFigures) -> str:
    started = f.virtual_carriers_started_max
    compensating = (f", {started:g} started: the JDK adding carriers for blocked ones"
                    if started is not None and f.virtual_carriers_max is not None and started > f.virtual_carriers_max
                    else "")
    return (f"{f.virtual_carriers_busy_avg or 0:.1f} of {f.virtual_carriers_max or 0:g} carriers busy on average"
            f"{compensating}")


def _request_threads_text(f: TierFigures) -> str:
    return (f"its request threads {f.request_threads_busy_avg or 0:.0f} of {f.request_threads_max or 0:g} busy on "
            f"average, {f.request_queue_avg or 0:.1f} requests waiting for one")


def _dropped_text(f: TierFigures, *notes: str) -> str:
    said = "; ".join((*([f"{f.dropped_per_s:.1f}/s"] if f.dropped_per_s is not None else []), *notes))
    return f"{f.dropped_share or 0:.2%} of the offered requests dropped" + (f" ({said})" if said else "")


def _describe(f: TierFigures) -> str:
    parts: list[str] = []
    if f.busy_cores is not None and f.allotted_cores is not None:
        parts.append(f"CPU {f.busy_cores:.2f} of {f.allotted_cores:g} cores")
    if f.cpus_busy_fraction is not None:
        parts.append(f"its CPUs {f.cpus_busy_fraction:.0%} busy (all processes)")
    if f.disk_busy_fraction is not None:
        await_text = f", await {f.disk_await_ms:.1f} ms" if f.disk_await_ms is not None else ""
        parts.append(f"disk busy {f.disk_busy_fraction:.0%}{await_text}")
    if f.threads_running_avg is not None:
        parts.append(f"{f.threads_running_avg:.1f} sessions running statements")
    if f.pool_waiting_avg is not None:
        parts.append(f"DB pool waits {f.pool_waiting_avg:.2f} avg / {f.pool_waiting_max or 0:g} max")
    if f.threads_blocked_max is not None:
        parts.append(f"{f.threads_blocked_max:g} threads blocked at most")
    if f.request_threads_busy_avg is not None and f.request_threads_max is not None:
        queue = f", {f.request_queue_avg:.1f} requests waiting" if f.request_queue_avg is not None else ""
        parts.append(f"request threads {f.request_threads_busy_avg:.1f} of {f.request_threads_max:g} busy{queue}")
    if f.event_loop_pending_avg is not None and f.event_loops is not None:
        parts.append(f"event loops {f.event_loops:g}, {f.event_loop_pending_avg:.1f} tasks pending on average "
                     f"({f.event_loop_pending_max or 0:g} at most)")
    if f.virtual_queue_avg is not None and f.virtual_carriers_max is not None:
        parts.append(f"virtual threads: {_carriers_text(f)}, {f.virtual_queue_avg:.1f} waiting for one")
    if f.dropped_share is not None:
        parts.append(_dropped_text(f))
    if f.network_link_fraction is not None:
        parts.append(f"network {f.network_link_fraction:.0%} of link")
    return f"{f.tier}: " + (", ".join(parts) if parts else "no figures")


# The figures the branches of attribute() read, as its sentences name them, with the Observations
# field whose reason `unobserved` holds; inside the saturation, "saturation.<field>".
NEEDED = (
    ("the load generator's CPU", "loadgen_cpu"),
    ("the app's CPU", "app_cpu"),
    ("the DB's CPU", "db_cpu"),
    ("each tier's CPUs", "cpus_busy"),
    ("the DB's disk", "db_disk_busy"),
    ("saturation", "saturation"),
)
NEEDED_SATURATION = (
    ("the app's DB pool waits", "app_pool_waiting_avg"),
    ("the app's blocked threads", "app_threads_blocked_max"),
    ("the DB's running statements", "db_threads_running_avg"),
    ("the network links", "network_link_fraction"),
)
CPU_TIERS = ("loadgen", "app", "db")


def _listed(items: list[str]) -> str:
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} and {items[-1]}"


def not_observed(obs: Observations) -> str | None:
    """The figures the attribution needs that were not observed, each with its reason (those of one
    reason together), e.g. "the app's DB pool waits and the app's blocked threads (<why>)"; None
    when every one was observed."""
    missing: dict[str, list[str]] = {}

    def note(what: str, *names: str) -> None:
        reason = next((obs.unobserved[n] for n in names if n in obs.unobserved), "not recorded why")
        missing.setdefault(reason, []).append(what)

    for what, name in NEEDED:
        if getattr(obs, name) is None:
            note(what, name)
    cpus_busy, saturation = obs.cpus_busy, obs.saturation
    if cpus_busy is not None:
        for tier in CPU_TIERS:
            if tier not in cpus_busy:
                note(f"the {tier} tier's CPUs", f"cpus_busy.{tier}", "cpus_busy")
    if saturation is not None:
        for what, name in NEEDED_SATURATION:
            if getattr(saturation, name) is None:
                note(what, f"saturation.{name}", "saturation")
    if not missing:
        return None
    return "; ".join(f"{_listed(whats)} ({reason})" for reason, whats in missing.items())


def failures(run: RunResult) -> str | None:
    """The requests that failed, as the sentence states them; None without any."""
    total = run.errors.total()
    if not total:
        return None
    if total <= run.requests:
        return f"{total} of {run.requests} requests failed ({error_kinds(run)})"
    return f"{total} requests failed ({error_kinds(run)}), {run.requests} completed"  # wrk2: connect errors


def attribute(run: RunResult, obs: Observations, t: AttributionThresholds = THRESHOLDS,
              utilization: Utilization | None = None) -> Attribution:
    """The run's limiting tier; UTILIZATION (utilization.json's series, where Prometheus gave them) lets a
    tier saturated in a stretch of the window be named for it, where the window's averages hide it."""
    rows = tier_figures(run, obs, t, stretches(utilization, t))
    evidence = tuple(_describe(f) for f in rows)
    achieved = run.achieved_rate / run.target_rate
    rate_text = f"{run.achieved_rate:g} of {run.target_rate:g} req/s ({achieved:.0%})"
    restart, outage, failed = app_restart(run, obs), db_outage(obs), failures(run)
    if outage is not None:
        said = [*([restart] if restart else []), f"limited by the database: {outage}", *([failed] if failed else [])]
        return Attribution("db", f"{'; '.join(said)}, at {rate_text}.", evidence, rows)
    found = _by_the_figures(run, obs, rows, evidence, t, kept_up=not (restart or failed))
    if restart or failed:
        said = [s for s in (restart, failed) if s]
        return Attribution(found.limiting_tier, f"{'; '.join(said)}; {found.sentence}", evidence, rows)
    return found


def _by_the_figures(run: RunResult, obs: Observations, rows: tuple[TierFigures, ...], evidence: tuple[str, ...],
                    t: AttributionThresholds, kept_up: bool) -> Attribution:
    """The limiting tier from the tiers' figures alone; kept_up=False: the run failed requests (or its app
    restarted), so whatever its rate it did not keep up, and the sentence never says it did."""
    by_tier = {f.tier: f for f in rows}
    loadgen, app, db = by_tier["loadgen"], by_tier["app"], by_tier["db"]
    achieved = run.achieved_rate / run.target_rate
    rate_text = f"{run.achieved_rate:g} of {run.target_rate:g} req/s ({achieved:.0%})"

    pool_waits = _over(app.pool_waiting_avg, t.pool_waiting)
    app_cpu_saturated = _over(app.cpu_busy_fraction, t.cpu_saturated)
    app_blocked = _over(app.threads_blocked_max, t.threads_blocked)
    network = [f for f in rows if _over(f.network_link_fraction, t.network_link)]
    loadgen_busy = _over(loadgen.cpu_busy_fraction, t.loadgen_cpu, strictly=True)
    dropped = _over(loadgen.dropped_share, t.dropped_share, strictly=True)

    def verdict(tier: str, why: str) -> Attribution:
        return Attribution(tier, f"limited by the {why}, at {rate_text}.", evidence, rows)

    # The DB's own CPU or disk, or statements piling up inside it; its shared CPUs being busy
    # counts only together with that queue (co-located processes may be what keeps them busy).
    # Statements in progress while the DB's own CPU and disk are idle and the app's CPU is saturated
    # wait on the app: a client short of CPU reads its answers and ends its transactions late (a CI
    # run of the app driven past a quarter core: 104% of it, 10.7 requests waiting for a connection,
    # 2.3 statements in progress with the DB's CPU at 0.04 cores). They name the DB only otherwise.
    # Its CPU, disk or statement queue saturated for a stretch its average hides (a hog from a third of the window)
    # is the DB host busy too: never "not saturated" beside the app's waits for a connection (issue 24; a lab run
    # read so). A stretch of the queue is a queue, read as the window's is.
    db_stretched = {figure: said for figure, _, said in stretches_said(db)}
    queue_on_average = _over(db.threads_running_avg, t.db_threads_running)
    db_queue = queue_on_average or STATEMENTS in db_stretched
    db_own = (_over(db.cpu_busy_fraction, t.db_cpu_busy, strictly=True) or _over(db.disk_busy_fraction, t.disk_busy)
              or DISK in db_stretched)
    db_busy = db_own or CPU in db_stretched or (db_queue and not app_cpu_saturated)
    app_starved = _over(app.cpus_busy_fraction, t.cpus_contended) and not app_cpu_saturated
    app_cpu = [s for s in app.saturated if "DB connection" not in s]
    db_contended = _over(db.cpus_busy_fraction, t.cpus_contended)
    if pool_waits:
        waits = next(s for s in app.saturated if "waiting for a DB connection" in s)
        if db_busy or (db_contended and not (app_cpu_saturated or app_starved)):
            spare = "" if db_busy else "; the app had CPU to spare"
            return verdict("db", f"database: the app had {waits} while the DB host had "
                                 f"{' and '.join(db.saturated)}{spare}")
        if app_cpu_saturated or (app_starved and not db_contended):
            own = f"itself using {app.busy_cores:.2f} of {app.allotted_cores:g} cores" if app.busy_cores is not None else ""
            in_progress = (f"{db.threads_running_avg:.1f} statements in progress on average" if queue_on_average
                           else db_stretched.get(STATEMENTS, ""))
            queue = (f"and the DB's own CPU and disk were idle ({in_progress}, waiting on the app)" if db_queue
                     else "and the DB had no statement queue")
            return verdict("app", f"app's CPU: {' and '.join(app_cpu)}{', ' + own if app_starved and own else ''}; "
                                  f"it held its DB connections while waiting for a core ({waits}), {queue}")
        if app_starved:
            return Attribution(None, f"not attributed: the app had {waits}, but both the app's CPUs "
                                     f"({app.cpus_busy_fraction:.0%}) and the DB's ({db.cpus_busy_fraction:.0%}) were "
                                     "busy with other processes of the machine and the DB had no statement queue: "
                                     f"either may have held the connections, at {rate_text}; run on a quieter "
                                     "machine or give the tiers their own cores.", evidence, rows)
        return verdict("db", f"database's round trips: the app had {waits} while the DB host's CPU, disk "
                             "and statement queue were not saturated (slow answers: network delay or locks)")
    if app_cpu_saturated or app_blocked or (app_starved and achieved < t.kept_up.value):
        return verdict("app", f"app: {' and '.join(app_cpu)}")
    # Every request thread taken while requests queue, the app's CPU to spare: the pool's size is
    # the limit (report 2), not the generator that cannot start requests nobody takes.
    if threads_exhausted(app, t):
        return verdict("app", f"app's request threads ({app.request_threads_busy_avg or 0:.0f} of "
                              f"{app.request_threads_max or 0:g} busy on average; {app.request_queue_avg or 0:.1f} "
                              "requests waiting for one)")
    # A reactive app's loops, or the carriers of its virtual threads: a limit the CPU does not show
    # (a loop blocked by a call, carriers pinned in the JDK), named after the CPU has had its say.
    if loops_backlogged(app, t):
        return verdict("app", f"app's event loops ({app.event_loops or 0:g} loops; {app.event_loop_pending_avg or 0:.1f} "
                              f"tasks pending on average, {app.event_loop_pending_max or 0:g} at most)")
    if carriers_exhausted(app, t):
        return verdict("app", f"app's virtual-thread carriers ({_carriers_text(app)}; "
                              f"{app.virtual_queue_avg or 0:.1f} virtual threads waiting for one, about "
                              f"{app.virtual_wait_ms or 0:.0f} ms a request)")
    if network:
        return verdict(f"network:{network[0].tier}",
                       f"network of the {network[0].tier} tier ({network[0].network_link_fraction:.0%} of its link speed)")
    # The generator is named for its own CPU, or for drops only while nothing behind it was
    # saturated: its shared CPUs being busy (anyone's doing) are noted, never the reason.
    downstream_free = not (app.saturated or db.saturated)
    if loadgen_busy or (dropped and downstream_free):
        own_cpu = [s for s in loadgen.saturated if s.startswith("its CPU ")] if loadgen_busy else []
        drops = [s for s in loadgen.saturated if "offered requests dropped" in s] if dropped and downstream_free else []
        return verdict("loadgen", f"load generator: {' and '.join(own_cpu + drops)}")
    # The DB host's own processes filling its cores (mysqld, or a neighbour inside the same host)
    # while the run missed its rate or its p99 SLO and the app had CPU to spare: the DB host, named
    # from its CPU even without a queue seen in front of it (field report: the DB's cgroup used 29
    # of 30 CPU-seconds and p99 rose to 192 ms against a 50 ms SLO, the app idle).
    p99 = run.latency_corrected.percentiles_ms.get(percentile_key(99))
    slo = run.scenario.slo_p99_ms if run.scenario is not None else None
    over_slo = p99 is not None and slo is not None and p99 > slo
    spare = (f"; the app used {app.busy_cores:.2f} of {app.allotted_cores:g} cores"
             if app.busy_cores is not None and app.allotted_cores is not None else "")
    if _over(db.cpu_busy_fraction, t.db_cpu_busy, strictly=True) and (achieved < t.kept_up.value or over_slo):
        own = next(s for s in db.saturated if s.startswith("its CPU "))
        missed = f"p99 {p99:g} ms over the SLO of {slo:g} ms" if over_slo else "the rate fell short"
        return verdict("db", f"DB host's CPU: its own processes used {own.removeprefix('its CPU ')}, with {missed}{spare}")
    # A tier saturated for a stretch of the window its averages hide (issue 24: a hog from 10 s into a 40 s
    # window, the DB host's CPU 88% busy on average; the DB's disk or statement queue likewise): named for
    # that stretch, the figure that crossed its threshold and its service's share with it; the tier of the
    # longest stretch, with each of its stretches. (A tier over its threshold on the window's average too is
    # judged by that average, above and below.)
    stretched = [(f, figure, seconds, said) for f in rows for figure, seconds, said in stretches_said(f)]
    if stretched:
        f = max(stretched, key=lambda found: found[2])[0]
        said = [(figure, text) for row, figure, _, text in stretched if row is f]
        figures = [figure for figure, _ in said]
        host = {"db": "DB host" if CPU in figures or DISK in figures else "DB", "app": "app host",
                "loadgen": "load generator's host"}[f.tier]
        return verdict(f.tier, f"{host}'s {' and '.join(figures)} for a stretch of the window: "
                               f"{'; '.join(text for _, text in said)}{spare if f.tier != 'app' else ''}")
    missing = not_observed(obs)
    unseen = f"; not observed: {missing}" if missing else ""
    if achieved >= t.kept_up.value and not dropped:
        busy = [f"{f.tier} ({'; '.join(f.saturated)})" for f in rows if f.saturated]
        tolerated = (f"; {_dropped_text(loadgen)}, within the {t.dropped_share.value:.1%} tolerance"
                     if loadgen.dropped_share else "")
        if busy:
            # Busy CPUs with nothing queueing in front of them: never "not saturated" (a DB host
            # whose CPUs a hog filled kept up at 117% of the rate, wrk2 catching up after falling
            # behind on the same core), never blamed either: the figures cannot tell which.
            rate = (f"the system kept up with the offered rate, {rate_text}, but busy" if kept_up
                    else f"busy at {rate_text}")
            return Attribution(None, f"not attributed: {rate} without a queue in front of them: {', '.join(busy)}; "
                                     f"whether they or a neighbour on their CPUs limit the run cannot be told from "
                                     f"these figures{unseen}{tolerated}.", evidence, rows)
        if missing:
            if kept_up:
                return Attribution(None, f"not attributed: the system kept up with the offered rate, {rate_text}, but "
                                         f"whether a tier was saturated cannot be told: not observed: {missing}"
                                         f"{tolerated}.", evidence, rows)
            return Attribution(None, f"not attributed: whether a tier was saturated cannot be told, at {rate_text}: "
                                     f"not observed: {missing}{tolerated}.", evidence, rows)
        if kept_up:
            return Attribution(None, f"no tier was saturated: the system kept up with the offered rate, "
                                     f"{rate_text}{tolerated}.", evidence, rows)
        return Attribution(None, f"no tier was saturated, at {rate_text}{tolerated}.", evidence, rows)
    observed = any(f.busy_cores is not None for f in rows) or obs.saturation is not None
    if not observed:
        return Attribution(None, f"not attributed: no utilization or saturation was observed, at {rate_text}.",
                           evidence, rows)
    return Attribution(None, f"not attributed: the system fell short ({rate_text}) but no tier's figures "
                             f"crossed a threshold (see each tier's figures){unseen}.", evidence, rows)
