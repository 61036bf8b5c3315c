"""`RetireDialog`: confirm retiring a branch, with a reason that goes into the record."""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label


class RetireDialog(ModalScreen[str | None]):
    """Returns the reason ("" allowed) when confirmed, None when cancelled."""

    CSS_PATH = "dialogs.tcss"
    BINDINGS = [Binding("escape", "cancel", "Cancel", id="dialog.cancel")]

    def __init__(self, branch: str, family: str | None) -> None:
        super().__init__()
        self.branch, self.family = branch, family

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Label(
                f"Retire {self.branch} ({self.family or '?'})? The engine stops working on it.",
                classes="title",
            )
            yield Input(placeholder="reason (recorded with the retirement)", id="reason")
            yield Label("enter retire · escape cancel", classes="hint")
            with Horizontal(classes="buttons"):
                yield Button("Retire", variant="error", id="ok")
                yield Button("Cancel", id="cancel")

    @on(Button.Pressed, "#ok")
    @on(Input.Submitted, "#reason")
    def action_submit(self) -> None:
        self.dismiss(self.query_one("#reason", Input).value.strip())

    @on(Button.Pressed, "#cancel")
    def action_cancel(self) -> None:
        self.dismiss(None)
