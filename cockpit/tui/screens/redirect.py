"""`RedirectDialog`: a multi-line instruction for a branch, steered from now on or queued for
the next proposal only."""

from __future__ import annotations

from typing import Any

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Label, RadioButton, RadioSet, TextArea


class RedirectDialog(ModalScreen[dict[str, Any] | None]):
    """Returns {"instruction", "mode"} or None when cancelled."""

    CSS_PATH = "dialogs.tcss"
    BINDINGS = [
        Binding("escape", "cancel", "Cancel", id="dialog.cancel"),
        Binding("ctrl+s", "submit", "Send", id="dialog.submit", priority=True),
    ]

    def __init__(self, branch: str, current: str | None = None) -> None:
        super().__init__()
        self.branch, self.current = branch, current

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Label(f"Redirect {self.branch}", classes="title")
            if self.current:
                yield Label(f"current instruction: {self.current}", classes="hint")
            yield TextArea(id="instruction")
            with RadioSet(id="mode"):
                yield RadioButton("steer (from now on)", value=True, id="steer")
                yield RadioButton("queue (next proposal only)", id="queue")
            yield Label("ctrl+s send · escape cancel", classes="hint")
            with Horizontal(classes="buttons"):
                yield Button("Send", variant="primary", id="ok")
                yield Button("Cancel", id="cancel")

    def on_mount(self) -> None:
        self.query_one("#instruction", TextArea).focus()

    @on(Button.Pressed, "#ok")
    def action_submit(self) -> None:
        text = self.query_one("#instruction", TextArea).text.strip()
        if not text:
            self.notify("write an instruction first", severity="warning")
            return
        pressed = self.query_one("#mode", RadioSet).pressed_button
        mode = pressed.id if pressed is not None and pressed.id else "steer"
        self.dismiss({"instruction": text, "mode": mode})

    @on(Button.Pressed, "#cancel")
    def action_cancel(self) -> None:
        self.dismiss(None)
