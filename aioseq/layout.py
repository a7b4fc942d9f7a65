"""Where a counter's items go: spread over partitions, and listed back in number order.

DynamoDB stores all items with one partition key value in one partition, and a partition takes
at most 1,000 WCU and 3,000 RCU per second ("Best practices for designing and using partition
keys effectively"). Numbered items written beside their counter item (``{"pk": key, "sk": n}``)
share its partition, and numbers are written in increasing sort-key order, so AWS cannot split
that partition for heat: such a counter takes at most about 500 transactional puts per second
(grouped; about 250 ungrouped, each put updating the counter item too).
[`ShardedItems`][aioseq.layout.ShardedItems] gives each item one of ``shards`` partition key
values derived from its number (write sharding with a calculated suffix: "Using
write sharding to distribute workloads evenly in your DynamoDB table"), apart from the counter
item, and reads them back in number order with one ``Query`` per shard.
"""

from __future__ import annotations

import asyncio
import heapq
from collections import deque
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any, Literal

from aioseq._checks import check_attribute_name, check_count, check_key, check_table_name
from aioseq._items import deserialize
from aioseq._limits import MAX_DIGITS, MAX_PARTITION_KEY_BYTES
from aioseq.contracts import Store
from aioseq.errors import ConfigurationError
from aioseq.formatting import zero_pad

__all__ = ["MAX_SHARDS", "CounterKind", "ShardedItems"]

#: The most shards [`ShardedItems`][aioseq.layout.ShardedItems] takes: a listing sends one
#: ``Query`` per shard.
MAX_SHARDS = 1000


@dataclass(frozen=True)
class ShardedItems:
    """Items numbered under one counter, spread over ``shards`` partitions: number ``n`` goes to
    partition key value ``f"{prefix}#{n % shards}"``, with ``n`` as its sort key.

    Consecutive numbers land in different partitions, so the writes of a busy counter spread
    evenly; each partition takes 1,000 WCU/s on AWS (~500 transactional puts/s of items up to
    1 KB), so ``shards`` partitions take ``shards`` times that. Choose ``shards`` at least your
    peak puts per second divided by 500, and keep it: items already written stay where the
    number put them. The counter item (partition key value ``key``) is in none of them.

    Use it in the item function of [`TransactionalCounter.put()`][aioseq.TransactionalCounter.put]:

        orders = ShardedItems(f"orders-{tenant}", shards=32)
        await counter.put(lambda n: {**orders.key(n), "customer": "ada"})
        async for order in orders.items(store):   # in number order
            ...

    Attributes:
        prefix: the partition key values' common part (often the counter key); non-empty,
            with the ``#`` suffix at most 2,048 UTF-8 bytes.
        shards: how many partitions, 1 to [`MAX_SHARDS`][aioseq.layout.MAX_SHARDS].
        partition_key: the partition key attribute's name (default ``"pk"``).
        sort_key: the sort key attribute's name (default ``"sk"``).
        width: for a table whose sort key is a string (``TableSpec(sort_key_type="S")``), the
            digits each number is zero-padded to ([`zero_pad()`][aioseq.zero_pad]), 1 to 38;
            ``None`` (default): the number itself, for a Number sort key.

    Raises:
        ConfigurationError: a value out of range.
    """

    prefix: str
    shards: int
    partition_key: str = "pk"
    sort_key: str = "sk"
    width: int | None = None

    def __post_init__(self) -> None:
        check_count(self.shards, "shards", maximum=MAX_SHARDS)
        suffix = f"#{self.shards - 1}"
        check_key(self.prefix, "prefix", maximum=MAX_PARTITION_KEY_BYTES - len(suffix))
        for name in (self.partition_key, self.sort_key):
            if not isinstance(name, str) or not name:
                raise ConfigurationError(f"key attribute names must be non-empty str: {name!r}")
        if self.width is not None:
            check_count(self.width, "width", maximum=MAX_DIGITS)

    def partition(self, number: int) -> str:
        """The partition key value of the item numbered ``number`` (an ``int`` >= 0)."""
        if not isinstance(number, int) or isinstance(number, bool) or number < 0:
            raise ConfigurationError(f"number must be an int >= 0, not {number!r}")
        return f"{self.prefix}#{number % self.shards}"

    def key(self, number: int) -> dict[str, Any]:
        """The primary key of the item numbered ``number``: ``{partition_key: partition(n),
        sort_key: n}`` (``zero_pad(n, width)`` with a ``width``), to spread into the item a
        counter's ``put`` stores.

        Raises:
            ConfigurationError: ``number`` is not an ``int`` >= 0.
            NumberOutOfRange: ``number`` has more than ``width`` digits.
        """
        partition = self.partition(number)
        sort = number if self.width is None else zero_pad(number, self.width)
        return {self.partition_key: partition, self.sort_key: sort}

    def partitions(self) -> list[str]:
        """Every partition key value, shard 0 first."""
        return [f"{self.prefix}#{shard}" for shard in range(self.shards)]

    async def items(
        self,
        store: Store,
        *,
        table: str | None = None,
        descending: bool = False,
        consistent: bool = False,
        page_items: int | None = None,
    ) -> AsyncIterator[dict[str, Any]]:
        """Every item of every shard, in number order (plain Python values, numbers as
        ``Decimal``), as the store's client deserializes them.

        DynamoDB calls: one ``Query`` per shard at once, then one more per shard each time its
        page runs out: at least ``shards`` queries, each 0.5 RCU (1 with ``consistent``) per
        4 KB read, at least 0.5 RCU. Stop iterating early and no more pages are asked for.

        Parameters:
            store: where to read (its retry policy applies to each query).
            table: the items' table (default: the store's).
            descending: highest number first.
            consistent: strongly consistent reads.
            page_items: the ``Limit`` of each query (default: DynamoDB's 1 MB pages); to
                read the newest few, pass about what you will take.

        Raises:
            ConfigurationError: a bad argument, or an item whose sort key is not a whole
                number.
            RetriesExhausted, StoreError: as for any request.
        """
        name = table or store.table.name
        if page_items is not None:
            check_count(page_items, "page_items")
        pages = [
            _Shard(self, partition, name, descending, consistent, page_items)
            for partition in self.partitions()
        ]
        first = [asyncio.ensure_future(shard.fetch(store)) for shard in pages]
        try:
            await asyncio.gather(*first)
        finally:  # one failed, or the caller was cancelled: the others stop too
            for task in first:
                task.cancel()
            await asyncio.gather(*first, return_exceptions=True)
        sign = -1 if descending else 1
        heap = [(sign * shard.head_number(), i) for i, shard in enumerate(pages) if shard.items]
        heapq.heapify(heap)
        while heap:
            _, i = heapq.heappop(heap)
            shard = pages[i]
            yield deserialize(shard.items.popleft())
            if not shard.items and shard.more:
                await shard.fetch(store)
            if shard.items:
                heapq.heappush(heap, (sign * shard.head_number(), i))


