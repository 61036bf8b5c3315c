"""ReplayReader: order, virtual clock, and past states that match what was live."""

from __future__ import annotations

import pytest
from store_scenario import populate

from cockpit.store import ReplayReader, SessionRecord
from cockpit.store import events as ev


@pytest.fixture
def timed(record: SessionRecord) -> SessionRecord:
    """Ten notes at T0 + 100, 101, ..., 109, T0 being the session_created event's time."""
    base = record.events()[0].t
    for i in range(10):
        record.append(ev.NOTE, {"text": str(i)}, t=base + 100.0 + i)
    return record


def at(record: SessionRecord, offset: float) -> float:
    return record.events()[0].t + offset


def texts(events) -> list[str]:
    return [e.payload["text"] for e in events if e.kind == ev.NOTE]


def test_iteration_delivers_every_event_in_id_order(record: SessionRecord) -> None:
    ids = populate(record)
    reader = ReplayReader(record)
    assert [e.id for e in reader][1:] == ids  # [0] is session_created
    assert reader.at_end


def test_seek_then_events_until_delivers_only_the_window(timed: SessionRecord) -> None:
    reader = ReplayReader(timed)
    reader.seek(at(timed, 102.0))
    assert texts(reader.events_until(at(timed, 104.5))) == ["3", "4"]
    assert reader.clock == at(timed, 104.5)
    assert texts(reader.events_until(at(timed, 104.9))) == []


def test_step_moves_the_clock_to_the_last_delivered_event(timed: SessionRecord) -> None:
    reader = ReplayReader(timed)
    reader.seek(at(timed, 99.0))
    assert texts(reader.step(3)) == ["0", "1", "2"]
    assert reader.clock == at(timed, 102.0)
    reader.seek(at(timed, 108.0))
    assert texts(reader.step(5)) == ["9"] and reader.at_end


def test_advance_plays_at_the_speed_factor(timed: SessionRecord) -> None:
    reader = ReplayReader(timed, speed=4.0)
    reader.seek(at(timed, 100.0))
    assert texts(reader.advance(0.5)) == ["1", "2"]  # 0.5 s of wall time = 2 s of session
    assert reader.clock == at(timed, 102.0)


def test_seek_backwards_replays_the_same_events_again(timed: SessionRecord) -> None:
    reader = ReplayReader(timed)
    first = texts(reader.events_until(at(timed, 109.0)))
    reader.seek(0.0)
    assert texts(reader.events_until(at(timed, 109.0))) == first == [str(i) for i in range(10)]


def test_a_clock_that_steps_back_does_not_reorder_events(record: SessionRecord) -> None:
    for t, text in [(10.0, "a"), (12.0, "b"), (11.0, "c"), (13.0, "d")]:
        record.append(ev.NOTE, {"text": text}, t=at(record, t))
    reader = ReplayReader(record)
    reader.seek(at(record, 9.0))
    assert texts(reader.events_until(at(record, 12.5))) == [
        "a",
        "b",
        "c",
    ]  # c is after b, as recorded


def test_state_at_matches_the_live_tables_at_that_moment(record: SessionRecord) -> None:
    snapshots = {}
    original_append = record.append

    def append_and_snapshot(*args, **kw):
        event_id = original_append(*args, **kw)
        snapshots[event_id] = (record.branches(), record.candidates())
        return event_id

    record.append = append_and_snapshot
    populate(record)
    reader = ReplayReader(record, checkpoint_every=7)
    for event_id in [*sorted(snapshots, reverse=True)[::3], *sorted(snapshots)[::5]]:
        state = reader.state_at(event_id)
        assert (state.branches(), state.candidates()) == snapshots[event_id], event_id


def test_state_at_zero_is_empty_and_state_follows_position(record: SessionRecord) -> None:
    populate(record)
    reader = ReplayReader(record)
    assert reader.state_at(0).branches() == []
    reader.seek_event(record.events(kinds=[ev.BRANCH_CREATED])[1].id)
    assert [b.id for b in reader.state().branches()] == ["b1", "b2"]


def test_refresh_picks_up_events_appended_after_opening(session_dir, record) -> None:
    viewer = SessionRecord.open_readonly(session_dir)
    reader = ReplayReader(viewer)
    before = len(reader)
    record.append(ev.NOTE, {"text": "late"})
    assert reader.refresh() == 1 and len(reader) == before + 1
    reader.seek_event(0)
    assert texts(list(reader)) == ["late"]
    viewer.close()


def test_replayed_state_reads_like_the_record(record: SessionRecord) -> None:
    populate(record)
    state = ReplayReader(record).state_at(record.last_event_id())
    assert state.branches() == record.branches()
    assert state.candidates("b1") == record.candidates("b1")
    assert state.meta() == record.meta()


def test_stepping_forward_reads_like_the_live_tables_at_every_event(record: SessionRecord) -> None:
    """The replay keeps its candidate list between steps and re-reads only the candidates the new
    events name; stepping one event at a time, in uneven strides and after a step back must give
    exactly what a full read gives."""
    snapshots = {}
    original_append = record.append

    def append_and_snapshot(*args, **kw):
        event_id = original_append(*args, **kw)
        snapshots[event_id] = record.candidates()
        return event_id

    record.append = append_and_snapshot
    populate(record)
    ids = sorted(snapshots)
    reader = ReplayReader(record, checkpoint_every=5)
    for event_id in ids:  # one event at a time
        assert reader.state_at(event_id).candidates() == snapshots[event_id], event_id
    for event_id in [ids[3], ids[len(ids) // 2], ids[4], ids[-1], ids[1], ids[-2]]:
        assert reader.state_at(event_id).candidates() == snapshots[event_id], event_id


def test_states_are_read_from_several_threads_one_after_another_and_at_once(
    record: SessionRecord,
) -> None:
    """The cockpit asks for states from its worker threads (a new thread per job): the replay's
    in-memory tables, built in one thread, must serve the next (before: sqlite3's
    ProgrammingError "objects created in a thread can only be used in that same thread")."""
    import threading

    populate(record)
    reader = ReplayReader(record)
    expected = reader.state_at(reader._ids[-1])
    first = ReplayReader(record)
    results: list = []

    def read(at: int) -> None:
        try:
            results.append(first.state_at(at))
        except Exception as exc:  # noqa: BLE001 - the failure is the assertion below
            results.append(exc)

    for at in (reader._ids[5], reader._ids[-1]):  # built in one thread, extended in another
        t = threading.Thread(target=read, args=(at,))
        t.start()
        t.join()
    threads = [threading.Thread(target=read, args=(i,)) for i in reader._ids[::7]]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not [r for r in results if isinstance(r, Exception)], results
    assert results[1].branch_list == expected.branch_list
    assert [c.id for c in results[1].candidate_list] == [c.id for c in expected.candidate_list]
