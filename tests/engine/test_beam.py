"""The beam's policy as pure functions: duplicates, significance, plateaus, family choice."""

from __future__ import annotations

import pytest

from cockpit.engine.beam import MIN_GAIN, next_family, plateaued, significantly_better
from cockpit.hashing import source_hash

CODE = '''
import torch

CHUNK = 4


def kernel(x):
    return x * 2 + 1
'''


def result(score_us: float, sem_pct: float = 0.5, status: str = "ok", shapes: int = 3) -> dict:
    """A harness result record reduced to what the significance rule reads."""
    return {
        "status": status,
        "score_us": score_us,
        "shapes": [
            {"weight": 1.0, "timing": {"median_us": score_us, "sem_pct": sem_pct}}
            for _ in range(shapes)
        ],
    }


# --- duplicates -------------------------------------------------------------------------------


def test_source_hash_ignores_comments() -> None:
    commented = CODE.replace("CHUNK = 4", "CHUNK = 4  # the chunk size, tuned")
    commented = "# a kernel\n" + commented
    assert source_hash(commented) == source_hash(CODE)


def test_source_hash_ignores_whitespace_and_blank_lines() -> None:
    squashed = CODE.replace("\n\n\n", "\n").replace("x * 2 + 1", "x*2+1").replace("CHUNK = 4", "CHUNK=4")
    assert source_hash(squashed) == source_hash(CODE)


def test_source_hash_distinguishes_a_changed_value() -> None:
    assert source_hash(CODE.replace("CHUNK = 4", "CHUNK = 8")) != source_hash(CODE)


def test_source_hash_of_unparsable_code_still_ignores_comments() -> None:
    broken = "def kernel(x) return x  # oops\n"
    assert source_hash(broken) == source_hash("def  kernel( x )  return x\n")
    assert source_hash(broken) != source_hash("def kernel(y) return y\n")


# --- significance -----------------------------------------------------------------------------


def test_five_percent_faster_with_tight_sems_is_better() -> None:
    v = significantly_better(result(100 / 1.05, sem_pct=0.5), result(100, sem_pct=0.5))
    assert v.better, v.reason
    assert v.ratio == pytest.approx(1.05)
    assert v.ci_low > 1.0


def test_two_percent_faster_is_not_better_even_with_tight_sems() -> None:
    v = significantly_better(result(100 / 1.02, sem_pct=0.05), result(100, sem_pct=0.05))
    assert not v.better
    assert f"{MIN_GAIN * 100:.0f}% bar" in v.reason


def test_ten_percent_faster_with_a_huge_sem_is_not_better() -> None:
    v = significantly_better(result(100 / 1.10, sem_pct=20.0), result(100, sem_pct=20.0))
    assert not v.better
    assert v.ci_low <= 1.0
    assert "interval" in v.reason


@pytest.mark.parametrize("status", ["wrong", "load_error", "crash", "timeout", "duplicate"])
def test_a_failing_candidate_is_never_better(status: str) -> None:
    assert not significantly_better(result(1.0, status=status), result(1000.0)).better
    assert not significantly_better(result(1.0, status=status), None).better


def test_a_candidate_without_a_score_is_never_better() -> None:
    assert not significantly_better({"status": "ok", "score_us": None}, None).better


def test_the_first_passing_candidate_is_better_than_nothing() -> None:
    assert significantly_better(result(500.0), None).better


def test_a_passing_candidate_is_better_than_a_failing_incumbent() -> None:
    assert significantly_better(result(500.0), result(1.0, status="wrong")).better


def test_a_slower_candidate_is_not_better() -> None:
    assert not significantly_better(result(120.0), result(100.0)).better


# --- plateau ----------------------------------------------------------------------------------


@pytest.mark.parametrize(("since", "window", "expected"), [(0, 3, False), (2, 3, False), (3, 3, True), (9, 3, True)])
def test_plateau_is_window_evaluations_without_improvement(since: int, window: int, expected: bool) -> None:
    assert plateaued(since, window) is expected


# --- family choice ----------------------------------------------------------------------------

FAMILIES = ["chunked", "baseline", "vectorized"]


def test_next_family_skips_the_current_and_tried_families() -> None:
    assert next_family("chunked", FAMILIES, {}, 2, {"chunked", "baseline"}) == "vectorized"


def test_next_family_skips_families_at_their_quota() -> None:
    assert next_family("chunked", FAMILIES, {"baseline": 2}, 2, {"chunked"}) == "vectorized"


def test_next_family_prefers_the_least_represented_family() -> None:
    assert next_family("chunked", FAMILIES, {"baseline": 1}, 2, {"chunked"}) == "vectorized"


def test_next_family_breaks_ties_in_family_order() -> None:
    assert next_family("vectorized", FAMILIES, {}, 2, {"vectorized"}) == "chunked"


def test_next_family_is_none_when_every_family_is_tried_or_full() -> None:
    assert next_family("chunked", FAMILIES, {"vectorized": 2}, 2, {"chunked", "baseline"}) is None
    assert next_family("chunked", ["chunked"], {}, 2, {"chunked"}) is None
