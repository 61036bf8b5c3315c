"""The LLM proposer: one litellm client for every provider (hosted APIs, and local servers such as
vLLM or ollama through an OpenAI-compatible `api_base`).

One `propose` call: check the budget, build the prompt, call the model (retrying 429/5xx/timeouts/
dropped streams with back-off, then the profile's fallbacks), parse the reply, and, for the
`refine` strategy, answer an unusable reply once with a repair prompt that quotes the error.
Everything a call costs is recorded in the ledger per branch and per model, and returned in
`Proposal.usage` (or on the error) so the engine can put it in the session record.

litellm is imported on the first call, never when this module is imported: it costs seconds,
and at import it attaches a stderr logging handler, which would draw over the TUI. The handlers
are removed right after the import (and again after each call, in case litellm re-adds them).
"""

from __future__ import annotations

import ast
import contextlib
import dataclasses
import email.utils
import json
import logging
import os
import random
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cockpit.agents.base import Proposal, ProposalCancelled, ProposalError, ProposalRequest
from cockpit.agents.costs import BudgetExceeded, Ledger
from cockpit.agents.keys import has_key, provider_of, scrub
from cockpit.agents.profiles import LLM_FIELDS, LLMSettings, Profile, ProfileError, load_profile
from cockpit.agents.prompt import build_messages, repair_messages
from cockpit.agents.replies import ParsedReply, ReplyError, parse_reply
from cockpit.hashing import source_hash

LITELLM_LOGGERS = ("LiteLLM", "LiteLLM Router", "LiteLLM Proxy")
RETRY_STATUS = {408, 409, 425, 429}
MAX_BACKOFF_S = 60.0
MAX_REASON = 600


class LLMProposalError(ProposalError):
    """A ProposalError that also carries what the failed attempt cost, and whether the engine
    should pause or stop: "branch" for a provider outage, "session" for the session's token cap,
    "stop" for the model request cap and the session's USD cap (the session stops, resumable)."""

    def __init__(
        self,
        reason: str,
        *,
        usage: dict[str, Any] | None = None,
        pause: str | None = None,
        raise_with: str = "N",
    ) -> None:
        reason = str(scrub(reason))
        super().__init__(reason if len(reason) <= MAX_REASON else reason[: MAX_REASON - 1] + "…")
        self.usage = usage or {}
        self.pause = pause
        self.raise_with = raise_with  # for pause "stop": the `set-budget` arguments that lift it


class _DroppedStream(Exception):
    """A stream that ended without a finish reason or without any chunk."""


@dataclass
class CallResult:
    texts: list[str]
    finish: str
    model: str


@dataclass
class _Step:
    """What one `propose` spent and met, for Proposal.usage."""

    branch: str
    cancel: threading.Event | None = None  # the request's: checked between attempts and chunks
    on_wait: Callable[[float, str], None] | None = None  # the request's: told of back-offs
    calls: list[dict[str, Any]] = field(default_factory=list)
    attempts: int = 0
    provider_errors: list[str] = field(default_factory=list)
    reply_errors: list[str] = field(default_factory=list)
    repaired: bool = False

    def cancelled(self) -> bool:
        return self.cancel is not None and self.cancel.is_set()

    def usage(self, ledger: Ledger) -> dict[str, Any]:
        prompt = sum(c["prompt_tokens"] for c in self.calls)
        completion = sum(c["completion_tokens"] for c in self.calls)
        priced = [c["cost_usd"] for c in self.calls if c["cost_usd"] is not None]
        summary = ledger.summary()
        return scrub(
            {
                "calls": len(self.calls),
                "attempts": self.attempts,
                "retries": max(0, self.attempts - len(self.calls)),
                "prompt_tokens": prompt,
                "completion_tokens": completion,
                "tokens": prompt + completion,
                "cost_usd": round(sum(priced), 10),
                "unpriced_calls": len(self.calls) - len(priced),
                "model": self.calls[-1]["model"] if self.calls else None,
                "models": sorted({c["model"] for c in self.calls}),
                "repaired": self.repaired,
                "reply_errors": self.reply_errors,
                "provider_errors": self.provider_errors[-5:],
                "calls_detail": self.calls,
                "branch_total": summary["branches"].get(self.branch, {}),
                "session_total": summary["total"],
            }
        )


