"""The record shared between processes: viewers reading live, posters, the engine lock."""

from __future__ import annotations

import multiprocessing
import os
import signal
import time
from pathlib import Path

import pytest

from cockpit.store import SessionLocked, SessionRecord, engine_pid


def wait_for(predicate, timeout: float = 15.0, every: float = 0.01):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(every)
    raise AssertionError("condition not met within the timeout")


def test_readonly_viewer_sees_another_process_append_live(session_dir: Path, child) -> None:
    viewer = SessionRecord.open_readonly(session_dir)
    start = viewer.last_event_id()
    writer = child("writer", str(session_dir), "40", "0.02")
    seen = set()
    while writer.poll() is None:
        seen.add(viewer.last_event_id() - start)
        time.sleep(0.005)
    assert writer.returncode == 0, writer.stderr.read()
    reported = [int(line.split()[1]) for line in writer.stdout.read().splitlines()]
    assert viewer.last_event_id() == reported[-1] and len(reported) == 40
    assert len(seen - {0, 40}) >= 10  # it saw the story unfold, not just the end
    assert [e.id for e in viewer.events(after_id=start)] == reported
    viewer.close()


def test_commands_posted_by_another_process_are_seen_and_acked(session_dir: Path, child) -> None:
    with SessionRecord.open(session_dir) as engine:
        engine.acquire_engine_lock()
        poster = child("poster", str(session_dir), "3")
        posted = wait_for(
            lambda: engine.pending_commands() if len(engine.pending_commands()) == 3 else None
        )
        assert [c.kind for c in posted] == ["pause"] * 3 and posted[0].source == "child"
        for cmd in posted:
            engine.ack_command(cmd.id, cmd.args["branch"] != "b1", f"done {cmd.args['branch']}")
        out, err = poster.communicate(timeout=20)
    lines = out.splitlines()
    ids = lines[0].split()[1:]
    assert lines[1:] == [
        f"acked {ids[0]} acked done b0",
        f"acked {ids[1]} failed done b1",
        f"acked {ids[2]} acked done b2",
    ], err


def test_second_engine_in_another_process_is_refused(session_dir: Path, child) -> None:
    holder = child("locker", str(session_dir))
    line = holder.stdout.readline().split()
    assert line[0] == "locked"
    assert engine_pid(session_dir) == holder.pid
    with SessionRecord.open(session_dir) as engine, pytest.raises(SessionLocked) as refused:
        engine.acquire_engine_lock()
    assert str(refused.value) == f"session {session_dir.name} is already run by pid {holder.pid}"
    second = child("locker", str(session_dir))
    assert second.stdout.readline().startswith("refused session s is already run by pid")
    holder.stdin.write("\n")
    holder.stdin.flush()
    assert holder.wait(timeout=10) == 0
    assert engine_pid(session_dir) is None


def test_stale_lock_of_a_killed_engine_is_taken_over(session_dir: Path, child) -> None:
    holder = child("locker", str(session_dir))
    assert holder.stdout.readline().startswith("locked")
    os.kill(holder.pid, signal.SIGKILL)
    holder.wait(timeout=10)
    assert (session_dir / "engine.lock").read_text().strip() == str(holder.pid)  # left behind
    with SessionRecord.open(session_dir) as engine:
        lock = engine.acquire_engine_lock()
        assert lock.previous_pid == holder.pid
        assert engine_pid(session_dir) == os.getpid()


def test_forked_child_does_not_keep_the_engine_lock(session_dir: Path, child) -> None:
    engine = SessionRecord.open(session_dir)
    engine.acquire_engine_lock()
    forked = multiprocessing.get_context("fork").Process(target=time.sleep, args=(30,))
    forked.start()
    try:
        engine.close()  # the engine is gone; its forked worker lives on
        taker = child("locker", str(session_dir))
        assert taker.stdout.readline().startswith("locked")
    finally:
        forked.kill()
        forked.join()


def test_engine_pid_is_none_for_a_session_never_run(session_dir: Path) -> None:
    assert engine_pid(session_dir) is None
