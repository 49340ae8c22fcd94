"""What the monitoring and the inventory saw during a run (observations.json): each tier's CPU,
where the tiers ran, the DB's sessions and statements per request, the queues that grow at a
limit. perflab/observe.py reads them from Prometheus and perflab/collect.py from the bench's
samples; perflab/audit.py judges a run by them and perflab/attribution.py names its bottleneck."""

from __future__ import annotations

import json
from dataclasses import dataclass, field, fields

from perflab.model import SCHEMA_VERSION, dumps, loads

__all__ = ["RETIRED_SATURATION_FIELD", "DbSessions", "Observations", "Placement", "Saturation", "ServerLatency",
           "ServerQuantile", "StatementsPerRequest", "TierCpu", "WarmupEnd"]


@dataclass(frozen=True)
class TierCpu:
    """CPU of one tier's processes over the run window (process-exporter groups)."""

    busy_cores: float  # average cores in use
    allotted_cores: float  # cores the tier may use (its affinity / quota, else the host's)
    # Seconds busy_cores is the average over: the measured window's (its CPU read at the window's
    # bounds since issue 22; before, the samples around the phase, wider than its load); None in
    # observations written before it was kept.
    window_s: float | None = None
    # Of busy_cores, the lab's own exporters' on the tier's host (process-exporter's group "exporters", read at the
    # window's bounds with the host's CPU): the lab's instruments, not what is measured. None where they were not
    # read (no process-exporter found, samples from before they were kept).
    instrument_cores: float | None = None

    def __post_init__(self) -> None:
        if not (self.allotted_cores > 0 and self.busy_cores >= 0):
            raise ValueError(f"CPU use needs allotted_cores > 0 and busy_cores >= 0, not {self}")
        if self.window_s is not None and not self.window_s > 0:
            raise ValueError(f"a CPU window is a positive number of seconds, not {self.window_s}")
        if self.instrument_cores is not None and not 0 <= self.instrument_cores <= self.busy_cores:
            raise ValueError(f"the lab's exporters use from 0 to the host's busy cores, not {self.instrument_cores}")

    @property
    def busy_fraction(self) -> float:
        return self.busy_cores / self.allotted_cores

    @property
    def cpu_s(self) -> float | None:
        """CPU seconds the tier used over its window."""
        return None if self.window_s is None else self.busy_cores * self.window_s

    @property
    def cpu_s_without_exporters(self) -> float | None:
        """CPU seconds the tier used over its window less its host's exporters' (the lab's own instruments), where
        those were read; else cpu_s."""
        if self.window_s is None:
            return None
        return (self.busy_cores - (self.instrument_cores or 0.0)) * self.window_s


@dataclass(frozen=True)
class Placement:
    """Where a tier runs, from the inventory."""

    tier: str
    host: str  # inventory hostname
    machine: str  # the physical machine (one kernel) the host runs on
    cpus: tuple[int, ...] | None = None  # its CPU affinity; None = every CPU of the machine


@dataclass(frozen=True)
class DbSessions:
    """Client sessions the DB saw during the run (the exporter's own excluded)."""

    total: int
    tls: int


@dataclass(frozen=True)
class StatementsPerRequest:
    """DB statements by kind (Com_* deltas) divided by the requests of the window."""

    select: float
    insert: float
    update: float
    delete: float


# The kinds of statement counted, in StatementsPerRequest's order (a scenario's statements name them).
STATEMENT_KINDS = tuple(f.name for f in fields(StatementsPerRequest))

# Saturation's field for a k6 figure, gone with k6; observations.json written before hold it as null.
RETIRED_SATURATION_FIELD = "loadgen_dropped_per_s"


@dataclass(frozen=True)
class Saturation:
    """The queues that grow when a tier is the limit, over the run window; None = not observed."""

    app_pool_waiting_avg: float | None = None  # requests waiting for a DB connection, time average
    app_pool_waiting_max: float | None = None
    app_pool_in_use_max: float | None = None  # DB connections lent out, at most
    app_threads_blocked_max: float | None = None  # JVM threads BLOCKED on a monitor, at most
    # The app's bounded pool of request threads (perflab_request_threads_*: Tomcat's workers, Quarkus'
    # worker pool), time averages and the pool's size; None where the app has none (event loops,
    # virtual threads).
    app_request_threads_busy_avg: float | None = None  # threads handling a request
    app_request_threads_max: float | None = None  # the pool's maximum size
    app_request_queue_avg: float | None = None  # requests waiting for a request thread
    app_request_queue_max: float | None = None  # the most waiting at one scrape
    # The app's event loops (perflab_event_loop_*: Vert.x in Quarkus, Reactor Netty in WebFlux): tasks
    # queued on them, summed over the loops (time average and most at one scrape), and how many loops.
    app_event_loop_pending_avg: float | None = None
    app_event_loop_pending_max: float | None = None
    app_event_loops: float | None = None
    # The JDK's carriers of virtual threads (perflab_virtual_thread_*: MVC on virtual threads, JDK 24+):
    # those running a virtual thread (time average), the scheduler's parallelism, the most started at
    # one scrape (above the parallelism while it compensates for a blocked carrier), and the virtual
    # threads ready to run and waiting for a carrier (time average and most at one scrape).
    app_virtual_carriers_busy_avg: float | None = None
    app_virtual_carriers_max: float | None = None
    app_virtual_carriers_started_max: float | None = None
    app_virtual_queue_avg: float | None = None
    app_virtual_queue_max: float | None = None
    db_threads_running_avg: float | None = None  # sessions running a statement: MariaDB/MySQL's Threads_running, PostgreSQL's active backends
    db_disk_await_ms: float | None = None  # average time an I/O of the DB's busiest disk took
    network_link_fraction: dict[str, float] | None = None  # tier -> busiest direction / link speed


