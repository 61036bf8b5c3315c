"""Every message that crosses the judge-arena channel fits its type in cockpit/harness/protocol.py.

A real quick evaluation of the eager softmax seed on the CPU (configuration, set-up, null bursts,
load, verify, time, bursts, reveals, profile, goodbye) and a real A/B comparison (load_b,
compare) run while `Channel.send` and `Channel.recv` record a copy of each message on its way
through. Each request must fit the type of its `op`, each reply one of the types its request may
get: no key the type does not declare, every required key present, nested messages (tensor
references, checked calls, the policy) alike, and values of the declared kinds.
"""

from __future__ import annotations

import json
import subprocess
import sys
import types
import typing
from typing import Any, Literal, get_args, get_origin, get_type_hints, is_typeddict

import pytest
from judge_helpers import KERNELS, describe, run_judge, task_or_skip

from cockpit.harness import protocol
from cockpit.harness.channel import Channel
from cockpit.harness.judge import Options, compare
from cockpit.harness.task import Shape
from cockpit.harness.timing import Policy

EAGER = KERNELS / "softmax" / "seeds" / "torch_eager.py"


def mismatch(value: Any, tp: Any, where: str = "$") -> str | None:
    """Why `value` does not fit the type `tp`, or None where it does."""
    if tp is Any:
        return None
    if is_typeddict(tp):
        if not isinstance(value, dict):
            return f"{where}: {type(value).__name__}, not an object ({tp.__name__})"
        extra = set(value) - set(tp.__required_keys__ | tp.__optional_keys__)
        missing = set(tp.__required_keys__) - set(value)
        if extra or missing:
            return f"{where} ({tp.__name__}): undeclared {sorted(extra)}, missing {sorted(missing)}"
        hints = get_type_hints(tp)
        for key, v in value.items():
            if why := mismatch(v, hints[key], f"{where}.{key}"):
                return why
        return None
    origin = get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        whys = [mismatch(value, member, where) for member in get_args(tp)]
        return None if None in whys else " | ".join(w for w in whys if w)
    if origin is Literal:
        return None if value in get_args(tp) else f"{where}: {value!r} not in {get_args(tp)}"
    if origin is list:
        if not isinstance(value, list):
            return f"{where}: {type(value).__name__}, not a list"
        (item,) = get_args(tp)
        for i, v in enumerate(value):
            if why := mismatch(v, item, f"{where}[{i}]"):
                return why
        return None
    if origin is dict:
        if not isinstance(value, dict):
            return f"{where}: {type(value).__name__}, not an object"
        _, item = get_args(tp)
        for k, v in value.items():
            if why := mismatch(v, item, f"{where}.{k}"):
                return why
        return None
    if tp is type(None):
        return None if value is None else f"{where}: {value!r} is not null"
    if tp is float:
        ok = isinstance(value, int | float) and not isinstance(value, bool)
    elif tp is int:
        ok = isinstance(value, int) and not isinstance(value, bool)
    else:
        ok = isinstance(value, tp)
    return None if ok else f"{where}: {value!r} is not a {tp.__name__}"


def fits_one(value: Any, members: tuple[type, ...]) -> str | None:
    whys = [mismatch(value, m) for m in members]
    return None if None in whys else "; ".join(w for w in whys if w)


@pytest.fixture
def recorded(monkeypatch: pytest.MonkeyPatch) -> dict[int, list[tuple[str, dict]]]:
    """Per channel, each message in order: ("sent", request) or ("received", reply), copied
    through JSON as they crossed (the judge edits some replies after reading them)."""
    log: dict[int, list[tuple[str, dict]]] = {}
    send, recv = Channel.send, Channel.recv

    def recording_send(self: Channel, msg: dict[str, Any]) -> None:
        log.setdefault(id(self), []).append(("sent", json.loads(json.dumps(msg))))
        send(self, msg)

    def recording_recv(self: Channel, deadline: float) -> dict[str, Any]:
        reply = recv(self, deadline)
        log.setdefault(id(self), []).append(("received", json.loads(json.dumps(reply))))
        return reply

    monkeypatch.setattr(Channel, "send", recording_send)
    monkeypatch.setattr(Channel, "recv", recording_recv)
    return log


