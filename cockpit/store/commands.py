"""The command queue's vocabulary: what the TUI and `cockpit send` may ask the engine to do.

It lives in the store, not the engine, because the posters (TUI, scripts) must not import the
engine, and a typo'd command should be refused when it is posted, not discovered later as a
silent no-op. The engine applies commands between steps and acknowledges each with a result.

  pause       branch (optional; none = the whole session)
  resume      branch (optional)
  fork        candidate, family (optional), instruction (optional), model (optional)
  redirect    branch, instruction, mode: "steer" (from now on) | "queue" (next proposal only)
  retire      branch, reason (optional)
  set_model   model, branch (optional; none = all branches and the default)
  set_budget  budget (evaluations), usd, tokens (LLM caps; null = no cap): any of them
  stop        (no arguments)
"""

from __future__ import annotations

COMMAND_KINDS: dict[str, tuple[str, ...]] = {
    "pause": ("branch",),
    "resume": ("branch",),
    "fork": ("candidate", "family", "instruction", "model"),
    "redirect": ("branch", "instruction", "mode"),
    "retire": ("branch", "reason"),
    "set_model": ("model", "branch"),
    "set_budget": ("budget", "usd", "tokens"),
    "stop": (),
}
COMMAND_STATES = ("pending", "acked", "failed")


def normalize_command_kind(kind: str) -> str:
    """`set-model` (as typed on a command line) and `set_model` name the same command."""
    name = kind.strip().lower().replace("-", "_")
    if name not in COMMAND_KINDS:
        known = ", ".join(sorted(typed_name(k) for k in COMMAND_KINDS))
        raise ValueError(f"unknown command {kind!r}; known commands: {known}")
    return name


def typed_name(kind: str) -> str:
    """A command as a user types it (`set-model`), for messages; the queue stores `set_model`."""
    return kind.replace("_", "-")
