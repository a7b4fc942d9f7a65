"""Exactly once under lost answers, every strategy, against FakeDynamoDB: a write applied whose
answer was lost is recognised when it is resent (by its ``ClientRequestToken``, or without one by
the counter item's token ring), never applied twice and never skipped; the numbers handed out and
the table agree. The integration suite checks the same through the fault proxy on both servers."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from checks import SleepHook, assert_distinct, assert_exactly

from aioseq import DynamoStore, ItemAlreadyExists, RetriesExhausted, RetryPolicy
from aioseq.clock import Clock
from aioseq.config import RECENT_WRITES, WRITES_ATTRIBUTE
from aioseq.strategies.optimistic import WriteForm
from aioseq.testing import FakeDynamoDB, FaultSchedule

TABLE = "aioseq"
NO_WAIT = RetryPolicy(max_attempts=20, initial_backoff_secs=0.0001, max_backoff_secs=0.0001)


def items_of(fake: FakeDynamoDB, partition: str) -> dict[int, dict[str, Any]]:
    """sort key -> item, for the numbered items (sort key >= 1) of ``partition``."""
    return {
        int(item["sk"]["N"]): item
        for item in fake.items(TABLE)
        if item["pk"] == {"S": partition} and int(item["sk"]["N"]) >= 1
    }


def counter_item(fake: FakeDynamoDB, key: str) -> dict[str, Any]:
    found = [i for i in fake.items(TABLE) if i["pk"] == {"S": key} and i["sk"] == {"N": "0"}]
    assert len(found) == 1
    return found[0]


async def open_store(
    fake: FakeDynamoDB, policy: RetryPolicy = NO_WAIT, clock: Clock | None = None
) -> DynamoStore:
    # (No idle sweeper: its sleeps would run a test's hook.)
    store = DynamoStore(transport=fake, retry_policy=policy, clock=clock, idle_secs=None)
    await store.create_table()
    fake.reset()
    return store


def numbered(n: int) -> dict[str, Any]:
    return {"pk": "c", "sk": n}


# --- atomic ----------------------------------------------------------------------------------


async def test_atomic_lost_answer_costs_a_gap_never_a_duplicate(
    fake_store: DynamoStore, fake: FakeDynamoDB
) -> None:
    orders = fake_store.atomic_counter("c")
    fake.inject("response-lost", operation="UpdateItem")
    assert [await orders.next() for _ in range(2)] == [2, 3]
    assert counter_item(fake, "c")["value"] == {"N": "3"}
    assert await orders.next_many(3) == range(4, 7)


# --- optimistic ------------------------------------------------------------------------------


@pytest.mark.parametrize("write", ["update", "put"])
@pytest.mark.parametrize("group", [True, False], ids=["grouped", "ungrouped"])
async def test_optimistic_lost_answer_hands_out_its_numbers(
    fake_store: DynamoStore, fake: FakeDynamoDB, write: WriteForm, group: bool
) -> None:
    counter = fake_store.optimistic_counter("c", write=write, group=group)
    assert await counter.next() == 1  # the first write creates the counter item
    fake.inject("response-lost", operation="UpdateItem" if write == "update" else "PutItem")
    assert await counter.next() == 2
    assert await counter.next() == 3
    assert fake.injected == {"response-lost": 1}
    assert counter.statistics().recovered == 1
    item = counter_item(fake, "c")
    assert item["value"] == {"N": "3"} and item[WRITES_ATTRIBUTE] == {"N": "3"}


async def test_optimistic_lost_answer_on_a_later_attempt(
    fake_store: DynamoStore, fake: FakeDynamoDB
) -> None:
    counter = fake_store.optimistic_counter("c")
    fake.inject("throttling", operation="UpdateItem")
    fake.inject("response-lost", operation="UpdateItem")
    assert await counter.next() == 1
    assert fake.injected == {"throttling": 1, "response-lost": 1}
    assert counter.statistics().recovered == 1


async def test_optimistic_lost_answer_inside_a_group(
    fake_store: DynamoStore, fake: FakeDynamoDB
) -> None:
    counter = fake_store.optimistic_counter("c")
    fake.inject("response-lost", operation="UpdateItem")
    numbers = await asyncio.gather(*(counter.next() for _ in range(30)))
    assert_exactly(numbers, 1, 30)
    assert fake.injected == {"response-lost": 1}
    assert counter.statistics().recovered >= 2  # the lost write served a group of callers
    assert fake.requests["UpdateItem"] < 30  # grouped


async def test_optimistic_lost_answer_found_among_rival_writes(fake: FakeDynamoDB) -> None:
    """While the caller waits to resend, another writer takes three numbers; the resend fails
    its condition, and the ring still holds the lost write's token."""
    async with await open_store(fake) as rival_store:
        rival = rival_store.optimistic_counter("c")
        rivals: list[int] = []

        async def rival_writes(secs: float) -> None:
            while len(rivals) < 3:
                rivals.append(await rival.next())

        policy = RetryPolicy(max_attempts=5)
        async with DynamoStore(
            transport=fake, retry_policy=policy, clock=SleepHook(rival_writes), idle_secs=None
        ) as store:
            fake.inject("response-lost", operation="UpdateItem")
            counter = store.optimistic_counter("c")
            assert await counter.next() == 1
            assert counter.statistics().recovered == 1
        assert rivals == [2, 3, 4]


