"""Proposals run off the engine's loop: a command posted while a model call is in flight is
applied and acknowledged at once, an interrupt (pause, redirect, stop) cancels the call, and the
reply that comes back afterwards is discarded, its cost still recorded. The provider is the real
HTTP server on 127.0.0.1, scripted to answer slowly; evaluations are canned (CannedPool)."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
from agents_helpers import reply_with
from fake_provider import Reply
from test_engine_loop import CHILDREN, TOYTASK, CannedPool

from cockpit.agents.llm import LLMProposer
from cockpit.agents.profiles import parse_profile
from cockpit.engine.config import EngineConfig
from cockpit.engine.engine import Engine
from cockpit.store import SessionRecord, create_session
from cockpit.store import events as ev

SLOW = 4.0  # seconds the first reply takes (the client's timeout is longer: it is not a timeout)
OUTCOMES = (ev.CANDIDATE_PROPOSED, ev.PROPOSAL_FAILED, ev.PROPOSAL_CANCELLED)


def wait_for(predicate, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(0.02)


def events(folder: Path, *kinds: str) -> list:
    with SessionRecord.open_readonly(folder) as rec:
        return rec.events(kinds=list(kinds) or None)


def post(folder: Path, kind: str, **args) -> int:
    with SessionRecord.open(folder) as rec:  # another connection, as `cockpit send` would be
        return rec.post_command(kind, args, source="test")


def ack_of(folder: Path, command_id: int):
    return next(
        (e for e in events(folder, ev.COMMAND_ACKED) if e.payload["command_id"] == command_id), None
    )


def assert_one_outcome_per_request(folder: Path) -> None:
    requests = [e.id for e in events(folder, ev.PROPOSAL_REQUESTED)]
    outcomes = [
        e.payload.get("request") for e in events(folder, *OUTCOMES) if e.payload.get("request")
    ]
    assert requests and all(outcomes.count(r) == 1 for r in requests), (requests, outcomes)
    assert set(outcomes) <= set(requests)


@pytest.fixture
def engine_on(provider, keys, write_profile, tmp_path):
    """An engine (beam of 1, canned evaluations) running on a thread; returns (engine, folder, result)."""
    started: list[tuple[Engine, threading.Thread]] = []

    def start(budget: int, stream: bool):
        cfg = EngineConfig(
            task=str(TOYTASK),
            device="cpu",
            beam=1,
            budget=budget,
            mode="quick",
            agent="test",
            plateau_window=10,
        )
        folder = create_session(
            task="toyscale", device="cpu", sessions_dir=tmp_path / "sessions", config=cfg.to_dict()
        )
        profile = parse_profile(
            write_profile(
                proposer="llm",
                model="openai/gpt-4o-mini",
                api_base=provider.openai_base,
                retries=0,
                timeout_s=30,
                stream=stream,
            )
        )
        engine = Engine(folder, cfg, LLMProposer(profile), pool=CannedPool())
        result: list[str] = []
        thread = threading.Thread(target=lambda: result.append(engine.run()), daemon=True)
        thread.start()
        started.append((engine, thread))
        return engine, folder, result, thread

    yield start
    for engine, thread in started:
        if thread.is_alive():
            engine.stopping = True
            thread.join(30)


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
def test_pause_while_a_call_is_in_flight_is_acked_at_once_and_the_late_reply_is_discarded(
    provider, engine_on, stream
):
    provider.push(Reply(reply_with(CHILDREN[0]), delay_s=SLOW), reply_with(CHILDREN[1]))
    engine, folder, result, thread = engine_on(budget=2, stream=stream)
    wait_for(lambda: provider.received, 30, "the first model call")
    cid = post(folder, "pause", branch="b1")
    ack = wait_for(lambda: ack_of(folder, cid), 10, "the pause to be acknowledged")
    call = provider.received[0]
    assert ack.payload["ok"] and "proposal in flight was cancelled" in ack.payload["message"]
    assert (
        ack.t < call.t + SLOW - 1.0
    )  # acknowledged while the provider was still sitting on the reply
    cancelled = events(folder, ev.PROPOSAL_CANCELLED)
    assert [e.payload["reason"] for e in cancelled] == ["branch paused by command"]
    assert cancelled[0].id < ack.id  # in the command's transaction

    discarded = wait_for(
        lambda: events(folder, ev.PROPOSAL_DISCARDED), SLOW + 10, "the late reply"
    )[0]
    assert discarded.t >= call.t + SLOW - 0.1
    assert discarded.payload["request"] == cancelled[0].payload["request"]
    assert discarded.payload["usage"]["calls"] == 1  # what it cost is kept (ledger, resume)
    sources = [e.payload["source"] for e in events(folder, ev.CANDIDATE_PROPOSED)]
    assert CHILDREN[0] not in sources  # the reply was not used
    assert len(provider.received) == 1  # and nothing was asked while the branch was paused

    post(folder, "resume", branch="b1")
    thread.join(30)
    assert result == ["done"]
    sources = [e.payload["source"] for e in events(folder, ev.CANDIDATE_PROPOSED)]
    assert sources[1:] == [CHILDREN[1]]
    assert engine.ledger.summary()["total"]["calls"] == 2
    assert_one_outcome_per_request(folder)


def test_redirect_while_a_call_is_in_flight_asks_again_with_the_instruction(provider, engine_on):
    provider.push(Reply(reply_with(CHILDREN[0]), delay_s=SLOW), reply_with(CHILDREN[1]))
    engine, folder, result, thread = engine_on(budget=2, stream=False)
    wait_for(lambda: provider.received, 30, "the first model call")
    cid = post(
        folder, "redirect", branch="b1", mode="queue", instruction="use torch.addcmul this time"
    )
    ack = wait_for(lambda: ack_of(folder, cid), 10, "the redirect to be acknowledged")
    assert ack.payload["message"].endswith("the proposal in flight was cancelled")
    thread.join(30)
    assert result == ["done"]
    assert ack.t < provider.received[0].t + SLOW - 1.0
    second = provider.received[1]
    assert second.t < provider.received[0].t + SLOW  # asked again at once, not after the slow reply
    assert (
        "use torch.addcmul this time" in second.text()
        and "use torch.addcmul" not in provider.received[0].text()
    )
    requested = events(folder, ev.PROPOSAL_REQUESTED)
    assert requested[-1].payload["instructions"] == ["use torch.addcmul this time"]
    assert [e.payload["source"] for e in events(folder, ev.CANDIDATE_PROPOSED)][1:] == [CHILDREN[1]]
    assert_one_outcome_per_request(folder)


def test_stop_while_a_call_is_in_flight_does_not_wait_for_the_reply(provider, engine_on):
    provider.push(Reply(reply_with(CHILDREN[0]), delay_s=SLOW))
    engine, folder, result, thread = engine_on(budget=3, stream=True)
    wait_for(lambda: provider.received, 30, "the first model call")
    post(folder, "stop")
    thread.join(SLOW - 1.0)
    assert result == ["stopped"]
    assert [e.payload["reason"] for e in events(folder, ev.PROPOSAL_CANCELLED)] == [
        "the session is stopping"
    ]
    assert_one_outcome_per_request(folder)
