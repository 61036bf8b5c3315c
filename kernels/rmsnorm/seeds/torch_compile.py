"""The RMSNorm formula compiled by torch.compile (Inductor), one specialization per shape.

Inductor fuses the cast, square, mean, rsqrt and both multiplies into one persistent or looped
reduction kernel, so it is the "what does the compiler already give me" point between the eager
baseline and a hand-written kernel. dynamic=False specializes every (rows, cols, dtype): the
first call at a new shape compiles (seconds), later calls are cached. The task has more distinct
shapes than Dynamo's default recompile limit (8), after which it would silently run eager code,
so the limit is raised for this function's calls only, through config.patch (a context manager,
restored on exit), not by assigning a global.
"""

import torch

FAMILY = "torch-compile"
EPS = 1e-6  # the task's eps (task.toml)
RECOMPILE_LIMIT = 64


def _rmsnorm(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    xf = x.float()
    rstd = torch.rsqrt(xf.pow(2).mean(dim=-1, keepdim=True) + EPS)
    return (xf * rstd * weight.float()).to(x.dtype)


_compiled = torch.compile(_rmsnorm, dynamic=False)


def kernel(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    with torch._dynamo.config.patch(recompile_limit=RECOMPILE_LIMIT):
        return _compiled(x, weight)
