"""RMSNorm in Triton: several short rows per program, long rows split across programs.

Why a second Triton family: `triton_rowwise` (one program per row) under-fills the GPU when rows
are few and long (rows=17, cols=131073: 17 programs on 132 SMs) and pays per-program overhead
when rows are many and short (65537 x 257); its own notes name this variant as the next step.

Algorithm (float32 accumulation throughout):
- cols <= SINGLE_MAX: a program takes a [R, BC] tile, R rows of BC = next_pow2(cols) columns,
  R = TILE_ELEMS // BC (at least 1): load once, sum of squares along the row, rstd = rsqrt(sum /
  cols + eps), multiply by rstd and by weight (loaded once per program), store. One read of x and
  one write of y: the roofline minimum.
  With SHORT_ROW_TILE (on: 1024) rows of at most SHORT_ROW_MAX columns take one warp
  per program instead, at most 8 rows: the row reductions stay inside the warp.
  With HEAD_TAIL (on) a row just past a power of two h (at most h + h // 4 columns, 257 or
  4099) is a tile of h columns that are all there plus a narrow tail tile, not a tile of 2h.
  With ROW_VEC (on) rows of one program each that start off a 16-byte boundary (8191 columns)
  are read and written as an aligned body in 16-byte vectors plus scalar edges.
- cols > SINGLE_MAX and the padded row at most WHOLE_ROW_BYTES (on: 131072), with
  at least as many rows as SMs: one program of up to 32 warps per row keeps the whole row in
  registers in its input dtype, sum of squares, then x * rstd * weight from the registers. One
  read of x.
- cols > SINGLE_MAX otherwise: the row is cut into chunks of CHUNK columns (CHUNK_BYTES at most),
  one program per (row, chunk), in two
  launches: the first stores each chunk's sum of squares, the second adds its row's partial sums
  (a tree over at most NCH values), and writes its chunk. Reads x twice but keeps rows x chunks
  programs in flight.

Cost model: bytes = (2 * rows * cols + cols) * itemsize, 4 flops per element: memory-bound.
Offsets: row indices widened to int64 before the multiply by the row stride (more than 2**31
elements); offsets inside a row stay int32.
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
    "STREAMING": [False, True],
    "PERSIST": [0, 2, 4, 8],
    "WHOLE_ROW_BYTES": [0, 65536, 131072],
    "SHORT_ROW_TILE": [0, 512, 1024, 2048],
    "ROW_SPLIT": [False, True],
    "LOOP_BLOCK": [8192, 4096, 0, 2048],
    "LOOP_WARPS": [16, 8],
    "HEAD_TAIL": [True, False],
    "ROW_VEC": [True, False],
    "PDL": [False, True],
    "CHUNK_VEC": [False, True],
    "PDL_EARLY": [False, True],
    "W_EARLY": [False, True],
    "LOOP_UNROLL": [0, 4],
    "LOOP_RAGGED": [False, True],
    "LONE_VEC": [False, True],
    "LONE_SPLIT": [1, 2, 4, 8],
    "TAIL_FOLD": [False, True],
    "WIDE_UNROLL_PERSIST": [1, 2],
    "LONE_LOCAL": [False, True],
    "FULL_TILES": [False, True],
}
TILE_ELEMS = 8192  # elements per program in the tiled path (R rows of BC columns)
SINGLE_MAX = 8192  # longest row done in one tile; longer rows are split into chunks
CHUNK = 4096  # columns per program in the split path
CHUNK_BYTES = 4096  # ... and at most this many bytes of x (0: no limit): f32 rows get 1024
# columns. H200, 17 x 131073 f32 under the arena's hold: 14.0 -> 11.6 us (twice, side by side;
# a copy of x is 10.2-11.5); bf16 (2048 columns against 4096) 10.1-10.2 either way (session 18)
NUM_WARPS = 8  # warps for a full tile; smaller tiles get one warp per 1024 elements, and the
# tiled path's one warp per TILE_WARP_ELEMS
TILE_WARP_ELEMS = 512  # the tiled path's tiles below TILE_ELEMS (a lone row of 2049-4096
# columns: 8 warps, not 4; full tiles and short rows unchanged). H200 (session 17,
# bench/direct.py side by side, 300 calls): 1 x 4099 softmax f32 4.8 -> 4.4 us, rmsnorm f32 4.8
# -> 4.6, bf16 5.0 -> 4.8 (a copy of x: 3.4-3.7); 16 warps the same as 8, 2 warps 0.5 us slower
SHORT_ROW_TILE = 1024  # rows of at most SHORT_ROW_MAX (padded) columns: tiles of this many
# elements in ONE warp (0: off), at most 8 rows, so a row's reduction is warp shuffles with no
# shared memory or barrier, and short-row shapes get many small programs. This is what Inductor
# picks for a persistent reduction of <= 1024 on CUDA (XBLOCK = min(1024 // RBLOCK, 8),
# num_warps 1), and torch.compile beat this seed at exactly those shapes on the H200 (session 9).
# H200 (session 10, bench/direct.py side by side, against 8192-element tiles in 8 warps):
# 65537 x 257 f32 55.5 -> 42.1 us (bf16 49.1 -> 31.9), 1000 x 1000
# 6.7 -> 6.1 (bf16 5.9 -> 5.2), 32768 x 1024 bf16 37.8 -> 36.7; hidden geomean 12.84 -> 12.11 us
# (1.06x), benchmark 1.006x;
# 2048-element tiles: 65537 x 257 up to 5% faster, 1000 x 1000 up to 20% slower than 1024.
SHORT_ROW_MAX = 1024
STREAMING = False  # tiled path: loads marked evict-first, stores streaming (.cs), as data that
# is touched once; 1-8% slower on the H200 benchmark set (session 5)
PERSIST = 0  # tiled path: 0 = one program per tile; k = k programs per SM looping over the tiles
# (no tail wave, one launch's worth of programs); slower too (session 5)
WHOLE_ROW_BYTES = 131072  # rows past SINGLE_MAX whose padded length fits this many bytes: one
# program per row, the row in registers, one read of x (0: off). For 2048 x 65536 bf16, where the
# split path reads x twice. H200 (session 9, bench/direct.py side by side): 217.5 -> 163.9 us
# (58.1% -> 77.1% of the copy roofline); the other benchmark shapes within 0.3%. Since session
# 19 at most WHOLE_ROW_MAX_COLS padded columns too: 65536 bf16 columns (128 KiB) take the wide
# loop, unrolled (LOOP_UNROLL), one program an SM (WIDE_UNROLL_PERSIST): 2048 x 65536 bf16 165.3
# -> 143.6 us (78.9% -> 90.8% of a copy under the hold, bench/direct.py side by side; call 2:
# 163.4 -> 143.4), 2048 x 40000 bf16 (not unrolled) 114.6 -> 103.3; but 32768 f32 columns (128
# KiB too) stay whole: 134.8 against 139.7 in the unrolled wide loop.
WHOLE_ROW_MAX_COLS = 32768
WHOLE_ROW_WARPS = 32  # warps of such a program (1,024 threads: at most 64 registers each)
ROW_SPLIT = False  # rows past SINGLE_MAX that are too few to fill the SMs (17 x 131073): ONE
# launch, each row over several co-resident programs that meet at a barrier to add their
# chunks' sums of squares (`_rmsnorm_row_split`), instead of two launches that read x twice.
# Off: H200 (session 11), bench/direct.py side by side against the two launches: 17 x 131073 f32
# 15.5 -> 13.9 us, bf16 13.8 -> 11.6 at ROW_SPLIT_PER_SM = 4 (17 programs a row of 8192
# columns), slower at 1 a SM (14.7 -> 17.3, 12.8 -> 15.5); but in the harness's --final, on,
# f32 took 34.3 us (median; p90 66) against session 10's 15.5 and bf16 11.8 against 13.7, in a
# run whose untouched tiny shapes were noisy too (1 x 1 bf16 p90 32 us). Not settled
ROW_SPLIT_PER_SM = 4  # programs an SM that launch assumes resident at once
SPIN_MAX = 1 << 16  # barrier polls before a program of that launch gives up (its chunk: NaN)
ROW_SPLIT_COOP = True  # that launch as a cooperative grid: every program resident, or the
# launch fails. H200 (session 16): the same speed as without (bench/direct.py, 200 calls:
# 17 x 131073 f32 14.0 / 13.9 us, bf16 11.6 / 11.5, against the two launches' 15.6 / 12.8), but
# through the harness's --final ROW_SPLIT was slow again: bf16 median 30.0 us (p90 58.7)
# against the two launches' 13.5, as in session 11 without the cooperative launch. Session 17:
# the two launches read 27-51 us at that shape in some --final runs too, and ROW_SPLIT under the
# arena's hold runs at its direct speed: most likely the harness at that shape (NOTES.md).
# Tried and removed (H200, BENCHMARKS.md session 6): the split path slab by slab so its second
# read comes from L2 (3x slower at 2048 x 65536 with 16 MiB slabs).
# Session 16 (H200, bench/direct.py side by side, 2048 x 65536 bf16): the whole-row programs as
# one persistent program an SM that prefetches its next row into L2 (`prefetch.global.L2::
# evict_last`, no registers) before working on this one: 163.5 -> 196.0 us (slower; the
# one-a-row launch keeps a program starting on every SM the moment one ends).
LOOP_BLOCK = 8192  # rows of LOOP_MIN_COLS to LOOP_MAX_COLS (padded) columns whose rows all start
# on a 16-byte boundary: one program a row of LOOP_WARPS warps that walks it twice in
# LOOP_BLOCK-column steps (`_rmsnorm_loop`): the sum of squares, then x * rstd * weight, the
# second read mostly from L2 (the row was just read; loads of the first pass evict-last, of the
# second evict-first). Inductor's looped reduction. 0: off. H200 (session 15, bench/direct.py
# side by side, against the one-row tile of 8 warps): 8192 x 8192 bf16 71.1 -> 67.2 us (89.3 ->
# 94.5% of the copy roofline; torch.compile 67.7), f32 134.8 -> 131.0 (torch.compile 129.5);
# but rows that start off a vector boundary lose (7777 x 8191 bf16 100.9 -> 145.5, f32 147.2 ->
# 166.9: scalar loads, walked twice), as do 3000-column rows (4099 x 3000 bf16 17.7 -> 24.4);
# 2048-column steps and 4-8 warps were slower at 8192 (69.4-81.3 us bf16, 155-189 f32). 4096
# until session 19: with LOOP_UNROLL, one 8192-column step (the row's loads all at once, 16
# warps, the evict hints) was 66.6 -> 66.4 us bf16, 130.1 -> 128.8 f32 (torch.compile 66.7 /
# 128.9; H200, bench/direct.py --hold side by side, session 19 call 2); 32 warps 90.9 / 128.2
HEAD_TAIL = True  # tiled path, rows just past a power of two h (h + at most h // 4 columns):
# a head tile of h columns with no column masked and a narrow tail tile for the rest
# (`_rmsnorm_head_tail`), instead of one tile of 2h columns, half of it padding (257 columns:
# 512-wide tiles, 255 lanes of them idle). H200 (session 16, bench/direct.py side by side):
# 65537 x 257 f32 42.0 -> 37.8 us, bf16 31.8 -> 25.6 (torch.compile 37.1 / 25.6; a copy of x
# 37.7 / 22.6), 1 x 4099 5.0-5.2 -> 4.8; shapes it does not take unchanged.
ROW_VEC = True  # tiled path, rows of ROW_VEC_MIN to TILE_ELEMS (padded) columns, one a
# program, that start off a 16-byte boundary (7777 x 8191 bf16: row r starts r * 16382 bytes
# in): the row's aligned body in 16-byte vectors and its edges one by one (`_rmsnorm_row_vec`),
# instead of 2-byte / 4-byte scalars for the whole row. The weight stays scalar (shifted by the
# row's offset). H200 (session 16, bench/direct.py side by side): 7777 x 8191 bf16 100.2 ->
# 70.1 us, f32 146.4 -> 129.8 (a copy of x: 66.0 / 124.4).
ROW_VEC_MIN = 2048
PDL = True  # split path on a GPU: the apply kernel is launched as a programmatic dependent
# launch (sm_90): it may start while the first kernel runs and waits in `gdc_wait` for that
# grid's end, so the second launch's gap overlaps the first kernel (17 x 131073: two launches
# of ~4 us each, where a copy of x takes 8-11 us). H200, bench/direct.py side by side: session
# 16 (before CHUNK_VEC, 200 calls, both orders) 17 x 131073 f32 14.5 -> 14.5 us, bf16 12.7 ->
# 12.6; session 17 (with CHUNK_VEC, 300 calls) f32 13.8 -> 12.9, bf16 11.1 -> 10.1: on.
PDL_EARLY = True  # split path: the apply kernel loads its chunk of x and of the weight before
# it waits for the sums kernel (inputs, not that kernel's output), so with PDL the loads overlap
# it (17 x 131073). sm_90 PTX: the loads come before `griddepcontrol.wait` (64 registers
# against 48). H200 (session 19, bench/direct.py --hold, 200 calls, two spellings of each
# variant): 17 x 131073 bf16 10.2-11.2 -> 9.0-10.0 us (a copy: 9.2), f32 11.6-12.7 -> 11.3-12.3
# (copy 10.5): on. (Softmax's, the same move, was 10.4 -> 10.3-10.4: off there.)
W_EARLY = True  # tiled path with fewer tiles than SMs (1 x 4099, 3 x 17): the weight is loaded
# with x, before the row's reduction, not after it. Few programs find the weight cold (the
# flush): after the reduction it is a second trip to memory in series (sm_90 SASS of the 1 x
# 4099 f32 launch: 17 LDG of x, the reduction's barriers, then the weight's 5 LDG; with it the
# weight's loads come before the barriers, 40 registers either way at bf16). H200 (session 19,
# bench/direct.py --hold, 200 calls), 1 x 4099 with LONE_VEC: f32 4.6 -> 4.4 us, bf16 4.9 ->
# 4.2 (a copy: 3.6 / 3.8; a Triton copy of the row 3.6, one reduction added 4.2): on.
TAIL_FOLD = False  # tiled path with a head and tail and fewer tiles than SMs (1 x 4099): the
# tail is a tile as wide as the head, masked past the row, so each reduction covers head and
# tail at once (a lone row is latency: each cross-warp reduction is two barriers). Lost on the
# H200 (session 19, 1 x 4099 f32 with LONE_VEC: 4.8 -> 5.7 us; with W_EARLY 4.4 -> 4.5, bf16
# 4.2 -> 4.4): the masked tail is scalar and twice the registers. Off.
LONE_SPLIT = 4  # tiled path, a lone row with a head and a tail (1 x 4099, `_lone_split`): this many
# programs each load and reduce the whole row and store 1/LONE_SPLIT of it, so its stores leave
# from that many SMs with no second launch or grid barrier (1: one program). H200 (session 23,
# bench/direct.py --hold --rounds 3, four processes, the seeds' body as a diagnostic, K = 1-16):
# 1 x 4099 f32 kernel 1.92-1.98 -> 1.82-1.92 us; 8 and 16 programs lose it. In the seed (call 3,
# two processes; each program loads only its part of the weight): f32 1.94-1.95 -> 1.76 us of
# kernel, 80.3-84.1% -> 84.1-87.4% of a copy; bf16 1.86-1.89 -> 1.60, 90.1-91.3% -> 94.4-95.9%.
# On.
LONE_VEC = True  # tiled path, a lone row (rows == 1, 1 x 4099): its strides are passed as 0, which
# Triton specializes as divisible by 16, so the head tile's loads and stores (no column mask) are
# 16-byte vectors; the real stride (4099) is not, and made them 4-byte / 2-byte scalars (16 LDG a
# thread at f32 instead of 4). Only row 0 exists, so the stride is never used. H200 (session 19,
# 1 x 4099, with W_EARLY): f32 4.6 -> 4.4 us, bf16 4.4 -> 4.2; alone f32 4.6 -> 4.8 (noise-level),
# bf16 4.9 -> 4.4: on.
FULL_TILES = True  # tiled path, rows that load as 2-byte scalars (`_full_tiles`): a tile whose R
# rows are all there (every tile but a ragged last one) takes a second copy of the body with no
# row mask, so its loads and stores are not predicated. sm_90 SASS, 65537 x 257 bf16 (4 rows a
# warp, 256 + 1): 576 -> ~510 instructions. H200 (session 22, bench/direct.py side by side, two
# processes): 65537 x 257 bf16 25.5 -> 25.0 and 25.4 -> 24.9 us (kernel 23.26 -> 22.69, 23.10
# -> 22.53; a copy of x 22.6 / 23.5). For every tile it lost where accesses are vectors:
# 1000 x 1000 f32 6.1 -> 6.4, 4099 x 3000 bf16 17.5 -> 18.0; f32 257 columns (4-byte scalars)
# +-1%; hence the rule.
LONE_LOCAL = False  # tiled path, a lone row with a head and a tail (1 x 4099): `_rmsnorm_lone`,
# each thread's sum of squares kept in the thread, then one cross-thread sum instead of two
# (sm_90 SASS, 1 x 4099 f32: 2 BAR.SYNC and 176 instructions, not 5 and 224; but ptxas issues the
# weight's loads after the first shuffle of the sum, a second trip to memory in series). Lost on
# the H200 (session 21, bench/direct.py --hold --rounds 6, 1,800 calls): 1 x 4099 f32 4.2 -> 4.6
# us, bf16 4.1 -> 4.4 (a copy: 3.5 / 3.7); at 16 or 32 warps it ties the default (4.32, call 2).
# Off.
CHUNK_VEC = True  # split path, rows that start off a 16-byte boundary (17 x 131073): chunks
# cut the row's aligned body, read and written in 16-byte vectors, and chunk 0 also takes the
# edges one by one (ROW_VEC's layout), instead of 2-byte / 4-byte scalars everywhere. H200
# (session 17, bench/direct.py side by side, 200 calls): 17 x 131073 bf16 13.0 -> 11.4-12.2 us
# (two rows of the same variant), 13.8 -> 11.3 with the arena's hold (--hold); f32 14.8 ->
# 14.1-14.9 (a copy of x: 8.4-9.2 bf16, 11.2 f32).
LOOP_RAGGED = False  # that path also takes rows that are not whole unrolled steps (LOOP_UNROLL),
# walked by the runtime loop with a masked last step. Lost at bf16 on the H200 (session 20,
# bench/direct.py --hold side by side, 100 calls): 4096 x 6144 bf16 30.1 -> 39.4 us (copy 28.3);
# f32 54.1 -> 52.0, 2048 x 5000 f32 25.9 -> 25.8 (copy 51.7 / 24.0). Off: such rows take the tile
LOOP_MIN_COLS = 8192
LOOP_MAX_COLS = 8192
LOOP_WARPS = 16
LOOP_PERSIST = 0  # that path: 0 = one program a row; k = k programs an SM walking the rows, so
# at most k rows an SM are between their two passes (what the second pass needs from L2)
LOOP_SKEW = 0  # that path: row r starts its walks at step r * LOOP_SKEW (mod its steps), so
# rows in flight together do not all read the same offset (rows of 2**k bytes: one address
# pattern); 0: every row from its start
LOOP_UNROLL = 4  # looped paths: rows of exactly k full steps, k <= LOOP_UNROLL, are walked
# unrolled and unmasked (the step count a compile-time constant, as Inductor's shape-specialized
# kernel has it; 0: off). sm_90 SASS at 8192 bf16 columns, 4096-column steps, 16 warps: two
# loops of 122 and 63 instructions an iteration, unrolled 256 instructions with no loop;
# Inductor's kernel (2048-column steps) is 232 with no loop. H200 (session 19, bench/direct.py
# --hold, side by side with torch.compile): 8192 x 8192 bf16 68.1 -> 67.0 us (compile 67.1), f32
# 131.2 -> 130.6 (compile 129.6); 2048-column steps 67.5 / 130.8. With the wide loop (below)
# 2048 x 65536 bf16 167.8 -> 159.7 at two programs an SM, 192.0 -> 143.6 at one: on.
LOOP_BACK = False  # that path: the second walk from the row's end back to its start
WIDE_LOOP_BLOCK = 16384  # rows past SINGLE_MAX that the whole-row program does not take (f32
# rows of 65536: 256 KB), up to WIDE_LOOP_MAX_COLS (padded), all on a 16-byte boundary, at
# least as many as SMs: the looped path (`_rmsnorm_loop`) in WIDE_LOOP_BLOCK-column steps,
# WIDE_LOOP_WARPS warps, WIDE_LOOP_PERSIST programs an SM walking the rows, instead of the two
# launches of the split path (which read x twice from memory). 0: off. H200 (session 17,
# side by side, 100 calls): 2048 x 65536 f32 403.4 -> 325.8 us, 1024 x 65536 f32 206.0 ->
# 166.1, 300 x 65536 f32 68.4 -> 56.9 (a copy of x: 255.6 / 128.7 / 40.7). Where the whole row
# fits it stays ahead: 2048 x 65536 bf16 164.0 against 167.0, 4096 x 65536 bf16 310.7 against
# 325.9 (softmax's whole row spills there, so its looped path goes first)
WIDE_LOOP_MAX_COLS = 65536
WIDE_LOOP_WARPS = 32
WIDE_LOOP_PERSIST = 2
WIDE_UNROLL_PERSIST = 1  # programs an SM of that walk where LOOP_UNROLL unrolls it (rows of
# whole steps). H200 (session 19, bench/direct.py --hold): 2048 x 65536 bf16 unrolled 159.7 us at
# two an SM, 143.6 at one; not unrolled, one an SM lost (167.8 at two, 192.0 at one)
EPS = 1e-6  # the task's eps (task.toml)


@triton.jit
def _rmsnorm_tile_rows(
    x_ptr, w_ptr, y_ptr, t, rows, cols, stride_x, stride_y, eps,
    R: tl.constexpr, BC: tl.constexpr, EV: tl.constexpr, CM: tl.constexpr, AL: tl.constexpr,
    WE: tl.constexpr, RM: tl.constexpr,
):  # fmt: skip
    """Tile t: rows t*R .. t*R+R-1. WE (W_EARLY): the weight is loaded before the reduction.
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
    x = tl.load(xp, mask=mask, other=0.0, eviction_policy=EV).to(tl.float32)
    if WE:
        w = tl.load(w_ptr + c, mask=c < cols, other=0.0).to(tl.float32)
    rstd = tl.rsqrt(tl.sum(x * x, axis=1) / cols + eps)
    if not WE:
        w = tl.load(w_ptr + c, mask=c < cols, other=0.0).to(tl.float32)
    y = x * rstd[:, None] * w[None, :]
    yp = y_ptr + r[:, None] * stride_y + c[None, :]
    tl.store(yp, y.to(y_ptr.dtype.element_ty), mask=mask, cache_modifier=CM)


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
    R: tl.constexpr, BC: tl.constexpr, EV: tl.constexpr, CM: tl.constexpr, AL: tl.constexpr,
    BT: tl.constexpr, WE: tl.constexpr, FOLD: tl.constexpr, RM: tl.constexpr,
    SPL: tl.constexpr,
):  # fmt: skip
    """Rows t*R .. t*R+R-1 as a head of BC columns (a power of two no longer than the row: no
    column masked) and a tail of the cols - BC that remain (at most BT): for rows just past a
    power of two (257 = 256 + 1), which a next_pow2 tile pads to twice their length, so half its
    lanes load, multiply and store nothing. WE (W_EARLY): the weight is loaded before the
    reduction. FOLD (TAIL_FOLD): the tail is a tile as wide as the head (masked past the row), so
    the sum of squares is one reduction over both instead of two. RM: rows masked (off: the
    caller checked that all R rows are there, and the head loads and stores are unpredicated).
    SPL > 1 (LONE_SPLIT): SPL programs each load and reduce the whole tile and store 1/SPL of the
    head, the last of them also the tail (each loads only its part of the weight)."""
    if AL > 1:  # as in _rmsnorm_tile_rows: vector loads where the host checked alignment
        cols = cols // AL * AL
        stride_x = stride_x // AL * AL
        stride_y = stride_y // AL * AL
    TW: tl.constexpr = BC if FOLD else BT
    r = (t * R + tl.arange(0, R)).to(tl.int64)
    c = tl.arange(0, BC)
    ct = BC + tl.arange(0, TW)
    rmask = r[:, None] < rows
    tmask = (rmask & (ct[None, :] < cols)) if RM else (ct[None, :] < cols)
    xrow = x_ptr + r[:, None] * stride_x
    if RM:
        xh = tl.load(xrow + c[None, :], mask=rmask, other=0.0, eviction_policy=EV)
    else:
        xh = tl.load(xrow + c[None, :], eviction_policy=EV)
    xh = xh.to(tl.float32)
    xt = tl.load(xrow + ct[None, :], mask=tmask, other=0.0, eviction_policy=EV).to(tl.float32)
    wcm = ct < cols
    own = c >= 0  # every head column is this program's (unless LONE_SPLIT below)
    if SPL > 1:  # LONE_SPLIT: this program's 1/SPL of the head (and the tail if it is the last)
        sp = tl.program_id(0) % SPL
        own = (c // (BC // SPL)) == sp
        wcm = wcm & (sp == SPL - 1)
        tmask = tmask & (sp == SPL - 1)
    if WE:
        wh, wt = _head_tail_weight(w_ptr, c, ct, own, wcm, SPL)
    if FOLD:
        ss = tl.sum(xh * xh + xt * xt, axis=1)
    else:
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
        tl.store(yrow + c[None, :], yh.to(ty), mask=hmask, cache_modifier=CM)
    elif RM:
        tl.store(yrow + c[None, :], yh.to(ty), mask=rmask, cache_modifier=CM)
    else:
        tl.store(yrow + c[None, :], yh.to(ty), cache_modifier=CM)
    tl.store(yrow + ct[None, :], yt.to(ty), mask=tmask, cache_modifier=CM)


@triton.jit
def _rmsnorm_tile(
    x_ptr, w_ptr, y_ptr, rows, cols, stride_x, stride_y, eps, ntiles,
    R: tl.constexpr, BC: tl.constexpr, EV: tl.constexpr, CM: tl.constexpr, LOOP: tl.constexpr,
    AL: tl.constexpr, BT: tl.constexpr, WE: tl.constexpr, FOLD: tl.constexpr,
    FT: tl.constexpr, SPL: tl.constexpr,
):  # fmt: skip
    start, step = tl.program_id(0), 1
    if SPL > 1:  # LONE_SPLIT: SPL programs share the one tile (a lone row)
        start = tl.program_id(0) // SPL
    if LOOP:  # PERSIST: a fixed set of programs walks the tiles
        step = tl.num_programs(0)
    for t in range(start, ntiles if LOOP else start + 1, step):
        if FT:  # FULL_TILES: a tile with all R rows there takes the copy with no row mask
            if (t + 1) * R <= rows:
                _rmsnorm_tile_any(
                    x_ptr, w_ptr, y_ptr, t, rows, cols, stride_x, stride_y, eps, R, BC, EV, CM,
                    AL, BT, WE, FOLD, False, SPL,
                )  # fmt: skip
            else:
                _rmsnorm_tile_any(
                    x_ptr, w_ptr, y_ptr, t, rows, cols, stride_x, stride_y, eps, R, BC, EV, CM,
                    AL, BT, WE, FOLD, True, SPL,
                )  # fmt: skip
        else:
            _rmsnorm_tile_any(
                x_ptr, w_ptr, y_ptr, t, rows, cols, stride_x, stride_y, eps, R, BC, EV, CM, AL,
                BT, WE, FOLD, True, SPL,
            )  # fmt: skip


@triton.jit
def _rmsnorm_tile_any(
    x_ptr, w_ptr, y_ptr, t, rows, cols, stride_x, stride_y, eps,
    R: tl.constexpr, BC: tl.constexpr, EV: tl.constexpr, CM: tl.constexpr, AL: tl.constexpr,
    BT: tl.constexpr, WE: tl.constexpr, FOLD: tl.constexpr, RM: tl.constexpr, SPL: tl.constexpr,
):  # fmt: skip
    if BT > 0:  # HEAD_TAIL
        _rmsnorm_head_tail(
            x_ptr, w_ptr, y_ptr, t, rows, cols, stride_x, stride_y, eps, R, BC, EV, CM, AL, BT,
            WE, FOLD, RM, SPL,
        )  # fmt: skip
    else:
        _rmsnorm_tile_rows(
            x_ptr, w_ptr, y_ptr, t, rows, cols, stride_x, stride_y, eps, R, BC, EV, CM, AL, WE,
            RM,
        )  # fmt: skip


@triton.jit
def _rmsnorm_lone(
    x_ptr, w_ptr, y_ptr, cols, eps,
    A: tl.constexpr, T: tl.constexpr, V: tl.constexpr, KT: tl.constexpr,
):  # fmt: skip
    """LONE_LOCAL: a lone row as a head of A * T * V columns (no mask) and a tail of KT * T * V
    (masked), loaded as [slab, thread, vector] tensors so each of the T threads sums its own
    squares with no other thread; then one cross-thread sum, where the [1, BC] head and tail
    tiles took two (one over the head, one over the tail). The weight is loaded with x."""
    HW: tl.constexpr = A * T * V
    k = tl.arange(0, T)[None, :, None] * V + tl.arange(0, V)[None, None, :]
    ch = tl.arange(0, A)[:, None, None] * (T * V) + k
    ct = HW + tl.arange(0, KT)[:, None, None] * (T * V) + k
    tmask = ct < cols
    xh = tl.load(x_ptr + ch).to(tl.float32)
    xt = tl.load(x_ptr + ct, mask=tmask, other=0.0).to(tl.float32)
    wh = tl.load(w_ptr + ch).to(tl.float32)
    wt = tl.load(w_ptr + ct, mask=tmask, other=0.0).to(tl.float32)
    st = tl.sum(tl.sum(xh * xh, axis=2), axis=0) + tl.sum(tl.sum(xt * xt, axis=2), axis=0)
    rstd = tl.rsqrt(tl.sum(st, axis=0) / cols + eps)
    ty = y_ptr.dtype.element_ty
    tl.store(y_ptr + ch, (xh * rstd * wh).to(ty))
    tl.store(y_ptr + ct, (xt * rstd * wt).to(ty), mask=tmask)


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
def _walk(c0, nb, sh, BLOCK: tl.constexpr, SKEW: tl.constexpr, BACK: tl.constexpr):
    """First column of the step that starts at column c0 of a row walked in order in nb
    BLOCK-column steps: c0 itself, or (SKEW) the walk starting at step sh and wrapping around,
    and (BACK) in the reverse order. Off, the loop is exactly the plain walk's."""
    if SKEW or BACK:
        i = c0 // BLOCK
        if BACK:
            i = nb - 1 - i
        if SKEW:
            i = (i + sh) % nb
        c0 = i * BLOCK
    return c0


@triton.jit
def _rmsnorm_loop(
    x_ptr, w_ptr, y_ptr, rows, cols, stride_x, stride_y, eps, BLOCK: tl.constexpr,
    AL: tl.constexpr, PERSIST: tl.constexpr, SKEW: tl.constexpr, BACK: tl.constexpr,
    NB: tl.constexpr,
):  # fmt: skip
    """One row per program, walked twice in BLOCK-column steps (LOOP_BLOCK); with PERSIST
    (LOOP_PERSIST) a fixed set of programs walks the rows, one after another. SKEW
    (LOOP_SKEW): row r starts its walks at step r * SKEW (mod the steps), so rows in flight
    together are not at the same offset; BACK (LOOP_BACK): the second walk goes backwards, from
    the steps the first read last (the likeliest still in L2). NB > 0 (LOOP_UNROLL): the row is
    exactly NB full steps, walked unrolled and unmasked (as Inductor's shape-specialized kernel
    does), in order."""
    if AL > 1:  # as in _rmsnorm_tile_rows: vector loads where the host checked alignment
        cols = cols // AL * AL
        stride_x = stride_x // AL * AL
        stride_y = stride_y // AL * AL
    start, step = tl.program_id(0), 1
    if PERSIST:
        step = tl.num_programs(0)
    nb = tl.cdiv(cols, BLOCK)
    for r in range(start, rows if PERSIST else start + 1, step):
        row = tl.cast(r, tl.int64)
        sh = (r * SKEW) % nb
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
                c = _walk(c0, nb, sh, BLOCK, SKEW, False) + tl.arange(0, BLOCK)
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
                c = _walk(c0, nb, sh, BLOCK, SKEW, BACK) + tl.arange(0, BLOCK)
                mask = c < cols
                x = tl.load(xr + c, mask=mask, other=0.0, eviction_policy="evict_first")
                w = tl.load(w_ptr + c, mask=mask, other=0.0).to(tl.float32)
                tl.store(yr + c, (x.to(tl.float32) * rstd * w).to(ty), mask=mask)


@triton.jit
def _chunk_sumsq(
    x_ptr, p_ptr, cols, stride_x, nchunks, CHUNK: tl.constexpr, AL: tl.constexpr,
    PDL: tl.constexpr, V: tl.constexpr,
):  # fmt: skip
    """Chunk program_id(1) of row program_id(0): its sum of squares. V > 0 (CHUNK_VEC): chunks
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
    V: tl.constexpr, EARLY: tl.constexpr,
):  # fmt: skip
    """Chunk program_id(1) of row program_id(0): x * rstd * weight from its row's partial sums.
    V > 0 (CHUNK_VEC): the chunks of `_chunk_sumsq` with V, x and y sharing the stride; the
    weight, shifted by the row's offset from the boundary, is read one by one. EARLY
    (PDL_EARLY): x and the weight are loaded before the wait for the sums kernel (they are
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
        if EARLY:
            x = tl.load(x_ptr + b0 + c, mask=mb, other=0.0).to(tl.float32)
            w = tl.load(w_ptr + a0 + c, mask=mb, other=0.0).to(tl.float32)
            xe = tl.load(x_ptr + s0 + ce, mask=me, other=0.0).to(tl.float32)
            we = tl.load(w_ptr + ce, mask=me, other=0.0).to(tl.float32)
        if PDL:  # launched early: wait until the sums kernel is done and its stores visible
            gdc_wait()
        rstd = _row_rstd(p_ptr, row, nchunks, cols, eps, NCH)
        if not EARLY:
            x = tl.load(x_ptr + b0 + c, mask=mb, other=0.0).to(tl.float32)
            w = tl.load(w_ptr + a0 + c, mask=mb, other=0.0).to(tl.float32)
        tl.store(y_ptr + b0 + c, (x * rstd * w).to(ty), mask=mb)
        if not EARLY:
            xe = tl.load(x_ptr + s0 + ce, mask=me, other=0.0).to(tl.float32)
            we = tl.load(w_ptr + ce, mask=me, other=0.0).to(tl.float32)
        tl.store(y_ptr + s0 + ce, (xe * rstd * we).to(ty), mask=me)
    else:
        mask = c < cols
        if EARLY:
            x = tl.load(x_ptr + row * stride_x + c, mask=mask, other=0.0).to(tl.float32)
            w = tl.load(w_ptr + c, mask=mask, other=0.0).to(tl.float32)
        if PDL:
            gdc_wait()
        rstd = _row_rstd(p_ptr, row, nchunks, cols, eps, NCH)
        if not EARLY:
            x = tl.load(x_ptr + row * stride_x + c, mask=mask, other=0.0).to(tl.float32)
            w = tl.load(w_ptr + c, mask=mask, other=0.0).to(tl.float32)
        tl.store(y_ptr + row * stride_y + c, (x * rstd * w).to(ty), mask=mask)


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
def _rmsnorm_row_split(
    x_ptr, w_ptr, y_ptr, st_ptr, cnt_ptr, cols, stride_x, stride_y, eps, nsplit, spin_max,
    BC: tl.constexpr, PP: tl.constexpr, AL: tl.constexpr,
):  # fmt: skip
    """Row program_id(0) over nsplit co-resident programs in ONE launch (ROW_SPLIT): program p
    keeps columns [p * BC, (p + 1) * BC) in registers, publishes its chunk's sum of squares,
    meets the row's other programs at a barrier (a counter, release / acquire, at most spin_max
    polls: a program that gave up writes NaN, never a plausible wrong row), adds the partial sums
    in the same order as every other program of the row, and writes its chunk. The last program
    out zeroes the row's counters for the next call. One read of x."""
    if AL > 1:  # as in _rmsnorm_tile_rows: vector loads where the host checked alignment
        cols = cols // AL * AL
        stride_x = stride_x // AL * AL
        stride_y = stride_y // AL * AL
    row = tl.program_id(0).to(tl.int64)
    p = tl.program_id(1)
    c = p * BC + tl.arange(0, BC)
    mask = c < cols
    xr = tl.load(x_ptr + row * stride_x + c, mask=mask, other=0.0)
    xf = xr.to(tl.float32)
    sb = st_ptr + row * PP
    tl.store(sb + p, tl.sum(xf * xf, axis=0))
    tl.debug_barrier()
    cnt = cnt_ptr + row * 2
    tl.atomic_add(cnt, 1, sem="release", scope="gpu")
    spins = 0
    while (tl.atomic_add(cnt, 0, sem="acquire", scope="gpu") < nsplit) & (spins < spin_max):
        spins += 1
    tl.debug_barrier()
    k = tl.arange(0, PP)
    # .cg: from L2, never a stale L1 line (other SMs wrote these)
    total = tl.sum(tl.load(sb + k, mask=k < nsplit, other=0.0, cache_modifier=".cg"), axis=0)
    rstd = tl.where(spins >= spin_max, float("nan"), tl.rsqrt(total / cols + eps))
    w = tl.load(w_ptr + c, mask=mask, other=0.0).to(tl.float32)
    tl.store(y_ptr + row * stride_y + c, (xf * rstd * w).to(y_ptr.dtype.element_ty), mask=mask)
    if tl.atomic_add(cnt + 1, 1, sem="acq_rel", scope="gpu") == nsplit - 1:
        tl.atomic_xchg(cnt, 0, sem="relaxed", scope="gpu")
        tl.atomic_xchg(cnt + 1, 0, sem="relaxed", scope="gpu")


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
    as SMs (a lone row is latency, not bandwidth: 1 x 4099 was 0.2-0.3 us slower with it), that
    do not all start on a 16-byte boundary (al below a 16-byte vector), with x and y starting on
    16 bytes and sharing a stride (so a row's body is aligned in both)."""
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
    four programs of 1,024); 1 otherwise (several rows, PERSIST). A power of two, so that the
    programs' slices of the (power-of-two) head meet exactly."""
    k = int(LONE_SPLIT)
    ok = k > 1 and k & (k - 1) == 0 and rows == 1 and bt > 0 and not PERSIST and bc // k >= 256
    return k if ok else 1


def _lone(rows: int, bc: int, bt: int, warps: int, x: torch.Tensor) -> tuple | None:
    """LONE_LOCAL: (A, T, V, KT) of `_rmsnorm_lone` for a lone row with a head of bc and a tail
    of bt columns (HEAD_TAIL), when the head holds at least one slab of T threads by V-element
    (16-byte) vectors; None for every other launch."""
    t, v = 32 * warps, 16 // x.element_size()
    if not (LONE_LOCAL and rows == 1 and bt > 0 and bc >= t * v):
        return None
    return bc // (t * v), t, v, triton.cdiv(bt, t * v)


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


def _loop_rule(
    rows: int, bc: int, al: int, x: torch.Tensor, block: int, lo: int, hi: int, persist: int
) -> bool:
    """The looped walk (`_rmsnorm_loop`, `block`-column steps, 0: off) takes rows of lo to hi
    padded columns that all start on a 16-byte boundary and, persistent (persist programs an
    SM), at least as many rows as SMs (fewer would leave SMs idle: the split path spreads a row
    over several)."""
    return (
        bool(block)
        and lo <= bc <= hi
        and al * x.element_size() == 16
        and (not persist or rows >= _sm_count(x.device))
    )


def _looped(rows: int, bc: int, al: int, x: torch.Tensor) -> bool:
    """The looped path (LOOP_*), tried first: rows of LOOP_MIN_COLS to LOOP_MAX_COLS."""
    return _loop_rule(rows, bc, al, x, LOOP_BLOCK, LOOP_MIN_COLS, LOOP_MAX_COLS, LOOP_PERSIST)


def _whole_steps(cols: int, bc: int) -> bool:
    """Rows the looped path (LOOP_*) walks: whole steps walked unrolled, or any with
    LOOP_RAGGED (the runtime loop, a masked last step)."""
    ordered = not (LOOP_SKEW or LOOP_BACK)
    return bool(LOOP_RAGGED or _unrolled(cols, min(LOOP_BLOCK, bc), ordered))


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


def _unrolled(cols: int, block: int, ordered: bool = True) -> int:
    """NB of `_rmsnorm_loop`: the steps of a row LOOP_UNROLL walks unrolled (whole block-column
    steps, at most LOOP_UNROLL, walked in order), else 0 (and for a walk that is off, block 0)."""
    if block <= 0:
        return 0
    nb = cols // block
    return nb if ordered and cols % block == 0 and nb <= LOOP_UNROLL else 0


def _walk_rows(x, weight, y, rows, cols, al, bc, block, warps, persist, skew=0, back=False):
    """Launch `_rmsnorm_loop`: one program a row, or `persist` an SM walking the rows (1 SM in
    the interpreter); unrolled (NB) where LOOP_UNROLL takes the row, which walks it in order
    (so not with skew or back)."""
    programs = _programs(rows, x.device, persist)
    block = min(block, bc)
    nb = _unrolled(cols, block, ordered=not (skew or back))
    _rmsnorm_loop[(programs,)](
        x, weight, y, rows, cols, x.stride(0), y.stride(0), EPS, BLOCK=block, AL=al,
        PERSIST=bool(persist), SKEW=skew, BACK=bool(back), NB=nb, num_warps=warps,
    )  # fmt: skip


def _programs(n: int, device: torch.device, persist: int) -> int:
    """Programs of a launch over n tiles or rows: one each, or `persist` an SM walking them
    (the tiled path's PERSIST, the walks' persistence; 1 SM in the interpreter)."""
    return min(n, persist * _sm_count(device)) if persist else n


_COUNTERS: dict = {}


def _row_split(rows: int, cols: int, x: torch.Tensor) -> tuple[int, int] | None:
    """(BC, nsplit) of the one-launch split path (ROW_SPLIT), or None: each row over nsplit >= 2
    programs of BC (a power of two) columns, at most ROW_SPLIT_PER_SM programs an SM (rows *
    nsplit <= that many per SM, all resident at once on an idle GPU) and a chunk in registers (BC *
    itemsize <= WHOLE_ROW_BYTES). The CPU interpreter runs programs one after another: never."""
    slots = ROW_SPLIT_PER_SM * _sm_count(x.device)
    if not ROW_SPLIT or x.device.type != "cuda" or slots // rows < 2:
        return None
    bc = triton.next_power_of_2(triton.cdiv(cols, slots // rows))
    if bc * x.element_size() > WHOLE_ROW_BYTES:
        return None
    return bc, triton.cdiv(cols, bc)


def _counters(rows: int, device: torch.device) -> torch.Tensor:
    """Two int32 counters per row for `_rmsnorm_row_split`, zero between calls (its last
    program resets them), one buffer per (device, stream): calls on one stream never overlap."""
    key = (device, torch.cuda.current_stream(device).cuda_stream if device.type == "cuda" else 0)
    buf = _COUNTERS.get(key)
    if buf is None or buf.numel() < 2 * rows:
        buf = _COUNTERS[key] = torch.zeros(max(2 * rows, 256), dtype=torch.int32, device=device)
    return buf


def _split_rows(x, weight, y, rows, cols, al, bc, nsplit, spin_max=None):
    pp = max(2, triton.next_power_of_2(nsplit))
    st = torch.empty(rows * pp, dtype=torch.float32, device=x.device)
    _rmsnorm_row_split[(rows, nsplit)](
        x, weight, y, st, _counters(rows, x.device), cols, x.stride(0), y.stride(0), EPS, nsplit,
        SPIN_MAX if spin_max is None else spin_max, BC=bc, PP=pp, AL=al,
        num_warps=max(1, min(WHOLE_ROW_WARPS, bc // 1024)),
        # ROW_SPLIT_COOP: the driver starts the grid only with every program resident (or fails
        # the launch), so the barrier never waits on a program that has no SM
        **({"launch_cooperative_grid": True} if ROW_SPLIT_COOP and x.is_cuda else {}),
    )  # fmt: skip


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
        _walk_rows(
            x, weight, y, rows, cols, al, bc, LOOP_BLOCK, LOOP_WARPS, LOOP_PERSIST, LOOP_SKEW,
            LOOP_BACK,
        )  # fmt: skip
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
        if lone := _lone(rows, bc, bt, warps, x):
            _rmsnorm_lone[(1,)](x, weight, y, cols, EPS, *lone, num_warps=warps)
            return y
        ntiles = triton.cdiv(rows, r)
        sx, sy = _strides(rows, x, y)
        spl = _lone_split(rows, bc, bt)
        _rmsnorm_tile[(_programs(ntiles, x.device, PERSIST) * spl,)](
            x, weight, y, rows, cols, sx, sy, EPS, ntiles,
            R=r, BC=bc, LOOP=bool(PERSIST), AL=al, BT=bt,
            EV="evict_first" if STREAMING else "", CM=".cs" if STREAMING else "",
            WE=bool(W_EARLY) and ntiles < _sm_count(x.device),
            FOLD=bool(TAIL_FOLD) and bt > 0 and ntiles < _sm_count(x.device),
            FT=_full_tiles(al, x), SPL=spl, num_warps=warps,
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
    if split := _row_split(rows, cols, x):
        _split_rows(x, weight, y, rows, cols, al, *split)
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
        EARLY=bool(PDL_EARLY), num_warps=_warps(chunk), **({"launch_pdl": True} if pdl else {}),
    )  # fmt: skip
    return y
