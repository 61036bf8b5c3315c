"""The QR task (kernels/qr): input families, the checker, the seeds and task.toml.

The reference and seeds are loaded from their files, as the judge loads them, not imported as
packages. Everything runs on the CPU in a few seconds.
"""

from __future__ import annotations

import tomllib
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest
import torch
from task_files import load_file
from torch.utils._python_dispatch import TorchDispatchMode

TASK_DIR = Path(__file__).resolve().parents[1] / "kernels" / "qr"
SEED_NAMES = ("torch_geqrf", "householder_torch", "blocked_wy")
OWN_SEEDS = ("householder_torch", "blocked_wy")  # everything but the geqrf baseline


def _load(path: Path) -> ModuleType:
    return load_file(path, f"qr_task_{path.stem}")


ref = _load(TASK_DIR / "reference.py")
SEEDS = {name: _load(TASK_DIR / "seeds" / f"{name}.py") for name in SEED_NAMES}
TASK = tomllib.loads((TASK_DIR / "task.toml").read_text())
STRESS = [f for f in ref.FAMILIES if f != "dense"]


def inputs(family: str, batch: int, n: int, cond: float = 2.0, seed: int = 0) -> torch.Tensor:
    shape = {"batch": batch, "n": n, "cond": cond, "family": family, "dtype": "float32"}
    (a,) = ref.make_inputs(shape, seed, "cpu")
    return a


