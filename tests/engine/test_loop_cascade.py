"""The cascade in the loop: the real engine with real evaluation workers (spawned judges, warm
arenas, sandboxed candidates) on a task with one shape in the `promote` tier. A scripted
proposer offers candidates that pass the screen and then fail, crash or hang only where a
promoted evaluation looks, one that is too slow to be promoted, and one honest fast one: only the
honest one may become the branch's best, and every verdict says which tier judged it."""

from __future__ import annotations

import json

from engine_helpers import COCKPIT, TOYTASK
from tiered_task import PROMOTED, tiered_task

from cockpit.agents.base import Proposal, ProposalRequest
from cockpit.engine.config import EngineConfig
from cockpit.engine.engine import Engine
from cockpit.store import SessionRecord, create_session

LIMITS = """
[limits]
cpu_call_floor_s = 2
cpu_first_call_s = 3
"""


def _kernel(body: str) -> str:
    return f"import torch\n\nFAMILY = 'chunked'\n\n\ndef kernel(x):\n{body}"


FAST = "    y = x * 2 + 1\n"
SCRIPT = [
    ("wrong", _kernel(FAST + "    return y + 1 if x.shape[0] == 41 else y\n")),
    (
        "crash",
        _kernel(
            FAST + "    if x.shape[0] == 41:\n        raise RuntimeError('boom')\n    return y\n"
        ),
    ),
    ("hang", _kernel("    while x.shape[0] == 41:\n        x = x + 0\n" + FAST + "    return y\n")),
    # correct, and far slower than the seed: screened, never promoted
    (
        "slow",
        _kernel(
            "    y = torch.empty_like(x)\n"
            "    for _ in range(20):\n"
            "        for i in range(x.shape[0]):\n"
            "            torch.add(x[i] * 2, 1, out=y[i])\n"
            "    return y\n"
        ),
    ),
    ("good", _kernel(FAST + "    return y\n")),
]


class Scripted:
    name = "scripted"

    def __init__(self) -> None:
        self.i = 0

    def propose(self, request: ProposalRequest) -> Proposal:
        label, source = SCRIPT[self.i % len(SCRIPT)]
        self.i += 1
        return Proposal(source=source, family="chunked", note=label)


def test_only_a_promoted_candidate_becomes_best(tmp_path):
    root = tiered_task(tmp_path, LIMITS)
    for seed in root.glob("seeds/*.py"):
        if seed.name != "chunked_loop.py":
            seed.unlink()
    cfg = EngineConfig(
        task=str(root),
        device="cpu",
        beam=1,
        budget=1 + len(SCRIPT),
        mode="quick",
        plateau_window=50,
    )
    folder = create_session(
        task="toyscale", device="cpu", sessions_dir=tmp_path / "sessions", config=cfg.to_dict()
    )
    assert Engine(folder, cfg, Scripted()).run() == "done"

    with SessionRecord.open_readonly(folder) as rec:
        proposed = {
            e.candidate: e.payload.get("note") for e in rec.events(kinds=["candidate_proposed"])
        }
        finished = {e.candidate: e.payload for e in rec.events(kinds=["evaluation_finished"])}
        best = [e.candidate for e in rec.events(kinds=["best_changed"])]
    by_label = {proposed.get(c) or "seed": r for c, r in finished.items()}
    label_of = {c: proposed.get(c) or "seed" for c in finished}
    assert [label_of[c] for c in best] == ["seed", "good"]

    assert by_label["seed"]["tier"] == "promoted"  # no incumbent: promoted
    for label, status in (("wrong", "wrong"), ("crash", "wrong"), ("hang", "timeout")):
        r = by_label[label]
        assert r["status"] == status and r["tier"] == "promoted", (label, r["reasons"])
        assert r["reasons"][0]["shape"] == PROMOTED, (label, r["reasons"])
    slow = by_label["slow"]
    assert slow["status"] == "ok" and slow["tier"] == "screened", slow.get("promotion")
    assert "not promoted" in slow["promotion"]["why"]
    assert PROMOTED not in [s["shape"] for s in slow["shapes"]]
    good = by_label["good"]
    assert good["status"] == "ok" and good["tier"] == "promoted"
    # each evaluation after the first ran in an arena started during the one before
    arenas = [r.get("protections", {}).get("arena", "") for r in finished.values()]
    assert sum(a.startswith("warm") for a in arenas) >= 4, arenas

    # `cockpit status` agrees: the best is the promoted candidate
    import subprocess

    out = subprocess.run(
        [*COCKPIT, "status", str(folder), "--json"], capture_output=True, text=True, check=True
    )
    status = json.loads(out.stdout)
    assert status["best"]["candidate"] == best[-1]


def test_the_cascade_can_be_switched_off_for_a_run(tmp_path):
    cfg = EngineConfig(task=str(TOYTASK), cascade="off")
    assert not cfg.cascade_enabled
    assert EngineConfig.from_dict({"task": str(TOYTASK)}).cascade_enabled  # on by default
