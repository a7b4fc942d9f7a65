"""Exactly once under lost answers, every strategy: a write applied whose answer was lost is
recognised when it is resent (by its ``ClientRequestToken``, or without one by the counter
item's token ring), never applied twice and never skipped; the numbers handed out and the table
agree.

One body, run in two places: ``tests/unit/test_exactly_once_on_fake.py`` on FakeDynamoDB
(honouring ``ClientRequestToken`` as DynamoDB does, and ignoring it as moto does), planting
faults with ``FakeDynamoDB.inject``; ``tests/integration/test_exactly_once.py`` on moto and
DynamoDB Local, through the fault proxy. Each defines the ``world`` fixture (a `World`) the
tests here take. ``response-lost`` applies the request and loses its answer (the client's
connection is reset instead of answered).
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import AsyncIterator
from typing import Any, Protocol

import pytest
from checks import SleepHook, assert_distinct, assert_exactly, counter_item

from aioseq import (
    BlockAllocator,
    CounterStatistics,
    DynamoStore,
    ItemAlreadyExists,
    OptimisticCounter,
    RetriesExhausted,
    RetryPolicy,
)
from aioseq.clock import Clock
from aioseq.config import RECENT_WRITES, TOKEN_ATTRIBUTE, WRITES_ATTRIBUTE
from aioseq.strategies.optimistic import WriteForm
from aioseq.strategies.transactional import ItemSpec

#: Retries whose backoffs are short: the tests wait on faults, not on time.
FAST = RetryPolicy(max_attempts=20, max_backoff_secs=0.01)


class World(Protocol):
    """A table and a way to lose answers on the way to it."""

    #: A store on the table whose requests get no planted fault (on the fake, a planted fault
    #: goes to the next matching request of any store: the tests plant one just before the
    #: request that should get it).
    store: DynamoStore
    #: Whether a resent ``TransactWriteItems`` is answered by its ``ClientRequestToken``
    #: (DynamoDB, DynamoDB Local) or applied again and judged by its conditions (moto).
    honours_tokens: bool

    def lose(self, *kinds: str, operation: str) -> None:
        """The next requests of ``operation`` (an API name) get ``kinds``, in order; then none."""

    @property
    def injected(self) -> Counter[str]:
        """The faults injected so far, by kind."""

    async def lossy(self, policy: RetryPolicy = FAST, clock: Clock | None = None) -> DynamoStore:
        """An open store on the table whose requests go where `lose` plants its faults (with
        ``clock``, the store sleeps on it and runs no idle sweeper)."""


@pytest.fixture
async def lossy(world: World) -> AsyncIterator[DynamoStore]:
    """The test's table, through the faults (none until the test plants one)."""
    async with await world.lossy() as store:
        yield store


async def stored(store: DynamoStore, partition: str) -> dict[int, dict[str, Any]]:
    """sort key -> item, for the numbered items (sort key >= 1) of ``partition`` (a Query)."""
    response = await store.send_once(
        "query",
        TableName=store.table.name,
        KeyConditionExpression="pk = :p AND sk > :zero",
        ExpressionAttributeValues={":p": {"S": partition}, ":zero": {"N": "0"}},
        ConsistentRead=True,
    )
    return {int(item["sk"]["N"]): item for item in response["Items"]}


async def stored_payloads(store: DynamoStore, partition: str) -> dict[int, Any]:
    """number -> the ``order`` attribute of each numbered item of ``partition``."""
    return {
        n: item.get("order", {}).get("N") for n, item in (await stored(store, partition)).items()
    }


async def value_of(store: DynamoStore, key: str) -> dict[str, Any]:
    item = await counter_item(store, key)
    assert item is not None
    return item


def numbered(n: int) -> dict[str, Any]:
    return {"pk": "c", "sk": n}


# --- atomic ----------------------------------------------------------------------------------


async def test_atomic_lost_answer_costs_a_gap_never_a_duplicate(
    world: World, lossy: DynamoStore
) -> None:
    orders = lossy.atomic_counter("c")
    world.lose("response-lost", operation="UpdateItem")
    assert [await orders.next() for _ in range(2)] == [2, 3]
    assert (await value_of(world.store, "c"))["value"] == {"N": "3"}
    assert await orders.next_many(3) == range(4, 7)


# --- optimistic ------------------------------------------------------------------------------

