"""The queue's pure parts: the time between writes a writer estimates. No server."""

from __future__ import annotations

import pytest
from checks import Clock

from aioseq.strategies._turn import (
    FIRST_ROUND_TRIP_SECS,
    LEASE_ROUND_TRIPS,
    TURN_TIMEOUT_SECS,
    Turn,
    entry,
    entry_lease_secs,
    entry_size,
)


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


def test_an_entry_carries_its_size_and_lease() -> None:
    queued = entry("tok", 8, 1.2)
    assert queued == "tok:8:1200"
    assert (entry_size(queued), entry_lease_secs(queued)) == (8, 1.2)
    assert (entry_size("tok:3"), entry_lease_secs("tok:3")) == (3, 0.0)  # no lease written
    assert (entry_size("not-aioseqs"), entry_lease_secs("x:y:z")) == (0, 0.0)


def test_a_lease_is_a_few_of_the_fastest_recent_round_trips() -> None:
    turn = Turn(store=None, key="c", clock=Clock(0.0))  # type: ignore[arg-type]
    assert turn.lease_secs() == TURN_TIMEOUT_SECS  # near writers: the floor
    for secs in (3.0, 1.2, 1.3):  # a slow connection set-up first, then a far writer's
        turn.sent(secs)
    assert turn.lease_secs() == pytest.approx(LEASE_ROUND_TRIPS * 1.2)
    # Others honour the lease it wrote, and their own round trips too.
    assert Turn(None, "c", Clock(0.0)).stale_after(entry("far", 1, 4.8)) == 4.8  # type: ignore[arg-type]


def test_once_the_head_is_stale_every_entry_watched_as_long_goes_with_it() -> None:
    clock = Clock(100.0)
    turn = Turn(store=None, key="c", clock=clock)  # type: ignore[arg-type]
    gone = [entry(f"gone{i}", 1, 0.5) for i in range(3)]
    far = entry("far", 1, 5.0)
    queue = (*gone[:2], far, gone[2], "mine:1:500")
    turn._mine = "mine:1:500"
    now = turn._watch(queue)
    assert turn._removable(queue, now) == []  # just seen: nobody is stale yet
    clock.now += 0.4
    assert turn._removable(queue, turn._watch(queue)) == []
    clock.now += 0.2  # 0.6 s at the head, past its 0.5 s lease: the head and those watched as
    # long go in one request; the far writer's entry keeps its longer lease.
    assert turn._removable(queue, turn._watch(queue)) == [
        (0, gone[0]),
        (1, gone[1]),
        (3, gone[2]),
    ]


def test_a_stray_is_removed_wherever_it_stands() -> None:
    clock = Clock(100.0)
    turn = Turn(store=None, key="c", clock=clock)  # type: ignore[arg-type]
    turn._strays["lost:1:500"] = clock.now  # an enqueue that was cancelled
    queue = ("other:1:500", "lost:1:500")
    assert turn._removable(queue, turn._watch(queue)) == [(1, "lost:1:500")]
