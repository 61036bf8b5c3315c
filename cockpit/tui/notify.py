"""Notifications: which new events deserve a toast, a bell and the user's command.

Kinds (the `notify_on` names of the config file):
  best      a branch found a significantly better candidate (`best_changed`)
  plateau   a branch stopped improving (`plateau_detected`)
  provider  the model provider is failing: a branch paused by the engine rather than by a
            command (an outage: it retries after a cool-down), or a failed proposal that
            carries provider errors
  paused    the session paused itself (an LLM budget cap is spent), or the engine paused a
            branch whose model kept sending unusable replies (duplicates, no code)
  error     the engine recorded an error
  proposal  a proposal failed for another reason (an unusable reply); toast only by default

The user's command (`notify_command`) runs through `/bin/sh -c` in its own session, stdin and
stdout closed, with the notice in environment variables:
  COCKPIT_EVENT (the kind above), COCKPIT_MESSAGE (one line), COCKPIT_COUNT (notices of this
  kind folded into this one), COCKPIT_SESSION, COCKPIT_SESSION_DIR, COCKPIT_BRANCH,
  COCKPIT_CANDIDATE, COCKPIT_SCORE_US, COCKPIT_EVENT_KIND, COCKPIT_EVENT_ID, COCKPIT_EVENT_TIME.
It is killed (with everything it started) after `notify_timeout_s`; a non-zero exit or a
timeout is reported by raising `NotifyFailed` (the cockpit shows it as a toast).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from cockpit.store import events as ev
from cockpit.store import figures
from cockpit.store.models import Event
from cockpit.tui.format import fmt_us

BY_COMMAND = "by command"


@dataclass(frozen=True)
class Notice:
    kind: str
    message: str
    severity: str  # "information" | "warning" | "error" (Textual's toast severities)
    bell: bool
    event: Event
    count: int = 1


def outage_pause(e: Event) -> bool:
    """A branch paused by the engine itself, not by a person: the provider is failing."""
    p = e.payload
    if e.kind != ev.BRANCH_STATE or p.get("state") != "paused":
        return False
    if p.get("cause") == "unusable":  # the model answers, uselessly: not an outage
        return False
    if p.get("cause") in ("outage", "provider"):
        return True
    reason = str(p.get("reason") or "")
    return not reason.startswith(BY_COMMAND)


def self_paused(e: Event) -> bool:
    """The session paused by the engine (a budget cap), not by a command or a restart."""
    p = e.payload
    if e.kind != ev.SESSION_STATE or p.get("state") != "paused":
        return False
    reason = str(p.get("reason") or "")
    return not reason.startswith(BY_COMMAND) and "engine stopped" not in reason


def _notice(e: Event) -> Notice | None:
    p, b = e.payload, e.branch or "?"
    if e.kind == ev.BEST_CHANGED:
        time = figures.labelled(fmt_us(p.get("score_us")), p)
        text = f"★ new best on {b}: {p.get('candidate', e.candidate)} {time}"
        return Notice("best", text, "information", True, e)
    if e.kind == ev.PLATEAU_DETECTED:
        return Notice("plateau", f"≈ {b} reached a plateau", "warning", True, e)
    if outage_pause(e):
        return Notice(
            "provider", f"✗ provider failing: {b} paused ({p.get('reason')})", "error", True, e
        )
    if e.kind == ev.BRANCH_STATE and p.get("state") == "paused" and p.get("cause") == "unusable":
        return Notice("paused", f"‖ {b} paused: {p.get('reason')}", "warning", True, e)
    if self_paused(e):
        return Notice("paused", f"‖ session paused: {p.get('reason')}", "warning", True, e)
    if e.kind == ev.PROPOSAL_FAILED:
        usage = p.get("usage") if isinstance(p.get("usage"), dict) else {}
        provider = bool(usage.get("provider_errors")) or p.get("pause") == "branch"
        text = f"✗ {b}: no proposal ({p.get('reason', '')})"
        if provider:
            return Notice("provider", text, "error", True, e)
        return Notice("proposal", text, "warning", False, e)
    if e.kind == ev.ERROR:
        return Notice("error", f"engine error: {p.get('message', '')}", "error", True, e)
    return None


def notices(events: Iterable[Event]) -> list[Notice]:
    """One notice per kind and branch for a batch of new events (the latest one, with a
    count), so a burst of failures rings once, not fifty times. Unknown kinds are ignored."""
    latest: dict[tuple[str, str | None], Notice] = {}
    for e in sorted(events, key=lambda e: e.id):
        n = _notice(e)
        if n is None:
            continue
        key = (n.kind, e.branch)
        before = latest.pop(key, None)  # re-inserted: the dict stays in event order
        latest[key] = n if before is None else Notice(**{**n.__dict__, "count": before.count + 1})
    return list(latest.values())


def notice_env(n: Notice, session: str, folder: Path) -> dict[str, str]:
    e = n.event
    score = e.payload.get("score_us")
    return {
        "COCKPIT_EVENT": n.kind,
        "COCKPIT_MESSAGE": n.message,
        "COCKPIT_COUNT": str(n.count),
        "COCKPIT_SESSION": session,
        "COCKPIT_SESSION_DIR": str(folder),
        "COCKPIT_BRANCH": e.branch or "",
        "COCKPIT_CANDIDATE": str(e.payload.get("candidate") or e.candidate or ""),
        "COCKPIT_SCORE_US": "" if score is None else str(score),
        "COCKPIT_EVENT_KIND": e.kind,
        "COCKPIT_EVENT_ID": str(e.id),
        "COCKPIT_EVENT_TIME": f"{e.t:.3f}",
    }


class NotifyFailed(Exception):
    """The notify command failed or timed out (shown as a toast, never fatal)."""


def run_notify_command(command: str, env: dict[str, str], timeout_s: float) -> None:
    """Run the user's command to completion or its timeout. Blocking: call it from a worker
    thread. Its own session, so the timeout kills whatever it started, and nothing of it can
    write to the terminal the cockpit draws on."""
    proc = subprocess.Popen(
        ["/bin/sh", "-c", command],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env={**os.environ, **env},
        start_new_session=True,
    )
    try:
        _, err = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        if proc.stderr is not None:
            proc.stderr.close()  # not read: something it started elsewhere may still hold it
        raise NotifyFailed(f"notify command timed out after {timeout_s:g} s (killed)") from None
    if proc.returncode != 0:
        last = (err or b"").decode(errors="replace").strip().splitlines()[-1:] or [""]
        raise NotifyFailed(f"notify command exited {proc.returncode}: {last[0][:200]}".rstrip(": "))
