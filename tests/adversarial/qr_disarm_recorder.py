"""Exploit (QR task): disarming the recorder from inside the process.

The arena object that loads the candidate is on the call stack at import time. Raising and
catching an exception hands over a traceback; `tb_frame.f_back` walks up to `Arena.load`, whose
`self` holds the recorder's configuration. Clearing `forbidden_ops` (the very set the recorder
closure reads) and `forbidden_cnames` turns both run-time detectors off. None of the names used
(`__traceback__`, `tb_frame`, `f_back`, `f_locals`) is on the static scan's lists, and the
forbidden routine is named only through string concatenation, so this file passes the static
scan as well.

Defense that must catch it: expected `rejected` / `forbidden_call` "aten::geqrf". (Not caught: the
arena's state lives in the candidate's process.)
"""

import torch


def _find_arena():
    try:
        raise RuntimeError
    except RuntimeError as exc:
        frame = exc.__traceback__.tb_frame
    while frame is not None:
        obj = frame.f_locals.get("self")
        if obj is not None and hasattr(obj, "forbidden_ops"):
            return obj
        frame = frame.f_back
    return None


_arena = _find_arena()
if _arena is not None:
    _arena.forbidden_ops.clear()
    _arena.forbidden_cnames.clear()

_NAME = "geq" + "rf"


def kernel(A: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    h, tau = getattr(torch, _NAME)(A)
    return h.contiguous(), tau
