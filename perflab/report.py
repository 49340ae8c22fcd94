"""`perflab report`: one self-contained HTML page from a results directory.

Reads every run directory (result.json, audit.json, status.json, observations.json,
utilization.json, timeseries.json, the raw tool output) and every sweep directory (sweep.json) under the results
directory (docs/ARCHITECTURE.md, "Controller-side files") and writes results/report.html:
- side by side, per (scenario, asked rate, tool, resource profile): the app variants' corrected
  latency spectra on one chart with their verdicts, and a table of the same runs (achieved rate,
  p50/p99/p99.9, the app's own p99 beside the generator's with its histogram bucket, errors, the
  app's CPU-seconds per 1,000 requests, max RSS, start to first request) with each figure's ratio to the best, computed between the runs judged VALID or WARN,
  where the runs' windows were profiled (PROFILE_APP), each app's samples by layer side by side with a link to
  its flame graph (profile-summary.json, flamegraph.html), and the set's last 5 judged runs, newest first,
  with verdict and p99 (perflab.history's rows);
- the cost table per scenario and profile (the shape of the field report on IO threads against
  worker threads): start to first request, and from sweeps only, max throughput, the max RSS of
  that sweep's runs and throughput per MiB;
- per scenario, throughput against p99 latency from sweeps;
- per run, its latency spectrum (corrected; uncorrected dashed where the tool recorded it: wrk2
  -U, vegeta), each tier's CPU and memory over the measured phase, the verdict with every rule
  and the limiting tier (attribution.json), the app's own p50/p99 (observations.json) beside the
  generator's, and where it was profiled, its layers, top frames and flame graph;
- per run, the run over time on one axis (seconds from the measured phase's start, the warm-up
  before it shaded): per second, the answers that succeeded and failed and their corrected p50
  and p99 (timeseries.json, which `perflab collect` computes once from vegeta's raw results:
  perflab.timeseries), and the app's and the DB's busy cores every 5 s (utilization.json). wrk2
  keeps no per-request record: its runs get the same from the app's own histogram, every scrape
  interval, server-side (timeseries.json's source "app-histogram"), or the CPU alone with a line
  that says why.
An app is named by its variant everywhere (perflab.model.app_variant: MVC's threads, Quarkus'
dispatch, the profile). Only judged runs (readable, with a verdict) are drawn; only runs judged
VALID or WARN are compared: an INVALID run did not measure what it claims. A run without a
verdict, or whose files cannot be read, is named, never drawn.

The page has no script and fetches nothing: its Content-Security-Policy forbids any request, so
a reference to anything outside the file would show up as an error in the browser. A flame graph
is linked by its path relative to the page, a navigation the reader makes, never a fetch.

The reader is perflab.results, the comparable sets perflab.report_sets, the page
perflab.report_page; this module is the command.

Every problem with the input (an empty or half-written run directory, an incomplete run, a run
without Prometheus data, a corrupt raw output or JSON file) is one line on stderr and one line
in the report's "Problems" list; the report is built from whatever else is readable.

Exit codes of `perflab report`:
  0  the report was written; every run was read
  3  the report was written, but problems were found (listed on stderr and in the report)
  4  no report: the results directory is missing or unreadable, or the output cannot be written
"""

from __future__ import annotations

import argparse
import datetime
import sys
from pathlib import Path

from perflab import atomic, rundir
from perflab.report_page import render_page
from perflab.results import Results, load, refusal

EXIT_WRITTEN = 0

EXIT_WRITTEN_WITH_PROBLEMS = 3

EXIT_NOT_WRITTEN = 4

REPORT_NAME = "report.html"


def build(results_dir: Path, output: Path) -> Results:
    """Read `results_dir`, write the page to `output`; OSError when either cannot be used."""
    results = load(results_dir)
    page = render_page(results, datetime.datetime.now(datetime.timezone.utc), output.resolve().parent)
    atomic.write_text(output, page)
    return results


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add `perflab report` to the CLI."""
    sub = commands.add_parser(
        "report", help="one self-contained HTML page from a results directory",
        description="Write one self-contained HTML page (no network) from every run and sweep under the "
                    "results directory.",
        epilog="exit codes: 0 written, every run read; 3 written, problems listed on stderr and in the report; "
               "4 not written (results directory or output unusable)",
    )
    sub.add_argument("--results", type=Path, metavar="DIR", help=rundir.RESULTS_HELP)
    sub.add_argument("--output", type=Path, metavar="FILE", help=f"the page to write (default: DIR/{REPORT_NAME})")
    sub.set_defaults(command=_report)


def _report(args: argparse.Namespace) -> int:
    results_dir = rundir.results_dir(args.results)
    output: Path = args.output or results_dir / REPORT_NAME
    refused = refusal(results_dir)
    if refused is not None:
        print(refused, file=sys.stderr)
        return EXIT_NOT_WRITTEN
    try:
        results = build(results_dir, output)
    except OSError as exc:
        print(f"perflab: error: {exc.filename or output}: {exc.strerror}: no report written", file=sys.stderr)
        return EXIT_NOT_WRITTEN
    for problem in results.problems:
        print(f"perflab: report: {problem}", file=sys.stderr)
    comparable = sum(r.comparable for r in results.runs)
    print(f"{output}: {len(results.runs)} runs ({comparable} VALID or WARN), {len(results.sweeps)} sweeps, "
          f"{len(results.problems)} problems")
    return EXIT_WRITTEN_WITH_PROBLEMS if results.problems else EXIT_WRITTEN
