"""Switching providers under load: a running `cockpit run` whose branch calls a slow
OpenAI-compatible server is switched with `set-model` (what the cockpit's `m` key posts) to an
Anthropic model, served by a second server speaking the Messages protocol (`/v1/messages`),
while a call to the first is in flight.

Both servers are real HTTP servers on 127.0.0.1 (tests/agents/fake_provider.py); the engine is a
real `cockpit run --detach` evaluating the toy task in real workers; the commands are real
`cockpit send` processes. The call in flight finishes and its candidate is evaluated; every
request after the switch goes to the second server; the spend per provider in `cockpit status`
is what litellm prices the usage each server reported at; nothing is lost.
"""

from __future__ import annotations

import os
import time

import fake_provider
import pytest
from agents_helpers import ANTHROPIC_KEY, reply_with
from fake_provider import Reply
from test_spend_control import TOYTASK, _cockpit, _status

from cockpit.store import SessionRecord
from cockpit.store import events as ev

OPENAI_MODEL = "openai/gpt-4o-mini"
ANTHROPIC_MODEL = "anthropic/claude-haiku-4-5"
SLOW_S = 5.0  # the first server's later replies: long enough to switch while one is in flight


def _kernel(k: int) -> str:
    return (
        "import torch\n\nFAMILY = 'baseline'\n\n\ndef kernel(x: torch.Tensor) -> torch.Tensor:\n"
        f"    return x * {k} - x * {k - 2} + 1\n"
    )


def _wait(predicate, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while not (value := predicate()):
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(0.2)
    return value


@pytest.fixture
def second_provider():
    fake = fake_provider.start()
    yield fake
    fake.server.shutdown()
    fake.server.server_close()


def _price(model: str, prompt: int, completion: int) -> float:
    import litellm

    a, b = litellm.cost_per_token(model=model, prompt_tokens=prompt, completion_tokens=completion)
    return a + b


def test_set_model_switches_a_branch_to_another_provider_while_a_call_is_in_flight(
    provider, second_provider, keys, write_profile, tmp_path, monkeypatch
):
    first, second = provider, second_provider  # OpenAI-compatible (slow), Anthropic Messages
    first.push(
        *[
            Reply(text=reply_with(_kernel(k)), delay_s=d, prompt_tokens=2000)
            for k, d in ((3, 0.0), (4, SLOW_S), (5, SLOW_S))
        ]
    )
    second.push(*[Reply(text=reply_with(_kernel(k)), prompt_tokens=3000) for k in range(10, 30)])
    # litellm reaches Anthropic at ANTHROPIC_API_BASE: the second server, for the engine
    monkeypatch.setenv("ANTHROPIC_API_BASE", second.anthropic_base)
    assert os.environ["ANTHROPIC_API_BASE"].startswith("http://127.0.0.1:")
    profile = write_profile(
        name="switch",
        proposer="llm",
        model=OPENAI_MODEL,
        api_base=first.openai_base,
        retries=0,
        timeout_s=30,
        max_tokens=2000,
    )
    budget = 6
    run = _cockpit(
        tmp_path,
        "run",
        str(TOYTASK),
        "--session",
        "sw",
        "--agent",
        str(profile),
        "--budget",
        str(budget),
        "--beam",
        "1",
        "--plateau",
        "50",
        "--device",
        "cpu",
        "--mode",
        "quick",
        "--detach",
    )
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]

    # the second call to the first server is in flight (its first reply came back)
    _wait(lambda: len(first.received) >= 2 and first.answered == 1, 120, "a call in flight")
    sent = _cockpit(
        tmp_path, "send", "sw", "set-model", ANTHROPIC_MODEL, "--branch", "b1", "--wait"
    )
    assert sent.returncode == 0 and sent.stdout.startswith("ok: model "), sent.stdout + sent.stderr
    at_switch = len(first.received)
    assert first.answered < at_switch  # acknowledged while the call was still in flight

    from cockpit.cli.loop import status_dict

    folder = tmp_path / "sessions" / "sw"
    _wait(lambda: status_dict(folder)["state"] not in ("created", "running"), 180, "the end")
    st = _status(tmp_path, "sw")
    assert st["state"] == "done", st

    # every request after the switch went to the second server, in its protocol
    assert len(first.received) == at_switch == 2
    assert first.answered == 2  # the call in flight was answered, not dropped
    assert second.received, "no request reached the second server"
    for r in second.received:
        assert r.path == "/v1/messages", r.path
        assert r.body["model"] == ANTHROPIC_MODEL.split("/", 1)[1]
        assert r.headers.get("x-api-key") == ANTHROPIC_KEY
    assert all(r.path == "/v1/chat/completions" for r in first.received)

    # the spend per provider: each server's calls, priced from the usage it reported
    spend = st["spend"]
    n2 = len(second.received)
    assert spend["providers"]["openai"]["calls"] == 2
    assert spend["providers"]["anthropic"]["calls"] == n2
    assert spend["providers"]["openai"]["usd"] == pytest.approx(2 * _price(OPENAI_MODEL, 2000, 50))
    assert spend["providers"]["anthropic"]["usd"] == pytest.approx(
        n2 * _price(ANTHROPIC_MODEL, 3000, 50)
    )
    assert spend["requests"] == 2 + n2 and spend["unpriced_calls"] == 0
    table = _cockpit(tmp_path, "status", "sw", timeout=60).stdout
    assert "openai $" in table and "anthropic $" in table, table

    # nothing lost: every reply became a candidate of its model, and every candidate was judged
    with SessionRecord.open_readonly(tmp_path / "sessions" / "sw") as rec:
        cands = rec.candidates()
        proposed = rec.events(kinds=[ev.CANDIDATE_PROPOSED])
        failed = rec.events(kinds=[ev.PROPOSAL_FAILED])
        changed = rec.events(kinds=[ev.MODEL_CHANGED])
    by_model = {m: [c for c in cands if c.model == m] for m in (OPENAI_MODEL, ANTHROPIC_MODEL)}
    assert len(by_model[OPENAI_MODEL]) == 2  # the one in flight at the switch included
    assert len(by_model[ANTHROPIC_MODEL]) == n2
    assert not failed
    assert len(proposed) == len(cands)
    assert all(c.status is not None for c in cands), [(c.id, c.status) for c in cands]
    assert st["evaluations"] == budget
    assert [e.payload["model"] for e in changed] == [ANTHROPIC_MODEL]
    (branch,) = st["branches"]
    assert branch["model"] == ANTHROPIC_MODEL
    # the in-flight call's candidate was proposed after the switch was applied, as model A
    switch_id = changed[0].id
    late = [e for e in proposed if e.id > switch_id and e.payload.get("model") == OPENAI_MODEL]
    assert len(late) == 1

    # a model string that cannot be one is refused when sent, in one line, and nothing queued
    bad = _cockpit(tmp_path, "send", "sw", "set-model", "claude", "haiku", "--queue", timeout=60)
    assert bad.returncode == 2 and "Traceback" not in bad.stderr, bad.stderr
    assert bad.stderr.strip().count("\n") == 0
    assert "set-model: the model must be a model name like openai/gpt-4o" in bad.stderr
    with SessionRecord.open_readonly(tmp_path / "sessions" / "sw") as rec:
        assert [c.kind for c in rec.commands()] == ["set_model"]


