"""RMSNorm over the last dimension of a 2-D tensor, scaled by a weight vector, in Triton: rows
tiled so that every shape, from one row of 4099 columns to 65537 rows of 257, is one pass over
memory where it can be.

What it computes: y[i, j] = x[i, j] * rstd_i * weight[j] with rstd_i = 1 / sqrt(mean_j x[i, j]^2
+ eps), the squares summed in float32 whatever the input dtype, y stored in x's dtype.

Why it is fast: RMSNorm is memory-bound (4 flops an element against 2 * itemsize bytes, the
weight read once and then from cache), so the time to beat is a copy of x: one read of x, one
write of y. The kernel is built so that each shape reads x once where the row fits a program's
registers, with every program doing enough work to hide its launch, and with loads and stores
as 16-byte vectors wherever the compiler can prove the alignment (a divisibility it cannot
prove makes every access a 2- or 4-byte scalar):

- Short and medium rows (padded to at most SINGLE_MAX columns) are tiles of R rows by BC
  columns, one tile a program: load once, the row's sum of squares inside the tile, rstd,
  multiply by rstd and by the weight, store.
  - Rows of at most SHORT_ROW_MAX padded columns take one warp a program (at most 8 rows), so a
    row's reduction is warp shuffles, with no shared memory or barrier.
  - Rows just past a power of two h (at most h + h // 4 columns: 257, 4099) are a head tile of h
    columns, none masked, and a narrow tail tile, not one tile of 2h columns half padding.
  - Tiles whose rows load as 2-byte scalars (bf16 rows of odd length) take a copy of the body
    without the row mask when all R rows are present (`_full_tiles`): fewer predicated accesses.
  - Launches of fewer tiles than SMs load the weight with x, before the reduction (W_EARLY):
    few programs find the weight cold, and after the reduction it would be a second trip to
    memory in series.
  - A lone row with a head and a tail (1 x 4099) is launch- and latency-bound, not
    bandwidth-bound: LONE_SPLIT programs each load and reduce the whole row and each stores its
    1/LONE_SPLIT of it (loading only its part of the weight), so its stores leave from several
    SMs with no second launch; its row strides are passed as 0 (LONE_VEC), which Triton
    specializes as divisible by 16, so the head's accesses are vectors (only row 0 exists).
  - Rows that fill the GPU one program each but start off a 16-byte boundary (7777 x 8191) are
    an aligned body read in 16-byte vectors plus at most V - 1 scalar columns on each side
    (ROW_VEC, `_body_edges`); the weight, shifted by the row's offset, is read as scalars.
  - Rows of exactly LOOP_BLOCK-column steps on 16 bytes (8192 columns) are walked instead
    (`_rmsnorm_loop`, below).
- Rows past SINGLE_MAX, many of them (at least as many as SMs):
  - Up to WHOLE_ROW_BYTES and WHOLE_ROW_MAX_COLS (padded) a row stays in registers, one program
    of up to 32 warps a row, in its input dtype (the bf16 upcast is redone from the bits so the
    compiler keeps no float32 copy of the row). One read of x.
  - Longer rows (up to WIDE_LOOP_MAX_COLS padded) that start on 16 bytes are walked twice in
    WIDE_LOOP_BLOCK-column steps by a fixed set of programs, each taking row after row
    (`_rmsnorm_loop`): the sum of squares, then x * rstd * weight, the second read mostly from
    L2 (the first walk's loads are evict-last). Rows of a few whole steps are unrolled (LOOP_UNROLL), so every step's loads
    are in flight at once, with WIDE_UNROLL_PERSIST programs an SM, else WIDE_LOOP_PERSIST.
- Rows past SINGLE_MAX otherwise (too few to fill the GPU: 17 x 131073): each row is cut into
  chunks of CHUNK columns and at most CHUNK_BYTES, one program a (row, chunk), in two launches:
  the first stores each chunk's sum of squares, the second adds its row's partial sums (a tree
  over at most NCH values) and writes its chunk. It reads x twice, but with rows x chunks
  programs in flight; on a GPU the second launch is a programmatic dependent launch (PDL) that
  loads its chunk of x and of the weight before it waits for the first.

Cost model: bytes = (2 * rows * cols + cols) * itemsize (plus 4 bytes a chunk on the split path,
whose second read of x makes it 1.5x that); 4 flops an element: every shape is bounded by memory
or, for a lone row, by launch and latency. Offsets: row indices are widened to int64 before the
multiply by the row stride (inputs of more than 2**31 elements); offsets inside a row are int32.
"""

import torch
import triton
import triton.language as tl
from triton.language.extra.cuda import gdc_launch_dependents, gdc_wait

