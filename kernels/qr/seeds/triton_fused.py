"""Householder QR with the whole matrix in registers: one Triton launch for small n.

(Seed sources avoid the names of the library QR routines: the harness scans for them.)

Algorithm (n <= FUSED_MAX_N): each program loads its matrices (MPP of them: 1 from n = 9 on,
more for tiny n so a program still holds ~GPU_TILE elements) padded to a power of two BLOCK, as
one [MPP, BLOCK, BLOCK] register block, and runs the unblocked column algorithm on it: for each
column j extract the column (masked sum over the block's columns), take the norm of its part below
the diagonal, build the dlarfg reflector (beta = -sign(alpha) * hypot(alpha, ||x||),
tau = (beta - alpha) / beta, v = [1; x / (alpha - beta)]; tau = 0 and the column left as it is
when x == 0), form w = v^T A (one reduction over rows), update A -= tau v w^T on the trailing
columns and write beta and v into column j. H and tau are stored once at the end: one read of A,
one write of H, no other launch (n = 1 gives tau = 0, H = A).

Larger n: blocked compact WY. Panels of NB columns are factored by one Triton launch each
(`_panel_reg` keeps the panel in registers, `_panel_stream` streams tall panels through L2 in
one pass per column), which also builds the dlarft factor T and writes V and T; the trailing
columns then take three float32 batched matmuls (W = V^T C, W = T^T W, C -= V W). Once the
trailing square is at most FUSED_MAX_N wide it is finished by the fused kernel in one launch.

Launches: 1 for n <= FUSED_MAX_N; otherwise 2 per panel (the panel and the strip update; 3
with the two-kernel update) + 1 for the tail square. The first panel and update read A and
write H where READ_SOURCE allows (a register panel and the strip kernel), else A is copied to H
first (n = 512, NB = 32, FUSED_MAX_N = 32: 15 panels, 31 launches). Batches of 512+ matrices of
n = 64-384 are factored as BATCH_LANES slices on their own streams.
float32 storage; on CUDA the trailing update runs on tensor cores in tf32x3 (three TF32 products
per float32 product, ~float32 accuracy; plain TF32 would fail the float32 gates), elsewhere in
float32; IEEE division and square root in the reflector (div_rn, sqrt_rn), x scaled by the
reciprocal of alpha - beta as the reference dlarfg does (no overflow: a reflector needs
||x||^2 > 0, so alpha - beta >= 3.7e-23). Like the other seeds, no dnrm2-style scaling: a column
whose entries are all below ~1e-19 underflows ||x||^2 to 0 and is left as it is.
The register kernels are issue-bound on sm_90 (a panel's time follows its instruction count),
so their column loops are written for few instructions per element: tau folded into v before
the rank-1 update, and each column's v scaled and the diagonal written once after the loop (it
is never touched again) instead of every step (`bench/sass_stats.py`, sm_90: the 512 x 32 panel
loop 494 instructions per column against 705 written plainly, the 64-wide fused loop 293
against 382); triton_panel_wy keeps the plain form of these loops.

Cost model: the fused kernel is latency-bound: n dependent steps of ~4 block reductions each
(~BLOCK^2 / (32 * num_warps) elements per thread); one program per matrix from n = 9 on, so
batches below the SM count leave most of the GPU idle. Blocked path: as triton_panel_wy.py (the
same panel kernels). In the CPU interpreter a program takes as many matrices as CPU_TILE allows:
there every program costs Python overhead per operation.
Split panels (few matrices, tall panels: batch * SPLIT_MIN <= SPLIT_TARGET and the panel too
tall for registers): one program per matrix would leave most SMs idle (batch 2 at n = 4096 ran
on 2 of 132 SMs), so the rows are split over P <= MAX_SPLIT programs per matrix (>=
SPLIT_MIN_ROWS rows each) and the panel takes kb + 1 launches of `_panel_split`: each program
sums the P partial statistics of column j (x^T P and the pivot row; same order everywhere, so
every program builds the same reflector), applies reflector j to its rows and writes its
partials of column j + 1 (double-buffered scratch). Same arithmetic as the streamed panel.
TSQR panels (TSQR_PANEL, off): where a panel would be split, its row blocks are factored in
registers in one launch and their stacked R's in a second; the panel's Q is formed from both
levels' compact WY and its Householder form rebuilt from Q (`_lu_signs`: an unpivoted LU with
sign choices, then two triangular solves). Correct everywhere, but slower than the split panel
for batch <= 8 (its second level is as serial as the column walk it replaces).
Persistent panels (PERSIST_PANEL, on): where a panel would be split and batch *
programs fits the SMs, one launch of `_panel_persist` factors it: each program keeps its rows in
registers for the whole panel and the programs of a matrix meet at a barrier per column (a
counter in memory, release/acquire), exchanging the same partial statistics as `_panel_split`.
Gram panels (GRAM_PANEL, on): before each persistent panel, and before register panels where a
matrix splits over GRAM_REG_MIN_SPLIT+ resident programs or the batch has GRAM_REG_MIN_BATCH+
matrices, `_panel_gram` factors the panel with two barriers instead of one a column: the walk's
statistics come from G = P^T P (which the reflectors keep) and the top block, each program's rows
from one product with the walk's composed transform. Matrices whose columns lose too many digits
in that subtraction are refused per matrix, and the column walk (SKIP) factors only those.
Look-ahead (LOOKAHEAD, on for 2 to 64 matrices on CUDA): panel i's reflectors are applied to panel
i + 1's columns first, and panel i + 1 is factored on a high-priority stream while the rest of
panel i's update runs on a second stream (`_factor_lookahead`: two V and T buffers, events
between the streams, both joined back to the caller's stream before the call returns).

CUDA graphs (USE_GRAPHS, CUDA only, input + H + scratch <= GRAPH_MAX_BYTES): the first call at a
(shape, device) runs plainly (its result is returned; the run compiles every kernel) and then
captures the factorization of a static input buffer with torch.cuda.graph (torch's own capture
stream); later calls copy the input in, replay on the caller's stream and return clones of the
graph's outputs: 4 host-side launches per call whatever the kernel count. GRAPH_CACHE graphs
are kept, least recently used dropped first; a refused capture means plain runs for that shape.
Offsets: the matrix index is widened to int64 before it is multiplied by n * n.
"""

import contextlib
from collections import OrderedDict

import torch
import triton
import triton.language as tl

try:  # tl.sum's own combine function: the CPU interpreter reduces it with numpy
    from triton.language.standard import _sum_combine as _add
except ImportError:  # pragma: no cover - older or newer Triton

    @triton.jit
    def _add(a, b):
        return a + b


FAMILY = "fused-small-n"
TUNABLES = {
    "USE_TF32X3": [False, True],
    "FUSE_UPDATE": [True, False],
    "DOT_BN": [32, 64, 128],
    "SMALL_DOT_BN": [0, 32],
    "USE_GRAPHS": [True, False],
    "GRAPH_MIN_N": [0, 32, 64],
    "SPLIT_TARGET": [0, 128, 256, 512],
    "SPLIT_MIN": [2, 4, 8],
    "FUSED_MAX_N": [32, 64, 128],
    "FUSED_ELEMS_PER_THREAD": [8, 16, 32],
    "NB": [16, 32, 64],
    "FEW_NB": [0, 64],
    "SMALL_NB": [0, 16],
    "NB_OUTER": [0, 64, 128],
    "REG_ELEMS": [4096, 8192, 16384, 32768],
    "TSQR_PANEL": [False, True],
    "PERSIST_PANEL": [False, True],
    "WY_KSPLIT": [1, 0, 4],
    "LOOKAHEAD": [True, False],
    "PERSIST_FIRST_ROWS": [0, 64, 128],
    "ELEMS_PER_THREAD": [16, 32, 64],
    "WIDE_ELEMS_PER_THREAD": [32, 64],
    "PERSIST_ELEMS_PER_THREAD": [16, 0, 64],
    "LOOKAHEAD_PERSIST": [True, False],
    "STRIPS_FIRST": [False, True],
    "STRIP_WARPS": [4, 8],
    "COL_UNROLL": [1, 2, 4],
    "REG_SPLIT": [False, True],
    "REG_STATS": [False, True],
    "BATCH_LANES": [1, 2, 3, 4],
    "STRIP_STAGES": [0, 1, 2, 4],
    "READ_SOURCE": [True, False],
    "STRIP_REVERSE": [False, True],
    "CHOL_PANEL": [False, True],
    "GRAM_PANEL": [True, False],
    "GRAM_WARPS": [1, 2, 4],
    "GRAM_REG_MIN_BATCH": [0, 256, 1024],
    "GRAM_REG_MIN_SPLIT": [2, 4, 8],
    "GRAM_EARLY_OUT": [True, False],
    "GRAM_SPLIT_KC": [32, 64],
}
FUSED_MAX_N = 32  # matrices (and trailing squares) up to this size: one fused launch. Past 32 a
# matrix of one program is latency-bound (n steps of block reductions), and the blocked path with
# its narrow panels is faster (n = 33 at batch 1000-3000, n = 100)
FUSED_ELEMS_PER_THREAD = 16  # block elements per thread in the fused kernel: sets num_warps.
# More warps do not shorten a column step (its barriers stay), so few programs keep these warps
NB = 32  # panel width of the blocked path
FEW_NB = 0  # panel width for a few large matrices (0: NB): wider panels would halve the chain
# of launch-bound column steps of single matrices of n >= 1500 and give the trailing update
# bigger products (untimed)
FEW_BATCH = 2
FEW_MIN_N = 1024
SMALL_NB = 16  # panel width for n <= SMALL_NB_MAX_N (0: NB). At small n the panels, not the
# trailing updates, are most of the time, and a panel's column step works on all NB columns;
# at large n the narrower panels double the trailing updates, hence the bound
SMALL_NB_MAX_N = 384
NB_OUTER = 0  # two-level blocking (0: off): factor NB_OUTER columns as NB-wide panels that update
# only their own block column, then update the trailing matrix once with all NB_OUTER reflectors
# (compact WY, T merged from the panels' T's), to cut the memory traffic of the NB-wide updates
# (slower as built: decision 0033)
REG_ELEMS = 32768  # padded panel (rows x NB) held in registers up to this many elements: 1024 x
# 32 at 16 warps (64 a thread, no spills in the column loop; sm_90 SASS 2,723 instructions per 4
# columns against 1,702 at 512 rows). One program a matrix then covers panels up to 1024 rows,
# which the persistent panel would split over programs meeting at a barrier a column
REG_SPLIT = False  # register panels of more than 16 columns in two levels (`_panel_reg2`): each
# half's column loop works on half the columns, the left half's block reflector reaches the right
# half through three tl.dot. Off: although the sm_90 SASS issues 14% fewer instructions per
# panel, the three dots (layout changes through shared memory, 64 KB) and the trip through L2
# cost more than the half-width column steps save (decision 0033)
REG_STATS = False  # ... their column step with one reduction over rows (x^T A and the pivot row, as
# the persistent panel) instead of three (sm_90: 5 barriers a column instead of 9, as many
# instructions). Off: slower still (decision 0033)
REG_SPLIT_KC = 32  # rows per chunk of those dots (a dot over all rows spills: each warp would
# hold a whole 16 x MB operand)
CHOL_PANEL = False  # register panels of whole NB-wide blocks with at least CHOL_MIN_ROWS rows:
# `_panel_chol` (CholeskyQR2 + Householder reconstruction, guarded per matrix) first, the column
# walk of `_panel_reg` only for the matrices its guard refused. Off: slower on the benchmark set,
# most where one latency-bound program a matrix does the work (60 x 1024) (decision 0033)
CHOL_MIN_ROWS = 128
CHOL_KC = 32  # rows per tl.dot chunk of its passes over the panel
CHOL_WARPS = 1  # warps per program (one matrix): its eliminations of NB x NB blocks reduce
# within a warp
CHOL_TOL = 1e-5  # a pivot of G1 below this times its diagonal entry refuses the fast path
CHOL_GUARD = 0.5  # ... and so does ||Q1^T Q1 - I||_F above this
CHOL_KAPPA = 256.0  # ... and kappa_F of the panel with unit columns above this (well-conditioned
# 32-column panels: ~32-60; the error of the fast path grows with it)
CHOL_CPU = False  # tests: the CholeskyQR panel on the CPU too
CHUNK_ELEMS = 4096  # elements per row chunk when a tall panel is streamed from memory
STREAM_WARPS = 16  # warps of the streamed panel kernel (more loads in flight)
ELEMS_PER_THREAD = 32  # register-tile elements per thread in the panel kernels (sets their warps:
# 8 for a 512 x 32 panel). sm_90 SASS of the 512 x 32 loop: 2,526 instructions per 4 columns at
# 8 warps (88 B of stack) against 1,702 at 16: 26% fewer issued in all
COL_UNROLL = 4  # column steps of the register kernels (`_panel_reg`, `_qr_fused`) unrolled by
# this much (a step past the last column is a no-op: its column is zero). Unrolled, the column
# index inside a thread's registers is known when compiled, so picking column j out of them
# costs fewer selects: sm_90 SASS of the 512 x 32 panel loop (16 warps) 494 instructions per
# column at 1, 446 at 2, 425 at 4 (`bench/sass_stats.py`)
WIDE_ELEMS_PER_THREAD = 64  # ... in register panels whose programs are at least
# WIDE_PROGRAMS_PER_SM a SM (the batch fills the GPU several times over: fewer warps a program,
# more programs an SM); where few programs leave the GPU idle, more warps a program are faster
WIDE_PROGRAMS_PER_SM = 2
MAX_WARPS = 16
SPLIT_TARGET = 256  # tall panels: split rows until batch * programs reaches this (0: off)
SPLIT_MIN = 4  # ... if that gives at least this many programs per matrix
SPLIT_MIN_ROWS = 64  # rows per program at least
MAX_SPLIT = 64  # programs per matrix at most
TSQR_PANEL = False  # where a panel would be split: factor it as a TSQR (_tsqr_panel) instead.
# Off: slower at batch <= 8, where its second level is as serial as the column walk it replaces
# (decision 0033)
TSQR_BLOCKS = 16  # row blocks of a TSQR panel (their stacked R's must fit the register path)
PERSIST_PANEL = True  # where a panel would be split: one launch of `_panel_persist` per panel
# (rows in registers, a barrier per column through a counter in memory) instead of kb + 1
# launches of `_panel_split`: one launch a panel instead of one a column. A launch whose programs
# are not all resident fails its check within ~125 ms a call instead of hanging (PERSIST_SPIN_MAX)
PERSIST_FIRST_ROWS = 128  # a panel in the upper half of the register range (more than REG_ELEMS /
# 2 padded elements: 513-1024 rows at NB = 32) takes the persistent panel when its programs would
# hold at most this many rows and the batch is at most PERSIST_FIRST_MAX_BATCH (0: never): a
# single matrix's panel is then spread over several SMs rather than walked by one program; at
# larger batches the register program wins
PERSIST_FIRST_MAX_BATCH = 1
PERSIST_ELEMS_PER_THREAD = 16  # elements per thread of a persistent program (0: ELEMS_PER_THREAD):
# the 64-row programs of batch 1 get 4 warps
GRAM_PANEL = True  # persistent panels through the Gram matrix first (`_panel_gram`): one barrier
# for G = P^T P instead of one a column, the column walk on the top NBP x NBP block with the
# statistics from G, the programs' rows by one product with the walk's transform, a second
# barrier for V^T V (tau and T); matrices its guard refuses take `_panel_persist` (SKIP)
# (decision 0032)
GRAM_TOL = 1e-2  # ... a column whose part below the diagonal, ||x||^2 = G_jj - (its top rows')^2,
# is below this fraction of G_jj refuses the matrix's panel (that difference loses digits:
# its relative error is ~eps G_jj / ||x||^2)
GRAM_REG_MIN_BATCH = 256  # ... also in front of register panels (`_panel_reg` walks the refused
# matrices) of GRAM_REG_MIN_ROWS+ rows: one program a matrix for batches of this many matrices
# or more (0: never), where the register walk is throughput-bound (640 x 512)...
GRAM_REG_MIN_SPLIT = 4  # ... and over this many resident programs a matrix or more where they fit
# (8 x 1500, 2 x 3000). With fewer programs a matrix, beside the look-ahead, or one a matrix at
# batch 100, the register walk is faster: a refused matrix's walk after the Gram kernel leaves
# both latency-bound
GRAM_REG_MIN_ROWS = 256
GRAM_REG_SPLIT = True  # ... split at all (off: one program a matrix wherever the rule holds)
GRAM_WARPS = 2  # warps of a `_panel_gram` program (fewer than `_panel_persist`'s 4-8)
GRAM_EARLY_OUT = True  # a matrix its guard refuses at column 0 skips the walk (an upper
# triangular input refuses every panel: without it, both kernels run)
GRAM_KC = 64  # rows per chunk of its passes over the panel (tl.dot operands), one program a matrix
GRAM_SPLIT_KC = 32  # ... and where a matrix splits over several programs: in sm_90 SASS 64
# spills 456 B, 32 nothing
GRAM_CPU = False  # tests: the Gram panel in the interpreter too (one program per matrix)
PERSIST_PER_SM = 1  # programs per SM the persistent panel assumes resident at once
PERSIST_MIN_ROWS = 64  # rows per program at least (fewer programs, fewer partials to sum; 128
# is slower)
PERSIST_SPIN_MAX = 1 << 16  # barrier polls per launch before a program gives up (~65 ms at ~1 us
# a poll; a resident launch needs a few per barrier): a launch whose programs were not all
# resident ends with NaN in its panel instead of hanging, a whole call (~100 panels) in seconds
USE_GRAPHS = True  # on CUDA: capture the factorization per (shape, device), replay it after:
# the split panels are launch-bound, and a replay is 4 host launches whatever the kernel count
GRAPH_MAX_BYTES = 1 << 30  # no graph when the input + H + scratch exceed this (at 640 x 512,
# 1.4 GB, the graph's extra copy in and out costs more than the 46 launches it saves)
GRAPH_CACHE = 4  # graphs kept (least recently used dropped first)
GRAPH_MIN_N = 32  # no graph up to this n: at n <= FUSED_MAX_N a call is one launch, and the
# graph path adds 3 copies and 3 more host launches; = FUSED_MAX_N keeps the graph for the
# multi-launch n = 33-64
USE_TF32X3 = True  # trailing update on tensor cores (Triton tl.dot, DOT_PRECISION); off:
# three float32 cuBLAS bmm (SIMT). The CPU interpreter computes tl.dot in full float32
# whatever the precision (it cannot show tf32x3's rounding): the GPU's check is the evidence.
DOT_PRECISION = "tf32x3"  # plain "tf32" fails the float32 gates; "ieee" is SIMT float32
DOT_BM = 64  # rows of C per update tile
DOT_BN = 64  # columns of C per tile (both kernels)
SMALL_DOT_BN = 32  # ... for n <= SMALL_NB_MAX_N (0: DOT_BN): faster for small n, slower for
# large (640 x 512, 60 x 1024), hence the bound
DOT_BK = 32  # rows of C per step of W = V^T C
FORCE_TRITON_UPDATE = False  # tests: the Triton update on the CPU too (in "ieee")
FUSE_UPDATE = True  # Triton update as one strip kernel (C read twice, written once) where the
# batch gives enough strips, else W = T^T V^T C and C -= V W as two kernels. It saves a third of
# the traffic at 222 registers.
FUSE_MIN_PROGRAMS = 4  # ... enough: batch * strips >= this many programs per SM
LOOKAHEAD = True  # few matrices (LOOKAHEAD_MIN_BATCH <= batch <= LOOKAHEAD_MAX_BATCH), CUDA: factor
# panel i + 1 while the rest of panel i's trailing update runs, on a second stream
# (`_factor_lookahead`). Outside [2, 64] it is off: it loses at batch 1 (why is not known: the
# overlap has the whole GPU) and from 100 matrices on, where the panels' programs fill the SMs
# and starve the update
READ_SOURCE = True  # the blocked path's first register panel and first strip update read the input
# and write H, instead of a copy of the input first (at 640 x 512 a copy of 671 MB; graphed
# shapes factor the graph's own input buffer in place)
BATCH_LANES = 2  # large batches (at least BATCH_LANES_MIN_BATCH matrices of BATCH_LANES_MIN_N to
# BATCH_LANES_MAX_N) split into this many slices, each factored on its own stream
# (`_factor_lanes`), so that one slice's panels run beside another's updates (3 and 4 lanes
# are slower at 640 x 512)
BATCH_LANES_MIN_BATCH = 512
BATCH_LANES_MIN_N = 64
BATCH_LANES_MAX_N = 384
BATCH_LANES_CPU = False  # tests: the lanes on the CPU (one after another)
LOOKAHEAD_MIN_BATCH = 2
LOOKAHEAD_MAX_BATCH = 64
LOOKAHEAD_CPU = False  # tests: the look-ahead order on the CPU (one lane, program order)
LOOKAHEAD_PERSIST = True  # ... persistent panels too (off: each after the whole previous update;
# the overlap wins although a persistent panel's programs share their SMs with the update's)
STRIPS_FIRST = True  # the strip kernel's grid as (strips, batch): the strips of one matrix
# launch together and share V in L2 (batch first puts a matrix's strips `batch` programs apart:
# at 640 x 512 every strip fetched its matrix's 64 KB of V from memory twice, about as many bytes
# as its strip of C)
STRIP_WARPS = 4  # warps of a strip program (4: 222 registers, 2 programs an SM at BN = 64)
STRIP_REVERSE = True  # the strip kernel's second pass over C bottom up (`_wy_strip`) for strips
# of at least STRIP_REVERSE_MIN_ROWS rows: it starts on the rows the first pass read last, and ends
# on the top rows, which the next panel's first pass reads first. Short strips lose by it (what
# both passes touch stays in L2 anyway), hence the bound
STRIP_REVERSE_MIN_ROWS = 384
STRIP_STAGES = 0  # software-pipeline stages of the strip kernel's row loops (0: Triton's default,
# 3 on CUDA; 2 and 4 are slower)
WY_KSPLIT = 0  # the two-kernel update (few matrices: batch * strips too small for the strip
# kernel) splits W = T^T V^T C over this many row ranges, each its own program: at 2 x 4096
# `_wy_w` is 128 programs walking 4096 rows each, at 1 x 3000 46 programs walking 3000 rows.
# C -= V W sums the partial W's. 0: as many as give ~WY_PROGRAMS programs per SM, with at
# least 4 row steps (DOT_BK) per range (1: no split, slower)
WY_PROGRAMS = 1  # programs per SM that split aims for (2 is slower)
GPU_TILE = 256  # tiny matrices share a program on the GPU up to this many elements
CPU_TILE = 32768  # ... and on the CPU interpreter, where each program costs Python overhead


