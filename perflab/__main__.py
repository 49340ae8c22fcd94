"""`python -m perflab` is the `perflab` command."""

import sys

from perflab.cli import main

sys.exit(main())
