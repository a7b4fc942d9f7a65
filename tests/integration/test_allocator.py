"""The block allocator, against real servers."""

from __future__ import annotations

import asyncio
import threading

import pytest
from checks import assert_distinct, item_count

from aioseq import (
    BlockAllocator,
    ConfigurationError,
    DynamoStore,
    StoreClosed,
    TableNotFound,
    TableSpec,
    WrongEventLoop,
)
from aioseq.testing import ManualClock


async def test_numbers_come_from_one_block(aioseq_store: DynamoStore) -> None:
    allocator = aioseq_store.block_allocator("orders", block_size=50, prefetch_at=0)
    assert [await allocator.next() for _ in range(50)] == list(range(1, 51))
    assert aioseq_store.requests["UpdateItem"] == 1
    assert await allocator.next() == 51
    assert aioseq_store.requests["UpdateItem"] == 2


async def test_a_burst_is_coalesced_into_a_handful_of_requests(aioseq_store: DynamoStore) -> None:
    allocator = aioseq_store.block_allocator("orders", block_size=100)
    numbers = await asyncio.gather(*(allocator.next() for _ in range(10_000)))
    assert numbers == list(range(1, 10_001))  # FIFO: gather returns in call order
    assert aioseq_store.requests["UpdateItem"] <= 3
    stats = allocator.statistics()
    assert stats.handed_out == 10_000 and stats.refills <= 3


async def test_next_many_mixes_with_next_in_order(aioseq_store: DynamoStore) -> None:
    allocator = aioseq_store.block_allocator("k", block_size=10, prefetch_at=0)
    calls = [allocator.next(), allocator.next_many(25), allocator.next(), allocator.next_many(3)]
    one, many, two, three = await asyncio.gather(*calls)
    assert one == 1 and many == range(2, 27) and two == 27 and three == range(28, 31)


async def test_numbers_increase_within_the_allocator_while_others_take_too(
    aioseq_store: DynamoStore,
) -> None:
    allocator = aioseq_store.block_allocator("k", block_size=5)
    other = aioseq_store.atomic_counter("k")
    mine: list[int] = []
    for _ in range(40):
        mine.append(await allocator.next())
        await other.next()
    assert mine == sorted(mine)
    assert_distinct(mine)


async def test_a_too_short_block_front_is_skipped_to_keep_ranges_contiguous(
    aioseq_store: DynamoStore,
) -> None:
    allocator = aioseq_store.block_allocator("k", block_size=10, prefetch_at=0)
    assert await allocator.next() == 1  # holds 2..10
    await aioseq_store.atomic_counter("k").next()  # someone else takes 11
    assert await allocator.next_many(20) == range(12, 32)
    assert allocator.statistics().wasted == 9
    assert await allocator.next() == 32


async def test_the_next_block_is_prefetched_before_it_is_needed(aioseq_store: DynamoStore) -> None:
    allocator = aioseq_store.block_allocator("k", block_size=10, prefetch_at=0.5)
    for _ in range(6):
        await allocator.next()  # 4 left, under the low-water mark of 5: prefetch starts
    await allocator.prefetch()
    assert allocator.statistics().refills == 2
    waited = allocator.statistics().refills_waited
    assert [await allocator.next() for _ in range(14)] == list(range(7, 21))
    assert allocator.statistics().refills_waited == waited == 1


async def test_block_size_follows_demand(aioseq_store: DynamoStore) -> None:
    clock = ManualClock()  # the store's: the allocator measures its refill rate on it
    async with DynamoStore(
        aioseq_store.client, aioseq_store.table, clock=clock, idle_secs=None
    ) as store:
        allocator = store.block_allocator(
            "k",
            block_size=10,
            min_block_size=5,
            max_block_size=40,
            target_refill_interval_secs=1.0,
            prefetch_at=0,
        )

        async def refill_after(seconds: float) -> int:
            """Use up the block, let time pass, and take one number: exactly one refill."""
            available = allocator.statistics().available
            if available:
                await allocator.next_many(available)
            clock.advance(seconds)
            await allocator.next()
            return allocator.block_size

        assert await refill_after(0) == 10  # the first refill has no rate to go by
        # a block per 0.01 s is 1,000 numbers/s, which wants blocks of 1,000: doubles, up to 40
        assert [await refill_after(0.01) for _ in range(3)] == [20, 40, 40]
        # a block per 100 s wants blocks of less than 1: halves, down to 5
        assert [await refill_after(100) for _ in range(4)] == [20, 10, 5, 5]


