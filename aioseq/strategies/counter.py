"""Strategy 1: the atomic counter (``UpdateItem ADD``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from aioseq._store import check_count, number, parse_counter
from aioseq.config import MAX_NUMBER
from aioseq.errors import (
    ConditionFailed,
    ConfigurationError,
    CounterValueInvalid,
    NumberOutOfRange,
)
from aioseq.strategies._base import Strategy

if TYPE_CHECKING:
    from aioseq._store import DynamoStore

__all__ = ["AtomicCounter"]


class AtomicCounter(Strategy):
    """Numbers from one ``UpdateItem`` that adds to a counter item.

    The counter item ``{pk: key, sk: 0, value: N}`` is created by the first ``ADD``. Each call
    sends::

        UpdateItem  UpdateExpression    ADD #value :n
                    ConditionExpression attribute_not_exists(#value)
                                        OR (attribute_type(#value, :N) AND #value <= :limit)
                    ReturnValues        UPDATED_NEW

    and the new value ``v`` makes the numbers ``v - n + 1 .. v``. The condition only guards
    against a counter item that holds a non-number or would pass 38 digits; it never fails
    between well-behaved writers. DynamoDB applies writes to one item one at a time, so the
    numbers are unique (AWS Database Blog, "Implement auto-increment with Amazon DynamoDB").

    Guarantees:
        - unique: always, across processes and hosts (single-region tables; see the README on
          global tables).
        - gapless: no. A number handed to a caller that then fails or crashes is never reused;
          a request whose response is lost (timeout, reset) and is retried may have been
          applied, which skips its numbers.
        - ordered: each call's numbers are greater than those of every call that completed
          before it started, in any process (the counter only grows).
        - crash: costs at most the numbers of the calls in flight.

    Cost: one ``UpdateItem`` per call (1 WCU for a counter item under 1 KB), however many
    numbers it takes; no reads. One counter item takes ~1,000 writes/s at most.
    """

    def __init__(self, store: DynamoStore, key: str) -> None:
        super().__init__(store, key, max_in_flight=None)  # ADD never loses a race

    async def next(self) -> int:
        """The next number (a positive ``int``). See :meth:`next_many` for errors and cost."""
        return (await self.next_many(1)).start

    async def next_many(self, n: int) -> range:
        """Reserve ``n`` consecutive numbers with one ``ADD n``.

        Parameters:
            n: how many numbers, ``1 <= n <= 10**38 - 1``.

        Returns:
            ``range(v - n + 1, v + 1)``, ``v`` the counter's new value.

        Raises:
            ConfigurationError: ``n`` is not a positive ``int`` (nothing is written).
            CounterValueInvalid: the counter item's value is not a number (nothing is written).
            NumberOutOfRange: the counter would pass ``10**38 - 1`` (nothing is written).
            RetriesExhausted: throttling or transient errors outlasted the retry policy.
            StoreError, StoreClosed.
        """
        check_count(n, "n")
        self._check_open()
        table = self.store.table
        params = {
            "TableName": table.name,
            "Key": self.store.counter_item_key(self.key),
            "UpdateExpression": "ADD #value :n",
            "ConditionExpression": (
                "attribute_not_exists(#value)"
                " OR (attribute_type(#value, :number_type) AND #value <= :limit)"
            ),
            "ExpressionAttributeNames": {"#value": table.value_attribute},
            "ExpressionAttributeValues": {
                ":n": number(n),
                ":number_type": {"S": "N"},
                ":limit": number(MAX_NUMBER - n),
            },
            "ReturnValues": "UPDATED_NEW",
            "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
        }

        async def attempt() -> int:
            try:
                response = await self.store.call("update_item", **params)
            except ConditionFailed as exc:
                found = parse_counter(exc.item, self.key, table.value_attribute)
                raise NumberOutOfRange(found + n) from exc
            return parse_counter(response.get("Attributes"), self.key, table.value_attribute)

        high = await self._retry(attempt)
        if high > MAX_NUMBER:  # only servers that skip the condition's arithmetic get here
            raise NumberOutOfRange(high)
        if high < n:
            raise CounterValueInvalid(self.key, table.value_attribute, {"N": str(high)})
        self._numbers += n
        return range(high - n + 1, high + 1)

    async def give_back(self, numbers: range) -> bool:
        """Return unused numbers to the counter if nobody took any after them: the counter
        goes back to ``numbers.start - 1`` only if it still stands at ``numbers[-1]``::

            UpdateItem  SET #value = :before  IF #value = :top

        Parameters:
            numbers: a non-empty ``range`` with step 1, the last numbers this counter gave.

        Returns:
            True if they were given back (the next ``ADD`` hands them out again), False if the
            counter has moved on (they stay unused).

        Raises:
            ConfigurationError: a bad range. RetriesExhausted, StoreError, StoreClosed.
        """
        if not isinstance(numbers, range) or numbers.step != 1 or not numbers or numbers.start < 1:
            raise ConfigurationError(f"give_back takes a non-empty range of step 1: {numbers!r}")
        self._check_open()
        table = self.store.table

        async def attempt() -> bool:
            try:
                await self.store.call(
                    "update_item",
                    TableName=table.name,
                    Key=self.store.counter_item_key(self.key),
                    UpdateExpression="SET #value = :before",
                    ConditionExpression="#value = :top",
                    ExpressionAttributeNames={"#value": table.value_attribute},
                    ExpressionAttributeValues={
                        ":before": number(numbers.start - 1),
                        ":top": number(numbers[-1]),
                    },
                )
            except ConditionFailed:
                return False
            return True

        returned = await self._retry(attempt)
        if returned:
            self._numbers -= len(numbers)
        return returned
