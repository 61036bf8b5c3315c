"""The toy task (y = 2x + 1) with one hidden shape in the cascade's `promote` tier, written to a
folder per test: what a candidate does on that shape is seen only by a promoted evaluation."""

from __future__ import annotations

import shutil
from pathlib import Path

TOYTASK = Path(__file__).resolve().parent / "engine" / "toytask"
PROMOTED = "rows=41 cols=16 float32"
SHAPES = """
[shapes]
public = [{ rows = 64, cols = 16, dtype = "float32" }]
hidden = [{ rows = 37, cols = 16, dtype = "float32" }, { rows = 41, cols = 16, dtype = "float32", tier = "promote" }]
benchmark = [{ rows = 96, cols = 16, dtype = "float32" }]

[shapes.cpu]
public = [{ rows = 64, cols = 16, dtype = "float32" }]
hidden = [{ rows = 37, cols = 16, dtype = "float32" }, { rows = 41, cols = 16, dtype = "float32", tier = "promote" }]
benchmark = [{ rows = 96, cols = 16, dtype = "float32" }]
"""


def tiered_task(tmp_path: Path, limits: str = "") -> Path:
    """The task at `tmp_path / "tiered"`; `limits` (TOML, e.g. a `[limits]` table) goes before
    the shapes."""
    root = tmp_path / "tiered"
    shutil.copytree(TOYTASK, root)
    text = (root / "task.toml").read_text()
    (root / "task.toml").write_text(text[: text.index("# The GPU sets")] + limits + SHAPES)
    return root