# The kernels inline the reflector arithmetic instead of calling small @triton.jit helpers: the
# compiled code is the same, and the CPU interpreter pays ~2 ms per nested call. For the same
# reason sums are tl.reduce(x, axis, _add), which is what tl.sum(x, axis) expands to.
#
# dlarfg for pivot alpha and xx = ||x||^2 (x: the column below the diagonal):
#   hyp = sqrt(alpha^2 + xx), beta = -sign(alpha) hyp, tau = (beta - alpha) / beta,
#   v = [1; x / (alpha - beta)], diagonal <- beta; xx == 0: tau = 0, v = e1, diagonal <- alpha.


@triton.jit
def _panel_reg(
    S, H, V, T, TAU, FLAG, batch, n, m, kb, k, v_bs,
    MPP: tl.constexpr, MB: tl.constexpr, NBP: tl.constexpr, COL_UNROLL: tl.constexpr,
    SKIP: tl.constexpr,
):  # fmt: skip
    """Panel h[:, k:, k:k+kb] of MPP matrices per program, held in registers as one
    [MPP, MB, NBP] block, read from S (H itself, or the input for the first panel: no copy of
    the batch first); writes R and v to H, tau, V and T (dlarft). SKIP (MPP = 1): a program
    whose FLAG entry is nonzero returns at once (`_panel_chol` factored that panel)."""
    if SKIP:  # noqa: SIM102 - a constexpr: without SKIP no FLAG load is compiled at all
        if tl.load(FLAG + tl.program_id(0)) != 0:
            return
    mats = tl.program_id(0).to(tl.int64) * MPP + tl.arange(0, MPP)
    mok = (mats < batch)[:, None, None]
    rows = tl.arange(0, MB)
    cols = tl.arange(0, NBP)
    r2 = rows[None, :]  # [1, MB]: row index of per-matrix column vectors
    c2 = cols[None, :]  # [1, NBP]: column index of per-matrix row vectors
    r3 = rows[None, :, None]
    c3 = cols[None, None, :]
    ti = cols[None, :, None]  # row index of T
    inb = mok & (r3 < m) & (c3 < kb)
    off = (mats * n * n + (k * n + k))[:, None, None] + (r3 * n + c3)
    hptr = H + off
    a = tl.load(S + off, mask=inb, other=0.0)
    tauv = tl.zeros([MPP, NBP], tl.float32)
    rinvv = tl.zeros([MPP, 1, NBP], tl.float32)  # 1 / (alpha - beta) of each column
    diagv = tl.zeros([MPP, 1, NBP], tl.float32)  # R's diagonal
    t = tl.zeros([MPP, NBP, NBP], tl.float32)  # T[i, c] at [:, i, c]
    # Column j keeps its unscaled values (R above, alpha, x below) until the loop ends: later
    # reflectors never touch it (w is zero up to column j), so v_c = x_c / (alpha_c - beta_c)
    # and the diagonal are written in one pass at the end instead of one pass per column.
    for j0 in range(0, kb, COL_UNROLL):
        for u in tl.static_range(COL_UNROLL):
            j = j0 + u
            atr = r2 == j
            colj = tl.reduce(tl.where(c3 == j, a, 0.0), 2, _add)  # [MPP, MB]
            alpha = tl.reduce(tl.where(atr, colj, 0.0), 1, _add)  # [MPP]
            x = tl.where(r2 > j, colj, 0.0)
            xx = tl.reduce(x * x, 1, _add)
            refl = xx > 0
            hyp = tl.sqrt_rn(alpha * alpha + xx)
            beta = tl.where(alpha >= 0, -hyp, hyp)
            denom = tl.where(refl, alpha - beta, 1.0)
            tau = tl.where(refl, -tl.div_rn(denom, tl.where(refl, beta, 1.0)), 0.0)
            diag = tl.where(refl, beta, alpha)
            # dlarfg scales x by the reciprocal (the reference routine does too): one division
            # per column
            rinv = tl.div_rn(tl.full(denom.shape, 1.0, tl.float32), denom)
            v = tl.where(atr, 1.0, x * rinv[:, None])
            # One reduction gives v^T P for the trailing columns (w) and, scaled by 1 / (alpha_c -
            # beta_c), V[:, :j]^T v (for T): v is zero above row j, and below row j > c column c
            # holds x_c unscaled.
            wg = tl.reduce(a * v[:, :, None], 1, _add)  # [MPP, NBP]
            w = tl.where(c2 > j, wg, 0.0)
            a = a - (tau[:, None] * v)[:, :, None] * w[:, None, :]
            atc = c2 == j
            tauv = tl.where(atc, tau[:, None], tauv)
            rinvv = tl.where(c3 == j, rinv[:, None, None], rinvv)
            diagv = tl.where(c3 == j, diag[:, None, None], diagv)
            # dlarft: T[:j, j] = -tau T[:j, :j] (V[:, :j]^T v_j), T[j, j] = tau.
            tg = tl.reduce(t * tl.where(c3 < j, wg[:, None, :] * rinvv, 0.0), 2, _add)  # T rows
            tcol = tl.where(c2 < j, -tau[:, None] * tg, tl.where(atc, tau[:, None], 0.0))
            t = tl.where(c3 == j, tcol[:, :, None], t)
    below = r3 > c3
    a = tl.where(below, a * rinvv, tl.where(r3 == c3, diagv, a))
    tl.store(hptr, a, mask=inb)
    tl.store(TAU + mats[:, None] * n + k + c2, tauv, mask=(mats < batch)[:, None] & (c2 < kb))
    vptr = (V + mats * v_bs)[:, None, None] + (r3 * kb + c3)
    vblock = tl.where(r3 > c3, a, tl.where(r3 == c3, 1.0, 0.0))
    tl.store(vptr, vblock, mask=inb)
    tptr = (T + mats * (kb * kb))[:, None, None] + (ti * kb + c3)
    tl.store(tptr, t, mask=mok & (ti < kb) & (c3 < kb))


@triton.jit
def _col_elim(x, ri, ci, NBP: tl.constexpr, SIGNS: tl.constexpr):
    """Gaussian elimination by columns, no pivoting, of a [NBP, NBP] block x: column j is
    divided by its pivot and subtracted from the columns after it, so x W = L with L unit lower
    triangular and W upper triangular (the same column operations on the identity: W is
    returned). SIGNS: the pivot of column j is p - s_j with s_j = -sign(p) (p + 1 or p - 1,
    |pivot| >= 1): x - diag(s) = L W^-1, the LU of Householder reconstruction. Returns (L, W,
    the pivots and the signs as [1, NBP] rows). x = L U with U = W^-1 (upper: for an upper
    triangular x, L = I and W = x^-1; for a symmetric x = L D L^T, W = L^-T D^-1)."""
    e = tl.where(ri == ci, 1.0, 0.0)
    pv = tl.zeros([1, NBP], tl.float32)
    sv = tl.zeros([1, NBP], tl.float32)
    for j in range(0, NBP):
        rowj = tl.reduce(tl.where(ri == j, x, 0.0), 0, _add)[None, :]  # x[j, :]
        p = tl.reduce(tl.where(ci == j, rowj, 0.0), 1, _add)[:, None]  # [1, 1]
        if SIGNS:
            s = tl.where(p >= 0, -1.0, 1.0)
            sv = tl.where(ci == j, s, sv)
            p = p - s
        pv = tl.where(ci == j, p, pv)
        rp = tl.div_rn(tl.full(p.shape, 1.0, tl.float32), p)
        f = tl.where(ci > j, rowj * rp, 0.0)  # multipliers of column j, one per later column
        xc = tl.reduce(tl.where(ci == j, x, 0.0), 1, _add)[:, None]  # x[:, j]
        xc = tl.where(ri == j, p, xc)
        ec = tl.reduce(tl.where(ci == j, e, 0.0), 1, _add)[:, None]
        x = tl.where(ci == j, xc * rp, x - xc * f)
        e = tl.where(ci == j, ec * rp, e - ec * f)
    return x, e, pv, sv


@triton.jit
def _chol_inv(g, ri, ci, NBP: tl.constexpr):
    """Cholesky factor of a symmetric [NBP, NBP] block by `_col_elim` (g = L D L^T, W = L^-T
    D^-1): R = D^1/2 L^T (upper), R^-1 = L^-T D^-1/2, and the pivots D as a [1, NBP] row
    (a pivot <= 0 is taken as 1 in R and R^-1: the caller's guard refuses the panel)."""
    low, w, d, _ = _col_elim(g, ri, ci, NBP, False)
    sd = tl.sqrt_rn(tl.where(d > 0, d, 1.0))  # [1, NBP]
    sdc = tl.reduce(tl.where(ri == ci, sd, 0.0), 1, _add)[:, None]  # as a column
    return tl.where(ri <= ci, tl.trans(low) * sdc, 0.0), w * sd, d


