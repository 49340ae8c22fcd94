"""Slows the db host for a run, and undoes it (roles/bench/tasks/check_delay.yml, db_delay_on.yml,
db_delay_off.yml, db_hog_on.yml, db_hog_off.yml): field report 4's network delay and report 1's
busy CPU on the database's own host.

    python3 db_slowdown.py netem-check
    python3 db_slowdown.py delay-on --ms MS [--dev DEV]
    python3 db_slowdown.py delay-off [--dev DEV]
    python3 db_slowdown.py hog-on --count N --max-s S --pids FILE
    python3 db_slowdown.py hog-off --pids FILE

netem-check adds a 0 ms netem qdisc on the loopback interface and removes it at once: exit 0 when
the kernel has netem (sch_netem), else tc's status with tc's message on stderr. delay-on puts every
packet DEV sends (default: the interface of the default route) behind a netem delay of MS and
prints the qdiscs of DEV; delay-off removes a netem qdisc from DEV, saying "removed" when there was
one, and exits 1 if one is still there. hog-on starts N busy loops, each in a session of its own
and ending by itself after S seconds should nothing stop it, and writes their process ids to FILE;
it prints N. hog-off stops the loops FILE names, says "stopped" when there were any, and removes
FILE. Runs on the lab's hosts under their python3: standard library only.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys

BUSY_LOOP = ["sh", "-c", "while :; do :; done"]


def default_device(routes: str) -> str:
    """The interface of the first default route in `ip -o route show default`'s output."""
    for line in routes.splitlines():
        words = line.split()
        if "dev" in words[:-1]:
            return words[words.index("dev") + 1]
    raise SystemExit(f"db_slowdown: no default route to put the delay on (ip route said: {routes.strip()!r}); "
                     "set bench_db_delay_interface")


def device(given: str) -> str:
    if given:
        return given
    return default_device(run(["ip", "-o", "route", "show", "default"]).stdout)


def run(argv: list[str], check: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    if check and done.returncode != 0:
        sys.stderr.write(done.stderr)
        raise SystemExit(done.returncode)
    return done


def netem_check() -> int:
    added = run(["tc", "qdisc", "add", "dev", "lo", "root", "netem", "delay", "0ms"], check=False)
    if added.returncode != 0:
        sys.stderr.write(added.stderr)
        return added.returncode
    run(["tc", "qdisc", "del", "dev", "lo", "root"])
    return 0


def has_netem(dev: str) -> bool:
    return "netem" in run(["tc", "qdisc", "show", "dev", dev]).stdout


def delay_on(ms: int, given: str) -> int:
    dev = device(given)
    run(["tc", "qdisc", "replace", "dev", dev, "root", "netem", "delay", f"{ms}ms"])
    print(run(["tc", "qdisc", "show", "dev", dev]).stdout, end="")
    return 0


def delay_off(given: str) -> int:
    dev = device(given)
    if has_netem(dev):
        run(["tc", "qdisc", "del", "dev", dev, "root"])
        print(f"removed the netem qdisc from {dev}")
    if has_netem(dev):
        print(f"netem still on {dev}", file=sys.stderr)
        return 1
    return 0


def hog_on(count: int, max_s: int, pids: str) -> int:
    started = []
    for _ in range(count):
        loop = subprocess.Popen(["timeout", str(max_s), *BUSY_LOOP], start_new_session=True, stdin=subprocess.DEVNULL,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        started.append(loop.pid)
    with open(pids, "w", encoding="ascii") as out:
        out.writelines(f"{pid}\n" for pid in started)
    print(len(started))
    return 0


def hog_off(pids: str) -> int:
    try:
        with open(pids, encoding="ascii") as listed:
            named = [int(line) for line in listed if line.strip()]
    except FileNotFoundError:
        return 0
    for pid in named:
        try:
            os.kill(pid, signal.SIGTERM)  # timeout passes it on to its busy loop
        except ProcessLookupError:
            pass
    os.remove(pids)
    if named:
        print("stopped")
    return 0


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="db_slowdown.py", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("netem-check")
    on = commands.add_parser("delay-on")
    on.add_argument("--ms", type=int, required=True)
    on.add_argument("--dev", default="")
    off = commands.add_parser("delay-off")
    off.add_argument("--dev", default="")
    hog = commands.add_parser("hog-on")
    hog.add_argument("--count", type=int, required=True)
    hog.add_argument("--max-s", type=int, required=True)
    hog.add_argument("--pids", required=True)
    unhog = commands.add_parser("hog-off")
    unhog.add_argument("--pids", required=True)
    args = parser.parse_args(argv)
    if args.command == "netem-check":
        return netem_check()
    if args.command == "delay-on":
        return delay_on(args.ms, args.dev)
    if args.command == "delay-off":
        return delay_off(args.dev)
    if args.command == "hog-on":
        return hog_on(args.count, args.max_s, args.pids)
    return hog_off(args.pids)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
