"""Fixtures for the harness tests: a private data folder per xdist worker, with pinned ceilings."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from cockpit.harness import scoring


@pytest.fixture(scope="session", autouse=True)
def cockpit_data_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """COCKPIT_DATA_DIR for the whole session. tmp_path_factory is per xdist worker, so the
    baselines and compile caches written under it are never shared between workers.

    The CPU ceilings are pinned (huge bandwidth and FLOP rate: every floor is the 0.5 us launch
    floor), so no verdict depends on load. Measured lazily, they are taken once, under whatever
    load the other worker causes, and cached: a floor measured during a torch.compile next door
    was 2.7x too high and (before CPU floors stopped gating) rejected the honest eager softmax
    seed as `impossible_speed`. No test here is about the floor gate.
    """
    data = tmp_path_factory.mktemp("cockpit-data")
    key = scoring.machine_key("cpu")
    ceilings = {"device": "cpu", "key": key, "bandwidth": 1e15, "fp32": 1e18, "tf32": 1e18,
                "bf16": 1e18, "measured": "pinned by tests/harness/conftest.py"}
    (data / "ceilings").mkdir()
    (data / "ceilings" / f"{key}.json").write_text(json.dumps(ceilings))
    mp = pytest.MonkeyPatch()
    mp.setenv("COCKPIT_DATA_DIR", str(data))
    yield data
    mp.undo()
