"""Builds a recorded session without an engine: events written with SessionRecord, sources
committed with CandidateRepo, telemetry samples, all at fixed times (stable snapshots)."""

from __future__ import annotations

import math
from pathlib import Path

from cockpit.store import CandidateRepo, SessionRecord
from cockpit.store import events as ev
from cockpit.store.models import TelemetrySample

T0 = 1_800_000_000.0  # 2027-01-15 08:00:00 UTC
NOW = T0 + 3600.0  # the frozen "now" of the tests: one hour into the session

SEED = '''"""Row-wise softmax, one program per row."""
import torch

FAMILY = "triton-rowwise"
TUNABLES = {"BLOCK": [256, 512, 1024]}
BLOCK = 512


def kernel(x):
    return torch.softmax(x, dim=-1)
'''


def variant(block: int, note: str = "") -> str:
    text = SEED.replace("BLOCK = 512", f"BLOCK = {block}")
    return text + (f"# {note}\n" if note else "")


def result(status: str, score: float | None, *, reasons=(), speedup: float | None = None) -> dict:
    shapes = [
        {
            "shape": f"rows={r} cols=1024 float32",
            "set": "hidden" if r == 4096 else "public",
            "hidden": r == 4096,
            "ok": status == "ok",
            "error": {"tol_ratio": 0.01},
            "timing": {"median_us": (score or 100.0) * r / 2048, "sem_pct": 0.8}
            if status == "ok"
            else None,
            "floor_us": 2.0,
            "roofline_pct": 40.0 if status == "ok" else None,
            "bound": "memory",
        }
        for r in (1024, 2048, 4096)
    ]
    return {
        "status": status,
        "reasons": list(reasons),
        "geomean_us": score,
        "score_us": score,
        "hidden_geomean_us": score,
        "speedups": {"reference": speedup} if speedup else {},
        "roofline_pct": 40.0 if status == "ok" else None,
        "comparable": True,
        "wall_s": 3.5,
        "mode": "iterate",
        "flags": [],
        "shapes": shapes,
        "profile": {
            "launches": 1,
            "groups": {"triton": 1},
            "top": [{"name": "softmax_kernel", "calls": 1, "us": score or 0.0, "group": "triton"}],
            "unit": "kernels per call",
            "shape": "rows=2048 cols=1024 float32",
        },
    }


class Builder:
    def __init__(self, folder: Path, t0: float = T0) -> None:
        self.folder = folder
        self.t0 = t0
        self.record = SessionRecord.open(folder, create=True)
        self.repo = CandidateRepo(folder / "repo")
        self.shas: dict[str, str] = {}
        self.t = t0

    def at(self, dt: float) -> float:
        self.t = self.t0 + dt
        return self.t

    def append(self, kind, payload=None, branch=None, candidate=None, dt: float | None = None):
        t = self.at(dt) if dt is not None else self.t
        return self.record.append(kind, payload or {}, branch=branch, candidate=candidate, t=t)

    def candidate(
        self,
        cid,
        branch,
        family,
        source,
        status,
        score,
        *,
        parent=None,
        dt=0.0,
        reasons=(),
        speedup=None,
        model=None,
        note="",
    ):
        self.append(
            ev.CANDIDATE_PROPOSED,
            {
                "parent": parent,
                "family": family,
                "model": model,
                "source_hash": cid,
                "filename": "kernel.py",
                "note": note,
                "source": source,
                "usage": {"cost_usd": 0.05, "model": model},
            },
            branch,
            cid,
            dt,
        )
        self.append(ev.EVALUATION_STARTED, {"worker": 0, "device": "cuda:0"}, branch, cid, dt + 1)
        self.append(
            ev.EVALUATION_FINISHED,
            result(status, score, reasons=reasons, speedup=speedup),
            branch,
            cid,
            dt + 30,
        )
        sha = self.repo.commit_candidate(
            branch,
            cid,
            "kernel.py",
            source,
            f"{cid} {status}",
            parent_sha=self.shas.get(parent or ""),
        )
        self.shas[cid] = sha
        self.append(ev.CANDIDATE_COMMITTED, {"commit_sha": sha}, branch, cid, dt + 31)

    def close(self) -> None:
        self.repo.close()
        self.record.close()


