"""aioseq's own verification harness: the history checker and the soak.

Not in the wheel (``[tool.setuptools.packages.find]`` takes ``aioseq*`` only): users test
their code with :mod:`aioseq.testing`; this package checks aioseq itself, and only aioseq's
tests and ``make soak`` use it. It imports from the repository root (pytest's ``pythonpath``
holds ``.``; run the soak as ``python -m verification.soak`` from the root). See
docs/architecture.md, "What ships in the wheel".
"""
