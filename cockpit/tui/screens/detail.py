"""`DetailScreen`: the selected candidate's detail, full screen."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import Footer

from cockpit.tui.sources import CandidateDetail as Detail
from cockpit.tui.widgets.candidate_detail import CandidateDetail


class DetailScreen(Screen[None]):
    DEFAULT_CSS = """
    DetailScreen CandidateDetail { border: round $accent; }
    """
    BINDINGS = [
        Binding("escape,q,enter", "close", "Back", id="detail.close"),
        Binding("c", "tab('code')", "Code", id="detail.code"),
        Binding("d", "tab('diff')", "Diff", id="detail.diff"),
        Binding("v", "tab('feedback')", "Feedback", id="detail.feedback"),
        Binding("s", "tab('shapes')", "Shapes", id="detail.shapes"),
        Binding("p", "tab('profile')", "Profile", id="detail.profile"),
    ]

    def __init__(self, detail: Detail, tab: str = "code") -> None:
        super().__init__()
        self.detail, self.tab = detail, tab

    def compose(self) -> ComposeResult:
        yield CandidateDetail(id="full-detail")
        yield Footer()

    def on_mount(self) -> None:
        panel = self.query_one(CandidateDetail)
        panel.show(self.detail)
        panel.show_tab(self.tab)

    def action_tab(self, tab: str) -> None:
        self.query_one(CandidateDetail).show_tab(tab)

    def action_close(self) -> None:
        self.dismiss(None)
