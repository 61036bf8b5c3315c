"""The CholeskyQR2 + Householder-reconstruction QR seed (kernels/qr/seeds/cholqr_reconstruct.py).

Loaded from its file, as the judge loads it; checked matrix by matrix with the task's own
reference.check (standard and strict gates), its per-matrix routing (triangular pass-through,
Cholesky fast path, Householder fallback) and one quick harness evaluation. CPU, about 30 s.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest
import torch

TASK_DIR = Path(__file__).resolve().parents[1] / "kernels" / "qr"
SEED_PATH = TASK_DIR / "seeds" / "cholqr_reconstruct.py"


def _load(path: Path, name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


ref = _load(TASK_DIR / "reference.py", "qr_cholqr_reference")
seed = _load(SEED_PATH, "qr_cholqr_seed")
FAMILIES = list(ref.FAMILIES)
TRI, CHOL, HH = seed.ROUTE_TRIANGULAR, seed.ROUTE_CHOLESKY, seed.ROUTE_HOUSEHOLDER


def inputs(family: str, batch: int, n: int, cond: float = 2.0, s: int = 0) -> torch.Tensor:
    shape = {"batch": batch, "n": n, "cond": cond, "family": family, "dtype": "float32"}
    (a,) = ref.make_inputs(shape, s, "cpu")
    return a


def assert_passes(a: torch.Tensor, h: torch.Tensor, tau: torch.Tensor) -> None:
    for strict in (False, True):
        ok, m = ref.check((a,), (h, tau), strict=strict)
        assert ok, m["message"]


# --- correctness on every family -----------------------------------------------------------


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("n", [1, 2, 3, 17, 33, 64, 100])
def test_every_family_passes_the_standard_and_strict_gates(family, n):
    batch = 12 if family == "mixed" else 3
    a = inputs(family, batch, n, s=n)
    a0 = a.clone()
    h, tau = seed.kernel(a)
    assert torch.equal(a, a0), "the kernel modified A"
    assert h.shape == (batch, n, n) and tau.shape == (batch, n)
    assert h.dtype == tau.dtype == torch.float32
    assert_passes(a, h, tau)


@pytest.mark.parametrize(
    ("family", "batch", "n"),
    [
        ("mixed", 4096, 1),
        ("mixed", 3000, 2),
        ("nearcollinear", 1000, 2),
        ("mixed", 200, 9),
        ("mixed", 1, 40),
    ],
)
def test_large_and_single_batches(family, batch, n):
    a = inputs(family, batch, n, s=5)
    h, tau = seed.kernel(a)
    assert_passes(a, h, tau)


@pytest.mark.parametrize("family", ["dense", "rowscale", "nearcollinear", "mixed"])
def test_cond_four_and_a_size_off_every_block(family):
    a = inputs(family, 2, 131, cond=4.0, s=3)
    h, tau = seed.kernel(a)
    assert_passes(a, h, tau)


def test_every_tunable_value_stays_correct(monkeypatch):
    a = torch.cat([inputs("mixed", 6, 70, s=11), inputs("rankdef", 1, 70, s=12)])
    for name, values in seed.TUNABLES.items():
        for v in values:
            monkeypatch.setattr(seed, name, v)
            h, tau = seed.kernel(a)
            assert_passes(a, h, tau)
        monkeypatch.undo()


def test_chunks_of_the_batch_are_factored_like_the_whole(monkeypatch):
    a = inputs("mixed", 9, 20, s=4)
    h, tau = seed.kernel(a)
    monkeypatch.setattr(seed, "CHUNK_ELEMENTS", 2 * 20 * 20)  # chunks of 2 matrices
    h2, tau2 = seed.kernel(a)
    assert torch.equal(h, h2) and torch.equal(tau, tau2)


# --- the reconstruction itself -------------------------------------------------------------


def test_reflectors_reproduce_the_cholesky_q_up_to_the_signs():
    """householder_product(H, tau) (float64, test-only) equals Q S from a float64 CholeskyQR2,
    and S R is the stored triangle: the reconstruction identities Q - S = L U, R' = S R."""
    n = 48
    a = inputs("dense", 4, n, cond=1.0, s=9)
    h, tau, route = seed.factor_with_routes(a)
    assert (route == CHOL).all()
    x = a.double()
    q1, r1, _ = seed._cholesky_step(x)
    q, r2, _ = seed._cholesky_step(q1)
    r = r2 @ r1
    q_hh = torch.linalg.householder_product(h.double(), tau.double())
    # signs: the stored R is S R, so S = sign(diag(stored R)) / sign(diag(R)) = diag ratio sign
    s = torch.sign(h.double().diagonal(dim1=-2, dim2=-1) / r.diagonal(dim1=-2, dim2=-1))
    assert ((s == 1) | (s == -1)).all()
    assert torch.allclose(q_hh, q * s[:, None, :], atol=1e-5)
    assert torch.allclose(h.double().triu(), (r * s[:, :, None]).triu(), rtol=1e-5, atol=1e-5)
    # every tau in [1, 2] (|pivot| + 1) and every reflector orthogonal: tau = 2 / ||y||^2
    y = h.double().tril(-1) + torch.eye(n, dtype=torch.float64)
    assert ((tau >= 1) & (tau <= 2)).all()
    assert torch.allclose(tau.double(), 2 / (y * y).sum(dim=1), rtol=1e-6)


