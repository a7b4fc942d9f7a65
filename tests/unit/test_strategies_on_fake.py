"""What every strategy shares, and the sort-key strategy's own rules, against FakeDynamoDB:
reading a counter, closed objects, bad arguments, conflicts between writers (``on_conflict``),
the writers' queue left empty once they are done, zero-padded sort keys, invalid collections,
and errors that end a call at once."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from aioseq import (
    AtomicCounter,
    ConfigurationError,
    CounterValueInvalid,
    DynamoStore,
    GroupCommit,
    Numbering,
    OptimisticCounter,
    RetryPolicy,
    SortKeyCounter,
    StoreClosed,
    TableNotFound,
)
from aioseq.config import TURN_ATTRIBUTE, TableSpec
from aioseq.layout import ShardedItems
from aioseq.testing import FakeDynamoDB, ManualClock

TABLE = "aioseq"
NO_WAIT = RetryPolicy(max_attempts=20, initial_backoff_secs=0.0001, max_backoff_secs=0.0001)


async def open_store(
    fake: FakeDynamoDB, table: TableSpec | str = TABLE, clock: ManualClock | None = None
) -> DynamoStore:
    if clock is None:
        store = DynamoStore(transport=fake, table=table, retry_policy=NO_WAIT)
    else:  # (no idle sweep: its sleeps in a loop would race the clock ahead)
        store = DynamoStore(
            transport=fake, table=table, retry_policy=NO_WAIT, clock=clock, idle_secs=None
        )
    await store.create_table()
    fake.reset()
    return store


def partition(fake: FakeDynamoDB, name: str, table: str = TABLE) -> dict[Any, dict[str, Any]]:
    """sort key value -> item, for the items of partition ``name`` but its counter item."""
    return {
        next(iter(item["sk"].values())): item
        for item in fake.items(table)
        if item["pk"] == {"S": name} and item["sk"] not in ({"N": "0"}, {"S": "0"})
    }


# --- what every strategy shares -------------------------------------------------------------


async def test_a_counter_reads_its_counter_item_to_say_where_it_stands(
    fake_store: DynamoStore, fake: FakeDynamoDB
) -> None:
    orders = fake_store.optimistic_counter("orders")
    assert (await orders.exists(), await orders.current()) == (False, 0)
    assert [r.operation for r in fake.sent] == ["GetItem", "GetItem"]
    assert all(r.params["ConsistentRead"] for r in fake.sent)
    assert await orders.next_many(3) == range(1, 4)
    assert (await orders.exists(), await orders.current()) == (True, 3)
    assert repr(orders) == "<OptimisticCounter key='orders' table='aioseq' numbers=3 conflicts=0>"
    assert orders.numbering == Numbering()
    assert orders.statistics().numbers == 3


async def test_a_closed_counter_refuses_every_call(fake_store: DynamoStore) -> None:
    orders = fake_store.optimistic_counter("orders")
    assert await orders.next() == 1
    await orders.aclose()
    await orders.aclose()  # idempotent
    assert orders.closed
    for call in (orders.next, orders.current, orders.exists):
        with pytest.raises(StoreClosed, match=r"OptimisticCounter\('orders'\)"):
            await call()


async def test_every_strategy_refuses_calls_once_its_store_is_closed(fake: FakeDynamoDB) -> None:
    store = await open_store(fake)
    made = [
        store.optimistic_counter("o"),
        store.transactional_counter("t"),
        store.sort_key_counter("s"),
    ]
    await store.aclose()
    for counter in made:
        with pytest.raises(StoreClosed, match="its DynamoStore is closed"):
            await counter.current()
    assert fake.sent == []


@pytest.mark.parametrize(
    ("strategy", "arguments", "message"),
    [
        (AtomicCounter, {"numbering": "stride=2 offset=1"}, "numbering must be a Numbering"),
        (OptimisticCounter, {"max_in_flight": 0}, "max_in_flight must be an int from 1"),
        (OptimisticCounter, {"max_value": 0}, "max_value must be an int from 1"),
        (OptimisticCounter, {"group": "yes"}, "group must be a bool or a GroupCommit"),
        (SortKeyCounter, {"group": GroupCommit(max_size=101)}, "commits at most 100 calls"),
    ],
)
async def test_a_strategy_made_with_bad_arguments_is_refused(
    fake_store: DynamoStore, strategy: Any, arguments: dict[str, Any], message: str
) -> None:
    with pytest.raises(ConfigurationError, match=message):
        strategy(fake_store, "orders", **arguments)


async def test_writers_that_met_on_a_counter_leave_its_queue_empty(fake: FakeDynamoDB) -> None:
    """Two processes' writers race on one counter: the loser of a race queues; both hand out
    distinct numbers, and once nobody waits, each takes its entries out of the queue."""
    clock = ManualClock()  # the places' grace and the writers' leases take no real time
    stores = [await open_store(fake, clock=clock) for _ in range(2)]
    counters = [
        s.optimistic_counter("c", group=group)
        for s, group in zip(stores, (True, False), strict=True)
    ]

    async def take(counter: OptimisticCounter, n: int) -> list[int]:
        return [await counter.next() for _ in range(n)]

    taken = await asyncio.gather(*(take(c, 3) for c in counters for _ in range(2)))
    numbers = sorted(n for some in taken for n in some)
    assert numbers == list(range(1, 13))  # distinct, gapless
    assert sum(c.statistics().conflicts for c in counters) > 0  # they did meet
    queued = [r for r in fake.sent if "list_append" in r.params.get("UpdateExpression", "")]
    assert queued and all(
        TURN_ATTRIBUTE in r.params["ExpressionAttributeNames"].values() for r in queued
    )
    for _ in range(200):  # the places given up off the callers' path, after a grace
        await asyncio.sleep(0)
        (counter_item,) = [i for i in fake.items(TABLE) if i["pk"] == {"S": "c"}]
        if not counter_item.get(TURN_ATTRIBUTE, {}).get("L"):
            break
    assert counter_item.get(TURN_ATTRIBUTE, {"L": []}) == {"L": []}
    for store in stores:
        await store.aclose()


# --- the sort-key strategy's rules -------------------------------------------------------------


@pytest.mark.parametrize("on_conflict", ["increment", "requery"])
async def test_two_writers_of_one_collection_each_store_their_item_once(
    fake: FakeDynamoDB, on_conflict: Any
) -> None:
    stores = [await open_store(fake) for _ in range(2)]
    issues = [s.sort_key_counter("p", on_conflict=on_conflict, group=False) for s in stores]
    first = await asyncio.gather(issues[0].put({"by": "a"}), issues[1].put({"by": "b"}))
    assert sorted(first) == [1, 2]
    stored = partition(fake, "p")
    assert {n: stored[str(n)]["by"]["S"] for n in (1, 2)} == {first[0]: "a", first[1]: "b"}
    loser = issues[first.index(2)]
    assert loser.statistics().conflicts == 1
    # The loser's requests: Query, PutItem (taken), then either the next key at once, or a
    # fresh Query first.
    operations = [r.operation for r in fake.sent]
    assert operations.count("PutItem") == 3
    assert operations.count("Query") == (2 if on_conflict == "increment" else 3)


async def test_a_sort_key_counter_needs_a_sort_key_and_a_known_conflict_rule(
    fake: FakeDynamoDB,
) -> None:
    no_sort_key = await open_store(fake, TableSpec(name="flat", sort_key=None))
    with pytest.raises(ConfigurationError, match="table 'flat' has no sort key"):
        SortKeyCounter(no_sort_key, "p")
    store = await open_store(fake)
    with pytest.raises(ConfigurationError, match="on_conflict must be 'increment' or 'requery'"):
        SortKeyCounter(store, "p", on_conflict="retry")  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="zero_pad goes with a string sort key"):
        SortKeyCounter(store, "p", zero_pad=6)  # a number sort key
    padded = await open_store(fake, TableSpec(name="padded", sort_key_type="S"))
    with pytest.raises(ConfigurationError, match="zero_pad goes with a string sort key"):
        SortKeyCounter(padded, "p")  # a string sort key wants it
    with pytest.raises(ConfigurationError, match="zero_pad must be an int from 1 to 38"):
        SortKeyCounter(padded, "p", zero_pad=39)


async def test_a_string_sort_key_is_zero_padded_so_it_sorts_as_the_numbers(
    fake: FakeDynamoDB,
) -> None:
    store = await open_store(fake, TableSpec(name="padded", sort_key_type="S"))
    issues = store.sort_key_counter("p", zero_pad=4)
    assert [await issues.put({"i": i}) for i in range(11)] == list(range(1, 12))
    assert issues.format_sort_key(7) == {"S": "0007"}
    assert sorted(partition(fake, "p", "padded")) == [f"{n:04d}" for n in range(1, 12)]
    assert await issues.current() == 11  # "0011" is the highest, not "0009"


@pytest.mark.parametrize(
    ("table", "sort_key"),
    [
        (TableSpec(), {"N": "2.5"}),
        (TableSpec(), {"N": "-3"}),
        (TableSpec(name="padded", sort_key_type="S"), {"S": "note"}),
    ],
    ids=["fraction", "negative", "not-a-number"],
)
async def test_a_collection_whose_highest_sort_key_is_no_count_is_invalid(
    fake: FakeDynamoDB, table: TableSpec, sort_key: dict[str, str]
) -> None:
    store = await open_store(fake, table)
    item = {"pk": {"S": "p"}, "sk": sort_key}
    await store.send_once("put_item", TableName=table.name, Item=item)
    zero_pad = 4 if "S" in sort_key else None
    issues = store.sort_key_counter("p", zero_pad=zero_pad)
    with pytest.raises(CounterValueInvalid) as raised:
        await issues.current()
    assert (raised.value.key, raised.value.found) == ("p", sort_key)
    with pytest.raises(CounterValueInvalid):
        await issues.put({"x": 1})  # nothing is written under a number it cannot tell
    assert len(fake.items(table.name)) == 1


@pytest.mark.parametrize(
    ("attributes", "message"),
    [
        (["title", "x"], "takes the item's other attributes as a mapping.*got list$"),
        (lambda n: {"n": n}, "got function \\(an item function is what TransactionalCounter"),
        ({"pk": "other"}, r"must not set the key attributes \['pk'\]"),
        ({"sk": 5, "pk": "p"}, r"must not set the key attributes \['pk', 'sk'\]"),
        ({"aioseq_token": "mine"}, "must not set 'aioseq_token'"),
        ({"n": 1.5}, "holds a float"),
        ({"blob": b"x" * 410_000}, "DynamoDB stores at most 409,600 bytes"),
    ],
)
async def test_a_put_with_attributes_it_cannot_store_writes_nothing(
    fake_store: DynamoStore, fake: FakeDynamoDB, attributes: Any, message: str
) -> None:
    issues = fake_store.sort_key_counter("p")
    with pytest.raises(ConfigurationError, match=message):
        await issues.put(attributes)
    assert fake.sent == []


async def test_a_put_on_a_missing_table_fails_at_once(fake: FakeDynamoDB) -> None:
    store = DynamoStore(transport=fake, retry_policy=NO_WAIT)  # no table created
    issues = store.sort_key_counter("p", group=False)
    with pytest.raises(TableNotFound, match="table 'aioseq' does not exist"):
        await issues.put({"x": 1})
    assert fake.requests == {"DescribeTable": 1}  # the first write asks first; not retried


async def test_a_group_resent_after_a_lost_answer_without_the_token_finds_its_own_items(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A server that ignores ``ClientRequestToken`` fails the resent transaction's conditions;
    the items in the way carry the puts' own tokens, so the puts were stored once: their
    numbers are handed out, nothing is written twice."""
    fake = FakeDynamoDB(honour_tokens=False)
    store = await open_store(fake)
    issues = store.sort_key_counter("p")
    assert await issues.put({"i": 0}) == 1
    fake.inject("response-lost", operation="TransactWriteItems")
    got = await asyncio.gather(*(issues.put({"i": i}) for i in range(1, 4)))
    assert sorted(got) == [2, 3, 4]
    stored = partition(fake, "p")
    assert sorted(stored) == ["1", "2", "3", "4"]
    assert {int(n): int(item["i"]["N"]) for n, item in stored.items()} == {
        1: 0,
        **{n: i for n, i in zip(got, range(1, 4), strict=True)},
    }
    assert issues.statistics().recovered >= 2
    await store.aclose()


