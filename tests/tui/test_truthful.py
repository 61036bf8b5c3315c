"""The cockpit says what is true: states once a session has ended and why it ended, keys and
hints as they are, toasts beside the event log rather than over it (Pilot on a recorded
session, the real app)."""

from __future__ import annotations

from pathlib import Path

from session_builder import NOW, SEED, Builder, result, variant
from tui_helpers import live_app, replay_app, settle

from cockpit.store import SessionRecord
from cockpit.store import events as ev
from cockpit.tui.screens.help import HelpScreen
from cockpit.tui.widgets.beam_panel import BeamPanel
from cockpit.tui.widgets.event_log import EventLog
from cockpit.tui.widgets.history_plot import MARK_LEGEND, MARK_LEGEND_SHORT, HistoryPlot

WIDE = (160, 48)


def end_session(folder: Path, state: str, reason: str, t: float) -> None:
    """What an engine records at the end: every branch retired after a plateau, then `state`."""
    with SessionRecord.open(folder) as rec:
        for bid in ("b1", "b2", "b3"):
            rec.append(
                ev.BRANCH_STATE,
                {"state": "retired", "reason": "plateau in x and no other family left to try"},
                branch=bid,
                t=t - 5,
            )
        rec.append(ev.SESSION_STATE, {"state": state, "reason": reason}, t=t)


def beam_rows(app) -> list[str]:
    ol = app.screen.query_one(BeamPanel).option_list
    return [ol.get_option_at_index(i).prompt.plain for i in range(ol.option_count)]


def bar_text(app) -> str:
    return str(app.screen.query_one("#bar").render())


def log_text(app) -> str:
    return "\n".join(line.text for line in app.screen.query_one(EventLog).lines)


async def test_a_done_session_reads_done_says_why_and_when_it_ended(session: Path):
    with SessionRecord.open(session) as rec:  # b2 still `running` in the record
        rec.append(
            ev.SESSION_STATE,
            {"state": "done", "reason": "budget spent or beam retired"},
            t=NOW - 600,
        )
    app = live_app(session)
    async with app.run_test(size=WIDE) as pilot:
        await settle(pilot)
        rows = [r for r in beam_rows(app) if r.startswith("b")]
        assert len(rows) == 3 and not any("running" in r for r in rows), rows
        assert any("■ done" in r for r in rows), rows
        bar = bar_text(app)
        assert "done: done at 8/40 evaluations" in bar  # neither budget nor beam: as recorded
        assert "ended 08:50" in bar and "last event" not in bar, bar


async def test_a_beam_retired_early_says_what_would_continue_it(session: Path):
    end_session(session, "done", "budget spent or beam retired", NOW - 600)
    app = live_app(session)
    async with app.run_test(size=WIDE) as pilot:
        await settle(pilot)
        assert (
            "done: every branch retired after plateaus at 8/40 evaluations: fork another "
            "family or set a model to continue"
        ) in bar_text(app)


async def test_a_running_session_still_counts_the_time_since_its_last_event(session: Path):
    app = live_app(session)
    async with app.run_test(size=WIDE) as pilot:
        await settle(pilot)
        bar = bar_text(app)
        assert "last event 1m40s ago" in bar and "ended" not in bar, bar
        assert any("▶ running" in r for r in beam_rows(app))


async def test_the_help_dialog_shows_the_keys_table_name_literally(session: Path):
    app = live_app(session)
    async with app.run_test(size=WIDE) as pilot:
        await settle(pilot)
        await pilot.press("question_mark")
        await settle(pilot)
        assert isinstance(app.screen, HelpScreen)
        hint = str(app.screen.query_one(".hint").render())
        assert "remap: [keys] in ~/.config/kernel-cockpit/keys.toml" in hint, hint


QUOTA = "family triton-rowwise is at its quota of 2 live branches"


async def _refused_fork(app, pilot, session: Path) -> None:
    """Fork c0004 from the cockpit; the engine refuses it (its words in the record)."""
    await settle(pilot)
    app.screen.query_one(BeamPanel).select("c:c0004")
    await settle(pilot)
    await pilot.press("f")
    await settle(pilot)
    await pilot.press("ctrl+s")
    await settle(pilot)
    assert any("waiting for the engine" in n.message for n in app._notifications)
    with SessionRecord.open(session) as rec:  # the engine's side
        (cmd,) = rec.pending_commands()
        rec.ack_command(cmd.id, False, QUOTA)
    await pilot.press("ctrl+r")
    await settle(pilot)


