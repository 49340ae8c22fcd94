"""The four field reports the lab is built on (docs/ARCHITECTURE.md), as experiments this lab can run:
each report's arms (an app with its variants, its rate, its DB delay or busy loops), its own figures,
and each relation it found as a check of the lab's runs, decided on their figures. perflab reproduce
(perflab/reproduce.py) runs them and prints the tables. Apart from the runner: this part changes
when a report is read anew or a relation is judged otherwise, the runner with how runs are driven.
"""
from __future__ import annotations

import json
import re
import statistics
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from perflab import rundir, timeseries
from perflab.attribution import THRESHOLDS as ATTRIBUTION_THRESHOLDS
from perflab.attribution import Attribution, TierFigures
from perflab.audit import RuleResult, Status
from perflab.compare import MIB
from perflab.results import RunRow

REPRODUCED, NOT_REPRODUCED, NOT_JUDGED = "reproduced", "not reproduced", "not judged"
NOT_RUNNABLE = "not runnable here"  # an arm this lab's hosts refuse (the DB delay without netem)


@dataclass(frozen=True)
class Arm:
    """One run of an experiment: an app with its variants."""

    key: str  # how the relations name it
    label: str
    app: str
    variants: str = ""
    rate: int | None = None  # the arm's own rate (None: the experiment's, or RATE=)
    db_delay_ms: int = 0  # netem's delay on the DB host's packets (DB_DELAY_MS)
    db_cpu_hog: int = 0  # busy loops on the DB host during the measured phase (DB_CPU_HOG)
    profile: str = ""  # the arm's own resource profile ("": the experiment's)
    jvm_options: tuple[str, ...] = ()  # the arm's own JVM options, after the manifest's (the profile's none)
    # A broken app staged on purpose: its run refused or failed is what its relation checks, not a
    # run the lab failed to make (the exit status leaves it out).
    broken: bool = False

    def offered(self, settings: "Settings") -> int:
        return self.rate or settings.rate


@dataclass(frozen=True)
class Relation:
    """What the report found, as this lab can check it: (status, the figures it was decided on)."""

    claim: str
    check: Callable[[dict[str, RunRow], "Settings"], tuple[str, str]]


# An experiment's settings, as reproduction.json records them (perflab.rundir owns that file).
Settings = rundir.ReproductionSettings


@dataclass(frozen=True)
class Experiment:
    report: int
    title: str
    scenario: str
    settings: Settings
    arms: tuple[Arm, ...]
    theirs: tuple[tuple[str, str], ...]  # the report's own rows: label, figures
    relations: tuple[Relation, ...]
    fallback_profile: str = ""  # the profile when the app host cannot hold settings.profile
    fallback_why: str = ""


# -- the figures of a row -------------------------------------------------------------------------

def achieved(row: RunRow) -> float | None:
    return row.result.achieved_rate if row.result else None


def p50(row: RunRow) -> float | None:
    return row.result.latency_corrected.percentiles_ms.get("50") if row.result else None


def p99(row: RunRow) -> float | None:
    return row.result.latency_corrected.percentiles_ms.get("99") if row.result else None


def start_ms(row: RunRow) -> float | None:
    return row.result.app.start_to_first_request_ms if row.result and row.result.app else None


def audit_figure(row: RunRow, name: Literal["app_cpu_s_per_1000_requests", "app_max_rss_bytes"]) -> float | None:
    """The app's cost as the audit stated it."""
    if row.audit is None:
        return None
    return row.audit.app_cpu_s_per_1000_requests if name == "app_cpu_s_per_1000_requests" else row.audit.app_max_rss_bytes


def verdict(row: RunRow) -> str:
    return (row.verdict or "-") if row.result is not None else row.state


def read_attribution(row: RunRow) -> Attribution | None:
    if row.run_dir is None:
        return None
    try:
        return rundir.read_attribution(row.run_dir)
    except rundir.RunFileError:
        return None


def attribution(row: RunRow) -> str:
    found = read_attribution(row)
    return found.sentence if found is not None else ""