# --- litellm, imported late and kept quiet -------------------------------------------------------
def import_litellm() -> Any:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    quiet_litellm(litellm)
    return litellm


def check_model(model: str) -> None:
    """ValueError when litellm cannot tell which provider serves `model` (a misspelt prefix, a
    bare name it does not know): every call would fail, so `cockpit run` refuses it at once."""
    lit = import_litellm()
    try:
        lit.get_llm_provider(model)
    except Exception:  # noqa: BLE001 - litellm's BadRequestError, or whatever its version raises
        raise ValueError(
            f"{model!r} names no provider litellm knows; write provider/model, e.g. "
            "openai/gpt-4o or anthropic/claude-sonnet-4-6 (openai/NAME for an OpenAI-compatible "
            "--api-base)"
        ) from None


def quiet_litellm(litellm: Any) -> None:
    """No prints, no telemetry, and no stream handlers on litellm's loggers (a NullHandler in
    their place, so records still propagate to whatever the application configured)."""
    litellm.suppress_debug_info = True
    if hasattr(litellm, "telemetry"):
        litellm.telemetry = False
    for name in LITELLM_LOGGERS:
        lg = logging.getLogger(name)
        for h in list(lg.handlers):
            if isinstance(h, logging.StreamHandler) and not isinstance(h, logging.FileHandler):
                lg.removeHandler(h)
        if not any(isinstance(h, logging.NullHandler) for h in lg.handlers):
            lg.addHandler(logging.NullHandler())


def _env_settings(s: LLMSettings) -> LLMSettings:
    """Retry/back-off/timeout knobs can be overridden from the environment (tests, slow links)."""
    over: dict[str, Any] = {}
    for var, name, cast in (
        ("COCKPIT_LLM_RETRIES", "retries", int),
        ("COCKPIT_LLM_BACKOFF_S", "backoff_s", float),
        ("COCKPIT_LLM_TIMEOUT_S", "timeout_s", float),
    ):
        if os.environ.get(var):
            with contextlib.suppress(ValueError):
                over[name] = cast(os.environ[var])
    return dataclasses.replace(s, **over) if over else s


def declared_family(source: str) -> str | None:
    try:
        for node in ast.parse(source).body:
            if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == "FAMILY" for t in node.targets
            ):
                value = ast.literal_eval(node.value)
                return value if isinstance(value, str) and value else None
    except (SyntaxError, ValueError):
        pass
    return None


