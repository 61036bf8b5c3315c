"""The cockpit's config file: key remapping and the notification command, in one TOML file.

    # ~/.config/kernel-cockpit/keys.toml   (or $COCKPIT_KEYMAP)
    notify_command = 'curl -s -d "$COCKPIT_MESSAGE" https://example.org/my-phone'
    notify_on = ["best", "plateau", "provider"]   # optional; default: every kind
    notify_timeout_s = 30                          # optional; the command is killed after it

    [keys]
    "cockpit.toggle_branch" = "p"
    "cockpit.fork" = "F,ctrl+f"

Binding ids are listed by `?` in the cockpit. The notification kinds and the environment the
command gets are in `cockpit/tui/notify.py`. Top-level keys go before `[keys]` (TOML).
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

ENV_VAR = "COCKPIT_KEYMAP"
NOTICE_KINDS = ("best", "plateau", "provider", "paused", "error", "proposal")
DEFAULT_NOTIFY_ON = ("best", "plateau", "provider", "paused", "error")
DEFAULT_NOTIFY_TIMEOUT_S = 30.0


@dataclass(frozen=True)
class NotifySettings:
    command: str | None = None
    on: frozenset[str] = frozenset(DEFAULT_NOTIFY_ON)
    timeout_s: float = DEFAULT_NOTIFY_TIMEOUT_S


@dataclass(frozen=True)
class CockpitConfig:
    keys: dict[str, str] = field(default_factory=dict)
    notify: NotifySettings = NotifySettings()


def keymap_path() -> Path:
    env = os.environ.get(ENV_VAR)
    if env:
        return Path(env).expanduser()
    base = Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config")
    return base / "kernel-cockpit" / "keys.toml"


def load_config(path: Path | None = None) -> CockpitConfig:
    """The whole file, or the defaults when there is none. A malformed file raises ValueError
    naming it (a silently ignored keymap or notify command is worse than an error)."""
    path = path or keymap_path()
    if not path.is_file():
        return CockpitConfig()
    try:
        data = tomllib.loads(path.read_text())
    except (tomllib.TOMLDecodeError, OSError) as exc:
        raise ValueError(f"{path}: {exc}") from None
    keys = data.get("keys", {})
    if not isinstance(keys, dict) or not all(isinstance(v, str) for v in keys.values()):
        raise ValueError(f"{path}: [keys] must map binding ids to key strings")
    command = data.get("notify_command")
    if command is not None and (not isinstance(command, str) or not command.strip()):
        raise ValueError(f"{path}: notify_command must be a non-empty string")
    on = data.get("notify_on", list(DEFAULT_NOTIFY_ON))
    if not isinstance(on, list) or not set(on) <= set(NOTICE_KINDS):
        raise ValueError(f"{path}: notify_on must be a list of {', '.join(NOTICE_KINDS)}")
    timeout = data.get("notify_timeout_s", DEFAULT_NOTIFY_TIMEOUT_S)
    if not isinstance(timeout, int | float) or isinstance(timeout, bool) or timeout <= 0:
        raise ValueError(f"{path}: notify_timeout_s must be a positive number of seconds")
    return CockpitConfig(dict(keys), NotifySettings(command, frozenset(on), float(timeout)))


def load_keymap(path: Path | None = None) -> dict[str, str]:
    """The `[keys]` table, or {} when there is no file."""
    return load_config(path).keys
