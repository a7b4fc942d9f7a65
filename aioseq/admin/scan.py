"""Reading many items: one page loop (`pages()`) under the listing of counter items, the
parallel Scan of a table (`scan_maximum()`) and the Query of item collections (the audit's,
``start-after --partition``'s), with the tally of the numbers they hold."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import TYPE_CHECKING, Any

from aioseq._checks import check_attribute_name, check_count, check_key, check_table_name
from aioseq._items import AttributeValue
from aioseq.layout import ShardedItems

if TYPE_CHECKING:
    from aioseq._store import DynamoStore

#: The most segments [`scan_maximum()`][aioseq.admin.scan_maximum] scans in parallel (DynamoDB
#: allows 1,000,000; more than a few dozen only adds requests in flight on one client).
MAX_SEGMENTS = 64

#: Items per ``Query`` page of an item collection (``Limit``): without it a page of keys alone
#: is up to 1 MB, ~50,000 items, which the client holds in memory at once, parsed.
QUERY_PAGE_ITEMS = 10_000


@dataclass(frozen=True)
class ScanProgress:
    """How far [`scan_maximum()`][aioseq.admin.scan_maximum] has got, reported after each page.

    Attributes:
        segments_done: segments scanned to their end.
        segments: segments in all (``TotalSegments``).
        pages: pages read so far, all segments together.
        items: items read so far.
        maximum: the highest value found so far (0 if none).
    """

    segments_done: int
    segments: int
    pages: int
    items: int
    maximum: int


Progress = Callable[[ScanProgress], None]


def whole_number(found: AttributeValue | None) -> int | None:
    """The whole number in an ``N`` AttributeValue (an ``S`` of digits too: a zero-padded
    sort key); ``None`` for anything else (another type, a fraction, a negative number)."""
    if not found:
        return None
    if "N" in found:
        try:
            parsed = Decimal(found["N"])
        except InvalidOperation:
            return None
        if parsed.is_finite() and parsed >= 0 and parsed == parsed.to_integral_value():
            return int(parsed)
        return None
    text = found.get("S")
    return int(text) if isinstance(text, str) and text.isdigit() and text.isascii() else None


@dataclass
class ScanTally:
    """What [`scan_maximum()`][aioseq.admin.scan_maximum] has read so far, all segments together."""

    segments: int
    segments_done: int = 0
    pages: int = 0
    items: int = 0
    maximum: int = 0
    #: Items that hold the attribute, and those whose value there is a whole number.
    with_attribute: int = 0
    numbers: int = 0

    def add_page(
        self, items: Sequence[Mapping[str, AttributeValue]], attribute: str, *, last: bool
    ) -> ScanProgress:
        """Count one page of a segment (``last``: its final page); the progress after it."""
        for item in items:
            value = item.get(attribute)
            if value is None:
                continue
            self.with_attribute += 1
            found = whole_number(value)
            if found is not None:
                self.numbers += 1
                self.maximum = max(self.maximum, found)
        self.pages += 1
        self.items += len(items)
        if last:
            self.segments_done += 1
        return ScanProgress(self.segments_done, self.segments, self.pages, self.items, self.maximum)


async def pages(
    store: DynamoStore, operation: str, params: Mapping[str, Any]
) -> AsyncIterator[dict[str, Any]]:
    """Each page of a paginated ``Scan`` or ``Query`` (``params``), in order: one request
    per page under the store's retry policy, the next from the page's ``LastEvaluatedKey``."""
    params = dict(params)
    while True:
        page = await store.send_with_retries(operation, **params)
        yield page
        if "LastEvaluatedKey" not in page:
            return
        params["ExclusiveStartKey"] = page["LastEvaluatedKey"]


async def _tally(
    store: DynamoStore,
    operation: str,
    params: Mapping[str, Any],
    tally: ScanTally,
    attribute: str,
    progress: Progress | None,
    found: Callable[[dict[str, Any]], None] | None = None,
) -> None:
    """Every page of one segment or item collection into ``tally``; ``found`` sees each item,
    ``progress`` each page."""
    async for page in pages(store, operation, params):
        items = page.get("Items", [])
        if found is not None:
            for item in items:
                found(item)
        seen = tally.add_page(items, attribute, last="LastEvaluatedKey" not in page)
        if progress is not None:
            progress(seen)


async def scan_maximum(
    store: DynamoStore,
    *,
    table: str,
    attribute: str,
    segments: int = 4,
    progress: Progress | None = None,
) -> int:
    """The highest whole number in ``attribute`` over every item of ``table`` (any table the
    store's client can read, not only the store's own), 0 if there is none.

    An ``N`` value counts when it is a whole number from 0 up; an ``S`` value when it is all
    digits (a zero-padded sort key); other values and items without the attribute are
    skipped.

    DynamoDB calls: a parallel Scan: ``segments`` segments (``Segment`` / ``TotalSegments``)
    scanned at once, each paginated, with ``ProjectionExpression`` of ``attribute`` only. It
    reads the whole table once: 0.5 RCU per 4 KB (eventually consistent), 1 MB per page. Items
    written while it runs may be missed: stop the writers first, or run
    [`ensure_at_least()`][aioseq.admin.ensure_at_least] again after they moved to aioseq.

    Parameters:
        table: the table to scan.
        attribute: the attribute holding the numbers (a sort key too).
        segments: segments scanned in parallel (1 .. 64).
        progress: called after each page with a [`ScanProgress`][aioseq.admin.ScanProgress] (from
            the event loop; keep it quick).

    Raises:
        ConfigurationError: a bad table name, attribute name or segment count.
        RetriesExhausted, StoreError: as for any request (``TableNotFound`` for a missing
            table).
    """
    tally = await scan_table(
        store, table=table, attribute=attribute, segments=segments, progress=progress
    )
    return tally.maximum


async def scan_table(
    store: DynamoStore, *, table: str, attribute: str, segments: int, progress: Progress | None
) -> ScanTally:
    """`scan_maximum()`'s scan: what it read."""
    check_table_name(table)
    check_attribute_name(attribute)
    check_count(segments, "segments", maximum=MAX_SEGMENTS)
    tally = ScanTally(segments)
    params = {
        "TableName": table,
        "ProjectionExpression": "#attribute",
        "ExpressionAttributeNames": {"#attribute": attribute},
        "TotalSegments": segments,
    }
    # One task per segment; the first failure (or a cancellation) cancels the others, and
    # they are awaited before it propagates (asyncio.TaskGroup's rule, on Python 3.10 too).
    tasks = [
        asyncio.ensure_future(
            _tally(store, "scan", {**params, "Segment": segment}, tally, attribute, progress)
        )
        for segment in range(segments)
    ]
    try:
        await asyncio.gather(*tasks)
    except BaseException:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise
    return tally


