"""docs/performance's pages are what their benchmark renders from the JSON beside them.

The benchmarks write both files in one run (``--out docs/performance``); a hand edit of a
page, or a renderer changed without a new run, shows up here. (defaults.md is rendered from
the run's objects, not from its JSON, so it is not checked here.)
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from benchmarks import contention, fairness, global_tables, many_keys
from benchmarks.row import Row

PERFORMANCE = Path(__file__).resolve().parents[2] / "docs" / "performance"


def _report(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((PERFORMANCE / f"{name}.json").read_text())
    return loaded


def test_contention_md_is_rendered_from_contention_json() -> None:
    report = _report("contention")
    rows = [Row(**row) for row in report["rows"]]
    assert contention.markdown(report, rows) == (PERFORMANCE / "contention.md").read_text()


def test_many_keys_md_is_rendered_from_many_keys_json() -> None:
    report = _report("many_keys")
    assert many_keys.markdown(report) == (PERFORMANCE / "many_keys.md").read_text()


def test_fairness_md_is_rendered_from_fairness_json() -> None:
    assert fairness.markdown(_report("fairness")) == (PERFORMANCE / "fairness.md").read_text()


def test_global_tables_md_is_rendered_from_global_tables_json() -> None:
    report = _report("global_tables")
    assert global_tables.markdown(report) == (PERFORMANCE / "global_tables.md").read_text()
