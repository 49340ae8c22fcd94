"""Run a field report's experiment on this lab and print the report's table beside the lab's.

perflab reproduce (make reproduce REPORT=1|2|3|4|all): the experiment of one of the four field reports
the lab is built on (docs/ARCHITECTURE.md) in the form this lab and its hosts allow, as
normal bench runs under results/<run-id>/, then:
- the report's own figures (theirs, from their hardware) beside the lab's runs (achieved rate,
  corrected p50/p99, verdict, what the app spent, the attribution);
- each relation the report found, marked `reproduced`, `not reproduced`, `not judged` (a run
  missing, incomplete, or without the figure) or `not runnable here` (an arm this lab's hosts
  refuse), with the figures it was decided on;
- results/<id>-reproduce-<report>/reproduction.json: the same, for the report page.

Report 1 (Quarkus reactive CRUD on MySQL: the method): each of its five steps staged on the lab as
zipcodes runs of Quarkus, each a state the verdict must catch: an app that answers with errors
(it accepts two connections); the DB slowed by its own host (DB_CPU_HOG busy loops on it) while the
app waits with CPU to spare; nothing slowed at a high rate, the app with CPU to spare; the app
constrained to a quarter of a CPU (PROFILE=app-bound), now the limit; and TLS on every DB session of
every run. The lab cannot slow the DB's disk: its CPU stands in for it.
Report 2 (Spring MVC vs WebFlux under blocking latency): /hello/{latency} with a 1 s delay at
300 req/s, the report's physics at a tenth of its rate so that one loadgen core suffices: MVC on
200 Tomcat threads caps near threads / latency = 200 req/s; 400 threads, WebFlux and MVC on
virtual threads hold the rate.
Report 3 (IO thread vs worker thread, Quarkus): the greeting on the Vert.x event loop and on a
worker thread, at one rate below saturation (the lab's single loadgen core cannot find
Quarkus' maximum): what each costs per request, its memory and its start. With the report's
constraints (PROFILE=io-vs-worker: 4 CPUs, 256 MB, -Xmx128m) where the app host has 4 CPUs;
elsewhere the lab says so and runs on the default profile.
Report 4 (virtual vs platform threads, Spring MVC, DB-heavy): books-orders on the report's one
CPU and 2 GB (PROFILE=virtual-threads-db) at one rate, then with the DB 100 ms away (netem on the
DB host, DB_DELAY_MS) at a rate below what the DB pool carries with that delay; where the DB host
has no netem the bench refuses the delay and those arms and their relation are `not runnable
here`, the rest still runs.
Exit status: 0 every run completed (whatever the relations: a relation not reproduced is a
finding, not a failure; report 1's broken app is refused by design), 1 a run did not complete,
2 bad input.
"""
from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import re
import statistics
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from perflab import manifest, rundir
from perflab.attribution import THRESHOLDS as ATTRIBUTION_THRESHOLDS
from perflab.attribution import Attribution, TierFigures
from perflab.audit import RuleResult, Status
from perflab.compare import MIB, Row, read_row
from perflab.sweep import run_bench

EXIT_DONE, EXIT_RUN_FAILED, EXIT_USAGE = 0, 1, 2
REPRODUCED, NOT_REPRODUCED, NOT_JUDGED = "reproduced", "not reproduced", "not judged"
NOT_RUNNABLE = "not runnable here"  # an arm this lab's hosts refuse (the DB delay without netem)
FILE_NAME = "reproduction.json"


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
    check: Callable[[dict[str, Row], "Settings"], tuple[str, str]]


@dataclass(frozen=True)
class Settings:
    rate: int
    duration: str
    warmup: str
    latency_ms: int | None = None
    slo_p99_ms: float | None = None
    profile: str = ""


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

def achieved(row: Row) -> float | None:
    return row.result.achieved_rate if row.result else None


def p50(row: Row) -> float | None:
    return row.result.latency_corrected.percentiles_ms.get("50") if row.result else None


def p99(row: Row) -> float | None:
    return row.result.latency_corrected.percentiles_ms.get("99") if row.result else None


def start_ms(row: Row) -> float | None:
    return row.result.app.start_to_first_request_ms if row.result and row.result.app else None


def audit_figure(row: Row, name: Literal["app_cpu_s_per_1000_requests", "app_max_rss_bytes"]) -> float | None:
    """The app's cost as the audit stated it."""
    if row.audit is None:
        return None
    return row.audit.app_cpu_s_per_1000_requests if name == "app_cpu_s_per_1000_requests" else row.audit.app_max_rss_bytes


def verdict(row: Row) -> str:
    return (row.verdict or "-") if row.result is not None else row.state


