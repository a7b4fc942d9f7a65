"""The block allocator and the store's per-key registry against FakeDynamoDB: block arithmetic,
demand-sized blocks on an injected clock, give-back, eviction and revival, in milliseconds."""

from __future__ import annotations

import asyncio

import pytest

from aioseq import (
    BlockAllocator,
    ConfigurationError,
    DynamoStore,
    NumberingMismatch,
    NumberOutOfRange,
)
from aioseq.testing import FakeDynamoDB, ManualClock

TABLE = "aioseq"


def counter_value(fake: FakeDynamoDB, key: str) -> int | None:
    for item in fake.items(TABLE):
        if item["pk"] == {"S": key} and item["sk"] == {"N": "0"}:
            return int(item["value"]["N"])
    return None


# --- block arithmetic ------------------------------------------------------------------------


async def test_fixed_blocks_one_add_each(fake_store: DynamoStore, fake: FakeDynamoDB) -> None:
    blocks = fake_store.block_allocator(
        "k", block_size=10, target_refill_interval_secs=None, prefetch_at=0
    )
    assert [await blocks.next() for _ in range(25)] == list(range(1, 26))
    assert fake.requests == {"UpdateItem": 3}
    assert counter_value(fake, "k") == 30
    stats = blocks.statistics()
    assert (stats.reserved, stats.handed_out, stats.available, stats.refills) == (30, 25, 5, 3)


async def test_stride_and_offset_give_an_arithmetic_sequence(
    fake_store: DynamoStore, fake: FakeDynamoDB
) -> None:
    blocks = fake_store.block_allocator(
        "k", block_size=4, stride=3, offset=2, target_refill_interval_secs=None, prefetch_at=0
    )
    assert [await blocks.next() for _ in range(6)] == [2, 5, 8, 11, 14, 17]
    assert counter_value(fake, "k") == 8  # counter values, not numbers
    assert (await blocks.next_many(2)) == range(20, 24, 3)


async def test_another_numbering_on_the_same_key_takes_nothing(
    fake_store: DynamoStore, fake: FakeDynamoDB
) -> None:
    first = fake_store.block_allocator("k", block_size=5, prefetch_at=0)
    assert await first.next() == 1
    other = BlockAllocator(fake_store, "k", block_size=5, stride=2, offset=1, prefetch_at=0)
    with pytest.raises(NumberingMismatch):
        await other.next()
    assert counter_value(fake, "k") == 5
    await other.aclose()


async def test_max_value_is_never_passed(fake_store: DynamoStore, fake: FakeDynamoDB) -> None:
    blocks = fake_store.block_allocator(
        "k", block_size=2, max_value=5, target_refill_interval_secs=None, prefetch_at=0
    )
    assert [await blocks.next() for _ in range(4)] == [1, 2, 3, 4]
    with pytest.raises(NumberOutOfRange):
        for _ in range(2):
            await blocks.next()
    assert (counter_value(fake, "k") or 0) <= 5


async def test_a_burst_is_served_by_one_refill_in_arrival_order(
    fake_store: DynamoStore, fake: FakeDynamoDB
) -> None:
    blocks = fake_store.block_allocator("k", block_size=10, prefetch_at=0)
    numbers = await asyncio.gather(*(blocks.next() for _ in range(50)))
    assert numbers == list(range(1, 51))
    assert fake.requests["UpdateItem"] <= 2
    assert blocks.statistics().refills_waited >= 49


async def test_next_many_is_contiguous_and_never_overlaps_next(fake_store: DynamoStore) -> None:
    blocks = fake_store.block_allocator(
        "k", block_size=10, target_refill_interval_secs=None, prefetch_at=0
    )
    assert await blocks.next() == 1
    many = await blocks.next_many(15)
    assert len(many) == 15 and many.step == 1 and many.start > 1
    after = await blocks.next()
    assert after >= many.stop
    stats = blocks.statistics()
    assert stats.handed_out == 17
    assert stats.reserved == stats.handed_out + stats.available + stats.wasted


async def test_prefetch_reserves_the_next_block_before_it_is_needed(
    fake_store: DynamoStore, fake: FakeDynamoDB
) -> None:
    blocks = fake_store.block_allocator(
        "k", block_size=10, prefetch_at=0.5, target_refill_interval_secs=None
    )
    for _ in range(6):
        await blocks.next()
    for _ in range(5):
        await asyncio.sleep(0)  # the background prefetch's request and answer
    assert fake.requests["UpdateItem"] == 2
    assert blocks.available == 14
    assert [await blocks.next() for _ in range(14)] == list(range(7, 21))


async def test_demand_sized_blocks_double_then_halve_at_most(
    fake_store: DynamoStore, clock: ManualClock
) -> None:
    blocks = fake_store.block_allocator(
        "k",
        block_size=10,
        min_block_size=5,
        max_block_size=1000,
        target_refill_interval_secs=10.0,
        prefetch_at=0,
    )
    for _ in range(10):
        await blocks.next()
    clock.advance(1.0)  # 10 numbers in 1 s, a 10 s target: 100 wanted, at most doubled
    await blocks.next()
    assert blocks.statistics().block_size == 20
    for _ in range(19):
        await blocks.next()
    clock.advance(1000.0)  # 20 numbers in 1000 s: 0.2 wanted, at most halved
    await blocks.next()
    assert blocks.statistics().block_size == 10
    assert blocks.statistics().reserved == 40


# --- lost answers and throttles --------------------------------------------------------------