def check_conversation(messages: list[tuple[str, dict]]) -> list[str]:
    """Each message against its type; returns the ops seen (in order, first of each)."""
    (first_dir, config), (setup_dir, setup) = messages[0], messages[1]
    assert first_dir == "sent" and (why := mismatch(config, protocol.ArenaConfig)) is None, why
    assert setup_dir == "received" and (why := mismatch(setup, protocol.SetupReply)) is None, why
    ops: list[str] = []
    op = None
    for direction, msg in messages[2:]:
        if direction == "sent":
            op = msg.get("op")
            assert op in protocol.REQUESTS, f"a request without a known op: {msg}"
            why = mismatch(msg, protocol.REQUESTS[op])
            assert why is None, f"{op} request: {why}"
            if op in protocol.SERVED:
                assert isinstance(msg.get("seq"), int), f"{op} request without seq"
            if op not in ops:
                ops.append(op)
        else:
            assert op is not None, f"a reply before any request: {msg}"
            why = fits_one(msg, protocol.REPLIES[op])
            assert why is None, f"{op} reply: {why}"
            if op in protocol.SERVED:
                assert msg.get("seq") is not None, f"{op} reply without seq"
    return ops


def test_an_evaluations_messages_fit_the_protocol(recorded):
    result = run_judge("softmax", EAGER)
    assert result.status == "ok", describe(result)
    assert len(recorded) == 1
    (messages,) = recorded.values()
    ops = check_conversation(messages)
    # what a full evaluation on the CPU sends, in this order
    assert ops == [
        "null_burst",
        "load",
        "verify",
        "time",
        "burst",
        "burst_reveal",
        "profile",
        "bye",
    ]


def test_an_ab_comparisons_messages_fit_the_protocol(recorded):
    source = EAGER.read_text()
    policy = Policy(
        min_samples=5,
        min_total_ms=1.0,
        target_sem=0.05,
        max_total_ms=500.0,
        max_wall_s=30.0,
        max_samples=50,
        warmup_calls=1,
        warmup_ms=0.0,
        check_calls=0,
    )
    shape = Shape({"rows": 64, "cols": 128, "dtype": "float32"}, "benchmark")
    out = compare(
        task_or_skip("softmax"),
        source,
        source,
        Options(device="cpu", mode="quick", policy=policy),
        shapes=[shape],
    )
    assert out["ok"], out
    (messages,) = recorded.values()
    assert check_conversation(messages) == ["load", "load_b", "compare", "bye"]


def test_the_checker_refuses_undeclared_and_missing_keys():
    meta = {"dtype": "float32", "shape": [2], "stride": [1], "device": "cpu", "contiguous": True}
    assert mismatch(dict(meta, file="i1_2.bin"), protocol.TensorMeta) is None
    assert "undeclared ['path']" in mismatch(dict(meta, path="/etc/passwd"), protocol.TensorMeta)
    assert "missing ['stride']" in mismatch(
        {k: v for k, v in meta.items() if k != "stride"}, protocol.TensorMeta
    )
    assert (
        mismatch({"op": "burst", "seq": 1, "k": 3, "seed": 1, "wseed": 2}, protocol.BurstRequest)
        is None
    )
    assert mismatch({"op": "burst", "k": "3", "seed": 1, "wseed": 2}, protocol.BurstRequest)
    assert (
        fits_one({"ok": False, "kind": "crash", "message": "x", "seq": 4}, protocol.REPLIES["time"])
        is None
    )
    assert fits_one({"ok": True, "seq": 4}, protocol.REPLIES["time"])


def test_every_op_has_a_request_and_its_replies():
    assert set(protocol.REQUESTS) == set(protocol.REPLIES)
    assert set(protocol.SERVED) <= set(protocol.REQUESTS)
    for op, tp in protocol.REQUESTS.items():
        assert get_type_hints(tp)["op"] == Literal[op]


def test_the_protocol_module_imports_only_the_standard_library():
    code = (
        "import sys; before = set(sys.modules)\n"
        "import cockpit.harness.protocol\n"
        "print(sorted(m for m in set(sys.modules) - before if m.split('.')[0] in "
        "('torch', 'numpy', 'triton', 'textual', 'rich')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
