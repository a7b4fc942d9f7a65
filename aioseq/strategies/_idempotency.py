"""Idempotency keys on the strategies that store items (transactional, sort-key): a client that
sends one request twice gets the first call's number back, and one item.

Stripe's API keeps an idempotency key's first result for 24 hours and answers a replay with
it; a replay with other parameters is an error. The IETF's ``Idempotency-Key`` HTTP header
field (draft-ietf-httpapi-idempotency-key-header) carries such a key. Here the first call
with a key writes an **idempotency record** in the same ``TransactWriteItems`` as its item:

    Put  {pk: "aioseq-idempotency#<len>#<counter key>#<key>", aioseq_number: n,
          aioseq_request: SHA-256 of the item (and of its table when that is not the
          store's), aioseq_expires: now + ttl}
         IF attribute_not_exists(#pk) OR aioseq_expires < :now   (ALL_OLD on failure)

so the record exists exactly when the item does. A later call with the key, from any process,
finds the record in its way: its transaction is canceled, nothing is written, and the record
that came back (``ReturnValuesOnConditionCheckFailure=ALL_OLD``) answers it: the recorded
number when its item, made for that number, hashes the same; otherwise
[`IdempotencyKeyReused`][aioseq.errors.IdempotencyKeyReused]. Concurrent calls with one key on
one object share one write. A record past ``aioseq_expires`` counts as absent (the table's time
to live deletes it within days; it need not be enabled for this to hold).

A replay that reaches a group commit cancels the group's transaction (the group is then
committed without it, one more transaction). So each counter object remembers the last keys it
stored or found, until their records expire (a record never changes before then): a replay
that comes back to the same process is answered from memory. It remembers at most
`RECENT_KEYS` keys and at most ``memory_bytes`` (`entry_bytes()` each: 485 for a key of 36
characters, a bound on the cost measured with ``tracemalloc``), the oldest forgotten first. A put
that finds no number in range (its counter at ``max_value``) reads its key's record (one
``GetItem``) before it raises ``NumberOutOfRange``: a recorded key still gets its number.

The record's partition key carries the counter key's length, so no two (counter, key) pairs
share a record, and each record is a partition key of its own: records spread over
partitions. It must fit DynamoDB's 2,048 bytes: a key that does not fit beside its counter
key is the client's fault only when no counter key would make room for it (a key is at most
255 characters, 1,020 bytes: it always fits beside a counter key of `MAX_COUNTER_KEY_BYTES`);
otherwise the counter key is too long, the service's fault. Under ``regions=`` the counter
key is the Region's (``key@region``), so each Region keeps its own records.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import json
import sys
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from decimal import Decimal
from typing import Any

from aioseq._checks import check_seconds
from aioseq._coalesce import Waiter
from aioseq._items import Item, deserialize
from aioseq._limits import (
    EXPIRES_ATTRIBUTE,
    MAX_PARTITION_KEY_BYTES,
    RECORDED_NUMBER_ATTRIBUTE,
    REQUEST_HASH_ATTRIBUTE,
    TOKEN_ATTRIBUTE,
)
from aioseq.config import IDEMPOTENCY_MEMORY_BYTES, MAX_IDEMPOTENCY_TTL_SECS
from aioseq.contracts import Store
from aioseq.errors import (
    AioseqError,
    ConfigurationError,
    IdempotencyKeyInvalid,
    IdempotencyKeyReused,
    ItemAlreadyExists,
    NumberOutOfRange,
)
from aioseq.strategies._base import CounterStatistics

__all__ = [
    "ENTRY_BYTES",
    "MAX_COUNTER_KEY_BYTES",
    "MAX_IDEMPOTENCY_KEY_CHARS",
    "IdempotencyRecords",
    "KeyedPut",
    "entry_bytes",
    "request_hash",
]

#: The longest idempotency key, in characters (Stripe's limit).
MAX_IDEMPOTENCY_KEY_CHARS = 255

#: The partition key value of every idempotency record starts with this.
RECORD_PREFIX = "aioseq-idempotency#"

#: The longest counter key (as scoped, ``key@region`` under ``regions=``) beside which every
#: valid idempotency key fits its record's partition key: 1,003 UTF-8 bytes.
MAX_COUNTER_KEY_BYTES = (
    MAX_PARTITION_KEY_BYTES - len(RECORD_PREFIX) - 4 - 2 - 4 * MAX_IDEMPOTENCY_KEY_CHARS
)

#: How many keys a counter object remembers at most (with their numbers and items' hashes,
#: until their records expire), to answer a replay that comes back to it with no request;
#: its ``idempotency_memory_bytes`` bounds them too.
RECENT_KEYS = 10_000

#: What a remembered key costs beside the key's own string (``sys.getsizeof``), in bytes: its
#: number, its item's hash (64 hex characters), its expiry, their tuple and its place in an
#: ``OrderedDict`` whose oldest keys are forgotten as new ones come. Measured with
#: ``tracemalloc`` on CPython 3.11, for 20 to 7,600 keys of 8 to 255 characters: 340 to 394
#: bytes (the hash table grows by steps, and keeps the room of forgotten keys until it
#: does); this is the upper end, rounded up, so that the bound holds
#: (tests/unit/test_idempotency_memory.py measures it again).
ENTRY_BYTES = 400


def entry_bytes(idempotency_key: str) -> int:
    """What remembering ``idempotency_key`` costs, in bytes (`ENTRY_BYTES` and the key's
    string): 485 for a UUID's 36 characters, 704 for 255 ASCII characters."""
    return ENTRY_BYTES + sys.getsizeof(idempotency_key)


