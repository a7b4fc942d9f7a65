"""``python -m benchmarks``: the contention benchmark (see :mod:`benchmarks.contention`)."""

import sys

from benchmarks.contention import main

if __name__ == "__main__":
    sys.exit(main())
