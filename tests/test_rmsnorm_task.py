"""The RMSNorm task (kernels/rmsnorm): task.toml, inputs, reference, the seeds and their checks.

The reference is loaded the way the judge loads it (`verify.load_reference`) and the seeds from
their files, never as packages; every seed output goes through the judge's own element-wise
check (`verify.default_check`), so a pass here means the seed's numbers pass in the harness too.
Everything runs on the CPU; Triton runs in its interpreter.
"""

from __future__ import annotations

import os

os.environ.setdefault("TRITON_INTERPRET", "1")  # before triton is imported (conftest sets it too)

import tomllib  # noqa: E402
from collections.abc import Callable  # noqa: E402
from pathlib import Path  # noqa: E402
from types import ModuleType  # noqa: E402

import pytest  # noqa: E402
import torch  # noqa: E402
from task_files import load_file

from cockpit.harness.static_scan import scan  # noqa: E402
from cockpit.harness.task import load_task  # noqa: E402
from cockpit.harness.verify import default_check, load_reference  # noqa: E402

TASK = load_task("rmsnorm")
TOML = tomllib.loads((TASK.root / "task.toml").read_text())
ref = load_reference(TASK)
CPU_SHAPES = [s for name in ("public", "benchmark", "hidden") for s in TASK.shape_set("cpu", name)]


def _load(path: Path) -> ModuleType:
    return load_file(path, f"rmsnorm_task_{path.stem}")


SEEDS = {p.stem: _load(p) for p in TASK.seeds()}


def inputs(rows: int, cols: int, dtype: str = "float32", seed: int = 0) -> tuple[torch.Tensor, ...]:
    return ref.make_inputs({"rows": rows, "cols": cols, "dtype": dtype}, seed, "cpu")


def check(x: torch.Tensor, w: torch.Tensor, y: torch.Tensor) -> tuple[bool, dict]:
    return default_check(TASK, ref, (x, w), [y])


def _id(shape) -> str:
    return f"{shape.set}-{shape.describe().replace(' ', '-')}"


# --- task.toml ----------------------------------------------------------------------------------


def test_task_declares_the_signature_the_seeds_implement():
    assert TASK.inputs == ["x", "weight"] and TASK.outputs == ["y"]
    assert TASK.batch_inputs == ["x"] and TASK.baseline_seeds == ["torch_eager.py"]
    assert set(TASK.tolerance) == {"float32", "bfloat16"}
    assert {"torch_eager", "triton_rowwise"} <= set(SEEDS)


def test_eps_is_the_same_in_task_toml_its_description_the_reference_and_every_seed():
    assert TOML["constants"]["eps"] == ref.EPS == 1e-6
    assert "eps = 1e-6" in TASK.description
    for name, seed in SEEDS.items():
        assert getattr(seed, "EPS", TOML["constants"]["eps"]) == TOML["constants"]["eps"], name


def test_roofline_counts_x_and_y_once_and_weight_once():
    shape = TASK.shape_set("gpu", "benchmark")[0]  # 8192 x 8192 bfloat16
    flops, nbytes = TASK.floor_inputs(shape)
    assert flops == 4 * 8192 * 8192
    assert nbytes == (2 * 8192 * 8192 + 8192) * 2


def test_gpu_hidden_set_has_one_untimed_shape_past_int32_indexing():
    big = [
        s for s in TASK.shape_set("gpu", "hidden") if s.params["rows"] * s.params["cols"] > 2**31
    ]
    assert len(big) == 1 and not big[0].timed
    assert all(s.params["rows"] <= 32 for s in TASK.shape_set("cpu", "public"))


# --- inputs -------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize(("rows", "cols"), [(1, 1), (3, 17), (64, 1000)])
def test_inputs_have_the_requested_shape_dtype_and_layout(rows, cols, dtype):
    x, w = inputs(rows, cols, dtype)
    want = getattr(torch, dtype)
    assert x.shape == (rows, cols) and x.dtype == want and x.is_contiguous()
    assert w.shape == (cols,) and w.dtype == want
    assert x.isfinite().all() and w.isfinite().all()


def test_same_seed_gives_the_same_inputs_and_another_seed_different_ones():
    a, b, c = inputs(16, 300, seed=5), inputs(16, 300, seed=5), inputs(16, 300, seed=6)
    assert all(torch.equal(p, q) for p, q in zip(a, b))
    assert not any(torch.equal(p, q) for p, q in zip(a, c))


def test_row_scales_span_orders_of_magnitude_and_some_weights_are_negative():
    x, w = inputs(256, 512)
    rms = x.double().pow(2).mean(dim=-1).sqrt()
    assert rms.min() < 1e-3 and rms.max() > 1e2  # eps dominates some rows and not others
    assert (w < 0).any() and (w > 0).any()


def test_inputs_generated_in_row_blocks_keep_every_row_on_its_own_scale(monkeypatch):
    """x is generated a block of rows at a time (so a > 2**31-element x needs no float32 copy);
    with a ragged last block each row must still be filled, with the scale drawn for it."""
    x, _ = inputs(40, 512, seed=3)
    monkeypatch.setattr(ref, "_CHUNK_ELEMS", 512 * 7)  # 7 rows per block, 5 in the last one
    y, _ = inputs(40, 512, seed=3)
    assert torch.equal(y, inputs(40, 512, seed=3)[0])  # still deterministic
    ratio = y.double().pow(2).mean(-1).sqrt() / x.double().pow(2).mean(-1).sqrt()
    assert ((ratio > 0.8) & (ratio < 1.25)).all()  # same per-row scale, other noise


