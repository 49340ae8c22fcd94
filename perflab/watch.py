"""`perflab watch`: a live terminal view of the lab's tiers, for an operator on SSH or where
Grafana is not installed.

Every few seconds it asks the lab's Prometheus for the figures of the overview dashboard
(perflab/tiers.py: CPU utilization = busy / allotted cores, memory, saturation, errors, per tier)
and names the busiest tier; above them the run in progress (perflab_run_info on the loadgen host)
and the rate it achieves, by vegeta's own count where vegeta runs, else by the app's count (wrk2
exports no metrics), saying which. Prometheus is asked from a background thread, so q and Ctrl-C
answer at once even while a query hangs; when Prometheus cannot answer, one line says so and the
view keeps retrying. `--once` prints one snapshot as plain text instead (no terminal needed).
"""

from __future__ import annotations

import argparse
import curses
import math
import os
import sys
import textwrap
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from perflab import tiers
from perflab.prometheus import DEFAULT_URL, Prometheus, PrometheusError

DEFAULT_INTERVAL_S = 5.0
# The rate window: six scrapes at the lab's 5 s scrape interval.
DEFAULT_WINDOW = "30s"

# Not a per-tier figure, so not in perflab/tiers.py: what the run in progress is
# (docs/ARCHITECTURE.md, "The run window").
RUN_INFO = 'perflab_run_info{job="node",tier="loadgen"}'


EXIT_OK = 0
EXIT_UNREACHABLE = 1
EXIT_USAGE = 2

CTRL_C = 3
QUIT_KEYS = (ord("q"), ord("Q"), CTRL_C)

# The styles of rendered lines; _loop gives each its curses attributes.
TITLE, NORMAL, BUSIEST, ALERT = "title", "normal", "busiest", "alert"


@dataclass(frozen=True)
class FigureValue:
    """One saturation or error figure of a tier and its current value (None: no series); for a
    figure read from whichever source reports, what the value counted (tiers.Figure.source_note)."""

    name: str
    unit: str
    value: float | None
    source: str | None = None


@dataclass(frozen=True)
class TierView:
    tier: str
    utilization: float | None
    busy_cores: float | None
    allotted_cores: float | None
    memory_bytes: float | None
    saturation: tuple[FigureValue, ...] = ()
    errors: tuple[FigureValue, ...] = ()
    service: str | None = None  # what the tier runs, where the view names it: the db tier's engine


@dataclass(frozen=True)
class RunView:
    """The run in progress, from perflab_run_info's labels."""

    run_id: str
    app: str
    scenario: str
    tool: str
    phase: str
    target_rate: float | None


@dataclass(frozen=True)
class Snapshot:
    """Everything the view shows, all evaluated at one instant (`at`, unix time)."""

    at: float
    tiers: tuple[TierView, ...]
    busiest: tuple[str, float] | None
    run: RunView | None = None
    achieved_rate: float | None = None
    achieved_source: str | None = None  # whose count the rate is: tiers.VEGETA_SOURCE or tiers.APP_SOURCE


@dataclass
class State:
    """What the screen shows: the last snapshot and, when the last attempt failed, why."""

    url: str
    interval_s: float
    window: str
    snapshot: Snapshot | None = None
    error: str | None = None
    error_at: float | None = None
    attempts: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)


def _by_tier(prometheus: Prometheus, expr: str, at: float) -> dict[str, float]:
    return {
        s.labels["tier"]: s.value
        for s in prometheus.query(expr, at)
        if "tier" in s.labels and not math.isnan(s.value)
    }


def busiest_from(samples: dict[str, float]) -> tuple[str, float] | None:
    """The (tier, utilization) of the busiest tier among topk(1, ...)'s answer; None when empty."""
    finite = {tier: value for tier, value in samples.items() if math.isfinite(value)}
    if not finite:
        return None
    tier = max(finite, key=lambda name: (finite[name], name))
    return tier, finite[tier]


def run_from(labels: dict[str, str] | None) -> RunView | None:
    """The run perflab_run_info describes; None when no phase is running."""
    if labels is None:
        return None
    try:
        target: float | None = float(labels.get("target_rate", ""))
    except ValueError:
        target = None
    return RunView(
        run_id=labels.get("run_id", "?"), app=labels.get("app", "?"), scenario=labels.get("scenario", "?"),
        tool=labels.get("tool", "?"), phase=labels.get("phase", "?"), target_rate=target,
    )


