"""The `/` filter on the beam and the event log: a pure parser, and the real app through Pilot
on a recorded session."""

from __future__ import annotations

from pathlib import Path

from tui_helpers import live_app, settle

from cockpit.store.models import Branch, Candidate, Event
from cockpit.tui.filter import Filter
from cockpit.tui.screens.main import MainScreen
from cockpit.tui.widgets.beam_panel import BeamPanel
from cockpit.tui.widgets.event_log import EventLog

SIZE = (100, 30)


def _branch(bid: str, family: str, state: str = "running") -> Branch:
    return Branch(bid, family, state, "gpt-5", None, None, None, None, {})


def _cand(cid: str, branch: str, family: str, status: str) -> Candidate:
    return Candidate(cid, branch, None, family, status, None, None, None, None, None, None, {})


def test_filter_terms_all_must_match_and_a_candidate_sees_its_branch_state():
    paused = _branch("b3", "triton-online", "paused")
    c = _cand("c0005", "b3", "triton-online", "wrong")
    assert Filter.parse("state:paused").candidate(c, paused)
    assert Filter.parse("fam:online v:wrong").candidate(c, paused)
    assert not Filter.parse("fam:online v:ok").candidate(c, paused)
    assert Filter.parse("C0005").candidate(c, paused)  # free text, case-insensitive
    assert not Filter.parse("b2").candidate(c, paused)
    assert Filter.parse("family:").terms == ()  # a key still being typed filters nothing


def test_filter_matches_an_event_on_its_words_or_its_candidate():
    b = _branch("b2", "triton-rowwise")
    c = _cand("c0006", "b2", "triton-rowwise", "timeout")
    e = Event(1, 0.0, "evaluation_started", "b2", "c0006", {})

    def look_b(bid):
        return b if bid == "b2" else None

    def look_c(cid):
        return c if cid == "c0006" else None

    assert Filter.parse("verdict:timeout").event(e, "c0006 b2 evaluating", look_b, look_c)
    assert Filter.parse("evaluating").event(e, "c0006 b2 evaluating", look_b, look_c)
    assert not Filter.parse("branch:b1").event(e, "c0006 b2 evaluating", look_b, look_c)


def _rows(app) -> list[str]:
    ol = app.screen.query_one(BeamPanel).option_list
    return [ol.get_option_at_index(i).id for i in range(ol.option_count)]


def _log(app) -> str:
    return "\n".join(line.text for line in app.screen.query_one(EventLog).lines)


async def test_slash_filters_beam_and_log_and_escape_clears(session: Path):
    app = live_app(session)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        everything = _rows(app)
        assert "b:b1" in everything and "c:c0006" in everything
        await pilot.press("slash", *"verdict:timeout")
        await settle(pilot)
        assert _rows(app) == ["b:b2", "c:c0006"]
        beam = app.screen.query_one(BeamPanel)
        assert "⧩ verdict:timeout (1/8)" in beam.border_title
        log = _log(app)
        assert "timeout" in log and "c0004" not in log and "b3" not in log
        assert "⧩ verdict:timeout" in app.screen.query_one(EventLog).border_title
        await pilot.press("enter")  # keeps the filter, back to the beam (no detail screen)
        await settle(pilot)
        assert isinstance(app.screen, MainScreen)
        assert app.focused is beam.option_list
        assert _rows(app) == ["b:b2", "c:c0006"]
        await pilot.press("escape")
        await settle(pilot)
        assert _rows(app) == everything
        assert beam.border_title == "beam"
        assert "c0004" in _log(app)


async def test_filter_by_state_shows_the_paused_branch_with_its_candidates(session: Path):
    app = live_app(session)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("slash", *"state:paused", "enter")
        await settle(pilot)
        assert _rows(app) == ["b:b3", "c:c0005", "c:c0003"]
        # steering acts on what the filter left: space pauses/resumes the shown branch
        assert app.screen.selection[0] == "b3"


async def test_filter_is_remappable_and_in_the_palette(session: Path):
    app = live_app(session, keymap={"cockpit.filter": "ctrl+f"})
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("slash")
        await settle(pilot)
        assert not app.screen.query_one("#filter").has_class("-editing")
        await pilot.press("ctrl+f", *"b1")
        await settle(pilot)
        assert all(r.endswith(("b1", "c0001", "c0007")) for r in _rows(app))
        await pilot.press("escape")
        await settle(pilot)
        await pilot.press("ctrl+p")
        await pilot.pause()
        await pilot.press(*"filter")
        await pilot.pause(0.3)
        await pilot.press("enter")
        await settle(pilot)
        assert app.screen.query_one("#filter").has_class("-editing")
