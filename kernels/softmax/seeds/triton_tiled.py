"""Softmax over the last dimension of a 2-D tensor, in Triton: rows tiled so that every shape,
from one row of 4099 columns to 65537 rows of 257, is one pass over memory where it can be.

What it computes: y[i, j] = exp(x[i, j] - m_i) / s_i with m_i = max_j x[i, j] and
s_i = sum_j exp(x[i, j] - m_i), in float32 whatever the input dtype, stored in x's dtype.

Why it is fast: softmax is memory-bound (5 flops an element against 2 * itemsize bytes), so the
time to beat is a copy of x: one read of x, one write of y. The kernel is built so that each
shape reads x once where the row fits a program's registers, with every program doing enough
work to hide its launch, and with loads and stores as 16-byte vectors wherever the compiler can
prove the alignment (a divisibility it cannot prove makes every access a 2- or 4-byte scalar):

- Short and medium rows (padded to at most SINGLE_MAX columns) are tiles of R rows by BC
  columns, one tile a program: load once, row max and row sum inside the tile, store.
  - Rows of at most SHORT_ROW_MAX padded columns take one warp a program (at most 8 rows), so a
    row's reductions are warp shuffles, with no shared memory or barrier.
  - Rows just past a power of two h (at most h + h // 4 columns: 257, 4099) are a head tile of h
    columns, none masked, and a narrow tail tile, not one tile of 2h columns half padding.
  - Tiles whose rows load as 2-byte scalars (bf16 rows of odd length) take a copy of the body
    without the row mask when all R rows are present (`_full_tiles`): fewer predicated accesses.
  - A lone row with a head and a tail (1 x 4099) is launch- and latency-bound, not
    bandwidth-bound: LONE_SPLIT programs each load and reduce the whole row and each stores its
    1/LONE_SPLIT of it, so its stores leave from several SMs with no second launch; its row
    strides are passed as 0 (LONE_VEC), which Triton specializes as divisible by 16, so the
    head's accesses are vectors (only row 0 exists: the stride is never used).
  - Rows that fill the GPU one program each but start off a 16-byte boundary (7777 x 8191) are
    an aligned body read in 16-byte vectors plus at most V - 1 scalar columns on each side
    (ROW_VEC, `_body_edges`).
  - Rows of exactly ROW_LOOP_BLOCK-column steps on 16 bytes (8192 columns) are walked instead
    (`_softmax_loop`, below): the tile would hold 32 values a thread.
- Rows past SINGLE_MAX, many of them (at least as many as SMs):
  - Rows padded to 65536 columns that start on 16 bytes are walked twice in LOOP_BLOCK-column
    steps (`_softmax_loop`), one program a row: the first walk keeps a running max and sum per 16-byte group of columns
    (online softmax: one exp an element, the sum rescaled when the max grows), the second writes
    exp(x - M) / S, its reads mostly from L2 (the first walk's loads are evict-last). Rows of a
    few whole steps are unrolled (LOOP_UNROLL), so every step's loads are in flight at once.
  - Other rows up to WHOLE_ROW_BYTES (padded) stay in registers, one program of up to 32 warps a
    row, in their input dtype: the second exp is recomputed from them rather than keeping a
    float32 copy of the row (which would spill). One read of x.
- Rows past SINGLE_MAX, too few to fill the GPU (17 x 131073): each row is cut into CHUNK-column
  chunks, one program a (row, chunk), in two launches. The first stores each chunk's max m_c and
  sum s_c of exp(x - m_c); the second combines its row's pairs into M = max m_c and
  S = sum s_c exp(m_c - M) in one reduction (`_pair`) and writes exp(x - M) / S for its chunk.
  It reads x twice, but with rows x chunks programs in flight; on a GPU the second launch is a
  programmatic dependent launch (PDL) that loads its chunk of x before it waits for the first.

Exponentials: exp(d) is computed as exp2(d * log2 e) on d = x - max formed first (exact when x is
near max, whatever the max's size), which compiles to one `ex2.approx.ftz.f32`; a normalization
is a product by 1 / sum, one division a row.

Cost model: bytes = 2 * rows * cols * itemsize (plus 8 bytes a chunk on the split path, whose
second read of x makes it 1.5x that); 5 flops an element: every shape is bounded by memory or,
for a lone row, by launch and latency. Offsets: row indices are widened to int64 before the
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
    "NUM_WARPS": [4, 8, 16],
    "WHOLE_ROW_BYTES": [0, 65536, 131072],
    "SHORT_ROW_TILE": [0, 512, 1024, 2048],
    "LOOP_BLOCK": [0, 4096, 2048],
    "LOOP_WARPS": [16, 8],
    "HEAD_TAIL": [True, False],
    "ROW_VEC": [True, False],
    "PDL": [True, False],
    "CHUNK_VEC": [False, True],
    "LONE_VEC": [False, True],
    "LONE_SPLIT": [1, 2, 4, 8],
    "LOOP_UNROLL": [0, 4],
    "ROW_LOOP_BLOCK": [0, 4096, 2048],
    "CHUNK_WARP_ELEMS": [1024, 2048],
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
LONE_SPLIT = 4  # programs sharing a lone row with a head and a tail (1: one program)
LONE_VEC = True  # a lone row's strides passed as 0, so its head loads are vectors
ROW_VEC = True  # rows off a 16-byte boundary, one a program: aligned body plus scalar edges
ROW_VEC_MIN = 2048  # ... for rows of at least this many padded columns
# The walks (`_softmax_loop`): one program a row, each row read twice in steps
LOOP_BLOCK = 16384  # step of the walk over rows of LOOP_MIN_COLS to LOOP_MAX_COLS padded
# columns past SINGLE_MAX (0: off)
LOOP_MIN_COLS = 65536
LOOP_MAX_COLS = 65536
LOOP_WARPS = 32
LOOP_UNROLL = 4  # rows of exactly k whole steps, k <= LOOP_UNROLL, are walked unrolled
ROW_LOOP_BLOCK = 4096  # step of the walk over rows of ROW_LOOP_MIN_COLS to ROW_LOOP_MAX_COLS
# padded columns within SINGLE_MAX, taken only when unrolled (0: off)
ROW_LOOP_MIN_COLS = 8192
ROW_LOOP_MAX_COLS = 8192
ROW_LOOP_WARPS = 16
# Rows past SINGLE_MAX, one a program, held in registers
WHOLE_ROW_BYTES = 131072  # longest padded row in bytes (0: off)
WHOLE_ROW_WARPS = 32  # warps of such a program (1,024 threads: at most 64 registers each)
# The split path: a row over CHUNK-column programs, two launches
CHUNK = 2048  # columns a program
CHUNK_WARP_ELEMS = 1024  # one warp per this many columns of a chunk
CHUNK_VEC = True  # rows off a 16-byte boundary: chunks cut the aligned body, chunk 0 the edges
PDL = True  # on a GPU, the second launch is a programmatic dependent launch


@triton.jit
def _exp(d):
    """exp(d) for d = x - max <= 0, as exp2(d * log2 e): one `ex2.approx.ftz.f32` (tl.exp keeps
    subnormal results at the cost of a compare and two multiplies around it; a softmax's exps
    below 2**-126 are zero within any tolerance). d is formed before the scaling, not as
    x log2 e - max log2 e (one FFMA), so that a large max costs no digits."""
    return tl.exp2(d * 1.4426950408889634)


@triton.jit
def _softmax_tile_rows(
    x_ptr, y_ptr, t, rows, cols, stride_x, stride_y,
    R: tl.constexpr, BC: tl.constexpr, AL: tl.constexpr, RM: tl.constexpr,
):  # fmt: skip
    """Tile t: rows t*R .. t*R+R-1 of BC (padded) columns. RM: rows masked (off: the caller
    checked that all R rows are there)."""
    if AL > 1:  # row starts and the row length are multiples of AL (host-checked); the no-op
        # `// AL * AL` tells the compiler so (tl.multiple_of does not reach an argument): vectors
        cols = cols // AL * AL
        stride_x = stride_x // AL * AL
        stride_y = stride_y // AL * AL
    r = (t * R + tl.arange(0, R)).to(tl.int64)
    c = tl.arange(0, BC)
    mask = ((r[:, None] < rows) if RM else True) & (c[None, :] < cols)
    x = tl.load(x_ptr + r[:, None] * stride_x + c[None, :], mask=mask, other=-float("inf"))
    x = x.to(tl.float32)
    m = tl.max(x, axis=1)
    m = tl.where(m == -float("inf"), 0.0, m)  # padding rows: keep exp finite (not stored)
    e = _exp(x - m[:, None])
    den = tl.sum(e, axis=1)
    den = tl.where(den == 0.0, 1.0, den)  # padding rows again
    y = e * (1.0 / den[:, None])
    yp = y_ptr + r[:, None] * stride_y + c[None, :]
    tl.store(yp, y.to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _softmax_head_tail(
    x_ptr, y_ptr, t, rows, cols, stride_x, stride_y,
    R: tl.constexpr, BC: tl.constexpr, AL: tl.constexpr, BT: tl.constexpr, RM: tl.constexpr,
    SPL: tl.constexpr,
):  # fmt: skip
    """Rows t*R .. t*R+R-1 as a head of BC columns (a power of two no longer than the row: no
    column masked) and a tail tile of BT columns for the cols - BC that remain: for rows just
    past a power of two (257 = 256 + 1), which a next_pow2 tile pads to twice their length. RM:
    rows masked (off: the caller checked that all R rows are there, and the head's loads and
    stores are unpredicated). SPL > 1 (a lone row): SPL programs each load and reduce the whole
    tile and store 1/SPL of the head, the last of them also the tail."""
    if AL > 1:  # as in _softmax_tile_rows: vector loads where the host checked alignment
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
        xh = tl.load(xrow + c[None, :], mask=rmask, other=-float("inf"))
    else:
        xh = tl.load(xrow + c[None, :])
    xt = tl.load(xrow + ct[None, :], mask=tmask, other=-float("inf"))
    xh = xh.to(tl.float32)
    xt = xt.to(tl.float32)
    m = tl.maximum(tl.max(xh, axis=1), tl.max(xt, axis=1))
    m = tl.where(m == -float("inf"), 0.0, m)  # padding rows: keep exp finite (not stored)
    eh = _exp(xh - m[:, None])
    et = _exp(xt - m[:, None])
    den = tl.sum(eh, axis=1) + tl.sum(et, axis=1)
    inv = 1.0 / tl.where(den == 0.0, 1.0, den)
    yrow = y_ptr + r[:, None] * stride_y
    ty = y_ptr.dtype.element_ty
    if SPL > 1:  # this program's 1/SPL of the head (and the tail if it is the last)
        sp = tl.program_id(0) % SPL
        hmask = (c[None, :] // (BC // SPL)) == sp
        if RM:
            hmask = hmask & rmask
        tmask = tmask & (sp == SPL - 1)
        tl.store(yrow + c[None, :], (eh * inv[:, None]).to(ty), mask=hmask)
    elif RM:
        tl.store(yrow + c[None, :], (eh * inv[:, None]).to(ty), mask=rmask)
    else:
        tl.store(yrow + c[None, :], (eh * inv[:, None]).to(ty))
    tl.store(yrow + ct[None, :], (et * inv[:, None]).to(ty), mask=tmask)


@triton.jit
def _softmax_tile_any(
    x_ptr, y_ptr, t, rows, cols, stride_x, stride_y,
    R: tl.constexpr, BC: tl.constexpr, AL: tl.constexpr, BT: tl.constexpr, RM: tl.constexpr,
    SPL: tl.constexpr,
):  # fmt: skip
    """Tile t as a head and a tail (BT > 0) or as one tile of BC columns."""
    if BT > 0:
        _softmax_head_tail(x_ptr, y_ptr, t, rows, cols, stride_x, stride_y, R, BC, AL, BT, RM, SPL)
    else:
        _softmax_tile_rows(x_ptr, y_ptr, t, rows, cols, stride_x, stride_y, R, BC, AL, RM)


@triton.jit
def _softmax_tile(
    x_ptr, y_ptr, rows, cols, stride_x, stride_y,
    R: tl.constexpr, BC: tl.constexpr, AL: tl.constexpr, BT: tl.constexpr, FT: tl.constexpr,
    SPL: tl.constexpr,
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
                _softmax_tile_any(
                    x_ptr, y_ptr, t, rows, cols, stride_x, stride_y, R, BC, AL, BT, False, SPL
                )  # fmt: skip
            else:
                _softmax_tile_any(
                    x_ptr, y_ptr, t, rows, cols, stride_x, stride_y, R, BC, AL, BT, True, SPL
                )  # fmt: skip
        else:
            _softmax_tile_any(
                x_ptr, y_ptr, t, rows, cols, stride_x, stride_y, R, BC, AL, BT, True, SPL
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
def _softmax_row_vec(x_ptr, y_ptr, cols, stride, BC: tl.constexpr, V: tl.constexpr):
    """One row per program for rows that start off a V-element (16-byte) boundary (ROW_VEC):
    the row is its aligned body, read and written as V-element vectors, and at most V - 1
    columns on each side of it, read one by one. The body's start is computed as a multiple of V
    from the row's absolute offset (x and y start on 16 bytes and share the stride, host-checked),
    which is what lets the compiler emit 16-byte accesses; a next_pow2 tile of such a row can
    only load 2-byte (bf16) or 4-byte (f32) scalars."""
    s0 = tl.program_id(0).to(tl.int64) * stride  # the row's first element
    b0, a0, nb, ce, me = _body_edges(s0, cols, V)
    c = tl.arange(0, BC)
    mb = c < nb
    xb = tl.load(x_ptr + b0 + c, mask=mb, other=-float("inf")).to(tl.float32)
    xe = tl.load(x_ptr + s0 + ce, mask=me, other=-float("inf")).to(tl.float32)
    m = tl.maximum(tl.max(xb, axis=0), tl.max(xe, axis=0))
    eb = _exp(xb - m)
    ee = _exp(xe - m)
    inv = 1.0 / (tl.sum(eb, axis=0) + tl.sum(ee, axis=0))
    ty = y_ptr.dtype.element_ty
    tl.store(y_ptr + b0 + c, (eb * inv).to(ty), mask=mb)
    tl.store(y_ptr + s0 + ce, (ee * inv).to(ty), mask=me)


@triton.jit
def _group_update(m, s, x):
    """The walk's running (max, sum of exp(x - max)) per group of columns (a row of x), after
    one more step x: one exp an element, the sum rescaled when the max grows."""
    m_new = tl.maximum(m, tl.max(x, axis=1))
    # a group that has seen only padding keeps max -inf and sum 0 (no inf - inf)
    seen = m_new > -float("inf")
    e = tl.sum(_exp(x - m_new[:, None]), axis=1)
    s = tl.where(seen, s * _exp(m - m_new) + e, 0.0)
    return m_new, s


@triton.jit
def _softmax_loop(
    x_ptr, y_ptr, rows, cols, stride_x, stride_y, BLOCK: tl.constexpr, AL: tl.constexpr,
    NB: tl.constexpr,
):  # fmt: skip
    """Row program_id(0), walked twice in BLOCK-column steps: a running max per group of AL
    neighbouring columns (one 16-byte vector, so the group's max stays in one thread) and per
    group a sum of exp(x - max), rescaled when the max grows (one exp an element), combined at
    the end into the row's M and S; then exp(x - M) * (1 / S). The first walk's loads are kept
    in L2 (evict-last) for the second, whose loads are evict-first. NB > 0: the row is exactly
    NB full steps, walked unrolled and unmasked (every step's loads can be issued before the
    first step's arrive); NB = 0: a runtime loop with a masked last step."""
    if AL > 1:  # as in _softmax_tile_rows: vector loads where the host checked alignment
        cols = cols // AL * AL
        stride_x = stride_x // AL * AL
        stride_y = stride_y // AL * AL
    G: tl.constexpr = AL
    start = tl.program_id(0)
    for r in range(start, start + 1, 1):  # one row, as the one trip of a loop (see _softmax_tile)
        row = tl.cast(r, tl.int64)
        xr = x_ptr + row * stride_x
        yr = y_ptr + row * stride_y
        m = tl.full([BLOCK // G], -float("inf"), tl.float32)
        s = tl.zeros([BLOCK // G], tl.float32)
        cg = tl.arange(0, BLOCK // G)[:, None] * G + tl.arange(0, G)[None, :]
        if NB > 0:
            for i in tl.static_range(NB):
                x = tl.load(xr + i * BLOCK + cg, eviction_policy="evict_last").to(tl.float32)
                m, s = _group_update(m, s, x)
        else:
            for c0 in range(0, cols, BLOCK):
                c = c0 + cg
                x = tl.load(
                    xr + c, mask=c < cols, other=-float("inf"), eviction_policy="evict_last"
                )
                m, s = _group_update(m, s, x.to(tl.float32))
        mx = tl.max(m, axis=0)
        inv = 1.0 / tl.sum(tl.where(m > -float("inf"), s * _exp(m - mx), 0.0), axis=0)
        ty = y_ptr.dtype.element_ty
        if NB > 0:
            for i in tl.static_range(NB):
                c = i * BLOCK + tl.arange(0, BLOCK)
                x = tl.load(xr + c, eviction_policy="evict_first")
                tl.store(yr + c, (_exp(x.to(tl.float32) - mx) * inv).to(ty))
        else:
            for c0 in range(0, cols, BLOCK):
                c = c0 + tl.arange(0, BLOCK)
                mask = c < cols
                x = tl.load(xr + c, mask=mask, other=0.0, eviction_policy="evict_first")
                y = _exp(x.to(tl.float32) - mx) * inv
                tl.store(yr + c, y.to(ty), mask=mask)


@triton.jit
def _softmax_whole_row(
    x_ptr, y_ptr, cols, stride_x, stride_y, BC: tl.constexpr, AL: tl.constexpr
):  # fmt: skip
    """One row per program, kept in registers in its input dtype between the passes."""
    if AL > 1:  # as in _softmax_tile_rows: vector loads where the host checked alignment
        cols = cols // AL * AL
        stride_x = stride_x // AL * AL
        stride_y = stride_y // AL * AL
    row = tl.program_id(0).to(tl.int64)
    c = tl.arange(0, BC)
    mask = c < cols
    xr = tl.load(x_ptr + row * stride_x + c, mask=mask, other=-float("inf"))
    m = tl.max(xr.to(tl.float32), axis=0)
    den = tl.sum(tl.exp(xr.to(tl.float32) - m), axis=0)
    # exp again, written differently ((m - x) times -log2 e) so the compiler cannot merge it
    # with the first and keep a float32 copy of the row alive: recomputing is cheaper than
    # spilling. Not x log2 e - m log2 e (one FFMA): m log2 e is rounded, which costs a large
    # m digits
    y = tl.exp2((m - xr.to(tl.float32)) * -1.4426950408889634) * (1.0 / den)
    tl.store(y_ptr + row * stride_y + c, y.to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _chunk_stats(
    x_ptr, m_ptr, s_ptr, cols, stride_x, nchunks, CHUNK: tl.constexpr, AL: tl.constexpr,
    PDL: tl.constexpr, V: tl.constexpr,
):  # fmt: skip
    """The split path's first launch. Chunk program_id(1) of row program_id(0): its max and its
    sum of exp(x - max). V > 0 (CHUNK_VEC): chunks cut the row's aligned body (as in
    `_softmax_row_vec`), and chunk 0 also takes the edges before and after it."""
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
        x = tl.load(x_ptr + b0 + c, mask=c < nb, other=-float("inf")).to(tl.float32)
        xe = tl.load(x_ptr + s0 + ce, mask=me, other=-float("inf")).to(tl.float32)
        m = tl.maximum(tl.max(x, axis=0), tl.max(xe, axis=0))
        se = tl.sum(_exp(x - m), axis=0) + tl.sum(_exp(xe - m), axis=0)
        s = tl.where(m == -float("inf"), 0.0, se)
    else:
        x = tl.load(x_ptr + row * stride_x + c, mask=c < cols, other=-float("inf"))
        x = x.to(tl.float32)
        m = tl.max(x, axis=0)
        s = tl.where(m == -float("inf"), 0.0, tl.sum(_exp(x - m), axis=0))
    tl.store(m_ptr + row * nchunks + ch, m)
    tl.store(s_ptr + row * nchunks + ch, s)


@triton.jit
def _pair(m1, s1, m2, s2):
    """Two (max, sum of exp(x - max)) into one; a side that saw no column has max -inf, sum 0
    (its scale is exp(0) there, never exp(-inf - -inf))."""
    m = tl.maximum(m1, m2)
    d1 = tl.where(m1 == m, 0.0, m1 - m)
    d2 = tl.where(m2 == m, 0.0, m2 - m)
    return m, s1 * _exp(d1) + s2 * _exp(d2)


@triton.jit
def _row_stats(m_ptr, s_ptr, row, nchunks, NCH: tl.constexpr):
    """(M, S) of a row from its chunks' (max, sum of exp(x - max)), in one reduction of the
    pairs (`_pair`): half the cross-warp barriers of a max and then a sum."""
    k = tl.arange(0, NCH)
    mc = tl.load(m_ptr + row * nchunks + k, mask=k < nchunks, other=-float("inf"))
    sc = tl.load(s_ptr + row * nchunks + k, mask=k < nchunks, other=0.0)
    return tl.reduce((mc, sc), 0, _pair)


@triton.jit
def _chunk_apply(
    x_ptr, y_ptr, m_ptr, s_ptr, cols, stride_x, stride_y, nchunks,
    CHUNK: tl.constexpr, NCH: tl.constexpr, AL: tl.constexpr, PDL: tl.constexpr,
    V: tl.constexpr,
):  # fmt: skip
    """The split path's second launch. Chunk program_id(1) of row program_id(0): exp(x - M) / S
    from its row's statistics. V > 0 (CHUNK_VEC): the chunks of `_chunk_stats` with V, x and y
    sharing the stride. x is loaded before the wait for the statistics kernel (x is an input, not
    its output), so with PDL the loads overlap that kernel."""
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
        x = tl.load(x_ptr + b0 + c, mask=mb, other=-float("inf")).to(tl.float32)
        xe = tl.load(x_ptr + s0 + ce, mask=me, other=-float("inf")).to(tl.float32)
        if PDL:  # launched early: wait until the statistics kernel is done and its stores visible
            gdc_wait()
        big, total = _row_stats(m_ptr, s_ptr, row, nchunks, NCH)
        tl.store(y_ptr + b0 + c, (_exp(x - big) * (1.0 / total)).to(ty), mask=mb)
        tl.store(y_ptr + s0 + ce, (_exp(xe - big) * (1.0 / total)).to(ty), mask=me)
    else:
        mask = c < cols
        x = tl.load(x_ptr + row * stride_x + c, mask=mask, other=-float("inf"))
        if PDL:
            gdc_wait()
        big, total = _row_stats(m_ptr, s_ptr, row, nchunks, NCH)
        y = _exp(x.to(tl.float32) - big) * (1.0 / total)
        tl.store(y_ptr + row * stride_y + c, y.to(ty), mask=mask)


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


def _looped(rows: int, bc: int, al: int, x: torch.Tensor) -> bool:
    """The wide walk (LOOP_BLOCK): rows of LOOP_MIN_COLS to LOOP_MAX_COLS padded columns that
    all start on a 16-byte boundary, and past SINGLE_MAX at least as many rows as SMs (fewer
    would leave SMs idle: the split path spreads a row over several)."""
    few = rows < _sm_count(x.device)
    return (
        bool(LOOP_BLOCK)
        and LOOP_MIN_COLS <= bc <= LOOP_MAX_COLS
        and al * x.element_size() == 16
        and not (few and bc > SINGLE_MAX)
    )


def _unrolled(cols: int, block: int) -> int:
    """NB of `_softmax_loop`: the steps of a row walked unrolled (whole block-column steps, at
    most LOOP_UNROLL), else 0 (the runtime loop)."""
    nb = cols // block
    return 0 if cols % block or nb > LOOP_UNROLL else nb


def _row_looped(cols: int, bc: int, al: int, x: torch.Tensor) -> bool:
    """The row walk for rows of at most SINGLE_MAX (ROW_LOOP_*): ROW_LOOP_MIN_COLS to
    ROW_LOOP_MAX_COLS padded columns, every row on a 16-byte boundary, walked unrolled (a ragged
    row's runtime loop is slower than the tile); one program a row, so any row count (as the
    tile it replaces)."""
    return (
        bool(ROW_LOOP_BLOCK)
        and ROW_LOOP_MIN_COLS <= bc <= min(ROW_LOOP_MAX_COLS, SINGLE_MAX)
        and al * x.element_size() == 16
        and _unrolled(cols, min(ROW_LOOP_BLOCK, bc)) > 0
    )


def _walk_plan(rows: int, cols: int, bc: int, al: int, x: torch.Tensor) -> tuple | None:
    """(step columns, warps) of `_softmax_loop` for these rows: the wide walk (LOOP_*), the
    row walk (ROW_LOOP_*), or None (another path)."""
    if _looped(rows, bc, al, x):
        return min(LOOP_BLOCK, bc), LOOP_WARPS
    if _row_looped(cols, bc, al, x):
        return min(ROW_LOOP_BLOCK, bc), ROW_LOOP_WARPS
    return None


def _whole_row(rows: int, bc: int, x: torch.Tensor) -> bool:
    """A row past SINGLE_MAX in one program (WHOLE_ROW_BYTES): it fits, and rows fill the SMs."""
    return bc * x.element_size() <= WHOLE_ROW_BYTES and rows >= _sm_count(x.device)


def kernel(x: torch.Tensor) -> torch.Tensor:
    x = x.contiguous()
    rows, cols = x.shape
    y = torch.empty_like(x)
    if rows == 0 or cols == 0:
        return y
    al = _align(cols, x, y)
    bc = triton.next_power_of_2(cols)
    if walk := _walk_plan(rows, cols, bc, al, x):
        block, warps = walk
        _softmax_loop[(rows,)](
            x, y, rows, cols, x.stride(0), y.stride(0), BLOCK=block, AL=al,
            NB=_unrolled(cols, block), num_warps=warps,
        )  # fmt: skip
        return y
    if bc <= SINGLE_MAX:
        if _row_vec(rows, bc, al, x, y):
            _softmax_row_vec[(rows,)](
                x, y, cols, x.stride(0), BC=bc, V=16 // x.element_size(), num_warps=_warps(bc)
            )  # fmt: skip
            return y
        bc, bt = _head_tail(cols)
        r, warps = _tile_shape(rows, bc)
        sx, sy = _strides(rows, x, y)
        spl = _lone_split(rows, bc, bt)
        _softmax_tile[(triton.cdiv(rows, r) * spl,)](
            x, y, rows, cols, sx, sy, R=r, BC=bc, AL=al, BT=bt, FT=_full_tiles(al, x), SPL=spl,
            num_warps=warps,
        )  # fmt: skip
        return y
    if _whole_row(rows, bc, x):
        _softmax_whole_row[(rows,)](
            x, y, cols, x.stride(0), y.stride(0), BC=bc, AL=al,
            num_warps=max(1, min(WHOLE_ROW_WARPS, bc // 1024)),
        )  # fmt: skip
        return y
    nchunks = triton.cdiv(cols, CHUNK)
    m = torch.empty(rows, nchunks, dtype=torch.float32, device=x.device)
    s = torch.empty_like(m)
    grid = (rows, nchunks)
    pdl = PDL and x.device.type == "cuda"
    v = 16 // x.element_size() if _chunk_vec(al, x, y) else 0
    _chunk_stats[grid](
        x, m, s, cols, x.stride(0), nchunks, CHUNK=CHUNK, AL=al, PDL=pdl, V=v,
        num_warps=_warps(CHUNK, CHUNK_WARP_ELEMS),
    )  # fmt: skip
    _chunk_apply[grid](
        x, y, m, s, cols, x.stride(0), y.stride(0), nchunks,
        CHUNK=CHUNK, NCH=max(2, triton.next_power_of_2(nchunks)), AL=al, PDL=pdl, V=v,
        num_warps=_warps(CHUNK, CHUNK_WARP_ELEMS),
        **({"launch_pdl": True} if pdl else {}),
    )  # fmt: skip
    return y
