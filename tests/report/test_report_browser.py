"""`cockpit report` of the shipped example session, opened in a real browser: headless Chromium,
driven over its DevTools protocol, with every host name unresolvable. The page must load from
its one file (no request for anything else), draw its charts and family tree, show its tables
one row per line (no cell wrapped into a column of fragments), and look like something (a
screenshot that is not one flat colour)."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from report_sessions import EXAMPLE, REPO_ROOT

CHROMIUM = os.environ.get("CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
pytestmark = pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="no chromium on this machine")
aiohttp = pytest.importorskip("aiohttp")
Image = pytest.importorskip("PIL.Image")

WIDTH, HEIGHT = 1400, 2000
NARROW = 900  # half a laptop's screen
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
    "--host-resolver-rules=MAP * ~NOTFOUND",  # nothing could be fetched from a network
    f"--window-size={WIDTH},{HEIGHT}",
    "--remote-debugging-port=0",
]

# What the page looks like to a reader, measured in the browser after layout.
PROBE = """(() => {
  const visible = (e) => { const r = e.getBoundingClientRect(); return r.width > 0 && r.height > 0; };
  const tables = [...document.querySelectorAll('table')].map((t) => {
    const rows = [...t.rows].slice(1);
    const line = rows.length ? Math.min(...rows.map((r) => r.getBoundingClientRect().height)) : 0;
    return {head: [...t.rows[0].cells].map((c) => c.textContent.trim()), rows: rows.length,
            tallest: Math.max(0, ...rows.map((r) => r.getBoundingClientRect().height)), line};
  });
  return {
    title: document.title,
    h1: document.querySelector('h1').textContent,
    h2: [...document.querySelectorAll('h2')].map((h) => h.textContent),
    svgs: [...document.querySelectorAll('svg')].filter(visible).length,
    tables,
    pageWidth: document.documentElement.scrollWidth,
    viewWidth: window.innerWidth,
    text: document.body.innerText,
  };
})()"""


class Browser:
    """One headless Chromium and one page of it, over the DevTools protocol."""

    def __init__(self, profile: Path) -> None:
        self.proc = subprocess.Popen(
            [CHROMIUM, *FLAGS, f"--user-data-dir={profile}", "about:blank"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.port = self._port()
        self.requests: list[str] = []
        self._id = 0

    def _port(self) -> int:
        deadline = time.monotonic() + 60
        assert self.proc.stderr is not None
        while time.monotonic() < deadline:
            line = self.proc.stderr.readline()
            if m := re.search(r"DevTools listening on ws://[^:]+:(\d+)/", line):
                return int(m.group(1))
            if not line and self.proc.poll() is not None:
                break
        raise AssertionError("chromium did not open its DevTools port")

    async def open(self, url: str, shot: Path) -> tuple[dict, dict]:
        """Load `url` in a WIDTH x HEIGHT viewport; returns the PROBE's answers there and in a
        NARROW one; the first viewport's screenshot goes to `shot`."""
        async with aiohttp.ClientSession() as http:
            async with http.get(f"http://127.0.0.1:{self.port}/json/list") as resp:
                page = next(t for t in await resp.json() if t["type"] == "page")
            async with http.ws_connect(page["webSocketDebuggerUrl"], max_msg_size=0) as ws:
                self.ws = ws
                await self.call("Network.enable")
                await self.call("Page.enable")
                await self.viewport(WIDTH)
                await self.call("Page.navigate", url=url)
                await self.until("Page.loadEventFired")
                wide = await self.probe()
                png = await self.call("Page.captureScreenshot", format="png")
                await self.viewport(NARROW)
                narrow = await self.probe()
        shot.write_bytes(base64.b64decode(png["data"]))
        return wide, narrow

    async def viewport(self, width: int) -> None:
        await self.call(
            "Emulation.setDeviceMetricsOverride",
            width=width,
            height=HEIGHT,
            deviceScaleFactor=1,
            mobile=False,
        )

    async def probe(self) -> dict:
        got = await self.call("Runtime.evaluate", expression=PROBE, returnByValue=True)
        return got["result"]["value"]

    async def call(self, method: str, **params) -> dict:
        self._id += 1
        mine = self._id
        await self.ws.send_json({"id": mine, "method": method, "params": params})
        while True:
            msg = await self._next()
            if msg.get("id") == mine:
                assert "error" not in msg, msg
                return msg["result"]

    async def until(self, event: str) -> None:
        while (await self._next()).get("method") != event:
            pass

    async def _next(self) -> dict:
        msg = json.loads((await self.ws.receive(timeout=60)).data)
        if msg.get("method") == "Network.requestWillBeSent":
            self.requests.append(msg["params"]["request"]["url"])
        return msg

    def close(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def test_the_example_report_in_a_real_browser(tmp_path: Path) -> None:
    page = tmp_path / "report.html"
    proc = subprocess.run(
        [sys.executable, "-m", "cockpit.cli", "report", str(EXAMPLE), "-o", str(page)],
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    profile = Path(tempfile.mkdtemp(prefix="chromium-", dir=tmp_path))
    browser = Browser(profile)
    try:
        seen, narrow = asyncio.run(browser.open(page.as_uri(), tmp_path / "report.png"))
    finally:
        browser.close()

    # the page is its own file: the browser asked for nothing else
    assert browser.requests == [page.as_uri()], browser.requests
    assert seen["title"].startswith(EXAMPLE.name) and seen["h1"] == EXAMPLE.name
    assert seen["h2"][:4] == [
        "Best candidate",
        "Progress",
        "Family tree",
        "Best candidate per shape (c0002)",
    ]
    assert {"Branches", "Candidates", "LLM spend"} <= set(seen["h2"])
    assert seen["svgs"] >= 2  # the progress charts and the family tree, laid out
    for fact in ("time limit of 5m reached", "fused-small-n", "1.13 ms", "cockpit export"):
        assert fact in seen["text"], fact
    # every row of every table on one line, wide or narrow (this session's notes are short); a
    # table wider than the window scrolls inside its card, the page itself does not
    for view in (seen, narrow):
        tables = {
            t["head"][1] if t["head"][0] == "rank" else t["head"][0]: t for t in view["tables"]
        }
        assert set(tables) == {"#", "shape", "branch", "id"}
        assert tables["id"]["rows"] == 7 and tables["shape"]["rows"] == 29 + 12  # hidden, benchmark
        one_line = min(t["line"] for t in tables.values())
        for name, t in tables.items():
            assert t["tallest"] < 1.5 * one_line, (view["viewWidth"], name, t)
        assert view["pageWidth"] <= view["viewWidth"]
    assert narrow["viewWidth"] == NARROW

    shot = Image.open(tmp_path / "report.png").convert("RGB")
    assert shot.size == (WIDTH, HEIGHT)
    colours = shot.resize((140, 200)).getcolors(maxcolors=140 * 200)
    assert colours is not None and len(colours) > 50  # not blank, not one flat colour
