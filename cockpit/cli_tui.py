"""`cockpit attach [SESSION]` and `cockpit replay SESSION [--speed X]`: the Textual cockpit.

Registered into `cockpit.cli` by `register_tui(sub)`; also runnable alone as
`python -m cockpit.cli_tui attach|replay ...` or `python -m cockpit.tui SESSION [--replay]`.
Textual is imported only when a command runs, so `cockpit --help` stays fast.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from cockpit.cli import UsageError


def _find(session: str | None, sessions_dir: str | None) -> Path:
    from cockpit.store import find_session, latest_session

    try:
        if not session:
            info = latest_session(sessions_dir)
            if info is None:
                raise UsageError("no sessions yet: start one with `cockpit run TASK`")
            return info.path
        return find_session(session, sessions_dir)
    except (FileNotFoundError, ValueError) as exc:
        raise UsageError(str(exc).strip('"')) from None


def _config():
    from cockpit.tui.keymap import load_config

    try:
        return load_config()
    except ValueError as exc:
        raise UsageError(f"config: {exc}") from None


def _profile_models() -> list[str]:
    """Models named by the agent profiles (offered by the model dialog). Read as text: the
    cockpit must not import the agents package (it pulls in provider libraries)."""
    env = os.environ.get("COCKPIT_AGENTS_DIR")  # the same lookup as cockpit.agents.profiles
    root = Path(env) if env else Path(__file__).resolve().parents[1] / "agents"
    if not env and not root.is_dir():
        root = Path.cwd() / "agents"
    models = set()
    for path in sorted(root.glob("*.md")) if root.is_dir() else ():
        for line in path.read_text(errors="replace").splitlines()[1:60]:
            if line.strip() == "---":
                break
            key, _, value = line.partition(":")
            if key.strip() in ("model", "fallbacks"):
                models.update(v.strip().strip("\"'[]") for v in value.split(","))
    return sorted(m for m in models if m)


def cmd_attach(args: argparse.Namespace) -> int:
    from cockpit.tui import CockpitApp, LiveSource

    folder = _find(getattr(args, "session", None), getattr(args, "sessions_dir", None))
    config = _config()
    app = CockpitApp(
        LiveSource(folder), keymap=config.keys, models=_profile_models(), notify=config.notify
    )
    app.run()
    print(f"detached from {folder.name}; the engine (if any) keeps running")
    return 0


def cmd_replay(args: argparse.Namespace) -> int:
    from cockpit.tui import CockpitApp, ReplaySource

    if args.speed <= 0:
        raise UsageError(f"--speed {args.speed}: must be positive")
    folder = _find(args.session, getattr(args, "sessions_dir", None))
    source = ReplaySource(folder, speed=args.speed)
    source.playing = True
    CockpitApp(source, keymap=_config().keys).run()
    return 0


def _sessions_arg(s: argparse.ArgumentParser) -> None:
    s.add_argument(
        "--sessions-dir", help="where sessions live (default: $COCKPIT_SESSIONS_DIR or ./sessions)"
    )


def register_tui(sub: argparse._SubParsersAction) -> None:
    s = sub.add_parser("attach", help="open the cockpit on a session (the engine keeps running)")
    s.add_argument("session", nargs="?", help="name or path (default: latest)")
    _sessions_arg(s)
    s.set_defaults(func=cmd_attach)

    s = sub.add_parser("replay", help="replay a recorded session in the cockpit")
    s.add_argument("session", help="name or path")
    s.add_argument(
        "--speed", type=float, default=10.0, help="virtual seconds per second (default 10)"
    )
    _sessions_arg(s)
    s.set_defaults(func=cmd_replay)


def main(argv: list[str] | None = None) -> int:
    """Standalone entry: `attach|replay ...`, or just `SESSION [--replay] [--speed X]`."""
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = argparse.ArgumentParser(prog="cockpit")
    sub = parser.add_subparsers(dest="command", required=True)
    register_tui(sub)
    if argv and argv[0] not in ("attach", "replay", "-h", "--help"):
        if "--replay" in argv:
            argv = ["replay", *[a for a in argv if a != "--replay"]]
        else:
            argv = ["attach", *argv]
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except UsageError as exc:
        sys.stderr.write(f"cockpit: error: {exc}\n")
        return 2


if __name__ == "__main__":
    sys.exit(main())
