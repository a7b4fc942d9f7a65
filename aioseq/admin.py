"""Counter administration, like a SQL sequence's: set, raise, inspect, list, scan, renumber.

PostgreSQL has ``setval``, ``ALTER SEQUENCE ... RESTART`` and ``\\ds``; aioseq has these
functions, each taking first the [`DynamoStore`][aioseq.DynamoStore] whose table holds the counter
items (``await aioseq.admin.set_counter(store, "k", 1000)``). Every request runs under the
store's retry engine (``store.send_with_retries``, or ``store.retry.run`` around
``store.send_once``).

They act on counter items, ``{pk: <key>, sk: 0, value: N, ...}``: the counters of the atomic,
allocator, optimistic and transactional strategies. A sort-key counter has no counter item (its
value is the highest sort key of its collection), so these functions do not apply to it.

A counter's *value* is its counter item's ``value``: with the default numbering, the last number
handed out (``set_counter(store, "k", 1000)``, then ``next()`` gives 1001). With a
[`Numbering`][aioseq.Numbering], value ``v`` is the ``v``-th number, ``offset + (v - 1) * stride``.

Operator writes (`set_counter()`, `ensure_at_least()`, `set_numbering()`, below) also
record when they moved a counter, in ``aioseq_updated_at`` (ISO-8601, UTC, the writing
process's clock), which `list_counters()` and `describe_counter()` show. The
strategies' own writes do not: ``next()`` is the hot path and its write stays as small as it is.

Moving a counter does not break the resolution of lost answers of the optimistic and
transactional strategies (`aioseq.strategies._recent_writes`): that resolution reads only
``aioseq_writes`` and the ring ``aioseq_tokens``, which these functions never touch. A write
whose answer was lost either left its token (applied) or did not (not applied), whatever the
value became since; a pending conditional write that expects the old value fails its
condition and is tried again from the new value.

The values and pure arithmetic are in `aioseq._admin_values`, output formats in the CLI."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Literal

from aioseq._admin_values import (
    NO_LIMIT,
    NO_LIMIT_VALUES,
    AuditTally,
    Repin,
    ScanTally,
    check_value,
    check_within_limit,
    counter_info,
    now,
    renumbering,
    whole_number,
)
from aioseq._admin_values import CounterAudit as CounterAudit
from aioseq._admin_values import CounterInfo as CounterInfo
from aioseq._admin_values import Progress as Progress
from aioseq._admin_values import ScanProgress as ScanProgress
from aioseq._admin_values import value_for_maximum as value_for_maximum
from aioseq._checks import check_attribute_name, check_count, check_key, check_table_name
from aioseq._items import AttributeValue, item_size, number, parse_counter, write_units
from aioseq._limits import (
    COUNTER_ATTRIBUTE,
    NUMBERING_ATTRIBUTE,
    PARTITION_WCU_PER_SEC,
    TOKENS_ATTRIBUTE,
    UPDATED_AT_ATTRIBUTE,
    WRITES_ATTRIBUTE,
)
from aioseq._retry import Verdict, applied_at_most_once, is_transient
from aioseq.errors import (
    AioseqError,
    ConditionFailed,
    ConfigurationError,
    CounterNotFound,
    CounterValueInvalid,
    CounterWouldMoveBack,
)
from aioseq.layout import CounterKind, ShardedItems
from aioseq.numbering import (
    Numbering,
    RegionScope,
    ScopeRecord,
    decode_recorded,
    recorded_text,
    refuse_scoped,
    scope_kept,
)

if TYPE_CHECKING:
    from aioseq._store import DynamoStore

__all__ = [
    "CounterAudit",
    "CounterInfo",
    "Progress",
    "ScanProgress",
    "audit_counter",
    "describe_counter",
    "ensure_at_least",
    "list_counters",
    "partition_ceiling",
    "scan_maximum",
    "set_counter",
    "set_numbering",
    "set_region_scope",
    "start_after_maximum",
    "value_for_maximum",
]

#: The most segments [`scan_maximum()`][aioseq.admin.scan_maximum] scans in parallel (DynamoDB
#: allows 1,000,000; more than a few dozen only adds requests in flight on one client).
MAX_SEGMENTS = 64

log = logging.getLogger("aioseq")


# --- requests ---------------------------------------------------------------------------------

#: Items per ``Query`` page of an item collection (``Limit``): without it a page of keys alone
#: is up to 1 MB, ~50,000 items, which the client holds in memory at once, parsed.
QUERY_PAGE_ITEMS = 10_000

#: The condition that the counter item's value is a Number from 0 up (a fraction passes: no
#: expression tells whole numbers apart; it is refused when read), with its values. A counter
#: item that fails it is left as it is, and the refusal's ``ALL_OLD`` tells what it holds.
_VALID = "attribute_type(#value, :number_type) AND #value >= :zero"
_VALID_VALUES: dict[str, AttributeValue] = {":zero": {"N": "0"}, ":number_type": {"S": "N"}}

#: What the operator's writes set besides the value: the time, and the default numbering on a
#: counter item that records none (the value was given as a number of the default numbering;
#: a later writer of another numbering is then refused, not allowed to reuse numbers).
_SET_VALUE = (
    "SET #value = :value, #updated = :now,"
    " #numbering = if_not_exists(#numbering, :default_numbering)"
)


async def _write_within_limit(
    store: DynamoStore,
    key: str,
    value: int,
    condition: str,
    names: dict[str, str],
    values: dict[str, AttributeValue],
    *,
    resend_if_lost: bool = True,
    **params: Any,
) -> dict[str, Any]:
    """`_update()` with ``condition`` (to hold where the counter item exists) and the
    counter's ``max_value``: the first request requires no limit to be recorded; if one is,
    ``value`` is checked against it and the request is sent once more, pinned to that
    numbering (2 requests instead of 1, only for counters with a limit of their own). A
    refusal for any other reason raises [`ConditionFailed`][aioseq.errors.ConditionFailed] with the
    counter item (``ALL_OLD``) for the caller to explain. ``resend_if_lost=False``: never
    resent past an error that may hide its success (it is raised, ``maybe_applied``): for a
    write that may move the counter back, which a resend would do again after other writers
    took the numbers above it.

    Raises:
        NumberOutOfRange: ``value``'s number passes the recorded ``max_value``.
        ConditionFailed: ``condition`` is false.
    """
    recorded = await store.check_writes(key)  # (under regions=: the Region's share)
    names = {**names, "#pk": store.table.partition_key, "#numbering": NUMBERING_ATTRIBUTE}
    default = recorded or Numbering()
    values = {**values, ":default_numbering": {"S": default.encode()}}
    pinned: dict[str, AttributeValue] = {}  # the recorded numbering, once a refusal showed one

    async def attempt() -> dict[str, Any]:
        limit = "#numbering = :recorded" if pinned else NO_LIMIT
        try:
            return await store.send_once(
                "update_item",
                TableName=store.table.name,
                Key=store.counter_item_key(key),
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
                ConditionExpression=f"attribute_not_exists(#pk) OR ({condition} AND {limit})",
                ExpressionAttributeNames=names,
                ExpressionAttributeValues={**values, **(pinned or NO_LIMIT_VALUES)},
                **params,
            )
        except ConditionFailed as exc:
            refuse_scoped(exc.item, key)  # a store without regions= on a Region-scoped key
            recorded = recorded_text(exc.item, key)
            if recorded is None or " max_value=" not in recorded:
                raise  # not the limit: the caller's condition refused it
            if pinned.get(":recorded", {}).get("S") == recorded:
                raise  # pinned already: the caller's condition refused it
            check_within_limit(key, value, recorded)
            pinned[":recorded"] = {"S": recorded}  # a limit the value fits: pin it, send again
            raise Repin(str(exc), code=exc.code, operation=exc.operation, item=exc.item) from exc

    classify = _pin_verdict if resend_if_lost else applied_at_most_once(_pin_verdict)
    return await store.retry.run(attempt, classify=classify, counter_key=key)


def _pin_verdict(exc: Exception) -> Verdict:
    if isinstance(exc, Repin):
        return Verdict.RETRY_NOW
    return Verdict.RETRY if is_transient(exc) else Verdict.FAIL


async def _update(store: DynamoStore, key: str, **params: Any) -> dict[str, Any]:
    """One ``UpdateItem`` of counter ``key``'s counter item, retried under the store's policy
    (every update here sets fixed values, so a resend after a lost answer changes nothing)."""
    await store.check_writes(key)

    async def attempt() -> dict[str, Any]:
        return await store.send_once(
            "update_item",
            TableName=store.table.name,
            Key=store.counter_item_key(key),
            ReturnValuesOnConditionCheckFailure="ALL_OLD",
            **params,
        )

    return await store.retry.run(attempt, counter_key=key)


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
    return await _set_counter(store, key, value, allow_backward) or 0


async def _set_counter(store: DynamoStore, key: str, value: int, backward: bool) -> int | None:
    """[`set_counter`][aioseq.admin.set_counter]; ``None`` when there was no counter item."""
    check_key(key)
    check_value(value)
    spec = store.table
    condition = _VALID if backward else f"{_VALID} AND #value <= :value"
    try:
        response = await _write_within_limit(
            store,
            key,
            value,
            condition,
            {"#value": spec.value_attribute, "#updated": UPDATED_AT_ATTRIBUTE},
            {":value": number(value), ":now": {"S": now()}, **_VALID_VALUES},
            # Forward, a resend is safe: its condition lets it only raise the counter (to the
            # same value), and a counter that only rises never hands a number out twice.
            # Backward, a resend after a lost answer would move the counter back again, below
            # numbers other writers took since the first attempt was applied: sent once.
            resend_if_lost=not backward,
            UpdateExpression=_SET_VALUE,
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
        await _write_within_limit(
            store,
            key,
            value,
            f"{_VALID} AND #value < :value",
            {"#value": spec.value_attribute, "#updated": UPDATED_AT_ATTRIBUTE},
            {":value": number(value), ":now": {"S": now()}, **_VALID_VALUES},
            UpdateExpression=_SET_VALUE,
        )
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
    condition = f"attribute_exists(#value) AND ({' OR '.join(map(_exists, ours))})"
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
    while True:
        page = await store.send_with_retries("scan", **params)
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
        if "LastEvaluatedKey" not in page:
            return
        params["ExclusiveStartKey"] = page["LastEvaluatedKey"]


def _exists(name: str) -> str:
    return f"attribute_exists({name})"


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
    tally = await _scan(
        store, table=table, attribute=attribute, segments=segments, progress=progress
    )
    return tally.maximum


async def _scan(
    store: DynamoStore, *, table: str, attribute: str, segments: int, progress: Progress | None
) -> ScanTally:
    """`scan_maximum()`'s scan: what it read."""
    check_table_name(table)
    check_attribute_name(attribute)
    check_count(segments, "segments", maximum=MAX_SEGMENTS)
    tally = ScanTally(segments)

    async def scan(segment: int) -> None:
        params: dict[str, Any] = {
            "TableName": table,
            "ProjectionExpression": "#attribute",
            "ExpressionAttributeNames": {"#attribute": attribute},
            "Segment": segment,
            "TotalSegments": segments,
        }
        while True:
            page = await store.send_with_retries("scan", **params)
            last = page.get("LastEvaluatedKey")
            seen = tally.add_page(page.get("Items", []), attribute, last=last is None)
            if progress is not None:
                progress(seen)
            if last is None:
                return
            params["ExclusiveStartKey"] = last

    # One task per segment; the first failure (or a cancellation) cancels the others, and
    # they are awaited before it propagates (asyncio.TaskGroup's rule, on Python 3.10 too).
    tasks = [asyncio.ensure_future(scan(segment)) for segment in range(segments)]
    try:
        await asyncio.gather(*tasks)
    except BaseException:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise
    return tally


