"""The `/` filter: which beam rows and which log lines to show, as pure functions.

A filter is space-separated terms, all of which must match (case-insensitive substrings):

    family:triton  fam:, f:      the candidate's (or branch's) algorithm family
    state:paused   s:            the branch's state (running, paused, plateau, retired)
    verdict:wrong  v:, status:   the candidate's verdict (ok, wrong, timeout, evaluating, ...)
    branch:b2      b:            the branch id
    model:claude   m:            the model
    anything else                any of the above, the candidate id, or the event's words

A candidate is seen with its branch's fields (so `state:paused` shows the candidates of paused
branches); a branch row stays when the branch matches or any of its candidates does. Events
are matched on their own subject and payload, looked up in the beam for what they lack.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from cockpit.store.models import Branch, Candidate, Event

FIELDS = {
    "family": "family",
    "fam": "family",
    "f": "family",
    "state": "state",
    "s": "state",
    "verdict": "verdict",
    "v": "verdict",
    "status": "verdict",
    "branch": "branch",
    "b": "branch",
    "model": "model",
    "m": "model",
}


@dataclass(frozen=True)
class Term:
    field: str | None  # None: free text
    value: str


@dataclass(frozen=True)
class Filter:
    text: str
    terms: tuple[Term, ...]

    @classmethod
    def parse(cls, text: str) -> Filter:
        terms = []
        for word in text.split():
            key, sep, value = word.partition(":")
            name = FIELDS.get(key.lower()) if sep else None
            if name and value:
                terms.append(Term(name, value.lower()))
            elif not (name and not value):  # `family:` alone (still typing) matches everything
                terms.append(Term(None, word.lower()))
        return cls(text.strip(), tuple(terms))

    @property
    def active(self) -> bool:
        return bool(self.terms)

    def _match(self, fields: dict[str, str | None], extra: str = "") -> bool:
        for term in self.terms:
            if term.field is not None:
                if term.value not in (fields.get(term.field) or "").lower():
                    return False
            elif not any(term.value in (v or "").lower() for v in (*fields.values(), extra)):
                return False
        return True

    def branch(self, b: Branch) -> bool:
        fields = {"branch": b.id, "family": b.family, "state": b.state, "model": b.model}
        return self._match({**fields, "verdict": None})

    def candidate(self, c: Candidate, b: Branch | None) -> bool:
        fields = {
            "branch": c.branch,
            "family": c.family,
            "state": b.state if b else None,
            "model": c.model or (b.model if b else None),
            "verdict": c.status,
        }
        return self._match(fields, c.id)

    def event(
        self,
        e: Event,
        text: str,
        branch: Callable[[str | None], Branch | None],
        candidate: Callable[[str | None], Candidate | None],
    ) -> bool:
        """`text`: the event's line as the log shows it (free text matches its words)."""
        p = e.payload
        b, c = branch(e.branch), candidate(e.candidate)
        verdict = p.get("status") if isinstance(p.get("status"), str) else None
        fields = {
            "branch": e.branch,
            "family": p.get("family") if isinstance(p.get("family"), str) else None,
            "state": p.get("state") if isinstance(p.get("state"), str) else None,
            "model": p.get("model") if isinstance(p.get("model"), str) else None,
            "verdict": verdict,
        }
        fallback = {
            "family": (c.family if c else None) or (b.family if b else None),
            "state": b.state if b else None,
            "model": (c.model if c else None) or (b.model if b else None),
            "verdict": c.status if c else None,
        }
        for key, value in fallback.items():
            fields[key] = fields[key] or value
        return self._match(fields, f"{e.kind} {e.candidate or ''} {text}")


NO_FILTER = Filter("", ())
