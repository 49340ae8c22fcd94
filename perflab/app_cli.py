"""`perflab app ...`: the apps under test from their manifests (perflab/manifest.py), on the command
line that Make and role `app` call (registered in perflab/cli.py). Apart from the manifest: this part
changes with how an operator asks, the manifest with what the lab needs to know of an app.


  perflab app list [--names] [--scenario S] [--builtin]     the apps, or those claiming scenario S
  perflab app show APP [--variant K=V ...] [--lab K=V ...] [--scenario S] [--json]
      the app's deploy variables (what role `app` deploys) with the chosen variants; --lab gives
      the lab's variables their values; --scenario refuses an app that does not claim S
  perflab app build APP [--variant K=V ...]
      runs the manifest's build when the artifact is missing or older than its sources; checks
      that the artifact exists afterwards
  perflab app pack APP --output FILE.tar
      a directory artifact as one tar, rewritten only when its content changed (role `app` copies it)
APP is a manifest's name or the path of a manifest file.

Exit codes: 0 done; 1 the build failed or left no artifact; 2 refused: an unknown app, a wrong
manifest, an unknown variant, an unclaimed scenario, an environment variable that is not set.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import yaml  # type: ignore[import-untyped]

from perflab.app_build import BuildError, build, pack
from perflab.manifest import (LAB_VARIABLES, Manifest, ManifestError, choose, claims, deploy_vars, loaded, recorded, resolve,
                              scenario_names, shown, variant_selections)

EXIT_OK = 0
EXIT_BUILD_FAILED = 1
EXIT_REFUSED = 2


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add `perflab app` to the CLI."""
    app = commands.add_parser(
        "app", help="the apps under test, from their manifests: list, show (the deploy variables), build, pack",
        description="App manifests (perflab/manifest.py): apps/<name>/perflab-app.yml, apps/peers/<name>.yml, or a file "
                    "given by its path.",
        epilog="exit codes: 0 done; 1 the build failed or left no artifact; 2 refused (unknown app, wrong manifest, "
               "unknown variant, unclaimed scenario)",
    )
    sub = app.add_subparsers(required=True, metavar="ACTION")
    listing = sub.add_parser("list", help="the known apps (apps/*/perflab-app.yml, apps/peers/*.yml)")
    listing.add_argument("--names", action="store_true", help="names only, one a line")
    listing.add_argument("--scenario", metavar="S", help="only the apps that claim scenario S")
    listing.add_argument("--builtin", action="store_true", help="only the project's own apps (apps/<name>/)")
    listing.set_defaults(command=_list)
    show = sub.add_parser("show", help="the deploy variables of APP with its variants")
    _add_app(show)
    show.add_argument("--lab", action="append", default=[], metavar="K=V",
                      help=f"a lab variable's value (repeatable): {', '.join(LAB_VARIABLES)}")
    show.add_argument("--scenario", metavar="S", help="refuse the app unless it claims scenario S")
    show.add_argument("--json", action="store_true", help="print JSON (what role app reads)")
    show.set_defaults(command=_show)
    building = sub.add_parser("build", help="build APP's artifact when missing or older than its sources")
    _add_app(building)
    building.set_defaults(command=_build)
    packing = sub.add_parser("pack", help="a directory artifact as one tar, rewritten only when it changed")
    packing.add_argument("app", metavar="APP", help="a manifest's name or path")
    packing.add_argument("--output", type=Path, required=True, metavar="FILE.tar")
    packing.set_defaults(command=_pack)


def _add_app(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("app", metavar="APP", help="a manifest's name or path")
    parser.add_argument("--variant", action="append", default=[], metavar="K=V",
                        help="choose a variant's option (repeatable; several in one, space-separated, as VARIANT=)")


def _refuse(error: Exception) -> int:
    for line in str(error).splitlines():
        print(f"perflab app: {line}", file=sys.stderr)
    return EXIT_REFUSED


def _chosen(manifest: Manifest, args: argparse.Namespace) -> dict[str, str]:
    return choose(manifest, [s for text in args.variant for s in variant_selections(text)])


def _list(args: argparse.Namespace) -> int:
    manifests, problems = loaded()
    chosen = [m for m in manifests if (not args.scenario or claims(m, args.scenario)) and (m.builtin or not args.builtin)]
    rows = [[m.name, "built-in" if m.builtin else "foreign", recorded(m.file), " ".join(m.scenarios),
             " ".join(f"{n}={'|'.join(v.options)}" for n, v in m.variants.items()) or "-"] for m in chosen]
    if args.names:
        print("".join(f"{row[0]}\n" for row in rows), end="")
    elif rows:
        rows.insert(0, ["app", "kind", "manifest", "scenarios", "variants"])
        widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
        for row in rows:
            print("  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip())
    return _refuse(ManifestError(problems)) if problems else EXIT_OK


def _show(args: argparse.Namespace) -> int:
    try:
        manifest = resolve(args.app)
        if args.scenario and args.scenario in scenario_names() and not claims(manifest, args.scenario):
            raise ManifestError([f"{manifest.name} does not claim scenario {args.scenario!r}: it claims "
                                 f"{', '.join(manifest.scenarios)} ({shown(manifest.file)}, scenarios)"])
        lab = dict(_key_value(text, "--lab") for text in args.lab)
        document = deploy_vars(manifest, _chosen(manifest, args), lab)
    except ManifestError as error:
        return _refuse(error)
    if args.json:
        print(json.dumps(document))
    else:
        print(yaml.safe_dump(document, sort_keys=False, default_flow_style=False), end="")
    return EXIT_OK


def _key_value(text: str, option: str) -> tuple[str, str]:
    key, equals, value = text.partition("=")
    if not equals:
        raise ManifestError([f"{option} {text!r}: give KEY=VALUE"])
    return key, value


def _build(args: argparse.Namespace) -> int:
    try:
        manifest = resolve(args.app)
        _chosen(manifest, args)
        path = build(manifest)
    except ManifestError as error:
        return _refuse(error)
    except BuildError as error:
        print(f"perflab app: {error}", file=sys.stderr)
        return EXIT_BUILD_FAILED
    print(f"perflab app: {manifest.name}: {shown(path)} is ready")
    return EXIT_OK


def _pack(args: argparse.Namespace) -> int:
    try:
        written = pack(resolve(args.app), args.output)
    except ManifestError as error:
        return _refuse(error)
    except BuildError as error:
        print(f"perflab app: {error}", file=sys.stderr)
        return EXIT_BUILD_FAILED
    print(f"{'written' if written else 'unchanged'}: {args.output}")
    return EXIT_OK
