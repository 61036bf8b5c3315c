"""The CholeskyQR2 + Householder-reconstruction QR seed (kernels/qr/seeds/cholqr_reconstruct.py).

Loaded from its file, as the judge loads it; checked matrix by matrix with the task's own
reference.check (standard and strict gates), its per-matrix routing (triangular pass-through,
Cholesky fast path, Householder fallback) and one quick harness evaluation. CPU, about 30 s.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from task_files import load_file

TASK_DIR = Path(__file__).resolve().parents[1] / "kernels" / "qr"
SEED_PATH = TASK_DIR / "seeds" / "cholqr_reconstruct.py"


ref = load_file(TASK_DIR / "reference.py", "qr_cholqr_reference")
seed = load_file(SEED_PATH, "qr_cholqr_seed")
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
    a = torch.cat([inputs("mixed", 6, 24, s=11), inputs("rankdef", 1, 24, s=12)])
    for name, values in seed.TUNABLES.items():
        for v in values:
            if v == getattr(seed, name):
                continue
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


def test_guard_routes_what_the_chain_cannot_certify_and_every_route_passes():
    """Half the columns repeating the other half up to relative 1e-7 noise (kappa ~ 1e8) and
    exact duplicate columns: the chain certifies some (a certified result is a valid QR even
    of a singular matrix: backward-stable solves and an orthonormal Q), the rest go to the
    fallback. A zero column anywhere always goes to the fallback, and a zero matrix (upper
    triangular) passes through. Every route passes both gates."""
    g = torch.Generator().manual_seed(0)
    n = 20
    base = torch.randn(3, n, n, generator=g)
    near = base.clone()
    noise = 1 + 1e-7 * torch.randn(3, n, n // 2, generator=g)
    near[:, :, n // 2 :] = base[:, :, : n // 2] * noise
    dup = base.clone()
    dup[:, :, 1] = dup[:, :, 0]
    zcol = base.clone()
    zcol[:, :, 5] = 0
    zero = torch.zeros(1, n, n)
    a = torch.cat([near, dup, zcol, zero, base])
    h, tau, route = seed.factor_with_routes(a)
    assert (route[6:9] == HH).all() and route[9] == TRI, route
    assert (route[10:] == CHOL).all(), route
    assert_passes(a, h, tau)


def test_every_certified_matrix_is_factored_to_float64_accuracy():
    """The chain's certificate is what routes a matrix to the fast path: for every matrix it
    certifies, Q is orthonormal and Q R = A to float64 precision (far below the float32 gates);
    the uncertified ones are exactly those the kernel sends to the fallback."""
    a = torch.cat([inputs(f, 4, 40, s=1) for f in FAMILIES if f != "upper"])
    x = a.double()
    q, r, ok = seed._cholesky_chain(x, shifted=False)
    eye = torch.eye(40, dtype=torch.float64)
    orth = torch.linalg.matrix_norm(q.mT @ q - eye, ord=1)
    resid = torch.linalg.matrix_norm(q @ r - x, ord=1) / torch.linalg.matrix_norm(x, ord=1)
    assert ok.any() and (~ok).any()
    assert (orth[ok] < 1e-12).all() and (resid[ok] < 1e-12).all()
    assert torch.equal(r[ok], r[ok].triu())
    _, _, route = seed.factor_with_routes(a)
    qs, rs, oks = seed._cholesky_chain(x[~ok], shifted=True)
    assert torch.equal(route == CHOL, ok.clone().masked_scatter_(~ok, oks))


def _near_dependent_pool() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """n = 40 matrices whose last 20 columns repeat the first 20 up to noise 1e-7 .. 1e-5
    (kappa ~ 1e7 .. 1e9); with the plain first step's success and ||Q1^T Q1 - I||_F."""
    g = torch.Generator().manual_seed(1)
    noise = torch.logspace(-7, -5, 48, dtype=torch.float32)
    a = torch.randn(48, 40, 40, generator=g)
    a[:, :, 20:] = a[:, :, :20] + noise[:, None, None] * torch.randn(48, 40, 20, generator=g)
    q1, _, ok1 = seed._cholesky_step(a.double())
    dev = torch.linalg.matrix_norm(q1.mT @ q1 - torch.eye(40, dtype=torch.float64))
    return a, ok1, dev


def test_the_shifted_retry_takes_matrices_plain_cholesky_cannot_factor(monkeypatch):
    """A^T A numerically singular in float64: the plain chain fails at its first Cholesky; the
    shifted chain certifies them. Without the retry they go to the fallback; both ways pass."""
    pool, ok1, _ = _near_dependent_pool()
    a = pool[~ok1]
    assert a.shape[0] >= 3
    h, tau, route = seed.factor_with_routes(a)
    assert (route == CHOL).all(), route
    assert_passes(a, h, tau)
    monkeypatch.setattr(seed, "SHIFTED", False)
    h, tau, route = seed.factor_with_routes(a)
    assert (route == HH).all(), route
    assert_passes(a, h, tau)


def test_a_third_step_certifies_what_two_cannot(monkeypatch):
    """Q1 factors but is too far from orthonormal for the last step (dev > GUARD_TOL):
    CholeskyQR3 certifies it; with MAX_STEPS = 2 and no shifted retry it goes to the fallback."""
    pool, ok1, dev = _near_dependent_pool()
    a = pool[ok1 & (dev > seed.GUARD_TOL)]
    assert a.shape[0] >= 1
    h, tau, route = seed.factor_with_routes(a)
    assert (route == CHOL).all(), route
    assert_passes(a, h, tau)
    monkeypatch.setattr(seed, "MAX_STEPS", 2)
    monkeypatch.setattr(seed, "SHIFTED", False)
    h, tau, route = seed.factor_with_routes(a)
    assert (route == HH).all(), route
    assert_passes(a, h, tau)


@pytest.mark.parametrize("n", [17, 64, 120])
def test_nearly_triangular_matrices_of_any_condition(n):
    """Upper-triangular matrices are exponentially ill conditioned (kappa ~ 1e11 at n = 100);
    with one tiny entry below the diagonal they leave the pass-through route, and whichever
    route takes them must still pass."""
    a = inputs("upper", 3, n, s=n)
    a[:, -1, 0] = 1e-30
    h, tau, route = seed.factor_with_routes(a)
    assert (route != TRI).all()
    assert_passes(a, h, tau)


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
