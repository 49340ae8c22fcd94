"""`make watch` in a real terminal (tmux: send-keys, capture-pane) on the session's lab: the four
tiers with figures from its Prometheus, the busiest tier named, the shared short run (wrk2) shown
while it runs with the rate it achieves by the app's count (wrk2 exports no metrics), q and Ctrl-C
ending it with exit status 0 and the terminal as it was; an unreachable Prometheus said on screen
while it retries.

The short run is watched as it happens only if this directory asks for `short_run` first in the
session (tests/conftest.py orders the lab's tests so); otherwise the test watches one more short
run of its own."""
from __future__ import annotations

import os
import re
import shlex
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from labkit import INVENTORY, ROOT, SHORT_RUN, make, new_run_dir, run_dirs, tail
from perflab import tiers
from perflab.prometheus import Prometheus

# One tier's first row: marker (* = busiest), tier, CPU %, bar, busy/allotted cores, memory.
TIER_ROW = re.compile(
    r"^(?P<marker>[* ])(?P<tier>loadgen|app|db|monitoring)\s+(?P<util>\d+)%\s+\[[#-]*[\]+]\s+"
    r"(?P<busy>\d+\.\d+)/(?P<allotted>\d+(?:\.\d+)?) cores\s+(?P<memory>[\d.]+) (?P<memory_unit>B|KiB|MiB|GiB)",
    re.MULTILINE,
)
BUSIEST = re.compile(r"^busiest tier: (?P<tier>\w+) \((?P<util>\d+)% of its (?P<allotted>[\d.]+) allotted cores? busy\)",
                     re.MULTILINE)
RUN = re.compile(r"^run: (?P<run_id>\S+)  phase (?P<phase>\w+)  app (?P<app>\S+)  scenario (?P<scenario>\S+)  "
                 r"tool (?P<tool>\w+)\n\s+target (?P<target>[\d.]+) req/s  achieved (?P<achieved>[\d.]+) req/s",
                 re.MULTILINE)
TITLE = re.compile(r"^perflab watch  (?P<url>\S+)  every 1s", re.MULTILINE)


class Terminal:
    """`make watch` in a detached tmux session on a private tmux server (never anyone else's)."""

    def __init__(self, script: Path) -> None:
        self.socket = f"perflab-watch-test-{os.getpid()}-{time.monotonic_ns()}"
        self.script = script

    def tmux(self, *args: str) -> str:
        done = subprocess.run(["tmux", "-L", self.socket, *args], capture_output=True, text=True, timeout=30,
                              check=True)
        return done.stdout

    def start(self, *make_variables: str) -> None:
        # The script reports what a user would check after quitting: make's exit status and
        # whether the terminal's settings (stty) are back to what they were before.
        self.script.write_text(
            "#!/bin/bash\n"
            f"cd {shlex.quote(str(ROOT))}\n"
            "before=$(stty -g)\n"
            f"make --no-print-directory watch INVENTORY={shlex.quote(INVENTORY)} INTERVAL=1 "
            f"{' '.join(map(shlex.quote, make_variables))}\n"
            "status=$?\n"
            '[ "$(stty -g)" = "$before" ] && echo "terminal: as before" || echo "terminal: CHANGED"\n'
            'echo "exit status: $status"\n'
            "sleep 300\n",
            encoding="utf-8",
        )
        env = {k: v for k, v in os.environ.items() if k not in ("PROMETHEUS_URL", "TMUX")}
        subprocess.run(["tmux", "-L", self.socket, "new-session", "-d", "-x", "180", "-y", "50",
                        f"bash {shlex.quote(str(self.script))}"], env=env, check=True, timeout=30)

    def screen(self) -> str:
        return self.tmux("capture-pane", "-p", "-J")

    def wait_for(self, what: str, ready: Callable[[str], bool], timeout_s: float = 60) -> str:
        deadline = time.monotonic() + timeout_s
        while True:
            screen = self.screen()
            if ready(screen):
                return screen
            if time.monotonic() > deadline:
                pytest.fail(f"{what} did not appear within {timeout_s:g}s; the screen:\n{screen}")
            time.sleep(0.5)

    def keys(self, *keys: str) -> None:
        self.tmux("send-keys", *keys)

    def close(self) -> None:
        subprocess.run(["tmux", "-L", self.socket, "kill-server"], capture_output=True, timeout=30, check=False)


class Recorder:
    """Captures the screen every second in the background: what the view showed during a run."""

    def __init__(self, term: Terminal) -> None:
        self.term = term
        self.screens: list[str] = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._record, daemon=True)

    def _record(self) -> None:
        while not self.stop.wait(1.0):
            try:
                self.screens.append(self.term.screen())
            except subprocess.SubprocessError:
                continue

    def __enter__(self) -> Recorder:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join(timeout=30)

    def runs(self, run_id: str) -> list[re.Match[str]]:
        return [m for screen in self.screens for m in RUN.finditer(screen) if m["run_id"] == run_id]


