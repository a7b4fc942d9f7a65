"""Renumbering: change the numbering a counter item records (`set_numbering()`), or the Region
scope a key records (`set_region_scope()`), never handing a number out twice."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from aioseq._checks import check_key
from aioseq._items import AttributeValue, number, parse_counter
from aioseq._limits import NUMBERING_ATTRIBUTE, UPDATED_AT_ATTRIBUTE
from aioseq._retry import Verdict, is_transient
from aioseq.admin.counters import now
from aioseq.errors import ConditionFailed, ConfigurationError
from aioseq.numbering import (
    Numbering,
    RegionScope,
    ScopeRecord,
    decode_recorded,
    recorded_text,
    refuse_scoped,
    renumbered_value,
    scope_kept,
)

if TYPE_CHECKING:
    from aioseq._store import DynamoStore


def renumbering(
    item: Mapping[str, AttributeValue] | None,
    *,
    key: str,
    numbering: Numbering,
    previous: Numbering | None,
    value_attribute: str,
    partition_key: str,
) -> tuple[Numbering | None, dict[str, Any]]:
    """The ``UpdateItem`` that changes counter ``key``'s numbering to ``numbering``, given
    ``item``, its counter item as read (``None`` if there is none): the numbering recorded
    before (``None`` if none) and the request's ``UpdateExpression``, ``ConditionExpression``
    and its names and values. The condition holds only if the counter item is still as read.

    Raises:
        ConfigurationError: the counter item records no numbering, has handed out numbers, and
            ``previous`` does not say under which numbering.
        CounterValueInvalid: its value or numbering is unreadable.
        NumberingMismatch: it is a Region-scoped key's scope record (read without
            ``regions=``).
    """
    refuse_scoped(item, key)
    old_text = recorded_text(item, key)
    value = parse_counter(item, key, value_attribute)
    if old_text is not None:
        old = Numbering.decode(old_text)
    elif previous is not None or value == 0:
        old = previous or Numbering()
    else:
        raise ConfigurationError(
            f"counter {key!r} records no numbering and is at value {value}: pass"
            " previous=Numbering(...), the numbering its numbers were handed out under"
        )
    names = {
        "#numbering": NUMBERING_ATTRIBUTE,
        "#value": value_attribute,
        "#updated": UPDATED_AT_ATTRIBUTE,
    }
    values: dict[str, AttributeValue] = {
        ":new": {"S": numbering.encode()},
        ":renumbered": number(renumbered_value(value, old, numbering)),
        ":now": {"S": now()},
    }
    if not item:
        condition = "attribute_not_exists(#pk)"
        names["#pk"] = partition_key
    else:
        values[":value"] = number(value)
        if old_text is None:
            condition = "#value = :value AND attribute_not_exists(#numbering)"
        else:
            condition = "#value = :value AND #numbering = :old"
            values[":old"] = {"S": old_text}
    params = {
        "UpdateExpression": "SET #numbering = :new, #value = :renumbered, #updated = :now",
        "ConditionExpression": condition,
        "ExpressionAttributeNames": names,
        "ExpressionAttributeValues": values,
    }
    return (old if old_text is not None else None), params


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
