"""The lab's run lock, kept on one lab host (roles/run_lock): one run at a time on the whole lab.

    python3 run_lock.py take LOCK HOLDER_JSON LEASE_S [OVER_RUN]
    python3 run_lock.py release LOCK RUN

LOCK is a JSON file naming its holder: the run ("run"), what it is ("what"), the controller's host
("controller"), its user ("user"), the controller's process that owns the run ("pid", or null),
when it started ("started") and until when its lease holds ("lease_until", unix seconds, on this
host's clock). Every command reads and writes it under an flock of LOCK + ".guard", so two
controllers never both take it.

take: writes HOLDER_JSON (its lease LEASE_S from now) when the lock is free, is already this
run's, its holder's lease ran out, or its holder is the run OVER_RUN (the controller found that
run's process gone). Prints {"taken": true, "took_over": <old holder or null>, "why": ...} or,
when another run holds it, {"taken": false, "held_by": <holder>}. Exits 0 in both cases: the
controller decides (roles/run_lock/tasks/take.yml).
release: frees the lock if RUN holds it; prints {"released": true|false, "held_by": ...}.

Runs on the lab's hosts under their python3: standard library only.
"""

from __future__ import annotations

import fcntl
import json
import os
import sys
import time
from typing import Any

USAGE = "usage: run_lock.py take LOCK HOLDER_JSON LEASE_S [OVER_RUN] | release LOCK RUN\n"


def _read(lock: str) -> dict[str, Any] | None:
    try:
        with open(lock) as held:
            text = held.read().strip()
    except FileNotFoundError:
        return None
    if not text:
        return None
    try:
        holder = json.loads(text)
    except ValueError:
        # A lock that is not JSON was not written by this program (written whole, below): it
        # names no run and can hold nothing.
        return None
    return holder if isinstance(holder, dict) else None


def _write(lock: str, holder: dict[str, Any]) -> None:
    """Written whole: a reader sees the old holder or the new one."""
    part = lock + ".part"
    with open(part, "w") as out:
        json.dump(holder, out)
        out.flush()
        os.fsync(out.fileno())
    os.replace(part, lock)


def _guarded(lock: str) -> int:
    os.makedirs(os.path.dirname(lock) or ".", exist_ok=True)
    fd = os.open(lock + ".guard", os.O_RDWR | os.O_CREAT, 0o644)
    fcntl.flock(fd, fcntl.LOCK_EX)
    return fd


def take(lock: str, holder: dict[str, Any], lease_s: float, over: str | None, now: float) -> dict[str, Any]:
    current = _read(lock)
    why = None
    if current is not None and current.get("run") != holder["run"]:
        if over is not None and current.get("run") == over:
            why = "its process on its controller is gone"
        elif float(current.get("lease_until", 0)) < now:
            why = f"its lease ran out {now - float(current.get('lease_until', 0)):.0f} s ago"
        else:
            return {"taken": False, "held_by": current}
    _write(lock, {**holder, "lease_until": now + lease_s})
    return {"taken": True, "took_over": current if why else None, "why": why}


def release(lock: str, run: str) -> dict[str, Any]:
    current = _read(lock)
    if current is None or current.get("run") != run:
        return {"released": False, "held_by": current}
    os.remove(lock)
    return {"released": True, "held_by": None}


def main(argv: list[str]) -> int:
    command, args = (argv[1], argv[2:]) if len(argv) > 1 else ("", [])
    arity = {"take": (3, 4), "release": (2, 2)}.get(command)
    if arity is None or not arity[0] <= len(args) <= arity[1]:
        sys.stderr.write(USAGE)
        return 2
    lock = args[0]
    guard = _guarded(lock)
    try:
        now = time.time()
        if command == "take":
            done = take(lock, json.loads(args[1]), float(args[2]), args[3] if len(args) > 3 else None, now)
        else:
            done = release(lock, args[1])
    finally:
        os.close(guard)
    print(json.dumps(done))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
