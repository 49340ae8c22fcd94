"""Stops the load generator that holds the host's generator lock (roles/bench/tasks/stop_loadgen.yml).

    python3 stop_loadgen.py LOCK

The generator holding LOCK (start_at.py took it for its run and phase) gets SIGTERM, then SIGKILL
after 10 s; this waits until the lock is free and prints what it stopped as JSON ({"run", "phase",
"pid", "since", "running_s"}), or {} when no generator held it. Exits 1 when the lock is still
held 20 s after the SIGTERM. Runs on the lab's hosts under their python3: standard library only.
"""

from __future__ import annotations

import fcntl
import json
import os
import signal
import sys
import time
from typing import Any

TERM_S = 10.0  # SIGTERM's grace before SIGKILL
GIVE_UP_S = 20.0


def held(fd: int) -> bool:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return False
    except BlockingIOError:
        return True


def stop(lock: str) -> dict[str, Any]:
    fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
    if not held(fd):
        return {}
    with open(lock) as text:
        holder: dict[str, Any] = json.loads(text.read() or "{}")
    deadline = time.time() + GIVE_UP_S
    for sig, until in ((signal.SIGTERM, time.time() + TERM_S), (signal.SIGKILL, deadline)):
        try:
            os.kill(int(holder["pid"]), sig)
        except (KeyError, ValueError, ProcessLookupError):
            pass
        while time.time() < until and held(fd):
            time.sleep(0.2)
        if not held(fd):
            holder["running_s"] = round(time.time() - float(holder.get("since", time.time())))
            return holder
    sys.exit(f"perflab: the load generator of {holder} still holds {lock} after SIGKILL")


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        sys.stderr.write("usage: stop_loadgen.py LOCK\n")
        return 2
    print(json.dumps(stop(argv[1])))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
