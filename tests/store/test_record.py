"""SessionRecord in one process: events, derived tables, rebuild, telemetry, commands."""

from __future__ import annotations

import sqlite3

import pytest
from store_scenario import dump_derived, populate, result

from cockpit.store import ReadOnlyRecord, SessionRecord
from cockpit.store import events as ev
from cockpit.store.schema import SchemaTooNew


def test_append_returns_increasing_ids_that_events_reads_back(record: SessionRecord) -> None:
    a = record.append(ev.NOTE, {"text": "one"})
    b = record.append(ev.NOTE, {"text": "two"}, branch="b1", candidate="c1")
    got = record.events(after_id=a - 1)
    assert [e.id for e in got] == [a, b] and a < b
    assert got[1].payload == {"text": "two"}
    assert (got[1].branch, got[1].candidate) == ("b1", "c1")
    assert record.last_event_id() == b


def test_append_refuses_an_unknown_kind(record: SessionRecord) -> None:
    with pytest.raises(ValueError, match="unknown event kind"):
        record.append("evaluation_finised", {})


def test_every_documented_kind_has_payload_fields() -> None:
    assert set(ev.FIELDS) == ev.KINDS
    assert {ev.EVALUATION_FINISHED, ev.COMMAND_ACKED, ev.BEST_CHANGED} <= ev.KINDS


def test_candidate_row_follows_proposal_evaluation_and_commit(record: SessionRecord) -> None:
    record.append(ev.BRANCH_CREATED, {"family": "online", "model": "tuner"}, branch="b1")
    proposed = {"parent": "c0", "family": "online", "model": "tuner", "source_hash": "h1"}
    record.append(ev.CANDIDATE_PROPOSED, proposed, branch="b1", candidate="c1")
    assert record.candidate("c1").status == "proposed"
    record.append(ev.EVALUATION_STARTED, {"worker": 0}, branch="b1", candidate="c1")
    assert record.candidate("c1").status == "evaluating"
    record.append(ev.EVALUATION_FINISHED, result("ok", 12.5), branch="b1", candidate="c1")
    record.append(ev.CANDIDATE_COMMITTED, {"commit_sha": "ab" * 20}, branch="b1", candidate="c1")
    c = record.candidate("c1")
    assert (c.status, c.geomean_us, c.score_us) == ("ok", 12.5, pytest.approx(13.75))
    assert (c.parent, c.family, c.model, c.commit_sha) == ("c0", "online", "tuner", "ab" * 20)
    assert c.summary["source_hash"] == "h1" and c.summary["speedups"] == {"torch": 8.0}
    assert "shapes" not in c.summary  # the full record stays in the event


def test_evaluation_of_an_unproposed_candidate_inherits_the_branch_family(
    record: SessionRecord,
) -> None:
    record.append(ev.BRANCH_CREATED, {"family": "two-pass", "model": "tuner"}, branch="b1")
    record.append(ev.EVALUATION_FINISHED, result("wrong", None), branch="b1", candidate="seed")
    c = record.candidate("seed")
    assert (c.status, c.family, c.model) == ("wrong", "two-pass", "tuner")
    assert c.summary["reasons"][0]["kind"] == "numerical"


def test_best_changed_sets_the_branch_best(record: SessionRecord) -> None:
    record.append(ev.BRANCH_CREATED, {"family": "online"}, branch="b1")
    record.append(ev.BEST_CHANGED, {"candidate": "c7", "score_us": 3.5}, branch="b1")
    (b,) = record.branches()
    assert (b.best_candidate, b.best_us, b.state) == ("c7", 3.5, "running")


def test_fork_creates_a_branch_that_remembers_its_origin(record: SessionRecord) -> None:
    fork = {"from_branch": "b1", "from_candidate": "c3", "family": "tiled", "model": "m"}
    record.append(ev.BRANCH_FORKED, {**fork, "instruction": "use tiles"}, branch="b9")
    (b,) = record.branches()
    assert (b.id, b.family, b.model, b.state) == ("b9", "tiled", "m", "running")
    assert b.info["forked_from"] == "b1" and b.info["parent_candidate"] == "c3"
    assert b.info["instruction"] == "use tiles"


def test_model_change_without_branch_sets_default_and_every_live_branch(
    record: SessionRecord,
) -> None:
    for b in ("b1", "b2"):
        record.append(ev.BRANCH_CREATED, {"family": "f", "model": "small"}, branch=b)
    record.append(ev.BRANCH_STATE, {"state": "retired", "reason": "slow"}, branch="b2")
    record.append(ev.MODEL_CHANGED, {"model": "big", "previous": "small"})
    models = {b.id: (b.model, b.state) for b in record.branches()}
    assert models == {"b1": ("big", "running"), "b2": ("small", "retired")}
    assert record.meta()["model"] == "big"


def test_session_state_and_budget_land_in_meta(record: SessionRecord) -> None:
    record.append(ev.SESSION_STARTED, {"pid": 42, "host": "box", "resumed": False})
    record.append(ev.BUDGET_CHANGED, {"budget": 200})
    record.append(ev.SESSION_STATE, {"state": "paused", "reason": "human"})
    meta = record.meta()
    assert (meta["task"], meta["device"], meta["pid"]) == ("softmax", "cpu", 42)
    assert (meta["state"], meta["state_reason"], meta["budget"]) == ("paused", "human", 200)


def test_transaction_rolls_back_every_append_in_it_on_error(record: SessionRecord) -> None:
    before = record.last_event_id()
    with pytest.raises(RuntimeError), record.transaction():
        record.append(ev.BRANCH_CREATED, {"family": "f"}, branch="b1")
        record.append(ev.NOTE, {"text": "x"})
        raise RuntimeError("engine bug")
    assert record.last_event_id() == before and record.branches() == []