#: The request an optimistic counter's write form sends.
WRITE_OPERATION = {"update": "UpdateItem", "put": "PutItem"}


@pytest.mark.parametrize("before", [0, 1], ids=["creating", "later"])
@pytest.mark.parametrize("write", ["update", "put"])
@pytest.mark.parametrize("group", [True, False], ids=["grouped", "ungrouped"])
async def test_optimistic_lost_answer_hands_out_its_numbers(
    world: World, lossy: DynamoStore, write: WriteForm, group: bool, before: int
) -> None:
    """The write whose answer is lost creates the counter item, or comes after the one that
    did."""
    counter = lossy.optimistic_counter("c", write=write, group=group)
    assert [await counter.next() for _ in range(before)] == list(range(1, before + 1))
    world.lose("response-lost", operation=WRITE_OPERATION[write])
    assert await counter.next() == before + 1
    assert await counter.next() == before + 2
    assert world.injected == {"response-lost": 1}
    assert counter.statistics().recovered == 1
    item = await value_of(world.store, "c")
    written = {"N": str(before + 2)}
    assert item["value"] == written and item[WRITES_ATTRIBUTE] == written


async def test_optimistic_lost_answer_on_a_later_attempt(world: World, lossy: DynamoStore) -> None:
    counter = lossy.optimistic_counter("c")
    world.lose("throttling", "response-lost", operation="UpdateItem")
    assert await counter.next() == 1
    assert world.injected == {"throttling": 1, "response-lost": 1}
    assert counter.statistics().recovered == 1


async def test_optimistic_lost_answer_inside_a_group(world: World, lossy: DynamoStore) -> None:
    counter = lossy.optimistic_counter("c")
    world.lose("response-lost", operation="UpdateItem")
    numbers = await asyncio.gather(*(counter.next() for _ in range(30)))
    assert_exactly(numbers, 1, 30)
    assert world.injected == {"response-lost": 1}
    assert counter.statistics().recovered >= 2  # the lost write served a group of callers
    assert lossy.requests["UpdateItem"] < 30  # grouped


async def take_while_rivals_write(
    world: World, rivals: int
) -> tuple[int, list[int], OptimisticCounter]:
    """One optimistic ``next()`` whose first answer is lost; while it waits to resend, another
    process's counter writes ``rivals`` times. Returns the number, the rival's numbers and the
    counter."""
    rival = world.store.optimistic_counter("c")
    rival_numbers: list[int] = []

    async def rival_writes_while_we_wait(secs: float) -> None:
        while len(rival_numbers) < rivals:
            rival_numbers.append(await rival.next())

    policy = RetryPolicy(max_attempts=5)
    async with await world.lossy(policy, SleepHook(rival_writes_while_we_wait)) as store:
        counter = store.optimistic_counter("c")
        world.lose("response-lost", operation="UpdateItem")
        return await counter.next(), rival_numbers, counter


@pytest.mark.parametrize("rivals", [3, RECENT_WRITES - 1])
async def test_optimistic_lost_answer_is_found_among_rival_writes(
    world: World, rivals: int
) -> None:
    """The resend fails its condition, and the ring still holds the lost write's token: its
    number is handed out."""
    mine, rival_numbers, counter = await take_while_rivals_write(world, rivals)
    assert mine == 1
    assert rival_numbers == list(range(2, rivals + 2))
    assert counter.statistics().recovered == 1


async def test_optimistic_lost_answer_beyond_the_ring_is_counted_never_doubled(
    world: World,
) -> None:
    """More writes than the ring holds follow the lost one: aioseq cannot tell any more, so it
    takes new numbers and counts the old ones as unresolved (a possible hole, never a
    duplicate)."""
    rivals = RECENT_WRITES
    mine, rival_numbers, counter = await take_while_rivals_write(world, rivals)
    assert mine == rivals + 2  # number 1 may be ours: never handed out again
    assert_exactly([*rival_numbers, mine], 2, rivals + 2)
    assert counter.statistics().unresolved == 1
    assert counter.statistics().recovered == 0


