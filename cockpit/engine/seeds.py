"""A task's seeds: one candidate file per algorithm family under `seeds/`, where a new branch
starts and where a branch that switches family starts again."""

from __future__ import annotations

import ast
from pathlib import Path

from cockpit.engine.state import Seed


def read_family(source: str, default: str) -> str:
    """The file's `FAMILY = "..."`, else `default` (the file's stem)."""
    try:
        for node in ast.parse(source).body:
            if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == "FAMILY" for t in node.targets
            ):
                value = ast.literal_eval(node.value)
                if isinstance(value, str) and value:
                    return value
    except (SyntaxError, ValueError):
        pass
    return default


def load_seeds(task_root: Path) -> list[Seed]:
    seeds = []
    for p in sorted((task_root / "seeds").glob("*.py")):
        if p.name.startswith("_"):
            continue
        src = p.read_text()
        seeds.append(Seed(p.name, read_family(src, p.stem), src))
    return seeds
