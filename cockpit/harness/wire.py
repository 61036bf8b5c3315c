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
import random
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


def _describe(t: torch.Tensor) -> dict[str, Any]:
    """What travels with a tensor's bytes: dtype, shape, and how the sender held it."""
    return {
        "dtype": str(t.dtype).removeprefix("torch."),
        "shape": list(t.shape),
        "stride": list(t.stride()),
        "device": str(t.device),
        "contiguous": t.is_contiguous(),
    }


def _expected(meta: Any) -> tuple[torch.dtype, list[int], int]:
    """(dtype, shape, bytes) of a tensor reference from the other side, validated: a known dtype,
    at most 8 non-negative integer dimensions. WireError otherwise."""
    name = meta.get("dtype") if isinstance(meta, dict) else None
    if name not in DTYPES:
        raise WireError(f"unknown dtype {str(name)[:30]!r}")
    shape = meta.get("shape")
    if (
        not isinstance(shape, list)
        or len(shape) > 8
        or not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape)
    ):
        raise WireError("malformed tensor shape")
    dtype = getattr(torch, meta["dtype"])
    return dtype, shape, math.prod(shape) * torch.empty(0, dtype=dtype).element_size()


def pack(t: torch.Tensor, folder: Path, prefix: str = "t") -> dict[str, Any]:
    t = t.detach()
    meta = _describe(t) | {"file": f"{prefix}{os.getpid()}_{next(_counter)}.bin"}
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
    dtype, shape, expect = _expected(meta)
    path = folder / name
    if path.is_symlink() or not path.is_file():
        raise WireError(f"tensor file {name} is missing or not a plain file")
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


def fresh_recipe(rng: random.Random, n: int) -> tuple[int, int, float, float]:
    """Which two of `n` pool entries a timed call mixes, and at what angle (`combine`). Both sides
    draw it from one seed: the judge rebuilds any call's input without being told the recipe."""
    ia = rng.randrange(n)
    ib = (ia + 1 + rng.randrange(n - 1)) % n
    theta = rng.random() * 2 * math.pi
    return ia, ib, math.cos(theta), math.sin(theta)


# --- commitments: a burst's reply binds every call's outputs before the judge picks one to see ---
COMMIT_WIDTH = 4096  # random weights, tiled over an output: every element counts


