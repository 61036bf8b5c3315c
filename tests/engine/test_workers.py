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


def test_the_pool_rebuilt_after_a_worker_died_keeps_every_option(tmp_path) -> None:
    """A dead worker's pool is rebuilt from the run's configuration: the exchange, the cascade
    and the warm arenas of the first pool, not the defaults."""
    from engine_helpers import TOYTASK

    from cockpit.engine.config import EngineConfig
    from cockpit.engine.engine import Engine
    from cockpit.store import create_session

    cfg = EngineConfig(task=str(TOYTASK), exchange="files", cascade="off", warm="off")
    folder = create_session(
        task="toyscale", device="cpu", sessions_dir=tmp_path / "s", config=cfg.to_dict()
    )
    engine = Engine(folder, cfg, object())
    pool = engine._new_pool()
    try:
        assert (pool.exchange, pool.cascade, pool.warm) == ("files", False, False)
    finally:
        pool.shutdown()
        engine.close()