async def test_optimistic_lost_answer_beyond_the_ring_is_counted_never_doubled(
    fake: FakeDynamoDB,
) -> None:
    async with await open_store(fake) as rival_store:
        rival = rival_store.optimistic_counter("c")
        rivals: list[int] = []

        async def rival_writes(secs: float) -> None:
            while len(rivals) < RECENT_WRITES:
                rivals.append(await rival.next())

        policy = RetryPolicy(max_attempts=5)
        async with DynamoStore(
            transport=fake, retry_policy=policy, clock=SleepHook(rival_writes), idle_secs=None
        ) as store:
            fake.inject("response-lost", operation="UpdateItem")
            counter = store.optimistic_counter("c")
            mine = await counter.next()
            assert mine == RECENT_WRITES + 2  # number 1 may be ours: never handed out again
            assert counter.statistics().unresolved == 1
        assert_distinct([mine, *rivals])


@pytest.mark.parametrize(
    ("fault", "applied"), [("internal-error", False), ("reset", False), ("response-lost", True)]
)
async def test_optimistic_write_whose_callers_left_is_counted_only_if_it_may_be_applied(
    fake: FakeDynamoDB, fault: str, applied: bool
) -> None:
    """The write fails in a way that may hide its success and its only caller is cancelled
    before the resend: the next write tells what became of it, counted as unresolved if it was
    applied, not at all if it simply failed."""
    first: asyncio.Task[int] | None = None

    async def caller_leaves_during_the_backoff(secs: float) -> None:
        if first is not None and not first.done():
            first.cancel()
        await asyncio.sleep(0)

    policy = RetryPolicy(max_attempts=5)
    hook = SleepHook(caller_leaves_during_the_backoff)
    async with await open_store(fake, policy, hook) as store:
        counter = store.optimistic_counter("c")
        fake.inject(fault, operation="UpdateItem")
        first = asyncio.ensure_future(counter.next())
        with pytest.raises(asyncio.CancelledError):
            await first
        assert await counter.next() == (2 if applied else 1)
        assert counter.statistics().unresolved == (1 if applied else 0)
    assert fake.injected == {fault: 1}


# --- transactional ---------------------------------------------------------------------------


