"""The unmodified engine driving the LLM proposer against the scripted provider: the loop keeps
going through an unusable reply, a 500 and an outage; feedback reaches the next prompt; usage is
recorded; and no byte of the session folder holds a key. Evaluations come from a stand-in pool
(canned result records) so the test is about the agent, not the harness."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future
from pathlib import Path

from agents_helpers import ANTHROPIC_KEY, OPENAI_KEY, reply_with
from fake_provider import Reply

from cockpit.agents.llm import LLMProposer
from cockpit.agents.profiles import parse_profile
from cockpit.harness.result import Result, ShapeResult, TimingStats

TOYTASK = Path(__file__).resolve().parents[1] / "engine" / "toytask"
CHILDREN = [
    f"import torch\n\nFAMILY = 'baseline'\n\n\ndef kernel(x: torch.Tensor) -> torch.Tensor:\n    return {expr}\n"
    for expr in (
        "x * 2 + 1",
        "x + x + 1",
        "torch.addcmul(torch.ones_like(x), x, torch.full_like(x, 2.0))",
    )
]


def canned(score: float) -> dict:
    t = TimingStats(
        n=20,
        mean_us=score,
        sem_pct=0.1,
        median_us=score,
        p10_us=score,
        p90_us=score,
        min_us=score,
        max_us=score,
        total_ms=1.0,
    )
    r = Result(task="toyscale", candidate="c", device="cpu", score_us=score, roofline_pct=12.5)
    r.shapes = [
        ShapeResult(
            "rows=64 cols=16 float32", "public", False, True, params={"rows": 64, "cols": 16}
        ),
        ShapeResult(
            "rows=37 cols=16 float32",
            "hidden",
            True,
            True,
            timing=t,
            params={"rows": 37, "cols": 16},
        ),
    ]
    r.profile = {"launches": 7, "unit": "top-level aten ops", "groups": {"aten": 7}, "top": []}
    return r.to_dict()


class CannedPool:
    """The worker pool's interface, answering at once with `score(source, index)`; by default
    each candidate is 10% faster than the last."""

    def __init__(self, score: Callable[[str, int], float] | None = None) -> None:
        self.score = score or (lambda _source, i: 100.0 * 0.9**i)
        self.sources: list[str] = []

    def free_slot(self) -> int:
        return 0

    def submit(
        self, slot: int, task_root: str, name: str, source: str, mode: str, incumbent=None
    ) -> Future:
        self.sources.append(source)
        fut: Future = Future()
        fut.set_result(canned(self.score(source, len(self.sources) - 1)))
        return fut

    def shutdown(self) -> None:
        pass


def test_engine_loop_with_the_llm_proposer(provider, keys, write_profile, tmp_path):
    from cockpit.engine.config import EngineConfig
    from cockpit.engine.engine import Engine
    from cockpit.store import SessionRecord, create_session

    provider.push(
        "Let me think about chunking first.",
        reply_with(CHILDREN[0]),  # repaired
        Reply(status=500, echo_auth=True),
        reply_with(CHILDREN[1]),  # retried; the error quotes the key
        Reply(status=500),
        Reply(status=500, echo_auth=True),  # outage: a visible proposal_failed
        reply_with(CHILDREN[2]),
    )
    cfg = EngineConfig(
        task=str(TOYTASK),
        device="cpu",
        beam=1,
        budget=4,
        mode="quick",
        agent="test",
        plateau_window=10,
        outage_cooldown_s=0.2,
    )  # the outage pauses the branch, then it retries
    folder = create_session(
        task="toyscale", device="cpu", sessions_dir=tmp_path / "sessions", config=cfg.to_dict()
    )
    profile = parse_profile(
        write_profile(
            proposer="llm",
            model="openai/gpt-4o-mini",
            api_base=provider.openai_base,
            retries=1,
            backoff_s=0.01,
            stream=True,
        )
    )
    proposer = LLMProposer(profile, transcript=folder / "agent.jsonl")
    pool = CannedPool()
    assert Engine(folder, cfg, proposer, pool=pool).run() == "done"

    assert pool.sources[1:] == CHILDREN  # the seed, then every child the model wrote
    with SessionRecord.open_readonly(folder) as rec:
        states = [e.payload["state"] for e in rec.events(kinds=["branch_state"])]
    assert states[:2] == [
        "paused",
        "running",
    ]  # the outage paused the branch visibly, then it retried
    with SessionRecord.open_readonly(folder) as rec:
        failed = rec.events(kinds=["proposal_failed"])
        proposed = [e.payload for e in rec.events(kinds=["candidate_proposed"])]
    assert len(failed) == 1 and failed[0].payload["reason"].startswith("provider error")
    assert "credentials received: Bearer [redacted]" in failed[0].payload["reason"]
    assert [p["usage"].get("calls", 0) for p in proposed] == [
        0,
        2,
        1,
        1,
    ]  # seed, repaired, retried, after outage
    assert proposed[-1]["usage"]["session_total"]["tokens"] == 4 * 150
    # feedback on the seed reached the first LLM prompt, without the hidden shape's parameters
    first = provider.received[0].text()
    assert "7 top-level aten ops per call" in first and "hidden #1: ✓ 100 us" in first
    assert "rows=37" not in first
    assert (folder / "agent.jsonl").stat().st_size > 0
    for path in folder.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            assert OPENAI_KEY.encode() not in data and ANTHROPIC_KEY.encode() not in data, path
