"""What a snapshot redraws while a session is watched: only what changed on screen. Each redraw
is composited and written to the terminal, so an attached cockpit's cost follows how much of
it is redrawn per poll (decision 0038)."""

from __future__ import annotations

from pathlib import Path

from session_builder import NOW, T0
from textual.widgets import Static
from tui_helpers import hold_engine_lock, live_app, settle

from cockpit.store import SessionRecord
from cockpit.store import events as ev
from cockpit.store.models import TelemetrySample
from cockpit.tui import LiveSource
from cockpit.tui.screens import main as main_screen
from cockpit.tui.widgets.beam_panel import BeamPanel
from cockpit.tui.widgets.history_plot import HistoryPlot, quantize_end

SIZE = (160, 48)


def add_sample(folder: Path, dt: float) -> None:
    """One more telemetry reading, `dt` seconds after the newest: what each poll brings."""
    with SessionRecord.open(folder) as rec:
        (t,) = rec.execute("SELECT max(t) FROM telemetry")[0]
        rec.add_telemetry(
            [TelemetrySample(t + dt, 0, 77.0, 61_000, 143_771, 500, 65, 1980, 30, 41)]
        )


def spy(obj, name: str, calls: list) -> None:
    method = getattr(obj, name)

    def wrapper(*args, **kw):
        calls.append(name)
        return method(*args, **kw)

    setattr(obj, name, wrapper)


def rows(beam: BeamPanel) -> list[str]:
    ol = beam.option_list
    return [ol.get_option_at_index(i).prompt.plain for i in range(ol.option_count)]


async def test_telemetry_alone_redraws_the_meters_only(session: Path):
    app = live_app(session)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        main = app.screen
        beam = main.query_one(BeamPanel)
        calls: list[str] = []
        spy(main, "refresh_bindings", calls)
        spy(beam.option_list, "clear_options", calls)
        spy(beam.option_list, "replace_option_prompt_at_index", calls)
        spy(main.query_one("#bar", Static), "update", calls)
        spy(main.query_one("#gpu-status", Static), "update", calls)
        util = main.query_one("#util")
        before = util.values
        add_sample(session, 15)
        main.action_refresh()
        await settle(pilot)
        assert util.values != before and util.values[-1] == 77.0  # the new reading is shown
        assert calls == []  # footer, beam, session bar and GPU header as they were


async def test_a_verdict_replaces_its_row_in_place_and_a_new_candidate_rebuilds(session: Path):
    app = live_app(session)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        main = app.screen
        beam = main.query_one(BeamPanel)
        beam.select("c:c0008")
        await settle(pilot)
        calls: list[str] = []
        spy(beam.option_list, "clear_options", calls)
        spy(beam.option_list, "replace_option_prompt_at_index", calls)
        spy(main, "refresh_bindings", calls)
        with SessionRecord.open(session) as rec:
            proposed = {"parent": "c0008", "family": "triton-rowwise", "source": "x = 1\n"}
            rec.append(ev.CANDIDATE_PROPOSED, proposed, "b2", "c0009", t=NOW)
        main.action_refresh()
        await settle(pilot)
        assert calls == ["clear_options"]  # a row came: the list is rebuilt, the keys stay
        assert any("c0009" in r for r in rows(beam))
        calls.clear()
        with SessionRecord.open(session) as rec:
            finished = {"status": "ok", "score_us": 25.0}
            rec.append(ev.EVALUATION_FINISHED, finished, "b2", "c0009", t=NOW)
        main.action_refresh()
        await settle(pilot)
        assert calls == ["replace_option_prompt_at_index"]  # only the row that changed
        (row,) = [r for r in rows(beam) if "c0009" in r]
        assert "ok" in row and "25.0µs" in row, row
        assert beam.option_list.highlighted_option.id == "c:c0008"  # the highlight stays
        assert main.selection == ("b2", "c0008")


async def test_time_alone_moves_a_live_plot_at_a_bounded_rate(session: Path, monkeypatch):
    clock = [NOW]
    app = live_app(session, now=lambda: clock[0])
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        main = app.screen
        plot = main.query_one(HistoryPlot)
        edge = plot.data.t1
        assert edge == quantize_end(T0, NOW)
        for dt in (60, 120):  # two polls a minute of session time apart, at once in wall time
            clock[0] = NOW + dt
            add_sample(session, 15)
            main.action_refresh()
            await settle(pilot)
        # the first move of the edge is drawn, the next one waits
        assert plot.data.t1 == quantize_end(T0, NOW + 60) > edge
        monkeypatch.setattr(main_screen, "PLOT_EDGE_S", 0.0)
        add_sample(session, 15)
        main.action_refresh()
        await settle(pilot)
        assert plot.data.t1 == quantize_end(T0, NOW + 120)  # drawn once PLOT_EDGE_S passed
        monkeypatch.setattr(main_screen, "PLOT_EDGE_S", 3600.0)
        with SessionRecord.open(session) as rec:  # a new point is drawn at once
            best = {"candidate": "c0008", "score_us": 18.0}
            rec.append(ev.BEST_CHANGED, best, "b2", "c0008", t=NOW + 170)
        clock[0] = NOW + 180
        main.action_refresh()
        await settle(pilot)
        assert plot.data.t1 == quantize_end(T0, NOW + 180)
        assert plot.data.series[plot.data.branch_ids.index("b2")].points[-1][1] == 18.0


def test_a_poll_rereads_only_the_candidates_its_events_name(session: Path):
    """The candidate list a poll hands over equals the whole table read again, in its order:
    a new candidate, a verdict, a seed evaluated without a proposal; events that name no
    candidate hand over the very same tuple."""
    hold_engine_lock(session)
    source = LiveSource(session)
    source.load()
    reads: list = []
    spy(source.record, "candidates", reads)

    def check(snap) -> None:
        with SessionRecord.open_readonly(session) as rec:
            assert snap.candidates == tuple(rec.candidates())

    with SessionRecord.open(session) as rec:
        rec.append(ev.CANDIDATE_PROPOSED, {"parent": "c0008", "family": "x"}, "b2", "c0009")
        rec.append(ev.EVALUATION_STARTED, {}, "b3", "c0005")
    check(source.poll())
    with SessionRecord.open(session) as rec:
        rec.append(ev.EVALUATION_FINISHED, {"status": "ok", "score_us": 9.0}, "b2", "c0009")
        rec.append(ev.EVALUATION_FINISHED, {"status": "ok", "score_us": 50.0}, "b1", "seed-x")
    before = source.poll()
    check(before)
    with SessionRecord.open(session) as rec:
        rec.append(ev.PROPOSAL_REQUESTED, {"parent": "c0009", "model": "gpt-5"}, "b2")
    assert source.poll().candidates is before.candidates
    assert reads == []  # never the whole table
    source.close()
