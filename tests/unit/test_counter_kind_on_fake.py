"""Each counter says what it is (issue 44): the strategies record an `aioseq.layout.CounterKind`
on the counter item, in the write they send anyway, and the audit and the listing read it."""

from __future__ import annotations

import asyncio
from decimal import Decimal

import pytest

from aioseq import ConfigurationError, CounterValueInvalid, DynamoStore, admin
from aioseq.errors import AioseqError, CounterNotFound
from aioseq.layout import CounterKind, ShardedItems
from aioseq.testing import FakeDynamoDB


async def _kind(store: DynamoStore, key: str) -> str | None:
    kind = (await admin.describe_counter(store, key)).kind
    return None if kind is None else kind.encode()


async def _put(store: DynamoStore, item: dict[str, object]) -> None:
    """An item written as another program writes it."""
    await store.send_once(
        "put_item",
        TableName=store.table.name,
        Item={k: {"N": str(v)} if not isinstance(v, str) else {"S": v} for k, v in item.items()},
    )


def test_a_kind_is_written_as_text_and_read_back_exactly() -> None:
    kinds = [
        CounterKind("atomic"),
        CounterKind("allocator"),
        CounterKind("optimistic"),
        CounterKind("transactional", "beside"),
        CounterKind("transactional", "elsewhere", table="invoices"),
        CounterKind(
            "transactional", "sharded", prefix="a b prefix=c", shards=8, number_attribute="sk"
        ),
    ]
    for kind in kinds:
        assert CounterKind.decode(kind.encode()) == kind
    assert kinds[5].encode() == "transactional items=sharded shards=8 number=sk prefix=a b prefix=c"
    for text in ("", "atomic ", "atomic items=beside", "transactional", "gapless", 7, None):
        with pytest.raises(ConfigurationError, match="not a counter kind"):
            CounterKind.decode(text)
    with pytest.raises(ConfigurationError):  # beside is in the counter item's own table
        CounterKind("transactional", "beside", table="other")


async def test_each_strategy_records_what_it_is_in_the_write_it_sends(
    fake_store: DynamoStore, fake: FakeDynamoDB
) -> None:
    await fake_store.atomic_counter("a").next()
    async with fake_store.block_allocator("b") as allocator:
        await allocator.next()
    await fake_store.optimistic_counter("o").next()
    await fake_store.optimistic_counter("p", write="put").next()
    await fake_store.transactional_counter("t").put(lambda n: {"pk": "t", "sk": n})
    spread = ShardedItems("s", shards=4)
    sharded = fake_store.transactional_counter("s", layout=spread)
    await asyncio.gather(*(sharded.put(spread.key) for _ in range(5)))
    await fake_store.transactional_counter("e").put(lambda n: {"pk": f"e-{n}", "sk": 0})
    assert [await _kind(fake_store, key) for key in "aboptse"] == [
        "atomic",
        "allocator",
        "optimistic",
        "optimistic",
        "transactional items=beside",
        "transactional items=sharded shards=4 number=sk prefix=s",
        "transactional items=elsewhere",
    ]
    # No request more than each strategy sends anyway: the kind rides in it.
    assert fake.requests["UpdateItem"] == 4 and fake.requests["PutItem"] == 1


async def test_a_writer_of_items_says_where_they_went_and_others_leave_it(
    fake_store: DynamoStore,
) -> None:
    await fake_store.atomic_counter("k").next()
    await fake_store.transactional_counter("k").put(lambda n: {"pk": "k", "sk": n})
    assert await _kind(fake_store, "k") == "transactional items=beside"
    await fake_store.atomic_counter("k").next()  # records only where nothing is recorded
    await fake_store.optimistic_counter("k").next()
    assert await _kind(fake_store, "k") == "transactional items=beside"
    await admin.set_counter(fake_store, "k", 100)  # an operator's write leaves it too
    assert await _kind(fake_store, "k") == "transactional items=beside"


async def test_a_layout_refuses_items_it_does_not_key(fake_store: DynamoStore) -> None:
    spread = ShardedItems("s", shards=4)
    sharded = fake_store.transactional_counter("s", layout=spread)
    with pytest.raises(ConfigurationError, match=r"layout\.key\(1\)"):
        await sharded.put(lambda n: {"pk": "s", "sk": n})
    with pytest.raises(ConfigurationError, match="key names"):
        fake_store.transactional_counter("x", layout=ShardedItems("x", 4, sort_key="n"))
    with pytest.raises(ConfigurationError, match="ShardedItems"):
        fake_store.transactional_counter("y", layout="y#4")  # type: ignore[arg-type]
    with pytest.raises(CounterNotFound):  # nothing was written
        await admin.describe_counter(fake_store, "s")


