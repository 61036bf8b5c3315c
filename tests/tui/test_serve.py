"""`cockpit serve`: the real server as a subprocess on a free loopback port, the page fetched
over HTTP, the app itself driven through the page's websocket; non-loopback hosts refused."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import aiohttp
import psutil
import pytest

REPO = Path(__file__).resolve().parents[2]
COCKPIT = (sys.executable, "-c", "import sys; from cockpit.cli import main; sys.exit(main())")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _env(tmp_path: Path) -> dict[str, str]:
    env = dict(os.environ, COCKPIT_KEYMAP=str(tmp_path / "none.toml"))
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH")) if p)
    return env


@pytest.fixture
def server(session: Path, tmp_path: Path) -> Iterator[tuple[subprocess.Popen, int]]:
    port = free_port()
    proc = subprocess.Popen(
        [*COCKPIT, "serve", str(session), "--port", str(port)],
        cwd=REPO,
        env=_env(tmp_path),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        yield proc, port
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(10)


def _get(url: str, deadline: float, proc: subprocess.Popen) -> str:
    while True:
        try:
            with urllib.request.urlopen(url, timeout=5) as r:
                return r.read().decode()
        except OSError:
            if proc.poll() is not None:
                raise AssertionError(
                    f"serve exited {proc.returncode}: {proc.stderr.read()}"
                ) from None
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


async def _screen_through_websocket(port: int, want: bytes, timeout: float) -> bytes:
    seen = b""
    url = f"http://127.0.0.1:{port}/ws?width=120&height=40"
    async with aiohttp.ClientSession() as http, http.ws_connect(url) as ws:

        async def read() -> bytes:
            nonlocal seen
            async for msg in ws:
                if msg.type == aiohttp.WSMsgType.BINARY:
                    seen += msg.data
                elif msg.type == aiohttp.WSMsgType.TEXT:
                    seen += msg.data.encode()
                if want in seen:
                    return seen
            return seen

        await asyncio.wait_for(read(), timeout)
        await ws.send_json(["stdin", "q"])  # detach: the app process ends
    return seen


def test_serve_shows_the_cockpit_page_and_app_on_loopback_then_stops(server, session: Path):
    proc, port = server
    page = _get(f"http://127.0.0.1:{port}/", time.monotonic() + 30, proc)
    assert "Kernel Cockpit · fixture" in page
    assert f"ws://127.0.0.1:{port}/ws" in page
    listening = [
        c.laddr
        for p in [psutil.Process(proc.pid)]
        for c in p.net_connections(kind="inet")
        if c.status == psutil.CONN_LISTEN
    ]
    assert listening and all(a.ip in ("127.0.0.1", "::1") for a in listening)
    # the app itself runs behind the page: its first screen carries the session's beam
    seen = asyncio.run(_screen_through_websocket(port, b"c0008", timeout=60))
    assert b"c0008" in seen
    children = psutil.Process(proc.pid).children(recursive=True)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(15) == 0
    _, alive = psutil.wait_procs(children, timeout=15)
    assert not alive, f"left running: {alive}"


@pytest.mark.parametrize("host", ["0.0.0.0", "192.168.1.10", "::"])
def test_serve_refuses_a_non_loopback_host(session: Path, tmp_path: Path, host: str):
    port = free_port()
    r = subprocess.run(
        [*COCKPIT, "serve", str(session), "--port", str(port), "--host", host],
        cwd=REPO,
        env=_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 2
    assert "loopback only" in r.stderr and "ssh -L" in r.stderr
    with socket.socket() as s:  # nothing was left listening
        assert s.connect_ex(("127.0.0.1", port)) != 0
