"""Reads which load generators a loadgen host has (roles/loadgen/tasks/facts.yml): the commit of the
wrk2 build and the sha256 of the vegeta binary.

    python3 installed.py WRK2_COMMIT_FILE VEGETA_BINARY

Prints two lines: the commit WRK2_COMMIT_FILE holds (written beside wrk2's binary when it was
built), then VEGETA_BINARY's sha256; a line is empty where the file is not there. Runs on the
lab's hosts under their python3: standard library only.
"""

from __future__ import annotations

import hashlib
import sys


def commit(path: str) -> str:
    try:
        with open(path, encoding="utf-8") as recorded:
            return recorded.read().strip()
    except OSError:
        return ""


def sha256(path: str) -> str:
    digest = hashlib.sha256()
    try:
        with open(path, "rb") as binary:
            for block in iter(lambda: binary.read(1 << 20), b""):
                digest.update(block)
    except OSError:
        return ""
    return digest.hexdigest()


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: installed.py WRK2_COMMIT_FILE VEGETA_BINARY", file=sys.stderr)
        return 2
    print(commit(argv[0]))
    print(sha256(argv[1]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
