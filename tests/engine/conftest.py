"""Fixtures for the loop's integration tests (helpers in engine_helpers.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from engine_helpers import Cockpit
from ray_cluster import cluster, nodes  # noqa: F401 - the local Ray cluster's fixtures


@pytest.fixture
def cockpit(tmp_path: Path) -> Iterator[Cockpit]:
    c = Cockpit(sessions=tmp_path / "sessions", cwd=tmp_path)
    try:
        yield c
    finally:
        c.kill_all()
