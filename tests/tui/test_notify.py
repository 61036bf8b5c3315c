"""Notifications: which events ring, toast and run the user's command; the command itself runs
for real (a shell writing a file), fails visibly, and is killed on its timeout without ever
blocking the cockpit."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from session_builder import NOW
from tui_helpers import live_app, replay_app, settle

from cockpit.store import SessionRecord
from cockpit.store import events as ev
from cockpit.store.models import Event
from cockpit.tui.keymap import NotifySettings, load_config
from cockpit.tui.notify import NotifyFailed, notices, run_notify_command

SIZE = (100, 30)
OUTAGE = "provider error (gpt-5; 4 attempts): 503 (retrying in 120 s, or resume it now)"


def _e(i: int, kind: str, payload: dict, branch: str | None = "b2") -> Event:
    return Event(i, NOW + i, kind, branch, None, payload)


def test_outage_pause_is_a_provider_notice_and_a_pause_by_command_is_none():
    found = notices(
        [
            _e(1, ev.BRANCH_STATE, {"state": "paused", "reason": OUTAGE}),
            _e(2, ev.BRANCH_STATE, {"state": "paused", "reason": "by command"}, "b3"),
            _e(3, "proposal_cancelled", {"reason": "branch paused by command"}),  # newer kind
            _e(4, ev.PROPOSAL_FAILED, {"reason": "no usable code"}, "b1"),  # no usage at all
        ]
    )
    assert [(n.kind, n.event.branch, n.bell) for n in found] == [
        ("provider", "b2", True),
        ("proposal", "b1", False),
    ]


def test_a_burst_folds_into_one_notice_per_kind_and_branch():
    burst = [
        _e(i, ev.PROPOSAL_FAILED, {"reason": "503", "usage": {"provider_errors": ["503"]}})
        for i in range(1, 51)
    ]
    (n,) = notices(burst)
    assert (n.kind, n.count, n.event.id) == ("provider", 50, 50)


def test_session_paused_by_a_budget_cap_notifies_but_not_a_restart():
    found = notices(
        [
            _e(1, ev.SESSION_STATE, {"state": "paused", "reason": "LLM budget $5.00 spent"}, None),
            _e(
                2,
                ev.SESSION_STATE,
                {"state": "paused", "reason": "paused when the engine stopped"},
                None,
            ),
        ]
    )
    assert [(n.kind, n.event.id) for n in found] == [("paused", 1)]


def test_command_that_fails_or_hangs_raises_with_the_reason(tmp_path: Path):
    with pytest.raises(NotifyFailed, match="exited 3: boom"):
        run_notify_command("echo boom >&2; exit 3", {}, 5)
    t0 = time.monotonic()
    with pytest.raises(NotifyFailed, match="timed out after 0.5 s"):
        run_notify_command(f"sleep 30; touch {tmp_path}/late", {}, 0.5)
    assert time.monotonic() - t0 < 5
    assert not (tmp_path / "late").exists()


def test_config_file_reads_the_notify_command_and_rejects_bad_values(tmp_path: Path):
    path = tmp_path / "keys.toml"
    path.write_text(
        'notify_command = "echo hi"\nnotify_on = ["best"]\nnotify_timeout_s = 5\n'
        '[keys]\n"cockpit.filter" = "ctrl+f"\n'
    )
    config = load_config(path)
    assert config.keys == {"cockpit.filter": "ctrl+f"}
    assert config.notify == NotifySettings("echo hi", frozenset({"best"}), 5.0)
    path.write_text('notify_on = ["everything"]\n')
    with pytest.raises(ValueError, match="notify_on"):
        load_config(path)


def _append_news(folder: Path) -> None:
    """What an engine writes when b2 improves and then b3's provider goes down."""
    with SessionRecord.open(folder) as rec:
        rec.append(ev.EVALUATION_FINISHED, {"status": "ok", "score_us": 12.0}, "b2", "c0008", t=NOW)
        rec.append(ev.BEST_CHANGED, {"candidate": "c0008", "score_us": 12.0}, "b2", "c0008", t=NOW)
        rec.append(
            ev.PROPOSAL_FAILED,
            {"reason": "provider error", "usage": {"provider_errors": ["503"]}},
            "b3",
            t=NOW,
        )
        rec.append(ev.BRANCH_STATE, {"state": "paused", "reason": OUTAGE}, "b3", t=NOW)


