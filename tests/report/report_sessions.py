"""Recorded sessions for the report tests, written through the real store (SessionRecord on a
real SQLite file, CandidateRepo for one candidate whose source is only in git), with every kind
of event a report draws: human commands, a plateau, an escalation, a model switch, a fork, LLM
spend, a baseline seed, a failing candidate, and a time that is not comparable."""

from __future__ import annotations

from pathlib import Path

from cockpit.store import CandidateRepo, SessionRecord
from cockpit.store import events as ev

REPO_ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = REPO_ROOT / "sessions" / "examples" / "qr-h200-2026-11-30g"
T0 = 1_800_000_000.0  # 2027-01-15 08:00:00 UTC
SEEDS = REPO_ROOT / "kernels" / "softmax" / "seeds"
MACHINE = "cuda-NVIDIA_H200"
SHAPES = (
    "rows=4096 cols=1024 float32",
    "rows=8192 cols=8192 bfloat16",
    "rows=17 cols=4099 float32",
)


def seed(name: str) -> str:
    return (SEEDS / name).read_text()


def result(status: str, score: float | None, *, comparable: bool = True, baseline=False) -> dict:
    """A result record in the harness's form: one untimed public shape, three timed ones."""
    ok = status == "ok"
    shapes = [
        {
            "shape": "rows=3 cols=17 float32",
            "set": "public",
            "hidden": False,
            "ok": ok,
            "timing": None,
            "floor_us": None,
            "roofline_pct": None,
            "error": {"message": "ok" if ok else "max error 3e-2 > tolerance"},
        }
    ]
    for k, shape in enumerate(SHAPES):
        median = (score or 0.0) * (k + 1) / 2
        shapes.append(
            {
                "shape": shape,
                "set": "hidden" if k == 2 else "benchmark",
                "hidden": k == 2,
                "ok": ok,
                "timing": {"median_us": median, "mean_us": median, "sem_pct": 0.4} if ok else None,
                "floor_us": 2.0 * (k + 1),
                "roofline_pct": 100 * 2.0 * (k + 1) / median if ok else None,
                "bound": "memory",
            }
        )
    return {
        "task": "softmax",
        "status": status,
        "reasons": [] if ok else [{"kind": "numerical", "stage": "verify", "message": "wrong"}],
        "geomean_us": score,
        "hidden_geomean_us": score,
        "score_us": score,
        "speedups": {},
        "roofline_pct": 12.5 if ok else None,
        "comparable": comparable,
        "baseline_exempt": baseline,
        "wall_s": 3.0,
        "mode": "iterate",
        "flags": [],
        "shapes": shapes,
        "env": {"machine": MACHINE if comparable else "cpu-x86_64-box"},
    }


class Builder:
    def __init__(self, folder: Path, device: str = "cuda") -> None:
        self.folder = folder
        self.record = SessionRecord.open(folder, create=True)
        self.sources: dict[str, str] = {}
        self.append(
            ev.SESSION_CREATED,
            {
                "name": folder.name,
                "task": "softmax",
                "device": device,
                "created": T0,
                "config": {"agent": "default", "mode": "iterate", "beam": 3, "budget": 30},
            },
            dt=0,
        )
        self.append(ev.SESSION_STARTED, {"pid": 1, "host": "gpu-box", "resumed": False}, dt=1)
        self.append(ev.BUDGET_CHANGED, {"budget": 30, "previous": None, "usd": 5.0}, dt=1)

    def append(self, kind, payload=None, branch=None, candidate=None, *, dt: float) -> int:
        return self.record.append(kind, payload or {}, branch, candidate, t=T0 + dt)

    def branch(self, bid: str, family: str, model: str | None, dt: float) -> None:
        self.append(
            ev.BRANCH_CREATED,
            {"family": family, "model": model, "parent_candidate": None, "instruction": None},
            bid,
            dt=dt,
        )

    def candidate(
        self,
        cid,
        branch,
        family,
        source,
        status,
        score,
        *,
        dt,
        parent=None,
        model=None,
        usd=0.0,
        comparable=True,
        baseline=False,
        note="",
        in_record=True,
    ):
        """Proposed, evaluated and committed; `in_record=False` keeps the source out of the
        proposal event (it is then only in the session's git repository)."""
        payload = {"parent": parent, "family": family, "model": model, "source_hash": cid}
        payload.update(filename="kernel.py", note=note)
        if in_record:
            payload["source"] = source
        if usd:
            payload["usage"] = {"cost_usd": usd, "prompt_tokens": 1500, "completion_tokens": 500}
        self.sources[cid] = source
        self.append(ev.CANDIDATE_PROPOSED, payload, branch, cid, dt=dt)
        self.append(ev.EVALUATION_STARTED, {"worker": 0}, branch, cid, dt=dt + 1)
        res = result(status, score, comparable=comparable, baseline=baseline)
        self.append(ev.EVALUATION_FINISHED, res, branch, cid, dt=dt + 20)
        with CandidateRepo(self.folder / "repo") as repo:
            sha = repo.commit_candidate(branch, cid, "kernel.py", source, f"{cid} {status}")
        self.append(ev.CANDIDATE_COMMITTED, {"commit_sha": sha}, branch, cid, dt=dt + 21)

    def command(self, kind: str, args: dict, branch: str | None, dt: float) -> None:
        cid = self.record.post_command(kind, args, source="tui")
        self.append(
            ev.COMMAND_RECEIVED,
            {"command_id": cid, "kind": kind, "args": args, "source": "tui"},
            branch,
            dt=dt,
        )
        self.record.ack_command(cid, True, "done")

    def close(self) -> None:
        self.record.close()