def test_the_engine_refuses_a_set_model_that_is_no_model_name(keys, write_profile, tmp_path):
    """What the cockpit's `m` key posts goes to the engine without the CLI's check."""
    from test_engine_loop import CannedPool

    from cockpit.agents.llm import LLMProposer
    from cockpit.agents.profiles import parse_profile
    from cockpit.engine.config import EngineConfig
    from cockpit.engine.engine import Engine
    from cockpit.store import create_session

    path = write_profile(name="p", proposer="llm", model=OPENAI_MODEL)
    cfg = EngineConfig(task=str(TOYTASK), device="cpu", beam=1, budget=4, mode="quick", agent="t")
    folder = create_session(
        "m", task="toyscale", device="cpu", sessions_dir=tmp_path / "s", config=cfg.to_dict()
    )
    engine = Engine(folder, cfg, LLMProposer(parse_profile(path)), pool=CannedPool())
    try:
        engine.start()
        with SessionRecord.open(folder) as rec:
            rec.post_command("set_model", {"model": "gpt 4o", "branch": "b1"}, source="tui")
            rec.post_command("set_model", {"model": ANTHROPIC_MODEL, "branch": "b1"}, source="tui")
        engine.apply_commands()
        acks = engine.record.events(kinds=[ev.COMMAND_ACKED])
        assert [a.payload["ok"] for a in acks] == [False, True]
        assert "set-model: the model must be a model name" in acks[0].payload["message"]
        assert engine.branches["b1"].model == ANTHROPIC_MODEL
    finally:
        engine.close()
