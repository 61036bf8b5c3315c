"""SVG snapshots of the cockpit (frozen clock, no timers, UTC). Update deliberately with
`pytest tests/tui/test_snapshots.py --snapshot-update`, then look at the SVGs."""

from __future__ import annotations

from pathlib import Path

from tui_helpers import live_app, replay_app, settle


async def _ready(pilot) -> None:
    await settle(pilot)


def test_main_screen_80x24(session: Path, snap_compare):
    assert snap_compare(live_app(session), terminal_size=(80, 24), run_before=_ready)


def test_main_screen_160x48(session: Path, snap_compare):
    assert snap_compare(live_app(session), terminal_size=(160, 48), run_before=_ready)


def test_replay_160x48(session: Path, snap_compare):
    async def run_before(pilot) -> None:
        await settle(pilot)
        await pilot.press("G", "left_square_bracket", "left_square_bracket")
        await settle(pilot)

    assert snap_compare(replay_app(session), terminal_size=(160, 48), run_before=run_before)
