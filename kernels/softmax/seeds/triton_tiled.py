"""Softmax over the last dimension in Triton: several short rows per program, long rows split
across programs.

Why a second Triton family: `triton_online` (one program per row) is at 90% of the copy roofline
on 8192 x 8192 but far below it where one program per row is the wrong unit of work (H200,
BENCHMARKS.md session 4): many short rows (32768 x 1024 bf16 56%, 65537 x 257 f32 34%: thousands
of tiny programs) and few long rows (2048 x 65536 bf16 51%, 17 x 131073 bf16 2.5%: 17 programs on
132 SMs, each walking a 256 KiB row twice).

Algorithm:
- cols <= SINGLE_MAX: a program takes a [R, BC] tile, R rows of BC = next_pow2(cols) columns,
  R = TILE_ELEMS // BC (at least 1): load once, max and sum along the row inside the tile,
  normalize, store. One read and one write of x: the roofline minimum.
- cols > SINGLE_MAX: the row is cut into CHUNK-column chunks, one program per (row, chunk), in two
  launches. The first stores each chunk's max m_c and sum_c exp(x - m_c) (two floats); the second
  combines its row's chunk statistics, M = max_c m_c and S = sum_c s_c exp(m_c - M), and writes
  exp(x - M) / S for its chunk. Reads x twice (1.5x the minimum traffic, as the online version)
  but with rows x chunks programs in flight instead of rows.

Cost model: bytes = 2 * rows * cols * itemsize (+ 8 bytes per chunk), 5 flops per element:
memory-bound at every shape. Offsets: row indices are widened to int64 before the multiply by
the row stride (inputs with more than 2**31 elements); offsets inside a row stay int32.
"""

import torch
import triton
import triton.language as tl

FAMILY = "triton-tiled-rows"
TUNABLES = {
    "TILE_ELEMS": [2048, 4096, 8192, 16384],
    "SINGLE_MAX": [4096, 8192, 16384],
    "CHUNK": [2048, 4096, 8192],
    "NUM_WARPS": [4, 8, 16],
    "STREAMING": [False, True],
    "PERSIST": [0, 2, 4, 8],
    "SLAB_BYTES": [0, 8 << 20, 16 << 20, 24 << 20],
    "ODD_VEC": [False, True],
}
TILE_ELEMS = 8192  # elements per program in the tiled path (R rows of BC columns)
SINGLE_MAX = 8192  # longest row done in one tile; longer rows are split into chunks
CHUNK = 4096  # columns per program in the split path
NUM_WARPS = 8  # warps for a full tile; smaller tiles get one warp per 1024 elements
STREAMING = False  # tiled path: loads marked evict-first, stores streaming (.cs), as data that
# is touched once; unmeasured (session 4)
SLAB_BYTES = 0  # split path: 0 = both launches over all rows (the second read of x comes from
# DRAM: 2048 x 65536 bf16 moves 3 x 537 MB, 57% of the roofline on the H200, session 5); n > 0 =
# the rows in slabs of about n bytes of x, stats then apply per slab, so the apply launch reads
# its slab back from L2 (50 MB on an H200: try 8-24 MB). Unmeasured (session 5)
ODD_VEC = False  # tiled path, rows not starting on a 16-byte boundary (odd lengths: 7777 x 8191
# bf16 68.7%, 65537 x 257 f32 47.8% of the roofline, session 5 --final): vector loads through an
# aligned window, vector stores inside the row (`_softmax_tile_odd`); off: element loads and
# stores. Unmeasured (session 5)
PERSIST = 0  # tiled path: 0 = one program per tile; k = k programs per SM looping over the tiles
# (no tail wave, one launch's worth of programs); unmeasured (session 4)


