"""Agent profiles: `agents/<name>.md`, front matter (`key: value` lines between `---`) and a
system prompt as the body. Users add their own files; a malformed one is refused with one line
naming the file and the field."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cockpit.agents.base import Proposer


class ProfileError(ValueError):
    pass


@dataclass
class Profile:
    name: str
    path: Path
    proposer: str
    fields: dict[str, Any] = field(default_factory=dict)
    prompt: str = ""


def agents_dir() -> Path:
    env = os.environ.get("COCKPIT_AGENTS_DIR")
    if env:
        return Path(env)
    here = Path(__file__).resolve().parents[2] / "agents"
    return here if here.is_dir() else Path.cwd() / "agents"


def _scalar(text: str) -> Any:
    t = text.strip()
    if t.lower() in ("true", "false"):
        return t.lower() == "true"
    for cast in (int, float):
        try:
            return cast(t)
        except ValueError:
            pass
    if t.startswith("[") and t.endswith("]"):
        return [x.strip().strip("'\"") for x in t[1:-1].split(",") if x.strip()]
    return t.strip("'\"")


def parse_profile(path: Path) -> Profile:
    text = path.read_text()
    if not text.startswith("---"):
        raise ProfileError(f"{path}: no front matter (the file must start with '---')")
    try:
        head, body = text[3:].split("\n---", 1)
    except ValueError:
        raise ProfileError(f"{path}: front matter is not closed with '---'") from None
    fields: dict[str, Any] = {}
    for n, line in enumerate(head.strip().splitlines(), start=2):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        if ":" not in line:
            raise ProfileError(f"{path}: line {n}: expected 'key: value'")
        k, v = line.split(":", 1)
        fields[k.strip()] = _scalar(v)
    proposer = fields.get("proposer", "llm")
    if proposer not in ("tuner", "llm"):
        raise ProfileError(f"{path}: field 'proposer' must be tuner or llm, not {proposer!r}")
    if proposer == "llm" and not fields.get("model"):
        raise ProfileError(f"{path}: field 'model' is required for an llm profile")
    return Profile(path.stem, path, proposer, fields, body.lstrip("\n"))


def load_profile(name: str) -> Profile:
    path = Path(name)
    if not path.suffix:
        path = agents_dir() / f"{name}.md"
    if not path.is_file():
        known = ", ".join(sorted(p.stem for p in agents_dir().glob("*.md")))
        raise ProfileError(f"unknown agent profile {name!r} (known: {known})")
    return parse_profile(path)


def make_proposer(profile: Profile) -> Proposer:
    if profile.proposer == "tuner":
        from cockpit.agents.tuner import Tuner

        return Tuner()
    raise ProfileError(f"{profile.path}: the LLM proposer is not available yet (issue #4); use --agent tuner")
