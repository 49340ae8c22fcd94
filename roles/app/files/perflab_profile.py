#!/usr/bin/env python3
"""Profile a running JVM for exactly a window with async-profiler, from the host it runs on.

    perflab_profile.py start --pid PID --lib libasyncProfiler.so --mode cpu|alloc|lock|wall [--interval N]
    perflab_profile.py stop  --pid PID --lib libasyncProfiler.so --out DIR [--title TEXT]
    perflab_profile.py window --pid PID|--unit UNIT --lib ... --mode ... --start-at T --end-at T --out DIR [--title TEXT]

`start` loads the agent into the JVM (the JVM's own dynamic attach, what jcmd JVMTI.agent_load sends,
spoken here over its socket: no code in the app, no JDK tool on the host, any HotSpot JVM >= 9) and
starts sampling; `stop` stops it and writes into DIR:
- profile.collapsed: the collapsed stacks ("frame;frame;frame count"), perflab profile summarize's input;
- flamegraph.html: async-profiler's flame graph, one self-contained page (no external resource);
- profile-window.json: what was profiled, how and when (this program owns that format; see WINDOW).

`window` is both for one measured window (roles/bench/tasks/run_phase.yml): it checks the JVM (the
MainPID of the systemd UNIT, or PID) and the library at once, then returns, and a detached child
starts the profile at START_AT and stops it at END_AT (unix seconds) into DIR; a failure after the
return is written to DIR/profile-error.json ({"error": "..."}) for the bench to read.

Mode cpu samples CPU time through perf_events (the only engine that sees kernel frames) where the
kernel lets this JVM open them, else through ctimer (timer_create per thread, which is what
async-profiler itself falls back to for `-e cpu`: it works in containers whose seccomp profile
refuses perf_event_open, and unlike itimer it samples each thread on its own CPU time). The engine is
chosen by asking the agent for perf_events first: the engine used is the one that started, never a
guess, and profile-window.json says which.

The agent writes its files as the JVM's user, inside the JVM's view of the filesystem (a systemd unit
with PrivateTmp= and ProtectSystem=strict can write only its private /tmp): they go to the JVM's
/tmp/perflab-profile-<pid>/ and are read back through /proc/<pid>/root, which shows that view.
Run this program as root or as the JVM's user: root becomes the JVM's user first (a container's root
may not read another user's /proc/<pid>, and the attach listener answers its own user). Only Python's
standard library: it runs on lab hosts.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

MODES = ("cpu", "alloc", "lock", "wall")
# Per mode, the engines to try in order (async-profiler's event names) and what each is called in
# profile-window.json.
ENGINES: dict[str, tuple[tuple[str, str], ...]] = {
    "cpu": (("cpu-clock", "perf_events"), ("ctimer", "ctimer")),
    "alloc": (("alloc", "allocation samples (TLAB/ObjectSampler)"),),
    "lock": (("lock", "contended monitor and lock samples"),),
    "wall": (("wall", "wall clock (every thread, running or not)"),),
}
COLLAPSED = "profile.collapsed"
FLAMEGRAPH = "flamegraph.html"
FIRST_START = "first-start.collapsed"  # the profiler's start and stop before the window (preload)
WINDOW = "profile-window.json"  # {"schema_version", "pid", "mode", "event", "engine", "interval", "started_at", "stopped_at"}
AGENT_OK = "return code: 0"
ATTACH_TIMEOUT_S = 30  # a JVM at full load answers the attach within a second; beyond this it is stuck


class ProfileError(Exception):
    """What went wrong, one line for the operator."""


def now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="milliseconds")


def jvm_dir(pid: int) -> str:
    """The JVM's own path of the directory the agent writes into (in its mount namespace)."""
    return f"/tmp/perflab-profile-{pid}"


def host_view(pid: int, path: str) -> Path:
    """PATH as the JVM sees it, reached from this process through /proc/<pid>/root."""
    return Path(f"/proc/{pid}/root") / path.lstrip("/")


def check_jvm(pid: int) -> None:
    """ProfileError unless PID is a running JVM this process may attach to."""
    try:
        java = Path(os.readlink(f"/proc/{pid}/exe"))
    except FileNotFoundError:
        raise ProfileError(f"no process {pid}: pass the JVM's pid (systemctl show -p MainPID perflab-app)") from None
    except PermissionError:
        raise ProfileError(f"cannot read /proc/{pid}/exe: run as root or as the JVM's user") from None
    if java.name != "java":
        raise ProfileError(f"process {pid} is {java}, not a JVM: it cannot be profiled with async-profiler")


