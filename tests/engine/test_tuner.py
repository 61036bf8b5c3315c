"""The offline tuner: one-line changes of declared tunables, neighbours first, never a repeat."""

from __future__ import annotations

import difflib

import pytest

from cockpit.agents.base import ProposalError, ProposalRequest
from cockpit.agents.tuner import Tuner, read_tunables, set_tunable
from cockpit.hashing import source_hash

SOURCE = '''"""A chunked kernel. CHUNK is tuned."""

import torch

FAMILY = "chunked"
TUNABLES = {"CHUNK": [1, 2, 4, 8, 16, 32], "UNROLL": [1, 2]}
CHUNK = 4
UNROLL = 1


def kernel(x):
    y = torch.empty_like(x)
    for start in range(0, x.shape[0], CHUNK):
        y[start : start + CHUNK] = x[start : start + CHUNK] * 2 + 1
    return y
'''


def request(source: str = SOURCE, tried: set[str] | None = None, seed: int = 0) -> ProposalRequest:
    return ProposalRequest(task_name="toy", task_root="/nonexistent", branch="b1", family="chunked",
                           parent_id="c0001", parent_source=source, parent_result=None,
                           tried_hashes=set(tried or ()), seed=seed)


def values(source: str) -> dict:
    return read_tunables(source)[1]


def test_read_tunables_returns_choices_and_current_values() -> None:
    choices, current = read_tunables(SOURCE)
    assert choices == {"CHUNK": [1, 2, 4, 8, 16, 32], "UNROLL": [1, 2]}
    assert current == {"CHUNK": 4, "UNROLL": 1}


def test_first_proposal_is_a_neighbour_of_the_current_value() -> None:
    child = Tuner().propose(request()).source
    assert values(child) in ({"CHUNK": 2, "UNROLL": 1}, {"CHUNK": 8, "UNROLL": 1}, {"CHUNK": 4, "UNROLL": 2})


def test_every_neighbour_comes_before_any_far_value() -> None:
    neighbours = [{"CHUNK": 2, "UNROLL": 1}, {"CHUNK": 8, "UNROLL": 1}, {"CHUNK": 4, "UNROLL": 2}]
    tried = {source_hash(SOURCE)}
    seen = []
    for _ in range(3):
        child = Tuner().propose(request(tried=tried)).source
        seen.append(values(child))
        tried.add(source_hash(child))
    assert sorted(seen, key=repr) == sorted(neighbours, key=repr)
    far = values(Tuner().propose(request(tried=tried)).source)
    assert far["CHUNK"] in (1, 16, 32) and far["UNROLL"] == 1


def test_never_proposes_a_tried_hash_and_raises_exhausted_when_done() -> None:
    tried = {source_hash(SOURCE)}
    proposals = []
    with pytest.raises(ProposalError) as info:
        for _ in range(20):
            child = Tuner().propose(request(tried=tried)).source
            assert source_hash(child) not in tried
            tried.add(source_hash(child))
            proposals.append(values(child))
    assert info.value.exhausted
    # every one-step change of the parent, each exactly once: 5 other CHUNKs + 1 other UNROLL
    assert len(proposals) == 6
    assert len({repr(p) for p in proposals}) == 6


def test_a_comment_only_variant_counts_as_tried() -> None:
    tried = set()
    for chunk in (2, 8):
        variant = set_tunable(SOURCE, "CHUNK", chunk).replace("import torch", "import torch  # same code")
        tried.add(source_hash(variant))
    child = Tuner().propose(request(tried=tried)).source
    assert values(child) == {"CHUNK": 4, "UNROLL": 2}


def test_child_differs_from_the_parent_in_exactly_one_line() -> None:
    child = Tuner().propose(request()).source
    diff = [line for line in difflib.ndiff(SOURCE.splitlines(), child.splitlines()) if line[:1] in "+-"]
    assert len(diff) == 2
    removed, added = diff
    assert removed.startswith("- ") and added.startswith("+ ")
    name = removed[2:].split("=")[0].strip()
    assert name in ("CHUNK", "UNROLL")
    assert added[2:].startswith(f"{name} = ")


def test_proposal_keeps_the_family_and_names_the_move() -> None:
    p = Tuner().propose(request())
    assert p.family == "chunked"
    assert "->" in p.note


def test_a_candidate_without_tunables_is_exhausted_at_once() -> None:
    with pytest.raises(ProposalError) as info:
        Tuner().propose(request("import torch\n\ndef kernel(x):\n    return x * 2 + 1\n"))
    assert info.value.exhausted


def test_a_tunable_without_an_assignment_cannot_be_rewritten() -> None:
    with pytest.raises(ProposalError):
        set_tunable("TUNABLES = {'BLOCK': [1, 2]}\n", "BLOCK", 2)


def test_set_tunable_leaves_similar_names_alone() -> None:
    src = "CHUNK_ROWS = 3\nCHUNK = 4\n"
    assert set_tunable(src, "CHUNK", 8) == "CHUNK_ROWS = 3\nCHUNK = 8\n"


def test_same_seed_gives_the_same_proposal() -> None:
    tried = {source_hash(set_tunable(SOURCE, n, v)) for n, v in (("CHUNK", 2), ("CHUNK", 8), ("UNROLL", 2))}
    a = Tuner().propose(request(tried=tried, seed=7)).source
    b = Tuner().propose(request(tried=tried, seed=7)).source
    assert a == b
