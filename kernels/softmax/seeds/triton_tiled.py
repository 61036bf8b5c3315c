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
  With SHORT_ROW_TILE (on: 1024) rows of at most SHORT_ROW_MAX columns take one warp
  per program instead, at most 8 rows: the row reductions stay inside the warp.
  With HEAD_TAIL (on) a row just past a power of two h (at most h + h // 4 columns, 257 or
  4099) is a tile of h columns that are all there plus a narrow tail tile, not a tile of 2h.
  With ROW_VEC (on) rows of one program each that start off a 16-byte boundary (8191 columns)
  are read and written as an aligned body in 16-byte vectors plus scalar edges.
- cols > SINGLE_MAX and the padded row at most WHOLE_ROW_BYTES (on: 131072), with
  at least as many rows as SMs: one program of up to 32 warps per row keeps the whole row in
  registers in its input dtype (65536 bf16 = 64 values, 32 registers a thread at 1,024 threads):
  max, then the sum of exp(x - max), then exp(x - max) / sum again from the registers (a second
  exp per element instead of a float32 copy of the row, which would spill). One read of x.
- cols > SINGLE_MAX otherwise: the row is cut into CHUNK-column chunks, one program per (row, chunk), in two
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
from triton.language.extra.cuda import gdc_launch_dependents, gdc_wait

