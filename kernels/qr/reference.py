"""Batched compact Householder QR: inputs, trusted reference and checker.

Only the judge process imports this file. A candidate returns `(H, tau)` in `torch.geqrf`'s
compact convention; QR factors are not unique (each reflector may flip a sign), so a candidate is
not compared element-wise with `reference` but judged by `check`: are its factors an orthogonal Q
and an upper-triangular R that reproduce A to float32 accuracy, matrix by matrix?

Inputs come in matrix *families* (see `FAMILIES`): well-conditioned dense matrices, and
stress cases (zero and near-dependent columns, tiny columns, banded, scaled rows, ...) that break
fast paths such as Cholesky-QR or fp16-stored reflectors. `mixed` draws one family per matrix at
random positions so a kernel cannot inspect a few matrices and route the whole batch.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import torch

EPS32 = torch.finfo(torch.float32).eps  # 2**-23: the unit of every float32 error bound below

# ---------------------------------------------------------------------------------------------
# Input families
# ---------------------------------------------------------------------------------------------

NEARRANK_NOISE = 1e-5  # relative size of the perturbation that keeps `nearrank` full rank
NEARCOLLINEAR_NOISE = 1e-4  # spread of the columns of `nearcollinear` around their common column
CLUSTERED_TINY = 4 * EPS32  # scale of half the columns of `clustered`: just above float32 noise
CLUSTERED_MIDDLE = math.sqrt(EPS32)  # scale of four middle columns of `clustered`
CLUSTERED_MIDDLE_COLS = 4
ROWSCALE_MIN_DECADES = 4  # `rowscale` spans at least 1 .. 1e-4 whatever `cond` says
BAND_MAX_WIDTH = 32  # `band` half-bandwidth: max(2, min(32, n // 32))
BAND_MIN_WIDTH = 2
UPPER_DIAG_BOOST = (1.0, 0.25)  # `upper` diagonal magnitudes get linspace(1 -> 0.25) added
MIXED_DENSE_WEIGHT = 6  # in `mixed`, dense is drawn 6x as often as each stress family


def _tail_count(n: int) -> int:
    """Columns replaced at the tail of `rankdef` / `nearrank`: n // 4, at least one for n >= 2,
    and never more than half so the head columns they copy (nearrank) do not overlap them."""
    return min(max(1, n // 4), n // 2)


def _randn(g: torch.Generator, *size: int) -> torch.Tensor:
    return torch.randn(*size, generator=g, dtype=torch.float32, device=g.device)


def _signs(x: torch.Tensor) -> torch.Tensor:
    """+1 / -1 per entry (zero counts as +1), so a boost never cancels an entry."""
    return torch.where(x >= 0, 1.0, -1.0)


def _dense(g: torch.Generator, b: int, n: int, cond: float) -> torch.Tensor:
    """Standard normal, column j scaled by 10**(-cond * j / (n - 1)): condition ~ 10**cond."""
    a = _randn(g, b, n, n)
    a.mul_(torch.logspace(0, -cond, n, dtype=torch.float32, device=g.device))
    return a


def _upper(g: torch.Generator, b: int, n: int, cond: float) -> torch.Tensor:
    """Already upper triangular: every reflector is the identity (tau = 0 in LAPACK), the case
    a kernel that always reflects or divides by the subdiagonal norm gets wrong."""
    a = _randn(g, b, n, n).triu_()
    d = a.diagonal(dim1=-2, dim2=-1)
    d.add_(_signs(d) * torch.linspace(*UPPER_DIAG_BOOST, n, dtype=torch.float32, device=g.device))
    return a


def _rankdef(g: torch.Generator, b: int, n: int, cond: float) -> torch.Tensor:
    """Dense with the last n/4 columns exactly zero: zero trailing columns, tau = 0 reflectors,
    and a singular R that Cholesky-based methods cannot factor."""
    a = _dense(g, b, n, cond)
    a[:, :, n - _tail_count(n) :] = 0
    return a


def _nearrank(g: torch.Generator, b: int, n: int, cond: float) -> torch.Tensor:
    """Dense whose last n/4 columns repeat the first n/4 plus 1e-5 noise: numerically rank
    deficient (condition ~ 1e5+), so A^T A loses every digit in float32."""
    a = _dense(g, b, n, cond)
    k = _tail_count(n)
    if k:
        a[:, :, n - k :] = a[:, :, :k] + NEARRANK_NOISE * _randn(g, b, n, k)
    return a


def _clustered(g: torch.Generator, b: int, n: int, cond: float) -> torch.Tensor:
    """Half the columns at 4 * eps32, four middle ones at sqrt(eps32): singular values cluster at
    three far-apart scales; tiny columns test the reflector's norm and tau for near-zero x."""
    scale = torch.ones(n, dtype=torch.float32, device=g.device)
    scale[n // 2 :] = CLUSTERED_TINY
    half = CLUSTERED_MIDDLE_COLS // 2
    scale[max(0, n // 2 - half) : n // 2 + half] = CLUSTERED_MIDDLE
    return _randn(g, b, n, n).mul_(scale)


def _band(g: torch.Generator, b: int, n: int, cond: float) -> torch.Tensor:
    """Banded (half-bandwidth w = max(2, min(32, n/32))) with the diagonal boosted by w: mostly
    zeros below the band, so reflectors are short and sparse; a kernel must not assume density."""
    w = max(BAND_MIN_WIDTH, min(BAND_MAX_WIDTH, n // 32))
    idx = torch.arange(n, device=g.device)
    inside = (idx[:, None] - idx[None, :]).abs() <= w
    a = _randn(g, b, n, n).mul_(inside)
    d = a.diagonal(dim1=-2, dim2=-1)
    d.add_(_signs(d) * float(w))
    return a


def _nearcollinear(g: torch.Generator, b: int, n: int, cond: float) -> torch.Tensor:
    """Every column is one common column plus 1e-4 noise: rank one to four digits, so after the
    first reflector the trailing matrix is pure cancellation."""
    common = _randn(g, b, n, 1)
    return common + NEARCOLLINEAR_NOISE * _randn(g, b, n, n)


def _rowscale(g: torch.Generator, b: int, n: int, cond: float) -> torch.Tensor:
    """Rows scaled by logspace(0, -max(cond, 4)): badly scaled rows, the classic weak spot of
    column-oriented methods that normalize or square the matrix."""
    decades = max(cond, ROWSCALE_MIN_DECADES)
    rows = torch.logspace(0, -decades, n, dtype=torch.float32, device=g.device)
    return _randn(g, b, n, n).mul_(rows[:, None])


_GENERATORS: dict[str, Callable[[torch.Generator, int, int, float], torch.Tensor]] = {
    "dense": _dense,
    "upper": _upper,
    "rankdef": _rankdef,
    "nearrank": _nearrank,
    "clustered": _clustered,
    "band": _band,
    "nearcollinear": _nearcollinear,
    "rowscale": _rowscale,
}
STRESS_FAMILIES = tuple(f for f in _GENERATORS if f != "dense")
FAMILIES = (*_GENERATORS, "mixed")


def _pick(g: torch.Generator, count: int) -> int:
    return int(torch.randint(count, (1,), generator=g))


def _mixed_families(g: torch.Generator, batch: int) -> list[str]:
    names = list(_GENERATORS)
    weights = torch.tensor([MIXED_DENSE_WEIGHT if f == "dense" else 1.0 for f in names])
    if batch == 0:
        return []
    picks = torch.multinomial(weights, batch, replacement=True, generator=g).tolist()
    chosen = [names[i] for i in picks]
    if batch >= 2:
        # Guarantee both kinds, each at a random position, so no fixed index is ever the probe.
        pos = _pick(g, batch)
        if "dense" not in chosen:
            chosen[pos] = "dense"
        elif all(f == "dense" for f in chosen):
            chosen[pos] = STRESS_FAMILIES[_pick(g, len(STRESS_FAMILIES))]
    return chosen


def mixed_families(batch: int, seed: int) -> list[str]:
    """The family of each matrix that `make_inputs` draws for a `mixed` batch with this seed:
    dense with weight 6, every stress family with weight 1, at least one dense and one stress
    matrix when batch >= 2."""
    return _mixed_families(torch.Generator(device="cpu").manual_seed(seed), batch)


def make_matrices(
    family: str, batch: int, n: int, cond: float, seed: int, device: str = "cpu"
) -> torch.Tensor:
    """A (batch, n, n) float32 tensor of `family` on `device`, the same for the same arguments
    on the same kind of device. Drawn where it will be used: a GPU draws a 2**31-element batch in
    milliseconds where the CPU took 20-50 s per evaluation. The families of a `mixed` batch come
    from a CPU generator of the same seed, so `mixed_families(batch, seed)` names them anywhere."""
    if family not in _GENERATORS and family != "mixed":
        raise ValueError(f"unknown QR input family {family!r}; known: {', '.join(FAMILIES)}")
    g = torch.Generator(device=torch.device(device)).manual_seed(seed)
    if family in _GENERATORS:
        return _GENERATORS[family](g, batch, n, cond).contiguous()
    chosen = mixed_families(batch, seed)
    out = torch.empty(batch, n, n, dtype=torch.float32, device=g.device)
    for name, gen in _GENERATORS.items():  # fixed order, so the draws are reproducible
        where = [i for i, f in enumerate(chosen) if f == name]
        if where:
            out[torch.tensor(where, device=g.device)] = gen(g, len(where), n, cond)
    return out


def make_inputs(shape: dict, seed: int, device: str) -> tuple[torch.Tensor]:
    """`A` of shape (batch, n, n), float32 and contiguous, drawn on `device`."""
    dtype = shape.get("dtype", "float32")
    if dtype != "float32":
        raise ValueError(f"the QR task is float32 only, got dtype {dtype!r}")
    a = make_matrices(
        str(shape.get("family", "dense")),
        int(shape["batch"]),
        int(shape["n"]),
        float(shape.get("cond", 1.0)),
        seed,
        device,
    )
    return (a,)


def reference(A: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """LAPACK / cuSOLVER geqrf: trusted, and the baseline every candidate is timed against."""
    return torch.geqrf(A)


# ---------------------------------------------------------------------------------------------
# Checker
# ---------------------------------------------------------------------------------------------

RESIDUAL_FACTOR = 20  # ||R - Q^T A||_1 <= 20 * n * eps32 * ||A||_1   (the original gate)
ORTHOGONALITY_FACTOR = 100  # ||Q^T Q - I||_1 <= 100 * n * eps32
# strict=True replaces n by min(n, STRICT_N): the gates of a 32 x 32 matrix at every larger
# size. The n-proportional gates loosen with n faster than float32 errors grow, so they admit
# fp16-stored reflectors from n ~ 512 on; the capped gate does not. Measured on CPU (seed 1,
# dense/rowscale/clustered/nearcollinear/mixed; ratio = measured / strict bound): geqrf's worst
# ratio is 0.10 at n = 2048 and 0.30 at n = 4096 (rowscale orthogonality), while geqrf's factors
# with the reflectors rounded to fp16 reach 7 or more at every n from 8 to 2048.
STRICT_N = 32
CHUNK_ELEMENTS = 2**25  # float64 elements per chunk of matrices: ~256 MiB per temporary
# householder_product makes one library call per matrix on CUDA (~70 us each on an H200: 4.8 s
# for 65536 matrices of n = 1), so up to this n, Q is formed by n batched reflector updates.
LOOP_Q_MAX_N = 64
# Above it, Q is formed in blocks of this many reflectors (compact WY, batched float64 matmuls:
# a few calls per block for the whole batch), because householder_product's call per matrix
# (above) makes thousands of library calls to check one batch of thousands of matrices.
Q_BLOCK = 32


def _bounds(n: int, strict: bool) -> tuple[float, float]:
    size = min(n, STRICT_N) if strict else n
    return RESIDUAL_FACTOR * size * EPS32, ORTHOGONALITY_FACTOR * size * EPS32


def _fail(message: str, **extra: Any) -> tuple[bool, dict]:
    return False, {"message": message, **extra}


def _validate(inputs: Sequence[Any], outputs: Any) -> str | None:
    """Why the tensors cannot be checked at all (wrong count, shape, dtype, device), or None."""
    if not isinstance(outputs, tuple | list) or len(outputs) != 2:
        return "expected a pair (H, tau)"
    a, (h, tau) = inputs[0], outputs
    for name, t in (("H", h), ("tau", tau)):
        if type(t) is not torch.Tensor:
            return f"{name} is {type(t).__name__}, not a torch.Tensor"
    batch, n = a.shape[0], a.shape[-1]
    for name, t, want in (("H", h, (batch, n, n)), ("tau", tau, (batch, n))):
        if tuple(t.shape) != want:
            return f"{name} has shape {tuple(t.shape)}, expected {want}"
        if t.dtype != torch.float32:
            return f"{name} has dtype {t.dtype}, expected torch.float32"
        if t.device != a.device:
            return f"{name} is on {t.device}, expected {a.device}"
    return None


def _form_q(h: torch.Tensor, tau: torch.Tensor) -> torch.Tensor:
    """Q = H_1 H_2 ... H_n with H_j = I - tau_j v_j v_j^T, v_j = [0..0, 1, h[j+1:, j]]: the
    product householder_product computes, as n batched rank-1 updates applied right to left."""
    n = h.shape[-1]
    eye = torch.eye(n, dtype=h.dtype, device=h.device)
    v = h.tril(-1) + eye
    q = eye.expand_as(h).clone()
    for j in reversed(range(n)):
        vj = v[:, :, j]
        w = vj[:, None, :] @ q  # v_j^T Q: (batch, 1, n)
        q -= tau[:, j, None, None] * vj[:, :, None] * w
    return q


def _form_q_blocked(h: torch.Tensor, tau: torch.Tensor, nb: int = Q_BLOCK) -> torch.Tensor:
    """The same product, Q = B_1 B_2 ... B_K with B_b = H_j0 ... H_(j1-1) = I - V T V^T for each
    block of nb reflectors (T upper triangular by LAPACK's forward recurrence: T[i, i] = tau_i,
    T[:i, i] = -tau_i T[:i, :i] V[:, :i]^T v_i), applied right to left: Q <- B_b Q. Before block
    b is applied, Q is the identity outside rows and columns >= j1 and B_b touches rows >= j0
    only, so only Q[j0:, j0:] changes."""
    batch, n, _ = h.shape
    eye = torch.eye(n, dtype=h.dtype, device=h.device)
    v = h.tril(-1) + eye
    q = eye.expand(batch, n, n).clone()
    for j0 in reversed(range(0, n, nb)):
        j1 = min(j0 + nb, n)
        vb = v[:, j0:, j0:j1]
        tb = tau[:, j0:j1]
        gram = vb.mT @ vb
        t = torch.zeros(batch, j1 - j0, j1 - j0, dtype=h.dtype, device=h.device)
        for i in range(j1 - j0):
            if i:
                t[:, :i, i] = -tb[:, i, None] * (t[:, :i, :i] @ gram[:, :i, i, None])[..., 0]
            t[:, i, i] = tb[:, i]
        qs = q[:, j0:, j0:]
        qs -= vb @ (t @ (vb.mT @ qs))
    return q


def _chunk_stats(a: torch.Tensor, h: torch.Tensor, tau: torch.Tensor) -> dict[str, torch.Tensor]:
    """Per-matrix float64 measurements of one chunk; every value a (chunk,) tensor."""
    a, h, tau = a.double(), h.double(), tau.double()
    n = a.shape[-1]
    q = _form_q(h, tau) if n <= LOOP_Q_MAX_N else _form_q_blocked(h, tau)
    r = h.triu()
    qta = q.mT @ a
    qtq = q.mT @ q
    eye = torch.eye(n, dtype=torch.float64, device=a.device)

    def norm1(x: torch.Tensor) -> torch.Tensor:
        return torch.linalg.matrix_norm(x, ord=1)

    def finite(x: torch.Tensor) -> torch.Tensor:
        return x.isfinite().flatten(1).all(dim=1)

    anorm = norm1(a)
    safe_anorm = torch.where(anorm > 0, anorm, 1.0)  # zero matrix: relative = absolute error
    return {
        "anorm": anorm,
        "residual": norm1(r - qta),
        "orthogonality": norm1(qtq - eye),
        "leakage": norm1(qta.tril(-1)) / safe_anorm,
        "qr_rel_err": norm1(q @ r - a) / safe_anorm,
        "finite_h": finite(h),
        "finite_tau": finite(tau),
        "finite_derived": finite(q) & finite(qta) & finite(qtq),
    }


def check(inputs: Sequence[torch.Tensor], outputs: Any, strict: bool = False) -> tuple[bool, dict]:
    """Judge `(H, tau)` for `inputs = (A,)` matrix by matrix, in float64 on A's device.

    With Q = householder_product(H, tau) (formed by `_form_q` for n <= LOOP_Q_MAX_N, by
    `_form_q_blocked` above) and
    R = triu(H), every matrix must satisfy
      residual       ||R - Q^T A||_1 <= 20 * n * eps32 * ||A||_1
      orthogonality  ||Q^T Q - I||_1 <= 100 * n * eps32
    and hold no NaN/Inf in H, tau, Q, R, Q^T A or Q^T Q. The gates are per matrix, not over the
    batch, so one wrong matrix among thousands fails. Measuring R against Q^T A (rather than QR
    against A) also catches garbage below the diagonal of Q^T A that triu(H) would hide; its size
    is reported as `leakage`.

    The n-proportional gates are the original problem's; they admit fp16-stored reflectors for
    n >~ 512. `strict=True` uses min(n, STRICT_N = 32) instead of n: a size-independent gate
    that float32 Householder factors pass at every n and fp16-stored reflectors fail.

    Returns (passed, metrics); metrics are JSON-able: `residual_ratio` and
    `orthogonality_ratio` (worst measured / bound over finite matrices; <= 1 passes),
    `worst_matrix` (0-based batch index with the largest ratio, non-finite ones first),
    `failing_matrices`, `nonfinite` (matrices with NaN/Inf, the key the
    harness reads to label a failure nan_inf), `batch`, `n`, `leakage` and `qr_rel_err` (worst
    ||tril(Q^T A, -1)||_1 / ||A||_1 and ||QR - A||_1 / ||A||_1), `mode` and `message`.
    """
    why = _validate(inputs, outputs)
    if why is not None:
        return _fail(why)
    a, h, tau = inputs[0], outputs[0], outputs[1]
    batch, n = a.shape[0], a.shape[-1]
    res_factor, orth_factor = _bounds(n, strict)
    tiny = torch.finfo(torch.float64).tiny  # a zero matrix has bound 0: keep the ratio finite

    per = max(1, CHUNK_ELEMENTS // max(1, n * n))
    parts: list[dict[str, torch.Tensor]] = []
    with torch.no_grad():
        for s in range(0, batch if n else 0, per):
            st = _chunk_stats(a[s : s + per], h[s : s + per], tau[s : s + per])
            parts.append({k: v.cpu() for k, v in st.items()})
    if not parts:  # empty batch or n = 0: nothing to get wrong
        return True, {"message": "empty input", "batch": batch, "n": n, "failing_matrices": 0}
    st = {k: torch.cat([p[k] for p in parts]) for k in parts[0]}

    res_bound = res_factor * st["anorm"]
    res_ratio = st["residual"] / res_bound.clamp_min(tiny)
    orth_ratio = st["orthogonality"] / orth_factor
    finite = st["finite_h"] & st["finite_tau"] & st["finite_derived"]
    finite &= res_ratio.isfinite() & orth_ratio.isfinite()
    ok = finite & (st["residual"] <= res_bound) & (st["orthogonality"] <= orth_factor)
    score = torch.where(finite, torch.maximum(res_ratio, orth_ratio), math.inf)
    worst = int(score.argmax())

    def worst_of(x: torch.Tensor) -> float:
        x = x[finite]
        return float(x.max()) if x.numel() else 0.0

    n_fail = int((~ok).sum())
    metrics: dict[str, Any] = {
        "mode": "strict" if strict else "standard",
        "batch": batch,
        "n": n,
        "residual_ratio": worst_of(res_ratio),
        "orthogonality_ratio": worst_of(orth_ratio),
        "worst_matrix": worst,
        "failing_matrices": n_fail,
        "nonfinite": int((~finite).sum()),
        "leakage": worst_of(st["leakage"]),
        "qr_rel_err": worst_of(st["qr_rel_err"]),
    }
    where = f"matrix {worst} of {batch}"
    if n_fail == 0:
        metrics["message"] = (
            f"all {batch} matrices pass: worst residual {metrics['residual_ratio']:.2g} and "
            f"orthogonality {metrics['orthogonality_ratio']:.2g} of their bounds"
        )
        return True, metrics
    if not bool(finite[worst]):
        bad = [
            name
            for name, key in (("H", "finite_h"), ("tau", "finite_tau"))
            if not bool(st[key][worst])
        ]
        what = " and ".join(bad) if bad else "Q, Q^T A or Q^T Q"
        detail = f"NaN/Inf in {what}"
    else:  # every gate the worst matrix misses, so a broken Q is named even when R is off too
        misses = []
        if float(res_ratio[worst]) > 1:
            r, b = float(st["residual"][worst]), float(res_bound[worst])
            misses.append(f"residual {r:.2e} > bound {b:.2e}")
        if float(orth_ratio[worst]) > 1:
            o = float(st["orthogonality"][worst])
            misses.append(f"orthogonality {o:.2e} > bound {orth_factor:.2e}")
        detail = "; ".join(misses)
    metrics["message"] = f"{where}: {detail} ({n_fail} of {batch} matrices fail)"
    return False, metrics