def collect(prometheus: Prometheus, window: str = DEFAULT_WINDOW, at: float | None = None) -> Snapshot:
    """Ask Prometheus for one snapshot; PrometheusError at the first query it cannot answer."""
    at = time.time() if at is None else at
    utilization = _by_tier(prometheus, tiers.cpu_utilization(window), at)
    busy = _by_tier(prometheus, tiers.cpu_busy_cores(window), at)
    allotted = _by_tier(prometheus, tiers.cpu_allotted_cores(), at)
    memory = _by_tier(prometheus, tiers.memory_resident_bytes(), at)
    busiest = busiest_from(_by_tier(prometheus, tiers.busiest_tier(window), at))

    def reading(figure: tiers.Figure) -> FigureValue:
        value, source = _first(prometheus, figure.expr, at)
        return FigureValue(figure.name, figure.unit, value, figure.source_note(source))

    def values(figures: tuple[tiers.Figure, ...], tier: str) -> tuple[FigureValue, ...]:
        return tuple(reading(f) for f in figures if f.tier == tier)

    saturation, errors = tiers.saturation(window), tiers.errors(window)
    engines = prometheus.query(tiers.DB_ENGINE, at)
    service = {"db": engines[0].labels.get("engine")} if engines else {}
    views = tuple(
        TierView(
            tier=tier, utilization=utilization.get(tier), busy_cores=busy.get(tier),
            allotted_cores=allotted.get(tier), memory_bytes=memory.get(tier),
            saturation=values(saturation, tier), errors=values(errors, tier), service=service.get(tier),
        )
        for tier in tiers.TIERS
    )
    runs = prometheus.query(RUN_INFO, at)
    run = run_from(runs[0].labels if runs else None)
    rate, source = _first(prometheus, tiers.request_rate(window), at)
    return Snapshot(at=at, tiers=views, busiest=busiest, run=run, achieved_rate=rate, achieved_source=source)


def _first(prometheus: Prometheus, expr: str, at: float) -> tuple[float | None, str | None]:
    """The value of EXPR's first series and its source label (None, None: no series)."""
    samples = prometheus.query(expr, at)
    if not samples:
        return None, None
    return samples[0].value, samples[0].labels.get(tiers.SOURCE_LABEL)


def format_bytes(value: float | None) -> str:
    if value is None:
        return "-"
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if value >= size:
            return f"{value / size:.1f} {unit}"
    return f"{value:.0f} B"


def format_value(value: float | None, unit: str) -> str:
    """A figure in its Grafana unit: percentunit as %, rates and counts as short numbers."""
    if value is None:
        return "-"
    if math.isnan(value):
        return "NaN"
    if unit == "percentunit":
        return f"{value:.0%}"
    if value == int(value) and abs(value) < 1e6:
        return f"{value:.0f}"
    return f"{value:.2f}" if abs(value) < 10 else f"{value:.1f}"


def format_cores(busy: float | None, allotted: float | None) -> str:
    if busy is None and allotted is None:
        return "-"
    left = "-" if busy is None else f"{busy:.2f}"
    right = "-" if allotted is None else f"{allotted:g}"
    return f"{left}/{right} cores"


def bar(fraction: float | None, width: int = 10) -> str:
    """[####------] for a fraction of 1 (values above 1 fill the bar and show a +)."""
    if fraction is None or not math.isfinite(fraction):
        return "[" + " " * width + "]"
    filled = max(0, min(width, round(fraction * width)))
    return "[" + "#" * filled + "-" * (width - filled) + ("]" if fraction <= 1 else "+")


def _clock(at: float) -> str:
    return time.strftime("%H:%M:%S", time.localtime(at))


def whose_count(source: str | None, tool: str | None) -> str:
    """Which count the achieved rate is, and why not the load generator's own where it is the app's."""
    if source == tiers.VEGETA_SOURCE:
        return "vegeta's count"
    if tool == "wrk2":
        return "the app's count: wrk2 exports no metrics"
    if tool == "vegeta":
        return "the app's count: no series from vegeta's exporter yet"
    return "the app's count"


def why_no_rate(tool: str | None) -> str:
    """Why the achieved rate is "-": neither the load generator nor the app reported requests."""
    app = "the app's request counter has no series (is an app deployed and scraped? make lab-status)"
    if tool == "wrk2":
        return f"wrk2 exports no metrics and {app}"
    if tool == "vegeta":
        return f"no series from vegeta's exporter yet and {app}"
    return f"no load generator metrics and {app}"


def _run_lines(snapshot: Snapshot) -> list[tuple[str, str]]:
    run = snapshot.run
    rate, source = snapshot.achieved_rate, snapshot.achieved_source
    if run is None:
        line = "run: none in progress"
        if rate is not None:
            line += (f"  (vegeta: {rate:.1f} req/s)" if source == tiers.VEGETA_SOURCE
                     else f"  (the app counts {rate:.1f} req/s)")
        return [(line, NORMAL)]
    target = "-" if run.target_rate is None else f"{run.target_rate:g}"
    if rate is not None:
        share = f"{rate / run.target_rate:.0%} of target; " if run.target_rate else ""
        achieved = f"{rate:.1f} req/s ({share}{whose_count(source, run.tool)})"
    else:
        achieved = f"- ({why_no_rate(run.tool)})"
    return [
        (f"run: {run.run_id}  phase {run.phase}  app {run.app}  scenario {run.scenario}  tool {run.tool}", NORMAL),
        (f"     target {target} req/s  achieved {achieved}", NORMAL),
    ]