def read_attribution(row: Row) -> Attribution | None:
    if row.run_dir is None:
        return None
    try:
        return rundir.read_attribution(row.run_dir)
    except rundir.RunFileError:
        return None


def attribution(row: Row) -> str:
    found = read_attribution(row)
    return found.sentence if found is not None else ""


def _judged(row: Row | None) -> bool:
    return row is not None and row.result is not None and row.verdict in ("VALID", "WARN", "INVALID")


def _missing(rows: dict[str, Row], *keys: str) -> str | None:
    """Why the relation over KEYS cannot be judged, or None."""
    for key in keys:
        if (row := rows.get(key)) is not None and row.state.startswith(NOT_RUNNABLE):
            return f"{key}: {row.state}"
        if not _judged(rows.get(key)):
            row = rows.get(key)
            return f"{key}: {row.state if row else 'not run'}"
    return None


# -- report 1: the method, each of its five steps a state of the lab the verdict must catch ---------

def _rule(row: Row, name: str) -> RuleResult | None:
    return next((rule for rule in row.audit.rules if rule.rule == name), None) if row.audit else None


def _errors_caught(rows: dict[str, Row], s: Settings) -> tuple[str, str]:
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


def _tier(row: Row, name: str) -> TierFigures | None:
    found = read_attribution(row)
    return next((tier for tier in found.tiers if tier.tier == name), None) if found else None


def _app_cpu(row: Row) -> str:
    app = _tier(row, "app")
    if app is None or app.busy_cores is None or app.allotted_cores is None:
        return "the app's CPU not observed"
    return f"the app used {app.busy_cores:.2f} of {app.allotted_cores:g} cores"


def _db_caught(rows: dict[str, Row], s: Settings) -> tuple[str, str]:
    if why := _missing(rows, "db-starved"):
        return NOT_JUDGED, why
    row = rows["db-starved"]
    found, db = read_attribution(row), _tier(row, "db")
    if found is None or db is None:
        return NOT_JUDGED, "db-starved: no attribution"
    caught = bool(db.saturated) and found.limiting_tier != "app" and "no tier was saturated" not in found.sentence
    return (REPRODUCED if caught else NOT_REPRODUCED), f"{verdict(row)}; {_app_cpu(row)}; {found.sentence}"


def _good_result_still_outside(rows: dict[str, Row], s: Settings) -> tuple[str, str]:
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


def _app_caught(rows: dict[str, Row], s: Settings) -> tuple[str, str]:
    if why := _missing(rows, "constrained"):
        return NOT_JUDGED, why
    row = rows["constrained"]
    found = read_attribution(row)
    if found is None:
        return NOT_JUDGED, "constrained: no attribution"
    named = found.limiting_tier == "app" and "the app's CPU" in found.sentence
    return (REPRODUCED if named else NOT_REPRODUCED), f"{verdict(row)}; {_app_cpu(row)}; {found.sentence}"


def _tls_everywhere(rows: dict[str, Row], s: Settings) -> tuple[str, str]:
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
    def check(rows: dict[str, Row], s: Settings) -> tuple[str, str]:
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


