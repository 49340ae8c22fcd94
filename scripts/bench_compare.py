#!/usr/bin/env python3
"""make compare: run playbooks/bench.yml for every app claiming the scenario (or those --apps names)
in turn with the same options, then print one table of the runs (tool, achieved rate, corrected p50/p99/p99.9, errors, verdict, then what
the app spent as the audit states it: CPU seconds per 1,000 requests and max RSS).
Runs of different tools (TOOL=auto picks per run) are never compared silently: the table says so.

Usage: bench_compare.py --inventory INV --scenario S [--apps "quarkus spring-mvc"] [--variants "threads=virtual"]
                        -- ANSIBLE_ARGS...
Every app is checked and built first (perflab app build), so that a wrong manifest or a failing
build stops the comparison before any run. A variant applies to the apps that have it (THREADS=
concerns only the apps with threads); one that no app has is refused. Each run is a normal bench
run under results/<run-id>/. Exit status: 0 when every run completed,
1 otherwise (the table still lists every app, with the status of the runs that did not complete).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from perflab import manifest

ROOT = Path(__file__).resolve().parent.parent
RESULTS = Path(os.environ.get("PERFLAB_RESULTS_DIR") or ROOT / "results")
MIB = 1024 * 1024


def _run_dirs() -> set[Path]:
    return set(RESULTS.iterdir()) if RESULTS.is_dir() else set()


def _read(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _row(app: str, run_dir: Path | None) -> list[str]:
    if run_dir is None:
        return [app, "-", "no run (rejected before it started)"]
    status = _read(run_dir / "status.json") or {}
    result = _read(run_dir / "result.json")
    audit = _read(run_dir / "audit.json") or {}
    if status.get("status") != "complete" or result is None:
        reason = status.get("failed_step") or status.get("reason", "no status.json")
        return [app, run_dir.name, f"incomplete: {reason}"]
    percentiles = result["latency_corrected"]["percentiles_ms"]
    errors = " ".join(f"{kind}={count}" for kind, count in result["errors"].items() if count) or "none"
    return [
        app, run_dir.name, "complete",
        f"{result['target_rate']:g}", f"{result['achieved_rate']:.1f}", result["tool"],
        *(f"{percentiles[p]:.2f}" if p in percentiles else "-" for p in ("50", "99", "99.9")),
        errors, audit.get("status", "?"),
        _figure(audit.get("app_cpu_s_per_1000_requests"), 1, "{:.3f}"),
        _figure(audit.get("app_max_rss_bytes"), MIB, "{:.1f}"),
    ]


def _figure(value: Any, unit: float, spec: str) -> str:
    """An audit figure in UNIT, or "-" where the audit did not state it (not observed, older audit.json)."""
    return spec.format(value / unit) if isinstance(value, (int, float)) and not isinstance(value, bool) else "-"


def _table(rows: list[list[str]]) -> str:
    # New columns go at the end: tests/bench_runs reads a row by position up to the tool.
    header = ["app", "run", "status", "target/s", "achieved/s", "tool", "p50 ms", "p99 ms", "p99.9 ms", "errors", "verdict",
              "app CPU-s/1k req", "app max RSS MiB"]
    rows = [row + [""] * (len(header) - len(row)) for row in rows]
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    lines = ["  ".join(str(c).ljust(w) for c, w in zip(r, widths)).rstrip() for r in [header, *rows]]
    return "\n".join([lines[0], "  ".join("-" * w for w in widths), *lines[1:]])


def _apps(given: str, scenario: str, selections: list[str]) -> list[tuple[str, str]]:
    """(app as given, its variants as key=value words) of every app to run, each checked and built."""
    if given:
        pairs = [(app, manifest.resolve(app)) for app in given.split()]
    else:
        pairs = [(found.name, found) for found in manifest.claiming(scenario)]
        if not pairs:
            raise manifest.ManifestError([f"no app claims scenario {scenario!r} (perflab app list shows what each claims)"])
    unclaimed = [found.name for _, found in pairs if scenario in manifest.scenario_names() and scenario not in found.scenarios]
    if unclaimed:
        raise manifest.ManifestError([f"{', '.join(unclaimed)} do(es) not claim scenario {scenario!r} (perflab app list)"])
    variants = [manifest.choose(found, selections, strict=False) for _, found in pairs]
    for selection in selections:
        key = selection.partition("=")[0] if "=" in selection else None
        if not any(key in found.variants if key else any(selection in v.options for v in found.variants.values())
                   for _, found in pairs):
            raise manifest.ManifestError([f"no app of this comparison ({', '.join(f.name for _, f in pairs)}) has the "
                                          f"variant {selection!r}"])
    for _, found in pairs:
        manifest.build(found)
    return [(app, " ".join(f"{k}={v}" for k, v in chosen.items())) for (app, _), chosen in zip(pairs, variants)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--inventory", required=True)
    parser.add_argument("--scenario", default="", help="the scenario (SCENARIO=): by default every app claiming it runs")
    parser.add_argument("--apps", default="", help="space-separated app names or manifest paths (APPS=)")
    parser.add_argument("--variants", default="", help="VARIANT= words, key=value: each applies to the apps that have it")
    parser.add_argument("ansible_args", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    extra = [a for a in args.ansible_args if a != "--"]
    try:
        apps = _apps(args.apps, args.scenario, manifest.variant_selections(args.variants))
    except manifest.ManifestError as error:
        for line in error.problems:
            print(f"perflab compare: {line}", file=sys.stderr)
        return 2
    except manifest.BuildError as error:
        print(f"perflab compare: {error}", file=sys.stderr)
        return 1
    playbook = ROOT / "playbooks" / "bench.yml"
    ansible_playbook = Path(sys.executable).parent / "ansible-playbook"
    rows, all_complete = [], True
    for app, variants in apps:
        print(f"perflab compare: {app}", flush=True)
        before = _run_dirs()
        code = subprocess.call([str(ansible_playbook), "-i", args.inventory, str(playbook), "-e", f"app_name={app}",
                                "-e", json.dumps({"app_variants": variants}), *extra])
        new = sorted(_run_dirs() - before)
        run_dir = new[-1] if new else None
        row = _row(app, run_dir)
        all_complete = all_complete and code == 0 and row[2] == "complete"
        rows.append(row)
        if run_dir is None and code != 0:
            break  # bad input is the same for every app: one clear error is enough
    print(_table(rows))
    tools = sorted({row[5] for row in rows if row[2] == "complete"})
    if len(tools) > 1:
        print(f"perflab compare: these runs used different load generators ({', '.join(tools)}): their latencies are "
              "not comparable side by side; run again with TOOL= one of them")
    return 0 if all_complete else 1


if __name__ == "__main__":
    sys.exit(main())
