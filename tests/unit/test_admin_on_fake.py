"""Counter administration and the statistics observer against FakeDynamoDB."""

from __future__ import annotations

from typing import Any

import pytest
from checks import SleepHook, assert_distinct

from aioseq import (
    AioseqError,
    BlockAllocator,
    ConditionFailed,
    ConnectionFailed,
    CounterNotFound,
    CounterWouldMoveBack,
    DynamoStore,
    Numbering,
    NumberingMismatch,
    NumberOutOfRange,
    RetriesExhausted,
    RetryPolicy,
    TableSpec,
)
from aioseq.admin import (
    describe_counter,
    ensure_at_least,
    exchange_counter,
    list_counters,
    partition_ceiling,
    scan_maximum,
    set_counter,
    set_numbering,
    start_after_maximum,
)
from aioseq.observe import StatisticsObserver
from aioseq.testing import FakeDynamoDB

TABLE = "aioseq"


async def test_set_describe_and_list(fake_store: DynamoStore, fake: FakeDynamoDB) -> None:
    with pytest.raises(CounterNotFound):
        await describe_counter(fake_store, "orders")
    await set_counter(fake_store, "orders", 1000)
    info = await describe_counter(fake_store, "orders")
    assert (info.key, info.value) == ("orders", 1000)
    assert info.updated_at is not None
    assert await fake_store.atomic_counter("orders").next() == 1001
    with pytest.raises(CounterWouldMoveBack):
        await set_counter(fake_store, "orders", 10)
    await set_counter(fake_store, "orders", 10, allow_backward=True)
    await fake_store.atomic_counter("invoices").next()
    listed = {c.key: c.value async for c in list_counters(fake_store)}
    assert listed == {"orders": 10, "invoices": 1}


async def test_ensure_at_least_never_moves_back(fake_store: DynamoStore) -> None:
    assert await ensure_at_least(fake_store, "k", 50) == 50
    assert await ensure_at_least(fake_store, "k", 20) == 50
    assert await fake_store.atomic_counter("k").next() == 51


async def test_start_after_the_maximum_already_stored(fake_store: DynamoStore) -> None:
    for n in (3, 17, 9):
        await fake_store.send_once(
            "put_item", TableName=TABLE, Item={"pk": {"S": f"legacy-{n}"}, "sk": {"N": str(n)}}
        )
    assert await scan_maximum(fake_store, table=TABLE, attribute="sk", segments=2) == 17
    await start_after_maximum(fake_store, "k", table=TABLE, attribute="sk")
    assert await fake_store.atomic_counter("k").next() == 18


def sets_the_value(params: dict[str, Any]) -> bool:
    """The operator's ``SET #value = :value, ...`` of a counter item."""
    return str(params.get("UpdateExpression", "")).startswith("SET #value = :value, #updated")


@pytest.mark.parametrize("backward", [True, False], ids=["backward", "forward"])
async def test_a_set_whose_answer_was_lost_never_hands_numbers_out_twice(backward: bool) -> None:
    """``set_counter`` is applied and its answer lost; before a resend, an allocator B
    reserves 10 numbers above the value set, then C reserves 10. Moving back, the write is not
    resent (it raises, ``maybe_applied``): a resend would move the counter back below B's
    block, and C would hand it out again. Moving forward, a resend can only raise the
    counter: it is resent, and refused, as B has passed the value (``maybe_applied``)."""
    fake = FakeDynamoDB()
    policy = RetryPolicy(max_attempts=5, initial_backoff_secs=0.0001, max_backoff_secs=0.0001)
    value = 5 if backward else 25
    async with DynamoStore(transport=fake, retry_policy=policy, idle_secs=None) as store_b:
        await store_b.create_table()
        await set_counter(store_b, "k", 20)
        b = store_b.block_allocator("k", block_size=10, prefetch_at=0)
        c = BlockAllocator(store_b, "k", block_size=10, prefetch_at=0)
        from_b: list[int] = []

        async def rival_reserves(secs: float) -> None:  # the operator's backoff
            if not from_b:
                from_b.extend([await b.next() for _ in range(10)])

        async with DynamoStore(
            transport=fake, retry_policy=policy, clock=SleepHook(rival_reserves), idle_secs=None
        ) as store_a:
            fake.inject("response-lost", operation="UpdateItem", when=sets_the_value)
            error: AioseqError | None = None
            try:
                await set_counter(store_a, "k", value, allow_backward=backward)
            except AioseqError as exc:
                error = exc
            sets = sum(1 for sent in fake.sent if sets_the_value(sent.params))
            if not from_b:
                from_b.extend([await b.next() for _ in range(10)])
            from_c = [await c.next() for _ in range(10)]
            await c.aclose()
    assert_distinct([*from_b, *from_c])
    # Forward, resent: B took 26..35 meanwhile, so the resend is refused.
    assert isinstance(error, ConnectionFailed if backward else CounterWouldMoveBack)
    assert error.maybe_applied  # (it was applied)
    assert sets == (2 if backward else 3)  # (with the set to 20: sent once, or resent)
    assert from_b[0] == value + 1