def _judged(row: RunRow | None) -> bool:
    return row is not None and row.result is not None and row.verdict in ("VALID", "WARN", "INVALID")


def _missing(rows: dict[str, RunRow], *keys: str) -> str | None:
    """Why the relation over KEYS cannot be judged, or None."""
    for key in keys:
        if (row := rows.get(key)) is not None and row.state.startswith(NOT_RUNNABLE):
            return f"{key}: {row.state}"
        if not _judged(rows.get(key)):
            row = rows.get(key)
            return f"{key}: {row.state if row else 'not run'}"
    return None


# -- report 1: the method, each of its five steps a state of the lab the verdict must catch ---------

def _rule(row: RunRow, name: str) -> RuleResult | None:
    return next((rule for rule in row.audit.rules if rule.rule == name), None) if row.audit else None


def _errors_caught(rows: dict[str, RunRow], s: Settings) -> tuple[str, str]:
    row = rows.get("broken")
    if row is not None and row.state.startswith("incomplete: verifying the app"):
        return REPRODUCED, f"refused before any load: {row.state}"
    if why := _missing(rows, "broken"):
        return NOT_JUDGED, why
    rule = _rule(rows["broken"], "no_errors")
    if rule is None:
        return NOT_JUDGED, "broken: its verdict has no no_errors rule"
    caught = rule.status is Status.INVALID and verdict(rows["broken"]) == "INVALID"
    return (REPRODUCED if caught else NOT_REPRODUCED), f"{verdict(rows['broken'])}; {rule.rule}: {rule.evidence}"


def _tier(row: RunRow, name: str) -> TierFigures | None:
    found = read_attribution(row)
    return next((tier for tier in found.tiers if tier.tier == name), None) if found else None


def _app_cpu(row: RunRow) -> str:
    app = _tier(row, "app")
    if app is None or app.busy_cores is None or app.allotted_cores is None:
        return "the app's CPU not observed"
    return f"the app used {app.busy_cores:.2f} of {app.allotted_cores:g} cores"


def _db_caught(rows: dict[str, RunRow], s: Settings) -> tuple[str, str]:
    if why := _missing(rows, "db-starved"):
        return NOT_JUDGED, why
    row = rows["db-starved"]
    found, db = read_attribution(row), _tier(row, "db")
    if found is None or db is None:
        return NOT_JUDGED, "db-starved: no attribution"
    caught = bool(db.saturated) and found.limiting_tier != "app" and "no tier was saturated" not in found.sentence
    return (REPRODUCED if caught else NOT_REPRODUCED), f"{verdict(row)}; {_app_cpu(row)}; {found.sentence}"


def _good_result_still_outside(rows: dict[str, RunRow], s: Settings) -> tuple[str, str]:
    if why := _missing(rows, "fast"):
        return NOT_JUDGED, why
    row, rate = rows["fast"], REPORT_1_FAST_RATE
    found, app = read_attribution(row), _tier(row, "app")
    if found is None or app is None or app.cpu_busy_fraction is None:
        return NOT_JUDGED, "fast: the app's CPU or the attribution not observed"
    text = f"{_shown(row, rate)}; {_app_cpu(row)}; {found.sentence}"
    # A good result whose app had CPU to spare: the verdict must not make it the app's limit.
    spare = app.cpu_busy_fraction < ATTRIBUTION_THRESHOLDS.cpu_saturated.value
    return (REPRODUCED if spare and found.limiting_tier != "app" else NOT_REPRODUCED), text


def _app_caught(rows: dict[str, RunRow], s: Settings) -> tuple[str, str]:
    if why := _missing(rows, "constrained"):
        return NOT_JUDGED, why
    row = rows["constrained"]
    found = read_attribution(row)
    if found is None:
        return NOT_JUDGED, "constrained: no attribution"
    named = found.limiting_tier == "app" and "the app's CPU" in found.sentence
    return (REPRODUCED if named else NOT_REPRODUCED), f"{verdict(row)}; {_app_cpu(row)}; {found.sentence}"


