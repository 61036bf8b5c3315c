"""The LLM proposer against a real HTTP server on 127.0.0.1 speaking OpenAI chat completions
(plain and streamed) and Anthropic messages, with scripted replies."""

from __future__ import annotations

import json
import logging

import pytest
from agents_helpers import ANTHROPIC_KEY, GOOD, OPENAI_KEY, PARENT, reply_with
from fake_provider import Reply
from test_prompt import result_with_failures

from cockpit.agents.base import ProposalError
from cockpit.agents.profiles import parse_profile

BROKEN = GOOD.replace("e / e.sum(dim=-1, keepdim=True)", "e / e.sum(dim=-1, keepdim=True")
OTHER = GOOD.replace(
    "e / e.sum(dim=-1, keepdim=True)", "e * e.sum(dim=-1, keepdim=True).reciprocal()"
)
CHATTER = "I think the next step is a persistent kernel that keeps each row in registers."
DIFF = (
    "```diff\n--- a/kernel.py\n+++ b/kernel.py\n@@ -8,2 +8,2 @@\n def kernel(x: torch.Tensor) -> torch.Tensor:\n"
    "-    return torch.softmax(x, dim=-1)\n+    return torch.softmax(x.float(), dim=-1).to(x.dtype)\n```\nUpcast."
)


def price(model: str, prompt: int, completion: int) -> float:
    """USD from litellm's offline cost map, read directly (not through the proposer)."""
    import litellm

    info = litellm.model_cost[model]
    return prompt * info["input_cost_per_token"] + completion * info["output_cost_per_token"]


# --- replies ------------------------------------------------------------------------------------
@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
def test_good_code_becomes_the_proposal_with_its_tokens_and_cost(
    provider, make_proposer, request_for, stream
):
    provider.push(Reply(reply_with(GOOD), prompt_tokens=1200, completion_tokens=300))
    prop = make_proposer(stream=stream).propose(request_for())
    assert prop.source == GOOD and prop.family == "baseline" and prop.model == "openai/gpt-4o-mini"
    assert prop.note.startswith("file") and "subtract the row max" in prop.note
    u = prop.usage
    assert (u["calls"], u["prompt_tokens"], u["completion_tokens"], u["retries"]) == (
        1,
        1200,
        300,
        0,
    )
    assert u["cost_usd"] == pytest.approx(price("gpt-4o-mini", 1200, 300))
    sent = provider.received[-1]
    assert sent.path == "/v1/chat/completions" and bool(sent.body.get("stream")) == stream
    assert sent.body["max_tokens"] == 2000 and sent.messages[0]["role"] == "system"


def test_diff_reply_is_applied_to_the_parent(provider, make_proposer, request_for):
    provider.push(DIFF)
    prop = make_proposer().propose(request_for())
    assert "torch.softmax(x.float(), dim=-1).to(x.dtype)" in prop.source and prop.note.startswith(
        "diff"
    )
    assert prop.source.startswith('"""Baseline')


@pytest.mark.parametrize(
    "bad,kind",
    [
        (CHATTER, "no_code"),
        (reply_with(BROKEN), "syntax"),
        ("", "empty"),
        (reply_with(GOOD) + "#" * 5000, "huge"),
    ],
    ids=["chatter", "broken", "empty", "huge"],
)
def test_an_unusable_reply_gets_one_repair_prompt_quoting_the_error(
    provider, make_proposer, request_for, bad, kind
):
    provider.push(bad, reply_with(GOOD))
    prop = make_proposer(max_reply_chars=4000).propose(request_for())
    assert prop.source == GOOD and prop.usage["repaired"] and prop.usage["calls"] == 2
    assert prop.usage["reply_errors"][0].startswith(kind)
    first, repair = provider.received
    assert repair.messages[:2] == first.messages  # the same conversation, continued
    assert repair.messages[-2]["role"] == "assistant"
    assert f"could not be used: {kind}:" in repair.last_user
    if kind == "syntax":
        assert "SyntaxError" in repair.last_user and "line" in repair.last_user
    if kind == "huge":
        assert len(repair.messages[-2]["content"]) < 4000  # the huge reply is not sent back whole


def test_a_reply_identical_to_a_tried_candidate_is_repaired_as_duplicate(
    provider, make_proposer, request_for
):
    from cockpit.hashing import source_hash

    provider.push(reply_with(PARENT.replace("# ", "# (same) ")), reply_with(GOOD))
    prop = make_proposer().propose(request_for(tried_hashes={source_hash(PARENT)}))
    assert prop.source == GOOD and prop.usage["reply_errors"][0].startswith("duplicate")
    assert "already evaluated" in provider.received[-1].last_user


