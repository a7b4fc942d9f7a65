"""Strategy 4: transactional and gapless (the counter update and the item in one transaction)."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeAlias

from aioseq._retry import is_transient
from aioseq._store import check_key, deserialize, serialize
from aioseq.errors import (
    ConfigurationError,
    ItemAlreadyExists,
    TransactionCanceled,
)
from aioseq.strategies._base import Strategy

if TYPE_CHECKING:
    from aioseq._store import DynamoStore

__all__ = ["GaplessCounter", "ItemSpec"]

#: An item to number: a mapping of plain Python values (the number is added under
#: ``number_attribute``), or a function that makes the item from its number.
ItemSpec: TypeAlias = "Mapping[str, Any] | Callable[[int], Mapping[str, Any]]"

#: Cancellation reason codes worth another attempt of the same transaction.
_TRANSIENT_REASONS = {"TransactionConflict", "ThrottlingError", "ProvisionedThroughputExceeded"}


class GaplessCounter(Strategy):
    """Gapless numbers: the counter update and the numbered item commit together or not at all.

    Bite-Sized Serverless, "Reliable Auto-Incrementing Integers in DynamoDB": read the counter
    item (on the first call; later calls start from the value they last saw, which the
    condition checks), then one ``TransactWriteItems`` with::

        Update  counter item   SET #value = :next     IF #value = :current
                                (IF attribute_not_exists(#value) for a new counter)
        Put     the item       IF attribute_not_exists(#pk)

    The transaction's ``CancellationReasons`` say what failed:

    - the item's condition: the item exists, :class:`~aioseq.errors.ItemAlreadyExists` is
      raised at once and the counter is unchanged;
    - the counter's condition: another writer won; its value comes back in the reason
      (``ReturnValuesOnConditionCheckFailure=ALL_OLD``) and the transaction is tried again with
      it, no second read;
    - ``TransactionConflict``, throttling, 5xx, a lost connection: the same transaction is
      sent again after a jittered backoff, with the same ``ClientRequestToken``, so a
      transaction that was applied but whose answer was lost is not applied twice (DynamoDB
      keeps tokens for 10 minutes). A new counter value gets a new token.

    All retries are bounded by the store's :class:`~aioseq.config.RetryPolicy`.

    Guarantees:
        - unique: always.
        - gapless: yes: a number exists exactly when its item was stored.
        - ordered: numbers follow commit order, across processes.
        - crash: costs nothing; an unfinished transaction writes nothing.

    Cost per item without contention: a transaction of 2 writes, which DynamoDB bills twice
    (2 WCU each per KB: 4 WCU), plus 1 ``GetItem`` (1 RCU) on the first call. Every lost race
    adds a transaction.
    Throughput falls as concurrent writers on one counter grow (one winner per round trip).

    Parameters:
        store: the store; the counter item lives in its table.
        key: the counter key.
        item_table: the table the items go to (default: the store's table).
        item_partition_key: the partition key attribute of ``item_table`` (default: the store
            table's), used in the item's ``attribute_not_exists`` condition.
        number_attribute: the attribute that receives the number when ``put`` is given a
            mapping (default ``"number"``).
        max_in_flight: see :class:`~aioseq.strategies._base.Strategy`.

    Raises:
        ConfigurationError: bad key or names.
    """

    def __init__(
        self,
        store: DynamoStore,
        key: str,
        *,
        item_table: str | None = None,
        item_partition_key: str | None = None,
        number_attribute: str = "number",
        max_in_flight: int | None = 1,
    ) -> None:
        super().__init__(store, key, max_in_flight=max_in_flight)
        self.item_table = check_key(item_table or store.table.name, "item_table")
        self.item_partition_key = check_key(
            item_partition_key or store.table.partition_key, "item_partition_key"
        )
        self.number_attribute = check_key(number_attribute, "number_attribute")

    def _make_item(self, item: ItemSpec, n: int) -> dict[str, Any]:
        made = dict(item(n)) if callable(item) else {**item, self.number_attribute: n}
        serialized = serialize(made)
        if self.item_partition_key not in serialized:
            raise ConfigurationError(
                f"the item has no partition key attribute {self.item_partition_key!r}"
            )
        if self.item_table == self.store.table.name:
            counter_key = self.store.counter_item_key(self.key)
            if all(serialized.get(name) == value for name, value in counter_key.items()):
                raise ConfigurationError("the item's key is the counter item's key")
        return serialized

    def _key_of(self, item: Mapping[str, Any]) -> dict[str, Any]:
        """The item's key attributes as plain values, for error messages (never the others)."""
        names = {self.item_partition_key, self.store.table.sort_key}
        return deserialize({name: value for name, value in item.items() if name in names})

    async def put(self, item: ItemSpec) -> int:
        """Store ``item`` under the next number, gaplessly.

        Parameters:
            item: a mapping of plain Python values (``int``, ``Decimal``, ``str``, ``bytes``,
                ``bool``, ``None``, lists, dicts, sets; not ``float``) that includes the item
                table's key attributes; the number is added under ``number_attribute``.
                Or a function ``n -> mapping`` that returns the whole item for number ``n``
                (e.g. ``lambda n: {"pk": "invoice", "sk": n}``); it may be called more than
                once, with different numbers, when races are lost.

        Returns:
            the item's number (a positive ``int``).

        Raises:
            ConfigurationError: the item is invalid (nothing is written).
            ItemAlreadyExists: an item with that primary key exists (nothing is written, the
                counter is unchanged).
            CounterValueInvalid: the counter item's value is not a whole number.
            NumberOutOfRange: the next number would pass 38 digits.
            RetriesExhausted: lost races or transient errors outlasted the retry policy.
            StoreError, StoreClosed.
        """
        self._make_item(item, 1)  # validate before any request
        self._check_open()
        table = self.store.table
        token: str | None = None
        token_for: int | None = None  # the counter value the token's transaction expects

        async def attempt() -> int:
            nonlocal token, token_for
            current, exists = await self._last_seen_value()
            new = current + 1
            counter_write = self._counter_write(current, new, exists=exists)
            numbered = self._make_item(item, new)
            if token is None or token_for != current:
                token, token_for = str(uuid.uuid4()), current
            try:
                await self.store.call(
                    "transact_write_items",
                    ClientRequestToken=token,
                    TransactItems=[
                        {
                            "Update": {
                                "TableName": table.name,
                                "Key": self.store.counter_item_key(self.key),
                                "UpdateExpression": "SET #value = :next",
                                "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
                                **counter_write,
                            }
                        },
                        {
                            "Put": {
                                "TableName": self.item_table,
                                "Item": numbered,
                                "ConditionExpression": "attribute_not_exists(#pk)",
                                "ExpressionAttributeNames": {"#pk": self.item_partition_key},
                            }
                        },
                    ],
                )
            except TransactionCanceled as exc:
                counter_code, item_code = [*exc.codes, "None", "None"][:2]
                if counter_code == "ConditionalCheckFailed":
                    # A lost race. The item's condition may have failed too, for an item keyed
                    # by the number another writer just took: that is not our item existing.
                    seen = exc.cancellation_reasons[0].get("Item")
                    self._saw(seen, known=seen is not None)
                elif item_code == "ConditionalCheckFailed":
                    raise ItemAlreadyExists(self._key_of(numbered)) from exc
                raise
            self._saw_value(new)
            return new

        def retry_if(exc: BaseException) -> bool:
            if isinstance(exc, TransactionCanceled):
                codes = set(exc.codes) - {"None"}
                if exc.codes[:1] == ["ConditionalCheckFailed"]:  # the counter's race was lost
                    codes.discard("ConditionalCheckFailed")
                return codes <= _TRANSIENT_REASONS
            return is_transient(exc)

        stored = await self._retry(attempt, retry_if=retry_if)
        self._numbers += 1
        return stored
