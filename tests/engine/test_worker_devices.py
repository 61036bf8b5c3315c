"""Each evaluation worker gets one of the parent's GPUs. Session 5 on the H200: with
`CUDA_VISIBLE_DEVICES=1 cockpit run …` the single worker set `CUDA_VISIBLE_DEVICES=0` for itself
(its slot number) and evaluated on the GPU another job was measuring on."""

from __future__ import annotations

import os

import pytest

from cockpit.engine.workers import WorkerPool, visible_ids


@pytest.mark.parametrize(
    "visible, count, want",
    [
        (None, 2, ["0", "1"]),
        ("1", 2, ["1"]),
        ("3,5", 8, ["3", "5"]),
        (" 2 , 0 ", 4, ["2", "0"]),
        ("GPU-8a7b,GPU-77c1", 2, ["GPU-8a7b", "GPU-77c1"]),
        ("", 2, []),
    ],
)
def test_each_worker_gets_one_of_the_parents_devices(visible, count, want) -> None:
    assert visible_ids(visible, count) == want


def test_a_spawned_worker_sees_the_parents_gpu_not_its_slot_number(monkeypatch) -> None:
    # no NVML on a CPU machine: the one worker keeps the parent's setting as it is
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "7")
    pool = WorkerPool("cuda")
    try:
        assert pool.devices == ["7"]
        seen = pool.slots[0].submit(os.getenv, "CUDA_VISIBLE_DEVICES").result(timeout=120)
    finally:
        pool.shutdown()
    assert seen == "7"