@pytest.mark.parametrize(
    ("fault", "applied"), [("internal-error", False), ("reset", False), ("response-lost", True)]
)
async def test_optimistic_write_whose_callers_left_is_counted_only_if_it_may_be_applied(
    world: World, fault: str, applied: bool
) -> None:
    """The write fails in a way that may hide its success, and its only caller is cancelled
    before the resend: it is given up on. The next write tells what became of it: counted as
    unresolved if it was applied, not at all if it simply failed."""
    first: asyncio.Task[int] | None = None

    async def caller_leaves_during_the_backoff(secs: float) -> None:
        if first is not None and not first.done():
            first.cancel()
        await asyncio.sleep(0)

    policy = RetryPolicy(max_attempts=5)
    async with await world.lossy(policy, SleepHook(caller_leaves_during_the_backoff)) as store:
        counter = store.optimistic_counter("c")
        world.lose(fault, operation="UpdateItem")
        first = asyncio.ensure_future(counter.next())
        with pytest.raises(asyncio.CancelledError):
            await first
        assert await counter.next() == (2 if applied else 1)
        assert counter.statistics().unresolved == (1 if applied else 0)
    assert world.injected == {fault: 1}


# --- gapless (transactional) -----------------------------------------------------------------


@pytest.mark.parametrize("group", [True, False], ids=["grouped", "ungrouped"])
async def test_gapless_lost_answer_stores_the_item_once(
    world: World, lossy: DynamoStore, group: bool
) -> None:
    invoices = lossy.transactional_counter("c", group=group)
    world.lose("response-lost", operation="TransactWriteItems")
    assert await invoices.put(numbered) == 1
    assert await invoices.put(numbered) == 2
    assert sorted(await stored(world.store, "c")) == [1, 2]
    # With the token the resend succeeds as the first attempt did; without it the resend
    # fails the counter's condition and the token ring tells.
    assert invoices.statistics().recovered == (0 if world.honours_tokens else 1)


async def test_gapless_lost_answer_among_rival_writes(world: World) -> None:
    rival = world.store.transactional_counter("c")
    rival_numbers: list[int] = []

    async def rival_writes_while_we_wait(secs: float) -> None:
        while len(rival_numbers) < 3:
            rival_numbers.append(await rival.put(numbered))

    policy = RetryPolicy(max_attempts=5)
    async with await world.lossy(policy, SleepHook(rival_writes_while_we_wait)) as store:
        invoices = store.transactional_counter("c")
        world.lose("response-lost", operation="TransactWriteItems")
        assert await invoices.put(numbered) == 1
    assert rival_numbers == [2, 3, 4]
    assert sorted(await stored(world.store, "c")) == [1, 2, 3, 4]


@pytest.mark.parametrize(("fault", "applied"), [("internal-error", False), ("response-lost", True)])
async def test_gapless_transaction_given_up_is_counted_only_if_it_may_be_applied(
    world: World, fault: str, applied: bool
) -> None:
    """The retry policy runs out on a transaction that may have been applied (the put raises
    ``RetriesExhausted`` with ``maybe_applied``); the next transaction tells what became of
    it: counted as unresolved if it was applied, not at all if it simply failed."""
    policy = RetryPolicy(max_attempts=2, max_backoff_secs=0.01)
    async with await world.lossy(policy) as store:
        invoices = store.transactional_counter("c")
        world.lose(fault, "internal-error", operation="TransactWriteItems")
        with pytest.raises(RetriesExhausted) as caught:
            await invoices.put(numbered)
        assert caught.value.maybe_applied
        assert await invoices.put(numbered) == (2 if applied else 1)
        assert invoices.statistics().unresolved == (1 if applied else 0)
    assert sorted(await stored(world.store, "c")) == ([1, 2] if applied else [1])


async def put_while_rivals_write(
    world: World, item: ItemSpec, *, group: bool
) -> tuple[int, CounterStatistics]:
    """One transactional ``put(item)`` whose first answer is lost; while it waits to resend,
    another process's counter writes as often as the ring holds, so without
    ``ClientRequestToken`` the counter can no longer tell and the put goes again under a new
    number. Returns the number and the put's statistics."""
    rival = world.store.transactional_counter("c")
    rival_numbers: list[int] = []

    async def rival_writes_while_we_wait(secs: float) -> None:
        while len(rival_numbers) < RECENT_WRITES:
            rival_numbers.append(await rival.put(numbered))

    policy = RetryPolicy(max_attempts=5)
    async with await world.lossy(policy, SleepHook(rival_writes_while_we_wait)) as store:
        invoices = store.transactional_counter("c", group=group)
        world.lose("response-lost", operation="TransactWriteItems")
        try:
            return await invoices.put(item), invoices.statistics()
        finally:
            assert rival_numbers == list(range(2, RECENT_WRITES + 2))