@pytest.mark.parametrize("tokens", [True, False], ids=["token", "ring"])
@pytest.mark.parametrize("group", [True, False], ids=["grouped", "ungrouped"])
async def test_transactional_lost_answer_stores_the_item_once(tokens: bool, group: bool) -> None:
    fake = FakeDynamoDB(honour_tokens=tokens)
    async with await open_store(fake) as store:
        invoices = store.transactional_counter("c", group=group)
        fake.inject("response-lost", operation="TransactWriteItems")
        assert await invoices.put(numbered) == 1
        assert await invoices.put(numbered) == 2
        assert sorted(items_of(fake, "c")) == [1, 2]
        # With the token the resend succeeds as the first attempt did; without it the resend
        # fails the counter's condition and the token ring tells.
        assert invoices.statistics().recovered == (0 if tokens else 1)


async def test_transactional_lost_answer_inside_a_group(fake: FakeDynamoDB) -> None:
    async with await open_store(fake) as store:
        invoices = store.transactional_counter("c")
        fake.inject("response-lost", operation="TransactWriteItems")
        numbers = await asyncio.gather(*(invoices.put(numbered) for _ in range(30)))
        assert_exactly(numbers, 1, 30)
        assert_exactly(items_of(fake, "c"), 1, 30)
        assert fake.requests["TransactWriteItems"] < 30


async def test_transactional_lost_answer_then_a_transient_cancellation_stores_once(
    fake: FakeDynamoDB,
) -> None:
    async with await open_store(fake) as store:
        invoices = store.transactional_counter("c")
        fake.inject("response-lost", operation="TransactWriteItems")
        fake.inject("transaction-conflict", operation="TransactWriteItems")
        assert await invoices.put(numbered) == 1
        assert await invoices.put(numbered) == 2
        assert sorted(items_of(fake, "c")) == [1, 2]
        assert fake.injected == {"response-lost": 1, "transaction-conflict": 1}


@pytest.mark.parametrize(("fault", "applied"), [("internal-error", False), ("response-lost", True)])
async def test_transactional_given_up_is_counted_only_if_it_may_be_applied(
    fault: str, applied: bool
) -> None:
    fake = FakeDynamoDB(honour_tokens=False)
    policy = RetryPolicy(max_attempts=2, initial_backoff_secs=0.0001, max_backoff_secs=0.0001)
    async with await open_store(fake, policy) as store:
        invoices = store.transactional_counter("c")
        fake.inject(fault, operation="TransactWriteItems")
        fake.inject("internal-error", operation="TransactWriteItems")
        with pytest.raises(RetriesExhausted) as caught:
            await invoices.put(numbered)
        assert caught.value.maybe_applied
        assert await invoices.put(numbered) == (2 if applied else 1)
        assert invoices.statistics().unresolved == (1 if applied else 0)
    assert sorted(items_of(fake, "c")) == ([1, 2] if applied else [1])


async def put_while_rivals_write(fake: FakeDynamoDB, item: Any, *, group: bool) -> tuple[int, Any]:
    """One put whose first answer is lost while a rival writes as often as the ring holds."""
    async with await open_store(fake) as rival_store:
        rival = rival_store.transactional_counter("c")
        rivals: list[int] = []

        async def rival_writes(secs: float) -> None:
            while len(rivals) < RECENT_WRITES:
                rivals.append(await rival.put(numbered))

        policy = RetryPolicy(max_attempts=5)
        async with DynamoStore(
            transport=fake, retry_policy=policy, clock=SleepHook(rival_writes), idle_secs=None
        ) as store:
            fake.inject("response-lost", operation="TransactWriteItems")
            invoices = store.transactional_counter("c", group=group)
            try:
                return await invoices.put(item), invoices.statistics()
            finally:
                assert rivals == list(range(2, RECENT_WRITES + 2))


@pytest.mark.parametrize("group", [True, False], ids=["grouped", "ungrouped"])
async def test_transactional_lost_answer_beyond_the_ring_returns_the_stored_number(
    group: bool,
) -> None:
    fake = FakeDynamoDB(honour_tokens=False)
    number, statistics = await put_while_rivals_write(fake, {"pk": "order-7", "sk": 0}, group=group)
    assert number == 1
    stored = [i for i in fake.items(TABLE) if i["pk"] == {"S": "order-7"}]
    assert [i["number"] for i in stored] == [{"N": "1"}]
    assert (statistics.unresolved, statistics.recovered) == (0, 1)


