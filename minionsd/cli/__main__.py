"""`python -m minionsd.cli`: the same as the minionsctl console script."""

import sys

from minionsd.cli import main

sys.exit(main())
