"""aioseq's benchmarks: ``python -m benchmarks --help``. They report figures measured side by
side in one run; the tests check behaviour, not speed."""
