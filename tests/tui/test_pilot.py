"""The cockpit driven by Pilot on a recorded session: what each key puts in the command queue,
the dialogs on the way, acknowledgements, the summary on attach, replay stepping."""

from __future__ import annotations

import json
from pathlib import Path

from session_builder import NOW
from textual.widgets import Input, Static, TextArea
from tui_helpers import live_app, replay_app, settle

from cockpit.store import SessionRecord
from cockpit.store import events as ev
from cockpit.store.models import TelemetrySample
from cockpit.tui.screens.confirm import ConfirmDialog
from cockpit.tui.screens.detail import DetailScreen
from cockpit.tui.screens.fork import ForkDialog
from cockpit.tui.screens.help import HelpScreen
from cockpit.tui.screens.main import MainScreen
from cockpit.tui.screens.redirect import RedirectDialog
from cockpit.tui.screens.retire import RetireDialog
from cockpit.tui.screens.set_model import ModelDialog
from cockpit.tui.screens.since_last import SinceLastLookedScreen
from cockpit.tui.summary import LAST_LOOKED_FILE
from cockpit.tui.widgets.beam_panel import BeamPanel
from cockpit.tui.widgets.event_log import EventLog
from cockpit.tui.widgets.gpu_panel import GpuPanel

SIZE = (100, 30)  # narrow layout: fewer panels to draw, faster tests


def pending(folder: Path) -> list[tuple[str, dict, str]]:
    with SessionRecord.open_readonly(folder) as rec:
        return [(c.kind, c.args, c.source or "") for c in rec.pending_commands()]


async def select(pilot, option_id: str) -> None:
    pilot.app.screen.query_one(BeamPanel).select(option_id)
    await settle(pilot)


def log_text(app) -> str:
    return "\n".join(line.text for line in app.screen.query_one(EventLog).lines)


async def test_space_on_a_branch_posts_pause_for_that_branch(session: Path):
    app = live_app(session)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await select(pilot, "b:b2")
        await pilot.press("space")
        await settle(pilot)
        assert pending(session) == [("pause", {"branch": "b2"}, "tui@tester")]
        assert "sent pause b2" in log_text(app)


async def test_space_on_a_paused_branch_posts_resume(session: Path):
    app = live_app(session)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await select(pilot, "c:c0005")  # a candidate row selects its branch, b3 (paused)
        await pilot.press("space")
        await settle(pilot)
        assert pending(session) == [("resume", {"branch": "b3"}, "tui@tester")]


async def test_shift_p_pauses_the_whole_session(session: Path):
    app = live_app(session)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("P")
        await settle(pilot)
        assert pending(session) == [("pause", {}, "tui@tester")]


async def test_acknowledgement_from_the_engine_is_shown(session: Path):
    app = live_app(session)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await select(pilot, "b:b1")
        await pilot.press("space")
        await settle(pilot)
        assert "⧗ 1 pending" in str(app.screen.query_one("#bar").render())
        with SessionRecord.open(session) as rec:  # the engine's side
            (cmd,) = rec.pending_commands()
            rec.append(ev.BRANCH_STATE, {"state": "paused", "reason": "by command"}, branch="b1")
            rec.ack_command(cmd.id, True, "b1 paused")
        await pilot.press("ctrl+r")
        await settle(pilot)
        toasts = [n.message for n in app._notifications]
        assert any("b1 paused" in t for t in toasts)
        assert "✓ pause: b1 paused" in log_text(app)
        assert "pending" not in str(app.screen.query_one("#bar").render())
        assert app.screen.model.branch("b1").state == "paused"


async def test_fork_dialog_sends_family_and_instruction(session: Path):
    app = live_app(session)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await select(pilot, "c:c0004")
        await pilot.press("f")
        await settle(pilot)
        dialog = app.screen
        assert isinstance(dialog, ForkDialog)
        dialog.query_one("#family", Input).value = "triton-splitk"
        dialog.query_one("#instruction", TextArea).load_text("split the row across programs")
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert isinstance(app.screen, MainScreen)
        assert pending(session) == [
            (
                "fork",
                {
                    "candidate": "c0004",
                    "family": "triton-splitk",
                    "instruction": "split the row across programs",
                },
                "tui@tester",
            )
        ]


