"""Exactly once under lost answers: a write that was applied but whose answer never arrived is
recognised by its token when it is resent, never applied twice and never skipped.

Each test loses chosen answers with the fault proxy (``response-lost``: the server applies the
request, the client's connection is reset instead of answered) and checks both what the
callers got and what the table holds. moto ignores ``ClientRequestToken``, so on moto the
gapless strategy's resend is resolved by the counter item's token ring; on DynamoDB Local by
the token itself.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from typing import Any

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
from aioseq._store import DEFAULT_IDLE_SECS
from aioseq._workload import stored_numbers
from aioseq.clock import Clock
from aioseq.config import RECENT_WRITES, TOKEN_ATTRIBUTE, WRITES_ATTRIBUTE
from aioseq.strategies.optimistic import WriteForm
from aioseq.strategies.transactional import ItemSpec
from aioseq.testing.fault_proxy import FaultProxy, FaultSchedule

FAST = RetryPolicy(max_attempts=20, max_backoff_secs=0.01)


def schedule(*kinds: str | None, operations: set[str]) -> FaultSchedule:
    """A schedule whose requests of ``operations`` get ``kinds`` in order (``None``: none),
    and then no fault for the next 20."""
    rates = {kind: 0.05 for kind in kinds if kind is not None}
    wanted = [*kinds, *[None] * 20]
    operation = next(iter(operations))
    for seed in range(200_000):
        candidate = FaultSchedule(rates, seed=seed, operations=frozenset(operations))
        pick = candidate.picker()
        if [pick(operation) for _ in wanted] == wanted:
            return candidate
    raise AssertionError(f"no seed gives {kinds}")


@pytest.fixture
def proxy(aioseq_endpoint: str) -> Iterator[FaultProxy]:
    with FaultProxy(aioseq_endpoint) as running:
        yield running


async def through(
    proxy: FaultProxy, table: Any, policy: RetryPolicy = FAST, clock: Clock | None = None
) -> DynamoStore:
    # (With a clock of the test's, no idle sweeper: its sleeps would run the test's hook.)
    return await DynamoStore.open(
        table=table,
        endpoint_url=proxy.endpoint_url,
        retry_policy=policy,
        clock=clock,
        idle_secs=None if clock else DEFAULT_IDLE_SECS,
    )


@pytest.fixture
async def lossy(aioseq_store: DynamoStore, proxy: FaultProxy) -> AsyncIterator[DynamoStore]:
    """The test's table, through the proxy (no faults until the test sets a schedule)."""
    store = await through(proxy, aioseq_store.table)
    async with store:
        yield store


async def stored_payloads(store: DynamoStore, partition: str) -> dict[int, Any]:
    """number -> the ``order`` attribute of each stored item of ``partition``."""
    response = await store.send_once(
        "query",
        TableName=store.table.name,
        KeyConditionExpression="pk = :p AND sk > :zero",
        ExpressionAttributeValues={":p": {"S": partition}, ":zero": {"N": "0"}},
        ConsistentRead=True,
    )
    return {int(i["sk"]["N"]): i.get("order", {}).get("N") for i in response["Items"]}


# --- optimistic ------------------------------------------------------------------------------


@pytest.mark.parametrize("write", ["update", "put"])
@pytest.mark.parametrize("group", [True, False], ids=["grouped", "ungrouped"])
async def test_optimistic_lost_answer_hands_out_its_numbers(
    aioseq_store: DynamoStore, lossy: DynamoStore, proxy: FaultProxy, write: WriteForm, group: bool
) -> None:
    proxy.set_schedule(schedule("response-lost", operations={"UpdateItem", "PutItem"}))
    counter = lossy.optimistic_counter("c", write=write, group=group)
    assert await counter.next() == 1
    assert await counter.next() == 2
    assert proxy.injected == {"response-lost": 1}
    assert counter.statistics().recovered == 1
    item = await counter_item(aioseq_store, "c")
    assert item is not None and item["value"] == {"N": "2"} and item[WRITES_ATTRIBUTE] == {"N": "2"}


