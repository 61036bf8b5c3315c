"""The small interface every proposer implements (the offline tuner now, the LLM agent next).

The engine hands a proposer everything it may use in one `ProposalRequest` and gets back one
`Proposal` (a whole candidate file, plus its `alternatives` for best-of-n). `propose` runs on a
thread of its own, so the engine keeps applying commands while a model call is in flight. A proposer never touches the session record or the harness:
it is a pure function of what it is told, which keeps it swappable and testable.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol


class ProposalError(Exception):
    """No usable proposal this step; `reason` is recorded and shown, the loop goes on."""

    def __init__(self, reason: str, *, exhausted: bool = False) -> None:
        super().__init__(reason)
        self.reason = reason
        self.exhausted = exhausted  # nothing left to try from this parent: treat as a plateau


class ProposalCancelled(ProposalError):
    """The engine cancelled the request (`ProposalRequest.cancel` was set) while it was being
    worked on: whatever came back is discarded. `usage` says what the calls made so far cost."""

    def __init__(self, reason: str = "cancelled", *, usage: dict[str, Any] | None = None) -> None:
        super().__init__(reason)
        self.usage = usage or {}


@dataclass
class Attempt:
    candidate: str
    status: str
    score_us: float | None
    summary: str = ""


@dataclass
class ProposalRequest:
    task_name: str
    task_root: str
    branch: str
    family: str
    parent_id: str | None
    parent_source: str
    parent_result: dict[str, Any] | None
    history: list[Attempt] = field(default_factory=list)
    tried_hashes: set[str] = field(default_factory=set)
    steer: list[str] = field(default_factory=list)  # persistent instructions for this branch
    queued: list[str] = field(default_factory=list)  # for this proposal only
    model: str | None = None
    escalation: str | None = None  # "family" | "model" | "prompt" when the branch plateaued
    seed: int = 0
    # set by the engine to interrupt the work (pause, retire, stop, redirect while in flight); a
    # proposer checks it between calls, retries and stream chunks and raises ProposalCancelled
    cancel: threading.Event | None = field(default=None, compare=False, repr=False)
    # called by a proposer before it waits for the provider (a 429 or a 5xx, honouring
    # Retry-After) with the wall-clock time the wait ends and why; any thread may call it
    on_wait: Callable[[float, str], None] | None = field(default=None, compare=False, repr=False)

    def cancelled(self) -> bool:
        return self.cancel is not None and self.cancel.is_set()


@dataclass
class Proposal:
    source: str
    family: str
    note: str = ""
    model: str | None = None
    usage: dict[str, Any] = field(default_factory=dict)  # tokens, cost_usd (LLM proposers)
    source_hash: str | None = (
        None  # hashing.source_hash(source), when the proposer computed it already
    )
    # best-of-n: the other usable choices of the same step, each verified and timed as a candidate
    # of its own; the step's usage is carried by this (the first) proposal only
    alternatives: list[Proposal] = field(default_factory=list)


class Proposer(Protocol):
    name: str

    def propose(self, request: ProposalRequest) -> Proposal: ...
