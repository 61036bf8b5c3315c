"""The Triton QR seeds (kernels/qr/seeds/triton_fused.py, triton_panel_wy.py) on the CPU.

Triton runs in its interpreter here (conftest sets TRITON_INTERPRET=1), which executes the same
kernel source the GPU compiles. Each path of each seed is forced at small n through its module
constants: the fused whole-matrix kernel, register panels, streamed panels (several row chunks
per panel), several matrices per program with a partly empty last program. Every factorization
is judged by the task's own checker, one matrix of every input family per batch.
"""

from __future__ import annotations

from collections import OrderedDict
from pathlib import Path
from types import ModuleType

import pytest
import torch
from task_files import load_file

from cockpit.harness.task import load_task

TASK_DIR = Path(__file__).resolve().parents[1] / "kernels" / "qr"
SEED_FILES = {"fused": "triton_fused.py", "panel_wy": "triton_panel_wy.py"}


def _load(path: Path) -> ModuleType:
    return load_file(path, f"qr_triton_test_{path.stem}")


ref = _load(TASK_DIR / "reference.py")
SEEDS = {name: _load(TASK_DIR / "seeds" / f) for name, f in SEED_FILES.items()}
BASE_FAMILIES = [f for f in ref.FAMILIES if f != "mixed"]

# Tall panels split over several programs per matrix: every panel taller than 4 rows, 4 rows
# per program (n = 17: 5, 3 and 2 programs), 2 rows per chunk (several chunks per program).
SPLIT = {"NB": 8, "REG_ELEMS": 8, "CHUNK_ELEMS": 16, "SPLIT_MIN_ROWS": 4, "SPLIT_MIN": 2}
# Tall panels as a TSQR (TSQR_PANEL): register blocks of 8 columns hold 32 rows (REG_ELEMS 256),
# so panels taller than 32 rows go through 2-4 row blocks of 16 or 32 and the stacked R's; at
# n = 40 and 70 the first panels are TSQR panels, the rest register panels.
TSQR = {"NB": 8, "REG_ELEMS": 256, "SPLIT_MIN_ROWS": 4, "SPLIT_MIN": 2, "FUSED_MAX_N": 4,
        "TSQR_PANEL": True, "TSQR_BLOCKS": 4, "PERSIST_PANEL": False}  # fmt: skip
# The trailing update as the two Triton tl.dot kernels (USE_TF32X3's path; in the interpreter
# in "ieee" float32), tiles of 16 so that n = 33..70 has several tiles and ragged edges.
DOT = {"FORCE_TRITON_UPDATE": True, "DOT_BM": 16, "DOT_BN": 16, "DOT_BK": 16}
LANES = {"FUSED_MAX_N": 8, "NB": 8, "BATCH_LANES": 3, "BATCH_LANES_MIN_BATCH": 2,
         "BATCH_LANES_MIN_N": 9, "BATCH_LANES_CPU": True}  # fmt: skip
