"""``python -m callgate``: the command line."""

import sys

from callgate.cli.commands import main

sys.exit(main())
