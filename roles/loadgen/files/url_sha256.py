"""The sha256 of what a URL serves, read whole and kept nowhere (roles/loadgen/tasks/resolve.yml: the wrk2
archive at loadgen_wrk2_archive_url, checked before a run opens).

    python3 -c <this file> URL TIMEOUT_S

Prints one line: "sha256 <hex digest>", or "unreadable <why>" (exit 0 either way: the task judges the line).
Runs under the host's python3: standard library only.
"""
from __future__ import annotations

import hashlib
import sys
import urllib.request


def sha256_of(url: str, timeout_s: float) -> str:
    try:
        digest = hashlib.sha256()
        with urllib.request.urlopen(url, timeout=timeout_s) as answer:
            for block in iter(lambda: answer.read(1 << 16), b""):
                digest.update(block)
        return f"sha256 {digest.hexdigest()}"
    except Exception as exc:  # any failure is the line's reason
        return f"unreadable {exc}"


if __name__ == "__main__":
    print(sha256_of(sys.argv[1], float(sys.argv[2])))