def _tls_everywhere(rows: dict[str, RunRow], s: Settings) -> tuple[str, str]:
    checked = {key: _rule(row, "same_db_work") for key, row in rows.items() if _judged(row)}
    said = {key: rule.evidence for key, rule in checked.items() if rule is not None}
    if not said:
        return NOT_JUDGED, "no run was judged"
    tls = {key: found[0] for key, evidence in said.items() if (found := re.search(r"\ball \d+ DB sessions used TLS", evidence))}
    text = "; ".join(f"{key}: {tls.get(key, evidence)}" for key, evidence in said.items())
    return (REPRODUCED if len(tls) == len(said) else NOT_REPRODUCED), text


# The rate of the "fast" arm: well above the others', where the app (its whole core) keeps up with CPU
# to spare and the tiers that share the other core (DB, load generator, monitoring) do the most.
REPORT_1_FAST_RATE = 1500

REPORT_1 = Experiment(
    report=1, title="Quarkus reactive CRUD on MySQL: the method, step by step", scenario="zipcodes",
    settings=Settings(rate=500, duration="30s", warmup="15s"),
    arms=(Arm("broken", "Quarkus refusing all but 2 connections (quarkus.http.limits.max-connections=2)", "quarkus",
              jvm_options=("-Dquarkus.http.limits.max-connections=2",), broken=True),
          Arm("db-starved", "Quarkus, the DB slowed by its host (16 busy loops on it: DB_CPU_HOG=16)", "quarkus",
              db_cpu_hog=16),
          Arm("fast", "Quarkus, nothing slowed, a high rate", "quarkus", rate=REPORT_1_FAST_RATE),
          Arm("constrained", "Quarkus constrained to a quarter of a CPU (PROFILE=app-bound)", "quarkus",
              profile="app-bound")),
    theirs=(("1. @Transactional (blocking) on the reactive app", "1.75 req/s, deadlocked after 95 inserts, 10 non-2xx"),
            ("2. the fix, MySQL on a slow disk", "390 req/s, the app under 0.5 core: the disk the bottleneck"),
            ("3. MySQL on a faster disk", "25,600 req/s, the app 4.5 cores, the box 60% idle: still MySQL / I/O"),
            ("4. the app constrained to 4 cores", "18,668 req/s: now the app is the bottleneck"),
            ("5. TLS to MySQL required", "14,956 req/s: every framework pays the same security cost")),
    relations=(Relation("1. a run with errors is worthless: refused, or judged INVALID by its errors", _errors_caught),
               Relation("2. the DB slowed, the app waiting with CPU to spare: the verdict names the DB, not the app",
                        _db_caught),
               Relation("3. a good result with the app's CPU to spare is not the app's limit: the verdict does not "
                        "name the app", _good_result_still_outside),
               Relation("4. the app constrained: the verdict names the app's CPU as the limit", _app_caught),
               Relation("5. the same security cost in every run: every DB session used TLS (rule same_db_work)",
                        _tls_everywhere)),
)


# -- report 2: a blocking server caps near threads / latency --------------------------------------

def _holds_rate(key: str, label: str) -> Relation:
    def check(rows: dict[str, RunRow], s: Settings) -> tuple[str, str]:
        if why := _missing(rows, key):
            return NOT_JUDGED, why
        row = rows[key]
        rate, median = achieved(row) or 0.0, p50(row)
        held = rate >= 0.95 * s.rate and verdict(row) in ("VALID", "WARN")
        delay = s.latency_ms or 0
        prompt = median is not None and median <= 1.2 * delay + 50
        shown = f"{rate:.1f} of {s.rate} req/s, p50 {median if median is not None else '-'} ms, {verdict(row)}"
        return (REPRODUCED if held and prompt else NOT_REPRODUCED), shown

    return Relation(f"{label} is not capped: it holds the rate with answers near the delay", check)


