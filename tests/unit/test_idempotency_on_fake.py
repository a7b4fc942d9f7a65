"""Idempotency keys on the item-writing strategies, against FakeDynamoDB: a key's first call
stores its item and a record of the key in one transaction; every later call with the key, from
any store, returns that number and writes nothing; another item under the key is refused; a
record past its time to live counts as absent. The integration suite checks the same on moto
and DynamoDB Local, through a proxy that loses answers."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import pytest
from checks import assert_exactly, until

from aioseq import (
    ConfigurationError,
    DynamoStore,
    GroupCommit,
    IdempotencyKeyInvalid,
    IdempotencyKeyReused,
    ItemAlreadyExists,
    NotSupportedByTable,
    NumberOutOfRange,
    RetriesExhausted,
    RetryPolicy,
    TableSpec,
    TransactionalCounter,
)
from aioseq._coalesce import Waiter
from aioseq.config import EXPIRES_ATTRIBUTE
from aioseq.strategies import _idempotency as idempotency
from aioseq.strategies._counter_item import TrackedCounterItem
from aioseq.strategies._idempotency import RECORD_PREFIX, KeyedPut, request_hash
from aioseq.strategies._recent_writes import CounterState
from aioseq.strategies._turn import Turn
from aioseq.testing import FakeDynamoDB, FaultSchedule, SimulatedGlobalTable

TABLE = "aioseq"
#: Groups of 4: many transactions, so that many answers are lost.
SMALL_GROUPS = GroupCommit(max_size=4)
NO_WAIT = RetryPolicy(max_attempts=30, initial_backoff_secs=0.0001, max_backoff_secs=0.0001)


async def open_store(fake: FakeDynamoDB, table: TableSpec | None = None) -> DynamoStore:
    store = DynamoStore(
        transport=fake, table=table or TableSpec(TABLE), retry_policy=NO_WAIT, idle_secs=None
    )
    await store.create_table()
    return store


def numbered(fake: FakeDynamoDB, prefix: str) -> dict[int, dict[str, Any]]:
    """number -> item, for the items whose partition key starts with ``prefix``."""
    return {
        int(item["sk"]["N"]): item
        for item in fake.items(TABLE)
        if item["pk"]["S"].startswith(prefix) and int(item["sk"]["N"]) >= 1
    }


def records(fake: FakeDynamoDB) -> list[dict[str, Any]]:
    return [i for i in fake.items(TABLE) if i["pk"]["S"].startswith(RECORD_PREFIX)]


def order(customer: str) -> Any:
    return lambda n: {"pk": f"orders#{n % 4}", "sk": n, "customer": customer}


# --- the hash ----------------------------------------------------------------------------------


def test_request_hash_ignores_order_and_the_token() -> None:
    one = {"a": {"SS": ["x", "y"]}, "b": {"M": {"c": {"B": b"\x01"}}}, "aioseq_token": {"S": "t"}}
    two = {"b": {"M": {"c": {"B": b"\x01"}}}, "a": {"SS": ["y", "x"]}, "aioseq_token": {"S": "u"}}
    assert request_hash(one) == request_hash(two)
    assert request_hash(one) != request_hash({**one, "a": {"SS": ["x"]}})
    assert request_hash({"n": {"N": "1"}}) != request_hash({"n": {"S": "1"}})


# --- the transactional strategy ----------------------------------------------------------------


async def test_a_replay_returns_the_first_number_and_writes_nothing(fake: FakeDynamoDB) -> None:
    async with await open_store(fake) as store:
        orders = store.transactional_counter("orders")
        first = await orders.put(order("ada"), idempotency_key="k1")
        writes = fake.requests["TransactWriteItems"]
        assert await orders.put(order("ada"), idempotency_key="k1") == first == 1
        assert await orders.put(order("bob"), idempotency_key="k2") == 2
        assert await orders.put(order("cy")) == 3  # no key: as before
        assert sorted(numbered(fake, "orders#")) == [1, 2, 3]
        assert len(records(fake)) == 2
        assert orders.statistics().replays == 1
        assert orders.statistics().numbers == 3
        assert await orders.current() == 3
        # The replay came back to the object that stored the key: answered with no request.
        assert fake.requests["TransactWriteItems"] == writes + 2


async def test_concurrent_calls_with_one_key_from_two_stores_store_one_item(
    fake: FakeDynamoDB,
) -> None:
    async with await open_store(fake) as one, await open_store(fake) as two:
        counters = [one.transactional_counter("orders"), two.transactional_counter("orders")]
        calls = [counters[i % 2].put(order("ada"), idempotency_key="k1") for i in range(50)]
        others = [counters[i % 2].put(order(f"c{i}")) for i in range(10)]
        got = await asyncio.gather(*calls, *others)
        keyed = set(got[:50])
        assert len(keyed) == 1
        assert sorted(got[50:] + list(keyed)) == list(range(1, 12))
        items = numbered(fake, "orders#")
        assert sorted(items) == list(range(1, 12))
        assert [i["customer"]["S"] for i in items.values()].count("ada") == 1
        assert sum(c.statistics().replays for c in counters) == 49


async def test_another_item_under_a_used_key_is_refused_and_writes_nothing(
    fake: FakeDynamoDB,
) -> None:
    async with await open_store(fake) as store, await open_store(fake) as other:
        orders = store.transactional_counter("orders")
        assert await orders.put(order("ada"), idempotency_key="k1") == 1
        with pytest.raises(IdempotencyKeyReused) as raised:  # from another store: its record
            await other.transactional_counter("orders").put(order("eve"), idempotency_key="k1")
        assert (raised.value.idempotency_key, raised.value.number) == ("k1", 1)
        assert raised.value.counter_key == "orders"
        with pytest.raises(IdempotencyKeyReused):  # a mapping, numbered the same way
            await orders.put({"pk": "x", "sk": 9}, idempotency_key="k1")
        assert sorted(numbered(fake, "orders#")) == [1]
        assert await orders.current() == 1
        assert len(records(fake)) == 1


async def test_concurrent_calls_with_one_key_and_other_items_are_refused(
    fake: FakeDynamoDB,
) -> None:
    async with await open_store(fake) as store:
        orders = store.transactional_counter("orders")
        first, second = await asyncio.gather(
            orders.put(order("ada"), idempotency_key="k1"),
            orders.put(order("eve"), idempotency_key="k1"),
            return_exceptions=True,
        )
        assert first == 1 and isinstance(second, IdempotencyKeyReused)
        assert sorted(numbered(fake, "orders#")) == [1]


async def test_a_replay_in_a_group_answers_alone(fake: FakeDynamoDB) -> None:
    async with await open_store(fake) as store, await open_store(fake) as other:
        assert await other.transactional_counter("orders").put(order("a"), idempotency_key="k")
        orders = store.transactional_counter("orders")
        got = await asyncio.gather(
            orders.put(order("b")),
            orders.put(order("a"), idempotency_key="k"),  # recorded by the other store
            orders.put(order("c"), idempotency_key="k3"),
            orders.put(order("d")),
        )
        assert got[1] == 1
        assert sorted([got[0], *got[2:]]) == [2, 3, 4]
        assert sorted(numbered(fake, "orders#")) == [1, 2, 3, 4]


async def test_a_record_past_its_time_to_live_is_a_new_key(fake: FakeDynamoDB) -> None:
    async with await open_store(fake) as store:
        orders = store.transactional_counter("orders", idempotency_ttl_secs=60)
        assert await orders.put(order("ada"), idempotency_key="k1") == 1
        (record,) = records(fake)
        expires = int(record[EXPIRES_ATTRIBUTE]["N"])
        orders._records.epoch_secs = lambda: expires + 1.0  # a minute later
        assert await orders.put(order("ada"), idempotency_key="k1") == 2  # a new order
        assert sorted(numbered(fake, "orders#")) == [1, 2]
        (record,) = records(fake)  # the key's record replaced, its clock started again
        assert int(record[EXPIRES_ATTRIBUTE]["N"]) == expires + 61


async def test_an_item_in_the_way_under_a_new_key_fails_alone(fake: FakeDynamoDB) -> None:
    async with await open_store(fake) as store:
        orders = store.transactional_counter("orders")
        assert await orders.put({"pk": "fixed", "sk": 1}, idempotency_key="a") == 1
        with pytest.raises(ItemAlreadyExists):
            await orders.put({"pk": "fixed", "sk": 1}, idempotency_key="b")
        # and the first key still answers, though its item is in the way as well
        assert await orders.put({"pk": "fixed", "sk": 1}, idempotency_key="a") == 1
        assert await orders.current() == 1 and len(records(fake)) == 1


@pytest.mark.parametrize("bad", ["", "x" * 256, 7, b"k"])
async def test_a_bad_key_is_refused_before_any_request(fake: FakeDynamoDB, bad: Any) -> None:
    async with await open_store(fake) as store:
        orders = store.transactional_counter("orders")
        sent = fake.requests
        with pytest.raises(IdempotencyKeyInvalid):  # (a ConfigurationError)
            await orders.put(order("ada"), idempotency_key=bad)
        assert fake.requests == sent


async def test_bad_time_to_live_is_refused(fake: FakeDynamoDB) -> None:
    async with await open_store(fake) as store:
        with pytest.raises(ConfigurationError, match="idempotency_ttl_secs"):
            store.transactional_counter("orders", idempotency_ttl_secs=0)
        with pytest.raises(ConfigurationError, match="idempotency_ttl_secs"):
            store.sort_key_counter("tickets", idempotency_ttl_secs=-1)


async def test_a_full_group_leaves_room_for_the_records(fake: FakeDynamoDB) -> None:
    async with await open_store(fake) as store:
        orders = store.transactional_counter("orders")
        got = await asyncio.gather(
            *(orders.put(order(f"c{i}"), idempotency_key=f"k{i}") for i in range(120))
        )
        assert sorted(got) == list(range(1, 121))
        sent = [r for r in fake.sent if r.operation == "TransactWriteItems"]
        assert max(len(r.params["TransactItems"]) for r in sent) <= 100
        assert len(records(fake)) == 120


@pytest.mark.parametrize("tokens", [True, False], ids=["tokens", "moto-like"])
async def test_lost_answers_and_callers_that_retry_get_one_number_per_key(tokens: bool) -> None:
    def item(i: int) -> Any:
        return lambda n: {"pk": f"orders#{n % 4}", "sk": n, "n": i}

    await assert_keys_once(
        7,
        lambda store: store.transactional_counter("orders", group=SMALL_GROUPS),
        item,
        honour_tokens=tokens,
    )


async def assert_keys_once(
    seed: int, make: Any, item: Any = lambda i: {"n": i}, *, honour_tokens: bool = True
) -> None:
    """20% of the writes' answers lost after the write applied, retries cut short (3
    attempts); each key's caller calls until it gets a number, then until answered through
    another store (which finds the key's record): every key's item is stored once, under the
    number each of its calls got, and the numbers are 1..60."""
    fake = FakeDynamoDB(
        schedule=FaultSchedule(
            {"response-lost": 0.2},
            seed=seed,
            operations=frozenset({"TransactWriteItems", "PutItem", "Query", "GetItem"}),
        ),
        honour_tokens=honour_tokens,
    )
    policy = RetryPolicy(max_attempts=3, initial_backoff_secs=0.0001, max_backoff_secs=0.0001)
    async with (
        DynamoStore(
            transport=fake, table=TableSpec(TABLE), retry_policy=policy, idle_secs=None
        ) as store,
        DynamoStore(
            transport=fake, table=TableSpec(TABLE), retry_policy=policy, idle_secs=None
        ) as again,
    ):
        await store.create_table()
        counters = [make(store), make(again)]

        async def until_answered(i: int) -> list[int]:
            got: list[int] = []
            for counter in counters:
                while len(got) < counters.index(counter) + 1:
                    with contextlib.suppress(RetriesExhausted):  # (the caller calls again)
                        got.append(await counter.put(item(i), idempotency_key=f"k{i}"))
            return got

        answers = await asyncio.gather(*(until_answered(i) for i in range(60)))
    assert all(a == b for a, b in answers), answers
    assert_exactly([a for a, _ in answers], 1, 60)
    assert fake.injected["response-lost"] >= 5
    assert {op for op, _, _ in fake.lost} >= {"TransactWriteItems"}
    stored = [i for i in fake.items(TABLE) if "n" in i]
    assert sorted(int(i["n"]["N"]) for i in stored) == list(range(60))  # each key once


# --- the sort-key strategy ---------------------------------------------------------------------


async def test_sort_key_replays_and_refusals(fake: FakeDynamoDB) -> None:
    async with await open_store(fake) as one, await open_store(fake) as two:
        tickets = [one.sort_key_counter("t"), two.sort_key_counter("t", group=False)]
        got = await asyncio.gather(
            *(tickets[i % 2].put({"title": "crash"}, idempotency_key="k1") for i in range(20)),
            *(tickets[i % 2].put({"title": f"t{i}"}) for i in range(5)),
        )
        assert len(set(got[:20])) == 1
        assert sorted(set(got)) == list(range(1, 7))
        items = numbered(fake, "t")
        assert sorted(items) == list(range(1, 7))
        assert [i["title"]["S"] for i in items.values()].count("crash") == 1
        with pytest.raises(IdempotencyKeyReused):
            await tickets[1].put({"title": "other"}, idempotency_key="k1")
        assert sorted(numbered(fake, "t")) == list(range(1, 7))
        # A lone put with a key is a transaction of the item and its record.
        assert await tickets[1].put({"title": "x"}, idempotency_key="k2") == 7
        assert fake.sent[-1].operation == "TransactWriteItems"
        assert await tickets[1].put({"title": "x"}, idempotency_key="k2") == 7


@pytest.mark.parametrize("tokens", [True, False], ids=["tokens", "moto-like"])
async def test_sort_key_lost_answers_and_retrying_callers(tokens: bool) -> None:
    await assert_keys_once(
        11, lambda store: store.sort_key_counter("t", group=SMALL_GROUPS), honour_tokens=tokens
    )


async def test_keyed_puts_are_refused_where_the_table_takes_no_transactions() -> None:
    regions = ["us-east-1", "eu-west-1"]
    async with SimulatedGlobalTable(regions, consistency="STRONG") as table:
        store = DynamoStore(transport=table.transport("us-east-1"), table=TABLE, idle_secs=None)
        async with store:
            await store.create_table()
            tickets = store.sort_key_counter("t", group=False)
            assert await tickets.put({"title": "a"}) == 1
            with pytest.raises(NotSupportedByTable):
                await tickets.put({"title": "b"}, idempotency_key="k")
            assert await tickets.current() == 1


async def test_an_object_remembers_its_latest_keys_only(
    fake: FakeDynamoDB, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(idempotency, "RECENT_KEYS", 2)
    async with await open_store(fake) as store:
        orders = store.transactional_counter("orders")
        for key in ("a", "b", "c"):
            await orders.put(order(key), idempotency_key=key)
        sent = fake.requests["TransactWriteItems"]
        assert await orders.put(order("c"), idempotency_key="c") == 3  # remembered
        assert fake.requests["TransactWriteItems"] == sent
        assert await orders.put(order("a"), idempotency_key="a") == 1  # forgotten: its record
        assert fake.requests["TransactWriteItems"] == sent + 1
        assert orders.statistics().replays == 2


async def test_a_matching_call_behind_a_refused_one_gets_its_number(fake: FakeDynamoDB) -> None:
    async with await open_store(fake) as one, await open_store(fake) as two:
        assert await one.transactional_counter("orders").put(order("ada"), idempotency_key="k")
        orders = two.transactional_counter("orders")
        refused, matching = await asyncio.gather(
            orders.put(order("eve"), idempotency_key="k"),  # first: the record refuses it
            orders.put(order("ada"), idempotency_key="k"),  # shares it, then matches the record
            return_exceptions=True,
        )
        assert isinstance(refused, IdempotencyKeyReused) and matching == 1


async def test_a_key_record_resolves_a_transaction_its_ring_cannot() -> None:
    """A group of a keyed put and a plain one, its answer lost on a server that ignores
    ``ClientRequestToken``, and 40 writes by another store before it is resent (past the
    counter's ring of 32): the key's record, carrying the transaction's token, says it was
    applied. Both puts get their first numbers; neither item is stored twice."""
    fake = FakeDynamoDB(honour_tokens=False)
    slow = RetryPolicy(max_attempts=8, initial_backoff_secs=0.2, max_backoff_secs=0.2)
    mine = DynamoStore(transport=fake, table=TableSpec(TABLE), retry_policy=slow, idle_secs=None)
    other = DynamoStore(
        transport=fake, table=TableSpec(TABLE), retry_policy=NO_WAIT, idle_secs=None
    )
    lost, others_done = asyncio.Event(), asyncio.Event()

    def ours(params: dict[str, Any]) -> bool:  # the counter, two items and one record
        return len(params.get("TransactItems", [])) == 4

    def first(params: dict[str, Any]) -> bool:
        if ours(params):
            lost.set()
        return ours(params)

    async with mine, other:
        await mine.create_table()
        orders = mine.transactional_counter("orders")
        assert await orders.put(order("warm")) == 1
        fake.inject("response-lost", operation="TransactWriteItems", when=first)
        fake.inject(
            "reset",
            operation="TransactWriteItems",
            when=lambda p: ours(p) and not others_done.is_set(),
            times=6,
        )

        async def others() -> None:
            await lost.wait()
            for i in range(40):
                await other.transactional_counter("orders").put(order(f"b{i}"))
            others_done.set()

        keyed, plain, _ = await asyncio.gather(
            orders.put(order("keyed"), idempotency_key="k1"), orders.put(order("plain")), others()
        )
        stats = orders.statistics()
    stored = [i["customer"]["S"] for i in fake.items(TABLE) if "customer" in i]
    assert stored.count("keyed") == 1 and stored.count("plain") == 1
    assert sorted([keyed, plain]) == [2, 3]
    assert stats.unresolved == 0 and stats.replays == 0


async def test_a_kept_place_is_filled_by_numbers_within_the_action_budget(
    fake: FakeDynamoDB, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A commit holding a queue place taken for 10 numbers, with 5 plain puts of its own and
    10 keyed ones waiting behind: it tops up to 10 puts (16 actions), as those behind
    predicted, not to 7 (a keyed put's two actions counted against the numbers)."""
    async with await open_store(fake) as store:
        orders = store.transactional_counter("orders")
        group = orders._group
        assert group is not None
        loop = asyncio.get_running_loop()
        batch = [Waiter(KeyedPut(order(f"p{i}")), loop.create_future()) for i in range(5)]
        for i in range(10):
            group.queue.append(Waiter(KeyedPut(order(f"k{i}"), f"k{i}"), loop.create_future()))

        async def ready(self: Any, size: int, **_: Any) -> CounterState:
            return CounterState()

        monkeypatch.setattr(TrackedCounterItem, "ready", ready)
        monkeypatch.setattr(Turn, "limit", lambda self: 10)  # queued for 10
        write = await orders.prepare(batch, None)
        assert write is not None
        assert (len(write.group), len(write.request["TransactItems"])) == (10, 16)
        for waiter in [*batch, *group.queue]:
            waiter.future.cancel()


async def test_a_key_of_a_first_caller_that_left_is_remembered(fake: FakeDynamoDB) -> None:
    async with await open_store(fake) as store:
        orders = store.transactional_counter("orders")
        call = asyncio.ensure_future(orders.put(order("a"), idempotency_key="k"))
        await asyncio.sleep(0)
        call.cancel()  # the put runs on, in a task of its own
        await until(lambda: not orders._records._in_flight)
        sent = fake.requests["TransactWriteItems"]
        assert await orders.put(order("a"), idempotency_key="k") == 1
        assert fake.requests["TransactWriteItems"] == sent  # remembered: no request


async def test_a_call_behind_a_failed_one_with_another_item_tries_its_own(
    fake: FakeDynamoDB,
) -> None:
    async with await open_store(fake) as store:
        orders = store.transactional_counter("orders")
        taken = {"pk": "fixed", "sk": 1}
        assert await orders.put(taken) == 1
        failed, mine = await asyncio.gather(
            orders.put(taken, idempotency_key="k"),  # its item exists: nothing recorded
            orders.put(order("b"), idempotency_key="k"),  # behind it, with another item
            return_exceptions=True,
        )
        assert isinstance(failed, ItemAlreadyExists) and mine == 2


async def test_a_key_that_is_not_unicode_is_invalid(fake: FakeDynamoDB) -> None:
    async with await open_store(fake) as store:
        with pytest.raises(IdempotencyKeyInvalid, match="not valid Unicode"):
            await store.transactional_counter("orders").put(order("a"), idempotency_key="\ud800")


# --- max_value ---------------------------------------------------------------------------------


def counter_of(store: DynamoStore, strategy: str, **options: Any) -> Any:
    if strategy == "transactional":
        return store.transactional_counter("orders", **options)
    return store.sort_key_counter("orders", **options)


def item_of(strategy: str, name: str) -> Any:
    return order(name) if strategy == "transactional" else {"customer": name}


STRATEGIES = [
    ("transactional", {}),
    ("transactional", {"group": False}),
    ("sort-key", {}),
    ("sort-key", {"group": False}),
]
STRATEGY_IDS = ["transactional", "transactional-ungrouped", "sort-key", "sort-key-ungrouped"]


@pytest.mark.parametrize(("strategy", "options"), STRATEGIES, ids=STRATEGY_IDS)
async def test_a_recorded_key_answers_on_a_counter_at_max_value(
    fake: FakeDynamoDB, strategy: str, options: dict[str, Any]
) -> None:
    """The counter at ``max_value``: a replay through another store (which must ask the
    key's record) gets its number, alone or in a group; a new key is out of range; another
    item under a used key is the key's reuse. Nothing more is written."""
    async with await open_store(fake) as one, await open_store(fake) as two:
        first = counter_of(one, strategy, max_value=2, **options)
        assert await first.put(item_of(strategy, "ada"), idempotency_key="k1") == 1
        assert await first.put(item_of(strategy, "bob"), idempotency_key="k2") == 2
        stored = fake.items(TABLE)
        again = counter_of(two, strategy, max_value=2, **options)
        got = await asyncio.gather(
            again.put(item_of(strategy, "ada"), idempotency_key="k1"),
            again.put(item_of(strategy, "bob"), idempotency_key="k2"),
            again.put(item_of(strategy, "cy"), idempotency_key="k3"),
            again.put(item_of(strategy, "dan")),
            return_exceptions=True,
        )
        assert list(got[:2]) == [1, 2]
        assert all(isinstance(g, NumberOutOfRange) for g in got[2:]), got
        with pytest.raises(IdempotencyKeyReused) as raised:
            await counter_of(two, strategy, max_value=2, **options).put(
                item_of(strategy, "eve"), idempotency_key="k1"
            )
        assert raised.value.number == 1
        assert again.statistics().replays == 2
        assert fake.items(TABLE) == stored


@pytest.mark.parametrize("keyed", [False, True], ids=["plain", "keyed"])
@pytest.mark.parametrize("strategy", ["transactional", "sort-key"])
async def test_a_group_that_straddles_max_value_hands_out_what_fits(
    fake: FakeDynamoDB, strategy: str, keyed: bool
) -> None:
    """The counter at 1, ``max_value=3``, three concurrent puts: two get 2 and 3, the third
    alone is out of range."""
    async with await open_store(fake) as store:
        counter = counter_of(store, strategy, max_value=3)
        assert await counter.put(item_of(strategy, "first")) == 1

        def key(i: int) -> str | None:
            return f"k{i}" if keyed else None

        got = await asyncio.gather(
            *(counter.put(item_of(strategy, f"c{i}"), idempotency_key=key(i)) for i in range(3)),
            return_exceptions=True,
        )
        numbers = sorted(g for g in got if isinstance(g, int))
        refused = [g for g in got if not isinstance(g, int)]
        assert numbers == [2, 3], got
        assert len(refused) == 1 and isinstance(refused[0], NumberOutOfRange), got
        assert await counter.current() == 3
        assert sorted(numbered(fake, "orders")) == [1, 2, 3]
        assert len(records(fake)) == (2 if keyed else 0)
        if keyed:  # the refused key is free: nothing recorded it
            (left,) = [f"k{i}" for i, g in enumerate(got) if not isinstance(g, int)]
            with pytest.raises(NumberOutOfRange):
                await counter.put(item_of(strategy, "again"), idempotency_key=left)


async def test_a_put_past_max_value_takes_the_number_a_failed_put_left(
    fake: FakeDynamoDB,
) -> None:
    """The counter at 2, ``max_value=3``: a group of a put whose item exists and another
    put; the first fails alone, and the second gets 3 (it waited, it was not refused)."""
    async with await open_store(fake) as store:
        orders = store.transactional_counter("orders", max_value=3)
        taken = {"pk": "fixed", "sk": 1}
        assert await orders.put(taken) == 1
        assert await orders.put(order("a")) == 2
        failed, fits = await asyncio.gather(
            orders.put(taken), orders.put(order("b")), return_exceptions=True
        )
        assert isinstance(failed, ItemAlreadyExists) and fits == 3


# --- the item table ----------------------------------------------------------------------------


async def test_a_used_key_on_another_item_table_is_reused_not_a_lost_write(
    fake: FakeDynamoDB,
) -> None:
    """One counter key, one idempotency key, the same item: to the store's table, then to
    another table. The second is another request (`IdempotencyKeyReused`), not a replay that
    returns the first number and stores nothing in the other table."""
    async with await open_store(fake) as store, await open_store(fake) as other:
        items = DynamoStore(transport=fake, table=TableSpec("items"), idle_secs=None)
        await items.create_table()
        own = TransactionalCounter(store, "docs")
        elsewhere = TransactionalCounter(store, "docs", item_table="items")
        assert await own.put(order("ada"), idempotency_key="k1") == 1
        with pytest.raises(IdempotencyKeyReused):
            await elsewhere.put(order("ada"), idempotency_key="k1")
        # and the other way round, through the store's factory on another store
        assert await elsewhere.put(order("bob"), idempotency_key="k2") == 2
        with pytest.raises(IdempotencyKeyReused):
            await other.transactional_counter("docs").put(order("bob"), idempotency_key="k2")
        # a replay to the same table, from another store, still gets its number
        again = other.transactional_counter("docs-again", item_table="items")
        assert await again.put(order("cy"), idempotency_key="k3") == 1
        assert (
            await TransactionalCounter(store, "docs-again", item_table="items").put(
                order("cy"), idempotency_key="k3"
            )
            == 1
        )
        assert sorted(i["customer"]["S"] for i in fake.items("items")) == ["bob", "cy"]
        assert sorted(numbered(fake, "orders#")) == [1]


def test_the_hash_of_an_item_for_the_counters_own_table_is_as_released() -> None:
    """Records written by released versions (hashed without the table) still match their
    replays to the counter's own table: the hash of an item there has not changed."""
    item = {"pk": {"S": "orders#1"}, "sk": {"N": "1"}, "customer": {"S": "ada"}}
    assert request_hash(item) == (
        "e4a898b0c3649fcc76f15604043b537ce1e27cb246a1b258b5fe9e9dff9ffbad"
    )
