"""Collects the code examples of README.md and docs/*.md as tests (Sybil; see
tests/doc_examples.py for how they run)."""

from doc_examples import pytest_collect_file as pytest_collect_file
