"""Counter administration and the statistics observer against FakeDynamoDB."""

from __future__ import annotations

from typing import Any

import pytest
from checks import SleepHook, assert_distinct

from aioseq import (
    AioseqError,
    BlockAllocator,
    ConnectionFailed,
    CounterNotFound,
    CounterWouldMoveBack,
    DynamoStore,
    Numbering,
    NumberingMismatch,
    RetryPolicy,
    TableSpec,
)
from aioseq.admin import (
    describe_counter,
    ensure_at_least,
    list_counters,
    partition_ceiling,
    scan_maximum,
    set_counter,
    set_numbering,
    start_after_maximum,
)
from aioseq.observe import StatisticsObserver
from aioseq.testing import FakeDynamoDB

TABLE = "aioseq"


async def test_set_describe_and_list(fake_store: DynamoStore, fake: FakeDynamoDB) -> None:
    with pytest.raises(CounterNotFound):
        await describe_counter(fake_store, "orders")
    await set_counter(fake_store, "orders", 1000)
    info = await describe_counter(fake_store, "orders")
    assert (info.key, info.value) == ("orders", 1000)
    assert info.updated_at is not None
    assert await fake_store.atomic_counter("orders").next() == 1001
    with pytest.raises(CounterWouldMoveBack):
        await set_counter(fake_store, "orders", 10)
    await set_counter(fake_store, "orders", 10, allow_backward=True)
    await fake_store.atomic_counter("invoices").next()
    listed = {c.key: c.value async for c in list_counters(fake_store)}
    assert listed == {"orders": 10, "invoices": 1}


async def test_ensure_at_least_never_moves_back(fake_store: DynamoStore) -> None:
    assert await ensure_at_least(fake_store, "k", 50) == 50
    assert await ensure_at_least(fake_store, "k", 20) == 50
    assert await fake_store.atomic_counter("k").next() == 51


async def test_start_after_the_maximum_already_stored(fake_store: DynamoStore) -> None:
    for n in (3, 17, 9):
        await fake_store.send_once(
            "put_item", TableName=TABLE, Item={"pk": {"S": f"legacy-{n}"}, "sk": {"N": str(n)}}
        )
    assert await scan_maximum(fake_store, table=TABLE, attribute="sk", segments=2) == 17
    await start_after_maximum(fake_store, "k", table=TABLE, attribute="sk")
    assert await fake_store.atomic_counter("k").next() == 18


def sets_the_value(params: dict[str, Any]) -> bool:
    """The operator's ``SET #value = :value, ...`` of a counter item."""
    return str(params.get("UpdateExpression", "")).startswith("SET #value = :value, #updated")


@pytest.mark.parametrize("backward", [True, False], ids=["backward", "forward"])
async def test_a_set_whose_answer_was_lost_never_hands_numbers_out_twice(backward: bool) -> None:
    """``set_counter`` is applied and its answer lost; before a resend, an allocator B
    reserves 10 numbers above the value set, then C reserves 10. Moving back, the write is not
    resent (it raises, ``maybe_applied``): a resend would move the counter back below B's
    block, and C would hand it out again. Moving forward, a resend can only raise the
    counter: it is resent, and refused, as B has passed the value (``maybe_applied``)."""
    fake = FakeDynamoDB()
    policy = RetryPolicy(max_attempts=5, initial_backoff_secs=0.0001, max_backoff_secs=0.0001)
    value = 5 if backward else 25
    async with DynamoStore(transport=fake, retry_policy=policy, idle_secs=None) as store_b:
        await store_b.create_table()
        await set_counter(store_b, "k", 20)
        b = store_b.block_allocator("k", block_size=10, prefetch_at=0)
        c = BlockAllocator(store_b, "k", block_size=10, prefetch_at=0)
        from_b: list[int] = []

        async def rival_reserves(secs: float) -> None:  # the operator's backoff
            if not from_b:
                from_b.extend([await b.next() for _ in range(10)])

        async with DynamoStore(
            transport=fake, retry_policy=policy, clock=SleepHook(rival_reserves), idle_secs=None
        ) as store_a:
            fake.inject("response-lost", operation="UpdateItem", when=sets_the_value)
            error: AioseqError | None = None
            try:
                await set_counter(store_a, "k", value, allow_backward=backward)
            except AioseqError as exc:
                error = exc
            sets = sum(1 for sent in fake.sent if sets_the_value(sent.params))
            if not from_b:
                from_b.extend([await b.next() for _ in range(10)])
            from_c = [await c.next() for _ in range(10)]
            await c.aclose()
    assert_distinct([*from_b, *from_c])
    # Forward, resent: B took 26..35 meanwhile, so the resend is refused.
    assert isinstance(error, ConnectionFailed if backward else CounterWouldMoveBack)
    assert error.maybe_applied  # (it was applied)
    assert sets == (2 if backward else 3)  # (with the set to 20: sent once, or resent)
    assert from_b[0] == value + 1


