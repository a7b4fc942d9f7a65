"""The queue's pure parts: the time between writes a writer estimates. No server."""

from __future__ import annotations

import pytest
from checks import Clock

from aioseq.strategies._turn import FIRST_ROUND_TRIP_SECS, Turn


def test_the_time_between_writes_follows_the_writes_seen() -> None:
    clock = Clock(100.0)
    turn = Turn(store=None, key="c", clock=clock)  # type: ignore[arg-type]  # (no request)
    turn.sent(0.02)  # its own writes take ~20 ms
    turn.observed(10)
    for _ in range(40):  # 4 writes every 20 ms: one write every 5 ms
        clock.now += 0.02
        turn.observed(turn._last_writes[0] + 4)  # type: ignore[index]
    assert turn._interval == pytest.approx(0.005, rel=0.05)
    turn._position = 3  # 3 writers ahead: about 2.5 intervals, not 3 round trips
    assert turn.pause_secs() == pytest.approx(2.5 * 0.005, rel=0.05)


def test_a_pause_in_the_traffic_is_not_a_slow_counter() -> None:
    clock = Clock(100.0)
    turn = Turn(store=None, key="c", clock=clock)  # type: ignore[arg-type]
    turn.observed(10)
    clock.now += 60.0  # a minute with no writes, then one
    turn.observed(11)
    # One sample, capped at two round trips: the estimate moves by an eighth of that only.
    assert turn._interval <= FIRST_ROUND_TRIP_SECS + 2 * turn.round_trip_secs / 8
