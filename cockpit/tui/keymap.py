"""User key remapping: a TOML file of binding ids to keys, handed to `App.set_keymap`.

    # ~/.config/kernel-cockpit/keys.toml   (or $COCKPIT_KEYMAP)
    [keys]
    "cockpit.toggle_branch" = "p"
    "cockpit.fork" = "F,ctrl+f"

Binding ids are listed by `?` in the cockpit.
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path

ENV_VAR = "COCKPIT_KEYMAP"


def keymap_path() -> Path:
    env = os.environ.get(ENV_VAR)
    if env:
        return Path(env).expanduser()
    base = Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config")
    return base / "kernel-cockpit" / "keys.toml"


def load_keymap(path: Path | None = None) -> dict[str, str]:
    """The `[keys]` table, or {} when there is no file. A malformed file raises ValueError
    naming it (a silently ignored keymap is worse than an error)."""
    path = path or keymap_path()
    if not path.is_file():
        return {}
    try:
        data = tomllib.loads(path.read_text())
    except (tomllib.TOMLDecodeError, OSError) as exc:
        raise ValueError(f"{path}: {exc}") from None
    keys = data.get("keys", {})
    if not isinstance(keys, dict) or not all(isinstance(v, str) for v in keys.values()):
        raise ValueError(f"{path}: [keys] must map binding ids to key strings")
    return dict(keys)