def test_rebuild_recomputes_identical_derived_tables(record: SessionRecord) -> None:
    populate(record)
    before = dump_derived(record)
    assert len(before["candidates"]) == 12 and len(before["branches"]) == 4
    record.execute("DELETE FROM candidates")  # damage the derived state
    record.execute("UPDATE branches SET best_us = -1")
    record.rebuild()
    assert dump_derived(record) == before


def test_scenario_derives_the_expected_beam(record: SessionRecord) -> None:
    populate(record)
    branches = {b.id: b for b in record.branches()}
    assert branches["b3"].state == "retired" and branches["b3"].model == "big"  # escalated
    assert branches["b1"].model == "gpt-x"  # set for every live branch
    assert branches["b3"].info == {
        "parent_candidate": None,
        "instruction": None,
        "plateaus": 1,
        "escalations": 1,
        "last_escalation": "model",
        "state_reason": "plateau",
    }
    assert branches["b2"].info["proposal_failures"] == 1
    assert branches["b4"].info["forked_from"] == "b1"
    assert branches["b1"].best_candidate == "c010"
    assert record.meta()["errors"] == 1 and record.meta()["state"] == "done"
    assert [c.id for c in record.candidates("b2")] == ["c002", "c005", "c008", "c011"]


def test_events_filters_by_kind_candidate_and_limit(record: SessionRecord) -> None:
    populate(record)
    finished = record.events(kinds=[ev.EVALUATION_FINISHED])
    assert len(finished) == 12 and all(e.kind == ev.EVALUATION_FINISHED for e in finished)
    assert [e.candidate for e in record.events(kinds=[ev.EVALUATION_FINISHED], limit=2)] == [
        "c001",
        "c002",
    ]
    assert {e.kind for e in record.events(candidate="c004")} == {
        ev.CANDIDATE_PROPOSED,
        ev.EVALUATION_STARTED,
        ev.EVALUATION_FINISHED,
        ev.CANDIDATE_COMMITTED,
    }


def test_counts_summarize_without_reading_rows(record: SessionRecord) -> None:
    populate(record)
    counts = record.counts()
    assert counts["candidates"] == 12 and counts["branches"] == 4
    assert counts["candidates_by_status"] == {"ok": 9, "wrong": 3}
    assert counts["events"] == counts["last_event_id"] == record.last_event_id()
    assert counts["pending_commands"] == 0


def test_telemetry_batches_keep_order_and_null_gpu(record: SessionRecord) -> None:
    rows = [{"t": 100.0 + i, "gpu": None, "cpu_pct": float(i)} for i in range(10)]
    assert record.add_telemetry(rows) == 10
    assert record.add_telemetry([]) == 0
    samples = record.telemetry(since_t=104.0)
    assert [s.cpu_pct for s in samples] == [5.0, 6.0, 7.0, 8.0, 9.0]
    assert all(s.gpu is None and s.util is None for s in samples)
    assert [s.t for s in record.telemetry(limit=2)] == [108.0, 109.0]


def test_ack_records_the_result_on_the_command_and_as_an_event(record: SessionRecord) -> None:
    cid = record.post_command("retire", {"branch": "b2", "reason": "dead end"}, "tui")
    assert [c.id for c in record.pending_commands()] == [cid]
    event_id = record.ack_command(cid, False, "no branch b2")
    (cmd,) = record.commands()
    assert (cmd.state, cmd.ack_message, cmd.kind) == ("failed", "no branch b2", "retire")
    (event,) = record.events(after_id=event_id - 1)
    assert event.kind == ev.COMMAND_ACKED and event.branch == "b2"
    assert event.payload == {
        "command_id": cid,
        "ok": False,
        "message": "no branch b2",
        "kind": "retire",
    }
    assert record.pending_commands() == []


def test_post_command_refuses_an_unknown_command(record: SessionRecord) -> None:
    with pytest.raises(ValueError, match="known commands"):
        record.post_command("explode", {}, "cli")


def test_readonly_record_refuses_writes(session_dir, record: SessionRecord) -> None:
    record.append(ev.NOTE, {"text": "x"})
    with SessionRecord.open_readonly(session_dir) as viewer:
        assert viewer.events()[-1].payload == {"text": "x"}
        with pytest.raises(ReadOnlyRecord):
            viewer.append(ev.NOTE, {})
        with pytest.raises(sqlite3.OperationalError, match="readonly"):
            viewer.execute("DELETE FROM events")


def test_readonly_open_works_after_the_engine_closed_the_file(session_dir) -> None:
    with SessionRecord.open(session_dir) as engine:
        engine.append(ev.NOTE, {"text": "last words"})
    assert not (session_dir / "session.db-wal").exists()  # checkpointed and removed on close
    with SessionRecord.open_readonly(session_dir) as viewer:
        assert viewer.events()[-1].payload == {"text": "last words"}


def test_a_newer_schema_is_refused(session_dir) -> None:
    conn = sqlite3.connect(session_dir / "session.db")
    conn.execute("PRAGMA user_version = 99")
    conn.close()
    with pytest.raises(SchemaTooNew):
        SessionRecord.open_readonly(session_dir)


def test_engine_file_uses_wal_and_full_sync(record: SessionRecord) -> None:
    assert record.execute("PRAGMA journal_mode") == [("wal",)]
    assert record.execute("PRAGMA synchronous") == [(2,)]  # FULL