def ns_pid(pid: int) -> int:
    """PID as the JVM knows itself (its innermost PID namespace): the name of its attach files."""
    status = Path(f"/proc/{pid}/status").read_text()
    found = re.search(r"^NSpid:\s*(.+)$", status, re.MULTILINE)
    return int(found.group(1).split()[-1]) if found else pid


def attach_listener(pid: int) -> Path:
    """The JVM's attach socket, its attach listener started first if it is not yet (HotSpot's dynamic
    attach, as jcmd and jattach do it: an .attach_pid<pid> file, then SIGQUIT). Seconds the first
    time in a loaded JVM, nothing after: the listener stays for the JVM's life."""
    nspid = ns_pid(pid)
    socket_path = host_view(pid, f"/tmp/.java_pid{nspid}")
    if socket_path.is_socket():
        return socket_path
    trigger = Path(f"/proc/{pid}/cwd/.attach_pid{nspid}")
    try:
        trigger.touch()
        if trigger.stat().st_uid != os.geteuid():  # the JVM trusts only its own user's file
            trigger.unlink()
            raise PermissionError
    except OSError:
        trigger = host_view(pid, f"/tmp/.attach_pid{nspid}")
        trigger.touch()
    try:
        os.kill(pid, signal.SIGQUIT)
        deadline = time.monotonic() + ATTACH_TIMEOUT_S
        while not socket_path.is_socket():
            if time.monotonic() > deadline:
                raise ProfileError(f"process {pid} started no attach listener within {ATTACH_TIMEOUT_S} s "
                                   "(is it run with -XX:+DisableAttachMechanism?)")
            time.sleep(0.02)
    finally:
        trigger.unlink(missing_ok=True)
    return socket_path


def loadable(pid: int, lib: Path) -> Path:
    """LIB as the JVM can load it: its own path where the JVM's mount namespace shows the same file, else a
    copy in the JVM's agent directory. A JVM with a private /tmp (the lab's unit: PrivateTmp=yes) sees none of
    this process's /tmp, where a library handed over by hand or a checkout under /tmp would be."""
    lib = lib.absolute()
    try:
        if os.path.samefile(host_view(pid, str(lib)), lib):
            return lib
    except OSError:
        pass
    copy = host_view(pid, jvm_dir(pid)) / lib.name
    if not copy.is_file() or copy.stat().st_size != lib.stat().st_size:
        shutil.copyfile(lib, copy)
        copy.chmod(0o644)
    return Path(jvm_dir(pid)) / lib.name


def agent(pid: int, lib: Path, options: str) -> str:
    """Load the agent into the JVM with OPTIONS (the attach protocol's `load`, what jcmd
    JVMTI.agent_load sends): the JVM's answer, or ProfileError. A plain socket, no second JVM to
    start: the command reaches the JVM in milliseconds, on a machine at full load too."""
    # "true": the library's path is absolute (the JVM would resolve a relative one from its own directory).
    request = b"".join(part.encode() + b"\0" for part in ("1", "load", str(loadable(pid, lib)), "true", options))
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        conn.settimeout(ATTACH_TIMEOUT_S)
        try:
            conn.connect(str(attach_listener(pid)))
            conn.sendall(request)
            answer = b""
            while chunk := conn.recv(8192):
                answer += chunk
        except (OSError, socket.timeout) as exc:
            raise ProfileError(f"the attach to process {pid} failed: {exc}") from None
    output = answer.decode(errors="replace").strip()
    # The first line is the attach command's status, the next the agent's own (JDK 9+: "return code: N").
    status, _, rest = output.partition("\n")
    if status.strip() != "0" or AGENT_OK not in rest:
        return_code = re.search(r"return code: (-?\d+)", rest)
        raise AgentError(options.split(",")[0], output, int(return_code.group(1)) if return_code else None)
    return rest


class AgentError(ProfileError):
    def __init__(self, action: str, output: str, return_code: int | None) -> None:
        last = output.splitlines()[-1] if output else "no output"
        super().__init__(f"async-profiler's {action} failed ({last})")
        self.return_code = return_code


def agent_log(pid: int) -> str:
    """What the agent logged in the JVM's directory (its errors), for a failure's message."""
    log = host_view(pid, jvm_dir(pid)) / "agent.log"
    try:
        return " ".join(log.read_text(errors="replace").split())
    except OSError:
        return ""


