"""`python -m cockpit.tui SESSION [--replay] [--speed X]`: the cockpit without the full CLI."""

import sys

from cockpit.cli.tui import main

sys.exit(main())
