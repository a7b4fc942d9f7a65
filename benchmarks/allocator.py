"""Block allocator vs the plain atomic counter, in one run on one server.

    scripts/in-loopback-netns .venv/bin/python -m benchmarks.allocator            # DynamoDB Local
    .venv/bin/python -m benchmarks.allocator --endpoint-url http://127.0.0.1:8000

Reports, side by side: numbers/s through the allocator and through ``AtomicCounter.next()``
with the same concurrent callers; DynamoDB requests per 1,000 numbers against ``1000 / B + 1``;
and the cost of a ``next()`` served from a block against a bare in-memory ``async def next()``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import time
from collections.abc import Awaitable, Callable, Iterator

import aioseq
from aioseq.testing import DynamoDBLocal
from benchmarks._report import header


@contextlib.contextmanager
def server(endpoint_url: str | None) -> Iterator[str]:
    if endpoint_url:
        yield endpoint_url
        return
    with DynamoDBLocal() as local:
        yield local.endpoint_url


async def take(next_number: Callable[[], Awaitable[int]], count: int, callers: int) -> float:
    """Seconds for ``callers`` tasks to take ``count`` numbers; checks they are distinct."""
    numbers: list[int] = []

    async def caller(share: int) -> None:
        for _ in range(share):
            numbers.append(await next_number())

    started = time.perf_counter()
    await asyncio.gather(*(caller(count // callers) for _ in range(callers)))
    elapsed = time.perf_counter() - started
    assert len(set(numbers)) == len(numbers) == count // callers * callers, "duplicates!"
    return elapsed


async def hot_path(allocator: aioseq.BlockAllocator, calls: int) -> tuple[float, float]:
    """Seconds per call: bare in-memory ``async def next()`` vs allocator.next() from a block."""
    value = 0

    async def bare_next() -> int:
        nonlocal value
        value += 1
        return value

    best_bare = best_block = float("inf")
    for _ in range(5):  # best of 5, interleaved, against the machine's noise
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


async def main(args: argparse.Namespace, endpoint: str) -> dict[str, object]:
    table = f"aioseq-bench-{int(time.time())}"
    async with aioseq.DynamoStore.open(table=table, endpoint_url=endpoint) as store:
        await store.create_table()
        try:
            atomic = store.atomic_counter("atomic")
            atomic_secs = await take(atomic.next, args.atomic_count, args.callers)
            atomic_requests = store.requests["UpdateItem"]

            block = args.block_size
            allocator = store.block_allocator(
                "allocator", block_size=block, target_refill_interval_secs=None
            )
            allocator_secs = await take(allocator.next, args.count, args.callers)
            allocator_requests = store.requests["UpdateItem"] - atomic_requests

            size = args.hot_calls * 2
            hot = store.block_allocator(
                "hot", block_size=size, max_block_size=size, target_refill_interval_secs=None
            )
            bare, from_block = await hot_path(hot, args.hot_calls)
        finally:
            await store.delete_table()

    atomic_rate = args.atomic_count / atomic_secs
    allocator_rate = args.count / allocator_secs
    return {
        **header(endpoint),
        "callers": args.callers,
        "block_size": block,
        "atomic_numbers": args.atomic_count,
        "atomic_numbers_per_s": round(atomic_rate),
        "allocator_numbers": args.count,
        "allocator_numbers_per_s": round(allocator_rate),
        "speedup": round(allocator_rate / atomic_rate, 1),
        "allocator_requests_per_1000": round(allocator_requests * 1000 / args.count, 2),
        "bound_requests_per_1000": round(1000 / block + 1, 2),
        "bare_next_ns": round(bare * 1e9),
        "block_next_ns": round(from_block * 1e9),
        "hot_path_ratio": round(from_block / bare, 2),
    }


if __name__ == "__main__":
    parser = argparse.ArgumentParser(prog="python -m benchmarks.allocator", description=__doc__)
    parser.add_argument("--endpoint-url", help="default: start DynamoDB Local (needs a netns)")
    parser.add_argument("--count", type=int, default=100_000, help="allocator numbers")
    parser.add_argument("--atomic-count", type=int, default=10_000, help="atomic numbers")
    parser.add_argument("--callers", type=int, default=1_000)
    parser.add_argument("--block-size", type=int, default=1_000)
    parser.add_argument("--hot-calls", type=int, default=200_000)
    arguments = parser.parse_args()
    with server(arguments.endpoint_url) as url:
        report = asyncio.run(main(arguments, url))
    print(json.dumps(report, indent=2))