def test_lu_with_signs_factors_q_minus_s():
    q, _, _ = seed._cholesky_step(inputs("dense", 3, 70, cond=1.0, s=2).double())
    m = q.clone()
    s = seed._lu_with_signs(m)
    low = m.tril(-1) + torch.eye(70, dtype=m.dtype)
    assert torch.allclose(low @ m.triu(), q - torch.diag_embed(s), atol=1e-12)
    assert (m.diagonal(dim1=-2, dim2=-1).abs() >= 1).all()  # pivots of modulus >= 1


# --- the guard -----------------------------------------------------------------------------


def test_guard_routes_rank_deficient_matrices_to_the_fallback_and_dense_ones_to_the_fast_path():
    for n in (2, 16, 33, 64):
        _, _, r = seed.factor_with_routes(inputs("rankdef", 4, n, s=n))
        assert (r == HH).all(), (n, r)
        _, _, r = seed.factor_with_routes(inputs("dense", 4, n, cond=1.0, s=n))
        assert (r == CHOL).all(), (n, r)
        _, _, r = seed.factor_with_routes(inputs("upper", 4, n, s=n))
        assert (r == TRI).all(), (n, r)


def test_guard_routes_each_matrix_of_a_mixed_batch_by_its_own_family():
    batch, n, s = 40, 24, 6
    a = inputs("mixed", batch, n, s=s)
    h, tau, route = seed.factor_with_routes(a)
    fams = ref.mixed_families(batch, s)
    for i, f in enumerate(fams):
        if f == "rankdef":
            assert route[i] == HH, (i, f)
        elif f == "upper":
            assert route[i] == TRI, (i, f)
        elif f in ("dense", "band"):
            assert route[i] == CHOL, (i, f)
    assert_passes(a, h, tau)


def test_guard_rejects_matrices_the_cholesky_path_cannot_certify():
    """Half the columns repeating the other half up to relative 1e-7 noise (kappa ~ 1e8, beyond
    CholeskyQR2 in float64) and exact duplicate columns go to the fallback, a zero matrix (upper
    triangular) passes through; their factors still pass."""
    g = torch.Generator().manual_seed(0)
    n = 20
    base = torch.randn(3, n, n, generator=g)
    near = base.clone()
    near[:, :, n // 2 :] = base[:, :, : n // 2] * (
        1 + 1e-7 * torch.randn(3, n, n // 2, generator=g)
    )
    dup = base.clone()
    dup[:, :, 1] = dup[:, :, 0]
    zero = torch.zeros(1, n, n)
    a = torch.cat([near, dup, zero, base])
    h, tau, route = seed.factor_with_routes(a)
    assert (route[:6] == HH).all() and route[6] == TRI, route
    assert (route[7:] == CHOL).all(), route
    assert_passes(a, h, tau)


def test_every_matrix_on_the_fast_path_satisfies_the_certificate():
    """For each matrix routed to the Cholesky path, recompute ||Q1^T Q1 - I||_F in float64: it is
    within GUARD_TOL, the condition under which CholeskyQR2's result is certified."""
    a = torch.cat([inputs(f, 4, 40, s=1) for f in FAMILIES if f != "upper"])
    _, _, route = seed.factor_with_routes(a)
    q1, _, ok1 = seed._cholesky_step(a.double())
    dev = torch.linalg.matrix_norm(q1.mT @ q1 - torch.eye(40, dtype=torch.float64))
    fast = route == CHOL
    assert fast.any() and (route == HH).any()
    assert ok1[fast].all() and (dev[fast] <= seed.GUARD_TOL).all()


# --- the harness ---------------------------------------------------------------------------


def test_static_scan_finds_nothing():
    from cockpit.harness.static_scan import scan
    from cockpit.harness.task import load_task

    task = load_task(TASK_DIR)
    assert scan(SEED_PATH.read_text(), task.forbidden) == []


def test_the_harness_passes_the_seed_in_quick_mode():
    from cockpit.harness.judge import Options, evaluate
    from cockpit.harness.task import load_task

    result = evaluate(load_task(TASK_DIR), SEED_PATH, Options(device="cpu", mode="quick"))
    assert result.status == "ok", [(r.kind, r.shape, r.message) for r in result.reasons]
    assert result.shapes and all(s.ok for s in result.shapes)
    assert not result.baseline_exempt
