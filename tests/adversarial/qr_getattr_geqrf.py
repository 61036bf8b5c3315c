"""Exploit (QR task): the forbidden library routine through a computed attribute name.

`getattr(torch, "geq" + "rf")` is `torch.geqrf`, but no source line names it, so a static scan
for forbidden names sees nothing. The output is LAPACK's, made contiguous.

Defense that must catch it: the aten dispatch recorder during verification ->
`rejected` / `forbidden_call` "aten::geqrf".
"""

import torch

_NAME = "geq" + "rf"


def kernel(A: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    h, tau = getattr(torch, _NAME)(A)
    return h.contiguous(), tau