# (seed, module constants) for every code path; {} = the shipped defaults.
PATHS = {
    "fused-default": ("fused", {}),  # fused kernel up to 64, panels + fused tail at 70
    # the column loops not unrolled (COL_UNROLL = 1; the defaults unroll by 4)
    "fused-blocked-registers": ("fused", {"FUSED_MAX_N": 8, "NB": 8, "COL_UNROLL": 1}),
    "fused-blocked-streamed": (
        "fused",
        {"FUSED_MAX_N": 4, "NB": 8, "REG_ELEMS": 8, "CHUNK_ELEMS": 128, "SPLIT_TARGET": 0},
    ),
    "wy-default": ("panel_wy", {}),  # one register panel up to 32, then blocked
    "wy-registers-nb8": ("panel_wy", {"NB": 8}),
    "wy-streamed": ("panel_wy", {"NB": 8, "REG_ELEMS": 8, "CHUNK_ELEMS": 128, "SPLIT_TARGET": 0}),
    "wy-split": ("panel_wy", SPLIT),
    "wy-triton-update": ("panel_wy", {"NB": 8, **DOT}),
    "fused-triton-update": ("fused", {"FUSED_MAX_N": 8, "NB": 8, **DOT}),
    # the same update as one strip kernel per column strip (W stays in the program)
    "fused-strip-update": ("fused", {"FUSED_MAX_N": 8, "NB": 8, **DOT, "FUSE_UPDATE": True}),
    # ... with its tile width for small n (SMALL_DOT_BN: 32 columns here, DOT_BN 16)
    "fused-strip-small-bn": (
        "fused",
        {"FUSED_MAX_N": 8, "NB": 8, **DOT, "FUSE_UPDATE": True, "SMALL_DOT_BN": 32},
    ),
    # ... its second pass over C bottom up (STRIP_REVERSE), n = 70: a ragged first block
    "fused-strip-reverse": (
        "fused",
        {"FUSED_MAX_N": 8, "NB": 8, **DOT, "FUSE_UPDATE": True, "STRIP_REVERSE": True,
         "STRIP_REVERSE_MIN_ROWS": 0},  # fmt: skip
    ),
    # W = T^T V^T C and C -= V W as two kernels (few matrices on the GPU; on the CPU, with one
    # "SM", the strip kernel is taken unless FUSE_UPDATE is off), W whole or in 3 row ranges
    # (WY_KSPLIT: ranges of 32, 32 and 6 rows at n = 70, partials summed by the update)
    "fused-two-kernel-update": ("fused", {"FUSED_MAX_N": 8, "NB": 8, **DOT, "FUSE_UPDATE": False}),
    "fused-two-kernel-ksplit": (
        "fused",
        {"FUSED_MAX_N": 8, "NB": 8, **DOT, "FUSE_UPDATE": False, "WY_KSPLIT": 3},
    ),
    "fused-blocked-split": ("fused", {**SPLIT, "FUSED_MAX_N": 4, "PERSIST_PANEL": False}),
    # look-ahead (the GPU's order for few matrices, in program order here): panel i's update of
    # panel i + 1's columns, panel i + 1, then the rest of panel i's update; V and T alternate
    # between two buffers. With the torch update, the Triton strip kernel and the two kernels
    # (their column offset c0 past the next panel), and with persistent panels
    "fused-lookahead": ("fused", {"FUSED_MAX_N": 8, "NB": 8, "LOOKAHEAD_CPU": True}),
    "fused-lookahead-strip": (
        "fused",
        {"FUSED_MAX_N": 8, "NB": 8, **DOT, "FUSE_UPDATE": True, "LOOKAHEAD_CPU": True},
    ),
    "fused-lookahead-two-kernel": (
        "fused",
        {"FUSED_MAX_N": 8, "NB": 8, **DOT, "FUSE_UPDATE": False, "WY_KSPLIT": 3,
         "LOOKAHEAD_CPU": True},
    ),  # fmt: skip
    "fused-lookahead-persist": (
        "fused",
        {**SPLIT, "FUSED_MAX_N": 4, "PERSIST_PANEL": True, "LOOKAHEAD_CPU": True},
    ),
    # ... persistent panels not beside an update (LOOKAHEAD_PERSIST off): the update of the
    # rest first, on the panel lane, for every panel taller than 4 rows
    "fused-lookahead-persist-serial": (
        "fused",
        {**SPLIT, "FUSED_MAX_N": 4, "PERSIST_PANEL": True, "LOOKAHEAD_CPU": True,
         "LOOKAHEAD_PERSIST": False},
    ),  # fmt: skip
    # column loops unrolled (COL_UNROLL) by 3: panels of 8 columns and fused squares of 1-8 end
    # in steps past the last column, which must change nothing
    "fused-unrolled": ("fused", {"FUSED_MAX_N": 8, "NB": 8, "COL_UNROLL": 3}),
    "fused-tsqr": ("fused", TSQR),
    # two-level register panels (REG_SPLIT, off): 32-column panels as two 16-column halves, the
    # left's block reflector applied to the right with chunked tl.dot (NB = 24: a right half of
    # 8 columns, kb < 2 NBH), and their column step with one reduction over rows (REG_STATS)
    "fused-reg-halves": ("fused", {"REG_SPLIT": True, "SMALL_NB": 0}),
    "fused-reg-halves-stats-ragged": (
        "fused",
        {"REG_SPLIT": True, "REG_STATS": True, "SMALL_NB": 0, "NB": 24, "REG_SPLIT_KC": 16},
    ),
    # one launch per tall panel (PERSIST_PANEL); in the interpreter one program per matrix
    "fused-persist": ("fused", {**SPLIT, "FUSED_MAX_N": 4, "PERSIST_PANEL": True}),
    # two-level blocking: 24-column blocks of three 8-wide panels, one trailing update per block
    # with T merged from the panels' T's (n = 70: two full blocks, then a 22-column one)
    "fused-two-level": ("fused", {"FUSED_MAX_N": 8, "NB": 8, "NB_OUTER": 24}),
    # blocks of 20 columns: panels of 8, 8 and 4, so the narrower panel's T sits kb * kb
    # apart in the T buffer, not nb * nb (this path checks that offset)
    "fused-two-level-ragged": ("fused", {"FUSED_MAX_N": 8, "NB": 8, "NB_OUTER": 20}),
    # the batch in 3 slices (BATCH_LANES; on the GPU each on its own stream), 3, 3 and 4
    # matrices of the 10, each slice its own blocked factorization
    "fused-lanes": ("fused", LANES),
    "fused-two-level-strip": (
        "fused",
        {"FUSED_MAX_N": 8, "NB": 8, "NB_OUTER": 24, **DOT, "FUSE_UPDATE": True},
    ),
}
SIZES = [1, 2, 3, 17, 33, 48, 70]
STREAMED_SIZES = [2, 3, 17]  # n = 17: 3 panels of 2 row chunks; the interpreter is slow here


def every_family(n: int, seed: int = 0) -> torch.Tensor:
    """One matrix of each input family, plus two of a mixed batch: (10, n, n)."""
    parts = [
        ref.make_inputs({"batch": 1, "n": n, "cond": 2, "family": f}, seed, "cpu")[0]
        for f in BASE_FAMILIES
    ]
    parts.append(
        ref.make_inputs({"batch": 2, "n": n, "cond": 2, "family": "mixed"}, seed, "cpu")[0]
    )
    return torch.cat(parts)


def run(seed: str, a: torch.Tensor, monkeypatch, **constants) -> tuple[torch.Tensor, torch.Tensor]:
    module = SEEDS[seed]
    for name, value in constants.items():
        assert hasattr(module, name), name
        monkeypatch.setattr(module, name, value)
    before = a.clone()
    h, tau = module.kernel(a)
    assert torch.equal(a, before), "the seed modified its input"
    return h, tau


def assert_passes(a: torch.Tensor, out, what: str) -> None:
    ok, metrics = ref.check((a,), out)
    assert ok, f"{what}: {metrics['message']}"


def _path_params() -> list:
    out = []
    for name in PATHS:
        sizes = STREAMED_SIZES if "streamed" in name or "split" in name else SIZES
        sizes = [17, 40, 70] if "tsqr" in name or "lookahead" in name else sizes
        out += [pytest.param(name, n, id=f"{name}-n{n}") for n in sizes]
    return out


