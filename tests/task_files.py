"""Import a task's reference.py or a seed file by path, as the tests of each task do."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType


def load_file(path: Path, name: str) -> ModuleType:
    """The module at `path`, under a name of the caller's choosing (unique per test module, so
    two test files loading the same seed get separate module objects)."""
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
