"""The figures docs/benchmarks.md quotes in prose from a saved report match the report.

The tables are rendered from docs/performance/*.json by cog (``make docs-outputs-check``);
the prose under the contention table ("What the figures mean for choosing") quotes ranges
from the same contention.json, so each quoted range is computed here from the report and
must appear in the page as written. A new report (``make bench ARGS="--out
docs/performance"``) fails this test until the prose says what it shows.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "benchmarks.md"
REPORT = ROOT / "docs" / "performance" / "contention.json"

Row = dict[str, Any]


def _span(values: Iterable[float], lo: str, hi: str | None = None) -> str:
    """``"min-max"`` of ``values``, each with its format spec (``hi`` defaults to ``lo``)."""
    found = sorted(values)
    assert found, "no rows selected"
    return f"{found[0]:{lo}}-{found[-1]:{hi or lo}}"


def _rows(report: dict[str, Any], **where: Any) -> Callable[..., list[Row]]:
    def select(
        label: str | None = None, processes: int | None = None, min_tasks: int = 0
    ) -> list[Row]:
        return [
            r
            for r in report["rows"]
            if (label is None or r["label"] == label)
            and (processes is None or r["processes"] == processes)
            and r["tasks"] >= min_tasks
            and all(r[k] == v for k, v in where.items())
        ]

    return select


def _claims(report: dict[str, Any]) -> list[str]:
    """Each figure the prose quotes, as the page writes it, computed from ``report``."""
    rows = _rows(report)
    peer = _rows(report, name="dynamodb-autoincrement")

    def vs_atomic(selected: list[Row]) -> list[float]:
        return [r["vs_atomic"]["numbers_per_s"] for r in selected]

    allocator_1 = [r for r in rows(processes=1) if r["name"] == "allocator"]
    hot = report["hot_path"]
    rate = {(r["processes"], r["tasks"]): r["numbers_per_s"] for r in rows("transactional +group")}
    peer_rate = {(r["processes"], r["tasks"]): r["numbers_per_s"] for r in peer()}

    def over_peer(processes: int) -> list[float]:
        return [rate[key] / peer_rate[key] for key in rate if key[0] == processes and key[1] >= 16]

    peer_1, peer_4 = peer(processes=1, min_tasks=16), peer(processes=4)
    competing = peer_1 + peer(processes=4, min_tasks=16)
    conditional_4 = [
        r for name in ("optimistic", "transactional", "sort-key") for r in rows(name, 4)
    ]
    return [
        f"all {len(report['rows'])} rows passed",
        f"{_span(vs_atomic(allocator_1), '.0f')}× the atomic counter in one process",
        f"costs {hot['allocator_next_ns']} ns against {hot['bare_next_ns']} ns for a bare "
        f"`async def next()` ({hot['ratio']:.1f}×)",
        f"up to {max(r['wasted'] for r in rows('allocator b=1,000', 4)):,} numbers for blocks "
        "of 1,000",
        f"`optimistic +group` {_span(vs_atomic(rows('optimistic +group', 1, 16)), '.0f')}× the "
        "atomic counter from 16 tasks on",
        f"`sort-key +group` {_span(vs_atomic(rows('sort-key +group', 1, 16)), '.1f')}×",
        f"`transactional +group` {_span(vs_atomic(rows('transactional +group', 1, 16)), '.1f')}×",
        f"{_span((r['conflicts_per_number'] for r in rows('optimistic', 4)), '.2f')} failures "
        "per number for optimistic locking",
        f"{_span((r['conflicts_per_number'] for r in rows('transactional', 4)), '.2f')} for the "
        "transactional strategy",
        f"{_span((r['conflicts_per_number'] for r in rows('sort-key', 4)), '.2f')} for sort-key "
        f"maximum ({_span((r['requests_per_number'] for r in rows('sort-key', 4)), '.1f')} "
        "requests per number",
        f"Ungrouped, the conditional strategies fall to {_span(vs_atomic(conditional_4), '.2f')}×",
        f"to {_span(vs_atomic(rows('optimistic +group', 4, 16)), '.1f', '.0f')}× (optimistic), "
        f"{_span(vs_atomic(rows('transactional +group', 4, 16)), '.1f')}× (transactional) and "
        f"{_span(vs_atomic(rows('sort-key +group', 4, 16)), '.1f')}× (sort-key)",
        f"{_span((r['requests_per_number'] for r in peer_1), '.1f')} requests per put in one "
        f"process ({_span((r['conflicts_per_number'] for r in peer_1), '.1f')} cancelled "
        f"transactions each) and {_span((r['requests_per_number'] for r in peer_4), '.0f')} in "
        f"four ({_span((r['conflicts_per_number'] for r in peer_4), '.0f')} cancelled)",
        f"runs at {_span(vs_atomic(competing), '.2f')}× the atomic counter",
        f"is {_span(over_peer(1), '.0f')}× the peer from 16 tasks on in one process, "
        f"{_span(over_peer(4), '.0f')}× in four",
    ]


def test_the_contention_prose_quotes_contention_json() -> None:
    report = json.loads(REPORT.read_text())
    assert all(r["ok"] for r in report["rows"])
    page = re.sub(r"\s+", " ", PAGE.read_text())
    missing = [claim for claim in _claims(report) if claim not in page]
    assert not missing, f"docs/benchmarks.md no longer matches contention.json: {missing}"


def test_a_changed_report_fails_the_check() -> None:
    report = json.loads(REPORT.read_text())
    page = re.sub(r"\s+", " ", PAGE.read_text())
    for row in report["rows"]:
        if row["label"] == "sort-key +group" and row["processes"] == 1 and row["tasks"] >= 16:
            row["vs_atomic"]["numbers_per_s"] *= 2
    assert [claim for claim in _claims(report) if claim not in page] == [
        f"`sort-key +group` {_span((4.948, 9.69), '.1f')}×"
    ]
