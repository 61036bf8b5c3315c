"""`HelpScreen`: every key of the main screen as it is bound now (keymap applied), with its
binding id for remapping, plus the palette-only commands."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import DataTable, Label


class HelpScreen(ModalScreen[None]):
    CSS_PATH = "dialogs.tcss"
    BINDINGS = [Binding("escape,q,question_mark", "dismiss", "Close", id="dialog.close")]

    def __init__(self, rows: list[tuple[str, str, str]]) -> None:
        """rows: (key, what it does, binding id)."""
        super().__init__()
        self.rows = rows

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Label("Keys", classes="title")
            yield DataTable(id="help-table", cursor_type="row", show_cursor=False)
            yield Label(
                "ctrl+p: every action by name · remap: [keys] in "
                '~/.config/kernel-cockpit/keys.toml (binding id = "key")',
                classes="hint",
                markup=False,  # `[keys]` is the TOML table's name, not a style
            )

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        table.add_columns("key", "action", "id")
        table.add_rows(self.rows)
        table.focus()

    async def action_dismiss(self, result: None = None) -> None:
        self.dismiss(None)
