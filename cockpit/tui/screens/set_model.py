"""`ModelDialog`: switch the model of one branch or of all of them."""

from __future__ import annotations

from typing import Any

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.suggester import SuggestFromList
from textual.widgets import Button, Input, Label, RadioButton, RadioSet


class ModelDialog(ModalScreen[dict[str, Any] | None]):
    """Returns the set_model arguments ({"model"} or {"model", "branch"}), or None."""

    CSS_PATH = "dialogs.tcss"
    BINDINGS = [Binding("escape", "cancel", "Cancel", id="dialog.cancel")]

    def __init__(self, branch: str | None, current: str | None, models: list[str]) -> None:
        super().__init__()
        self.branch, self.current, self.models = branch, current, models

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Label("Switch model", classes="title")
            known = ", ".join(self.models) if self.models else "none recorded yet"
            yield Label(f"known: {known}", classes="hint")
            yield Input(self.current or "", suggester=SuggestFromList(self.models), id="model")
            with RadioSet(id="scope"):
                yield RadioButton(
                    f"branch {self.branch}" if self.branch else "no branch selected",
                    value=self.branch is not None,
                    id="one",
                    disabled=self.branch is None,
                )
                yield RadioButton("all branches", value=self.branch is None, id="all")
            yield Label("enter switch · escape cancel", classes="hint")
            with Horizontal(classes="buttons"):
                yield Button("Switch", variant="primary", id="ok")
                yield Button("Cancel", id="cancel")

    @on(Button.Pressed, "#ok")
    @on(Input.Submitted, "#model")
    def action_submit(self) -> None:
        model = self.query_one("#model", Input).value.strip()
        if not model:
            self.notify("name a model", severity="warning")
            return
        pressed = self.query_one("#scope", RadioSet).pressed_button
        args: dict[str, Any] = {"model": model}
        if pressed is not None and pressed.id == "one" and self.branch:
            args["branch"] = self.branch
        self.dismiss(args)

    @on(Button.Pressed, "#cancel")
    def action_cancel(self) -> None:
        self.dismiss(None)
