"""One definition of "best" (cockpit/store/figures.py): a CPU session with a comparable torch
baseline and Triton-interpreter times that are not comparable. `cockpit ls`, `cockpit status`,
the cockpit's header, beam and event log, and the report name the same best, and label it
`n/c`; the baseline's microseconds are never ranked against the interpreter's milliseconds."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from session_builder import NOW, SEED, Builder, result
from tui_helpers import live_app, settle

from cockpit.report.data import load_report
from cockpit.store import SessionRecord, figures
from cockpit.store import events as ev
from cockpit.tui.widgets.beam_panel import BeamPanel
from cockpit.tui.widgets.event_log import EventLog

WIDE = (160, 48)
FAST_TRITON_US, SLOW_TRITON_US = 12_400.0, 15_000.0


def _cpu_session(folder: Path, rerun_us: float | None = None) -> Path:
    """b1: the task's torch seed (comparable, 9.55 us, exempt as the baseline); b2: two
    Triton candidates timed by the interpreter (not comparable, 12.4 and 15 ms); with
    `rerun_us`, a third on b2 (c0004) that passed at that time without becoming b2's best."""
    b = Builder(folder, NOW - 1800)
    b.append(
        ev.SESSION_CREATED,
        {"name": folder.name, "task": "softmax", "device": "cpu", "budget": 10},
        dt=0,
    )
    b.append(ev.SESSION_STATE, {"state": "running"}, dt=1)
    b.append(ev.BRANCH_CREATED, {"family": "baseline", "model": None}, branch="b1", dt=1)
    b.append(ev.BRANCH_CREATED, {"family": "triton-rowwise", "model": None}, branch="b2", dt=1)

    def finished(cid: str, branch: str, family: str, score: float, comparable: bool, dt: float):
        b.append(ev.CANDIDATE_PROPOSED, {"family": family, "source": SEED}, branch, cid, dt)
        payload = dict(result("ok", score), comparable=comparable)
        payload["baseline_exempt"] = family == "baseline"
        b.append(ev.EVALUATION_FINISHED, payload, branch, cid, dt + 10)
        b.append(
            ev.BEST_CHANGED,
            {"candidate": cid, "score_us": score, "comparable": comparable},
            branch,
            cid,
            dt + 11,
        )

    finished("c0001", "b1", "baseline", 9.55, True, 10)
    finished("c0002", "b2", "triton-rowwise", SLOW_TRITON_US, False, 100)
    finished("c0003", "b2", "triton-rowwise", FAST_TRITON_US, False, 200)
    if rerun_us is not None:
        b.append(
            ev.CANDIDATE_PROPOSED, {"family": "triton-rowwise", "source": SEED}, "b2", "c0004", 300
        )
        payload = dict(result("ok", rerun_us), comparable=False, baseline_exempt=False)
        b.append(ev.EVALUATION_FINISHED, payload, "b2", "c0004", 310)
    b.close()
    return folder


def _cli(*args: str) -> str:
    out = subprocess.run(
        [sys.executable, "-c", "import sys; from cockpit.cli import main; sys.exit(main())", *args],
        capture_output=True,
        text=True,
        check=True,
        env={"COLUMNS": "200", "PATH": "/usr/bin:/bin"},
    )
    return out.stdout


def test_the_best_is_ranked_within_comparable_times_else_labelled_not_comparable(tmp_path):
    folder = _cpu_session(tmp_path / "sessions" / "cpu")
    with SessionRecord.open_readonly(folder) as rec:
        cands = rec.candidates()
    best = figures.best(cands)
    # the baseline is the reference, not a best; the Triton times are all the interpreter's
    assert best is not None and best.id == "c0003" and figures.tag(best) == "n/c"

    ls = json.loads(_cli("ls", "--sessions-dir", str(folder.parent), "--json"))
    assert [(s["best_us"], s["best_label"]) for s in ls] == [(FAST_TRITON_US, "n/c")]
    ls_text = _cli("ls", "--sessions-dir", str(folder.parent))
    assert "12.4 ms n/c" in ls_text, ls_text

    st = json.loads(_cli("status", str(folder), "--json"))
    assert st["best"]["candidate"] == "c0003" and st["best"]["comparable"] is False
    assert st["best"]["label"] == "n/c"
    labels = {b["id"]: b["best_label"] for b in st["branches"]}
    assert labels == {"b1": "", "b2": "n/c"}
    status_text = _cli("status", str(folder))
    assert "best 12.4 ms n/c (c0003)" in status_text, status_text

    report = load_report(folder)
    assert report.best is not None and report.best.id == "c0003"


