"""The queue's logic without a server: the time between writes, leases, stale batches, strays,
and leaving, against a store that answers the queue's requests as DynamoDB would."""

from __future__ import annotations

import asyncio
import re
from typing import Any

import pytest

from aioseq._retry import RetryEngine
from aioseq.config import TURN_ATTRIBUTE, RetryPolicy, TableSpec
from aioseq.errors import ConditionFailed, Throttled
from aioseq.strategies._recent_writes import CounterState
from aioseq.strategies._turn import (
    FIRST_ROUND_TRIP_SECS,
    GIVE_UP_GRACE_SECS,
    LEASE_ROUND_TRIPS,
    MIN_LEASE_SECS,
    Turn,
    entry,
    entry_lease_secs,
    entry_size,
)
from aioseq.testing import ManualClock


def test_the_time_between_writes_follows_the_writes_seen() -> None:
    clock = ManualClock(100.0)
    turn = Turn(store=None, key="c", clock=clock)  # type: ignore[arg-type]  # (no request)
    turn.sent(0.02)  # its own writes take ~20 ms
    turn.observed(10)
    for _ in range(40):  # 4 writes every 20 ms: one write every 5 ms
        clock.advance(0.02)
        turn.observed(turn._last_writes[0] + 4)  # type: ignore[index]
    assert turn._interval == pytest.approx(0.005, rel=0.05)
    turn._position = 3  # 3 writers ahead: about 2.5 intervals, not 3 round trips
    assert turn.pause_secs() == pytest.approx(2.5 * 0.005, rel=0.05)


def test_a_pause_in_the_traffic_is_not_a_slow_counter() -> None:
    clock = ManualClock(100.0)
    turn = Turn(store=None, key="c", clock=clock)  # type: ignore[arg-type]
    turn.observed(10)
    clock.advance(60.0)  # a minute with no writes, then one
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
    turn = Turn(store=None, key="c", clock=ManualClock(0.0))  # type: ignore[arg-type]
    assert turn.lease_secs() == MIN_LEASE_SECS  # near writers: the floor
    for secs in (3.0, 1.2, 1.3):  # a slow connection set-up first, then a far writer's
        turn.sent(secs)
    assert turn.lease_secs() == pytest.approx(LEASE_ROUND_TRIPS * 1.2)
    # Others honour the lease it wrote, and their own round trips too.
    assert Turn(None, "c", ManualClock(0.0)).stale_after(entry("far", 1, 4.8)) == 4.8  # type: ignore[arg-type]


def test_once_the_head_is_stale_every_entry_watched_as_long_goes_with_it() -> None:
    clock = ManualClock(100.0)
    turn = Turn(store=None, key="c", clock=clock)  # type: ignore[arg-type]
    gone = [entry(f"gone{i}", 1, 0.5) for i in range(3)]
    far = entry("far", 1, 5.0)
    queue = (*gone[:2], far, gone[2], "mine:1:500")
    turn._mine = "mine:1:500"
    now = turn._watch(queue)
    assert turn._removable(queue, now) == []  # just seen: nobody is stale yet
    clock.advance(0.4)
    assert turn._removable(queue, turn._watch(queue)) == []
    clock.advance(0.2)  # 0.6 s at the head, past its 0.5 s lease: the head and those watched as
    # long go in one request; the far writer's entry keeps its longer lease.
    assert turn._removable(queue, turn._watch(queue)) == [
        (0, gone[0]),
        (1, gone[1]),
        (3, gone[2]),
    ]


def test_a_stray_is_removed_wherever_it_stands() -> None:
    clock = ManualClock(100.0)
    turn = Turn(store=None, key="c", clock=clock)  # type: ignore[arg-type]
    turn._strays["lost:1:500"] = clock.now()  # an enqueue that was cancelled
    queue = ("other:1:500", "lost:1:500")
    assert turn._removable(queue, turn._watch(queue)) == [(1, "lost:1:500")]


