"""Fixtures live in tui_helpers.py (a unique module name: several test folders share pytest's
rootdir, and two modules named `conftest` imported by name collide)."""

from tui_helpers import *  # noqa: F403
from tui_helpers import (  # noqa: F401  (autouse fixtures: * skips _names)
    _no_user_keymap,
    _release_engine_locks,
    _utc,
)
