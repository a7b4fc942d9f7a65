"""A [`Clock`][aioseq.clock.Clock] that tests move by hand."""

from __future__ import annotations

import asyncio

__all__ = ["ManualClock"]


class ManualClock:
    """Time that passes only when told: `advance()`, or a `sleep()`, which moves the clock
    to its end at once (after letting other tasks run), so retries, backoffs, leases and idle
    sweeps take no real time. Pass it to the store:
    ``DynamoStore(transport=FakeDynamoDB(), clock=ManualClock(), idle_secs=None)``: a task
    that sleeps in a loop, such as the store's idle sweeper, would race the clock ahead (sweep
    by hand instead). A Region-scoped counter object's readings of its scope record move it
    on by a few minutes, once.

    Parameters:
        now: the time to start at, in seconds.

    Attributes:
        slept: every sleep's seconds, in order.
    """

    def __init__(self, now: float = 0.0) -> None:
        self._now = now
        self.slept: list[float] = []

    def now(self) -> float:
        return self._now

    def advance(self, secs: float) -> None:
        """Move the clock ``secs`` seconds forward (``secs >= 0``)."""
        if secs < 0:
            raise ValueError(f"a clock only goes forward: {secs!r}")
        self._now += secs

    async def sleep(self, secs: float) -> None:
        self.slept.append(secs)
        await asyncio.sleep(0)  # other tasks run, as they would during a real wait
        self._now += max(0.0, secs)

    def __repr__(self) -> str:
        return f"ManualClock(now={self._now!r})"
