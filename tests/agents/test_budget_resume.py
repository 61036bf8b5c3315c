"""LLM budget caps hold across a resume (the ledger is rebuilt from the calls the record holds)
and `set-budget --tokens/--usd` moves them at run time: a new call goes out while the spend is
under the cap, none once it reaches it. Real provider on 127.0.0.1, canned evaluations."""

from __future__ import annotations

import threading
import time

from agents_helpers import reply_with
from test_engine_loop import TOYTASK, CannedPool

from cockpit.agents.costs import DEFAULT_USD_CAP
from cockpit.agents.llm import LLMProposer
from cockpit.agents.profiles import parse_profile
from cockpit.engine.config import EngineConfig
from cockpit.engine.engine import Engine
from cockpit.store import SessionRecord, create_session
from cockpit.store import events as ev

SOURCES = [
    f"import torch\n\nFAMILY = 'baseline'\n\n\ndef kernel(x: torch.Tensor) -> torch.Tensor:\n    return x * {k} + 1\n"
    for k in range(2, 9)
]


def wait_for(predicate, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while not (value := predicate()):
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(0.02)
    return value


def test_token_cap_holds_across_resume_and_set_budget_moves_it(
    provider, keys, write_profile, tmp_path
):
    provider.push(*[reply_with(s) for s in SOURCES])  # each call: 100 + 50 tokens
    cfg = EngineConfig(
        task=str(TOYTASK),
        device="cpu",
        beam=1,
        budget=20,
        mode="quick",
        agent="test",
        plateau_window=50,
    )
    folder = create_session(
        task="toyscale", device="cpu", sessions_dir=tmp_path / "sessions", config=cfg.to_dict()
    )
    path = write_profile(
        proposer="llm",
        model="openai/gpt-4o-mini",
        api_base=provider.openai_base,
        retries=0,
        stream=False,
        budget_tokens=450,
    )

    def paused_events() -> list:
        with SessionRecord.open_readonly(folder) as rec:
            return [
                e for e in rec.events(kinds=[ev.SESSION_STATE]) if e.payload["state"] == "paused"
            ]

    def post(kind: str, **args) -> None:
        with SessionRecord.open(folder) as rec:
            rec.post_command(kind, args, source="test")

    def start() -> tuple[Engine, threading.Thread, list[str]]:
        engine = Engine(folder, cfg, LLMProposer(parse_profile(path)), pool=CannedPool())
        out: list[str] = []
        thread = threading.Thread(target=lambda: out.append(engine.run()), daemon=True)
        thread.start()
        return engine, thread, out

    # 1. three calls reach the cap exactly; the fourth is not made, the session pauses
    e1, t1, out1 = start()
    wait_for(lambda: paused_events(), 60, "the session to pause at the cap")
    assert len(provider.received) == 3
    assert "450 of 450 tokens" in paused_events()[0].payload["reason"]
    post("stop")
    t1.join(30)
    assert out1 == ["stopped"]

    # 2. resumed: the ledger comes back from the record, so no call goes out at all
    e2, t2, out2 = start()
    wait_for(lambda: len(paused_events()) == 2, 60, "the resumed session to pause at the cap")
    assert len(provider.received) == 3
    assert e2.ledger.summary()["total"]["tokens"] == 450

    # 3. set-budget raises the cap by one call's worth: exactly one more call, then paused again
    post("set_budget", tokens=600, usd=5)
    wait_for(lambda: len(paused_events()) == 3, 60, "the session to pause at the new cap")
    assert len(provider.received) == 4
    with SessionRecord.open_readonly(folder) as rec:
        change = rec.events(kinds=[ev.BUDGET_CHANGED])[-1].payload
        ack = rec.events(kinds=[ev.COMMAND_ACKED])[-1].payload
        assert (rec.meta()["budget_tokens"], rec.meta()["budget_usd"]) == (600, 5.0)
    assert (change["tokens"], change["previous_tokens"], change["usd"], change["previous_usd"]) == (
        600,
        450,
        5.0,
        DEFAULT_USD_CAP,  # the profile sets none: the default for priced models was the cap
    )
    assert change["budget"] == 20
    assert (
        ack["ok"]
        and "session resumed" in ack["message"]
        and "600 tokens (450 used)" in ack["message"]
    )
    post("stop")
    t2.join(30)
    assert out2 == ["stopped"]

    # 4. the raised cap is the session's now: a later engine keeps it, and the spend
    e3 = Engine(folder, cfg, LLMProposer(parse_profile(path)), pool=CannedPool())
    try:
        e3.start()
        assert (e3.ledger.caps.tokens, e3.ledger.caps.usd) == (600, 5.0)
        assert e3.ledger.summary()["total"]["tokens"] == 600
    finally:
        e3.close()