@pytest.mark.parametrize(("path", "n"), _path_params())
def test_every_path_factors_every_family(path, n, monkeypatch):
    seed, constants = PATHS[path]
    a = every_family(n)
    assert_passes(a, run(seed, a, monkeypatch, **constants), f"{path} n={n}")


def test_the_tsqr_path_runs_where_a_panel_would_be_split(monkeypatch):
    """fused-tsqr above must exercise the TSQR panel, not fall back to the split one: count its
    panels on a rank-deficient batch (the blocks' R's have zero rows; the rebuilt V, T and tau
    then feed the trailing updates, so the checker sees any error in them)."""
    module = SEEDS["fused"]
    seen = []
    real = module._tsqr_panel

    def counting(h, tau, v, t, k, kb, nblk, r):
        seen.append((h.shape[1] - k, kb, nblk, r))
        real(h, tau, v, t, k, kb, nblk, r)

    monkeypatch.setattr(module, "_tsqr_panel", counting)
    a = ref.make_inputs({"batch": 2, "n": 48, "cond": 1, "family": "rankdef"}, 4, "cpu")[0]
    assert_passes(a, run("fused", a, monkeypatch, **TSQR), "tsqr rankdef n=48")
    # m = 48 and 40 in 3 blocks of 16 rows; from m = 32 on a panel fits the registers
    assert seen == [(48, 8, 3, 16), (40, 8, 3, 16)]
    assert module._tsqr_shape(48, 8, 8) == (3, 16)
    monkeypatch.setattr(module, "REG_ELEMS", 16)
    assert module._tsqr_shape(48, 8, 8) is None  # a block row count below the panel width


def test_the_lanes_path_factors_contiguous_slices_of_the_batch(monkeypatch):
    """fused-lanes above must split the batch: 10 matrices in 3 lanes are the slices 0-3, 3-6
    and 6-10, each factored as a batch of its own; below BATCH_LANES_MIN_N (and with one lane)
    the batch stays whole."""
    module = SEEDS["fused"]
    seen = []
    real = module._factor_blocked

    def recording(h, tau, lanes=1, src=None):
        seen.append((h.shape[0], h.data_ptr(), tau.data_ptr()))
        real(h, tau, lanes, src)

    monkeypatch.setattr(module, "_factor_blocked", recording)
    a = every_family(17)
    h, tau = run("fused", a, monkeypatch, **LANES)
    assert_passes(a, (h, tau), "lanes n=17")
    row, col = h[0].numel() * h.element_size(), tau[0].numel() * tau.element_size()
    assert seen == [
        (size, h.data_ptr() + i0 * row, tau.data_ptr() + i0 * col)
        for size, i0 in ((3, 0), (3, 3), (4, 6))
    ]
    seen.clear()
    monkeypatch.setattr(module, "BATCH_LANES_MIN_N", 18)
    module.kernel(a)
    assert [s[0] for s in seen] == [10]
    assert module._batch_lanes(640, 384, torch.device("cpu")) == 3
    assert module._batch_lanes(640, 512, torch.device("cpu")) == 1  # past BATCH_LANES_MAX_N
    monkeypatch.setattr(module, "BATCH_LANES_CPU", False)
    assert module._batch_lanes(640, 512, torch.device("cpu")) == 1


def test_the_first_panel_and_update_read_the_input_and_leave_it_as_it_was(monkeypatch):
    """READ_SOURCE: with a register panel and the strip update first, H is filled from A by
    those two kernels (no copy of A); the factors are bit for bit those of the copy path, A is
    unchanged (run() checks), and where the first update is not the strip kernel the copy comes
    back."""
    module = SEEDS["fused"]
    strip = {"FUSED_MAX_N": 8, "NB": 8, **DOT, "FUSE_UPDATE": True}
    a = every_family(33)
    for name, value in strip.items():
        monkeypatch.setattr(module, name, value)
    assert module._reads_source(10, 33, 8, torch.device("cpu"))
    h, tau = run("fused", a, monkeypatch)
    assert_passes(a, (h, tau), "read-source n=33")
    h0, tau0 = run("fused", a, monkeypatch, READ_SOURCE=False)
    assert torch.equal(h, h0) and torch.equal(tau, tau0)
    monkeypatch.setattr(module, "READ_SOURCE", True)
    monkeypatch.setattr(module, "FUSE_UPDATE", False)
    assert not module._reads_source(10, 33, 8, torch.device("cpu"))
    assert_passes(a, run("fused", a, monkeypatch), "copy n=33")


@pytest.mark.parametrize("seed", SEED_FILES)
@pytest.mark.parametrize("n", [5, 40])
def test_several_matrices_per_program_with_a_partly_empty_last_program(seed, n, monkeypatch):
    block = triton_block(n)
    a = ref.make_inputs({"batch": 5, "n": n, "cond": 2, "family": "mixed"}, 3, "cpu")[0]
    # 2 matrices per program (3 programs, the last one half empty) for the fused kernel and for
    # register panels alike: CPU_TILE = 2 tiles of the largest block either kernel uses.
    out = run(seed, a, monkeypatch, CPU_TILE=2 * block * block)
    assert_passes(a, out, f"{seed} n={n}")


def triton_block(n: int) -> int:
    return max(2, 1 << (n - 1).bit_length())


@pytest.mark.parametrize("seed", SEED_FILES)
def test_huge_batches_of_tiny_matrices(seed, monkeypatch):
    for n, batch in ((1, 700), (2, 300)):
        a = ref.make_inputs({"batch": batch, "n": n, "cond": 2, "family": "mixed"}, 5, "cpu")[0]
        assert_passes(a, run(seed, a, monkeypatch), f"{seed} n={n} batch={batch}")


