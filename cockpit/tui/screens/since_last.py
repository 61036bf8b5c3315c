"""`SinceLastLookedScreen`: what happened since the last visit, shown on attach."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Label, Static

from cockpit.tui.describe import TONE_STYLE


class SinceLastLookedScreen(ModalScreen[None]):
    CSS_PATH = "dialogs.tcss"
    BINDINGS = [Binding("escape,enter,space,q", "close", "Close", id="summary.close")]

    def __init__(self, lines: list[tuple[str, str]]) -> None:
        super().__init__()
        self.lines = lines

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog", id="since-last"):
            title, *rest = self.lines
            yield Label(title[0], classes="title")
            body = Content("\n").join(Content.styled(t, TONE_STYLE[tone]) for t, tone in rest)
            yield Static(body, id="summary-body")
            yield Label("enter or escape to continue", classes="hint")

    def action_close(self) -> None:
        self.dismiss(None)
