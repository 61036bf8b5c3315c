"""Unusual but correct: a `torch.compile`d softmax that also reports, on every timed call, how
many dynamo graphs the process has built so far ("timed call: dynamo graphs=N" on stdout). The
harness tests read it from the log tail to tell whether timed calls ran compiled or eagerly."""

import traceback

import torch
from torch._dynamo.utils import counters


def _softmax(x: torch.Tensor) -> torch.Tensor:
    xf = x.float()
    e = (xf - xf.amax(dim=-1, keepdim=True)).exp()
    return (e / e.sum(dim=-1, keepdim=True)).to(x.dtype)


_compiled = torch.compile(_softmax)


def kernel(x: torch.Tensor) -> torch.Tensor:
    y = _compiled(x)
    if "_timed_call" in {f.name for f in traceback.extract_stack(limit=4)}:
        print(f"timed call: dynamo graphs={counters['stats']['unique_graphs']}", flush=True)
    return y
