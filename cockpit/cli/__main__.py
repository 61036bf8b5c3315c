"""`python -m cockpit.cli ...`: the same as the `cockpit` console script."""

import sys

from cockpit.cli.main import main

sys.exit(main())