def prepare_dir(pid: int) -> None:
    """The JVM's private directory for the agent's files, owned by the JVM's user."""
    here = host_view(pid, jvm_dir(pid))
    shutil.rmtree(here, ignore_errors=True)
    here.mkdir(parents=True)
    owner = os.stat(f"/proc/{pid}")
    if os.geteuid() == 0:
        os.chown(here, owner.st_uid, owner.st_gid)


def start(pid: int, lib: Path, mode: str, interval: str | None) -> dict[str, Any]:
    check_jvm(pid)
    if not lib.is_file():
        raise ProfileError(f"no agent library at {lib}: run `make async-profiler` on the controller and copy it")
    prepare_dir(pid)
    log = f"{jvm_dir(pid)}/agent.log"
    failures = []
    for event, engine in ENGINES[mode]:
        options = f"start,event={event},log={log}" + (f",interval={interval}" if interval else "")
        try:
            agent(pid, lib, options)
        except AgentError as exc:
            failures.append(f"{event}: {agent_log(pid) or exc}")
            continue
        window = {"schema_version": 1, "pid": pid, "mode": mode, "event": event, "engine": engine,
                  "interval": interval, "started_at": now(), "stopped_at": None,
                  "not_used": failures}
        (host_view(pid, jvm_dir(pid)) / WINDOW).write_text(json.dumps(window, indent=2) + "\n")
        return window
    raise ProfileError(f"async-profiler could not start in process {pid}: " + "; ".join(failures))


def stop(pid: int, lib: Path, out: Path, title: str | None) -> dict[str, Any]:
    check_jvm(pid)
    here = host_view(pid, jvm_dir(pid))
    try:
        window: dict[str, Any] = json.loads((here / WINDOW).read_text())
    except FileNotFoundError:
        raise ProfileError(f"process {pid} has no profile started by this program: run `start` first") from None
    there = jvm_dir(pid)
    log = f"log={there}/agent.log"
    agent(pid, lib, f"stop,collapsed,{log},file={there}/{COLLAPSED}")
    window["stopped_at"] = now()
    # After stop the agent keeps the window's samples until the next start: the flame graph is
    # the same samples, written a second time in the other format.
    # ',' separates the agent's options and '"' would end the page's title: neither may reach the agent.
    flame_title = (title or f"{window['mode']} ({window['engine']})").replace(",", " ").replace('"', "'")
    agent(pid, lib, f"dump,flamegraph,title={flame_title},{log},file={there}/{FLAMEGRAPH}")
    out.mkdir(parents=True, exist_ok=True)
    for name in (COLLAPSED, FLAMEGRAPH):
        shutil.copyfile(here / name, out / name)
    (out / WINDOW).write_text(json.dumps(window, indent=2) + "\n")
    shutil.rmtree(here, ignore_errors=True)
    return window


ERROR = "profile-error.json"  # {"error": "..."}: why a window has no profile


def unit_pid(unit: str) -> int:
    """The main process of a systemd unit (the app's JVM), or ProfileError."""
    try:
        done = subprocess.run(["systemctl", "show", "-p", "MainPID", "--value", unit], capture_output=True, text=True,
                              timeout=30, check=False)
    except FileNotFoundError:
        raise ProfileError("no systemctl on this host: pass --pid") from None
    pid = int(done.stdout.strip() or 0)
    if pid <= 0:
        raise ProfileError(f"{unit} has no running process: the app is not running")
    return pid


def detach() -> bool:
    """True in a child that outlives the caller (its own session, stdio on /dev/null), False in the
    caller, which returns at once (as roles/bench/files/cpu_window.py does)."""
    if os.fork() > 0:
        return False
    os.setsid()
    if os.fork() > 0:
        os._exit(0)
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    return True


def preload(pid: int, lib: Path, mode: str, interval: str | None) -> None:
    """The agent loaded into the JVM before the window (an idle `status`), then the profiler started and
    stopped once: the library's load, the agent's first set-up (0.07 s idle, more on a loaded machine) and
    its first start are then not in the window. A first start in the window stalled the lab's Spring apps
    38-234 ms in its first second at 2,000 req/s (p99 of that second, against 3-10 ms in the others;
    TechEmpower's smaller apps 3-9 ms). That first start's few samples are left in FIRST_START, which the
    window's start removes. A failure here is left to the window's start, which says why."""
    prepare_dir(pid)
    there = jvm_dir(pid)
    try:
        agent(pid, lib, f"status,file={there}/status.txt,log={there}/agent.log")
        start(pid, lib, mode, interval)
        agent(pid, lib, f"stop,collapsed,file={there}/{FIRST_START},log={there}/agent.log")
    except ProfileError:
        pass