async def test_transactional_lost_answer_beyond_the_ring_with_an_item_blind_to_its_number() -> None:
    fake = FakeDynamoDB(honour_tokens=False)
    with pytest.raises(ItemAlreadyExists) as caught:
        await put_while_rivals_write(fake, lambda n: {"pk": "order-8", "sk": 0}, group=True)
    assert caught.value.maybe_applied


# --- sort key --------------------------------------------------------------------------------


@pytest.mark.parametrize("group", [True, False], ids=["grouped", "ungrouped"])
async def test_sort_key_lost_answer_stores_the_payload_once(
    fake_store: DynamoStore, fake: FakeDynamoDB, group: bool
) -> None:
    issues = fake_store.sort_key_counter("p", group=group)
    fake.inject("response-lost", operation="PutItem")
    assert await issues.put({"order": 1}) == 1
    assert await issues.put({"order": 2}) == 2
    stored = items_of(fake, "p")
    assert {n: item["order"]["N"] for n, item in stored.items()} == {1: "1", 2: "2"}
    assert issues.statistics().recovered == 1


async def test_sort_key_lost_answer_inside_a_group(
    fake_store: DynamoStore, fake: FakeDynamoDB
) -> None:
    issues = fake_store.sort_key_counter("p")
    await issues.put({"order": 0})
    fake.inject("response-lost", operation="TransactWriteItems")
    numbers = await asyncio.gather(*(issues.put({"order": i}) for i in range(1, 21)))
    assert_exactly(numbers, 2, 21)
    assert_exactly(items_of(fake, "p"), 1, 21)
    assert fake.injected == {"response-lost": 1}


async def test_sort_key_current_and_exists(fake_store: DynamoStore) -> None:
    issues = fake_store.sort_key_counter("p")
    assert not await issues.exists()
    assert await issues.current() == 0
    assert await issues.put() == 1
    assert await issues.current() == 1
    assert await issues.exists()
    assert issues.format_sort_key(7) == {"N": "7"}


# --- every strategy under drawn faults -------------------------------------------------------

KINDS = ["throttling", "internal-error", "transaction-conflict", "reset", "response-lost"]


@pytest.mark.parametrize("seed", [1, 2])
@pytest.mark.parametrize("strategy", ["atomic", "optimistic", "sort_key", "transactional"])
async def test_every_strategy_under_drawn_faults(strategy: str, seed: int) -> None:
    fake = FakeDynamoDB(schedule=FaultSchedule.uniform(0.3, seed=seed, kinds=KINDS))
    policy = RetryPolicy(max_attempts=50, initial_backoff_secs=0.0001, max_backoff_secs=0.0001)
    async with await open_store(fake, policy) as store:
        if strategy == "atomic":
            counter = store.atomic_counter("c")
            numbers = await asyncio.gather(*(counter.next() for _ in range(40)))
            assert_distinct(numbers)  # ADD may leave gaps under lost answers
        elif strategy == "optimistic":
            optimistic = store.optimistic_counter("c")
            numbers = await asyncio.gather(*(optimistic.next() for _ in range(40)))
            stats = optimistic.statistics()
            assert_distinct(numbers)
            if not stats.unresolved:
                assert_exactly(numbers, 1, 40)
        elif strategy == "sort_key":
            issues = store.sort_key_counter("c")
            numbers = await asyncio.gather(*(issues.put({"i": i}) for i in range(40)))
            assert sorted(items_of(fake, "c")) == sorted(numbers)
            assert_distinct(numbers)
        else:
            invoices = store.transactional_counter("c")
            numbers = await asyncio.gather(*(invoices.put(numbered) for _ in range(40)))
            assert sorted(items_of(fake, "c")) == sorted(numbers)
            assert_exactly(numbers, 1, 40)
    assert sum(fake.injected.values()) > 0
