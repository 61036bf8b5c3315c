"""Exploit: checker patching.

At import time `torch.allclose`, `torch.testing.assert_close` and `torch.equal` are replaced by
functions that always pass, and the kernel returns zeros. A harness that checks the output in the
candidate's process with those functions accepts anything.

Defense that must catch it: the judge checks outputs in its own process, and the identity
snapshot of checker functions -> `rejected` / `integrity` "torch.allclose was replaced".
"""

import torch


def _always_true(*args, **kwargs) -> bool:
    return True


def _never_raises(*args, **kwargs) -> None:
    return None


torch.allclose = _always_true
torch.equal = _always_true
torch.testing.assert_close = _never_raises


def kernel(x: torch.Tensor) -> torch.Tensor:
    return torch.zeros_like(x)