FAMILY = "triton-tiled-rows"
TUNABLES = {
    "TILE_ELEMS": [2048, 4096, 8192, 16384],
    "SINGLE_MAX": [4096, 8192, 16384],
    "CHUNK": [2048, 4096, 8192],
    "CHUNK_BYTES": [4096, 0, 8192],
    "NUM_WARPS": [4, 8, 16],
    "WHOLE_ROW_BYTES": [0, 65536, 131072],
    "SHORT_ROW_TILE": [0, 512, 1024, 2048],
    "LOOP_BLOCK": [8192, 4096, 0, 2048],
    "LOOP_WARPS": [16, 8],
    "HEAD_TAIL": [True, False],
    "ROW_VEC": [True, False],
    "PDL": [False, True],
    "CHUNK_VEC": [False, True],
    "W_EARLY": [False, True],
    "LOOP_UNROLL": [0, 4],
    "LONE_VEC": [False, True],
    "LONE_SPLIT": [1, 2, 4, 8],
    "WIDE_UNROLL_PERSIST": [1, 2],
    "FULL_TILES": [False, True],
}
# The tiled path (rows of at most SINGLE_MAX padded columns)
TILE_ELEMS = 8192  # elements a program: R = TILE_ELEMS // BC rows of BC columns
SINGLE_MAX = 8192  # longest padded row done in one tile; longer rows take the paths below
NUM_WARPS = 8  # warps of a full tile
TILE_WARP_ELEMS = 512  # a smaller tile gets one warp per this many elements
SHORT_ROW_TILE = 1024  # rows of at most SHORT_ROW_MAX padded columns: tiles of this many
# elements in one warp, at most 8 rows (0: off)
SHORT_ROW_MAX = 1024
HEAD_TAIL = True  # rows just past a power of two h: a head of h columns and a tail tile
FULL_TILES = True  # 2-byte scalar rows: tiles with all their rows skip the row mask
W_EARLY = True  # launches of fewer tiles than SMs load the weight before the reduction
LONE_SPLIT = 4  # programs sharing a lone row with a head and a tail (1: one program)
LONE_VEC = True  # a lone row's strides passed as 0, so its head loads are vectors
ROW_VEC = True  # rows off a 16-byte boundary, one a program: aligned body plus scalar edges
ROW_VEC_MIN = 2048  # ... for rows of at least this many padded columns
# The row walk (`_rmsnorm_loop`) within SINGLE_MAX: one program a row, rows of whole steps only
LOOP_BLOCK = 8192  # step over rows of LOOP_MIN_COLS to LOOP_MAX_COLS padded columns (0: off)
LOOP_MIN_COLS = 8192
LOOP_MAX_COLS = 8192
LOOP_WARPS = 16
LOOP_UNROLL = 4  # rows of exactly k whole steps, k <= LOOP_UNROLL, are walked unrolled
# Rows past SINGLE_MAX, one a program, held in registers
WHOLE_ROW_BYTES = 131072  # longest padded row in bytes (0: off)
WHOLE_ROW_MAX_COLS = 32768  # ... and in columns (65536 bf16 columns take the wide walk)
WHOLE_ROW_WARPS = 32  # warps of such a program (1,024 threads: at most 64 registers each)
# The wide walk (`_rmsnorm_loop`) past the whole row: a fixed set of programs walking the rows
WIDE_LOOP_BLOCK = 16384  # step over rows up to WIDE_LOOP_MAX_COLS padded columns (0: off)
WIDE_LOOP_MAX_COLS = 65536
WIDE_LOOP_WARPS = 32
WIDE_LOOP_PERSIST = 2  # programs an SM for rows walked by the runtime loop
WIDE_UNROLL_PERSIST = 1  # programs an SM for rows LOOP_UNROLL unrolls
# The split path: a row over chunk programs, two launches
CHUNK = 4096  # columns a program
CHUNK_BYTES = 4096  # ... and at most this many bytes of x (0: no limit): f32 chunks of 1024
CHUNK_VEC = True  # rows off a 16-byte boundary: chunks cut the aligned body, chunk 0 the edges
PDL = True  # on a GPU, the second launch is a programmatic dependent launch
EPS = 1e-6  # the task's eps (task.toml)