# --- reference ----------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_reference_in_float64_is_the_textbook_formula(dtype):
    x, w = inputs(32, 333, dtype)
    x64, w64 = x.double(), w.double()
    want = x64 / torch.sqrt((x64 * x64).sum(dim=1, keepdim=True) / 333 + 1e-6) * w64
    got = ref.reference(x64, w64)
    assert got.dtype == torch.float64
    torch.testing.assert_close(got, want, rtol=1e-13, atol=0)


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_reference_keeps_x_dtype_and_runs_on_meta(dtype):
    x, w = inputs(4, 40, dtype)
    assert ref.reference(x, w).dtype == x.dtype
    meta = ref.reference(x.to("meta"), w.to("meta"))
    assert meta.shape == x.shape and meta.dtype == x.dtype
    assert check(x, w, ref.reference(x, w))[0]


# --- seeds --------------------------------------------------------------------------------------

FAST_SEEDS = [name for name in SEEDS if name != "torch_compile"]


@pytest.mark.parametrize("name", FAST_SEEDS)
@pytest.mark.parametrize("shape", CPU_SHAPES, ids=_id)
def test_seed_passes_the_task_tolerance_on_every_cpu_shape(name, shape):
    x, w = ref.make_inputs(dict(shape.params), 11, "cpu")
    x0, w0 = x.clone(), w.clone()
    y = SEEDS[name].kernel(x, w)
    assert y.shape == x.shape and y.dtype == x.dtype and y.is_contiguous()
    ok, metrics = check(x, w, y)
    assert ok, metrics.get("message")
    assert torch.equal(x, x0) and torch.equal(w, w0)


@pytest.mark.skipif("torch_compile" not in SEEDS, reason="no torch_compile seed")
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_torch_compile_seed_passes_the_tolerance(dtype):
    """Two shapes only: each new shape is an Inductor compile (about a second, more when cold)."""
    x, w = inputs(5, 300, dtype, seed=2)
    ok, metrics = check(x, w, SEEDS["torch_compile"].kernel(x, w))
    assert ok, metrics.get("message")


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize(("rows", "cols"), [(3, 64), (2, 65), (3, 1000)])
def test_triton_two_pass_path_matches_on_rows_longer_than_max_block(monkeypatch, rows, cols, dtype):
    """The default MAX_BLOCK (8192) sends only cols > 8192 to the loop; lower it to cover the
    exact multiple, one past it and a ragged tail cheaply."""
    seed = SEEDS["triton_rowwise"]
    monkeypatch.setattr(seed, "MAX_BLOCK", 32)
    x, w = inputs(rows, cols, dtype, seed=4)
    ok, metrics = check(x, w, seed.kernel(x, w))
    assert ok, metrics.get("message")


@pytest.mark.parametrize("name", sorted(SEEDS))
def test_seed_source_passes_the_static_scan(name):
    """Baselines are exempt from the task's forbidden list, not from the static rules."""
    path = TASK.seeds_dir / f"{name}.py"
    assert scan(path.read_text(), TASK.forbidden) == []
    assert isinstance(SEEDS[name].FAMILY, str) and SEEDS[name].FAMILY


# --- the inputs and tolerances catch wrong kernels ----------------------------------------------


def _no_eps(x, w):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True)) * w.float()).to(x.dtype)


def _bf16_sequential_sum(x, w):
    """Squares summed in bfloat16 one column after another, as a naive loop would."""
    sq = x.to(torch.bfloat16).pow(2)
    acc = torch.zeros(x.shape[0], dtype=torch.bfloat16)
    for j in range(x.shape[1]):
        acc = acc + sq[:, j]
    rstd = torch.rsqrt(acc.float() / x.shape[1] + ref.EPS)[:, None]
    return (x.float() * rstd * w.float()).to(x.dtype)


def _layernorm(x, w):
    y = torch.nn.functional.layer_norm(x.float(), x.shape[-1:], eps=ref.EPS) * w.float()
    return y.to(x.dtype)


def _abs_weight(x, w):
    return ref.reference(x, w.abs())


def _bf16_intermediate(x, w):
    """float32 contract broken: x * rstd rounded to bfloat16 before the weight."""
    xf = x.float()
    rstd = torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + ref.EPS)
    return ((xf * rstd).to(torch.bfloat16).float() * w.float()).to(x.dtype)


def _hf_order(x, w):
    """Hugging Face's LlamaRMSNorm order (round, then weight in x's dtype): legitimate."""
    xf = x.float()
    return w * (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + ref.EPS)).to(x.dtype)


WRONG: list[tuple[Callable, int, int, str]] = [
    (_no_eps, 16, 256, "float32"),
    (_no_eps, 16, 256, "bfloat16"),
    (_bf16_sequential_sum, 16, 1024, "bfloat16"),
    (_layernorm, 16, 256, "bfloat16"),
    (_abs_weight, 8, 64, "float32"),
    (_bf16_intermediate, 8, 64, "float32"),
]


@pytest.mark.parametrize(
    ("fn", "rows", "cols", "dtype"), WRONG, ids=lambda v: getattr(v, "__name__", str(v))
)
def test_a_wrong_kernel_fails_the_check_on_a_cpu_shape(fn, rows, cols, dtype):
    x, w = inputs(rows, cols, dtype, seed=9)
    ok, metrics = check(x, w, fn(x, w))
    assert not ok and metrics["tol_ratio"] > 2


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_the_hugging_face_rounding_order_passes(dtype):
    x, w = inputs(16, 1024, dtype, seed=9)
    assert check(x, w, _hf_order(x, w))[0]
