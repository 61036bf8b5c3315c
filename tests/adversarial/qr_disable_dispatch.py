"""Exploit (QR task): the forbidden routine with Python dispatch switched off.

`torch._C._DisableTorchDispatch()` skips every Python `__torch_dispatch__` handler, active modes
included, for the ops run inside it: the aten recorder never sees geqrf. The op is reached
through `torch.ops.aten` with a computed name, whose call is a Python-level `OpOverload.__call__`
(no `c_call` event named like the routine), so the C-call hook does not see it either. No static
rule names `_DisableTorchDispatch` (only `_python_dispatch` and `_get_current_dispatch_mode` are
listed).

Defense that must catch it: expected `rejected` / `forbidden_call` "aten::geqrf". (Not caught.)
"""

import torch

_OP = getattr(torch.ops.aten, "ge" + "qrf").default


def kernel(A: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    with torch._C._DisableTorchDispatch():
        h, tau = _OP(A)
    return h.contiguous(), tau