async def _wait_file(pilot, path: Path, lines: int, timeout: float = 20.0) -> list[str]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists() and len(found := path.read_text().splitlines()) >= lines:
            return found
        await pilot.pause(0.05)
    raise AssertionError(f"{path} has not {lines} lines after {timeout} s")


def _bells(app) -> list[int]:
    rung: list[int] = []
    original = app.bell
    app.bell = lambda: (rung.append(1), original())[-1]
    return rung


async def test_new_best_and_outage_ring_toast_and_run_the_command(session: Path, tmp_path: Path):
    out = tmp_path / "notified.txt"
    config = tmp_path / "keys.toml"
    config.write_text(
        "notify_command = '"
        f'printf "%s|%s|%s|%s|%s\\n" "$COCKPIT_EVENT" "$COCKPIT_BRANCH" "$COCKPIT_SCORE_US" '
        f'"$COCKPIT_SESSION" "$COCKPIT_MESSAGE" >> {out}\'\n'
    )
    app = live_app(session, notify=load_config(config).notify)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        rung = _bells(app)
        _append_news(session)
        await pilot.press("ctrl+r")
        await settle(pilot)
        lines = sorted(await _wait_file(pilot, out, 2))
        assert lines[0].startswith("best|b2|12.0|fixture|★ new best on b2: c0008")
        assert lines[1].startswith("provider|b3||fixture|✗ ")
        assert "503" in lines[1]
        assert len(rung) == 1  # one bell for the batch
        toasts = [n.message for n in app._notifications]
        assert any("new best on b2" in t for t in toasts)
        assert any("provider failing: b3 paused" in t for t in toasts)


async def test_a_failing_command_is_a_toast(session: Path):
    notify = NotifySettings("echo 'no route to host' >&2; exit 7", timeout_s=5)
    app = live_app(session, notify=notify)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        _append_news(session)
        await pilot.press("ctrl+r")
        deadline = time.monotonic() + 20
        while not any("exited 7" in n.message for n in app._notifications):
            assert time.monotonic() < deadline, [n.message for n in app._notifications]
            await pilot.pause(0.05)
        assert any("no route to host" in n.message for n in app._notifications)


async def test_a_hanging_command_never_blocks_the_cockpit(session: Path, tmp_path: Path):
    notify = NotifySettings("sleep 30", frozenset({"best"}), timeout_s=3)
    app = live_app(session, notify=notify)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        _append_news(session)
        await pilot.press("ctrl+r")
        await pilot.pause(0.3)
        t0 = time.monotonic()
        app.screen.query_one("BeamPanel").select("b:b1")
        await pilot.press("space")  # steering works while the command hangs
        while True:
            with SessionRecord.open_readonly(session) as rec:
                if rec.pending_commands():
                    break
            assert time.monotonic() - t0 < 2, "the cockpit was blocked by the notify command"
            await pilot.pause(0.05)
        deadline = time.monotonic() + 20
        while not any("timed out after 3 s" in n.message for n in app._notifications):
            assert time.monotonic() < deadline
            await pilot.pause(0.1)


async def test_replay_never_notifies(session: Path, tmp_path: Path):
    out = tmp_path / "notified.txt"
    app = replay_app(session)
    app.notify_settings = NotifySettings(f"echo $COCKPIT_EVENT >> {out}")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        for _ in range(40):
            await pilot.press("right_square_bracket")
        await settle(pilot)
        await pilot.pause(0.5)
        assert app.source.player.progress()[0] == 40
    assert not out.exists()
