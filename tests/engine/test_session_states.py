"""States that are true once a session has ended, and why it ended, as `cockpit status`,
`resume` and `send` say them: real `cockpit` processes on session folders whose records are
written event by event (SQLite and git as an engine leaves them; no engine runs)."""

from __future__ import annotations

import json

import pytest
from engine_helpers import Cockpit, events

from cockpit.store import SessionRecord, create_session
from cockpit.store import events as ev
from cockpit.store.states import branch_reason, branch_state, end_reason

T0 = 1_800_000_000.0


def record_session(
    c: Cockpit,
    name: str,
    *,
    budget: int,
    ok: int,
    retire: tuple[str, ...] = (),
    final: tuple[str, str] | None = ("done", "budget spent or beam retired"),
    agent: str = "tuner",
) -> None:
    """Two branches; b1 paused by command, then resumed by command; `ok` evaluations; the
    branches in `retire` retired after a plateau; then the session's final state, if any."""
    folder = create_session(
        name, task="softmax", device="cpu", sessions_dir=c.sessions, config={"agent": agent}
    )
    with SessionRecord.open(folder) as rec:
        t = T0

        def add(kind, payload, branch=None, candidate=None):
            nonlocal t
            t += 10
            rec.append(kind, payload, branch=branch, candidate=candidate, t=t)

        add(ev.SESSION_STARTED, {"pid": 1, "host": "h", "resumed": False})
        add(ev.BUDGET_CHANGED, {"budget": budget, "previous": None})
        for bid, fam in (("b1", "rowwise"), ("b2", "online")):
            add(ev.BRANCH_CREATED, {"family": fam, "model": None}, branch=bid)
        add(ev.BRANCH_STATE, {"state": "paused", "reason": "by command"}, branch="b1")
        add(ev.BRANCH_STATE, {"state": "running", "reason": "by command"}, branch="b1")
        for i in range(ok):
            bid = ("b1", "b2")[i % 2]
            cid = f"c{i + 1:04d}"
            add(ev.CANDIDATE_PROPOSED, {"source_hash": cid}, branch=bid, candidate=cid)
            add(
                ev.EVALUATION_FINISHED,
                {"status": "ok", "score_us": 50.0 - i, "geomean_us": 50.0 - i},
                branch=bid,
                candidate=cid,
            )
        for bid in retire:
            add(ev.PLATEAU_DETECTED, {"evaluations_since_best": 6}, branch=bid)
            add(
                ev.BRANCH_STATE,
                {"state": "retired", "reason": "plateau in x and no other family left to try"},
                branch=bid,
            )
        if final is not None:
            add(ev.SESSION_STATE, {"state": final[0], "reason": final[1]})


def test_a_done_session_shows_no_branch_running_and_says_why_it_ended(cockpit: Cockpit) -> None:
    record_session(cockpit, "spent", budget=6, ok=6, retire=("b2",))
    st = cockpit.status("spent")
    assert st["state"] == "done"
    states = {b["id"]: (b["state"], b["reason"]) for b in st["branches"]}
    assert states == {
        "b1": ("done", "session done"),
        "b2": ("retired", "plateau in x and no other family left to try"),
    }
    assert st["ended"] == "budget spent: 6/6 evaluations"
    cockpit.extra_env["TZ"] = "UTC"
    text = cockpit("status", "spent", check=True).stdout
    assert "running" not in text
    assert "ended 2027-01-15 08:03: budget spent: 6/6 evaluations" in text.splitlines()[1]


def test_a_beam_retired_early_says_so_and_what_would_continue_it(cockpit: Cockpit) -> None:
    record_session(cockpit, "retired", budget=200, ok=32, retire=("b1", "b2"), agent="default")
    st = cockpit.status("retired")
    assert st["ended"] == (
        "every branch retired after plateaus at 32/200 evaluations: fork another family or "
        "set a model to continue"
    )
    record_session(cockpit, "tuned", budget=200, ok=4, retire=("b1", "b2"))
    assert cockpit.status("tuned")["ended"].endswith(": fork another family to continue")


def test_a_running_branch_shows_no_stale_reason(cockpit: Cockpit) -> None:
    """b1 was paused then resumed by command: running needs no reason, `by command` is history."""
    record_session(cockpit, "live", budget=10, ok=2, final=None)
    st = cockpit.status("live")
    assert st["state"] == "crashed"  # recorded running, no engine holds the lock
    b1 = next(b for b in st["branches"] if b["id"] == "b1")
    assert (b1["state"], b1["recorded_state"]) == ("crashed", "running")
    assert st["ended"].startswith("the engine died at 2/10 evaluations without recording why")
    assert branch_reason("running", "by command", "running") is None
    assert branch_reason("paused", "by command", "running") == "by command"


