"""Agent profiles: `agents/<name>.md`, front matter (`key: value` lines between `---`) and a
system prompt as the body. Users add their own files; a malformed one is refused with one line
naming the file and the field.

Fields are checked when the file is read, not when the first call goes out: a typo in
`temperature` should stop `cockpit run` at once, not an hour into a session. Unknown fields are
refused for the same reason (a misspelt `budget_usd` would otherwise silently mean "no cap").
"""

from __future__ import annotations

import os
import re
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cockpit.agents.base import Proposer

OUTPUT_FORMATS = ("auto", "file", "diff")
STRATEGIES = ("refine", "best-of-n")


class ProfileError(ValueError):
    pass


@dataclass(frozen=True)
class LLMSettings:
    """The typed, validated view of an llm profile's front matter (defaults for absent fields)."""

    model: str
    fallbacks: tuple[str, ...] = ()
    temperature: float = 0.4
    max_tokens: int = 8000
    output_format: str = "auto"  # auto (file or diff) | file | diff
    family_hints: tuple[str, ...] = ()
    budget_usd: float | None = None  # None: no cap
    budget_tokens: int | None = None
    strategy: str = "refine"  # refine | best-of-n
    n: int = 1  # choices per step for best-of-n
    api_base: str | None = None  # an OpenAI-compatible server (vLLM, ollama, a proxy)
    stream: bool = True
    timeout_s: float = 180.0  # per call
    retries: int = 3  # per model, on 429/5xx/timeouts/dropped streams
    backoff_s: float = 2.0  # first back-off; doubles per retry
    max_reply_chars: int = 120_000  # a longer reply is refused as "huge"
    advisor: str | None = None  # profile used when the engine escalates with a stronger model
    # the engine pauses a branch after this many unusable replies in a row (a duplicate, no
    # code, code that does not parse after the repair turn): a model that repeats itself would
    # otherwise be called for ever, since such replies cost no evaluation
    max_unusable: int = 5
    # a hard cap on model requests (every attempt, retries and repairs included): this many per
    # evaluation of the session's budget; the session stops when it is reached
    max_calls_per_eval: int = 4


@dataclass
class Profile:
    name: str
    path: Path
    proposer: str
    fields: dict[str, Any] = field(default_factory=dict)
    prompt: str = ""

    def settings(self) -> LLMSettings:
        """The llm settings; only meaningful for `proposer: llm` (checked at parse time)."""
        known = LLMSettings.__dataclass_fields__
        kw = {k: (tuple(v) if isinstance(v, list) else v) for k, v in self.fields.items() if k in known}
        return LLMSettings(**kw)


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


# --- field checks: each returns the cleaned value or raises ValueError("what is expected") -----
def _text(v: Any) -> str:
    if not isinstance(v, str) or not v.strip():
        raise ValueError("must be a non-empty string")
    return v.strip()


def _model(v: Any) -> str:
    v = _text(v)
    if any(c.isspace() for c in v):
        raise ValueError(f"must be a model name like openai/gpt-4o (no spaces), not {v!r}")
    return v


def _names(v: Any) -> list[str]:
    items = v if isinstance(v, list) else [v]
    if not all(isinstance(x, str) and x.strip() for x in items):
        raise ValueError("must be a list like [a, b]")
    return [x.strip() for x in items]


def _models(v: Any) -> list[str]:
    return [_model(x) for x in _names(v)]


def _number(lo: float, hi: float | None = None, integer: bool = False) -> Callable[[Any], Any]:
    def check(v: Any) -> Any:
        kind = "an integer" if integer else "a number"
        ok_type = isinstance(v, int) if integer else isinstance(v, int | float)
        if isinstance(v, bool) or not ok_type or v < lo or (hi is not None and v > hi):
            span = f">= {lo}" if hi is None else f"between {lo} and {hi}"
            raise ValueError(f"must be {kind} {span}, not {v!r}")
        return v if integer else float(v)

    return check


def _choice(options: tuple[str, ...]) -> Callable[[Any], str]:
    def check(v: Any) -> str:
        if v not in options:
            raise ValueError(f"must be one of {', '.join(options)}, not {v!r}")
        return v

    return check


def _bool(v: Any) -> bool:
    if not isinstance(v, bool):
        raise ValueError(f"must be true or false, not {v!r}")
    return v


# query parameters that carry a credential (`?key=`, `?api-key=`, `?access_token=`, `?sig=`)
_SECRET_PARAM = re.compile(r"(key|token|secret|password|passwd|signature|sig|auth)$", re.I)


