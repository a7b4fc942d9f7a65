"""The block allocator's edges against FakeDynamoDB: arguments it refuses, a refill that fails
as an observer hears it, and what a counter item says of it."""

from __future__ import annotations

from typing import Any

import pytest

from aioseq import (
    BlockAllocator,
    ConfigurationError,
    DynamoStore,
    Numbering,
    RetriesExhausted,
    RetryPolicy,
)
from aioseq.observe import StatisticsObserver
from aioseq.testing import FakeDynamoDB


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"block_size": 10, "min_block_size": 20}, "need min_block_size <= block_size"),
        ({"block_size": 10, "max_block_size": 5}, "need min_block_size <= block_size"),
        ({"target_refill_interval_secs": 0}, "target_refill_interval_secs must be a positive"),
        ({"target_refill_interval_secs": True}, "target_refill_interval_secs must be a positive"),
        ({"prefetch_at": 1}, r"prefetch_at must be in \[0, 1\)"),
        ({"prefetch_at": -0.1}, r"prefetch_at must be in \[0, 1\)"),
        ({"prefetch_at": False}, r"prefetch_at must be in \[0, 1\)"),
        ({"offset": 11, "max_value": 10}, "offset must be an int from 0 to max_value"),
        ({"offset": True}, "offset must be an int from 0 to max_value"),
    ],
)
async def test_an_allocator_made_with_bad_arguments_is_refused(
    fake_store: DynamoStore, arguments: dict[str, Any], message: str
) -> None:
    with pytest.raises(ConfigurationError, match=message):
        BlockAllocator(fake_store, "ids", **arguments)


async def test_a_failed_refill_is_reported_and_raised_to_its_callers() -> None:
    observer = StatisticsObserver()
    fake = FakeDynamoDB(observer=observer)
    policy = RetryPolicy(max_attempts=2, initial_backoff_secs=0.0001, max_backoff_secs=0.0001)
    async with DynamoStore(transport=fake, retry_policy=policy) as store:
        await store.create_table()
        ids = store.block_allocator("ids", block_size=10)
        assert await ids.next() == 1
        fake.inject("throttling", operation="UpdateItem", times=2)
        assert [await ids.next() for _ in range(4)] == [2, 3, 4, 5]  # from the block
        with pytest.raises(RetriesExhausted):
            await ids.next_many(10)  # past the block: a refill, throttled twice
        assert await ids.next_many(10) == range(6, 16)  # the next one does: 6-10, then 11-15
    stats = observer.statistics()
    assert (stats.refills, stats.failed_refills) == (2, 1)
    assert stats.retries == {"ThrottlingException": 1}


async def test_an_allocator_reads_its_counter_and_keeps_its_numbering(
    fake_store: DynamoStore,
) -> None:
    ids = fake_store.block_allocator("ids", block_size=10, stride=3, offset=2)
    assert ids.numbering == Numbering(stride=3, offset=2)
    assert await ids.current() == 0
    assert [await ids.next() for _ in range(3)] == [2, 5, 8]
    assert await ids.current() == 29  # the last number reserved: value 10 (one block) is 29
