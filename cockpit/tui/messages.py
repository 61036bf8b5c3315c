"""Messages between the cockpit's workers and its screen: dataclasses carrying data, past tense
for facts."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from textual.message import Message

from cockpit.tui.sources import CandidateDetail, Snapshot
from cockpit.tui.summary import Summary


@dataclass
class SnapshotLoaded(Message):
    snapshot: Snapshot

    def can_replace(self, message: Message) -> bool:
        """Textual asks the queued message whether the next one (`message`) supersedes it:
        a reset does (it redraws everything); an incremental one does not (its events would
        be lost)."""
        return isinstance(message, SnapshotLoaded) and message.snapshot.reset


@dataclass
class DetailLoaded(Message):
    detail: CandidateDetail | None
    open_tab: str | None = None  # open the detail screen on this tab once loaded


@dataclass
class CommandPosted(Message):
    command_id: int
    kind: str
    args: dict[str, Any] = field(default_factory=dict)


@dataclass
class SummaryReady(Message):
    summary: Summary
    last_event_id: int
