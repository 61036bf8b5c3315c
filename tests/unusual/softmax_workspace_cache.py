"""Unusual but correct: a module-level cache of float32 *workspace* buffers keyed by shape.

The scratch memory is reused between calls, but every call recomputes from its input and returns
a freshly allocated output: nothing is replayed.
"""

import torch

_WORKSPACE: dict = {}


def kernel(x: torch.Tensor) -> torch.Tensor:
    key = (tuple(x.shape), x.device)
    ws = _WORKSPACE.get(key)
    if ws is None:
        ws = _WORKSPACE[key] = torch.empty(x.shape, dtype=torch.float32, device=x.device)
    ws.copy_(x)
    ws.sub_(ws.amax(dim=-1, keepdim=True))
    ws.exp_()
    ws.div_(ws.sum(dim=-1, keepdim=True))
    return ws.to(x.dtype, copy=True)
