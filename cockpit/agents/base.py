"""The small interface every proposer implements (the offline tuner now, the LLM agent next).

The engine hands a proposer everything it may use in one `ProposalRequest` and gets back one
`Proposal` (a whole candidate file). A proposer never touches the session record or the harness:
it is a pure function of what it is told, which keeps it swappable and testable.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol


class ProposalError(Exception):
    """No usable proposal this step; `reason` is recorded and shown, the loop goes on."""

    def __init__(self, reason: str, *, exhausted: bool = False) -> None:
        super().__init__(reason)
        self.reason = reason
        self.exhausted = exhausted  # nothing left to try from this parent: treat as a plateau


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


@dataclass
class Proposal:
    source: str
    family: str
    note: str = ""
    model: str | None = None
    usage: dict[str, Any] = field(default_factory=dict)  # tokens, cost_usd (LLM proposers)


class Proposer(Protocol):
    name: str

    def propose(self, request: ProposalRequest) -> Proposal: ...
