"""What a session's figures mean: which time is "best", and how a shown time is labelled.

Every view that names a best (`cockpit ls`, `cockpit status`, the cockpit's header, the beam,
notifications, the headless printer, replay, the report) asks this module, so they agree.

- A time is *comparable* unless its result says `comparable: false` (the Triton interpreter on
  a CPU: a correctness run, not a timing; or a time from another device). Comparable and
  non-comparable times are never ranked against each other.
- A branch's best is the loop's incumbent (`Branch.best_candidate`): a candidate replaces it
  only by the improvement rule (a gain of at least 3 %, confirmed by A/B where on), so a rerun
  that measured a little faster does not. The session's best is the lowest passing, fully
  checked score (`Candidate.rankable`: a screened-only candidate never is) among the branches'
  bests, baselines left out (the baseline is the reference a best is compared with, `×ref`),
  over the comparable times when any exists; where no branch names one (a record without
  branches), among every such candidate. When no time is comparable (a CPU session whose
  candidates are all Triton), the best is the lowest non-comparable time, labelled `n/c`.
- Wherever a time is shown, `tag` says what it is not: `n/c` (not comparable), `scr` (timed by
  the loop's screen only).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from cockpit.store.models import Branch, Candidate

NC = "n/c"
SCREENED = "scr"
NOT_COMPARABLE = "not comparable (Triton interpreter on a CPU, or another device)"
# the family of the task's own torch seed when the engine evaluates it as a baseline
BASELINE_FAMILY = "baseline"

T = TypeVar("T")


def comparable(summary: dict[str, Any] | None) -> bool:
    """A result's (or a candidate summary's) time is comparable unless it says otherwise; older
    records without the field are."""
    return (summary or {}).get("comparable") is not False


def is_baseline(c: Candidate) -> bool:
    return c.family == BASELINE_FAMILY or bool(c.summary.get("baseline_exempt"))


def pick(
    items: Iterable[T],
    score: Callable[[T], float],
    is_comparable: Callable[[T], bool],
) -> T | None:
    """The lowest `score` among `items` (already filtered to passing, non-baseline ones), over
    the comparable ones when any is; the first of equals wins."""
    items = list(items)
    pool = any(is_comparable(i) for i in items)
    ranked = [i for i in items if is_comparable(i) == pool]
    return min(ranked, key=score) if ranked else None


def branch_bests(
    items: Iterable[T], branches: Iterable[Branch], cid: Callable[[T], str]
) -> list[T]:
    """The `items` whose candidate (`cid`) is one of the `branches`' bests; all of them where
    none is."""
    items = list(items)
    held = {b.best_candidate for b in branches if b.best_candidate}
    kept = [i for i in items if cid(i) in held]
    return kept or items


def best(candidates: Iterable[Candidate], branches: Iterable[Branch] = ()) -> Candidate | None:
    """The session's best candidate: among the `branches`' bests where any is named, else among
    every candidate."""
    pool = branch_bests(
        (c for c in candidates if c.rankable and not is_baseline(c)), branches, lambda c: c.id
    )
    return pick(pool, lambda c: c.score_us or 0.0, lambda c: comparable(c.summary))


def reference(candidates: Iterable[Candidate]) -> Candidate | None:
    """The session's own baseline candidate (the task's torch seed) with its fastest passing
    time, comparable ones first: the reference a plot draws as a line, not a series."""
    return pick(
        (c for c in candidates if c.rankable and is_baseline(c)),
        lambda c: c.score_us or 0.0,
        lambda c: comparable(c.summary),
    )


def tag(c: Candidate | dict[str, Any] | None) -> str:
    """`n/c`, `scr` or '' for a candidate (or a result / best_changed payload) whose time is
    shown."""
    if c is None:
        return ""
    summary = c.summary if isinstance(c, Candidate) else c
    if not comparable(summary):
        return NC
    if summary.get("tier") == "screened":
        return SCREENED
    return ""


def labelled(text: str, c: Candidate | dict[str, Any] | None) -> str:
    """`text` (a formatted time) with the candidate's tag after it."""
    t = tag(c)
    return f"{text} {t}" if t else text


def best_dict(c: Candidate | None) -> dict[str, Any] | None:
    """The best as `status --json` and `ls --json` give it."""
    if c is None:
        return None
    return {
        "candidate": c.id,
        "branch": c.branch,
        "family": c.family,
        "score_us": c.score_us,
        "geomean_us": c.geomean_us,
        "comparable": comparable(c.summary),
        "label": tag(c),
    }
