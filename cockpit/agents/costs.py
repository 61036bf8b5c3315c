"""Tokens and dollars per call, summed per branch and per model, with caps.

A cap stops *new* calls exactly at the cap: a call goes out while the spend is below every cap
that applies and none goes out once a cap is reached (`spent >= cap`). The call that crosses the
cap is not cut short (its cost is unknown until it returns), but its output is bounded:
`max_tokens_left` clamps a call's `max_tokens` to the token allowance that remains. Thread-safe,
so branches may propose concurrently.
"""

from __future__ import annotations

import threading
from dataclasses import asdict, dataclass, field
from typing import Any

# The session's USD cap when neither the profile (`budget_usd`) nor `cockpit run --usd` sets one:
# an unattended run on a priced model never spends more than this unless a person says so. Only
# priced calls count toward it (a local server's unpriced calls cost $0; the call caps bound them).
DEFAULT_USD_CAP = 20.0


class BudgetExceeded(Exception):
    def __init__(self, reason: str, scope: str, raise_with: str = "N") -> None:
        super().__init__(reason)
        self.reason = reason
        # "session" (the token cap: pause), "branch", or "stop" (the request cap and the USD
        # cap: the session stops, resumable)
        self.scope = scope
        # the `set-budget` arguments that lift it: "N" (evaluations) or "--usd N"
        self.raise_with = raise_with


@dataclass
class Spend:
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    unpriced_calls: int = 0  # calls whose model litellm has no price for (counted as $0)

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def add(self, prompt: int, completion: int, cost: float | None) -> None:
        self.calls += 1
        self.prompt_tokens += prompt
        self.completion_tokens += completion
        if cost is None:
            self.unpriced_calls += 1
        else:
            self.cost_usd += cost

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "tokens": self.tokens, "cost_usd": round(self.cost_usd, 10)}


@dataclass
class Caps:
    usd: float | None = None
    tokens: int | None = None


@dataclass
class Ledger:
    caps: Caps = field(default_factory=Caps)
    branch_caps: dict[str, Caps] = field(default_factory=dict)
    total: Spend = field(default_factory=Spend)
    branches: dict[str, Spend] = field(default_factory=dict)
    models: dict[str, Spend] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    # model requests sent (every attempt: a 429 or a 500 counts, as does a repair turn), and
    # the session's cap on them (None: no cap); reaching it stops the session
    requests: int = 0
    request_cap: int | None = None
    request_cap_why: str = ""
    # where the session's USD cap came from ("the default for priced models", "the profile's
    # budget_usd", "set by cockpit run --usd", "set by set-budget --usd"); named in the reason
    # when it is reached
    usd_from: str = ""

    @classmethod
    def with_caps(cls, usd: float | None = None, tokens: int | None = None) -> Ledger:
        return cls(caps=Caps(usd, tokens))

    def set_caps(
        self, usd: float | None = None, tokens: int | None = None, usd_from: str = ""
    ) -> None:
        """The session-wide caps (`set-budget --usd/--tokens`); None removes a cap."""
        with self._lock:
            self.caps = Caps(usd, tokens)
            self.usd_from = usd_from

    def set_branch_cap(
        self, branch: str, usd: float | None = None, tokens: int | None = None
    ) -> None:
        with self._lock:
            self.branch_caps[branch] = Caps(usd, tokens)

    def set_request_cap(self, cap: int | None, why: str = "") -> None:
        with self._lock:
            self.request_cap, self.request_cap_why = cap, why

    def count_request(self, n: int = 1) -> None:
        with self._lock:
            self.requests += n

    def record(
        self,
        branch: str,
        model: str,
        prompt_tokens: int,
        completion_tokens: int,
        cost_usd: float | None,
    ) -> None:
        with self._lock:
            for s in (
                self.total,
                self.branches.setdefault(branch, Spend()),
                self.models.setdefault(model, Spend()),
            ):
                s.add(int(prompt_tokens), int(completion_tokens), cost_usd)

    def check(self, branch: str) -> None:
        """Raise BudgetExceeded if a new call for `branch` would start at or past a cap."""
        with self._lock:
            if self.request_cap is not None and self.requests >= self.request_cap:
                raise BudgetExceeded(
                    f"model call cap reached: {self.requests} requests"
                    + (f" ({self.request_cap_why})" if self.request_cap_why else ""),
                    "stop",
                )
            for scope, caps, spend in (
                ("session", self.caps, self.total),
                ("branch", self.branch_caps.get(branch), self.branches.get(branch, Spend())),
            ):
                if caps is None:
                    continue
                who = "the session" if scope == "session" else f"branch {branch}"
                # only priced calls count: unpriced ones (a local server) cost $0 and never
                # reach a USD cap, not even one of $0
                usd_reached = (
                    caps.usd is not None
                    and spend.calls > spend.unpriced_calls
                    and spend.cost_usd >= caps.usd
                )
                if scope == "session" and usd_reached:
                    # the session's spending cap stops the run (resumable), not a pause: an
                    # unattended session should end, not hold its workers waiting for a person
                    raise BudgetExceeded(
                        f"LLM spending cap reached: ${spend.cost_usd:.4f} of the session's "
                        f"${caps.usd:.4f} cap spent on priced model calls"
                        + (f" ({self.usd_from})" if self.usd_from else ""),
                        "stop",
                        raise_with="--usd N",
                    )
                if usd_reached:
                    raise BudgetExceeded(
                        f"LLM budget reached for {who}: ${spend.cost_usd:.4f} of ${caps.usd:.4f} spent",
                        scope,
                    )
                if caps.tokens is not None and spend.tokens >= caps.tokens:
                    raise BudgetExceeded(
                        f"LLM token budget reached for {who}: {spend.tokens:,} of {caps.tokens:,} tokens used",
                        scope,
                    )

    def max_tokens_left(self, branch: str, wanted: int) -> int:
        """`wanted`, clamped to the smallest token allowance left (at least 1)."""
        with self._lock:
            left = [
                c.tokens - s.tokens
                for c, s in (
                    (self.caps, self.total),
                    (self.branch_caps.get(branch), self.branches.get(branch, Spend())),
                )
                if c is not None and c.tokens is not None
            ]
        return max(1, min([wanted, *left]))

    def summary(self) -> dict[str, Any]:
        with self._lock:
            return {
                "total": self.total.to_dict(),
                "branches": {k: v.to_dict() for k, v in self.branches.items()},
                "models": {k: v.to_dict() for k, v in self.models.items()},
                "caps": {"usd": self.caps.usd, "tokens": self.caps.tokens},
            }

    def restore(self, records: list[dict[str, Any]]) -> None:
        """Rebuild the sums on resume from the per-call records the proposals carried
        (`Proposal.usage["calls_detail"]`), so caps hold across engine restarts."""
        for r in records:
            self.record(
                str(r.get("branch", "")),
                str(r.get("model", "")),
                int(r.get("prompt_tokens", 0)),
                int(r.get("completion_tokens", 0)),
                r.get("cost_usd"),
            )
