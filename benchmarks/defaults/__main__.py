"""``python -m benchmarks.defaults``: the defaults benchmark (see :mod:`benchmarks.defaults`)."""

import sys

from benchmarks.defaults.command import main

if __name__ == "__main__":
    sys.exit(main())