def test_the_session_best_is_a_branch_best_not_a_rerun_inside_the_improvement_margin(tmp_path):
    """c0004 measures 1.6 % under b2's best c0003: inside the loop's improvement rule (3 %), so
    c0003 stays b2's best, and every view names c0003 as the session's best too."""
    folder = _cpu_session(tmp_path / "sessions" / "cpu", rerun_us=12_200.0)
    with SessionRecord.open_readonly(folder) as rec:
        cands, branches = rec.candidates(), rec.branches()
    assert {x.id: x.best_candidate for x in branches}["b2"] == "c0003"
    assert figures.best(cands).id == "c0004"  # the lowest time, with no branch to ask
    assert figures.best(cands, branches).id == "c0003"
    st = json.loads(_cli("status", str(folder), "--json"))
    assert st["best"]["candidate"] == "c0003"
    ls = json.loads(_cli("ls", "--sessions-dir", str(folder.parent), "--json"))
    assert [s["best_us"] for s in ls] == [FAST_TRITON_US]
    report = load_report(folder)
    assert report.best is not None and report.best.id == "c0003"


async def test_the_header_names_the_branch_best_not_a_rerun_inside_the_margin(tmp_path):
    folder = _cpu_session(tmp_path / "sessions" / "cpu", rerun_us=12_200.0)
    app = live_app(folder)
    async with app.run_test(size=WIDE) as pilot:
        await settle(pilot)
        bar = str(app.screen.query_one("#bar").render())
        assert "best 12.4ms c0003 n/c" in bar.replace(" ms", "ms"), bar


async def test_the_header_beam_and_log_agree_with_status_and_label_the_times(tmp_path):
    folder = _cpu_session(tmp_path / "sessions" / "cpu")
    app = live_app(folder)
    async with app.run_test(size=WIDE) as pilot:
        await settle(pilot)
        bar = str(app.screen.query_one("#bar").render())
        assert "best 12.4ms c0003 n/c" in bar.replace(" ms", "ms"), bar
        ol = app.screen.query_one(BeamPanel).option_list
        rows = [ol.get_option_at_index(i).prompt.plain for i in range(ol.option_count)]
        triton = [r for r in rows if "c000" in r and ("c0002" in r or "c0003" in r)]
        assert triton and all(r.rstrip().endswith("n/c") for r in triton), rows
        (base,) = [r for r in rows if r.lstrip().startswith("c0001")]
        assert "n/c" not in base, base
        log = "\n".join(line.text for line in app.screen.query_one(EventLog).lines)
        assert "new best c0003 12.4ms n/c" in log.replace(" ms", "ms"), log


def _plot_lines(app) -> list[str]:
    from cockpit.tui.widgets.history_plot import HistoryPlot

    return str(app.screen.query_one(HistoryPlot).render()).splitlines()


async def test_the_plot_draws_no_baseline_series_and_names_a_not_comparable_reference(tmp_path):
    """CPU: the baseline's 9.55 us is no series squashing the interpreter's milliseconds
    against the top; the legend names it as a reference that is not comparable."""
    folder = _cpu_session(tmp_path / "sessions" / "cpu")
    app = live_app(folder)
    async with app.run_test(size=WIDE) as pilot:
        await settle(pilot)
        lines = _plot_lines(app)
        legend = lines[0]
        assert legend.startswith("n/c:") and "b2 12.4ms" in legend.replace(" ms", "ms")
        assert "b1" not in legend and "ref 9.55µs n/c" in legend, legend
        # the axis spans the Triton times only
        assert lines[1].strip().endswith("ms") or "ms" in lines[1], lines[1]
        assert not any("µs" in ln for ln in lines[1:-2]), lines


