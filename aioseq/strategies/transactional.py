"""Strategy 4: transactional and gapless (the counter update and the item in one transaction)."""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeAlias

from aioseq._checks import check_attribute_name, check_table_name
from aioseq._coalesce import Waiter
from aioseq._items import deserialize, item_size, serialize, storable_item
from aioseq._retry import Verdict
from aioseq.config import (
    IDEMPOTENCY_MEMORY_BYTES,
    IDEMPOTENCY_TTL_SECS,
    MAX_NUMBER,
    MAX_PARTITION_KEY_BYTES,
    MAX_SORT_KEY_BYTES,
    GroupCommit,
)
from aioseq.contracts import Store
from aioseq.errors import (
    ConditionFailed,
    ConfigurationError,
    CounterBehindItems,
    ItemAlreadyExists,
    NumberOutOfRange,
    TransactionCanceled,
    ValidationFailed,
)
from aioseq.layout import CounterKind, ShardedItems
from aioseq.numbering import Numbering
from aioseq.strategies._base import (
    MAX_TRANSACTION_BYTES,
    ConditionalCounterStrategy,
    CounterStatistics,
)
from aioseq.strategies._group_commit import GroupCommitter, Settled
from aioseq.strategies._idempotency import IdempotencyRecords, KeyedPut
from aioseq.strategies._outcomes import counter_write_verdict, is_decisive
from aioseq.strategies._recent_writes import CounterWrite

__all__ = ["ItemSpec", "TransactionalCounter"]

#: An item to number: a mapping of plain Python values (the number is added under
#: ``number_attribute``), or a function that makes the item from its number.
ItemSpec: TypeAlias = "Mapping[str, Any] | Callable[[int], Mapping[str, Any]]"

#: DynamoDB takes at most 100 actions per transaction; one action is the counter's.
MAX_GROUP_SIZE = 99

Put = Waiter[KeyedPut, int]

_ALL_OLD = {"ReturnValuesOnConditionCheckFailure": "ALL_OLD"}


