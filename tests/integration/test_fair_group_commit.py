"""Fair group commit across writers: two counter objects on one counter key act as two
processes; the counter item's turn keeps either from starving (counts, not timings)."""

from __future__ import annotations

import asyncio
import functools
from collections import Counter
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from checks import assert_exactly

from aioseq import DynamoStore, OptimisticCounter, TransactionalCounter
from aioseq._workload import stored_numbers
from aioseq.config import TURN_ATTRIBUTE

TOTAL = 160  # calls looked at: the first TOTAL to complete
TASKS = 8  # concurrent callers per writer


def invoice(n: int) -> dict[str, Any]:
    return {"pk": "invoices", "sk": n}


async def race(calls: list[Callable[[], Awaitable[int]]]) -> tuple[Counter[int], list[int]]:
    """``TASKS`` callers per writer call it until ``TOTAL`` calls completed in all; returns
    how many of the first ``TOTAL`` each writer completed, and every number handed out."""
    done: list[int] = []  # writer index per completed call, in completion order
    numbers: list[int] = []

    async def caller(writer: int) -> None:
        while len(done) < TOTAL:
            numbers.append(await calls[writer]())
            done.append(writer)

    await asyncio.gather(*(caller(w) for w in range(len(calls)) for _ in range(TASKS)))
    return Counter(done[:TOTAL]), numbers


@pytest.mark.parametrize("strategy", ["transactional", "optimistic"])
async def test_two_writers_on_one_counter_both_commit(
    aioseq_store: DynamoStore, strategy: str
) -> None:
    calls: list[Callable[[], Awaitable[int]]]
    if strategy == "transactional":
        writers = [TransactionalCounter(aioseq_store, "c") for _ in range(2)]
        calls = [functools.partial(w.put, invoice) for w in writers]
    else:
        calls = [OptimisticCounter(aioseq_store, "c").next for _ in range(2)]
    shares, numbers = await race(calls)
    assert min(shares[0], shares[1]) >= TOTAL // 4, shares  # neither starves
    assert_exactly(numbers, 1, len(numbers))  # and every number once, no gap
    if strategy == "transactional":
        assert_exactly(await stored_numbers(aioseq_store, "invoices"), 1, len(numbers))


async def test_a_turn_whose_holder_vanished_is_taken_over(aioseq_store: DynamoStore) -> None:
    invoices = TransactionalCounter(aioseq_store, "c")
    assert await invoices.put(invoice) == 1
    key = aioseq_store.counter_item_key("c")
    await aioseq_store.call(  # a writer took the turn, then crashed
        "update_item",
        TableName=aioseq_store.table.name,
        Key=key,
        UpdateExpression="SET #turn = :turn",
        ExpressionAttributeNames={"#turn": TURN_ATTRIBUTE},
        ExpressionAttributeValues={":turn": {"S": "crashed-writer"}},
    )
    other = TransactionalCounter(aioseq_store, "c")  # reads the counter item, sees the turn
    assert await other.put(invoice) == 2
    assert other.statistics().retries["TurnHeld"] >= 1  # it yielded first
    item = (
        await aioseq_store.call(
            "get_item", TableName=aioseq_store.table.name, Key=key, ConsistentRead=True
        )
    )["Item"]
    assert TURN_ATTRIBUTE not in item  # the write that took it over removed it
    assert_exactly(await stored_numbers(aioseq_store, "invoices"), 1, 2)
