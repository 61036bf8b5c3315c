"""The softmax `torch_compile` seed (kernels/softmax/seeds/torch_compile.py) on the CPU.

Inductor compiles the reference's formula per shape; its output goes through the judge's own
element-wise check, as every seed's does. Two shapes only: each new shape is an Inductor compile
(about a second, more when cold). The Triton seeds have tests/test_tiled_row_seeds.py.
"""

from __future__ import annotations

import pytest
import torch
from task_files import load_file

from cockpit.harness.task import load_task
from cockpit.harness.verify import default_check, load_reference

TASK = load_task("softmax")
REF = load_reference(TASK)
SEED = load_file(TASK.seeds_dir / "torch_compile.py", "softmax_torch_compile")


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_torch_compile_seed_passes_the_tolerance(dtype):
    inputs = REF.make_inputs({"rows": 5, "cols": 300, "dtype": dtype}, 2, "cpu")
    before = [t.clone() for t in inputs]
    out = SEED.kernel(*inputs)
    assert out.shape == inputs[0].shape and out.dtype == inputs[0].dtype
    ok, metrics = default_check(TASK, REF, tuple(inputs), [out])
    assert ok, metrics.get("message")
    assert all(torch.equal(a, b) for a, b in zip(inputs, before))  # x is not modified


def test_torch_compile_seed_is_not_a_baseline():
    """Only torch_eager is the task's baseline: the compile seed is scored like any candidate."""
    assert TASK.baseline_seeds == ["torch_eager.py"]
    assert SEED.FAMILY == "torch-compile"
