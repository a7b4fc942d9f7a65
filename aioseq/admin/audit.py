"""Counters checked against their items: `audit_counter()` and the `CounterAudit` it returns,
a frozen value the CLI renders (its text, JSON, hints and exit status are the CLI's)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Literal

from aioseq._checks import check_key
from aioseq.admin.counters import CounterInfo, describe_counter
from aioseq.admin.scan import Progress, collections, query_collections, whole_number
from aioseq.errors import ConfigurationError, CounterNotFound, CounterValueInvalid
from aioseq.layout import CounterKind
from aioseq.numbering import Numbering

if TYPE_CHECKING:
    from aioseq._store import DynamoStore


@dataclass(frozen=True)
class CounterAudit:
    """One counter checked against its items ([`audit_counter()`][aioseq.admin.audit_counter]).

    Attributes:
        key: the counter key.
        highest: the highest number the counter has handed out or reserved: its value as a
            number of its numbering (0 before the first; with no counter item, the highest
            number an item holds).
        items: items found that hold a number.
        missing: the numbers of the numbering, from its first up to ``highest``, that no item
            holds, as ranges (``range(first, last + stride, stride)``), in order.
        above: how many items hold a number above ``highest``: the counter stands below
            numbers already used (it was restored alone, or items were copied in).
        highest_item: the highest number an item holds (0 if none).
        off_numbering: how many items hold a number that is not one of the numbering's.
        duplicates: numbers more than one item holds (only where the number is an attribute).
        fix: the command that moves the counter past its items (``above``), else ``None``.
        kind: what the counter item says the counter is, if it says.
        unchecked: why its items were not checked, or ``None`` (they were): ``"no items"``
            (its strategy stores none: gaps are allowed, nothing to check), ``"elsewhere"``
            (its items are where its writer could not say), ``"unmarked"`` (no strategy
            recorded what it is: a counter item written before aioseq recorded kinds, or only
            by operators' writes). Not a finding: name the items' place to check them.
        invalid: why the counter item is unreadable (a finding), or ``None``.
    """

    key: str
    highest: int
    items: int
    missing: tuple[range, ...] = ()
    above: int = 0
    highest_item: int = 0
    off_numbering: int = 0
    duplicates: tuple[int, ...] = ()
    fix: str | None = None
    kind: CounterKind | None = None
    unchecked: Literal["no items", "elsewhere", "unmarked"] | None = None
    invalid: str | None = None

    @property
    def ok(self) -> bool:
        """No finding: every number up to ``highest`` has exactly one item, none above, and
        the counter item is readable (a counter whose items were not checked passes)."""
        return not (
            self.missing or self.above or self.off_numbering or self.duplicates or self.invalid
        )

    @property
    def missing_count(self) -> int:
        """How many numbers ``missing`` holds."""
        return sum(len(r) for r in self.missing)


class AuditTally:
    """The numbers a counter's items hold, checked against its numbering and its highest number.

    Parameters:
        numbering: the counter's numbering.
        highest: the counter's highest number (``None``: no counter item; the highest item's).
    """

    def __init__(self, numbering: Numbering, highest: int | None) -> None:
        self.numbering = numbering
        self.highest = highest
        self._values: list[int] = []  # counter values (k) of the items, as found
        self.off_numbering = 0

    def add(self, n: int) -> None:
        """An item holds number ``n``."""
        numbering = self.numbering
        if n < numbering.offset or (n - numbering.offset) % numbering.stride:
            self.off_numbering += 1
            return
        self._values.append((n - numbering.offset) // numbering.stride + 1)

    def done(self, key: str) -> CounterAudit:
        """The audit: missing numbers as ranges, items above the counter, duplicates."""
        numbering = self.numbering
        values = sorted(self._values)
        top = values[-1] if values else 0
        last = top if self.highest is None else numbering.count_up_to(self.highest)
        missing: list[range] = []
        duplicates: list[int] = []
        expected = 1
        previous = 0
        for k in values:
            if k == previous:
                if not duplicates or duplicates[-1] != numbering.number(k):
                    duplicates.append(numbering.number(k))
                continue
            previous = k
            if k <= last:
                if k > expected:
                    missing.append(self._numbers(expected, k - 1))
                expected = k + 1
        if expected <= last:
            missing.append(self._numbers(expected, last))
        above = sum(1 for k in values if k > last)
        return CounterAudit(
            key=key,
            highest=numbering.number(last) if last else 0,
            items=len(values) + self.off_numbering,
            missing=tuple(missing),
            above=above,
            highest_item=numbering.number(top) if top else 0,
            off_numbering=self.off_numbering,
            duplicates=tuple(duplicates),
        )

    def _numbers(self, first_k: int, last_k: int) -> range:
        stride = self.numbering.stride
        return range(self.numbering.number(first_k), self.numbering.number(last_k) + stride, stride)


async def audit_counter(
    store: DynamoStore,
    key: str,
    *,
    partition: str | None = None,
    shards: int | None = None,
    number_attribute: str | None = None,
    progress: Progress | None = None,
) -> CounterAudit:
    """Check counter ``key`` against the items it numbered: every number of its numbering from
    the first up to its highest has exactly one item, and no item holds a number above it
    (the state after the counter alone was restored, or items were copied in).

    The items are where the counter item says (``aioseq_counter``, a
    [`CounterKind`][aioseq.layout.CounterKind] its strategy records): beside it (its item
    collection, the number as the sort key), or as
    [`ShardedItems(prefix, shards)`][aioseq.layout.ShardedItems] spreads them. Its items are not
    checked (``unchecked``, not a finding) when its strategy stores none (atomic, allocator,
    optimistic: their numbers may have gaps), when they are where its writer could not say,
    and when no strategy has recorded what it is (a counter item written before aioseq recorded
    it). Naming the place checks them there, whatever the counter item says (but never a
    counter that stores no items): the item collection ``partition``, or with ``shards``, those
    spread by [`ShardedItems(partition or key, shards)`][aioseq.layout.ShardedItems], with the
    number as the sort key, or in ``number_attribute``. The counter item itself is not one of
    them. A key with no counter item (the sort-key strategy) is checked for gaps up to its
    highest item. An unreadable counter item is a finding (``invalid``), not an error.

    DynamoDB calls: one strongly consistent ``GetItem`` (1 RCU), then a strongly consistent,
    paginated ``Query`` of each item collection projecting its keys (and
    ``number_attribute``), ``QUERY_PAGE_ITEMS`` (10,000) items a page: 1 RCU per 4 KB read
    (after one ``DescribeTable`` for items in another table).
    ``progress`` is called after each page with a [`ScanProgress`][aioseq.admin.ScanProgress]
    (a segment per collection).

    Returns:
        a [`CounterAudit`][aioseq.admin.CounterAudit]; its ``fix`` is the ``aioseq start-after``
        command that moves the counter past its items when some stand above it.

    Raises:
        ConfigurationError: a bad key, partition, shard count or attribute name; a table with
            no sort key and no ``number_attribute``.
        CounterNotFound: ``key`` has no counter item and no item in its collection.
        RetriesExhausted, StoreError: as for any request.
    """
    check_key(key)
    spec = store.table
    named = partition is not None or shards is not None or number_attribute is not None
    partitions = collections(store.scoped_key(key), partition, shards) if named else []
    try:
        info: CounterInfo | None = await describe_counter(store, key)
    except CounterNotFound:
        info = None
    except CounterValueInvalid as exc:
        return CounterAudit(key, 0, 0, invalid=str(exc))
    kind = info.kind if info is not None else None
    numbering = (info.numbering if info else None) or store.counter_numbering(Numbering())
    highest = None if info is None else (numbering.number(info.value) if info.value else 0)
    unchecked = _unchecked(kind) if info is not None else None
    if unchecked == "no items" or (unchecked is not None and not named):
        return CounterAudit(key, highest or 0, 0, kind=kind, unchecked=unchecked)
    table, attribute = spec.name, number_attribute or spec.sort_key
    if kind is not None and kind.items == "sharded" and not named:
        table, attribute = kind.table or table, kind.number_attribute
        partition, shards = kind.prefix, kind.shards
        partitions = collections(key, partition, shards)
    if attribute is None:
        raise ConfigurationError(
            f"table {spec.name!r} has no sort key: say which attribute holds the numbers"
        )
    tally = AuditTally(numbering, highest)
    counter_key = store.counter_item_key(key)

    def found(item: dict[str, Any]) -> None:
        if all(item.get(name) == value for name, value in counter_key.items()):
            return  # the counter item
        n = whole_number(item.get(attribute))
        if n is not None:
            tally.add(n)

    extra = tuple(k for k in (spec.partition_key, spec.sort_key) if k and k != attribute)
    await query_collections(
        store,
        table=table,
        partitions=partitions or [store.scoped_key(key)],
        attribute=attribute,
        extra=extra if table == spec.name else (),
        found=found,
        progress=progress,
    )
    audit = replace(tally.done(key), kind=kind)
    if info is None and not audit.items:
        raise CounterNotFound(key, spec.name)
    if audit.above:
        partition = partition or store.scoped_key(key)
        audit = replace(audit, fix=_fix(store, key, table, attribute, partition, shards))
    return audit


def _fix(
    store: DynamoStore, key: str, table: str, attribute: str, partition: str, shards: int | None
) -> str:
    """`CounterAudit.fix`: the ``aioseq start-after`` command line that runs
    `start_after_maximum()` on these items (a public field, so written here; the CLI prints
    it as it is)."""
    scope = store.region_scope
    regions = f" --regions {','.join(scope.regions)} --region-slots {scope.slots}" if scope else ""
    return (
        f"aioseq --table {store.table.name}{regions} start-after {key} --table {table}"
        f" --attribute {attribute} --partition {partition}"
        + (f" --shards {shards}" if shards is not None else "")
    )


def _unchecked(kind: CounterKind | None) -> Literal["no items", "elsewhere", "unmarked"] | None:
    """Why a counter of ``kind`` has no items to check where it says, or ``None``."""
    if kind is None:
        return "unmarked"
    if not kind.stores_items:
        return "no items"
    return "elsewhere" if kind.items == "elsewhere" else None
