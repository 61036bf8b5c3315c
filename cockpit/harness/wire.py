"""Moving tensors between the judge and the candidate's process.

Tensors travel as raw files in a per-evaluation exchange folder (RAM-backed /dev/shm where it
exists) and metadata travels over the socket. Pickling tensors through torch.multiprocessing would
need a file-descriptor server, which the candidate's network namespace cuts off, and would hand the
candidate live shared storage; plain bytes are simple and one-way.
"""

from __future__ import annotations

import itertools
import os
from pathlib import Path
from typing import Any

import numpy as np
import torch

_counter = itertools.count()
# dtypes numpy cannot hold travel as same-width integers
_VIEW_AS = {torch.bfloat16: torch.int16, torch.float16: torch.int16}


def exchange_root() -> Path:
    shm = Path("/dev/shm")
    return (
        shm if shm.is_dir() and os.access(shm, os.W_OK) else Path(os.environ.get("TMPDIR", "/tmp"))
    )


def pack(t: torch.Tensor, folder: Path, prefix: str = "t") -> dict[str, Any]:
    t = t.detach()
    meta = {
        "dtype": str(t.dtype).removeprefix("torch."),
        "shape": list(t.shape),
        "stride": list(t.stride()),
        "device": str(t.device),
        "contiguous": t.is_contiguous(),
        "file": f"{prefix}{os.getpid()}_{next(_counter)}.bin",
    }
    c = t.contiguous()
    if c.dtype in _VIEW_AS:
        c = c.view(_VIEW_AS[c.dtype])
    c.cpu().numpy().tofile(folder / meta["file"])
    return meta


def unpack(
    meta: dict[str, Any], folder: Path, device: str | torch.device = "cpu", remove: bool = True
) -> torch.Tensor:
    dtype = getattr(torch, meta["dtype"])
    path = folder / meta["file"]
    raw_dtype = _VIEW_AS.get(dtype, dtype)
    np_dtype = torch.empty(0, dtype=raw_dtype).numpy().dtype
    arr = np.fromfile(path, dtype=np_dtype)
    if remove:
        path.unlink(missing_ok=True)
    t = torch.from_numpy(arr)
    if raw_dtype is not dtype:
        t = t.view(dtype)
    return t.reshape(meta["shape"]).to(device)