def test_a_second_unusable_reply_raises_with_both_reasons(provider, make_proposer, request_for):
    provider.push(reply_with(BROKEN), CHATTER)
    with pytest.raises(ProposalError) as info:
        make_proposer().propose(request_for())
    assert (
        "syntax: SyntaxError" in info.value.reason
        and "after one repair: no_code" in info.value.reason
    )
    assert len(provider.received) == 2 and info.value.usage["calls"] == 2
    assert info.value.pause is None  # the loop goes on with the next step


def test_feedback_and_instructions_reach_the_prompt_sent(provider, make_proposer, request_for):
    provider.push(reply_with(GOOD))
    make_proposer().propose(
        request_for(
            parent_result=result_with_failures(),
            steer=["stay in Triton"],
            queued=["try num_warps=8"],
        )
    )
    text = provider.received[-1].text()
    assert "3.2x the tolerance" in text and "hidden #2" in text and "41.5% of roofline" in text
    assert "stay in Triton" in text and "(this step only) try num_warps=8" in text
    assert "77731" not in text


# --- transport failures -------------------------------------------------------------------------
@pytest.mark.parametrize(
    "failure,stream,expect",
    [
        (Reply(status=429), False, "RateLimitError"),
        (Reply(status=429), True, "RateLimitError"),
        (Reply(status=500), False, "InternalServerError"),
        (Reply(status=500), True, "InternalServerError"),
        (Reply(reply_with(GOOD), delay_s=1.2), False, "Timeout"),
        (Reply(reply_with(GOOD), delay_s=1.2), True, "Timeout"),
        (Reply(reply_with(GOOD) * 3, cut=True), True, "Stream"),
    ],
    ids=["429", "429-streamed", "500", "500-streamed", "slow", "slow-streamed", "stream-cut"],
)
def test_transient_failures_are_retried(
    provider, make_proposer, request_for, failure, stream, expect
):
    provider.push(failure, reply_with(GOOD))
    prop = make_proposer(stream=stream, timeout_s=0.5).propose(request_for())
    assert prop.source == GOOD
    assert len(provider.received) == 2 and prop.usage["retries"] == 1 and prop.usage["calls"] == 1
    assert expect in prop.usage["provider_errors"][0]


def test_repeated_failures_move_to_the_fallback_model(provider, make_proposer, request_for):
    provider.push(Reply(status=500), Reply(status=500), Reply(status=500), reply_with(GOOD))
    prop = make_proposer(fallbacks=["openai/gpt-4.1-nano"]).propose(request_for())
    assert [r.body["model"] for r in provider.received] == ["gpt-4o-mini"] * 3 + ["gpt-4.1-nano"]
    assert prop.model == "openai/gpt-4.1-nano" and prop.usage["attempts"] == 4


def test_an_outage_raises_a_proposal_error_naming_the_provider_error(
    provider, make_proposer, request_for
):
    provider.default = Reply(status=500)
    with pytest.raises(ProposalError) as info:
        make_proposer(retries=1, fallbacks=["openai/gpt-4.1-nano"]).propose(request_for())
    reason = info.value.reason
    assert reason.startswith("provider error") and "InternalServerError 500" in reason
    assert "openai/gpt-4o-mini, openai/gpt-4.1-nano" in reason and "4 attempts" in reason
    assert info.value.pause == "branch" and len(provider.received) == 4


def test_a_bad_request_is_not_retried_on_the_same_model(provider, make_proposer, request_for):
    provider.push(Reply(status=400), reply_with(GOOD))
    prop = make_proposer(fallbacks=["openai/gpt-4.1-nano"]).propose(request_for())
    assert [r.body["model"] for r in provider.received] == ["gpt-4o-mini", "gpt-4.1-nano"]
    assert prop.model == "openai/gpt-4.1-nano"


# --- budgets and costs ----------------------------------------------------------------------------
def test_token_cap_stops_new_calls_exactly_at_the_cap(provider, make_proposer, request_for):
    provider.default = Reply(reply_with(GOOD), prompt_tokens=100, completion_tokens=50)
    prop = make_proposer(budget_tokens=450)
    for _ in range(3):
        prop.propose(request_for())
    with pytest.raises(ProposalError) as info:
        prop.propose(request_for())
    assert len(provider.received) == 3 and info.value.pause == "session"
    assert "450 of 450 tokens" in info.value.reason
    assert [r.body["max_tokens"] for r in provider.received] == [
        450,
        300,
        150,
    ]  # clamped to what is left