@dataclass(frozen=True)
class KeyedPut:
    """A put's request (what its strategy stores) and its idempotency key, if any."""

    request: Any
    idempotency_key: str | None = None

    @property
    def actions(self) -> int:
        """The actions the put takes in a transaction: its item, and its key's record."""
        return 1 if self.idempotency_key is None else 2


def request_hash(item: Mapping[str, Any], *, item_table: str | None = None) -> str:
    """The SHA-256 (hex) of an item as AttributeValues, without its ``aioseq_token`` (a
    fresh one per call): the same for the same item whatever the order of its attributes or
    of its sets' members. With ``item_table`` (an item that goes to another table than the
    counter's), of the table's name and the item: never the hash of an item alone, so a
    key used for one table is another request for the other. (Without it, the hash is as
    records written before the table counted have it.)"""
    canonical: Any = {name: _canonical(v) for name, v in item.items() if name != TOKEN_ATTRIBUTE}
    if item_table is not None:
        canonical = [item_table, canonical]  # (a list: an item alone hashes as an object)
    text = json.dumps(canonical, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(text.encode()).hexdigest()


def _canonical(value: Any) -> Any:
    """An AttributeValue as JSON values, sets sorted, binaries as hex."""
    ((kind, inner),) = value.items()
    if kind == "B":
        return {kind: bytes(inner).hex()}
    if kind == "BS":
        return {kind: sorted(bytes(b).hex() for b in inner)}
    if kind in ("SS", "NS"):
        return {kind: sorted(inner)}
    if kind == "M":
        return {kind: {name: _canonical(v) for name, v in inner.items()}}
    if kind == "L":
        return {kind: [_canonical(v) for v in inner]}
    return {kind: inner}


PutWaiter = Waiter[KeyedPut, int]


class IdempotencyRecords:
    """The idempotency records of one counter (a part the item-writing strategies hold).

    Parameters:
        store: the store; records live in its table.
        counter_key: the counter key (or sort-key collection), unscoped.
        ttl_secs: how long a record answers replays, in seconds (> 0, at most
            [`MAX_IDEMPOTENCY_TTL_SECS`][aioseq.config.MAX_IDEMPOTENCY_TTL_SECS]).
        item_table: the table the items go to (default: the store's); another table is
            part of each record's request hash, so one key cannot answer for both tables.
        memory_bytes: the most memory the keys remembered may take, in bytes (>= 0; 0
            remembers none; `entry_bytes()` each), as well as `RECENT_KEYS` keys at most.

    Raises:
        ConfigurationError: a bad ``ttl_secs`` or ``memory_bytes``.
    """

    def __init__(
        self,
        store: Store,
        counter_key: str,
        ttl_secs: float,
        *,
        item_table: str | None = None,
        memory_bytes: int = IDEMPOTENCY_MEMORY_BYTES,
    ) -> None:
        self.store = store
        self.counter_key = counter_key
        self.ttl_secs = _check_ttl(ttl_secs)
        if (
            not isinstance(memory_bytes, int)
            or isinstance(memory_bytes, bool)
            or not 0 <= memory_bytes <= 2**40
        ):
            raise ConfigurationError(
                f"idempotency_memory_bytes must be an int from 0 to 2**40, not {memory_bytes!r}"
            )
        #: The most memory the keys remembered may take, in bytes.
        self.memory_bytes = memory_bytes
        # The items' table in their hash when it is not the store's (records written before
        # it counted, all for the store's table, still match).
        self._item_table = None if item_table in (None, store.table.name) else item_table
        #: Calls answered with an earlier call's number (a record, or a write in flight).
        self.replays = 0
        #: The wall clock records expire on (epoch seconds, as DynamoDB's time to live reads
        #: them; the store's clock is monotonic, with no epoch).
        self.epoch_secs: Callable[[], float] = time.time
        # The write in flight for each key, and how its first caller's item for a number hashes.
        self._in_flight: dict[str, tuple[asyncio.Future[int], Callable[[int], str]]] = {}
        # Keys recorded lately: their number, item hash and the record's expiry (epoch s);
        # and what they cost (`entry_bytes()`), in bytes.
        self._recent: OrderedDict[str, tuple[int, str, int]] = OrderedDict()
        self._recent_bytes = 0

    def check(self, idempotency_key: object) -> str:
        """``idempotency_key`` if it is a usable key: a ``str`` of 1 to 255 characters whose
        record's partition key fits DynamoDB's 2,048 bytes.

        Raises:
            IdempotencyKeyInvalid: it is not a key, whatever the counter (the client's fault).
            ConfigurationError: a valid key that does not fit beside this counter key: the
                counter key is too long (the service's fault; at most
                `MAX_COUNTER_KEY_BYTES` holds every key).
        """
        if not isinstance(idempotency_key, str) or not (
            0 < len(idempotency_key) <= MAX_IDEMPOTENCY_KEY_CHARS
        ):
            raise IdempotencyKeyInvalid(
                f"idempotency_key must be a str of 1 to {MAX_IDEMPOTENCY_KEY_CHARS} characters,"
                f" not {idempotency_key!r:.80}"
            )
        try:
            size = len(self._partition_key(idempotency_key).encode())
        except UnicodeEncodeError:  # (a lone surrogate, as JSON can carry)
            raise IdempotencyKeyInvalid(
                f"idempotency key {idempotency_key!r:.80} is not valid Unicode"
            ) from None
        if size > MAX_PARTITION_KEY_BYTES:  # (never beside MAX_COUNTER_KEY_BYTES of counter key)
            scoped = self.store.scoped_key(self.counter_key)
            raise ConfigurationError(
                f"counter key {scoped!r:.80} is too long for idempotency keys: beside its"
                f" {len(scoped.encode())} UTF-8 bytes, an idempotency key's record passes"
                f" DynamoDB's {MAX_PARTITION_KEY_BYTES} bytes of partition key; a counter key"
                f" of at most {MAX_COUNTER_KEY_BYTES} bytes holds every valid key. Nothing was"
                " written"
            )
        return idempotency_key

    def _partition_key(self, idempotency_key: str) -> str:
        scoped = self.store.scoped_key(self.counter_key)
        return f"{RECORD_PREFIX}{len(scoped)}#{scoped}#{idempotency_key}"

    def record_key(self, idempotency_key: str) -> Item:
        """The primary key of ``idempotency_key``'s record, as AttributeValues."""
        table = self.store.table
        record: Item = {table.partition_key: {"S": self._partition_key(idempotency_key)}}
        if table.sort_key is not None:
            record[table.sort_key] = {table.sort_key_type: str(table.counter_sort_key)}
        return record

    def record_puts(
        self,
        group: Sequence[PutWaiter],
        numbers: Sequence[int],
        items: Sequence[Item],
        token: str,
    ) -> tuple[list[PutWaiter], list[dict[str, Any]]]:
        """The puts of ``group`` (stored as ``items`` under ``numbers`` by the transaction
        whose idempotency token is ``token``) that carry an idempotency key, and the actions
        that record their keys, in the same order."""
        keyed: list[PutWaiter] = []
        actions: list[dict[str, Any]] = []
        for put, number, item in zip(group, numbers, items, strict=True):
            key = put.request.idempotency_key
            if key is not None:
                keyed.append(put)
                actions.append(self.record_put(key, number, item, token))
        return keyed, actions

    def record_put(
        self, idempotency_key: str, number: int, item: Item, token: str
    ) -> dict[str, Any]:
        """The ``TransactWriteItems`` action that records ``idempotency_key`` as having
        stored ``item`` under ``number`` in the transaction ``token``: a conditional ``Put``
        (2 WCU per KB: 2 for a key and counter key of up to ~900 bytes together)."""
        table = self.store.table
        now = int(self.epoch_secs())
        record = {
            **self.record_key(idempotency_key),
            RECORDED_NUMBER_ATTRIBUTE: {"N": str(number)},
            REQUEST_HASH_ATTRIBUTE: {"S": self.hash_of(item)},
            EXPIRES_ATTRIBUTE: {"N": str(now + max(1, round(self.ttl_secs)))},
            # (a resend whose answer was lost tells its own record by it)
            TOKEN_ATTRIBUTE: {"S": token},
        }
        return {
            "Put": {
                "TableName": table.name,
                "Item": record,
                "ConditionExpression": "attribute_not_exists(#pk) OR #expires < :now",
                "ExpressionAttributeNames": {
                    "#pk": table.partition_key,
                    "#expires": EXPIRES_ATTRIBUTE,
                },
                "ExpressionAttributeValues": {":now": {"N": str(now)}},
                "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
            }
        }

    def answer(self, put: PutWaiter, found: Item | None, item_for: Callable[[int], Item]) -> None:
        """Answer ``put`` from its key's record ``found`` in its way (``ALL_OLD``): the
        recorded number if ``item_for(number)`` hashes as the recorded item, else
        `IdempotencyKeyReused`. Its transaction wrote nothing."""
        idempotency_key = put.request.idempotency_key
        assert idempotency_key is not None
        number_found = (found or {}).get(RECORDED_NUMBER_ATTRIBUTE, {}).get("N")
        recorded = (found or {}).get(REQUEST_HASH_ATTRIBUTE, {}).get("S")
        if not put.waiting:
            return
        if number_found is None or recorded is None:  # (not a record: something else's item)
            put.future.set_exception(
                ItemAlreadyExists(deserialize(self.record_key(idempotency_key)))
            )
            return
        number = int(number_found)
        expires = (found or {}).get(EXPIRES_ATTRIBUTE, {}).get("N", "0")
        self._remember(idempotency_key, number, recorded, int(Decimal(expires)))
        try:
            put.future.set_result(self._replayed(idempotency_key, number, recorded, item_for))
        except Exception as exc:  # another item, or the caller's item function failed
            put.future.set_exception(exc)

    @staticmethod
    def written_by(token: str, reasons: Sequence[Mapping[str, Any]]) -> bool:
        """Whether one of the records that came back in ``reasons`` (``ALL_OLD``) was
        written by the transaction whose idempotency token is ``token``."""
        return any(
            (reason.get("Item") or {}).get(TOKEN_ATTRIBUTE) == {"S": token} for reason in reasons
        )

    def answer_found(
        self,
        keyed: Sequence[PutWaiter],
        reasons: Sequence[Mapping[str, Any]],
        item_for: Callable[[PutWaiter, int], Item],
    ) -> bool:
        """Answer each put of ``keyed`` whose record's condition failed (``reasons``, one per
        record action, in order); True if any was."""
        answered = False
        for put, reason in zip(keyed, reasons, strict=False):
            if reason.get("Code") == "ConditionalCheckFailed":
                self.answer(put, reason.get("Item"), functools.partial(item_for, put))
                answered = True
        return answered

    async def once(
        self,
        idempotency_key: str,
        item_for: Callable[[int], Item],
        call: Callable[[], Awaitable[int]],
    ) -> int:
        """Run ``call`` (the put with ``idempotency_key``) once for the concurrent callers with
        that key on this object: the first runs it in a task of its own (a caller leaving
        does not cancel the others' write), the others wait for it and get its number when
        their item for that number hashes as the first's (`IdempotencyKeyReused`
        otherwise). A key this object remembers (`RECENT_KEYS`) is answered at once."""
        started = int(self.epoch_secs())
        known = self._recent.get(idempotency_key)
        if known is not None:
            number, recorded, expires = known
            if started < expires:
                return self._replayed(idempotency_key, number, recorded, item_for)
            self._forget(idempotency_key)
        running = self._in_flight.get(idempotency_key)
        if running is None:
            hash_for = self._hash_for(item_for)
            task: asyncio.Future[int] = asyncio.ensure_future(
                self._run(idempotency_key, call, hash_for, started)
            )
            self._in_flight[idempotency_key] = (task, hash_for)
            task.add_done_callback(_retrieved)
            return await asyncio.shield(task)
        first, first_hash = running
        try:
            number = await asyncio.shield(first)
        except IdempotencyKeyReused:  # the first call's item was not the key's: maybe this one is
            return await self.once(idempotency_key, item_for, call)
        except AioseqError as exc:
            # Nothing was stored for the first call's item; this call's own item may fare
            # otherwise (its key free, its item valid).
            if exc.maybe_applied or _same_item(self._hash_for(item_for), first_hash):
                raise
            return await self.once(idempotency_key, item_for, call)
        return self._replayed(idempotency_key, number, first_hash(number), item_for)

    async def _run(
        self,
        idempotency_key: str,
        call: Callable[[], Awaitable[int]],
        hash_for: Callable[[int], str],
        started: int,
    ) -> int:
        """``call``; its number remembered for the key (whoever waits for it), and the key's
        entry in flight removed as it ends (a call that comes after starts afresh, or finds
        the key remembered)."""
        try:
            try:
                number = await call()
            except NumberOutOfRange:
                # A recorded key answers before any range check: a replay on a counter at
                # max_value has no transaction to be canceled by its record, so it reads it.
                recorded = await self._recorded(idempotency_key, hash_for)
                if recorded is None:  # (never stored, or expired)
                    raise
                number = recorded
            if idempotency_key not in self._recent:  # (stored now: its record expires later)
                ttl = max(1, round(self.ttl_secs))
                self._remember(idempotency_key, number, hash_for(number), started + ttl)
            return number
        finally:
            running = self._in_flight.get(idempotency_key)
            if running is not None and running[0] is asyncio.current_task():
                del self._in_flight[idempotency_key]

    async def _recorded(self, idempotency_key: str, hash_for: Callable[[int], str]) -> int | None:
        """The number of ``idempotency_key``'s record, read when its put found no number in
        range (one strongly consistent ``GetItem``, 1 RCU, under the store's retry policy),
        if this call's item for it hashes as recorded; ``None`` without a live record.

        Raises:
            IdempotencyKeyReused: its record holds another item.
        """
        response = await self.store.send_with_retries(
            "get_item",
            TableName=self.store.table.name,
            Key=self.record_key(idempotency_key),
            ConsistentRead=True,
        )
        found = response.get("Item") or {}
        number_found = found.get(RECORDED_NUMBER_ATTRIBUTE, {}).get("N")
        recorded = found.get(REQUEST_HASH_ATTRIBUTE, {}).get("S")
        expires = int(Decimal(found.get(EXPIRES_ATTRIBUTE, {}).get("N", "0")))
        if number_found is None or recorded is None or expires < int(self.epoch_secs()):
            return None
        number = int(number_found)
        self._remember(idempotency_key, number, recorded, expires)
        if hash_for(number) != recorded:
            raise IdempotencyKeyReused(idempotency_key, self.counter_key, number)
        self.replays += 1
        return number

    def _replayed(
        self, idempotency_key: str, number: int, recorded: str, item_for: Callable[[int], Item]
    ) -> int:
        """``number`` if this call's item for it hashes as ``recorded``."""
        if self.hash_of(item_for(number)) != recorded:
            raise IdempotencyKeyReused(idempotency_key, self.counter_key, number)
        self.replays += 1
        return number

    def hash_of(self, item: Item) -> str:
        """The request hash of ``item`` (see `request_hash()`): what a record holds."""
        return request_hash(item, item_table=self._item_table)

    def _hash_for(self, item_for: Callable[[int], Item]) -> Callable[[int], str]:
        return lambda n: self.hash_of(item_for(n))

    @property
    def remembered(self) -> tuple[int, int]:
        """The keys remembered, and what they cost in bytes (`entry_bytes()` each)."""
        return len(self._recent), self._recent_bytes

    def statistics(self, counted: CounterStatistics) -> CounterStatistics:
        """``counted`` (a counter's statistics) with these records' figures: ``replays``,
        ``remembered_keys``, ``remembered_key_bytes``."""
        keys, size = self.remembered
        return replace(
            counted, replays=self.replays, remembered_keys=keys, remembered_key_bytes=size
        )

    def _remember(self, idempotency_key: str, number: int, recorded: str, expires: int) -> None:
        """Remember the key, newest last; forget the oldest past `RECENT_KEYS` keys or
        ``memory_bytes``."""
        recent = self._recent
        if idempotency_key not in recent:
            self._recent_bytes += entry_bytes(idempotency_key)
        recent[idempotency_key] = (number, recorded, expires)
        recent.move_to_end(idempotency_key)
        while recent and (len(recent) > RECENT_KEYS or self._recent_bytes > self.memory_bytes):
            oldest, _ = recent.popitem(last=False)
            self._recent_bytes -= entry_bytes(oldest)

    def _forget(self, idempotency_key: str) -> None:
        if self._recent.pop(idempotency_key, None) is not None:
            self._recent_bytes -= entry_bytes(idempotency_key)


def _check_ttl(ttl_secs: object) -> float:
    """``idempotency_ttl_secs`` if it is a time to live: seconds, > 0 and at most
    `MAX_IDEMPOTENCY_TTL_SECS` (a record's expiry, now plus this, is then a DynamoDB
    Number far within its 38 digits).

    Raises:
        ConfigurationError: it is not.
    """
    secs = check_seconds(ttl_secs, "idempotency_ttl_secs")
    if secs > MAX_IDEMPOTENCY_TTL_SECS:
        raise ConfigurationError(
            f"idempotency_ttl_secs must be at most {MAX_IDEMPOTENCY_TTL_SECS:,} (10 years), not"
            f" {ttl_secs!r}: a record expires at now + idempotency_ttl_secs, in epoch seconds"
            " (a DynamoDB Number); nothing was written"
        )
    return secs


def _same_item(mine: Callable[[int], str], hash_for: Callable[[int], str]) -> bool:
    """Whether ``mine`` and ``hash_for`` hash the same item (tried for number 1)."""
    try:
        return mine(1) == hash_for(1)
    except Exception:  # (an item function that fails: not known to differ)
        return True


def _retrieved(task: asyncio.Future[int]) -> None:
    if not task.cancelled():
        task.exception()  # retrieved: its callers, if any are left, raise it
