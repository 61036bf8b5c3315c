"""`cockpit attach [SESSION]`, `cockpit replay SESSION [--speed X]` and
`cockpit serve [SESSION] [--port N]`: the Textual cockpit, at a terminal or in a browser;
`cockpit notify [SESSION]`: its notifications without it (a watcher for servers).

Registered into `cockpit.cli` by `register_tui(sub)`; also runnable alone as
`python -m cockpit.cli.tui attach|replay ...` or `python -m cockpit.tui SESSION [--replay]`.
Textual is imported only when a command runs, so `cockpit --help` stays fast.
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
from pathlib import Path

from cockpit.cli.common import UsageError


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


def _check_readable(folder: Path) -> None:
    """Read what the cockpit shows first, before the screen is taken: a damaged `session.db`
    is then `cli.main`'s one line naming it (exit 2), not an error inside the full-screen app."""
    from cockpit.store import SessionRecord

    with SessionRecord.open_readonly(folder) as rec, rec.snapshot():
        rec.meta()
        rec.branches()
        rec.candidates()


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
    _check_readable(folder)
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


LOOPBACK = ("127.0.0.1", "::1", "localhost")


def cmd_serve(args: argparse.Namespace) -> int:
    """The attach app in a browser (textual-serve). Each browser tab runs its own
    `python -m cockpit.tui attach FOLDER` with Textual's web driver. Bound to loopback only:
    the page steers the engine and has no login, so reach it through `ssh -L PORT:127.0.0.1:PORT`."""
    if args.host not in LOOPBACK:
        raise UsageError(
            f"--host {args.host}: the cockpit is served on loopback only ({', '.join(LOOPBACK)}); "
            f"from elsewhere use `ssh -L {args.port}:127.0.0.1:{args.port} HOST`"
        )
    if not 0 < args.port < 65536:
        raise UsageError(f"--port {args.port}: must be 1-65535")
    folder = _find(args.session, getattr(args, "sessions_dir", None))
    _check_readable(folder)  # a damaged record is one line here, not a broken page per tab
    _config()  # a malformed config file is an error here, not in every browser tab
    try:
        from textual_serve.server import Server
    except ImportError:
        raise UsageError("textual-serve is not installed (pip install -e .)") from None
    command = shlex.join([sys.executable, "-m", "cockpit.tui", "attach", str(folder)])
    host = "[::1]" if args.host == "::1" else args.host
    server = Server(
        command,
        host=args.host,
        port=args.port,
        title=f"Kernel Cockpit · {folder.name}",
        public_url=f"http://{host}:{args.port}",
    )
    server.serve()
    return 0


ENDED = ("done", "stopped")


def cmd_notify(args: argparse.Namespace) -> int:
    """Watch a session without the cockpit: one line per notice on stdout, the terminal bell if
    asked, and the config's `notify_command` (or --command) for each notice, as the attached
    cockpit does. For a session left running on a server: `cockpit notify &` over ssh, or under
    nohup/systemd with a command that reaches a phone. Ends when the session ends."""
    import time

    from cockpit.store import SessionRecord
    from cockpit.tui.keymap import NOTICE_KINDS
    from cockpit.tui.notify import NotifyFailed, notice_env, notices, run_notify_command

    folder = _find(getattr(args, "session", None), getattr(args, "sessions_dir", None))
    settings = _config().notify
    command = args.command if args.command is not None else settings.command
    if command is not None and not command.strip():
        raise UsageError("--command: must not be empty")
    on = set(args.on) if args.on else set(settings.on)
    bad = on - set(NOTICE_KINDS)
    if bad:
        raise UsageError(f"--on {', '.join(sorted(bad))}: kinds are {', '.join(NOTICE_KINDS)}")
    if args.interval <= 0:
        raise UsageError(f"--interval {args.interval}: must be positive")
    timeout = args.timeout if args.timeout is not None else settings.timeout_s
    if timeout <= 0:
        raise UsageError(f"--timeout {args.timeout}: must be positive")
    try:
        record = SessionRecord.open_readonly(folder)
    except Exception as exc:  # noqa: BLE001 - not a session folder, unreadable database
        raise UsageError(f"{folder}: cannot open the session record: {exc}") from None
    with record:
        last = 0 if args.from_start else record.last_event_id()
        state = record.meta().get("state")
        print(
            f"watching {folder.name} ({state}) for {', '.join(k for k in NOTICE_KINDS if k in on)}"
            + (f"; running: {command}" if command else ""),
            flush=True,
        )
        try:
            while True:
                new = record.events(after_id=last)
                if new:
                    last = new[-1].id
                for n in notices(new):
                    if n.kind not in on:
                        continue
                    stamp = time.strftime("%H:%M:%S", time.localtime(n.event.t))
                    count = f" (x{n.count})" if n.count > 1 else ""
                    bell = "\a" if args.bell and n.bell else ""
                    print(f"{bell}{stamp} {n.kind:8s} {n.message}{count}", flush=True)
                    if command:
                        try:
                            run_notify_command(command, notice_env(n, folder.name, folder), timeout)
                        except NotifyFailed as exc:
                            print(f"cockpit notify: {exc}", file=sys.stderr, flush=True)
                state = record.meta().get("state")
                if state in ENDED and not record.events(after_id=last):
                    print(f"session {folder.name}: {state}", flush=True)
                    return 0
                time.sleep(args.interval)
        except KeyboardInterrupt:
            return 130


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

    s = sub.add_parser(
        "notify", help="watch a session without the cockpit: notices, bell, the notify command"
    )
    s.add_argument("session", nargs="?", help="name or path (default: latest)")
    s.add_argument("--command", help="shell command per notice (default: the config's)")
    s.add_argument("--on", nargs="+", metavar="KIND", help="kinds to report (default: config's)")
    s.add_argument("--bell", action="store_true", help="ring the terminal bell on a notice")
    s.add_argument("--from-start", action="store_true", help="report past events too")
    s.add_argument("--interval", type=float, default=1.0, help="poll seconds (default 1)")
    s.add_argument("--timeout", type=float, help="seconds before the command is killed")
    _sessions_arg(s)
    s.set_defaults(func=cmd_notify)

    s = sub.add_parser("serve", help="the cockpit in a browser (textual-serve), on 127.0.0.1")
    s.add_argument("session", nargs="?", help="name or path (default: latest)")
    s.add_argument("--port", type=int, default=8000, help="port (default 8000)")
    s.add_argument(
        "--host", default="127.0.0.1", help="loopback address to bind (default 127.0.0.1)"
    )
    _sessions_arg(s)
    s.set_defaults(func=cmd_serve)


def main(argv: list[str] | None = None) -> int:
    """Standalone entry: `attach|replay ...`, or just `SESSION [--replay] [--speed X]`."""
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = argparse.ArgumentParser(prog="cockpit")
    sub = parser.add_subparsers(dest="command", required=True)
    register_tui(sub)
    if argv and argv[0] not in ("attach", "replay", "serve", "notify", "-h", "--help"):
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
