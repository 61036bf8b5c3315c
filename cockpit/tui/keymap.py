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
FIELDS = ("notify_command", "notify_on", "notify_timeout_s", "keys")


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
    naming it and the field (a silently ignored keymap or notify command is worse than an
    error): bad TOML, an unknown field, a binding id no screen has, a key no terminal sends."""
    path = path or keymap_path()
    if not path.is_file():
        return CockpitConfig()
    try:
        data = tomllib.loads(path.read_text())
    except (tomllib.TOMLDecodeError, OSError) as exc:
        raise ValueError(f"{path}: invalid TOML: {exc}") from None
    except UnicodeDecodeError as exc:
        raise ValueError(f"{path}: not UTF-8 text (byte {exc.start})") from None
    unknown = sorted(set(data) - set(FIELDS))
    if unknown:
        raise ValueError(
            f"{path}: unknown field {unknown[0]!r} (known: {', '.join(FIELDS)}; "
            "top-level fields go before [keys])"
        )
    keys = data.get("keys", {})
    if not isinstance(keys, dict) or not all(isinstance(v, str) for v in keys.values()):
        raise ValueError(f"{path}: [keys] must map binding ids to key strings")
    if keys:
        _check_keys(keys, path)
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


def binding_ids() -> set[str]:
    """Every binding id of the cockpit's app and screens (what `[keys]` may remap)."""
    import importlib
    import pkgutil

    import cockpit.tui.screens as screens
    from cockpit.tui.app import CockpitApp

    holders: list[object] = [CockpitApp]
    for mod in pkgutil.iter_modules(screens.__path__):
        module = importlib.import_module(f"{screens.__name__}.{mod.name}")
        holders += [v for v in vars(module).values() if isinstance(v, type)]
    return {b.id for h in holders for b in getattr(h, "BINDINGS", []) if getattr(b, "id", None)}


MODIFIERS = ("ctrl", "shift", "alt", "meta", "super", "hyper")


def key_error(key: str) -> str | None:
    """Why `key` (one key of a comma-separated list, as Textual's bindings take them) names no
    key a terminal can send, or None for a good one: modifiers joined by '+' and then one
    character (`p`, `?`), a named key (`escape`, `f5`, `pagedown`, `space`) or a character's
    name (`question_mark`, `slash`)."""
    from textual.keys import ASCII_KEY_NAMES, KEY_NAME_REPLACEMENTS, Keys, key_to_character

    key = key.strip()
    if key == "+":
        return None
    *mods, base = key.split("+")
    bad = [m for m in mods if m not in MODIFIERS]
    if bad:
        return f"{bad[0]!r} is not a modifier ({', '.join(MODIFIERS)})"
    if not base:
        return "no key after the modifiers" if mods else "an empty key"
    named = {k.value for k in Keys if "+" not in k.value}
    named |= set(KEY_NAME_REPLACEMENTS.values()) | set(ASCII_KEY_NAMES.values())
    if len(base) == 1 or base in named or key_to_character(base) is not None:
        return None
    return f"{base!r} is not a key name (e.g. p, ctrl+f, f5, escape, space, question_mark)"


def _check_keys(keys: dict[str, str], path: Path) -> None:
    import difflib

    known = binding_ids()
    for bid, value in keys.items():
        if bid not in known:
            near = difflib.get_close_matches(bid, sorted(known), n=1)
            hint = f"did you mean {near[0]!r}?" if near else "`?` in the cockpit lists them"
            raise ValueError(f"{path}: [keys] {bid!r}: unknown binding id ({hint})")
        for key in value.split(","):
            why = key_error(key)
            if why:
                raise ValueError(f"{path}: [keys] {bid!r} = {value!r}: {why}")


def load_keymap(path: Path | None = None) -> dict[str, str]:
    """The `[keys]` table, or {} when there is no file."""
    return load_config(path).keys