async def test_optimistic_lost_answer_on_a_later_attempt(
    lossy: DynamoStore, proxy: FaultProxy
) -> None:
    proxy.set_schedule(schedule("throttling", "response-lost", operations={"UpdateItem"}))
    counter = lossy.optimistic_counter("c")
    assert await counter.next() == 1
    assert proxy.injected == {"throttling": 1, "response-lost": 1}
    assert counter.statistics().recovered == 1


async def test_optimistic_lost_answer_inside_a_group(lossy: DynamoStore, proxy: FaultProxy) -> None:
    proxy.set_schedule(schedule("response-lost", operations={"UpdateItem"}))
    counter = lossy.optimistic_counter("c")
    numbers = await asyncio.gather(*(counter.next() for _ in range(30)))
    assert_exactly(numbers, 1, 30)
    assert proxy.injected == {"response-lost": 1}
    assert counter.statistics().recovered >= 2  # the lost write served a group of callers


async def take_while_rivals_write(
    aioseq_store: DynamoStore, proxy: FaultProxy, rivals: int
) -> tuple[int, list[int], OptimisticCounter]:
    """One optimistic ``next()`` through the proxy whose first answer is lost; while it waits
    to resend, another process's counter writes ``rivals`` times. Returns the number, the
    rival's numbers and the counter."""
    rival = aioseq_store.optimistic_counter("c")
    rival_numbers: list[int] = []

    async def rival_writes_while_we_wait(secs: float) -> None:
        while len(rival_numbers) < rivals:
            rival_numbers.append(await rival.next())

    proxy.set_schedule(schedule("response-lost", operations={"UpdateItem"}))
    policy = RetryPolicy(max_attempts=5)
    async with await through(
        proxy, aioseq_store.table, policy, SleepHook(rival_writes_while_we_wait)
    ) as store:
        counter = store.optimistic_counter("c")
        return await counter.next(), rival_numbers, counter


@pytest.mark.parametrize("rivals", [3, RECENT_WRITES - 1])
async def test_optimistic_lost_answer_is_found_among_rival_writes(
    aioseq_store: DynamoStore, proxy: FaultProxy, rivals: int
) -> None:
    """The ring still holds the first write's token: its number is handed out."""
    mine, rival_numbers, counter = await take_while_rivals_write(aioseq_store, proxy, rivals)
    assert mine == 1
    assert rival_numbers == list(range(2, rivals + 2))
    assert counter.statistics().recovered == 1


async def test_optimistic_lost_answer_beyond_the_ring_is_counted_never_doubled(
    aioseq_store: DynamoStore, proxy: FaultProxy
) -> None:
    """More writes than the ring holds follow the lost one: aioseq cannot tell any more, so it
    takes new numbers and counts the old ones as unresolved (a possible hole, never a
    duplicate)."""
    rivals = RECENT_WRITES
    mine, rival_numbers, counter = await take_while_rivals_write(aioseq_store, proxy, rivals)
    assert_exactly([*rival_numbers, mine], 2, rivals + 2)  # number 1: taken, never handed out
    assert counter.statistics().unresolved == 1
    assert counter.statistics().recovered == 0


@pytest.mark.parametrize(
    ("fault", "applied"), [("internal-error", False), ("reset", False), ("response-lost", True)]
)
async def test_optimistic_write_whose_callers_left_is_counted_only_if_it_may_be_applied(
    aioseq_store: DynamoStore, proxy: FaultProxy, fault: str, applied: bool
) -> None:
    """The write fails in a way that may hide its success, and its only caller is cancelled
    before the resend: it is given up on. The next write tells what became of it: counted as
    unresolved if it was applied, not at all if it simply failed."""
    first: asyncio.Task[int] | None = None

    async def caller_leaves_during_the_backoff(secs: float) -> None:
        if first is not None and not first.done():
            first.cancel()
        await asyncio.sleep(0)

    proxy.set_schedule(schedule(fault, operations={"UpdateItem"}))
    policy = RetryPolicy(max_attempts=5)
    async with await through(
        proxy, aioseq_store.table, policy, SleepHook(caller_leaves_during_the_backoff)
    ) as store:
        counter = store.optimistic_counter("c")
        first = asyncio.ensure_future(counter.next())
        with pytest.raises(asyncio.CancelledError):
            await first
        assert await counter.next() == (2 if applied else 1)
        assert counter.statistics().unresolved == (1 if applied else 0)
    assert proxy.injected == {fault: 1}