def build_llm_session(folder: Path) -> Builder:
    """Three branches of an LLM agent on softmax with every kind of mark, and a faster time that
    is not comparable (it must never be the best)."""
    b = Builder(folder)
    b.branch("b1", "baseline", None, dt=2)
    b.branch("b2", "triton-tiled", "anthropic/model-a", dt=2)
    b.branch("b3", "triton-online", "anthropic/model-a", dt=2)
    b.candidate("c0001", "b1", "baseline", seed("torch_eager.py"), "ok", 40.0, dt=10, baseline=True)
    tiled = seed("triton_tiled.py")
    online = seed("triton_online.py")
    b.candidate("c0002", "b2", "triton-tiled", tiled, "ok", 30.0, dt=40, note="seed")
    b.append(ev.BEST_CHANGED, {"candidate": "c0002", "score_us": 30.0}, "b2", "c0002", dt=61)
    b.candidate("c0003", "b3", "triton-online", online, "ok", 35.0, dt=70, note="seed")
    b.append(ev.BEST_CHANGED, {"candidate": "c0003", "score_us": 35.0}, "b3", "c0003", dt=91)
    b.candidate(
        "c0004",
        "b2",
        "triton-tiled",
        tiled + "\n# a tuned variant\n",
        "ok",
        20.0,
        dt=300,
        parent="c0002",
        model="anthropic/model-a",
        usd=0.05,
        note="BLOCK: 512 -> 1024",
    )
    b.append(ev.BEST_CHANGED, {"candidate": "c0004", "score_us": 20.0}, "b2", "c0004", dt=321)
    b.candidate(
        "c0005",
        "b3",
        "triton-online",
        online + "\n# wrong\n",
        "wrong",
        None,
        dt=400,
        parent="c0003",
        model="anthropic/model-a",
        usd=0.05,
        note='<script>alert("an LLM wrote this")</script> & </table>',
    )
    b.append(ev.PLATEAU_DETECTED, {"evaluations_since_best": 6, "window": 6}, "b3", dt=600)
    b.append(
        ev.ESCALATED,
        {"mode": "model", "model": "anthropic/model-b", "family": None, "reason": "plateau"},
        "b3",
        dt=601,
    )
    b.command("pause", {"branch": "b3"}, "b3", dt=700)
    b.command("set-model", {"model": "anthropic/model-c", "branch": "b2"}, "b2", dt=800)
    b.append(ev.MODEL_CHANGED, {"model": "anthropic/model-c", "previous": None}, "b2", dt=800)
    b.command("fork", {"candidate": "c0004", "branch": "b2"}, "b4", dt=900)
    b.append(
        ev.BRANCH_FORKED,
        {
            "from_branch": "b2",
            "from_candidate": "c0004",
            "family": "triton-tiled",
            "model": "anthropic/model-c",
            "instruction": "try 2 rows a program",
        },
        "b4",
        dt=900,
    )
    # faster, but an interpreter time: shown, never ranked
    b.candidate(
        "c0006",
        "b4",
        "triton-tiled",
        tiled + "\n# interpreted\n",
        "ok",
        5.0,
        dt=1000,
        parent="c0004",
        model="anthropic/model-c",
        usd=0.1,
        comparable=False,
    )
    b.candidate(
        "c0007",
        "b2",
        "triton-tiled",
        tiled + "\n# only in git\n",
        "ok",
        19.0,
        dt=1200,
        parent="c0004",
        model="anthropic/model-c",
        usd=0.1,
        note="two rows a program",
        in_record=False,
    )
    b.append(ev.BEST_CHANGED, {"candidate": "c0007", "score_us": 19.0}, "b2", "c0007", dt=1221)
    b.append(ev.SESSION_STATE, {"state": "done", "reason": "budget of 30 spent"}, dt=1300)
    b.close()
    return b


def build_cpu_session(folder: Path) -> Builder:
    """A CPU session: the Triton candidates' times are the interpreter's (not comparable); the
    eager baseline seed's time is comparable, and faster."""
    b = Builder(folder, device="cpu")
    b.branch("b1", "triton-tiled", None, dt=2)
    b.branch("b2", "baseline", None, dt=2)
    b.candidate("c0003", "b2", "baseline", seed("torch_eager.py"), "ok", 12.0, dt=3, baseline=True)
    b.candidate(
        "c0001", "b1", "triton-tiled", seed("triton_tiled.py"), "ok", 900.0, dt=5, comparable=False
    )
    b.candidate(
        "c0002",
        "b1",
        "triton-tiled",
        seed("triton_tiled.py") + "\n# v2\n",
        "ok",
        700.0,
        dt=60,
        parent="c0001",
        comparable=False,
    )
    b.append(ev.SESSION_STATE, {"state": "stopped", "reason": "by command"}, dt=100)
    b.close()
    return b


def build_failed_session(folder: Path) -> Builder:
    """Nothing passed: there is no best candidate."""
    b = Builder(folder)
    b.branch("b1", "triton-tiled", None, dt=2)
    b.candidate("c0001", "b1", "triton-tiled", seed("triton_tiled.py"), "wrong", None, dt=5)
    b.close()
    return b
