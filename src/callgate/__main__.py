"""``python -m callgate``: the command line."""

import sys

from callgate.cli import main

sys.exit(main())