async def test_set_numbering_moves_past_every_number_handed_out(fake_store: DynamoStore) -> None:
    blocks = fake_store.block_allocator("k", block_size=5, prefetch_at=0)
    assert [await blocks.next() for _ in range(3)] == [1, 2, 3]
    await blocks.aclose()
    new = Numbering(stride=10, offset=7)
    await set_numbering(fake_store, "k", new)
    info = await describe_counter(fake_store, "k")
    assert info.numbering == new
    with pytest.raises(NumberingMismatch):
        await fake_store.atomic_counter("k").next()
    async with BlockAllocator(fake_store, "k", block_size=5, stride=10, offset=7) as renumbered:
        assert await renumbered.next() == 7  # above 3, the last number of the old numbering


async def test_the_statistics_observer_counts_requests_retries_refills_and_waste() -> None:
    observer = StatisticsObserver()
    fake = FakeDynamoDB(observer=observer)
    async with DynamoStore(transport=fake) as store:
        await store.create_table()
        fake.inject("throttling", operation="UpdateItem")
        blocks = store.block_allocator("k", block_size=10, prefetch_at=0)
        assert await blocks.next() == 1
        await store._shared.sweep()
        await store._shared.sweep()
        other = store.block_allocator("k", block_size=10, prefetch_at=0)
        await other.next()
        rival = store.block_allocator("r", block_size=10, prefetch_at=0)
        await rival.next()
    stats = observer.statistics()
    assert stats.requests["UpdateItem"] >= 4
    assert stats.errors == {"ThrottlingException": 1}
    assert sum(stats.retries.values()) == 1
    assert stats.refills >= 3
    assert stats.evictions == 1


async def test_the_partition_ceiling_is_there_when_items_share_the_counters_partition(
    fake_store: DynamoStore, fake: FakeDynamoDB
) -> None:
    beside = fake_store.transactional_counter("beside")
    await beside.put(lambda n: {"pk": "beside", "sk": n})
    big = fake_store.transactional_counter("big")
    await big.put(lambda n: {"pk": "big", "sk": n, "note": "x" * 3000})  # 3 KB: 6 WCU
    spread = fake_store.transactional_counter("spread")
    await spread.put(lambda n: {"pk": f"spread#{n}", "sk": n})
    fake.reset()
    assert await partition_ceiling(fake_store, "beside") == 500
    assert await partition_ceiling(fake_store, "big") == pytest.approx(1000 / 6)
    assert await partition_ceiling(fake_store, "spread") is None  # the counter item alone
    assert await partition_ceiling(fake_store, "never-used") is None
    assert fake.requests == {"Query": 4}
    async with DynamoStore(
        transport=fake, table=TableSpec(name="no-sort-key", sort_key=None)
    ) as flat:
        assert await partition_ceiling(flat, "beside") is None  # no request: nothing beside
    assert fake.requests == {"Query": 4}