class LLMProposer:
    """Proposer for `proposer: llm` profiles. Thread-safe: branches may propose concurrently."""

    name = "llm"

    def __init__(
        self,
        profile: Profile,
        *,
        model: str | None = None,
        api_base: str | None = None,
        ledger: Ledger | None = None,
        transcript: Path | Callable[[dict[str, Any]], None] | None = None,
        advisor: Profile | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if profile.proposer != "llm":
            raise ProfileError(f"{profile.path}: not an llm profile")
        self.profile = profile
        over: dict[str, Any] = {}
        for name, value in (("model", model), ("api_base", api_base)):
            if value:
                try:
                    over[name] = LLM_FIELDS[name](value)
                except ValueError as exc:
                    raise ProfileError(f"--{name.replace('_', '-')} {exc}") from None
        # an api_base given with no model is for the profile's model; with a model, for that one
        self.settings = _env_settings(dataclasses.replace(profile.settings(), **over))
        self.ledger = ledger or Ledger.with_caps(
            self.settings.budget_usd, self.settings.budget_tokens
        )
        self.transcript = transcript
        self.sleep = sleep
        self._lock = threading.Lock()
        self._advisor = advisor
        if advisor is None and self.settings.advisor:  # checked now, not on the first plateau
            try:
                self._advisor = load_profile(self.settings.advisor, base=profile.path.parent)
            except ProfileError as exc:
                raise ProfileError(f"{profile.path}: field 'advisor': {exc}") from None
            if self._advisor.proposer != "llm":
                raise ProfileError(f"{profile.path}: field 'advisor' must name an llm profile")

    # --- the Proposer protocol ------------------------------------------------------------------
    def propose(self, request: ProposalRequest) -> Proposal:
        settings, system = self.settings, self.profile.prompt
        model = request.model or settings.model
        if request.escalation == "model" and self._advisor is not None:
            adv = self._advisor
            settings, system, model = (
                _env_settings(adv.settings()),
                adv.prompt,
                adv.settings().model,
            )
        chain = [model, *[m for m in settings.fallbacks if m != model]]
        step = _Step(request.branch, cancel=request.cancel, on_wait=request.on_wait)
        try:
            messages = build_messages(request, settings, system)
        except Exception as exc:  # noqa: BLE001 - e.g. a task folder that no longer loads
            raise LLMProposalError(
                f"could not build the prompt: {type(exc).__name__}: {exc}", pause="branch"
            ) from None
        try:
            if settings.strategy == "best-of-n":
                return self._best_of_n(request, settings, chain, messages, step)
            return self._refine(request, settings, chain, messages, step)
        except BudgetExceeded as exc:
            last = f" (last reply: {step.reply_errors[-1]})" if step.reply_errors else ""
            raise LLMProposalError(
                exc.reason + last,
                usage=step.usage(self.ledger),
                pause=exc.scope,
                raise_with=exc.raise_with,
            ) from None

    @property
    def advisor(self) -> Profile | None:
        """The stronger profile used on a `model` escalation (field `advisor`), if any."""
        return self._advisor

    # --- strategies -----------------------------------------------------------------------------
    def _refine(
        self,
        req: ProposalRequest,
        s: LLMSettings,
        chain: list[str],
        messages: list[dict[str, Any]],
        step: _Step,
    ) -> Proposal:
        res = self._complete(chain, messages, s, step)
        try:
            parsed, h = self._parse(res.texts[0], req, s)
        except ReplyError as first:
            step.reply_errors.append(first.line())
            step.repaired = True
            retry_chain = [res.model, *[m for m in chain if m != res.model]]
            res = self._complete(
                retry_chain, repair_messages(messages, res.texts[0], first), s, step, kind="repair"
            )
            try:
                parsed, h = self._parse(res.texts[0], req, s)
            except ReplyError as second:
                step.reply_errors.append(second.line())
                raise LLMProposalError(
                    f"no usable code: {first.line()}; after one repair: {second.line()}",
                    usage=step.usage(self.ledger),
                ) from None
        return self._proposal(req, parsed, res.model, h, step)

    def _best_of_n(
        self,
        req: ProposalRequest,
        s: LLMSettings,
        chain: list[str],
        messages: list[dict[str, Any]],
        step: _Step,
    ) -> Proposal:
        """n choices (one call with `n` where the provider supports it, else n calls). Every usable,
        distinct choice becomes a candidate: the first is returned, the others as its
        `alternatives`; the engine verifies and times them all and keeps the best."""
        replies: list[tuple[str, str]] = []
        if self._supports_n(chain[0]):
            res = self._complete(chain, messages, s, step, n=s.n)
            replies += [(t, res.model) for t in res.texts]
        else:
            for _ in range(s.n):
                res = self._complete(chain, messages, s, step)
                replies.append((res.texts[0], res.model))
        good: list[tuple[ParsedReply, str, str]] = []
        for text, model in replies:
            try:
                parsed, h = self._parse(text, req, s)
            except ReplyError as exc:
                step.reply_errors.append(exc.line())
                continue
            if any(h == g[2] for g in good):
                step.reply_errors.append("duplicate: the same code as another choice of this step")
                continue
            good.append((parsed, model, h))
        if not good:
            raise LLMProposalError(
                f"none of {len(replies)} choices had usable code: "
                + "; ".join(step.reply_errors[:3]),
                usage=step.usage(self.ledger),
            )
        props = [
            self._proposal(req, p, m, h, step, usage=k == 0) for k, (p, m, h) in enumerate(good)
        ]
        for k, prop in enumerate(props, start=1):
            prop.note = f"choice {k}/{len(replies)}: {prop.note}"[:400]
        first = props[0]
        first.alternatives = props[1:]
        first.usage["choices"], first.usage["parseable"] = len(replies), len(good)
        return first

    @staticmethod
    def _parse(text: str, req: ProposalRequest, s: LLMSettings) -> tuple[ParsedReply, str]:
        """The reply's file and its source hash; the same code as a candidate already evaluated
        counts as unusable (it would be recorded as a duplicate and never run), so it gets the
        repair prompt too. The hash goes along with the proposal (the engine needs it too)."""
        parsed = parse_reply(text, req.parent_source, max_chars=s.max_reply_chars)
        h = source_hash(parsed.source)
        if h in req.tried_hashes:
            raise ReplyError(
                "duplicate",
                "the code is the same as a candidate already evaluated "
                "(comments and formatting aside)",
            )
        return parsed, h

    def _proposal(
        self,
        req: ProposalRequest,
        parsed: ParsedReply,
        model: str,
        h: str,
        step: _Step,
        usage: bool = True,
    ) -> Proposal:
        family = req.family
        if req.escalation == "family":
            family = declared_family(parsed.source) or family
        note = (
            parsed.form
            + (" (repaired)" if step.repaired else "")
            + (f": {parsed.note}" if parsed.note else "")
        )
        return Proposal(
            source=parsed.source,
            family=family,
            note=str(scrub(note))[:400],
            model=model,
            usage=step.usage(self.ledger) if usage else {},
            source_hash=h,
        )

    # --- calls, retries, fallbacks --------------------------------------------------------------
    def _complete(
        self,
        chain: list[str],
        messages: list[dict[str, Any]],
        s: LLMSettings,
        step: _Step,
        *,
        n: int = 1,
        kind: str = "call",
    ) -> CallResult:
        lit = import_litellm()
        last = ""
        for model in chain:
            for attempt in range(s.retries + 1):
                self._check_cancel(step)
                self.ledger.check(step.branch)
                self.ledger.count_request()
                step.attempts += 1
                try:
                    res = self._call_once(lit, model, messages, s, step, n)
                except ProposalCancelled:
                    raise
                except Exception as exc:  # noqa: BLE001 - classified below, never fatal
                    last = _describe(exc, model)
                    step.provider_errors.append(last)
                    self._log(step, model, kind, messages, error=last)
                    if not _retryable(lit, exc):
                        break  # a bad request or a bad key: retrying the same model won't help
                    if attempt < s.retries:
                        delay = _backoff(exc, s.backoff_s, attempt)
                        if step.on_wait is not None:
                            step.on_wait(time.time() + delay, last)
                        self._pause(step, delay)
                    continue
                finally:
                    quiet_litellm(lit)
                self._log(step, model, kind, messages, reply=res.texts, usage=step.calls[-1])
                self._check_cancel(step)  # a reply that came after the cancel is not used
                return res
        tried = ", ".join(chain)
        raise LLMProposalError(
            f"provider error ({tried}; {step.attempts} attempts): {last}",
            usage=step.usage(self.ledger),
            pause="branch",
        )

    def _check_cancel(self, step: _Step) -> None:
        if step.cancelled():
            raise ProposalCancelled("cancelled by the engine", usage=step.usage(self.ledger))

    def _pause(self, step: _Step, seconds: float) -> None:
        """Back-off that a cancel cuts short."""
        if step.cancel is None:
            self.sleep(seconds)
        elif step.cancel.wait(seconds):
            self._check_cancel(step)

    def _record_call(
        self,
        lit: Any,
        step: _Step,
        model: str,
        messages: list[dict[str, Any]],
        resp: Any,
        texts: list[str],
    ) -> None:
        prompt_t, completion_t = _tokens(lit, resp, model, messages, texts)
        cost = _cost(lit, model, prompt_t, completion_t)
        self.ledger.record(step.branch, model, prompt_t, completion_t, cost)
        step.calls.append(
            {
                "branch": step.branch,
                "model": model,
                "prompt_tokens": prompt_t,
                "completion_tokens": completion_t,
                "cost_usd": None if cost is None else round(cost, 10),
            }
        )

    def _read_stream(
        self, lit: Any, stream: Any, step: _Step, model: str, messages: list[dict[str, Any]]
    ) -> list[Any]:
        """The stream's chunks; a cancel between chunks closes it and raises ProposalCancelled,
        after recording what the partial reply cost (counted, as the provider bills it)."""
        chunks = []
        for chunk in stream:
            chunks.append(chunk)
            if step.cancelled():
                with contextlib.suppress(Exception):
                    inner = getattr(stream, "completion_stream", None)
                    (getattr(inner, "close", None) or getattr(stream, "close", lambda: None))()
                partial = "".join(
                    (getattr(getattr(c.choices[0], "delta", None), "content", None) or "")
                    for c in chunks
                    if getattr(c, "choices", None)
                )
                self._record_call(lit, step, model, messages, None, [partial])
                self._check_cancel(step)
        return chunks

    def _call_once(
        self,
        lit: Any,
        model: str,
        messages: list[dict[str, Any]],
        s: LLMSettings,
        step: _Step,
        n: int,
    ) -> CallResult:
        kw: dict[str, Any] = {
            "model": model,
            "messages": messages,
            "temperature": s.temperature,
            "max_tokens": self.ledger.max_tokens_left(step.branch, s.max_tokens),
            "timeout": s.timeout_s,
            "num_retries": 0,
            "max_retries": 0,
            "drop_params": True,  # e.g. temperature on models that take none: dropped, not an error
        }
        if s.api_base and provider_of(model) == provider_of(s.model):
            kw["api_base"] = s.api_base
            if not has_key(model):
                kw["api_key"] = "no-key"  # local servers need none; the client insists on one
        stream = s.stream and n == 1
        if n > 1:
            kw["n"] = n
        if stream:
            kw["stream"] = True
            if provider_of(model) not in ("anthropic",):
                kw["stream_options"] = {"include_usage": True}
            chunks = self._read_stream(lit, lit.completion(**kw), step, model, messages)
            if not chunks:
                raise _DroppedStream("the stream ended before any chunk")
            resp = lit.stream_chunk_builder(chunks, messages=messages)
            if resp is None or not resp.choices or resp.choices[0].finish_reason is None:
                raise _DroppedStream("the stream ended without a finish reason")
        else:
            resp = lit.completion(**kw)
        texts = [(c.message.content or "") if c.message else "" for c in resp.choices]
        self._record_call(lit, step, model, messages, resp, texts)
        return CallResult(
            texts or [""], str(resp.choices[0].finish_reason or "") if resp.choices else "", model
        )

    def _supports_n(self, model: str) -> bool:
        try:
            lit = import_litellm()
            params = (
                lit.get_supported_openai_params(
                    model=model.split("/", 1)[-1], custom_llm_provider=provider_of(model)
                )
                or []
            )
        except Exception:  # noqa: BLE001 - unknown provider: ask n times instead
            return False
        return "n" in params and provider_of(model) in (
            "openai",
            "hosted_vllm",
            "azure",
            "deepseek",
            "together_ai",
        )

    # --- transcript -------------------------------------------------------------------------------
    def _log(
        self, step: _Step, model: str, kind: str, messages: list[dict[str, Any]], **extra: Any
    ) -> None:
        if self.transcript is None:
            return
        entry = scrub(
            {
                "t": time.time(),
                "branch": step.branch,
                "model": model,
                "kind": kind,
                "attempt": step.attempts,
                "messages": messages,
                **extra,
            }
        )
        if callable(self.transcript):
            self.transcript(entry)
            return
        line = json.dumps(entry, default=str)
        with self._lock, open(self.transcript, "a", encoding="utf-8") as fh:
            fh.write(line + "\n")


def _tokens(
    lit: Any, resp: Any, model: str, messages: list[dict[str, Any]], texts: list[str]
) -> tuple[int, int]:
    usage = getattr(resp, "usage", None)
    p = getattr(usage, "prompt_tokens", None) if usage else None
    c = getattr(usage, "completion_tokens", None) if usage else None
    if p is None or c is None:  # a server that reports no usage: count them ourselves
        try:
            p = p if p is not None else lit.token_counter(model=model, messages=messages)
            c = c if c is not None else sum(lit.token_counter(model=model, text=t) for t in texts)
        except Exception:  # noqa: BLE001
            p = p or sum(len(str(m.get("content", ""))) // 4 for m in messages)
            c = c or sum(len(t) // 4 for t in texts)
    return int(p or 0), int(c or 0)


def _cost(lit: Any, model: str, prompt: int, completion: int) -> float | None:
    """USD from litellm's (offline) cost map; None when the model has no price there."""
    try:
        a, b = lit.cost_per_token(model=model, prompt_tokens=prompt, completion_tokens=completion)
        return float(a) + float(b)
    except Exception:  # noqa: BLE001 - unpriced (a local model, a new name)
        return None


def _status(exc: BaseException) -> int | None:
    code = getattr(exc, "status_code", None)
    return code if isinstance(code, int) else None


def _retryable(lit: Any, exc: BaseException) -> bool:
    if isinstance(exc, _DroppedStream):
        return True
    classes = tuple(
        c
        for c in (
            getattr(lit, n, None)
            for n in (
                "RateLimitError",
                "InternalServerError",
                "ServiceUnavailableError",
                "BadGatewayError",
                "Timeout",
                "APIConnectionError",
                "MidStreamFallbackError",
            )
        )
        if isinstance(c, type)
    )
    if classes and isinstance(exc, classes):
        return True
    code = _status(exc)
    if code is not None:
        return code in RETRY_STATUS or code >= 500
    # connection-level failures from the HTTP stack (reset, refused, incomplete read)
    return isinstance(exc, ConnectionError | TimeoutError) or type(exc).__name__ in (
        "RemoteProtocolError",
        "ReadError",
        "ReadTimeout",
        "ConnectError",
        "ConnectTimeout",
    )


def _backoff(exc: BaseException, base: float, attempt: int) -> float:
    """Retry-After when the server gives one, else exponential with jitter; capped."""
    headers = getattr(getattr(exc, "response", None), "headers", None) or {}
    after = headers.get("retry-after") if hasattr(headers, "get") else None
    if after is not None:
        try:
            return min(max(float(after), 0.0), MAX_BACKOFF_S)
        except ValueError:
            try:
                when = email.utils.parsedate_to_datetime(after).timestamp()
            except (TypeError, ValueError):
                when = None
            if when is not None:
                return min(max(when - time.time(), 0.0), MAX_BACKOFF_S)
    return min(base * (2**attempt) * random.uniform(0.8, 1.2), MAX_BACKOFF_S)


def _describe(exc: BaseException, model: str) -> str:
    """One line: model, error class and status, then the provider's message without litellm's
    repeated class-name prefixes."""
    code = _status(exc)
    text = " ".join(str(exc).split()).split(" Original exception")[0]
    text = re.sub(r"\b(litellm\.)?(\w*Error|Timeout)(\s+\d{3})?:\s*", "", text)
    head = f"{model}: {type(exc).__name__}" + (f" {code}" if code else "")
    return str(scrub(f"{head}: {text[:300]}"))
