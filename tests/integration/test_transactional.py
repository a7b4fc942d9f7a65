"""Strategy 4, transactional and gapless, against real servers."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from checks import assert_exactly, item_count

from aioseq import (
    ConfigurationError,
    DynamoStore,
    ItemAlreadyExists,
    TransactionalCounter,
)
from aioseq._workload import stored_numbers


def invoice(n: int) -> dict[str, Any]:
    return {"pk": "invoices", "sk": n, "total": 100}


async def test_items_get_consecutive_numbers(aioseq_store: DynamoStore) -> None:
    invoices = aioseq_store.transactional_counter("invoice-counter")
    assert [await invoices.put(invoice) for _ in range(3)] == [1, 2, 3]
    assert await invoices.current() == 3
    assert sorted(await stored_numbers(aioseq_store, "invoices")) == [1, 2, 3]


async def test_a_mapping_item_gets_the_number_as_an_attribute(aioseq_store: DynamoStore) -> None:
    users = aioseq_store.transactional_counter("users", number_attribute="user_number")
    assert await users.put({"pk": "user#kirk", "sk": 1, "name": "Kirk"}) == 1
    item = (
        await aioseq_store.send_once(
            "get_item",
            TableName=aioseq_store.table.name,
            Key={"pk": {"S": "user#kirk"}, "sk": {"N": "1"}},
        )
    )["Item"]
    assert item["user_number"] == {"N": "1"} and item["name"] == {"S": "Kirk"}


async def test_500_concurrent_puts_are_exactly_1_to_500(aioseq_store: DynamoStore) -> None:
    invoices = aioseq_store.transactional_counter("c")
    numbers = await asyncio.gather(*(invoices.put(invoice) for _ in range(500)))
    assert_exactly(numbers, 1, 500)
    assert_exactly(await stored_numbers(aioseq_store, "invoices"), 1, 500)
    assert await invoices.current() == 500


async def test_a_lost_race_is_retried_without_a_gap(aioseq_store: DynamoStore) -> None:
    a = TransactionalCounter(aioseq_store, "c")  # two writers, as two processes
    b = TransactionalCounter(aioseq_store, "c")
    assert await a.put(invoice) == 1
    assert await b.put(invoice) == 2  # a still believes the counter is 1
    assert await a.put(invoice) == 3
    assert a.statistics().conflicts == 1
    assert_exactly(await stored_numbers(aioseq_store, "invoices"), 1, 3)


async def test_racing_writers_stay_gapless(aioseq_store: DynamoStore) -> None:
    writers = [TransactionalCounter(aioseq_store, "c") for _ in range(4)]
    numbers = await asyncio.gather(*(w.put(invoice) for w in writers * 30))
    assert_exactly(numbers, 1, 120)
    assert_exactly(await stored_numbers(aioseq_store, "invoices"), 1, 120)
    assert sum(w.statistics().conflicts for w in writers) > 0


async def test_an_existing_item_is_an_error_and_leaves_the_counter_alone(
    aioseq_store: DynamoStore,
) -> None:
    users = aioseq_store.transactional_counter("users")
    assert await users.put({"pk": "user#kirk", "sk": 1}) == 1
    with pytest.raises(ItemAlreadyExists) as caught:
        await users.put({"pk": "user#kirk", "sk": 1})
    assert caught.value.key == {"pk": "user#kirk", "sk": 1}
    assert await users.current() == 1
    assert await users.put({"pk": "user#spock", "sk": 1}) == 2


@pytest.mark.parametrize(
    "item",
    [
        {"sk": 1},  # no partition key
        {"pk": "p", "sk": 1, "price": 1.5},  # floats have no exact DynamoDB type
        {"pk": "c", "sk": 0},  # the counter item itself
        lambda n: {"pk": "c", "sk": 0},
    ],
)
async def test_bad_items_are_refused_before_any_write(aioseq_store: DynamoStore, item: Any) -> None:
    with pytest.raises(ConfigurationError):
        await aioseq_store.transactional_counter("c", number_attribute="n").put(item)
    assert await item_count(aioseq_store) == 0


def test_bad_names_are_refused(aioseq_store: DynamoStore) -> None:
    with pytest.raises(ConfigurationError):
        TransactionalCounter(aioseq_store, "c", number_attribute="")
