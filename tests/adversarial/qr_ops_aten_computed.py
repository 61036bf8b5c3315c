"""Exploit (QR task): the forbidden routine through `torch.ops.aten` with a computed op name.

`torch.ops.aten` resolves operator names at run time, so `getattr(torch.ops.aten, "ge" + "qrf")`
reaches the same LAPACK kernel without any source line naming it.

Defense that must catch it: the aten dispatch recorder -> `rejected` / `forbidden_call`
"aten::geqrf".
"""

import torch

_OP = getattr(torch.ops.aten, "".join(["ge", "qrf"]))


def kernel(A: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    h, tau = _OP.default(A)
    return h.contiguous(), tau