FAMILY = "triton-tiled-rows"
TUNABLES = {
    "TILE_ELEMS": [2048, 4096, 8192, 16384],
    "SINGLE_MAX": [4096, 8192, 16384],
    "CHUNK": [2048, 4096, 8192],
    "NUM_WARPS": [4, 8, 16],
    "STREAMING": [False, True],
    "PERSIST": [0, 2, 4, 8],
    "WHOLE_ROW_BYTES": [0, 65536, 131072],
    "SHORT_ROW_TILE": [0, 512, 1024, 2048],
    "ROW_SPLIT": [False, True],
    "LOOP_BLOCK": [0, 4096, 2048],
    "LOOP_WARPS": [16, 8],
    "HEAD_TAIL": [True, False],
    "ROW_VEC": [True, False],
    "PDL": [True, False],
    "CHUNK_VEC": [False, True],
    "PDL_EARLY": [False, True],
    "LONE_VEC": [False, True],
    "LONE_SPLIT": [1, 2, 4, 8],
    "TAIL_FOLD": [False, True],
    "LOOP_UNROLL": [0, 4],
    "EXP2": [False, True],
    "ROW_LOOP_BLOCK": [0, 4096, 2048],
    "ROW_LOOP_RAGGED": [False, True],
    "CHUNK_WARP_ELEMS": [1024, 2048],
    "STATS_PAIR": [False, True],
    "LONE_LOCAL": [False, True],
    "FULL_TILES": [False, True],
}
TILE_ELEMS = 8192  # elements per program in the tiled path (R rows of BC columns)
SINGLE_MAX = 8192  # longest row done in one tile; longer rows are split into chunks
CHUNK = 2048  # columns per program in the split path (4096 before PDL; see PDL)
CHUNK_WARP_ELEMS = 1024  # that path: one warp per this many columns of a chunk (2 at 2048)
STATS_PAIR = True  # that path: the apply kernel combines its row's chunk statistics in one
# reduction of (max, sum) pairs instead of a max and then a sum (`_row_stats`): sm_90 SASS at
# 2048 bf16 columns, 2 warps, 2 barriers instead of 5 (496 instructions a thread against 416:
# each combine step has two exps). It is the chain after the apply kernel's wait (the x loads
# came before it, PDL_EARLY). H200 (session 20, bench/direct.py --hold, 300 calls, two
# spellings each): 17 x 131073 bf16 9.7 -> 9.6 us (a copy: 8.9), 64 x 100000 f32 22.6 -> 21.5
# (copy 16.4): on.
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
# 65537 x 257 f32 63.6 -> 41.7 us, 1000 x 1000 bf16 6.6 -> 5.3,
# 32768 x 1024 bf16 38.3 -> 35.9; hidden geomean 12.86 -> 11.85 us (1.085x), benchmark 1.015x;
# 2048-element tiles: 65537 x 257 up to 5% faster, 1000 x 1000 up to 20% slower than 1024.
SHORT_ROW_MAX = 1024
STREAMING = False  # tiled path: loads marked evict-first, stores streaming (.cs), as data that
# is touched once; 5-18% slower on the H200 benchmark set (session 5)
PERSIST = 0  # tiled path: 0 = one program per tile; k = k programs per SM looping over the tiles
# (no tail wave, one launch's worth of programs); slower too (session 5)
WHOLE_ROW_BYTES = 131072  # rows past SINGLE_MAX whose padded length fits this many bytes: one
# program per row, the row in registers, one read of x (0: off). 2048 x 65536 bf16 is the
# benchmark shape it is for: the split path reads x twice there (3 passes of 268 MB in 220 us,
# 57% of the copy roofline, session 5). sm_90 SASS at 32 warps: f32 32768 no spills; bf16 65536
# 12 spill stores a thread (the 64 exps of the sum are live at once; a float32 copy of the row
# would be 43). H200 (session 9, bench/direct.py side by side): 2048 x 65536 bf16 224.0 ->
# 178.8 us (56.4% -> 70.7% of the copy roofline); the other benchmark shapes within 0.3%.
WHOLE_ROW_WARPS = 32  # warps of such a program (1,024 threads: at most 64 registers each)
ROW_SPLIT = False  # rows past SINGLE_MAX that are too few to fill the SMs (17 x 131073): ONE
# launch, each row over several co-resident programs that meet at a barrier to combine their
# chunks' statistics (`_softmax_row_split`), instead of two launches that read x twice. Off: no
# faster on the H200 (session 11, bench/direct.py side by side, 17 x 131073 bf16): 11.8 us
# against 11.8 at ROW_SPLIT_PER_SM = 4, 12.2 at 8, 14.0 against 11.9 at 1 (rmsnorm gained)
# Again in session 22, after EXP2 / STATS_PAIR / PDL_EARLY made the two launches faster
# (three processes, --kernel-time): 11.7 us against 9.6-9.8 (kernel 9.4 against 6.8).
ROW_SPLIT_PER_SM = 4  # programs an SM that launch assumes resident at once
SPIN_MAX = 1 << 16  # barrier polls before a program of that launch gives up (its chunk: NaN)
ROW_SPLIT_COOP = True  # that launch as a cooperative grid: every program resident, or the
# launch fails. H200 (session 16, bench/direct.py, 200 calls): 17 x 131073 bf16 12.0 us with it,
# 11.8 without, against 10.5 for the two launches with PDL (on). RMSNorm's ROW_SPLIT was slow
# through the harness's --final with it too (NOTES.md, session 16); session 17 found the two
# launches as slow there in some runs: most likely the harness at that shape, not ROW_SPLIT.
LOOP_BLOCK = 16384  # rows of LOOP_MIN_COLS to LOOP_MAX_COLS (padded) columns whose rows all
# start on a 16-byte boundary, at least as many as SMs: LOOP_PERSIST programs an SM of LOOP_WARPS
# warps walk the rows (`_softmax_loop`), each row twice in LOOP_BLOCK-column steps: a running max
# and sum of exp(x - max) per 16-byte group of columns, rescaled as the max grows (online
# softmax), then exp(x - max) / sum, the second read mostly from L2 (the first pass's loads
# evict-last, the second's evict-first; with two programs an SM at most 264 rows, 34 MB at
# 65536 bf16, are between their passes). It replaces the whole-row program there, whose 64
# values a thread spill at 65536 bf16 (sm_90: 64 registers, 48 B of stack). H200 (session 17):
# 2048 x 65536 bf16 bench/direct.py 178.3-179.8 -> 164.2-166.1 us (a copy: 128.4), the
# harness's --final 177.09 -> 164.38 (median). Lost: one program a row (207.8), one program an
# SM (182.6-202.1), 16 warps with 2 or 4 an SM (181.9, 190.3), 8192-column steps (172.8), the
# walks rotated by row (LOOP_SKEW: 178.0-178.4); the second walk backwards (LOOP_BACK) within
# noise (164.2 against 166.1); 1024 x 32768 f32, where the whole row does not spill (74.2
# against 81.0-81.8): hence LOOP_MIN_COLS. Before
# session 17 it kept a max per element (two exps an element) and one program a row: 8192 x
# 8192 bf16 118 us against the tile's 69, 2048 x 65536 204-211 against 178
HEAD_TAIL = True  # tiled path, rows just past a power of two h (h + at most h // 4 columns):
# a head tile of h columns with no column masked and a narrow tail tile for the rest
# (`_softmax_head_tail`), instead of one tile of 2h columns, half of it padding (257 columns:
# 512-wide tiles, 255 lanes of them idle). One division a row instead of one an element.
# sm_90 SASS at 65537 x 257 f32: 42 -> 22 instructions a useful element. H200 (session 16,
# bench/direct.py side by side): 65537 x 257 f32 41.8 -> 37.5 us (a copy of x: 37.9), 1 x 4099
# 5.1 -> 4.8, 3 x 17 3.7 -> 3.6; shapes it does not take unchanged.
ROW_VEC = True  # tiled path, rows of ROW_VEC_MIN to TILE_ELEMS (padded) columns, one a
# program, that start off a 16-byte boundary (7777 x 8191 bf16: row r starts r * 16382 bytes
# in): the row's aligned body in 16-byte vectors and its edges one by one (`_softmax_row_vec`),
# instead of 2-byte / 4-byte scalars for the whole row. sm_90 SASS at 8191 bf16: LDG.E.128 x4
# instead of LDG.E.U16 x32, 576 instructions a thread instead of 784. H200 (session 16,
# bench/direct.py side by side): 7777 x 8191 bf16 86.4 -> 68.4 us (a copy of x: 66.9).
ROW_VEC_MIN = 2048
PDL = True  # split path on a GPU: the apply kernel is launched as a programmatic dependent
# launch (sm_90): it may start while the first kernel runs and waits in `gdc_wait` for that
# grid's end, so the second launch's gap overlaps the first kernel (17 x 131073: two launches
# of ~4 us each, where a copy of x takes 8-11 us). H200 (session 16), 17 x 131073 bf16 with
# CHUNK = 2048: bench/direct.py 12.1 -> 10.7 us (both orders; CHUNK = 2048 alone 11.7), the
# harness's --final 12.90 -> 11.46 us (median). RMSNorm's split path gained nothing from it.
PDL_EARLY = True  # split path: the apply kernel loads its chunk of x before it waits for the
# statistics kernel (x is an input, not that kernel's output), so with PDL the loads overlap it
# (17 x 131073). sm_90 PTX: the loads come before `griddepcontrol.wait` (44 registers against
# 32). H200 (session 19, bench/direct.py --hold, 200 calls): 17 x 131073 bf16 10.4 -> 10.3-10.4
# us, no gain (RMSNorm's gained 1 us): off then. With EXP2 (session 20, 300 calls, two
# spellings each): 17 x 131073 bf16 9.06 -> 8.78 us (a copy: 7.8), 64 x 100000 f32 24.7 ->
# 23.6, 33 x 65536 bf16 9.44 -> 9.31; call 2 of that session saw 10.2 both ways: on.
TAIL_FOLD = False  # tiled path with a head and tail and fewer tiles than SMs (1 x 4099): the
# tail is a tile as wide as the head, masked past the row, so each reduction covers head and
# tail at once (a lone row is latency: each cross-warp reduction is two barriers). Lost on the
# H200 (session 19, 1 x 4099 f32 with LONE_VEC: 4.3 -> 4.9 us): the masked tail is scalar, and
# twice the exps and registers. Off.
LONE_SPLIT = 4  # tiled path, a lone row with a head and a tail (1 x 4099, `_lone_split`): this many
# programs each load and reduce the whole row and store 1/LONE_SPLIT of it, so its stores leave
# from that many SMs with no second launch or grid barrier (1: one program). H200 (session 23,
# bench/direct.py --hold --rounds 3, four processes, the seeds' body as a diagnostic, K = 1-16):
# 1 x 4099 f32 kernel 2.05 -> 1.89 us, 80-83% -> 84-85% of a copy; bf16 ties; 8 and 16 programs
# lose the gain again. In the seed (call 3, two processes): f32 2.08 -> 1.89-1.92 us of kernel,
# 82.6-82.7% -> 83.3-83.8%; bf16 1.92 -> 1.82-1.86. On.
LONE_VEC = True  # tiled path, a lone row (rows == 1, 1 x 4099): its strides are passed as 0, which
# Triton specializes as divisible by 16, so the head tile's loads and stores (no column mask) are
# 16-byte vectors; the real stride (4099) is not, and made them 4-byte / 2-byte scalars (16 LDG a
# thread at f32 instead of 4). Only row 0 exists, so the stride is never used. H200 (session 19,
# bench/direct.py --hold, 200 calls, both orders): 1 x 4099 f32 4.4 -> 4.3 us (a copy: 3.5; a
# Triton copy of the row 3.6, with a max and a sum 4.3): on.
FULL_TILES = True  # tiled path, rows that load as 2-byte scalars (`_full_tiles`): a tile whose R
# rows are all there (every tile but a ragged last one) takes a second copy of the body with no
# row mask, so its loads and stores are not predicated. sm_90 SASS, 65537 x 257 bf16 (4 rows a
# warp, 256 + 1): 696 -> ~616 instructions. H200 (session 22, bench/direct.py side by side):
# 65537 x 257 bf16 25.7 -> 25.0 us (kernel 23.52 -> 22.69; a copy of x 23.3); 65537 x 257 f32
# (4-byte scalars) 37.3 -> 37.6 and 37.1 -> 37.6, 1000 x 1000 bf16 (vectors) 5.1 -> 5.2; hence
# the rule.
LONE_LOCAL = False  # tiled path, a lone row with a head and a tail (1 x 4099): `_softmax_lone`,
# each thread's max and sum kept in the thread, then two cross-thread reductions (a max, a sum
# of rescaled sums) instead of four. sm_90 SASS, 1 x 4099 f32: 5 BAR.SYNC and 248 instructions,
# not 8 and 296. Lost on the H200 all the same (session 21, bench/direct.py --hold --rounds 6,
# 1,800 calls, two spellings of each): 1 x 4099 f32 4.4 -> 5.2 us, bf16 4.3 -> 4.6 (a copy:
# 3.6 / 3.7); at 16 or 32 warps 4.9 / 4.4 against 4.2 (call 2). Kernel time alone (CUPTI): 2.85
# against 2.05 us. A lone row's time is not its barriers (session 19's 1-D diagnostic: the
# same). Off.
CHUNK_VEC = True  # split path, rows that start off a 16-byte boundary (17 x 131073): chunks
# cut the row's aligned body, read and written in 16-byte vectors, and chunk 0 also takes the
# edges one by one (ROW_VEC's layout), instead of 2-byte / 4-byte scalars everywhere. H200
# (session 17, bench/direct.py side by side, 200 calls): 17 x 131073 bf16 10.7 -> 9.8 us (a
# copy of x: 8.2), and 10.5 -> 9.6 with the arena's hold as the launch slack (--hold).
LOOP_MIN_COLS = 65536
LOOP_MAX_COLS = 65536
LOOP_WARPS = 32
LOOP_PERSIST = 0  # that path: 0 = one program a row; k = k programs an SM walking the rows, so
# at most k rows an SM are between their two passes (what the second pass needs from L2). 2
# until session 19: with LOOP_UNROLL one program a row is faster (below)
LOOP_SKEW = 0  # that path: row r starts its walks at step r * LOOP_SKEW (mod its steps), so
# rows in flight together do not all read the same offset (rows of 2**k bytes: one address
# pattern); 0: every row from its start
LOOP_UNROLL = 4  # that path: rows of exactly k full steps, k <= LOOP_UNROLL, are walked
# unrolled and unmasked (the step count a compile-time constant), so every step's loads can be
# issued before the first step's arrive (RMSNorm's LOOP_UNROLL). H200 (session 19, bench/direct.py
# --hold side by side), 2048 x 65536: bf16 163.9 -> 146.1 us with one program a row (162.0 at
# two an SM, 177.0 at one; one a row not unrolled 153.8), f32 302.1 -> 290.8 (copy 128.6 /
# 256.0); the harness's --final (call 2): 146.08 (bf16). 8192-column steps (8 of them)
# lost (166.0-178.7). On, 4, with LOOP_PERSIST = 0.
LOOP_BACK = False  # that path: the second walk from the row's end back to its start
ROW_LOOP_BLOCK = 4096  # rows of ROW_LOOP_MIN_COLS to ROW_LOOP_MAX_COLS (padded) columns, at most
# SINGLE_MAX, that all start on a 16-byte boundary: the looped walk (`_softmax_loop`, with
# LOOP_UNROLL, LOOP_SKEW and LOOP_BACK) in ROW_LOOP_BLOCK-column steps of ROW_LOOP_WARPS warps,
# one program a row, instead of a one-row tile (0: off). The walk's second read comes from L2;
# the tile holds the row in registers, 32 values a thread at 8192 columns in 8 warps. RMSNorm's
# LOOP_* is the same walk at the same rows. H200 (session 20, bench/direct.py --hold side by
# side, 100 calls, with EXP2, two runs): 8192 x 8192 bf16 68.7-69.1 -> 66.9-67.0 us, f32
# 132.7-133.2 -> 128.5-128.6 (a copy: 66.5 / 128.6-129.5), 17 x 8192 f32 5.1-5.2 -> 4.9;
# without EXP2 bf16 lost (68.7 -> 70.4: the walk's exps are twice the tile's). Lost, so not
# taken: ragged rows (4096 x 6144 bf16 28.5 -> 39.9 in the runtime loop, 30.8 in 2048-column
# steps), 4096-column rows (4096 x 4096 bf16 20.9 -> 24.7, 4099 x 3000 f32 28.2 -> 31.2)
ROW_LOOP_RAGGED = False  # that walk also takes rows that are not whole unrolled steps (the
# runtime loop, a masked last step): lost (4096 x 6144 bf16 above), as in RMSNorm's LOOP_RAGGED
ROW_LOOP_MIN_COLS = 8192
ROW_LOOP_MAX_COLS = 8192
ROW_LOOP_WARPS = 16
EXP2 = True  # tiled, looped and split paths: exp(x - max) as exp2((x - max) log2 e) and a
# product by 1 / sum instead of a division an element (`_exp`, `_norm`). sm_90 SASS: tl.exp is
# `ex2.approx.f32`, which keeps subnormal results through a compare and two multiplies around
# each MUFU.EX2; tl.exp2 compiles to the `.ftz` form, one MUFU.EX2 and nothing else. At 17 x
# 131073 bf16 (the split path, every SM's exps at once after the loads arrive) the apply kernel
# was 600 instructions a thread for 32 elements, the statistics kernel 504; with EXP2 432 and
# 400 (the 8192 bf16 tile 568 -> 408, the 65536 bf16 walk 1416 -> 1000). H200 (session 20,
# bench/direct.py --hold side by side, 200 calls): 17 x 131073 bf16 9.4 -> 9.0 us (a copy:
# 7.8), 7777 x 8191 bf16 67.9 -> 65.1 (copy 65.7), 2048 x 65536 bf16 146.4 -> 145.4; 8192^2,
# 32768 x 1024, 65537 x 257 and 1 x 4099 within 0.2. On.
# Tried and removed (H200, BENCHMARKS.md session 6): the split path slab by slab so its second
# read comes from L2 (2.2-7.5x slower at 2048 x 65536), and odd-length rows read through an
# aligned vector window (0.68-0.78x at 65537 x 257 f32 and 7777 x 8191 bf16).
# Session 16 (H200, bench/direct.py side by side, 2048 x 65536 bf16): the whole-row programs as
# one persistent program an SM that prefetches its next row into L2 (`prefetch.global.L2::
# evict_last`, no registers) before working on this one: 178.8 -> 229.5 us (slower; the
# one-a-row launch keeps a program starting on every SM the moment one ends).