def answered_per_s(row: RunRow) -> tuple[float, str] | None:
    """The answers per second the app gave within the measured window, and how they were read, from
    timeseries.json. A capped app answers at its cap whatever the generator scheduled, and vegeta keeps
    what it scheduled in flight until the answer comes, so its achieved rate (requests scheduled within
    the window) counts answers the app gave after the window too: report 2's 200 threads on the local
    lab, 237.4 scheduled per second, 200 answered.
    - vegeta's series counts each answer in the second it came: its median second (the first may be
      the app catching up).
    - The app's histogram (wrk2) is read at each scrape, and a capped app answers its scrape late: the
      scrape waits for a request thread (up to the 1 s latency), so a 5 s step's count covers 4 to 6
      s of answers (223.9 of a 200 req/s cap in one CI run's median step). Its whole window is read
      instead, where only the scrapes at its two ends are late.
    None without a readable time series."""
    if row.run_dir is None:
        return None
    try:
        series = rundir.read_timeseries(row.run_dir)
    except (OSError, ValueError):
        return None
    measure = series.phase("measure")
    if measure is None or not measure.ok:
        return None
    if series.source == timeseries.APP_HISTOGRAM_SOURCE:
        return sum(measure.ok) / (len(measure.ok) * series.step_s), "over the window, from the app's histogram"
    return statistics.median(measure.ok) / series.step_s, "the median second of the window"


def _mvc_capped(rows: dict[str, RunRow], s: Settings) -> tuple[str, str]:
    if why := _missing(rows, "mvc200"):
        return NOT_JUDGED, why
    row = rows["mvc200"]
    cap = 200 * 1000 / (s.latency_ms or 1)
    rate = achieved(row) or 0.0
    read = answered_per_s(row)
    shown = f"{rate:.1f} of {s.rate} req/s (200 threads / {s.latency_ms} ms = {cap:g} req/s)"
    if read is None:
        return (REPRODUCED if 0.85 * cap <= rate <= 1.10 * cap else NOT_REPRODUCED), shown
    answered, how = read
    shown += f"; the app answered {answered:.1f} req/s ({how})"
    return (REPRODUCED if 0.85 * cap <= answered <= 1.10 * cap else NOT_REPRODUCED), shown


def _named_cap(rows: dict[str, RunRow], s: Settings) -> tuple[str, str]:
    if why := _missing(rows, "mvc200"):
        return NOT_JUDGED, why
    row = rows["mvc200"]
    sentence = attribution(row)
    named = verdict(row) == "INVALID" and "request threads" in sentence
    return (REPRODUCED if named else NOT_REPRODUCED), f"{verdict(row)}; {sentence or 'no attribution'}"


def _twice_the_threads(rows: dict[str, RunRow], s: Settings) -> tuple[str, str]:
    if why := _missing(rows, "mvc200", "mvc400"):
        return NOT_JUDGED, why
    low, high = achieved(rows["mvc200"]) or 0.0, achieved(rows["mvc400"]) or 0.0
    # Twice the cap is 400 req/s, above the offered rate: 400 threads must hold what 200 could not.
    held = high >= 0.95 * s.rate and high > 1.2 * low
    return (REPRODUCED if held else NOT_REPRODUCED), f"400 threads {high:.1f} req/s, 200 threads {low:.1f} req/s"


REPORT_2 = Experiment(
    report=2, title="Spring WebFlux vs Spring MVC under blocking latency", scenario="hello-latency",
    settings=Settings(rate=300, duration="30s", warmup="10s", latency_ms=1000, slo_p99_ms=1100),
    arms=(Arm("mvc200", "Spring MVC, 200 Tomcat threads", "spring-mvc", "threads=platform max_threads=200"),
          Arm("mvc400", "Spring MVC, 400 Tomcat threads", "spring-mvc", "threads=platform max_threads=400"),
          Arm("virtual", "Spring MVC, virtual threads", "spring-mvc", "threads=virtual"),
          Arm("webflux", "Spring WebFlux", "spring-webflux")),
    theirs=(("Spring MVC, 200 threads", "queues from ~3,000 users (~200 requests in flight); cap near 200 / 0.1 s = 2,000 req/s"),
            ("Spring MVC, 400 threads", "the same curve at twice the users and twice the throughput"),
            ("Spring WebFlux", "7,228 req/s at 20,000 users, p95 117 ms (MVC failed)")),
    relations=(Relation("MVC on 200 threads caps near threads / latency", _mvc_capped),
               Relation("the verdict names the cap: INVALID, limited by the app's request threads", _named_cap),
               Relation("400 threads move the cap to twice: the rate 200 could not hold is held", _twice_the_threads),
               _holds_rate("webflux", "WebFlux"),
               _holds_rate("virtual", "MVC on virtual threads")),
)


