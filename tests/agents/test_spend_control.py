"""Spend and call control against a real OpenAI-compatible server on 127.0.0.1: a model that
repeats itself (a few fixed kernels, prose without code, a syntax error, a 429 and a 500, round
and round) cannot make `cockpit run` call it for ever. The engine pauses a branch after
`max_unusable` unusable replies in a row and stops the session when no branch can go on; a hard
cap (`max_calls_per_eval` per evaluation of the budget) bounds the requests whatever happens; a
429's Retry-After is honoured and shown as "waiting for provider until HH:MM:SS".

The engines here are real `cockpit run` processes evaluating the toy task in real workers.
"""

from __future__ import annotations

import itertools
import json
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from agents_helpers import reply_with
from fake_provider import Reply

ROOT = Path(__file__).resolve().parents[2]
TOYTASK = ROOT / "tests" / "engine" / "toytask"
COCKPIT = (sys.executable, "-c", "import sys; from cockpit.cli import main; sys.exit(main())")
KERNELS = [
    f"import torch\n\nFAMILY = 'baseline'\n\n\ndef kernel(x: torch.Tensor) -> torch.Tensor:\n"
    f"    return {expr}\n"
    for expr in (
        "x * 2 + 1",
        "x + x + 1",
        "torch.addcmul(torch.ones_like(x), x, torch.full_like(x, 2.0))",
    )
]
CYCLE = [
    reply_with(KERNELS[0]),
    "I would tile the rows and keep the maximum in registers; let me think it over.",  # prose
    reply_with(KERNELS[1]),
    reply_with("import torch\n\ndef kernel(x):\n    return (x * 2 + 1\n"),  # a syntax error
    Reply(status=429),
    Reply(status=500),
    reply_with(KERNELS[2]),
]


def _cycle(provider, replies) -> None:
    """The provider answers from `replies`, round and round, for ever."""
    it, lock = itertools.cycle(replies), threading.Lock()

    def nxt() -> Reply:
        with lock:
            r = next(it)
        return Reply(text=r) if isinstance(r, str) else r

    provider.next = nxt


def _cockpit(tmp_path: Path, *args: str, timeout: float = 240) -> subprocess.CompletedProcess:
    env = {
        **__import__("os").environ,
        "COCKPIT_SESSIONS_DIR": str(tmp_path / "sessions"),
        "PYTHONPATH": str(ROOT),
    }
    return subprocess.run(
        [*COCKPIT, *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )


def _profile(write_profile, provider, **fields) -> Path:
    base = {
        "proposer": "llm",
        "model": "openai/cycler",
        "api_base": provider.openai_base,
        "retries": 2,
        "backoff_s": 0.01,
        "timeout_s": 10,
        "stream": False,
        "max_tokens": 2000,
    }
    return write_profile(name="cycler", **(base | fields))


def _run(tmp_path: Path, session: str, profile: Path, budget: int, *extra: str):
    """`cockpit run` on the toy task with one branch on the CPU (quick mode)."""
    return _cockpit(
        tmp_path, "run", str(TOYTASK), "--session", session, "--agent", str(profile),
        "--budget", str(budget), "--beam", "1", "--device", "cpu", "--mode", "quick", *extra,
    )  # fmt: skip


def _status(tmp_path: Path, name: str) -> dict:
    r = _cockpit(tmp_path, "status", name, "--json", timeout=60)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_a_model_that_repeats_itself_is_paused_and_the_session_stops_resumably(
    provider, keys, write_profile, tmp_path
):
    _cycle(provider, CYCLE)
    profile = _profile(write_profile, provider, max_calls_per_eval=50)
    run = _run(tmp_path, "loop", profile, 8, "--plateau", "50")
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    first = len(provider.received)
    st = _status(tmp_path, "loop")
    assert st["state"] == "stopped", st
    assert re.search(
        r"every branch is paused or retired .*5 unusable replies in a row", st["reason"] or ""
    ), st["reason"]
    assert st["evaluations"] < 8  # the budget was not what stopped it
    (branch,) = st["branches"]
    assert branch["state"] == "paused"
    assert re.match(r"5 unusable replies in a row \(last: ", branch["reason"]), branch["reason"]
    table = _cockpit(tmp_path, "status", "loop", timeout=60).stdout
    assert "stopped (every branch is paused or retired" in table
    assert "5 unusable replies in a row (last:" in table, table
    # bounded: three kernels, then five unusable proposals of at most 2 replies and their retries
    assert first <= 3 * 3 + 5 * 2 * 3, first
    # the record says why, as events (the cockpit and notifications read these)
    from cockpit.store import SessionRecord
    from cockpit.tui.notify import notices

    with SessionRecord.open_readonly(tmp_path / "sessions" / "loop") as rec:
        evs = rec.events(kinds=["branch_state"])
        paused = [e for e in evs if e.payload.get("cause") == "unusable"]
        assert len(paused) == 1
        kinds = {n.kind: n.message for n in notices(rec.events())}
    assert "5 unusable replies" in kinds.get("paused", ""), kinds
    assert "provider" not in kinds or "unusable" not in kinds["provider"]

    # resumable: the stalled branch runs again, and stops again after five more
    again = _cockpit(tmp_path, "resume", "loop")
    assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-3000:]
    st2 = _status(tmp_path, "loop")
    assert st2["state"] == "stopped" and "unusable" in (st2["reason"] or ""), st2
    assert first < len(provider.received) <= first + 5 * 2 * 3