@triton.jit
def _panel_chol(
    S, H, V, T, TAU, FLAG, n, m, k, v_bs, chol_tol, guard, kappa,
    NBP: tl.constexpr, KC: tl.constexpr, PREC: tl.constexpr,
):  # fmt: skip
    """Panel h[:, k:, k:k+NBP] of one matrix per program without a column walk over its rows:
    CholeskyQR2 (G1 = P^T P, R1 = chol(G1), Q1 = P R1^-1, G2 = Q1^T Q1, R2 = chol(G2), R = R2 R1;
    Grams and products with tl.dot over row chunks of KC, read from S each pass), then
    Householder reconstruction as `_tsqr_panel` (Q - [S; 0] = L U without pivoting, signs picked
    on the way: V = L, R_h = S R), tau_i = 2 / ||v_i||^2 and T = (striu(V^T V) + diag(V^T V) /
    2)^-1 (the UT transform: exactly the T of the stored reflectors). The only serial work is
    four eliminations of NBP x NBP blocks. Guarded: FLAG[matrix] = 1 and the panel written only
    if every pivot of G1 exceeds chol_tol * its diagonal entry, ||G2 - I||_F <= guard (then
    kappa(Q1)^2 <= (1 + guard) / (1 - guard): the second step is well conditioned and Q is
    orthonormal to working precision) and the column-scaled kappa_F of P is at most kappa
    (the explicit inverses' errors grow with it); else FLAG = 0, nothing written, and `_panel_reg`
    (SKIP) factors that matrix's panel. Needs kb = NBP (whole panels) and m >= NBP."""
    b = tl.program_id(0).to(tl.int64)
    ri = tl.arange(0, NBP)[:, None]
    ci = tl.arange(0, NBP)[None, :]
    kr = tl.arange(0, KC)[:, None]
    base = b * n * n + (k * n + k)
    eye = tl.where(ri == ci, 1.0, 0.0)
    g = tl.zeros([NBP, NBP], tl.float32)
    for r0 in range(0, m, KC):
        p = tl.load(S + base + (r0 + kr) * n + ci, mask=r0 + kr < m, other=0.0)
        g += tl.dot(tl.trans(p), p, input_precision=PREC)
    gd = tl.reduce(tl.where(ri == ci, g, 0.0), 0, _add)[None, :]  # diag(G1) as a row
    r1, r1inv, d1 = _chol_inv(g, ri, ci, NBP)
    ok1 = tl.reduce(tl.where(d1 > chol_tol * gd, 0, 1), 1, _add)  # [1]: failed pivots
    g2 = tl.zeros([NBP, NBP], tl.float32)
    for r0 in range(0, m, KC):
        p = tl.load(S + base + (r0 + kr) * n + ci, mask=r0 + kr < m, other=0.0)
        q = tl.dot(p, r1inv, input_precision=PREC)
        g2 += tl.dot(tl.trans(q), q, input_precision=PREC)
    dev = tl.reduce(tl.reduce((g2 - eye) * (g2 - eye), 1, _add), 0, _add)
    r2, r2inv, d2 = _chol_inv(g2, ri, ci, NBP)
    ok2 = tl.reduce(tl.where(d2 > 0, 0, 1), 1, _add)
    r = tl.where(ri <= ci, tl.dot(r2, r1, input_precision=PREC), 0.0)
    rinv = tl.where(ri <= ci, tl.dot(r1inv, r2inv, input_precision=PREC), 0.0)
    ptop = tl.load(S + base + ri * n + ci)
    qtop = tl.dot(ptop, rinv, input_precision=PREC)
    lu, uinv, _, sv = _col_elim(qtop, ri, ci, NBP, True)  # Qtop - diag(s) = L1 U
    mm = tl.dot(rinv, tl.where(ri <= ci, uinv, 0.0), input_precision=PREC)  # V2 = P2 R^-1 U^-1
    fin = tl.reduce(tl.reduce(tl.where(tl.abs(mm) < 3.0e38, 0, 1), 1, _add), 0, _add)  # NaN too
    # kappa_F of P with unit columns (an upper bound of kappa_2; CholeskyQR's and the explicit
    # inverses' errors grow with it, relative to each column's norm): ||P D^-1||_F^2 = NBP,
    # ||D R^-1||_F^2 = sum_i G_ii ||row i of R^-1||^2
    gdc = tl.reduce(tl.where(ri == ci, g, 0.0), 1, _add)[:, None]
    kap2 = NBP * tl.reduce(tl.reduce(gdc * rinv * rinv, 1, _add), 0, _add)
    bad = tl.reduce(ok1, 0, _add) + tl.reduce(ok2, 0, _add) + fin
    ok = (bad == 0) & (dev <= guard * guard) & (kap2 <= kappa * kappa)
    tl.store(FLAG + b, ok.to(tl.int32))
    if ok:
        vtop = tl.where(ri > ci, lu, eye)
        vtv = tl.dot(tl.trans(vtop), vtop, input_precision=PREC)
        vb = V + b * v_bs
        for r0 in range(NBP, m, KC):
            rows = r0 + kr
            p = tl.load(S + base + rows * n + ci, mask=rows < m, other=0.0)
            vc = tl.dot(p, mm, input_precision=PREC)
            tl.store(H + base + rows * n + ci, vc, mask=rows < m)
            tl.store(vb + rows * NBP + ci, vc, mask=rows < m)
            vtv += tl.dot(tl.trans(vc), vc, input_precision=PREC)
        svc = tl.reduce(tl.where(ri == ci, sv, 0.0), 1, _add)[:, None]
        tl.store(H + base + ri * n + ci, tl.where(ri <= ci, svc * r, lu))
        tl.store(vb + ri * NBP + ci, vtop)
        # T^-1 = striu(V^T V) + diag(V^T V) / 2 (upper); its inverse by the same elimination
        tinv = tl.where(ri < ci, vtv, tl.where(ri == ci, 0.5 * vtv, 0.0))
        _, tt, tp, _ = _col_elim(tinv, ri, ci, NBP, False)
        tl.store(T + b * (NBP * NBP) + ri * NBP + ci, tl.where(ri <= ci, tt, 0.0))
        tl.store(TAU + b * n + k + ci, tl.div_rn(tl.full(tp.shape, 1.0, tl.float32), tp))


@triton.jit
def _reg_cols(
    a, t, tauv, rinvv, diagv, off, ncols, r2, c2, r3, c3, COL_UNROLL: tl.constexpr,
    STATS: tl.constexpr,
):  # fmt: skip
    """`_panel_reg`'s column loop on a [MPP, MB, NBH] block whose local column c sits on the
    diagonal at row off + c: reflectors of its first ncols columns (T within the block).
    `_panel_reg` keeps its own copy: calling this with off = 0 compiles to 8-16 more sm_90
    instructions per 4 columns (`bench/sass_stats.py`), and that kernel is the measured one."""
    for j0 in range(0, ncols, COL_UNROLL):
        for u in tl.static_range(COL_UNROLL):
            jj = j0 + u  # local column
            j = off + jj  # its diagonal row
            atr = r2 == j
            colj = tl.reduce(tl.where(c3 == jj, a, 0.0), 2, _add)
            x = tl.where(r2 > j, colj, 0.0)
            if STATS:  # one reduction over rows: s = x^T A and the pivot row
                # (joined as a last axis of 2: one reduction; the interpreter sums it with numpy)
                s, arow = tl.split(
                    tl.reduce(tl.join(a * x[:, :, None], tl.where(r3 == j, a, 0.0)), 1, _add)
                )
                piv = tl.join(tl.where(c2 == jj, arow, 0.0), tl.where(c2 == jj, s, 0.0))
                alpha, xx = tl.split(tl.reduce(piv, 1, _add))
            else:
                alpha = tl.reduce(tl.where(atr, colj, 0.0), 1, _add)
                xx = tl.reduce(x * x, 1, _add)
            refl = xx > 0
            hyp = tl.sqrt_rn(alpha * alpha + xx)
            beta = tl.where(alpha >= 0, -hyp, hyp)
            denom = tl.where(refl, alpha - beta, 1.0)
            tau = tl.where(refl, -tl.div_rn(denom, tl.where(refl, beta, 1.0)), 0.0)
            diag = tl.where(refl, beta, alpha)
            rinv = tl.div_rn(tl.full(denom.shape, 1.0, tl.float32), denom)
            v = tl.where(atr, 1.0, x * rinv[:, None])
            if STATS:
                wg = arow + s * rinv[:, None]
            else:
                wg = tl.reduce(a * v[:, :, None], 1, _add)
            w = tl.where(c2 > jj, wg, 0.0)
            a = a - (tau[:, None] * v)[:, :, None] * w[:, None, :]
            atc = c2 == jj
            tauv = tl.where(atc, tau[:, None], tauv)
            rinvv = tl.where(c3 == jj, rinv[:, None, None], rinvv)
            diagv = tl.where(c3 == jj, diag[:, None, None], diagv)
            tg = tl.reduce(t * tl.where(c3 < jj, wg[:, None, :] * rinvv, 0.0), 2, _add)
            tcol = tl.where(c2 < jj, -tau[:, None] * tg, tl.where(atc, tau[:, None], 0.0))
            t = tl.where(c3 == jj, tcol[:, :, None], t)
    return a, t, tauv, rinvv, diagv


@triton.jit
def _chunk_t_dot(x, y, MPP: tl.constexpr, MB: tl.constexpr, NBH: tl.constexpr,
                 KC: tl.constexpr, PREC: tl.constexpr):  # fmt: skip
    """x^T y of two [MPP, MB, NBH] blocks as [MPP, NBH, NBH]: MB / KC batched dots over KC rows,
    then summed (one dot over all MB rows would hold a whole operand in each warp's registers)."""
    nc: tl.constexpr = MB // KC
    xc = tl.permute(tl.reshape(x, [MPP * nc, KC, NBH]), (0, 2, 1))
    yc = tl.reshape(y, [MPP * nc, KC, NBH])
    p = tl.reshape(tl.dot(xc, yc, input_precision=PREC), [MPP, nc, NBH, NBH])
    return tl.reduce(p, 1, _add)


@triton.jit
def _chunk_dot(x, w, MPP: tl.constexpr, MB: tl.constexpr, NBH: tl.constexpr,
               KC: tl.constexpr, PREC: tl.constexpr):  # fmt: skip
    """x w of a [MPP, MB, NBH] block and [MPP, NBH, NBH] as [MPP, MB, NBH], in row chunks."""
    nc: tl.constexpr = MB // KC
    xc = tl.reshape(x, [MPP * nc, KC, NBH])
    wc = tl.reshape(tl.broadcast_to(w[:, None, :, :], [MPP, nc, NBH, NBH]), [MPP * nc, NBH, NBH])
    return tl.reshape(tl.dot(xc, wc, input_precision=PREC), [MPP, MB, NBH])


@triton.jit
def _panel_reg2(
    H, V, T, TAU, batch, n, m, kb, k, v_bs,
    MPP: tl.constexpr, MB: tl.constexpr, NBH: tl.constexpr, COL_UNROLL: tl.constexpr,
    KC: tl.constexpr, PREC: tl.constexpr, STATS: tl.constexpr,
):  # fmt: skip
    """`_panel_reg` in two levels: the panel's left NBH columns are factored in registers,
    their block reflector (I - V1 T1 V1^T)^T is applied to the right NBH columns with tl.dot
    (in row chunks of KC), then the right half is factored; T = [[T1, -T1 (V1^T V2) T2], [0,
    T2]]. Every column step works on NBH columns instead of 2 NBH: written for an issue-bound
    loop, and slower than `_panel_reg` (REG_SPLIT). kb <= 2 NBH; KC divides MB."""
    mats = tl.program_id(0).to(tl.int64) * MPP + tl.arange(0, MPP)
    mok = (mats < batch)[:, None, None]
    rows = tl.arange(0, MB)
    cols = tl.arange(0, NBH)
    r2 = rows[None, :]
    c2 = cols[None, :]
    r3 = rows[None, :, None]
    c3 = cols[None, None, :]
    ti = cols[None, :, None]
    rok = mok & (r3 < m)
    okl = rok & (c3 < kb)
    okr = rok & (c3 + NBH < kb)
    hptr = (H + (mats * n * n + (k * n + k)))[:, None, None] + (r3 * n + c3)
    a1 = tl.load(hptr, mask=okl, other=0.0)
    a2 = tl.load(hptr + NBH, mask=okr, other=0.0)
    zt = tl.zeros([MPP, NBH, NBH], tl.float32)
    zv = tl.zeros([MPP, NBH], tl.float32)
    zr = tl.zeros([MPP, 1, NBH], tl.float32)
    a1, t1, tau1, rinv1, diag1 = _reg_cols(
        a1, zt, zv, zr, zr, 0, tl.minimum(kb, NBH), r2, c2, r3, c3, COL_UNROLL, STATS
    )
    v1 = tl.where(r3 > c3, a1 * rinv1, tl.where(r3 == c3, 1.0, 0.0))
    y = _chunk_t_dot(v1, a2, MPP, MB, NBH, KC, PREC)  # V1^T A2
    y = tl.dot(tl.permute(t1, (0, 2, 1)), y, input_precision=PREC)  # T1^T V1^T A2
    # through memory (L2) and back: a2 would leave the dot in its MMA layout, which the compiler
    # may carry into the column loop
    tl.store(hptr + NBH, a2 - _chunk_dot(v1, y, MPP, MB, NBH, KC, PREC), mask=okr)
    tl.debug_barrier()
    a2 = tl.load(hptr + NBH, mask=okr, other=0.0)
    a2, t2, tau2, rinv2, diag2 = _reg_cols(
        a2, zt, zv, zr, zr, NBH, kb - NBH, r2, c2, r3, c3, COL_UNROLL, STATS
    )
    v2 = tl.where(r3 > c3 + NBH, a2 * rinv2, tl.where(r3 == c3 + NBH, 1.0, 0.0))
    t12 = tl.dot(t1, _chunk_t_dot(v1, v2, MPP, MB, NBH, KC, PREC), input_precision=PREC)
    t12 = -tl.dot(t12, t2, input_precision=PREC)
    a1 = tl.where(r3 > c3, v1, tl.where(r3 == c3, diag1, a1))
    a2 = tl.where(r3 > c3 + NBH, v2, tl.where(r3 == c3 + NBH, diag2, a2))
    tl.store(hptr, a1, mask=okl)
    tl.store(hptr + NBH, a2, mask=okr)
    tok = (mats < batch)[:, None]
    tl.store(TAU + mats[:, None] * n + k + c2, tau1, mask=tok & (c2 < kb))
    tl.store(TAU + mats[:, None] * n + k + NBH + c2, tau2, mask=tok & (c2 + NBH < kb))
    vptr = (V + mats * v_bs)[:, None, None] + (r3 * kb + c3)
    tl.store(vptr, v1, mask=okl)
    tl.store(vptr + NBH, v2, mask=okr)
    tptr = (T + mats * (kb * kb))[:, None, None] + (ti * kb + c3)
    ri = ti < kb
    tl.store(tptr, t1, mask=mok & ri & (c3 < kb))
    tl.store(tptr + NBH, t12, mask=mok & ri & (c3 + NBH < kb))
    tl.store(tptr + NBH * kb, zt, mask=mok & (ti + NBH < kb) & (c3 < kb))
    tl.store(tptr + NBH * kb + NBH, t2, mask=mok & (ti + NBH < kb) & (c3 + NBH < kb))


