"""Evaluation workers die with the engine, even one killed while the worker was starting."""

from __future__ import annotations

import os
import subprocess
import sys

SNIPPET = "from cockpit.engine.workers import _init_worker; _init_worker(None, {pid}); print('alive')"


def test_a_worker_whose_engine_is_already_gone_exits_at_once() -> None:
    gone = 2**22 + 12345  # above pid_max on most systems: certainly not our parent
    proc = subprocess.run([sys.executable, "-c", SNIPPET.format(pid=gone)], capture_output=True, text=True)
    assert proc.returncode == 1
    assert "alive" not in proc.stdout


def test_a_worker_whose_engine_runs_carries_on() -> None:
    proc = subprocess.run([sys.executable, "-c", SNIPPET.format(pid=os.getpid())], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "alive"
