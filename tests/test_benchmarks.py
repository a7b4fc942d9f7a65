"""The contention benchmark runs, writes its report, and its checks catch what they must.

Speed is the benchmark's business, not the tests': these check that ``python -m benchmarks
--quick`` works end to end and that a duplicate or a gap handed out by a taker is reported.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from benchmarks.contention import QUICK, Options, markdown, run
from benchmarks.variants import NAMES, BareVariant, Contender, Place

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.slow  # ~15 s: a child process, its moto server, and 2 worker processes
def test_the_quick_run_writes_json_markdown_and_png(tmp_path: Path) -> None:
    finished = subprocess.run(
        [sys.executable, "-m", "benchmarks", "--quick", "--no-progress", "--out", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert finished.returncode == 0, finished.stderr[-3000:]

    report = json.loads((tmp_path / "contention.json").read_text())
    assert report["ok"] is True
    assert {"date", "machine", "versions", "server", "parameters", "command"} <= set(report)
    assert report["machine"]["cores"] >= 1
    assert report["versions"]["aioseq"] and report["versions"]["dynamodb-autoincrement"]
    assert report["parameters"]["concurrency"] == list(QUICK.concurrency)
    rows = report["rows"]
    assert {row["name"] for row in rows} == set(NAMES)
    assert {row["processes"] for row in rows} == set(QUICK.processes)
    for row in rows:
        assert row["ok"] and row["duplicates"] == 0, row
        assert row["numbers"] >= row["tasks"] >= 1
        assert row["numbers_per_s"] > 0 and 0 <= row["p50_ms"] <= row["p99_ms"]
        if row["name"] != "bare":
            assert sum(row["requests"].values()) >= 1  # counted at the client
    atomic = [row for row in rows if row["name"] == "atomic"]
    assert all(row["vs_atomic"]["numbers_per_s"] == 1.0 for row in atomic)
    assert all(row["requests_per_number"] == 1.0 for row in atomic)
    allocator = next(row for row in rows if row["name"] == "allocator")
    assert allocator["requests_per_number"] < 1  # one ADD per block

    table = (tmp_path / "contention.md").read_text()
    assert "| strategy" in table and "dynamodb-autoincrement 0.2.0" in table
    assert "FAILED" not in table
    png = (tmp_path / "contention.png").read_bytes()
    assert png.startswith(b"\x89PNG\r\n\x1a\n") and len(png) > 10_000
    assert "numbers/s" in finished.stdout  # the terminal table


@dataclass(frozen=True)
class Faulty(BareVariant):
    """A bare counter that hands out ``repeat`` twice, or skips ``skip``."""

    repeat: int = 0
    skip: int = 0

    @contextlib.asynccontextmanager
    async def contender(self, place: Place) -> AsyncIterator[Contender]:
        value = 0
        repeated = False

        async def next() -> int:
            nonlocal value, repeated
            if value == self.repeat and not repeated:
                repeated = True
                return value
            value += 1
            if value == self.skip:
                value += 1
            return value

        yield Contender(next)


async def test_a_planted_duplicate_or_gap_is_reported(aioseq_endpoint: str) -> None:
    options = Options(concurrency=(4,), count=20, warmup_secs=0)
    chosen = [
        Faulty("repeats 5", "bare", gapless=True, repeat=5),
        Faulty("skips 7", "bare", gapless=True, skip=7),
        Faulty("skips 7, gaps allowed", "bare", gapless=False, skip=7),
        BareVariant("sound", "bare", gapless=True),
    ]
    rows = {row.label: row for row in await run(options, aioseq_endpoint, chosen=chosen)}

    assert (rows["repeats 5"].duplicates, rows["repeats 5"].gaps) == (1, 0)
    assert (rows["skips 7"].duplicates, rows["skips 7"].gaps) == (0, 1)
    assert not rows["repeats 5"].ok and not rows["skips 7"].ok
    assert rows["skips 7, gaps allowed"].ok and rows["skips 7, gaps allowed"].gaps == 1
    assert rows["sound"].ok and rows["sound"].numbers == 20

    report = {
        "date": "today",
        "machine": {"cpu": "cpu", "cores": 2, "python": "3", "load_average": [0.0]},
        "versions": {"aioseq": "0"},
        "server": "moto",
        "wall_secs": 1.0,
        "command": "python -m benchmarks",
        "sizing": "test",
    }
    table = markdown(report, list(rows.values()))
    assert table.count("FAILED") == 2
    assert "1 (allowed)" in table