async def test_a_refused_fork_replaces_the_waiting_toast_and_is_logged_whole(session: Path):
    app = live_app(session)
    async with app.run_test(size=WIDE) as pilot:
        await _refused_fork(app, pilot, session)
        toasts = [n.message for n in app._notifications]
        assert not any("waiting for the engine" in t for t in toasts), toasts
        assert f"✗ fork c0004: {QUOTA}" in toasts
        log = " ".join(log_text(app).split())
        assert f"✗ fork: {QUOTA}" in log, log
        width = app.screen.query_one(EventLog).scrollable_content_region.width
        lines = log_text(app).splitlines()
        assert all(len(line.rstrip()) <= width for line in lines), (width, lines[-4:])


async def test_toasts_leave_the_event_log_uncovered(session: Path):
    for size in ((80, 24), WIDE):
        app = live_app(session)
        async with app.run_test(size=size, notifications=True) as pilot:
            await _refused_fork(app, pilot, session)
            app.notify("a second notice, to stack two toasts")
            await settle(pilot)
            await pilot.pause(0.2)  # the toast rack lays out after the notices arrive
            log = app.screen.query_one("#log").region
            beam = app.screen.query_one("#beam").region
            toasts = list(app.screen.query("Toast"))
            assert len(toasts) == 2 and all(t.region.area for t in toasts), toasts
            for toast in toasts:
                assert not toast.region.overlaps(log), (size, toast.region, log)
                assert not toast.region.overlaps(beam), (size, toast.region, beam)


def footer_text(app) -> str:
    strips = app.screen._compositor.render_strips()
    return "".join(segment.text for segment in strips[-1])


async def test_help_and_detach_stay_in_the_footer_at_80x24(session: Path):
    app = live_app(session)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        footer = footer_text(app)
        assert "? Help" in footer and "q Detach" in footer, footer


async def test_replay_says_q_quits_and_q_quits(session: Path):
    app = replay_app(session)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        footer = footer_text(app)
        assert "q Quit" in footer and "Detach" not in footer, footer
        await pilot.press("q")
        await pilot.pause()
        assert app.return_code == 0 and not app.is_running


def no_baseline_measured(folder: Path) -> Path:
    """A session whose harness had no stored baseline (`cockpit baseline` never ran), so no
    result carries speedups: a torch baseline candidate, a Triton one twice as fast, and one
    timed in the Triton interpreter (not comparable)."""
    b = Builder(folder)
    b.append(ev.SESSION_CREATED, {"name": folder.name, "task": "softmax", "device": "cpu"}, dt=0)
    b.append(ev.SESSION_STARTED, {"pid": 1, "host": "h", "resumed": False}, dt=1)
    b.append(ev.BUDGET_CHANGED, {"budget": 10, "previous": None}, dt=1)
    for bid, fam in (("b1", "baseline"), ("b2", "triton-rowwise")):
        b.append(ev.BRANCH_CREATED, {"family": fam}, branch=bid, dt=2)
    b.candidate("c0001", "b1", "baseline", SEED, "ok", 40.0, dt=10)
    b.candidate("c0002", "b2", "triton-rowwise", variant(512), "ok", 20.0, dt=60)
    b.append(ev.CANDIDATE_PROPOSED, {"source_hash": "x"}, "b2", "c0003", dt=100)
    b.append(
        ev.EVALUATION_FINISHED, {**result("ok", 8.0), "comparable": False}, "b2", "c0003", dt=130
    )
    b.append(ev.BEST_CHANGED, {"candidate": "c0001", "score_us": 40.0}, "b1", "c0001", dt=40)
    b.append(ev.BEST_CHANGED, {"candidate": "c0002", "score_us": 20.0}, "b2", "c0002", dt=90)
    b.close()
    return folder


async def test_times_ref_is_filled_from_the_sessions_baseline(tmp_path: Path):
    folder = no_baseline_measured(tmp_path / "noref")
    app = live_app(folder)
    async with app.run_test(size=WIDE) as pilot:
        await settle(pilot)
        rows = {r.split()[0]: r for r in beam_rows(app) if r.split()}
        assert rows["b2"].endswith(" 2.0×") and rows["c0002"].endswith(" 2.0×"), rows
        assert rows["b1"].endswith(" 1.0×") and rows["c0001"].endswith(" 1.0×"), rows
        assert not rows["c0003"].endswith("×"), rows  # interpreter time: not comparable


