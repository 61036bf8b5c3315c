"""The session's USD cap: priced model calls stop the session at it, resumably; a session nobody
gave a cap gets DEFAULT_USD_CAP for priced models; an unpriced (local) model is never stopped by
it (the call caps bound it instead).

The run is a real `cockpit run` against a real OpenAI-compatible server on 127.0.0.1 with a
model string litellm prices (openai/gpt-4o-mini), so the cost is litellm's price of the token
usage the server reports: 10,000 prompt and 1,000 completion tokens a call, $0.0021.
"""

from __future__ import annotations

import re

from agents_helpers import reply_with
from fake_provider import Reply
from test_engine_loop import CannedPool
from test_spend_control import TOYTASK, _cockpit, _status

from cockpit.agents.costs import DEFAULT_USD_CAP
from cockpit.agents.llm import LLMProposer
from cockpit.agents.profiles import parse_profile
from cockpit.engine.config import EngineConfig
from cockpit.engine.engine import Engine
from cockpit.store import create_session

SOURCES = [
    f"import torch\n\nFAMILY = 'baseline'\n\n\ndef kernel(x: torch.Tensor) -> torch.Tensor:\n"
    f"    return x * {k} - x * {k - 2} + 1\n"
    for k in range(3, 30)
]
PROMPT_T, COMPLETION_T = 10_000, 1_000


def _price() -> float:
    import litellm

    a, b = litellm.cost_per_token(
        model="openai/gpt-4o-mini", prompt_tokens=PROMPT_T, completion_tokens=COMPLETION_T
    )
    return a + b


def _priced_replies(provider) -> None:
    provider.push(
        *[
            Reply(text=reply_with(s), prompt_tokens=PROMPT_T, completion_tokens=COMPLETION_T)
            for s in SOURCES
        ]
    )


def test_the_usd_cap_stops_the_session_at_the_cap_and_resume_goes_on_under_a_raised_one(
    provider, keys, write_profile, tmp_path
):
    one = _price()
    assert 0.001 < one < 0.01, one  # litellm prices the model: the cost is not a stand-in
    _priced_replies(provider)
    profile = write_profile(
        name="priced",
        proposer="llm",
        model="openai/gpt-4o-mini",
        api_base=provider.openai_base,
        retries=0,
        stream=False,
        timeout_s=10,
    )
    cap = round(one * 2.5, 6)  # two calls stay under it, the third reaches it
    run = _cockpit(
        tmp_path,
        "run",
        str(TOYTASK),
        "--session",
        "usd",
        "--agent",
        str(profile),
        "--usd",
        f"{cap}",
        "--budget",
        "20",
        "--beam",
        "1",
        "--plateau",
        "50",
        "--device",
        "cpu",
        "--mode",
        "quick",
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert len(provider.received) == 3  # no call goes out once the spend reaches the cap
    st = _status(tmp_path, "usd")
    assert st["state"] == "stopped", st
    assert re.match(
        rf"LLM spending cap reached: \${3 * one:.4f} of the session's \${cap:.4f} cap spent on "
        r"priced model calls \(set by cockpit run --usd\); to go on: cockpit send usd "
        r"set-budget --usd N --queue, then cockpit resume usd",
        st["reason"] or "",
    ), st["reason"]
    assert st["evaluations"] < 20  # the evaluation budget was not what stopped it
    spend = st["spend"]
    assert spend["calls"] == spend["requests"] == 3
    assert abs(spend["usd"] - 3 * one) < 1e-9 and spend["cap_usd"] == cap
    assert spend["providers"]["openai"]["usd"] == spend["usd"]
    assert spend["unpriced_calls"] == 0
    table = _cockpit(tmp_path, "status", "usd", timeout=60).stdout
    assert f"model spend ${3 * one:.4f} (cap ${cap:.4f}) · 3 requests" in table, table

    # resumable: a raised cap is the session's from the next engine on, which spends up to it
    sent = _cockpit(tmp_path, "send", "usd", "set-budget", "--usd", f"{one * 4.5:.6f}", "--queue")
    assert sent.returncode == 0, sent.stderr
    again = _cockpit(tmp_path, "resume", "usd")
    assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-3000:]
    assert len(provider.received) == 5
    st = _status(tmp_path, "usd")
    assert st["state"] == "stopped", st
    assert "(set by set-budget --usd)" in st["reason"] and "cockpit resume usd" in st["reason"]
    assert abs(st["spend"]["usd"] - 5 * one) < 1e-9

    # resumed without raising it: the cap holds across the restart, not one more call
    held = _cockpit(tmp_path, "resume", "usd")
    assert held.returncode == 0, held.stdout[-3000:] + held.stderr[-3000:]
    assert len(provider.received) == 5
    st = _status(tmp_path, "usd")
    assert st["state"] == "stopped" and "LLM spending cap reached" in st["reason"], st


