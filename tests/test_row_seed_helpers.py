"""The row seeds (softmax and RMSNorm `triton_tiled`) are self-contained files (decision 0025),
so the helpers they share are written out in both. This keeps the copies from drifting: every
top-level function defined in both seeds under one name must have the same source, except the
ones listed as the task's own (same name, a different body by design)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SEEDS = {t: ROOT / "kernels" / t / "seeds" / "triton_tiled.py" for t in ("softmax", "rmsnorm")}
# Same name, the task's own body: the kernels and the host rules that read task-specific switches
OWN = {"kernel", "_chunk_apply", "_looped", "_unrolled", "_whole_row"}
# The helpers the two seeds must hold identically (a helper dropped from one seed fails here)
SHARED = {
    "_align", "_bodies_align", "_body_edges", "_chunk_vec", "_full_tiles", "_head_tail",
    "_lone_split", "_row_vec", "_sm_count", "_strides", "_tile_shape", "_warps",
}  # fmt: skip


def functions(path: Path) -> dict[str, str]:
    """Top-level function name -> its source (decorators included)."""
    text = path.read_text()
    lines = text.splitlines(keepends=True)
    out = {}
    for node in ast.parse(text).body:
        if isinstance(node, ast.FunctionDef):
            start = min([node.lineno] + [d.lineno for d in node.decorator_list]) - 1
            out[node.name] = "".join(lines[start : node.end_lineno])
    return out


FUNCS = {task: functions(path) for task, path in SEEDS.items()}
COMMON = sorted((set(FUNCS["softmax"]) & set(FUNCS["rmsnorm"])) - OWN)


def test_the_shared_helpers_are_in_both_seeds():
    assert set(COMMON) >= SHARED, sorted(SHARED - set(COMMON))


@pytest.mark.parametrize("name", COMMON)
def test_a_helper_of_both_seeds_has_one_source(name):
    """Fix a shared helper in both seeds at once: the copies must stay identical."""
    assert FUNCS["softmax"][name] == FUNCS["rmsnorm"][name], (
        f"{name} differs between the softmax and RMSNorm triton_tiled seeds"
    )