async def test_a_fraction_put_back_leaves_a_foreign_item_unmarked(
    fake_store: DynamoStore, fake: FakeDynamoDB
) -> None:
    await _put(fake_store, {"pk": "price", "sk": 0, "value": Decimal("12.50")})
    with pytest.raises(CounterValueInvalid):
        await fake_store.atomic_counter("price").next()
    [item] = [i for i in fake.items(fake_store.table.name) if i["pk"] == {"S": "price"}]
    assert set(item) == {"pk", "sk", "value"} and item["value"] == {"N": "12.50"}


async def _table(store: DynamoStore) -> None:
    """A table of every kind of counter, and items of other programs at sk=0 with a value."""
    await store.atomic_counter("atomic").next_many(5)
    async with store.block_allocator("allocator") as allocator:
        await allocator.next()
    await store.optimistic_counter("optimistic").next_many(3)
    gapless = store.transactional_counter("gapless")
    for _ in range(4):
        await gapless.put(lambda n: {"pk": "gapless", "sk": n})
    spread = ShardedItems("orders", shards=4)
    orders = store.transactional_counter("orders", layout=spread)
    await asyncio.gather(*(orders.put(spread.key) for _ in range(10)))
    await _put(store, {"pk": "price", "sk": 0, "value": Decimal("12.50")})
    await _put(store, {"pk": "stock", "sk": 0, "value": 7})


async def test_the_audit_checks_only_counters_that_store_items_where_they_are(
    fake_store: DynamoStore,
) -> None:
    await _table(fake_store)
    keys = sorted([info.key async for info in admin.list_counters(fake_store)])
    assert keys == ["allocator", "atomic", "gapless", "optimistic", "orders"]  # not the others
    audits = {key: await admin.audit_counter(fake_store, key) for key in keys}
    assert all(audit.ok for audit in audits.values()), audits
    assert [k for k, a in audits.items() if a.unchecked == "no items"] == [
        "allocator",
        "atomic",
        "optimistic",
    ]
    assert (audits["gapless"].items, audits["orders"].items) == (4, 10)
    # Moved back: a finding, with the fix that names the shards.
    await admin.set_counter(fake_store, "orders", 7, allow_backward=True)
    audit = await admin.audit_counter(fake_store, "orders")
    assert not audit.ok and audit.above == 3
    assert audit.fix is not None and audit.fix.endswith("--partition orders --shards 4")
    # Options name the place (here, the wrong one), but never for a counter with no items.
    assert not (await admin.audit_counter(fake_store, "orders", partition="orders")).ok
    assert (await admin.audit_counter(fake_store, "atomic", shards=4)).unchecked == "no items"


async def test_an_unreadable_counter_item_is_a_finding_and_the_listing_goes_on(
    fake_store: DynamoStore,
) -> None:
    await _table(fake_store)
    await _put(
        fake_store, {"pk": "broken", "sk": 0, "value": Decimal("2.5"), "aioseq_counter": "atomic"}
    )
    await _put(fake_store, {"pk": "odd", "sk": 0, "value": 3, "aioseq_counter": "gapless"})
    with pytest.raises(CounterValueInvalid):  # without on_invalid, as before
        [info async for info in admin.list_counters(fake_store)]
    bad: list[tuple[str, AioseqError]] = []
    listed = admin.list_counters(fake_store, on_invalid=lambda key, exc: bad.append((key, exc)))
    assert len([info async for info in listed]) == 5
    assert sorted((key, type(exc)) for key, exc in bad) == [
        ("broken", CounterValueInvalid),
        ("odd", CounterValueInvalid),
    ]
    for key, attribute in (("broken", "'value'"), ("odd", "'aioseq_counter'")):
        audit = await admin.audit_counter(fake_store, key)
        assert not audit.ok and audit.invalid is not None and attribute in audit.invalid


async def test_an_unknown_key_is_not_found_and_unmarked_counters_are_not_guessed(
    fake_store: DynamoStore,
) -> None:
    with pytest.raises(CounterNotFound):
        await admin.audit_counter(fake_store, "nosuchkey")
    with pytest.raises(CounterNotFound):
        await admin.audit_counter(fake_store, "nosuchkey", partition="nothing-here")
    await admin.ensure_at_least(fake_store, "started", 10)  # an operator's write: no kind
    audit = await admin.audit_counter(fake_store, "started")
    assert audit.ok and audit.unchecked == "unmarked" and audit.highest == 10
    told = await admin.audit_counter(fake_store, "started", partition="started")
    assert not told.ok and told.missing == (range(1, 11),)
    assert [info.key async for info in admin.list_counters(fake_store)] == ["started"]
