"""`perflab history`: one CSV row per judged run, so that two commits or two days can be compared.

Reads the results directory as the report does (perflab.results.load: the same runs, the same
rule for what is judged) and writes one row per judged run (readable, with a verdict in
audit.json), sorted by start, to results/history.csv: the run's identity (app, variant, scenario,
asked rate, tool, profile, DB engine), its verdict and its key figures. A CSV file with a header is what
DuckDB reads as it is (`SELECT * FROM read_csv_auto('results/history.csv')`); an empty cell is a
figure the run did not record (NULL).

The columns:
  run_id, started_at            the run directory's name; the measured phase's start (ISO 8601)
  app, variant                  the app's name; its variant (perflab.model.app_variant)
  scenario, rate, tool, profile, database
                                the comparable set (perflab.results.SetKey): scenario, asked req/s,
                                load generator, resource profile, the DB server's engine (MariaDB,
                                MySQL, PostgreSQL; empty where the run did not record it)
  commit                        the project's commit the run was made with (context.json's versions:
                                perflab, "-dirty" with uncommitted changes); empty for runs made
                                outside a git checkout or before the bench recorded it
  verdict                       audit.json's VALID, WARN or INVALID
  achieved_rate                 req/s completed
  p50_ms, p99_ms, p999_ms       corrected latency
  errors                        failed requests, every kind
  app_cpu_s_per_1000_requests   the app's cost, as audit.json keeps it (perflab.audit.AppCost)
  app_max_rss_mib               the app's max RSS, as audit.json keeps it, in MiB
  limiting_tier                 attribution.json's limiting tier: "none" when it names none (the
                                system kept up, or nothing crossed a threshold); empty without
                                attribution.json

The runs left out (no verdict, unreadable, unfinished, empty) are counted in one line on stderr;
`perflab report` says why each is. The same rows give the report its "last runs" of each
comparable set (recent()), so that both read a run the same way.

Exit codes of `perflab history`:
  0  written
  4  not written: the results directory is missing or unreadable, or the file cannot be written
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import datetime
import io
import sys
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from perflab import atomic, results, rundir
from perflab.model import app_variant

EXIT_WRITTEN = 0
EXIT_NOT_WRITTEN = 4
HISTORY_NAME = "history.csv"
RECENT_PER_SET = 5
MIB = 1024.0 * 1024.0


@dataclass(frozen=True)
class Row:
    """One judged run; its fields are the CSV's columns, in order. None: not recorded (empty cell)."""

    run_id: str
    started_at: str | None
    app: str
    variant: str
    scenario: str
    rate: float
    tool: str
    profile: str
    database: str
    commit: str | None
    verdict: str
    achieved_rate: float
    p50_ms: float | None
    p99_ms: float | None
    p999_ms: float | None
    errors: int
    app_cpu_s_per_1000_requests: float | None
    app_max_rss_mib: float | None
    limiting_tier: str | None

    @property
    def key(self) -> results.SetKey:
        """The comparable set the run belongs to: what the report's side-by-side sections group by."""
        return results.SetKey(self.scenario, self.rate, self.tool, self.profile, self.database)


COLUMNS = tuple(f.name for f in dataclasses.fields(Row))


def row(run: results.Run) -> Row | None:
    """The run's row; None when the run was not judged (unreadable, or no verdict)."""
    if not run.judged:
        return None
    result, verdict = run.result, run.verdict
    assert result is not None and verdict is not None
    latency = result.latency_corrected.percentiles_ms
    limiting_tier = None
    if run.attribution is not None:
        limiting_tier = run.limiting_tier or "none"
    return Row(
        run_id=run.run_id,
        started_at=result.started_at,
        app=result.app.name if result.app is not None else "",
        variant=app_variant(result.app),
        scenario=run.scenario,
        rate=result.target_rate,
        tool=result.tool,
        profile=run.profile,
        database=run.database,
        commit=result.versions.get("perflab"),
        verdict=verdict.status.value,
        achieved_rate=result.achieved_rate,
        p50_ms=latency.get("50"),
        p99_ms=latency.get("99"),
        p999_ms=latency.get("99.9"),
        errors=result.errors.total(),
        app_cpu_s_per_1000_requests=verdict.app_cpu_s_per_1000_requests,
        app_max_rss_mib=verdict.app_max_rss_bytes / MIB if verdict.app_max_rss_bytes is not None else None,
        limiting_tier=limiting_tier,
    )


