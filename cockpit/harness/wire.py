"""Moving tensors between the judge and the candidate's process.

Tensors travel as raw files in a per-evaluation exchange folder (RAM-backed /dev/shm where it
exists) and metadata travels over the socket. Pickling tensors through torch.multiprocessing would
need a file-descriptor server, which the candidate's network namespace cuts off, and would hand the
candidate live shared storage; plain bytes are simple and one-way.
"""

from __future__ import annotations

import itertools
import math
import os
import re
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


class WireError(ValueError):
    """A tensor reference from the other side is malformed: never followed, always a verdict."""


_FILE = re.compile(r"[A-Za-z]{1,3}\d{1,10}_\d{1,12}\.bin")
DTYPES = {  # what may cross the channel
    "float64",
    "float32",
    "float16",
    "bfloat16",
    "int64",
    "int32",
    "int16",
    "int8",
    "uint8",
    "bool",
}


def unpack(
    meta: dict[str, Any], folder: Path, device: str | torch.device = "cpu", remove: bool = True
) -> torch.Tensor:
    """Read a tensor the other side wrote. Everything in `meta` came from an untrusted process:
    the file must be a plain name of our own pattern inside `folder` (a path like `/etc/passwd`
    would otherwise be read and *deleted* by the judge), and dtype, shape and size must agree."""
    name = meta.get("file") if isinstance(meta, dict) else None
    if not isinstance(name, str) or not _FILE.fullmatch(name):
        raise WireError(f"malformed tensor file name {str(name)[:60]!r}")
    if meta.get("dtype") not in DTYPES:
        raise WireError(f"unknown dtype {str(meta.get('dtype'))[:30]!r}")
    shape = meta.get("shape")
    if (
        not isinstance(shape, list)
        or len(shape) > 8
        or not all(isinstance(d, int) and d >= 0 for d in shape)
    ):
        raise WireError("malformed tensor shape")
    dtype = getattr(torch, meta["dtype"])
    path = folder / name
    if path.is_symlink() or not path.is_file():
        raise WireError(f"tensor file {name} is missing or not a plain file")
    expect = math.prod(shape) * torch.empty(0, dtype=dtype).element_size()
    if path.stat().st_size != expect:
        raise WireError(
            f"tensor file {name} holds {path.stat().st_size} bytes, its shape needs {expect}"
        )
    raw_dtype = _VIEW_AS.get(dtype, dtype)
    np_dtype = torch.empty(0, dtype=raw_dtype).numpy().dtype
    arr = np.fromfile(path, dtype=np_dtype)
    if remove:
        path.unlink(missing_ok=True)
    t = torch.from_numpy(arr)
    if raw_dtype is not dtype:
        t = t.view(dtype)
    return t.reshape(meta["shape"]).to(device)


def combine(a: torch.Tensor, b: torch.Tensor, c: float, s: float) -> torch.Tensor:
    """c*a + s*b in float32, rounded back to the dtype; integer inputs are copied. The arena
    builds each timed call's input with it, the judge rebuilds the same bits from its own pool."""
    if not a.is_floating_point():
        return a.clone()
    return torch.add(a.float().mul(c), b.float(), alpha=s).to(a.dtype)