TABLE_HEADER = f"{'TIER':<11}{'CPU':>6} {'':14}{'BUSY/ALLOTTED':<18}{'MEMORY':>10}   SATURATION, ERRORS"


def _tier_lines(view: TierView, busiest: str | None) -> list[tuple[str, str]]:
    marker = "*" if view.tier == busiest else " "
    util = "-" if view.utilization is None else f"{view.utilization:.0%}"
    head = (f"{marker}{view.tier:<10}{util:>6} {bar(view.utilization)}  "
            f"{format_cores(view.busy_cores, view.allotted_cores):<18}{format_bytes(view.memory_bytes):>10}   ")
    figures = [f"engine: {view.service}"] if view.service else []
    figures += [f"{f.name}: {format_value(f.value, f.unit)}" + (f" ({f.source})" if f.source else "")
                for f in (*view.saturation, *view.errors)]
    style = BUSIEST if view.tier == busiest else NORMAL
    if not figures:
        return [(head + "-", style)]
    indent = " " * len(head)
    return [(head + figures[0], style)] + [(indent + figure, NORMAL) for figure in figures[1:]]


def render(state: State, now: float | None = None) -> list[tuple[str, str]]:
    """The screen as (text, style) lines: title, the run, the tiers, the busiest tier, or why not."""
    now = time.time() if now is None else now
    lines: list[tuple[str, str]] = [
        (f"perflab watch  {state.url}  every {state.interval_s:g}s, rates over {state.window}  "
         f"{_clock(now)}   q: quit", TITLE),
    ]
    snapshot = state.snapshot
    if state.error is not None:
        lines.append((f"PROMETHEUS UNREACHABLE (attempt {state.attempts}, retrying every {state.interval_s:g}s): {state.error}", ALERT))
        if snapshot is not None:
            lines.append((f"(the figures below are from {_clock(snapshot.at)}, the last answer)", ALERT))
    if snapshot is None:
        if state.error is None:
            lines.append(("asking Prometheus ...", NORMAL))
        return lines
    lines.append(("", NORMAL))
    lines.extend(_run_lines(snapshot))
    lines.append(("", NORMAL))
    lines.append((TABLE_HEADER, TITLE))
    busiest = snapshot.busiest[0] if snapshot.busiest else None
    for view in snapshot.tiers:
        lines.extend(_tier_lines(view, busiest))
    lines.append(("", NORMAL))
    lines.append((busiest_line(snapshot), BUSIEST if busiest else NORMAL))
    lines.append(("(* busiest tier; - no series in Prometheus)", NORMAL))
    return lines


def busiest_line(snapshot: Snapshot) -> str:
    if snapshot.busiest is None:
        return "busiest tier: - (no CPU figures: are the exporters up? make lab-status)"
    tier, utilization = snapshot.busiest
    allotted = next((v.allotted_cores for v in snapshot.tiers if v.tier == tier), None)
    of = "" if allotted is None else f" of its {allotted:g} allotted core{'s' if allotted != 1 else ''}"
    return f"busiest tier: {tier} ({utilization:.0%}{of} busy)"


def _poll(state: State, prometheus: Prometheus, stop: threading.Event, changed: threading.Event) -> None:
    while not stop.is_set():
        try:
            snapshot = collect(prometheus, state.window)
        except PrometheusError as error:
            with state.lock:
                state.error, state.error_at, state.attempts = str(error), time.time(), state.attempts + 1
        else:
            with state.lock:
                state.snapshot, state.error, state.attempts = snapshot, None, state.attempts + 1
        changed.set()
        stop.wait(state.interval_s)


def fit(lines: list[tuple[str, str]], width: int) -> list[tuple[str, str]]:
    """Lines cut to the terminal's width, except alerts, which wrap: their end says what to do."""
    fitted: list[tuple[str, str]] = []
    for text, style in lines:
        if style == ALERT and len(text) > width:
            fitted.extend((part, style) for part in textwrap.wrap(text, max(10, width)))
        else:
            fitted.append((text[:width], style))
    return fitted


def _draw(screen: curses.window, lines: list[tuple[str, str]], attributes: dict[str, int]) -> None:
    screen.erase()
    height, width = screen.getmaxyx()
    for row, (text, style) in enumerate(fit(lines, width - 1)[: max(0, height)]):
        try:
            screen.addstr(row, 0, text, attributes.get(style, curses.A_NORMAL))
        except curses.error:
            pass  # a terminal resized under us: the next redraw fits again
    screen.refresh()


