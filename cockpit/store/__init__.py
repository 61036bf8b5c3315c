"""The session record: SQLite event log with derived tables, git candidate history, replay.

Importing this package is cheap (standard library only): the TUI and `cockpit status` open
records in a blink. The git half (`CandidateRepo`) pulls in gitpython, so it is loaded only when
first used, through the lazy attributes below.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from cockpit.store import events
from cockpit.store.commands import COMMAND_KINDS
from cockpit.store.derive import apply_event
from cockpit.store.lock import EngineLock, SessionLocked, acquire_engine_lock, engine_pid
from cockpit.store.models import Branch, Candidate, Command, Event, TelemetrySample
from cockpit.store.record import ReadOnlyRecord, RecordUnreadable, SessionDamaged, SessionRecord
from cockpit.store.replay import ReplayReader, ReplayState
from cockpit.store.sessions import (
    SessionInfo,
    create_session,
    find_session,
    latest_session,
    list_sessions,
    resolve_sessions_dir,
)

if TYPE_CHECKING:
    from cockpit.store.gitrepo import CandidateRepo, CommitInfo, format_commit_message

_LAZY = {"CandidateRepo", "format_commit_message", "CommitInfo"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        from cockpit.store import gitrepo

        return getattr(gitrepo, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "COMMAND_KINDS",
    "Branch",
    "Candidate",
    "CandidateRepo",
    "CommitInfo",
    "Command",
    "EngineLock",
    "Event",
    "ReadOnlyRecord",
    "RecordUnreadable",
    "ReplayReader",
    "ReplayState",
    "SessionInfo",
    "SessionDamaged",
    "SessionLocked",
    "SessionRecord",
    "TelemetrySample",
    "acquire_engine_lock",
    "apply_event",
    "create_session",
    "engine_pid",
    "events",
    "find_session",
    "format_commit_message",
    "latest_session",
    "list_sessions",
    "resolve_sessions_dir",
]
