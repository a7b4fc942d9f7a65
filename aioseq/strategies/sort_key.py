"""Strategy 2: the sort-key maximum (``Query`` the highest sort key, ``PutItem`` the next)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any, Literal

from aioseq._checks import check_count
from aioseq._coalesce import Waiter
from aioseq._items import Item, check_item_size, item_size, number, serialize
from aioseq._retry import Verdict
from aioseq.config import (
    IDEMPOTENCY_MEMORY_BYTES,
    IDEMPOTENCY_TTL_SECS,
    MAX_DIGITS,
    MAX_NUMBER,
    TOKEN_ATTRIBUTE,
    GroupCommit,
)
from aioseq.contracts import Store
from aioseq.errors import (
    ConditionFailed,
    ConfigurationError,
    CounterValueInvalid,
    NumberOutOfRange,
    TransactionCanceled,
)
from aioseq.formatting import zero_pad
from aioseq.strategies._base import (
    MAX_TRANSACTION_BYTES,
    CounterStatistics,
    GroupCommitStrategy,
)
from aioseq.strategies._counter_item import CounterItem
from aioseq.strategies._group_commit import GroupCommitter, Settled
from aioseq.strategies._idempotency import IdempotencyRecords, KeyedPut
from aioseq.strategies._outcomes import is_conflict, is_decisive, item_put_verdict
from aioseq.strategies._recent_writes import new_token

__all__ = ["MAX_GROUP_SIZE", "SortKeyCounter"]

#: DynamoDB takes at most 100 actions per transaction.
MAX_GROUP_SIZE = 100

OnConflict = Literal["increment", "requery"]

Put = Waiter[KeyedPut, int]


class SortKeyCounter(GroupCommitStrategy):
    """Numbers that are the sort keys of the items they number, in one item collection.

    The highest sort key in the collection is the last number used: a ``Query`` finds it and a
    ``PutItem`` conditional on ``attribute_not_exists(#pk)`` stores the item under the next one.
    Each put stores an idempotency token in its item (``aioseq_token``,
    [`TOKEN_ATTRIBUTE`][aioseq.config.TOKEN_ATTRIBUTE]): after a lost answer, it tells a resend
    whether the item in its way is its own ([how](../strategies.md#sort-key-maximum)).

    Guarantees:
        - unique: always (the put is conditional on the item key being free).
        - exactly once: a ``put`` that returns stored its item once, under its number; one
          that raises ``RetriesExhausted`` after a lost answer may have (find its token).
        - gapless: yes, while items are never deleted from the collection (deleting the highest
          item makes its number be used again).
        - ordered: numbers follow the order in which the puts succeed, across processes.
        - crash: costs nothing; a number exists only as a stored item.

    Cost: 1 ``Query`` (0.5 RCU; 1 RCU strongly consistent) + 1 ``PutItem`` (1 WCU per KB) per
    number; a lost race adds a put (and with ``requery`` a query). Grouped (the default), k
    waiting puts take one query and one ``TransactWriteItems`` of k puts (2 WCU per KB each).

    Parameters:
        store: the store; its table needs a sort key.
        partition: the partition key value of the item collection (e.g. a project id).
        on_conflict: after a lost race, ``"requery"`` or ``"increment"`` (try the next sort
            key without a query: for where races are rare).
        consistent_read: query with a strongly consistent read (fewer lost races, 2x the RCU).
        zero_pad: digits of zero-padded string sort keys (1..38), on an ``"S"`` sort key table.
        max_value, max_in_flight: see `GroupCommitStrategy`.
        group: group commit of concurrent puts, a [`GroupCommit`][aioseq.GroupCommit] (``True``,
            the default, is ``GroupCommit()``: up to 100 items and ~4 MB per transaction;
            ``False``: one put per call). See [Group commit](../group-commit.md).
        idempotency_ttl_secs, idempotency_memory_bytes: how long an idempotency key answers
            replays, in seconds (default 86,400: 24 hours; at most 10 years); the most memory
            spent remembering keys, in bytes (default 1 MiB, about 2,100 UUID keys; 0: none; at
            most 10,000 keys). See [Idempotent requests](../web-services.md#idempotent-requests).

    Raises:
        ConfigurationError: the table has no sort key, ``zero_pad`` does not match the table's
            sort key type, or another argument is bad.
    """

    def __init__(
        self,
        store: Store,
        partition: str,
        *,
        on_conflict: OnConflict = "requery",
        consistent_read: bool = True,
        zero_pad: int | None = None,
        max_value: int = MAX_NUMBER,
        max_in_flight: int | None = 1,
        group: GroupCommit | bool = True,
        idempotency_ttl_secs: float = IDEMPOTENCY_TTL_SECS,
        idempotency_memory_bytes: int = IDEMPOTENCY_MEMORY_BYTES,
    ) -> None:
        records = IdempotencyRecords(  # (checked first)
            store, partition, idempotency_ttl_secs, memory_bytes=idempotency_memory_bytes
        )
        super().__init__(store, partition, max_value=max_value, max_in_flight=max_in_flight)
        #: The records of ``put``'s idempotency keys.
        self._records = records
        # Ungrouped, a put with an idempotency key is still a transaction: checked once.
        self._keyed_writes_checked = False
        # Its sort keys are its numbers, checked against max_value as they are.
        self._item = CounterItem(store, self.key, self._item.numbering, self.max_value)
        #: The item collection's partition key value (this store's Region's, if scoped).
        self.partition = store.scoped_key(self.key)
        # The collection's highest number as last seen (None: query it first).
        self._highest: int | None = None
        self._committer = GroupCommitter(
            self, self._retry, self._verdict, handed_out=self._handed_out
        )
        self._group = self._grouper(self._commit, group, largest=MAX_GROUP_SIZE)
        self._transactions = self._group is not None  # a group is one TransactWriteItems
        table = store.table
        if table.sort_key is None:
            raise ConfigurationError(
                f"table {table.name!r} has no sort key; SortKeyCounter needs it"
            )
        if on_conflict not in ("increment", "requery"):
            raise ConfigurationError(
                f"on_conflict must be 'increment' or 'requery': {on_conflict!r}"
            )
        if zero_pad is not None:
            check_count(zero_pad, "zero_pad", maximum=MAX_DIGITS)
        if (zero_pad is not None) != (table.sort_key_type == "S"):
            raise ConfigurationError(
                "zero_pad goes with a string sort key (TableSpec(sort_key_type='S')) and only there"
            )
        self.sort_key: str = table.sort_key
        self.on_conflict: OnConflict = on_conflict
        self.consistent_read = bool(consistent_read)
        self.zero_pad = zero_pad

    def format_sort_key(self, n: int) -> dict[str, str]:
        """The sort key AttributeValue of number ``n``.

        Raises:
            NumberOutOfRange: ``n`` is above ``max_value`` or has more digits than ``zero_pad``
                (or than 38).
        """
        self._item.check_number(n)
        if self.zero_pad is None:
            return number(n)
        return {"S": zero_pad(n, self.zero_pad)}

    async def current(self) -> int:
        """The highest number used in the collection (0 if none): one ``Query``.

        Raises:
            CounterValueInvalid: the highest sort key is not a whole number.
            RetriesExhausted: transient errors outlasted the retry policy.
            StoreError: a request failed in a way that is not retried (its subclass says how).
            StoreClosed: the store or this object is closed.
        """
        self._check_open()
        return await self._retry(self._query_max)

    async def exists(self) -> bool:
        """Whether the collection holds a numbered item (one ``Query``, as
        [`current()`][aioseq.SortKeyCounter.current]).

        Raises:
            CounterValueInvalid: the highest sort key is not a whole number.
            RetriesExhausted: transient errors outlasted the retry policy.
            StoreError: a request failed in a way that is not retried (its subclass says how).
            StoreClosed: the store or this object is closed.
        """
        return await self.current() > 0

    async def _query_max(self) -> int:
        table = self.store.table
        response = await self.store.send_once(
            "query",
            TableName=table.name,
            KeyConditionExpression="#pk = :partition",
            ExpressionAttributeNames={"#pk": table.partition_key, "#sk": self.sort_key},
            ExpressionAttributeValues={":partition": {"S": self.partition}},
            ProjectionExpression="#sk",
            ScanIndexForward=False,
            Limit=1,
            ConsistentRead=self.consistent_read,
        )
        items = response.get("Items") or []
        if not items:
            return 0
        value = items[0][self.sort_key]
        text = value.get("N", value.get("S", ""))
        try:
            parsed = Decimal(text)
        except InvalidOperation:
            parsed = Decimal("NaN")
        if not parsed.is_finite() or parsed != parsed.to_integral_value() or parsed < 0:
            raise CounterValueInvalid(self.key, self.sort_key, value)
        return int(parsed)

    async def put(
        self, attributes: Mapping[str, Any] | None = None, *, idempotency_key: str | None = None
    ) -> int:
        """Store an item ``{pk: partition, sk: n, **attributes}`` under the next number ``n``;
        with ``idempotency_key``, once.

        Parameters:
            attributes: the item's other attributes, as plain Python values (``int``,
                ``Decimal``, ``str``, ``bytes``, ``bool``, ``None``, lists, dicts, sets;
                not ``float``). Must not name the table's key attributes.
            idempotency_key: the request's idempotency key (1 to 255 characters, such as an
                ``Idempotency-Key`` header's UUID). The first call with it stores the item and,
                in the same ``TransactWriteItems``, a record of the key (the put costs 2 WCU
                per KB of item plus 2, where a lone put without a key is one ``PutItem`` of
                1 WCU per KB); any later call with it, from any process, within
                ``idempotency_ttl_secs``, returns that call's number and writes nothing;
                concurrent calls with it on this object share one write. After the record
                expires the key is new again. A put with a key runs to its end in a task of
                its own: a caller cancelled or timed out leaves it to be stored, and a later
                call with the key finds it. See docs/web-services.md.

        Returns:
            ``n``, the item's sort key (a positive ``int``).

        Raises:
            ConfigurationError: bad attributes: not a mapping (such as an item function,
                which [`TransactionalCounter.put`][aioseq.TransactionalCounter.put] takes), a
                value with no DynamoDB type, a key attribute, or an item over 400 KB; or a bad
                ``idempotency_key``: `IdempotencyKeyInvalid` (nothing is written).
            IdempotencyKeyReused: ``idempotency_key`` stored other attributes (nothing is
                written).
            NotSupportedByTable: ``idempotency_key`` on a table with multi-Region strong
                consistency, which takes no transactions (nothing is written).
            NumberOutOfRange: the next number is above ``max_value`` or does not fit
                (nothing is written; a recorded ``idempotency_key`` gets its number instead,
                one ``GetItem``; in a group, only the puts past it).
            CounterValueInvalid: the collection's highest sort key is not a whole number.
            RetriesExhausted: lost races or transient errors outlasted the retry policy.
            StoreError: a request failed in a way that is not retried (its subclass says how).
            StoreClosed: the store or this object is closed.
        """
        if attributes is not None and not isinstance(attributes, Mapping):
            hint = " (an item function is what TransactionalCounter.put takes)"
            raise ConfigurationError(
                "SortKeyCounter.put takes the item's other attributes as a mapping, such as"
                " put({'title': 'crash on start'}): the counter sets the partition and sort"
                f" keys itself; got {type(attributes).__name__}{hint * callable(attributes)}"
            )
        table = self.store.table
        extra = serialize(attributes or {})
        clash = {table.partition_key, self.sort_key} & set(extra)
        if clash:
            raise ConfigurationError(f"attributes must not set the key attributes {sorted(clash)}")
        if TOKEN_ATTRIBUTE in extra:
            raise ConfigurationError(
                f"attributes must not set {TOKEN_ATTRIBUTE!r}: aioseq stores the put's"
                " idempotency token there"
            )
        extra[TOKEN_ATTRIBUTE] = {"S": new_token()}
        check_item_size(
            {table.partition_key: {"S": self.partition}, self.sort_key: number(MAX_NUMBER), **extra}
        )
        self._check_open()
        if idempotency_key is None:
            return await self._through(self._group, self._commit, KeyedPut(extra))
        key = self._records.check(idempotency_key)
        if not self._keyed_writes_checked:
            await self.store.check_writes(
                self.key, transactions=True, numbering=self._item.numbering
            )
            self._keyed_writes_checked = True
        request = KeyedPut(extra, key)
        return await self._records.once(
            key,
            lambda n: self._item_for(extra, n),
            lambda: self._through(self._group, self._commit, request),
        )

    def _item_for(self, extra: Item, n: int) -> Item:
        """The item stored for number ``n`` with the attributes ``extra``."""
        table = self.store.table
        return {
            table.partition_key: {"S": self.partition},
            self.sort_key: self.format_sort_key(n),
            **extra,
        }

    def statistics(self) -> CounterStatistics:
        """A frozen snapshot of what this object has done."""
        return self._records.statistics(super().statistics())

    async def _commit(self, puts: list[Put]) -> None:
        """One commit (see `aioseq.strategies._group_commit`), from a fresh ``Query`` of
        the collection's highest number."""
        self._highest = None
        await self._committer.commit(puts)

    # --- the parts of the group-commit skeleton (aioseq.strategies._group_commit) -------------

    async def prepare(self, puts: list[Put], limit: int | None) -> _Puts | None:
        """The next write: the waiting puts in order (up to ``limit``, 100 and ~4 MB), under
        the numbers after the collection's highest (queried when not known); ``None`` when no
        put waits. The puts past ``max_value`` wait for the next write; when not even the
        first number fits, the group's puts fail with `NumberOutOfRange` (``None``)."""
        most = limit or MAX_GROUP_SIZE
        group: list[Put] = []
        size = 0
        actions = 0  # an idempotency key adds its record (100 actions at most)
        for put in puts:
            if put.waiting and len(group) < most:
                size += item_size(put.request.request)
                actions += put.request.actions
                if group and (size > MAX_TRANSACTION_BYTES or actions > MAX_GROUP_SIZE):
                    break
                group.append(put)
        if not group:
            return None
        if self._highest is None:
            self._highest = await self._query_max()
        numbering = self._numbers_of  # its Region's numbers, if scoped (else 1, 2, 3, ...)
        numbers = numbering.numbers(numbering.count_up_to(self._highest) + 1, len(group))
        items: list[Item] = []
        for n, put in zip(numbers, group, strict=True):
            try:
                items.append(self._item_for(put.request.request, n))
            except NumberOutOfRange as exc:
                if items:
                    break  # past max_value: the rest waits, out of range unless these fail
                for refused in group:  # (nothing fits: each put is refused)
                    if refused.waiting:
                        refused.future.set_exception(exc)
                return None
        group, numbers = group[: len(items)], numbers[: len(items)]
        token = new_token()
        keyed, records = self._records.record_puts(group, numbers, items, token)
        return _Puts(group, items, numbers, token, keyed, records)

    def drop_unwanted(self, write: _Puts, maybe_applied: bool) -> bool:
        """Dropped when it cannot have been applied: nobody waits for its items."""
        return not maybe_applied

    async def send(self, write: _Puts) -> None:
        """One conditional ``PutItem`` for one put without an idempotency key, else one
        ``TransactWriteItems`` of conditional puts and the keys' records (all or nothing, so
        the collection stays gapless).

        Resent after a lost answer: safe, as each put creates an item that aioseq never
        deletes (``attribute_not_exists``), so once applied it cannot apply again."""
        table = self.store.table
        condition = {
            "ConditionExpression": "attribute_not_exists(#pk)",
            "ExpressionAttributeNames": {"#pk": table.partition_key},
            "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
        }
        if len(write.items) == 1 and not write.records:
            await self.store.send_once(
                "put_item", TableName=table.name, Item=write.items[0], **condition
            )
            return
        actions = [
            {"Put": {"TableName": table.name, "Item": item, **condition}} for item in write.items
        ]
        actions.extend(write.records)
        await self.store.send_once(
            "transact_write_items", ClientRequestToken=write.token, TransactItems=actions
        )

    def judge(
        self, write: _Puts, error: ConditionFailed | TransactionCanceled, maybe_applied: bool
    ) -> Settled:
        """Only transient reasons: nothing written now, nothing learnt of an earlier attempt;
        the same write is sent again as it is. A failed condition returns the item that holds
        the number (``ALL_OLD``): if it carries a put's own token, an earlier attempt was
        applied and its answer lost; otherwise the number was taken by another writer."""
        if isinstance(error, TransactionCanceled) and not is_decisive(error):
            return Settled.RESEND
        if _stored_already(error, write.items):
            self._lost.recovered_writes(len(write.items))
            return Settled.APPLIED
        taken = "ConditionalCheckFailed" in (
            error.codes[: len(write.items)] if isinstance(error, TransactionCanceled) else ["-"]
        )
        if isinstance(error, TransactionCanceled) and self._records.answer_found(
            write.keyed,
            error.cancellation_reasons[len(write.items) :],
            lambda put, n: self._item_for(put.request.request, n),
        ):
            if taken:  # (a number was taken too: query again)
                self._highest = None
            return Settled.REGROUP  # the puts whose key is recorded answered, alone
        if is_conflict(error):
            single = len(write.items) == 1 and self.on_conflict == "increment"
            self._highest = write.numbers.start if single else None
        return Settled.REBUILD

    def stored(self, write: _Puts) -> None:
        """The collection's highest number is now the write's last."""
        self._highest = write.numbers[-1]

    def applied(self, write: _Puts) -> None:
        """Its items share the collection's partition (they always do): counted."""
        self._count_shared_partition(write.items, transactional=len(write.items) > 1)

    def unresolved(self, write: _Puts) -> None:
        """Nothing to count: a put whose outcome is unknown keeps its token in its item."""

    def _verdict(self, exc: Exception) -> Verdict:
        """See `item_put_verdict()`: with ``on_conflict="increment"`` a taken key is retried
        at once (+1 needs no fresh read; a requery waits, then reads)."""
        return item_put_verdict(exc, increment=self.on_conflict == "increment")


@dataclass(frozen=True)
class _Puts:
    """One write of a group: its puts, their items, their numbers and the transaction's
    ``ClientRequestToken``."""

    group: list[Put]
    items: list[Item]
    numbers: range
    token: str
    #: The puts of ``group`` with an idempotency key, and their records' actions (after the
    #: items'), in the same order.
    keyed: list[Put]
    records: list[dict[str, Any]]

    @property
    def results(self) -> range:
        return self.numbers


def _stored_already(exc: ConditionFailed | TransactionCanceled, items: list[Item]) -> bool:
    """Whether the failed write's items were stored by an earlier attempt of the same write:
    the item that fails a put's condition (``ALL_OLD``) carries that put's own token. A
    transaction is all or nothing, so one such put means all of them."""
    if isinstance(exc, ConditionFailed):
        found = [exc.item]
    else:
        found = [reason.get("Item") for reason in exc.cancellation_reasons]
    return any(
        item is not None and item.get(TOKEN_ATTRIBUTE) == mine[TOKEN_ATTRIBUTE]
        for item, mine in zip(found, items, strict=False)
    )
