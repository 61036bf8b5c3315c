"""`ForkDialog`: fork a candidate into a new branch, with a family and an instruction."""

from __future__ import annotations

from typing import Any

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.suggester import SuggestFromList
from textual.widgets import Button, Input, Label, TextArea


class ForkDialog(ModalScreen[dict[str, Any] | None]):
    """Returns the fork command's arguments (family, instruction), or None when cancelled."""

    CSS_PATH = "dialogs.tcss"
    BINDINGS = [
        Binding("escape", "cancel", "Cancel", id="dialog.cancel"),
        Binding("ctrl+s", "submit", "Fork", id="dialog.submit", priority=True),
    ]

    def __init__(self, candidate: str, family: str | None, families: list[str]) -> None:
        super().__init__()
        self.candidate, self.family, self.families = candidate, family or "", families

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Label(f"Fork {self.candidate} into a new branch", classes="title")
            yield Label("algorithm family (the candidate's own when left as is)", classes="hint")
            yield Input(self.family, suggester=SuggestFromList(self.families), id="family")
            yield Label("instruction for the new branch (optional)", classes="hint")
            yield TextArea(id="instruction")
            yield Label("ctrl+s fork · escape cancel", classes="hint")
            with Horizontal(classes="buttons"):
                yield Button("Fork", variant="primary", id="ok")
                yield Button("Cancel", id="cancel")

    @on(Button.Pressed, "#ok")
    @on(Input.Submitted, "#family")
    def action_submit(self) -> None:
        family = self.query_one("#family", Input).value.strip()
        instruction = self.query_one("#instruction", TextArea).text.strip()
        args: dict[str, Any] = {}
        if family and family != self.family:
            args["family"] = family
        if instruction:
            args["instruction"] = instruction
        self.dismiss(args)

    @on(Button.Pressed, "#cancel")
    def action_cancel(self) -> None:
        self.dismiss(None)
