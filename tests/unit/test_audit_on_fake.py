"""A counter checked against its items (issue 31): ``admin.audit_counter`` on the fake, and the
tally behind it."""

from __future__ import annotations

import asyncio

import pytest

from aioseq import ConfigurationError, DynamoStore, Numbering, admin
from aioseq.admin import ScanProgress, scan
from aioseq.admin.audit import AuditTally
from aioseq.layout import ShardedItems


async def _numbered(store: DynamoStore, key: str, count: int) -> None:
    invoices = store.transactional_counter(key)
    await asyncio.gather(*(invoices.put(lambda n: {"pk": key, "sk": n}) for _ in range(count)))


async def _delete(store: DynamoStore, key: str, n: int) -> None:
    await store.send_once(
        "delete_item", TableName=store.table.name, Key={"pk": {"S": key}, "sk": {"N": str(n)}}
    )


async def test_a_counter_with_one_item_per_number_is_ok(fake_store: DynamoStore) -> None:
    await _numbered(fake_store, "inv", 120)
    audit = await admin.audit_counter(fake_store, "inv")
    assert audit.ok and (audit.items, audit.highest, audit.missing) == (120, 120, ())
    assert audit.fix is None


async def test_missing_numbers_are_ranges(fake_store: DynamoStore) -> None:
    await _numbered(fake_store, "inv", 30)
    for n in (4, 10, 11, 12, 30):
        await _delete(fake_store, "inv", n)
    audit = await admin.audit_counter(fake_store, "inv")
    assert not audit.ok and audit.above == 0
    assert audit.missing == (range(4, 5), range(10, 13), range(30, 31))
    assert audit.missing_count == 5


async def test_a_counter_below_its_items_is_found_with_its_fix(fake_store: DynamoStore) -> None:
    await _numbered(fake_store, "inv", 50)
    await admin.set_counter(fake_store, "inv", 20, allow_backward=True)  # "restored" alone
    audit = await admin.audit_counter(fake_store, "inv")
    assert not audit.ok and audit.missing == ()
    assert (audit.highest, audit.above, audit.highest_item) == (20, 30, 50)
    assert audit.fix is not None and "start-after inv" in audit.fix
    assert "--attribute sk --partition inv" in audit.fix
    # The fix, as the command would run it: only this counter's collection counts.
    await _numbered(fake_store, "other", 60)
    value = await admin.start_after_maximum(
        fake_store, "inv", table=fake_store.table.name, attribute="sk", partition="inv"
    )
    assert value == 50  # not 60: another counter's items stay out of it
    assert (await admin.audit_counter(fake_store, "inv")).ok


async def test_items_elsewhere_are_found_by_partition_and_attribute(
    fake_store: DynamoStore,
) -> None:
    invoices = fake_store.transactional_counter("inv")
    for _ in range(5):
        await invoices.put(lambda n: {"pk": "invoices", "sk": 1000 + n, "number": n})
    audit = await admin.audit_counter(
        fake_store, "inv", partition="invoices", number_attribute="number"
    )
    assert audit.ok and (audit.items, audit.highest) == (5, 5)


async def test_a_sort_key_counter_is_checked_up_to_its_highest_item(
    fake_store: DynamoStore,
) -> None:
    ids = fake_store.sort_key_counter("col")
    for _ in range(10):
        await ids.put()
    await _delete(fake_store, "col", 3)
    audit = await admin.audit_counter(fake_store, "col")
    assert (audit.highest, audit.missing, audit.above) == (10, (range(3, 4),), 0)


def test_the_tally_follows_the_numbering() -> None:
    tally = AuditTally(Numbering(stride=3, offset=2), 14)
    for n in (2, 5, 11, 14, 3, 17, 17):
        tally.add(n)
    audit = tally.done("k")
    assert audit.missing == (range(8, 9, 3),)
    assert (audit.off_numbering, audit.above, audit.duplicates) == (1, 2, (17,))
    assert audit.highest_item == 17 and not audit.ok


async def test_progress_is_reported_after_each_page(
    fake_store: DynamoStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(scan, "QUERY_PAGE_ITEMS", 10)  # pages of 10 items
    await _numbered(fake_store, "inv", 40)
    seen: list[ScanProgress] = []
    audit = await admin.audit_counter(fake_store, "inv", progress=seen.append)
    assert audit.ok and len(seen) >= 5  # 41 items read, the counter item among them
    assert [p.pages for p in seen] == list(range(1, len(seen) + 1))
    assert all(p.items <= 10 * p.pages for p in seen)
    last = seen[-1]
    assert (last.segments, last.segments_done) == (1, 1)
    assert last.items == audit.items + 1  # the counter item is read too, and left out
    assert last.maximum == 40


async def test_items_spread_over_shards_are_audited_shard_by_shard(
    fake_store: DynamoStore,
) -> None:
    orders = ShardedItems("inv", shards=4)
    invoices = fake_store.transactional_counter("inv")
    await asyncio.gather(*(invoices.put(lambda n: orders.key(n)) for _ in range(40)))
    seen: list[ScanProgress] = []
    audit = await admin.audit_counter(fake_store, "inv", shards=4, progress=seen.append)
    assert audit.ok and audit.items == 40
    assert (seen[-1].segments_done, seen[-1].segments) == (4, 4)  # a segment per shard
    alone = await admin.audit_counter(fake_store, "inv")  # the counter was not told where
    assert alone.ok and alone.unchecked == "elsewhere" and alone.items == 0
    beside = await admin.audit_counter(fake_store, "inv", partition="inv")  # not there
    assert not beside.ok and beside.items == 0
    await fake_store.send_once(
        "delete_item",
        TableName=fake_store.table.name,
        Key={"pk": {"S": orders.partition(7)}, "sk": {"N": "7"}},
    )
    await admin.set_counter(fake_store, "inv", 30, allow_backward=True)
    audit = await admin.audit_counter(fake_store, "inv", shards=4)
    assert audit.missing == (range(7, 8),) and audit.above == 10
    assert audit.fix is not None and audit.fix.endswith("--partition inv --shards 4")
    value = await admin.start_after_maximum(
        fake_store, "inv", table=fake_store.table.name, attribute="sk", partition="inv", shards=4
    )
    assert value == 40
    with pytest.raises(ConfigurationError, match="shards needs partition"):
        await admin.start_after_maximum(
            fake_store, "inv", table=fake_store.table.name, attribute="sk", shards=4
        )
    with pytest.raises(ConfigurationError, match="shards"):
        await admin.audit_counter(fake_store, "inv", shards=0)