class TransactionalCounter(ConditionalCounterStrategy):
    """Gapless numbers: the counter update and the numbered item commit together or not at all.

    One ``TransactWriteItems``: an ``Update`` of the counter item to ``current + 1``, conditional
    on the value and write count last seen (read on the first call), and a ``Put`` of the item
    if ``attribute_not_exists``. A lost race brings the winner's value back (``ALL_OLD``). A
    resend after a lost answer keeps its ``ClientRequestToken``, also written in the counter
    item's ring of its last 32 writes: either tells that it was applied. Concurrent puts go in
    one transaction ([group commit](../group-commit.md)); see [What each strategy
    sends](../strategies.md#transactional).

    Guarantees:
        - unique: always.
        - gapless: yes: a number exists exactly when its item was stored.
        - exactly once: a lost answer is resolved by its token, not by a blind retry
          ([Guarantees](../guarantees.md) says when it cannot be).
        - ordered: numbers follow commit order, across processes.
        - crash: costs nothing; an unfinished transaction writes nothing.

    Cost per item, no contention: a transaction of 2 writes, billed twice (4 WCU under 1 KB), +
    1 ``GetItem`` (1 RCU) on the first call; k items grouped: one transaction of k + 1 writes
    (2k + 2 WCU). Every lost race adds a transaction.

    Parameters:
        store, key: the store (the counter item lives in its table) and the counter key.
        item_table: the table the items go to (default: the store's table).
        item_partition_key: ``item_table``'s partition key attribute (default: the store
            table's), used in the item's ``attribute_not_exists`` condition.
        number_attribute: the attribute that receives the number when ``put`` is given a
            mapping (default ``"number"``).
        max_value, max_in_flight: see `GroupCommitStrategy`.
        group: a [`GroupCommit`][aioseq.GroupCommit] (``True``, the default: up to 99 items and
            ~4 MB per transaction; ``False``: one transaction per put).
        idempotency_ttl_secs, idempotency_memory_bytes: as for
            [`SortKeyCounter`][aioseq.SortKeyCounter].
        layout: the [`ShardedItems`][aioseq.layout.ShardedItems] the items are spread by, if
            they are: recorded on the counter item for ``aioseq audit``; a put whose item key
            is not ``layout.key(n)`` is refused.

    Raises:
        ConfigurationError: bad key, names, ``group``, idempotency options or ``layout``.
    """

    _transactions = True  # every put is one TransactWriteItems

    def __init__(
        self,
        store: Store,
        key: str,
        *,
        item_table: str | None = None,
        item_partition_key: str | None = None,
        number_attribute: str = "number",
        max_value: int = MAX_NUMBER,
        max_in_flight: int | None = 1,
        group: GroupCommit | bool = True,
        idempotency_ttl_secs: float = IDEMPOTENCY_TTL_SECS,
        idempotency_memory_bytes: int = IDEMPOTENCY_MEMORY_BYTES,
        layout: ShardedItems | None = None,
    ) -> None:
        item_table = check_table_name(item_table or store.table.name, "item_table")
        records = IdempotencyRecords(  # (checked first)
            store,
            key,
            idempotency_ttl_secs,
            item_table=item_table,
            memory_bytes=idempotency_memory_bytes,
        )
        super().__init__(store, key, max_value=max_value, max_in_flight=max_in_flight)
        #: The records of ``put``'s idempotency keys.
        self._records = records
        self._committer = GroupCommitter(
            self, self._retry, self._verdict, handed_out=self._handed_out
        )
        self._group = self._grouper(self._commit, group, largest=MAX_GROUP_SIZE)
        self.item_table = item_table
        self.item_partition_key = check_attribute_name(
            item_partition_key or store.table.partition_key, "item_partition_key"
        )
        self.number_attribute = check_attribute_name(number_attribute, "number_attribute")
        # DynamoDB's limits on string key values: partition key 2048 UTF-8 bytes, sort key 1024.
        self._key_limits = {self.item_partition_key: MAX_PARTITION_KEY_BYTES}
        if store.table.sort_key is not None:
            self._key_limits[store.table.sort_key] = MAX_SORT_KEY_BYTES
        #: The layout its items are spread by (``None``: not told), and the kind recorded then.
        self.layout = layout
        self._layout_kind = self._check_layout(layout)
        #: Waiting puts whose earlier transaction was maybe applied and stayed unresolved (see
        #: `_found_stored()`), with that transaction; each leaves when its caller is answered.
        self._maybe_stored: dict[Put, _Transaction] = {}

    def _check_layout(self, layout: ShardedItems | None) -> str | None:
        """The kind every write records with ``layout``, if its key names are the item
        table's (the store's sort key, in its table).

        Raises:
            ConfigurationError: they are not, or ``layout`` is not a ``ShardedItems``."""
        other = self.item_table if self.item_table != self.store.table.name else None
        if layout is None:
            return None
        if not isinstance(layout, ShardedItems):
            raise ConfigurationError(f"layout must be a ShardedItems: {layout!r}")
        sort_key = self.store.table.sort_key
        if layout.partition_key != self.item_partition_key or (
            other is None and layout.sort_key != sort_key
        ):
            raise ConfigurationError(
                f"layout's key names ({layout.partition_key!r}, {layout.sort_key!r}) are not"
                f" the item table's ({self.item_partition_key!r}, {sort_key!r})"
            )
        return CounterKind(
            "transactional",
            "sharded",
            table=other,
            prefix=layout.prefix,
            shards=layout.shards,
            number_attribute=layout.sort_key,
        ).encode()

    def _kind_of(self, items: list[dict[str, Any]], numbers: range) -> str:
        """What a transaction storing ``items`` (numbered ``numbers``) records of where its
        items are: the layout's kind, ``beside`` or ``elsewhere``."""
        if self._layout_kind is not None:
            return self._layout_kind
        table = self.store.table
        if self.item_table != table.name:
            return CounterKind("transactional", "elsewhere", table=self.item_table).encode()
        partition = self._item.primary_key[table.partition_key]
        for item, n in zip(items, numbers, strict=True):
            sort = item.get(table.sort_key or "", {})
            text = str(sort.get("N", sort.get("S", "")))
            if item.get(table.partition_key) != partition or not (
                text.isdigit() and int(text) == n
            ):
                return _ELSEWHERE
        return _BESIDE

    def _make_item(self, item: ItemSpec, n: int) -> dict[str, Any]:
        """The item for number ``n``, serialized and checked as far as aioseq can: a mapping,
        with DynamoDB types only (no empty set, no float, no NaN), its key attributes present
        with the store table's key types when it goes there, key values within DynamoDB's
        limits, at most 400 KB, not the counter item.

        Raises:
            ConfigurationError: one of those does not hold (whatever the item function
                raises propagates as it is).
        """
        if callable(item):
            made = item(n)
            if not isinstance(made, Mapping):
                raise ConfigurationError(
                    "the item function must return a mapping of attribute names to values,"
                    f" not {type(made).__name__}"
                )
        elif isinstance(item, Mapping):
            made = {**item, self.number_attribute: n}
        else:
            raise ConfigurationError(
                "put() takes a mapping of attribute names to values, or a function of the"
                f" number that returns one, not {type(item).__name__}"
            )
        serialized = storable_item(made, self._key_limits)
        table = self.store.table
        sort_key = table.sort_key
        if (
            not callable(item)
            and self.item_table == table.name
            and sort_key is not None
            and sort_key not in serialized
        ):
            # A mapping gets its number under number_attribute: in the store's own table, the
            # sort key is where a number belongs, and only an item function can put it there.
            raise ConfigurationError(
                f"the item has no sort key attribute {sort_key!r} (put() adds the number under"
                f" {self.number_attribute!r}); to number the sort key, pass a function of the"
                f" number: put(lambda n: {{{table.partition_key!r}: ..., {sort_key!r}: n}})"
            )
        self._check_key_attributes(serialized)
        layout = self.layout
        if layout is not None and any(
            serialized.get(name) != value for name, value in serialize(layout.key(n)).items()
        ):
            raise ConfigurationError(
                f"the item's key is not layout.key({n}) of {layout!r}: make it with"
                " put(lambda n: {**layout.key(n), ...})"
            )
        if self.item_table == self.store.table.name:
            counter_key = self._item.primary_key
            if all(serialized.get(name) == value for name, value in counter_key.items()):
                raise ConfigurationError("the item's key is the counter item's key")
        return serialized

    def _check_key_attributes(self, item: Mapping[str, Any]) -> None:
        """The partition key is there; in the store's own table, so is the sort key, and both
        have the table's key types (another table's schema is the server's to check)."""
        table = self.store.table
        own_table = self.item_table == table.name
        wanted = {self.item_partition_key: ("partition", "S" if own_table else None)}
        if own_table and table.sort_key is not None:
            wanted[table.sort_key] = ("sort", table.sort_key_type)
        for name, (role, kind) in wanted.items():
            value = item.get(name)
            if value is None:
                raise ConfigurationError(f"the item has no {role} key attribute {name!r}")
            if kind is not None and set(value) != {kind}:
                raise ConfigurationError(
                    f"the item's key attribute {name!r} must be of type {kind} in table"
                    f" {table.name!r}, not {next(iter(value))}"
                )

    def _key_values(self, item: Mapping[str, Any]) -> tuple[str, ...]:
        """The item's key attributes as a hashable value (two puts with one key never share a
        transaction): their AttributeValues' types and texts, with no deserializing."""
        names = (self.item_partition_key, self.store.table.sort_key)
        return tuple(
            f"{name}\0{kind}\0{value!r}"
            for name in names
            if name is not None and name in item
            for kind, value in item[name].items()
        )

    def _key_of(self, item: Mapping[str, Any]) -> dict[str, Any]:
        """The item's key attributes as plain values, for error messages (never the others)."""
        names = {self.item_partition_key, self.store.table.sort_key}
        return deserialize({name: value for name, value in item.items() if name in names})

    async def put(self, item: ItemSpec, *, idempotency_key: str | None = None) -> int:
        """Store ``item`` under the next number, gaplessly; with ``idempotency_key``, once.

        Parameters:
            item: a mapping of plain Python values (``int``, ``Decimal``, ``str``, ``bytes``,
                ``bool``, ``None``, lists, dicts, sets; not ``float``) that includes the item
                table's key attributes; the number is added under ``number_attribute``.
                Or a function ``n -> mapping`` that returns the whole item for number ``n``
                (e.g. ``lambda n: {"pk": "invoice", "sk": n}``); it may be called more than
                once, with different numbers, when races are lost.
            idempotency_key: the request's idempotency key (1 to 255 characters, such as an
                ``Idempotency-Key`` header's UUID). The first call with it stores the item and
                a record of the key in the same transaction (2 WCU more); a later call with it,
                from any process, within ``idempotency_ttl_secs``, returns that number and
                writes nothing. The put runs to its end even if its caller is cancelled. See
                [Idempotent requests](../web-services.md#idempotent-requests).

        Returns:
            the item's number (a positive ``int``).

        Raises:
            ConfigurationError: the item is invalid: not a mapping (or an item function
                returned none), a value with no DynamoDB type (a float, NaN, an empty set), a
                key attribute missing or (in the store's table) of the wrong type, the
                counter item's key, or over 400 KB; or a bad ``idempotency_key`` (nothing is
                written, no number is used; a bad key: `IdempotencyKeyInvalid`).
            IdempotencyKeyReused: ``idempotency_key`` stored another item (nothing written).
            ValidationFailed: DynamoDB refused the item (what only it can check, such as
                another table's key types): nothing written, no number used; it fails alone.
            ItemAlreadyExists: an item with that item key exists (nothing written, the counter
                unchanged, unless ``maybe_applied``); `CounterBehindItems` when the item key is
                made from its number: the counter is behind its items.
            CounterValueInvalid: the counter item's value is not a whole number.
            NumberOutOfRange: the next number would pass ``max_value`` or 38 digits (nothing is
                written; a recorded ``idempotency_key`` gets its number instead, one
                ``GetItem``; in a group, only the puts past it).
            RetriesExhausted: lost races or transient errors outlasted the retry policy; with
                ``maybe_applied``, the item may be stored: read it back by its item key before
                putting it again.
            StoreError: a request failed in a way that is not retried (its subclass says how).
            StoreClosed: the store or this object is closed.
        """
        self._make_item(item, 1)  # validate before any request
        self._check_open()
        if idempotency_key is None:
            return await self._through(self._group, self._commit, KeyedPut(item))
        key = self._records.check(idempotency_key)
        request = KeyedPut(item, key)
        return await self._records.once(
            key,
            lambda n: self._make_item(item, n),
            lambda: self._through(self._group, self._commit, request),
        )

    def statistics(self) -> CounterStatistics:
        """A frozen snapshot of what this object has done."""
        return self._records.statistics(super().statistics())

    async def _commit(self, puts: list[Put]) -> None:
        """One commit (see :mod:`aioseq.strategies._group_commit`). A method of this object,
        so that its group's coalescer holds it weakly (no reference cycle). Its place in the
        counter's queue is kept while callers wait, else given up."""
        failed = True
        try:
            await self._committer.commit(puts)
            failed = False
        finally:
            self._keep_place(puts, failed=failed)

    # --- the parts of the group-commit skeleton (aioseq.strategies._group_commit) -------------

    async def prepare(self, puts: list[Put], limit: int | None) -> _Transaction | None:
        """The next transaction: the waiting puts in order (up to ``limit`` and the size
        limits, never two with one key), numbered from the counter's value as last seen, and
        the counter's conditional write; ``None`` when no put waits."""
        table = self.store.table
        waiting = [put for put in puts if put.waiting]
        if not waiting:  # (its place in the queue is kept for the callers behind)
            return None
        # The size it queues with is what the transaction will take: those behind predict
        # from it. A put with an idempotency key takes two of its 100 actions.
        fitting = list(itertools.accumulate(put.request.actions for put in waiting))
        size = bisect.bisect_right(fitting, MAX_GROUP_SIZE)
        before = await self._item.ready(min(size, limit or MAX_GROUP_SIZE))
        queued = self._turn.limit()  # the size it queued with: those behind predicted it
        if queued is not None:
            limit = queued if limit is None else min(limit, queued)
            # Numbers as queued, one per put; and actions, two per put with a key.
            self._top_up(
                puts, (limit - len(waiting), _one), (MAX_GROUP_SIZE - fitting[-1], _actions_of)
            )
        group, items = self._fill_group(puts, before.value, limit)
        if not group:
            return None
        numbers = self._numbers_of.numbers(before.value + 1, len(group))  # the items'
        write = self._item.new_write(
            before, len(group), self._kind_of(items, numbers), replace_kind=True
        )
        counter_update = {
            "Update": {
                "TableName": table.name,
                "Key": self._item.primary_key,
                "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
                **write.update(table),
            }
        }
        item_puts = [
            {
                "Put": {
                    "TableName": self.item_table,
                    "Item": item,
                    "ConditionExpression": "attribute_not_exists(#pk)",
                    "ExpressionAttributeNames": {"#pk": self.item_partition_key},
                    # the item in its way, to tell whether its unresolved transaction stored it
                    **(_ALL_OLD if put in self._maybe_stored else {}),
                }
            }
            for put, item in zip(group, items, strict=True)
        ]
        keyed, record_puts = self._records.record_puts(group, numbers, items, write.token)
        request = {
            "ClientRequestToken": write.token,
            "TransactItems": [counter_update, *item_puts, *record_puts],
        }
        return _Transaction(group, items, request, write, self._numbers_of, keyed)

    def drop_unwanted(self, write: _Transaction, maybe_applied: bool) -> bool:
        """Sent still: the items of callers who left during the commit are stored."""
        return False

    async def send(self, write: _Transaction) -> None:
        """One ``TransactWriteItems`` (the same ``ClientRequestToken`` on every resend).

        Resent after a lost answer: safe, as its counter update's condition cannot become
        true again once applied (``#writes`` only grows: `CounterWrite.condition()`), nor its
        puts' (items aioseq never deletes), beyond the token's 10 minutes too."""
        started = self.store.clock.now()
        await self.store.send_once("transact_write_items", **write.request)
        write.secs = self.store.clock.now() - started

    def judge(
        self, write: _Transaction, error: ConditionFailed | TransactionCanceled, maybe_applied: bool
    ) -> Settled:
        """Only transient reasons (a conflict, throttling): this attempt wrote nothing and says
        nothing of an earlier one, so the same request is sent again as it is. A server that
        ignores ``ClientRequestToken`` (moto), or a resend after the token's 10 minutes,
        cancels a resend of an applied transaction on the counter's condition: its token ring
        tells; if it cannot (32 writes followed), the puts go again under new numbers, and a
        put that then finds its own item stored gets the earlier number (`_found_stored()`).
        Otherwise puts whose own condition failed fail alone, or the race on the counter was
        lost."""
        if not isinstance(error, TransactionCanceled) or not is_decisive(error):
            return Settled.RESEND
        found = error.cancellation_reasons[0].get("Item") if error.codes else None
        if error.codes[:1] == ["ConditionalCheckFailed"]:
            self._lost.seen(found)  # (tells what became of transactions given up on)
        records = error.cancellation_reasons[1 + len(write.group) :]
        if maybe_applied and self._records.written_by(write.counter_write.token, records):
            # A key's record in the way carries this transaction's token: it was applied.
            self._lost.recovered_writes(len(write.numbers))
            self._item.saw(found, known=found is not None)
            return Settled.APPLIED
        if maybe_applied and error.codes[:1] == ["ConditionalCheckFailed"]:
            applied = self._lost.was_applied(write.counter_write, found)
            if applied:
                self._item.saw(found)
                return Settled.APPLIED
            if applied is None:
                self._remember_maybe_stored(write)
        return Settled.REGROUP if self._fail_alone(error, write) else Settled.REBUILD

    def stored(self, write: _Transaction) -> None:
        """The counter item is now what the transaction wrote; its turn, if any, is used."""
        self._item.committed(write.counter_write, write.secs)

    def applied(self, write: _Transaction) -> None:
        """Its items stored in the counter item's partition are counted."""
        if self.item_table == self.store.table.name:
            partition_key = self.store.table.partition_key
            counter_partition = self._item.primary_key[partition_key]
            shared = [i for i in write.items if i.get(partition_key) == counter_partition]
            if shared:
                self._count_shared_partition(shared, transactional=True)
        self._lost.seen(write.counter_write.before)  # (the counter item its condition matched)

    def unresolved(self, write: _Transaction) -> None:
        """The items may be stored: counted, unless the counter item as seen next says the
        transaction was not applied."""
        self._lost.gave_up(write.counter_write, "the retry policy ran out first")

    def _fill_group(
        self, puts: list[Put], current: int, limit: int | None = None
    ) -> tuple[list[Put], list[dict[str, Any]]]:
        """The waiting puts that go into the next transaction (at most ``limit``), and their
        items numbered from ``current + 1``. A put whose item cannot be made fails alone. The
        puts past ``max_value`` wait for the next transaction; when not even the first number
        fits, each waiting put fails alone with `NumberOutOfRange`."""
        group: list[Put] = []
        items: list[dict[str, Any]] = []
        keys: set[tuple[str, ...]] = set()
        size = 0
        actions = 1  # the counter's
        for put in puts:
            if not put.waiting:
                continue
            if limit is not None and len(group) >= limit:
                break
            # An idempotency key adds its record to the transaction (100 actions at most).
            wanted = put.request.actions
            if actions + wanted > MAX_GROUP_SIZE + 1:
                break
            try:
                value = self._item.check_number(current + len(group) + 1)
            except NumberOutOfRange as exc:
                if group:
                    break  # past max_value: the rest waits, out of range unless these fail
                put.future.set_exception(exc)  # (nothing fits: each waiting put is refused)
                continue
            try:
                item = self._make_item(put.request.request, self._numbers_of.number(value))
            except Exception as exc:  # the caller's item function failed: only that caller
                put.future.set_exception(exc)
                continue
            key = self._key_values(item)
            size_of_item = item_size(item)
            if key in keys or (group and size + size_of_item > MAX_TRANSACTION_BYTES):
                break  # the rest waits for the next transaction
            keys.add(key)
            size += size_of_item
            actions += wanted
            group.append(put)
            items.append(item)
        return group, items

    def _fail_alone(self, exc: TransactionCanceled, write: _Transaction) -> bool:
        """Give the puts whose own condition failed their answer; True if any did (the rest is
        then regrouped at once): a put whose idempotency key is recorded gets the recorded
        number (or `IdempotencyKeyReused`), one whose item exists `ItemAlreadyExists`. A lost
        race on the counter is no put's fault: False, after remembering the counter's value
        that came back with it."""
        group, items = write.group, write.items
        found_stored = bool(self._maybe_stored) and self._found_stored(exc, write)
        reasons = exc.cancellation_reasons
        codes = [*exc.codes, *["None"] * (len(group) + 1)]
        if codes[0] == "ConditionalCheckFailed":
            # The items' conditions may have failed too, for items keyed by numbers another
            # writer just took: that is not those items existing. (A record in the way is
            # found again by the next transaction.)
            seen = reasons[0].get("Item") if reasons else None
            self._item.saw(seen, known=seen is not None)
            return found_stored
        if found_stored:
            return True
        # A key's record first: its item may be in the way too, stored by the key's first call.
        failed = self._records.answer_found(
            write.keyed,
            reasons[1 + len(group) :],
            lambda put, n: self._make_item(put.request.request, n),
        )
        for put, item, number, code, reason in zip(
            group, items, write.results, codes[1:], [*reasons[1:], *[{}] * len(group)], strict=False
        ):
            if code == "ConditionalCheckFailed":
                # (maybe_applied: its unresolved transaction may have stored this item,
                # one that does not change with its number: `_found_stored()` cannot tell)
                maybe = put in self._maybe_stored
                error: Exception = (
                    CounterBehindItems(self.key, number, self._key_of(item), maybe_applied=maybe)
                    if self._keyed_by_number(put.request.request, item, number)
                    else ItemAlreadyExists(self._key_of(item), maybe_applied=maybe)
                )
            elif code == "ValidationError":
                message = str(reason.get("Message", "invalid item"))
                error = ValidationFailed(message, code=code, operation="TransactWriteItems")
            else:
                continue
            failed = True
            if put.waiting:
                put.future.set_exception(error)
        return failed

    def _keyed_by_number(self, request: ItemSpec, item: Mapping[str, Any], number: int) -> bool:
        """Whether ``item``, made from ``request`` for ``number``, has a key made from its
        number: made for the next number (or the one before), it has another key. Then an
        item in its way means the counter is behind its items, not a key the client chose."""
        for other in (number + 1, number - 1):
            try:
                made = self._make_item(request, other)
            except Exception:  # (the item function refuses that number: try the other)
                continue
            return self._key_values(made) != self._key_values(item)
        return False

    def _remember_maybe_stored(self, write: _Transaction) -> None:
        """Remember the waiting puts of ``write``, maybe applied and unresolved, until their
        callers are answered."""
        maybe_stored = self._maybe_stored

        def forget(put: Put) -> Callable[[object], object]:
            return lambda _: maybe_stored.pop(put, None)  # (not self: no cycle through it)

        for put in write.group:
            if put.waiting and put not in maybe_stored:
                put.future.add_done_callback(forget(put))
            if put.waiting:
                maybe_stored[put] = write

    def _found_stored(self, exc: TransactionCanceled, write: _Transaction) -> bool:
        """Whether a put whose earlier transaction stayed unresolved found in its way what
        that transaction stored (``ALL_OLD``): its key's record, carrying that transaction's
        token, or exactly the item it would have stored, when that item changes with its
        number (an item made the same for any number proves nothing). Then that transaction
        was applied: its puts still waiting get its numbers (True; the rest of ``write`` is
        regrouped)."""
        reasons = exc.cancellation_reasons
        group, items = write.group, write.items
        records = reasons[1 + len(group) :]
        for put, record in zip(write.keyed, records, strict=False):
            earlier = self._maybe_stored.get(put)
            if earlier is not None and self._records.written_by(
                earlier.counter_write.token, [record]
            ):
                self._resolve(earlier)
                return True
        for put, item, reason in zip(group, items, reasons[1:], strict=False):
            earlier = self._maybe_stored.get(put)
            found = reason.get("Item")
            if earlier is None or found is None or reason.get("Code") != "ConditionalCheckFailed":
                continue
            mine = deserialize(earlier.items[earlier.group.index(put)])
            if deserialize(found) != mine or deserialize(item) == mine:
                continue
            self._resolve(earlier)
            return True
        return False

    def _resolve(self, earlier: _Transaction) -> None:
        """``earlier``, counted as unresolved, was applied: its waiting puts get its numbers."""
        self._lost.found_applied(earlier.counter_write)
        self._handed_out(len(earlier.group))
        for number, stored in zip(earlier.results, earlier.group, strict=True):
            self._maybe_stored.pop(stored, None)
            if stored.waiting:
                stored.future.set_result(number)

    def _verdict(self, exc: Exception) -> Verdict:
        """See `counter_write_verdict()`: a transaction that lost the race on the counter
        (the action at index 0) waits for the writers ahead of it in the counter's queue, or
        is retried at once."""
        return counter_write_verdict(exc, self._item.lost_race)


_BESIDE = CounterKind("transactional", "beside").encode()
_ELSEWHERE = CounterKind("transactional", "elsewhere").encode()


def _one(_: object) -> int:
    return 1


def _actions_of(request: KeyedPut) -> int:
    return request.actions


@dataclass
class _Transaction:
    """One transaction of a group: its puts, their items, the request and the counter's
    conditional write (whose numbers are the puts')."""

    group: list[Put]
    items: list[dict[str, Any]]
    request: dict[str, Any]
    counter_write: CounterWrite
    #: The counter's values as the numbers handed out.
    numbering: Numbering
    #: The puts of ``group`` with an idempotency key, in the order of their records' actions
    #: (after the counter's and the items').
    keyed: list[Put]
    #: How long its last send took, in seconds.
    secs: float = 0.0

    @property
    def numbers(self) -> range:
        return self.counter_write.numbers

    @property
    def results(self) -> range:
        return self.numbering.numbers(self.numbers.start, len(self.numbers))
