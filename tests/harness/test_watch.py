"""The forbidden-call watch (`arena._make_watch`): the task's forbidden aten ops are replaced in
the dispatcher by a kernel that records and raises, so every path to them is seen and ordinary ops
pay nothing; a canary after each watched call proves the replacement is still in place. Each test
runs in a fresh process: the replacement is process-wide, as it is in the arena."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

ROOT_SETUP = """
import json, sys, threading, torch
from cockpit.harness.arena import CallFailed, _make_watch
OPS = frozenset(["geqrf", "linalg_qr", "qr", "linalg_householder_product", "orgqr", "ormqr"])
NAMES = frozenset(["geqrf", "householder_product", "orgqr", "ormqr"])
watch = _make_watch(OPS, NAMES, torch.device("cpu"))
A = torch.randn(2, 5, 5)
out = {}
def run(name, fn):
    try:
        _, ops = watch(fn)
        out[name] = {"ops": ops}
    except CallFailed as exc:
        out[name] = {"raised": exc.kind, "message": exc.message}
"""


def watched(body: str) -> dict:
    code = ROOT_SETUP + textwrap.dedent(body) + "\nprint(json.dumps(out))\n"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout.strip().splitlines()[-1])


def test_ordinary_ops_are_untouched_and_nothing_is_reported() -> None:
    out = watched("""
        def honest():
            h = A.clone()
            return torch.linalg.vector_norm(h, dim=1) + torch.bmm(h, h).sum()
        run("honest", honest)
        out["same"] = bool(torch.equal(watch(lambda: A @ A)[0], A @ A))
    """)
    assert out["honest"] == {"ops": []}
    assert out["same"] is True


def test_every_path_to_a_forbidden_op_is_seen_and_the_op_never_runs() -> None:
    out = watched("""
        run("plain", lambda: torch.geqrf(A))
        run("computed", lambda: getattr(torch.ops.aten, "ge" + "qrf").default(A))
        def no_python_dispatch():
            with torch._C._DisableTorchDispatch():
                return torch.ops.aten.linalg_qr.default(A)
        run("disable_dispatch", no_python_dispatch)
        def in_thread():
            t = threading.Thread(target=lambda: torch.linalg.householder_product(A, A[:, 0]))
            t.start(); t.join()
            return A * 2
        run("thread", in_thread)
        def caught():
            try:
                torch.orgqr(A, A[:, 0])
            except Exception:
                pass
            return A + 1
        run("caught", caught)
        compiled = torch.compile(lambda x: torch.geqrf(x)[0] * 2, backend="eager")
        run("compiled", lambda: compiled(A))
    """)
    for name in ("plain", "computed", "compiled"):
        assert out[name]["raised"] == "forbidden_call" and "aten::geqrf" in out[name]["message"]
    assert out["disable_dispatch"]["raised"] == "forbidden_call"
    assert "aten::linalg_qr" in out["disable_dispatch"]["message"]
    # the thread's call failed inside the thread; the candidate's call returned, and is reported
    assert "aten::linalg_householder_product" in out["thread"]["ops"]
    assert "aten::orgqr" in out["caught"]["ops"]


def test_a_forbidden_call_between_watched_calls_shows_in_the_next_report() -> None:
    out = watched("""
        try:
            torch.ormqr(A, A[:, 0], A)  # unwatched: at import, or a late thread
        except Exception as exc:
            out["unwatched"] = type(exc).__name__
        run("next", lambda: A + 1)
        run("after", lambda: A + 1)
    """)
    assert out["unwatched"] == "ForbiddenCall"
    assert out["next"]["ops"] == ["aten::ormqr"]
    assert out["after"]["ops"] == []


def test_removing_the_watch_is_reported_by_the_canary() -> None:
    """A candidate that finds the watch and destroys its registrations gets the real op back,
    and the canary after the call says so."""
    out = watched("""
        import gc
        from cockpit.harness import arena
        w = next(o for o in gc.get_objects() if isinstance(o, arena._BackendWatch))
        out["canaries"] = sorted(f"{n}:{d.type}" for n, _, d in w.canaries)
        def restore_and_call():
            w.lib._destroy()
            return torch.geqrf(A)[0]
        run("restored", restore_and_call)
    """)
    # every forbidden op has a working canary (one that an argument check stops first would be
    # left out at start-up rather than reject every candidate later)
    assert out["canaries"] == [f"{n}:cpu" for n in sorted(
        ["geqrf", "linalg_qr", "qr", "linalg_householder_product", "orgqr", "ormqr"])]  # fmt: skip
    ops = out["restored"]["ops"]
    assert "the watch on aten::geqrf (cpu) was removed" in ops, ops