@triton.jit
def _softmax_tile_rows(
    x_ptr, y_ptr, t, rows, cols, stride_x, stride_y,
    R: tl.constexpr, BC: tl.constexpr, EV: tl.constexpr, CM: tl.constexpr, AL: tl.constexpr,
):  # fmt: skip
    """Tile t: rows t*R .. t*R+R-1."""
    if AL > 1:  # row starts and the row length are multiples of AL (host-checked); the no-op
        # `// AL * AL` tells the compiler so (tl.multiple_of does not reach an argument): vectors
        cols = cols // AL * AL
        stride_x = stride_x // AL * AL
        stride_y = stride_y // AL * AL
    r = (t * R + tl.arange(0, R)).to(tl.int64)
    c = tl.arange(0, BC)
    mask = (r[:, None] < rows) & (c[None, :] < cols)
    x = tl.load(
        x_ptr + r[:, None] * stride_x + c[None, :],
        mask=mask,
        other=-float("inf"),
        eviction_policy=EV,
    )
    x = x.to(tl.float32)
    m = tl.max(x, axis=1)
    m = tl.where(m == -float("inf"), 0.0, m)  # padding rows: keep exp finite (not stored)
    e = tl.exp(x - m[:, None])
    den = tl.sum(e, axis=1)
    den = tl.where(den == 0.0, 1.0, den)  # padding rows again
    y = e / den[:, None]
    yp = y_ptr + r[:, None] * stride_y + c[None, :]
    tl.store(yp, y.to(y_ptr.dtype.element_ty), mask=mask, cache_modifier=CM)


@triton.jit
def _softmax_tile_odd(
    x_ptr, y_ptr, rows, cols, stride,
    R: tl.constexpr, BC: tl.constexpr, V: tl.constexpr, EV: tl.constexpr, CM: tl.constexpr,
    TAIL: tl.constexpr,
):  # fmt: skip
    """The tile path for rows that do not start on a vector boundary (an odd row length such as
    8191 or 257; ODD_VEC). Each row is read through a window that starts at the aligned address
    at or before it, so loads are whole V-element vectors (what is not the row's is masked out in
    registers), plus one vector past the window when a row can spill over it (TAIL: cols + V - 1
    > BC). Stores: whole vectors where a vector lies inside the row, element stores for the
    partial vectors at the row's two ends. Needs x and y 16-byte aligned with the same row
    stride, and cols >= 2V (host-checked)."""
    t = tl.program_id(0)
    r = (t * R + tl.arange(0, R)).to(tl.int64)
    live = r < rows
    s = r * stride
    a = s // V * V  # the aligned window start: a multiple of V
    lead = (s - a).to(tl.int32)  # elements before the row in its first vector, 0 .. V-1
    end = lead + cols  # the row's end, relative to the window
    c = tl.arange(0, BC)
    vec = c // V  # the vector of each window position (constant over V lanes: vector masks)
    nvec = (end + V - 1) // V  # vectors the row touches
    wmask = live[:, None] & (vec[None, :] < nvec[:, None])
    xw = tl.load(
        x_ptr + a[:, None] + c[None, :], mask=wmask, other=-float("inf"), eviction_policy=EV
    )
    inside = (c[None, :] >= lead[:, None]) & (c[None, :] < end[:, None])
    xw = tl.where(inside, xw.to(tl.float32), -float("inf"))
    m = tl.max(xw, axis=1)
    if TAIL:  # a row can spill one vector past the window (lead + cols > BC)
        ct = BC + tl.arange(0, V)
        tmask = live[:, None] & (ct[None, :] < end[:, None])
        xt = tl.load(x_ptr + a[:, None] + ct[None, :], mask=tmask, other=-float("inf"))
        xt = xt.to(tl.float32)
        m = tl.maximum(m, tl.max(xt, axis=1))
    m = tl.where(m == -float("inf"), 0.0, m)
    ew = tl.exp(xw - m[:, None])
    den = tl.sum(ew, axis=1)
    if TAIL:
        den += tl.sum(tl.exp(xt - m[:, None]), axis=1)
    den = tl.where(den == 0.0, 1.0, den)
    vfirst = (lead + V - 1) // V  # first whole vector inside the row (0 or 1)
    vend = end // V  # one past the last whole vector inside the row
    full = live[:, None] & (vec[None, :] >= vfirst[:, None]) & (vec[None, :] < vend[:, None])
    yty = y_ptr.dtype.element_ty
    y = (ew / den[:, None]).to(yty)
    tl.store(y_ptr + a[:, None] + c[None, :], y, mask=full, cache_modifier=CM)
    # the partial vectors at the row's two ends: element stores, predicated over the window (no
    # memory traffic where off), plus the part of the last vector past the window
    edge = live[:, None] & inside & ~full
    tl.store(y_ptr + a[:, None] + c[None, :], y, mask=edge, cache_modifier=CM)
    if TAIL:
        yt = (tl.exp(xt - m[:, None]) / den[:, None]).to(yty)
        tl.store(y_ptr + a[:, None] + ct[None, :], yt, mask=tmask, cache_modifier=CM)