# -- report 3: the IO thread against a worker thread ----------------------------------------------

# One run each side: a difference under 10% is within what two runs of the same app differ by here
# (REPEAT runs of one app on this lab spread by several percent), so it reproduces nothing.
DISTINGUISHABLE = 0.10


def _lower(name: str, figure: Callable[[RunRow], float | None], shown: Callable[[float], str],
           report_ratio: str) -> Relation:
    def check(rows: dict[str, RunRow], s: Settings) -> tuple[str, str]:
        if why := _missing(rows, "io", "worker"):
            return NOT_JUDGED, why
        io, worker = figure(rows["io"]), figure(rows["worker"])
        if io is None or worker is None:
            return NOT_JUDGED, f"{name} not stated for {'the IO thread' if io is None else 'the worker thread'}"
        text = (f"IO thread {shown(io)}, worker thread {shown(worker)} ({io / worker:.1%} of it; "
                f"the report: {report_ratio})")
        if io < worker * (1 - DISTINGUISHABLE):
            return REPRODUCED, text
        if io < worker:
            return NOT_REPRODUCED, text + f"; lower by less than the {DISTINGUISHABLE:.0%} one run each can tell apart"
        return NOT_REPRODUCED, text

    return Relation(f"the IO thread needs less {name} than a worker thread", check)


REPORT_3 = Experiment(
    report=3, title="IO thread vs worker thread (Quarkus)", scenario="greeting",
    settings=Settings(rate=1500, duration="30s", warmup="15s", profile="io-vs-worker"),
    arms=(Arm("worker", "Quarkus, worker thread", "quarkus", "dispatch=worker"),
          Arm("io", "Quarkus, IO thread", "quarkus", "dispatch=io")),
    theirs=(("worker thread", "start to first request 993.9 ms, max RSS 138.8 MB, max 46,172 req/s"),
            ("IO thread", "start to first request 868.3 ms, max RSS 97.9 MB, max 123,520 req/s")),
    relations=(_lower("CPU per request (app CPU-s per 1,000 requests)",
                      lambda row: audit_figure(row, "app_cpu_s_per_1000_requests"), "{:.3f} s".format,
                      "1/2.675 of the worker's by throughput"),
               _lower("memory (max RSS)", lambda row: audit_figure(row, "app_max_rss_bytes"),
                      lambda value: f"{value / MIB:.0f} MiB", "70.5%"),
               _lower("time from start to first request", start_ms, "{:.0f} ms".format, "87.4%")),
    fallback_profile="default",
    fallback_why="the app host has fewer than the 4 CPUs of PROFILE=io-vs-worker: the default profile, the report's "
                 "memory limits not applied (the ratios of CPU per request still compare; RSS is the JVM's own sizing)",
)


# -- report 4: virtual threads against platform threads on DB-heavy work ---------------------------

def _status_of(why: str) -> str:
    """The status of a relation that cannot be judged: not runnable here, or not judged."""
    return NOT_RUNNABLE if NOT_RUNNABLE in why else NOT_JUDGED


def _held(row: RunRow, rate: int) -> bool:
    return (achieved(row) or 0.0) >= 0.95 * rate and verdict(row) in ("VALID", "WARN")


def _shown(row: RunRow, rate: int) -> str:
    return f"{achieved(row) or 0.0:.1f} of {rate} req/s, {verdict(row)}"


def _virtual_holds_as_platform(rows: dict[str, RunRow], s: Settings) -> tuple[str, str]:
    if why := _missing(rows, "platform", "virtual"):
        return _status_of(why), why
    platform, virtual = rows["platform"], rows["virtual"]
    text = f"platform {_shown(platform, s.rate)}; virtual {_shown(virtual, s.rate)}"
    if not _held(platform, s.rate):
        return NOT_JUDGED, text + "; platform threads did not hold the rate either: a lower RATE compares them"
    return (REPRODUCED if _held(virtual, s.rate) else NOT_REPRODUCED), text


