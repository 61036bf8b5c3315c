"""A small but complete session story, shared by the record, replay and benchmark-style tests."""

from __future__ import annotations

from cockpit.store import SessionRecord
from cockpit.store import events as ev


def result(status: str, us: float | None) -> dict:
    """A harness result record, as Result.to_dict() shapes it (the fields the store reads)."""
    return {
        "task": "softmax",
        "candidate": "",
        "device": "cpu",
        "status": status,
        "reasons": [] if status == "ok" else [{"kind": "numerical", "message": "max err 3e-2"}],
        "shapes": [{"shape": "1024x1024", "set": "public", "ok": status == "ok"}],
        "geomean_us": us,
        "hidden_geomean_us": us,
        "score_us": None if us is None else us * 1.1,
        "speedups": {} if us is None else {"torch": 100.0 / us},
        "roofline_pct": None if us is None else 10.0,
        "comparable": False,
        "wall_s": 1.5,
    }


def populate(record: SessionRecord, rounds: int = 4) -> list[int]:
    """A small but complete story using every event kind; returns the appended event ids."""
    ids = [
        record.append(ev.SESSION_STARTED, {"pid": 123, "host": "box", "resumed": False}),
        record.append(ev.BUDGET_CHANGED, {"budget": 50, "previous": None}),
    ]
    families = {"b1": "online", "b2": "two-pass", "b3": "looped"}
    for b, fam in families.items():
        ids.append(
            record.append(
                ev.BRANCH_CREATED,
                {"family": fam, "model": "tuner", "parent_candidate": None, "instruction": None},
                branch=b,
            )
        )
    best: dict[str, float] = {}
    n = 0
    for r in range(rounds):
        for b in families:
            n += 1
            c = f"c{n:03d}"
            ids.append(record.append(ev.PROPOSAL_REQUESTED, {"model": "tuner"}, branch=b))
            ids.append(
                record.append(
                    ev.CANDIDATE_PROPOSED,
                    {"parent": None, "family": families[b], "model": "tuner", "source_hash": c},
                    branch=b,
                    candidate=c,
                )
            )
            ids.append(record.append(ev.EVALUATION_STARTED, {"worker": 0}, branch=b, candidate=c))
            us = 100.0 / (r + 1) + n
            status = "wrong" if n % 4 == 0 else "ok"
            res = result(status, us if status == "ok" else None)
            ids.append(record.append(ev.EVALUATION_FINISHED, res, branch=b, candidate=c))
            ids.append(
                record.append(
                    ev.CANDIDATE_COMMITTED, {"commit_sha": f"{n:040x}"}, branch=b, candidate=c
                )
            )
            if status == "ok" and us < best.get(b, float("inf")):
                ids.append(
                    record.append(
                        ev.BEST_CHANGED,
                        {"candidate": c, "score_us": us * 1.1, "previous_us": best.get(b)},
                        branch=b,
                        candidate=c,
                    )
                )
                best[b] = us
    ids.append(record.append(ev.PROPOSAL_FAILED, {"reason": "no code block"}, branch="b2"))
    ids.append(record.append(ev.PLATEAU_DETECTED, {"evaluations_since_best": 8}, branch="b3"))
    ids.append(
        record.append(
            ev.ESCALATED,
            {"mode": "model", "model": "big", "family": None, "reason": "plateau"},
            "b3",
        )
    )
    ids.append(record.append(ev.BRANCH_STATE, {"state": "retired", "reason": "plateau"}, "b3"))
    ids.append(
        record.append(
            ev.BRANCH_FORKED,
            {
                "from_branch": "b1",
                "from_candidate": "c001",
                "family": "online",
                "model": "tuner",
                "instruction": "try vector loads",
            },
            branch="b4",
        )
    )
    cid = record.post_command("set-model", {"model": "gpt-x"}, "test")
    ids.append(record.append(ev.COMMAND_RECEIVED, {"command_id": cid, "kind": "set_model"}))
    ids.append(record.append(ev.MODEL_CHANGED, {"model": "gpt-x", "previous": "tuner"}))
    ids.append(record.ack_command(cid, True, "model set"))
    ids.append(record.append(ev.ERROR, {"message": "worker 0 restarted", "where": "pool"}))
    ids.append(record.append(ev.NOTE, {"text": "looks good"}))
    ids.append(record.append(ev.SESSION_STATE, {"state": "done", "reason": "budget spent"}))
    return ids


def dump_derived(record: SessionRecord) -> dict[str, list[tuple]]:
    """Every derived table (and the command queue) as sorted rows, for equality checks."""
    return {
        table: sorted(record.execute(f"SELECT * FROM {table}"), key=repr)
        for table in ("candidates", "branches", "session", "commands")
    }