async def test_aclose_gives_back_the_unused_tail(aioseq_store: DynamoStore) -> None:
    async with aioseq_store.block_allocator("k", block_size=100) as first:
        assert await first.next_many(7) == range(1, 8)
    assert first.statistics().returned == 93 and first.statistics().wasted == 0
    assert await first.current() == 7
    async with aioseq_store.block_allocator("k") as second:
        assert await second.next() == 8  # no hole across the restart


async def test_give_back_is_refused_when_someone_reserved_after_us(
    aioseq_store: DynamoStore,
) -> None:
    allocator = aioseq_store.block_allocator("k", block_size=100, prefetch_at=0)
    assert await allocator.next() == 1
    assert await aioseq_store.atomic_counter("k").next() == 101
    await allocator.aclose()
    stats = allocator.statistics()
    assert stats.returned == 0 and stats.wasted == 99
    assert await allocator.current() == 101


async def test_strides_keep_independent_writers_apart(aioseq_store: DynamoStore) -> None:
    west = aioseq_store.block_allocator("orders-west", stride=3, offset=1, block_size=4)
    east = aioseq_store.block_allocator("orders-east", stride=3, offset=2, block_size=4)
    a = [await west.next() for _ in range(10)]
    b = [await east.next() for _ in range(10)]
    assert a == list(range(1, 30, 3)) and b == list(range(2, 30, 3))
    assert await west.next_many(2) == range(31, 35, 3)


async def test_a_cancelled_waiter_loses_no_number(aioseq_store: DynamoStore) -> None:
    allocator = aioseq_store.block_allocator("k", block_size=100)
    tasks = [asyncio.create_task(allocator.next()) for _ in range(10)]
    await asyncio.sleep(0)  # all ten are waiting for the first refill
    tasks[3].cancel()
    done = await asyncio.gather(*tasks, return_exceptions=True)
    assert isinstance(done[3], asyncio.CancelledError)
    numbers = [n for n in done if isinstance(n, int)]
    assert numbers == list(range(1, 10))
    assert await allocator.next() == 10
    assert allocator.statistics().wasted == 0


async def test_cancelling_every_waiter_does_not_cancel_the_refill(
    aioseq_store: DynamoStore,
) -> None:
    allocator = aioseq_store.block_allocator("k", block_size=100)
    tasks = [asyncio.create_task(allocator.next()) for _ in range(5)]
    await asyncio.sleep(0)
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    await allocator.prefetch()
    assert allocator.statistics().reserved == 100
    assert await allocator.next() == 1


async def test_a_caller_waiting_on_a_prefetch_can_be_cancelled(aioseq_store: DynamoStore) -> None:
    allocator = aioseq_store.block_allocator("k", block_size=4, prefetch_at=0.75)
    assert await allocator.next() == 1  # 3 left: at the low-water mark of 3
    assert await allocator.next() == 2  # 2 left: below it, a prefetch starts
    assert await allocator.next_many(2) == range(3, 5)  # the block is empty
    waiter = asyncio.create_task(allocator.next())
    await asyncio.sleep(0)
    waiter.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiter
    await allocator.prefetch()
    assert await allocator.next() == 5


async def test_closing_while_a_refill_is_in_flight(aioseq_store: DynamoStore) -> None:
    allocator = aioseq_store.block_allocator("k", block_size=10)
    first = asyncio.create_task(allocator.next())
    await asyncio.sleep(0)
    await allocator.aclose()  # the refill in flight finishes and serves its waiter
    assert await first == 1
    with pytest.raises(StoreClosed):
        await allocator.next()
    stats = allocator.statistics()
    assert stats.reserved == stats.handed_out + stats.returned + stats.wasted
    assert stats.returned == 9  # a block of 10 reserved, 1 handed out, 9 given back


