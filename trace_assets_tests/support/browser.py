"""One headless Chromium driven over its DevTools protocol, as a person looks at the UI: a page
opened, waited on until a text shows, a button clicked, its rendered DOM, a screenshot, and what
of it is wider than its box (a table cut off at the page's right edge, scrolling or hidden).

`--dump-dom` gives no layout; the protocol's `Runtime.evaluate` does. The websocket client is
`websockets` (dagster-webserver's uvicorn brings it).
"""

from __future__ import annotations

import base64
import itertools
import json
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import requests
from websockets.sync.client import ClientConnection, connect

from trace_assets_tests.support.service_processes import free_port, stop_process_group

FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-proxy-server",
]  # fmt: skip
WIDTH, HEIGHT = 1600, 1200
# Elements that scroll sideways (their content wider than their box), and the page's own overflow.
OVERFLOW_JS = """
(() => {
  const wide = [];
  for (const el of document.querySelectorAll('main *, [class*="Metadata"] *, table')) {
    const style = getComputedStyle(el);
    if (['auto', 'scroll'].includes(style.overflowX) && el.scrollWidth > el.clientWidth + 1)
      wide.push({tag: el.tagName, scrollWidth: el.scrollWidth, clientWidth: el.clientWidth,
                 text: el.innerText.slice(0, 80)});
  }
  const page = document.documentElement;
  if (page.scrollWidth > window.innerWidth + 1)
    wide.push({tag: 'page', scrollWidth: page.scrollWidth, clientWidth: window.innerWidth, text: ''});
  return JSON.stringify(wide);
})()
"""
# Tables cut off without a scrollbar: a table's right edge past the box of its nearest ancestor that
# does not let it overflow (the asset's Overview tab hides what passes its metadata column).
CLIPPED_JS = """
(() => {
  const clipped = [];
  for (const table of document.querySelectorAll('table')) {
    let box = table.parentElement;
    while (box && getComputedStyle(box).overflowX === 'visible') box = box.parentElement;
    const right = table.getBoundingClientRect().right, limit = box && box.getBoundingClientRect().right;
    if (limit !== null && right > limit + 1)
      clipped.push({right: Math.round(right), limit: Math.round(limit), text: table.innerText.slice(0, 80)});
  }
  return JSON.stringify(clipped);
})()
"""


class Browser:
    """A page of one Chromium process: `open` a URL, then read it."""

    def __init__(self, socket: ClientConnection):
        self._socket = socket
        self._ids = itertools.count(1)

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        message_id = next(self._ids)
        self._socket.send(json.dumps({"id": message_id, "method": method, "params": params}))
        while True:  # events arrive between answers
            answer = json.loads(self._socket.recv(timeout=120))
            if answer.get("id") == message_id:
                assert "error" not in answer, f"{method}: {answer['error']}"
                return answer["result"]

    def evaluate(self, expression: str) -> Any:
        return self.call("Runtime.evaluate", expression=expression, returnByValue=True)["result"].get("value")

    def open(self, url: str, showing: str, timeout: float = 90) -> None:
        """Navigate, and wait until the page's text holds `showing` (the JS app fetched and rendered)."""
        self.call("Page.navigate", url=url)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.evaluate(f"document.body ? document.body.innerText.includes({json.dumps(showing)}) : false"):
                time.sleep(1)  # the rest of the page's requests
                return
            time.sleep(0.5)
        text = self.evaluate("document.body ? document.body.innerText : ''") or ""
        raise AssertionError(f"{url}: {showing!r} not shown within {timeout:.0f}s; the page says:\n{text[:2000]}")

    def click(self, text: str, index: int, showing: str, timeout: float = 30) -> bool:
        """Click the `index`th button whose text is `text`; whether the page then shows `showing`
        (a dialog it opened). False when there is no such button."""
        found = self.evaluate(
            f"""(() => {{
              const buttons = [...document.querySelectorAll('button')].filter(b => b.innerText.trim() === {json.dumps(text)});
              if (buttons.length <= {index}) return false;
              buttons[{index}].click();
              return true;
            }})()"""
        )
        deadline = time.monotonic() + timeout
        while found and time.monotonic() < deadline:
            if self.evaluate(f"document.body.innerText.includes({json.dumps(showing)})"):
                return True
            time.sleep(0.5)
        return False

    def dom(self) -> str:
        return self.evaluate("document.documentElement.outerHTML")

    def text(self) -> str:
        return self.evaluate("document.body.innerText")

    def too_wide(self) -> list[dict[str, Any]]:
        """What scrolls sideways on the page: empty when everything fits its width."""
        return json.loads(self.evaluate(OVERFLOW_JS))

    def clipped(self) -> list[dict[str, Any]]:
        """The tables cut off at the right without a scrollbar: empty when every table shows whole."""
        return json.loads(self.evaluate(CLIPPED_JS))

    def screenshot(self, path: Path) -> Path:
        path.write_bytes(base64.b64decode(self.call("Page.captureScreenshot", format="png")["data"]))
        return path


@contextmanager
def headless_chromium(chromium: Path, profile: Path) -> Iterator[Browser]:
    """A Chromium in its own process group, stopped when done."""
    port = free_port()
    command = [
        str(chromium), *FLAGS, f"--window-size={WIDTH},{HEIGHT}", f"--user-data-dir={profile}",
        f"--remote-debugging-port={port}", "about:blank",
    ]  # fmt: skip
    process = subprocess.Popen(
        command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True
    )
    try:
        socket_url = _page_socket(port, process)
        with connect(socket_url, max_size=None, open_timeout=30) as socket:
            browser = Browser(socket)
            browser.call("Page.enable")
            yield browser
    finally:
        stop_process_group(process, grace_seconds=5)


def _page_socket(port: int, process: subprocess.Popen, timeout: float = 60) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert process.poll() is None, f"chromium exited ({process.returncode})"
        try:
            targets = requests.get(f"http://127.0.0.1:{port}/json/list", timeout=5).json()
        except requests.ConnectionError:
            time.sleep(0.3)
            continue
        pages = [t for t in targets if t.get("type") == "page"]
        if pages:
            return pages[0]["webSocketDebuggerUrl"]
        time.sleep(0.3)
    raise AssertionError(f"chromium's DevTools port {port} not open within {timeout:.0f}s")
