"""The reference softmax compiled by torch.compile (Inductor), one specialization per shape.

Inductor turns the row softmax into one persistent or looped reduction kernel (max, exp-sum,
normalize), so it is the "what does the compiler already give me" point between the eager
baseline and a hand-written kernel, and the figure the issue compares the Triton seeds with.
dynamic=False specializes every (rows, cols, dtype): the first call at a new shape compiles
(seconds), later calls are cached. The task has more distinct shapes than Dynamo's default
recompile limit (8), after which it would silently run eager code, so the limit is raised for
this function's calls only, through config.patch (a context manager, restored on exit).
"""

import torch

FAMILY = "torch-compile"
RECOMPILE_LIMIT = 64


def _softmax(x: torch.Tensor) -> torch.Tensor:
    return torch.softmax(x, dim=-1)


_compiled = torch.compile(_softmax, dynamic=False)


def kernel(x: torch.Tensor) -> torch.Tensor:
    with torch._dynamo.config.patch(recompile_limit=RECOMPILE_LIMIT):
        return _compiled(x)