async def test_fork_on_a_branch_row_forks_its_best_and_escape_cancels(session: Path):
    app = live_app(session)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await select(pilot, "b:b2")
        await pilot.press("f")
        await settle(pilot)
        assert isinstance(app.screen, ForkDialog) and app.screen.candidate == "c0008"
        await pilot.press("escape")
        await settle(pilot)
        assert pending(session) == []


async def test_redirect_sends_a_multiline_instruction_queued(session: Path):
    app = live_app(session)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await select(pilot, "b:b2")
        await pilot.press("r")
        await settle(pilot)
        assert isinstance(app.screen, RedirectDialog)
        await pilot.press(*"use", "enter", *"tl.reduce")
        app.screen.query_one("#queue").value = True
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert pending(session) == [
            (
                "redirect",
                {"branch": "b2", "instruction": "use\ntl.reduce", "mode": "queue"},
                "tui@tester",
            )
        ]


async def test_retire_asks_first_and_records_the_reason(session: Path):
    app = live_app(session)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await select(pilot, "b:b3")
        await pilot.press("x")
        await settle(pilot)
        assert isinstance(app.screen, RetireDialog)
        await pilot.press("escape")
        await settle(pilot)
        assert pending(session) == []
        await pilot.press("x")
        await settle(pilot)
        await pilot.press(*"dead end", "enter")
        await settle(pilot)
        assert pending(session) == [
            ("retire", {"branch": "b3", "reason": "dead end"}, "tui@tester")
        ]


async def test_set_model_for_all_branches(session: Path):
    app = live_app(session, models=["claude-x"])
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await select(pilot, "b:b1")
        await pilot.press("m")
        await settle(pilot)
        dialog = app.screen
        assert isinstance(dialog, ModelDialog)
        assert dialog.models == ["claude-x", "gpt-5"]
        dialog.query_one("#model", Input).value = "claude-x"
        dialog.query_one("#all").value = True
        await pilot.click("#ok")
        await settle(pilot)
        assert pending(session) == [("set_model", {"model": "claude-x"}, "tui@tester")]


async def test_stop_engine_is_a_confirmed_palette_command(session: Path):
    app = live_app(session)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert not any(b.action == "stop_engine" for b in MainScreen.BINDINGS)
        await pilot.press("ctrl+p")
        await pilot.pause()
        await pilot.press(*"stop the engine")
        await pilot.pause(0.3)
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, ConfirmDialog)
        await pilot.press("y")
        await settle(pilot)
        assert pending(session) == [("stop", {}, "tui@tester")]


async def test_keymap_remaps_a_binding_by_id(session: Path):
    app = live_app(session, keymap={"cockpit.toggle_branch": "p"})
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await select(pilot, "b:b1")
        await pilot.press("space")
        await settle(pilot)
        assert pending(session) == []
        await pilot.press("p")
        await settle(pilot)
        assert pending(session) == [("pause", {"branch": "b1"}, "tui@tester")]


async def test_help_lists_keys_with_their_binding_ids(session: Path):
    app = live_app(session)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("question_mark")
        await settle(pilot)
        assert isinstance(app.screen, HelpScreen)
        ids = {row[2] for row in app.screen.rows}
        assert {"cockpit.toggle_branch", "cockpit.fork", "cockpit.detach"} <= ids
        assert "replay.play" not in ids  # replay keys only in replay


async def test_enter_and_d_open_code_and_diff(session: Path):
    app = live_app(session)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await select(pilot, "c:c0004")
        await pilot.press("d")
        await settle(pilot)
        assert isinstance(app.screen, DetailScreen)
        diff = app.screen.detail.diff
        assert "-BLOCK = 512" in diff and "+BLOCK = 1024" in diff
        assert app.screen.detail.result["status"] == "ok"
        await pilot.press("escape")
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, DetailScreen)


async def test_new_events_are_picked_up_and_a_new_best_is_announced(session: Path):
    app = live_app(session)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        with SessionRecord.open(session) as rec:
            rec.append(
                ev.CANDIDATE_PROPOSED,
                {"parent": "c0008", "family": "triton-rowwise", "source": "x = 1\n"},
                "b2",
                "c0009",
                t=NOW,
            )
            rec.append(
                ev.EVALUATION_FINISHED, {"status": "ok", "score_us": 12.0}, "b2", "c0009", t=NOW
            )
            rec.append(
                ev.BEST_CHANGED, {"candidate": "c0009", "score_us": 12.0}, "b2", "c0009", t=NOW
            )
        await pilot.press("ctrl+r")
        await settle(pilot)
        beam = app.screen.query_one(BeamPanel).option_list
        assert beam.get_option("c:c0009") is not None
        assert any("new best on b2" in n.message for n in app._notifications)