@triton.jit
def _exp(d, EX: tl.constexpr):
    """exp(d) for d = x - max <= 0. EX (EXP2): as exp2(d * log2 e), which compiles to one
    `ex2.approx.ftz.f32`; tl.exp compiles to `ex2.approx.f32`, which keeps subnormal results at
    the cost of a compare and two multiplies an element around it (sm_90 SASS). A softmax's
    exps below 2**-126 are zero within any tolerance. d is formed before the scaling (not
    x log2 e - max log2 e, one FFMA) so a large max does not cost digits: x - max is exact when
    x is near max."""
    if EX:
        return tl.exp2(d * 1.4426950408889634)
    return tl.exp(d)


@triton.jit
def _norm(e, total, EX: tl.constexpr):
    """e / total; with EX (EXP2) e * (1 / total): one reciprocal a row, not a division an element
    (within the tolerance: one rounding more)."""
    if EX:
        return e * (1.0 / total)
    return e / total


@triton.jit
def _softmax_tile_rows(
    x_ptr, y_ptr, t, rows, cols, stride_x, stride_y,
    R: tl.constexpr, BC: tl.constexpr, EV: tl.constexpr, CM: tl.constexpr, AL: tl.constexpr,
    EX: tl.constexpr, RM: tl.constexpr,
):  # fmt: skip
    """Tile t: rows t*R .. t*R+R-1. EX (EXP2): `_exp`'s exp2, and a product by 1 / sum. RM: rows
    masked (off: the caller checked that all R rows are there)."""
    if AL > 1:  # row starts and the row length are multiples of AL (host-checked); the no-op
        # `// AL * AL` tells the compiler so (tl.multiple_of does not reach an argument): vectors
        cols = cols // AL * AL
        stride_x = stride_x // AL * AL
        stride_y = stride_y // AL * AL
    r = (t * R + tl.arange(0, R)).to(tl.int64)
    c = tl.arange(0, BC)
    mask = ((r[:, None] < rows) if RM else True) & (c[None, :] < cols)
    x = tl.load(
        x_ptr + r[:, None] * stride_x + c[None, :],
        mask=mask,
        other=-float("inf"),
        eviction_policy=EV,
    )
    x = x.to(tl.float32)
    m = tl.max(x, axis=1)
    m = tl.where(m == -float("inf"), 0.0, m)  # padding rows: keep exp finite (not stored)
    e = _exp(x - m[:, None], EX)
    den = tl.sum(e, axis=1)
    den = tl.where(den == 0.0, 1.0, den)  # padding rows again
    y = _norm(e, den[:, None], EX)
    yp = y_ptr + r[:, None] * stride_y + c[None, :]
    tl.store(yp, y.to(y_ptr.dtype.element_ty), mask=mask, cache_modifier=CM)


