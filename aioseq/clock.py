"""The one clock a [`DynamoStore`][aioseq.DynamoStore] and everything made on it read and wait
on: retry deadlines and backoffs, the table's wait, the close's deadline, idle eviction, the
allocator's refill rate, the counter queue's leases, pace and grace. Pass another to the
store to move time in tests ([`aioseq.testing.ManualClock`][aioseq.testing.ManualClock]);
aiolimiter reads its time from the loop the same way.
"""

from __future__ import annotations

import asyncio
from typing import Protocol

__all__ = ["Clock", "LoopClock"]


class Clock(Protocol):
    """Seconds that only go forward, and a way to wait for them to pass."""

    def now(self) -> float:
        """The time now, in seconds (monotonic; the origin means nothing)."""

    async def sleep(self, secs: float) -> None:
        """Return once ``secs`` seconds have passed (at once for ``secs <= 0``)."""


class LoopClock:
    """The running event loop's clock (the default): ``loop.time()`` and ``asyncio.sleep()``.
    ``now()`` needs a running loop (it raises ``RuntimeError`` outside one)."""

    __slots__ = ()

    def now(self) -> float:
        return asyncio.get_running_loop().time()

    async def sleep(self, secs: float) -> None:
        await asyncio.sleep(secs)

    def __repr__(self) -> str:
        return "LoopClock()"