def test_the_model_call_cap_stops_the_session_at_an_exact_number_of_requests(
    provider, keys, write_profile, tmp_path
):
    _cycle(provider, CYCLE)
    profile = _profile(write_profile, provider, max_calls_per_eval=2, max_unusable=1000)
    run = _run(tmp_path, "cap", profile, 6, "--plateau", "50")
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert len(provider.received) == 2 * 6  # every request counts: 429s, 500s and repairs too
    st = _status(tmp_path, "cap")
    assert st["state"] == "stopped", st
    assert re.match(
        r"model call cap reached: 12 requests \(2 per evaluation of a budget of 6\); to go on: "
        r"cockpit send cap set-budget N --queue, then cockpit resume cap",
        st["reason"] or "",
    ), st["reason"]
    # resumable: a larger budget raises the cap with it
    assert _cockpit(tmp_path, "send", "cap", "set-budget", "8", "--queue").returncode == 0
    again = _cockpit(tmp_path, "resume", "cap")
    assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-3000:]
    assert len(provider.received) == 2 * 8
    st = _status(tmp_path, "cap")
    assert st["state"] == "stopped" and "16 requests" in st["reason"], st


def test_profile_fields_for_the_caps_are_checked(write_profile):
    from cockpit.agents.profiles import ProfileError, parse_profile

    for field, bad in (("max_unusable", 0), ("max_calls_per_eval", "many")):
        path = write_profile(name=f"bad_{field}", proposer="llm", model="openai/x", **{field: bad})
        with pytest.raises(ProfileError, match=rf"field '{field}' must be an integer >= 1"):
            parse_profile(path)
    ok = parse_profile(write_profile(name="defaults", proposer="llm", model="openai/x"))
    assert (ok.settings().max_unusable, ok.settings().max_calls_per_eval) == (5, 4)


# --- waiting for the provider --------------------------------------------------------------


def test_retry_after_is_honoured_and_announced(provider, make_proposer, request_for):
    provider.push(Reply(status=429, retry_after="2"), reply_with(KERNELS[0]))
    waits: list[tuple[float, str]] = []
    prop = make_proposer().propose(
        request_for(on_wait=lambda until, why: waits.append((until, why)))
    )
    assert "x * 2 + 1" in prop.source
    first, second = provider.received[:2]
    assert second.t - first.t >= 1.9  # the server asked for 2 s
    ((until, why),) = waits
    assert 1.9 <= until - first.t <= 3.0 and "429" in why  # announced before the wait


def test_without_retry_after_the_backoff_grows_exponentially_with_jitter(
    provider, make_proposer, request_for
):
    provider.push(*[Reply(status=500)] * 3, reply_with(KERNELS[0]))
    waits: list[float] = []
    prop = make_proposer(retries=3, backoff_s=0.25).propose(
        request_for(on_wait=lambda until, why: waits.append(until - time.time()))
    )
    assert "x * 2 + 1" in prop.source
    assert len(waits) == 3
    for k, w in enumerate(waits):  # 0.25 * 2**k, +-20 %
        assert 0.25 * 2**k * 0.75 <= w <= 0.25 * 2**k * 1.25, waits
    gaps = [b.t - a.t for a, b in itertools.pairwise(provider.received)]
    assert gaps[0] < gaps[1] < gaps[2], gaps


def test_the_branch_shows_waiting_for_provider_until_a_time(
    provider, keys, write_profile, tmp_path
):
    provider.push(Reply(status=429, retry_after="4"), reply_with(KERNELS[0]))
    provider.default = Reply(text=reply_with(KERNELS[1]))
    profile = _profile(write_profile, provider)
    env_run = _run(tmp_path, "wait", profile, 3, "--detach")
    assert env_run.returncode == 0, env_run.stderr
    seen = None
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and seen is None:
        st = _status(tmp_path, "wait")
        for b in st["branches"]:
            m = re.match(r"waiting for provider until (\d\d:\d\d:\d\d) \(", b["reason"] or "")
            if m:
                seen = m.group(1)
        if st["state"] in ("done", "stopped", "crashed"):
            break
        time.sleep(0.2)
    assert seen, "the status never showed the wait"
    deadline = time.monotonic() + 120
    while _status(tmp_path, "wait")["state"] == "running" and time.monotonic() < deadline:
        time.sleep(0.5)
    st = _status(tmp_path, "wait")
    assert st["state"] == "done", st
    assert st["branches"][0]["reason"] in (None, "the provider answered") or "waiting" not in (
        st["branches"][0]["reason"] or ""
    )
