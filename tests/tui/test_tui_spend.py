"""Model spend and LLM state in the cockpit, on a recorded LLM session written through the
store API: per-branch cost and tokens (failed proposals included), a proposal in flight, a
branch paused by a provider outage, totals in the header and in "since you last looked".
Newer event kinds (a cancelled proposal) and missing or malformed fields must not break it."""

from __future__ import annotations

import json
from pathlib import Path

from session_builder import NOW, T0
from tui_helpers import live_app, settle

from cockpit.store import SessionRecord
from cockpit.store import events as ev
from cockpit.store.models import dumps
from cockpit.tui.screens.since_last import SinceLastLookedScreen
from cockpit.tui.spend import Spend, spend_between
from cockpit.tui.summary import LAST_LOOKED_FILE
from cockpit.tui.widgets.beam_panel import BeamPanel

SIZE = (100, 30)
OUTAGE = "provider error (gpt-5; 4 attempts): 503 (retrying in 120 s, or resume it now)"
SOURCE = "import torch\n\ndef kernel(x):\n    return torch.softmax(x, -1)\n"


def _append(rec: SessionRecord, kind, payload, branch=None, candidate=None, *, t: float) -> None:
    """Through the store API; a kind this store does not know yet (written by a newer engine)
    goes in as a raw row, as that engine would have written it."""
    if kind in ev.KINDS:
        rec.append(kind, payload, branch=branch, candidate=candidate, t=t)
        return
    with rec.transaction():
        rec.execute(
            "INSERT INTO events(t, kind, branch, candidate, payload) VALUES (?, ?, ?, ?, ?)",
            (t, kind, branch, candidate, dumps(payload)),
        )


def build_llm_session(folder: Path) -> int:
    """Returns the id of the event the user last looked at (after b1's first proposal)."""
    with SessionRecord.open(folder, create=True) as rec:
        t = T0
        _append(
            rec,
            ev.SESSION_CREATED,
            {"name": folder.name, "task": "softmax", "device": "cuda", "created": t},
            t=t,
        )
        _append(rec, ev.SESSION_STARTED, {"pid": 1, "host": "h", "resumed": False}, t=t)
        _append(rec, ev.BUDGET_CHANGED, {"budget": 40}, t=t)
        for bid, model in (("b1", "claude-x"), ("b2", "gpt-5"), ("b3", "gpt-5")):
            _append(rec, ev.BRANCH_CREATED, {"family": "triton", "model": model}, bid, t=t)
        _append(rec, ev.PROPOSAL_REQUESTED, {"parent": None, "model": "claude-x"}, "b1", t=t + 1)
        usage = {"cost_usd": 0.12, "tokens": 3000, "calls": 1, "model": "claude-x"}
        _append(
            rec,
            ev.CANDIDATE_PROPOSED,
            {
                "parent": None,
                "family": "triton",
                "model": "claude-x",
                "source_hash": "h1",
                "source": SOURCE,
                "usage": usage,
            },
            "b1",
            "c0001",
            t=t + 20,
        )
        seen = rec.last_event_id()
        _append(
            rec, ev.EVALUATION_FINISHED, {"status": "ok", "score_us": 20.0}, "b1", "c0001", t=t + 40
        )
        _append(
            rec, ev.BEST_CHANGED, {"candidate": "c0001", "score_us": 20.0}, "b1", "c0001", t=t + 40
        )
        # b2's provider is down: the proposal fails with provider errors, the engine pauses b2
        _append(rec, ev.PROPOSAL_REQUESTED, {"parent": None, "model": "gpt-5"}, "b2", t=t + 50)
        _append(
            rec,
            ev.PROPOSAL_FAILED,
            {
                "reason": "provider error",
                "model": "gpt-5",
                "usage": {"cost_usd": 0, "tokens": 0, "calls": 0, "provider_errors": ["503"]},
            },
            "b2",
            t=t + 80,
        )
        _append(rec, ev.BRANCH_STATE, {"state": "paused", "reason": OUTAGE}, "b2", t=t + 80)
        # b1: an unusable reply (it cost tokens), then a proposal cancelled by a newer engine
        _append(rec, ev.PROPOSAL_REQUESTED, {"parent": "c0001"}, "b1", t=t + 90)
        _append(
            rec,
            ev.PROPOSAL_FAILED,
            {
                "reason": "no usable code",
                "usage": {
                    "cost_usd": 0.03,
                    "prompt_tokens": 600,
                    "completion_tokens": 200,
                    "calls": 2,
                },
            },
            "b1",
            t=t + 120,
        )
        _append(rec, ev.PROPOSAL_REQUESTED, {"parent": "c0001"}, "b1", t=t + 130)
        _append(
            rec,
            "proposal_cancelled",
            {
                "reason": "branch paused by command",
                "usage": {"cost_usd": 0.01, "tokens": 100, "calls": 1},
            },
            "b1",
            t=t + 131,
        )
        _append(rec, "some_future_kind", {"whatever": [1, 2]}, "b1", t=t + 132)
        _append(rec, ev.PROPOSAL_FAILED, {"reason": "odd", "usage": "not a dict"}, "b1", t=t + 133)
        # b3 is waiting for its model right now
        _append(rec, ev.PROPOSAL_REQUESTED, {"parent": None, "model": "gpt-5"}, "b3", t=t + 140)
    return seen


