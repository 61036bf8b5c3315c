"""The loop's sub-commands: run, demo, resume, ls, status, stop, send (and the hidden `_engine`).

Thin: argument handling, session lookup and rendering. The engine lives in cockpit/engine; the
record in cockpit/store. Errors a user can fix are one line and exit 2.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

from cockpit.cli.common import UsageError, out_console, resolve_device, resolve_task


def _sessions_arg(s: argparse.ArgumentParser) -> None:
    s.add_argument(
        "--sessions-dir", help="where sessions live (default: $COCKPIT_SESSIONS_DIR or ./sessions)"
    )


def _find(args: argparse.Namespace) -> Path:
    from cockpit.store import find_session, latest_session

    name = getattr(args, "session", None)
    try:
        if not name:
            info = latest_session(args.sessions_dir)
            if info is None:
                raise UsageError("no sessions yet: start one with `cockpit run TASK`")
            return info.path
        return find_session(name, args.sessions_dir)
    except (FileNotFoundError, ValueError) as exc:
        raise UsageError(str(exc).strip('"')) from None


# --- run / demo / resume -------------------------------------------------------------------------
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_duration(text: str) -> float:
    """`--max-time`: seconds as a plain number, or units s/m/h/d combined (`90s`, `15m`,
    `1h30m`, `2.5h`). One-line UsageError otherwise."""
    import re

    t = text.strip().lower()
    try:
        value = float(t)
    except ValueError:
        parts = re.findall(r"(\d+(?:\.\d+)?)([smhd])", t)
        if not parts or "".join(n + u for n, u in parts) != t:
            raise UsageError(
                f"--max-time {text!r}: not a duration (seconds, or like 90s, 15m, 1h30m, 2h)"
            ) from None
        value = sum(float(n) * _UNITS[u] for n, u in parts)
    if not 0 < value < float("inf"):
        raise UsageError(f"--max-time {text!r}: must be more than zero")
    return value


def _config(args: argparse.Namespace, task_root: Path, device: str):
    from cockpit.agents.profiles import LLM_FIELDS, ProfileError, load_profile
    from cockpit.engine.config import EngineConfig
    from cockpit.harness import DEFAULT_EXCHANGE

    try:
        profile = load_profile(args.agent)
    except ProfileError as exc:
        raise UsageError(str(exc)) from None
    # checked before a session folder exists (the proposer would refuse them only at start)
    for name in ("model", "api_base"):
        value = getattr(args, name, None)
        if value:
            try:
                LLM_FIELDS[name](value)
            except ValueError as exc:
                raise UsageError(f"--{name.replace('_', '-')} {exc}") from None
    if profile.proposer == "llm":
        _check_models(profile, getattr(args, "model", None))
    if not 1 <= args.beam <= 8:
        raise UsageError(f"--beam {args.beam}: choose 1 to 8 branches (3-5 recommended)")
    if args.budget < 1:
        raise UsageError(f"--budget {args.budget}: must be at least 1 evaluation")
    extra: dict[str, Any] = {"api_base": args.api_base} if getattr(args, "api_base", None) else {}
    if getattr(args, "usd", None) is not None:
        text = str(args.usd).strip().lstrip("$").replace("_", "").replace(",", "")
        if text.lower() in ("none", "off"):
            extra["usd"] = None
        else:
            try:
                usd = float(text)
            except ValueError:
                usd = -1.0
            if not 0 <= usd < float("inf"):
                raise UsageError(f"--usd {args.usd!r}: not an amount in USD (like 5, $2.50, none)")
            extra["usd"] = usd
    return EngineConfig(
        task=str(task_root),
        device=device,
        beam=args.beam,
        budget=args.budget,
        mode=args.mode,
        agent=args.agent,
        model=getattr(args, "model", None),
        plateau_window=args.plateau,
        seed=args.seed,
        ab_confirm=getattr(args, "ab", "auto"),
        cascade=getattr(args, "cascade", "on"),
        warm=getattr(args, "warm", "on"),
        max_time_s=parse_duration(args.max_time) if getattr(args, "max_time", None) else 0.0,
        exchange=getattr(args, "exchange", None) or DEFAULT_EXCHANGE,
        backend=getattr(args, "backend", None) or "local",
        ray_address=getattr(args, "ray_address", None),
        ray_cpus=getattr(args, "ray_cpus", None) or 1.0,
        extra=extra,
    )


def _check_models(profile, model: str | None) -> None:
    """Every model the run would call names a provider litellm knows: `--model`, else the
    profile's `model`; and the profile's `fallbacks`."""
    from cockpit.agents.llm import check_model

    s = profile.settings()
    named = [("--model", model)] if model else [(f"{profile.path}: field 'model'", s.model)]
    named += [(f"{profile.path}: field 'fallbacks'", m) for m in s.fallbacks]
    for where, m in named:
        try:
            check_model(m)
        except ValueError as exc:
            raise UsageError(f"{where}: {exc}") from None


def _check_reference(task) -> None:
    """reference.py imports and runs on one small shape, before a session folder exists."""
    from cockpit.harness.task import TaskError
    from cockpit.harness.verify import check_reference

    try:
        check_reference(task)
    except TaskError as exc:
        raise UsageError(str(exc)) from None


def _check_backend(backend: str | None, address: str | None) -> None:
    """`--backend ray` without Ray installed, or with an address nobody listens on: one line."""
    if backend != "ray":
        if address:
            raise UsageError("--ray-address goes with --backend ray")
        return
    from cockpit.engine.ray_backend import (
        INSTALL_HINT,
        BackendUnavailable,
        check_reachable,
        ray_installed,
    )

    if not ray_installed():
        raise UsageError(f"--backend ray needs Ray, which is not installed: {INSTALL_HINT}")
    try:
        check_reachable(address)
    except BackendUnavailable as exc:
        raise UsageError(str(exc)) from None


def _ray_device(args: argparse.Namespace) -> str:
    """The device of a run on Ray: the cluster's, not this host's. With an address the cluster is
    asked (no --device: cuda where it has a GPU); without one Ray starts on this machine, whose
    devices decide as for a local run."""
    from cockpit.engine.ray_backend import BackendUnavailable, cluster_slots, probe

    _check_backend("ray", args.ray_address)
    if args.device not in (None, "cpu") and not str(args.device).startswith("cuda"):
        raise UsageError(f"--device {args.device}: expected cpu or cuda")
    if not (args.ray_address or os.environ.get("RAY_ADDRESS")):
        return resolve_device(args.device)
    try:
        resources = probe(args.ray_address)
    except BackendUnavailable as exc:
        raise UsageError(str(exc)) from None
    device = args.device or ("cuda" if resources.get("GPU") else "cpu")
    if cluster_slots(resources, device, args.ray_cpus or 1.0) < 1:
        if device != "cpu":
            raise UsageError("--device cuda: the Ray cluster has no GPU (--device cpu runs there)")
        raise UsageError(f"--ray-cpus {args.ray_cpus or 1:g}: the Ray cluster has fewer CPUs")
    return device


def _start(
    folder: Path, detach: bool, headless: bool, overrides: dict[str, Any] | None = None
) -> int:
    if detach:
        try:  # handed to the child; private like everything in the session folder
            log = os.fdopen(
                os.open(folder / "engine.log", os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600), "ab"
            )
        except OSError as exc:  # a read-only folder or a full disk: the engine could not run
            raise UsageError(
                f"cannot write {folder / 'engine.log'}: {exc.strerror or exc}; nothing was "
                "changed: make the folder writable or free space, then try again"
            ) from None
        flags = [f"--{k.replace('_', '-')}={v}" for k, v in (overrides or {}).items()]
        proc = subprocess.Popen(
            [sys.executable, "-m", "cockpit.cli", "_engine", str(folder), *flags],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            start_new_session=True,
            cwd=os.getcwd(),
        )
        from cockpit.store import engine_pid

        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and engine_pid(folder) is None:
            if proc.poll() is not None:
                tail = (folder / "engine.log").read_text(errors="replace").strip().splitlines()[
                    -1:
                ] or [""]
                if (
                    proc.returncode == 0
                ):  # nothing left to do (a resumed session whose budget is spent)
                    print(tail[0])
                    return 0
                raise UsageError(f"the engine exited at once: {tail[0]}")
            time.sleep(0.1)
        print(f"session {folder.name} running in the background (pid {proc.pid})")
        print(f"  watch:  cockpit status {folder.name}    stop: cockpit stop {folder.name}")
        return 0
    return run_engine(folder, headless=True, overrides=overrides)


def _interrupt_on_signals() -> Any:
    """SIGTERM (kill, timeout, a lease ending) and SIGHUP (the ssh terminal closed under a
    headless run) raise `Interrupted` in the engine's thread, so it records the session as
    stopped before it exits instead of vanishing with the record saying `running`. A second
    signal during that clean-up is ignored. Returns a function that restores the old handlers."""
    from cockpit.engine.engine import Interrupted

    old: dict[int, Any] = {}

    def handler(signum: int, frame: Any) -> None:
        for s in old:
            signal.signal(s, signal.SIG_IGN)
        raise Interrupted(signal.Signals(signum).name)

    for s in (signal.SIGTERM, signal.SIGHUP):
        old[s] = signal.signal(s, handler)

    def restore() -> None:
        for s, h in old.items():
            signal.signal(s, h)

    return restore


def run_engine(folder: Path, headless: bool = True, overrides: dict[str, Any] | None = None) -> int:
    """Run the session's engine with its stored configuration; `overrides` (`resume --backend`,
    `--ray-address`) replace fields of it for this run only."""
    from cockpit.agents.profiles import ProfileError, load_profile, make_proposer
    from cockpit.engine.config import EngineConfig
    from cockpit.engine.engine import Engine, Interrupted, SessionUnwritable
    from cockpit.engine.ray_backend import BackendUnavailable
    from cockpit.store import SessionLocked, SessionRecord
    from cockpit.store.sessions import make_private

    make_private(folder)  # this process (and its workers) writes only into the session
    with SessionRecord.open_readonly(folder) as rec:
        meta = rec.meta()
    cfg = EngineConfig.from_dict({**(meta.get("config") or {}), **(overrides or {})})
    try:
        proposer = make_proposer(
            load_profile(cfg.agent),
            model=cfg.model,
            api_base=cfg.extra.get("api_base"),
            transcript=folder / "agent.jsonl",
        )
    except ProfileError as exc:
        raise UsageError(str(exc)) from None
    printer = HeadlessPrinter(cfg.budget) if headless else None
    try:
        engine = Engine(folder, cfg, proposer, printer=printer)
    except SessionLocked as exc:
        raise UsageError(str(exc)) from None
    restore = _interrupt_on_signals()
    try:
        with printer or _null():
            state = engine.run()
    except KeyboardInterrupt:
        print(f"\ninterrupted; resume with: cockpit resume {folder.name}")
        return 130
    except Interrupted as exc:
        print(f"\ninterrupted by {exc.signame}; resume with: cockpit resume {folder.name}")
        return 128 + int(getattr(signal, exc.signame))
    except SessionUnwritable as exc:
        print(f"\n{exc}", file=sys.stderr)
        return 1
    except BackendUnavailable as exc:
        if engine.pool is None:  # no cluster to start on: nothing ran, nothing recorded
            engine.close()
            raise UsageError(str(exc)) from None
        # none left to go on with: the session is recorded `crashed`, resumable
        print(f"\n{exc}; resume with: cockpit resume {folder.name}", file=sys.stderr)
        return 1
    finally:
        restore()
    print(f"session {folder.name}: {state}")
    return 0


class _null:
    def __enter__(self):
        return self

    def __exit__(self, *a):
        return False


class HeadlessPrinter:
    """A progress bar over the evaluation budget and one line per evaluation (rich)."""

    def __init__(self, budget: int) -> None:
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
        )

        self.console = Console(highlight=False)
        self.progress = Progress(
            TextColumn("[bold]evaluations"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TextColumn("{task.description}"),
            console=self.console,
            disable=not self.console.is_terminal,
        )
        self.task = self.progress.add_task("", total=budget)
        self.done = 0

    def __enter__(self):
        self.progress.__enter__()
        return self

    def __exit__(self, *a):
        return self.progress.__exit__(*a)

    def __call__(self, kind: str, info: dict[str, Any]) -> None:
        # recorded text (a candidate's exception, a provider's error body) is never markup:
        # `[redacted]` must show, and a stray `[/x]` must not raise MarkupError in the engine
        from rich.markup import escape

        from cockpit.render import fmt_us
        from cockpit.store.commands import typed_name

        b, c = info.get("branch") or "", info.get("candidate") or ""
        if kind == "evaluation_finished":
            if info.get("status") != "duplicate":
                self.done += 1
            reasons = "; ".join(
                f"{r.get('kind')}: {str(r.get('message', ''))[:90]}"
                for r in info.get("reasons", [])[:2]
            )
            status = info.get("status", "?")
            if info.get("tier") == "screened":
                status += " (screened)"
            line = (
                f"{c:6s} {b:4s} {status:16s} score {fmt_us(info.get('score_us')):>10s}  {reasons}"
            )
            self.progress.console.print(line, markup=False)  # a candidate's words, never markup
            self.progress.update(self.task, completed=self.done)
        elif kind == "budget_changed":
            self.progress.update(self.task, total=info.get("budget"))
        elif kind == "best_changed":
            from cockpit.store.figures import labelled

            self.progress.console.print(
                f"[green]★ new best on {b}: {c} {labelled(fmt_us(info.get('score_us')), info)} "
                f"({escape(str(info.get('why', '')))})[/green]"
            )
            self.progress.update(self.task, description=f"best {fmt_us(info.get('score_us'))}")
        elif kind in (
            "plateau_detected",
            "escalated",
            "branch_state",
            "branch_created",
            "branch_forked",
        ):
            detail = info.get("reason") or info.get("family") or info.get("state") or ""
            self.progress.console.print(
                f"[yellow]{kind.replace('_', ' ')} {b}: {escape(str(detail))}[/yellow]"
            )
        elif kind == "command_acked":
            mark = "✓" if info.get("ok") else "✗"
            self.progress.console.print(
                f"[cyan]{mark} command {typed_name(str(info.get('kind')))}: "
                f"{escape(str(info.get('message')))}[/cyan]"
            )
        elif kind == "session_state" and info.get("state") in ("done", "stopped", "crashed"):
            # why the run ended, as the engine recorded it (one sentence for `done`)
            from rich.text import Text

            line = f"session {info.get('state')}: {info.get('reason') or '?'}"
            # the engine's words (never markup), one line whole, also in a pipe
            self.progress.console.print(Text(line, style="bold"), soft_wrap=True)
        elif kind == "proposal_failed":
            self.progress.console.print(
                f"[dim]{b}: no proposal ({escape(str(info.get('reason')))})[/dim]"
            )
        elif kind == "proposal_cancelled":
            self.progress.console.print(
                f"[dim]{b}: proposal cancelled ({escape(str(info.get('reason')))})[/dim]"
            )


def cmd_run(args: argparse.Namespace) -> int:
    from cockpit.store import create_session
    from cockpit.store.sessions import check_session_name

    if args.session is not None:  # before the slow checks: a typo in the name is seen at once
        try:
            check_session_name(args.session)
        except ValueError as exc:
            raise UsageError(f"--session: {exc}") from None
    task = resolve_task(args.task)
    if getattr(args, "backend", "local") == "ray":
        device = _ray_device(args)
    else:
        _check_backend("local", getattr(args, "ray_address", None))
        if getattr(args, "ray_cpus", None):
            raise UsageError("--ray-cpus goes with --backend ray")
        device = resolve_device(args.device)
    cfg = _config(args, task.root, device)
    _check_reference(task)
    try:
        folder = create_session(
            args.session,
            task=task.name,
            device=device,
            sessions_dir=args.sessions_dir,
            config=cfg.to_dict(),
        )
    except ValueError as exc:  # the name
        raise UsageError(f"--session: {exc}") from None
    except OSError as exc:  # a read-only or full sessions directory
        where = exc.filename or args.sessions_dir or "the sessions directory"
        raise UsageError(f"cannot create the session: {where}: {exc.strerror or exc}") from None
    if (
        not args.detach
        and not getattr(args, "headless", False)
        and sys.stdin.isatty()
        and sys.stdout.isatty()
    ):
        # a person at a terminal gets the cockpit; the engine runs detached beside it, so `q`
        # (or a dropped ssh connection) leaves the run going
        rc = _start(folder, True, headless=True)
        if rc:
            return rc
        from cockpit.cli.tui import cmd_attach

        return cmd_attach(argparse.Namespace(session=str(folder), sessions_dir=None))
    if not args.detach:
        print(f"session {folder.name} ({folder})")
    try:
        rc = _start(folder, args.detach, headless=True)
    except BaseException:
        _discard_unstarted(folder)
        raise
    if rc:
        _discard_unstarted(folder)
    return rc


def _discard_unstarted(folder: Path) -> None:
    """Remove the session folder this `cockpit run` made when no engine ever started in it (the
    run failed to start): a session left in state `created` holds nothing, and its name would
    block the same command once the cause is fixed."""
    import shutil

    from cockpit.store import SessionRecord, events

    try:
        with SessionRecord.open_readonly(folder) as rec:
            started = rec.events(kinds=[events.SESSION_STARTED])
    except Exception:  # noqa: BLE001 - an unreadable record is kept for a person to look at
        return
    if not started:
        shutil.rmtree(folder, ignore_errors=True)
        print(f"session {folder.name} removed: the run did not start", file=sys.stderr)


def cmd_demo(args: argparse.Namespace) -> int:
    args.task, args.agent, args.beam, args.plateau, args.seed = "softmax", "tuner", 3, 4, 0
    args.budget = args.budget or 10
    args.mode = "quick" if resolve_device(args.device) == "cpu" else "iterate"
    args.detach = False
    args.session = None
    args.headless = getattr(args, "headless", False)
    return cmd_run(args)


def cmd_resume(args: argparse.Namespace) -> int:
    folder = _find(args)
    from cockpit.store import engine_pid

    if engine_pid(folder):
        raise UsageError(f"session {folder.name} is already running (pid {engine_pid(folder)})")
    from cockpit.store.sessions import check_repo

    d = status_dict(folder)
    check_repo(folder)
    if d["state"] == "done" and not _pending(folder):
        # a done engine would stop again at once; a command queued with `send --queue` (a
        # bigger budget, a fork) is what lets a done session continue
        raise UsageError(
            f"session {folder.name} is done ({d['ended']}); to continue it, queue a command "
            f"first, e.g. `cockpit send {folder.name} set-budget N --queue`"
        )
    from cockpit.engine.config import EngineConfig
    from cockpit.store import SessionRecord

    overrides = {k: v for k in ("backend", "ray_address") if (v := getattr(args, k, None))}
    with SessionRecord.open_readonly(folder) as rec:
        cfg = EngineConfig.from_dict({**(rec.meta().get("config") or {}), **overrides})
    _check_backend(cfg.backend, cfg.ray_address if cfg.backend == "ray" else args.ray_address)
    return _start(folder, args.detach, headless=True, overrides=overrides)


def _pending(folder: Path) -> int:
    from cockpit.store import SessionRecord

    with SessionRecord.open_readonly(folder) as rec:
        return len(rec.commands("pending"))


def cmd_engine(args: argparse.Namespace) -> int:
    overrides = {k: v for k in ("backend", "ray_address") if (v := getattr(args, k, None))}
    return run_engine(Path(args.folder), headless=False, overrides=overrides)


# --- ls / status / stop / send -------------------------------------------------------------------
def cmd_ls(args: argparse.Namespace) -> int:
    from rich.table import Table

    from cockpit.render import fmt_us
    from cockpit.store import list_sessions

    infos = list_sessions(args.sessions_dir)
    if args.json:
        print(
            json.dumps(
                [
                    {
                        "session": i.name,
                        "task": i.task,
                        "state": i.state,
                        "pid": i.engine_pid,
                        "candidates": i.candidates,
                        "best_us": i.best_us,
                        "best_label": i.best_label,
                    }
                    for i in infos
                ]
            )
        )
        return 0
    t = Table(title="sessions", title_justify="left")
    for col in ("session", "task", "device", "state", "candidates", "best"):
        t.add_column(col)
    for i in infos:
        t.add_row(
            i.name,
            i.task or "",
            i.device or "",
            i.state,
            str(i.candidates),
            f"{fmt_us(i.best_us)} {i.best_label}".rstrip(),
        )
    out_console().print(t)
    return 0


def spend_of(rec: Any, meta: dict[str, Any]) -> dict[str, Any]:
    """What the session's model calls cost, per model and per provider, from each call's record
    (`usage.calls_detail` of the events that end a proposal, cancelled ones included), with the
    requests sent (every attempt, failed ones too) and the USD cap."""
    from cockpit.agents.keys import provider_of
    from cockpit.store import events as ev

    kinds = (ev.CANDIDATE_PROPOSED, ev.PROPOSAL_FAILED, ev.PROPOSAL_DISCARDED)
    rows = rec.execute(
        "SELECT json_extract(payload, '$.usage.calls_detail'), "
        "json_extract(payload, '$.usage.attempts') FROM events "
        f"WHERE kind IN ({', '.join('?' * len(kinds))}) "
        "AND json_extract(payload, '$.usage') IS NOT NULL",
        kinds,
    )

    def zero() -> dict[str, Any]:
        return {"calls": 0, "tokens": 0, "usd": 0.0, "unpriced_calls": 0}

    total, models, providers, requests = zero(), {}, {}, 0
    for detail_text, attempts in rows:
        try:
            detail = json.loads(detail_text) if detail_text else []
        except ValueError:
            detail = []
        detail = [c for c in detail if isinstance(c, dict)] if isinstance(detail, list) else []
        requests += attempts if isinstance(attempts, int) else len(detail)
        for c in detail:
            model = str(c.get("model") or "")
            cost = c.get("cost_usd")
            tokens = int(c.get("prompt_tokens") or 0) + int(c.get("completion_tokens") or 0)
            for acc in (
                total,
                models.setdefault(model, zero()),
                providers.setdefault(provider_of(model), zero()),
            ):
                acc["calls"] += 1
                acc["tokens"] += tokens
                if isinstance(cost, int | float):
                    acc["usd"] = round(acc["usd"] + cost, 10)
                else:
                    acc["unpriced_calls"] += 1
    return {
        **total,
        "requests": requests,
        "cap_usd": meta.get("budget_usd"),
        "models": models,
        "providers": providers,
    }


def status_dict(folder: Path) -> dict[str, Any]:
    from cockpit.store import SessionRecord, engine_pid, figures
    from cockpit.store.sessions import effective_state
    from cockpit.store.states import branch_reason, branch_state, end_reason, evaluations

    pid = engine_pid(folder)
    with SessionRecord.open_readonly(folder) as rec, rec.snapshot():
        meta = rec.meta()
        branches = rec.branches()
        cands = rec.candidates()
        spend = spend_of(rec, meta)
    evaluated = evaluations(cands)
    state = effective_state(meta.get("state"), pid is not None)
    by_id = {c.id: c for c in cands}
    return {
        "session": folder.name,
        "path": str(folder),
        "task": meta.get("task"),
        "device": meta.get("device"),
        "state": state,
        # why it is in that state (`interrupted by SIGTERM`, `time limit of 6m reached`, `by command`…);
        # None while running, or for a record whose engine died without saying
        "reason": meta.get("state_reason")
        if state == meta.get("state") and state != "running"
        else None,
        "pid": pid,
        # why the run ended, in one sentence (None while an engine is at work)
        "ended": end_reason(state, meta, branches, evaluated),
        "ended_t": meta.get("state_t") if state in ("done", "stopped") else None,
        "budget": meta.get("budget"),
        "spend": spend,
        "evaluations": evaluated,
        "candidates": len(cands),
        "branches": [
            {
                "id": b.id,
                "family": b.family,
                # what the branch does now: no branch runs in a session that has ended
                "state": branch_state(b.state, state),
                "recorded_state": b.state,
                "model": b.model,
                "best_candidate": b.best_candidate,
                "best_us": b.best_us,
                "best_label": figures.tag(by_id.get(b.best_candidate or "")),
                "plateaus": b.info.get("plateaus", 0),
                "reason": branch_reason(b.state, b.info.get("state_reason"), state),
            }
            for b in branches
        ],
        "best": figures.best_dict(figures.best(cands, branches)),
        "candidate_list": [
            {
                "id": c.id,
                "branch": c.branch,
                "family": c.family,
                "status": c.status,
                "geomean_us": c.geomean_us,
                "score_us": c.score_us,
                "parent": c.parent,
            }
            for c in cands
        ],
    }


def cmd_status(args: argparse.Namespace) -> int:
    # the record's words (reasons quote providers and candidates) are shown as text, never markup
    from rich.markup import escape
    from rich.table import Table
    from rich.text import Text

    from cockpit.render import fmt_us
    from cockpit.store import SessionDamaged
    from cockpit.store.sessions import check_repo

    folder = _find(args)
    d = status_dict(folder)
    try:
        check_repo(folder)
    except SessionDamaged as exc:  # the record reads fine: show it, and say what is missing
        sys.stderr.write(f"cockpit: warning: {exc}\n")
    if args.json:
        print(json.dumps(d))
        return 0
    con = out_console()
    best = d["best"]
    con.print(
        f"[bold]{d['session']}[/bold]  task {d['task']} · {d['device']} · [bold]{d['state']}[/bold]"
        f"{' (' + escape(d['reason']) + ')' if d.get('reason') else ''}"
        f"{' pid ' + str(d['pid']) if d['pid'] else ''} · {d['evaluations']}/{d['budget']} evaluations"
        f" · best {_best_text(best, fmt_us)}"
    )
    sp = d["spend"]
    if sp["calls"] or sp["requests"]:
        cap = "no cap" if sp["cap_usd"] is None else f"cap ${sp['cap_usd']:.4f}"
        per = " · ".join(
            f"{name} ${v['usd']:.4f} ({v['calls']} calls, {v['tokens']:,} tokens)"
            for name, v in sp["providers"].items()
        )
        con.print(
            f"model spend ${sp['usd']:.4f} ({cap}) · {sp['requests']} requests"
            + (f" · {per}" if per else ""),
            highlight=False,
            soft_wrap=True,
        )
    if d["ended"]:
        when = (
            time.strftime(" %Y-%m-%d %H:%M", time.localtime(d["ended_t"])) if d["ended_t"] else ""
        )
        # the sentence once: an engine that wrote it as its reason has it on the line above
        why = "" if d["ended"] == d.get("reason") else f": {d['ended']}"
        con.print(f"ended{when}{why}", highlight=False, soft_wrap=True, markup=False)
    t = Table(title_justify="left")
    for col in ("branch", "family", "state", "best", "candidate", "plateaus", "why"):
        t.add_column(col)
    for b in d["branches"]:
        t.add_row(
            b["id"],
            Text(b["family"] or ""),
            b["state"] or "",
            f"{fmt_us(b['best_us'])} {b['best_label']}".rstrip(),
            b["best_candidate"] or "",
            str(b["plateaus"]),
            Text(b["reason"] or ""),
        )
    con.print(t)
    return 0


def _best_text(best: dict[str, Any] | None, fmt_us: Any) -> str:
    """`9.55 µs (c0002)`, with `n/c` after the time when it is not comparable."""
    if not best:
        return "-"
    label = f" {best['label']}" if best.get("label") else ""
    return f"{fmt_us(best['score_us'])}{label} ({best['candidate']})"


def cmd_stop(args: argparse.Namespace) -> int:
    from cockpit.store import SessionRecord, engine_pid

    folder = _find(args)
    if not engine_pid(folder):
        d = status_dict(folder)
        why = f": {d['ended']}" if d["ended"] else ""
        raise UsageError(f"session {folder.name} is not running ({d['state']}{why})")
    with SessionRecord.open(folder) as rec:
        cid = rec.post_command("stop", {}, source="cli")
    print(f"stop requested (command {cid}); the engine finishes the evaluation in flight")
    if args.wait:
        return _wait_state(folder, ("stopped", "done", "crashed"), args.timeout)
    return 0


def _wait_state(folder: Path, states: tuple[str, ...], timeout: float) -> int:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if status_dict(folder)["state"] in states:
            return 0
        time.sleep(0.2)
    sys.stderr.write(f"cockpit: timed out waiting for {folder.name}\n")
    return 1


def cmd_send(args: argparse.Namespace) -> int:
    from cockpit.store import SessionRecord, engine_pid
    from cockpit.store.commands import COMMAND_KINDS, normalize_command_kind, typed_name

    folder = _find(args)
    try:
        kind = normalize_command_kind(args.command)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    name = typed_name(kind)
    a = {k: v for k, v in vars(args).items() if k in COMMAND_KINDS[kind] and v is not None}
    if args.text:
        key = {
            "redirect": "instruction",
            "set_model": "model",
            "set_budget": "budget",
            "retire": "reason",
            "fork": "candidate",
        }.get(kind)
        if key is None:
            raise UsageError(f"{name} takes no positional argument")
        a.setdefault(key, " ".join(args.text))
    required = {
        "fork": ["candidate"],
        "redirect": ["branch", "instruction"],
        "retire": ["branch"],
        "set_model": ["model"],
    }.get(kind, [])
    missing = [r for r in required if r not in a]
    if missing:
        raise UsageError(f"{name} needs --{missing[0]}")
    if kind == "set_model":
        from cockpit.agents.profiles import LLM_FIELDS

        try:
            a["model"] = LLM_FIELDS["model"](a["model"])
        except ValueError as exc:
            raise UsageError(f"set-model: the model {exc}") from None
    if kind == "set_budget":
        a = _budget_args(a)
    running = engine_pid(folder) is not None
    if not running and not args.queue:
        d = status_dict(folder)
        why = f" ({d['ended']})" if d["ended"] else ""
        raise UsageError(
            f"session {folder.name} is {d['state']}{why}: no engine reads commands; add --queue "
            f"to keep {name} for the next `cockpit resume {folder.name}`"
        )
    if not running:  # a running engine refuses a bad target itself, in its acknowledgement
        _check_target(folder, kind, a)
    with SessionRecord.open(folder) as rec:
        cid = rec.post_command(kind, a, source=args.source)
    if not running:
        print(f"queued {name} as command {cid} for the next `cockpit resume {folder.name}`")
        return 0
    if not args.wait:
        print(f"posted {name} as command {cid}")
        return 0
    deadline = time.monotonic() + args.timeout
    while time.monotonic() < deadline:
        with SessionRecord.open_readonly(folder) as rec:
            cmd = next((c for c in rec.commands() if c.id == cid), None)
        if cmd and cmd.state != "pending":
            print(f"{'ok' if cmd.state == 'acked' else 'refused'}: {cmd.ack_message}")
            return 0 if cmd.state == "acked" else 1
        time.sleep(0.1)
    sys.stderr.write(
        f"cockpit: command {cid} not acknowledged within {args.timeout:.0f} s (is the engine running?)\n"
    )
    return 1


def _check_target(folder: Path, kind: str, a: dict[str, Any]) -> None:
    """A queued command naming a branch that is retired, or one that does not exist, is refused
    when posted, not at a resume long after (where a set-model could reach a retired branch)."""
    from cockpit.store import SessionRecord

    bid = a.get("branch")
    if not bid or kind not in ("pause", "resume", "redirect", "retire", "set_model"):
        return
    with SessionRecord.open_readonly(folder) as rec:
        branches = {b.id: b for b in rec.branches()}
    if bid not in branches:
        known = ", ".join(branches) or "none yet"
        raise UsageError(f"no branch {bid!r} in {folder.name} (branches: {known})")
    if branches[bid].state == "retired":
        raise UsageError(
            f"branch {bid} is retired: {kind.replace('_', '-')} applies to live branches"
        )


def _budget_args(a: dict[str, Any]) -> dict[str, Any]:
    """set-budget: evaluations (a whole number), --usd (dollars) and --tokens (a whole number);
    `none` lifts an LLM cap. At least one of them."""
    if not a:
        raise UsageError("set-budget needs a budget (evaluations), --usd or --tokens")
    out: dict[str, Any] = {}
    for key, cast, what in (
        ("budget", int, "a whole number of evaluations"),
        ("usd", float, "an amount in USD"),
        ("tokens", int, "a whole number of tokens"),
    ):
        if key not in a:
            continue
        text = str(a[key]).strip().replace("_", "").replace(",", "")
        if key != "budget" and text.lower() in ("none", "off"):
            out[key] = None
            continue
        try:
            value = cast(text.lstrip("$") if key == "usd" else text)
        except ValueError:
            flag = "" if key == "budget" else f"--{key} "
            raise UsageError(f"set-budget: {flag}{a[key]!r} is not {what}") from None
        if value < 0 or value != value or value == float("inf"):
            raise UsageError(f"set-budget: {key} must be a finite number >= 0, not {a[key]!r}")
        out[key] = value
    return out


class _Intermixed:
    """A sub-command parser whose free words may come after its options, as people type them:
    `cockpit send S redirect --branch b2 use bigger chunks`. Plain argparse gives the `*`
    positional its (empty) share before the first option and refuses the words after it."""

    _mixing = False

    def parse_known_args(self, args=None, namespace=None):
        if self._mixing:  # parse_known_intermixed_args calls back in, twice
            return super().parse_known_args(args, namespace)
        self._mixing = True
        try:
            return self.parse_known_intermixed_args(args, namespace)
        finally:
            self._mixing = False


def _positive(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r}: must be more than zero")
    return value


def backend_opts(s: argparse.ArgumentParser, default: str | None, unit: str = "") -> None:
    """--backend and --ray-address; with `unit` (what holds the CPU slots: one evaluation, one
    part), --ray-cpus too."""
    s.add_argument(
        "--backend",
        choices=["local", "ray"],
        default=default,
        help="where evaluations run: local (one worker per GPU of this host) or ray (one per "
        "GPU of a Ray cluster; needs `pip install -e '.[ray]'`)"
        + ("" if default else "; on resume: for this run, instead of the session's own"),
    )
    s.add_argument(
        "--ray-address",
        metavar="ADDR",
        help="the Ray cluster's head, host:port or auto (default: $RAY_ADDRESS, else a Ray "
        "instance started on this machine)",
    )
    if unit:
        s.add_argument(
            "--ray-cpus",
            type=_positive,
            metavar="N",
            help=f"with --backend ray on a CPU cluster: CPU slots {unit} holds (default 1)",
        )


def register(sub: argparse._SubParsersAction) -> None:
    from cockpit.harness import DEFAULT_EXCHANGE, EXCHANGES  # a stdlib-only module

    def run_opts(s: argparse.ArgumentParser) -> None:
        s.add_argument("--device", help="cpu or cuda (default: cuda when visible)")
        s.add_argument("--budget", type=int, default=40, help="evaluations in total (default 40)")
        s.add_argument("--beam", type=int, default=4, help="live branches (default 4)")
        s.add_argument(
            "--agent", default="tuner", help="agent profile under agents/ (default: tuner)"
        )
        s.add_argument(
            "--model",
            help="LLM model for every branch, e.g. anthropic/claude-sonnet-4-6 (llm profiles)",
        )
        s.add_argument("--api-base", help="OpenAI-compatible base URL (ollama, vLLM, a proxy)")
        s.add_argument(
            "--usd",
            metavar="AMOUNT",
            help="stop the session once priced model calls have cost this much (default: the "
            "profile's budget_usd, else $20; none = no cap); unpriced local models have the call "
            "caps only",
        )
        s.add_argument("--mode", choices=["quick", "iterate", "final"], default="iterate")
        s.add_argument(
            "--plateau",
            type=int,
            default=6,
            help="evaluations without improvement before escalating",
        )
        s.add_argument("--seed", type=int, default=0)
        s.add_argument(
            "--exchange",
            choices=list(EXCHANGES),
            default=DEFAULT_EXCHANGE,
            help="how evaluations move tensors to the candidate's process (see `cockpit eval`)",
        )
        s.add_argument(
            "--max-time",
            metavar="DURATION",
            help="stop starting evaluations after this long (90s, 15m, 2h); the ones in flight "
            "finish and the session ends `stopped`, resumable",
        )
        s.add_argument(
            "--ab",
            choices=["auto", "on", "off"],
            default="auto",
            help="confirm improvements by interleaved A/B timing in one process "
            "(auto: on a GPU, off on the CPU)",
        )
        s.add_argument(
            "--cascade",
            choices=["on", "off"],
            default="on",
            help="screen every candidate (public and cheap hidden shapes, a short timing) and "
            "give the full evaluation only to one that could become a branch's best (on); "
            "off: every candidate gets the full evaluation",
        )
        s.add_argument(
            "--warm",
            choices=["on", "off"],
            default="on",
            help="start the next candidate's process (interpreter, torch, CUDA, sandbox) while "
            "the current one is judged (on); a candidate still never shares a process",
        )
        backend_opts(s, default="local", unit="one evaluation")
        _sessions_arg(s)

    s = sub.add_parser("run", help="start the optimization loop on a task")
    s.add_argument("task")
    run_opts(s)
    s.add_argument("--session", help="session name (default: TASK-DATE-TIME)")
    s.add_argument(
        "--headless",
        action="store_true",
        help="progress bar and one line per evaluation, no cockpit",
    )
    s.add_argument(
        "--detach", action="store_true", help="run in the background; survives the terminal closing"
    )
    s.set_defaults(func=cmd_run)

    s = sub.add_parser(
        "demo", help="the tuner on softmax with a small budget, on whatever device exists"
    )
    s.add_argument("--device")
    s.add_argument("--headless", action="store_true", help="no cockpit even at a terminal")
    s.add_argument("--budget", type=int, default=10)
    _sessions_arg(s)
    s.set_defaults(func=cmd_demo)

    s = sub.add_parser("resume", help="continue a stopped or crashed session")
    s.add_argument("session", nargs="?")
    s.add_argument("--detach", action="store_true")
    backend_opts(s, default=None)
    _sessions_arg(s)
    s.set_defaults(func=cmd_resume)

    s = sub.add_parser("_engine")  # no help: internal, what --detach starts
    s.add_argument("folder")
    backend_opts(s, default=None)
    s.set_defaults(func=cmd_engine)

    s = sub.add_parser("ls", help="list sessions")
    s.add_argument("--json", action="store_true")
    _sessions_arg(s)
    s.set_defaults(func=cmd_ls)

    s = sub.add_parser("status", help="one session's state, branches and best")
    s.add_argument("session", nargs="?", help="name or path (default: latest)")
    s.add_argument("--json", action="store_true")
    _sessions_arg(s)
    s.set_defaults(func=cmd_status)

    s = sub.add_parser("stop", help="ask a running engine to stop after the evaluation in flight")
    s.add_argument("session", nargs="?")
    s.add_argument("--wait", action="store_true")
    s.add_argument("--timeout", type=float, default=300)
    _sessions_arg(s)
    s.set_defaults(func=cmd_stop)

    s = sub.add_parser(
        "send", help="post a command to a session's queue (pause, fork, redirect, ...)"
    )
    s.__class__ = type("SendParser", (_Intermixed, type(s)), {})
    s.add_argument("session")
    s.add_argument(
        "command", help="pause | resume | fork | redirect | retire | set-model | set-budget | stop"
    )
    s.add_argument(
        "text",
        nargs="*",
        default=[],
        help="instruction (redirect), model (set-model), budget, reason, candidate",
    )
    s.add_argument("--branch")
    s.add_argument("--candidate")
    s.add_argument("--family")
    s.add_argument("--instruction")
    s.add_argument("--mode", choices=["steer", "queue"])
    s.add_argument("--model")
    s.add_argument("--reason")
    s.add_argument("--budget", help="set-budget: evaluations in total")
    s.add_argument(
        "--usd", help="set-budget: LLM spending cap in USD for the session (none = no cap)"
    )
    s.add_argument("--tokens", help="set-budget: LLM token cap for the session (none = no cap)")
    s.add_argument("--source", default="cli", help="who sent it (shown in the record)")
    s.add_argument("--wait", action="store_true", help="wait for the engine's acknowledgement")
    s.add_argument(
        "--queue",
        action="store_true",
        help="the session is not running: keep the command for the next `cockpit resume` "
        "(without it, a command to a session that is not running is refused)",
    )
    s.add_argument("--timeout", type=float, default=120)
    _sessions_arg(s)
    s.set_defaults(func=cmd_send)


__all__ = ["register", "status_dict", "asdict"]
