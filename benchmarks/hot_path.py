"""The cost of a ``BlockAllocator.next()`` served from a block, against a bare in-memory
``async def next()``: what the allocator adds to the event loop's own cost when no request is
needed. Part of ``python -m benchmarks`` and ``python -m benchmarks.guard``;
``python -m benchmarks.hot_path`` prices each piece of the fast path (no server)."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import time
import uuid
from _thread import get_ident
from collections import deque
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

import aioseq

__all__ = ["floor", "hot_path", "measure_hot_path"]


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


# --- what each piece of the fast path costs ---------------------------------------------------


class _Floor:
    """Stand-ins for ``BlockAllocator.next()``'s fast path, piece by piece (slotted, as the
    allocator is), to price each piece against a bare ``async def``."""

    __slots__ = ("_base", "_end", "_next", "_thread", "_waiting", "loop", "stride")

    def __init__(self, loop: Any) -> None:
        self._next, self._end, self._base, self.stride = 1, 1 << 62, 0, 1
        self._thread, self._waiting, self.loop = get_ident(), deque[int](), loop

    async def minimal(self) -> int:  # a method that reads two slots and writes one
        k = self._next
        if k < self._end:
            self._next = k + 1
            return k
        raise RuntimeError

    async def thread_checked(self) -> int:  # + the thread check
        k = self._next
        if k < self._end and get_ident() == self._thread:
            self._next = k + 1
            return k
        raise RuntimeError

    async def loop_checked(self) -> int:  # + the bound loop's thread and the waiting queue
        k = self._next
        if k < self._end and self.loop._thread_id == get_ident() and not self._waiting:
            self._next = k + 1
            return self._base + k * self.stride
        raise RuntimeError


async def floor(calls: int = 20_000, rounds: int = 100) -> dict[str, float]:
    """ns per call of each piece of the fast path, a bare ``async def`` and a
    ``BlockAllocator.next()`` (its block installed by hand: no request), best of ``rounds``
    interleaved rounds of ``calls`` calls."""
    loop = asyncio.get_running_loop()
    pieces = _Floor(loop)
    async with aioseq.DynamoStore.open(
        table="aioseq-bench-floor", endpoint_url="http://127.0.0.1:9"
    ) as store:
        allocator = aioseq.BlockAllocator(store, "floor", target_refill_interval_secs=None)
        allocator._bind()
        allocator._add_block(1, 1 << 62)  # no request: the block handed over by hand
        value = 0

        async def bare() -> int:
            nonlocal value
            value += 1
            return value

        rows: dict[str, Callable[[], Awaitable[int]]] = {
            "bare async def": bare,
            "method, slots, no check": pieces.minimal,
            "+ thread check": pieces.thread_checked,
            "+ loop's thread, waiting queue": pieces.loop_checked,
            "BlockAllocator.next()": allocator.next,
        }
        best = dict.fromkeys(rows, float("inf"))
        for _ in range(rounds):
            for name, call in rows.items():
                started = time.perf_counter()
                for _ in range(calls):
                    await call()
                best[name] = min(best[name], (time.perf_counter() - started) / calls)
        allocator.abandon()
    return {name: round(secs * 1e9, 1) for name, secs in best.items()}


#: What each row of :func:`floor` runs, for the docs' table.
PIECES = {
    "bare async def": "bare `async def` (a closure adding 1 to a `nonlocal`)",
    "method, slots, no check": "a method on a slotted object: `k < end`, store `k + 1`, return `k`",
    "+ thread check": "+ the thread check (`get_ident()` against a slot)",
    "+ loop's thread, waiting queue": "+ the bound loop's `_thread_id` and the waiting queue, the"
    " number's arithmetic",
    "BlockAllocator.next()": "`BlockAllocator.next()` itself",
}


def table(report: dict[str, Any]) -> str:
    """A saved run (``--out``) as the docs' markdown table: ns per call and x a bare call."""
    found = report["ns_per_call"]
    bare = found["bare async def"]
    lines = ["| `next()` body | ns | × bare |", "|---|---|---|"]
    lines += [f"| {PIECES[name]} | {ns:.1f} | {ns / bare:.2f} |" for name, ns in found.items()]
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> None:
    """``python -m benchmarks.hot_path [--out DIR]``: :func:`floor`'s table (and, with
    ``--out``, DIR/hot_path.json)."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.hot_path", description=__doc__)
    parser.add_argument("--out", type=Path, help="also write OUT/hot_path.json")
    args = parser.parse_args(argv)
    load = os.getloadavg()
    found = asyncio.run(floor())
    bare = found["bare async def"]
    print(f"python -m benchmarks.hot_path (load {load[0]:.1f})")
    for name, ns in found.items():
        print(f"{name:34} {ns:7.1f} ns {ns / bare:6.2f}x")
    if args.out is not None:
        report = {
            "command": "python -m benchmarks.hot_path",
            "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            "load_average": [round(x, 2) for x in load],
            "ns_per_call": found,
        }
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "hot_path.json").write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