@pytest.mark.parametrize("group", [True, False], ids=["grouped", "ungrouped"])
async def test_gapless_lost_answer_beyond_the_ring_returns_the_stored_number(
    world: World, group: bool
) -> None:
    """The put's item (one key, whatever the number) is found stored, with the first
    number, by the transaction whose answer was lost: the put returns that number; it does
    not raise ``ItemAlreadyExists`` (which says nothing was written)."""
    number, statistics = await put_while_rivals_write(
        world, {"pk": "order-7", "sk": 0}, group=group
    )
    assert number == 1
    response = await world.store.send_once(
        "query",
        TableName=world.store.table.name,
        KeyConditionExpression="pk = :p",
        ExpressionAttributeValues={":p": {"S": "order-7"}},
        ConsistentRead=True,
    )
    assert [item["number"] for item in response["Items"]] == [{"N": "1"}]  # stored once
    assert statistics.unresolved == 0
    assert statistics.recovered == (0 if world.honours_tokens else 1)


async def test_gapless_lost_answer_beyond_the_ring_with_an_item_blind_to_its_number(
    world: World,
) -> None:
    """An item made the same for every number cannot tell which transaction stored it: the
    put raises ``ItemAlreadyExists`` saying it may have written it (``maybe_applied``)."""
    item = lambda n: {"pk": "order-8", "sk": 0}  # noqa: E731
    if world.honours_tokens:  # the resend is answered by its ClientRequestToken
        assert (await put_while_rivals_write(world, item, group=True))[0] == 1
        return
    with pytest.raises(ItemAlreadyExists) as caught:
        await put_while_rivals_write(world, item, group=True)
    assert caught.value.maybe_applied


async def test_gapless_lost_answer_inside_a_group(world: World, lossy: DynamoStore) -> None:
    invoices = lossy.transactional_counter("c")
    world.lose("response-lost", operation="TransactWriteItems")
    numbers = await asyncio.gather(*(invoices.put(numbered) for _ in range(30)))
    assert_exactly(numbers, 1, 30)
    assert_exactly(await stored(world.store, "c"), 1, 30)
    assert world.injected == {"response-lost": 1}
    assert lossy.requests["TransactWriteItems"] < 30  # grouped


async def test_gapless_lost_answer_then_a_transient_cancellation_stores_once(
    world: World, lossy: DynamoStore
) -> None:
    """One caller at a time: the resend of the lost transaction is canceled for a conflict,
    and the one after it is still the same request."""
    invoices = lossy.transactional_counter("c")
    world.lose("response-lost", "transaction-conflict", operation="TransactWriteItems")
    assert await invoices.put(numbered) == 1
    assert await invoices.put(numbered) == 2
    assert sorted(await stored(world.store, "c")) == [1, 2]
    assert world.injected == {"response-lost": 1, "transaction-conflict": 1}


# --- sort-key --------------------------------------------------------------------------------


@pytest.mark.parametrize("group", [True, False], ids=["grouped", "ungrouped"])
async def test_sort_key_lost_answer_stores_the_payload_once(
    world: World, lossy: DynamoStore, group: bool
) -> None:
    issues = lossy.sort_key_counter("p", group=group)
    world.lose("response-lost", operation="PutItem")
    assert await issues.put({"order": 1}) == 1
    assert await issues.put({"order": 2}) == 2
    assert await stored_payloads(world.store, "p") == {1: "1", 2: "2"}
    assert issues.statistics().recovered == 1


async def test_sort_key_lost_answer_on_a_later_attempt(world: World, lossy: DynamoStore) -> None:
    issues = lossy.sort_key_counter("p")
    world.lose("internal-error", "response-lost", operation="PutItem")
    assert await issues.put({"order": 1}) == 1
    assert await stored_payloads(world.store, "p") == {1: "1"}