def _collections(key: str, partition: str | None, shards: int | None) -> list[str]:
    """The partition key values that hold a counter's items: ``partition`` (default: ``key``),
    or with ``shards``, those of ``ShardedItems(partition or key, shards)``."""
    if shards is None:
        return [check_key(partition or key, "partition")]
    return ShardedItems(partition or key, shards).partitions()


async def _query(
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
    ``attribute`` (and ``extra``), tallied as `_scan()` tallies (a segment per partition);
    ``found`` sees each item, ``progress`` each page."""
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
        params: dict[str, Any] = {
            "TableName": table,
            "KeyConditionExpression": "#a0 = :partition",
            "ExpressionAttributeNames": names,
            "ExpressionAttributeValues": {":partition": {"S": partition}},
            "ProjectionExpression": ", ".join(names),
            "ConsistentRead": True,
            "Limit": QUERY_PAGE_ITEMS,
        }
        while True:
            page = await store.send_with_retries("query", **params)
            items = page.get("Items", [])
            if found is not None:
                for item in items:
                    found(item)
            last = page.get("LastEvaluatedKey")
            seen = tally.add_page(items, attribute, last=last is None)
            if progress is not None:
                progress(seen)
            if last is None:
                break
            params["ExclusiveStartKey"] = last
    return tally


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
    collections = _collections(store.scoped_key(key), partition, shards) if named else []
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
        collections = _collections(key, partition, shards)
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
    await _query(
        store,
        table=table,
        partitions=collections or [store.scoped_key(key)],
        attribute=attribute,
        extra=extra if table == spec.name else (),
        found=found,
        progress=progress,
    )
    audit = replace(tally.done(key), kind=kind)
    if info is None and not audit.items:
        raise CounterNotFound(key, spec.name)
    if audit.above:
        scope = store.region_scope
        regions = (
            f" --regions {','.join(scope.regions)} --region-slots {scope.slots}" if scope else ""
        )
        command = (
            f"aioseq --table {spec.name}{regions} start-after {key} --table {table}"
            f" --attribute {attribute} --partition {partition or store.scoped_key(key)}"
            + (f" --shards {shards}" if shards is not None else "")
        )
        audit = replace(audit, fix=command)
    return audit


def _unchecked(kind: CounterKind | None) -> Literal["no items", "elsewhere", "unmarked"] | None:
    """Why a counter of ``kind`` has no items to check where it says, or ``None``."""
    if kind is None:
        return "unmarked"
    if not kind.stores_items:
        return "no items"
    return "elsewhere" if kind.items == "elsewhere" else None


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
        tally = await _scan(
            store, table=table, attribute=attribute, segments=segments, progress=progress
        )
    else:
        tally = await _query(
            store,
            table=table,
            partitions=_collections(key, partition, shards),
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


async def set_numbering(
    store: DynamoStore, key: str, numbering: Numbering, *, previous: Numbering | None = None
) -> Numbering | None:
    """Change counter ``key``'s recorded numbering to ``numbering``, and move its value so
    that the next number it hands out is above every number handed out under the old one.

    Two requests: a strongly consistent ``GetItem`` of the counter item, then one ``UpdateItem``
    (1 WCU) that sets the numbering and the value, ``:renumbered`` from
    `aioseq.numbering.renumbered_value()`, ``IF`` the value and numbering it read are still
    there; both are made again if a writer moved the counter in between, under the store's
    retry policy. With no counter item yet, it is created at value 0 with ``numbering``.
    Setting the numbering a counter has changes nothing.

    Risk: writers of the old numbering. Their next write is refused
    ([`NumberingMismatch`][aioseq.errors.NumberingMismatch]), but a
    [`BlockAllocator`][aioseq.BlockAllocator] hands out the blocks it holds, whose numbers may
    be numbers of the new one: close them first. See [Changing a
    numbering](../numbering.md#changing-a-numbering).

    Parameters:
        store, key: the store whose table holds the counter item, and the counter key.
        numbering: the new numbering.
        previous: for a counter item that records no numbering, the one its numbers were
            handed out under (ignored when one is recorded).

    Returns:
        The numbering recorded before, or ``None`` when there was none (no counter item, or
        one written before numberings were recorded). After a lost answer and a resend, the
        write (idempotent) is found done and the new numbering is returned as the old one.

    Raises:
        ConfigurationError: a bad key; ``numbering`` or ``previous`` is not a
            [`Numbering`][aioseq.Numbering]; or the counter records no numbering, has handed out
            numbers, and ``previous`` is not given (nothing written).
        CounterValueInvalid: the counter item's value or numbering is unreadable.
        NumberingMismatch: as for [`set_counter()`][aioseq.admin.set_counter].
        RetriesExhausted: writers kept moving the counter, or transient errors, beyond the
            retry policy.
        StoreError: a request failed in a way that is not retried (its subclass says how).
        StoreClosed: the store is closed.
    """
    check_key(key)
    for name, given in (("numbering", numbering), ("previous", previous)):
        if not isinstance(given, Numbering) and (name == "numbering" or given is not None):
            raise ConfigurationError(f"{name} must be a Numbering, not {type(given).__name__}")
    table = store.table
    counter_key = store.counter_item_key(key)
    await store.check_writes(key)

    async def attempt() -> Numbering | None:
        response = await store.send_once(
            "get_item", TableName=table.name, Key=counter_key, ConsistentRead=True
        )
        old, params = renumbering(
            response.get("Item"),
            key=key,
            numbering=numbering,
            previous=previous,
            value_attribute=table.value_attribute,
            partition_key=table.partition_key,
        )
        await store.send_once("update_item", TableName=table.name, Key=counter_key, **params)
        return old

    # Resent after a lost answer: safe, as each attempt reads the counter item again and
    # builds its write from that: no write is resent on a condition read before the first
    # was applied (found applied, it renumbers to the same numbering: no change).
    return await store.retry.run(attempt, classify=_renumber_verdict, counter_key=key)


async def set_region_scope(store: DynamoStore, key: str, scope: RegionScope) -> RegionScope:
    """Change the [`RegionScope`][aioseq.RegionScope] counter ``key`` records (``regions=``) to
    ``scope``, where no Region's numbers change: every Region of the recorded scope keeps its
    slot, and the count of slots stays. So a Region is added in a free slot (see
    docs/global-tables.md, "Adding a Region"); stores still on the old list are refused at
    their next new counter object, and their objects made before go on (however young). The
    numbering the Regions share out stays.

    DynamoDB calls: the store's write check
    ([`check_writes()`][aioseq.DynamoStore.check_writes]), one strongly consistent ``GetItem``
    of the key's own counter item, then ``UpdateItem SET #numbering = :new IF #numbering =
    :old`` (1 WCU), under the retry policy; a resend after a lost answer that finds ``:new``
    recorded counts as done.

    Returns:
        The scope recorded before.

    Raises:
        ConfigurationError: no scope is recorded for ``key``, or ``scope`` would move a
            Region or change the slots (nothing written).
        ConditionFailed: another writer changed the record between the read and the write.
        CounterValueInvalid: the recorded numbering is unreadable.
        NotHomeRegion, UnsafeGlobalTable: the store may not write (see
            [`check_writes()`][aioseq.DynamoStore.check_writes]).
        StoreError, RetriesExhausted: as for any request.
    """
    check_key(key)
    if not isinstance(scope, RegionScope):
        raise ConfigurationError(f"scope must be a RegionScope, not {type(scope).__name__}")
    if store.region_scope is None:  # (a Region-scoped store's check is of the scope it holds)
        await store.check_writes(key)
    table = store.table
    item_key = store.scope_record_key(key)
    found = await store.send_with_retries(
        "get_item", TableName=table.name, Key=item_key, ConsistentRead=True
    )
    text = recorded_text(found.get("Item"), key)
    old = decode_recorded(text) if text is not None else None
    if not isinstance(old, ScopeRecord):
        raise ConfigurationError(f"counter {key!r} records no Region scope: nothing to change")
    was = old.scope
    if not scope_kept(was, scope):
        raise ConfigurationError(
            f"{scope} would change the numbers of {was}: every Region keeps its slot and the"
            " slots stay; nothing was written"
        )
    new = ScopeRecord(scope, old.numbering).encode()
    if scope != was:
        # Resent after a lost answer: safe, as ``:old`` cannot be recorded again (a scope only
        # gains Regions, each in a free slot: checked above), and it moves no counter value.
        try:
            await store.send_with_retries(
                "update_item",
                TableName=table.name,
                Key=item_key,
                UpdateExpression="SET #numbering = :new",
                ConditionExpression="#numbering = :old",
                ExpressionAttributeNames={"#numbering": NUMBERING_ATTRIBUTE},
                ExpressionAttributeValues={":new": {"S": new}, ":old": {"S": old.encode()}},
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except ConditionFailed as exc:
            if recorded_text(exc.item, key) != new:  # (else: a resend of ours, applied)
                raise
    return was


def _renumber_verdict(exc: Exception) -> Verdict:
    """A renumbering's attempt is retried on a transient error, and on a failed condition
    (the counter moved between its read and its write: read again)."""
    return Verdict.RETRY if is_transient(exc) or isinstance(exc, ConditionFailed) else Verdict.FAIL