@pytest.mark.parametrize("seed", SEED_FILES)
def test_tiny_matrices_share_a_program_on_the_gpu_and_larger_ones_do_not(seed):
    per_program = SEEDS[seed]._per_program
    assert per_program(50000, 2 * 2, True) >= 64  # n = 2: many matrices per program
    assert per_program(20, 32 * 32, True) == 1  # n = 32: one matrix per program
    assert per_program(3, 2 * 2, True) == 4  # never more than the (rounded-up) batch


@pytest.mark.parametrize(
    "path", ["fused-default", "wy-default", "wy-streamed", "wy-split", "fused-persist"]
)
def test_zero_columns_get_tau_zero_and_stay_untouched(path, monkeypatch):
    seed, constants = PATHS[path]
    a = ref.make_inputs({"batch": 2, "n": 6, "cond": 1, "family": "upper"}, 0, "cpu")[0]
    h, tau = run(seed, a, monkeypatch, **constants)
    assert torch.equal(tau, torch.zeros_like(tau)) and torch.equal(h, a)
    z = torch.zeros(2, 5, 5)
    h, tau = run(seed, z, monkeypatch, **constants)
    assert torch.equal(h, z) and torch.equal(tau, torch.zeros_like(tau))


@pytest.mark.parametrize("seed", SEED_FILES)
def test_factors_match_the_reference_up_to_rounding(seed, monkeypatch):
    a = ref.make_inputs({"batch": 3, "n": 40, "cond": 1, "family": "dense"}, 1, "cpu")[0]
    h, tau = run(seed, a, monkeypatch)
    h_ref, tau_ref = ref.reference(a)  # same dlarfg sign convention: same factors
    assert torch.allclose(h, h_ref, atol=2e-4, rtol=1e-3)
    assert torch.allclose(tau, tau_ref, atol=1e-5)


@pytest.mark.parametrize("seed", SEED_FILES)
def test_every_declared_tunable_value_still_factors_correctly(seed, monkeypatch):
    module = SEEDS[seed]
    a = ref.make_inputs({"batch": 3, "n": 70, "cond": 2, "family": "mixed"}, 2, "cpu")[0]
    for name, values in module.TUNABLES.items():
        for value in values:
            if value == getattr(module, name):
                continue
            with monkeypatch.context() as m:
                assert_passes(a, run(seed, a, m, **{name: value}), f"{seed} {name}={value}")


@pytest.mark.parametrize("seed", SEED_FILES)
def test_source_is_clean_for_the_static_scan(seed):
    from cockpit.harness.static_scan import scan

    task = load_task("qr")
    text = (TASK_DIR / "seeds" / SEED_FILES[seed]).read_text()
    assert scan(text, task.forbidden) == []
    assert not [w for w in task.forbidden if w.lower() in text.lower()]
    assert SEEDS[seed].FAMILY in {"fused-small-n", "triton-panel-wy"}


@pytest.mark.parametrize("seed", SEED_FILES)
def test_split_panels_are_taken_where_few_matrices_meet_tall_panels(seed, monkeypatch):
    module = SEEDS[seed]
    split = module._split_programs
    assert split(2, 4096, 32) == 64 and split(8, 2048, 32) == 32  # the GPU's SMs filled
    # triton_fused holds panels of up to 1024 rows in registers (REG_ELEMS 32768), panel_wy 512
    assert split(60, 1024, 32) == (0 if seed == "fused" else 5) and split(20, 1500, 32) == 13
    assert split(640, 512, 32) == 0  # a register panel
    assert split(200, 1024, 32) == 0  # enough matrices: one streaming program each
    launches = []
    real = module._panel_split

    class Spy:
        def __getitem__(self, grid):
            launches.append(grid)
            return real[grid]

    monkeypatch.setattr(module, "_panel_split", Spy())
    a = ref.make_inputs({"batch": 2, "n": 17, "cond": 2, "family": "dense"}, 4, "cpu")[0]
    constants = dict(SPLIT, FUSED_MAX_N=4, PERSIST_PANEL=False) if seed == "fused" else SPLIT
    assert_passes(a, run(seed, a, monkeypatch, **constants), f"{seed} split")
    # panels at k = 0, 8 of 17 and 9 rows: 5 and 3 programs, kb + 1 = 9 launches each
    assert launches == [(2, 5)] * 9 + [(2, 3)] * 9


class FakeGraph:
    """Stands in for a captured CUDA graph on the CPU: "capture" runs the factorization of the
    static input once for its output tensors (H is the static input itself on the blocked path,
    as in the real capture); replay re-runs it and leaves the results in those same tensors."""

    def __init__(self, module, static):
        self.module, self.static = module, static
        self.out = module._factor(static.zero_(), inplace=True)

    def replay(self):
        h, tau = self.module._factor(self.static, inplace=True)
        if h is not self.out[0]:
            self.out[0].copy_(h)
        self.out[1].copy_(tau)


@pytest.mark.parametrize("seed", SEED_FILES)
def test_graph_cache_replays_fresh_inputs_into_fresh_tensors(seed, monkeypatch):
    module = SEEDS[seed]
    graphs = []

    def capture(static):
        graphs.append(FakeGraph(module, static))
        return graphs[-1], graphs[-1].out

    monkeypatch.setattr(module, "_GRAPHS", OrderedDict())
    monkeypatch.setattr(module, "_capture", capture)
    monkeypatch.setattr(module, "GRAPH_CACHE", 2)
    seen = []
    for i, n in enumerate([5, 5, 40, 5, 3, 40]):
        a = ref.make_inputs({"batch": 3, "n": n, "cond": 2, "family": "mixed"}, 10 + i, "cpu")[0]
        before = a.clone()
        h, tau = module._graphed(a)
        assert torch.equal(a, before)
        assert_passes(a, (h, tau), f"{seed} call {i} n={n}")
        assert all(h is not x and tau is not x for x in seen)
        assert all(g.out[0] is not h and g.out[1] is not tau for g in graphs)
        seen += [h, tau]
    # n = 5 captured, replayed, 40 captured, 5 replayed, 3 captured (40 dropped), 40 again
    assert len(graphs) == 4 and list(module._GRAPHS) == [
        ((3, 3, 3), a.device),
        ((3, 40, 40), a.device),
    ]