@pytest.mark.parametrize(
    ("reason", "sentence"),
    [
        ("interrupted by SIGTERM", "stopped by SIGTERM at 3/10 evaluations"),
        ("time limit of 2h reached", "time limit 2h reached at 3/10 evaluations"),
        ("by command", "stopped by command at 3/10 evaluations"),
    ],
)
def test_a_stopped_session_says_what_stopped_it(
    cockpit: Cockpit, reason: str, sentence: str
) -> None:
    record_session(cockpit, "halt", budget=10, ok=3, final=("stopped", reason))
    st = cockpit.status("halt")
    assert st["ended"] == f"{sentence}; `cockpit resume` continues it"
    assert {b["state"] for b in st["branches"]} == {"stopped"}


def test_resume_of_a_done_session_is_refused_in_one_line(cockpit: Cockpit) -> None:
    record_session(cockpit, "spent", budget=4, ok=4)
    for args in (("resume", "spent"), ("resume", "spent", "--detach")):
        proc = cockpit(*args)
        assert proc.returncode == 2, proc.stdout + proc.stderr
        assert proc.stdout == ""
        assert proc.stderr.count("\n") == 1
        assert proc.stderr.startswith(
            "cockpit: error: session spent is done (budget spent: 4/4 evaluations)"
        )
        assert "--queue" in proc.stderr
    assert len(events(cockpit.folder("spent"), ev.SESSION_STARTED)) == 1  # no engine started


def test_send_to_a_session_that_is_not_running_is_refused_unless_queued(cockpit: Cockpit) -> None:
    record_session(cockpit, "spent", budget=4, ok=4, retire=("b2",))
    folder = cockpit.folder("spent")
    proc = cockpit("send", "spent", "set-budget", "10")
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr == (
        "cockpit: error: session spent is done (budget spent: 4/4 evaluations): no engine reads "
        "commands; add --queue to keep set-budget for the next `cockpit resume spent`\n"
    )
    with SessionRecord.open_readonly(folder) as rec:
        assert rec.commands() == []
    # a queued set-model must not reach a retired branch: refused when posted
    proc = cockpit("send", "spent", "set-model", "--branch", "b2", "m", "--queue")
    assert proc.returncode == 2
    assert proc.stderr == (
        "cockpit: error: branch b2 is retired: set-model applies to live branches\n"
    )
    proc = cockpit("send", "spent", "set-budget", "10", "--queue", check=True)
    assert proc.stdout == "queued set-budget as command 1 for the next `cockpit resume spent`\n"
    with SessionRecord.open_readonly(folder) as rec:
        assert [(c.kind, c.args, c.state) for c in rec.commands()] == [
            ("set_budget", {"budget": 10}, "pending")
        ]


def test_stop_of_a_session_that_is_not_running_says_what_it_is(cockpit: Cockpit) -> None:
    record_session(cockpit, "spent", budget=4, ok=4)
    proc = cockpit("stop", "spent")
    assert proc.returncode == 2
    assert proc.stderr == (
        "cockpit: error: session spent is not running (done: budget spent: 4/4 evaluations)\n"
    )


def test_an_unknown_command_lists_the_names_a_user_types(cockpit: Cockpit) -> None:
    record_session(cockpit, "spent", budget=4, ok=4)
    proc = cockpit("send", "spent", "set_mdl")
    assert proc.returncode == 2
    assert "set-model" in proc.stderr and "set-budget" in proc.stderr
    assert "set_model" not in proc.stderr and "set_budget" not in proc.stderr


def test_the_states_are_pure_functions_of_the_record() -> None:
    assert branch_state("running", "done") == "done"
    assert branch_state("paused", "stopped") == "paused"
    assert branch_state("retired", "done") == "retired"
    assert branch_state("paused", "running") == "paused"
    assert end_reason("running", {"budget": 4}, [], 1) is None
    assert json.dumps(end_reason("done", {"budget": None}, [], 3)) == '"done at 3 evaluations"'


def test_a_queued_command_is_what_continues_a_done_session(cockpit: Cockpit) -> None:
    """A real engine spends its budget; resume is refused; a set-budget queued with --queue
    lets resume continue it, and the engine applies it first."""
    cockpit.start("grow", "--budget", "2", "--beam", "2")
    assert cockpit.wait_finished("grow")["ended"] == "budget spent: 2/2 evaluations"
    assert cockpit("resume", "grow", "--detach").returncode == 2
    cockpit("send", "grow", "set-budget", "3", "--queue", check=True)
    assert cockpit.resume("grow") is not None  # an engine runs again
    st = cockpit.wait_finished("grow")
    assert (st["state"], st["evaluations"], st["ended"]) == (
        "done",
        3,
        "budget spent: 3/3 evaluations",
    )
    text = cockpit("status", "grow", check=True).stdout.splitlines()
    assert "done (budget spent: 3/3 evaluations)" in text[0]
    assert text[1].startswith("ended ") and "budget spent" not in text[1]  # said once
