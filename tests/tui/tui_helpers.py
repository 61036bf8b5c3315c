"""Fixtures for the cockpit tests: a recorded session built once per run (no engine), copied
per test so each test may post commands into its own record; a frozen clock; UTC."""

from __future__ import annotations

import asyncio
import inspect
import os
import shutil
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from session_builder import NOW, build_session  # noqa: E402

from cockpit.store import EngineLock, acquire_engine_lock  # noqa: E402
from cockpit.tui import CockpitApp, LiveSource, ReplaySource  # noqa: E402


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> bool | None:
    """Run `async def` tests in a fresh event loop (no asyncio plugin needed for Pilot)."""
    if not inspect.iscoroutinefunction(pyfuncitem.obj):
        return None
    args = {name: pyfuncitem.funcargs[name] for name in pyfuncitem._fixtureinfo.argnames}
    asyncio.run(pyfuncitem.obj(**args))
    return True


@pytest.fixture(autouse=True, scope="session")
def _utc() -> Iterator[None]:
    """Times in the log and replay bar are local: pin the zone so snapshots match anywhere."""
    old = os.environ.get("TZ")
    os.environ["TZ"] = "UTC"
    time.tzset()
    yield
    if old is None:
        os.environ.pop("TZ", None)
    else:
        os.environ["TZ"] = old
    time.tzset()


@pytest.fixture(autouse=True)
def _no_user_keymap(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COCKPIT_KEYMAP", str(tmp_path / "no-keymap.toml"))


@pytest.fixture(scope="session")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_session(tmp_path_factory.mktemp("template") / "fixture")


@pytest.fixture(scope="session")
def template_no_gpu(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_session(tmp_path_factory.mktemp("template-nogpu") / "fixture", gpu=False)


@pytest.fixture
def session(template: Path, tmp_path: Path) -> Path:
    """A private copy of the recorded session, named `fixture`."""
    return Path(shutil.copytree(template, tmp_path / "fixture"))


# Engine locks held for the sessions of the running test (released after it).
_ENGINE_LOCKS: dict[Path, EngineLock] = {}


@pytest.fixture(autouse=True)
def _release_engine_locks() -> Iterator[None]:
    yield
    for lock in _ENGINE_LOCKS.values():
        lock.release()
    _ENGINE_LOCKS.clear()


def hold_engine_lock(folder: Path) -> None:
    """Hold the session's engine lock as a live engine does, for the rest of the test: the
    cockpit reads a session recorded `running` whose lock nobody holds as crashed."""
    if folder not in _ENGINE_LOCKS:
        _ENGINE_LOCKS[folder] = acquire_engine_lock(folder)


def live_app(folder: Path, *, engine: bool = True, **kw) -> CockpitApp:
    """The cockpit attached to `folder`; `engine`: as if its engine were alive (the lock held)."""
    if engine:
        hold_engine_lock(folder)
    kw.setdefault("show_summary", False)
    kw.setdefault("now", lambda: NOW)
    return CockpitApp(LiveSource(folder), poll_interval=None, user="tester", **kw)


def replay_app(folder: Path) -> CockpitApp:
    return CockpitApp(
        ReplaySource(folder, speed=10), now=lambda: NOW, poll_interval=None, user="tester"
    )


async def settle(pilot) -> None:
    """Wait until every worker (reads, posts) is done and their messages are handled."""
    for _ in range(3):
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()