def answered_per_s(row: Row) -> float | None:
    """The answers per second the app gave within the measured window: the median second of the measure
    phase in timeseries.json, which counts each answer in the second it came. A capped app answers at its
    cap whatever the generator scheduled, and vegeta keeps what it scheduled in flight until the answer
    comes, so its achieved rate (requests scheduled within the window) counts answers the app gave after
    the window too: report 2's 200 threads on the local lab, 237.4 scheduled per second, 200 answered.
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
    return statistics.median(measure.ok) / series.step_s


def _mvc_capped(rows: dict[str, Row], s: Settings) -> tuple[str, str]:
    if why := _missing(rows, "mvc200"):
        return NOT_JUDGED, why
    row = rows["mvc200"]
    cap = 200 * 1000 / (s.latency_ms or 1)
    rate = achieved(row) or 0.0
    answered = answered_per_s(row)
    shown = f"{rate:.1f} of {s.rate} req/s (200 threads / {s.latency_ms} ms = {cap:g} req/s)"
    if answered is None:
        return (REPRODUCED if 0.85 * cap <= rate <= 1.10 * cap else NOT_REPRODUCED), shown
    shown += f"; the app answered {answered:.1f} req/s (the median second of the window)"
    return (REPRODUCED if 0.85 * cap <= answered <= 1.10 * cap else NOT_REPRODUCED), shown


def _named_cap(rows: dict[str, Row], s: Settings) -> tuple[str, str]:
    if why := _missing(rows, "mvc200"):
        return NOT_JUDGED, why
    row = rows["mvc200"]
    sentence = attribution(row)
    named = verdict(row) == "INVALID" and "request threads" in sentence
    return (REPRODUCED if named else NOT_REPRODUCED), f"{verdict(row)}; {sentence or 'no attribution'}"


def _twice_the_threads(rows: dict[str, Row], s: Settings) -> tuple[str, str]:
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


def _lower(name: str, figure: Callable[[Row], float | None], shown: Callable[[float], str],
           report_ratio: str) -> Relation:
    def check(rows: dict[str, Row], s: Settings) -> tuple[str, str]:
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


def _held(row: Row, rate: int) -> bool:
    return (achieved(row) or 0.0) >= 0.95 * rate and verdict(row) in ("VALID", "WARN")


def _shown(row: Row, rate: int) -> str:
    return f"{achieved(row) or 0.0:.1f} of {rate} req/s, {verdict(row)}"


def _virtual_holds_as_platform(rows: dict[str, Row], s: Settings) -> tuple[str, str]:
    if why := _missing(rows, "platform", "virtual"):
        return _status_of(why), why
    platform, virtual = rows["platform"], rows["virtual"]
    text = f"platform {_shown(platform, s.rate)}; virtual {_shown(virtual, s.rate)}"
    if not _held(platform, s.rate):
        return NOT_JUDGED, text + "; platform threads did not hold the rate either: a lower RATE compares them"
    return (REPRODUCED if _held(virtual, s.rate) else NOT_REPRODUCED), text


def _virtual_costs_no_more(rows: dict[str, Row], s: Settings) -> tuple[str, str]:
    if why := _missing(rows, "platform", "virtual"):
        return _status_of(why), why
    platform, virtual = (audit_figure(rows[key], "app_cpu_s_per_1000_requests") for key in ("platform", "virtual"))
    if platform is None or virtual is None:
        return NOT_JUDGED, f"app CPU per request not stated for {'platform' if platform is None else 'virtual'} threads"
    text = f"virtual {virtual:.3f}, platform {platform:.3f} app CPU-s per 1,000 requests ({virtual / platform:.1%})"
    return (REPRODUCED if virtual <= platform * (1 + DISTINGUISHABLE) else NOT_REPRODUCED), text


def _delay_sinks_virtual(rows: dict[str, Row], s: Settings) -> tuple[str, str]:
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


# -- reproduction.json: written here, read by the report ------------------------------------------

@dataclass(frozen=True)
class RecordedRun:
    key: str
    label: str
    run: str | None  # the run directory's name under results/; None: the run never opened
    state: str


@dataclass(frozen=True)
class Reproduction:
    """A reproduction.json as the report reads it."""

    directory: str
    report: int
    title: str
    summary: str  # the lab's settings in one line
    note: str
    theirs: tuple[tuple[str, str], ...]
    runs: tuple[RecordedRun, ...]
    relations: tuple[tuple[str, str, str], ...]  # claim, status, figures


class ReproductionError(ValueError):
    """A reproduction.json that cannot be read as one."""


def read(directory: Path) -> Reproduction:
    """DIRECTORY/reproduction.json; ReproductionError naming what is wrong."""
    try:
        document = json.loads((directory / FILE_NAME).read_text(encoding="utf-8"))
        settings = document["settings"]
        summary = (f"{document['scenario']} at {settings['rate']} req/s"
                   + (f", /hello/{settings['latency_ms']}" if settings.get("latency_ms") is not None else "")
                   + f", {settings['duration']} after {settings['warmup']} of warm-up, "
                     f"profile {settings.get('profile') or 'default'}")
        return Reproduction(
            directory=directory.name, report=int(document["report"]), title=str(document["title"]), summary=summary,
            note=str(document.get("note") or ""),
            theirs=tuple((str(label), str(figures)) for label, figures in document["theirs"]),
            runs=tuple(RecordedRun(str(key), str(run["label"]), run.get("run"), str(run["state"]))
                       for key, run in document["runs"].items()),
            relations=tuple((str(r["claim"]), str(r["status"]), str(r["figures"])) for r in document["relations"]))
    except OSError as error:
        raise ReproductionError(f"{FILE_NAME} cannot be read: {error.strerror}") from None
    except (ValueError, KeyError, TypeError, AttributeError) as error:
        raise ReproductionError(f"{FILE_NAME} is not a reproduction ({type(error).__name__}: {error})") from None


# -- running and printing --------------------------------------------------------------------------

def bench_options(experiment: Experiment, arm: Arm, settings: Settings) -> list[str]:
    """playbooks/bench.yml's options for one arm (what `make bench` would pass)."""
    options = ["-e", f"app_name={arm.app}", "-e", json.dumps({"app_variants": arm.variants}),
               "-e", f"loadgen_scenario={experiment.scenario}", "-e", f"loadgen_rate={arm.offered(settings)}",
               "-e", f"loadgen_duration={settings.duration}", "-e", f"loadgen_warmup={settings.warmup}"]
    if arm.db_delay_ms:
        options += ["-e", f"bench_db_delay_ms={arm.db_delay_ms}"]
    if arm.db_cpu_hog:
        options += ["-e", f"bench_db_cpu_hog={arm.db_cpu_hog}"]
    if arm.jvm_options:
        options += ["-e", json.dumps({"app_jvm_opts": list(arm.jvm_options)})]
    if settings.latency_ms is not None:
        options += ["-e", f"loadgen_latency_ms={settings.latency_ms}"]
    if settings.slo_p99_ms is not None:
        options += ["-e", f"loadgen_slo_p99_ms={settings.slo_p99_ms:g}"]
    if arm.profile or settings.profile:
        options += ["-e", f"app_profile={arm.profile or settings.profile}"]
    return options


