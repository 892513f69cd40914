"""Open a page in headless Chromium and report what a reader would meet: errors, load time, a screenshot.

Chromium is driven through its DevTools protocol over one WebSocket (`websocket-client`, a small pure-Python
package): no WebDriver, no Node. The browser test, the report benchmark and the README screenshot use it; test and
benchmark support, not part of the installed package (the report itself needs no browser).

    with Chromium() as browser:
        page = browser.open(path)            # PageLoad: errors, load_ms
        browser.evaluate("document.title")
        browser.screenshot(png_path)
"""

from __future__ import annotations

import base64
import contextlib
import dataclasses
import itertools
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

from tritonhook import config
from tritonhook.errors import TritonhookError

FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync", "--hide-scrollbars",
         "--remote-debugging-port=0", "--window-size=1400,1000")
_LISTENING = re.compile(r"DevTools listening on (ws://\S+)")


def find_chromium() -> str | None:
    """`$TRITONHOOK_CHROMIUM` (`config.report.CHROMIUM`), else the first Chromium on PATH."""
    return config.report.CHROMIUM.get() or next(filter(None, map(shutil.which, ("chromium", "chromium-browser", "google-chrome"))), None)


@dataclasses.dataclass(frozen=True)
class PageLoad:
    """What loading a page produced: console errors and uncaught exceptions, and the load time."""

    url: str
    errors: list[str]
    load_ms: float  # navigation start to the end of the load event, as the page's own Performance API says
    requests: list[str]  # every URL the page asked for beyond itself (a self-contained page asks for none)