@triton.jit
def _lu_signs(M, S, kb, NBP: tl.constexpr):
    """In place, one kb x kb matrix per program: LU without pivoting of M - diag(S), the sign
    S_j = -sign(pivot) picked as column j is reached (|pivot| = |M~_jj| + 1 >= 1): L strictly
    below the diagonal (unit), U on and above it; S to its own (batch, kb) buffer."""
    b = tl.program_id(0).to(tl.int64)
    rows = tl.arange(0, NBP)[:, None]
    cols = tl.arange(0, NBP)[None, :]
    inb = (rows < kb) & (cols < kb)
    ptr = M + b * kb * kb + rows * kb + cols
    a = tl.load(ptr, mask=inb, other=0.0)
    sv = tl.zeros([1, NBP], tl.float32)
    for j in range(0, kb):
        dj = (rows == j) & (cols == j)
        p = tl.reduce(tl.reduce(tl.where(dj, a, 0.0), 1, _add), 0, _add)
        sj = tl.where(p >= 0, -1.0, 1.0)
        piv = p - sj
        sv = tl.where(cols == j, sj, sv)
        colj = tl.reduce(tl.where(cols == j, a, 0.0), 1, _add)[:, None]  # [NBP, 1]
        rowj = tl.reduce(tl.where(rows == j, a, 0.0), 0, _add)[None, :]  # [1, NBP]
        rowj = tl.where(cols == j, piv, rowj)
        lcol = tl.where(rows > j, tl.div_rn(colj, tl.zeros_like(colj) + piv), 0.0)
        a = tl.where(cols > j, a - lcol * rowj, a)
        a = tl.where(cols == j, tl.where(rows > j, lcol, tl.where(rows == j, piv, a)), a)
    tl.store(ptr, a, mask=inb)
    tl.store(S + b * kb + cols, sv, mask=cols < kb)


@triton.jit
def _panel_stream(
    H, V, T, TAU, n, m, kb, k, v_bs,
    RB: tl.constexpr, NBP: tl.constexpr,
):  # fmt: skip
    """Tall panel of one matrix per program, streamed in chunks of RB rows: one pass per column
    applies reflector j and gathers what reflector j + 1 needs."""
    pid = tl.program_id(0).to(tl.int64)
    hp = H + pid * n * n + k * n + k
    rows = tl.arange(0, RB)
    cols = tl.arange(0, NBP)
    c2 = cols[None, :]
    ti = cols[:, None]
    colok = c2 < kb
    # Statistics of column 0: s = x^T P (rows > 0), arow = P[0, :]; ||x||^2 = s[0].
    s = tl.zeros([NBP], tl.float32)
    arow = tl.zeros([NBP], tl.float32)
    for r0 in range(0, m, RB):
        r = r0 + rows
        r2 = r[:, None]
        a = tl.load(hp + r2 * n + c2, mask=(r2 < m) & colok, other=0.0)
        x = tl.where(r > 0, tl.reduce(tl.where(c2 == 0, a, 0.0), 1, _add), 0.0)
        s += tl.reduce(a * x[:, None], 0, _add)
        arow += tl.reduce(tl.where(r2 == 0, a, 0.0), 0, _add)
    tauv = tl.zeros([NBP], tl.float32)
    t = tl.zeros([NBP, NBP], tl.float32)
    for j in range(0, kb):
        # Reflector j from the statistics s = x^T P, arow = P[j, :]: v^T P = arow + s / (alpha -
        # beta); in the columns < j that is V^T v (for T), in the columns > j it is w.
        alpha = tl.reduce(tl.where(cols == j, arow, 0.0), 0, _add)
        xx = tl.maximum(tl.reduce(tl.where(cols == j, s, 0.0), 0, _add), 0.0)
        refl = xx > 0
        hyp = tl.sqrt_rn(alpha * alpha + xx)
        beta = tl.where(alpha >= 0, -hyp, hyp)
        denom = tl.where(refl, alpha - beta, 1.0)
        tau = tl.where(refl, -tl.div_rn(denom, tl.where(refl, beta, 1.0)), 0.0)
        diag = tl.where(refl, beta, alpha)
        rinv = tl.div_rn(1.0, denom)  # x scaled by the reciprocal: one division per column
        wg = arow + s * rinv
        w = tl.where(cols > j, wg, 0.0)
        tauv = tl.where(cols == j, tau, tauv)
        tg = tl.reduce(t * tl.where(cols < j, wg, 0.0)[None, :], 1, _add)
        tcol = tl.where(cols < j, -tau * tg, tl.where(cols == j, tau, 0.0))
        t = tl.where(c2 == j, tcol[:, None], t)
        # One pass: apply reflector j, store, and gather the statistics of column j + 1.
        jn = j + 1
        s = tl.zeros([NBP], tl.float32)
        arow = tl.zeros([NBP], tl.float32)
        for r0 in range(0, m, RB):
            r = r0 + rows
            r2 = r[:, None]
            msk = (r2 < m) & colok
            a = tl.load(hp + r2 * n + c2, mask=msk, other=0.0)
            colj = tl.reduce(tl.where(c2 == j, a, 0.0), 1, _add)
            v = tl.where(r == j, 1.0, tl.where(r > j, colj * rinv, 0.0))
            a = a - tau * (v[:, None] * w[None, :])
            newcol = tl.where(r > j, v, tl.where(r == j, diag, colj))
            a = tl.where(c2 == j, newcol[:, None], a)
            tl.store(hp + r2 * n + c2, a, mask=msk)
            # x^T P also gives x^T V for the columns < j + 1 (x is zero down to row j + 1).
            x = tl.where(r > jn, tl.reduce(tl.where(c2 == jn, a, 0.0), 1, _add), 0.0)
            s += tl.reduce(a * x[:, None], 0, _add)
            arow += tl.reduce(tl.where(r2 == jn, a, 0.0), 0, _add)
        # The next pass reads elements other threads of this program stored: make them visible.
        tl.debug_barrier()
    tl.store(TAU + pid * n + k + cols, tauv, mask=cols < kb)
    tl.store(T + pid * (kb * kb) + ti * kb + c2, t, mask=(ti < kb) & colok)
    for r0 in range(0, m, RB):
        r = r0 + rows
        r2 = r[:, None]
        msk = (r2 < m) & colok
        a = tl.load(hp + r2 * n + c2, mask=msk, other=0.0)
        vb = tl.where(r2 > c2, a, tl.where(r2 == c2, 1.0, 0.0))
        tl.store(V + pid * v_bs + r2 * kb + c2, vb, mask=msk)


@triton.jit
def _panel_split(
    H, V, T, TAU, S, n, m, kb, k, v_bs, j, nsplit, rows_per,
    RB: tl.constexpr, NBP: tl.constexpr, PP: tl.constexpr,
):  # fmt: skip
    """Column step j of a tall panel whose rows are split over `nsplit` programs per matrix
    (grid (batch, nsplit), program p owns rows [p * rows_per, (p + 1) * rows_per)).

    Every program sums the partial statistics of column j (S[mat, j % 2, :nsplit]: x^T P and
    P[j, :] over each program's rows) in the same order, so all of them build the same
    reflector j; each applies it to its own rows and writes the partial statistics of column
    j + 1 to S[mat, (j + 1) % 2, p]. Program 0 writes tau_j and column j of T (dlarft).
    j = -1: statistics of column 0 only. j = kb - 1 also writes V for the program's rows."""
    mat = tl.program_id(0).to(tl.int64)
    p = tl.program_id(1)
    hp = H + mat * n * n + k * n + k
    rows = tl.arange(0, RB)
    cols = tl.arange(0, NBP)
    parts = tl.arange(0, PP)
    c2 = cols[None, :]
    ti = cols[:, None]
    colok = c2 < kb
    live = j >= 0
    sb = S + mat * (4 * PP * NBP)  # [2 parities, PP programs, 2 (x^T P, pivot row), NBP]
    sin = sb + ((j + 2) % 2) * (2 * PP * NBP) + parts[:, None] * (2 * NBP) + c2
    pmask = (parts[:, None] < nsplit) & colok & live
    s = tl.reduce(tl.load(sin, mask=pmask, other=0.0), 0, _add)
    arow = tl.reduce(tl.load(sin + NBP, mask=pmask, other=0.0), 0, _add)
    alpha = tl.reduce(tl.where(cols == j, arow, 0.0), 0, _add)
    xx = tl.maximum(tl.reduce(tl.where(cols == j, s, 0.0), 0, _add), 0.0)
    refl = xx > 0
    hyp = tl.sqrt_rn(alpha * alpha + xx)
    beta = tl.where(alpha >= 0, -hyp, hyp)
    denom = tl.where(refl, alpha - beta, 1.0)
    tau = tl.where(refl, -tl.div_rn(denom, tl.where(refl, beta, 1.0)), 0.0)
    diag = tl.where(refl, beta, alpha)
    rinv = tl.div_rn(1.0, denom)  # x scaled by the reciprocal: one division per column
    wg = arow + s * rinv
    w = tl.where(cols > j, wg, 0.0)
    # dlarft column j from the columns < j that earlier steps' program 0 wrote.
    tp = T + mat * (kb * kb)
    tprev = tl.load(tp + ti * kb + c2, mask=(ti < kb) & (c2 < j), other=0.0)
    tg = tl.reduce(tprev * tl.where(cols < j, wg, 0.0)[None, :], 1, _add)
    tcol = tl.where(cols < j, -tau * tg, tl.where(cols == j, tau, 0.0))
    first = (p == 0) & live
    tl.store(tp + cols * kb + j, tcol, mask=first & (cols < kb))
    tl.store(TAU + mat * n + k + j, tau, mask=first)
    jn = j + 1
    last = j == kb - 1
    s = tl.zeros([NBP], tl.float32)
    arow = tl.zeros([NBP], tl.float32)
    r_lo = p * rows_per
    for r0 in range(r_lo, r_lo + rows_per, RB):
        r = r0 + rows
        r2 = r[:, None]
        msk = (r2 < m) & colok
        a = tl.load(hp + r2 * n + c2, mask=msk, other=0.0)
        colj = tl.reduce(tl.where(c2 == j, a, 0.0), 1, _add)
        v = tl.where(r == j, 1.0, tl.where(r > j, colj * rinv, 0.0))
        a = a - tau * (v[:, None] * w[None, :])
        newcol = tl.where(r > j, v, tl.where(r == j, diag, colj))
        a = tl.where(c2 == j, newcol[:, None], a)
        tl.store(hp + r2 * n + c2, a, mask=msk & live)
        x = tl.where(r > jn, tl.reduce(tl.where(c2 == jn, a, 0.0), 1, _add), 0.0)
        s += tl.reduce(a * x[:, None], 0, _add)
        arow += tl.reduce(tl.where(r2 == jn, a, 0.0), 0, _add)
        vb = tl.where(r2 > c2, a, tl.where(r2 == c2, 1.0, 0.0))
        tl.store(V + mat * v_bs + r2 * kb + c2, vb, mask=msk & last)
    sout = sb + ((j + 1) % 2) * (2 * PP * NBP) + p * (2 * NBP) + cols
    tl.store(sout, s, mask=(cols < kb) & (jn < kb))
    tl.store(sout + NBP, arow, mask=(cols < kb) & (jn < kb))


@triton.jit
def _panel_persist(
    H, V, T, TAU, S, CNT, FLAG, n, m, kb, k, v_bs, nsplit, spin_max,
    RB: tl.constexpr, NBP: tl.constexpr, PP: tl.constexpr, SKIP: tl.constexpr,
):  # fmt: skip
    """Tall panel of one matrix in ONE launch over `nsplit` co-resident programs per matrix
    (grid (batch, nsplit); program p owns rows [p * RB, (p + 1) * RB) and keeps them in
    registers for the whole panel). Per column the programs exchange their partial statistics
    (x^T P and the pivot row, as `_panel_split`) through S and meet at a barrier: a counter per
    matrix in CNT (zeroed before the launch), arrived at with a release and polled with an
    acquire, at most spin_max polls in the whole launch: programs that were not co-resident
    (another process's kernels holding SMs, say) end instead of hanging the GPU, and a program
    that gave up writes NaN for its rows, tau and T, which every later update spreads through
    the trailing matrix: never a plausible wrong R. Every program sums the partials in the same
    order, so all build the same reflector and the same T; columns keep their unscaled values
    until the end, as in `_panel_reg`. Program 0 writes tau and T; every program its rows of H
    and V. One launch per panel instead of kb + 1; needs every program of a matrix
    resident at once (the launcher keeps batch * nsplit within the SM count), so the CPU
    interpreter, which runs programs one after another, takes nsplit = 1. SKIP: a matrix whose
    FLAG entry is nonzero returns at once (`_panel_gram` factored its panel)."""
    mat = tl.program_id(0).to(tl.int64)
    if SKIP:  # noqa: SIM102 - a constexpr: without SKIP no FLAG load is compiled at all
        if tl.load(FLAG + mat) != 0:
            return
    p = tl.program_id(1)
    hp = H + mat * n * n + k * n + k
    r = p * RB + tl.arange(0, RB)
    r2 = r[:, None]
    cols = tl.arange(0, NBP)
    c2 = cols[None, :]
    ti = cols[:, None]
    parts = tl.arange(0, PP)
    own = (r2 < m) & (c2 < kb)
    a = tl.load(hp + r2 * n + c2, mask=own, other=0.0)
    sb = S + mat * (4 * PP * NBP)  # [2 parities, PP programs, 2 (x^T P, pivot row), NBP]
    cnt = CNT + mat
    pmask = (parts[:, None] < nsplit) & (c2 < kb)
    # partial statistics of column 0 over this program's rows
    x = tl.where(r > 0, tl.reduce(tl.where(c2 == 0, a, 0.0), 1, _add), 0.0)
    s = tl.reduce(a * x[:, None], 0, _add)
    arow = tl.reduce(tl.where(r2 == 0, a, 0.0), 0, _add)
    tauv = tl.zeros([NBP], tl.float32)
    rinvv = tl.zeros([NBP], tl.float32)  # 1 / (alpha - beta) of each column
    diagv = tl.zeros([NBP], tl.float32)  # R's diagonal
    t = tl.zeros([NBP, NBP], tl.float32)
    spins = 0  # polls of the whole launch (not per barrier): a stuck launch ends within spin_max
    for j in range(0, kb):
        # publish this program's partials of column j (parity j % 2), then the barrier. Double
        # buffering is enough: a program writes parity j % 2 again (column j + 2) only after
        # barrier j + 1, which every program reaches after reading column j's partials.
        base = sb + (j % 2) * (2 * PP * NBP)
        sin = base + parts[:, None] * (2 * NBP) + c2
        tl.store(base + p * (2 * NBP) + cols, s, mask=cols < kb)
        tl.store(base + p * (2 * NBP) + NBP + cols, arow, mask=cols < kb)
        tl.debug_barrier()
        tl.atomic_add(cnt, 1, sem="release", scope="gpu")
        target = nsplit * (j + 1)
        while (tl.atomic_add(cnt, 0, sem="acquire", scope="gpu") < target) & (
            spins < spin_max
        ):
            spins += 1
        tl.debug_barrier()
        # .cg: from L2, never a stale L1 line (other SMs wrote these)
        s = tl.reduce(tl.load(sin, mask=pmask, other=0.0, cache_modifier=".cg"), 0, _add)
        arow = tl.reduce(
            tl.load(sin + NBP, mask=pmask, other=0.0, cache_modifier=".cg"), 0, _add
        )
        alpha = tl.reduce(tl.where(cols == j, arow, 0.0), 0, _add)
        xx = tl.maximum(tl.reduce(tl.where(cols == j, s, 0.0), 0, _add), 0.0)
        refl = xx > 0
        hyp = tl.sqrt_rn(alpha * alpha + xx)
        beta = tl.where(alpha >= 0, -hyp, hyp)
        denom = tl.where(refl, alpha - beta, 1.0)
        tau = tl.where(refl, -tl.div_rn(denom, tl.where(refl, beta, 1.0)), 0.0)
        diag = tl.where(refl, beta, alpha)
        rinv = tl.div_rn(1.0, denom)  # x scaled by the reciprocal: one division per column
        # v^T P: in the columns > j it is w; in the columns c < j, times 1 / (alpha_c - beta_c)
        # (column c still holds x_c unscaled), it is V[:, c]^T v_j for T (dlarft)
        wg = arow + s * rinv
        w = tl.where(cols > j, wg, 0.0)
        tg = tl.reduce(t * tl.where(cols < j, wg * rinvv, 0.0)[None, :], 1, _add)
        tcol = tl.where(cols < j, -tau * tg, tl.where(cols == j, tau, 0.0))
        t = tl.where(c2 == j, tcol[:, None], t)
        tauv = tl.where(cols == j, tau, tauv)
        rinvv = tl.where(cols == j, rinv, rinvv)
        diagv = tl.where(cols == j, diag, diagv)
        # apply reflector j to this program's rows (w is zero up to column j: column j keeps x)
        colj = tl.reduce(tl.where(c2 == j, a, 0.0), 1, _add)
        tv = tl.where(r == j, tau, tl.where(r > j, colj * (rinv * tau), 0.0))
        a = a - tv[:, None] * w[None, :]
        # partial statistics of column j + 1
        jn = j + 1
        x = tl.where(r > jn, tl.reduce(tl.where(c2 == jn, a, 0.0), 1, _add), 0.0)
        s = tl.reduce(a * x[:, None], 0, _add)
        arow = tl.reduce(tl.where(r2 == jn, a, 0.0), 0, _add)
    a = tl.where(r2 > c2, a * rinvv[None, :], tl.where(r2 == c2, diagv[None, :], a))
    # gave up at a barrier: this program's statistics may be stale, so its results are NaN
    gave_up = spins >= spin_max
    a = tl.where(gave_up, float("nan"), a)
    tauv = tl.where(gave_up, float("nan"), tauv)
    t = tl.where(gave_up, float("nan"), t)
    tl.store(hp + r2 * n + c2, a, mask=own)
    vb = tl.where(r2 > c2, a, tl.where(r2 == c2, 1.0, 0.0))
    tl.store(V + mat * v_bs + r2 * kb + c2, vb, mask=own)
    first = p == 0
    tl.store(TAU + mat * n + k + cols, tauv, mask=first & (cols < kb))
    tl.store(T + mat * (kb * kb) + ti * kb + c2, t, mask=first & (ti < kb) & (c2 < kb))


