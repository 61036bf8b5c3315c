"""The sessions shipped under sessions/examples/ replay in the real cockpit (Pilot), on a laptop
without a GPU: the recorded H200 QR session (five evaluations, stopped by `--max-time`) shows its
beam and its bests."""

from pathlib import Path

from tui_helpers import replay_app, settle

EXAMPLES = Path(__file__).resolve().parents[2] / "sessions" / "examples"
SIZE = (160, 48)


async def test_the_h200_qr_session_replays_to_its_recorded_best():
    # in place, as `cockpit replay sessions/examples/...` does: the record ships in rollback
    # (not WAL) mode, so reading it read-only writes nothing beside it into the repository
    folder = EXAMPLES / "qr-h200-2026-11-30g"
    app = replay_app(folder)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        player = app.source.player
        await pilot.press("G")  # to the end of the record
        await settle(pilot)
        assert player.progress()[0] == player.progress()[1] > 0
        model = app.screen.model
        assert {b.id: b.family for b in model.branches} == {
            "b1": "fused-small-n",
            "b2": "triton-panel-wy",
            "b3": "fused-small-n",
        }
        b1, b2, b3 = model.branch("b1"), model.branch("b2"), model.branch("b3")
        assert b1.best_candidate == "c0002" and 1100 < b1.best_us < 1160  # 1.13 ms on the H200
        assert b2.best_candidate == "c0001" and 1750 < b2.best_us < 1850  # 1.80 ms
        assert b3.best_candidate == "c0003" and 1150 < b3.best_us < 1210  # 1.18 ms
        await pilot.press("g", "space")  # play it from the start, as a viewer would
        await pilot.pause(0.5)
        await settle(pilot)
        # every step ran on some worker thread: none may fail (a toast would say so)
        assert [n.message for n in app._notifications if n.severity == "error"] == []
    assert sorted(p.name for p in folder.iterdir()) == ["session.db"]  # no -wal/-shm left
