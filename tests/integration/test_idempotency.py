"""Idempotency keys end to end, on moto and DynamoDB Local (issue 34's checks): concurrent calls
with one key from two stores store one item; through a proxy that loses 20% of the answers,
callers that call again until answered (and once more) get one number per key and the items
are exactly 1..N; another item under a used key is refused and writes nothing; at max_value,
a recorded key still answers and a group hands out the numbers that fit; a used key on
another item table is refused."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import Any

import pytest
from checks import assert_exactly

from aioseq import (
    DynamoStore,
    GroupCommit,
    IdempotencyKeyReused,
    NumberOutOfRange,
    RetriesExhausted,
    RetryPolicy,
    TransactionalCounter,
)
from aioseq.strategies._idempotency import RECORD_PREFIX
from aioseq.testing.fault_proxy import FaultProxy, FaultSchedule

FAST = RetryPolicy(max_attempts=20, max_backoff_secs=0.01)

#: Groups of 4: many transactions, so that many answers are lost.
SMALL_GROUPS = GroupCommit(max_size=4)


async def scan(store: DynamoStore) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    kwargs: dict[str, Any] = {"TableName": store.table.name, "ConsistentRead": True}
    while True:
        page = await store.send_with_retries("scan", **kwargs)
        items.extend(page.get("Items", []))
        if "LastEvaluatedKey" not in page:
            return items
        kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]


def orders_of(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [i for i in items if "customer" in i]


def order(customer: str) -> Callable[[int], dict[str, Any]]:
    return lambda n: {"pk": f"orders#{n % 8}", "sk": n, "customer": customer}


async def test_fifty_concurrent_calls_from_two_stores_store_one_order(
    aioseq_store: DynamoStore, aioseq_endpoint: str
) -> None:
    async with DynamoStore.open(
        table=aioseq_store.table, endpoint_url=aioseq_endpoint, retry_policy=FAST
    ) as other:
        counters = [s.transactional_counter("orders") for s in (aioseq_store, other)]
        got = await asyncio.gather(
            *(counters[i % 2].put(order("ada"), idempotency_key="k1") for i in range(50))
        )
        assert len(set(got)) == 1
        stored = orders_of(await scan(aioseq_store))
        assert [i["sk"]["N"] for i in stored] == [str(got[0])]
        # the same for 20 sort-key puts, from two stores, grouped on one and not the other
        tickets = [aioseq_store.sort_key_counter("t"), other.sort_key_counter("t", group=False)]
        got = await asyncio.gather(
            *(tickets[i % 2].put({"customer": "bo"}, idempotency_key="k1") for i in range(20))
        )
        assert len(set(got)) == 1
        stored = [i for i in orders_of(await scan(aioseq_store)) if i["pk"]["S"] == "t"]
        assert [i["sk"]["N"] for i in stored] == [str(got[0])]


async def test_another_item_under_a_used_key_writes_nothing(aioseq_store: DynamoStore) -> None:
    orders = aioseq_store.transactional_counter("orders")
    assert await orders.put(order("ada"), idempotency_key="k1") == 1
    before = await scan(aioseq_store)
    with pytest.raises(IdempotencyKeyReused) as raised:
        await orders.put(order("eve"), idempotency_key="k1")
    assert raised.value.number == 1
    tickets = aioseq_store.sort_key_counter("t")
    assert await tickets.put({"customer": "bo"}, idempotency_key="k1") == 1
    with pytest.raises(IdempotencyKeyReused):
        await tickets.put({"customer": "cy"}, idempotency_key="k1")
    after = await scan(aioseq_store)
    assert len(after) == len(before) + 2  # the ticket and its record, nothing else
    assert await orders.current() == 1 and await tickets.current() == 1


@pytest.mark.parametrize("strategy", ["transactional", "sort-key"])
async def test_lost_answers_and_callers_that_call_again(
    aioseq_store: DynamoStore, aioseq_endpoint: str, strategy: str
) -> None:
    """200 keys through a proxy losing 20% of the answers of writes and reads (applied, then
    the connection reset); each caller calls until it gets a number, then once more from
    another store (which finds the key's record)."""
    keys = 200
    lossy = FaultSchedule(
        {"response-lost": 0.2},
        seed=34,
        operations=frozenset({"TransactWriteItems", "PutItem", "Query", "GetItem"}),
    )
    with FaultProxy(aioseq_endpoint, schedule=lossy) as proxy:
        policy = RetryPolicy(max_attempts=3, max_backoff_secs=0.01)
        async with DynamoStore.open(
            table=aioseq_store.table, endpoint_url=proxy.endpoint_url, retry_policy=policy
        ) as store:
            if strategy == "transactional":
                counter: Any = store.transactional_counter("orders", group=SMALL_GROUPS)
                other: Any = aioseq_store.transactional_counter("orders")

                def item(i: int) -> Any:
                    return order(f"c{i}")
            else:
                counter = store.sort_key_counter("orders", group=SMALL_GROUPS)
                other = aioseq_store.sort_key_counter("orders")

                def item(i: int) -> Any:
                    return {"customer": f"c{i}"}

            async def until_answered(i: int) -> list[int]:
                got: list[int] = []
                while not got:
                    with contextlib.suppress(RetriesExhausted):  # (the caller calls again)
                        got.append(await counter.put(item(i), idempotency_key=f"key-{i}"))
                got.append(await other.put(item(i), idempotency_key=f"key-{i}"))
                return got

            answers = await asyncio.gather(*(until_answered(i) for i in range(keys)))
        assert proxy.injected["response-lost"] >= 5
    assert all(first == again for first, again in answers)
    assert_exactly([first for first, _ in answers], 1, keys)
    items = await scan(aioseq_store)
    stored = {int(i["sk"]["N"]): i["customer"]["S"] for i in orders_of(items)}
    assert sorted(stored) == list(range(1, keys + 1))
    assert {stored[first] for first, _ in answers} == {f"c{i}" for i in range(keys)}
    assert all(stored[first] == f"c{i}" for i, (first, _) in enumerate(answers))
    assert sum(i["pk"]["S"].startswith(RECORD_PREFIX) for i in items) == keys


def counter_of(store: DynamoStore, strategy: str, **options: Any) -> Any:
    if strategy == "transactional":
        return store.transactional_counter("orders", **options)
    return store.sort_key_counter("orders", **options)


def item_of(strategy: str, name: str) -> Any:
    return order(name) if strategy == "transactional" else {"customer": name}


@pytest.mark.parametrize("strategy", ["transactional", "sort-key"])
async def test_max_value_edges(
    aioseq_store: DynamoStore, aioseq_endpoint: str, strategy: str
) -> None:
    """The counter at 1, ``max_value=3``, three concurrent keyed puts: two get 2 and 3, the
    third alone is out of range. Then each stored key, replayed through another store, gets
    its number, though the counter is at ``max_value``."""
    counter = counter_of(aioseq_store, strategy, max_value=3)
    assert await counter.put(item_of(strategy, "first"), idempotency_key="k") == 1
    got = await asyncio.gather(
        *(counter.put(item_of(strategy, f"c{i}"), idempotency_key=f"k{i}") for i in range(3)),
        return_exceptions=True,
    )
    assert sorted(g for g in got if isinstance(g, int)) == [2, 3], got
    assert sum(isinstance(g, NumberOutOfRange) for g in got) == 1, got
    async with DynamoStore.open(
        table=aioseq_store.table, endpoint_url=aioseq_endpoint, retry_policy=FAST
    ) as other:
        again = counter_of(other, strategy, max_value=3)
        assert await again.put(item_of(strategy, "first"), idempotency_key="k") == 1
        for i, number in enumerate(got):
            if isinstance(number, int):
                assert await again.put(item_of(strategy, f"c{i}"), idempotency_key=f"k{i}") == (
                    number
                )
        with pytest.raises(NumberOutOfRange):
            await again.put(item_of(strategy, "new"), idempotency_key="new")
    assert await counter.current() == 3
    assert len(orders_of(await scan(aioseq_store))) == 3


async def test_a_used_key_on_another_item_table_is_refused(aioseq_store: DynamoStore) -> None:
    items = DynamoStore(aioseq_store.client, f"{aioseq_store.table.name}-items")
    await items.create_table()
    try:
        own = TransactionalCounter(aioseq_store, "docs")
        elsewhere = TransactionalCounter(aioseq_store, "docs", item_table=items.table.name)
        assert await own.put(order("ada"), idempotency_key="k1") == 1
        with pytest.raises(IdempotencyKeyReused):
            await elsewhere.put(order("ada"), idempotency_key="k1")
        assert await elsewhere.put(order("bob"), idempotency_key="k2") == 2
        assert [i["customer"]["S"] for i in orders_of(await scan(items))] == ["bob"]
    finally:
        await items.delete_table()