# --- gapless (transactional) -----------------------------------------------------------------


@pytest.mark.parametrize("group", [True, False], ids=["grouped", "ungrouped"])
async def test_gapless_lost_answer_stores_the_item_once(
    backend: str, aioseq_store: DynamoStore, lossy: DynamoStore, proxy: FaultProxy, group: bool
) -> None:
    proxy.set_schedule(schedule("response-lost", operations={"TransactWriteItems"}))
    invoices = lossy.transactional_counter("c", group=group)
    assert await invoices.put(lambda n: {"pk": "c", "sk": n}) == 1
    assert await invoices.put(lambda n: {"pk": "c", "sk": n}) == 2
    assert sorted(await stored_numbers(aioseq_store, "c")) == [1, 2]
    # DynamoDB Local honours ClientRequestToken: the resend succeeds as the first attempt did.
    # moto ignores it: the resend fails the counter's condition and the token ring tells.
    assert invoices.statistics().recovered == (0 if backend == "dynamodb-local" else 1)


async def test_gapless_lost_answer_among_rival_writes(
    aioseq_store: DynamoStore, proxy: FaultProxy
) -> None:
    rival = aioseq_store.transactional_counter("c")
    rival_numbers: list[int] = []

    async def rival_writes_while_we_wait(secs: float) -> None:
        while len(rival_numbers) < 3:
            rival_numbers.append(await rival.put(lambda n: {"pk": "c", "sk": n}))

    proxy.set_schedule(schedule("response-lost", operations={"TransactWriteItems"}))
    policy = RetryPolicy(max_attempts=5)
    async with await through(
        proxy, aioseq_store.table, policy, SleepHook(rival_writes_while_we_wait)
    ) as store:
        assert await store.transactional_counter("c").put(lambda n: {"pk": "c", "sk": n}) == 1
    assert rival_numbers == [2, 3, 4]
    assert sorted(await stored_numbers(aioseq_store, "c")) == [1, 2, 3, 4]


@pytest.mark.parametrize(("fault", "applied"), [("internal-error", False), ("response-lost", True)])
async def test_gapless_transaction_given_up_is_counted_only_if_it_may_be_applied(
    aioseq_store: DynamoStore, proxy: FaultProxy, fault: str, applied: bool
) -> None:
    """The retry policy runs out on a transaction that may have been applied (the put raises
    ``RetriesExhausted`` with ``maybe_applied``); the next transaction tells what became of
    it: counted as unresolved if it was applied, not at all if it simply failed."""
    proxy.set_schedule(schedule(fault, "internal-error", operations={"TransactWriteItems"}))
    policy = RetryPolicy(max_attempts=2, max_backoff_secs=0.01)
    async with await through(proxy, aioseq_store.table, policy) as store:
        invoices = store.transactional_counter("c")
        with pytest.raises(RetriesExhausted) as caught:
            await invoices.put(lambda n: {"pk": "c", "sk": n})
        assert caught.value.maybe_applied
        assert await invoices.put(lambda n: {"pk": "c", "sk": n}) == (2 if applied else 1)
        assert invoices.statistics().unresolved == (1 if applied else 0)
    assert sorted(await stored_numbers(aioseq_store, "c")) == ([1, 2] if applied else [1])


async def put_while_rivals_write(
    aioseq_store: DynamoStore, proxy: FaultProxy, item: ItemSpec, *, group: bool
) -> tuple[int, CounterStatistics]:
    """One transactional ``put(item)`` through the proxy whose first answer is lost; while it
    waits to resend, another process's counter writes as often as the ring holds, so on moto
    (no ``ClientRequestToken``) the counter can no longer tell and the put goes again under a
    new number. Returns the number and the put's statistics."""
    rival = aioseq_store.transactional_counter("c")
    rival_numbers: list[int] = []

    async def rival_writes_while_we_wait(secs: float) -> None:
        while len(rival_numbers) < RECENT_WRITES:
            rival_numbers.append(await rival.put(lambda n: {"pk": "c", "sk": n}))

    proxy.set_schedule(schedule("response-lost", operations={"TransactWriteItems"}))
    policy = RetryPolicy(max_attempts=5)
    async with await through(
        proxy, aioseq_store.table, policy, SleepHook(rival_writes_while_we_wait)
    ) as store:
        invoices = store.transactional_counter("c", group=group)
        try:
            return await invoices.put(item), invoices.statistics()
        finally:
            assert rival_numbers == list(range(2, RECENT_WRITES + 2))


