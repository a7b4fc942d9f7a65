"""``python -m aioseq``: the same as the ``aioseq`` command."""

import sys

from aioseq.cli import main

sys.exit(main())
