"""Pure parts of the cockpit: plots on fixed scales, the summary, event wording, the sources."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from session_builder import T0

from cockpit.store import SessionRecord
from cockpit.store import events as ev
from cockpit.store.models import Event
from cockpit.tui.describe import describe
from cockpit.tui.keymap import load_keymap
from cockpit.tui.plot import LogScale, StepSeries, marker_row, plot_steps, sparkline
from cockpit.tui.sources import LiveSource, ReplaySource
from cockpit.tui.summary import (
    LastLooked,
    read_last_looked,
    summarize,
    summary_lines,
    write_last_looked,
)


def test_sparkline_uses_the_fixed_range_not_the_data_range():
    assert sparkline([0, 50, 100], 3, 0, 100) == "▁▅█"
    # the same 40% reads the same whatever its neighbours are (no auto-scaling)
    assert sparkline([40, 41], 2, 0, 100)[0] == sparkline([40, 100], 2, 0, 100)[0]
    assert sparkline([-5, 500], 2, 0, 100) == "▁█"  # clamped


def test_sparkline_right_aligns_and_shows_gaps():
    assert sparkline([100], 4, 0, 100) == "   █"
    assert sparkline([100, None, 100], 3, 0, 100) == "█ █"


def test_step_plot_draws_an_improvement_lower_on_a_log_scale():
    s = StepSeries(((0.0, 40.0), (50.0, 20.0)))
    canvas = plot_steps([s], 10, 4, 0.0, 100.0, LogScale.around([40.0, 20.0]))
    rows = canvas.rows()
    top_cols = [x for x, (ch, _) in enumerate(rows[0]) if ch != " "]
    bottom_cols = [x for x, (ch, _) in enumerate(rows[-1]) if ch != " "]
    assert top_cols and bottom_cols and max(top_cols) <= min(bottom_cols)


def test_marker_row_places_glyphs_by_time():
    assert marker_row([(0.0, "▲"), (99.0, "◆")], 10, 0.0, 100.0) == "▲        ◆"


def test_summary_counts_bests_failures_plateaus_and_commands(session: Path):
    with SessionRecord.open_readonly(session) as rec:
        mark = next(e for e in rec.events(kinds=[ev.BEST_CHANGED]) if e.candidate == "c0003")
        events = rec.events(after_id=mark.id)
    s = summarize(events, LastLooked(mark.id, mark.t))
    assert [e.candidate for e in s.bests] == ["c0004", "c0007", "c0008"]
    assert s.failures == {"wrong": 1, "timeout": 1}
    assert s.plateaus == ["b1"]
    assert [(c.what, c.source, c.outcome) for c in s.commands] == [("pause b3", "cli", "acked")]
    text = "\n".join(t for t, _ in summary_lines(s, T0 + 3600))
    assert "b1 c0007 18.5µs (was 41.0µs)" in text
    assert "b2 c0008 19.0µs (was 30.0µs)" in text
    assert "(57m30s ago)" in text  # how long ago the mark was


def test_last_looked_mark_is_per_user_and_survives_rewrites(tmp_path: Path):
    write_last_looked(tmp_path, LastLooked(5, 1.0), "ann")
    write_last_looked(tmp_path, LastLooked(9, 2.0), "bob")
    assert read_last_looked(tmp_path, "ann") == LastLooked(5, 1.0)
    assert read_last_looked(tmp_path, "bob") == LastLooked(9, 2.0)
    assert read_last_looked(tmp_path, "cid") is None


def test_describe_names_the_failure_reason_once():
    e = Event(
        1,
        0.0,
        ev.EVALUATION_FINISHED,
        "b2",
        "c9",
        {"status": "wrong", "reasons": [{"kind": "wrong", "message": "row 3 off"}]},
    )
    assert describe(e) == ("✗ c9 b2 wrong: row 3 off", "bad")


def test_live_source_poll_is_none_until_something_changes(session: Path):
    src = LiveSource(session)
    try:
        src.load()
        assert src.poll() is None
        with SessionRecord.open(session) as rec:
            rec.append(ev.NOTE, {"text": "hello"}, t=T0 + 3601)
        snap = src.poll()
        assert snap is not None and not snap.reset
        assert [e.payload.get("text") for e in snap.events] == ["hello"]
        assert src.poll() is None
    finally:
        src.close()


def test_replay_source_steps_back_to_the_previous_event(session: Path):
    src = ReplaySource(session)
    try:
        end = src.to_end()
        back = src.step_back()
        assert back is not None and back.reset
        assert back.last_event_id == end.last_event_id - 1
        forward = src.step()
        assert forward is not None and [e.id for e in forward.events] == [end.last_event_id]
    finally:
        src.close()


def test_keymap_file_maps_binding_ids_to_keys(tmp_path: Path):
    path = tmp_path / "keys.toml"
    path.write_text('[keys]\n"cockpit.toggle_branch" = "p"\n')
    assert load_keymap(path) == {"cockpit.toggle_branch": "p"}


def test_the_cockpit_imports_neither_engine_nor_agents_nor_litellm():
    code = (
        "import sys, cockpit.tui, cockpit.cli.tui, cockpit.tui.screens.main\n"
        "bad = [m for m in sys.modules if m.split('.')[0] == 'litellm' or "
        "m.startswith(('cockpit.engine', 'cockpit.agents', 'cockpit.harness', 'torch'))]\n"
        "print(bad)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_describe_shows_llm_caps_of_a_budget_change():
    def line(payload: dict) -> str:
        return describe(Event(3, T0, ev.BUDGET_CHANGED, None, None, payload))[0]

    assert line({"budget": 40, "previous": None}) == "budget 40 evaluations"
    assert (
        line({"budget": 40, "previous": 40, "usd": 5.0, "tokens": 200000})
        == "budget 40 evaluations, LLM cap $5.00 / 200,000 tokens"
    )
    assert line({"budget": 40, "usd": None, "tokens": None}).endswith("LLM cap none / none")


def test_describe_says_which_gpu_an_evaluation_runs_on():
    started = {"worker": 1, "device": "cuda", "gpu": "3"}
    e = Event(1, 0.0, ev.EVALUATION_STARTED, "b2", "c9", started)
    assert describe(e) == ("c9 b2 evaluating on GPU 3", "muted")
    cpu = Event(2, 0.0, ev.EVALUATION_STARTED, "b2", "c9", {"worker": 0, "device": "cpu"})
    assert describe(cpu) == ("c9 b2 evaluating", "muted")
