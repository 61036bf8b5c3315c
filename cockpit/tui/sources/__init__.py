"""Where the cockpit's data comes from: `LiveSource` (attach) and `ReplaySource` (replay),
both behind the `SessionSource` protocol that tests and other front ends may implement."""

from cockpit.tui.sources.base import (
    LOG_TAIL,
    MILESTONE_KINDS,
    CandidateDetail,
    Player,
    SessionSource,
    Snapshot,
)
from cockpit.tui.sources.live import LiveSource
from cockpit.tui.sources.replay import ReplaySource

__all__ = [
    "LOG_TAIL",
    "MILESTONE_KINDS",
    "CandidateDetail",
    "LiveSource",
    "Player",
    "ReplaySource",
    "SessionSource",
    "Snapshot",
]