def test_bad_usd_flag_is_one_line_and_no_session(tmp_path):
    r = _cockpit(tmp_path, "run", str(TOYTASK), "--session", "bad", "--usd", "lots", timeout=60)
    assert r.returncode == 2, r.stderr
    assert r.stderr.strip().count("\n") == 0 and "--usd 'lots': not an amount in USD" in r.stderr
    assert "Traceback" not in r.stderr
    assert not (tmp_path / "sessions" / "bad").exists()


def _started(tmp_path, path, name: str, **extra) -> Engine:
    cfg = EngineConfig(
        task=str(TOYTASK), device="cpu", beam=1, budget=4, mode="quick", agent="t", extra=extra
    )
    folder = create_session(
        name, task="toyscale", device="cpu", sessions_dir=tmp_path / "s", config=cfg.to_dict()
    )
    engine = Engine(folder, cfg, LLMProposer(parse_profile(path)), pool=CannedPool())
    engine.start()
    return engine


def test_a_session_nobody_gave_a_cap_gets_the_default_and_the_profile_or_flag_wins(
    keys, write_profile, tmp_path
):
    plain = write_profile(name="plain", proposer="llm", model="openai/gpt-4o-mini")
    capped = write_profile(name="capped", proposer="llm", model="openai/gpt-4o-mini", budget_usd=3)
    cases = (
        ("default", plain, {}, DEFAULT_USD_CAP, "the default for priced models"),
        ("profile", capped, {}, 3.0, "the profile's budget_usd"),
        ("flag", capped, {"usd": 7.5}, 7.5, "set by cockpit run --usd"),
        ("none", plain, {"usd": None}, None, "set by cockpit run --usd"),
    )
    for name, path, extra, usd, where in cases:
        engine = _started(tmp_path, path, name, **extra)
        try:
            assert (engine.ledger.caps.usd, engine.ledger.usd_from) == (usd, where), name
            assert engine.record.meta()["budget_usd"] == usd
        finally:
            engine.close()
    # a restarted engine keeps the session's cap and where it came from
    cfg = EngineConfig(task=str(TOYTASK), device="cpu", beam=1, budget=4, mode="quick", agent="t")
    again = Engine(
        tmp_path / "s" / "default", cfg, LLMProposer(parse_profile(capped)), pool=CannedPool()
    )
    try:
        again.start()
        assert (again.ledger.caps.usd, again.ledger.usd_from) == (
            DEFAULT_USD_CAP,
            "the default for priced models",
        )
    finally:
        again.close()


def test_an_unpriced_model_is_not_stopped_by_the_usd_cap(
    provider, keys, write_profile, make_proposer, request_for
):
    from cockpit.agents.costs import Ledger

    provider.push(*[reply_with(s) for s in SOURCES[:3]])
    ledger = Ledger.with_caps(usd=0.0)  # a cap of nothing: any priced call would stop
    proposer = make_proposer(model="openai/local-coder-unpriced")
    proposer.ledger = ledger
    for _ in range(3):
        prop = proposer.propose(request_for())
        assert prop.usage["unpriced_calls"] == 1 and prop.usage["cost_usd"] == 0
    assert ledger.summary()["total"]["calls"] == 3
