"""What idempotency keys cost a counter object, and their bounds: the keys it remembers (to
answer a replay with no request) are bounded in bytes as well as in count, and cost what
`aioseq.strategies._idempotency.ENTRY_BYTES` says, measured here with ``tracemalloc``; a time
to live is bounded so that a record's expiry is a DynamoDB Number. On FakeDynamoDB."""

from __future__ import annotations

import gc
import tracemalloc
import uuid
from typing import Any

import pytest

from aioseq import ConfigurationError, DynamoStore
from aioseq.config import EXPIRES_ATTRIBUTE, IDEMPOTENCY_MEMORY_BYTES, MAX_IDEMPOTENCY_TTL_SECS
from aioseq.strategies._idempotency import (
    RECENT_KEYS,
    RECORD_PREFIX,
    IdempotencyRecords,
    entry_bytes,
)
from aioseq.testing import FakeDynamoDB

TABLE = "aioseq"


def order(n: int) -> dict[str, Any]:
    return {"pk": f"orders#{n % 4}", "sk": n, "customer": "ada"}


def item_of(n: int) -> dict[str, Any]:
    return {"pk": {"S": f"orders#{n}"}, "sk": {"N": str(n)}}


async def remember(records: IdempotencyRecords, keys: list[str]) -> None:
    """Each key stored by a call that took its number (no request: ``once()`` remembers what
    its call returned)."""
    for n, key in enumerate(keys, 1):

        async def call(n: int = n) -> int:
            return n

        assert await records.once(key, item_of, call) == n


# --- the memory bound --------------------------------------------------------------------------


async def test_the_keys_remembered_stay_within_their_bytes(
    fake_store: DynamoStore, fake: FakeDynamoDB
) -> None:
    """With room for three UUID keys, the counter remembers the last three: their replays
    cost no request; an older key's replay costs its canceled transaction, and still gets
    its first number."""
    keys = [str(uuid.uuid4()) for _ in range(10)]
    room = 3 * entry_bytes(keys[0])
    orders = fake_store.transactional_counter("orders", idempotency_memory_bytes=room)
    for n, key in enumerate(keys, 1):
        assert await orders.put(order, idempotency_key=key) == n
    stats = orders.statistics()
    assert (stats.remembered_keys, stats.remembered_key_bytes) == (3, room)

    writes = fake.requests["TransactWriteItems"]
    assert await orders.put(order, idempotency_key=keys[-1]) == 10  # remembered
    assert fake.requests["TransactWriteItems"] == writes
    assert await orders.put(order, idempotency_key=keys[0]) == 1  # forgotten: its record
    assert fake.requests["TransactWriteItems"] == writes + 1
    assert orders.statistics().remembered_key_bytes <= room
    assert orders.statistics().replays == 2


async def test_no_memory_remembers_no_key(fake_store: DynamoStore, fake: FakeDynamoDB) -> None:
    tickets = fake_store.sort_key_counter("tickets", idempotency_memory_bytes=0)
    assert await tickets.put({"title": "a"}, idempotency_key="k") == 1
    assert tickets.statistics().remembered_keys == 0
    writes = fake.requests["TransactWriteItems"]
    assert await tickets.put({"title": "a"}, idempotency_key="k") == 1  # from its record
    assert fake.requests["TransactWriteItems"] == writes + 1


@pytest.mark.parametrize("bad", [-1, 1.5, True, "1MB", 2**40 + 1])
async def test_a_bad_memory_bound_is_refused(fake_store: DynamoStore, bad: Any) -> None:
    with pytest.raises(ConfigurationError, match="idempotency_memory_bytes"):
        fake_store.transactional_counter("orders", idempotency_memory_bytes=bad)
    with pytest.raises(ConfigurationError, match="idempotency_memory_bytes"):
        fake_store.sort_key_counter("tickets", idempotency_memory_bytes=bad)


async def test_the_count_bounds_small_keys(fake_store: DynamoStore) -> None:
    records = IdempotencyRecords(fake_store, "orders", 60, memory_bytes=2**30)
    await remember(records, [f"k{i}" for i in range(RECENT_KEYS + 50)])
    assert records.remembered[0] == RECENT_KEYS


@pytest.mark.parametrize("key_chars", [36, 255])
async def test_what_a_key_costs_is_measured(fake_store: DynamoStore, key_chars: int) -> None:
    """The memory the remembered keys hold, as ``tracemalloc`` traces it, is within the
    bound and close below the estimate it is bounded by (`entry_bytes()` each): the cost
    docs/web-services.md states."""
    bound = 256 * 1024
    records = IdempotencyRecords(fake_store, "orders", 60, memory_bytes=bound)
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        keys = [uuid.uuid4().hex.ljust(key_chars, "x")[:key_chars] for _ in range(1_200)]
        await remember(records, keys)
        del keys
        gc.collect()
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    count, estimate = records.remembered
    assert count == bound // entry_bytes("x" * key_chars)  # the bytes bound it, not the count
    assert held <= bound
    assert held >= 0.8 * estimate  # the estimate is not far above what is held
    print(f"{key_chars}-character keys: {count} remembered, {held / count:.0f} bytes each")


def test_the_default_memory_is_a_mebibyte() -> None:
    """The docs' figures: about 2,100 UUID keys in the default 1 MiB."""
    assert IDEMPOTENCY_MEMORY_BYTES == 2**20
    assert IDEMPOTENCY_MEMORY_BYTES // entry_bytes(str(uuid.uuid4())) == 2_162


# --- the time to live bound --------------------------------------------------------------------


@pytest.mark.parametrize("ttl", [1e40, MAX_IDEMPOTENCY_TTL_SECS + 1, float("inf")])
async def test_a_time_to_live_past_the_bound_is_refused_before_any_request(
    fake_store: DynamoStore, fake: FakeDynamoDB, ttl: float
) -> None:
    with pytest.raises(ConfigurationError, match="idempotency_ttl_secs"):
        fake_store.transactional_counter("orders", idempotency_ttl_secs=ttl)
    with pytest.raises(ConfigurationError, match="idempotency_ttl_secs"):
        fake_store.sort_key_counter("tickets", idempotency_ttl_secs=ttl)
    assert not fake.requests


async def test_the_longest_time_to_live_is_stored(
    fake_store: DynamoStore, fake: FakeDynamoDB
) -> None:
    orders = fake_store.transactional_counter(
        "orders", idempotency_ttl_secs=MAX_IDEMPOTENCY_TTL_SECS
    )
    assert await orders.put(order, idempotency_key="k") == 1
    (record,) = [i for i in fake.items(TABLE) if i["pk"]["S"].startswith(RECORD_PREFIX)]
    expires = int(record[EXPIRES_ATTRIBUTE]["N"])
    assert expires - MAX_IDEMPOTENCY_TTL_SECS == pytest.approx(orders._records.epoch_secs(), abs=5)