@triton.jit
def _softmax_tile(
    x_ptr, y_ptr, rows, cols, stride_x, stride_y, ntiles,
    R: tl.constexpr, BC: tl.constexpr, EV: tl.constexpr, CM: tl.constexpr, LOOP: tl.constexpr,
    AL: tl.constexpr,
):  # fmt: skip
    start, step = tl.program_id(0), 1
    if LOOP:  # PERSIST: a fixed set of programs walks the tiles
        step = tl.num_programs(0)
    for t in range(start, ntiles if LOOP else start + 1, step):
        _softmax_tile_rows(
            x_ptr, y_ptr, t, rows, cols, stride_x, stride_y, R, BC, EV, CM, AL
        )  # fmt: skip


@triton.jit
def _chunk_stats(
    x_ptr, m_ptr, s_ptr, row0, cols, stride_x, nchunks, CHUNK: tl.constexpr, AL: tl.constexpr
):
    if AL > 1:
        cols = cols // AL * AL
        stride_x = stride_x // AL * AL
    row = row0 + tl.program_id(0).to(tl.int64)
    ch = tl.program_id(1)
    c = ch * CHUNK + tl.arange(0, CHUNK)
    x = tl.load(x_ptr + row * stride_x + c, mask=c < cols, other=-float("inf")).to(tl.float32)
    m = tl.max(x, axis=0)
    s = tl.where(m == -float("inf"), 0.0, tl.sum(tl.exp(x - m), axis=0))
    tl.store(m_ptr + row * nchunks + ch, m)
    tl.store(s_ptr + row * nchunks + ch, s)


@triton.jit
def _chunk_apply(
    x_ptr, y_ptr, m_ptr, s_ptr, row0, cols, stride_x, stride_y, nchunks,
    CHUNK: tl.constexpr, NCH: tl.constexpr, AL: tl.constexpr,
):  # fmt: skip
    if AL > 1:  # row starts and the row length are multiples of AL (host-checked); the no-op
        # `// AL * AL` tells the compiler so (tl.multiple_of does not reach an argument): vectors
        cols = cols // AL * AL
        stride_x = stride_x // AL * AL
        stride_y = stride_y // AL * AL
    row = row0 + tl.program_id(0).to(tl.int64)
    ch = tl.program_id(1)
    k = tl.arange(0, NCH)
    mc = tl.load(m_ptr + row * nchunks + k, mask=k < nchunks, other=-float("inf"))
    sc = tl.load(s_ptr + row * nchunks + k, mask=k < nchunks, other=0.0)
    big = tl.max(mc, axis=0)
    total = tl.sum(tl.where(mc == -float("inf"), 0.0, sc * tl.exp(mc - big)), axis=0)
    c = ch * CHUNK + tl.arange(0, CHUNK)
    mask = c < cols
    x = tl.load(x_ptr + row * stride_x + c, mask=mask, other=-float("inf")).to(tl.float32)
    y = tl.exp(x - big) / total
    tl.store(y_ptr + row * stride_y + c, y.to(y_ptr.dtype.element_ty), mask=mask)


