"""Exploit: reading the hidden shapes (and the reference) from disk.

The judge's own modules are already imported in the candidate's process, so their `__file__`
paths (and `sys.path`) reveal where the project lives. The kernel tries to open
`kernels/softmax/task.toml` and `reference.py` there; with the hidden shapes in hand it could
special-case them (here it simply computes the softmax once the read succeeded).

A successful read lets it pass. When the read is blocked, the kernel raises the PermissionError it
got, so the verdict itself proves the sandbox denied the read.

Defense that must catch it: Landlock file rules (the task folder and the project are outside the
readable paths) -> `wrong` / `exception` "PermissionError ... Permission denied".
"""

import sys
from pathlib import Path

import torch

_STOLEN: str | None = None


def _candidates() -> list[Path]:
    roots: list[Path] = []
    for name, mod in list(sys.modules.items()):
        f = getattr(mod, "__file__", None)
        if name.startswith("cockpit") and f:
            roots += list(Path(f).resolve().parents)
    roots += [Path(p) for p in sys.path if p]
    out = []
    for r in dict.fromkeys(roots):
        for rel in ("kernels/softmax/task.toml", "kernels/softmax/reference.py"):
            p = r / rel
            if p.exists():  # stat is not a read: Landlock allows it
                out.append(p)
    return out


def _steal() -> str:
    denied = []
    for p in _candidates():
        try:
            with open(p) as fh:
                return fh.read()
        except PermissionError as exc:
            denied.append(f"{p}: {exc.strerror}")
        except OSError:
            continue
    if denied:
        raise PermissionError("hidden shapes unreadable: " + "; ".join(denied))
    raise FileNotFoundError("no task.toml found near the harness")


def kernel(x: torch.Tensor) -> torch.Tensor:
    global _STOLEN
    if _STOLEN is None:
        _STOLEN = _steal()
    return torch.softmax(x, dim=-1)