@pytest.mark.parametrize("group", [True, False], ids=["grouped", "ungrouped"])
async def test_gapless_lost_answer_beyond_the_ring_returns_the_stored_number(
    backend: str, aioseq_store: DynamoStore, proxy: FaultProxy, group: bool
) -> None:
    """The put's item (one key, whatever the number) is found stored, with the first
    number, by the transaction whose answer was lost: the put returns that number; it does
    not raise ``ItemAlreadyExists`` (which says nothing was written)."""
    number, statistics = await put_while_rivals_write(
        aioseq_store, proxy, {"pk": "order-7", "sk": 0}, group=group
    )
    assert number == 1
    key = {"pk": {"S": "order-7"}, "sk": {"N": "0"}}
    stored = await aioseq_store.send_once("get_item", TableName=aioseq_store.table.name, Key=key)
    assert stored["Item"]["number"] == {"N": "1"}
    assert statistics.unresolved == 0
    assert statistics.recovered == (0 if backend == "dynamodb-local" else 1)


async def test_gapless_lost_answer_beyond_the_ring_with_an_item_blind_to_its_number(
    backend: str, aioseq_store: DynamoStore, proxy: FaultProxy
) -> None:
    """An item made the same for every number cannot tell which transaction stored it: the
    put raises ``ItemAlreadyExists`` saying it may have written it (``maybe_applied``)."""
    item = lambda n: {"pk": "order-8", "sk": 0}  # noqa: E731
    if backend == "dynamodb-local":  # the resend is answered by its ClientRequestToken
        assert (await put_while_rivals_write(aioseq_store, proxy, item, group=True))[0] == 1
        return
    with pytest.raises(ItemAlreadyExists) as caught:
        await put_while_rivals_write(aioseq_store, proxy, item, group=True)
    assert caught.value.maybe_applied


async def test_gapless_lost_answer_inside_a_group(
    aioseq_store: DynamoStore, lossy: DynamoStore, proxy: FaultProxy
) -> None:
    proxy.set_schedule(schedule("response-lost", operations={"TransactWriteItems"}))
    invoices = lossy.transactional_counter("c")
    numbers = await asyncio.gather(
        *(invoices.put(lambda n: {"pk": "c", "sk": n}) for _ in range(30))
    )
    assert_exactly(numbers, 1, 30)
    assert_exactly(await stored_numbers(aioseq_store, "c"), 1, 30)
    assert proxy.injected == {"response-lost": 1}


# --- sort-key --------------------------------------------------------------------------------


@pytest.mark.parametrize("group", [True, False], ids=["grouped", "ungrouped"])
async def test_sort_key_lost_answer_stores_the_payload_once(
    aioseq_store: DynamoStore, lossy: DynamoStore, proxy: FaultProxy, group: bool
) -> None:
    proxy.set_schedule(schedule("response-lost", operations={"PutItem"}))
    issues = lossy.sort_key_counter("p", group=group)
    assert await issues.put({"order": 1}) == 1
    assert await issues.put({"order": 2}) == 2
    assert await stored_payloads(aioseq_store, "p") == {1: "1", 2: "2"}
    assert issues.statistics().recovered == 1


async def test_sort_key_lost_answer_on_a_later_attempt(
    aioseq_store: DynamoStore, lossy: DynamoStore, proxy: FaultProxy
) -> None:
    proxy.set_schedule(schedule("internal-error", "response-lost", operations={"PutItem"}))
    issues = lossy.sort_key_counter("p")
    assert await issues.put({"order": 1}) == 1
    assert await stored_payloads(aioseq_store, "p") == {1: "1"}