async def test_set_numbering_moves_past_every_number_handed_out(fake_store: DynamoStore) -> None:
    blocks = fake_store.block_allocator("k", block_size=5, prefetch_at=0)
    assert [await blocks.next() for _ in range(3)] == [1, 2, 3]
    await blocks.aclose()
    new = Numbering(stride=10, offset=7)
    await set_numbering(fake_store, "k", new)
    info = await describe_counter(fake_store, "k")
    assert info.numbering == new
    with pytest.raises(NumberingMismatch):
        await fake_store.atomic_counter("k").next()
    async with BlockAllocator(fake_store, "k", block_size=5, stride=10, offset=7) as renumbered:
        assert await renumbered.next() == 7  # above 3, the last number of the old numbering


async def test_the_statistics_observer_counts_requests_retries_refills_and_waste() -> None:
    observer = StatisticsObserver()
    fake = FakeDynamoDB(observer=observer)
    async with DynamoStore(transport=fake) as store:
        await store.create_table()
        fake.inject("throttling", operation="UpdateItem")
        blocks = store.block_allocator("k", block_size=10, prefetch_at=0)
        assert await blocks.next() == 1
        await store._shared.sweep()
        await store._shared.sweep()
        other = store.block_allocator("k", block_size=10, prefetch_at=0)
        await other.next()
        rival = store.block_allocator("r", block_size=10, prefetch_at=0)
        await rival.next()
    stats = observer.statistics()
    assert stats.requests["UpdateItem"] >= 4
    assert stats.errors == {"ThrottlingException": 1}
    assert sum(stats.retries.values()) == 1
    assert stats.refills >= 3
    assert stats.evictions == 1


async def test_the_partition_ceiling_is_there_when_items_share_the_counters_partition(
    fake_store: DynamoStore, fake: FakeDynamoDB
) -> None:
    beside = fake_store.transactional_counter("beside")
    await beside.put(lambda n: {"pk": "beside", "sk": n})
    big = fake_store.transactional_counter("big")
    await big.put(lambda n: {"pk": "big", "sk": n, "note": "x" * 3000})  # 3 KB: 6 WCU
    spread = fake_store.transactional_counter("spread")
    await spread.put(lambda n: {"pk": f"spread#{n}", "sk": n})
    fake.reset()
    assert await partition_ceiling(fake_store, "beside") == 500
    assert await partition_ceiling(fake_store, "big") == pytest.approx(1000 / 6)
    assert await partition_ceiling(fake_store, "spread") is None  # the counter item alone
    assert await partition_ceiling(fake_store, "never-used") is None
    assert fake.requests == {"Query": 4}
    async with DynamoStore(
        transport=fake, table=TableSpec(name="no-sort-key", sort_key=None)
    ) as flat:
        assert await partition_ceiling(flat, "beside") is None  # no request: nothing beside
    assert fake.requests == {"Query": 4}
