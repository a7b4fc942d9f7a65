"""The one clock a [`DynamoStore`][aioseq.DynamoStore] and everything made on it read and wait
on: retry deadlines and backoffs, the table's wait, the close's deadline, idle eviction, the
allocator's refill rate, the counter queue's leases, pace and grace. Pass another to the
store to move time in tests ([`aioseq.testing.ManualClock`][aioseq.testing.ManualClock]);
aiolimiter reads its time from the loop the same way.
"""

from __future__ import annotations

import asyncio
import time
from typing import Protocol

__all__ = ["Clock", "LoopClock"]


class Clock(Protocol):
    """Seconds that only go forward, and a way to wait for them to pass."""

    def now(self) -> float:
        """The time now, in seconds (monotonic; the origin means nothing)."""

    async def sleep(self, secs: float) -> None:
        """Return once ``secs`` seconds have passed (at once for ``secs <= 0``)."""


class LoopClock:
    """The event loop's clock (the default): ``time.monotonic()``, the clock asyncio's loops
    read for ``loop.time()``, and ``asyncio.sleep()``."""

    __slots__ = ()

    #: (The function itself: reading the time costs the hot path no Python call.)
    now = staticmethod(time.monotonic)

    async def sleep(self, secs: float) -> None:
        await asyncio.sleep(secs)

    def __repr__(self) -> str:
        return "LoopClock()"