def _url(v: Any) -> str:
    """An http(s) base URL that carries no credential: the URL is recorded with the session
    (resume needs it) and shown in `cockpit models`, while a key belongs in the provider's
    environment variable, which is never recorded. The refusal does not repeat the URL."""
    v = _text(v)
    if not v.startswith(("http://", "https://")):
        raise ValueError(f"must be an http(s) URL, not {v!r}")
    parts = urllib.parse.urlsplit(v)
    params = [k for k, _ in urllib.parse.parse_qsl(parts.query, keep_blank_values=True)]
    if parts.username or parts.password or any(_SECRET_PARAM.search(k) for k in params):
        raise ValueError(
            "carries a credential (user:password@ or a key in the query); the URL is recorded "
            "with the session: put the key in the provider's variable (e.g. OPENAI_API_KEY)"
        )
    return v.rstrip("/")


COMMON_FIELDS: dict[str, Callable[[Any], Any]] = {"proposer": _text, "description": _text}
LLM_FIELDS: dict[str, Callable[[Any], Any]] = {
    "model": _model,
    "fallbacks": _models,
    "temperature": _number(0.0, 2.0),
    "max_tokens": _number(1, integer=True),
    "output_format": _choice(OUTPUT_FORMATS),
    "family_hints": _names,
    "budget_usd": _number(0.0),
    "budget_tokens": _number(0, integer=True),
    "strategy": _choice(STRATEGIES),
    "n": _number(1, 16, integer=True),
    "api_base": _url,
    "stream": _bool,
    "timeout_s": _number(0.01),
    "retries": _number(0, 20, integer=True),
    "backoff_s": _number(0.0, 600.0),
    "max_reply_chars": _number(100, integer=True),
    "advisor": _text,
    "max_unusable": _number(1, integer=True),
    "max_calls_per_eval": _number(1, integer=True),
}


def parse_profile(path: Path) -> Profile:
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise ProfileError(f"{path}: cannot be read ({type(exc).__name__})") from None
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
        key = k.strip()
        if key in fields:
            raise ProfileError(f"{path}: field {key!r} is given twice")
        fields[key] = _scalar(v)
    proposer = fields.get("proposer", "llm")
    if proposer not in ("tuner", "llm"):
        raise ProfileError(f"{path}: field 'proposer' must be tuner or llm, not {proposer!r}")
    fields["proposer"] = proposer
    if proposer == "llm" and not fields.get("model"):
        raise ProfileError(f"{path}: field 'model' is required for an llm profile")
    checks = COMMON_FIELDS | (LLM_FIELDS if proposer == "llm" else {})
    for key, value in list(fields.items()):
        if key not in checks:
            known = ", ".join(sorted(checks))
            raise ProfileError(f"{path}: field {key!r} is not known for a {proposer} profile (known: {known})")
        try:
            fields[key] = checks[key](value)
        except ValueError as exc:
            raise ProfileError(f"{path}: field {key!r} {exc}") from None
    if fields.get("strategy") == "best-of-n" and fields.get("n", 1) < 2:
        raise ProfileError(f"{path}: field 'n' must be at least 2 for strategy best-of-n")
    return Profile(path.stem, path, proposer, fields, body.lstrip("\n"))


def load_profile(name: str, base: Path | None = None) -> Profile:
    """A profile by name (`agents/<name>.md`, or `base/<name>.md`) or by path to a .md file."""
    path = Path(name)
    folder = base or agents_dir()
    if not path.suffix:
        path = folder / f"{name}.md"
    if not path.is_file():
        known = ", ".join(sorted(p.stem for p in folder.glob("*.md")))
        raise ProfileError(f"unknown agent profile {name!r} (known: {known})")
    return parse_profile(path)


def list_profiles(base: Path | None = None) -> list[Profile | ProfileError]:
    """Every profile in the folder; a malformed one is listed as its error, not skipped."""
    out: list[Profile | ProfileError] = []
    for p in sorted((base or agents_dir()).glob("*.md")):
        try:
            out.append(parse_profile(p))
        except ProfileError as exc:
            out.append(exc)
    return out


def make_proposer(profile: Profile, *, model: str | None = None, api_base: str | None = None,
                  transcript: Path | None = None) -> Proposer:
    """The proposer a profile names. For llm profiles, `model`/`api_base` (from `cockpit run
    --model/--api-base`) override the profile's, and `transcript` is a JSONL file (in the session
    folder) that receives every prompt and reply, keys scrubbed. The tuner ignores them."""
    if profile.proposer == "tuner":
        from cockpit.agents.tuner import Tuner

        return Tuner()
    from cockpit.agents.llm import LLMProposer

    return LLMProposer(profile, model=model, api_base=api_base, transcript=transcript)