async def test_sort_key_lost_answer_inside_a_group(
    backend: str, aioseq_store: DynamoStore, lossy: DynamoStore, proxy: FaultProxy
) -> None:
    proxy.set_schedule(schedule("response-lost", operations={"TransactWriteItems"}))
    issues = lossy.sort_key_counter("p")
    numbers = await asyncio.gather(*(issues.put({"order": i}) for i in range(1, 31)))
    assert_exactly(numbers, 1, 30)
    stored = await stored_payloads(aioseq_store, "p")
    assert sorted(stored) == list(range(1, 31))
    assert sorted(int(order) for order in stored.values()) == list(range(1, 31))  # each once
    assert proxy.injected == {"response-lost": 1}
    # DynamoDB Local answers the resent transaction from its ClientRequestToken; on moto its
    # puts fail their conditions on items that carry their own tokens.
    recovered = issues.statistics().recovered
    assert recovered == 0 if backend == "dynamodb-local" else recovered >= 2


async def test_sort_key_items_carry_their_token(aioseq_store: DynamoStore) -> None:
    issues = aioseq_store.sort_key_counter("p")
    await asyncio.gather(*(issues.put({"order": i}) for i in range(5)))
    response = await aioseq_store.send_once("scan", TableName=aioseq_store.table.name)
    tokens = [item[TOKEN_ATTRIBUTE]["S"] for item in response["Items"]]
    assert len(tokens) == 5 and len(set(tokens)) == 5


@pytest.mark.parametrize("strategy", ["transactional", "sort-key"])
async def test_a_lost_answer_then_a_transient_cancellation_still_stores_once(
    aioseq_store: DynamoStore, lossy: DynamoStore, proxy: FaultProxy, strategy: str
) -> None:
    """The first transaction is applied and its answer lost; the resend is canceled for a
    transient reason (a conflict) without reaching the server; the next resend must still be
    the same request, judged by its tokens, not a new write under new numbers."""
    proxy.set_schedule(
        schedule("response-lost", "transaction-conflict", operations={"TransactWriteItems"})
    )
    if strategy == "transactional":
        invoices = lossy.transactional_counter("p")
        numbers = await asyncio.gather(
            *(invoices.put(lambda n: {"pk": "p", "sk": n, "order": n}) for _ in range(5))
        )
    else:
        issues = lossy.sort_key_counter("p")
        numbers = await asyncio.gather(*(issues.put({"order": i}) for i in range(1, 6)))
    assert_exactly(numbers, 1, 5)
    assert sorted(await stored_payloads(aioseq_store, "p")) == [1, 2, 3, 4, 5]
    assert proxy.injected == {"response-lost": 1, "transaction-conflict": 1}


# --- block allocator -------------------------------------------------------------------------


async def test_allocator_give_back_lost_answer_is_not_resent(
    aioseq_store: DynamoStore, proxy: FaultProxy
) -> None:
    """An allocator closes; its give-back (``SET #value = :before IF #value = :top``) is
    applied and its answer lost. While it waits to resend, another process reserves a block of
    the size given back, moving the counter back to ``:top``; a resend would apply again and a
    third process would get that block too. Not resent: the tail counts as wasted, and every
    number is handed out once."""
    b = aioseq_store.block_allocator("k", block_size=9, prefetch_at=0)
    c = BlockAllocator(aioseq_store, "k", block_size=10, prefetch_at=0)
    from_b: list[int] = []

    async def rival_reserves_while_we_wait(secs: float) -> None:
        if not from_b:
            from_b.extend([await b.next() for _ in range(9)])

    policy = RetryPolicy(max_attempts=5)
    async with await through(
        proxy, aioseq_store.table, policy, SleepHook(rival_reserves_while_we_wait)
    ) as store_a:
        a = store_a.block_allocator("k", block_size=10, prefetch_at=0)
        assert await a.next() == 1
        proxy.set_schedule(schedule("response-lost", operations={"UpdateItem"}))
        await a.aclose()
    if not from_b:
        from_b.extend([await b.next() for _ in range(9)])
    from_c = [await c.next() for _ in range(10)]
    await c.aclose()
    assert_distinct([1, *from_b, *from_c])
    assert proxy.injected == {"response-lost": 1}
    assert (a.statistics().returned, a.statistics().wasted) == (0, 9)
    assert from_b == list(range(2, 11))  # the give-back was applied: A's tail, once
    assert from_c == list(range(11, 21))