@pytest.mark.parametrize("seed", SEED_FILES)
def test_a_refused_capture_falls_back_to_plain_runs(seed, monkeypatch):
    module = SEEDS[seed]

    def capture(static):
        raise RuntimeError("operation not permitted when stream is capturing")

    monkeypatch.setattr(module, "_GRAPHS", OrderedDict())
    monkeypatch.setattr(module, "_capture", capture)
    for i in range(2):
        a = ref.make_inputs({"batch": 2, "n": 6, "cond": 2, "family": "mixed"}, i, "cpu")[0]
        assert_passes(a, module._graphed(a), f"{seed} call {i}")


@pytest.mark.parametrize("seed", SEED_FILES)
def test_graphs_are_off_on_the_cpu_and_capped_by_memory(seed, monkeypatch):
    module = SEEDS[seed]
    monkeypatch.setattr(module, "_GRAPHS", OrderedDict())
    a = ref.make_inputs({"batch": 2, "n": 6, "cond": 2, "family": "dense"}, 0, "cpu")[0]
    assert_passes(a, module.kernel(a), seed)
    assert not module._GRAPHS
    # graphed: the launch-bound benchmark batches (few large matrices, many small ones)
    assert module._graph_bytes(2, 4096) <= module.GRAPH_MAX_BYTES
    assert module._graph_bytes(60, 1024) <= module.GRAPH_MAX_BYTES
    assert module._graph_bytes(40, 352) <= module.GRAPH_MAX_BYTES
    if seed == "fused":  # measured: at 640 x 512 the graph's copies cost more than it saves
        assert module._graph_bytes(640, 512) > module.GRAPH_MAX_BYTES
    assert module._graph_bytes(8200, 512) > module.GRAPH_MAX_BYTES  # > 2**31 elements


def test_few_large_or_small_matrices_take_their_panel_width_when_asked(monkeypatch):
    """FEW_NB (triton_fused): a few large matrices factor in wider panels. Scaled down so the
    interpreter can run it: 2 matrices of n = 100 count as "few and large" (FEW_MIN_N = 64), and
    FEW_NB = 64 gives panels 64 wide where NB gives 32; more matrices keep NB. SMALL_NB: small
    matrices (n <= SMALL_NB_MAX_N) in narrower panels."""
    module = SEEDS["fused"]
    a = ref.make_inputs({"batch": 2, "n": 100, "cond": 2, "family": "mixed"}, 4, "cpu")[0]
    with monkeypatch.context() as m:
        m.setattr(module, "FEW_MIN_N", 64)
        m.setattr(module, "FEW_NB", 64)
        assert module._panel_width(2, 400) == 64 and module._panel_width(3, 400) == module.NB
        assert module._panel_width(2, 40) == module.SMALL_NB  # not large: small
        assert_passes(a, run("fused", a, m), "FEW_NB=64")
    assert module._panel_width(2, 1024) == module.NB  # off by default
    with monkeypatch.context() as m:  # SMALL_NB: narrower panels up to SMALL_NB_MAX_N
        m.setattr(module, "SMALL_NB", 8)
        m.setattr(module, "SMALL_NB_MAX_N", 60)
        m.setattr(module, "FUSED_MAX_N", 8)
        assert module._panel_width(40, 60) == 8 and module._panel_width(40, 61) == module.NB
        small = ref.make_inputs({"batch": 3, "n": 40, "cond": 2, "family": "mixed"}, 5, "cpu")[0]
        assert_passes(small, run("fused", small, m), "SMALL_NB=8")  # 4 panels of 8, fused 8


def test_tiny_fused_squares_are_not_unrolled(monkeypatch):
    """COL_UNROLL applies to fused squares wider than it: n = 1-4 run the plain column loop
    (measured faster on the H200 at n = 1-2), n = 5 and up the unrolled one."""
    module = SEEDS["fused"]
    monkeypatch.setattr(module, "COL_UNROLL", 4)
    assert [module._fused_unroll(m) for m in (1, 2, 4, 5, 32)] == [1, 1, 1, 4, 4]
    monkeypatch.setattr(module, "COL_UNROLL", 1)
    assert module._fused_unroll(32) == 1


def test_the_persistent_panel_replaces_the_split_one_when_asked(monkeypatch):
    """PERSIST_PANEL: every panel that would be split takes one launch of `_panel_persist`
    (one program per matrix in the interpreter, where programs run one after another), none of
    `_panel_split`; its factors equal the split panel's up to rounding (the same arithmetic; a
    well-conditioned batch, where rounding cannot turn a reflector). Every family: PATHS."""
    module = SEEDS["fused"]
    a = ref.make_inputs({"batch": 3, "n": 17, "cond": 1, "family": "dense"}, 6, "cpu")[0]
    launches = {"persist": [], "split": []}
    for name, key in (("_panel_persist", "persist"), ("_panel_split", "split")):
        real = getattr(module, name)

        class Spy:
            def __getitem__(self, grid, real=real, key=key):
                launches[key].append(grid)
                return real[grid]

        monkeypatch.setattr(module, name, Spy())
    constants = dict(SPLIT, FUSED_MAX_N=4)
    h_split, tau_split = run("fused", a, monkeypatch, **constants, PERSIST_PANEL=False)
    assert launches == {"persist": [], "split": [(3, 5)] * 9 + [(3, 3)] * 9}
    launches["split"].clear()
    out = run("fused", a, monkeypatch, **constants, PERSIST_PANEL=True)
    assert_passes(a, out, "persist n=17")
    assert launches == {"persist": [(3, 1), (3, 1)], "split": []}  # k = 0 and 8: one each
    assert torch.allclose(out[0], h_split, atol=1e-5, rtol=1e-4)
    assert torch.allclose(out[1], tau_split, atol=1e-6)


