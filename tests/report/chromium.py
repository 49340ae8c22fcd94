"""Open a page in headless Chromium and report what a user would see, with the standard library
only: the Chrome DevTools Protocol over --remote-debugging-pipe (JSON messages ended by NUL
bytes on file descriptors 3 and 4), no websocket client, no driver.

What is collected while the page loads and settles: console.error / console.assert calls,
uncaught exceptions, and the browser's own error log entries (a resource that failed to load,
a request the page's Content-Security-Policy refused); then the result of a JavaScript
expression (e.g. chart geometry) and a PNG screenshot.
"""

from __future__ import annotations

import base64
import json
import os
import select
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

SETTLE_S = 0.5  # quiet time after the load event in which late errors still count
TIMEOUT_S = 60.0


def chromium() -> str | None:
    """The browser's path, looked up at each visit, not at import: make test's lab tests are collected
    before the report test beside them installs Chromium (scripts/apt-need.sh), and a path read then
    said "not installed" to the profiled run's test half an hour later."""
    return shutil.which("chromium") or shutil.which("chromium-browser")


class ChromiumError(Exception):
    """Chromium could not be started or did not answer."""


@dataclass
class PageVisit:
    errors: list[str] = field(default_factory=list)  # one line per console error, exception, error log entry
    evaluated: Any = None
    screenshot_png: bytes = b""


class _Session:
    def __init__(self, process: subprocess.Popen[bytes], to_browser: int, from_browser: int) -> None:
        self.process = process
        self.to_browser = to_browser
        self.from_browser = from_browser
        self.buffer = b""
        self.next_id = 0
        self.events: list[dict[str, Any]] = []
        self.deadline = time.monotonic() + TIMEOUT_S

    def _receive(self, timeout_s: float) -> dict[str, Any] | None:
        """The next message, or None when none arrived within timeout_s."""
        end = time.monotonic() + timeout_s
        while b"\0" not in self.buffer:
            left = min(end, self.deadline) - time.monotonic()
            if left <= 0:
                if time.monotonic() >= self.deadline:
                    raise ChromiumError(f"Chromium did not answer within {TIMEOUT_S:g} s")
                return None
            ready, _, _ = select.select([self.from_browser], [], [], left)
            if ready:
                chunk = os.read(self.from_browser, 1 << 16)
                if not chunk:
                    raise ChromiumError("Chromium closed the DevTools pipe (it exited)")
                self.buffer += chunk
        message, self.buffer = self.buffer.split(b"\0", 1)
        parsed: dict[str, Any] = json.loads(message)
        return parsed

    def call(self, method: str, params: dict[str, Any] | None = None, session: str | None = None) -> dict[str, Any]:
        self.next_id += 1
        request: dict[str, Any] = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            request["sessionId"] = session
        os.write(self.to_browser, json.dumps(request).encode() + b"\0")
        while True:
            message = self._receive(TIMEOUT_S)
            if message is None:
                continue
            if message.get("id") == self.next_id:
                if "error" in message:
                    raise ChromiumError(f"{method}: {message['error']}")
                result: dict[str, Any] = message.get("result", {})
                return result
            self.events.append(message)

    def wait_for(self, method: str) -> None:
        while not any(e.get("method") == method for e in self.events):
            message = self._receive(TIMEOUT_S)
            if message is not None:
                self.events.append(message)

    def drain(self, quiet_s: float) -> None:
        while (message := self._receive(quiet_s)) is not None:
            self.events.append(message)


def _error_lines(events: list[dict[str, Any]]) -> list[str]:
    lines = []
    for event in events:
        method, params = event.get("method"), event.get("params", {})
        if method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
            text = " ".join(str(a.get("value", a.get("description", ""))) for a in params.get("args", []))
            lines.append(f"console.{params['type']}: {text}")
        elif method == "Runtime.exceptionThrown":
            details = params.get("exceptionDetails", {})
            description = details.get("exception", {}).get("description") or details.get("text", "")
            lines.append(f"uncaught exception: {description}")
        elif method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
            entry = params["entry"]
            lines.append(f"log ({entry.get('source')}): {entry.get('text')} {entry.get('url', '')}".rstrip())
    return lines


def visit(page: Path, expression: str = "null", width: int = 1280, height: int = 2000) -> PageVisit:
    """Load `page` (a file) in a fresh headless Chromium; errors, `expression`'s value, a screenshot."""
    browser = chromium()
    if browser is None:
        raise ChromiumError("chromium is not installed (Debian: apt-get install chromium)")
    to_browser_read, to_browser = os.pipe()
    from_browser, from_browser_write = os.pipe()

    def on_fds_3_and_4() -> None:  # in the child: CDP reads fd 3, writes fd 4
        read_end, write_end = os.dup(to_browser_read), os.dup(from_browser_write)
        os.dup2(read_end, 3)
        os.dup2(write_end, 4)

    with tempfile.TemporaryDirectory(prefix="perflab-chromium-") as profile, \
            open(Path(profile) / "stderr.log", "w+b") as log:
        process = subprocess.Popen(
            [browser, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--no-default-browser-check",
             "--disable-extensions", "--remote-debugging-pipe", f"--user-data-dir={profile}", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log,
            preexec_fn=on_fds_3_and_4, pass_fds=(3, 4),
        )
        os.close(to_browser_read)
        os.close(from_browser_write)
        session = _Session(process, to_browser, from_browser)
        try:
            target = session.call("Target.createTarget", {"url": "about:blank"})["targetId"]
            sid = session.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
            for domain in ("Runtime", "Log", "Page"):
                session.call(f"{domain}.enable", {}, sid)
            session.call("Emulation.setDeviceMetricsOverride",
                         {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False}, sid)
            session.events.clear()
            session.call("Page.navigate", {"url": page.resolve().as_uri()}, sid)
            session.wait_for("Page.loadEventFired")
            session.drain(SETTLE_S)
            value = session.call("Runtime.evaluate", {"expression": expression, "returnByValue": True}, sid)
            if "exceptionDetails" in value:
                raise ChromiumError(f"evaluating the check failed: {value['exceptionDetails']}")
            shot = session.call("Page.captureScreenshot", {"format": "png"}, sid)
            session.drain(0.1)
            visit_ = PageVisit(errors=_error_lines(session.events), evaluated=value["result"].get("value"),
                               screenshot_png=base64.b64decode(shot["data"]))
            try:
                session.call("Browser.close")
            except ChromiumError:
                pass
            return visit_
        except ChromiumError as error:
            log.seek(0)
            raise ChromiumError(f"{error}; chromium's stderr: {log.read()[-2000:].decode(errors='replace')}") from None
        finally:
            os.close(to_browser)
            os.close(from_browser)
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=10)