def _loop(screen: curses.window, state: State, prometheus: Prometheus) -> None:
    try:
        curses.curs_set(0)
    except curses.error:
        pass  # a terminal without cursor control: the cursor stays visible, nothing else changes
    attributes = {TITLE: curses.A_BOLD, NORMAL: curses.A_NORMAL, BUSIEST: curses.A_BOLD, ALERT: curses.A_BOLD}
    if curses.has_colors():
        curses.use_default_colors()
        curses.init_pair(1, curses.COLOR_RED, -1)
        curses.init_pair(2, curses.COLOR_YELLOW, -1)
        attributes[ALERT] = curses.color_pair(1) | curses.A_BOLD
        attributes[BUSIEST] = curses.color_pair(2) | curses.A_BOLD
    # Raw mode: Ctrl-C arrives as a key, not as SIGINT to the whole process group, so that
    # `make watch` ends with perflab's exit 0 instead of make's "Interrupt".
    curses.raw()
    screen.timeout(250)
    stop, changed = threading.Event(), threading.Event()
    poller = threading.Thread(target=_poll, args=(state, prometheus, stop, changed), daemon=True)
    poller.start()
    try:
        last_second = -1
        while True:
            second = int(time.time())
            if changed.is_set() or second != last_second:
                changed.clear()
                last_second = second
                with state.lock:
                    lines = render(state)
                _draw(screen, lines, attributes)
            key = screen.getch()
            if key in QUIT_KEYS:
                return
    finally:
        stop.set()


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add `perflab watch` to the CLI."""
    sub = commands.add_parser(
        "watch", help="a live terminal view of the lab's tiers and the busiest one (q or Ctrl-C quits)",
        description="Every few seconds: per tier (loadgen, app, db, monitoring) CPU utilization (busy / allotted "
                    "cores), memory, saturation and errors from the lab's Prometheus, the busiest tier, the run in "
                    "progress and the rate it achieves (vegeta's count, else the app's). q or Ctrl-C quits.",
        epilog="exit codes: 0 quit (or --once answered), 1 --once and Prometheus could not answer, "
               "2 usage error (bad option, no terminal)",
    )
    sub.add_argument("--prometheus", default=os.environ.get("PROMETHEUS_URL") or DEFAULT_URL, metavar="URL",
                     help=f"the lab's Prometheus (default: $PROMETHEUS_URL, else {DEFAULT_URL}; "
                          "`make watch` takes the inventory's lab_prometheus_url)")
    sub.add_argument("--interval", type=_positive_seconds, default=DEFAULT_INTERVAL_S, metavar="S",
                     help=f"seconds between refreshes (default {DEFAULT_INTERVAL_S:g})")
    sub.add_argument("--window", type=_promql_duration, default=DEFAULT_WINDOW, metavar="DURATION",
                     help=f"the range rates are taken over, a PromQL duration (default {DEFAULT_WINDOW})")
    sub.add_argument("--once", action="store_true", help="print one snapshot as plain text and exit")
    sub.set_defaults(command=_watch)


def _positive_seconds(text: str) -> float:
    try:
        seconds = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not (math.isfinite(seconds) and seconds >= 0.5):
        raise argparse.ArgumentTypeError(f"must be at least 0.5 seconds, not {text}")
    return seconds


def _promql_duration(text: str) -> str:
    number, unit = text[:-1], text[-1:]
    if not (unit and unit in "smh" and number.isdigit() and int(number) > 0):
        raise argparse.ArgumentTypeError(f"not a PromQL duration like 30s, 2m or 1h: {text!r}")
    return text


def _watch(args: argparse.Namespace) -> int:
    state = State(url=args.prometheus, interval_s=args.interval, window=args.window)
    timeout_s = min(5.0, max(1.0, args.interval))
    prometheus = Prometheus(args.prometheus, timeout_s=timeout_s)
    if args.once:
        return _once(state, prometheus, print)
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        print("perflab: error: perflab watch needs a terminal; --once prints one snapshot as text", file=sys.stderr)
        return EXIT_USAGE
    try:
        curses.wrapper(_loop, state, prometheus)
    except KeyboardInterrupt:
        pass
    return EXIT_OK


def _once(state: State, prometheus: Prometheus, out: Callable[[str], None]) -> int:
    try:
        state.snapshot = collect(prometheus, state.window)
    except PrometheusError as error:
        print(f"perflab: error: {error}", file=sys.stderr)
        return EXIT_UNREACHABLE
    for text, _style in render(state, now=state.snapshot.at):
        out(text)
    return EXIT_OK

