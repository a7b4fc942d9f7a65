"""The cost of a ``BlockAllocator.next()`` served from a block, against a bare in-memory
``async def next()``: what the allocator adds to the event loop's own cost when no request is
needed. Part of ``python -m benchmarks``."""

from __future__ import annotations

import time
import uuid
from typing import Any

import aioseq

__all__ = ["hot_path", "measure_hot_path"]


async def hot_path(
    allocator: aioseq.BlockAllocator, calls: int, *, rounds: int = 5
) -> tuple[float, float]:
    """Seconds per call, best of ``rounds`` interleaved rounds of ``calls`` calls each: a bare
    in-memory ``async def next()``, and ``allocator.next()`` with its block reserved
    beforehand."""
    value = 0

    async def bare_next() -> int:
        nonlocal value
        value += 1
        return value

    best_bare = best_block = float("inf")
    for _ in range(rounds):  # the best of interleaved rounds, against the machine's noise
        started = time.perf_counter()
        for _ in range(calls):
            await bare_next()
        best_bare = min(best_bare, (time.perf_counter() - started) / calls)
        await allocator.prefetch()
        started = time.perf_counter()
        for _ in range(calls):
            await allocator.next()
        best_block = min(best_block, (time.perf_counter() - started) / calls)
    return best_bare, best_block


async def measure_hot_path(endpoint_url: str, calls: int) -> dict[str, Any]:
    """:func:`hot_path` on a fresh table: ns per call, and the ratio."""
    table = f"aioseq-bench-hot-{uuid.uuid4().hex[:8]}"
    async with aioseq.DynamoStore.open(table=table, endpoint_url=endpoint_url) as store:
        await store.create_table()
        try:
            size = calls * 2  # every round's calls are served from the one block
            allocator = store.block_allocator(
                "hot", block_size=size, max_block_size=size, target_refill_interval_secs=None
            )
            bare, from_block = await hot_path(allocator, calls)
            await allocator.aclose()
        finally:
            await store.delete_table()
    return {
        "calls": calls,
        "bare_next_ns": round(bare * 1e9),
        "allocator_next_ns": round(from_block * 1e9),
        "ratio": round(from_block / bare, 2),
    }