def test_a_persistent_panel_that_gives_up_at_a_barrier_writes_nan(monkeypatch):
    """Programs of a persistent panel that were not all resident at once (another process's
    kernels holding SMs) must neither hang the GPU nor return a plausible wrong R. The
    interpreter runs programs one after another, which is exactly that: with two programs per
    matrix the first polls its first barrier PERSIST_SPIN_MAX times for a program that has not
    started, gives up, and writes NaN for its rows (and tau and T, if it is program 0)."""
    module = SEEDS["fused"]
    n, kb, rows = 16, 8, 8
    a = ref.make_inputs({"batch": 1, "n": n, "cond": 1, "family": "dense"}, 3, "cpu")[0]
    h = a.clone()
    tau, v, t = torch.zeros(1, n), torch.zeros(1, n * kb), torch.zeros(1, kb * kb)
    monkeypatch.setattr(module, "PERSIST_SPIN_MAX", 4)
    module._persist_panel(h, tau, v, t, 0, kb, 2, rows)
    blocks = [torch.isnan(h[0, i : i + rows, :kb]).all().item() for i in (0, rows)]
    assert blocks in ([True, False], [False, True]) or all(blocks)  # one program gave up
    if blocks[0]:  # program 0 writes tau and T
        assert torch.isnan(tau[0, :kb]).all() and torch.isnan(t).all()
    assert torch.equal(h[0, :, kb:], a[0, :, kb:])  # the trailing columns are not its business
    # a resident launch (one program per matrix here: its barrier opens at once) is clean
    h = a.clone()
    module._persist_panel(h, tau, v, t, 0, kb, 1, n)
    assert not torch.isnan(h).any() and not torch.isnan(tau).any()


def test_persistent_panels_fit_every_program_on_the_gpu_at_once(monkeypatch):
    """The launcher's arithmetic for an H200 (132 SMs): batch * programs never exceeds the SM
    count (the barrier needs every program of a matrix resident), rows per program a power of
    two that fits the registers; large batches and short panels keep the other paths."""
    module = SEEDS["fused"]
    gpu = torch.device("cuda", 0)
    monkeypatch.setitem(module._SMS, gpu, 132)  # no CUDA call: the cached SM count
    monkeypatch.setattr(module, "PERSIST_PANEL", True)
    shape = module._persist_shape
    assert shape(2, 4096, 32, gpu) == (64, 64)
    assert shape(8, 2048, 32, gpu) == (16, 128)
    assert shape(1, 3000, 32, gpu) == (47, 64)
    assert shape(20, 1500, 32, gpu) == (6, 256)
    assert shape(30, 1500, 32, gpu) == (3, 512)
    for batch, m in ((2, 4096), (8, 2048), (1, 3000), (20, 1500), (30, 1500), (3, 1025)):
        p, rb = shape(batch, m, 32, gpu)
        assert batch * p <= 132 and rb * 32 <= module.REG_ELEMS and p * rb >= m
    # panels of up to REG_ELEMS / 32 = 1024 rows fit one program's registers
    for batch, m in ((60, 1024), (50, 700), (100, 700), (640, 512)):
        assert shape(batch, m, 32, gpu) is None
    assert shape(100, 1500, 32, gpu) is None  # one program per matrix: streamed
    assert shape(2, 4096, 32, torch.device("cpu")) == (1, 4096)  # the interpreter
    monkeypatch.setattr(module, "PERSIST_PANEL", False)
    assert shape(2, 4096, 32, gpu) is None  # off: the split panel


def test_the_split_w_takes_enough_row_ranges_to_fill_the_gpu(monkeypatch):
    """WY_KSPLIT = 0 (auto) on an H200 (132 SMs): few matrices get their W in several row
    ranges (~WY_PROGRAMS programs per SM: 1 by default, the faster setting in
    docs/decisions/0041-qr-fused-settings-evidence.md), each at least 4 row steps long; a fixed
    WY_KSPLIT is taken as it is. The kernels themselves: PATHS "fused-two-kernel-ksplit"."""
    module = SEEDS["fused"]
    gpu = torch.device("cuda", 0)
    monkeypatch.setitem(module._SMS, gpu, 132)
    monkeypatch.setattr(module, "WY_KSPLIT", 0)
    ranges = module._wy_ranges
    assert module.WY_PROGRAMS == 1
    assert ranges(2, 64, 4096, gpu) == 2  # 128 strips -> 256 programs
    assert ranges(1, 47, 3000, gpu) == 3
    monkeypatch.setattr(module, "WY_PROGRAMS", 2)
    assert ranges(2, 64, 4096, gpu) == 3  # 128 strips -> 384 programs
    assert ranges(1, 47, 3000, gpu) == 6
    assert ranges(1, 2, 200, gpu) == 1  # 200 rows: too few for 4 steps of 32 in two ranges
    assert ranges(640, 8, 512, gpu) == 1  # enough programs already
    monkeypatch.setattr(module, "WY_KSPLIT", 4)
    assert ranges(640, 8, 512, gpu) == 4


