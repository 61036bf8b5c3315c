"""The offline tuner: explores the tunables a candidate declares, no network, no model.

A candidate declares `TUNABLES = {"BLOCK": [64, 128, 256], ...}` and binds each name at module
level (`BLOCK = 128`). The tuner proposes a child that changes one of them: first the neighbours
of the current value in its list (coordinate descent around the branch's best), then values not
tried yet. Children are written by rewriting the `NAME = value` line, so the file stays readable
and its diff against the parent is one line. When every single-step change of the best has been
tried, it says so (`exhausted`): the engine treats that as a plateau and switches family.
"""

from __future__ import annotations

import ast
import hashlib
import random
import re
from typing import Any

from cockpit.agents.base import Proposal, ProposalError, ProposalRequest
from cockpit.hashing import source_hash


def read_tunables(source: str) -> tuple[dict[str, list[Any]], dict[str, Any]]:
    """(declared choices, current module-level values) of a candidate's tunables."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return {}, {}
    choices: dict[str, list[Any]] = {}
    values: dict[str, Any] = {}
    for node in tree.body:
        if (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
        ):
            name = node.targets[0].id
            try:
                value = ast.literal_eval(node.value)
            except (ValueError, SyntaxError):
                continue
            if name == "TUNABLES" and isinstance(value, dict):
                choices = {
                    k: list(v) for k, v in value.items() if isinstance(v, list | tuple) and v
                }
            else:
                values[name] = value
    return choices, {k: values[k] for k in choices if k in values}


def set_tunable(source: str, name: str, value: Any) -> str:
    pattern = re.compile(rf"^{re.escape(name)}\s*=\s*.*$", re.MULTILINE)
    if not pattern.search(source):
        raise ProposalError(f"tunable {name} has no module-level assignment to rewrite")
    return pattern.sub(f"{name} = {value!r}", source, count=1)


def config_key(values: dict[str, Any]) -> str:
    return hashlib.sha256(repr(sorted(values.items())).encode()).hexdigest()[:16]


class Tuner:
    name = "tuner"

    def propose(self, request: ProposalRequest) -> Proposal:
        choices, current = read_tunables(request.parent_source)
        if not choices:
            raise ProposalError(
                f"{request.family}: the candidate declares no TUNABLES", exhausted=True
            )
        rng = random.Random(request.seed)

        moves: list[tuple[str, Any]] = []
        for name, opts in choices.items():
            cur = current.get(name, opts[0])
            i = opts.index(cur) if cur in opts else 0
            near = [opts[j] for j in (i - 1, i + 1) if 0 <= j < len(opts)]
            moves += [(name, v) for v in near]
        far = [(n, v) for n, opts in choices.items() for v in opts if v != current.get(n)]
        rng.shuffle(far)
        for name, value in moves + far:
            if value == current.get(name):
                continue
            child = set_tunable(request.parent_source, name, value)
            h = source_hash(child)
            if h in request.tried_hashes:
                continue
            return Proposal(
                source=child,
                family=request.family,
                note=f"{name}: {current.get(name)!r} -> {value!r}",
                source_hash=h,
            )
        raise ProposalError(
            "every one-step change of the best candidate has been tried", exhausted=True
        )