def build_session(folder: Path, *, gpu: bool = True, t0: float = T0) -> Path:
    """A one-hour session: three branches, eight candidates (one wrong, one timeout), a
    plateau, an escalation, a retirement, commands from the CLI and the TUI, telemetry."""
    b = Builder(folder, t0)
    b.append(
        ev.SESSION_CREATED,
        {"name": folder.name, "task": "softmax", "device": "cuda", "created": t0},
        dt=0,
    )
    b.append(ev.SESSION_STARTED, {"pid": 4242, "host": "h200", "resumed": False}, dt=1)
    b.append(ev.BUDGET_CHANGED, {"budget": 40, "previous": None}, dt=1)
    for bid, fam in (("b1", "baseline"), ("b2", "triton-rowwise"), ("b3", "triton-online")):
        b.append(
            ev.BRANCH_CREATED,
            {"family": fam, "model": "gpt-5", "parent_candidate": None, "instruction": None},
            branch=bid,
            dt=2,
        )
    b.candidate(
        "c0001",
        "b1",
        "baseline",
        SEED.replace("triton-rowwise", "baseline"),
        "ok",
        41.0,
        dt=10,
        speedup=1.0,
    )
    b.append(ev.BEST_CHANGED, {"candidate": "c0001", "score_us": 41.0}, "b1", "c0001", dt=40)
    b.candidate("c0002", "b2", "triton-rowwise", variant(512), "ok", 30.0, dt=60, speedup=1.4)
    b.append(ev.BEST_CHANGED, {"candidate": "c0002", "score_us": 30.0}, "b2", "c0002", dt=90)
    b.candidate(
        "c0003", "b3", "triton-online", variant(256, "online"), "ok", 35.0, dt=120, speedup=1.2
    )
    b.append(ev.BEST_CHANGED, {"candidate": "c0003", "score_us": 35.0}, "b3", "c0003", dt=150)
    b.candidate(
        "c0004",
        "b2",
        "triton-rowwise",
        variant(1024),
        "ok",
        21.0,
        parent="c0002",
        dt=600,
        speedup=2.0,
        note="BLOCK: 512 -> 1024",
    )
    b.append(
        ev.BEST_CHANGED,
        {
            "candidate": "c0004",
            "score_us": 21.0,
            "previous_us": 30.0,
            "previous_candidate": "c0002",
        },
        "b2",
        "c0004",
        dt=630,
    )
    b.candidate(
        "c0005",
        "b3",
        "triton-online",
        variant(128, "online"),
        "wrong",
        None,
        parent="c0003",
        dt=900,
        note="BLOCK: 256 -> 128",
        reasons=[
            {
                "kind": "wrong",
                "stage": "verify",
                "shape": "hidden #2",
                "message": "max error 3.1e-02 > tolerance 1e-03 at row 17",
            }
        ],
    )
    b.append(
        ev.PLATEAU_DETECTED,
        {"evaluations_since_best": 4, "best_us": 41.0, "window": 4},
        "b1",
        dt=1000,
    )
    b.append(
        ev.BRANCH_STATE, {"state": "plateau", "reason": "no gain in 4 evaluations"}, "b1", dt=1001
    )
    b.append(
        ev.ESCALATED,
        {"mode": "family", "model": None, "family": "triton-online", "reason": "plateau"},
        "b1",
        dt=1002,
    )
    b.append(ev.BRANCH_STATE, {"state": "running", "reason": "escalated"}, "b1", dt=1003)
    cid = b.record.post_command("pause", {"branch": "b3"}, source="cli")
    b.append(
        ev.COMMAND_RECEIVED,
        {"command_id": cid, "kind": "pause", "args": {"branch": "b3"}, "source": "cli"},
        "b3",
        dt=1500,
    )
    b.append(ev.BRANCH_STATE, {"state": "paused", "reason": "by command"}, "b3", dt=1500)
    b.at(1501)
    b.record.ack_command(cid, True, "b3 paused")
    b.record.execute(
        "UPDATE events SET t = ? WHERE id = (SELECT max(id) FROM events)", (t0 + 1501,)
    )
    b.candidate(
        "c0006",
        "b2",
        "triton-rowwise",
        variant(2048),
        "timeout",
        None,
        parent="c0004",
        dt=2000,
        note="BLOCK: 1024 -> 2048",
        reasons=[{"kind": "timeout", "stage": "time", "message": "exceeded 60 s"}],
    )
    b.candidate(
        "c0007",
        "b1",
        "triton-online",
        variant(256, "escalated"),
        "ok",
        18.5,
        parent="c0001",
        dt=2400,
        speedup=2.2,
        note="switch family",
    )
    b.append(
        ev.BEST_CHANGED,
        {
            "candidate": "c0007",
            "score_us": 18.5,
            "previous_us": 41.0,
            "previous_candidate": "c0001",
        },
        "b1",
        "c0007",
        dt=2430,
    )
    b.candidate(
        "c0008",
        "b2",
        "triton-rowwise",
        variant(768),
        "ok",
        19.0,
        parent="c0004",
        dt=3000,
        speedup=2.1,
        note="BLOCK: 1024 -> 768",
    )
    b.append(
        ev.BEST_CHANGED,
        {
            "candidate": "c0008",
            "score_us": 19.0,
            "previous_us": 21.0,
            "previous_candidate": "c0004",
        },
        "b2",
        "c0008",
        dt=3030,
    )
    b.append(ev.PROPOSAL_REQUESTED, {"parent": "c0008", "model": "gpt-5"}, "b2", dt=3500)
    samples = []
    for i in range(240):
        t = t0 + 15 * i  # one sample per 15 s over the hour: replay has telemetry anywhere
        util = 50 + 45 * math.sin(i / 9.0)
        if gpu:
            samples.append(
                TelemetrySample(
                    t,
                    0,
                    util,
                    60_000 + 100 * i,
                    143_771,
                    300 + 3 * util,
                    55 + util / 5,
                    1980 - (i % 7) * 10,
                    20 + i % 30,
                    41.0,
                )
            )
        else:
            samples.append(TelemetrySample(t, None, cpu_pct=20 + i % 30, ram_pct=41.0))
    b.record.add_telemetry(samples)
    b.close()
    return folder