async def test_the_plot_says_what_its_markers_mean(session: Path):
    for size, legend in (((160, 48), MARK_LEGEND), ((80, 24), MARK_LEGEND_SHORT)):
        app = live_app(session)
        async with app.run_test(size=size) as pilot:
            await settle(pilot)
            assert app.screen.query_one(HistoryPlot).border_subtitle == legend


async def test_steering_a_session_that_has_ended_is_refused_not_queued(session: Path):
    with SessionRecord.open(session) as rec:
        rec.append(ev.SESSION_STATE, {"state": "stopped", "reason": "by command"}, t=NOW - 60)
    app = live_app(session)
    async with app.run_test(size=WIDE) as pilot:
        await settle(pilot)
        await pilot.press("P")
        await settle(pilot)
        with SessionRecord.open_readonly(session) as rec:
            assert rec.pending_commands() == []
        (toast,) = [n for n in app._notifications if "not sent" in n.title]
        assert toast.message == (
            "session stopped: no engine reads commands; `cockpit resume fixture` continues it"
        )


async def test_an_engine_that_died_without_a_word_reads_crashed(session: Path):
    """The record says running; no engine holds the lock (it was SIGKILLed): crashed, why,
    no branch running, and no command sent to nobody."""
    app = live_app(session, engine=False)
    async with app.run_test(size=WIDE) as pilot:
        await settle(pilot)
        bar = bar_text(app)
        assert (
            "fixture · crashed: the engine died at 8/40 evaluations without recording why"
        ) in bar, bar
        assert "last event 1m40s ago" in bar  # when the engine was last heard of
        log = " ".join(log_text(app).split())
        assert log.endswith(
            "✗ the engine died at 8/40 evaluations without recording why (killed, or its "
            "machine went down); `cockpit resume` continues it"
        ), log[-200:]
        rows = [r for r in beam_rows(app) if r.startswith("b")]
        assert not any("running" in r for r in rows) and any("✗ crashed" in r for r in rows)
        await pilot.press("P")
        await settle(pilot)
        with SessionRecord.open_readonly(session) as rec:
            assert rec.pending_commands() == []


async def test_the_engine_dying_while_attached_turns_the_cockpit_to_crashed(session: Path):
    app = live_app(session)
    async with app.run_test(size=WIDE) as pilot:
        await settle(pilot)
        assert "fixture · running" in bar_text(app)
        from tui_helpers import _ENGINE_LOCKS

        _ENGINE_LOCKS.pop(session).release()  # the engine is gone; the record is unchanged
        await pilot.press("ctrl+r")
        await settle(pilot)
        assert "fixture · crashed: the engine died" in bar_text(app)
        assert log_text(app).count("the engine died") == 1
        await pilot.press("ctrl+r")
        await settle(pilot)
        assert log_text(app).count("the engine died") == 1


async def test_the_state_filter_matches_what_the_rows_say(session: Path):
    with SessionRecord.open(session) as rec:
        rec.append(ev.SESSION_STATE, {"state": "done", "reason": "x"}, t=NOW - 600)
    app = live_app(session)
    async with app.run_test(size=WIDE) as pilot:
        await settle(pilot)
        app.screen.set_filter("state:running")
        await settle(pilot)
        assert [r for r in beam_rows(app) if r.startswith("b")] == []
        assert app.screen.query_one(BeamPanel).border_title.endswith("(0/8)")
        app.screen.set_filter("state:done")
        await settle(pilot)
        assert len([r for r in beam_rows(app) if r.startswith("b")]) == 2
        app.screen.set_filter("state:paused")  # a paused branch stays paused, with its reason
        await settle(pilot)
        assert len([r for r in beam_rows(app) if r.startswith("b")]) == 1


def test_commands_are_named_as_a_user_types_them():
    from cockpit.store.models import Event
    from cockpit.tui.describe import describe

    received = Event(1, NOW, ev.COMMAND_RECEIVED, None, None, {
        "kind": "set_model", "args": {"model": "gpt-x"}, "source": "cli"})  # fmt: skip
    acked = Event(2, NOW, ev.COMMAND_ACKED, None, None, {
        "kind": "set_budget", "ok": True, "message": "budget 9 evaluations"})  # fmt: skip
    assert describe(received)[0] == "⌘ set-model gpt-x (all) from cli"
    assert describe(acked)[0] == "✓ set-budget: budget 9 evaluations"