def test_persist_first_rows_sends_only_panels_of_small_persistent_programs_there(monkeypatch):
    """PERSIST_FIRST_ROWS (on: 128, batch 1 only): a panel of 513-1024 rows, which fits one
    program's registers, takes the persistent panel instead when that spreads it over programs of
    at most so many rows, and keeps the register panel where they would be bigger (60 x 1024: 512
    rows), where the batch is past PERSIST_FIRST_MAX_BATCH (8 x 1500 lost 5% on the H200) or
    where the panel is in the lower half of the register range (<= 512 rows)."""
    module = SEEDS["fused"]
    gpu = torch.device("cuda", 0)
    monkeypatch.setitem(module._SMS, gpu, 132)  # no CUDA call: the cached SM count
    plan = module._persist_plan
    assert module.PERSIST_FIRST_ROWS == 128 and module.PERSIST_FIRST_MAX_BATCH == 1
    assert plan(1, 700, 32, gpu) == (11, 64)
    assert plan(1, 3000, 32, gpu) == (47, 64)
    assert plan(2, 1024, 32, gpu) is None  # batch 2: the register panel
    assert plan(2, 4096, 32, gpu) == (64, 64)  # too tall for registers: as _persist_shape
    monkeypatch.setattr(module, "PERSIST_FIRST_MAX_BATCH", 8)
    assert plan(8, 1024, 32, gpu) == (16, 64)
    assert plan(60, 1024, 32, gpu) is None  # 2 programs of 512 rows: the register panel
    assert plan(1, 512, 32, gpu) is None and plan(1, 300, 32, gpu) is None  # lower half
    assert plan(1, 700, 32, torch.device("cpu")) is None  # the interpreter: registers
    monkeypatch.setattr(module, "PERSIST_FIRST_ROWS", 0)
    assert plan(1, 700, 32, gpu) is None  # off: 700 rows fit the registers


def test_reg_split_takes_the_two_level_register_panel(monkeypatch):
    """REG_SPLIT: every 17-32-column register panel goes to `_panel_reg2` (the one-level kernel
    is never launched) and the factors still pass the checker; 16-column panels keep
    `_panel_reg`, which the two-level kernel cannot halve."""
    module = SEEDS["fused"]
    monkeypatch.setattr(module, "_panel_reg", None)  # any launch of it would fail
    a = every_family(70)
    assert_passes(a, run("fused", a, monkeypatch, REG_SPLIT=True, SMALL_NB=0), "REG_SPLIT n=70")
    with pytest.raises(TypeError):
        run("fused", a, monkeypatch, REG_SPLIT=True, SMALL_NB=16)


def record_verdicts(monkeypatch, module, name: str, arg: int) -> list:
    """Wrap the guarded panel kernel `name` of module so that each launch appends a copy of its
    per-matrix verdicts (argument `arg`, FLAG) to the returned list."""
    kernel = getattr(module, name)
    flags = []

    class Spy:
        def __getitem__(self, grid):
            def launch(*args, **kwargs):
                kernel[grid](*args, **kwargs)
                flags.append(args[arg].clone())

            return launch

    monkeypatch.setattr(module, name, Spy())
    return flags


def test_the_choleskyqr_panel_factors_what_its_guard_accepts_and_refers_the_rest(monkeypatch):
    """CHOL_PANEL: `_panel_chol` factors each whole 16-wide panel of 16+ rows, and the column
    walk (`_panel_reg` with SKIP) only the matrices its guard refused (FLAG 0): the first panel
    of the nearly collinear matrix."""
    module = SEEDS["fused"]
    flags = record_verdicts(monkeypatch, module, "_panel_chol", 5)
    a = every_family(48)
    constants = {"CHOL_PANEL": True, "CHOL_CPU": True, "CHOL_MIN_ROWS": 16}
    assert_passes(a, run("fused", a, monkeypatch, **constants), "cholqr panel n=48")
    got = torch.stack(flags)  # (panels, matrices)
    assert got.shape == (1, 10) and got.sum() >= 6, got
    fams = BASE_FAMILIES + ["mixed", "mixed"]
    assert got[0, fams.index("nearcollinear")] == 0
    assert got[0, fams.index("dense")] == 1


GRAM_ROUTES = {
    # tall panels: `_panel_gram`, then `_panel_persist` (SKIP) for the refused matrices
    "persist": {"REG_ELEMS": 16, "SPLIT_MIN_ROWS": 4, "SPLIT_MIN": 2, "PERSIST_PANEL": True},
    # register panels (GRAM_REG_MIN_BATCH 1: the one-program-a-matrix route at any batch):
    # `_panel_gram`, then `_panel_reg` (SKIP); the first panel read from the input
    # (READ_SOURCE, with the strip kernel)
    "register": {"GRAM_REG_MIN_BATCH": 1, "GRAM_REG_MIN_ROWS": 16, **DOT, "FUSE_UPDATE": True},
    # (both with GRAM_EARLY_OUT: a matrix refused at its first column skips the walk) ...
    # ... and without it: the walk runs for a refused matrix from its first column
    "no-early-out": {"GRAM_REG_MIN_BATCH": 1, "GRAM_REG_MIN_ROWS": 16, "GRAM_EARLY_OUT": False},
}


