"""Shared paths and helpers for the harness tests (imported by conftest.py and the test modules;
named so it cannot collide with another directory's helper module)."""

from __future__ import annotations

import functools
from pathlib import Path

import pytest

from cockpit.harness.judge import Options, evaluate
from cockpit.harness.result import Result
from cockpit.harness.task import Task, load_task

ROOT = Path(__file__).resolve().parents[2]
KERNELS = ROOT / "kernels"
ADVERSARIAL = ROOT / "tests" / "adversarial"
UNUSUAL = ROOT / "tests" / "unusual"


@functools.cache
def _load(name: str) -> Task:
    return load_task(name)


def task_or_skip(name: str) -> Task:
    """The task `name` from kernels/, or a skip while its folder has no task.toml yet."""
    if not (KERNELS / name / "task.toml").is_file():
        pytest.skip(f"kernels/{name}/task.toml does not exist yet")
    return _load(name)


def task_for(filename: str) -> str:
    """Candidates named qr_* belong to the QR task, everything else to softmax."""
    return "qr" if Path(filename).name.startswith("qr_") else "softmax"


def run_judge(task_name: str, path: Path | str, *, source: str | None = None, **options) -> Result:
    """One quick CPU evaluation of `path` in a fresh candidate process."""
    task = task_or_skip(task_name)
    return evaluate(task, path, Options(device="cpu", mode="quick", **options), source=source)


def reasons(result: Result) -> list[tuple[str, str]]:
    return [(r.kind, r.message) for r in result.reasons]


def describe(result: Result) -> str:
    """A compact account of a verdict for assertion messages."""
    lines = [f"status={result.status}"] + [f"  {r.kind} [{r.shape}]: {r.message}" for r in result.reasons[:6]]
    if result.log_tail.strip():
        lines.append("  log tail: " + result.log_tail.strip().splitlines()[-1][:300])
    return "\n".join(lines)