class Chromium:
    """One headless Chromium with one page, controlled over the DevTools protocol."""

    def __init__(self, binary: str | None = None, *, timeout: float = 60.0):
        self.binary = binary or find_chromium()
        if self.binary is None:
            raise TritonhookError(f"no Chromium found: apt-get install chromium, or set ${config.report.CHROMIUM.name}")
        self.timeout = timeout
        self._ids = itertools.count(1)
        self._events: list[dict] = []

    def __enter__(self) -> "Chromium":
        import websocket

        self.profile = Path(tempfile.mkdtemp(prefix="tritonhook-chromium-"))
        try:
            # its own session: its children (renderer, network, storage) share its process group, so __exit__
            # can end them all and know when none is left writing into the profile
            self._process = subprocess.Popen([self.binary, *FLAGS, f"--user-data-dir={self.profile}", "about:blank"],
                                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                                             start_new_session=True)
            browser_url = self._devtools_url()
            threading.Thread(target=self._process.stderr.read, daemon=True).start()  # a full pipe would block it
            port = browser_url.split(":")[2].split("/")[0]
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=self.timeout) as reply:
                page = next(t for t in json.load(reply) if t["type"] == "page")
            self._socket = websocket.create_connection(page["webSocketDebuggerUrl"], timeout=self.timeout,
                                                        suppress_origin=True)
            for domain in ("Page", "Runtime", "Log", "Network"):
                self.call(f"{domain}.enable")
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, *exc) -> None:
        """End the whole process group, wait until none of it runs, then remove the profile: Chromium's children
        outlive its main process by a few ms and may still be writing there (`rmtree`: "Directory not empty")."""
        if getattr(self, "_socket", None) is not None:
            self._socket.close()
        if getattr(self, "_process", None) is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self._process.pid, signal.SIGKILL)  # the profile is thrown away: nothing to save
            self._process.wait()
            _wait_until_gone(self._process.pid, self.timeout)
        shutil.rmtree(self.profile)

    @property
    def pgid(self) -> int:
        """Chromium's process group (its main process's id): every process it started, but crashpad's."""
        return self._process.pid

    def _devtools_url(self) -> str:
        deadline = time.monotonic() + self.timeout
        seen = []
        while time.monotonic() < deadline:
            line = self._process.stderr.readline()
            if not line and self._process.poll() is not None:
                break
            seen.append(line.strip())
            if match := _LISTENING.search(line):
                return match.group(1)
        raise TritonhookError(f"{self.binary}: did not start its DevTools endpoint ({' | '.join(seen[-3:])})")

    def call(self, method: str, **params) -> dict:
        """Send one DevTools command and return its result; events received meanwhile are kept."""
        message_id = next(self._ids)
        self._socket.send(json.dumps({"id": message_id, "method": method, "params": params}))
        while True:
            message = json.loads(self._socket.recv())
            if message.get("id") == message_id:
                if "error" in message:
                    raise TritonhookError(f"Chromium {method}: {message['error'].get('message')}")
                return message.get("result", {})
            self._events.append(message)

    def _wait_for(self, method: str) -> dict:
        deadline = time.monotonic() + self.timeout
        while time.monotonic() < deadline:
            for index, event in enumerate(self._events):
                if event.get("method") == method:
                    return self._events.pop(index)
            self._events.append(json.loads(self._socket.recv()))
        raise TritonhookError(f"Chromium: no {method} within {self.timeout:.0f} s")

    def open(self, path: str | os.PathLike) -> PageLoad:
        """Load a local file and wait for its load event."""
        url = Path(path).resolve().as_uri()
        self._events.clear()
        self.call("Page.navigate", url=url)
        self._wait_for("Page.loadEventFired")
        load_ms = self.evaluate("(() => { const n = performance.getEntriesByType('navigation')[0];"
                                " return n.loadEventEnd - n.startTime; })()")
        return PageLoad(url, self.errors(), load_ms, self.requests(url))

    def errors(self) -> list[str]:
        """Console errors and uncaught exceptions seen since the page was opened."""
        self.evaluate("0")  # lets pending events arrive first
        found = []
        for event in self._events:
            method, params = event.get("method"), event.get("params", {})
            if method == "Runtime.exceptionThrown":
                details = params["exceptionDetails"]
                found.append(details.get("exception", {}).get("description") or details.get("text", "exception"))
            elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
                found.append(" ".join(str(a.get("value", a.get("description", ""))) for a in params.get("args", [])))
            elif method == "Log.entryAdded" and params["entry"].get("level") == "error":
                found.append(params["entry"].get("text", ""))
        return found

    def requests(self, own_url: str) -> list[str]:
        return [e["params"]["request"]["url"] for e in self._events if e.get("method") == "Network.requestWillBeSent"
                and e["params"]["request"]["url"] != own_url]

    def evaluate(self, expression: str):
        """The value of a JavaScript expression in the page (an exception in it is a TritonhookError)."""
        result = self.call("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in result:
            raise TritonhookError(f"Chromium: {expression!r} threw {result['exceptionDetails'].get('text')}")
        return result["result"].get("value")

    def type_into(self, selector: str, text: str) -> None:
        """Focus an input and type `text` as key events (what a reader does), so its input handlers run."""
        self.evaluate(f"document.querySelector({json.dumps(selector)}).focus()")
        self.call("Input.insertText", text=text)

    def screenshot(self, path: str | os.PathLike, *, full_page: bool = False) -> Path:
        params = {"format": "png"}
        if full_page:
            width, height = self.evaluate("[document.documentElement.scrollWidth, document.documentElement.scrollHeight]")
            params.update(captureBeyondViewport=True, clip={"x": 0, "y": 0, "width": width,
                                                            "height": min(height, 8000), "scale": 1})
        data = self.call("Page.captureScreenshot", **params)["data"]
        out = Path(path)
        out.write_bytes(base64.b64decode(data))
        return out


def process_group(pgid: int) -> list[int]:
    """The processes of group `pgid` that still run (Linux: read from /proc). A zombie (exited, not yet reaped by
    init) writes nothing and is left out, so that a container whose init reaps late does not look busy."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return []
    running = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            state, _ppid, group = stat.read_text().rpartition(")")[2].split()[:3]  # the name may hold spaces
        except (OSError, ValueError):
            continue  # gone meanwhile
        if int(group) == pgid and state != "Z":
            running.append(int(stat.parent.name))
    return running


def _wait_until_gone(pgid: int, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while running := process_group(pgid):
        if time.monotonic() > deadline:
            raise TritonhookError(f"Chromium's processes {running} (group {pgid}) outlived SIGKILL by {timeout:.0f} s")
        time.sleep(0.01)
