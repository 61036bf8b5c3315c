"""Candidates that exhaust host memory, in the loop: the real engine with its real evaluation
worker (one CPU slot), spawned judges, warm arenas and sandboxed candidates whose address space
the arena limits (RLIMIT_AS). Each is an `oom` verdict that says how much it asked for, which
line and which shape; the honest candidate after each, in the same worker slot, is judged `ok`.

Nothing here touches gigabytes of real memory: the allocations are refused (too big for the host,
or past the address-space limit) before a page is written."""

from __future__ import annotations

from engine_helpers import TOYTASK

from cockpit.agents.base import Proposal, ProposalRequest
from cockpit.engine.config import EngineConfig
from cockpit.engine.engine import Engine
from cockpit.store import SessionRecord, create_session


def _kernel(body: str, head: str = "") -> str:
    return f"import torch\n\nFAMILY = 'chunked'\n{head}\n\ndef kernel(x):\n{body}"


GOOD = _kernel("    return x * 2 + 1\n")
SCRIPT = [
    # far more than the host has, in one request
    ("huge", _kernel("    s = torch.empty(400 * 2**30 // 4)\n    return x * 2 + 1 + s[:1]\n")),
    ("good", GOOD),
    # grows by 1 GiB of address space per turn until the arena's limit refuses the next one
    (
        "grow",
        _kernel("    while True:\n        HOARD.append(torch.empty(2**28))\n", head="HOARD = []\n"),
    ),
    ("good", GOOD.replace("x * 2 + 1", "1 + x * 2")),
    # plain Python: a MemoryError with no message of its own
    ("pybig", _kernel("    return bytearray(1 << 40)\n")),
    ("good", GOOD.replace("x * 2 + 1", "x + x + 1")),
]


class Scripted:
    name = "scripted"

    def __init__(self) -> None:
        self.i = 0

    def propose(self, request: ProposalRequest) -> Proposal:
        label, source = SCRIPT[self.i % len(SCRIPT)]
        self.i += 1
        return Proposal(source=source, family="chunked", note=label)


def test_a_candidate_out_of_host_memory_is_an_oom_verdict_and_the_next_is_judged(tmp_path):
    cfg = EngineConfig(
        task=str(TOYTASK),
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
        notes = {
            e.candidate: e.payload.get("note") for e in rec.events(kinds=["candidate_proposed"])
        }
        started = {e.candidate: e.payload for e in rec.events(kinds=["evaluation_started"])}
        finished = {e.candidate: e.payload for e in rec.events(kinds=["evaluation_finished"])}
        errors = rec.events(kinds=["error"])
    order = sorted(c for c in finished if notes.get(c) in {label for label, _ in SCRIPT})
    assert [notes[c] for c in order] == [label for label, _ in SCRIPT]
    assert {started[c]["worker"] for c in order} == {0}  # one worker slot judged them all
    expect = {
        "huge": "out of host memory: tried to allocate 400.00 GiB (RuntimeError; line 7 in kernel",
        "grow": "out of host memory: tried to allocate 1.00 GiB (RuntimeError; line 9 in kernel",
        "pybig": "out of host memory (MemoryError; line 7 in kernel: return bytearray(1 << 40))",
    }
    for cid in order:
        result = finished[cid]
        if notes[cid] == "good":
            assert result["status"] == "ok" and result.get("score_us"), (cid, result)
            continue
        assert result["status"] == "crash", (cid, result)
        (reason,) = result["reasons"]
        assert reason["kind"] == "oom", reason
        assert reason["message"].startswith(expect[notes[cid]]), reason
        assert reason["shape"] == "rows=64 cols=16 float32", reason
    assert not errors, [e.payload for e in errors]  # verdicts, not engine or worker errors