@triton.jit
def _rmsnorm_tile_rows(
    x_ptr, w_ptr, y_ptr, t, rows, cols, stride_x, stride_y, eps,
    R: tl.constexpr, BC: tl.constexpr, AL: tl.constexpr, WE: tl.constexpr, RM: tl.constexpr,
):  # fmt: skip
    """Tile t: rows t*R .. t*R+R-1 of BC (padded) columns. WE (W_EARLY): the weight is loaded
    before the reduction.
    RM: rows masked (off: the caller checked that all R rows are there)."""
    if AL > 1:  # row starts and the row length are multiples of AL (host-checked); the no-op
        # `// AL * AL` tells the compiler so (tl.multiple_of does not reach an argument): vectors
        cols = cols // AL * AL
        stride_x = stride_x // AL * AL
        stride_y = stride_y // AL * AL
    r = (t * R + tl.arange(0, R)).to(tl.int64)
    c = tl.arange(0, BC)
    mask = ((r[:, None] < rows) if RM else True) & (c[None, :] < cols)
    xp = x_ptr + r[:, None] * stride_x + c[None, :]
    x = tl.load(xp, mask=mask, other=0.0).to(tl.float32)
    if WE:
        w = tl.load(w_ptr + c, mask=c < cols, other=0.0).to(tl.float32)
    rstd = tl.rsqrt(tl.sum(x * x, axis=1) / cols + eps)
    if not WE:
        w = tl.load(w_ptr + c, mask=c < cols, other=0.0).to(tl.float32)
    y = x * rstd[:, None] * w[None, :]
    yp = y_ptr + r[:, None] * stride_y + c[None, :]
    tl.store(yp, y.to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _head_tail_weight(w_ptr, c, ct, own, wcm, SPL: tl.constexpr):
    """The weight's head (columns c, unmasked unless LONE_SPLIT: then only this program's
    `own` part) and tail (columns ct where wcm) for `_rmsnorm_head_tail`, in float32."""
    if SPL > 1:
        wh = tl.load(w_ptr + c, mask=own, other=0.0)
    else:
        wh = tl.load(w_ptr + c)
    wt = tl.load(w_ptr + ct, mask=wcm, other=0.0)
    return wh.to(tl.float32), wt.to(tl.float32)


@triton.jit
def _rmsnorm_head_tail(
    x_ptr, w_ptr, y_ptr, t, rows, cols, stride_x, stride_y, eps,
    R: tl.constexpr, BC: tl.constexpr, AL: tl.constexpr, BT: tl.constexpr, WE: tl.constexpr,
    RM: tl.constexpr, SPL: tl.constexpr,
):  # fmt: skip
    """Rows t*R .. t*R+R-1 as a head of BC columns (a power of two no longer than the row: no
    column masked) and a tail tile of BT columns for the cols - BC that remain: for rows just
    past a power of two (257 = 256 + 1), which a next_pow2 tile pads to twice their length. WE
    (W_EARLY): the weight is loaded before the reduction. RM: rows masked (off: the caller
    checked that all R rows are there, and the head's loads and stores are unpredicated).
    SPL > 1 (a lone row): SPL programs each load and reduce the whole tile and store 1/SPL of
    the head, the last of them also the tail (each loads only its part of the weight)."""
    if AL > 1:  # as in _rmsnorm_tile_rows: vector loads where the host checked alignment
        cols = cols // AL * AL
        stride_x = stride_x // AL * AL
        stride_y = stride_y // AL * AL
    r = (t * R + tl.arange(0, R)).to(tl.int64)
    c = tl.arange(0, BC)
    ct = BC + tl.arange(0, BT)
    rmask = r[:, None] < rows
    tmask = (rmask & (ct[None, :] < cols)) if RM else (ct[None, :] < cols)
    xrow = x_ptr + r[:, None] * stride_x
    if RM:
        xh = tl.load(xrow + c[None, :], mask=rmask, other=0.0)
    else:
        xh = tl.load(xrow + c[None, :])
    xh = xh.to(tl.float32)
    xt = tl.load(xrow + ct[None, :], mask=tmask, other=0.0).to(tl.float32)
    wcm = ct < cols
    own = c >= 0  # every head column is this program's (unless SPL > 1 below)
    if SPL > 1:  # this program's 1/SPL of the head (and the tail if it is the last)
        sp = tl.program_id(0) % SPL
        own = (c // (BC // SPL)) == sp
        wcm = wcm & (sp == SPL - 1)
        tmask = tmask & (sp == SPL - 1)
    if WE:
        wh, wt = _head_tail_weight(w_ptr, c, ct, own, wcm, SPL)
    ss = tl.sum(xh * xh, axis=1) + tl.sum(xt * xt, axis=1)
    rstd = tl.rsqrt(ss / cols + eps)
    if not WE:
        wh, wt = _head_tail_weight(w_ptr, c, ct, own, wcm, SPL)
    yrow = y_ptr + r[:, None] * stride_y
    ty = y_ptr.dtype.element_ty
    yh = xh * rstd[:, None] * wh[None, :]
    yt = xt * rstd[:, None] * wt[None, :]
    if SPL > 1:
        hmask = own[None, :]
        if RM:
            hmask = hmask & rmask
        tl.store(yrow + c[None, :], yh.to(ty), mask=hmask)
    elif RM:
        tl.store(yrow + c[None, :], yh.to(ty), mask=rmask)
    else:
        tl.store(yrow + c[None, :], yh.to(ty))
    tl.store(yrow + ct[None, :], yt.to(ty), mask=tmask)


@triton.jit
def _rmsnorm_tile_any(
    x_ptr, w_ptr, y_ptr, t, rows, cols, stride_x, stride_y, eps,
    R: tl.constexpr, BC: tl.constexpr, AL: tl.constexpr, BT: tl.constexpr, WE: tl.constexpr,
    RM: tl.constexpr, SPL: tl.constexpr,
):  # fmt: skip
    """Tile t as a head and a tail (BT > 0) or as one tile of BC columns."""
    if BT > 0:
        _rmsnorm_head_tail(
            x_ptr, w_ptr, y_ptr, t, rows, cols, stride_x, stride_y, eps, R, BC, AL, BT, WE, RM,
            SPL,
        )  # fmt: skip
    else:
        _rmsnorm_tile_rows(
            x_ptr, w_ptr, y_ptr, t, rows, cols, stride_x, stride_y, eps, R, BC, AL, WE, RM
        )  # fmt: skip


@triton.jit
def _rmsnorm_tile(
    x_ptr, w_ptr, y_ptr, rows, cols, stride_x, stride_y, eps,
    R: tl.constexpr, BC: tl.constexpr, AL: tl.constexpr, BT: tl.constexpr, WE: tl.constexpr,
    FT: tl.constexpr, SPL: tl.constexpr,
):  # fmt: skip
    """The tiled path: tile program_id(0) of R rows, or (SPL > 1, a lone row) SPL programs
    sharing tile 0. FT (`_full_tiles`): a tile with all its R rows takes the body compiled
    without the row mask, a ragged last tile the masked one. The tile is the one trip of a loop:
    Triton then places a barrier ahead of the first reduction, the form the seed's timings were
    taken with (straight-line code compiles to one barrier fewer)."""
    start = tl.program_id(0)
    if SPL > 1:
        start = tl.program_id(0) // SPL
    for t in range(start, start + 1, 1):
        if FT:
            if (t + 1) * R <= rows:
                _rmsnorm_tile_any(
                    x_ptr, w_ptr, y_ptr, t, rows, cols, stride_x, stride_y, eps, R, BC, AL, BT,
                    WE, False, SPL,
                )  # fmt: skip
            else:
                _rmsnorm_tile_any(
                    x_ptr, w_ptr, y_ptr, t, rows, cols, stride_x, stride_y, eps, R, BC, AL, BT,
                    WE, True, SPL,
                )  # fmt: skip
        else:
            _rmsnorm_tile_any(
                x_ptr, w_ptr, y_ptr, t, rows, cols, stride_x, stride_y, eps, R, BC, AL, BT, WE,
                True, SPL,
            )  # fmt: skip


@triton.jit
def _body_edges(s0, cols, V: tl.constexpr):
    """A row that starts at element s0, off a V-element (16-byte) boundary: its aligned body
    starts at b0 (a multiple of V, computed so, which is what lets the compiler emit 16-byte
    accesses) and holds nb columns (a multiple of V); a0 = b0 - s0 columns come before it. The
    edges are a [2V] tile: column ce (k < V before the body, else after it), valid where me."""
    b0 = (s0 + V - 1) // V * V
    a0 = b0 - s0  # 0 .. V-1
    nb = tl.maximum(cols - a0, 0) // V * V
    k = tl.arange(0, 2 * V)
    ce = tl.where(k < V, k, a0 + nb + k - V)
    me = tl.where(k < V, k < a0, True) & (ce < cols)
    return b0, a0, nb, ce, me


@triton.jit
def _rmsnorm_row_vec(
    x_ptr, w_ptr, y_ptr, cols, stride, eps, BC: tl.constexpr, V: tl.constexpr
):  # fmt: skip
    """One row per program for rows that start off a V-element (16-byte) boundary (ROW_VEC):
    the row is its aligned body, read and written as V-element vectors, and at most V - 1
    columns on each side of it, read one by one. The body's start is computed as a multiple of V
    from the row's absolute offset (x and y start on 16 bytes and share the stride, host-checked),
    which is what lets the compiler emit 16-byte accesses; a next_pow2 tile of such a row can
    only load 2-byte (bf16) or 4-byte (f32) scalars. The weight, shifted by the row's offset from
    the boundary, is read one by one (from L1 / L2: every row reads it)."""
    s0 = tl.program_id(0).to(tl.int64) * stride  # the row's first element
    b0, a0, nb, ce, me = _body_edges(s0, cols, V)
    c = tl.arange(0, BC)
    mb = c < nb
    xb = tl.load(x_ptr + b0 + c, mask=mb, other=0.0).to(tl.float32)
    xe = tl.load(x_ptr + s0 + ce, mask=me, other=0.0).to(tl.float32)
    rstd = tl.rsqrt((tl.sum(xb * xb, axis=0) + tl.sum(xe * xe, axis=0)) / cols + eps)
    wb = tl.load(w_ptr + a0 + c, mask=mb, other=0.0).to(tl.float32)
    we = tl.load(w_ptr + ce, mask=me, other=0.0).to(tl.float32)
    ty = y_ptr.dtype.element_ty
    tl.store(y_ptr + b0 + c, (xb * rstd * wb).to(ty), mask=mb)
    tl.store(y_ptr + s0 + ce, (xe * rstd * we).to(ty), mask=me)


@triton.jit
def _rmsnorm_loop(
    x_ptr, w_ptr, y_ptr, rows, cols, stride_x, stride_y, eps, BLOCK: tl.constexpr,
    AL: tl.constexpr, PERSIST: tl.constexpr, NB: tl.constexpr,
):  # fmt: skip
    """Row program_id(0), walked twice in BLOCK-column steps: the sum of squares, then
    x * rstd * weight, the first walk's loads kept in L2 (evict-last) for the second, whose loads
    are evict-first. With PERSIST a fixed set of programs walks the rows, one after another (the
    wide walk: at most a few rows an SM between their two walks). NB > 0: the row is exactly NB
    full steps, walked unrolled and unmasked (every step's loads can be issued before the first
    step's arrive); NB = 0: a runtime loop with a masked last step. Without PERSIST the row is the
    one trip of a loop, as in `_rmsnorm_tile`."""
    if AL > 1:  # as in _rmsnorm_tile_rows: vector loads where the host checked alignment
        cols = cols // AL * AL
        stride_x = stride_x // AL * AL
        stride_y = stride_y // AL * AL
    start, step = tl.program_id(0), 1
    if PERSIST:
        step = tl.num_programs(0)
    for r in range(start, rows if PERSIST else start + 1, step):
        row = tl.cast(r, tl.int64)
        xr = x_ptr + row * stride_x
        yr = y_ptr + row * stride_y
        acc = tl.zeros([BLOCK], tl.float32)
        ty = y_ptr.dtype.element_ty
        if NB > 0:
            for i in tl.static_range(NB):
                x = tl.load(xr + i * BLOCK + tl.arange(0, BLOCK), eviction_policy="evict_last")
                x = x.to(tl.float32)
                acc += x * x
        else:
            for c0 in range(0, cols, BLOCK):
                c = c0 + tl.arange(0, BLOCK)
                x = tl.load(xr + c, mask=c < cols, other=0.0, eviction_policy="evict_last")
                x = x.to(tl.float32)
                acc += x * x
        rstd = tl.rsqrt(tl.sum(acc, axis=0) / cols + eps)
        if NB > 0:
            for i in tl.static_range(NB):
                c = i * BLOCK + tl.arange(0, BLOCK)
                x = tl.load(xr + c, eviction_policy="evict_first").to(tl.float32)
                w = tl.load(w_ptr + c).to(tl.float32)
                tl.store(yr + c, (x * rstd * w).to(ty))
        else:
            for c0 in range(0, cols, BLOCK):
                c = c0 + tl.arange(0, BLOCK)
                mask = c < cols
                x = tl.load(xr + c, mask=mask, other=0.0, eviction_policy="evict_first")
                w = tl.load(w_ptr + c, mask=mask, other=0.0).to(tl.float32)
                tl.store(yr + c, (x.to(tl.float32) * rstd * w).to(ty), mask=mask)


@triton.jit
def _rmsnorm_whole_row(
    x_ptr, w_ptr, y_ptr, cols, stride_x, stride_y, eps, BC: tl.constexpr, AL: tl.constexpr
):  # fmt: skip
    """One row per program, kept in registers in its input dtype between the passes."""
    if AL > 1:  # as in _rmsnorm_tile_rows: vector loads where the host checked alignment
        cols = cols // AL * AL
        stride_x = stride_x // AL * AL
        stride_y = stride_y // AL * AL
    row = tl.program_id(0).to(tl.int64)
    c = tl.arange(0, BC)
    mask = c < cols
    xr = tl.load(x_ptr + row * stride_x + c, mask=mask, other=0.0)
    xf = xr.to(tl.float32)
    rstd = tl.rsqrt(tl.sum(xf * xf, axis=0) / cols + eps)
    w = tl.load(w_ptr + c, mask=mask, other=0.0).to(tl.float32)
    # the bf16 -> float32 upcast again, as bits: the same op as above would be merged with it
    # and keep a float32 copy of the row alive across the reduction (spills at 65536 bf16)
    if x_ptr.dtype.element_ty == tl.bfloat16:
        xf = (xr.to(tl.int16, bitcast=True).to(tl.int32) << 16).to(tl.float32, bitcast=True)
    y = xf * rstd * w
    tl.store(y_ptr + row * stride_y + c, y.to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _chunk_sumsq(
    x_ptr, p_ptr, cols, stride_x, nchunks, CHUNK: tl.constexpr, AL: tl.constexpr,
    PDL: tl.constexpr, V: tl.constexpr,
):  # fmt: skip
    """The split path's first launch. Chunk program_id(1) of row program_id(0): its sum of
    squares. V > 0 (CHUNK_VEC): chunks
    cut the row's aligned body (as in `_rmsnorm_row_vec`), and chunk 0 also takes the edges
    before and after it."""
    if PDL:  # the apply kernel may launch now (it waits for this grid before reading)
        gdc_launch_dependents()
    if AL > 1:
        cols = cols // AL * AL
        stride_x = stride_x // AL * AL
    row = tl.program_id(0).to(tl.int64)
    ch = tl.program_id(1)
    c = ch * CHUNK + tl.arange(0, CHUNK)
    if V > 0:
        s0 = row * stride_x  # the row's first element
        b0, a0, nb, ce, me = _body_edges(s0, cols, V)
        me = me & (ch == 0)  # the edges are chunk 0's
        x = tl.load(x_ptr + b0 + c, mask=c < nb, other=0.0).to(tl.float32)
        xe = tl.load(x_ptr + s0 + ce, mask=me, other=0.0).to(tl.float32)
        ss = tl.sum(x * x, axis=0) + tl.sum(xe * xe, axis=0)
    else:
        x = tl.load(x_ptr + row * stride_x + c, mask=c < cols, other=0.0).to(tl.float32)
        ss = tl.sum(x * x, axis=0)
    tl.store(p_ptr + row * nchunks + ch, ss)


@triton.jit
def _row_rstd(p_ptr, row, nchunks, cols, eps, NCH: tl.constexpr):
    """1 / rms of a row from its chunks' sums of squares."""
    k = tl.arange(0, NCH)
    total = tl.sum(tl.load(p_ptr + row * nchunks + k, mask=k < nchunks, other=0.0), axis=0)
    return tl.rsqrt(total / cols + eps)


@triton.jit
def _chunk_apply(
    x_ptr, w_ptr, y_ptr, p_ptr, cols, stride_x, stride_y, nchunks, eps,
    CHUNK: tl.constexpr, NCH: tl.constexpr, AL: tl.constexpr, PDL: tl.constexpr,
    V: tl.constexpr,
):  # fmt: skip
    """The split path's second launch. Chunk program_id(1) of row program_id(0): x * rstd *
    weight from its row's partial sums. V > 0 (CHUNK_VEC): the chunks of `_chunk_sumsq` with V,
    x and y sharing the stride; the weight, shifted by the row's offset from the boundary, is
    read one by one. x and the weight are loaded before the wait for the sums kernel (they are
    inputs, not its output), so with PDL the loads overlap that kernel."""
    if AL > 1:  # row starts and the row length are multiples of AL (host-checked); the no-op
        # `// AL * AL` tells the compiler so (tl.multiple_of does not reach an argument): vectors
        cols = cols // AL * AL
        stride_x = stride_x // AL * AL
        stride_y = stride_y // AL * AL
    row = tl.program_id(0).to(tl.int64)
    ch = tl.program_id(1)
    c = ch * CHUNK + tl.arange(0, CHUNK)
    ty = y_ptr.dtype.element_ty
    if V > 0:
        s0 = row * stride_x  # as in the first kernel: the body and, for chunk 0, the edges
        b0, a0, nb, ce, me = _body_edges(s0, cols, V)
        me = me & (ch == 0)
        mb = c < nb
        x = tl.load(x_ptr + b0 + c, mask=mb, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + a0 + c, mask=mb, other=0.0).to(tl.float32)
        xe = tl.load(x_ptr + s0 + ce, mask=me, other=0.0).to(tl.float32)
        we = tl.load(w_ptr + ce, mask=me, other=0.0).to(tl.float32)
        if PDL:  # launched early: wait until the sums kernel is done and its stores visible
            gdc_wait()
        rstd = _row_rstd(p_ptr, row, nchunks, cols, eps, NCH)
        tl.store(y_ptr + b0 + c, (x * rstd * w).to(ty), mask=mb)
        tl.store(y_ptr + s0 + ce, (xe * rstd * we).to(ty), mask=me)
    else:
        mask = c < cols
        x = tl.load(x_ptr + row * stride_x + c, mask=mask, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + c, mask=mask, other=0.0).to(tl.float32)
        if PDL:
            gdc_wait()
        rstd = _row_rstd(p_ptr, row, nchunks, cols, eps, NCH)
        tl.store(y_ptr + row * stride_y + c, (x * rstd * w).to(ty), mask=mask)


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


def _head_tail(cols: int) -> tuple[int, int]:
    """(BC, BT) of the tiled path: the padded row and no tail, or with HEAD_TAIL a head of the
    largest power of two h <= cols and a tail tile of next_pow2(cols - h) columns, where that
    tail is at most h // 4 wide (the tile then pads the row by at most a quarter instead of
    almost doubling it: 257 -> 256 + 1, 4099 -> 4096 + 4; 1000 and 3000 keep 1024 and 4096)."""
    bc = triton.next_power_of_2(cols)
    if not HEAD_TAIL or bc == cols:
        return bc, 0
    h = bc // 2
    bt = triton.next_power_of_2(cols - h)
    return (h, bt) if 4 * bt <= h else (bc, 0)


def _bodies_align(al: int, x: torch.Tensor, y: torch.Tensor) -> bool:
    """Rows that do not all start on a 16-byte boundary (al below a 16-byte vector), with x and
    y starting on 16 bytes and sharing a stride, so that a row's aligned body (`_body_edges`)
    is aligned in both."""
    return (
        al * x.element_size() < 16
        and x.stride(0) == y.stride(0)
        and x.data_ptr() % 16 == 0
        and y.data_ptr() % 16 == 0
    )


def _row_vec(rows: int, bc: int, al: int, x: torch.Tensor, y: torch.Tensor) -> bool:
    """ROW_VEC: rows of at least ROW_VEC_MIN (padded) columns, one a program, at least as many
    as SMs (a lone row is latency, not bandwidth), that do not all start on a 16-byte boundary
    (al below a 16-byte vector), with x and y starting on 16 bytes and sharing a stride (so a
    row's body is aligned in both)."""
    return (
        ROW_VEC
        and ROW_VEC_MIN <= bc <= TILE_ELEMS
        and rows >= _sm_count(x.device)
        and _bodies_align(al, x, y)
    )


def _strides(rows: int, x: torch.Tensor, y: torch.Tensor) -> tuple[int, int]:
    """The row strides the tiled path is given: 0 for a lone row with LONE_VEC (divisible by
    16 as Triton specializes it: the head's accesses become vectors; row 0 never uses them)."""
    return (0, 0) if LONE_VEC and rows == 1 else (x.stride(0), y.stride(0))


def _lone_split(rows: int, bc: int, bt: int) -> int:
    """LONE_SPLIT: programs that share the tiled path's one tile, for a lone row with a head of
    bc and a tail of bt columns (HEAD_TAIL) and at least 256 head columns a program (1 x 4099:
    four programs of 1,024); 1 otherwise. A power of two, so that the programs' slices of the
    (power-of-two) head meet exactly."""
    k = int(LONE_SPLIT)
    ok = k > 1 and k & (k - 1) == 0 and rows == 1 and bt > 0 and bc // k >= 256
    return k if ok else 1


def _chunk_vec(al: int, x: torch.Tensor, y: torch.Tensor) -> bool:
    """CHUNK_VEC: the split path's rows start off a 16-byte boundary, and x and y start on 16
    bytes with one stride (a row's body is aligned in both)."""
    return CHUNK_VEC and _bodies_align(al, x, y)


def _warps(elems: int, per: int = 1024) -> int:
    return max(1, min(NUM_WARPS, elems // per))


def _tile_shape(rows: int, bc: int) -> tuple[int, int]:
    """(rows per program, warps) of the tiled path: TILE_ELEMS-element tiles (one warp per
    TILE_WARP_ELEMS of a smaller one), or one warp per program for short rows
    (SHORT_ROW_TILE)."""
    if SHORT_ROW_TILE and bc <= SHORT_ROW_MAX:
        return max(1, min(SHORT_ROW_TILE // bc, 8, triton.next_power_of_2(rows))), 1
    r = max(1, min(TILE_ELEMS // bc, triton.next_power_of_2(rows)))
    return r, _warps(r * bc, TILE_WARP_ELEMS)


def _full_tiles(al: int, x: torch.Tensor) -> bool:
    """FULL_TILES: tiles whose rows load as 2-byte scalars (al == 1: the rows start off every
    vector boundary, bf16 257 columns), where a predicate per element costs the most."""
    return bool(FULL_TILES) and al == 1 and x.element_size() <= 2


_SMS: dict = {}


def _sm_count(device: torch.device) -> int:
    """Streaming multiprocessors of a CUDA device (1 in the interpreter)."""
    if device not in _SMS:
        cuda = device.type == "cuda"
        _SMS[device] = torch.cuda.get_device_properties(device).multi_processor_count if cuda else 1
    return _SMS[device]


def _loop_rule(rows: int, bc: int, al: int, x: torch.Tensor, block: int, lo: int, hi: int,
               persist: int) -> bool:  # fmt: skip
    """The walk (`_rmsnorm_loop`, `block`-column steps, 0: off) takes rows of lo to hi padded
    columns that all start on a 16-byte boundary and, persistent (persist programs an SM), at
    least as many rows as SMs (fewer would leave SMs idle: the split path spreads a row over
    several)."""
    return (
        bool(block)
        and lo <= bc <= hi
        and al * x.element_size() == 16
        and (not persist or rows >= _sm_count(x.device))
    )


def _looped(rows: int, bc: int, al: int, x: torch.Tensor) -> bool:
    """The row walk (LOOP_*), tried first: rows of LOOP_MIN_COLS to LOOP_MAX_COLS, one program
    a row."""
    return _loop_rule(rows, bc, al, x, LOOP_BLOCK, LOOP_MIN_COLS, LOOP_MAX_COLS, 0)


def _whole_steps(cols: int, bc: int) -> bool:
    """Rows the row walk takes: whole steps, walked unrolled (a ragged row's runtime loop is
    slower than the tile)."""
    return bool(_unrolled(cols, min(LOOP_BLOCK, bc)))


def _wide_looped(rows: int, bc: int, al: int, x: torch.Tensor) -> bool:
    """The same walk for rows past SINGLE_MAX that the whole-row program does not take
    (WIDE_LOOP_*): up to WIDE_LOOP_MAX_COLS padded columns, always persistent."""
    return _loop_rule(
        rows, bc, al, x, WIDE_LOOP_BLOCK, SINGLE_MAX + 1, WIDE_LOOP_MAX_COLS, _wide_persist()
    )


def _wide_persist(cols: int = 0) -> int:
    """Programs an SM of the wide loop: WIDE_UNROLL_PERSIST for rows LOOP_UNROLL unrolls (whole
    WIDE_LOOP_BLOCK steps, at most LOOP_UNROLL of them), else WIDE_LOOP_PERSIST; at least 1."""
    block = min(WIDE_LOOP_BLOCK, triton.next_power_of_2(max(cols, 1)))  # as `_walk_rows` has it
    return max(1, WIDE_UNROLL_PERSIST if _unrolled(cols, block) else WIDE_LOOP_PERSIST)


def _unrolled(cols: int, block: int) -> int:
    """NB of `_rmsnorm_loop`: the steps of a row walked unrolled (whole block-column steps, at
    most LOOP_UNROLL), else 0 (the runtime loop; and for a walk that is off, block 0)."""
    if block <= 0:
        return 0
    nb = cols // block
    return nb if cols % block == 0 and nb <= LOOP_UNROLL else 0


def _walk_rows(x, weight, y, rows, cols, al, bc, block, warps, persist):
    """Launch `_rmsnorm_loop`: one program a row, or `persist` an SM walking the rows (1 SM in
    the interpreter); unrolled (NB) where LOOP_UNROLL takes the row."""
    programs = _programs(rows, x.device, persist)
    block = min(block, bc)
    _rmsnorm_loop[(programs,)](
        x, weight, y, rows, cols, x.stride(0), y.stride(0), EPS, BLOCK=block, AL=al,
        PERSIST=bool(persist), NB=_unrolled(cols, block), num_warps=warps,
    )  # fmt: skip


def _programs(n: int, device: torch.device, persist: int) -> int:
    """Programs of a launch over n tiles or rows: one each, or `persist` an SM walking them
    (the wide walk's persistence; 1 SM in the interpreter)."""
    return min(n, persist * _sm_count(device)) if persist else n


def _chunk(x: torch.Tensor) -> int:
    """Columns per program of the split path: CHUNK, at most CHUNK_BYTES of x (0: no limit)."""
    if not CHUNK_BYTES:
        return CHUNK
    return min(CHUNK, max(16, triton.next_power_of_2(CHUNK_BYTES // x.element_size())))


def _whole_row(rows: int, bc: int, x: torch.Tensor) -> bool:
    """A row past SINGLE_MAX in one program (WHOLE_ROW_BYTES, WHOLE_ROW_MAX_COLS): it fits, and
    rows fill the SMs."""
    return (
        bc * x.element_size() <= WHOLE_ROW_BYTES
        and bc <= WHOLE_ROW_MAX_COLS
        and rows >= _sm_count(x.device)
    )


def kernel(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    x = x.contiguous()
    weight = weight.contiguous()
    rows, cols = x.shape
    y = torch.empty_like(x)
    if rows == 0 or cols == 0:
        return y
    al = _align(cols, x, y)
    bc = triton.next_power_of_2(cols)
    if _looped(rows, bc, al, x) and _whole_steps(cols, bc):
        _walk_rows(x, weight, y, rows, cols, al, bc, LOOP_BLOCK, LOOP_WARPS, 0)
        return y
    if bc <= SINGLE_MAX:
        if _row_vec(rows, bc, al, x, y):
            _rmsnorm_row_vec[(rows,)](
                x, weight, y, cols, x.stride(0), EPS, BC=bc, V=16 // x.element_size(),
                num_warps=_warps(bc),
            )  # fmt: skip
            return y
        bc, bt = _head_tail(cols)
        r, warps = _tile_shape(rows, bc)
        ntiles = triton.cdiv(rows, r)
        sx, sy = _strides(rows, x, y)
        spl = _lone_split(rows, bc, bt)
        _rmsnorm_tile[(ntiles * spl,)](
            x, weight, y, rows, cols, sx, sy, EPS, R=r, BC=bc, AL=al, BT=bt,
            WE=bool(W_EARLY) and ntiles < _sm_count(x.device), FT=_full_tiles(al, x), SPL=spl,
            num_warps=warps,
        )  # fmt: skip
        return y
    if _whole_row(rows, bc, x):
        _rmsnorm_whole_row[(rows,)](
            x, weight, y, cols, x.stride(0), y.stride(0), EPS, BC=bc, AL=al,
            num_warps=max(1, min(WHOLE_ROW_WARPS, bc // 1024)),
        )  # fmt: skip
        return y
    if _wide_looped(rows, bc, al, x):
        _walk_rows(
            x, weight, y, rows, cols, al, bc, WIDE_LOOP_BLOCK, WIDE_LOOP_WARPS, _wide_persist(cols)
        )
        return y
    chunk = _chunk(x)
    nchunks = triton.cdiv(cols, chunk)
    part = torch.empty(rows, nchunks, dtype=torch.float32, device=x.device)
    grid = (rows, nchunks)
    pdl = PDL and x.device.type == "cuda"
    v = 16 // x.element_size() if _chunk_vec(al, x, y) else 0
    _chunk_sumsq[grid](
        x, part, cols, x.stride(0), nchunks, CHUNK=chunk, AL=al, PDL=pdl, V=v,
        num_warps=_warps(chunk),
    )  # fmt: skip
    _chunk_apply[grid](
        x, weight, y, part, cols, x.stride(0), y.stride(0), nchunks, EPS,
        CHUNK=chunk, NCH=max(2, triton.next_power_of_2(nchunks)), AL=al, PDL=pdl, V=v,
        num_warps=_warps(chunk), **({"launch_pdl": True} if pdl else {}),
    )  # fmt: skip
    return y