def _virtual_costs_no_more(rows: dict[str, RunRow], s: Settings) -> tuple[str, str]:
    if why := _missing(rows, "platform", "virtual"):
        return _status_of(why), why
    platform, virtual = (audit_figure(rows[key], "app_cpu_s_per_1000_requests") for key in ("platform", "virtual"))
    if platform is None or virtual is None:
        return NOT_JUDGED, f"app CPU per request not stated for {'platform' if platform is None else 'virtual'} threads"
    text = f"virtual {virtual:.3f}, platform {platform:.3f} app CPU-s per 1,000 requests ({virtual / platform:.1%})"
    return (REPRODUCED if virtual <= platform * (1 + DISTINGUISHABLE) else NOT_REPRODUCED), text


def _delay_sinks_virtual(rows: dict[str, RunRow], s: Settings) -> tuple[str, str]:
    if why := _missing(rows, "platform-delayed", "virtual-delayed"):
        return _status_of(why), why
    rate = REPORT_4_DELAYED_RATE
    platform, virtual = rows["platform-delayed"], rows["virtual-delayed"]
    text = f"platform {_shown(platform, rate)}; virtual {_shown(virtual, rate)}"
    fell = (achieved(virtual) or 0.0) < (1 - DISTINGUISHABLE) * (achieved(platform) or 0.0)
    return (REPRODUCED if fell else NOT_REPRODUCED), text


# The delayed arms' rate: below what the app's 16 DB connections carry when each request's two to
# three statements wait 100 ms each (16 / 0.3 s ~ 50 req/s), so the DB pool does not cap both arms
# alike: what is left to differ is the threads.
REPORT_4_DELAYED_RATE = 20
REPORT_4_DELAY_MS = 100

REPORT_4 = Experiment(
    report=4, title="Spring Boot on virtual threads vs platform threads, DB-heavy", scenario="books-orders",
    settings=Settings(rate=200, duration="30s", warmup="15s", profile="virtual-threads-db"),
    arms=(Arm("platform", "Spring MVC, 200 platform threads", "spring-mvc", "threads=platform max_threads=200"),
          Arm("virtual", "Spring MVC, virtual threads", "spring-mvc", "threads=virtual"),
          Arm("platform-delayed", f"Spring MVC, 200 platform threads, DB {REPORT_4_DELAY_MS} ms away", "spring-mvc",
              "threads=platform max_threads=200", rate=REPORT_4_DELAYED_RATE, db_delay_ms=REPORT_4_DELAY_MS),
          Arm("virtual-delayed", f"Spring MVC, virtual threads, DB {REPORT_4_DELAY_MS} ms away", "spring-mvc",
              "threads=virtual", rate=REPORT_4_DELAYED_RATE, db_delay_ms=REPORT_4_DELAY_MS)),
    theirs=(("virtual threads", "11,246 / 11,123 / 9,445 / 9,386 req/s at 50 / 100 / 500 / 1,000 users"),
            ("platform threads", "9,374 / 9,181 / 9,243 / 8,149 req/s"),
            ("DB 100 ms away", "virtual 299 / 355 / 629 / 610, platform 716 / 746 / 975 / 1,120 req/s "
                               "(virtual threads pinned by synchronized driver code, JDK 19 era)")),
    relations=(Relation("without a DB delay, virtual threads hold the DB-heavy mix as platform threads do",
                        _virtual_holds_as_platform),
               Relation("without a DB delay, virtual threads cost no more app CPU per request (the report: 1.0-1.2x "
                        "the platform threads' throughput)", _virtual_costs_no_more),
               Relation(f"with the DB {REPORT_4_DELAY_MS} ms away, virtual threads fall below platform threads (the "
                        "report's pinning; JDK 24+ no longer pins a virtual thread on a monitor)", _delay_sinks_virtual)),
)

EXPERIMENTS = {1: REPORT_1, 2: REPORT_2, 3: REPORT_3, 4: REPORT_4}