def collections(key: str, partition: str | None, shards: int | None) -> list[str]:
    """The partition key values that hold a counter's items: ``partition`` (default: ``key``),
    or with ``shards``, those of ``ShardedItems(partition or key, shards)``."""
    if shards is None:
        return [check_key(partition or key, "partition")]
    return ShardedItems(partition or key, shards).partitions()


async def query_collections(
    store: DynamoStore,
    *,
    table: str,
    partitions: Sequence[str],
    attribute: str,
    extra: tuple[str, ...] = (),
    found: Callable[[dict[str, Any]], None] | None = None,
    progress: Progress | None = None,
) -> ScanTally:
    """The items of item collections of ``table`` (partition key values ``partitions``), one
    after the other: a strongly consistent, paginated ``Query`` of each, projecting
    ``attribute`` (and ``extra``), tallied as `scan_table()` tallies (a segment per
    partition); ``found`` sees each item, ``progress`` each page."""
    check_table_name(table)
    check_attribute_name(attribute)
    for partition in partitions:
        check_key(partition, "partition")
    if table == store.table.name:
        partition_key = store.table.partition_key
    else:
        described = await store.send_with_retries("describe_table", TableName=table)
        schema = described["Table"]["KeySchema"]
        partition_key = next(k["AttributeName"] for k in schema if k["KeyType"] == "HASH")
    projected = dict.fromkeys((partition_key, attribute, *extra))  # each once: DynamoDB
    names = {f"#a{i}": name for i, name in enumerate(projected)}  # refuses overlapping paths
    tally = ScanTally(len(partitions))
    for partition in partitions:
        params = {
            "TableName": table,
            "KeyConditionExpression": "#a0 = :partition",
            "ExpressionAttributeNames": names,
            "ExpressionAttributeValues": {":partition": {"S": partition}},
            "ProjectionExpression": ", ".join(names),
            "ConsistentRead": True,
            "Limit": QUERY_PAGE_ITEMS,
        }
        await _tally(store, "query", params, tally, attribute, progress, found)
    return tally