@dataclass(frozen=True)
class ServerQuantile:
    """One quantile of the app's own latency histogram, as Prometheus' histogram_quantile estimates it:
    linearly interpolated inside the bucket the quantile falls in, so the estimate is known only to
    within that bucket, whose bounds are its resolution."""

    value_ms: float
    bucket_low_ms: float  # the bucket's lower bound: the previous bucket's upper one (0 below the first)
    # Its upper bound (le); None: the +Inf bucket, beyond the last finite bound (value_ms is then that bound).
    bucket_high_ms: float | None

    def __post_init__(self) -> None:
        high = self.bucket_high_ms
        if not (0 <= self.bucket_low_ms <= self.value_ms and (high is None or self.value_ms <= high)):
            raise ValueError(f"a server quantile lies within its bucket, not {self}")


@dataclass(frozen=True)
class ServerLatency:
    """The app's own response time over the measured window (its http_server_requests_seconds
    histogram, apps/contract/README.md "Metrics"), on the scenario's routes alone: from the moment
    the framework took a request up to its answer, without the network, the load generator or a
    queue in front of the app's request threads."""

    routes: tuple[str, ...]  # the scenario's endpoints, e.g. "GET /zipcodes/{zip}"
    requests: float  # answers the histogram counted in the window
    p50: ServerQuantile
    p99: ServerQuantile
    p999: ServerQuantile | None = None  # None: too few requests beyond it to mean anything


@dataclass(frozen=True)
class WarmupEnd:
    """The warm-up's last seconds (timeseries.json's warm-up phase): whether the app had settled at the
    rate asked before the measured window opened."""

    seconds: float  # how many seconds of the warm-up's end these figures cover
    target_rate: float  # req/s asked
    answered_per_s: float  # successful answers per second over them
    errors: int  # failed answers in them
    p99_ms: float | None  # the worst step's p99 over them; None: no answer ended in them
    source: str  # timeseries.json's: "vegeta" (corrected latency) or "app-histogram" (the app's own)

    def __post_init__(self) -> None:
        if not (self.seconds > 0 and self.target_rate > 0 and self.answered_per_s >= 0 and self.errors >= 0):
            raise ValueError(f"a warm-up's end covers seconds > 0 at a rate > 0 with counts >= 0, not {self}")