def _row(app, option_id: str) -> str:
    return str(app.screen.query_one(BeamPanel).option_list.get_option(option_id).prompt)


def test_sql_totals_and_event_folding_agree(tmp_path: Path):
    build_llm_session(tmp_path / "llm")
    with SessionRecord.open_readonly(tmp_path / "llm") as rec:
        sql = spend_between(rec, 0, None)
        folded = Spend().fold(rec.events())
    for spend in (sql, folded):
        assert round(spend.usd, 6) == 0.16 and spend.tokens == 3900 and spend.calls == 4
        assert spend.of("b1").failures == 2 and spend.of("b2").failures == 1
        assert spend.asking == ["b3"]
        assert spend.of("b3").asking_model == "gpt-5"


async def test_costs_outage_and_in_flight_state_in_header_beam_and_summary(tmp_path: Path):
    folder = tmp_path / "llm"
    seen = build_llm_session(folder)
    (folder / LAST_LOOKED_FILE).write_text(json.dumps({"tester": {"event_id": seen, "t": T0}}))
    app = live_app(folder, show_summary=True)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert isinstance(app.screen, SinceLastLookedScreen)
        text = "\n".join(t for t, _ in app.screen.lines)
        # since the mark: the failed and cancelled proposals' spend, not c0001's
        assert "$ 0.040 spent on model calls (900 tokens, 3 calls)" in text
        assert "provider outages paused: b2" in text
        await pilot.press("escape")
        await settle(pilot)
        bar = str(app.screen.query_one("#bar").render())
        assert "$0.16 3.9k tok" in bar
        assert "provider down: b2" in bar and "1 asking" in bar
        assert "$0.16" in _row(app, "b:b1")
        assert "outage" in _row(app, "b:b2")
        assert "ask…" in _row(app, "b:b3")

        with SessionRecord.open(folder) as rec:  # b3's answer arrives
            usage = {"cost_usd": 0.5, "tokens": 10000, "calls": 1}
            rec.append(
                ev.CANDIDATE_PROPOSED,
                {
                    "parent": None,
                    "family": "triton",
                    "model": "gpt-5",
                    "source_hash": "h3",
                    "source": SOURCE,
                    "usage": usage,
                },
                "b3",
                "c0002",
                t=NOW,
            )
        await pilot.press("ctrl+r")
        await settle(pilot)
        assert "$0.50" in _row(app, "b:b3")
        bar = str(app.screen.query_one("#bar").render())
        assert "$0.66 14k tok" in bar and "asking" not in bar


async def test_detail_title_shows_what_the_proposal_cost(tmp_path: Path):
    folder = tmp_path / "llm"
    build_llm_session(folder)
    app = live_app(folder)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        app.screen.query_one(BeamPanel).select("c:c0001")
        await settle(pilot)
        title = str(app.screen.query_one("#detail-title").render())
        assert "claude-x" in title and "$0.12 3.0k tok" in title
