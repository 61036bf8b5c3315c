"""Plateau -> escalation: a branch that stops improving moves to another algorithm family, and is
retired with a reason once no family is left."""

from __future__ import annotations

import shutil
from pathlib import Path

from engine_helpers import RUN_OPTS, TOYTASK, Cockpit, events

from cockpit.store import events as ev


def optimal_chunked_task(tmp_path: Path) -> Path:
    """The toy task with the chunked seed already at its fastest CHUNK: nothing left to gain."""
    task = tmp_path / "toytask"
    shutil.copytree(TOYTASK, task)
    seed = task / "seeds" / "chunked_loop.py"
    seed.write_text(seed.read_text().replace("\nCHUNK = 1\n", "\nCHUNK = 32\n"))
    return task


def test_a_plateaued_branch_escalates_to_other_families_then_retires(cockpit: Cockpit, tmp_path: Path) -> None:
    task = optimal_chunked_task(tmp_path)
    # beam 1: one branch, the first seed's family (chunked); at most 6 chunked configurations
    # exist, so the branch plateaus (window 2) or runs out of moves well within the budget
    proc = cockpit("run", str(task), "--session", "flat", "--beam", "1", "--plateau", "2", "--budget", "10",
                   *RUN_OPTS, timeout=240)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    folder = cockpit.folder("flat")
    evs = events(folder, ev.PLATEAU_DETECTED, ev.ESCALATED, ev.BRANCH_STATE, ev.EVALUATION_FINISHED)
    kinds = [e.kind for e in evs]

    first_plateau = next(e for e in evs if e.kind == ev.PLATEAU_DETECTED)
    assert first_plateau.branch == "b1"
    assert first_plateau.payload["window"] == 2
    assert first_plateau.payload["evaluations_since_best"] >= 2 or "tried" in first_plateau.payload["reason"]
    verdicts_before = [e for e in evs if e.kind == ev.EVALUATION_FINISHED and e.id < first_plateau.id]
    assert len(verdicts_before) >= 3  # the seed and at least two children that did not beat it

    escalations = [e for e in evs if e.kind == ev.ESCALATED]
    assert [e.payload["mode"] for e in escalations] == ["family", "family"]
    assert [e.payload["family"] for e in escalations] == ["baseline", "vectorized"]
    assert kinds.index(ev.ESCALATED) == kinds.index(ev.PLATEAU_DETECTED) + 1

    retired = [e for e in evs if e.kind == ev.BRANCH_STATE][-1]
    assert retired.payload["state"] == "retired"
    assert retired.payload["reason"] == "plateau in vectorized and no other family left to try"

    st = cockpit.status("flat")
    b1 = st["branches"][0]
    assert (b1["family"], b1["state"], b1["plateaus"]) == ("vectorized", "retired", 3)
    assert st["state"] == "done"
    assert st["evaluations"] < 10  # the beam retired before the budget ran out
    # ...and the run says so, with what would continue it (the tuner has no model to set)
    why = (
        f"every branch retired after plateaus at {st['evaluations']}/10 evaluations: "
        "fork another family to continue"
    )
    assert (st["ended"], st["reason"]) == (why, why)
    assert f"session done: {why}" in proc.stdout
    families = {c["family"] for c in st["candidate_list"] if c["status"] == "ok"}
    assert families == {"chunked", "baseline", "vectorized"}