class _Shard:
    """One shard's query, a page at a time."""

    def __init__(
        self,
        layout: ShardedItems,
        partition: str,
        table: str,
        descending: bool,
        consistent: bool,
        page_items: int | None,
    ) -> None:
        self.layout = layout
        self.items: deque[dict[str, Any]] = deque()
        self.more = True
        self.params: dict[str, Any] = {
            "TableName": table,
            "KeyConditionExpression": "#pk = :partition",
            "ExpressionAttributeNames": {"#pk": layout.partition_key},
            "ExpressionAttributeValues": {":partition": {"S": partition}},
            "ScanIndexForward": not descending,
            "ConsistentRead": consistent,
        }
        if page_items is not None:
            self.params["Limit"] = page_items

    async def fetch(self, store: Store) -> None:
        while self.more and not self.items:  # a page can come back empty (a Limit, a filter)
            page = await store.send_with_retries("query", **self.params)
            self.items.extend(page.get("Items", ()))
            last = page.get("LastEvaluatedKey")
            self.more = last is not None
            if last is not None:
                self.params["ExclusiveStartKey"] = last

    def head_number(self) -> int:
        value = self.items[0].get(self.layout.sort_key, {})
        text = value.get("N", value.get("S")) if isinstance(value, dict) else None
        try:
            return int(str(text))
        except ValueError:
            raise ConfigurationError(
                f"an item of {self.params['TableName']!r} has no whole number in sort key"
                f" {self.layout.sort_key!r}"
            ) from None


#: The strategies a counter item names, and whether each stores items.
STRATEGY_ITEMS = {"atomic": False, "allocator": False, "optimistic": False, "transactional": True}