def window(pid: int, lib: Path, mode: str, interval: str | None, start_at: float, end_at: float,
           out: Path, title: str | None) -> dict[str, Any]:
    """Checks at once, then profiles START_AT..END_AT in a detached child; what was asked, as JSON."""
    if not end_at > start_at:
        raise ProfileError(f"the window ends ({end_at}) before it starts ({start_at})")
    check_jvm(pid)
    if not lib.is_file():
        raise ProfileError(f"no agent library at {lib}: run `make async-profiler` on the controller and copy it")
    attach_listener(pid)  # now, before the window: its start then costs the agent's own start only
    preload(pid, lib, mode, interval)
    out.mkdir(parents=True, exist_ok=True)
    for earlier in out.iterdir():  # a reader never finds an earlier window's files
        earlier.unlink()
    if detach():
        try:
            time.sleep(max(0.0, start_at - time.time()))
            start(pid, lib, mode, interval)
            time.sleep(max(0.0, end_at - time.time()))
            stop(pid, lib, out, title)
        except BaseException as exc:  # the bench reads why there is no profile
            (out / ERROR).write_text(json.dumps({"error": str(exc) if isinstance(exc, ProfileError)
                                                 else f"{type(exc).__name__}: {exc}"}) + "\n")
        finally:
            os._exit(0)
    return {"pid": pid, "mode": mode, "start_at": start_at, "end_at": end_at, "out": str(out)}


def as_jvm_user(pid: int, out: Path | None) -> None:
    """Root becomes the JVM's user (its OUT directory made theirs first). In a container without
    CAP_SYS_PTRACE (Docker's default) root may not read another user's /proc/<pid>/exe or root, and
    the JVM's attach listener answers its own user: the lab's app runs as perflab-app."""
    if os.geteuid() != 0:
        return
    try:
        owner = os.stat(f"/proc/{pid}")
    except FileNotFoundError:
        raise ProfileError(f"no process {pid}: pass the JVM's pid (systemctl show -p MainPID perflab-app)") from None
    if owner.st_uid == 0:
        return
    if out is not None:  # made theirs, never emptied here: window() removes its own earlier files
        out.mkdir(parents=True, exist_ok=True)
        os.chown(out, owner.st_uid, owner.st_gid)
    os.setgroups([])
    os.setgid(owner.st_gid)
    os.setuid(owner.st_uid)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="perflab_profile.py", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for name in ("start", "stop", "window"):
        command = sub.add_parser(name)
        if name == "window":
            which = command.add_mutually_exclusive_group(required=True)
            which.add_argument("--pid", type=int, help="the JVM's process id")
            which.add_argument("--unit", help="the systemd unit whose main process is the JVM")
            command.add_argument("--start-at", type=float, required=True, help="unix seconds: the window's start")
            command.add_argument("--end-at", type=float, required=True, help="unix seconds: the window's end")
        else:
            command.add_argument("--pid", type=int, required=True, help="the JVM's process id")
        command.add_argument("--lib", type=Path, required=True, help="async-profiler's libasyncProfiler.so on this host")
    for name in ("start", "window"):
        sub.choices[name].add_argument("--mode", choices=MODES, required=True)
        sub.choices[name].add_argument(
            "--interval", help="sampling interval as async-profiler reads it (cpu/wall: ns or 10ms; alloc: bytes or 512k)")
    for name in ("stop", "window"):
        sub.choices[name].add_argument("--out", type=Path, required=True, help="directory that gets the profile's files")
        sub.choices[name].add_argument("--title", help="the flame graph's title")
    args = parser.parse_args(argv)
    interval = getattr(args, "interval", None)
    if interval is not None and not re.fullmatch(r"\d+(ns|us|ms|s|k|m)?", interval):
        print(f"perflab_profile: --interval {interval!r}: give a number with an optional unit (10ms, 1000000, 512k)",
              file=sys.stderr)
        return 2
    try:
        pid = args.pid if args.pid is not None else unit_pid(args.unit)
        as_jvm_user(pid, getattr(args, "out", None))
        if args.command == "start":
            done = start(pid, args.lib, args.mode, args.interval)
        elif args.command == "stop":
            done = stop(pid, args.lib, args.out, args.title)
        else:
            done = window(pid, args.lib, args.mode, args.interval, args.start_at, args.end_at, args.out,
                          args.title)
    except ProfileError as exc:
        print(f"perflab_profile: {exc}", file=sys.stderr)
        return 1
    print(json.dumps(done))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
