"""Headless Chromium driven through the DevTools protocol (a websocket, websocket-client), for
testing report.html as people use it: real clicks and typing, the page's own errors collected.

    with Chromium.start(tmp_path) as browser:
        browser.open("file:///.../report.html")
        browser.click("#t-plan thead th:nth-child(2)")
        browser.type_into("input[data-filter='t-plan']", "edge")
        browser.evaluate("document.title")

The browser runs on 127.0.0.1 with a free port (--remote-debugging-port=0: it picks one and says
which) and is stopped by its PID.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import time
import urllib.request
from pathlib import Path
from typing import Any

BINARIES = ("chromium", "chromium-browser", "google-chrome")


def binary() -> str | None:
    return next((path for name in BINARIES if (path := shutil.which(name))), None)


class Chromium:
    def __init__(self, process: subprocess.Popen[str], ws: Any) -> None:
        self.process = process
        self.ws = ws
        self.next_id = 0
        self.events: list[dict[str, Any]] = []

    @classmethod
    def start(cls, profile: Path, timeout: float = 60.0) -> Chromium:
        import websocket  # websocket-client (a dependency of the kubernetes client)

        exe = binary()
        if exe is None:
            raise FileNotFoundError("no chromium on PATH")
        args = [exe, "--headless", "--disable-gpu", "--no-first-run", "--no-default-browser-check",
                "--remote-debugging-address=127.0.0.1", "--remote-debugging-port=0", f"--user-data-dir={profile}",
                "--window-size=1400,1000", "--allow-file-access-from-files", "about:blank"]
        if hasattr(os, "geteuid") and os.geteuid() == 0:
            args.insert(1, "--no-sandbox")  # Chromium refuses to run as root with its sandbox
        process = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + timeout
        port = None
        assert process.stderr is not None
        while time.monotonic() < deadline and port is None:
            line = process.stderr.readline()
            if not line and process.poll() is not None:
                raise RuntimeError(f"chromium exited with {process.returncode} before listening")
            if match := re.search(r"DevTools listening on ws://127\.0\.0\.1:(\d+)/", line):
                port = int(match.group(1))
        if port is None:
            process.kill()
            raise TimeoutError("chromium did not start its DevTools server")
        # keep draining stderr so that chromium never blocks on a full pipe
        import threading

        threading.Thread(target=lambda: [None for _ in process.stderr], daemon=True).start()  # type: ignore[union-attr]
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10) as answer:
            page = next(t for t in json.load(answer) if t["type"] == "page")
        browser = cls(process, websocket.create_connection(page["webSocketDebuggerUrl"], timeout=30,
                                                           suppress_origin=True))
        for domain in ("Page", "Runtime", "Log"):
            browser.send(f"{domain}.enable")
        return browser

    def __enter__(self) -> Chromium:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        try:
            self.ws.close()
        finally:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    # --- protocol ---------------------------------------------------------------------------------------------

    def send(self, method: str, **params: Any) -> dict[str, Any]:
        self.next_id += 1
        mine = self.next_id
        self.ws.send(json.dumps({"id": mine, "method": method, "params": params}))
        while True:
            message = json.loads(self.ws.recv())
            if message.get("id") == mine:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message.get("result", {})
            self.events.append(message)

    def wait_for(self, method: str, timeout: float = 30.0) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        for event in self.events:
            if event.get("method") == method:
                self.events.remove(event)
                return event
        while time.monotonic() < deadline:
            message = json.loads(self.ws.recv())
            if message.get("method") == method:
                return message
            self.events.append(message)
        raise TimeoutError(method)

    # --- what a user does -------------------------------------------------------------------------------------

    def open(self, url: str) -> None:
        """Navigate and wait until the page has loaded (or, for a change of #fragment, scrolled)."""
        result = self.send("Page.navigate", url=url)
        if result.get("errorText"):
            raise RuntimeError(f"{url}: {result['errorText']}{' (a download)' if result.get('isDownload') else ''}")
        self.wait_for("Page.loadEventFired" if result.get("loaderId") else "Page.navigatedWithinDocument")

    def read(self, url: str) -> str:
        """What the page's script gets when it asks for `url` (file: URLs too: the browser runs with
        --allow-file-access-from-files): the content behind a link, without leaving the page."""
        return self.evaluate(f"(function () {{ var x = new XMLHttpRequest(); x.open('GET', {json.dumps(url)}, false);"
                             " x.send(); return x.responseText; })()")

    def evaluate(self, expression: str) -> Any:
        result = self.send("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def click(self, selector: str) -> None:
        """A real mouse click in the middle of the element (scrolled into view first)."""
        box = self.evaluate(f"(function () {{ var e = document.querySelector({json.dumps(selector)});"
                            "e.scrollIntoView({block: 'center'}); var r = e.getBoundingClientRect();"
                            "return [r.left + r.width / 2, r.top + r.height / 2]; })()")
        for kind in ("mousePressed", "mouseReleased"):
            self.send("Input.dispatchMouseEvent", type=kind, x=box[0], y=box[1], button="left", clickCount=1)

    def type_into(self, selector: str, text: str) -> None:
        """Click into the field, select what it holds and type `text` over it."""
        self.click(selector)
        self.evaluate(f"document.querySelector({json.dumps(selector)}).select()")
        if text:
            self.send("Input.insertText", text=text)
        else:
            for kind in ("keyDown", "keyUp"):
                self.send("Input.dispatchKeyEvent", type=kind, key="Backspace", code="Backspace",
                          windowsVirtualKeyCode=8)

    def errors(self) -> list[str]:
        """JavaScript exceptions, console errors and error log entries seen so far."""
        self.evaluate("1")  # let pending events arrive
        out = []
        for event in self.events:
            method, params = event.get("method"), event.get("params", {})
            if method == "Runtime.exceptionThrown":
                out.append(json.dumps(params.get("exceptionDetails"))[:500])
            elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
                out.append(json.dumps(params.get("args"))[:500])
            elif method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
                out.append(params["entry"].get("text", ""))
        return out
