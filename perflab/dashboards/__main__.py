"""python -m perflab.dashboards [DIR]: write the dashboards' JSON into DIR (default: dashboards/)."""

from __future__ import annotations

import sys
from pathlib import Path

from perflab.dashboards import write


def main(argv: list[str]) -> int:
    if len(argv) > 1:
        print("usage: python -m perflab.dashboards [DIR]", file=sys.stderr)
        return 2
    directory = Path(argv[0] if argv else "dashboards")
    if not directory.is_dir():
        print(f"perflab dashboards: {directory} is not a directory", file=sys.stderr)
        return 2
    for path in write(directory):
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