class QueueStore:
    """A store whose counter item holds only the writers' queue, answering the requests a
    `Turn` leaving sends as DynamoDB would (a consistent ``GetItem``; ``UpdateItem``
    ``REMOVE #turn[i], ...`` under ``#turn[i] = :e...``, ``ALL_NEW`` or ``ALL_OLD`` on a
    failed condition); ``fail`` throttles every request."""

    def __init__(self, *entries: str) -> None:
        self.queue = list(entries)
        self.table = TableSpec()
        self.clock = ManualClock()  # the grace and the backoffs take no real time
        self.retry = RetryEngine(
            RetryPolicy(max_attempts=3, initial_backoff_secs=0.001), clock=self.clock
        )
        self.fail = False
        self.sent: list[str] = []
        self.reading = asyncio.Event()  # set when a GetItem arrives
        self.gate: asyncio.Event | None = None  # if set, a GetItem waits for it

    def counter_item_key(self, key: str) -> dict[str, Any]:
        return {"pk": {"S": key}}

    def _item(self) -> dict[str, Any]:
        return {TURN_ATTRIBUTE: {"L": [{"S": e} for e in self.queue]}}

    async def send_once(self, operation: str, **params: Any) -> dict[str, Any]:
        self.sent.append(operation)
        await asyncio.sleep(0)
        if self.fail:
            raise Throttled("slow down", code="ThrottlingException", operation=operation)
        if operation == "get_item":
            self.reading.set()
            if self.gate is not None:
                await self.gate.wait()
            return {"Item": self._item()}
        indices = [int(i) for i in re.findall(r"#turn\[(\d+)\]", params["UpdateExpression"])]
        wanted = [v["S"] for v in params["ExpressionAttributeValues"].values()]
        pairs = zip(indices, wanted, strict=True)
        if any(i >= len(self.queue) or self.queue[i] != e for i, e in pairs):
            raise ConditionFailed("no", code="ConditionalCheckFailedException", item=self._item())
        for i in sorted(indices, reverse=True):
            del self.queue[i]
        return {"Attributes": self._item()}


async def let_the_others_run() -> None:
    """Turns of the loop enough for a give-up's grace, read and removal to end: on the
    store's `ManualClock` none of them waits on real time, so the count bounds them."""
    for _ in range(100):
        await asyncio.sleep(0)


async def test_a_writer_with_nobody_to_write_for_leaves_after_the_grace() -> None:
    store = QueueStore("other:1:500", "mine:1:500", "behind:1:500")
    turn = Turn(store, "c")  # type: ignore[arg-type]
    turn._mine = "mine:1:500"
    turn.give_up(lambda: False)
    assert store.queue[1] == "mine:1:500"  # not on the caller's path
    await let_the_others_run()
    assert store.clock.slept[0] == GIVE_UP_GRACE_SECS
    assert store.queue == ["other:1:500", "behind:1:500"]  # found by a read, then removed
    assert turn.entry is None and not turn.holds


async def test_a_writer_wanted_again_within_the_grace_keeps_its_place() -> None:
    store = QueueStore("other:1:500", "mine:1:500")
    turn = Turn(store, "c")  # type: ignore[arg-type]
    turn._mine = "mine:1:500"
    turn.give_up(lambda: True)  # a caller called again at once
    await let_the_others_run()
    assert store.clock.slept == [GIVE_UP_GRACE_SECS]
    assert store.queue == ["other:1:500", "mine:1:500"] and turn.entry == "mine:1:500"
    assert store.sent == []


async def test_a_give_up_asked_while_a_leave_runs_is_served_after_it() -> None:
    store = QueueStore("first:1:500", "x:1:500", "second:1:500")
    turn = Turn(store, "c")  # type: ignore[arg-type]
    store.gate = asyncio.Event()
    turn._mine = "first:1:500"
    turn.give_up(lambda: False)
    await store.reading.wait()  # the leave is under way, its read not answered yet
    turn._mine = "second:1:500"  # a new commit enqueued meanwhile; its callers left too
    turn.give_up(lambda: False)
    store.gate.set()
    await let_the_others_run()
    assert store.queue == ["x:1:500"]


async def test_leaving_raises_nothing_and_a_closed_writer_never_queues_again() -> None:
    store = QueueStore("other:1:500", "mine:1:500")
    store.fail = True  # every request throttled: the retry policy runs out
    turn = Turn(store, "c")  # type: ignore[arg-type]
    turn._mine = "mine:1:500"
    await turn.leave()  # no RetriesExhausted: the entry goes stale for the others
    assert not turn.enabled  # a write of it still on its way writes past the queue
    state = CounterState(value=5, exists=True, writes=5, turns=tuple(store.queue))
    assert await turn.ready(state, 1, lambda item: state) is state  # no enqueue