@dataclass(frozen=True)
class CounterKind:
    """What a counter is, as its counter item records it in ``aioseq_counter``
    ([`COUNTER_ATTRIBUTE`][aioseq.config.COUNTER_ATTRIBUTE], S): the strategy that writes it, and
    for one that stores items, where they are. The strategies record it in the write that
    creates or moves the counter item, no extra request: one that stores no items only on a
    counter item that records nothing yet (``if_not_exists``), the transactional counter on
    each write (where its last items went). ``aioseq audit`` reads it to find the items.

    Attributes:
        strategy: ``"atomic"``, ``"allocator"``, ``"optimistic"`` or ``"transactional"``.
        items: ``None``: the strategy stores no items. ``"beside"``: in the counter item's own
            partition, the number as the sort key. ``"sharded"``: as
            [`ShardedItems(prefix, shards)`][aioseq.layout.ShardedItems] spreads them (the
            counter was given ``layout=``). ``"elsewhere"``: where the writer cannot say (a
            partition per item, one other partition, shards it was not told of): the audit
            needs them named (``aioseq audit KEY --partition P [--shards N]``).
        table: the items' table when it is not the counter item's.
        prefix, shards, number_attribute: where ``"sharded"`` items are, and the attribute
            that holds their number (the layout's sort key).

    Raises:
        ConfigurationError: a strategy, layout or field out of those.
    """

    strategy: str
    items: Literal["beside", "sharded", "elsewhere"] | None = None
    table: str | None = None
    prefix: str | None = None
    shards: int | None = None
    number_attribute: str | None = None

    def __post_init__(self) -> None:
        stores = STRATEGY_ITEMS.get(self.strategy)
        items = self.items
        sharded = (self.prefix, self.shards, self.number_attribute)
        if (
            stores is None
            or stores != (items is not None)
            or items not in (None, "beside", "sharded", "elsewhere")
            or (items == "sharded") != all(v is not None for v in sharded)
            or (items != "sharded" and any(v is not None for v in sharded))
            or (self.table is not None and items in (None, "beside"))
        ):
            raise ConfigurationError(f"not a counter kind: {self!r}")
        if items == "sharded":
            ShardedItems(str(self.prefix), self.shards)  # type: ignore[arg-type]  # (checked)
            check_attribute_name(self.number_attribute, "number_attribute")
        if self.table is not None:
            check_table_name(self.table)

    @property
    def stores_items(self) -> bool:
        """Whether the strategy stores items the audit can check."""
        return self.items is not None

    def encode(self) -> str:
        """The recorded text: the strategy, then ``items=...``, ``shards=N``, ``table=T``,
        ``number=A`` and last ``prefix=P`` (the last two may hold any characters)."""
        fields = [self.strategy]
        if self.items is not None:
            fields.append(f"items={self.items}")
        if self.shards is not None:
            fields.append(f"shards={self.shards}")
        if self.table is not None:
            fields.append(f"table={self.table}")
        if self.number_attribute is not None:
            fields += [f"number={self.number_attribute}", f"prefix={self.prefix}"]
        return " ".join(fields)

    @classmethod
    def decode(cls, text: object) -> CounterKind:
        """The kind [`encode()`][aioseq.layout.CounterKind.encode] wrote as ``text``.

        Raises:
            ConfigurationError: ``text`` is not what ``encode()`` writes.
        """
        if not isinstance(text, str):
            raise ConfigurationError(f"not a counter kind: {text!r}")
        head, has_prefix, prefix = text.partition(" prefix=")
        head, _, number = head.partition(" number=")
        strategy, *rest = head.split(" ")
        fields = dict(field.partition("=")[::2] for field in rest)
        shards = fields.pop("shards", "")
        try:
            kind = cls(
                strategy,
                fields.pop("items", None),  # type: ignore[arg-type]
                table=fields.pop("table", None),
                prefix=prefix if has_prefix else None,
                shards=int(shards) if shards.isdigit() else None,
                number_attribute=number if has_prefix else None,
            )
        except ConfigurationError:
            kind = None
        if kind is None or fields or kind.encode() != text:
            raise ConfigurationError(f"not a counter kind: {text!r}")
        return kind

    def __str__(self) -> str:
        return self.encode()
