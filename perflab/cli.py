"""perflab: parse load-generator output and judge runs.

Commands:
  perflab parse-wrk2 FILE --target-rate R [--context CONTEXT.json] [--json]
  perflab parse-k6 FILE --target-rate R [--context CONTEXT.json] [--json]
      wrk2 --latency output / k6 summary JSON -> a run result; CONTEXT.json (a RunContext:
      start and end, scenario, app and JVM settings, hosts, versions) is merged into it
  perflab audit RESULT.json [--observations OBS.json] [--json]
  perflab thresholds                                 every audit threshold with its reason
  perflab report [--results DIR] [--output FILE]     one HTML page from a results directory (perflab/report.py)

Exit codes:
  0  parsed; or the audit verdict is VALID
  1  the audit verdict is INVALID
  2  usage error (unknown option, a target rate that is not a positive number)
  3  the audit verdict is WARN
  4  bad input: a file that is missing or unreadable, output that cannot be parsed, a results
     file that does not match the schema. One line on stderr says which and why.
INVALID takes 1 so that `perflab audit r.json && next-step` stops on it; WARN has its own code
so that a caller accepts warnings explicitly.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from perflab import audit, k6, report, sweep, watch, wrk2
from perflab.model import SCHEMA_VERSION, LatencyDistribution, ParseError, RunContext, RunResult, SchemaError

EXIT_OK = 0
EXIT_INVALID = 1
EXIT_USAGE = 2
EXIT_WARN = 3
EXIT_BAD_INPUT = 4

_EXIT_BY_STATUS = {audit.Status.VALID: EXIT_OK, audit.Status.WARN: EXIT_WARN, audit.Status.INVALID: EXIT_INVALID}


class InputError(Exception):
    """Input the command cannot use; the message is printed as one line."""


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    command: Callable[[argparse.Namespace], int] = args.command
    try:
        return command(args)
    except InputError as exc:
        print(f"perflab: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="perflab",
        description="Parse load-generator output and judge benchmark runs.",
        epilog="exit codes: 0 parsed or VALID, 1 INVALID, 2 usage error, 3 WARN, 4 bad input",
    )
    commands = parser.add_subparsers(required=True, metavar="COMMAND")

    for name, tool in (("parse-wrk2", "wrk2 --latency output (text)"), ("parse-k6", "k6 summary JSON")):
        sub = commands.add_parser(name, help=f"parse {tool} into a run result")
        sub.add_argument("file", type=Path, help=tool)
        sub.add_argument(
            "--target-rate", type=_positive_rate, required=True, metavar="R",
            help="requests per second the run asked for (the tool does not print it)",
        )
        sub.add_argument(
            "--context", type=Path, metavar="CONTEXT.json",
            help="what the run knows about itself (times, scenario, app, hosts, versions), merged in",
        )
        sub.add_argument("--json", action="store_true", help="print the result as JSON")
        sub.set_defaults(command=_parse_wrk2 if name == "parse-wrk2" else _parse_k6)

    sub = commands.add_parser("audit", help="judge a run result: VALID, WARN or INVALID, with the reasons")
    sub.add_argument("result", type=Path, help="a result JSON (perflab parse-wrk2/parse-k6 --json)")
    sub.add_argument("--observations", type=Path, metavar="OBS.json", help="what monitoring saw in the run window")
    sub.add_argument("--json", action="store_true", help="print the verdict as JSON")
    sub.set_defaults(command=_audit)

    sub = commands.add_parser("thresholds", help="list every audit threshold with its reason")
    sub.set_defaults(command=_thresholds)
    report.register(commands)
    sweep.register(commands)
    watch.register(commands)
    return parser


def _positive_rate(text: str) -> float:
    try:
        rate = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not (math.isfinite(rate) and rate > 0):
        raise argparse.ArgumentTypeError(f"must be a positive number of requests per second, not {text}")
    return rate


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise InputError(f"{path}: is a directory, not a file") from None
    except UnicodeDecodeError:
        raise InputError(f"{path}: not text (binary or not UTF-8)") from None
    except OSError as exc:
        raise InputError(f"{path}: {exc.strerror}") from None


def _parse_wrk2(args: argparse.Namespace) -> int:
    try:
        result = wrk2.to_run_result(wrk2.parse(_read(args.file)), target_rate=args.target_rate)
    except ParseError as exc:
        raise InputError(f"{args.file}: not complete wrk2 --latency output: {exc}") from None
    _print_result(args.file, _with_context(result, args.context), args.json)
    return EXIT_OK


def _parse_k6(args: argparse.Namespace) -> int:
    try:
        result = k6.to_run_result(k6.parse(_read(args.file)), target_rate=args.target_rate)
    except ParseError as exc:
        raise InputError(f"{args.file}: not a usable k6 summary: {exc}") from None
    _print_result(args.file, _with_context(result, args.context), args.json)
    return EXIT_OK


def _with_context(result: RunResult, context_file: Path | None) -> RunResult:
    if context_file is None:
        return result
    try:
        context = RunContext.from_json(_read(context_file))
        return result.with_context(context)
    except (SchemaError, ValueError) as exc:
        raise InputError(f"{context_file}: not a perflab run context: {exc}") from None
    return EXIT_OK


def _print_result(path: Path, result: RunResult, as_json: bool) -> None:
    if as_json:
        sys.stdout.write(result.to_json())
        return
    lines = [
        f"{path.name}: {result.tool}, {result.requests} requests in {result.duration_s:g} s",
        f"rate: {result.achieved_rate:g} req/s achieved of {result.target_rate:g} asked "
        f"({result.achieved_rate / result.target_rate:.1%})",
        _latency_line("latency (corrected, ms)", result.latency_corrected),
    ]
    if result.latency_uncorrected is not None:
        lines.append(_latency_line("latency (uncorrected, ms)", result.latency_uncorrected))
    recorded = result.latency_corrected.total_count
    if result.tool == "wrk2" and recorded is not None:
        lines.append(f"recorded: {recorded} of {result.requests} requests (wrk2 records none during calibration)")
    if result.dropped_iterations:
        lines.append(f"dropped iterations: {result.dropped_iterations}")
    kinds = result.errors.by_kind()
    lines.append("errors: " + (", ".join(f"{k} {n}" for k, n in kinds.items()) if kinds else "none"))
    print("\n".join(lines))


def _latency_line(label: str, latency: LatencyDistribution) -> str:
    values = "  ".join(f"p{key} {value:g}" for key, value in latency.percentiles_ms.items())
    return f"{label}: {values}  mean {latency.mean_ms:g}  max {latency.max_ms:g}"


def _audit(args: argparse.Namespace) -> int:
    try:
        result = RunResult.from_json(_read(args.result))
    except SchemaError as exc:
        raise InputError(f"{args.result}: not a perflab result: {exc}") from None
    observations = None
    if args.observations is not None:
        try:
            observations = audit.Observations.from_json(_read(args.observations))
        except SchemaError as exc:
            raise InputError(f"{args.observations}: not perflab observations: {exc}") from None
    verdict = audit.audit(result, observations)
    if args.json:
        document = {
            "schema_version": SCHEMA_VERSION,
            "status": verdict.status.value,
            "rules": [
                {"rule": r.rule, "status": r.status.value, "evidence": r.evidence} for r in verdict.rules
            ],
        }
        print(json.dumps(document, indent=2))
    else:
        print(f"verdict: {verdict.status.value}")
        order = [audit.Status.INVALID, audit.Status.WARN, audit.Status.VALID, audit.Status.NOT_EVALUATED]
        for rule in sorted(verdict.rules, key=lambda r: order.index(r.status)):
            print(f"  {rule.status.value:<13} {rule.rule}: {rule.evidence}")
    return _EXIT_BY_STATUS[verdict.status]


def _thresholds(args: argparse.Namespace) -> int:
    for spec in dataclasses.fields(audit.THRESHOLDS):
        threshold: audit.Threshold = getattr(audit.THRESHOLDS, spec.name)
        print(f"{spec.name} = {threshold.value:g}\n    {threshold.reason}")
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
