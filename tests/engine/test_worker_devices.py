"""Each evaluation worker gets one of the parent's GPUs: with `CUDA_VISIBLE_DEVICES=1 cockpit run
…` a worker that set `CUDA_VISIBLE_DEVICES` to its slot number (0) would evaluate on the GPU
another job is measuring on."""

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


UUIDS = ["GPU-8a7b1c00-0000", "GPU-77c10000-1111", "GPU-8a7b2d00-2222"]


@pytest.mark.parametrize(
    "visible, want",
    [
        (None, [0, 1, 2]),  # unset: every GPU
        ("1", [1]),  # the loop on GPU 1 of 2 samples GPU 1 only
        ("2,0", [2, 0]),  # CUDA's order, not NVML's
        ("GPU-77c1", [1]),  # a unique UUID prefix, as CUDA accepts it
        ("GPU-8a7b2d00-2222,1", [2, 1]),
        ("GPU-8a7b", []),  # ambiguous prefix: names no GPU, and ends the list as in CUDA
        ("0,7,1", [0]),  # no GPU 7: CUDA stops at the first invalid entry
        ("-1", []),
        ("", []),
        ("1,1", [1]),
        ("MIG-4f3e", [0, 1, 2]),  # MIG slices: NVML's whole-GPU counters, every GPU
    ],
)
def test_telemetry_samples_only_the_gpus_the_session_may_use(visible, want) -> None:
    from cockpit.engine.telemetry import nvml_indices

    assert nvml_indices(visible, UUIDS) == want
