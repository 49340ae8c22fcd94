"""Runs a phase's command at the instant every loadgen host agreed on (roles/bench/tasks/run_phase.yml).

    python3 start_at.py [--run-info FILE LABELS TYPES] LOCK RUN PHASE START_AT COMMAND [ARG ...]

The run owns its generator: this takes the host's generator lock LOCK for run RUN, phase PHASE,
and the tool it becomes (exec) holds it until it exits. While another generator holds it, the
phase refuses to start (stop_loadgen.yml stops an earlier run's first). With --run-info it then
publishes the run window for the dashboards and `make watch`: FILE (node_exporter's textfile
directory) holds perflab_run_info with LABELS (a JSON object: run_id, app, scenario, tool,
target_rate, phase) and, for each of the scenario's request types in TYPES (a JSON list of
{method, route, type}: perflab.scenario's Scenario.request_types), perflab_request_type with the
run's run_id and app, which the app dashboard's panels by request type join on the app's routes.
The file is written whole (a temporary file renamed over it); close_window.yml removes it.
That was a task of its own, a module's round trip per phase. It sleeps until START_AT (unix
seconds), says on stderr when it really started ("perflab: started <unix seconds>": the loadgen
hosts' start skew, and how late the window's agreed start was met), and becomes COMMAND.
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


def series(labels: dict[str, object]) -> str:
    """LABELS as a series' labels in Prometheus' text format: {name="value",...}."""
    def escaped(value: object) -> str:
        return str(value).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return "{%s}" % ",".join('%s="%s"' % (name, escaped(value)) for name, value in labels.items())


def run_info(labels: dict[str, object], types: list[dict[str, object]]) -> str:
    """The run window in Prometheus' text format: perflab_run_info{LABELS} 1, and a
    perflab_request_type{run_id, app, method, route, type} 1 for each of TYPES."""
    run = {name: labels.get(name, "") for name in ("run_id", "app")}
    return ("# HELP perflab_run_info A perflab benchmark run is in this phase on this load generator (1 while it lasts).\n"
            "# TYPE perflab_run_info gauge\n"
            "perflab_run_info%s 1\n" % series(labels)
            + "# HELP perflab_request_type A request type of the running scenario and the app's route it is sent to.\n"
            "# TYPE perflab_request_type gauge\n"
            + "".join("perflab_request_type%s 1\n" % series({**run, **t}) for t in types))


def publish(path: str, labels: dict[str, object], types: list[dict[str, object]]) -> None:
    """PATH replaced whole by the run window: node_exporter never reads half a file."""
    partial = "%s.%d.partial" % (path, os.getpid())
    with open(partial, "w") as out:
        out.write(run_info(labels, types))
    os.chmod(partial, 0o644)
    os.replace(partial, path)


def main(argv: list[str]) -> int:
    published = None
    if len(argv) > 4 and argv[1] == "--run-info":
        published, labels, types = argv[2], json.loads(argv[3]), json.loads(argv[4])
        argv = argv[:1] + argv[5:]
    if len(argv) < 6:
        sys.stderr.write("usage: start_at.py [--run-info FILE LABELS TYPES] LOCK RUN PHASE START_AT COMMAND [ARG ...]\n")
        return 2
    lock, run, phase, start_at = argv[1:5]
    take_lock(lock, run, phase)
    if published is not None:
        publish(published, labels, types)
    time.sleep(max(0.0, float(start_at) - time.time()))
    sys.stderr.write("perflab: started %.6f\n" % time.time())
    sys.stderr.flush()
    os.execvp(argv[5], argv[5:])


if __name__ == "__main__":
    sys.exit(main(sys.argv))