def commit_weights(seed: int, device: str | torch.device, numel: int) -> torch.Tensor:
    """One burst's weights, `numel` of them: COMMIT_WIDTH numbers drawn on the CPU from `seed`
    (the same on either side), tiled."""
    g = torch.Generator().manual_seed(seed)
    w = torch.randn(COMMIT_WIDTH, generator=g).to(device)
    return w.repeat(-(-max(numel, 1) // COMMIT_WIDTH))[:numel]


def commitment(outs: list[torch.Tensor], w: torch.Tensor) -> torch.Tensor:
    """One call's commitment: the sum over its outputs of <output, w>, in float32 (a 0-d tensor,
    read without a synchronize). Its value cannot be known without every element of every
    output; computing it reads each output once. A dot product, not a matmul: a candidate's
    TF32 setting cannot change it. `w` holds at least as many weights as the largest output."""
    total = None
    for o in outs:
        o = o.detach()
        f = (torch.view_as_real(o) if o.is_complex() else o).reshape(-1).float()
        d = torch.dot(f, w[: f.numel()])
        total = d if total is None else total + d
    return total if total is not None else torch.zeros((), device=w.device)


def commitments_agree(a: float, b: float, scale: float) -> bool:
    """Two commitments of the same output bytes, computed by the arena and by the judge (the same
    operation; the rounding of a float32 dot is relative to `scale`, the commitment of |outputs|
    with |w|)."""
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    if math.isinf(a) or math.isinf(b):
        return a == b
    return abs(a - b) <= 1e-3 * scale + 1e-30


# --- the exchange: files, or two sealed shared-memory regions -----------------------------------
class Files:
    """The file exchange: one new file per tensor in the exchange folder, removed by its reader.
    Simple and one-way, but every transfer allocates fresh pages twice (the file, then the array
    it is read into), so page faults bound its speed (docs/decisions/0012-memfd-exchange.md)."""

    kind = "files"

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def reset(self) -> None:
        pass

    def pack(self, t: torch.Tensor, prefix: str = "t") -> dict[str, Any]:
        return pack(t, self.folder, prefix)

    def unpack(self, meta: dict[str, Any], device: str | torch.device = "cpu") -> torch.Tensor:
        return unpack(meta, self.folder, device)


REGION_ALIGN = 64  # bytes: every tensor starts on a cache line (and a 16-byte vector boundary)


class Region:
    """One direction of the exchange as a memfd both processes map: the writer bump-allocates
    tensors in it (from offset 0 again at each request) and grows it when needed; the reader
    copies each tensor out at once and never keeps a view. Pages are faulted in once per
    evaluation instead of once per transfer (a mapping already faulted in copies at 6-14 GB/s on
    the same VM where files ran at ~400 MB/s).

    Sealed against shrinking (F_SEAL_SHRINK, then F_SEAL_SEAL): the other side may write garbage
    into it, which only changes what it reports, but it can never truncate it under the judge's
    mapping (a SIGBUS in the judge) nor add seals that would block the judge's writes. A reader
    accepts an offset and size only inside the current file; every reference is validated like a
    file name in `unpack`."""

    kind = "memfd"

    def __init__(self, fd: int | None = None, name: str = "cockpit-x") -> None:
        import fcntl

        if fd is None:
            fd = os.memfd_create(name, os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
            fcntl.fcntl(fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_SEAL)
        else:
            seals = fcntl.fcntl(fd, fcntl.F_GET_SEALS)
            if not seals & fcntl.F_SEAL_SHRINK or not seals & fcntl.F_SEAL_SEAL:
                raise WireError("the exchange region is not sealed against shrinking")
        self.fd = fd
        self.offset = 0  # the writer's next free byte
        self._map: Any = None
        self._mapped = 0

    def close(self) -> None:
        self._map = None
        os.close(self.fd)

    def reset(self) -> None:
        self.offset = 0

    def _view(self, offset: int, nbytes: int) -> torch.Tensor:
        """Bytes [offset, offset + nbytes) of the mapping, remapped larger when the file grew."""
        import mmap

        end = offset + nbytes
        if end > self._mapped:
            size = os.fstat(self.fd).st_size
            if end > size:
                raise WireError(f"tensor at {offset} + {nbytes} bytes lies past the region")
            # map what is needed (with room), not the whole file: the other side may have grown
            # it to any size
            length = min(size, max(end, 2 * self._mapped, 64 << 20))
            try:
                self._map = mmap.mmap(self.fd, length)  # the old map closes once unviewed
            except (OSError, ValueError) as exc:
                raise WireError(f"cannot map {length} bytes of the region: {exc}") from None
            self._mapped = length
        return torch.frombuffer(self._map, dtype=torch.uint8, count=nbytes, offset=offset)

    def pack(self, t: torch.Tensor, prefix: str = "t") -> dict[str, Any]:
        t = t.detach()
        meta = _describe(t)
        c = t.contiguous()
        nbytes = c.numel() * c.element_size()
        offset = -(-self.offset // REGION_ALIGN) * REGION_ALIGN
        if offset + nbytes > os.fstat(self.fd).st_size:
            grow = max(offset + nbytes, 2 * os.fstat(self.fd).st_size, 1 << 20)
            os.ftruncate(self.fd, grow)
        if nbytes:
            flat = c.reshape(-1)
            raw = flat.view(torch.uint8) if flat.dtype != torch.bool else flat.to(torch.uint8)
            self._view(offset, nbytes).copy_(raw)
        self.offset = offset + nbytes
        meta["region"] = [offset, nbytes]
        return meta

    def unpack(self, meta: dict[str, Any], device: str | torch.device = "cpu") -> torch.Tensor:
        where = meta.get("region") if isinstance(meta, dict) else None
        if (
            not isinstance(where, list)
            or len(where) != 2
            or not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in where)
        ):
            raise WireError(f"malformed region reference {str(where)[:60]!r}")
        dtype, shape, expect = _expected(meta)
        offset, nbytes = where
        if nbytes != expect:
            raise WireError(f"region tensor holds {nbytes} bytes, its shape needs {expect}")
        out = torch.empty(nbytes, dtype=torch.uint8, device=device)
        if nbytes:
            out.copy_(self._view(offset, nbytes))  # a copy: the other side may rewrite the region
        if dtype == torch.bool:
            return out.ne(0).reshape(shape)
        return out.view(dtype).reshape(shape)


class Beacon:
    """One shared page where the arena counts the compiles it starts (a Triton JIT cache miss, a
    Dynamo frame compile) while the judge waits on a call.

    The first call on a shape gets a compile allowance on top of its per-call limit, but only
    when the arena starts a compile during that request: a call that hangs without compiling is
    ended at its per-call limit, one that compiles gets the allowance as before. The count lives
    in the candidate's address space, so a candidate can raise it at will; all that buys is the
    allowance every first call once had. Sealed against any change of size, so neither side can
    fault the other's mapping."""

    SIZE = 4096

    def __init__(self, fd: int | None = None) -> None:
        import fcntl
        import mmap

        seals = fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_SEAL
        if fd is None:
            fd = os.memfd_create("cockpit-beacon", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
            os.ftruncate(fd, self.SIZE)
            fcntl.fcntl(fd, fcntl.F_ADD_SEALS, seals)
        elif (
            fcntl.fcntl(fd, fcntl.F_GET_SEALS) & seals != seals or os.fstat(fd).st_size != self.SIZE
        ):
            raise WireError("the compile beacon is not a sealed page")
        self.fd = fd
        self._map: Any = mmap.mmap(fd, self.SIZE)

    def close(self) -> None:
        self._map = None
        os.close(self.fd)

    def count(self) -> int:
        """Compiles started so far (as the arena wrote it: any 8 bytes)."""
        return int.from_bytes(self._map[0:8], "little")

    def bump(self, *_: Any, **__: Any) -> None:
        """One more compile started (a hook: takes and ignores whatever its caller passes)."""
        self._map[0:8] = ((self.count() + 1) % (1 << 64)).to_bytes(8, "little")


def exchange(kind: str, folder: Path) -> tuple[Any, Any]:
    """(to the arena, from the arena) for the judge: the file exchange in `folder`, or two
    sealed regions (`kind` "memfd"; their fds go to the arena with its configuration)."""
    if kind == "memfd":
        return Region(name="cockpit-to-arena"), Region(name="cockpit-to-judge")
    if kind != "files":
        raise ValueError(f"unknown exchange {kind!r} (files or memfd)")
    f = Files(folder)
    return f, f
