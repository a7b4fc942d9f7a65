"""The writers' queue on a counter item, one writer's side (`Turn`), against FakeDynamoDB: its
real ``UpdateItem`` requests (enqueue with ``list_append``, ``REMOVE #turn[i]`` under conditions)
on a counter item whose queue the test writes, with time moved by hand. Checked: the verdicts,
the positions and predictions, what stands in the queue after each step, and what was sent."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
import pytest_asyncio

from aioseq import DynamoStore, RetryPolicy, Throttled
from aioseq._retry import Verdict
from aioseq.config import MAX_NUMBER, TURN_ATTRIBUTE, WRITES_ATTRIBUTE
from aioseq.errors import ConnectionFailed
from aioseq.numbering import numbering_for
from aioseq.strategies._counter_item import TrackedCounterItem
from aioseq.strategies._recent_writes import CounterState
from aioseq.strategies._turn import (
    FIRST_ROUND_TRIP_SECS,
    LINGERING_WAITS,
    MIN_LEASE_SECS,
    STRAY_SECS,
    Turn,
    TurnHeld,
    entry_lease_secs,
    entry_size,
)
from aioseq.testing import FakeDynamoDB, ManualClock

KEY = "c"
NO_WAIT = RetryPolicy(max_attempts=8, initial_backoff_secs=0.0001, max_backoff_secs=0.0001)


@pytest_asyncio.fixture
async def store(fake: FakeDynamoDB) -> AsyncIterator[DynamoStore]:
    async with DynamoStore(transport=fake, retry_policy=NO_WAIT) as made:
        await made.create_table()
        yield made


async def write_item(store: DynamoStore, *queue: str, value: int = 10, writes: int = 10) -> None:
    """The counter item with ``value``, ``writes`` and the writers' ``queue``."""
    item: dict[str, Any] = {
        **store.counter_item_key(KEY),
        store.table.value_attribute: {"N": str(value)},
        WRITES_ATTRIBUTE: {"N": str(writes)},
    }
    if queue:
        item[TURN_ATTRIBUTE] = {"L": [{"S": e} for e in queue]}
    await store.send_once("put_item", TableName=store.table.name, Item=item)


async def read_state(store: DynamoStore) -> CounterState:
    response = await store.send_once(
        "get_item", TableName=store.table.name, Key=store.counter_item_key(KEY)
    )
    return saw_on(store)(response.get("Item") or {})


def saw_on(store: DynamoStore) -> Callable[[dict[str, Any]], CounterState]:
    return lambda item: CounterState.of(item or None, key=KEY, table=store.table)


async def queue_of(store: DynamoStore) -> tuple[str, ...]:
    return (await read_state(store)).turns


def sent_since(fake: FakeDynamoDB, start: int) -> list[str]:
    return [r.operation for r in fake.sent[start:]]


# --- lost races --------------------------------------------------------------------------------


def test_the_verdict_on_a_lost_race_follows_the_writers_place() -> None:
    turn = Turn(store=None, key=KEY, clock=ManualClock(0.0))  # type: ignore[arg-type]  # (no request)
    state = CounterState(value=5, exists=True, writes=5, turns=("a:1:500", "b:1:500"))
    assert turn.lost_race(None) is Verdict.RETRY  # nothing came back: back off
    # Not in the queue: enqueue before the next write, which follows at once.
    assert turn.lost_race(state) is Verdict.RETRY_NOW
    turn._mine = "b:1:500"  # second: wait for the head
    assert turn.lost_race(state) is Verdict.YIELD
    assert turn.pause_secs() == pytest.approx(0.5 * FIRST_ROUND_TRIP_SECS)
    turn._mine = "a:1:500"  # the head, another behind: write again now
    assert turn.lost_race(state) is Verdict.RETRY_NOW
    turn.enabled = False  # a writer outside the queue backs off as before
    assert turn.lost_race(state) is Verdict.RETRY


def test_a_writer_that_lingers_behind_one_head_pauses_longer_until_it_goes_stale() -> None:
    clock = ManualClock(100.0)
    turn = Turn(store=None, key=KEY, clock=clock)  # type: ignore[arg-type]
    queue = ("slow:1:500", "mine:1:500")
    turn._mine, turn._position = "mine:1:500", 1
    turn._watch(queue)
    base = turn.pause_secs()
    assert base == pytest.approx(0.5 * FIRST_ROUND_TRIP_SECS)
    turn._waits = LINGERING_WAITS + 1
    assert turn.pause_secs() == pytest.approx(2 * base)  # doubles past the lingering waits
    turn._waits = LINGERING_WAITS + 16
    clock.advance(MIN_LEASE_SECS - 0.1)  # ~0.1 s left of the head's lease: no longer than that
    assert turn.pause_secs() == pytest.approx(0.1)
    clock.advance(1.0)  # past the lease: the usual pause, the head is removed on the next look
    assert turn.pause_secs() == pytest.approx(base)


# --- ready(): enqueue, wait, predict ------------------------------------------------------------


async def test_a_lone_writer_writes_without_the_queue(
    store: DynamoStore, fake: FakeDynamoDB
) -> None:
    await write_item(store)
    turn = Turn(store, KEY, clock=ManualClock(0.0))
    state = await read_state(store)
    start = len(fake.sent)
    assert await turn.ready(state, 1, saw_on(store)) is state
    assert sent_since(fake, start) == [] and turn.entry is None and not turn.predicting
    new = CounterState()  # no counter item yet: its first write creates it, no queue
    assert await turn.ready(new, 1, saw_on(store)) is new


async def test_a_writer_that_lost_a_race_enqueues_and_writes_first_when_alone(
    store: DynamoStore, fake: FakeDynamoDB
) -> None:
    await write_item(store)
    clock = ManualClock(0.0)
    turn = Turn(store, KEY, clock=clock)
    state = await read_state(store)
    assert turn.lost_race(state) is Verdict.RETRY_NOW
    start = len(fake.sent)
    ready = await turn.ready(state, 3, saw_on(store))
    assert sent_since(fake, start) == ["UpdateItem"]  # the enqueue, whose answer tells all
    mine = turn.entry
    assert mine is not None and ready.turns == (mine,) and ready.value == 10
    assert (entry_size(mine), entry_lease_secs(mine)) == (3, MIN_LEASE_SECS)
    assert await queue_of(store) == (mine,) and turn.limit() == 3 and turn.holds
    turn.committed(ready)  # its write required its entry at the head, and removed it
    assert turn.entry is None and turn.limit() is None


async def test_a_writer_behind_others_waits_then_writes_from_the_predicted_item(
    store: DynamoStore, fake: FakeDynamoDB
) -> None:
    await write_item(store, "a:2:500", "b:3:500", value=10, writes=10)
    turn = Turn(store, KEY, clock=ManualClock(0.0))
    state = await read_state(store)
    turn.lost_race(state)
    with pytest.raises(TurnHeld) as held:
        await turn.ready(state, 1, saw_on(store))
    assert held.value.position == 2 and "2 writers ahead" in str(held.value)
    mine = turn.entry
    assert await queue_of(store) == ("a:2:500", "b:3:500", mine)
    assert turn.pause_secs() == pytest.approx(1.5 * FIRST_ROUND_TRIP_SECS)
    # After its pause it writes at once, from the item as the writes ahead will leave it.
    start = len(fake.sent)
    predicted = await turn.ready(await read_state(store), 1, saw_on(store))
    assert turn.predicting and sent_since(fake, start) == ["GetItem"]  # (the test's read)
    assert (predicted.value, predicted.writes, predicted.turns) == (15, 12, (mine,))
    assert predicted.tokens is not None  # the ring's slots are not needed to write


async def test_a_prediction_not_wanted_or_past_max_value_is_refused_for_a_read(
    store: DynamoStore, fake: FakeDynamoDB
) -> None:
    await write_item(store, "a:2:500", "b:3:500", value=10, writes=10)
    turn = Turn(store, KEY, clock=ManualClock(0.0))
    state = await read_state(store)
    turn.lost_race(state)
    for refuse in ({"predict": False}, {"max_value": 15}):  # a PutItem; 15 + 1 past 15
        with pytest.raises(TurnHeld) as held:
            await turn.ready(state, 1, saw_on(store), **refuse)  # (enqueues the first time)
        assert not held.value.read_first  # its pause behind the two ahead
        state = await read_state(store)
        start = len(fake.sent)
        with pytest.raises(TurnHeld) as held:
            await turn.ready(state, 1, saw_on(store), **refuse)
        assert held.value.read_first and held.value.position == 3  # read, then write from it
        assert sent_since(fake, start) == [] and not turn.predicting
    with pytest.raises(TurnHeld):
        await turn.ready(state, 1, saw_on(store), max_value=16)
    predicted = await turn.ready(state, 1, saw_on(store), max_value=16)  # 15 + 1: within
    assert turn.predicting and predicted.value == 15


async def test_the_counter_item_reads_again_after_a_refused_prediction(
    store: DynamoStore, fake: FakeDynamoDB
) -> None:
    """`TrackedCounterItem` with its `Turn` handed in: a prediction the write may not use
    (``predict=False``) makes the item forget what it saw, so the next look reads it."""
    await write_item(store, "a:2:500", value=10, writes=10)
    turn = Turn(store, KEY, clock=ManualClock(0.0))
    item = TrackedCounterItem(store, KEY, numbering_for(), MAX_NUMBER, turn)
    assert item.lost_race() is Verdict.RETRY  # nothing seen yet: back off
    item.saw(
        (
            await store.send_once(
                "get_item", TableName=store.table.name, Key=store.counter_item_key(KEY)
            )
        )["Item"]
    )
    assert item.lost_race() is Verdict.RETRY_NOW  # behind "a": enqueue, then write
    with pytest.raises(TurnHeld):
        await item.ready(1, predict=False)  # enqueued behind "a": its pause
    start = len(fake.sent)
    with pytest.raises(TurnHeld) as held:
        await item.ready(1, predict=False)
    assert held.value.read_first and sent_since(fake, start) == []
    await write_item(store, str(turn.entry), value=12, writes=11)  # "a" wrote meanwhile
    ready = await item.ready(1, predict=False)  # read, at the head: writes from the item
    assert sent_since(fake, start) == ["PutItem", "GetItem"]  # (the test's put), the read
    assert (ready.value, ready.turns) == (12, (turn.entry,)) and turn.limit() == 1


async def test_a_stale_head_is_removed_and_the_writer_moves_up(
    store: DynamoStore, fake: FakeDynamoDB
) -> None:
    clock = ManualClock(100.0)
    turn = Turn(store, KEY, clock=clock)
    await write_item(store, "gone:1:500", "mine:1:500", "behind:1:500")
    turn._mine = "mine:1:500"
    with pytest.raises(TurnHeld):
        await turn.ready(await read_state(store), 1, saw_on(store))  # first seen: waits
    clock.advance(MIN_LEASE_SECS + 0.1)  # the head stood past its lease: its writer vanished
    start = len(fake.sent)
    state = await turn.ready(await read_state(store), 1, saw_on(store))
    assert sent_since(fake, start) == ["GetItem", "UpdateItem"]  # (the read), the REMOVE
    assert state.turns == ("mine:1:500", "behind:1:500") and not turn.predicting
    assert await queue_of(store) == ("mine:1:500", "behind:1:500")


async def test_a_removal_the_queue_moved_under_is_told_the_queue_as_it_is(
    store: DynamoStore,
) -> None:
    clock = ManualClock(100.0)
    turn = Turn(store, KEY, clock=clock)
    await write_item(store, "gone:1:500", "mine:1:500")
    turn._mine = "mine:1:500"
    seen = await read_state(store)
    with pytest.raises(TurnHeld):
        await turn.ready(seen, 1, saw_on(store))
    clock.advance(MIN_LEASE_SECS + 0.1)
    await write_item(store, "mine:1:500")  # the head wrote meanwhile: the removal fails
    state = await turn.ready(seen, 1, saw_on(store))  # from the old view
    assert state.turns == ("mine:1:500",)  # the failed condition's ALL_OLD item
    assert await queue_of(store) == ("mine:1:500",)


async def test_an_entry_removed_by_others_is_a_stray_and_the_writer_enqueues_again(
    store: DynamoStore,
) -> None:
    clock = ManualClock(100.0)
    turn = Turn(store, KEY, clock=clock)
    await write_item(store, "head:1:500")
    turn._mine = "lost:1:500"  # taken out as stale while this writer was away
    with pytest.raises(TurnHeld):
        await turn.ready(await read_state(store), 1, saw_on(store))
    mine = turn.entry
    assert mine not in (None, "lost:1:500") and turn._strays.keys() == {"lost:1:500"}
    assert await queue_of(store) == ("head:1:500", mine)
    # The lost entry's enqueue arrives late: the writer's next look (after its pause) takes
    # it out, then writes from the prediction.
    await write_item(store, "head:1:500", str(mine), "lost:1:500")
    predicted = await turn.ready(await read_state(store), 1, saw_on(store))
    assert turn.predicting and predicted.turns == (mine,) and predicted.value == 11
    assert await queue_of(store) == ("head:1:500", mine) and not turn._strays
    # A stray that never shows up is forgotten after STRAY_SECS.
    turn._strays["never:1:500"] = clock.now()
    clock.advance(STRAY_SECS + 1)
    turn._watch(("head:1:500", str(mine)))
    assert not turn._strays


async def test_an_enqueue_on_a_counter_item_that_went_away_leaves_the_queue_alone(
    store: DynamoStore, fake: FakeDynamoDB
) -> None:
    await write_item(store)
    turn = Turn(store, KEY, clock=ManualClock(0.0))
    state = await read_state(store)
    turn.lost_race(state)
    await store.send_once(
        "delete_item", TableName=store.table.name, Key=store.counter_item_key(KEY)
    )
    ready = await turn.ready(state, 1, saw_on(store))  # the enqueue's condition fails
    assert not ready.exists and turn.entry is None and not turn.holds
    assert fake.items(store.table.name) == []  # the enqueue made no item


async def test_a_failed_enqueue_keeps_an_entry_only_if_it_may_have_been_applied(
    store: DynamoStore, fake: FakeDynamoDB
) -> None:
    await write_item(store, "head:1:500")
    turn = Turn(store, KEY, clock=ManualClock(0.0))
    state = await read_state(store)
    turn.lost_race(state)
    fake.inject("throttling", operation="UpdateItem")
    with pytest.raises(Throttled):
        await turn.ready(state, 1, saw_on(store))
    assert turn.entry is None and await queue_of(store) == ("head:1:500",)
    fake.inject("response-lost", operation="UpdateItem")  # applied, its answer lost
    with pytest.raises(ConnectionFailed):
        await turn.ready(state, 1, saw_on(store))
    mine = turn.entry
    assert mine is not None and await queue_of(store) == ("head:1:500", mine)
    with pytest.raises(TurnHeld) as held:  # its next look finds it where it stands
        await turn.ready(await read_state(store), 1, saw_on(store))
    assert held.value.position == 1 and turn.entry == mine


async def test_a_cancelled_enqueue_becomes_a_stray_the_writer_takes_out_on_leaving(
    store: DynamoStore, fake: FakeDynamoDB
) -> None:
    await write_item(store, "head:1:500")
    turn = Turn(store, KEY, clock=ManualClock(0.0))
    state = await read_state(store)
    turn.lost_race(state)
    enqueue = asyncio.create_task(turn.ready(state, 1, saw_on(store)))
    for _ in range(100):  # a few turns of the loop: the request on its way, then applied
        await asyncio.sleep(0)
        if fake.sent and fake.sent[-1].operation == "UpdateItem" and fake.sent[-1].applied:
            break
    enqueue.cancel()  # applied, its answer on its way back
    with pytest.raises(asyncio.CancelledError):
        await enqueue
    assert turn.entry is None and turn.holds  # a stray: maybe applied, nobody will use it
    stray = next(iter(turn._strays))
    assert await queue_of(store) == ("head:1:500", stray)
    await turn.leave(("head:1:500",))  # an old view without it: it reads, finds, removes
    assert await queue_of(store) == ("head:1:500",) and not turn.holds
    assert not turn.enabled


async def test_a_writer_holding_no_entry_gives_up_nothing(
    store: DynamoStore, fake: FakeDynamoDB
) -> None:
    await write_item(store, "head:1:500")
    turn = Turn(store, KEY, clock=ManualClock(0.0))
    start = len(fake.sent)
    turn.give_up(lambda: False)
    for _ in range(20):
        await asyncio.sleep(0)
    assert sent_since(fake, start) == [] and not turn.holds  # no task, no read


async def test_a_commit_uses_the_entry_and_times_the_write(store: DynamoStore) -> None:
    await write_item(store)
    turn = Turn(store, KEY, clock=ManualClock(0.0))
    state = await read_state(store)
    turn.lost_race(state)
    ready = await turn.ready(state, 2, saw_on(store))
    before = turn.round_trip_secs
    turn.committed(ready, 0.5)  # its write took 0.5 s
    assert turn.entry is None and turn.limit() is None
    assert turn.round_trip_secs == pytest.approx(before + (0.5 - before) / 8)


class LateEnqueues(FakeDynamoDB):
    """A fake whose enqueues (``list_append``) wait at `gate` on their way and reach the table
    even when their caller gave up meanwhile, as a request already on the wire does."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = asyncio.Event()
        self.on_the_way = asyncio.Event()
        self.read = asyncio.Event()  # a GetItem answered
        self.arrivals: list[asyncio.Future[dict[str, Any]]] = []

    async def send(self, operation: str, params: dict[str, Any]) -> dict[str, Any]:
        if "list_append" not in params.get("UpdateExpression", ""):
            answer = await super().send(operation, params)
            if operation == "get_item":
                self.read.set()
            return answer

        async def arrive() -> dict[str, Any]:
            await self.gate.wait()
            return await FakeDynamoDB.send(self, operation, params)

        arriving = asyncio.ensure_future(arrive())
        self.arrivals.append(arriving)
        self.on_the_way.set()
        return await asyncio.shield(arriving)


async def test_a_writer_leaving_waits_for_its_cancelled_enqueue_that_arrives_late() -> None:
    fake = LateEnqueues()
    async with DynamoStore(transport=fake, retry_policy=NO_WAIT) as store:
        await store.create_table()
        await write_item(store, "head:1:500")
        turn = Turn(store, KEY, clock=ManualClock(0.0))
        state = await read_state(store)
        turn.lost_race(state)
        enqueue = asyncio.create_task(turn.ready(state, 1, saw_on(store)))
        await fake.on_the_way.wait()
        enqueue.cancel()  # cut off on its way: it has not reached the table yet
        with pytest.raises(asyncio.CancelledError):
            await enqueue
        fake.read.clear()
        leaving = asyncio.create_task(turn.leave())
        await fake.read.wait()  # the leave's read misses the entry...
        fake.gate.set()  # ...which arrives just after
        await leaving
        await asyncio.gather(*fake.arrivals)
        assert await queue_of(store) == ("head:1:500",)  # looked for again, found, removed
        assert not turn.holds