@triton.jit
def _gram_step(j, m, tol, tb, g, mt, reflv, rinvv, diagv, bad, ri, c2, cols):
    """Column j of `_panel_gram`'s walk on the top block tb with the statistics from G."""
    colj = tl.reduce(tl.where(c2 == j, tb, 0.0), 1, _add)  # by row
    arow = tl.reduce(tl.where(ri == j, tb, 0.0), 0, _add)  # by column
    grow = tl.reduce(tl.where(ri == j, g, 0.0), 0, _add)
    s = grow - tl.reduce(tb * tl.where(cols <= j, colj, 0.0)[:, None], 0, _add)
    gjj = tl.reduce(tl.where(cols == j, grow, 0.0), 0, _add)
    alpha = tl.reduce(tl.where(cols == j, arow, 0.0), 0, _add)
    xx = tl.reduce(tl.where(cols == j, s, 0.0), 0, _add)
    below = j < m - 1  # any row below the diagonal (a last row: no reflector)
    verdict = tl.where(below, tl.where(xx >= tol * gjj, 0, 1), 0)  # NaN fails too
    bad = tl.where(cols == j, verdict, bad)
    xx = tl.where(below, tl.maximum(xx, 0.0), 0.0)
    refl = xx > 0
    hyp = tl.sqrt_rn(alpha * alpha + xx)
    beta = tl.where(alpha >= 0, -hyp, hyp)
    denom = tl.where(refl, alpha - beta, 1.0)
    tau = tl.where(refl, -tl.div_rn(denom, tl.where(refl, beta, 1.0)), 0.0)
    rinv = tl.div_rn(1.0, denom)
    w = tl.where(cols > j, arow + s * rinv, 0.0)
    tv = tl.where(cols == j, tau, tl.where(cols > j, colj * (rinv * tau), 0.0))
    tb = tb - tv[:, None] * w[None, :]
    mcol = tl.reduce(tl.where(c2 == j, mt, 0.0), 1, _add)
    mt = mt - (mcol * (rinv * tau))[:, None] * w[None, :]
    reflv = tl.where(cols == j, tl.where(refl, 1.0, 0.0), reflv)  # which columns reflect
    rinvv = tl.where(cols == j, rinv, rinvv)
    diagv = tl.where(cols == j, tl.where(refl, beta, alpha), diagv)
    return tb, mt, reflv, rinvv, diagv, bad


@triton.jit
def _panel_gram(
    S, H, V, T, TAU, GB, CNT, FLAG, n, m, kb, k, v_bs, nsplit, spin_max, tol,
    RB: tl.constexpr, KC: tl.constexpr, NBP: tl.constexpr, PREC: tl.constexpr,
    EARLY_OUT: tl.constexpr,
):  # fmt: skip
    """Panel h[:, k:, k:k+kb] of one matrix over `nsplit` programs of RB rows each (grid
    (batch, nsplit); all resident at once where nsplit > 1, as `_panel_persist`) with two
    barriers instead of one a column. Householder reflectors keep the Gram matrix: after
    reflectors 0..j-1 the panel A_j = H_j-1..H_0 P still has A_j^T A_j = G = P^T P, and its
    rows 0..j-1 are R's. So column j's statistics over the rows below the diagonal are G's row
    j less the top rows' part: s_c = G_jc - sum_{r <= j} A_j[r, j] A_j[r, c] (s_j = ||x||^2).
    The programs add their rows' P^T P into GB with atomics (tl.dot over chunks of KC rows
    streamed from S) and meet at a barrier; each then walks the top NBP x NBP block alone (the
    same reflectors everywhere: the same G and code), composing each row's update a_r <- a_r (I -
    tau / (alpha - beta) e_j w^T) into M, so its rows become P M in one product per chunk, and
    v = (P M)[:, c] / (alpha_c - beta_c). V^T V through GB and a second barrier gives tau = 2 /
    ||v||^2 (each stored reflector orthogonal) and T (dlarft). Guard: the difference s_j loses
    digits as x shrinks against its column, so a column with ||x||^2 < tol * G_jj (or a NaN)
    refuses the matrix: FLAG[matrix] = 0, nothing written, and the column walk (SKIP) factors
    it. A zero column (G_jj = 0) is no reflector, as in the walk. A program that gave up at a
    barrier writes NaN for its rows (and tau and T if it is program 0), as `_panel_persist`."""
    mat = tl.program_id(0).to(tl.int64)
    p = tl.program_id(1)
    hp = H + mat * n * n + k * n + k
    sp = S + mat * n * n + k * n + k  # H, or the input for a first panel
    kr = tl.arange(0, KC)[:, None]
    cols = tl.arange(0, NBP)
    c2 = cols[None, :]
    ri = cols[:, None]  # row index of the NBP x NBP blocks
    r_lo = p * RB
    r_hi = tl.minimum(r_lo + RB, m)
    # every program reads the top block before the first barrier; program 0 writes it after
    # the second, which no program passes before all have arrived there
    top = (ri < m) & (c2 < kb)
    tb = tl.load(sp + ri * n + c2, mask=top, other=0.0)
    tile = ri * NBP + c2
    gb = GB + mat * (2 * NBP * NBP)  # [G, V^T V]
    cnt = CNT + mat
    g = tl.zeros([NBP, NBP], tl.float32)
    for r0 in range(r_lo, r_hi, KC):
        rows = r0 + kr
        a = tl.load(sp + rows * n + c2, mask=(rows < r_hi) & (c2 < kb), other=0.0)
        g += tl.dot(tl.trans(a), a, input_precision=PREC)
    tl.atomic_add(gb + tile, g, sem="relaxed")
    tl.debug_barrier()
    tl.atomic_add(cnt, 1, sem="release", scope="gpu")
    spins = 0
    while (tl.atomic_add(cnt, 0, sem="acquire", scope="gpu") < nsplit) & (spins < spin_max):
        spins += 1
    tl.debug_barrier()
    g = tl.load(gb + tile, cache_modifier=".cg")
    mt = tl.where(ri == c2, 1.0, 0.0)
    reflv = tl.zeros([NBP], tl.float32)
    rinvv = tl.zeros([NBP], tl.float32)
    diagv = tl.zeros([NBP], tl.float32)
    bad = tl.zeros([NBP], tl.int32)
    walk = True
    if EARLY_OUT:  # a matrix refused at column 0 (upper: nothing below the diagonal) skips the walk
        at0 = (ri == 0) & (c2 == 0)
        x0 = tl.reduce(tl.reduce(tl.where(at0, g - tb * tb, 0.0), 1, _add), 0, _add)
        g0 = tl.reduce(tl.reduce(tl.where(at0, g, 0.0), 1, _add), 0, _add)
        walk = x0 >= tol * g0
        bad = tl.where(walk, bad, 1)
    if walk:
        for j in range(0, kb):
            tb, mt, reflv, rinvv, diagv, bad = _gram_step(
                j, m, tol, tb, g, mt, reflv, rinvv, diagv, bad, ri, c2, cols
            )
    ok = tl.reduce(bad, 0, _add) == 0
    gave_up = spins >= spin_max
    tl.store(FLAG + mat, ok.to(tl.int32), mask=p == 0)
    if ok | gave_up:
        # rows below the top block: v = (P M) D, written now (no other program reads them)
        mt = mt * rinvv[None, :]
        vb = V + mat * v_bs
        gv = tl.zeros([NBP, NBP], tl.float32)
        for r0 in range(tl.maximum(r_lo, NBP), r_hi, KC):
            rows = r0 + kr
            inb = (rows < r_hi) & (c2 < kb)
            a = tl.load(sp + rows * n + c2, mask=inb, other=0.0)
            vr = tl.dot(a, mt, input_precision=PREC)
            tl.store(hp + rows * n + c2, vr, mask=inb)
            tl.store(vb + rows * kb + c2, vr, mask=inb)
            gv += tl.dot(tl.trans(vr), vr, input_precision=PREC)
        vtop = tl.where(ri > c2, tb * rinvv[None, :], tl.where(ri == c2, 1.0, 0.0))
        vtop = tl.where(top, vtop, 0.0)
        gv += tl.where(p == 0, tl.dot(tl.trans(vtop), vtop, input_precision=PREC), 0.0)
        tl.atomic_add(gb + NBP * NBP + tile, gv, sem="relaxed")
        tl.debug_barrier()
        tl.atomic_add(cnt, 1, sem="release", scope="gpu")
        while (tl.atomic_add(cnt, 0, sem="acquire", scope="gpu") < 2 * nsplit) & (
            spins < spin_max
        ):
            spins += 1
        tl.debug_barrier()
        gave_up = spins >= spin_max
        if gave_up:  # this program's statistics may be stale: NaN, never a plausible R
            for r0 in range(tl.maximum(r_lo, NBP), r_hi, KC):
                rows = r0 + kr
                nan = tl.full([KC, NBP], float("nan"), tl.float32)
                tl.store(hp + rows * n + c2, nan, mask=(rows < r_hi) & (c2 < kb))
        if p == 0:
            vtv = tl.load(gb + NBP * NBP + tile, cache_modifier=".cg")
            vv = tl.reduce(tl.where(ri == c2, vtv, 0.0), 0, _add)  # ||v_c||^2 by column
            tauv = tl.where(reflv > 0, tl.div_rn(2.0, tl.where(reflv > 0, vv, 1.0)), 0.0)
            t = tl.zeros([NBP, NBP], tl.float32)
            for j in range(0, kb):  # dlarft: T[:j, j] = -tau_j T[:j, :j] V[:, :j]^T v_j
                y = tl.reduce(tl.where(ri == j, vtv, 0.0), 0, _add)
                tg = tl.reduce(t * tl.where(cols < j, y, 0.0)[None, :], 1, _add)
                tj = tl.reduce(tl.where(cols == j, tauv, 0.0), 0, _add)
                t = tl.where(c2 == j, tl.where(ri < j, -tj * tg[:, None], 0.0), t)
                t = tl.where((c2 == j) & (ri == j), tj, t)
            htop = tl.where(ri < c2, tb, tl.where(ri == c2, diagv[None, :], tb * rinvv[None, :]))
            htop = tl.where(gave_up, float("nan"), htop)
            tauv = tl.where(gave_up, float("nan"), tauv)
            t = tl.where(gave_up, float("nan"), t)
            tl.store(hp + ri * n + c2, htop, mask=top)
            tl.store(vb + ri * kb + c2, vtop, mask=top)
            tl.store(TAU + mat * n + k + cols, tauv, mask=cols < kb)
            tl.store(T + mat * (kb * kb) + ri * kb + c2, t, mask=(ri < kb) & (c2 < kb))


@triton.jit
def _wy_w(
    H, V, T, W, n, m, kb, k, c0, nc, v_bs, rows_per,
    NBP: tl.constexpr, BK: tl.constexpr, BN: tl.constexpr, PREC: tl.constexpr,
):  # fmt: skip
    """W_z = T^T (V^T C) over the rows [z * rows_per, (z + 1) * rows_per) for BN trailing
    columns of one matrix (grid (batch, column tiles, row ranges z)): C = H[k:, c0:c0+nc], V (m x
    kb, row-major, V_BS per matrix), T (kb x kb); W_z is kb x nc, the partials of a matrix
    consecutive (T^T is linear: W = sum_z W_z)."""
    mat = tl.program_id(0).to(tl.int64)
    cc = tl.program_id(1) * BN + tl.arange(0, BN)
    z = tl.program_id(2)
    ci = tl.arange(0, NBP)
    rk = tl.arange(0, BK)
    cp = H + mat * n * n + k * n + c0
    vp = V + mat * v_bs
    acc = tl.zeros([NBP, BN], tl.float32)
    r_hi = tl.minimum(m, (z + 1) * rows_per)
    for r0 in range(z * rows_per, r_hi, BK):
        r = r0 + rk
        vt = tl.load(
            vp + r[None, :] * kb + ci[:, None],
            mask=(ci[:, None] < kb) & (r[None, :] < r_hi),
            other=0.0,
        )
        c = tl.load(
            cp + r[:, None] * n + cc[None, :],
            mask=(r[:, None] < r_hi) & (cc[None, :] < nc),
            other=0.0,
        )
        acc = tl.dot(vt, c, acc, input_precision=PREC)
    tp = T + mat * (kb * kb)
    ok = (ci[:, None] < kb) & (ci[None, :] < kb)
    tt = tl.load(tp + ci[None, :] * kb + ci[:, None], mask=ok, other=0.0)  # tt[a, b] = T[b, a]
    w = tl.dot(tt, acc, input_precision=PREC)
    wp = W + (mat * tl.num_programs(2) + z) * (kb * nc)
    tl.store(wp + ci[:, None] * nc + cc[None, :], w, mask=(ci[:, None] < kb) & (cc[None, :] < nc))