@pytest.fixture
def terminal(tmp_path: Path) -> Iterator[Terminal]:
    term = Terminal(tmp_path / "watch.sh")
    yield term
    term.close()


def _exits_cleanly(term: Terminal, *keys: str) -> None:
    term.keys(*keys)
    screen = term.wait_for("the exit status", lambda s: "exit status:" in s, timeout_s=20)
    assert "exit status: 0" in screen, screen
    assert "terminal: as before" in screen, screen
    assert "Traceback" not in screen and "Interrupt" not in screen, screen


def _live_screen(term: Terminal) -> str:
    """The first screen with all four tier rows and a named busiest tier."""
    return term.wait_for("four tier rows and the busiest tier",
                         lambda s: len(TIER_ROW.findall(s)) == 4 and BUSIEST.search(s) is not None)


def test_the_tiers_and_the_busiest_from_the_lab_then_q_quits(lab: str, terminal: Terminal) -> None:
    terminal.start()
    _live_screen(terminal)
    # Right after a cold lab-up the 30 s rates may still read 0.00 everywhere: wait for a busy tier.
    screen = terminal.wait_for("a tier with busy CPU", lambda s: len(TIER_ROW.findall(s)) == 4 and any(
        float(m["busy"]) > 0 for m in TIER_ROW.finditer(s)))
    rows = {m["tier"]: m for m in TIER_ROW.finditer(screen)}
    assert set(rows) == set(tiers.TIERS), screen
    title = TITLE.search(screen)
    assert title is not None, screen
    # The figures are the lab's: each tier's allotted cores are what its hosts export.
    allotted = {s.labels["tier"]: s.value for s in Prometheus(title["url"]).query(tiers.cpu_allotted_cores())}
    assert {t: float(m["allotted"]) for t, m in rows.items()} == allotted, screen
    assert all(float(m["memory"]) > 0 for m in rows.values()), screen
    assert any(float(m["busy"]) > 0 for m in rows.values()), screen
    busiest = BUSIEST.search(screen)
    assert busiest is not None
    assert [t for t, m in rows.items() if m["marker"] == "*"] == [busiest["tier"]], screen
    assert rows[busiest["tier"]]["util"] == busiest["util"], screen
    assert int(busiest["util"]) == max(int(m["util"]) for m in rows.values()), screen
    assert "PROMETHEUS UNREACHABLE" not in screen
    _exits_cleanly(terminal, "q")


def test_ctrl_c_quits(lab: str, terminal: Terminal) -> None:
    terminal.start()
    _live_screen(terminal)
    _exits_cleanly(terminal, "C-c")


def test_an_unreachable_prometheus_is_said_and_retried_then_q_quits(terminal: Terminal) -> None:
    terminal.start("PROMETHEUS_URL=http://127.0.0.1:9")
    screen = terminal.wait_for("the unreachable line, retried", lambda s: "(attempt 3," in s, timeout_s=30)
    alert = [line for line in screen.splitlines() if "PROMETHEUS UNREACHABLE" in line]
    assert len(alert) == 1, screen
    assert "Prometheus at http://127.0.0.1:9 is unreachable" in alert[0], screen
    assert "Traceback" not in screen
    _exits_cleanly(terminal, "q")


def test_the_run_in_progress_and_the_achieved_rate(request: pytest.FixtureRequest, lab: str,
                                                   terminal: Terminal) -> None:
    terminal.start()
    _live_screen(terminal)
    with Recorder(terminal) as recorder:
        run_dir: Path = request.getfixturevalue("short_run")
        if not recorder.runs(run_dir.name):  # the shared short run was over before this test: run one
            before = run_dirs()
            done = make("bench", *SHORT_RUN)
            assert done.returncode == 0, "the short run failed:\n" + tail(done.stdout, 80)
            run_dir = new_run_dir(before)
    shown = recorder.runs(run_dir.name)
    assert shown, f"{run_dir.name} never appeared; the last screen:\n{recorder.screens[-1]}"
    assert {(m["app"], m["scenario"], m["tool"], m["target"]) for m in shown} == {("quarkus", "zipcodes", "wrk2", "200")}
    assert "measure" in {m["phase"] for m in shown}
    # The app is scraped every 2 s; once its scrapes under load fill the 30 s window the rate is the target's.
    achieved = [float(m["achieved"]) for m in shown if m["phase"] == "measure"]
    assert any(160 <= rate <= 240 for rate in achieved), achieved
    # wrk2 exports no metrics: the screen says whose count the rate is.
    assert all("the app's count: wrk2 exports no metrics" in m.string for m in shown), recorder.screens[-1]
    _exits_cleanly(terminal, "q")
