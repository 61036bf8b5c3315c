"""The Textual cockpit: `CockpitApp(source)` over a `LiveSource` (attach) or a `ReplaySource`.

Depends on `cockpit.store` only; never on the engine (or litellm, which installs a logging
handler on stderr, where Textual draws).
"""

from cockpit.tui.app import CockpitApp
from cockpit.tui.sources import LiveSource, ReplaySource, SessionSource, Snapshot

__all__ = ["CockpitApp", "LiveSource", "ReplaySource", "SessionSource", "Snapshot"]
