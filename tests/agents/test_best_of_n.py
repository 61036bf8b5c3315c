"""best-of-n through the engine: one step asks the model for n choices, every usable one is
recorded as a candidate of the branch, verified and timed, and the fastest passing one becomes the
branch's head when it beats the incumbent. Real provider on 127.0.0.1; evaluations are canned
with a score per source, so which choice wins is known."""

from __future__ import annotations

import subprocess

from agents_helpers import reply_with
from fake_provider import Reply
from test_engine_loop import CHILDREN, TOYTASK, CannedPool

from cockpit.agents.llm import LLMProposer
from cockpit.agents.profiles import parse_profile
from cockpit.engine.config import EngineConfig
from cockpit.engine.engine import Engine
from cockpit.store import SessionRecord, create_session
from cockpit.store import events as ev

MORE = [
    f"import torch\n\nFAMILY = 'baseline'\n\n\ndef kernel(x: torch.Tensor) -> torch.Tensor:\n    return {e}\n"
    for e in ("(x * 2).add(1)", "x.mul(2).add_(1)", "torch.add(x, x).add(1)")
]
A, B, C = CHILDREN
SCORES = {A: 80.0, B: 50.0, C: 90.0}  # the seed takes 100 us; B is the best choice


def test_best_of_n_verifies_every_choice_and_keeps_the_best_as_the_head(
    provider, keys, write_profile, tmp_path
):
    provider.push(
        Reply(choices=[reply_with(A), reply_with(B), "no code here", reply_with(C)]),
        Reply(choices=[reply_with(m) for m in MORE]),
    )
    cfg = EngineConfig(
        task=str(TOYTASK),
        device="cpu",
        beam=1,
        budget=5,
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
            stream=False,
            strategy="best-of-n",
            n=4,
        )
    )
    pool = CannedPool(lambda source, _i: SCORES.get(source, 100.0))
    assert Engine(folder, cfg, LLMProposer(profile), pool=pool).run() == "done"

    assert pool.sources[1:4] == [A, B, C]  # every usable choice was verified and timed
    assert [r.body.get("n") for r in provider.received] == [4, 4]
    with SessionRecord.open_readonly(folder) as rec:
        cands = {c.id: c for c in rec.candidates()}
        proposed = rec.events(kinds=[ev.CANDIDATE_PROPOSED])
        bests = rec.events(kinds=[ev.BEST_CHANGED])
        requests = rec.events(kinds=[ev.PROPOSAL_REQUESTED])
    seed, a, b, c, d = (e.candidate for e in proposed)
    step = [e.payload for e in proposed[1:4]]
    assert {p["group"] for p in step} == {requests[0].id} and [p["choice"] for p in step] == [
        1,
        2,
        3,
    ]
    assert all(p["parent"] == seed for p in step)
    assert (
        step[0]["usage"]["calls"] == 1 and step[1]["usage"] == {} == step[2]["usage"]
    )  # the cost once
    assert all(
        cands[x].branch == "b1" and cands[x].status == "ok" and cands[x].commit_sha
        for x in (a, b, c)
    )
    # one decision for the step, on the fastest choice (not A first and then B)
    assert [(e.payload["candidate"], e.payload.get("choices")) for e in bests] == [
        (seed, None),
        (b, [a, b, c]),
    ]
    assert bests[1].payload["previous_candidate"] == seed
    # the next step starts from the kept choice
    assert requests[1].payload["parent"] == b
    assert "x + x + 1" in provider.received[1].text()
    # one evaluation was left in the budget: one choice of the second step, the other two dropped
    assert proposed[4].payload["source"] == MORE[0] and proposed[4].payload["dropped_choices"] == 2
    assert cands[d].parent == b
    tag = subprocess.run(
        ["git", "-C", str(folder / "repo"), "rev-parse", "refs/tags/best/b1"],
        capture_output=True,
        text=True,
    ).stdout.strip()
    assert tag == cands[b].commit_sha