async def test_cancelling_aclose_leaves_it_closed_and_accounted(aioseq_store: DynamoStore) -> None:
    allocator = aioseq_store.block_allocator("k", block_size=10)
    waiter = asyncio.create_task(allocator.next())
    await asyncio.sleep(0)
    closing = asyncio.create_task(allocator.aclose())
    await asyncio.sleep(0)
    closing.cancel()
    with pytest.raises(asyncio.CancelledError):
        await closing
    await asyncio.gather(waiter, return_exceptions=True)
    with pytest.raises(StoreClosed):
        await allocator.next()
    await allocator.aclose()  # idempotent
    stats = allocator.statistics()
    assert stats.available == 0
    assert stats.reserved == stats.handed_out + stats.returned + stats.wasted


async def test_a_failed_refill_fails_its_waiters_and_the_allocator_recovers(
    aioseq_endpoint: str,
) -> None:
    spec = TableSpec(name="aioseq-test-late-table")
    async with DynamoStore.open(table=spec, endpoint_url=aioseq_endpoint) as store:
        allocator = store.block_allocator("k")
        results = await asyncio.gather(
            *(allocator.next() for _ in range(5)), return_exceptions=True
        )
        assert all(isinstance(r, TableNotFound) for r in results)
        await store.create_table()
        try:
            assert await allocator.next() == 1
        finally:
            await store.delete_table()


async def test_another_event_loop_is_refused(aioseq_store: DynamoStore) -> None:
    allocator = aioseq_store.block_allocator("k")
    await allocator.next()
    errors: list[BaseException] = []

    def other_loop() -> None:
        try:
            asyncio.run(allocator.next())
        except BaseException as exc:
            errors.append(exc)

    thread = threading.Thread(target=other_loop)
    thread.start()
    thread.join()
    assert len(errors) == 1 and isinstance(errors[0], WrongEventLoop)


async def test_statistics_and_repr(aioseq_store: DynamoStore) -> None:
    allocator = aioseq_store.block_allocator("orders", block_size=10, prefetch_at=0)
    await allocator.next_many(4)
    assert "orders" in repr(allocator) and "available=6" in repr(allocator)
    stats = allocator.statistics()
    assert (stats.handed_out, stats.reserved, stats.available, stats.refills) == (4, 10, 6, 1)


async def test_several_allocators_on_one_key_never_collide(aioseq_store: DynamoStore) -> None:
    allocators = [BlockAllocator(aioseq_store, "k", block_size=7) for _ in range(5)]
    numbers = await asyncio.gather(*(a.next() for a in allocators * 100))
    assert_distinct(numbers)
    for allocator in allocators:
        await allocator.aclose()
    total = sum(a.statistics().handed_out for a in allocators)
    assert total == 500


@pytest.mark.parametrize(
    "options",
    [
        {"block_size": 0},
        {"block_size": 10, "max_block_size": 5},
        {"min_block_size": 200},
        {"target_refill_interval_secs": 0},
        {"prefetch_at": 1.0},
        {"stride": 0},
        {"offset": -1},
        {"block_size": 2.5},
    ],
)
async def test_bad_options_are_refused(
    aioseq_store: DynamoStore, options: dict[str, object]
) -> None:
    with pytest.raises(ConfigurationError):
        BlockAllocator(aioseq_store, "k", **options)  # type: ignore[arg-type]
    assert await item_count(aioseq_store) == 0


async def test_offset_zero_with_the_default_max_value(aioseq_store: DynamoStore) -> None:
    """Numbers 0, 1, 2, ...: the counter's derived limit would be one past what a counter
    holds, and was refused as a bad max_value."""
    allocator = aioseq_store.block_allocator("from-zero", offset=0, block_size=3)
    assert [await allocator.next() for _ in range(4)] == [0, 1, 2, 3]
    await allocator.aclose()