@dataclass(frozen=True)
class Observations:
    """What the monitoring and the inventory saw during the run; None = not observed (and
    `unobserved` may say why, by field name)."""

    source: str = ""  # where these came from, e.g. the Prometheus URL and the window
    loadgen_cpu: TierCpu | None = None  # with several loadgen hosts, the busiest one's (loadgen_hosts)
    # Each loadgen host's CPU (inventory hostname -> its figure) when several shared the run; None
    # with one host (loadgen_cpu is then its figure) and in observations written before.
    loadgen_hosts: dict[str, TierCpu] | None = None
    app_cpu: TierCpu | None = None
    db_cpu: TierCpu | None = None
    db_disk_busy: float | None = None  # fraction of the window the DB's data disk was busy
    db_name: str | None = None  # e.g. "MariaDB 10.11 on perflab-db"
    placements: tuple[Placement, ...] | None = None
    warmup_s: float | None = None  # warm-up actually run before the measured window
    # Its last seconds as timeseries.json holds them; None: not observed (`unobserved` says why), and in
    # observations written before perflab read them.
    warmup_end: WarmupEnd | None = None
    write_share_by_third: tuple[float, float, float] | None = None  # writes / requests
    db_sessions: DbSessions | None = None
    statements_per_request: StatementsPerRequest | None = None
    expected_statements_per_request: StatementsPerRequest | None = None  # the contract, for the mix
    # Who counted the requests the write share and the statements per request are of, where not the app
    # (perflab.sent: the loadgen, for an app that counts none, e.g. "wrk2 (each thread's requests by type
    # and second, 1 loadgen host(s))"); None: the app's own request counters (and in observations written before).
    requests_counted_by: str | None = None
    jit_compile_s: float | None = None  # JIT compile time inside the measured window
    # Who counted it where the app exports no compile time (jvm_compilation_time_ms_total): its profile over the
    # window, e.g. "the app's profile, cpu (perf_events): its JIT compiler threads 25% of its 95 samples, of 2.8
    # CPU-s" (perflab.collect.with_profiled_jit). None: the app's own counter (and in observations written before).
    jit_counted_by: str | None = None
    app_max_rss_bytes: float | None = None  # the app's largest resident memory in the window
    cpus_busy: dict[str, float] | None = None  # tier -> fraction of its CPUs busy, any process
    # tier -> cores its own service used over the window (process-exporter's group of it: app-java, mysqld,
    # loadgen; perflab.tiers.SERVICE_GROUPS): the rest of the tier's CPU (loadgen_cpu, app_cpu, db_cpu) ran
    # other processes of its host. None: not observed, and in observations written before.
    service_cpu: dict[str, float] | None = None
    # tier -> seconds per second its own service's threads waited for a CPU over the window (their run delay,
    # read at the window's bounds: roles/bench/files/cpu_window.py); 0.5 = half a thread's worth of waiting
    # all along. What tells a service its host starved from one beside whose idle time others ran. None: not
    # observed (`unobserved` says why), and in observations written before.
    service_waited: dict[str, float] | None = None
    saturation: Saturation | None = None
    # When the app's JVM that ran last in the measured window started, unix seconds (process-exporter's
    # oldest start time of the group app-java, the latest seen up to the window's end): later than the
    # window's start, the app restarted in it. None = not observed (also in observations written before).
    app_jvm_started_at: float | None = None
    # Seconds mysqld_exporter saw the DB down in the measured window (its mysql_up samples at 0, one
    # scrape interval each; 0.0 = up at every scrape), and the first such sample, unix seconds.
    db_down_s: float | None = None
    db_down_from: float | None = None
    # The app's server-side latency on the scenario's routes; None = not observed (also in observations
    # written before perflab read it, and for an app that exports no histogram: `unobserved` says why).
    server_latency: ServerLatency | None = None
    # How late the load started against the measured window's agreed start, on its latest loadgen host (ms),
    # and how far apart the hosts started (ms): the bench's record (bench-inputs.json). None where it has none
    # (inputs written before the window was agreed ahead; the skew with one loadgen host).
    load_start_late_ms: float | None = None
    load_start_skew_ms: float | None = None
    # Field name -> why it is None; "saturation.<field>" for a figure of the saturation left None.
    unobserved: dict[str, str] = field(default_factory=dict)
    schema_version: int = SCHEMA_VERSION

    def __post_init__(self) -> None:
        if self.loadgen_hosts is not None:
            # The attribution reads loadgen_cpu alone: it must be the busiest host's, so that one
            # saturated generator names the loadgen tier whatever the others did.
            busiest = max((cpu.busy_fraction for cpu in self.loadgen_hosts.values()), default=None)
            if busiest is None or self.loadgen_cpu is None or self.loadgen_cpu.busy_fraction != busiest \
                    or self.loadgen_cpu not in self.loadgen_hosts.values():
                raise ValueError("with loadgen_hosts (one host or more), loadgen_cpu is the busiest host's "
                                 f"figure, not {self.loadgen_cpu}")
        fractions = [self.db_disk_busy, *(self.write_share_by_third or ())]
        if any(f is not None and not 0.0 <= f <= 1.0 for f in fractions):
            raise ValueError("db_disk_busy and write_share_by_third are fractions between 0 and 1")
        if any(s is not None and s < 0 for s in (self.warmup_s, self.jit_compile_s, self.db_down_s)):
            raise ValueError("warmup_s, jit_compile_s and db_down_s are durations, never negative")

    def to_json(self) -> str:
        return dumps(self)

    @classmethod
    def from_json(cls, text: str) -> Observations:
        """Observations as observations.json holds them, also as written before k6's retirement:
        those carry `saturation.loadgen_dropped_per_s`, a k6 figure nothing ever filled (always
        null; the drops are the result's dropped_iterations), which is left out."""
        try:
            data = json.loads(text)
        except json.JSONDecodeError:
            return loads(cls, text)  # says why it is not JSON
        saturation = data.get("saturation") if isinstance(data, dict) else None
        if isinstance(saturation, dict) and RETIRED_SATURATION_FIELD in saturation \
                and saturation[RETIRED_SATURATION_FIELD] is None:
            del saturation[RETIRED_SATURATION_FIELD]
            text = json.dumps(data)
        return loads(cls, text)
