"""`CockpitApp`: the Textual app over an injected `SessionSource` (live, replay, or a test's)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable

from textual.app import App

from cockpit.tui.commands import CockpitCommands
from cockpit.tui.keymap import NotifySettings
from cockpit.tui.screens.main import MainScreen
from cockpit.tui.sources import SessionSource
from cockpit.tui.summary import current_user


class CockpitApp(App[None]):
    """The cockpit. `now` and `poll_interval=None` exist for tests: a frozen clock and no
    timers make every screen deterministic (refresh with ctrl+r, step replay with ])."""

    TITLE = "Kernel Cockpit"
    COMMANDS = App.COMMANDS | {CockpitCommands}
    # Toasts go top left, below the session bar, over the GPU panel and the oldest part of the
    # plot: the event log (bottom right, where Textual puts them) and the beam stay readable.
    CSS = """
    ToastRack { dock: top; align: left top; margin-bottom: 0; margin-top: 1; }
    ToastHolder { align-horizontal: left; }
    Toast { padding: 0 1; max-width: 60%; }
    """

    def __init__(
        self,
        source: SessionSource,
        *,
        now: Callable[[], float] = time.time,
        poll_interval: float | None = 1.0,
        show_summary: bool = True,
        keymap: dict[str, str] | None = None,
        models: Iterable[str] = (),
        user: str | None = None,
        notify: NotifySettings | None = None,
    ) -> None:
        super().__init__()
        self.source = source
        self.now = now
        self.poll_interval = poll_interval
        self.show_summary = show_summary
        self.keymap = keymap or {}
        self.models = tuple(models)
        self.user = user or current_user()
        self.notify_settings = notify or NotifySettings()
        self.sub_title = source.name

    def on_mount(self) -> None:
        if self.keymap:
            self.set_keymap(self.keymap)
        # Pushed, not returned by get_default_screen(): only pushed screens load their CSS_PATH.
        self.push_screen(self.main_screen())

    def main_screen(self) -> MainScreen:
        return MainScreen(
            self.source,
            now=self.now,
            poll_interval=self.poll_interval,
            show_summary=self.show_summary,
            command_source=f"tui@{self.user}",
            user=self.user,
        )

    def on_unmount(self) -> None:
        self.source.close()
