"""Fixtures live in agents_helpers.py (a unique module name: several test folders share pytest's
rootdir, and two modules named `conftest` imported by name collide)."""

from agents_helpers import *  # noqa: F403
from agents_helpers import _offline_cost_map  # noqa: F401  (autouse fixtures: * skips _names)
