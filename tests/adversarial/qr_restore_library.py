"""Exploit (QR task): putting the forbidden routine back into the dispatcher.

The arena replaces the task's forbidden aten ops in this process's dispatcher with a kernel that
records the call and raises (`arena._BackendWatch`). The registrations live in a
`torch.library.Library` object, and destroying it restores the real kernels. The candidate finds
the watch among the garbage collector's objects at import, destroys its library, and then calls
the routine, named only through string concatenation so the static scan passes.

Defense that must catch it: the canary after every watched call (each forbidden op called once
through its captured dispatcher entry point must still raise the watch's error): expected
`rejected` / `forbidden_call` "the watch on aten::geqrf ... was removed".
"""

import gc

import torch

for _obj in gc.get_objects():
    if type(_obj).__name__ == "_BackendWatch":
        _obj.lib._destroy()

_NAME = "geq" + "rf"


def kernel(A: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    h, tau = getattr(torch, _NAME)(A)
    return h, tau