def test_usd_cap_stops_new_calls_once_spent(provider, make_proposer, request_for):
    provider.default = Reply(reply_with(GOOD), prompt_tokens=1000, completion_tokens=1000)
    one = price("gpt-4o-mini", 1000, 1000)
    prop = make_proposer(budget_usd=round(one * 2.5, 8))
    for _ in range(3):
        prop.propose(request_for())
    with pytest.raises(ProposalError, match="LLM spending cap reached") as info:
        prop.propose(request_for(branch="b2"))
    assert info.value.pause == "stop" and info.value.raise_with == "--usd N"
    assert len(provider.received) == 3
    assert prop.ledger.summary()["total"]["cost_usd"] == pytest.approx(3 * one)


def test_costs_add_up_per_branch_and_per_model(provider, make_proposer, request_for, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_BASE", provider.anthropic_base)
    provider.default = Reply(reply_with(GOOD), prompt_tokens=400, completion_tokens=100)
    prop = make_proposer()
    prop.propose(request_for(branch="b1"))
    prop.propose(request_for(branch="b1", model="anthropic/claude-haiku-4-5"))
    last = prop.propose(request_for(branch="b2"))
    s = prop.ledger.summary()
    assert s["branches"]["b1"]["calls"] == 2 and s["branches"]["b2"]["calls"] == 1
    assert s["models"]["openai/gpt-4o-mini"]["tokens"] == 1000
    assert s["models"]["anthropic/claude-haiku-4-5"]["cost_usd"] == pytest.approx(
        price("claude-haiku-4-5", 400, 100)
    )
    assert s["total"]["cost_usd"] == pytest.approx(
        2 * price("gpt-4o-mini", 400, 100) + price("claude-haiku-4-5", 400, 100)
    )
    assert (
        last.usage["session_total"]["tokens"] == 1500
        and last.usage["branch_total"]["tokens"] == 500
    )


# --- a second protocol, switching ------------------------------------------------------------------
@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
def test_anthropic_messages_protocol_through_the_same_proposer(
    provider, make_proposer, request_for, stream
):
    provider.push(
        Reply(status=429), Reply(reply_with(GOOD), prompt_tokens=900, completion_tokens=200)
    )
    prop = make_proposer(
        model="anthropic/claude-haiku-4-5", api_base=provider.anthropic_base, stream=stream
    )
    result = prop.propose(request_for())
    assert result.source == GOOD and result.usage["retries"] == 1
    sent = provider.received[-1]
    assert sent.path == "/v1/messages" and sent.headers.get("x-api-key") == ANTHROPIC_KEY
    assert (
        isinstance(sent.body.get("system"), str | list)
        and "Softmax over the last dimension" in sent.text()
    )
    assert result.usage["cost_usd"] == pytest.approx(price("claude-haiku-4-5", 900, 200))


def test_the_branch_model_switches_provider_at_run_time(
    provider, make_proposer, request_for, monkeypatch
):
    monkeypatch.setenv("ANTHROPIC_API_BASE", provider.anthropic_base)
    provider.default = Reply(reply_with(GOOD))
    prop = make_proposer()
    a = prop.propose(request_for())
    b = prop.propose(request_for(model="anthropic/claude-haiku-4-5"))
    assert [r.path for r in provider.received] == ["/v1/chat/completions", "/v1/messages"]
    assert (a.model, b.model) == ("openai/gpt-4o-mini", "anthropic/claude-haiku-4-5")


def test_model_escalation_uses_the_advisor_profile(
    provider, make_proposer, request_for, write_profile
):
    write_profile(
        "adv",
        body="ADVISOR SYSTEM PROMPT",
        proposer="llm",
        model="openai/gpt-4.1",
        api_base=provider.openai_base,
        stream=False,
    )
    provider.default = Reply(reply_with(GOOD))
    prop = make_proposer(advisor="adv")
    result = prop.propose(request_for(escalation="model"))
    sent = provider.received[-1]
    assert sent.body["model"] == "gpt-4.1" and result.model == "openai/gpt-4.1"
    assert sent.messages[0]["content"] == "ADVISOR SYSTEM PROMPT" and "ESCALATION" in sent.text()


# --- best-of-n ----------------------------------------------------------------------------------
def test_best_of_n_returns_every_usable_distinct_choice(provider, make_proposer, request_for):
    from cockpit.hashing import source_hash

    provider.push(Reply(choices=[CHATTER, reply_with(GOOD), reply_with(OTHER), reply_with(OTHER)]))
    prop = make_proposer(strategy="best-of-n", n=4)
    result = prop.propose(request_for())
    assert result.source == GOOD and result.usage["choices"] == 4 and result.usage["parseable"] == 2
    assert [a.source for a in result.alternatives] == [OTHER]  # the repeated choice is dropped
    assert result.alternatives[0].usage == {}  # the step's cost is carried once
    assert result.source_hash == source_hash(GOOD) and result.alternatives[
        0
    ].source_hash == source_hash(OTHER)
    assert result.note.startswith("choice 1/4") and result.alternatives[0].note.startswith(
        "choice 2/4"
    )
    assert len(provider.received) == 1 and provider.received[0].body["n"] == 4


def test_best_of_n_without_n_support_asks_n_times(provider, make_proposer, request_for):
    provider.push(CHATTER, reply_with(BROKEN), reply_with(GOOD))
    prop = make_proposer(
        model="anthropic/claude-haiku-4-5",
        api_base=provider.anthropic_base,
        strategy="best-of-n",
        n=3,
    )
    result = prop.propose(request_for())
    assert result.source == GOOD and len(provider.received) == 3 and result.usage["calls"] == 3


# --- keys and quiet -------------------------------------------------------------------------------
def test_no_key_value_reaches_proposals_errors_or_the_transcript(
    provider, make_proposer, request_for, tmp_path
):
    provider.push(Reply(status=429, echo_auth=True), reply_with(GOOD))
    prop = make_proposer(fallbacks=["anthropic/claude-haiku-4-5"])
    ok = prop.propose(request_for())
    provider.default = Reply(status=400, echo_auth=True)  # an error body that quotes the key back
    with pytest.raises(ProposalError) as info:
        prop.propose(request_for())
    assert any(
        r.headers.get("authorization") == f"Bearer {OPENAI_KEY}" for r in provider.received
    )  # really used
    assert "credentials received" in " ".join(ok.usage["provider_errors"])  # the echo came back...
    texts = [
        repr(ok),
        json.dumps(ok.usage),
        ok.note,
        str(info.value),
        info.value.reason,
        json.dumps(info.value.usage),
        (tmp_path / "transcript.jsonl").read_text(),
    ]
    for text in texts:
        for key in (OPENAI_KEY, ANTHROPIC_KEY):
            assert key not in text  # ...but never the key


def test_litellm_leaves_no_output_and_no_stream_handlers(
    provider, make_proposer, request_for, capfd
):
    provider.default = Reply(status=500)
    with pytest.raises(ProposalError):
        make_proposer(retries=1).propose(request_for())
    out, err = capfd.readouterr()
    assert out == "" and err == ""
    for name in ("LiteLLM", "LiteLLM Router", "LiteLLM Proxy"):
        handlers = logging.getLogger(name).handlers
        assert not [h for h in handlers if type(h) is not logging.NullHandler]


# --- run-time options -----------------------------------------------------------------------------
def test_run_model_and_api_base_override_the_profile_for_a_keyless_local_server(
    provider, keys, write_profile, request_for, monkeypatch
):
    from cockpit.agents.profiles import make_proposer

    monkeypatch.delenv("OPENAI_API_KEY")
    profile = parse_profile(
        write_profile(proposer="llm", model="anthropic/claude-haiku-4-5", stream=False, retries=0)
    )
    provider.push(Reply(reply_with(GOOD), prompt_tokens=10, completion_tokens=5))
    result = make_proposer(
        profile, model="openai/local-coder", api_base=provider.openai_base
    ).propose(request_for(model="openai/local-coder"))
    sent = provider.received[-1]
    assert sent.path == "/v1/chat/completions" and sent.body["model"] == "local-coder"
    assert sent.headers.get("authorization") == "Bearer no-key"
    assert (
        result.usage["tokens"] == 15
        and result.usage["unpriced_calls"] == 1
        and result.usage["cost_usd"] == 0
    )


def test_a_task_that_does_not_load_is_a_proposal_error_not_a_crash(
    provider, make_proposer, request_for, tmp_path
):
    with pytest.raises(ProposalError) as info:
        make_proposer().propose(request_for(task_root=str(tmp_path / "gone")))
    assert (
        info.value.reason.startswith("could not build the prompt") and info.value.pause == "branch"
    )
    assert provider.received == []


def test_retry_knobs_can_be_set_from_the_environment(
    provider, make_proposer, request_for, monkeypatch
):
    monkeypatch.setenv("COCKPIT_LLM_RETRIES", "0")
    provider.push(Reply(status=500), reply_with(GOOD))
    with pytest.raises(ProposalError, match="1 attempts"):
        make_proposer(retries=5).propose(request_for())
    assert len(provider.received) == 1