def _started(entry: Row) -> tuple[datetime.datetime, str]:
    """Oldest first; a run that records no start first of all; the run id breaks ties."""
    if entry.started_at is None:
        return datetime.datetime.min.replace(tzinfo=datetime.timezone.utc), entry.run_id
    return datetime.datetime.fromisoformat(entry.started_at), entry.run_id


def rows(runs: Sequence[results.Run]) -> list[Row]:
    """One row per judged run of `runs`, oldest first."""
    found = [r for r in map(row, runs) if r is not None]
    return sorted(found, key=_started)


def skipped(runs: Sequence[results.Run]) -> Counter[str]:
    """The runs that have no row, by what the report calls them (no verdict, unreadable, incomplete, ...)."""
    return Counter(run.state for run in runs if not run.judged)


def recent(history: Sequence[Row], per_set: int = RECENT_PER_SET) -> dict[results.SetKey, list[Row]]:
    """The last `per_set` runs of each comparable set, newest first."""
    by_key: dict[results.SetKey, list[Row]] = {}
    for entry in sorted(history, key=_started, reverse=True):
        mine = by_key.setdefault(entry.key, [])
        if len(mine) < per_set:
            mine.append(entry)
    return by_key


def _cell(value: str | float | int | None) -> str:
    if value is None:
        return ""
    return repr(value) if isinstance(value, float) else str(value)


def to_csv(history: Sequence[Row]) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(COLUMNS)
    for entry in history:
        writer.writerow([_cell(getattr(entry, column)) for column in COLUMNS])
    return buffer.getvalue()


# ---------------------------------------------------------------------------------------------
# The command


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add `perflab history` to the CLI."""
    sub = commands.add_parser(
        "history", help="one CSV row per judged run of a results directory (DuckDB: read_csv_auto)",
        description="Write one CSV row per judged run under the results directory (run, app and variant, "
                    "scenario, rate, tool, profile, verdict, key figures), oldest first. The runs not judged "
                    "are counted on stderr.",
        epilog="exit codes: 0 written; 4 not written (results directory or output unusable)",
    )
    sub.add_argument("--results", type=Path, metavar="DIR", help=rundir.RESULTS_HELP)
    sub.add_argument("--output", type=Path, metavar="FILE.csv", help=f"the file to write (default: DIR/{HISTORY_NAME})")
    sub.set_defaults(command=_history)


def _history(args: argparse.Namespace) -> int:
    results_dir = rundir.results_dir(args.results)
    output: Path = args.output or results_dir / HISTORY_NAME
    refusal = results.refusal(results_dir)
    if refusal is not None:
        print(refusal, file=sys.stderr)
        return EXIT_NOT_WRITTEN
    try:
        runs = results.load(results_dir).runs
        history = rows(runs)
        atomic.write_text(output, to_csv(history), newline="")
    except OSError as exc:
        print(f"perflab: error: {exc.filename or output}: {exc.strerror}: no history written", file=sys.stderr)
        return EXIT_NOT_WRITTEN
    left_out = skipped(runs)
    if left_out:
        counts = ", ".join(f"{state} {count}" for state, count in sorted(left_out.items()))
        print(f"perflab: history: {left_out.total()} run(s) not judged, no row ({counts}); `perflab report` "
              "says why", file=sys.stderr)
    print(f"{output}: {len(history)} judged run(s)")
    return EXIT_WRITTEN
