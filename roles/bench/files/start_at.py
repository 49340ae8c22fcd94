"""Runs a phase's command at the instant every loadgen host agreed on (roles/bench/tasks/run_phase.yml).

    python3 start_at.py LOCK RUN PHASE START_AT COMMAND [ARG ...]

The run owns its generator: this takes the host's generator lock LOCK for run RUN, phase PHASE,
and the tool it becomes (exec) holds it until it exits. While another generator holds it, the
phase refuses to start (stop_loadgen.yml stops an earlier run's first). It sleeps until START_AT
(unix seconds), says on stderr when it really started ("perflab: started <unix seconds>": the
loadgen hosts' start skew, and how late the window's agreed start was met), and becomes COMMAND.
Runs on the lab's hosts under their python3: standard library only.
"""

from __future__ import annotations

import fcntl
import json
import os
import sys
import time


def take_lock(lock: str, run: str, phase: str) -> int:
    """The lock's file descriptor, held and inherited by the command; exits when another holds it."""
    fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        with open(lock) as held:
            holder = held.read().strip()
        sys.exit(f"perflab: another load generator still runs on this host ({holder}): this run does not start beside it")
    os.ftruncate(fd, 0)
    os.write(fd, json.dumps({"run": run, "phase": phase, "pid": os.getpid(), "since": time.time()}).encode())
    os.set_inheritable(fd, True)
    return fd


def main(argv: list[str]) -> int:
    if len(argv) < 6:
        sys.stderr.write("usage: start_at.py LOCK RUN PHASE START_AT COMMAND [ARG ...]\n")
        return 2
    lock, run, phase, start_at = argv[1:5]
    take_lock(lock, run, phase)
    time.sleep(max(0.0, float(start_at) - time.time()))
    sys.stderr.write("perflab: started %.6f\n" % time.time())
    sys.stderr.flush()
    os.execvp(argv[5], argv[5:])


if __name__ == "__main__":
    sys.exit(main(sys.argv))
