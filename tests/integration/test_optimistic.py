"""Strategy 3, optimistic locking, against real servers."""

from __future__ import annotations

import asyncio

import pytest
from checks import assert_exactly, item_count

from aioseq import (
    ConfigurationError,
    DynamoStore,
    OptimisticCounter,
)
from aioseq.strategies.optimistic import WriteForm

WRITE_FORMS = ["update", "put"]


@pytest.mark.parametrize("write", WRITE_FORMS)
async def test_sequential_values(aioseq_store: DynamoStore, write: WriteForm) -> None:
    counter = aioseq_store.optimistic_counter("k", write=write)
    assert [await counter.next() for _ in range(3)] == [1, 2, 3]
    assert await counter.next_many(4) == range(4, 8)
    assert await counter.current() == 7


async def test_reads_the_counter_item_once_then_writes_only(aioseq_store: DynamoStore) -> None:
    counter = aioseq_store.optimistic_counter("k")
    for _ in range(10):
        await counter.next()
    assert aioseq_store.requests["GetItem"] == 1
    assert aioseq_store.requests["UpdateItem"] == 10


@pytest.mark.parametrize("write", WRITE_FORMS)
async def test_500_concurrent_callers_get_gapless_distinct_numbers(
    aioseq_store: DynamoStore, write: WriteForm
) -> None:
    counter = aioseq_store.optimistic_counter("k", write=write)
    numbers = await asyncio.gather(*(counter.next() for _ in range(500)))
    assert_exactly(numbers, 1, 500)


@pytest.mark.parametrize("write", WRITE_FORMS)
async def test_a_lost_race_is_retried_with_the_value_the_failure_returned(
    aioseq_store: DynamoStore, write: WriteForm
) -> None:
    a = OptimisticCounter(aioseq_store, "k", write=write)  # two writers, as two processes
    b = OptimisticCounter(aioseq_store, "k", write=write)
    assert await a.next() == 1
    assert await b.next() == 2  # b reads 1, writes 2; a still believes 1
    reads = aioseq_store.requests["GetItem"]
    assert await a.next() == 3  # loses once (value is 2, not 1), then wins
    assert a.statistics().conflicts == 1
    assert aioseq_store.requests["GetItem"] == reads  # ALL_OLD: no second read


async def test_racing_writers_are_counted_and_stay_gapless(aioseq_store: DynamoStore) -> None:
    counters = [OptimisticCounter(aioseq_store, "k") for _ in range(4)]
    numbers = await asyncio.gather(*(c.next() for c in counters * 50))
    assert_exactly(numbers, 1, 200)
    assert sum(c.statistics().conflicts for c in counters) > 0


async def test_unlimited_in_flight_races_itself_but_stays_correct(
    aioseq_store: DynamoStore,
) -> None:
    counter = aioseq_store.optimistic_counter("k", max_in_flight=None, group=False)
    numbers = await asyncio.gather(*(counter.next() for _ in range(20)))
    assert_exactly(numbers, 1, 20)
    assert counter.statistics().conflicts > 0


async def test_a_missing_counter_item_is_created_race_free(aioseq_store: DynamoStore) -> None:
    counters = [aioseq_store.optimistic_counter("new") for _ in range(10)]
    numbers = await asyncio.gather(*(c.next() for c in counters))
    assert_exactly(numbers, 1, 10)


@pytest.mark.parametrize(
    "options", [{"write": "merge"}, {"max_in_flight": 0}, {"max_in_flight": 1.5}]
)
async def test_bad_options_are_refused(
    aioseq_store: DynamoStore, options: dict[str, object]
) -> None:
    with pytest.raises(ConfigurationError):
        OptimisticCounter(aioseq_store, "k", **options)  # type: ignore[arg-type]
    assert await item_count(aioseq_store) == 0