def _align(cols: int, *tensors: torch.Tensor) -> int:
    """AL: the widest vector, in elements (at most 16 bytes), that every row of every tensor
    starts on: the largest power of two dividing cols, each row stride and each data pointer.
    Triton specializes an argument only as "divisible by 16" or not, so a stride of 3000 or 1000
    made it assume nothing and load 2-byte / 4-byte scalars (sm_90 SASS of the tile kernel:
    LDG.E.U16 x32 at bf16, LDG.E x32 at f32; with AL, LDG.E.128 x8). Odd strides stay scalar."""
    al = 16 // tensors[0].element_size()
    while al > 1 and (
        cols % al
        or any(t.stride(0) % al or t.data_ptr() % (al * t.element_size()) for t in tensors)
    ):
        al //= 2
    return al


def _slabs(rows: int, row_bytes: int) -> list[tuple[int, int]]:
    """(first row, rows) of each slab of the split path: one slab of every row when SLAB_BYTES
    is 0, else slabs of about SLAB_BYTES of x (at least one row each)."""
    per = rows if not SLAB_BYTES else max(1, SLAB_BYTES // max(1, row_bytes))
    return [(r, min(per, rows - r)) for r in range(0, rows, per)]


def _warps(elems: int) -> int:
    return max(1, min(NUM_WARPS, elems // 1024))


_SMS: dict = {}


def _programs(ntiles: int, device: torch.device) -> int:
    """Programs of the tiled path: one per tile, or PERSIST per SM (1 SM in the interpreter)."""
    if not PERSIST:
        return ntiles
    if device not in _SMS:
        cuda = device.type == "cuda"
        _SMS[device] = torch.cuda.get_device_properties(device).multi_processor_count if cuda else 1
    return min(ntiles, PERSIST * _SMS[device])


def kernel(x: torch.Tensor) -> torch.Tensor:
    x = x.contiguous()
    rows, cols = x.shape
    y = torch.empty_like(x)
    if rows == 0 or cols == 0:
        return y
    al = _align(cols, x, y)
    bc = triton.next_power_of_2(cols)
    if bc <= SINGLE_MAX:
        r = max(1, min(TILE_ELEMS // bc, triton.next_power_of_2(rows)))
        ntiles = triton.cdiv(rows, r)
        v = 16 // x.element_size()
        if (
            ODD_VEC
            and al < v
            and cols >= 2 * v
            and x.stride(0) == y.stride(0)
            and x.data_ptr() % 16 == 0
            and y.data_ptr() % 16 == 0
        ):
            _softmax_tile_odd[(ntiles,)](
                x, y, rows, cols, x.stride(0), R=r, BC=bc, V=v, TAIL=cols + v - 1 > bc,
                EV="evict_first" if STREAMING else "", CM=".cs" if STREAMING else "",
                num_warps=min(16, 2 * _warps(r * bc)),  # half the elements per thread: the
                # masks cost registers (sm_90: 64-76 registers, no spills, at 8192 bf16 and
                # 16 x 512 f32; 101-133 with the plain path's warps)
            )  # fmt: skip
            return y
        _softmax_tile[(_programs(ntiles, x.device),)](
            x, y, rows, cols, x.stride(0), y.stride(0), ntiles, R=r, BC=bc, LOOP=bool(PERSIST), AL=al,
            EV="evict_first" if STREAMING else "", CM=".cs" if STREAMING else "",
            num_warps=_warps(r * bc),
        )  # fmt: skip
        return y
    nchunks = triton.cdiv(cols, CHUNK)
    m = torch.empty(rows, nchunks, dtype=torch.float32, device=x.device)
    s = torch.empty_like(m)
    for row0, n in _slabs(rows, cols * x.element_size()):
        grid = (n, nchunks)
        _chunk_stats[grid](
            x, m, s, row0, cols, x.stride(0), nchunks, CHUNK=CHUNK, AL=al, num_warps=_warps(CHUNK)
        )
        _chunk_apply[grid](
            x, y, m, s, row0, cols, x.stride(0), y.stride(0), nchunks,
            CHUNK=CHUNK, NCH=max(2, triton.next_power_of_2(nchunks)), AL=al,
            num_warps=_warps(CHUNK),
        )  # fmt: skip
    return y
