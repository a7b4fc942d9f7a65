"""Strategy 1: the atomic counter (``UpdateItem ADD``)."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import Any

from aioseq._checks import check_count
from aioseq._items import number, parse_counter
from aioseq._limits import COUNTER_ATTRIBUTE, NUMBERING_ATTRIBUTE
from aioseq._retry import applied_at_most_once
from aioseq.config import MAX_NUMBER
from aioseq.contracts import Store
from aioseq.errors import (
    AioseqError,
    ConditionFailed,
    ConfigurationError,
    CounterValueInvalid,
    NumberOutOfRange,
)
from aioseq.layout import CounterKind
from aioseq.numbering import (
    GUARD,
    Numbering,
    check_recorded,
    guard_values,
    recorded_text,
    refuse_scoped,
)
from aioseq.strategies._base import Strategy

__all__ = ["AtomicCounter"]

log = logging.getLogger("aioseq")


class AtomicCounter(Strategy):
    """Numbers from one ``UpdateItem ADD`` on a counter item: unique, increasing, not gapless.

    Each call sends ``ADD #value :n`` (``ReturnValues=ALL_OLD``); the value before it, ``u``,
    makes the numbers ``u + 1 .. u + n``. The first ``ADD`` creates the counter item
    ``{pk: key, sk: 0, value: N, aioseq_numbering: S, aioseq_counter: S}`` and records the
    [numbering][aioseq.numbering] in the same request. The condition refuses only a counter item
    whose value is missing, not a number, negative or past ``max_value``, or that records
    another numbering; a fraction (which no condition can see) is restored with one more
    conditional write and raises [`CounterValueInvalid`][aioseq.errors.CounterValueInvalid].
    See [What each strategy sends](../strategies.md#atomic-counter).

    Guarantees:
        - unique: always, across processes and hosts (single-Region tables; see
          [Guarantees](../guarantees.md) on global tables).
        - gapless: no. A number handed to a caller that then fails or crashes is never reused;
          a request whose answer is lost (timeout, reset) and is retried may have been
          applied, which skips its numbers.
        - ordered: each call's numbers are greater than those of every call that completed
          before it started, in any process (the counter only grows).
        - crash: costs at most the numbers of the calls in flight.

    Cost: one ``UpdateItem`` per call (1 WCU for a counter item under 1 KB), however many
    numbers it takes; no reads. One counter item takes ~1,000 writes/s at most.

    Parameters:
        store, key: see `Strategy` (``key``: the counter key).
        max_value: the highest number handed out (1 .. ``10**38 - 1``, the default; e.g.
            [`MAX_SAFE_INTEGER`][aioseq.config.MAX_SAFE_INTEGER] for JavaScript readers). The
            ``ADD``'s condition keeps the counter at or below it.
        numbering: the [`Numbering`][aioseq.Numbering] the counter item records and requires
            (default ``stride=1 offset=1`` with ``max_value``); a
            [`BlockAllocator`][aioseq.BlockAllocator] passes its own, as it maps the counter's
            values to numbers itself.
        adopt: see `Strategy` (``False``: the block allocator that owns it closes it).

    Raises:
        ConfigurationError: a bad key or ``max_value``.
    """

    def __init__(
        self,
        store: Store,
        key: str,
        *,
        max_value: int = MAX_NUMBER,
        numbering: Numbering | None = None,
        adopt: bool = True,
    ) -> None:
        # ADD never loses a race: no turns to take.
        super().__init__(store, key, max_value=max_value, numbering=numbering, adopt=adopt)
        # The request's parts that never change, built once (key, expressions, names, the
        # constant values); next_many fills in ``:n`` and ``:limit``, next() sends _one as is.
        table = self.store.table
        guard_names, guard_values_ = guard_values(self._item.numbering)
        # What the counter item says it is (an allocator's own counter is not adopted).
        kind = CounterKind("atomic" if adopt else "allocator").encode()
        self._values = {
            ":number_type": {"S": "N"},
            ":zero": number(0),
            ":kind": {"S": kind},
            **guard_values_,
        }
        self._template = {
            "TableName": table.name,
            "Key": self._item.primary_key,
            "UpdateExpression": (
                "ADD #value :n SET #numbering = if_not_exists(#numbering, :numbering),"
                " #kind = if_not_exists(#kind, :kind)"
            ),
            "ConditionExpression": (
                f"{GUARD} AND (attribute_not_exists(#pk)"
                " OR (attribute_type(#value, :number_type) AND #value BETWEEN :zero AND :limit))"
            ),
            "ExpressionAttributeNames": {
                "#value": table.value_attribute,
                "#pk": table.partition_key,
                "#kind": COUNTER_ATTRIBUTE,
                **guard_names,
            },
            "ReturnValues": "ALL_OLD",  # UPDATED_OLD omits an if_not_exists that kept its value
            "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
        }
        self._one = self._request(1)
        # Checked once: next() sends _one as is, next_many() the same with other values.
        self._send = store.prepare("update_item", self._one)

    def _request(self, n: int) -> dict[str, Any]:
        """The ``UpdateItem`` parameters of an ``ADD n`` (``n <= max_value``)."""
        values = {**self._values, ":n": number(n), ":limit": number(self._item.max_value - n)}
        return {**self._template, "ExpressionAttributeValues": values}

    async def next(self) -> int:
        """The next number (a positive ``int``). See [`next_many()`][aioseq.AtomicCounter.next_many]
        for errors and cost."""
        self._check_open()
        return self._numbers_of.number(await self._add(1, self._one))

    async def next_many(self, n: int) -> range:
        """Reserve ``n`` consecutive numbers with one ``ADD n``.

        Parameters:
            n: how many numbers, ``1 <= n <= 10**38 - 1``.

        Returns:
            ``range(v - n + 1, v + 1)``, ``v`` the counter's new value.

        Raises:
            ConfigurationError: ``n`` is not a positive ``int`` (nothing is written).
            CounterValueInvalid: the counter item has no value, or a non-number or a negative
                one (nothing is written), or a fraction (written, then restored: see the class), or
                an unreadable numbering (nothing is written).
            NumberingMismatch: the counter item recorded another numbering than this object's
                (nothing is written).
            NumberOutOfRange: the counter would pass ``max_value`` (nothing is written).
            RetriesExhausted: throttling or transient errors outlasted the retry policy.
            StoreError: a request failed in a way that is not retried (its subclass says how).
            StoreClosed: the store or this object is closed.
        """
        check_count(n, "n")
        self._check_open()
        if n > self._item.max_value:
            raise NumberOutOfRange(n, f"{n} numbers do not fit below max_value {self.max_value}")
        high = await self._add(n, self._one if n == 1 else self._request(n))
        return self._numbers_of.numbers(high - n + 1, n)

    async def _add(self, n: int, params: dict[str, Any]) -> int:
        """Send the ``ADD n`` of ``params`` under the retry engine; the counter's new value.
        ``params`` is shared between calls: nothing below changes it."""
        send = self._send
        if not self._writes_checked:
            await self._check_writes()

        async def attempt() -> dict[str, Any] | None:
            try:
                response = await send(params)
            except ConditionFailed as exc:
                value_attribute = self.store.table.value_attribute
                check_recorded(exc.item, self.key, self._item.numbering)
                found = parse_counter(exc.item, self.key, value_attribute)
                raise NumberOutOfRange(
                    found + n, f"{found} + {n} would pass max_value {self._item.max_value}"
                ) from exc
            attributes: dict[str, Any] | None = response.get("Attributes")
            return attributes

        before = await self._retry(attempt)  # the item before the ADD (none: a new item)
        try:
            high = parse_counter(before, self.key, self.store.table.value_attribute) + n
        except CounterValueInvalid as exc:
            # What this ADD recorded goes too: the numbering, and the kind (a foreign item is
            # not left marked as a counter).
            recorded = [
                a for a in (NUMBERING_ATTRIBUTE, COUNTER_ATTRIBUTE) if a not in (before or {})
            ]
            await self._put_back(exc.found, n, forget=recorded)
            raise
        if high > self._item.max_value:  # only servers that skip the condition's arithmetic
            raise NumberOutOfRange(high, f"{high} is above max_value {self._item.max_value}")
        self._numbers += n
        return high

    async def _put_back(
        self, before: Mapping[str, Any] | None, n: int, *, forget: Sequence[str]
    ) -> None:
        """Undo an ``ADD n`` that turned out to have added to a fraction (``before`` is the value
        it returned, ``ALL_OLD``): ``SET #value = :before IF #value = :before + n`` (with
        ``REMOVE`` of the attributes ``forget``, those the ``ADD`` recorded), skipped if another
        writer moved the counter since."""
        if not before or "N" not in before:
            return
        after = {"N": str(Decimal(before["N"]) + n)}
        await self._set_value_if(dict(before), expected=after, forget=forget)

    async def _set_value_if(
        self, value: dict[str, str], *, expected: dict[str, str], forget: Sequence[str] = ()
    ) -> bool:
        """``UpdateItem SET #value = :value IF #value = :expected AND #numbering = :numbering``
        on the counter item (1 WCU; ``REMOVE`` of the attributes ``forget`` too). True if
        it was applied; False if the counter had moved or been renumbered (numbers of the old
        numbering are not given back under the new one), or if its fate is unknown.

        Sent at most once past an error that may hide its success (a lost answer, a 5xx):
        this condition can become true again once the write was applied, as an ``ADD`` of
        another writer moves the counter from ``:value`` back to ``:expected`` (the ABA
        problem), and a resend would then move it back a second time, handing that writer's
        numbers out twice. Such an outcome counts as not applied (False): the numbers stay
        unused, a gap. Refusals that were surely not applied (throttling) are retried."""
        table = self.store.table
        names, values = guard_values(self._item.numbering)
        removed = {f"#forget{i}": name for i, name in enumerate(forget)}
        update = "SET #value = :value"
        if removed:
            update += f" REMOVE {', '.join(removed)}"

        async def attempt() -> bool:
            try:
                await self.store.send_once(
                    "update_item",
                    TableName=table.name,
                    Key=self._item.primary_key,
                    UpdateExpression=update,
                    ConditionExpression="#value = :expected AND #numbering = :numbering",
                    ExpressionAttributeNames={
                        "#value": table.value_attribute,
                        **names,
                        **removed,
                    },
                    ExpressionAttributeValues={":value": value, ":expected": expected, **values},
                )
            except ConditionFailed:
                return False
            return True

        try:
            return await self._retry(attempt, applied_at_most_once())
        except AioseqError as exc:
            if not exc.maybe_applied:
                raise
            log.warning(
                "counter %r: setting its value back to %s may or may not have been applied"
                " (%s); not resent, as another writer may have reserved since: counted as not"
                " done",
                self.key,
                value.get("N"),
                type(exc).__name__,
            )
            return False

    async def last_number(self) -> int:
        """The last number reserved on the counter by anyone: the counter item's value as a
        number of the numbering it records (this object's when it records none); 0 before
        the first.

        DynamoDB calls: one strongly consistent ``GetItem`` (1 RCU), retried on transient errors.

        Raises:
            CounterValueInvalid: the value is not a whole number, or the recorded numbering is
                not one.
            NumberingMismatch, RetriesExhausted, StoreError, StoreClosed: as
                [`current()`][aioseq.AtomicCounter.current].
        """
        self._check_open()
        item = await self._retry(self._item.read)
        refuse_scoped(item, self.key)
        value = parse_counter(item, self.key, self.store.table.value_attribute)
        recorded = recorded_text(item, self.key)
        numbering = Numbering.decode(recorded) if recorded else self.numbering
        return numbering.number(value) if value else 0

    async def give_back(self, numbers: range) -> bool:
        """Return unused numbers to the counter if nobody took any after them: the counter
        goes back to ``numbers.start - 1`` only if it still stands at ``numbers[-1]``:

            UpdateItem  SET #value = :before  IF #value = :top AND #numbering = :numbering

        Parameters:
            numbers: a non-empty ``range``, the last numbers this counter gave, as
                [`next_many()`][aioseq.AtomicCounter.next_many] returned them (step 1; under a
                store's ``regions=``, the Region's stride).

        Sent at most once past an error that may hide its success (a lost answer, a 5xx):
        once applied, another writer's ``ADD`` of as many numbers moves the counter back to
        ``:top``, and a resend would give that writer's numbers back too (handed out twice).
        Such a give-back counts as not done (False): its numbers may stay unused (a gap).
        Throttling and other refusals that were surely not applied are retried.

        Returns:
            True if they were given back (the next ``ADD`` hands them out again), False if the
            counter has moved on, or its numbering changed, or the answer was lost (they stay
            unused, as far as this object knows).

        Raises:
            ConfigurationError: a bad range. RetriesExhausted, StoreError, StoreClosed; the
                refusals of [`DynamoStore.check_writes()`][aioseq.DynamoStore.check_writes].
        """
        values = self._numbers_of  # numbers back to the counter's values
        if (
            not isinstance(numbers, range)
            or numbers.step != values.stride
            or not numbers
            or numbers.start < values.offset
            or (numbers.start - values.offset) % values.stride
        ):
            raise ConfigurationError(
                f"give_back takes a non-empty range this counter handed out: {numbers!r}"
            )
        self._check_open(store_closing_ok=True)  # a closing store's allocators give back
        if not self._writes_checked:
            await self._check_writes()
        first, last = values.count_up_to(numbers.start), values.count_up_to(numbers[-1])
        returned = await self._set_value_if(number(first - 1), expected=number(last))
        if returned:
            self._numbers -= len(numbers)
        return returned