@pytest.mark.parametrize("route", list(GRAM_ROUTES))
def test_the_gram_panel_factors_what_its_guard_accepts_and_refers_the_rest(monkeypatch, route):
    """GRAM_PANEL: every 16-column panel of the route (one program per matrix in the
    interpreter) goes to `_panel_gram` first, and the column walk (SKIP) takes only the
    matrices its guard refused: a column whose part below the diagonal is under GRAM_TOL of its
    Gram entry. Every family passes the checker; the dense matrix is the Gram panel's, the nearly
    collinear one (its columns' parts below the first are ~1e-4 of them) the walk's."""
    module = SEEDS["fused"]
    flags = record_verdicts(monkeypatch, module, "_panel_gram", 7)
    a = every_family(48)
    constants = {"NB": 16, "FUSED_MAX_N": 4, "GRAM_PANEL": True, "GRAM_CPU": True,
                 **GRAM_ROUTES[route]}  # fmt: skip
    if route != "persist":
        assert module._reads_source(10, 48, 16, torch.device("cpu")) is False  # off here
        monkeypatch.setattr(module, "FORCE_TRITON_UPDATE", True)
        assert module._reads_source(10, 48, 16, torch.device("cpu"))
    out = run("fused", a, monkeypatch, **constants)
    assert_passes(a, out, "gram panel n=48")
    got = torch.stack(flags)  # (panels, matrices)
    assert got.shape == (3, 10), got.shape
    fams = BASE_FAMILIES + ["mixed", "mixed"]
    assert got[:, fams.index("dense")].tolist() == [1, 1, 1]
    assert got[0, fams.index("nearcollinear")] == 0
    assert got[:, fams.index("upper")].tolist() == [0, 0, 0]  # nothing below the diagonal
    # the same factors as the walk up to rounding where every panel was accepted (dense)
    ref_h, ref_tau = run("fused", a, monkeypatch, **{**constants, "GRAM_PANEL": False})
    d = fams.index("dense")
    assert torch.allclose(out[0][d], ref_h[d], atol=1e-4, rtol=1e-3)
    assert torch.allclose(out[1][d], ref_tau[d], atol=1e-5)


def test_a_gram_panel_that_gives_up_at_a_barrier_writes_nan(monkeypatch):
    """`_panel_gram` over two programs per matrix in the interpreter, which runs them one after
    another: the first polls its barriers PERSIST_SPIN_MAX times in all for a program that has
    not started, gives up, and writes NaN for its rows, the top block, tau and T (the second,
    which finds both barriers open, writes its rows): never a plausible factor. One program per
    matrix (its barriers open at once) is clean."""
    module = SEEDS["fused"]
    n, kb, rows = 48, 16, 32
    a = ref.make_inputs({"batch": 1, "n": n, "cond": 1, "family": "dense"}, 3, "cpu")[0]
    monkeypatch.setattr(module, "PERSIST_SPIN_MAX", 4)
    for nsplit, rb in ((2, rows), (1, 64)):
        h = a.clone()
        tau, v, t = torch.zeros(1, n), torch.zeros(1, n * kb), torch.zeros(1, kb * kb)
        s = torch.zeros(module._gram_words(1, kb))
        flag = module._gram_launch(h, tau, v, t, 0, kb, nsplit, rb, s)
        assert torch.equal(h[0, :, kb:], a[0, :, kb:])  # the trailing columns are not its business
        if nsplit == 2:
            assert torch.isnan(h[0, :rows, :kb]).all()  # program 0: the top block and its rows
            assert not torch.isnan(h[0, rows:, :kb]).any()
            assert torch.isnan(tau[0, :kb]).all() and torch.isnan(t).all()
        else:
            assert flag.tolist() == [1] and not torch.isnan(h).any()
            assert not torch.isnan(tau).any() and (tau[0, :kb] > 0).all()


def test_gram_panels_go_where_they_were_measured_to_win(monkeypatch):
    """The Gram panel's rule for an H200 (132 SMs): in front of register panels of 256+ rows
    where a matrix splits over 4+ resident programs (few matrices) or the batch has 256+
    matrices (one program each); not beside the look-ahead of 60 x 1024 (2 programs a matrix)
    or 40 x 352 (3), nor at 100 x 700 (one program a matrix, latency-bound); every tall
    persistent panel takes it first (`_gram_panel`), and nothing does with GRAM_PANEL off."""
    module = SEEDS["fused"]
    gpu = torch.device("cuda", 0)
    monkeypatch.setitem(module._SMS, gpu, 132)
    plan = module._gram_reg_plan
    assert module.GRAM_PANEL and module.GRAM_REG_MIN_BATCH == 256
    assert plan(640, 512, 32, 32, gpu) == (1, 512)
    assert plan(8200, 480, 32, 32, gpu) == (1, 512)
    assert plan(8, 1024, 32, 32, gpu) == (16, 64)
    assert plan(2, 1000, 32, 32, gpu) == (16, 64)
    assert plan(20, 1024, 32, 32, gpu) == (4, 256)
    for batch, m in ((60, 1024), (40, 352), (50, 700), (100, 700), (200, 257)):
        assert plan(batch, m, 32, 32, gpu) is None, (batch, m)
    assert plan(640, 255, 32, 32, gpu) is None  # short panels: the register walk
    assert plan(640, 512, 8, 8, gpu) is None  # narrower than tl.dot's 16
    assert plan(640, 512, 32, 32, torch.device("cpu")) is None  # the interpreter: only if asked
    assert module._gram_panel(32, 32, 64, gpu)
    assert not module._gram_panel(32, 32, 64, torch.device("cpu"))
    monkeypatch.setattr(module, "GRAM_REG_SPLIT", False)
    assert plan(8, 1024, 32, 32, gpu) is None and plan(640, 512, 32, 32, gpu) == (1, 512)
    monkeypatch.setattr(module, "GRAM_PANEL", False)
    assert plan(640, 512, 32, 32, gpu) is None and not module._gram_panel(32, 32, 64, gpu)
