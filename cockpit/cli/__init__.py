"""The `cockpit` command. `main` (the console script's entry) and `build_parser` live in
cockpit.cli.main; each sub-command family has its module (loop, tui, agents, report) and what they
share is in cockpit.cli.common, so no module imports back from this package's top.

Exit codes: 0 success (for `eval`: the candidate passed), 1 a verdict other than ok, 2 bad usage
or bad input (one line on stderr).
"""

from cockpit.cli.common import UsageError
from cockpit.cli.main import build_parser, main

__all__ = ["UsageError", "build_parser", "main"]
