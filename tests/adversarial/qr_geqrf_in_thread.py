"""Exploit (QR task): the forbidden routine on a worker thread.

TorchDispatchMode (the aten recorder) and `sys.setprofile` (the C-call hook) are both
thread-local. The kernel runs geqrf, reached through a computed name, on a worker thread and joins
it before returning, so no thread is left running for the thread census to see either.

Defense that must catch it: expected `rejected` / `forbidden_call` "aten::geqrf". (Not caught: the
recorder only sees ops dispatched on the calling thread.)
"""

import threading

import torch

_NAME = "geq" + "rf"


def kernel(A: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    box = {}
    t = threading.Thread(target=lambda: box.update(out=getattr(torch, _NAME)(A)))
    t.start()
    t.join()
    h, tau = box["out"]
    return h.contiguous(), tau