@triton.jit
def _wy_update(
    H, V, W, n, m, kb, k, c0, nc, v_bs, ksplit,
    NBP: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr, PREC: tl.constexpr,
):  # fmt: skip
    """C -= V W on a BM x BN tile of one matrix's trailing columns C = H[k:, c0:c0+nc] (grid
    (batch, tiles)), W the sum of the matrix's `ksplit` partials W_z."""
    mat = tl.program_id(0).to(tl.int64)
    tile = tl.program_id(1)
    ntn = tl.cdiv(nc, BN)
    r = (tile // ntn) * BM + tl.arange(0, BM)
    cc = (tile % ntn) * BN + tl.arange(0, BN)
    ci = tl.arange(0, NBP)
    v = tl.load(
        V + mat * v_bs + r[:, None] * kb + ci[None, :],
        mask=(r[:, None] < m) & (ci[None, :] < kb),
        other=0.0,
    )
    wmask = (ci[:, None] < kb) & (cc[None, :] < nc)
    wp = W + mat * ksplit * (kb * nc) + ci[:, None] * nc + cc[None, :]
    w = tl.load(wp, mask=wmask, other=0.0)
    for z in range(1, ksplit):
        w += tl.load(wp + z * (kb * nc), mask=wmask, other=0.0)
    upd = tl.dot(v, w, input_precision=PREC)
    cptr = H + mat * n * n + k * n + c0 + r[:, None] * n + cc[None, :]
    msk = (r[:, None] < m) & (cc[None, :] < nc)
    c = tl.load(cptr, mask=msk, other=0.0)
    tl.store(cptr, c - upd, mask=msk)


@triton.jit
def _wy_strip(
    S, H, V, T, n, m, kb, k, c0, nc, v_bs,
    NBP: tl.constexpr, BK: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr, PREC: tl.constexpr,
    STRIPS_FIRST: tl.constexpr, REVERSE: tl.constexpr,
):  # fmt: skip
    """C -= V (T^T (V^T C)) on a strip of BN trailing columns of one matrix, C = H[k:,
    c0:c0+nc] (grid (batch, strips), or (strips, batch) with STRIPS_FIRST): the strip is read
    for W = T^T V^T C, then read again (mostly from L2, it was just read) and written for
    C -= V W. Two passes over C from memory instead of the three of _wy_w + _wy_update, one
    launch instead of two, and W never leaves the program. STRIPS_FIRST launches the strips of
    a matrix one after another, so they run at the same time and V (read twice by each) is
    fetched from memory once. C is read from S (H, or the input for the first update, which
    then writes H's trailing columns for the first time) and written to H. REVERSE: the second
    pass walks the rows bottom up, starting where the first ended (those rows are the likeliest
    still in L2), and ends at the top, where the next panel's first pass starts."""
    if STRIPS_FIRST:
        mat = tl.program_id(1).to(tl.int64)
        strip = tl.program_id(0)
    else:
        mat = tl.program_id(0).to(tl.int64)
        strip = tl.program_id(1)
    cc = strip * BN + tl.arange(0, BN)
    ci = tl.arange(0, NBP)
    coff = mat * n * n + k * n + c0
    cp = S + coff
    vp = V + mat * v_bs
    cok = cc[None, :] < nc
    acc = tl.zeros([NBP, BN], tl.float32)
    rk = tl.arange(0, BK)
    for r0 in range(0, m, BK):
        r = r0 + rk
        vt = tl.load(
            vp + r[None, :] * kb + ci[:, None],
            mask=(ci[:, None] < kb) & (r[None, :] < m),
            other=0.0,
        )
        c = tl.load(cp + r[:, None] * n + cc[None, :], mask=(r[:, None] < m) & cok, other=0.0)
        acc = tl.dot(vt, c, acc, input_precision=PREC)
    ok = (ci[:, None] < kb) & (ci[None, :] < kb)
    tt = tl.load(T + mat * (kb * kb) + ci[None, :] * kb + ci[:, None], mask=ok, other=0.0)
    w = tl.dot(tt, acc, input_precision=PREC)  # [NBP, BN]
    rm = tl.arange(0, BM)
    nblk = tl.cdiv(m, BM)
    for i in range(0, nblk):
        r = (nblk - 1 - i if REVERSE else i) * BM + rm
        vb = tl.load(
            vp + r[:, None] * kb + ci[None, :],
            mask=(r[:, None] < m) & (ci[None, :] < kb),
            other=0.0,
        )
        upd = tl.dot(vb, w, input_precision=PREC)
        roff = r[:, None] * n + cc[None, :]
        msk = (r[:, None] < m) & cok
        c = tl.load(cp + roff, mask=msk, other=0.0)
        tl.store(H + coff + roff, c - upd, mask=msk)


_SMS: dict = {}


def _sm_count(device: torch.device) -> int:
    """Streaming multiprocessors of a CUDA device (1 elsewhere: the interpreter)."""
    if device.type != "cuda":
        return 1
    if device not in _SMS:
        _SMS[device] = torch.cuda.get_device_properties(device).multi_processor_count
    return _SMS[device]


def _warps(elems: int, per_thread: int) -> int:
    w = triton.next_power_of_2(max(1, elems // (32 * per_thread)))
    return max(1, min(MAX_WARPS, w))


def _per_program(batch: int, tile: int, on_gpu: bool) -> int:
    """Matrices per program: 1 on the GPU once a matrix fills GPU_TILE elements; on the CPU
    (Triton interpreter, where every program costs Python overhead per op) up to CPU_TILE."""
    budget = GPU_TILE if on_gpu else CPU_TILE
    return max(1, min(triton.next_power_of_2(batch), budget // tile))


def _split_programs(batch: int, m: int, nbp: int) -> int:
    """Programs per matrix for a tall panel of m rows: 0 keeps one streaming program per
    matrix (enough matrices to fill the GPU), else the rows are split (few matrices)."""
    if SPLIT_TARGET <= 0 or m * nbp <= REG_ELEMS:
        return 0
    p = min(MAX_SPLIT, triton.cdiv(m, SPLIT_MIN_ROWS), triton.cdiv(SPLIT_TARGET, batch))
    return p if p >= SPLIT_MIN else 0


def _split_panel(h, tau, v, t, k, kb, nsplit):
    """Panel h[:, k:, k:k+kb] with its rows split over nsplit programs per matrix: kb + 1
    launches of `_panel_split` (statistics of column 0, then one per column)."""
    batch, n, _ = h.shape
    m = n - k
    nbp = max(2, triton.next_power_of_2(kb))
    rows = triton.cdiv(m, nsplit)
    rb = min(triton.next_power_of_2(rows), max(2, CHUNK_ELEMS // nbp))
    rows_per = triton.cdiv(rows, rb) * rb
    nsplit = triton.cdiv(m, rows_per)
    pp = max(2, triton.next_power_of_2(nsplit))
    s = torch.empty(batch * 4 * pp * nbp, dtype=h.dtype, device=h.device)
    warps = _warps(rb * nbp, ELEMS_PER_THREAD)
    for j in range(-1, kb):
        _panel_split[(batch, nsplit)](
            h, v, t, tau, s, n, m, kb, k, v.shape[1], j, nsplit, rows_per,
            RB=rb, NBP=nbp, PP=pp, num_warps=warps,
        )  # fmt: skip


def _persist_shape(
    batch: int, m: int, nbp: int, device: torch.device, fits: bool = True
) -> tuple[int, int] | None:
    """(programs per matrix, rows per program) of a persistent panel, or None: where a panel
    is too tall for one program's registers and the batch is small enough that every program
    of it can be resident at once (batch * programs <= SMs * PERSIST_PER_SM), each program's
    rows (a power of two >= PERSIST_MIN_ROWS) fitting its registers. The CPU interpreter runs
    programs one after another, so a barrier between them would never open: there it takes one
    program per matrix wherever the GPU would split the panel (the same code, its barrier
    passed at once). fits=False: also for a panel that would fit one program's registers
    (PERSIST_FIRST_ROWS)."""
    if not PERSIST_PANEL or (fits and m * nbp <= REG_ELEMS):
        return None
    if device.type != "cuda":
        return (1, max(2, triton.next_power_of_2(m))) if _split_programs(batch, m, nbp) else None
    slots = _sm_count(device) * PERSIST_PER_SM // batch  # programs per matrix that fit
    if slots < 2:
        return None
    rb = max(PERSIST_MIN_ROWS, triton.next_power_of_2(triton.cdiv(m, slots)))
    p = triton.cdiv(m, rb)
    if rb * nbp > REG_ELEMS or p < 2:
        return None
    return p, rb


def _persist_plan(batch: int, m: int, nbp: int, device: torch.device) -> tuple[int, int] | None:
    """The persistent panel `_factor_panel` takes for a panel of m rows, (programs per matrix,
    rows per program), or None for the other paths: panels too tall for one program's
    registers (`_persist_shape`), and with PERSIST_FIRST_ROWS also those in the upper half of
    the register range whose persistent programs would hold at most that many rows."""
    mb = max(2, triton.next_power_of_2(m))
    if mb * nbp > REG_ELEMS:
        return _persist_shape(batch, m, nbp, device)
    if (
        not PERSIST_FIRST_ROWS
        or batch > PERSIST_FIRST_MAX_BATCH
        or 2 * mb * nbp <= REG_ELEMS
        or device.type != "cuda"
    ):
        return None
    shape = _persist_shape(batch, m, nbp, device, fits=False)
    return shape if shape is not None and shape[1] <= PERSIST_FIRST_ROWS else None


def _persist_panel(h, tau, v, t, k, kb, nsplit, rb):
    """Panel h[:, k:, k:k+kb] as one launch of `_panel_persist` over nsplit programs per
    matrix of rb rows each (plus the zeroing of its partials and barrier counters)."""
    batch, n, _ = h.shape
    nbp = max(2, triton.next_power_of_2(kb))
    pp = max(2, triton.next_power_of_2(nsplit))
    gram = _gram_panel(kb, nbp, rb, h.device)
    # the partials and the barrier counters in one zeroed buffer (one memset): a program that
    # gives up at a barrier reads zeros, not another call's partials, before it writes NaN.
    # With the Gram panel: its G and V^T V, its counters and its verdicts too
    size = batch * 4 * pp * nbp
    words = size + batch + (_gram_words(batch, nbp) if gram else 0)
    s = torch.zeros(words, dtype=torch.float32, device=h.device)
    cnt = s[size : size + batch].view(torch.int32)
    flag = _gram_launch(h, tau, v, t, k, kb, nsplit, rb, s[size + batch :]) if gram else cnt
    _panel_persist[(batch, nsplit)](
        h, v, t, tau, s, cnt, flag, n, n - k, kb, k, v.shape[1], nsplit, PERSIST_SPIN_MAX,
        RB=rb, NBP=nbp, PP=pp, SKIP=gram,
        num_warps=_warps(rb * nbp, PERSIST_ELEMS_PER_THREAD or ELEMS_PER_THREAD),
    )  # fmt: skip


def _gram_panel(kb: int, nbp: int, rb: int, device: torch.device) -> bool:
    """Whether a persistent panel goes to `_panel_gram` first (GRAM_PANEL): panels of at least
    16 columns and programs of at least 16 rows (tl.dot's smallest), on CUDA (or the CPU when a
    test asks)."""
    return GRAM_PANEL and (device.type == "cuda" or GRAM_CPU) and nbp >= 16 and rb >= 16


def _gram_words(batch: int, nbp: int) -> int:
    """float32 words of `_panel_gram`'s zeroed scratch: G and V^T V, a counter and a verdict
    per matrix."""
    return batch * (2 * nbp * nbp + 2)


def _gram_launch(h, tau, v, t, k, kb, nsplit, rb, s, src=None) -> torch.Tensor:
    """Launch `_panel_gram` on the panel h[:, k:, k:k+kb] (read from src where given) over
    nsplit programs of rb rows per matrix, with s (zeroed, `_gram_words` long) as its scratch;
    returns the verdicts (int32 per matrix, nonzero: factored), for the walk's SKIP."""
    batch, n, _ = h.shape
    nbp = max(2, triton.next_power_of_2(kb))
    g = batch * 2 * nbp * nbp
    cnt = s[g : g + batch].view(torch.int32)
    flag = s[g + batch : g + 2 * batch].view(torch.int32)
    _panel_gram[(batch, nsplit)](
        h if src is None else src, h, v, t, tau, s[:g], cnt, flag, n, n - k, kb, k,
        v.shape[1], nsplit, PERSIST_SPIN_MAX, GRAM_TOL, RB=rb, NBP=nbp,
        KC=min(GRAM_SPLIT_KC if nsplit > 1 else GRAM_KC, rb),
        PREC=DOT_PRECISION if h.is_cuda else "ieee", EARLY_OUT=GRAM_EARLY_OUT,
        num_warps=GRAM_WARPS,
    )  # fmt: skip
    return flag


def _gram_reg_plan(batch: int, m: int, kb: int, nbp: int, device: torch.device):
    """(programs per matrix, rows per program) of a Gram panel in front of a register panel of m
    rows (`_panel_reg` then walks the refused matrices), or None: panels of GRAM_REG_MIN_ROWS+
    rows, over GRAM_REG_MIN_SPLIT+ programs a matrix that are resident at once
    (`_persist_shape`), else one a matrix for batches of GRAM_REG_MIN_BATCH+ matrices (the
    interpreter: only that)."""
    if not _gram_panel(kb, nbp, 16, device) or m < max(GRAM_REG_MIN_ROWS, nbp):
        return None
    if device.type == "cuda" and GRAM_REG_SPLIT and PERSIST_PANEL:
        shape = _persist_shape(batch, m, nbp, device, fits=False)
        if shape is not None and shape[0] >= GRAM_REG_MIN_SPLIT:
            return shape
    if GRAM_REG_MIN_BATCH and batch >= GRAM_REG_MIN_BATCH:
        return 1, max(16, triton.next_power_of_2(m))
    return None


def _tsqr_shape(m: int, kb: int, nbp: int) -> tuple[int, int] | None:
    """(blocks, rows per block) of a TSQR panel of m rows, or None where it does not fit: each
    block (a power of two >= the panel width) and the stacked R's of all blocks in registers."""
    rmax = REG_ELEMS // nbp
    p = min(TSQR_BLOCKS, rmax // max(kb, 1))
    if p < 2:
        return None
    r = max(nbp, triton.next_power_of_2(triton.cdiv(m, p)))
    if r > rmax:
        return None
    return triton.cdiv(m, r), r


def _reg_panel(x, v, t, tau, kb, nbp):
    """Factor the first kb columns of every (rows x rows) matrix of x with `_panel_reg`."""
    batch, rows, _ = x.shape
    mb = max(2, triton.next_power_of_2(rows))
    mpp = _per_program(batch, mb * nbp, x.is_cuda)
    _panel_reg[(triton.cdiv(batch, mpp),)](
        x, x, v, t, tau, tau, batch, rows, rows, kb, 0, v.shape[1], MPP=mpp, MB=mb, NBP=nbp,
        COL_UNROLL=COL_UNROLL, SKIP=False,
        num_warps=_warps(mpp * mb * nbp, ELEMS_PER_THREAD),
    )  # fmt: skip


def _tsqr_panel(h, tau, v, t, k, kb, nblk, r):
    """Panel h[:, k:, k:k+kb] (m rows) as a TSQR: its nblk row blocks of r rows factored in
    registers in one launch, their stacked R's in a second; the panel's Q (m x kb) formed from
    both levels' compact WY; then its Householder form rebuilt from Q (Ballard, Demmel, Grigori,
    Jacquelin, Knight, Nguyen 2015, as in cholqr_reconstruct.py): Q - [S; 0] = L U without
    pivoting, V = L, T = -U S V1^-T, R = S R_tsqr, tau = diag(T). Fixed launches per panel
    instead of kb + 1 (the split panel's chain of per-column launches)."""
    batch, n, _ = h.shape
    m = n - k
    nbp = max(2, triton.next_power_of_2(kb))
    dev, dt = h.device, h.dtype
    pr = nblk * r
    blk = torch.empty(batch, pr, r, dtype=dt, device=dev)
    blk[:, :m, :kb] = h[:, k:, k : k + kb]
    blk[:, m:, :kb] = 0.0
    bb = batch * nblk
    v1 = torch.empty(bb, r * kb, dtype=dt, device=dev)
    t1 = torch.empty(bb, kb * kb, dtype=dt, device=dev)
    tau1 = torch.empty(bb, r, dtype=dt, device=dev)
    blk4 = blk.view(batch, nblk, r, r)
    _reg_panel(blk.view(bb, r, r), v1, t1, tau1, kb, nbp)
    rows2 = nblk * kb
    st = torch.empty(batch, rows2, rows2, dtype=dt, device=dev)
    st[:, :, :kb].view(batch, nblk, kb, kb).copy_(torch.triu(blk4[:, :, :kb, :kb]))
    v2 = torch.empty(batch, rows2 * kb, dtype=dt, device=dev)
    t2 = torch.empty(batch, kb * kb, dtype=dt, device=dev)
    tau2 = torch.empty(batch, rows2, dtype=dt, device=dev)
    _reg_panel(st, v2, t2, tau2, kb, nbp)
    # Q of the stacked level, then of every block: Q = E - V (T (V1^T E))
    vs = v2.view(batch, rows2, kb)
    qs = -(vs @ (t2.view(batch, kb, kb) @ vs[:, :kb].mT))
    qs[:, :kb].diagonal(dim1=1, dim2=2).add_(1.0)
    vb = v1.view(bb, r, kb)
    qsb = qs.view(bb, kb, kb)
    qb = -(vb @ (t1.view(bb, kb, kb) @ (vb[:, :kb].mT @ qsb)))
    qb[:, :kb] += qsb
    q = qb.view(batch, pr, kb)[:, :m]
    lu = q[:, :kb].contiguous()
    s = torch.empty(batch, kb, dtype=dt, device=dev)
    _lu_signs[(batch,)](lu, s, kb, NBP=nbp, num_warps=_warps(nbp * nbp, ELEMS_PER_THREAD))
    u = torch.triu(lu)
    l1 = torch.tril(lu, -1)
    l1.diagonal(dim1=1, dim2=2).fill_(1.0)
    vv = v[:, : m * kb].view(batch, m, kb)
    vv[:, :kb] = l1
    vv[:, kb:] = torch.linalg.solve_triangular(u, q[:, kb:], upper=True, left=False)
    tt = _t_of(t, batch, kb)
    tt.copy_(
        torch.linalg.solve_triangular(
            l1.mT, -u * s[:, None, :], upper=True, left=False, unitriangular=True
        )
    )
    tau[:, k : k + kb] = tt.diagonal(dim1=1, dim2=2)
    r_h = torch.triu(st[:, :kb, :kb]) * s[:, :, None]
    h[:, k : k + kb, k : k + kb] = r_h + torch.tril(lu, -1)
    h[:, k + kb :, k : k + kb] = vv[:, kb:]


def _factor_panel(h, tau, v, t, k, kb, lanes: int = 1, src=None):
    """Factor the panel h[:, k:, k:k+kb] in place; V (unit lower-trapezoidal, (n - k) x kb) and
    T (kb x kb) of each matrix go to the start of its row of the flat buffers v and t. lanes:
    how many slices of the batch like this one run at once (`_factor_lanes`), for the wide rule.
    src: where the panel is read from (h unless `_reads_source` allowed the input)."""
    batch, n, _ = h.shape
    m = n - k
    nbp = max(2, triton.next_power_of_2(kb))
    mb = max(2, triton.next_power_of_2(m))
    v_bs = v.shape[1]
    if persist := _persist_plan(batch, m, nbp, h.device):
        _persist_panel(h, tau, v, t, k, kb, *persist)
    elif mb * nbp <= REG_ELEMS:
        mpp = _per_program(batch, mb * nbp, h.is_cuda)
        grid = (triton.cdiv(batch, mpp),)
        if REG_SPLIT and nbp >= 32:
            _panel_reg2[grid](
                h, v, t, tau, batch, n, m, kb, k, v_bs, MPP=mpp, MB=mb, NBH=nbp // 2,
                COL_UNROLL=COL_UNROLL, KC=min(REG_SPLIT_KC, mb), STATS=REG_STATS,
                PREC=DOT_PRECISION if h.is_cuda else "ieee",
                num_warps=_warps(mpp * mb * nbp, ELEMS_PER_THREAD),
            )  # fmt: skip
            return
        wide = grid[0] * lanes >= WIDE_PROGRAMS_PER_SM * _sm_count(h.device)
        flag = None  # `_panel_gram`'s or `_panel_chol`'s verdicts, which `_panel_reg` skips
        if gplan := _gram_reg_plan(batch, m, kb, nbp, h.device):
            scratch = torch.zeros(_gram_words(batch, nbp), dtype=torch.float32, device=h.device)
            flag = _gram_launch(h, tau, v, t, k, kb, *gplan, scratch, src)
            mpp = 1
            grid = (batch,)
        elif _chol_panel(batch, m, kb, nbp, h.device):
            flag = torch.empty(batch, dtype=torch.int32, device=h.device)
            _panel_chol[(batch,)](
                h if src is None else src, h, v, t, tau, flag, n, m, k, v_bs, CHOL_TOL,
                CHOL_GUARD, CHOL_KAPPA, NBP=nbp, KC=CHOL_KC,
                PREC=DOT_PRECISION if h.is_cuda else "ieee", num_warps=CHOL_WARPS,
            )  # fmt: skip
            mpp = 1
            grid = (batch,)
        _panel_reg[grid](
            h if src is None else src, h, v, t, tau, tau if flag is None else flag, batch, n, m,
            kb, k, v_bs, MPP=mpp, MB=mb, NBP=nbp, COL_UNROLL=COL_UNROLL, SKIP=flag is not None,
            num_warps=_warps(mpp * mb * nbp, WIDE_ELEMS_PER_THREAD if wide else ELEMS_PER_THREAD),
        )  # fmt: skip
    elif _split_programs(batch, m, nbp):
        shape = _tsqr_shape(m, kb, nbp) if TSQR_PANEL else None
        if shape is not None:
            _tsqr_panel(h, tau, v, t, k, kb, *shape)
        else:
            _split_panel(h, tau, v, t, k, kb, _split_programs(batch, m, nbp))
    else:
        rb = max(16, min(mb, CHUNK_ELEMS // nbp))
        _panel_stream[(batch,)](
            h, v, t, tau, n, m, kb, k, v_bs, RB=rb, NBP=nbp,
            num_warps=STREAM_WARPS,
        )  # fmt: skip


def _chol_panel(batch: int, m: int, kb: int, nbp: int, device: torch.device) -> bool:
    """Whether a register panel of m rows goes to `_panel_chol` first (CHOL_PANEL): whole
    panels of at least 16 columns (tl.dot's smallest), at least CHOL_MIN_ROWS rows, on CUDA
    (or the CPU when a test asks)."""
    on = device.type == "cuda" or CHOL_CPU
    return CHOL_PANEL and on and kb == nbp >= 16 and m >= max(CHOL_MIN_ROWS, nbp)


def _t_of(t: torch.Tensor, batch: int, kb: int) -> torch.Tensor:
    """T of every matrix of a kb-wide panel as (batch, kb, kb): the kernels pack the T's kb * kb
    apart in the flat buffer t (batch x nb * nb), so for a panel narrower than nb (the last one
    of a two-level block) this is not t[:, : kb * kb]."""
    return t.view(-1)[: batch * kb * kb].view(batch, kb, kb)


def _apply_panel(h, v, t, k, kb, end=None, start=None, src=None):
    """C <- (I - V T^T V^T) C for the trailing columns C = h[:, k:, start:end] (start: k + kb,
    or later with LOOKAHEAD; end: n, or the end of a two-level block or of the next panel):
    three fp32 bmm, or the Triton kernels on CUDA. src: C's source (the input, where
    `_reads_source` allowed it: the strip kernel)."""
    batch, n, _ = h.shape
    m = n - k
    end = n if end is None else end
    start = k + kb if start is None else start
    vv = v[:, : m * kb].view(batch, m, kb)
    tt = _t_of(t, batch, kb)
    c = h[:, k:, start:end]
    if _triton_update(h.device):
        _apply_panel_triton(h, v, t, k, kb, start, end - start, src)
        return
    assert src is None, "only the strip kernel reads the input"
    w = torch.bmm(tt.mT, torch.bmm(vv.mT, c))
    c.baddbmm_(vv, w, alpha=-1.0)


def _wy_ranges(batch: int, strips: int, m: int, device: torch.device) -> int:
    """Row ranges W = T^T V^T C is split into (WY_KSPLIT; 0: enough for WY_PROGRAMS programs
    per SM, each range at least 4 row steps)."""
    if WY_KSPLIT > 0:
        return WY_KSPLIT
    want = triton.cdiv(WY_PROGRAMS * _sm_count(device), batch * strips)
    return max(1, min(want, m // (4 * DOT_BK)))


def _triton_update(device: torch.device) -> bool:
    """Whether trailing updates run as the Triton kernels (USE_TF32X3 on CUDA, or a test's
    FORCE_TRITON_UPDATE) rather than three torch bmm."""
    return USE_TF32X3 and device.type == "cuda" or FORCE_TRITON_UPDATE


def _dot_bn(n: int) -> int:
    """Columns of C per update tile for matrices of order n: SMALL_DOT_BN up to SMALL_NB_MAX_N."""
    return SMALL_DOT_BN if SMALL_DOT_BN and n <= SMALL_NB_MAX_N else DOT_BN


def _strip_update(batch: int, n: int, nc: int, device: torch.device) -> bool:
    """Whether an update of nc columns of order-n matrices takes the strip kernel (`_wy_strip`)."""
    programs = batch * triton.cdiv(nc, _dot_bn(n))
    return FUSE_UPDATE and programs >= FUSE_MIN_PROGRAMS * _sm_count(device)


def _apply_panel_triton(h, v, t, k, kb, c0, nc, src=None):
    """The same update as two Triton kernels on tensor cores (tl.dot, input_precision
    DOT_PRECISION: "tf32x3" splits each float32 operand into a TF32 high and low part and sums
    three TF32 products, ~float32 accuracy): W = T^T (V^T C), then C -= V W, on the nc columns
    from column c0."""
    batch, n, _ = h.shape
    m = n - k
    nbp = max(16, triton.next_power_of_2(kb))
    prec = DOT_PRECISION if h.is_cuda else "ieee"
    bn = _dot_bn(n)
    strips = triton.cdiv(nc, bn)
    if _strip_update(batch, n, nc, h.device):
        first = STRIPS_FIRST and batch <= 65535  # a grid's second axis holds at most 65535
        _wy_strip[(strips, batch) if first else (batch, strips)](
            h if src is None else src, h, v, t, n, m, kb, k, c0, nc, v.shape[1],
            NBP=nbp, BK=DOT_BK, BM=DOT_BM, BN=bn, PREC=prec, STRIPS_FIRST=first,
            REVERSE=STRIP_REVERSE and m >= STRIP_REVERSE_MIN_ROWS,
            num_warps=STRIP_WARPS,
            **({"num_stages": STRIP_STAGES} if STRIP_STAGES else {}),
        )  # fmt: skip
        return
    assert src is None, "only the strip kernel reads the input"
    # row ranges of W (WY_KSPLIT), whole BK steps each; as many as that leaves non-empty
    rows_per = triton.cdiv(triton.cdiv(m, _wy_ranges(batch, strips, m, h.device)), DOT_BK) * DOT_BK
    ks = triton.cdiv(m, rows_per)
    w = torch.empty(batch * ks * kb * nc, dtype=h.dtype, device=h.device)
    _wy_w[(batch, strips, ks)](
        h, v, t, w, n, m, kb, k, c0, nc, v.shape[1], rows_per, NBP=nbp, BK=DOT_BK, BN=bn,
        PREC=prec, num_warps=4,
    )  # fmt: skip
    tiles = triton.cdiv(m, DOT_BM) * triton.cdiv(nc, bn)
    _wy_update[(batch, tiles)](
        h, v, w, n, m, kb, k, c0, nc, v.shape[1], ks, NBP=nbp, BM=DOT_BM, BN=bn, PREC=prec,
        num_warps=4,
    )  # fmt: skip


@triton.jit
def _qr_fused(
    A, H, TAU, batch, n, k, m,
    MPP: tl.constexpr, BLOCK: tl.constexpr, COL_UNROLL: tl.constexpr,
):  # fmt: skip
    """QR of the trailing m x m square at (k, k) of MPP matrices per program (row stride n),
    as one [MPP, BLOCK, BLOCK] register block: read from A, write R / v into H and the taus into
    TAU[:, k : k + m]. A may be H."""
    mats = tl.program_id(0).to(tl.int64) * MPP + tl.arange(0, MPP)
    mok = (mats < batch)[:, None, None]
    idx = tl.arange(0, BLOCK)
    r2 = idx[None, :]  # row index of a per-matrix column vector [MPP, BLOCK]
    c2 = idx[None, :]  # column index of a per-matrix row vector [MPP, BLOCK]
    r3 = idx[None, :, None]
    c3 = idx[None, None, :]
    inb = mok & (r3 < m) & (c3 < m)
    off = r3 * n + c3
    src = (A + (mats * n * n + (k * n + k)))[:, None, None] + off
    a = tl.load(src, mask=inb, other=0.0)
    tauv = tl.zeros([MPP, BLOCK], tl.float32)
    rinvv = tl.zeros([MPP, 1, BLOCK], tl.float32)  # 1 / (alpha - beta) of each column
    diagv = tl.zeros([MPP, 1, BLOCK], tl.float32)  # R's diagonal
    # As in _panel_reg: column j keeps its unscaled values until the loop ends (later reflectors
    # never touch it), then one pass scales every v and writes the diagonal.
    for j0 in range(0, m, COL_UNROLL):
        for u in tl.static_range(COL_UNROLL):
            j = j0 + u
            atr = r2 == j
            colj = tl.reduce(tl.where(c3 == j, a, 0.0), 2, _add)  # [MPP, BLOCK] over rows
            alpha = tl.reduce(tl.where(atr, colj, 0.0), 1, _add)  # [MPP]
            x = tl.where(r2 > j, colj, 0.0)
            xx = tl.reduce(x * x, 1, _add)
            refl = xx > 0
            hyp = tl.sqrt_rn(alpha * alpha + xx)
            beta = tl.where(alpha >= 0, -hyp, hyp)
            denom = tl.where(refl, alpha - beta, 1.0)
            tau = tl.where(refl, -tl.div_rn(denom, tl.where(refl, beta, 1.0)), 0.0)
            diag = tl.where(refl, beta, alpha)
            rinv = tl.div_rn(tl.full(denom.shape, 1.0, tl.float32), denom)
            v = tl.where(atr, 1.0, x * rinv[:, None])
            w = tl.where(c2 > j, tl.reduce(a * v[:, :, None], 1, _add), 0.0)  # v^T A, trailing
            a = a - (tau[:, None] * v)[:, :, None] * w[:, None, :]
            tauv = tl.where(c2 == j, tau[:, None], tauv)
            rinvv = tl.where(c3 == j, rinv[:, None, None], rinvv)
            diagv = tl.where(c3 == j, diag[:, None, None], diagv)
    a = tl.where(r3 > c3, a * rinvv, tl.where(r3 == c3, diagv, a))
    tl.store((H + (mats * n * n + (k * n + k)))[:, None, None] + off, a, mask=inb)
    tl.store(TAU + mats[:, None] * n + k + c2, tauv, mask=(mats < batch)[:, None] & (c2 < m))


def _fused_unroll(m: int) -> int:
    """COL_UNROLL for a fused square of m columns, 1 up to COL_UNROLL columns: there every
    unrolled step past the last column is waste, and n = 1 and 2 are slower unrolled by 4 (the
    bigger kernel, after the timing's cache flush, probably)."""
    return COL_UNROLL if m > COL_UNROLL else 1


def _fused(src, h, tau, k, m):
    batch, n, _ = h.shape
    block = max(2, triton.next_power_of_2(m))
    mpp = _per_program(batch, block * block, h.is_cuda)
    grid = (triton.cdiv(batch, mpp),)
    warps = _warps(mpp * block * block, FUSED_ELEMS_PER_THREAD)
    _qr_fused[grid](
        src, h, tau, batch, n, k, m, MPP=mpp, BLOCK=block, COL_UNROLL=_fused_unroll(m),
        num_warps=warps,
    )  # fmt: skip


def _factor(A: torch.Tensor, inplace: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    """(H, tau); inplace (a contiguous float32 A, the graph's static input): the blocked path
    factors A itself (H is A), saving a copy of the batch."""
    a = A.to(torch.float32).contiguous()
    batch, n, _ = a.shape
    tau = torch.empty(batch, n, dtype=a.dtype, device=a.device)
    if batch == 0 or n == 0:
        return a.clone(), tau.zero_()
    if n <= FUSED_MAX_N:
        h = torch.empty_like(a)
        _fused(a, h, tau, 0, n)
        return h, tau
    # A itself must not change: H is a new tensor, which the first panel and update fill from A
    # where they can (`_reads_source`), else a copy of A
    src = a if a is A and not inplace else None
    h = a if src is None else torch.empty_like(a)
    lanes = _batch_lanes(batch, n, h.device)
    if lanes > 1:
        _factor_lanes(h, tau, lanes, src)
    else:
        _factor_blocked(h, tau, 1, src)
    return h, tau


def _reads_source(batch: int, n: int, nb: int, device: torch.device) -> bool:
    """Whether the blocked path's first panel and first update can read the input and write H
    (READ_SOURCE; no copy of the batch first): a register panel (`_panel_reg`) and the strip
    kernel, with no look-ahead or two-level blocking."""
    if not READ_SOURCE or (NB_OUTER and nb < NB_OUTER) or _lookahead(batch, device):
        return False
    nbp = max(2, triton.next_power_of_2(nb))
    mb = max(2, triton.next_power_of_2(n))
    reg = mb * nbp <= REG_ELEMS and not (REG_SPLIT and nbp >= 32)
    return (
        reg
        and _persist_plan(batch, n, nbp, device) is None
        and _triton_update(device)
        and _strip_update(batch, n, n - nb, device)
    )


def _factor_blocked(h, tau, lanes: int = 1, src=None):
    """The blocked path on h (batch, n, n), n > FUSED_MAX_N, in place; tau gets the scalars.
    lanes: slices of a batch factored at once, this one among them (`_factor_lanes`). src: the
    input h starts as (None: h already holds it)."""
    batch, n, _ = h.shape
    nb = _panel_width(batch, n)
    if src is not None and not _reads_source(batch, n, nb, h.device):
        h.copy_(src)
        src = None
    outer = NB_OUTER if nb < NB_OUTER else 0
    if not outer and _lookahead(batch, h.device):
        _factor_lookahead(h, tau, nb)
        return
    v = torch.empty(batch, n * nb, dtype=h.dtype, device=h.device)
    t = torch.empty(batch, nb * nb, dtype=h.dtype, device=h.device)
    k = 0
    while n - k > FUSED_MAX_N:
        if outer:
            k = _factor_block(h, tau, v, t, k, min(outer, n - k), nb)
            continue
        kb = min(nb, n - k)
        _factor_panel(h, tau, v, t, k, kb, lanes, src)
        if k + kb < n:
            _apply_panel(h, v, t, k, kb, src=src)
        k += kb
        src = None
    if k < n:
        _fused(h, h, tau, k, n - k)


def _batch_lanes(batch: int, n: int, device: torch.device) -> int:
    """Lanes (streams) the batch is split into (BATCH_LANES): 1 unless the batch has at least
    BATCH_LANES_MIN_BATCH matrices of BATCH_LANES_MIN_N <= n <= BATCH_LANES_MAX_N, on CUDA (or
    the CPU when a test asks)."""
    on = device.type == "cuda" or BATCH_LANES_CPU
    if BATCH_LANES <= 1 or not on or batch < BATCH_LANES_MIN_BATCH:
        return 1
    if not BATCH_LANES_MIN_N <= n <= BATCH_LANES_MAX_N:
        return 1
    return min(BATCH_LANES, batch)


_LANE_STREAMS: dict = {}


def _factor_lanes(h, tau, lanes: int, src=None) -> None:
    """The batch as `lanes` independent slices (contiguous runs of matrices), each factored by
    `_factor_blocked` on its own stream: one slice's latency-bound panels run beside another's
    update (a panel of the whole batch leaves a part-filled last wave and idle issue slots,
    the update is throughput-bound). The streams fork from and join back to the caller's (or
    the capture's) stream; on the CPU the slices run one after another."""
    batch = h.shape[0]
    bounds = [batch * i // lanes for i in range(lanes + 1)]
    cuda = h.device.type == "cuda"
    if cuda:
        key = (h.device, lanes)
        if key not in _LANE_STREAMS:
            _LANE_STREAMS[key] = [torch.cuda.Stream(h.device) for _ in range(lanes)]
        main = torch.cuda.current_stream(h.device)
        streams = _LANE_STREAMS[key]
    for i, (i0, i1) in enumerate(zip(bounds, bounds[1:])):
        lane = contextlib.nullcontext()
        if cuda:
            streams[i].wait_stream(main)
            lane = torch.cuda.stream(streams[i])
        with lane:
            _factor_blocked(h[i0:i1], tau[i0:i1], lanes, None if src is None else src[i0:i1])
    if cuda:
        for s in streams:
            main.wait_stream(s)


def _lookahead(batch: int, device: torch.device) -> bool:
    """LOOKAHEAD for this batch: CUDA (or the CPU when a test asks), LOOKAHEAD_MIN_BATCH to
    LOOKAHEAD_MAX_BATCH matrices."""
    few = LOOKAHEAD_MIN_BATCH <= batch <= LOOKAHEAD_MAX_BATCH
    return LOOKAHEAD and few and (device.type == "cuda" or LOOKAHEAD_CPU)


_STREAMS: dict = {}


def _streams(device: torch.device):
    """(panel stream, update stream) of a CUDA device, made once: the panels' at the highest
    priority, so the block scheduler starts a panel's programs before more update programs (a
    persistent panel's programs wait for each other at every column), the updates' at the
    least, which on sm_90 (range 0 to -5) is torch's default, 0."""
    if device not in _STREAMS:
        _STREAMS[device] = (
            torch.cuda.Stream(device, priority=-100),  # clamped to the device's range
            torch.cuda.Stream(device, priority=100),
        )
    return _STREAMS[device]


class _Lanes:
    """The two lanes of a look-ahead factorization: on CUDA two streams forked from and joined
    back to the caller's (or the capture's) stream, ordered by events; on the CPU one lane, in
    program order (what the events enforce on the GPU)."""

    def __init__(self, device: torch.device):
        self.cuda = device.type == "cuda"
        if self.cuda:
            self.main = torch.cuda.current_stream(device)
            self.panel, self.update = _streams(device)
            self.panel.wait_stream(self.main)
            self.update.wait_stream(self.main)

    def on(self, lane: str):
        return torch.cuda.stream(getattr(self, lane)) if self.cuda else contextlib.nullcontext()

    def mark(self, lane: str):
        """An event after the work queued so far on `lane` (None on the CPU)."""
        if not self.cuda:
            return None
        ev = torch.cuda.Event()
        ev.record(getattr(self, lane))
        return ev

    def wait(self, lane: str, ev) -> None:
        if ev is not None:
            getattr(self, lane).wait_event(ev)

    def join(self) -> None:
        if self.cuda:
            self.main.wait_stream(self.panel)
            self.main.wait_stream(self.update)


def _factor_lookahead(h, tau, nb):
    """The blocked factorization with a look-ahead of one panel: panel i's reflectors are
    applied first to panel i + 1's columns only (on the panel lane), and panel i + 1 is factored
    while the rest of panel i's trailing update runs on the update lane. With few matrices
    neither fills the GPU alone: a panel is a chain of latency-bound column steps (a persistent
    panel: ~2.5-3 us a column of it waiting at grid barriers) and the update is memory-bound.
    Order: panel i + 1 needs panel i's update of its own columns (same lane); that update
    needs panel i - 1's update of the rest (an event), which also covered panel i + 1's columns;
    two V and T buffers alternate, and panel i + 2, which reuses panel i's, starts after panel
    i's update of the rest (the same event). Each update writes columns no panel in flight
    touches. A persistent panel does not run beside an update unless LOOKAHEAD_PERSIST
    (`_overlap`): the update of the rest then comes first, on the panel lane."""
    batch, n, _ = h.shape
    panels = []
    k = 0
    while n - k > FUSED_MAX_N:
        kb = min(nb, n - k)
        panels.append((k, kb))
        k += kb
    tail = k  # the fused square's first column
    vs = [torch.empty(batch, n * nb, dtype=h.dtype, device=h.device) for _ in range(2)]
    ts = [torch.empty(batch, nb * nb, dtype=h.dtype, device=h.device) for _ in range(2)]
    lanes = _Lanes(h.device)
    rest_done = None  # panel i - 1's update of the columns after panel i + 1
    with lanes.on("panel"):
        _factor_panel(h, tau, vs[0], ts[0], *panels[0])
    for i, (k, kb) in enumerate(panels):
        v, t = vs[i % 2], ts[i % 2]
        nxt = sum(panels[i + 1]) if i + 1 < len(panels) else n  # where the next panel ends
        beside = i + 1 < len(panels) and _overlap(h, panels, i + 1)
        with lanes.on("panel"):
            lanes.wait("panel", rest_done)
            if k + kb < nxt:  # the next panel's columns (all that is left before the tail)
                _apply_panel(h, v, t, k, kb, end=nxt)
            ready = lanes.mark("panel") if beside else None
            if beside:
                _factor_panel(h, tau, vs[(i + 1) % 2], ts[(i + 1) % 2], *panels[i + 1])
        rest_done = None
        if nxt < n:  # the rest of the update: beside the next panel, or before it
            with lanes.on("update" if beside else "panel"):
                lanes.wait("update", ready)  # None on the panel lane: program order there
                _apply_panel(h, v, t, k, kb, end=n, start=nxt)
                rest_done = lanes.mark("update") if beside else None
        if i + 1 < len(panels) and not beside:
            with lanes.on("panel"):
                _factor_panel(h, tau, vs[(i + 1) % 2], ts[(i + 1) % 2], *panels[i + 1])
    with lanes.on("panel"):
        lanes.wait("panel", rest_done)
        if tail < n:
            _fused(h, h, tau, tail, n - tail)
    lanes.join()


def _overlap(h, panels, i: int) -> bool:
    """Whether panel i of a look-ahead factorization runs beside the previous panel's update:
    not a persistent panel unless LOOKAHEAD_PERSIST (its programs, one an SM, share their SMs
    with the update's and wait for each other at every column)."""
    if LOOKAHEAD_PERSIST or i >= len(panels):
        return True
    batch, n, _ = h.shape
    k, kb = panels[i]
    return _persist_plan(batch, n - k, max(2, triton.next_power_of_2(kb)), h.device) is None


def _panel_width(batch: int, n: int) -> int:
    """NB, or FEW_NB for a few large matrices (batch <= FEW_BATCH, n >= FEW_MIN_N), or SMALL_NB
    for small ones (n <= SMALL_NB_MAX_N)."""
    if FEW_NB and batch <= FEW_BATCH and n >= FEW_MIN_N:
        return max(1, min(FEW_NB, n))
    if SMALL_NB and n <= SMALL_NB_MAX_N:
        return max(1, min(SMALL_NB, NB, n))  # narrower, never wider than NB
    return max(1, min(NB, n))


def _factor_block(h, tau, v, t, k0, width, nb):
    """Two-level step (NB_OUTER): factor the block column h[:, k0:, k0:k0+width] as nb-wide
    panels, each applied only to the rest of the block column, then apply all `width` reflectors
    to the trailing columns at once: V is the unit lower trapezoid of the factored block (the
    reflectors sit below its diagonal), T = [[T1, -T1 V1^T V2 T2], [0, T2]] merged panel by panel
    from the panels' own T's. Returns the next column."""
    batch, n, _ = h.shape
    end = k0 + width
    ts = []
    for k in range(k0, end, nb):
        kb = min(nb, end - k)
        _factor_panel(h, tau, v, t, k, kb)
        if k + kb < end:
            _apply_panel(h, v, t, k, kb, end)
        ts.append(_t_of(t, batch, kb).clone())
    if end < n:
        vo = torch.tril(h[:, k0:, k0:end], -1)
        vo.diagonal(dim1=1, dim2=2).fill_(1.0)
        g = vo.mT @ vo
        to = torch.zeros(batch, width, width, dtype=h.dtype, device=h.device)
        o = 0
        for ti in ts:
            w = ti.shape[-1]
            to[:, o : o + w, o : o + w] = ti
            if o:
                to[:, :o, o : o + w] = -(to[:, :o, :o] @ (g[:, :o, o : o + w] @ ti))
            o += w
        _apply_panel(h, vo.reshape(batch, -1), to.reshape(batch, -1), k0, width)
    return end


# CUDA graphs: a factorization is a fixed sequence of launches for a given (batch, n), so the
# first call at a shape runs it plainly (which also compiles every kernel and warms cuBLAS) and
# then captures it reading a static input buffer; later calls copy the fresh input in, replay,
# and return clones of the graph's outputs (the next replay overwrites them). The timed calls
# then cost 4 host launches whatever the number of kernels inside.
_GRAPHS: OrderedDict = OrderedDict()  # (shape, device) -> (graph, static input, H, tau)


def _graph_bytes(batch: int, n: int) -> int:
    """Memory a graph keeps (bounded): static input (= H), H, tau, V and update scratch."""
    nb = _panel_width(batch, n)
    outer = NB_OUTER if nb < NB_OUTER else 0  # the two-level step's V (and smaller T, G)
    return 4 * batch * n * (2 * n + 3 * nb + 1 + 2 * outer)  # LOOKAHEAD: a second V


def _capture(static: torch.Tensor):
    """(graph, (H, tau)): the factorization of `static` captured on torch's capture stream
    (not the caller's), its outputs in the graph's private memory pool."""
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.device(static.device):  # the capture stream is made on this device
        capture = torch.cuda.graph(graph, capture_error_mode="thread_local")
        with capture:
            out = _factor(static, inplace=True)
    return graph, out


def _graphed(A: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    key = (tuple(A.shape), A.device)
    if key not in _GRAPHS:
        out = _factor(A)  # the first call's result; the run also compiles every kernel
        static = torch.empty(A.shape, dtype=torch.float32, device=A.device)
        try:
            graph, (h, tau) = _capture(static)
        except RuntimeError:  # capture refused (e.g. unsupported here): plain runs from now on
            _GRAPHS[key] = None
        else:
            _GRAPHS[key] = (graph, static, h, tau)
        while len(_GRAPHS) > GRAPH_CACHE:
            _GRAPHS.popitem(last=False)
        return out
    _GRAPHS.move_to_end(key)
    entry = _GRAPHS[key]
    if entry is None:  # a shape whose capture failed
        return _factor(A)
    graph, static, h, tau = entry
    static.copy_(A)
    graph.replay()
    return h.clone(), tau.clone()


def kernel(A: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    on = USE_GRAPHS and A.is_cuda and A.dim() == 3 and A.numel() > 0 and A.shape[1] > GRAPH_MIN_N
    if on and _graph_bytes(A.shape[0], A.shape[1]) <= GRAPH_MAX_BYTES:
        return _graphed(A)
    return _factor(A)
