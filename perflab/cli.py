"""perflab: parse load-generator output and judge runs.

Commands:
  perflab parse-wrk2 FILE [FILE ...] --target-rate R [--percentiles TABLE.json [TABLE.json ...]]
                     [--context CONTEXT.json] [--json]
      wrk2 --latency output -> a run result; with the run's percentile table (written by the
      bench's wrk2 done() hook) the corrected spectrum is the table's and the achieved rate is
      the one over the window wrk2 recorded (after its calibration). Several files are one per
      loadgen host, each with its table (required, in the files' order) -> one run result: the
      requests, errors, threads and connections added up, the hosts' recorded rates summed, their
      tables merged into one corrected distribution (no uncorrected one)
  perflab parse-vegeta FILE [FILE ...] --target-rate R [--host-rates r1,r2,...] [--duration-s D]
                       [--context CONTEXT.json] [--json]
      vegeta results (`vegeta encode -to json`, plain or gzip), one file per loadgen host, each
      host at its share of R (--host-rates; default: R split equally), asked to run D seconds
      (vegeta's -duration; default: (max seq + 1) / rate) -> one run result
      For both: CONTEXT.json (a RunContext: start and end, scenario, app and JVM settings,
      hosts, versions) is merged into the result. k6 was retired (AGPL): parse-k6 says so, exit 2.
  perflab judge RESULT.json [--observations OBS.json] [--json] | judge RUN_DIR [--json]
      the verdict, every rule's evidence, and the app's cost (CPU seconds per 1,000 requests, max RSS);
      given a run's directory, the verdict the bench recorded there (audit.json);
      the rules are the audit's (perflab/audit.py, its document audit.json). `perflab audit` was its
      old name: it says so, exit 2
  perflab thresholds                                 every threshold of the judge with its reason
  perflab collect RUN_DIR [--prometheus URL] [--inputs FILE|-]
      a bench run's files from its bench-inputs.json, the tool's raw output and Prometheus: context,
      observations, utilization, result, audit, attribution, status complete (perflab/collect.py)
  perflab compare [--scenario S] [--apps "A B"] [--variants "K=V ..."] [--repeat N] [-- BENCH OPTIONS]
      every app claiming the scenario (or --apps) in turn under the same options, then one table of
      the runs; --repeat N: each app N times in turns, the median and range (perflab/compare.py)
  perflab sweep --app A --scenario S (--rates "R1 R2 ..." | --start R --step R --max R)
                [--slo-p99-ms MS] [--repeat N] [-- BENCH OPTIONS]
      one bench run per rate, increasing, until a run is incomplete, INVALID or over the p99 SLO:
      the highest rate sustained -> <id>-sweep/sweep.json (perflab/sweep.py)
  perflab watch [--prometheus URL] [--interval S] [--window DURATION] [--once]
      the lab's tiers live in the terminal from Prometheus: CPU, memory, saturation, errors, the
      busiest tier, the run in progress (perflab/watch.py)
  perflab report [--results DIR] [--output FILE]     one HTML page from a results directory (perflab/report.py)
  perflab history [--results DIR] [--output FILE.csv]
      one CSV row per judged run, oldest first (perflab/history.py); the runs not judged counted on stderr
  perflab app list|show|build|pack ...
      the apps under test from their manifests (perflab/manifest.py; the command, perflab/app_cli.py, lists its exit codes)
  perflab reproduce --report 1|2|3|4|all [--rate R] [--duration D] [--warmup W] [-- BENCH OPTIONS]
      a field report's experiment as bench runs, the report's table beside the lab's, each relation it
      found marked reproduced or not (perflab/reproduce.py)
  perflab profile summarize COLLAPSED [--json OUT] [--top N]
      async-profiler's collapsed stacks (plain or gzip) -> the share of samples by layer (the table
      perflab/profile.py keeps) and the top frames by self time; --json writes profile-summary.json
  perflab verify plan SCENARIO --base-url URL | check PLAN RESULTS
      the bench's verify phase: the scenario's requests and the contract's expectations, then the
      judgement of their answers and DB statements (perflab/verify.py, which lists its own exit codes)
  perflab scenario check FILE | show FILE [--first N] [--tool wrk2|vegeta] ...
      a scenario file refused with one line per wrong field, or the requests each tool would send
      (perflab/scenario.py, which lists its own exit codes)
  perflab prometheus interval [--prometheus URL]
      the scrape interval the lab's Prometheus runs with, in seconds; an empty line where it cannot be asked

Exit codes:
  0  parsed; or the audit verdict is VALID
  1  the audit verdict is INVALID
  2  usage error (unknown option, a target rate that is not a positive number, --host-rates that
     do not add up to it, several wrk2 files without one --percentiles table each, the retired parse-k6)
  3  the audit verdict is WARN
  4  bad input: a file that is missing or unreadable, output that cannot be parsed, a results
     file that does not match the schema. One line on stderr says which and why.
INVALID takes 1 so that `perflab judge r.json && next-step` stops on it; WARN has its own code
so that a caller accepts warnings explicitly.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import math
import os
import re
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

from perflab.errors import InputError

if TYPE_CHECKING:
    from perflab.model import RunResult

EXIT_OK = 0
EXIT_INVALID = 1
EXIT_USAGE = 2
EXIT_WARN = 3
EXIT_BAD_INPUT = 4

# The commands a module of their own defines (its register(commands)), in the order help lists them, and the
# module. Only the module of the command run is imported: with all of them, perflab took 0.82 s to start
# (0.64 s of imports), and a bench run calls it about ten times (its app, scenario and verify steps).
MODULE_COMMANDS = {"report": "report", "history": "history", "collect": "collect", "sweep": "sweep", "compare": "compare",
                   "reproduce": "reproduce", "watch": "watch", "app": "app_cli", "verify": "verify", "scenario": "scenario",
                   "prometheus": "prometheus"}


# Judging a run is `judge` (issue 13: names that say what they are); the old name points at it.
AUDIT_RENAMED = ("perflab: `perflab audit` is now `perflab judge` (same arguments: RESULT.json "
                 "[--observations OBS.json] [--json]); the verdict it writes is still audit.json")
# k6 is AGPL-licensed and was retired for that; a caller still asking for it learns what replaces it.
K6_RETIRED = ("perflab: k6 is no longer supported (AGPL, retired): "
              "use wrk2 (perflab parse-wrk2) or vegeta (perflab parse-vegeta)")


def main(argv: Sequence[str] | None = None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    if arguments[:1] == ["parse-k6"]:
        print(K6_RETIRED, file=sys.stderr)
        return EXIT_USAGE
    if arguments[:1] == ["audit"]:
        print(AUDIT_RENAMED, file=sys.stderr)
        return EXIT_USAGE
    parser = _parser(arguments[0] if arguments else None)
    args = parser.parse_args(arguments)
    command: Callable[[argparse.Namespace], int] = args.command
    try:
        return command(args)
    except InputError as exc:
        print(f"perflab: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT


# The command the operator ran, where it was not perflab itself (the Makefile sets it: "make bench"). Its
# usage errors then say one line in that command's name and words, without perflab's usage: the operator
# typed REPEAT=0, not --repeat.
CALLER_VARIABLE = "PERFLAB_AS"


class Parser(argparse.ArgumentParser):
    """perflab's argument parser; its subcommands' parsers are of this class too (add_subparsers)."""

    def error(self, message: str) -> NoReturn:
        caller = os.environ.get(CALLER_VARIABLE, "").strip()
        if not caller:
            super().error(message)
        print(f"{caller}: {re.sub(r'^argument [^:]+: ', '', message)}", file=sys.stderr)
        sys.exit(EXIT_USAGE)


def _parser(command: str | None = None) -> argparse.ArgumentParser:
    """perflab's parser; where COMMAND is one of MODULE_COMMANDS, that command's module is the only one imported."""
    parser: argparse.ArgumentParser = Parser(
        prog="perflab",
        description="Parse load-generator output and judge benchmark runs.",
        epilog="exit codes: 0 parsed or VALID, 1 INVALID, 2 usage error, 3 WARN, 4 bad input",
    )
    commands = parser.add_subparsers(required=True, metavar="COMMAND")

    sub = commands.add_parser("parse-wrk2", help="parse wrk2 --latency output (text) into a run result")
    sub.add_argument("files", type=Path, nargs="+", metavar="FILE",
                     help="wrk2 --latency output (text): one file per loadgen host")
    sub.add_argument(
        "--percentiles", type=Path, nargs="+", metavar="TABLE.json",
        help="the run's percentile table (wrk2-<phase>-percentiles.json, from the bench's done() hook): "
             "its spectrum, and the achieved rate over the window wrk2 recorded; one per FILE, in the "
             "same order (required with several files: their tables merge into one distribution)",
    )
    _add_common_parse_options(sub)
    sub.set_defaults(command=_parse_wrk2)

    sub = commands.add_parser("parse-vegeta", help="parse vegeta results (JSON lines, plain or gzip) into a run result")
    sub.add_argument("files", type=Path, nargs="+", metavar="FILE",
                     help="`vegeta encode -to json` output, plain or gzip: one file per loadgen host")
    sub.add_argument(
        "--host-rates", type=_rates, metavar="r1,r2,...",
        help="each file's share of R, in the files' order, adding up to R (default: R split equally)",
    )
    sub.add_argument(
        "--duration-s", type=_positive_seconds, metavar="D",
        help="seconds the attacks were asked to run (vegeta's -duration); default (max seq + 1) / rate, "
             "which cannot show a vegeta that fell behind its schedule",
    )
    _add_common_parse_options(sub)
    sub.set_defaults(command=_parse_vegeta, usage_error=sub.error)

    sub = commands.add_parser("judge", help="judge a run result: VALID, WARN or INVALID, with the reasons")
    sub.add_argument("result", type=Path, help="a result JSON (perflab parse-wrk2/parse-vegeta --json), or a run's "
                                                "directory: its recorded verdict (audit.json), as the bench printed it")
    sub.add_argument("--observations", type=Path, metavar="OBS.json", help="what monitoring saw in the run window")
    sub.add_argument("--json", action="store_true", help="print the verdict as JSON")
    sub.set_defaults(command=_judge)

    sub = commands.add_parser("thresholds", help="list every threshold of the judge with its reason")
    sub.set_defaults(command=_thresholds)
    for name, module in MODULE_COMMANDS.items():
        if command not in MODULE_COMMANDS or command == name:
            importlib.import_module(f"perflab.{module}").register(commands)
    from perflab import profile

    sub = commands.add_parser("profile", help="async-profiler's collapsed stacks: where the app's samples go")
    profile_commands = sub.add_subparsers(required=True, metavar="PROFILE_COMMAND")
    sub = profile_commands.add_parser("summarize", help="the share of samples by layer and the top frames by self time")
    sub.add_argument("collapsed", type=Path, metavar="COLLAPSED", help="collapsed stacks ('frame;...;frame count' lines; .gz too)")
    sub.add_argument("--json", type=Path, metavar="OUT", help="also write the summary there (profile-summary.json's format)")
    sub.add_argument("--top", type=_positive_count, default=profile.TOP_FRAMES, metavar="N",
                     help=f"frames by self time to list (default {profile.TOP_FRAMES})")
    sub.set_defaults(command=_profile_summarize)
    return parser


def _positive_count(text: str) -> int:
    if not text.isdigit() or int(text) == 0:
        raise argparse.ArgumentTypeError(f"must be a whole number above 0, not {text!r}")
    return int(text)


def _profile_summarize(args: argparse.Namespace) -> int:
    from perflab import profile, rundir

    try:
        stacks = profile.read_collapsed(args.collapsed)
    except profile.ProfileError as exc:
        raise InputError(str(exc)) from None
    summary = profile.summarize(stacks, args.collapsed.name, top=args.top)
    if args.json:
        rundir.save_profile_summary(args.json, summary)
    sys.stdout.write(profile.render(summary))
    return EXIT_OK


def _add_common_parse_options(sub: argparse.ArgumentParser) -> None:
    sub.add_argument(
        "--target-rate", type=_positive_rate, required=True, metavar="R",
        help="requests per second the run asked for (the tool does not print it)",
    )
    sub.add_argument(
        "--context", type=Path, metavar="CONTEXT.json",
        help="what the run knows about itself (times, scenario, app, hosts, versions), merged in",
    )
    sub.add_argument("--json", action="store_true", help="print the result as JSON")


def _positive_number(text: str, unit: str) -> float:
    try:
        number = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not (math.isfinite(number) and number > 0):
        raise argparse.ArgumentTypeError(f"must be a positive number of {unit}, not {text}")
    return number


def _positive_rate(text: str) -> float:
    return _positive_number(text, "requests per second")


def _positive_seconds(text: str) -> float:
    return _positive_number(text, "seconds")


def _rates(text: str) -> list[float]:
    return [_positive_rate(part.strip()) for part in text.split(",")]


def _parse_wrk2(args: argparse.Namespace) -> int:
    files: list[Path] = args.files
    tables: list[Path] = args.percentiles or []
    if len(files) > 1 and not tables:
        return _usage_error("parse-wrk2", f"{len(files)} files need --percentiles, one table per file in "
                                          "the files' order: the hosts' histograms merge through their tables")
    if tables and len(tables) != len(files):
        return _usage_error("parse-wrk2", f"--percentiles gives {len(tables)} tables for {len(files)} files: "
                                          "give one per file, in the files' order")
    from perflab import collect

    result, notes = collect.wrk2_result(files, tables, args.target_rate)
    _print_result(" + ".join(path.name for path in files), _with_context(result, args.context), args.json, notes)
    return EXIT_OK


def _usage_error(command: str, message: str) -> int:
    """A usage error found after parsing the arguments: one line on stderr, exit 2."""
    print(f"perflab {command}: error: {message}", file=sys.stderr)
    return EXIT_USAGE


def _parse_vegeta(args: argparse.Namespace) -> int:
    files: list[Path] = args.files
    rates: list[float] = args.host_rates or [args.target_rate / len(files)] * len(files)
    if len(rates) != len(files):
        args.usage_error(f"--host-rates gives {len(rates)} rates for {len(files)} files: give one per file")
    if not math.isclose(sum(rates), args.target_rate, rel_tol=1e-9):
        args.usage_error(f"--host-rates add up to {sum(rates):g}, not the target rate {args.target_rate:g}")
    from perflab import collect

    result = collect.vegeta_result(files, rates, args.duration_s, args.target_rate)
    _print_result(" + ".join(path.name for path in files), _with_context(result, args.context), args.json)
    return EXIT_OK


def _with_context(result: RunResult, context_file: Path | None) -> RunResult:
    from perflab import collect

    return result if context_file is None else collect.with_context(result, context_file)


def _print_result(name: str, result: RunResult, as_json: bool, notes: Sequence[str] = ()) -> None:
    from perflab import collect

    if as_json:
        sys.stdout.write(result.to_json())
    else:
        print(collect.result_text(name, result, notes))


def _judge(args: argparse.Namespace) -> int:
    from perflab import audit, collect, rundir
    from perflab.model import dumps

    try:
        if args.result.is_dir():
            # A run's directory: the verdict perflab collect recorded (make bench exits with it).
            if args.observations is not None:
                raise InputError(f"{args.result} is a run's directory: its verdict is recorded, "
                                 "--observations is for a result file")
            verdict = rundir.read_audit(args.result)
        else:
            result = rundir.load_result(args.result)
            observations = None if args.observations is None else rundir.load_observations(args.observations)
            verdict = audit.audit(result, observations)
    except rundir.RunFileError as exc:
        raise InputError(str(exc)) from None
    if args.json:
        sys.stdout.write(dumps(verdict))
    else:
        print(collect.verdict_text(verdict))
    by_status = {audit.Status.VALID: EXIT_OK, audit.Status.WARN: EXIT_WARN, audit.Status.INVALID: EXIT_INVALID}
    return by_status[verdict.status]


def _thresholds(args: argparse.Namespace) -> int:
    from perflab import audit

    for spec in dataclasses.fields(audit.THRESHOLDS):
        threshold: audit.Threshold = getattr(audit.THRESHOLDS, spec.name)
        print(f"{spec.name} = {threshold.value:g}\n    {threshold.reason}")
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