async def test_statistics_say_when_items_share_the_counters_partition(
    fake_store: DynamoStore,
) -> None:
    beside = fake_store.transactional_counter("beside")
    await asyncio.gather(*(beside.put(lambda n: {"pk": "beside", "sk": n}) for _ in range(30)))
    stats = beside.statistics()
    assert stats.shared_partition_puts == 30
    assert stats.partition_ceiling == 500.0  # 2 WCU per put of an item under 1 KB
    big = fake_store.transactional_counter("big")
    await big.put(lambda n: {"pk": "big", "sk": n, "p": "x" * 1500})  # 2 KB: 4 WCU
    assert big.statistics().partition_ceiling == 250.0
    spread = fake_store.transactional_counter("spread")
    await asyncio.gather(*(spread.put(ShardedItems("spread", 4).key) for _ in range(30)))
    assert (spread.statistics().shared_partition_puts, spread.statistics().partition_ceiling) == (
        0,
        None,
    )
    issues = fake_store.sort_key_counter("issues")
    await issues.put()  # alone: one PutItem, 1 WCU
    assert issues.statistics().partition_ceiling == 1000.0
    await asyncio.gather(*(issues.put() for _ in range(9)))  # grouped: transactions, 2 WCU each
    stats = issues.statistics()
    ceiling = stats.partition_ceiling
    assert stats.shared_partition_puts == 10 and ceiling is not None and 500 < ceiling < 1000
