"""`python -m mptcplab ...` is the `mptcplab` command (the UML runner re-executes it this way)."""

import sys

from .cli import main

sys.exit(main())