def factor(seed_name: str, a: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    return SEEDS[seed_name].kernel(a.clone())


# --- input families ------------------------------------------------------------------------


@pytest.mark.parametrize("family", ref.FAMILIES)
@pytest.mark.parametrize("n", [1, 2, 3, 17, 64])
def test_every_family_makes_contiguous_float32_batches_of_the_requested_size(family, n):
    a = inputs(family, 5, n)
    assert a.shape == (5, n, n) and a.dtype == torch.float32 and a.is_contiguous()
    assert a.isfinite().all()


@pytest.mark.parametrize("family", ref.FAMILIES)
def test_same_seed_gives_same_matrices_and_another_seed_different_ones(family):
    assert torch.equal(inputs(family, 4, 24, seed=7), inputs(family, 4, 24, seed=7))
    assert not torch.equal(inputs(family, 4, 24, seed=7), inputs(family, 4, 24, seed=8))


def test_dense_columns_shrink_by_cond_decades():
    a = inputs("dense", 200, 16, cond=3).double()
    col_rms = a.pow(2).mean(dim=(0, 1)).sqrt()
    assert col_rms[0] / col_rms[-1] == pytest.approx(1e3, rel=0.2)


def test_rankdef_zeroes_the_last_quarter_of_columns_and_at_least_one():
    a = inputs("rankdef", 3, 32)
    assert (a[:, :, 24:] == 0).all() and (a[:, :, :24] != 0).any(dim=1).all()
    assert (inputs("rankdef", 3, 2)[:, :, 1] == 0).all()


def test_upper_is_upper_triangular_with_a_diagonal_bounded_away_from_zero():
    a = inputs("upper", 4, 20)
    assert torch.equal(a, a.triu())
    assert (a.diagonal(dim1=-2, dim2=-1).abs() >= 0.25).all()


def test_nearrank_tail_columns_repeat_head_columns_up_to_small_noise():
    a = inputs("nearrank", 3, 32)
    diff = (a[:, :, 24:] - a[:, :, :8]).abs()
    assert diff.max() < 1e-3 and diff.max() > 0


def test_clustered_has_half_its_columns_at_float32_noise_level():
    a = inputs("clustered", 3, 32)
    assert a[:, :, 18:].abs().max() < 1e-5  # 4 * eps32 scale
    middle = a[:, :, 14:18].abs().max()
    assert 1e-5 < middle < 1e-2  # sqrt(eps32) scale
    assert a[:, :, :14].abs().max() > 0.5


def test_band_is_zero_outside_its_bandwidth():
    n = 40
    a = inputs("band", 3, n)
    i = torch.arange(n)
    outside = (i[:, None] - i[None, :]).abs() > 2  # w = max(2, min(32, 40 // 32)) = 2
    assert (a[:, outside] == 0).all()


def test_nearcollinear_columns_differ_only_by_noise():
    a = inputs("nearcollinear", 3, 16)
    assert (a - a[:, :, :1]).abs().max() < 1e-2


def test_rowscale_rows_shrink_by_at_least_four_decades():
    a = inputs("rowscale", 200, 16, cond=1).double()
    row_rms = a.pow(2).mean(dim=(0, 2)).sqrt()
    assert row_rms[0] / row_rms[-1] == pytest.approx(1e4, rel=0.2)


@pytest.mark.parametrize("batch", [2, 3, 5, 16, 100])
def test_mixed_batches_always_hold_a_dense_and_a_stress_matrix(batch):
    for seed in range(200):
        chosen = ref.mixed_families(batch, seed)
        assert len(chosen) == batch and set(chosen) <= set(ref.FAMILIES) - {"mixed"}
        assert "dense" in chosen and any(f != "dense" for f in chosen)


def test_mixed_draws_dense_most_often_and_every_stress_family_sometimes():
    chosen = [f for seed in range(20) for f in ref.mixed_families(100, seed)]
    share = chosen.count("dense") / len(chosen)
    assert share == pytest.approx(6 / 13, abs=0.05)  # weight 6 of 6 + 7 * 1
    assert set(chosen) == set(ref.FAMILIES) - {"mixed"}


def test_mixed_places_families_at_positions_that_change_with_the_seed():
    assert len({tuple(ref.mixed_families(8, seed)) for seed in range(30)}) > 20


def test_mixed_matrices_have_the_properties_of_their_drawn_family():
    batch, n, seed = 64, 16, 3
    a = inputs("mixed", batch, n, seed=seed)
    for i, family in enumerate(ref.mixed_families(batch, seed)):
        if family == "rankdef":
            assert (a[i, :, 12:] == 0).all()
        if family == "upper":
            assert torch.equal(a[i], a[i].triu())


def test_unknown_family_and_non_float32_dtype_are_refused():
    with pytest.raises(ValueError, match="unknown QR input family"):
        inputs("hilbert", 1, 4)
    with pytest.raises(ValueError, match="float32"):
        ref.make_inputs({"batch": 1, "n": 4, "dtype": "bfloat16"}, 0, "cpu")


# --- the checker accepts correct factors ------------------------------------------------------


@pytest.mark.parametrize("seed_name", SEED_NAMES)
@pytest.mark.parametrize("family", ref.FAMILIES)
@pytest.mark.parametrize("n", [1, 2, 3, 24])
def test_check_accepts_every_seed_on_every_family(seed_name, family, n):
    a = inputs(family, 4, n)
    ok, metrics = ref.check((a,), factor(seed_name, a))
    assert ok, metrics["message"]
    assert metrics["failing_matrices"] == 0 and metrics["residual_ratio"] <= 1


@pytest.mark.parametrize("seed_name", OWN_SEEDS)
@pytest.mark.parametrize("family", ["mixed", "rankdef", "upper", "nearcollinear"])
def test_seeds_pass_at_sizes_beyond_one_panel(seed_name, family):
    a = inputs(family, 2, 300)
    ok, metrics = ref.check((a,), factor(seed_name, a), strict=True)
    assert ok, metrics["message"]


@pytest.mark.parametrize("nb", SEEDS["blocked_wy"].TUNABLES["NB"])
def test_blocked_wy_passes_for_every_panel_width(nb, monkeypatch):
    monkeypatch.setattr(SEEDS["blocked_wy"], "NB", nb)
    a = inputs("mixed", 3, 70)  # 70 is a multiple of no panel width
    ok, metrics = ref.check((a,), factor("blocked_wy", a))
    assert ok, metrics["message"]


@pytest.mark.parametrize("seed_name", SEED_NAMES)
def test_every_cpu_shape_of_task_toml_passes_for_every_seed(seed_name):
    for set_name, shapes in TASK["shapes"]["cpu"].items():
        for shape in shapes:
            (a,) = ref.make_inputs(shape, 11, "cpu")
            ok, metrics = ref.check((a,), factor(seed_name, a))
            assert ok, f"{set_name} {shape}: {metrics['message']}"


@pytest.mark.parametrize("seed_name", OWN_SEEDS)
def test_seeds_follow_the_zero_column_convention_tau_zero(seed_name):
    h, tau = factor(seed_name, inputs("upper", 2, 6))
    assert torch.equal(tau, torch.zeros_like(tau))
    h, tau = factor(seed_name, torch.zeros(1, 5, 5))
    assert torch.equal(h, torch.zeros_like(h)) and torch.equal(tau, torch.zeros_like(tau))


@pytest.mark.parametrize("seed_name", OWN_SEEDS)
def test_seeds_match_geqrf_up_to_rounding(seed_name):
    a = inputs("dense", 3, 40)
    h, tau = factor(seed_name, a)
    h_ref, tau_ref = torch.geqrf(a)
    torch.testing.assert_close(h, h_ref, atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(tau, tau_ref, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("seed_name", SEED_NAMES)
def test_seeds_leave_their_input_unchanged(seed_name):
    a = inputs("mixed", 3, 20)
    before = a.clone()
    SEEDS[seed_name].kernel(a)
    assert torch.equal(a, before)


def test_check_accepts_the_exact_factors_of_a_zero_matrix():
    a = torch.zeros(2, 4, 4)
    ok, metrics = ref.check((a,), (torch.zeros(2, 4, 4), torch.zeros(2, 4)))
    assert ok, metrics["message"]


# --- the checker rejects wrong factors -------------------------------------------------------


def _geqrf(family: str = "dense", batch: int = 8, n: int = 24) -> tuple[torch.Tensor, ...]:
    a = inputs(family, batch, n)
    h, tau = torch.geqrf(a)
    return a, h, tau


def test_one_wrong_matrix_fails_the_batch_and_is_named():
    a, h, tau = _geqrf()
    h[3, 0, -1] += 0.05  # one entry of R in matrix 3
    ok, metrics = ref.check((a,), (h, tau))
    assert not ok
    assert metrics["worst_matrix"] == 3 and metrics["failing_matrices"] == 1
    assert metrics["message"].startswith("matrix 3 of 8: residual")


@pytest.mark.parametrize("where", ["R", "reflector", "tau"])
def test_the_blocked_q_path_passes_geqrf_and_fails_one_corrupted_matrix(where):
    """n = 80 > LOOP_Q_MAX_N: the check forms Q with `_form_q_blocked` (two full blocks and a
    partial one); geqrf's own output passes, one corrupted matrix fails and is named."""
    a, h, tau = _geqrf("mixed", batch=4, n=80)
    assert ref.check((a,), (h, tau))[0]
    if where == "R":
        h[2, 3, 70] += 0.05
    elif where == "reflector":
        h[2, 70, 40] += 0.05  # in the third block
    else:
        tau[2, 33] *= 1.01
    ok, metrics = ref.check((a,), (h, tau))
    assert not ok and metrics["worst_matrix"] == 2 and metrics["failing_matrices"] == 1


def test_a_corrupted_reflector_below_the_diagonal_fails():
    a, h, tau = _geqrf()
    h[5, 10, 2] += 0.05
    ok, metrics = ref.check((a,), (h, tau))
    assert not ok and metrics["worst_matrix"] == 5


def test_nan_in_tau_fails_and_says_where():
    a, h, tau = _geqrf()
    tau[6, 4] = float("nan")
    ok, metrics = ref.check((a,), (h, tau))
    assert not ok
    assert metrics["message"].startswith("matrix 6 of 8: NaN/Inf in tau")
    assert metrics["nonfinite"] == 1


def test_inf_in_h_fails():
    a, h, tau = _geqrf()
    h[0, 2, 20] = float("inf")
    ok, metrics = ref.check((a,), (h, tau))
    assert not ok and "NaN/Inf in H" in metrics["message"]


def test_tau_scaled_by_two_fails_orthogonality():
    a, h, tau = _geqrf(batch=2)
    ok, metrics = ref.check((a,), (h, tau * 2))
    assert not ok and "orthogonality" in metrics["message"]
    assert metrics["orthogonality_ratio"] > 1


def test_returning_r_with_identity_q_fails():
    a, h, _ = _geqrf(batch=2)
    ok, metrics = ref.check((a,), (h.triu(), torch.zeros(2, 24)))
    assert not ok and "residual" in metrics["message"]


def test_tiny_noise_on_a_zero_matrix_fails():
    a = torch.zeros(1, 4, 4)
    h = torch.zeros(1, 4, 4)
    h[0, 0, 3] = 1e-30
    ok, _ = ref.check((a,), (h, torch.zeros(1, 4)))
    assert not ok


@pytest.mark.parametrize(
    ("mangle", "complaint"),
    [
        (lambda h, tau: (h, tau[:, :-1]), "tau has shape"),
        (lambda h, tau: (h[:, :, :-1], tau), "H has shape"),
        (lambda h, tau: (h.double(), tau), "H has dtype"),
        (lambda h, tau: (h, tau.half()), "tau has dtype"),
        (lambda h, tau: (h,), "expected a pair"),
        (lambda h, tau: (h, tau.numpy()), "not a torch.Tensor"),
    ],
)
def test_malformed_outputs_fail_with_a_message_instead_of_raising(
    mangle: Callable[[torch.Tensor, torch.Tensor], tuple], complaint: str
):
    a, h, tau = _geqrf(batch=2)
    ok, metrics = ref.check((a,), mangle(h, tau))
    assert not ok and complaint in metrics["message"]


def test_chunked_checking_reports_the_same_metrics_and_matrix(monkeypatch):
    a, h, tau = _geqrf(batch=10, n=8)
    h[7, 1, 5] += 0.01
    whole = ref.check((a,), (h, tau))
    monkeypatch.setattr(ref, "CHUNK_ELEMENTS", 3 * 8 * 8)  # chunks of 3 matrices
    chunked = ref.check((a,), (h, tau))
    assert chunked == whole and whole[1]["worst_matrix"] == 7


def test_metrics_are_plain_json_values():
    import json

    a, h, tau = _geqrf()
    tau[1, 1] = float("nan")
    for result in (ref.check((a,), torch.geqrf(a)), ref.check((a,), (h, tau))):
        json.dumps(result[1], allow_nan=False)


# --- strict mode -----------------------------------------------------------------------------


def _fp16_reflectors(h: torch.Tensor) -> torch.Tensor:
    """geqrf's factors with the reflectors stored in fp16: what a fast mixed-precision kernel
    might return."""
    return h.triu() + h.tril(-1).half().float()


def test_strict_mode_rejects_fp16_reflectors_that_the_standard_gate_admits_at_large_n():
    a, h, tau = _geqrf("dense", batch=1, n=512)
    low = (_fp16_reflectors(h), tau)
    assert ref.check((a,), low)[0]
    ok, metrics = ref.check((a,), low, strict=True)
    assert not ok and metrics["mode"] == "strict"


def test_standard_mode_already_rejects_fp16_reflectors_at_small_n():
    a, h, tau = _geqrf("dense", batch=4, n=32)
    assert not ref.check((a,), (_fp16_reflectors(h), tau))[0]


@pytest.mark.parametrize("family", ["dense", "rowscale", "mixed"])
def test_strict_mode_accepts_float32_householder_factors(family):
    a = inputs(family, 2, 256)
    for seed_name in SEED_NAMES:
        ok, metrics = ref.check((a,), factor(seed_name, a), strict=True)
        assert ok, f"{seed_name}: {metrics['message']}"


def test_strict_gate_never_exceeds_the_standard_gate():
    for n in (1, 2, 31, 32, 33, 4096):
        strict, standard = ref._bounds(n, True), ref._bounds(n, False)
        assert strict[0] <= standard[0] and strict[1] <= standard[1]


# --- seeds and task.toml ---------------------------------------------------------------------


class _AtenRecorder(TorchDispatchMode):
    """Names of every aten op dispatched while active (what the harness's dynamic scan sees)."""

    def __init__(self) -> None:
        super().__init__()
        self.ops: set[str] = set()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.ops.add(func.overloadpacket.__name__)
        return func(*args, **(kwargs or {}))


def _aten_ops(seed_name: str) -> set[str]:
    a = inputs("mixed", 3, 40)
    with _AtenRecorder() as rec:
        SEEDS[seed_name].kernel(a)
    return rec.ops


@pytest.mark.parametrize("seed_name", OWN_SEEDS)
def test_own_seeds_dispatch_no_forbidden_aten_op(seed_name):
    assert not _aten_ops(seed_name) & set(TASK["forbidden_ops"])


def test_the_aten_recorder_sees_geqrf_in_the_baseline():
    assert "geqrf" in _aten_ops("torch_geqrf")


@pytest.mark.parametrize("seed_name", OWN_SEEDS)
def test_own_seed_sources_never_mention_a_forbidden_name(seed_name):
    text = (TASK_DIR / "seeds" / f"{seed_name}.py").read_text().lower()
    assert not [word for word in TASK["forbidden"] if word.lower() in text]


def test_every_seed_declares_a_family_and_a_kernel():
    families = {name: module.FAMILY for name, module in SEEDS.items()}
    assert families["torch_geqrf"] == "baseline"
    assert len(set(families.values())) == len(SEED_NAMES)
    assert all(callable(module.kernel) for module in SEEDS.values())
    assert TASK["baseline_seeds"] == ["torch_geqrf.py"]


def test_task_toml_has_the_twelve_benchmarks_and_a_hidden_set_off_every_tile():
    gpu = TASK["shapes"]
    assert len(gpu["benchmark"]) == 12 and all(s.get("weight", 1) == 1 for s in gpu["benchmark"])
    hidden_n = {s["n"] for s in gpu["hidden"]}
    assert {1, 2, 33, 100, 257, 700, 1500, 3000} <= hidden_n
    families = [s["family"] for s in gpu["hidden"]]
    assert all(families.count(f) >= 2 for f in ref.FAMILIES)
    assert any(s["batch"] == 1 for s in gpu["hidden"])
    huge = [s for s in gpu["hidden"] if s["batch"] * s["n"] ** 2 > 2**31]
    assert huge and all(s["timed"] is False for s in huge)
    for shapes in (*gpu.values(), *gpu["cpu"].values()):
        for s in shapes if isinstance(shapes, list) else []:
            assert s["family"] in ref.FAMILIES and s["dtype"] == "float32"


def test_cpu_shapes_stay_tiny_for_a_column_loop_seed():
    cpu = [s for shapes in TASK["shapes"]["cpu"].values() for s in shapes]
    assert max(s["n"] for s in TASK["shapes"]["cpu"]["benchmark"]) <= 48
    assert all(s["batch"] * s["n"] ** 2 <= 2**14 for s in cpu)  # a few 64 KiB tensors each
    assert sum(s["n"] for s in cpu) <= 400  # Python-loop iterations for one pass over the set


def test_task_toml_loads_with_the_harness_schema():
    from cockpit.harness.task import load_task

    task = load_task(TASK_DIR)
    shape = task.shape_set("cuda", "benchmark")[3]  # 640 x 512 x 512
    flops, nbytes = task.floor_inputs(shape)
    assert flops == pytest.approx(640 * 4 / 3 * 512**3)
    assert nbytes == 2 * 640 * 512 * 512 * 4 + 640 * 512 * 4


@pytest.mark.parametrize("n", [1, 2, 7, ref.LOOP_Q_MAX_N])
def test_small_n_q_matches_householder_product(n):
    a, h, tau = _geqrf("mixed", batch=5, n=n)
    tau = tau.double() * torch.linspace(0.5, 1.5, n, dtype=torch.float64)  # not only true taus
    q = ref._form_q(h.double(), tau)
    torch.testing.assert_close(q, torch.linalg.householder_product(h.double(), tau))


@pytest.mark.parametrize("family", ["mixed", "rankdef", "upper"])
@pytest.mark.parametrize("n", [33, 65, 100, 128, 257])
def test_blocked_q_matches_householder_product(n, family):
    """The checker's Q above LOOP_Q_MAX_N: blocks of Q_BLOCK reflectors as compact-WY updates,
    a partial last block, taus that are not geqrf's and exact zeros (identity reflectors; rankdef
    and upper produce them too) must give householder_product's Q to float64 rounding."""
    a, h, tau = _geqrf(family, batch=3, n=n)
    tau = tau.double() * torch.linspace(0.5, 1.5, n, dtype=torch.float64)
    tau[:, ::7] = 0
    q = ref._form_q_blocked(h.double(), tau)
    torch.testing.assert_close(
        q, torch.linalg.householder_product(h.double(), tau), rtol=0, atol=1e-12
    )


def test_task_allows_geqrf_column_major_h_and_check_reads_any_layout():
    assert TASK["contiguous_outputs"] is False
    a = inputs("mixed", 3, 12)
    h, tau = torch.geqrf(a)
    assert not h.is_contiguous()
    assert ref.check((a,), (h, tau))[0] and ref.check((a,), (h.contiguous(), tau))[0]