def judge(experiment: Experiment, rows: dict[str, Row], settings: Settings) -> list[dict[str, str]]:
    return [dict(zip(("claim", "status", "figures"), (r.claim, *r.check(rows, settings)))) for r in experiment.relations]


def table(experiment: Experiment, rows: dict[str, Row], relations: Sequence[dict[str, str]], settings: Settings,
          note: str = "") -> str:
    def cell(value: float | None, spec: str, unit: float = 1.0) -> str:
        return "-" if value is None else spec.format(value / unit)

    def figures(arm: Arm) -> str:
        row = rows[arm.key]
        if row.result is None:  # no figures to show: why
            return f"at {arm.offered(settings)} req/s: {row.state}"
        return (f"{cell(achieved(row), '{:.1f}')} of {arm.offered(settings)} req/s, "
                f"p50 {cell(p50(row), '{:.1f}')} ms, p99 {cell(p99(row), '{:.1f}')} ms, {verdict(row)}, app CPU-s/1k req "
                f"{cell(audit_figure(row, 'app_cpu_s_per_1000_requests'), '{:.3f}')}, max RSS "
                f"{cell(audit_figure(row, 'app_max_rss_bytes'), '{:.0f}', MIB)} MiB, start to first request "
                f"{cell(start_ms(row), '{:.0f}')} ms" + (f"\n      {attribution(row)}" if attribution(row) else ""))

    lab = [("lab: " + arm.label, figures(arm)) for arm in experiment.arms]
    width = max(len(label) for label, _ in [*((f"report: {t}", f) for t, f in experiment.theirs), *lab])
    lines = [f"Report {experiment.report}: {experiment.title}",
             f"  lab: {experiment.scenario} at {settings.rate} req/s"
             + (f", /hello/{settings.latency_ms}" if settings.latency_ms is not None else "")
             + f", {settings.duration} after {settings.warmup} of warm-up, profile {settings.profile or 'default'}"]
    if note:
        lines.append(f"  note: {note}")
    lines += [f"  {('report: ' + label).ljust(width)}  {figures}" for label, figures in experiment.theirs]
    lines += [f"  {label.ljust(width)}  {figures}" for label, figures in lab]
    lines.append("  relations:")
    lines += [f"    [{r['status']}] {r['claim']}: {r['figures']}" for r in relations]
    return "\n".join(lines)