async def test_summary_on_attach_then_the_mark_moves(session: Path):
    with SessionRecord.open_readonly(session) as rec:
        mark = next(e for e in rec.events(kinds=[ev.BEST_CHANGED]) if e.candidate == "c0003")
        last = rec.last_event_id()
    (session / LAST_LOOKED_FILE).write_text(
        json.dumps({"tester": {"event_id": mark.id, "t": mark.t}})
    )
    app = live_app(session, show_summary=True)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert isinstance(app.screen, SinceLastLookedScreen)
        text = "\n".join(t for t, _ in app.screen.lines)
        assert "3 new bests" in text and "1 timeout" in text and "pause b3 by cli" in text
        assert "$ 0.25 spent on model calls" in text  # five proposals at $0.05 since the mark
        await pilot.press("escape")
        await settle(pilot)
        assert isinstance(app.screen, MainScreen)
    saved = json.loads((session / LAST_LOOKED_FILE).read_text())["tester"]
    assert saved == {"event_id": last, "t": NOW}


async def test_q_detaches_and_remembers_what_was_seen(session: Path):
    app = live_app(session)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("q")
        await pilot.pause()
    assert app.return_code == 0
    assert (session / LAST_LOOKED_FILE).exists()
    assert pending(session) == []  # detaching sends nothing to the engine


async def test_no_gpu_is_said_when_telemetry_has_no_device(template_no_gpu: Path):
    app = live_app(template_no_gpu)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        gpu = app.screen.query_one(GpuPanel)
        assert gpu.border_title == "no GPU" and gpu.has_class("-no-gpu")


async def test_the_gpu_panel_adds_one_line_per_ray_node(session: Path):
    """Telemetry from the nodes of a Ray run: one line each under the host's meters, a node
    without a GPU saying so."""
    with SessionRecord.open(session) as rec:
        (t,) = rec.execute("SELECT max(t) FROM telemetry")[0]
        rec.add_telemetry(
            [
                TelemetrySample(
                    t, 0, 88.0, 70_000, 143_771, 640.0, 71.0, 1980.0, 9.0, 30.0, "gpu-a 1a2b3c4d"
                ),
                TelemetrySample(t, None, cpu_pct=40.0, ram_pct=22.0, node="cpu-b 9f8e7d6c"),
            ]
        )
    app = live_app(session)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        gpu = app.screen.query_one(GpuPanel)
        assert not gpu.has_class("-no-nodes") and gpu.border_title == "GPU 0"
        text = str(gpu.query_one("#gpu-nodes", Static).render())
        assert text.splitlines() == [
            "cpu-b 9f8e7d6c: no GPU · cpu 40% ram 22%",
            "gpu-a 1a2b3c4d: GPU 0 88% 68G 640W 71°C",
        ]


async def test_replay_steps_seeks_and_changes_speed_without_steering(session: Path):
    app = replay_app(session)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        player = app.source.player
        total = player.progress()[1]
        assert player.progress()[0] == 0
        await pilot.press("G")
        await settle(pilot)
        assert player.progress()[0] == total
        assert {b.id: b.state for b in app.screen.model.branches} == {
            "b1": "running",
            "b2": "running",
            "b3": "paused",
        }
        await pilot.press("left_square_bracket", "left_square_bracket")
        await settle(pilot)
        assert player.progress()[0] == total - 2
        await pilot.press("right_square_bracket")
        await settle(pilot)
        assert player.progress()[0] == total - 1
        await pilot.press("g")
        await settle(pilot)
        assert player.progress()[0] == 0 and app.screen.model.branches == ()
        await pilot.press("n")  # next best: b1's first
        await settle(pilot)
        assert app.screen.model.branch("b1").best_candidate == "c0001"
        assert (
            app.screen.model.branch("b2") is not None
            and app.screen.model.branch("b2").best_us is None
        )
        speed = player.speed
        await pilot.press("greater_than_sign")
        assert player.speed > speed
        await pilot.press("less_than_sign", "less_than_sign")
        assert player.speed < speed
        await pilot.press("space")
        assert player.playing
        await pilot.press("f", "x")
        await settle(pilot)
        assert isinstance(app.screen, MainScreen)
    assert pending(session) == []
