"""Strategy 2, the sort-key maximum, against real servers."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator

import pytest
from checks import assert_exactly, item_count

from aioseq import (
    ConfigurationError,
    CounterValueInvalid,
    DynamoStore,
    NumberOutOfRange,
    SortKeyCounter,
    TableSpec,
)
from aioseq._workload import stored_numbers
from aioseq.strategies.sort_key import OnConflict


async def test_puts_number_items_one_by_one(aioseq_store: DynamoStore) -> None:
    issues = aioseq_store.sort_key_counter("projectA")
    assert [await issues.put({"priority": "low"}) for _ in range(3)] == [1, 2, 3]
    assert await issues.put() == 4
    assert await issues.current() == 4
    assert sorted(await stored_numbers(aioseq_store, "projectA")) == [1, 2, 3, 4]
    assert await aioseq_store.sort_key_counter("projectB").put() == 1


async def test_stores_the_callers_attributes(aioseq_store: DynamoStore) -> None:
    n = await aioseq_store.sort_key_counter("p").put({"title": "bug", "votes": 3})
    item = (
        await aioseq_store.send_once(
            "get_item",
            TableName=aioseq_store.table.name,
            Key={"pk": {"S": "p"}, "sk": {"N": str(n)}},
        )
    )["Item"]
    assert item["title"] == {"S": "bug"} and item["votes"] == {"N": "3"}


@pytest.mark.parametrize("on_conflict", ["requery", "increment"])
async def test_500_concurrent_puts_are_exactly_1_to_500(
    aioseq_store: DynamoStore, on_conflict: OnConflict
) -> None:
    issues = aioseq_store.sort_key_counter("p", on_conflict=on_conflict)
    numbers = await asyncio.gather(*(issues.put() for _ in range(500)))
    assert_exactly(numbers, 1, 500)
    assert_exactly(await stored_numbers(aioseq_store, "p"), 1, 500)


@pytest.mark.parametrize("on_conflict", ["requery", "increment"])
async def test_lost_races_are_retried_and_counted(
    aioseq_store: DynamoStore, on_conflict: OnConflict
) -> None:
    # max_in_flight=None: all 30 queries go out before any put, so most puts lose a race.
    issues = aioseq_store.sort_key_counter(
        "p", on_conflict=on_conflict, max_in_flight=None, group=False
    )
    numbers = await asyncio.gather(*(issues.put() for _ in range(30)))
    assert_exactly(numbers, 1, 30)
    assert issues.statistics().conflicts >= 29
    if on_conflict == "increment":
        assert aioseq_store.requests["Query"] == 30  # +1 needs no new query
    else:
        assert aioseq_store.requests["Query"] > 30


async def test_several_writers_on_one_collection_stay_gapless(aioseq_store: DynamoStore) -> None:
    writers = [aioseq_store.sort_key_counter("p") for _ in range(3)]
    numbers = await asyncio.gather(*(w.put() for w in writers * 40))
    assert_exactly(numbers, 1, 120)


async def test_eventually_consistent_queries_still_give_unique_numbers(
    aioseq_store: DynamoStore,
) -> None:
    issues = aioseq_store.sort_key_counter("p", consistent_read=False)
    numbers = await asyncio.gather(*(issues.put() for _ in range(50)))
    assert_exactly(numbers, 1, 50)


@pytest.fixture
async def string_sort_key_store(aioseq_endpoint: str) -> AsyncIterator[DynamoStore]:
    spec = TableSpec(name=f"aioseq-test-s-{uuid.uuid4().hex[:8]}", sort_key_type="S")
    async with DynamoStore.open(table=spec, endpoint_url=aioseq_endpoint) as store:
        await store.create_table()
        yield store
        await store.delete_table()


async def test_zero_padded_string_sort_keys(string_sort_key_store: DynamoStore) -> None:
    store = string_sort_key_store
    issues = store.sort_key_counter("p", zero_pad=3)
    numbers = [await issues.put() for _ in range(12)]
    assert numbers == list(range(1, 13))  # 10 would sort before 9 without padding
    response = await store.send_once(
        "query",
        TableName=store.table.name,
        KeyConditionExpression="pk = :p",
        ExpressionAttributeValues={":p": {"S": "p"}},
        ScanIndexForward=False,
        Limit=1,
    )
    assert response["Items"][0]["sk"] == {"S": "012"}


async def test_a_zero_padded_number_that_does_not_fit_is_an_error(
    string_sort_key_store: DynamoStore,
) -> None:
    issues = string_sort_key_store.sort_key_counter("p", zero_pad=1)
    assert [await issues.put() for _ in range(9)] == list(range(1, 10))
    with pytest.raises(NumberOutOfRange):
        await issues.put()
    assert await item_count(string_sort_key_store) == 9


async def test_a_non_numeric_highest_sort_key_is_an_error(
    string_sort_key_store: DynamoStore,
) -> None:
    store = string_sort_key_store
    await store.send_once(
        "put_item", TableName=store.table.name, Item={"pk": {"S": "p"}, "sk": {"S": "zzz"}}
    )
    with pytest.raises(CounterValueInvalid):
        await store.sort_key_counter("p", zero_pad=4).put()
    assert await item_count(store) == 1


@pytest.mark.parametrize(
    "options",
    [
        {"zero_pad": 4},  # the default table's sort key is a number
        {"on_conflict": "wait"},
        {"zero_pad": 0},
        {"max_in_flight": -1},
    ],
)
def test_bad_options_are_refused(aioseq_store: DynamoStore, options: dict[str, object]) -> None:
    with pytest.raises(ConfigurationError):
        SortKeyCounter(aioseq_store, "p", **options)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "attributes", [{"pk": "other"}, {"sk": 5}, {"price": 1.5}, {"bad": object()}]
)
async def test_bad_attributes_are_refused_before_any_write(
    aioseq_store: DynamoStore, attributes: dict[str, object]
) -> None:
    with pytest.raises(ConfigurationError):
        await aioseq_store.sort_key_counter("p").put(attributes)
    assert await item_count(aioseq_store) == 0


async def test_a_table_without_a_sort_key_is_refused(aioseq_store: DynamoStore) -> None:
    store = DynamoStore(aioseq_store.client, TableSpec(name="x" * 3, sort_key=None))
    with pytest.raises(ConfigurationError):
        store.sort_key_counter("p")
    await store.aclose()