async def test_a_comparable_baseline_is_a_dotted_reference_line(tmp_path):
    """GPU-like: every time comparable; the baseline is a line across the plot, in the legend
    as `┄ ref`, and no series of its own."""
    folder = tmp_path / "sessions" / "gpu"
    b = Builder(folder, NOW - 1800)
    b.append(ev.SESSION_CREATED, {"name": "gpu", "task": "softmax", "device": "cuda"}, dt=0)
    b.append(ev.SESSION_STATE, {"state": "running"}, dt=1)
    b.append(ev.BRANCH_CREATED, {"family": "baseline", "model": None}, branch="b1", dt=1)
    b.append(ev.BRANCH_CREATED, {"family": "triton-rowwise", "model": None}, branch="b2", dt=1)
    for cid, branch, family, score, dt in (
        ("c0001", "b1", "baseline", 40.0, 10),
        ("c0002", "b2", "triton-rowwise", 30.0, 100),
    ):
        b.append(ev.CANDIDATE_PROPOSED, {"family": family, "source": SEED}, branch, cid, dt)
        b.append(ev.EVALUATION_FINISHED, result("ok", score), branch, cid, dt + 10)
        b.append(ev.BEST_CHANGED, {"candidate": cid, "score_us": score}, branch, cid, dt + 11)
    b.close()
    app = live_app(folder)
    async with app.run_test(size=WIDE) as pilot:
        await settle(pilot)
        from cockpit.tui.widgets.history_plot import HistoryPlot

        d = app.screen.query_one(HistoryPlot).data
        assert d.branch_ids == ("b2",) and d.reference_us == 40.0 and d.reference_drawn
        legend = _plot_lines(app)[0]
        assert "┄ ref 40.0µs" in legend and "b1" not in legend and "n/c" not in legend, legend


async def test_a_dialog_defers_drawing_beneath_it_and_nothing_is_lost(tmp_path):
    """While a dialog covers the main screen, snapshots are applied to the model but the
    panels under it are not redrawn (each redraw under a translucent backdrop repaints the
    whole terminal); closing the dialog draws what arrived, every event in the log."""
    from cockpit.tui.screens.help import HelpScreen

    folder = _cpu_session(tmp_path / "sessions" / "cpu")
    app = live_app(folder)
    async with app.run_test(size=WIDE) as pilot:
        await settle(pilot)
        main = app.screen
        beam = main.query_one(BeamPanel).option_list
        await pilot.press("question_mark")
        await settle(pilot)
        assert isinstance(app.screen, HelpScreen)
        with SessionRecord.open(folder) as rec:  # the engine's side
            rec.append(ev.CANDIDATE_PROPOSED, {"family": "triton-rowwise"}, "b2", "c0004")
            rec.append(
                ev.EVALUATION_FINISHED,
                dict(result("ok", 11_000.0), comparable=False),
                "b2",
                "c0004",
            )
        main.action_refresh()
        await settle(pilot)
        assert main.model.candidate("c0004") is not None  # applied ...
        rows = [beam.get_option_at_index(i).prompt.plain for i in range(beam.option_count)]
        assert not any("c0004" in r for r in rows)  # ... not drawn under the dialog
        await pilot.press("escape")
        await settle(pilot)
        rows = [beam.get_option_at_index(i).prompt.plain for i in range(beam.option_count)]
        assert any("c0004" in r for r in rows), rows
        log = "\n".join(line.text for line in main.query_one(EventLog).lines)
        assert "c0004 b2 ok 11.0ms n/c" in log.replace(" ms", "ms"), log


async def test_an_open_dialog_over_an_unchanging_session_writes_nothing(tmp_path):
    """With the help open and nothing new, the terminal gets no frames: the screen beneath
    does not repaint itself over and over through the dialog."""
    import asyncio

    from cockpit.tui import CockpitApp, LiveSource

    folder = _cpu_session(tmp_path / "sessions" / "cpu")
    live_app(folder)  # the engine's lock held
    # polled every second, as attached: a poll that finds nothing new must draw nothing
    app = CockpitApp(LiveSource(folder), now=lambda: NOW, poll_interval=1.0, user="tester")
    async with app.run_test(size=WIDE) as pilot:
        await settle(pilot)
        await pilot.press("escape")  # the since-last-looked summary
        await settle(pilot)
        await pilot.press("question_mark")
        await settle(pilot)
        await asyncio.sleep(0.5)  # the dialog's own first frames
        frames = []
        display = app._display
        app._display = lambda screen, update: (frames.append(update), display(screen, update))
        await asyncio.sleep(1.5)
        app._display = display
        assert frames == [], f"{len(frames)} frames in 1.5 s with nothing changing"
