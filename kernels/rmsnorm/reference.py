"""RMSNorm reference: trusted, clear, and only ever imported by the judge process.

The judge calls `reference` with float64 copies of the inputs (see cockpit/harness/verify.py), so
the formula below is evaluated in float64 there; called with float32 or bfloat16 tensors (the
meta-device shape probe, the `cockpit baseline` wrapper) it accumulates in float32 and returns
x's dtype, which is also what a candidate must do.
"""

import torch

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16}
EPS = 1e-6  # must equal `eps` in task.toml (tests/test_rmsnorm_task.py checks it)
_CHUNK_ELEMS = 1 << 24  # float32 temporaries per generated block of rows (64 MiB)


def make_inputs(shape: dict, seed: int, device: str) -> tuple[torch.Tensor, torch.Tensor]:
    """x: normal values, each row scaled by its own factor 10**U(-4, 3) and shifted by a small
    per-row offset; weight: about 1 with a tenth of its entries negated.

    Why these values: a row scaled by 1e-4 has mean(x^2) = 1e-8, far below eps, so a kernel that
    drops eps (or uses another value) is off by up to 10x there; rows scaled by 1e3 have squares
    past float16's range (65504), so squaring in half precision overflows. Summing the squares
    in bfloat16 one after another fails too, at any scale: once the sum is a few hundred terms
    large, each new square is below half its ulp and is rounded away (the tests show it). The
    offset makes the RMS differ from the standard deviation (a LayerNorm-style kernel fails);
    negative weights catch a kernel that takes |weight| or skips it.

    Determinism: everything comes from one generator on `device` in a fixed order (the same seed
    gives the same tensors on the same kind of device; drawing on the GPU turns the 20-50 s a
    > 2**31-element input cost on the CPU into milliseconds); x is generated in blocks of rows (a
    fixed function of the shape) so such an x never needs a float32 copy of the whole tensor.
    """
    dev = torch.device(device)
    g = torch.Generator(device=dev).manual_seed(seed)
    rows, cols = shape["rows"], shape["cols"]
    dtype = DTYPES[shape.get("dtype", "float32")]
    scale = 10.0 ** (torch.rand(rows, 1, generator=g, dtype=torch.float64, device=dev) * 7 - 4)
    offset = torch.randn(rows, 1, generator=g, dtype=torch.float64, device=dev) * 0.5
    weight = 1 + 0.25 * torch.randn(cols, generator=g, device=dev)
    weight = torch.where(torch.rand(cols, generator=g, device=dev) < 0.1, -weight, weight)
    x = torch.empty(rows, cols, dtype=dtype, device=dev)
    step = max(_CHUNK_ELEMS // max(cols, 1), 1)
    for lo in range(0, rows, step):
        hi = min(rows, lo + step)
        block = torch.randn(hi - lo, cols, generator=g, dtype=torch.float32, device=dev)
        x[lo:hi] = ((block + offset[lo:hi].float()) * scale[lo:hi].float()).to(dtype)
    return x, weight.to(dtype)


def reference(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    """y = x * rsqrt(mean(x^2, -1) + eps) * weight, accumulated in at least float32."""
    acc = torch.promote_types(x.dtype, torch.float32)
    xf = x.to(acc)
    rstd = torch.rsqrt(xf.pow(2).mean(dim=-1, keepdim=True) + EPS)
    return (xf * rstd * weight.to(acc)).to(x.dtype)
