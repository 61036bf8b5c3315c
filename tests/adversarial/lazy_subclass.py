"""Exploit: lazy tensor subclass.

The kernel returns instantly with a `torch.Tensor` subclass whose storage is still empty; the
softmax is computed only when something first *uses* the tensor (any torch function or method,
e.g. the harness's `torch.allclose`). A harness that times the call and then checks with torch
operations sees a correct result and a near-zero time.

Defense that must catch it: the exact-type gate `type(out) is torch.Tensor` -> `wrong` /
`bad_type`.
"""

import torch


class LazySoftmax(torch.Tensor):
    @staticmethod
    def __new__(cls, x: torch.Tensor):
        t = torch.Tensor._make_subclass(cls, torch.empty_like(x))
        t._pending = x
        return t

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        for a in list(args) + list(kwargs.values()):
            if isinstance(a, LazySoftmax) and getattr(a, "_pending", None) is not None:
                src, a._pending = a._pending, None
                with torch._C.DisableTorchFunctionSubclass():
                    a.copy_(torch.softmax(src, dim=-1))
        with torch._C.DisableTorchFunctionSubclass():
            return func(*args, **kwargs)


def kernel(x: torch.Tensor) -> torch.Tensor:
    return LazySoftmax(x)