async def test_a_lost_add_costs_a_block_never_a_duplicate(
    fake_store: DynamoStore, fake: FakeDynamoDB
) -> None:
    blocks = fake_store.block_allocator(
        "k", block_size=10, target_refill_interval_secs=None, prefetch_at=0
    )
    fake.inject("response-lost", operation="UpdateItem")
    numbers = [await blocks.next() for _ in range(5)]
    assert numbers == list(range(11, 16))  # 1..10 were reserved by the lost ADD
    assert counter_value(fake, "k") == 20
    assert fake.injected == {"response-lost": 1}


async def test_a_throttled_refill_is_retried_with_no_gap(
    fake_store: DynamoStore, fake: FakeDynamoDB
) -> None:
    blocks = fake_store.block_allocator("k", block_size=10, prefetch_at=0)
    fake.inject("throttling", operation="UpdateItem", times=3)
    assert [await blocks.next() for _ in range(3)] == [1, 2, 3]
    assert fake.requests["UpdateItem"] == 4
    assert blocks.counter.statistics().retries


# --- give-back -------------------------------------------------------------------------------


async def test_close_gives_the_unused_tail_back(
    fake_store: DynamoStore, fake: FakeDynamoDB
) -> None:
    blocks = BlockAllocator(fake_store, "k", block_size=10, prefetch_at=0)
    assert [await blocks.next() for _ in range(3)] == [1, 2, 3]
    await blocks.aclose()
    assert counter_value(fake, "k") == 3
    assert (blocks.statistics().returned, blocks.statistics().wasted) == (7, 0)
    async with BlockAllocator(fake_store, "k", block_size=10, prefetch_at=0) as later:
        assert await later.next() == 4


async def test_no_give_back_past_a_later_reservation(
    fake_store: DynamoStore, fake: FakeDynamoDB
) -> None:
    first = BlockAllocator(fake_store, "k", block_size=10, prefetch_at=0)
    second = BlockAllocator(fake_store, "k", block_size=10, prefetch_at=0)
    assert await first.next() == 1
    assert await second.next() == 11
    await first.aclose()
    assert counter_value(fake, "k") == 20
    assert (first.statistics().returned, first.statistics().wasted) == (0, 9)
    await second.aclose()
    assert counter_value(fake, "k") == 11
    with pytest.raises(Exception, match="closed"):
        await first.next()


async def test_closing_the_store_gives_every_allocator_back(fake: FakeDynamoDB) -> None:
    store = DynamoStore(transport=fake)
    await store.create_table()
    for key in ("a", "b"):
        await store.block_allocator(key, block_size=10, prefetch_at=0).next()
    await store.aclose()
    assert (counter_value(fake, "a"), counter_value(fake, "b")) == (1, 1)


# --- the registry ----------------------------------------------------------------------------


async def test_one_object_per_factory_key_and_options(fake_store: DynamoStore) -> None:
    blocks = fake_store.block_allocator("k", block_size=10)
    assert fake_store.block_allocator("k", block_size=10) is blocks
    assert fake_store.block_allocator("other", block_size=10) is not blocks
    assert fake_store.atomic_counter("k") is fake_store.atomic_counter("k")
    with pytest.raises(ConfigurationError, match="block_size"):
        fake_store.block_allocator("k", block_size=20)
    with pytest.raises(ConfigurationError, match="max_value"):
        fake_store.atomic_counter("k", max_value=10)
    assert fake_store.statistics().live_keys == 3


async def test_a_sweep_drops_an_idle_allocator_after_it_gives_back(
    fake_store: DynamoStore, fake: FakeDynamoDB
) -> None:
    blocks = fake_store.block_allocator("k", block_size=10, prefetch_at=0)
    assert await blocks.next() == 1
    assert await fake_store._shared.sweep() == 0  # used since it was made: noted, kept
    assert await fake_store._shared.sweep() == 1  # idle for a whole sweep: dropped
    assert counter_value(fake, "k") == 1
    stats = fake_store.statistics()
    assert (stats.live_keys, stats.evictions, stats.returned, stats.handed_out) == (0, 1, 9, 1)
    fresh = fake_store.block_allocator("k", block_size=10, prefetch_at=0)
    assert fresh is not blocks
    assert await fresh.next() == 2


async def test_a_dropped_allocator_still_held_is_revived_on_use(
    fake_store: DynamoStore, fake: FakeDynamoDB
) -> None:
    blocks = fake_store.block_allocator("k", block_size=10, prefetch_at=0)
    await blocks.next()
    await fake_store._shared.sweep()
    await fake_store._shared.sweep()
    assert await blocks.next() == 2  # it refills from the counter item
    assert fake_store.statistics().reserved >= 11
    await fake_store.aclose()
    assert counter_value(fake, "k") == 2  # the revived allocator was closed with the store


async def test_a_busy_allocator_is_not_dropped(fake_store: DynamoStore, fake: FakeDynamoDB) -> None:
    blocks = fake_store.block_allocator("k", block_size=10, prefetch_at=0)
    await blocks.next()
    await fake_store._shared.sweep()
    waiting = [asyncio.ensure_future(blocks.next_many(20))]
    await asyncio.sleep(0)  # its refill is in flight
    assert blocks.busy()
    assert await fake_store._shared.sweep() == 0
    assert len(await waiting[0]) == 20


async def test_a_counter_is_dropped_too(fake_store: DynamoStore) -> None:
    counter = fake_store.atomic_counter("k")
    assert await counter.next() == 1
    await fake_store._shared.sweep()
    assert await fake_store._shared.sweep() == 1
    assert fake_store.atomic_counter("k") is not counter
    assert await fake_store.atomic_counter("k").next() == 2
