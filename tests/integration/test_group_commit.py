"""Group commit: concurrent callers of one counter object share one request."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest
from checks import LoopClock, assert_exactly, item_count

from aioseq import (
    ConfigurationError,
    DynamoStore,
    GroupCommit,
    ItemAlreadyExists,
    TransactionalCounter,
)
from aioseq._workload import stored_numbers
from aioseq.strategies.sort_key import OnConflict


def invoice(n: int) -> dict[str, Any]:
    return {"pk": "invoices", "sk": n}


async def test_500_grouped_puts_are_exactly_1_to_500_in_a_few_transactions(
    aioseq_store: DynamoStore,
) -> None:
    invoices = aioseq_store.transactional_counter("c", group=True)
    numbers = await asyncio.gather(*(invoices.put(invoice) for _ in range(500)))
    assert numbers == list(range(1, 501))  # numbered in caller order
    assert_exactly(await stored_numbers(aioseq_store, "invoices"), 1, 500)
    assert aioseq_store.requests["TransactWriteItems"] <= 10  # 500 / 99, rounded up, + 1


async def test_groups_respect_the_100_action_limit(aioseq_store: DynamoStore) -> None:
    sizes: list[int] = []

    def count_actions(params: dict[str, Any], **_: Any) -> None:
        sizes.append(len(params["TransactItems"]))

    aioseq_store.client.meta.events.register(
        "provide-client-params.dynamodb.TransactWriteItems", count_actions
    )
    try:
        invoices = aioseq_store.transactional_counter("c", group=True)
        await asyncio.gather(*(invoices.put(invoice) for _ in range(250)))
    finally:
        aioseq_store.client.meta.events.unregister(
            "provide-client-params.dynamodb.TransactWriteItems", count_actions
        )
    assert max(sizes) == 100 and sum(sizes) == 250 + len(sizes)


async def test_a_lone_caller_is_not_kept_waiting_and_max_size_holds(
    aioseq_store: DynamoStore,
) -> None:
    invoices = aioseq_store.transactional_counter("c", group=GroupCommit(max_size=10))
    assert await invoices.put(invoice) == 1
    assert aioseq_store.requests["TransactWriteItems"] == 1
    await asyncio.gather(*(invoices.put(invoice) for _ in range(30)))
    assert aioseq_store.requests["TransactWriteItems"] == 1 + 3  # groups of 1, 10, 10, 10


async def test_one_existing_item_fails_alone_and_the_rest_stays_gapless(
    aioseq_store: DynamoStore,
) -> None:
    users = aioseq_store.transactional_counter("users", group=True)
    assert await users.put({"pk": "user#kirk", "sk": 0}) == 1
    items = [{"pk": f"user#{i}", "sk": 0} for i in range(20)]
    items.insert(7, {"pk": "user#kirk", "sk": 0})
    results = await asyncio.gather(*(users.put(item) for item in items), return_exceptions=True)
    assert isinstance(results[7], ItemAlreadyExists)
    assert [r for r in results if isinstance(r, int)] == list(range(2, 22))
    assert await users.current() == 21


async def test_an_invalid_item_fails_alone(aioseq_store: DynamoStore) -> None:
    invoices = aioseq_store.transactional_counter("c", group=True)

    def broken(n: int) -> dict[str, Any]:
        if n == 3:
            raise ValueError("no invoice number 3 today")
        return invoice(n)

    calls = [
        invoices.put(invoice),
        invoices.put(invoice),
        invoices.put(broken),
        invoices.put(invoice),
    ]
    results = await asyncio.gather(*calls, return_exceptions=True)
    assert results[:2] == [1, 2] and results[3] == 3
    assert isinstance(results[2], ValueError)
    assert_exactly(await stored_numbers(aioseq_store, "invoices"), 1, 3)


async def test_two_callers_with_one_key_go_in_separate_groups(aioseq_store: DynamoStore) -> None:
    users = aioseq_store.transactional_counter("users", group=True)
    same = {"pk": "user#spock", "sk": 0}
    results = await asyncio.gather(users.put(same), users.put(same), return_exceptions=True)
    assert results[0] == 1 and isinstance(results[1], ItemAlreadyExists)
    assert await users.current() == 1


async def test_a_caller_cancelled_before_commit_leaves_no_gap(aioseq_store: DynamoStore) -> None:
    invoices = aioseq_store.transactional_counter("c", group=True)
    first = asyncio.create_task(invoices.put(invoice))  # commits alone
    await asyncio.sleep(0)
    waiting = [asyncio.create_task(invoices.put(invoice)) for _ in range(10)]
    await asyncio.sleep(0)  # queued behind the first commit
    waiting[4].cancel()
    results = await asyncio.gather(first, *waiting, return_exceptions=True)
    assert isinstance(results[5], asyncio.CancelledError)
    assert sorted(r for r in results if isinstance(r, int)) == list(range(1, 11))
    assert_exactly(await stored_numbers(aioseq_store, "invoices"), 1, 10)


async def test_a_caller_cancelled_during_commit_keeps_its_stored_number(
    aioseq_store: DynamoStore,
) -> None:
    sent = asyncio.Event()

    def on_send(**_: Any) -> None:
        sent.set()

    events = aioseq_store.client.meta.events
    events.register("before-send.dynamodb.TransactWriteItems", on_send)
    try:
        invoices = aioseq_store.transactional_counter("c", group=True)
        tasks = [asyncio.create_task(invoices.put(invoice)) for _ in range(5)]
        await sent.wait()  # the group of five is on the wire
        tasks[0].cancel()
        results = await asyncio.gather(*tasks, return_exceptions=True)
    finally:
        events.unregister("before-send.dynamodb.TransactWriteItems", on_send)
    assert isinstance(results[0], asyncio.CancelledError) and results[1:] == [2, 3, 4, 5]
    assert_exactly(await stored_numbers(aioseq_store, "invoices"), 1, 5)  # 1 is stored
    assert await invoices.put(invoice) == 6


async def test_grouped_writers_in_two_objects_stay_gapless(aioseq_store: DynamoStore) -> None:
    writers = [aioseq_store.transactional_counter("c", group=True) for _ in range(3)]
    numbers = await asyncio.gather(*(w.put(invoice) for w in writers * 60))
    assert_exactly(numbers, 1, 180)
    assert_exactly(await stored_numbers(aioseq_store, "invoices"), 1, 180)


@pytest.mark.parametrize("on_conflict", ["requery", "increment"])
async def test_grouped_sort_key_puts_are_one_query_and_one_transaction_per_group(
    aioseq_store: DynamoStore, on_conflict: OnConflict
) -> None:
    issues = aioseq_store.sort_key_counter("p", group=True, on_conflict=on_conflict)
    assert await issues.put() == 1
    numbers = await asyncio.gather(*(issues.put({"n": i}) for i in range(300)))
    assert numbers == list(range(2, 302))
    assert_exactly(await stored_numbers(aioseq_store, "p"), 1, 301)
    assert aioseq_store.requests["Query"] <= 6 and aioseq_store.requests["TransactWriteItems"] <= 5


async def test_grouped_sort_key_writers_race_and_stay_gapless(aioseq_store: DynamoStore) -> None:
    writers = [aioseq_store.sort_key_counter("p", group=True) for _ in range(3)]
    numbers = await asyncio.gather(*(w.put() for w in writers * 50))
    assert_exactly(numbers, 1, 150)
    assert_exactly(await stored_numbers(aioseq_store, "p"), 1, 150)


async def test_grouped_optimistic_takes_one_write_for_all_waiting_callers(
    aioseq_store: DynamoStore,
) -> None:
    counter = aioseq_store.optimistic_counter("k", group=True)
    calls = [counter.next() for _ in range(200)] + [counter.next_many(5)]
    *singles, many = await asyncio.gather(*calls)
    assert singles == list(range(1, 201)) and many == range(201, 206)
    assert aioseq_store.requests["UpdateItem"] <= 2


async def test_grouped_optimistic_writers_race_and_stay_gapless(aioseq_store: DynamoStore) -> None:
    counters = [aioseq_store.optimistic_counter("k", group=True) for _ in range(4)]
    numbers = await asyncio.gather(*(c.next() for c in counters * 100))
    assert_exactly(numbers, 1, 400)


async def test_a_batch_window_gathers_company_for_a_lone_caller(
    aioseq_store: DynamoStore, loop_clock: LoopClock
) -> None:
    invoices = aioseq_store.transactional_counter("c", group=GroupCommit(window_secs=10))
    first = asyncio.create_task(invoices.put(invoice))
    for _ in range(3):  # the put, then its flush, which now waits out its window
        await asyncio.sleep(0)
    assert aioseq_store.requests["TransactWriteItems"] == 0
    second = asyncio.create_task(invoices.put(invoice))
    await asyncio.sleep(0)
    loop_clock.advance(10)  # the window ends
    assert sorted(await asyncio.gather(first, second)) == [1, 2]
    assert aioseq_store.requests["TransactWriteItems"] == 1


@pytest.mark.parametrize(
    "group",
    [
        lambda: GroupCommit(max_size=100),  # a transaction holds 99 puts and the counter
        lambda: GroupCommit(max_size=0),
        lambda: GroupCommit(window_secs=-1),
        lambda: "yes",
    ],
    ids=["too-large-for-a-transaction", "zero", "negative-window", "not-a-group-commit"],
)
async def test_bad_group_options_are_refused(
    aioseq_store: DynamoStore, group: Callable[[], Any]
) -> None:
    with pytest.raises(ConfigurationError):
        TransactionalCounter(aioseq_store, "c", group=group())
    assert await item_count(aioseq_store) == 0


def test_no_old_name_is_left(aioseq_store: DynamoStore) -> None:
    """The names renamed before the first release are gone, not kept as aliases."""
    import aioseq
    import aioseq.strategies

    assert not hasattr(aioseq, "GaplessCounter")
    assert not hasattr(aioseq.strategies, "GaplessCounter")
    assert not hasattr(aioseq_store, "gapless_counter")
    with pytest.raises(TypeError, match="max_group_size"):
        TransactionalCounter(aioseq_store, "c", max_group_size=10)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="batch_window_secs"):
        aioseq_store.optimistic_counter("c", batch_window_secs=0.1)  # type: ignore[call-arg]
