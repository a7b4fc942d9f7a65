"""The soak (``python -m aioseq.testing.soak``), short: every strategy, two processes, a fault
schedule of 10%, every number checked."""

from __future__ import annotations

from aioseq.testing.soak import DEFAULT_STRATEGIES, run_soak


async def test_every_strategy_keeps_its_guarantees_in_a_short_soak(aioseq_endpoint: str) -> None:
    lines: list[str] = []
    results = await run_soak(
        aioseq_endpoint,
        processes=2,
        concurrency=10,
        count=50,
        fault_rate=0.1,
        seed=5,
        read_timeout_secs=2.0,
        out=lines.append,
    )
    assert [s.report.strategy for s in results] == list(DEFAULT_STRATEGIES)
    for soak in results:
        assert soak.report.ok, soak.report.problems
        assert soak.report.numbers == 2 * 50
        assert soak.report.duplicates == soak.report.holes == 0
    assert sum(sum(s.injected.values()) for s in results) > 0
    assert lines[-1] == "all guarantees held"
    assert any(line.startswith("numbers checked: 500") for line in lines)
