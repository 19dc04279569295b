"""``python -m producers``: one load generator process."""

import sys

from producers.cli import main

sys.exit(main())
