"""Counters one at a time: set, raise, inspect, list, and start after the numbers a table
already holds. The values (`CounterInfo`) and the arithmetic they need are here too."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from aioseq._checks import check_key
from aioseq._items import AttributeValue, item_size, number, parse_counter, write_units
from aioseq._limits import (
    COUNTER_ATTRIBUTE,
    MAX_NUMBER,
    NUMBERING_ATTRIBUTE,
    PARTITION_WCU_PER_SEC,
    TOKENS_ATTRIBUTE,
    UPDATED_AT_ATTRIBUTE,
    WRITES_ATTRIBUTE,
)
from aioseq._retry import applied_at_most_once, transient
from aioseq.admin.scan import (
    Progress,
    collections,
    pages,
    query_collections,
    scan_table,
    whole_number,
)
from aioseq.errors import (
    AioseqError,
    ConditionFailed,
    ConfigurationError,
    CounterNotFound,
    CounterValueInvalid,
    CounterWouldMoveBack,
    NumberOutOfRange,
    RetriesExhausted,
)
from aioseq.layout import CounterKind
from aioseq.numbering import Numbering, recorded_text, refuse_scoped

if TYPE_CHECKING:
    from aioseq._store import DynamoStore

log = logging.getLogger("aioseq")


@dataclass(frozen=True)
class CounterInfo:
    """One counter as its counter item holds it.

    Attributes:
        key: the counter key (the counter item's partition key value).
        value: the counter's value, a whole number from 0 to ``10**38 - 1`` (with the default
            numbering, the last number handed out).
        numbering: the [`Numbering`][aioseq.Numbering] recorded in ``aioseq_numbering``, or
            ``None`` when the counter item has none (the default numbering, or a counter made
            before numberings were recorded).
        updated_at: when an operator's write ([`set_counter()`][aioseq.admin.set_counter],
            [`ensure_at_least()`][aioseq.admin.ensure_at_least],
            [`set_numbering()`][aioseq.admin.set_numbering]) last moved it (``aioseq_updated_at``,
            timezone-aware UTC), or ``None`` if none did.
        kind: what the counter is, as its strategy recorded it (``aioseq_counter``), or
            ``None`` when no strategy has recorded it (a counter item written before aioseq
            recorded kinds, or only by operators' writes).
    """

    key: str
    value: int
    numbering: Numbering | None = None
    updated_at: datetime | None = None
    kind: CounterKind | None = None

    @property
    def headroom(self) -> int | None:
        """Numbers the counter can still hand out before the ``max_value`` its numbering records
        (``None``: it records none)."""
        numbering = self.numbering
        if numbering is None or numbering.max_value is None:
            return None
        return max(0, numbering.count_up_to(numbering.max_value) - self.value)


def check_value(value: object, what: str = "value") -> int:
    """A counter value: an ``int`` (not ``bool``) from 0 to ``10**38 - 1``.

    Raises:
        ConfigurationError: anything else (a float, a str, a negative or too large int).
    """
    if not isinstance(value, int) or isinstance(value, bool):
        raise ConfigurationError(f"{what} must be an int, not {type(value).__name__}")
    if not 0 <= value <= MAX_NUMBER:
        raise ConfigurationError(f"{what} must be an int from 0 to 10**38 - 1, not {value}")
    return value


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="microseconds")


def parse_time(found: AttributeValue | None) -> datetime | None:
    """``aioseq_updated_at`` as a timezone-aware datetime; ``None`` if missing or not ours."""
    text = found.get("S") if found else None
    if not isinstance(text, str):
        return None
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        return None
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=timezone.utc)


def counter_info(item: Mapping[str, AttributeValue], *, key: str, attribute: str) -> CounterInfo:
    """The [`CounterInfo`][aioseq.CounterInfo] of a counter item (AttributeValues).

    Raises:
        CounterValueInvalid: its value is not a whole number from 0 to ``10**38 - 1``, or its
            ``aioseq_numbering`` or ``aioseq_counter`` is not one aioseq wrote.
        NumberingMismatch: it is a Region-scoped key's scope record (read without
            ``regions=``).
    """
    refuse_scoped(item, key)
    recorded = recorded_text(item, key)
    return CounterInfo(
        key=key,
        value=parse_counter(item, key, attribute),
        numbering=None if recorded is None else Numbering.decode(recorded),
        updated_at=parse_time(item.get(UPDATED_AT_ATTRIBUTE)),
        kind=counter_kind(item, key),
    )


def counter_kind(item: Mapping[str, AttributeValue], key: str) -> CounterKind | None:
    """What counter item ``item`` says its counter is (``aioseq_counter``), ``None`` if it
    says nothing.

    Raises:
        CounterValueInvalid: the attribute is not what a strategy writes.
    """
    found = item.get(COUNTER_ATTRIBUTE)
    if found is None:
        return None
    try:
        return CounterKind.decode(found.get("S") if set(found) == {"S"} else None)
    except ConfigurationError:
        raise CounterValueInvalid(
            key, COUNTER_ATTRIBUTE, found, expected="a counter kind such as 'atomic' (S)"
        ) from None


def value_for_maximum(maximum: int, numbering: Numbering | None) -> int:
    """The counter value after which every number handed out is above ``maximum``: the value
    of the highest number ``<= maximum`` under ``numbering`` (``maximum`` itself under the
    default numbering; 0 when no number is that low)."""
    return maximum if numbering is None else numbering.count_up_to(maximum)


def check_within_limit(key: str, value: int, recorded: str) -> None:
    """Refuse ``value`` when its number passes the ``max_value`` of the numbering ``recorded``.

    Raises:
        NumberOutOfRange: it does (nothing is written).
    """
    numbering = Numbering.decode(recorded)
    if numbering.max_value is not None and value > 0:
        highest = numbering.number(value)
        if highest > numbering.max_value:
            raise NumberOutOfRange(
                highest,
                f"counter {key!r} is numbered {recorded!r}: value {value} is number {highest},"
                f" past its max_value; nothing was written",
            )


#: The condition that the counter item's value is a Number from 0 up (a fraction passes: no
#: expression tells whole numbers apart; it is refused when read). A counter item that fails
#: it is left as it is, and the refusal's ``ALL_OLD`` tells what it holds.
_VALID = "attribute_type(#value, :number_type) AND #value >= :zero"

#: The condition that the counter item records no numbering with a ``max_value`` of its own:
#: a value can then be set without knowing that limit. Where one is recorded, the refusal's
#: ``ALL_OLD`` brings it, and the write is checked against it and sent again pinned to that
#: exact numbering.
_NO_LIMIT = "(attribute_not_exists(#numbering) OR NOT contains(#numbering, :limit_mark))"
_NO_LIMIT_VALUES: dict[str, AttributeValue] = {":limit_mark": {"S": " max_value="}}


async def _set_value(
    store: DynamoStore,
    key: str,
    value: int,
    bound: str | None,
    *,
    resend_if_lost: bool = True,
    **params: Any,
) -> dict[str, Any]:
    """The operator's ``UpdateItem`` of counter ``key``'s value: ``SET #value = :value`` and
    the time, and the default numbering on a counter item that records none (the value was
    given as a number of it: a later writer of another numbering is refused, not allowed to
    reuse numbers). Where the counter item exists, its value must be valid, within ``bound``
    (``"#value < :value"``; ``None``: any) and the counter's ``max_value``: the first request
    requires no limit to be recorded; if one is, ``value`` is checked against it and the
    request is sent again, pinned to that numbering (2 requests, only for counters with a
    limit of their own; again if a ``set_numbering()`` changed it in between: at most the
    retry policy's ``max_attempts`` in all). Each request is retried under the store's retry
    policy; ``resend_if_lost=False``: never resent past an error that may hide its success
    (raised, ``maybe_applied``): for a write that may move the counter back, which a resend
    would do again after other writers took the numbers above it.

    Raises:
        NumberOutOfRange: ``value``'s number passes the recorded ``max_value``.
        ConditionFailed: the value is invalid or out of ``bound``, with the counter item
            (``ALL_OLD``) for the caller to explain.
        RetriesExhausted: the recorded limit changed before each of ``max_attempts`` requests.
    """
    recorded = await store.check_writes(key)  # (under regions=: the Region's share)
    condition = _VALID if bound is None else f"{_VALID} AND {bound}"
    names = {
        "#pk": store.table.partition_key,
        "#value": store.table.value_attribute,
        "#updated": UPDATED_AT_ATTRIBUTE,
        "#numbering": NUMBERING_ATTRIBUTE,
    }
    values: dict[str, AttributeValue] = {
        ":value": number(value),
        ":now": {"S": now()},
        ":default_numbering": {"S": (recorded or Numbering()).encode()},
        ":zero": {"N": "0"},
        ":number_type": {"S": "N"},
    }
    update = (
        "SET #value = :value, #updated = :now,"
        " #numbering = if_not_exists(#numbering, :default_numbering)"
    )
    classify = transient if resend_if_lost else applied_at_most_once()
    pinned: str | None = None  # the recorded numbering, once a refusal showed one with a limit
    maybe_applied = False  # (a request of an earlier round may have been applied)
    sends = store.retry.policy.max_attempts

    async def attempt() -> dict[str, Any]:
        limit = "#numbering = :recorded" if pinned else _NO_LIMIT
        limit_values = {":recorded": {"S": pinned}} if pinned else _NO_LIMIT_VALUES
        return await store.send_once(
            "update_item",
            TableName=store.table.name,
            Key=store.counter_item_key(key),
            ReturnValuesOnConditionCheckFailure="ALL_OLD",
            ConditionExpression=f"attribute_not_exists(#pk) OR ({condition} AND {limit})",
            ExpressionAttributeNames=names,
            ExpressionAttributeValues={**values, **limit_values},
            UpdateExpression=update,
            **params,
        )

    for _ in range(sends):
        try:
            try:
                return await store.retry.run(attempt, classify=classify, counter_key=key)
            except ConditionFailed as exc:
                refused = exc
                maybe_applied = maybe_applied or exc.maybe_applied
            pinned = _pinned_limit(refused, key, value, pinned)  # or raises
        except AioseqError as exc:  # (what ends the call: maybe applied by any round)
            exc.maybe_applied = exc.maybe_applied or maybe_applied
            raise
    raise RetriesExhausted(sends, refused, maybe_applied=maybe_applied) from refused


def _pinned_limit(refused: ConditionFailed, key: str, value: int, pinned: str | None) -> str:
    """The numbering a refused `_set_value()` is sent again pinned to: the one the refusal
    shows (``ALL_OLD``), when it records a ``max_value`` that ``value`` fits and is not the one
    ``pinned`` already.

    Raises:
        ConditionFailed: ``refused`` itself: not the limit, the caller's condition refused it.
        NumberOutOfRange: ``value``'s number passes that ``max_value``.
        NumberingMismatch: a Region-scoped key, written by a store without ``regions=``.
    """
    refuse_scoped(refused.item, key)
    found = recorded_text(refused.item, key)
    if found is None or " max_value=" not in found or found == pinned:
        raise refused
    check_within_limit(key, value, found)
    return found


async def set_counter(
    store: DynamoStore, key: str, value: int, *, allow_backward: bool = False
) -> int:
    """Set counter ``key``'s value to ``value`` (PostgreSQL's ``setval``), made if missing.

    ``value`` is a counter value: with the default numbering, the last number handed out
    (after ``set_counter(store, "k", 1000)``, the next number is 1001); under a recorded
    [`Numbering`][aioseq.Numbering], the value whose number is ``offset + (value - 1) * stride``.
    A counter item that records no numbering gets the default one in the same write. Moving
    forward is safe (numbers of blocks an allocator already holds, and of calls in flight,
    still come out, unique). Moving back hands ``value + 1 .. current`` out a second time: it
    is refused unless ``allow_backward=True``; stop running allocators first. See
    [Operating counters](../operations.md#set-key-value-allow-backward).

    DynamoDB calls: one ``UpdateItem`` (1 WCU per KB of the counter item),
    ``SET #value = :value, aioseq_updated_at = :now`` if the value is a number >= 0 (and,
    unless ``allow_backward``, ``<= :value``), ``ReturnValues=ALL_OLD``; a counter whose
    numbering records a ``max_value`` costs a second one, pinned to it. Retried under the
    store's [`RetryPolicy`][aioseq.RetryPolicy], except a backward write whose answer was lost.

    Parameters:
        store, key: the store whose table holds the counter item, and the counter key.
        value: the new value, an ``int`` from 0 to ``10**38 - 1``.
        allow_backward: also set a value below the current one.

    Returns:
        the counter's previous value (0 if it had no counter item; after a lost answer and a
        resend, possibly ``value`` itself).

    Raises:
        ConfigurationError: a bad key or value (nothing sent).
        CounterWouldMoveBack: ``value`` is below the current value and ``allow_backward`` is
            false; nothing written, unless ``maybe_applied`` (a resend found the counter past
            ``value``, which the first attempt may have set).
        NumberOutOfRange: ``value``'s number passes the ``max_value`` the counter's numbering
            records; nothing written.
        CounterValueInvalid: the counter item's value is not a whole number from 0 to
            ``10**38 - 1`` (nothing written); fix it with the tool that wrote it.
        NumberingMismatch: the counter key is Region-scoped and the store has no ``regions=``
            (the message names the scope to pass). Nothing written.
        RetriesExhausted, StoreError: as for any request; with ``allow_backward``, a lost
            answer (``maybe_applied``: the counter may have been set) is not retried: read it
            ([`describe_counter()`][aioseq.admin.describe_counter]) before trying again.
    """
    return await exchange_counter(store, key, value, allow_backward=allow_backward) or 0


async def exchange_counter(
    store: DynamoStore, key: str, value: int, *, allow_backward: bool = False
) -> int | None:
    """Set counter ``key``'s value to ``value`` and return the value it replaced: an atomic
    exchange. The same request, cost, parameters and errors as
    [`set_counter()`][aioseq.admin.set_counter].

    Returns:
        the counter's previous value, or ``None`` when it had no counter item (this call made
        it; [`set_counter()`][aioseq.admin.set_counter] returns 0 there).
    """
    check_key(key)
    check_value(value)
    spec = store.table
    try:
        response = await _set_value(
            store,
            key,
            value,
            None if allow_backward else "#value <= :value",
            # Forward, a resend is safe: its condition lets it only raise the counter (to the
            # same value), and a counter that only rises never hands a number out twice.
            # Backward, a resend after a lost answer would move the counter back again, below
            # numbers other writers took since the first attempt was applied: sent once.
            resend_if_lost=not allow_backward,
            ReturnValues="ALL_OLD",  # UPDATED_OLD omits a value set to itself (moto)
        )
    except ConditionFailed as exc:
        current = parse_counter(exc.item, key, spec.value_attribute)  # invalid: raises
        if exc.item is None:  # a server that does not return ALL_OLD
            raise
        refused = CounterWouldMoveBack(key, current, value)
        # A resend refused: the first attempt may have set the value, which others then passed.
        refused.maybe_applied = exc.maybe_applied
        raise refused from None
    old = response.get("Attributes")  # ALL_OLD: none when there was no counter item
    return None if old is None else whole_number(old.get(spec.value_attribute)) or 0


async def ensure_at_least(store: DynamoStore, key: str, value: int) -> int:
    """Raise counter ``key`` to ``value`` if it is lower (or has no counter item); never lower
    it. Atomic, idempotent and safe to run from every deployment at start-up ("the counter is
    past the highest id already in the table").

    DynamoDB calls: one conditional ``UpdateItem`` (1 WCU per KB of the counter item; a
    refused condition costs the same):

        SET #value = :value, aioseq_updated_at = :now,
            aioseq_numbering = if_not_exists(aioseq_numbering, "stride=1 offset=1")
        IF  attribute_not_exists(#pk)
            OR (attribute_type(#value, N) AND #value >= 0 AND #value < :value
                AND <no max_value recorded>)

    with ``ReturnValuesOnConditionCheckFailure=ALL_OLD``: when the counter is already at or
    above ``value``, the refusal returns its value, with no second read. A counter whose
    numbering records a ``max_value`` is checked against it and written with the numbering
    pinned instead, as [`set_counter()`][aioseq.admin.set_counter] does (2 requests). Transient
    errors are retried under the store's [`RetryPolicy`][aioseq.RetryPolicy].

    Parameters:
        store: the store whose table holds the counter item.
        key: the counter key.
        value: the least value, an ``int`` from 0 to ``10**38 - 1``.

    Returns:
        the counter's value afterwards: ``max(value, its value before)``.

    Raises:
        ConfigurationError: a bad key or value (nothing sent).
        NumberOutOfRange: ``value``'s number passes the ``max_value`` the counter's numbering
            records; nothing written.
        CounterValueInvalid: the counter item's value is not a whole number from 0 to
            ``10**38 - 1``; nothing written.
        NumberingMismatch: as for [`set_counter()`][aioseq.admin.set_counter].
        RetriesExhausted, StoreError: as for any request.
    """
    check_key(key)
    check_value(value)
    spec = store.table
    try:
        # Resent after a lost answer: safe, as its condition lets it only raise the counter
        # (to the same value), and a counter that only rises hands no number out twice.
        await _set_value(store, key, value, "#value < :value")
    except ConditionFailed as exc:
        if exc.item is None:  # a server that does not return ALL_OLD
            raise
        return parse_counter(exc.item, key, spec.value_attribute)
    return value


async def describe_counter(store: DynamoStore, key: str) -> CounterInfo:
    """Counter ``key`` as its counter item holds it.

    DynamoDB calls: one strongly consistent ``GetItem`` (1 RCU per 4 KB), retried on transient
    errors.

    Raises:
        ConfigurationError: a bad key.
        CounterNotFound: there is no counter item for ``key`` (a sort-key counter has none).
        CounterValueInvalid: its value is not a whole number from 0 to ``10**38 - 1``, or its
            numbering or kind (``aioseq_counter``) is not what aioseq writes.
        NumberingMismatch: the key is Region-scoped and the store has no ``regions=``.
        RetriesExhausted, StoreError: as for any request.
    """
    check_key(key)
    spec = store.table

    async def attempt() -> dict[str, Any]:
        return await store.send_once(
            "get_item", TableName=spec.name, Key=store.counter_item_key(key), ConsistentRead=True
        )

    response = await store.retry.run(attempt, counter_key=key)
    item = response.get("Item")
    if not item:
        raise CounterNotFound(key, spec.name)
    return counter_info(item, key=key, attribute=spec.value_attribute)


async def partition_ceiling(store: DynamoStore, key: str) -> float | None:
    """Whether items share counter ``key``'s partition with its counter item, and so what
    that partition caps their puts at on AWS: ``None`` when the counter item is alone there
    (or the table has no sort key), else the puts per second one partition takes (1,000 WCU/s)
    at the cost of a transactional put of the first item found there (2 WCU per KB): 500 for
    items under 1 KB. The counter item's own writes take some of it too.

    DynamoDB calls: one eventually consistent ``Query`` of the counter's partition,
    ``Limit`` 2 (at least 0.5 RCU: 0.5 per 4 KB of the two items read).

    Raises:
        ConfigurationError: a bad key.
        RetriesExhausted, StoreError: as for any request.
    """
    check_key(key)
    spec = store.table
    if spec.sort_key is None:
        return None
    counter_key = store.counter_item_key(key)
    page = await store.send_with_retries(
        "query",
        TableName=spec.name,
        KeyConditionExpression="#pk = :key",
        ExpressionAttributeNames={"#pk": spec.partition_key},
        ExpressionAttributeValues={":key": {"S": store.scoped_key(key)}},
        Limit=2,
    )
    for item in page.get("Items", []):
        if any(item.get(name) != value for name, value in counter_key.items()):
            return PARTITION_WCU_PER_SEC / write_units(item_size(item), transactional=True)
    return None


async def list_counters(
    store: DynamoStore, *, on_invalid: Callable[[str, AioseqError], None] | None = None
) -> AsyncIterator[CounterInfo]:
    """Every counter in the store's table, in the table's order (not sorted), page by page.

    A counter item is an item whose sort key is the counter sort key (0; any item, in a table
    without a sort key) that has the value attribute and one of aioseq's own: what the counter
    is (``aioseq_counter``, recorded by the strategies' writes), or the numbering, write count,
    ring of tokens or last update (written by aioseq before it recorded what counters are, and
    by operators' writes). Another item with a ``value`` is not a counter. Sort-key counters
    have no counter item and are not listed; nor are counter items aioseq 0.1 wrote, until
    something of this version writes them.

    DynamoDB calls: a paginated ``Scan`` with ``FilterExpression`` and
    ``ProjectionExpression`` (the key, value, numbering, last update and kind). A Scan reads
    the whole table, numbered items included, and the filter does not reduce its cost: 0.5
    RCU per 4 KB read (eventually consistent), 1 MB per page. For an operator, not a hot path.

    Parameters:
        on_invalid: called with the key and the error for each counter item that cannot be
            read (a value that is not a whole number, an unreadable numbering or kind), and
            the listing goes on; without it, that error is raised and the listing stops.

    Raises:
        CounterValueInvalid, NumberingMismatch: a counter item cannot be read, and no
            ``on_invalid`` was given.
        RetriesExhausted, StoreError: as for any request.
    """
    spec = store.table
    names = {
        "#pk": spec.partition_key,
        "#value": spec.value_attribute,
        "#numbering": NUMBERING_ATTRIBUTE,
        "#updated": UPDATED_AT_ATTRIBUTE,
        "#kind": COUNTER_ATTRIBUTE,
        "#writes": WRITES_ATTRIBUTE,
        "#tokens": TOKENS_ATTRIBUTE,
    }
    values: dict[str, AttributeValue] = {}
    ours = ("#kind", "#numbering", "#updated", "#writes", "#tokens")  # (not value alone)
    exists = " OR ".join(f"attribute_exists({name})" for name in ours)
    condition = f"attribute_exists(#value) AND ({exists})"
    if spec.sort_key is not None:
        names["#sk"] = spec.sort_key
        values[":counter"] = {spec.sort_key_type: str(spec.counter_sort_key)}
        condition = f"#sk = :counter AND {condition}"
    params: dict[str, Any] = {
        "TableName": spec.name,
        "FilterExpression": condition,
        "ProjectionExpression": "#pk, #value, #numbering, #updated, #kind",
        "ExpressionAttributeNames": names,
    }
    if values:
        params["ExpressionAttributeValues"] = values
    async for page in pages(store, "scan", params):
        for item in page.get("Items", []):
            key = str(item[spec.partition_key]["S"])
            try:
                info = counter_info(item, key=key, attribute=spec.value_attribute)
            except AioseqError as exc:  # (CounterValueInvalid, NumberingMismatch)
                if on_invalid is None:
                    raise
                on_invalid(key, exc)
                continue
            yield info


async def start_after_maximum(
    store: DynamoStore,
    key: str,
    *,
    table: str,
    attribute: str,
    segments: int = 4,
    progress: Progress | None = None,
    partition: str | None = None,
    shards: int | None = None,
) -> int:
    """Move counter ``key`` past the highest number already in ``table``'s ``attribute`` (the
    ids an application wrote before it used aioseq), so that every number handed out next is
    above it: [`scan_maximum()`][aioseq.admin.scan_maximum], then
    [`ensure_at_least()`][aioseq.admin.ensure_at_least] (never moves the counter back; safe to run
    again).

    With a [`Numbering`][aioseq.Numbering] recorded on the counter item, the counter is raised to
    the value of the highest number at or below the maximum
    ([`value_for_maximum()`][aioseq.admin.value_for_maximum]), not to the maximum itself.

    DynamoDB calls: the parallel Scan of [`scan_maximum()`][aioseq.admin.scan_maximum] (0.5 RCU per
    4 KB of ``table``), one ``GetItem`` of the counter item (1 RCU) for its numbering, one
    conditional ``UpdateItem`` (1 WCU).

    Parameters:
        store: the store whose table holds the counter item.
        key: the counter key.
        table, attribute, segments, progress: see [`scan_maximum()`][aioseq.admin.scan_maximum].
        partition: only the items of this partition key value count: a ``Query`` of that item
            collection (strongly consistent, paginated, projecting ``attribute``) in place of
            the Scan, after one ``DescribeTable`` for ``table``'s partition key name.
        shards: with ``partition`` (the prefix), the items spread by
            [`ShardedItems(partition, shards)`][aioseq.layout.ShardedItems]: a ``Query`` of each
            shard.

    Returns:
        the counter's value afterwards.

    Raises:
        ConfigurationError: a bad argument (nothing sent), or ``table`` has items and none
            holds a whole number in ``attribute`` (a misspelt name: nothing written). An empty
            ``table`` leaves the counter as it is, with a warning in the log.
        CounterValueInvalid: the counter item's value is not a whole number; nothing written.
        NumberingMismatch: as for [`set_counter()`][aioseq.admin.set_counter].
        RetriesExhausted, StoreError: as for any request.
    """
    check_key(key)
    if shards is not None and partition is None:
        raise ConfigurationError("shards needs partition: the prefix of the shards' keys")
    if partition is None:
        tally = await scan_table(
            store, table=table, attribute=attribute, segments=segments, progress=progress
        )
    else:
        tally = await query_collections(
            store,
            table=table,
            partitions=collections(key, partition, shards),
            attribute=attribute,
            progress=progress,
        )
    if tally.items and not tally.numbers:
        raise ConfigurationError(
            f"no item of table {table!r} holds a whole number in {attribute!r}"
            f" ({tally.items:,} items scanned, {tally.with_attribute:,} with that attribute):"
            " check the attribute's name; nothing written"
        )
    if not tally.items:
        log.warning("table %r is empty: counter %r has nothing to start after", table, key)
    maximum = tally.maximum
    try:
        numbering = (await describe_counter(store, key)).numbering
    except CounterNotFound:  # (under regions=: the Region's share of what the key records)
        numbering = await store.check_writes(key)
    return await ensure_at_least(store, key, value_for_maximum(maximum, numbering))
