"""Items spread over shards and read back in number order (issue 32): `aioseq.layout` on the
fake; against the servers: ``tests/integration/test_layout.py``."""

from __future__ import annotations

import asyncio
import random
from typing import Any

import pytest

from aioseq import ConfigurationError, DynamoStore, NumberOutOfRange, TableSpec
from aioseq.layout import MAX_SHARDS, ShardedItems
from aioseq.testing import FakeDynamoDB


def test_a_number_picks_its_shard_and_is_its_sort_key() -> None:
    orders = ShardedItems("orders-acme", shards=4)
    assert [orders.partition(n) for n in range(1, 6)] == [
        "orders-acme#1", "orders-acme#2", "orders-acme#3", "orders-acme#0", "orders-acme#1",
    ]  # fmt: skip
    assert orders.key(7) == {"pk": "orders-acme#3", "sk": 7}
    assert orders.partitions() == [f"orders-acme#{s}" for s in range(4)]
    assert "orders-acme" not in orders.partitions()  # the counter item's partition: none
    other = ShardedItems("t", shards=2, partition_key="tenant", sort_key="n")
    assert other.key(3) == {"tenant": "t#1", "n": 3}
    padded = ShardedItems("s", shards=3, width=6)  # a table whose sort key is a string
    assert padded.key(7) == {"pk": "s#1", "sk": "000007"}
    with pytest.raises(NumberOutOfRange):
        padded.key(10**6)


@pytest.mark.parametrize(
    "bad",
    [
        {"prefix": "", "shards": 4},
        {"prefix": 7, "shards": 4},
        {"prefix": "x" * 2047, "shards": 10},  # "#9" takes it over 2,048 bytes
        {"prefix": "p", "shards": 0},
        {"prefix": "p", "shards": MAX_SHARDS + 1},
        {"prefix": "p", "shards": 2.0},
        {"prefix": "p", "shards": 4, "sort_key": ""},
        {"prefix": "p", "shards": 4, "width": 0},
        {"prefix": "p", "shards": 4, "width": 39},
        {"prefix": "p", "shards": 10**9},
    ],
)
def test_bad_layouts_are_refused(bad: dict[str, Any]) -> None:
    with pytest.raises(ConfigurationError):
        ShardedItems(**bad)


@pytest.mark.parametrize("number", [-1, True, 1.0, "3"])
def test_a_number_must_be_a_whole_number(number: Any) -> None:
    with pytest.raises(ConfigurationError):
        ShardedItems("p", shards=3).partition(number)


async def _put(store: DynamoStore, orders: ShardedItems, count: int) -> list[int]:
    counter = store.transactional_counter(orders.prefix)
    return list(
        await asyncio.gather(
            *(counter.put(lambda n: {**orders.key(n), "total": n * 10}) for _ in range(count))
        )
    )


async def test_items_come_back_in_number_order_over_pages(
    fake: FakeDynamoDB, fake_store: DynamoStore
) -> None:
    orders = ShardedItems("orders-acme", shards=5)
    numbers = await _put(fake_store, orders, 37)
    assert sorted(numbers) == list(range(1, 38))
    items = [i async for i in orders.items(fake_store, page_items=3)]
    assert [int(i["sk"]) for i in items] == list(range(1, 38))
    assert items[0] == {"pk": "orders-acme#1", "sk": 1, "total": 10}
    newest = [int(i["sk"]) async for i in orders.items(fake_store, descending=True)]
    assert newest == list(range(37, 0, -1))
    counter_items = [
        i for i in fake.items(fake_store.table.name) if i["pk"] == {"S": "orders-acme"}
    ]
    assert len(counter_items) == 1  # the counter item, alone in its partition


async def test_stopping_early_reads_no_more_pages(
    fake: FakeDynamoDB, fake_store: DynamoStore
) -> None:
    orders = ShardedItems("o", shards=3)
    await _put(fake_store, orders, 30)
    before = fake.requests["Query"]
    taken = []
    async for item in orders.items(fake_store, page_items=2):
        taken.append(int(item["sk"]))
        if len(taken) == 5:
            break
    assert taken == [1, 2, 3, 4, 5]
    assert fake.requests["Query"] - before == 3 + 1  # a page from each shard, then shard 1's


async def test_string_sort_keys_come_back_in_number_order(fake: FakeDynamoDB) -> None:
    spec = TableSpec(name="padded", sort_key_type="S")
    async with DynamoStore(transport=fake, table=spec) as store:
        await store.create_table()
        spread = ShardedItems("inv", shards=3, width=4)
        invoices = store.transactional_counter("inv")
        await asyncio.gather(*(invoices.put(spread.key) for _ in range(11)))
        assert [i["sk"] async for i in spread.items(store)] == [f"{n:04d}" for n in range(1, 12)]


async def test_empty_shards_and_gaps_are_fine(fake_store: DynamoStore) -> None:
    orders = ShardedItems("g", shards=8)
    for n in random.Random(1).sample(range(1, 100), 12):
        await fake_store.send_once(
            "put_item",
            TableName=fake_store.table.name,
            Item={"pk": {"S": orders.partition(n)}, "sk": {"N": str(n)}},
        )
    listed = [int(i["sk"]) async for i in orders.items(fake_store)]
    assert listed == sorted(listed) and len(listed) == 12
    assert [i async for i in ShardedItems("nothing", shards=4).items(fake_store)] == []
