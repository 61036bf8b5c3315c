"""`cockpit report SESSION [-o FILE.html]` and `cockpit export SESSION [CANDIDATE|--best] [-o
FILE.py]`: what a finished (or running) session leaves behind for people.

Registered into `cockpit.cli` by `register_report(sub)`; the work is in `cockpit.report`,
imported when a command runs (matplotlib only when a report is drawn).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from cockpit.cli.common import UsageError


def _find(session: str, sessions_dir: str | None) -> Path:
    from cockpit.store import find_session

    try:
        return find_session(session, sessions_dir)
    except (FileNotFoundError, ValueError) as exc:
        raise UsageError(str(exc).strip('"')) from None


def _write(path: str, text: str) -> None:
    try:
        Path(path).write_text(text, encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"cannot write {path}: {exc.strerror or exc}") from None


def cmd_report(args: argparse.Namespace) -> int:
    import sqlite3

    from cockpit.report import load_report, render_report

    folder = _find(args.session, args.sessions_dir)
    try:
        page = render_report(load_report(folder))
    except sqlite3.Error as exc:
        raise UsageError(f"{folder}: unreadable session record ({exc})") from None
    out = args.output or f"{folder.name}.html"
    _write(out, page)
    print(f"wrote {out} ({len(page.encode()) // 1024} KB): open it in a browser")
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    import sqlite3

    from cockpit.report import ExportError, export_candidate

    if args.candidate and args.best:
        raise UsageError("give a CANDIDATE or --best, not both")
    folder = _find(args.session, args.sessions_dir)
    try:
        cand, text = export_candidate(folder, args.candidate)
    except ExportError as exc:
        raise UsageError(str(exc)) from None
    except sqlite3.Error as exc:
        raise UsageError(f"{folder}: unreadable session record ({exc})") from None
    if args.output:
        _write(args.output, text)
        print(f"wrote {args.output}: {cand.id} ({cand.status}) of {folder.name}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0


def register_report(sub: argparse._SubParsersAction) -> None:
    sessions_help = "where sessions live (default: $COCKPIT_SESSIONS_DIR or ./sessions)"

    s = sub.add_parser("report", help="one self-contained HTML page about a session")
    s.add_argument("session", help="name, path or `latest`")
    s.add_argument(
        "-o", "--output", metavar="FILE.html", help="where to write it (default: SESSION.html)"
    )
    s.add_argument("--sessions-dir", help=sessions_help)
    s.set_defaults(func=cmd_report)

    s = sub.add_parser(
        "export", help="a candidate's source as a standalone file, with where it came from"
    )
    s.add_argument("session", help="name, path or `latest`")
    s.add_argument("candidate", nargs="?", help="candidate id, e.g. c0042 (default: the best)")
    s.add_argument("--best", action="store_true", help="the session's best candidate")
    s.add_argument("-o", "--output", metavar="FILE.py", help="where to write it (default: stdout)")
    s.add_argument("--sessions-dir", help=sessions_help)
    s.set_defaults(func=cmd_export)