def reproduce(experiment: Experiment, settings: Settings, results: Path, inventory: str, extra: Sequence[str],
              run: Callable[[Path, str, Sequence[str], str], tuple[int, Path | None]] = run_bench) -> tuple[int, str]:
    """Every arm's run, the relations judged, reproduction.json written; (exit status, the table)."""
    rows: dict[str, Row] = {}
    note, complete, delay_refused = "", True, ""
    for arm in experiment.arms:
        if arm.db_delay_ms and delay_refused:
            rows[arm.key] = Row(arm.label, None, "", None, None, delay_refused)
            continue
        print(f"perflab reproduce: report {experiment.report}, {arm.label}", flush=True)
        named = f"-{manifest.resolve(arm.app).name}-{experiment.scenario}"
        code, run_dir = run(results, inventory, [*bench_options(experiment, arm, settings), *extra], named)
        if run_dir is None and arm.db_delay_ms and code != 0:
            # The bench refused the delay before the run opened (no netem on the DB host: its message
            # above): every delayed arm is not runnable on this lab, the others still are.
            delay_refused = (f"{NOT_RUNNABLE}: the bench refused DB_DELAY_MS={arm.db_delay_ms} before the run opened "
                             "(it needs netem on the DB host; the bench's output says why)")
            rows[arm.key] = Row(arm.label, None, "", None, None, delay_refused)
            print(f"perflab reproduce: {delay_refused}", flush=True)
            continue
        if run_dir is None and settings.profile and experiment.fallback_profile and code != 0:
            # Refused before the run opened: the profile the host cannot hold (the app role says why above).
            settings = dataclasses.replace(settings, profile=experiment.fallback_profile)
            note = experiment.fallback_why
            print(f"perflab reproduce: {note}", flush=True)
            code, run_dir = run(results, inventory, [*bench_options(experiment, arm, settings), *extra], named)
        rows[arm.key] = read_row(arm.label, run_dir)
        complete = complete and (arm.broken or code in (0, 1) and rows[arm.key].state == "complete")  # 1: judged INVALID
    relations = judge(experiment, rows, settings)
    text = table(experiment, rows, relations, settings, note)
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    where = results / f"{stamp}-reproduce-{experiment.report}"
    where.mkdir(parents=True, exist_ok=True)
    document = {"report": experiment.report, "title": experiment.title, "scenario": experiment.scenario,
                "settings": dataclasses.asdict(settings), "note": note, "theirs": [list(t) for t in experiment.theirs],
                "runs": {arm.key: {"label": arm.label, "app": arm.app, "variants": arm.variants,
                                   "run": _name(rows[arm.key].run_dir),
                                   "state": rows[arm.key].state} for arm in experiment.arms},
                "relations": relations}
    (where / FILE_NAME).write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    return (EXIT_DONE if complete else EXIT_RUN_FAILED), text + f"\n  -> {where / FILE_NAME}"


def _name(run_dir: Path | None) -> str | None:
    return run_dir.name if run_dir is not None else None


def _reports(text: str) -> list[int]:
    wanted = [1, 2, 3, 4] if text == "all" else [int(text)] if text in ("1", "2", "3", "4") else []
    if not wanted:
        raise argparse.ArgumentTypeError(f"REPORT must be 1, 2, 3, 4 or all, got {text!r}")
    return wanted


def _settings(experiment: Experiment, args: argparse.Namespace) -> Settings:
    settings = experiment.settings
    if args.rate:
        settings = dataclasses.replace(settings, rate=int(args.rate))
    if args.duration:
        settings = dataclasses.replace(settings, duration=args.duration)
    if args.warmup:
        settings = dataclasses.replace(settings, warmup=args.warmup)
    return settings


def register(commands: Any) -> None:
    """Register `perflab reproduce` on the CLI's subcommands."""
    sub = commands.add_parser("reproduce", help="run a field report's experiment; its table beside the lab's",
                              description=__doc__.splitlines()[0])
    sub.add_argument("--report", type=_reports, required=True, help="1, 2, 3, 4 or all (REPORT=)")
    sub.add_argument("--inventory", default="inventory/local")
    sub.add_argument("--rate", default="", help="the offered rate instead of the experiment's (RATE=)")
    sub.add_argument("--duration", default="", help="the measured phase instead of the experiment's (DURATION=)")
    sub.add_argument("--warmup", default="", help="the warm-up instead of the experiment's (WARMUP=)")
    sub.add_argument("--results", type=Path, help=rundir.RESULTS_HELP)
    sub.add_argument("bench_options", nargs=argparse.REMAINDER, help="after --: more options for playbooks/bench.yml")
    sub.set_defaults(command=main)


def main(args: argparse.Namespace) -> int:
    if args.rate and not (args.rate.isdigit() and int(args.rate) > 0):
        print(f"perflab reproduce: RATE must be a whole number > 0, got {args.rate!r}", file=sys.stderr)
        return EXIT_USAGE
    extra = [o for o in args.bench_options if o != "--"]
    results = rundir.results_dir(args.results)
    worst, tables = EXIT_DONE, []
    for report in args.report:
        experiment = EXPERIMENTS[report]
        try:
            for arm in experiment.arms:
                found = manifest.resolve(arm.app)
                manifest.choose(found, manifest.variant_selections(arm.variants))
                manifest.build(found)
        except manifest.ManifestError as error:
            for line in error.problems:
                print(f"perflab reproduce: {line}", file=sys.stderr)
            return EXIT_USAGE
        except manifest.BuildError as error:
            print(f"perflab reproduce: {error}", file=sys.stderr)
            return EXIT_RUN_FAILED
        code, text = reproduce(experiment, _settings(experiment, args), results, args.inventory, extra)
        tables.append(text)
        worst = max(worst, code)
    print("\n\n".join(tables))
    return worst
