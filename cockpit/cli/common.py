"""What the `cockpit` sub-command modules share: the usage error (one line, exit 2), the console
for results, and turning `--device` and a task argument into checked values."""

from __future__ import annotations


class UsageError(Exception):
    """Bad usage or bad input: one line on stderr, exit 2."""


def out_console(**kw):
    """The rich console for a command's results on stdout. Piped or redirected (a log, ssh into a
    file, CI) rich takes 80 columns, or COLUMNS where a shell exported it, and squeezes tables
    until cells vanish (the merge table lost its ok column): there it gets 200."""
    from rich.console import Console

    con = Console(**kw)
    if not con.is_terminal:
        con = Console(width=200, **kw)
    return con


def resolve_device(arg: str | None) -> str:
    import torch

    if arg is None:
        return "cuda" if torch.cuda.is_available() else "cpu"
    if arg.startswith("cuda") and not torch.cuda.is_available():
        raise UsageError("--device cuda: no CUDA device is visible on this machine")
    if arg != "cpu" and not arg.startswith("cuda"):
        raise UsageError(f"--device {arg}: expected cpu or cuda")
    return arg


def resolve_task(spec: str):
    from cockpit.harness.task import TaskError, load_task

    try:
        return load_task(spec)
    except TaskError as exc:
        raise UsageError(str(exc)) from None
