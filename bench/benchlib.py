"""What several bench scripts share. Scripts run as `python bench/NAME.py`, so this folder is
on sys.path and `from benchlib import ...` works without installing anything."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType


def load_module(path: Path, name: str | None = None) -> ModuleType:
    """Import a file (a seed, a reference, a kernel file) as a fresh module of its own: two loads
    of one file are two modules, so module constants can differ between them."""
    spec = importlib.util.spec_from_file_location(name or f"bench_{path.stem}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod
