"""Fair group commit across writers: two counter objects on one counter key act as two
processes; the counter item's turn keeps either from starving (counts, not timings)."""

from __future__ import annotations

import asyncio
import functools
from collections import Counter
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from checks import assert_exactly, counter_item

from aioseq import ConnectionFailed, DynamoStore, Observer, OptimisticCounter, TransactionalCounter
from aioseq._workload import stored_numbers
from aioseq.config import TOKENS_ATTRIBUTE, TURN_ATTRIBUTE, WRITES_ATTRIBUTE
from aioseq.observe import RequestEvent
from aioseq.strategies._turn import MAX_LEASE_SECS, entry

TOTAL = 160  # calls looked at: the first TOTAL to complete
TASKS = 8  # concurrent callers per writer


def invoice(n: int) -> dict[str, Any]:
    return {"pk": "invoices", "sk": n}


async def race(calls: list[Callable[[], Awaitable[int]]]) -> tuple[Counter[int], list[int]]:
    """``TASKS`` callers per writer call it until ``TOTAL`` calls completed in all; returns
    how many of the first ``TOTAL`` each writer completed, and every number handed out."""
    done: list[int] = []  # writer index per completed call, in completion order
    numbers: list[int] = []

    async def caller(writer: int) -> None:
        while len(done) < TOTAL:
            numbers.append(await calls[writer]())
            done.append(writer)

    await asyncio.gather(*(caller(w) for w in range(len(calls)) for _ in range(TASKS)))
    return Counter(done[:TOTAL]), numbers


async def queue_ahead(store: DynamoStore, *entries: str) -> None:
    """Other writers (in other processes) queued on counter ``c``, ``entries`` first."""
    await store.send_once(
        "update_item",
        TableName=store.table.name,
        Key=store.counter_item_key("c"),
        UpdateExpression="SET #turn = :queue",
        ExpressionAttributeNames={"#turn": TURN_ATTRIBUTE},
        ExpressionAttributeValues={":queue": {"L": [{"S": e} for e in entries]}},
    )


@pytest.mark.parametrize("strategy", ["transactional", "optimistic"])
async def test_two_writers_on_one_counter_both_commit(
    aioseq_store: DynamoStore, strategy: str
) -> None:
    calls: list[Callable[[], Awaitable[int]]]
    if strategy == "transactional":
        writers = [TransactionalCounter(aioseq_store, "c") for _ in range(2)]
        calls = [functools.partial(w.put, invoice) for w in writers]
    else:
        calls = [OptimisticCounter(aioseq_store, "c").next for _ in range(2)]
    shares, numbers = await race(calls)
    assert min(shares[0], shares[1]) >= TOTAL // 4, shares  # neither starves
    assert_exactly(numbers, 1, len(numbers))  # and every number once, no gap
    if strategy == "transactional":
        assert_exactly(await stored_numbers(aioseq_store, "invoices"), 1, len(numbers))


async def test_a_queue_entry_whose_writer_vanished_is_removed(aioseq_store: DynamoStore) -> None:
    invoices = TransactionalCounter(aioseq_store, "c")
    assert await invoices.put(invoice) == 1
    await queue_ahead(aioseq_store, "crashed-writer:1")  # a writer queued, then crashed
    other = TransactionalCounter(aioseq_store, "c")  # reads the counter item, sees the queue
    assert await other.put(invoice) == 2
    assert other.statistics().retries["TurnHeld"] >= 1  # it yielded first
    item = await counter_item(aioseq_store, "c") or {}
    assert item[TURN_ATTRIBUTE] == {"L": []}  # the stale entry removed, and its own used
    assert_exactly(await stored_numbers(aioseq_store, "invoices"), 1, 2)


#: A writer ahead taking 2 numbers, with the longest lease on the head: its one write may be
#: slow on a loaded machine (a shared moto server answers a request in over 0.5 s there),
#: and the writer behind must wait for it, not remove it as vanished.
AHEAD = entry("other", 2, MAX_LEASE_SECS)


class WritesAhead(Observer):
    """Once the observed writer's first ``UpdateItem`` (its enqueue) is answered, another
    writer, queued ahead of it with 2 numbers, commits them."""

    def __init__(self, store: DynamoStore, entry: str) -> None:
        self.store, self.entry = store, entry
        self.requests: Counter[str] = Counter()
        self.ahead: asyncio.Task[Any] | None = None

    def on_request(self, event: RequestEvent) -> None:
        self.requests[event.operation] += 1
        if event.operation == "UpdateItem" and self.ahead is None:
            self.ahead = asyncio.get_running_loop().create_task(self.commit())

    async def commit(self) -> None:
        await self.store.send_once(  # its numbers 2 and 3, and its entry removed
            "update_item",
            TableName=self.store.table.name,
            Key=self.store.counter_item_key("c"),
            UpdateExpression="SET #value = #value + :two, #writes = #writes + :one,"
            " #tokens[1] = :token REMOVE #turn[0]",  # its token in the ring's slot 1
            ConditionExpression="#turn[0] = :entry AND #writes = :one",
            ExpressionAttributeNames={
                "#value": self.store.table.value_attribute,
                "#writes": WRITES_ATTRIBUTE,
                "#tokens": TOKENS_ATTRIBUTE,
                "#turn": TURN_ATTRIBUTE,
            },
            ExpressionAttributeValues={
                ":two": {"N": "2"},
                ":one": {"N": "1"},
                ":token": {"S": "ahead-token"},
                ":entry": {"S": self.entry},
            },
        )


async def test_a_writer_behind_another_writes_from_the_predicted_value(
    aioseq_store: DynamoStore,
) -> None:
    assert await TransactionalCounter(aioseq_store, "c").put(invoice) == 1
    await queue_ahead(aioseq_store, AHEAD)  # another process queued to take 2 numbers
    observer = WritesAhead(aioseq_store, AHEAD)
    behind = TransactionalCounter(
        DynamoStore(aioseq_store.client, aioseq_store.table, observer=observer), "c"
    )
    assert await behind.put(invoice) == 4  # after the 2 numbers of the writer ahead
    assert observer.ahead is not None
    await observer.ahead  # (applied before the write behind it; its answer may still be due)
    assert observer.requests["GetItem"] == 1  # its first read only: then it predicted
    assert behind.statistics().retries["TurnHeld"] == 1  # it waited its turn once
    assert (await counter_item(aioseq_store, "c") or {})[TURN_ATTRIBUTE] == {"L": []}


async def test_an_enqueue_whose_answer_was_lost_is_not_left_behind(
    aioseq_store: DynamoStore,
) -> None:
    """The enqueue is applied, its answer lost: the writer finds its entry on its next read
    rather than enqueueing again behind it (an orphan entry would hold every writer until it
    was found stale)."""
    assert await TransactionalCounter(aioseq_store, "c").put(invoice) == 1
    await queue_ahead(aioseq_store, "vanished:1")  # a writer that queued, then crashed
    lossy = DynamoStore(aioseq_store.client, aioseq_store.table)
    sent = Counter[str]()

    async def send_once(operation: str, **params: Any) -> dict[str, Any]:
        response = await aioseq_store.send_once(operation, **params)
        sent[operation] += 1
        if "list_append" in params.get("UpdateExpression", "") and sent["enqueue"] == 0:
            sent["enqueue"] += 1
            raise ConnectionFailed("the answer was lost")  # after the server applied it
        return response

    lossy.send_once = send_once  # type: ignore[method-assign]
    assert await TransactionalCounter(lossy, "c").put(invoice) == 2
    # One enqueue, one removal of the vanished writer's entry: no second entry of its own.
    assert sent["update_item"] == 2, sent
    assert (await counter_item(aioseq_store, "c") or {})[TURN_ATTRIBUTE] == {"L": []}


async def test_a_prediction_past_max_value_waits_for_the_item_itself(
    aioseq_store: DynamoStore,
) -> None:
    """Ahead of it, a writer queued for 5 numbers would take the counter past max_value 3; it
    vanishes without writing. The writer behind does not refuse its put on the prediction:
    it reads the item once the entry ahead is gone and takes number 2."""
    assert await TransactionalCounter(aioseq_store, "c", max_value=3).put(invoice) == 1
    await queue_ahead(aioseq_store, "vanished:5")
    assert await TransactionalCounter(aioseq_store, "c", max_value=3).put(invoice) == 2


async def test_a_put_form_writer_behind_another_writes_from_the_item_itself(
    aioseq_store: DynamoStore,
) -> None:
    """A ``PutItem`` replaces the whole counter item, its ring of recent writes included,
    which a prediction does not know: the writer behind reads the item and keeps the ring
    slot of the write ahead of it (else that write's lost answer could not be resolved)."""
    assert await OptimisticCounter(aioseq_store, "c", write="put").next() == 1
    await queue_ahead(aioseq_store, AHEAD)
    observer = WritesAhead(aioseq_store, AHEAD)
    behind = OptimisticCounter(
        DynamoStore(aioseq_store.client, aioseq_store.table, observer=observer), "c", write="put"
    )
    assert await behind.next() == 4
    assert observer.ahead is not None
    await observer.ahead
    item = await counter_item(aioseq_store, "c") or {}
    assert item[TOKENS_ATTRIBUTE]["L"][1] == {"S": "ahead-token"}  # kept, not overwritten
    assert observer.requests["GetItem"] >= 2  # its first read, then the item itself


async def test_writers_whose_own_calls_race_write_past_the_queue(
    aioseq_store: DynamoStore,
) -> None:
    """Ungrouped with ``max_in_flight=None`` an object's commits run at once: it does not
    queue (one place per writer), so no entry of it is left behind, and every number is
    handed out once."""
    writers = [
        OptimisticCounter(aioseq_store, "c", group=False, max_in_flight=None) for _ in range(2)
    ]
    numbers: list[int] = []

    async def caller(writer: OptimisticCounter) -> None:
        for _ in range(10):
            numbers.append(await writer.next())

    await asyncio.gather(*(caller(w) for w in writers for _ in range(3)))
    assert_exactly(numbers, 1, 60)
    assert not (await counter_item(aioseq_store, "c") or {}).get(TURN_ATTRIBUTE, {}).get("L")


class Enqueued(Observer):
    """Set once the observed writer's first ``UpdateItem`` (its enqueue) is answered."""

    def __init__(self) -> None:
        self.answered = asyncio.Event()

    def on_request(self, event: RequestEvent) -> None:
        if event.operation == "UpdateItem":
            self.answered.set()


async def test_a_writer_whose_callers_went_away_leaves_the_queue(
    aioseq_store: DynamoStore,
) -> None:
    """Its only caller is cancelled while it waits behind another writer: its entry is
    taken out (by its next commit, or its close), not left to hold the others."""
    invoices = TransactionalCounter(aioseq_store, "c")
    assert await invoices.put(invoice) == 1
    await queue_ahead(aioseq_store, "other:1")
    enqueued = Enqueued()
    behind = TransactionalCounter(
        DynamoStore(aioseq_store.client, aioseq_store.table, observer=enqueued), "c"
    )
    put = asyncio.create_task(behind.put(invoice))
    await asyncio.wait_for(enqueued.answered.wait(), 30)  # it queued behind the other writer
    put.cancel()
    with pytest.raises(asyncio.CancelledError):
        await put
    await behind.aclose()  # lets the commit in flight finish
    assert (await counter_item(aioseq_store, "c") or {})[TURN_ATTRIBUTE] == {
        "L": [{"S": "other:1"}]
    }
    assert_exactly(await stored_numbers(aioseq_store, "invoices"), 1, 1)