class Renumbered(FakeDynamoDB):
    """A fake on which, after each of the first ``times`` refusals of an operator's write
    (it carries ``:default_numbering``), another writer records a new limit on the counter
    item (``max_value`` one higher), as a ``set_numbering()`` between two sends would."""

    def __init__(self, times: int) -> None:
        super().__init__()
        self.times = times
        self.limit = 100
        self.writes = 0  # the operator's writes received

    async def send(self, operation: str, params: dict[str, Any]) -> dict[str, Any]:
        operators = ":default_numbering" in params.get("ExpressionAttributeValues", {})
        self.writes += operators
        try:
            return await super().send(operation, params)
        except ConditionFailed:
            if operators and self.times:
                self.times -= 1
                self.limit += 1
                numbering = {"S": Numbering(max_value=self.limit).encode()}
                await super().send(
                    "update_item",
                    {
                        "TableName": TABLE,
                        "Key": params["Key"],
                        "UpdateExpression": "SET aioseq_numbering = :n",
                        "ExpressionAttributeValues": {":n": numbering},
                    },
                )
            raise


def _limit_store(fake: FakeDynamoDB) -> DynamoStore:
    policy = RetryPolicy(max_attempts=5, initial_backoff_secs=0.0001, max_backoff_secs=0.0001)
    return DynamoStore(transport=fake, retry_policy=policy, idle_secs=None)


async def test_a_set_follows_a_limit_recorded_between_its_sends() -> None:
    """Refused on the limit, the write is pinned to the numbering the refusal showed; when
    that changed meanwhile, it is pinned again to the newer one, and set."""
    fake = Renumbered(times=0)
    async with _limit_store(fake) as store:
        await store.create_table()
        await set_numbering(store, "k", Numbering(max_value=100))
        fake.times = 1
        assert await set_counter(store, "k", 50) == 0
        info = await describe_counter(store, "k")
    assert (info.value, info.numbering) == (50, Numbering(max_value=101))
    assert fake.writes == 3  # no limit; pinned to 100; to 101


async def test_a_limit_that_keeps_changing_ends_the_set_after_max_attempts() -> None:
    fake = Renumbered(times=0)
    async with _limit_store(fake) as store:
        await store.create_table()
        await set_numbering(store, "k", Numbering(max_value=100))
        fake.times = 1000
        with pytest.raises(RetriesExhausted) as raised:
            await ensure_at_least(store, "k", 50)
        assert isinstance(raised.value.last_error, ConditionFailed)
        assert (await describe_counter(store, "k")).value == 0  # nothing written
    assert fake.writes == 5  # the policy's max_attempts


async def test_exchange_counter_tells_a_counter_it_made_from_one_at_0(
    fake_store: DynamoStore,
) -> None:
    assert await exchange_counter(fake_store, "k", 0) is None  # made, at 0
    assert await exchange_counter(fake_store, "k", 7) == 0
    assert await set_counter(fake_store, "new", 3) == 0  # (set_counter: 0 for "none")
    assert await exchange_counter(fake_store, "new", 5) == 3


async def test_a_refusal_on_a_limit_after_a_lost_answer_says_it_may_have_been_applied() -> None:
    """The set is applied and its answer lost; before its resend, another writer records a
    limit that the value passes. The resend is refused on it: ``NumberOutOfRange``, which
    must not say "nothing written" alone: the first attempt set the value."""
    fake = FakeDynamoDB()
    policy = RetryPolicy(max_attempts=5, initial_backoff_secs=0.0001, max_backoff_secs=0.0001)

    async def limit_recorded(secs: float) -> None:  # the operator's backoff
        await fake.send(
            "update_item",
            {
                "TableName": TABLE,
                "Key": {"pk": {"S": "k"}, "sk": {"N": "0"}},
                "UpdateExpression": "SET aioseq_numbering = :n",
                "ExpressionAttributeValues": {":n": {"S": Numbering(max_value=10).encode()}},
            },
        )

    async with DynamoStore(
        transport=fake, retry_policy=policy, clock=SleepHook(limit_recorded), idle_secs=None
    ) as store:
        await store.create_table()
        fake.inject("response-lost", operation="UpdateItem", when=sets_the_value)
        with pytest.raises(NumberOutOfRange) as raised:
            await set_counter(store, "k", 25)
        assert raised.value.maybe_applied
        assert (await describe_counter(store, "k")).value == 25  # (it was)
