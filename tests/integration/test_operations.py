"""Operating counters (issue #16): set, ensure_at_least, start_after_maximum, list, describe,
against real servers."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from checks import assert_distinct, counter_item, put_counter_value

from aioseq import (
    ConfigurationError,
    CounterInfo,
    CounterNotFound,
    CounterValueInvalid,
    CounterWouldMoveBack,
    DynamoStore,
    Numbering,
    NumberingMismatch,
    NumberOutOfRange,
    admin,
)
from aioseq._workload import make_taker
from aioseq.admin import ScanProgress
from aioseq.config import NUMBERING_ATTRIBUTE
from aioseq.layout import CounterKind


async def test_set_moves_a_counter_forward_and_next_continues_after_it(
    aioseq_store: DynamoStore,
) -> None:
    orders = aioseq_store.atomic_counter("orders")
    assert [await orders.next() for _ in range(3)] == [1, 2, 3]
    before = aioseq_store.requests
    assert await admin.set_counter(aioseq_store, "orders", 1000) == 3
    assert aioseq_store.requests - before == {"UpdateItem": 1}
    assert await orders.next() == 1001
    assert await admin.set_counter(aioseq_store, "orders", 1001) == 1001  # the same value: allowed


async def test_set_on_a_new_counter_makes_it_and_returns_zero(aioseq_store: DynamoStore) -> None:
    assert await admin.set_counter(aioseq_store, "new", 41) == 0
    assert await aioseq_store.atomic_counter("new").next() == 42


async def test_set_refuses_to_move_back_in_one_request_and_writes_nothing(
    aioseq_store: DynamoStore,
) -> None:
    await admin.set_counter(aioseq_store, "k", 1000)
    item = await counter_item(aioseq_store, "k")
    before = aioseq_store.requests
    with pytest.raises(CounterWouldMoveBack) as raised:
        await admin.set_counter(aioseq_store, "k", 10)
    assert (raised.value.key, raised.value.current, raised.value.requested) == ("k", 1000, 10)
    assert aioseq_store.requests - before == {"UpdateItem": 1}  # ALL_OLD: no second read
    assert await counter_item(aioseq_store, "k") == item  # not even the timestamp changed


async def test_allow_backward_moves_back(aioseq_store: DynamoStore) -> None:
    await admin.set_counter(aioseq_store, "k", 1000)
    assert await admin.set_counter(aioseq_store, "k", 10, allow_backward=True) == 1000
    assert await aioseq_store.atomic_counter("k").next() == 11


async def test_ensure_at_least_raises_never_lowers(aioseq_store: DynamoStore) -> None:
    assert await admin.ensure_at_least(aioseq_store, "k", 500) == 500
    before = aioseq_store.requests
    assert await admin.ensure_at_least(aioseq_store, "k", 100) == 500  # refused: value from ALL_OLD
    assert await admin.ensure_at_least(aioseq_store, "k", 500) == 500
    assert aioseq_store.requests - before == {"UpdateItem": 2}
    assert await admin.ensure_at_least(aioseq_store, "k", 501) == 501
    assert await aioseq_store.atomic_counter("k").next() == 502


async def test_ensure_at_least_from_many_deployments_at_once(aioseq_store: DynamoStore) -> None:
    results = await asyncio.gather(
        *(admin.ensure_at_least(aioseq_store, "k", v) for v in range(1, 21))
    )
    assert all(1 <= r <= 20 for r in results)
    assert (await admin.describe_counter(aioseq_store, "k")).value == 20


@pytest.mark.parametrize(
    ("numbering", "fits", "passes"),
    [
        (Numbering(max_value=100), 100, 101),
        (Numbering(stride=3, offset=2, max_value=20), 7, 8),  # value 7 is 20, value 8 is 23
    ],
)
async def test_set_and_ensure_at_least_refuse_a_value_past_the_recorded_max_value(
    aioseq_store: DynamoStore, numbering: Numbering, fits: int, passes: int
) -> None:
    await admin.set_numbering(aioseq_store, "k", numbering)
    for operation in (admin.set_counter, admin.ensure_at_least):
        with pytest.raises(NumberOutOfRange, match="past its max_value"):
            await operation(aioseq_store, "k", passes)
        assert (await admin.describe_counter(aioseq_store, "k")).value == 0  # nothing written
    before = aioseq_store.requests["UpdateItem"]
    assert await admin.set_counter(aioseq_store, "k", fits - 1) == 0
    assert aioseq_store.requests["UpdateItem"] - before == 2  # refused on the limit, then pinned
    assert await admin.ensure_at_least(aioseq_store, "k", fits) == fits
    assert (await admin.describe_counter(aioseq_store, "k")).numbering == numbering  # kept


@pytest.mark.parametrize("operation", ["set_counter", "ensure_at_least"])
async def test_a_value_set_on_a_new_counter_records_the_default_numbering(
    aioseq_store: DynamoStore, operation: str
) -> None:
    """The value was given as a number of the default numbering: an allocator with offset 0
    (numbers 0, 1, 2, ...) would hand out the ids the value was meant to skip."""
    await getattr(admin, operation)(aioseq_store, "orders", 10_997)
    assert (await admin.describe_counter(aioseq_store, "orders")).numbering == Numbering()
    with pytest.raises(NumberingMismatch):
        await aioseq_store.block_allocator("orders", offset=0).next()
    assert await aioseq_store.atomic_counter("orders").next() == 10_998


async def test_a_counter_without_a_limit_of_its_own_is_set_in_one_request(
    aioseq_store: DynamoStore,
) -> None:
    await aioseq_store.atomic_counter("k").next()  # records stride=1 offset=1, no max_value
    before = aioseq_store.requests["UpdateItem"]
    await admin.set_counter(aioseq_store, "k", 10**38 - 1)
    assert aioseq_store.requests["UpdateItem"] - before == 1


async def test_describe_shows_value_numbering_and_last_update(aioseq_store: DynamoStore) -> None:
    await aioseq_store.atomic_counter("plain").next()
    plain = await admin.describe_counter(aioseq_store, "plain")
    # the first ADD recorded the atomic counter's numbering; next() stamps no time
    assert plain == CounterInfo("plain", 1, Numbering(), None, CounterKind("atomic"))

    start = datetime.now(timezone.utc)
    await admin.set_counter(aioseq_store, "plain", 7)
    stamped = await admin.describe_counter(aioseq_store, "plain")
    assert stamped.value == 7 and stamped.updated_at is not None
    assert start - timedelta(seconds=1) <= stamped.updated_at <= datetime.now(timezone.utc)

    numbering = Numbering(stride=3, offset=2)
    await aioseq_store.send_once(  # as an allocator of that numbering would have recorded it
        "update_item",
        TableName=aioseq_store.table.name,
        Key=aioseq_store.counter_item_key("plain"),
        UpdateExpression="SET #n = :n",
        ExpressionAttributeNames={"#n": NUMBERING_ATTRIBUTE},
        ExpressionAttributeValues={":n": {"S": numbering.encode()}},
    )
    assert (await admin.describe_counter(aioseq_store, "plain")).numbering == numbering


async def test_describe_an_unknown_key_is_counter_not_found(aioseq_store: DynamoStore) -> None:
    before = aioseq_store.requests
    with pytest.raises(CounterNotFound):
        await admin.describe_counter(aioseq_store, "never-used")
    assert aioseq_store.requests - before == {"GetItem": 1}


async def test_list_shows_every_counter_item_and_nothing_else(aioseq_store: DynamoStore) -> None:
    await admin.set_counter(aioseq_store, "a", 5)
    atomic = aioseq_store.atomic_counter("b")
    await atomic.next_many(3)
    await aioseq_store.optimistic_counter("c").next()
    invoices = aioseq_store.transactional_counter("d")
    for _ in range(2):
        await invoices.put(lambda n: {"pk": "d", "sk": n})
    await aioseq_store.sort_key_counter("e").put()  # no counter item: not listed
    listed = {info.key: info for info in [i async for i in admin.list_counters(aioseq_store)]}
    assert {k: i.value for k, i in listed.items()} == {"a": 5, "b": 3, "c": 1, "d": 2}
    assert listed["a"].updated_at is not None and listed["b"].updated_at is None


async def test_list_pages_through_a_table_larger_than_one_page(aioseq_store: DynamoStore) -> None:
    # 60 counter items of ~20 KB each (a padding attribute): more than 1 MB, several pages.
    pad = {"pad": {"S": "x" * 20_000}, "aioseq_counter": {"S": "atomic"}}
    for i in range(60):
        item = {**aioseq_store.counter_item_key(f"k{i}"), "value": {"N": str(i)}, **pad}
        await aioseq_store.send_once("put_item", TableName=aioseq_store.table.name, Item=item)
    before = aioseq_store.requests
    listed = [info async for info in admin.list_counters(aioseq_store)]
    assert sorted(info.value for info in listed) == list(range(60))
    assert aioseq_store.requests["Scan"] - before["Scan"] > 1


@pytest.mark.parametrize(
    "value",
    [-1, 10**38, 1.5, 2.0, "5", True, False, None],
)
async def test_bad_values_are_refused_before_any_request(
    aioseq_store: DynamoStore, value: Any
) -> None:
    before = aioseq_store.requests
    with pytest.raises(ConfigurationError):
        await admin.set_counter(aioseq_store, "k", value)
    with pytest.raises(ConfigurationError):
        await admin.set_counter(aioseq_store, "k", value, allow_backward=True)
    with pytest.raises(ConfigurationError):
        await admin.ensure_at_least(aioseq_store, "k", value)
    assert aioseq_store.requests == before
    assert await counter_item(aioseq_store, "k") is None


async def test_the_largest_value_is_accepted(aioseq_store: DynamoStore) -> None:
    assert await admin.set_counter(aioseq_store, "k", 10**38 - 1) == 0
    assert (await admin.describe_counter(aioseq_store, "k")).value == 10**38 - 1


@pytest.mark.parametrize("bad", [{"S": "12"}, {"N": "-4"}])
async def test_a_counter_item_with_an_invalid_value_is_left_alone(
    aioseq_store: DynamoStore, bad: dict[str, str]
) -> None:
    await put_counter_value(aioseq_store, "k", bad)
    calls: list[Callable[[], Awaitable[int]]] = [
        lambda: admin.set_counter(aioseq_store, "k", 5),
        lambda: admin.set_counter(aioseq_store, "k", 5, allow_backward=True),
        lambda: admin.ensure_at_least(aioseq_store, "k", 5),
    ]
    for call in calls:
        with pytest.raises(CounterValueInvalid):
            await call()
    item = await counter_item(aioseq_store, "k")
    assert item is not None and item["value"] == bad


@pytest.fixture
async def source_table(aioseq_store: DynamoStore) -> AsyncIterator[str]:
    """A second table, ``orders``-like: ids written before aioseq (deleted after the test)."""
    name = f"aioseq-test-src-{uuid.uuid4().hex[:8]}"
    source = DynamoStore(aioseq_store.client, name)
    await source.create_table()
    try:
        yield name
    finally:
        await aioseq_store.client.delete_table(TableName=name)


async def _put_orders(store: DynamoStore, table: str, ids: list[Any]) -> None:
    for i, order_id in enumerate(ids):
        item = {"pk": {"S": f"order-{i}"}, "sk": {"N": "0"}, "order_id": order_id}
        await store.send_once("put_item", TableName=table, Item=item)


async def test_start_after_maximum_scans_in_parallel_and_raises_the_counter(
    aioseq_store: DynamoStore, source_table: str
) -> None:
    ids: list[Any] = [{"N": str(n)} for n in (5, 17_000, 12, 300)]
    ids += [{"S": "n/a"}, {"N": "99999.5"}, {"N": "-3"}]  # not whole numbers: skipped
    await _put_orders(aioseq_store, source_table, ids)
    seen: list[ScanProgress] = []
    before = aioseq_store.requests
    value = await admin.start_after_maximum(
        aioseq_store,
        "orders",
        table=source_table,
        attribute="order_id",
        segments=3,
        progress=seen.append,
    )
    assert value == 17_000
    assert aioseq_store.requests["Scan"] - before["Scan"] == 3  # one page per segment
    assert seen[-1].segments_done == 3 and seen[-1].items == 7 and seen[-1].maximum == 17_000
    assert await aioseq_store.atomic_counter("orders").next() == 17_001
    # Never moves back, and is safe to run again.
    await admin.set_counter(aioseq_store, "orders", 20_000)
    assert (
        await admin.start_after_maximum(
            aioseq_store, "orders", table=source_table, attribute="order_id"
        )
        == 20_000
    )


async def test_start_after_maximum_of_the_sort_key_and_under_a_numbering(
    aioseq_store: DynamoStore, source_table: str
) -> None:
    await _put_orders(aioseq_store, source_table, [{"N": "1"}])
    assert (
        await admin.start_after_maximum(aioseq_store, "k", table=source_table, attribute="sk") == 0
    )
    # A counter numbered 2, 5, 8, ... (stride 3, offset 2): past 17 means value 6 (number 17).
    await admin.set_counter(aioseq_store, "n", 0)
    await aioseq_store.send_once(
        "update_item",
        TableName=aioseq_store.table.name,
        Key=aioseq_store.counter_item_key("n"),
        UpdateExpression="SET #n = :n",
        ExpressionAttributeNames={"#n": NUMBERING_ATTRIBUTE},
        ExpressionAttributeValues={":n": {"S": "stride=3 offset=2"}},
    )
    await _put_orders(aioseq_store, source_table, [{"N": "17"}])
    raised = await admin.start_after_maximum(
        aioseq_store, "n", table=source_table, attribute="order_id"
    )
    assert raised == 6


@pytest.mark.parametrize(
    "options",
    [
        {"table": "x"},
        {"table": "orders", "attribute": ""},
        {"table": "orders", "segments": 0},
        {"table": "orders", "segments": 65},
    ],
)
async def test_start_after_maximum_refuses_bad_arguments(
    aioseq_store: DynamoStore, options: dict[str, Any]
) -> None:
    before = aioseq_store.requests
    with pytest.raises(ConfigurationError):
        await admin.start_after_maximum(aioseq_store, "k", **{"attribute": "id", **options})
    assert aioseq_store.requests == before


@pytest.mark.parametrize("strategy", ["atomic", "allocator", "optimistic", "transactional"])
async def test_set_forward_while_counters_run(aioseq_store: DynamoStore, strategy: str) -> None:
    """Numbers stay unique across a forward set; a call that starts after the set returned gets
    a number above the set value, except from an allocator's block taken before the set (up to
    the value the set replaced), which it hands out to its end."""
    target = 1_000
    # Blocks of a fixed 10: an allocator that grew its blocks (it does when refills come
    # slowly, as on a busy machine) could serve every later call from blocks taken before.
    takers = [
        make_taker(aioseq_store, strategy, "shared", block_size=10, fixed_block_size=True)
        for _ in range(2)
    ]
    taken: list[tuple[bool, int]] = []  # (started after the set returned, number)
    set_done, warmed_up = asyncio.Event(), asyncio.Event()

    async def worker(take: Any) -> None:
        for _ in range(15):
            after = set_done.is_set()
            taken.append((after, await take()))
            if len(taken) >= 10:
                warmed_up.set()

    async def operator() -> int:
        await warmed_up.wait()
        previous = await admin.set_counter(aioseq_store, "shared", target)
        set_done.set()
        return previous

    setting = asyncio.ensure_future(operator())
    await asyncio.gather(*(worker(takers[i % 2].take) for i in range(6)))
    previous = await setting
    for taker in takers:
        if taker.aclose is not None:
            await taker.aclose()
    assert_distinct(n for _, n in taken)
    late = [n for after, n in taken if after]
    assert late, "no call started after the set"
    if strategy == "allocator":
        assert all(n > target or n <= previous for n in late), (previous, late)
    else:
        assert all(n > target for n in late), late
    assert max(n for _, n in taken) > target
