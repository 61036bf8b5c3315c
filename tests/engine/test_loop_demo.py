"""`cockpit demo`, the README's first command, finishes on a CPU-only machine."""

from __future__ import annotations

from engine_helpers import Cockpit


def test_demo_with_a_small_budget_finishes_with_exit_0(cockpit: Cockpit) -> None:
    proc = cockpit("demo", "--budget", "4", "--device", "cpu", timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    name = proc.stdout.split()[1]
    assert proc.stdout.rstrip().endswith(f"session {name}: done")
    st = cockpit.status(name)
    assert (st["task"], st["state"], st["evaluations"]) == ("softmax", "done", 4)
    assert st["best"] is not None