@pytest.mark.parametrize("before", [0, 1], ids=["first", "after-one"])
async def test_sort_key_lost_answer_inside_a_group(
    world: World, lossy: DynamoStore, before: int
) -> None:
    """The grouped transaction whose answer is lost is the counter's first write, or comes
    after one."""
    issues = lossy.sort_key_counter("p")
    if before:
        assert await issues.put({"order": 1}) == 1
    world.lose("response-lost", operation="TransactWriteItems")
    orders = range(before + 1, before + 31)
    numbers = await asyncio.gather(*(issues.put({"order": i}) for i in orders))
    assert_exactly(numbers, before + 1, before + 30)
    payloads = await stored_payloads(world.store, "p")
    assert sorted(payloads) == list(range(1, before + 31))
    assert sorted(int(order) for order in payloads.values()) == list(range(1, before + 31))
    assert world.injected == {"response-lost": 1}
    # With the token the resent transaction is answered from it; without it its puts fail
    # their conditions on items that carry their own tokens.
    recovered = issues.statistics().recovered
    assert recovered == 0 if world.honours_tokens else recovered >= 2


async def test_sort_key_items_carry_their_token(world: World) -> None:
    issues = world.store.sort_key_counter("p")
    await asyncio.gather(*(issues.put({"order": i}) for i in range(5)))
    response = await world.store.send_once("scan", TableName=world.store.table.name)
    tokens = [item[TOKEN_ATTRIBUTE]["S"] for item in response["Items"]]
    assert len(tokens) == 5 and len(set(tokens)) == 5


async def test_sort_key_current_and_exists(world: World) -> None:
    issues = world.store.sort_key_counter("p")
    assert not await issues.exists()
    assert await issues.current() == 0
    assert await issues.put() == 1
    assert await issues.current() == 1
    assert await issues.exists()
    assert issues.format_sort_key(7) == {"N": "7"}


@pytest.mark.parametrize("strategy", ["transactional", "sort-key"])
async def test_a_lost_answer_then_a_transient_cancellation_still_stores_once(
    world: World, lossy: DynamoStore, strategy: str
) -> None:
    """The first transaction is applied and its answer lost; the resend is canceled for a
    transient reason (a conflict) without reaching the server; the next resend must still be
    the same request, judged by its tokens, not a new write under new numbers."""
    world.lose("response-lost", "transaction-conflict", operation="TransactWriteItems")
    if strategy == "transactional":
        invoices = lossy.transactional_counter("p")
        numbers = await asyncio.gather(
            *(invoices.put(lambda n: {"pk": "p", "sk": n, "order": n}) for _ in range(5))
        )
    else:
        issues = lossy.sort_key_counter("p")
        numbers = await asyncio.gather(*(issues.put({"order": i}) for i in range(1, 6)))
    assert_exactly(numbers, 1, 5)
    assert sorted(await stored_payloads(world.store, "p")) == [1, 2, 3, 4, 5]
    assert world.injected == {"response-lost": 1, "transaction-conflict": 1}


# --- block allocator -------------------------------------------------------------------------


async def test_allocator_give_back_lost_answer_is_not_resent(world: World) -> None:
    """An allocator closes; its give-back (``SET #value = :before IF #value = :top``) is
    applied and its answer lost. While it waits to resend, another process reserves a block of
    the size given back, moving the counter back to ``:top``; a resend would apply again and a
    third process would get that block too. Not resent: the tail counts as wasted, and every
    number is handed out once."""
    b = world.store.block_allocator("k", block_size=9, prefetch_at=0)
    c = BlockAllocator(world.store, "k", block_size=10, prefetch_at=0)
    from_b: list[int] = []

    async def rival_reserves_while_we_wait(secs: float) -> None:
        if not from_b:
            from_b.extend([await b.next() for _ in range(9)])

    policy = RetryPolicy(max_attempts=5)
    async with await world.lossy(policy, SleepHook(rival_reserves_while_we_wait)) as store_a:
        a = store_a.block_allocator("k", block_size=10, prefetch_at=0)
        assert await a.next() == 1
        world.lose("response-lost", operation="UpdateItem")
        await a.aclose()
    if not from_b:
        from_b.extend([await b.next() for _ in range(9)])
    from_c = [await c.next() for _ in range(10)]
    await c.aclose()
    assert_distinct([1, *from_b, *from_c])
    assert world.injected == {"response-lost": 1}
    assert (a.statistics().returned, a.statistics().wasted) == (0, 9)
    assert from_b == list(range(2, 11))  # the give-back was applied: A's tail, once
    assert from_c == list(range(11, 21))
