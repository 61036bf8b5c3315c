"""ResultView: the typed view of a stored result record, read from real records (a harness
Result's `to_dict()` as the engine stores it) and from the partial records older sessions hold."""

from __future__ import annotations

import dataclasses
import json

import pytest

from cockpit.harness.result import Result
from cockpit.result_view import ResultView


def test_a_stored_result_reads_as_its_fields():
    r = Result(task="softmax", candidate="c.py", device="cpu", mode="quick")
    record = json.loads(json.dumps(r.to_dict()))  # as the session record holds it
    record.update(score_us=12.5, geomean_us=11.0, tier="promoted", comparable=False)
    view = ResultView.from_dict(record)
    assert view.status == record["status"]
    assert (view.score_us, view.geomean_us, view.tier, view.mode) == (
        12.5,
        11.0,
        "promoted",
        "quick",
    )
    assert view.comparable is False
    assert record["score_us"] == 12.5  # the record itself is left as it was


def test_passing_needs_status_ok_and_a_score():
    assert ResultView.from_dict({"status": "ok", "score_us": 3.0}).passing
    assert not ResultView.from_dict({"status": "ok", "score_us": None}).passing
    assert not ResultView.from_dict({"status": "ok", "score_us": 0}).passing
    assert not ResultView.from_dict({"status": "wrong", "score_us": 3.0}).passing


def test_missing_keys_and_no_record_read_as_defaults():
    for d in (None, {}):
        view = ResultView.from_dict(d)
        assert view == ResultView() and not view.passing and not view.screened
        assert view.comparable is True
    old = ResultView.from_dict({"status": "ok", "score_us": 5.0})  # before tiers and `comparable`
    assert old.tier is None and not old.screened and old.comparable is True and old.ab is None


def test_screened_and_comparable_follow_the_records_words():
    assert ResultView.from_dict({"tier": "screened"}).screened
    assert not ResultView.from_dict({"tier": "promoted"}).screened
    assert ResultView.from_dict({"comparable": None}).comparable is True
    ab = {"ok": True, "ratio": 1.1}
    assert ResultView.from_dict({"ab": ab}).ab == ab
    assert ResultView.from_dict({"ab": "garbage"}).ab is None


def test_the_view_is_frozen():
    view = ResultView.from_dict({"status": "ok", "score_us": 1.0})
    with pytest.raises(dataclasses.FrozenInstanceError):
        view.score_us = 0.5  # type: ignore[misc]