@triton.jit
def _softmax_head_tail(
    x_ptr, y_ptr, t, rows, cols, stride_x, stride_y,
    R: tl.constexpr, BC: tl.constexpr, EV: tl.constexpr, CM: tl.constexpr, AL: tl.constexpr,
    BT: tl.constexpr, FOLD: tl.constexpr, EX: tl.constexpr, RM: tl.constexpr,
    SPL: tl.constexpr,
):  # fmt: skip
    """Rows t*R .. t*R+R-1 as a head of BC columns (a power of two no longer than the row: no
    column masked) and a tail of the cols - BC that remain (at most BT): for rows just past a
    power of two (257 = 256 + 1), which a next_pow2 tile pads to twice their length, so half its
    lanes load, exponentiate and store nothing. Divides once per row. FOLD (TAIL_FOLD): the tail
    is a tile as wide as the head (masked past the row), so each of the max and the sum is one
    reduction over both instead of two (half the cross-warp barriers). RM: rows masked (off: the
    caller checked that all R rows are there, and the head loads and stores are unpredicated).
    SPL > 1 (LONE_SPLIT): SPL programs each load and reduce the whole tile and store 1/SPL of the
    head, the last of them also the tail."""
    if AL > 1:  # as in _softmax_tile_rows: vector loads where the host checked alignment
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
        xh = tl.load(xrow + c[None, :], mask=rmask, other=-float("inf"), eviction_policy=EV)
    else:
        xh = tl.load(xrow + c[None, :], eviction_policy=EV)
    xt = tl.load(xrow + ct[None, :], mask=tmask, other=-float("inf"), eviction_policy=EV)
    xh = xh.to(tl.float32)
    xt = xt.to(tl.float32)
    if FOLD:
        m = tl.max(tl.maximum(xh, xt), axis=1)
    else:
        m = tl.maximum(tl.max(xh, axis=1), tl.max(xt, axis=1))
    m = tl.where(m == -float("inf"), 0.0, m)  # padding rows: keep exp finite (not stored)
    eh = _exp(xh - m[:, None], EX)
    et = _exp(xt - m[:, None], EX)
    if FOLD:
        den = tl.sum(eh + et, axis=1)
    else:
        den = tl.sum(eh, axis=1) + tl.sum(et, axis=1)
    inv = 1.0 / tl.where(den == 0.0, 1.0, den)
    yrow = y_ptr + r[:, None] * stride_y
    ty = y_ptr.dtype.element_ty
    if SPL > 1:  # LONE_SPLIT: this program's 1/SPL of the head (and the tail if it is the last)
        sp = tl.program_id(0) % SPL
        hmask = (c[None, :] // (BC // SPL)) == sp
        if RM:
            hmask = hmask & rmask
        tmask = tmask & (sp == SPL - 1)
        tl.store(yrow + c[None, :], (eh * inv[:, None]).to(ty), mask=hmask, cache_modifier=CM)
    elif RM:
        tl.store(yrow + c[None, :], (eh * inv[:, None]).to(ty), mask=rmask, cache_modifier=CM)
    else:
        tl.store(yrow + c[None, :], (eh * inv[:, None]).to(ty), cache_modifier=CM)
    tl.store(yrow + ct[None, :], (et * inv[:, None]).to(ty), mask=tmask, cache_modifier=CM)


@triton.jit
def _softmax_lone(
    x_ptr, y_ptr, cols,
    A: tl.constexpr, T: tl.constexpr, V: tl.constexpr, KT: tl.constexpr, EX: tl.constexpr,
):  # fmt: skip
    """LONE_LOCAL: a lone row as a head of A * T * V columns (no mask) and a tail of KT * T * V
    (masked), both loaded as [slab, thread, vector] tensors so each of the T threads keeps its
    own slabs and vector lanes: its max and its sum of exp(x - its max) need no other thread.
    Then one cross-thread max M, one cross-thread sum S of each thread's sum rescaled by
    exp(its max - M), and y = exp(x - its max) * (exp(its max - M) / S): two cross-thread
    reductions and one exp an element, where the [1, BC] head and tail tiles took four
    reductions (a max and a sum each over the head and over the tail)."""
    HW: tl.constexpr = A * T * V
    k = tl.arange(0, T)[None, :, None] * V + tl.arange(0, V)[None, None, :]
    ch = tl.arange(0, A)[:, None, None] * (T * V) + k
    ct = HW + tl.arange(0, KT)[:, None, None] * (T * V) + k
    tmask = ct < cols
    xh = tl.load(x_ptr + ch).to(tl.float32)
    xt = tl.load(x_ptr + ct, mask=tmask, other=-float("inf")).to(tl.float32)
    mt = tl.maximum(tl.max(tl.max(xh, axis=2), axis=0), tl.max(tl.max(xt, axis=2), axis=0))
    mt = tl.where(mt == -float("inf"), 0.0, mt)  # a thread of -inf only: keep exp finite
    eh = _exp(xh - mt[None, :, None], EX)
    et = _exp(xt - mt[None, :, None], EX)
    st = tl.sum(tl.sum(eh, axis=2), axis=0) + tl.sum(tl.sum(et, axis=2), axis=0)
    m = tl.max(mt, axis=0)
    sc = _exp(mt - m, EX)
    den = tl.sum(st * sc, axis=0)
    f = sc * (1.0 / tl.where(den == 0.0, 1.0, den))
    ty = y_ptr.dtype.element_ty
    tl.store(y_ptr + ch, (eh * f[None, :, None]).to(ty))
    tl.store(y_ptr + ct, (et * f[None, :, None]).to(ty), mask=tmask)


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
def _softmax_row_vec(
    x_ptr, y_ptr, cols, stride, BC: tl.constexpr, V: tl.constexpr, EX: tl.constexpr
):  # fmt: skip
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
    eb = _exp(xb - m, EX)
    ee = _exp(xe - m, EX)
    inv = 1.0 / (tl.sum(eb, axis=0) + tl.sum(ee, axis=0))
    ty = y_ptr.dtype.element_ty
    tl.store(y_ptr + b0 + c, (eb * inv).to(ty), mask=mb)
    tl.store(y_ptr + s0 + ce, (ee * inv).to(ty), mask=me)


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
def _softmax_loop(
    x_ptr, y_ptr, rows, cols, stride_x, stride_y, BLOCK: tl.constexpr, AL: tl.constexpr,
    PERSIST: tl.constexpr, SKEW: tl.constexpr, BACK: tl.constexpr, NB: tl.constexpr,
    EX: tl.constexpr,
):  # fmt: skip
    """One row per program, walked twice in BLOCK-column steps (LOOP_BLOCK): a running max per
    group of AL neighbouring columns (one 16-byte vector, so the group's max stays in one
    thread) and per group a sum of exp(x - max), rescaled when the max grows (one exp a group,
    not one an element), combined at the end; then exp(x - M) * (1 / S). With PERSIST
    (LOOP_PERSIST) a fixed set of programs walks the rows, one after another. SKEW (LOOP_SKEW):
    row r starts its walks at step r * SKEW (mod the steps); BACK (LOOP_BACK): the second walk
    goes backwards, from the steps the first read last (the likeliest still in L2). NB > 0
    (LOOP_UNROLL): the row is exactly NB full steps, walked unrolled and unmasked, in order (every
    step's loads can be issued before the first step's arrive)."""
    if AL > 1:  # as in _softmax_tile_rows: vector loads where the host checked alignment
        cols = cols // AL * AL
        stride_x = stride_x // AL * AL
        stride_y = stride_y // AL * AL
    G: tl.constexpr = AL
    start, step = tl.program_id(0), 1
    if PERSIST:
        step = tl.num_programs(0)
    nb = tl.cdiv(cols, BLOCK)
    for r in range(start, rows if PERSIST else start + 1, step):
        row = tl.cast(r, tl.int64)
        sh = (r * SKEW) % nb
        xr = x_ptr + row * stride_x
        yr = y_ptr + row * stride_y
        m = tl.full([BLOCK // G], -float("inf"), tl.float32)
        s = tl.zeros([BLOCK // G], tl.float32)
        cg = tl.arange(0, BLOCK // G)[:, None] * G + tl.arange(0, G)[None, :]
        if NB > 0:
            for i in tl.static_range(NB):
                x = tl.load(xr + i * BLOCK + cg, eviction_policy="evict_last").to(tl.float32)
                m, s = _group_update(m, s, x, EX)
        else:
            for c0 in range(0, cols, BLOCK):
                c = _walk(c0, nb, sh, BLOCK, SKEW, False) + cg
                x = tl.load(
                    xr + c, mask=c < cols, other=-float("inf"), eviction_policy="evict_last"
                )
                m, s = _group_update(m, s, x.to(tl.float32), EX)
        mx = tl.max(m, axis=0)
        inv = 1.0 / tl.sum(tl.where(m > -float("inf"), s * _exp(m - mx, EX), 0.0), axis=0)
        ty = y_ptr.dtype.element_ty
        if NB > 0:
            for i in tl.static_range(NB):
                c = i * BLOCK + tl.arange(0, BLOCK)
                x = tl.load(xr + c, eviction_policy="evict_first")
                tl.store(yr + c, (_exp(x.to(tl.float32) - mx, EX) * inv).to(ty))
        else:
            for c0 in range(0, cols, BLOCK):
                c = _walk(c0, nb, sh, BLOCK, SKEW, BACK) + tl.arange(0, BLOCK)
                mask = c < cols
                x = tl.load(xr + c, mask=mask, other=0.0, eviction_policy="evict_first")
                y = _exp(x.to(tl.float32) - mx, EX) * inv
                tl.store(yr + c, y.to(ty), mask=mask)


@triton.jit
def _group_update(m, s, x, EX: tl.constexpr):
    """The looped walk's running (max, sum of exp(x - max)) per group of columns (a row of x),
    after one more step x: one exp an element, the sum rescaled when the max grows."""
    m_new = tl.maximum(m, tl.max(x, axis=1))
    # a group that has seen only padding keeps max -inf and sum 0 (no inf - inf)
    seen = m_new > -float("inf")
    e = tl.sum(_exp(x - m_new[:, None], EX), axis=1)
    s = tl.where(seen, s * _exp(m - m_new, EX) + e, 0.0)
    return m_new, s


@triton.jit
def _softmax_tile(
    x_ptr, y_ptr, rows, cols, stride_x, stride_y, ntiles,
    R: tl.constexpr, BC: tl.constexpr, EV: tl.constexpr, CM: tl.constexpr, LOOP: tl.constexpr,
    AL: tl.constexpr, BT: tl.constexpr, FOLD: tl.constexpr, EX: tl.constexpr,
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
                _softmax_tile_any(
                    x_ptr, y_ptr, t, rows, cols, stride_x, stride_y, R, BC, EV, CM, AL, BT, FOLD,
                    EX, False, SPL,
                )  # fmt: skip
            else:
                _softmax_tile_any(
                    x_ptr, y_ptr, t, rows, cols, stride_x, stride_y, R, BC, EV, CM, AL, BT, FOLD,
                    EX, True, SPL,
                )  # fmt: skip
        else:
            _softmax_tile_any(
                x_ptr, y_ptr, t, rows, cols, stride_x, stride_y, R, BC, EV, CM, AL, BT, FOLD, EX,
                True, SPL,
            )  # fmt: skip


@triton.jit
def _softmax_tile_any(
    x_ptr, y_ptr, t, rows, cols, stride_x, stride_y,
    R: tl.constexpr, BC: tl.constexpr, EV: tl.constexpr, CM: tl.constexpr, AL: tl.constexpr,
    BT: tl.constexpr, FOLD: tl.constexpr, EX: tl.constexpr, RM: tl.constexpr, SPL: tl.constexpr,
):  # fmt: skip
    if BT > 0:  # HEAD_TAIL
        _softmax_head_tail(
            x_ptr, y_ptr, t, rows, cols, stride_x, stride_y, R, BC, EV, CM, AL, BT, FOLD, EX, RM,
            SPL,
        )  # fmt: skip
    else:
        _softmax_tile_rows(
            x_ptr, y_ptr, t, rows, cols, stride_x, stride_y, R, BC, EV, CM, AL, EX, RM
        )  # fmt: skip


@triton.jit
def _chunk_stats(
    x_ptr, m_ptr, s_ptr, cols, stride_x, nchunks, CHUNK: tl.constexpr, AL: tl.constexpr,
    PDL: tl.constexpr, V: tl.constexpr, EX: tl.constexpr,
):  # fmt: skip
    """Chunk program_id(1) of row program_id(0): its max and its sum of exp(x - max). V > 0
    (CHUNK_VEC): chunks cut the row's aligned body (as in `_softmax_row_vec`), and chunk 0 also
    takes the edges before and after it."""
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
        se = tl.sum(_exp(x - m, EX), axis=0) + tl.sum(_exp(xe - m, EX), axis=0)
        s = tl.where(m == -float("inf"), 0.0, se)
    else:
        x = tl.load(x_ptr + row * stride_x + c, mask=c < cols, other=-float("inf"))
        x = x.to(tl.float32)
        m = tl.max(x, axis=0)
        s = tl.where(m == -float("inf"), 0.0, tl.sum(_exp(x - m, EX), axis=0))
    tl.store(m_ptr + row * nchunks + ch, m)
    tl.store(s_ptr + row * nchunks + ch, s)


@triton.jit
def _pair(m1, s1, m2, s2):
    """Two (max, sum of exp(x - max)) into one; a side that saw no column has max -inf, sum 0
    (its scale is exp(0) there, never exp(-inf - -inf))."""
    m = tl.maximum(m1, m2)
    d1 = tl.where(m1 == m, 0.0, m1 - m)
    d2 = tl.where(m2 == m, 0.0, m2 - m)
    return m, s1 * _exp(d1, True) + s2 * _exp(d2, True)


@triton.jit
def _row_stats(
    m_ptr, s_ptr, row, nchunks, NCH: tl.constexpr, EX: tl.constexpr, PAIR: tl.constexpr
):  # fmt: skip
    """(M, S) of a row from its chunks' (max, sum of exp(x - max)): the row's max and sum.
    PAIR (STATS_PAIR): one reduction of the pairs (`_pair`), not a max and then a sum (half the
    cross-warp barriers; more exps, over NCH values)."""
    k = tl.arange(0, NCH)
    mc = tl.load(m_ptr + row * nchunks + k, mask=k < nchunks, other=-float("inf"))
    sc = tl.load(s_ptr + row * nchunks + k, mask=k < nchunks, other=0.0)
    if PAIR:
        return tl.reduce((mc, sc), 0, _pair)
    big = tl.max(mc, axis=0)
    total = tl.sum(tl.where(mc == -float("inf"), 0.0, sc * _exp(mc - big, EX)), axis=0)
    return big, total


@triton.jit
def _chunk_apply(
    x_ptr, y_ptr, m_ptr, s_ptr, cols, stride_x, stride_y, nchunks,
    CHUNK: tl.constexpr, NCH: tl.constexpr, AL: tl.constexpr, PDL: tl.constexpr,
    V: tl.constexpr, EARLY: tl.constexpr, EX: tl.constexpr, PAIR: tl.constexpr,
):  # fmt: skip
    """Chunk program_id(1) of row program_id(0): exp(x - M) / S from its row's statistics. V > 0
    (CHUNK_VEC): the chunks of `_chunk_stats` with V, x and y sharing the stride. EARLY
    (PDL_EARLY): x is loaded before the wait for the statistics kernel (x is an input, not its
    output), so with PDL the loads overlap that kernel."""
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
            x = tl.load(x_ptr + b0 + c, mask=mb, other=-float("inf")).to(tl.float32)
            xe = tl.load(x_ptr + s0 + ce, mask=me, other=-float("inf")).to(tl.float32)
        if PDL:  # launched early: wait until the statistics kernel is done and its stores visible
            gdc_wait()
        big, total = _row_stats(m_ptr, s_ptr, row, nchunks, NCH, EX, PAIR)
        if not EARLY:
            x = tl.load(x_ptr + b0 + c, mask=mb, other=-float("inf")).to(tl.float32)
        tl.store(y_ptr + b0 + c, _norm(_exp(x - big, EX), total, EX).to(ty), mask=mb)
        if not EARLY:
            xe = tl.load(x_ptr + s0 + ce, mask=me, other=-float("inf")).to(tl.float32)
        tl.store(y_ptr + s0 + ce, _norm(_exp(xe - big, EX), total, EX).to(ty), mask=me)
    else:
        mask = c < cols
        if EARLY:
            x = tl.load(x_ptr + row * stride_x + c, mask=mask, other=-float("inf"))
        if PDL:
            gdc_wait()
        big, total = _row_stats(m_ptr, s_ptr, row, nchunks, NCH, EX, PAIR)
        if not EARLY:
            x = tl.load(x_ptr + row * stride_x + c, mask=mask, other=-float("inf"))
        y = _norm(_exp(x.to(tl.float32) - big, EX), total, EX)
        tl.store(y_ptr + row * stride_y + c, y.to(ty), mask=mask)


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
    # m digits (an offset of 1000: 1e-4 relative error in float32, 10x the tolerance)
    y = tl.exp2((m - xr.to(tl.float32)) * -1.4426950408889634) * (1.0 / den)
    tl.store(y_ptr + row * stride_y + c, y.to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _softmax_row_split(
    x_ptr, y_ptr, st_ptr, cnt_ptr, cols, stride_x, stride_y, nsplit, spin_max,
    BC: tl.constexpr, PP: tl.constexpr, AL: tl.constexpr,
):  # fmt: skip
    """Row program_id(0) over nsplit co-resident programs in ONE launch (ROW_SPLIT): program p
    keeps columns [p * BC, (p + 1) * BC) in registers, publishes its chunk's max and sum of exp,
    meets the row's other programs at a barrier (a counter, release / acquire, at most spin_max
    polls: a program that gave up writes NaN, never a plausible wrong row), combines the
    statistics in the same order as every other program of the row, and writes its chunk. The
    last program out zeroes the row's counters for the next call. One read of x."""
    if AL > 1:  # as in _softmax_tile_rows: vector loads where the host checked alignment
        cols = cols // AL * AL
        stride_x = stride_x // AL * AL
        stride_y = stride_y // AL * AL
    row = tl.program_id(0).to(tl.int64)
    p = tl.program_id(1)
    c = p * BC + tl.arange(0, BC)
    mask = c < cols
    xr = tl.load(x_ptr + row * stride_x + c, mask=mask, other=-float("inf"))
    m = tl.max(xr.to(tl.float32), axis=0)
    s = tl.sum(tl.exp(xr.to(tl.float32) - m), axis=0)  # every chunk holds a column: m finite
    sb = st_ptr + row * (2 * PP)
    tl.store(sb + p, m)
    tl.store(sb + PP + p, s)
    tl.debug_barrier()
    cnt = cnt_ptr + row * 2
    tl.atomic_add(cnt, 1, sem="release", scope="gpu")
    spins = 0
    while (tl.atomic_add(cnt, 0, sem="acquire", scope="gpu") < nsplit) & (spins < spin_max):
        spins += 1
    tl.debug_barrier()
    k = tl.arange(0, PP)
    # .cg: from L2, never a stale L1 line (other SMs wrote these)
    mc = tl.load(sb + k, mask=k < nsplit, other=-float("inf"), cache_modifier=".cg")
    sc = tl.load(sb + PP + k, mask=k < nsplit, other=0.0, cache_modifier=".cg")
    big = tl.max(mc, axis=0)
    total = tl.sum(tl.where(k < nsplit, sc * tl.exp(mc - big), 0.0), axis=0)
    total = tl.where(spins >= spin_max, float("nan"), total)
    # exp again from the registers, written as in _softmax_whole_row (no float32 copy kept)
    y = tl.exp2((big - xr.to(tl.float32)) * -1.4426950408889634) * (1.0 / total)
    tl.store(y_ptr + row * stride_y + c, y.to(y_ptr.dtype.element_ty), mask=mask)
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
    """LONE_LOCAL: (A, T, V, KT) of `_softmax_lone` for a lone row with a head of bc and a tail
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


def _looped(rows: int, bc: int, al: int, x: torch.Tensor) -> bool:
    """The looped path (LOOP_BLOCK): rows of LOOP_MIN_COLS to LOOP_MAX_COLS padded columns that
    all start on a 16-byte boundary, and with LOOP_PERSIST or past SINGLE_MAX at least as many
    rows as SMs (fewer would leave SMs idle: the split path spreads a row over several)."""
    few = rows < _sm_count(x.device)
    return (
        bool(LOOP_BLOCK)
        and LOOP_MIN_COLS <= bc <= LOOP_MAX_COLS
        and al * x.element_size() == 16
        and not (few and (LOOP_PERSIST or bc > SINGLE_MAX))
    )


def _unrolled(cols: int, block: int) -> int:
    """NB of `_softmax_loop`: the steps of a row LOOP_UNROLL walks unrolled (whole block-column
    steps, at most LOOP_UNROLL, walked in order: no LOOP_SKEW or LOOP_BACK), else 0."""
    nb = cols // block
    return 0 if cols % block or nb > LOOP_UNROLL or LOOP_SKEW or LOOP_BACK else nb


def _row_looped(cols: int, bc: int, al: int, x: torch.Tensor) -> bool:
    """The looped walk for rows of at most SINGLE_MAX (ROW_LOOP_*): ROW_LOOP_MIN_COLS to
    ROW_LOOP_MAX_COLS padded columns, every row on a 16-byte boundary, walked unrolled (whole
    steps: the runtime loop over a ragged row lost to the tile, 4096 x 6144 bf16 28.5 -> 39.9
    us on the H200) unless ROW_LOOP_RAGGED; one program a row, so any row count (as the tile
    it replaces)."""
    return (
        bool(ROW_LOOP_BLOCK)
        and ROW_LOOP_MIN_COLS <= bc <= min(ROW_LOOP_MAX_COLS, SINGLE_MAX)
        and al * x.element_size() == 16
        and (ROW_LOOP_RAGGED or _unrolled(cols, min(ROW_LOOP_BLOCK, bc)) > 0)
    )


def _walk_plan(rows: int, cols: int, bc: int, al: int, x: torch.Tensor) -> tuple | None:
    """(step columns, warps, programs an SM or 0 for one a row) of `_softmax_loop` for these
    rows: the wide walk (LOOP_*), the row walk (ROW_LOOP_*), or None (another path)."""
    if _looped(rows, bc, al, x):
        return min(LOOP_BLOCK, bc), LOOP_WARPS, LOOP_PERSIST
    if _row_looped(cols, bc, al, x):
        return min(ROW_LOOP_BLOCK, bc), ROW_LOOP_WARPS, 0
    return None


def _programs(n: int, device: torch.device, persist: int) -> int:
    """Programs of a launch over n tiles or rows: one each, or `persist` an SM walking them
    (the tiled path's PERSIST, the walks' LOOP_PERSIST; 1 SM in the interpreter)."""
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
    """Two int32 counters per row for `_softmax_row_split`, zero between calls (its last
    program resets them), one buffer per (device, stream): calls on one stream never overlap."""
    key = (device, torch.cuda.current_stream(device).cuda_stream if device.type == "cuda" else 0)
    buf = _COUNTERS.get(key)
    if buf is None or buf.numel() < 2 * rows:
        buf = _COUNTERS[key] = torch.zeros(max(2 * rows, 256), dtype=torch.int32, device=device)
    return buf


def _split_rows(x, y, rows, cols, al, bc, nsplit, spin_max=None):
    pp = max(2, triton.next_power_of_2(nsplit))
    st = torch.empty(rows * 2 * pp, dtype=torch.float32, device=x.device)
    _softmax_row_split[(rows, nsplit)](
        x, y, st, _counters(rows, x.device), cols, x.stride(0), y.stride(0), nsplit,
        SPIN_MAX if spin_max is None else spin_max, BC=bc, PP=pp, AL=al,
        num_warps=max(1, min(WHOLE_ROW_WARPS, bc // 1024)),
        # ROW_SPLIT_COOP: the driver starts the grid only with every program resident (or fails
        # the launch), so the barrier never waits on a program that has no SM
        **({"launch_cooperative_grid": True} if ROW_SPLIT_COOP and x.is_cuda else {}),
    )  # fmt: skip


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
        block, warps, persist = walk
        nb = _unrolled(cols, block)
        _softmax_loop[(_programs(rows, x.device, persist),)](
            x, y, rows, cols, x.stride(0), y.stride(0), BLOCK=block, AL=al,
            PERSIST=bool(persist), SKEW=LOOP_SKEW, BACK=bool(LOOP_BACK),
            NB=nb, EX=bool(EXP2), num_warps=warps,
        )  # fmt: skip
        return y
    if bc <= SINGLE_MAX:
        if _row_vec(rows, bc, al, x, y):
            _softmax_row_vec[(rows,)](
                x, y, cols, x.stride(0), BC=bc, V=16 // x.element_size(), EX=bool(EXP2),
                num_warps=_warps(bc),
            )  # fmt: skip
            return y
        bc, bt = _head_tail(cols)
        r, warps = _tile_shape(rows, bc)
        if lone := _lone(rows, bc, bt, warps, x):
            _softmax_lone[(1,)](x, y, cols, *lone, EX=bool(EXP2), num_warps=warps)
            return y
        ntiles = triton.cdiv(rows, r)
        sx, sy = _strides(rows, x, y)
        spl = _lone_split(rows, bc, bt)
        _softmax_tile[(_programs(ntiles, x.device, PERSIST) * spl,)](
            x, y, rows, cols, sx, sy, ntiles, R=r, BC=bc, LOOP=bool(PERSIST), AL=al,
            BT=bt, FOLD=bool(TAIL_FOLD) and bt > 0 and ntiles < _sm_count(x.device),
            EV="evict_first" if STREAMING else "", CM=".cs" if STREAMING else "",
            EX=bool(EXP2), FT=_full_tiles(al, x), SPL=spl, num_warps=warps,
        )  # fmt: skip
        return y
    if _whole_row(rows, bc, x):
        _softmax_whole_row[(rows,)](
            x, y, cols, x.stride(0), y.stride(0), BC=bc, AL=al,
            num_warps=max(1, min(WHOLE_ROW_WARPS, bc // 1024)),
        )  # fmt: skip
        return y
    if split := _row_split(rows, cols, x):
        _split_rows(x, y, rows, cols, al, *split)
        return y
    nchunks = triton.cdiv(cols, CHUNK)
    m = torch.empty(rows, nchunks, dtype=torch.float32, device=x.device)
    s = torch.empty_like(m)
    grid = (rows, nchunks)
    pdl = PDL and x.device.type == "cuda"
    v = 16 // x.element_size() if _chunk_vec(al, x, y) else 0
    _chunk_stats[grid](
        x, m, s, cols, x.stride(0), nchunks, CHUNK=CHUNK, AL=al, PDL=pdl, V=v, EX=bool(EXP2),
        num_warps=_warps(CHUNK, CHUNK_WARP_ELEMS),
    )  # fmt: skip
    _chunk_apply[grid](
        x, y, m, s, cols, x.stride(0), y.stride(0), nchunks,
        CHUNK=CHUNK, NCH=max(2, triton.next_power_of_2(nchunks)), AL=al, PDL=pdl, V=v,
        EARLY=bool(PDL_EARLY), EX=bool(EXP2), PAIR=bool(STATS_PAIR),
        num_warps=_warps(CHUNK, CHUNK_WARP_ELEMS),
        **({"launch_pdl": True} if pdl else {}),
    )  # fmt: skip
    return y
