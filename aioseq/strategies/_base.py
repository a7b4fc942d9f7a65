"""The strategy base classes, each holding what its strategies use:

- `Strategy`: every strategy (its store, counter key, limit, numbering, loop, statistics);
- `GroupCommitStrategy`: those that write through the group-commit skeleton (sort-key,
  optimistic, transactional): the in-flight limit, the group, lost-answer accounting;
- `ConditionalCounterStrategy`: those that move the counter item with a conditional write
  (optimistic, transactional): the counter item as last seen and its queue of writers.
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar

from aioseq import _retry
from aioseq._checks import check_count, check_key
from aioseq._coalesce import Coalescer, LoopBinding, Waiter
from aioseq._items import Item, item_size, parse_counter, write_units
from aioseq._limits import PARTITION_WCU_PER_SEC
from aioseq._retry import Classify
from aioseq.config import MAX_NUMBER, GroupCommit
from aioseq.contracts import NumbersHeld, Store
from aioseq.errors import ConfigurationError, NumberingMismatch, StoreClosed
from aioseq.numbering import Numbering, numbering_for, refuse_scoped
from aioseq.strategies._counter_item import CounterItem, TrackedCounterItem
from aioseq.strategies._recent_writes import LostAnswers
from aioseq.strategies._turn import Turn

T = TypeVar("T")
R = TypeVar("R")

log = logging.getLogger("aioseq")


#: The replication lag, in seconds, that a Region-scoped counter object's readings of its
#: key's scope record cover. On a table with multi-Region eventual consistency, stores that
#: create the record at once in several Regions (with different lists) all pass; each created
#: it before any other copy reached it, so within one lag of the first, and every copy has
#: landed one lag later. So an object reads the record again until twice this after its first
#: check; the objects whose record lost stop writing at the reading that sees the winner.
#: Compare with the table's ``ReplicationLatency`` (CloudWatch).
SCOPE_REPLICATION_LAG_SECS = 60.0
#: Seconds from the first check to the first reading after it; each pause then doubles, up to
#: `SCOPE_RECHECK_SECS`.
SCOPE_FIRST_RECHECK_SECS = 1.0
#: The most seconds between two readings of the scope record: how long after the winning
#: record lands in its Region an object of the losing record may still write.
SCOPE_RECHECK_SECS = 10.0
#: Readings in a row that fail (each after the store's retry policy ran out) before an object
#: stops reading in the background; its next write then reads the record first.
SCOPE_RECHECK_FAILURES = 6

#: DynamoDB takes at most 4 MB per transaction; keep room for a counter update and framing.
MAX_TRANSACTION_BYTES = 4_000_000 - 64_000


def group_commit(group: GroupCommit | bool) -> GroupCommit | None:
    """The [`GroupCommit`][aioseq.GroupCommit] a strategy's ``group=`` argument asks for
    (``None``: each call commits alone).

    Raises:
        ConfigurationError: ``group`` is neither a bool nor a ``GroupCommit``.
    """
    if isinstance(group, bool):
        return GroupCommit() if group else None
    if isinstance(group, GroupCommit):
        return group
    raise ConfigurationError(f"group must be a bool or a GroupCommit: {group!r}")


@dataclass(frozen=True)
class CounterStatistics:
    """A snapshot of one counter object's work since it was made.

    Attributes:
        numbers: numbers handed out (or items stored) successfully.
        retries: retries by reason (DynamoDB error code, or ``TransactionCanceled:<codes>``).
        conflicts: how many of those retries were lost races (a failed condition on the counter
            item or on the candidate sort key).
        recovered: numbers of writes whose answer was lost, found applied when resent (their
            callers got them, once).
        unresolved: numbers of writes whose answer was lost and whose outcome could not be
            told any more (see [`RECENT_WRITES`][aioseq.config.RECENT_WRITES]): possibly taken,
            never handed out.
        shared_partition_puts: items stored in the partition the counter itself writes (the
            counter item's partition key value; the sort-key strategy's item collection).
            On AWS a partition takes 1,000 WCU/s, so these puts have a ceiling there.
        partition_ceiling: that ceiling: the puts per second that partition takes on AWS at
            the WCU these puts cost (1,000 WCU/s divided by their mean cost: 2 WCU per KB in
            a transaction, 1 alone); at most that, since the counter item's own writes share
            it (about half of it for ungrouped transactional puts). ``None`` when no put
            shared the counter item's partition; items kept together in one other
            collection have the same ceiling, which this does not see.
        replays: calls answered with the number an earlier call with their idempotency key
            got (its record, or its write in flight), writing nothing (transactional and
            sort-key ``put(..., idempotency_key=)``).
        remembered_keys: idempotency keys this object remembers, to answer their replays
            with no request (at most 10,000, and ``idempotency_memory_bytes``).
        remembered_key_bytes: the memory they take, in bytes, as estimated from the sizes
            measured (docs/web-services.md: 485 bytes a UUID key).
    """

    numbers: int = 0
    retries: Mapping[str, int] = field(default_factory=dict)
    conflicts: int = 0
    recovered: int = 0
    unresolved: int = 0
    shared_partition_puts: int = 0
    partition_ceiling: float | None = None
    replays: int = 0
    remembered_keys: int = 0
    remembered_key_bytes: int = 0


#: The numbering of an object whose owner numbers its values (values are handed out as they are).
_VALUES = Numbering()


def _loop_of(store: Store) -> Callable[[], asyncio.AbstractEventLoop | None]:
    """The store's loop, asked when an object is first used (`LoopBinding`'s ``home``)."""
    return lambda: store.loop


class Strategy:
    """Base of the strategy classes: binds a store and a counter key, counts what it does.

    Parameters:
        store: the [`DynamoStore`][aioseq.DynamoStore] to send requests through.
        key: the counter key (partition key value): a non-empty ``str`` of at most 2048 UTF-8
            bytes; any characters (it is sent as a value, never inside an expression).
        max_value: the highest number this object hands out (1 .. ``10**38 - 1``, the
            default); pass [`MAX_SAFE_INTEGER`][aioseq.MAX_SAFE_INTEGER] (2**53 - 1) for
            numbers that JavaScript reads exactly. Past it,
            [`NumberOutOfRange`][aioseq.errors.NumberOutOfRange] is raised and nothing is written.
        numbering: the [`Numbering`][aioseq.Numbering] recorded on the counter item and required
            there (default: ``stride=1 offset=1`` with ``max_value``; a
            [`BlockAllocator`][aioseq.BlockAllocator] passes its own to the atomic counter it
            owns). A counter item that recorded another raises
            [`NumberingMismatch`][aioseq.errors.NumberingMismatch].
        adopt: whether the store takes this object in, to close it with itself (``False``
            for the atomic counter a block allocator owns and closes).

    Raises:
        ConfigurationError: a bad key, ``max_value`` or ``numbering``.
    """

    #: The wait before a retry the engine classified `Verdict.YIELD` (None: the policy's).
    _pause_secs: Callable[[], float] | None = None
    #: Whether its writes are ``TransactWriteItems`` (refused on tables that take none).
    _transactions = False

    def __init__(
        self,
        store: Store,
        key: str,
        *,
        max_value: int = MAX_NUMBER,
        numbering: Numbering | None = None,
        adopt: bool = True,
    ) -> None:
        self.key = check_key(key)
        self.max_value = check_count(max_value, "max_value")
        if numbering is not None and not isinstance(numbering, Numbering):
            raise ConfigurationError(f"numbering must be a Numbering: {numbering!r}")
        if numbering is None:  # it hands out numbers of its own: its Region's, if scoped
            numbering = store.counter_numbering(numbering_for(max_value=max_value))
            #: Counter values as the numbers this object hands out.
            self._numbers_of = numbering
        else:  # its owner (a block allocator) makes numbers of the values
            self._numbers_of = _VALUES
        self._item = CounterItem(
            store, self.key, numbering, self._numbers_of.count_up_to(self.max_value)
        )
        self._writes_checked = False  # store.check_writes() passed for this object
        self._scope_passed = False  # a check of its key's scope record passed once
        #: The mismatch a later reading of the scope record found: every write raises it.
        self._scope_refusal: NumberingMismatch | None = None
        self._recheck: asyncio.Task[None] | None = None  # the scope record's later readings
        #: Called once if this object comes to refuse every write for good (its scope record
        #: was replaced): an owner holding numbers taken from it must not hand them out.
        self.on_writes_refused: Callable[[], None] | None = None
        self._checking_writes: asyncio.Future[Numbering | None] | None = None
        self._binding = LoopBinding(f"{type(self).__name__}({self.key!r})", home=_loop_of(store))
        self._closed = False
        self.store = store
        if adopt:  # else its owner (a block allocator) is adopted, and stands for it
            store.adopt(self)
        self._numbers = 0  # numbers handed out
        # Items stored in the partition the counter writes, and the WCU they cost there.
        self._shared_puts = 0
        self._shared_wcu = 0
        self._calls = 0  # requests run under the retry engine, ended
        self._running = 0  # requests running under the retry engine now
        self._retries: Counter[str] = Counter()

    @property
    def numbering(self) -> Numbering:
        """The numbering this object records on its counter item and requires there."""
        return self._item.numbering

    async def _check_writes(self) -> None:
        """Before this object's first write: may the store write its counter here (a global
        table's Regions; see [`DynamoStore.check_writes()`][aioseq.DynamoStore.check_writes])?
        One check in flight, shared by the callers that come meanwhile (its failure is
        theirs; the next caller asks again); once passed, not again unless a later reading of
        a Region-scoped key's record (`_recheck_scope()`) asks for it. A mismatch such a
        reading found is raised with no request."""
        refused = self._scope_refusal
        if refused is not None:
            raise NumberingMismatch(refused.key, refused.stored, refused.requested)
        if self._writes_checked:
            return
        checking = self._checking_writes
        if checking is None:
            checking = asyncio.ensure_future(
                self.store.check_writes(
                    self.key,
                    transactions=self._transactions,
                    numbering=self._item.numbering,
                    recheck=self._scope_passed,
                )
            )
            checking.add_done_callback(self._writes_check_done)
            self._checking_writes = checking
        await asyncio.shield(checking)

    def _writes_check_done(self, checking: asyncio.Future[Numbering | None]) -> None:
        if self._checking_writes is checking:
            self._checking_writes = None
        if not checking.cancelled() and checking.exception() is None:
            self._writes_checked = True
            scoped = checking.result() is not None  # (a Region-scoped key's numbering)
            if scoped and self._recheck is None and not self._closed:
                self._scope_passed = True
                self._recheck = asyncio.ensure_future(self._recheck_scope())

    async def _recheck_scope(self) -> None:
        """After the first check passed, read the key's scope record again (one ``GetItem``
        each, under the store's retry policy): 1 s later, then at pauses doubling up to
        `SCOPE_RECHECK_SECS`, until a reading at least twice `SCOPE_REPLICATION_LAG_SECS`
        after the first check passed. Meanwhile this object writes (the window
        docs/global-tables.md states). A record replication replaced (Regions created it at
        once with different lists) refuses every write of this object from then on
        ([`NumberingMismatch`][aioseq.errors.NumberingMismatch], logged as an error); one
        grown by Regions in free slots passes. After `SCOPE_RECHECK_FAILURES` failed
        readings in a row, the next write reads the record first."""
        clock = self.store.clock
        until = clock.now() + 2 * SCOPE_REPLICATION_LAG_SECS
        pause, failed = SCOPE_FIRST_RECHECK_SECS, 0
        while True:
            await clock.sleep(pause)
            pause = min(2 * pause, SCOPE_RECHECK_SECS)
            try:
                await self.store.check_writes(
                    self.key,
                    transactions=self._transactions,
                    numbering=self._item.numbering,
                    recheck=True,
                )
            except NumberingMismatch as exc:
                self._scope_refusal = exc
                self._writes_checked = False
                log.error(
                    "counter %r: its Region scope record changed under it; writes refused: %s",
                    self.key,
                    exc,
                )
                if self.on_writes_refused is not None:
                    self.on_writes_refused()
                return
            except StoreClosed:
                return
            except Exception as exc:  # (CancelledError is not one: a close ends it)
                failed += 1
                if failed < SCOPE_RECHECK_FAILURES:
                    log.info(
                        "counter %r: reading its Region scope record failed (%d); again in"
                        " %g s: %r",
                        self.key,
                        failed,
                        pause,
                        exc,
                    )
                    continue
                log.warning(
                    "counter %r: reading its Region scope record failed %d times in a row;"
                    " its next write reads it first: %r",
                    self.key,
                    failed,
                    exc,
                )
                self._recheck = None  # (the next check that passes reads on)
                self._writes_checked = False
                return
            failed = 0
            if clock.now() >= until:
                return  # seen unchanged past the replication lag: confirmed

    def _handed_out(self, n: int) -> None:
        """Count ``n`` numbers handed out."""
        self._numbers += n

    def statistics(self) -> CounterStatistics:
        """A frozen snapshot of what this object has done."""
        retries = dict(self._retries)
        conflicts = sum(n for reason, n in retries.items() if _retry.is_conflict_reason(reason))
        shared = self._shared_puts
        return CounterStatistics(
            numbers=self._numbers,
            retries=retries,
            conflicts=conflicts,
            shared_partition_puts=shared,
            partition_ceiling=PARTITION_WCU_PER_SEC * shared / self._shared_wcu if shared else None,
        )

    def _count_shared_partition(self, items: Sequence[Item], *, transactional: bool) -> None:
        """Count ``items``, stored in the partition the counter writes, and their WCU."""
        self._shared_puts += len(items)
        self._shared_wcu += sum(
            write_units(item_size(i), transactional=transactional) for i in items
        )

    def __repr__(self) -> str:
        s = self.statistics()
        return (
            f"<{type(self).__name__} key={self.key!r} table={self.store.table.name!r}"
            f" numbers={s.numbers} conflicts={s.conflicts}>"
        )

    def _check_open(self, *, store_closing_ok: bool = False) -> None:
        """Raise [`StoreClosed`][aioseq.errors.StoreClosed] once this object or its store is closed
        (``store_closing_ok``: this object only, for the work a store's close does through
        it), and [`WrongEventLoop`][aioseq.errors.WrongEventLoop] from an event loop other than the
        one it first ran in (its lock and its group belong to that loop)."""
        if self._closed or (self.store.closed and not store_closing_ok):
            raise StoreClosed(f"{type(self).__name__}({self.key!r}): its DynamoStore is closed")
        self._binding.check()

    async def _retry(
        self, attempt: Callable[[], Awaitable[T]], classify: Classify = _retry.transient
    ) -> T:
        """Run ``attempt`` under the store's retry engine."""
        self._running += 1
        try:
            return await self.store.retry.run(
                attempt,
                classify=classify,
                retries=self._retries,
                counter_key=self.key,
                pause_secs=self._pause_secs,
            )
        finally:
            self._running -= 1
            self._calls += 1

    # --- managed by the store (aioseq.contracts.Managed) -------------------------------------

    @property
    def closed(self) -> bool:
        """True once [`aclose()`][aioseq.AtomicCounter.aclose] has begun."""
        return self._closed

    def activity(self) -> tuple[int, ...]:
        """What changes whenever this object is used, succeeding or failing: two equal
        readings mean it was idle between."""
        return (self._calls, self._numbers)

    def busy(self) -> bool:
        """A request running."""
        return bool(self._running)

    async def evict(self) -> NumbersHeld:
        """Nothing to forget: no request, nothing returned, nothing wasted."""
        return NumbersHeld()

    def abandon(self) -> None:
        """Nothing to count: a counter holds no numbers."""

    def numbers_held(self) -> NumbersHeld:
        """All 0: a counter hands out the numbers it takes at once."""
        return NumbersHeld()

    async def aclose(self) -> None:
        """Refuse new calls ([`StoreClosed`][aioseq.errors.StoreClosed]). Idempotent; no request.
        [`DynamoStore.aclose()`][aioseq.DynamoStore.aclose] calls it for every object made on the
        store."""
        self._closed = True
        if self._recheck is not None:
            self._recheck.cancel()

    # --- reads -------------------------------------------------------------------------------

    async def exists(self) -> bool:
        """Whether the counter exists: its counter item is there (made by the first number
        taken).

        DynamoDB calls: one strongly consistent ``GetItem`` (1 RCU), retried on transient errors.

        Raises:
            RetriesExhausted: transient errors outlasted the retry policy.
            StoreError: a request failed in a way that is not retried (its subclass says how).
            StoreClosed: the store or this object is closed.
        """
        self._check_open()
        return await self._retry(self._item.read) is not None

    async def current(self) -> int:
        """The counter item's value now, as the last number handed out (0 if none yet).

        DynamoDB calls: one strongly consistent ``GetItem`` (1 RCU), retried on transient errors.

        Raises:
            CounterValueInvalid: the value attribute is not a whole number.
            NumberingMismatch: the key is Region-scoped and the store has no ``regions=``.
            RetriesExhausted: transient errors outlasted the retry policy.
            StoreError: a request failed in a way that is not retried (its subclass says how).
            StoreClosed: the store or this object is closed.
        """
        self._check_open()
        item = await self._retry(self._item.read)
        refuse_scoped(item, self.key)
        value = parse_counter(item, self.key, self.store.table.value_attribute)
        return self._numbers_of.number(value) if value else 0


class GroupCommitStrategy(Strategy):
    """Base of the strategies that write through the group-commit skeleton
    (`aioseq.strategies._group_commit`): grouped, or one call per commit under an in-flight
    limit; writes whose answer was lost are resolved and counted.

    Parameters:
        store, key, max_value: see `Strategy`.
        max_in_flight: ungrouped, how many calls on this object may race for the next number
            at once; the others wait in FIFO order. Calls in one process racing each other
            only burn writes (one winner per round trip, O(C**2) requests for C callers), so
            the default is 1; raise it to measure contention. ``None``: no limit.

    Raises:
        ConfigurationError: a bad key, ``max_value`` or ``max_in_flight``.
    """

    def __init__(
        self,
        store: Store,
        key: str,
        *,
        max_value: int = MAX_NUMBER,
        max_in_flight: int | None = 1,
    ) -> None:
        super().__init__(store, key, max_value=max_value)
        if max_in_flight is not None:
            check_count(max_in_flight, "max_in_flight", maximum=1_000_000)
        self.max_in_flight = max_in_flight
        self._in_flight = asyncio.Semaphore(max_in_flight) if max_in_flight else None
        self._waiting_in_flight = 0  # calls waiting for a place in flight
        self._group: Coalescer[Any, Any] | None = None  # the group-commit coalescer, if grouped
        #: Writes whose answer was lost: resolved by the token ring, counted.
        self._lost = LostAnswers(self.key, store.table, store.observer)

    def statistics(self) -> CounterStatistics:
        """A frozen snapshot of what this object has done."""
        lost = self._lost
        return replace(super().statistics(), recovered=lost.recovered, unresolved=lost.unresolved)

    def busy(self) -> bool:
        """A request running or waiting in flight, calls waiting in its group, or a commit in
        flight."""
        group = self._group
        return (
            super().busy()
            or self._waiting_in_flight > 0
            or (group is not None and (group.flushing or bool(group.queue)))
        )

    async def aclose(self) -> None:
        """Refuse new calls ([`StoreClosed`][aioseq.errors.StoreClosed]); when grouped, let the
        group in flight finish and fail the callers still waiting with ``StoreClosed``.
        Idempotent. [`DynamoStore.aclose()`][aioseq.DynamoStore.aclose] calls it for every
        object made on the store."""
        await super().aclose()
        if self._group is not None:
            await self._group.close()
        self._lost.seen(None, last=True)  # writes given up on and never judged: counted

    async def _retry(
        self, attempt: Callable[[], Awaitable[T]], classify: Classify = _retry.transient
    ) -> T:
        """Run ``attempt`` under the store's retry engine, once a place in flight is free
        (ungrouped, with ``max_in_flight``: a group's coalescer runs one commit at a time)."""
        in_flight = self._in_flight if self._group is None else None
        if in_flight is None:
            return await super()._retry(attempt, classify)
        self._waiting_in_flight += 1
        try:
            await in_flight.acquire()
        finally:
            self._waiting_in_flight -= 1
        try:
            return await super()._retry(attempt, classify)
        finally:
            in_flight.release()

    def _grouper(
        self,
        flush: Callable[[list[Waiter[Any, Any]]], Awaitable[None]],
        group: GroupCommit | bool,
        *,
        largest: int | None,
    ) -> Coalescer[Any, Any] | None:
        """The coalescer of a strategy's group mode (``None`` when ungrouped): one flush in
        flight, batches of at most ``largest`` (the strategy's limit) or the group's
        ``max_size`` callers.

        Raises:
            ConfigurationError: ``group`` is neither a bool nor a ``GroupCommit``, or asks for
                groups larger than ``largest``.
        """
        grouping = group_commit(group)
        asked = grouping.max_size if grouping is not None else None
        if largest is not None and asked is not None and asked > largest:
            raise ConfigurationError(
                f"{type(self).__name__} commits at most {largest} calls per request:"
                f" GroupCommit(max_size={asked})"
            )
        if grouping is None:
            return None
        return Coalescer(
            flush,
            max_batch=grouping.max_size or largest,
            window_secs=float(grouping.window_secs),
            name=f"{type(self).__name__}({self.key!r}, group=True)",
            sleep=self.store.clock.sleep,
        )

    async def _through(
        self,
        group: Coalescer[R, T] | None,
        commit: Callable[[list[Waiter[R, T]]], Awaitable[None]],
        request: R,
    ) -> T:
        """Serve one call: through the group's coalescer when grouped, else by committing a
        group of one in the caller's own task (the same commit code either way). While the
        endpoint is down the call fails at once, even behind a commit still in flight."""
        endpoint = self.store.endpoint
        if endpoint.is_down():
            raise endpoint.refused(f"{type(self).__name__}({self.key!r})")
        if not self._writes_checked:
            await self._check_writes()
        if group is not None:
            return await group.submit(request)
        waiter: Waiter[R, T] = Waiter(request, asyncio.get_running_loop().create_future())
        try:
            await commit([waiter])
        except BaseException:
            if waiter.future.done() and not waiter.future.cancelled():
                waiter.future.exception()  # retrieved: the error raised here supersedes it
            raise
        return waiter.future.result()


class ConditionalCounterStrategy(GroupCommitStrategy):
    """Base of the strategies that move the counter item with a conditional write on the value
    last seen (optimistic, transactional): they keep that item, and queue on it across
    processes when one write of theirs is on its way at a time: their `Turn`
    (`aioseq.strategies._turn`), handed to the item, whose place they keep while callers
    wait, give up, and leave on close.

    Parameters: as `GroupCommitStrategy`.
    """

    _item: TrackedCounterItem
    _turn: Turn

    def __init__(
        self,
        store: Store,
        key: str,
        *,
        max_value: int = MAX_NUMBER,
        max_in_flight: int | None = 1,
    ) -> None:
        super().__init__(store, key, max_value=max_value, max_in_flight=max_in_flight)
        #: This writer's side of the counter's queue of writers (fairness across processes).
        self._turn = Turn(store, self.key)
        # One write on its way at a time (max_in_flight=1, or grouped: see _grouper): only
        # then may this object queue on its counter item (one place per writer).
        self._turn.enabled = max_in_flight == 1
        self._pause_secs = self._turn.pause_secs
        self._item = TrackedCounterItem(
            store,
            self.key,
            self._item.numbering,
            self._item.max_value,  # (a value limit)
            self._turn,
        )

    def _grouper(
        self,
        flush: Callable[[list[Waiter[Any, Any]]], Awaitable[None]],
        group: GroupCommit | bool,
        *,
        largest: int | None,
    ) -> Coalescer[Any, Any] | None:
        coalescer = super()._grouper(flush, group, largest=largest)
        if coalescer is not None:
            self._turn.enabled = True  # one flush, so one write, at a time
        return coalescer

    async def evict(self) -> NumbersHeld:
        """Forget the counter item it last saw (a caller that still holds this object reads
        it again on its next call). No request; nothing returned, nothing wasted."""
        self._item.saw(None, known=False)
        self._turn.give_up(self._wants_place)  # (none normally: commits give theirs up)
        return NumbersHeld()

    async def aclose(self) -> None:
        """As `GroupCommitStrategy.aclose()`, then takes a place it holds in the counter's
        queue out (an ``UpdateItem``, a ``GetItem`` first when the queue is not known)."""
        await super().aclose()
        await self._item.leave()  # a place in the counter's queue nobody will use

    def _top_up(
        self, batch: list[Waiter[Any, Any]], *budgets: tuple[int, Callable[[Any], int]]
    ) -> None:
        """Add to ``batch`` the callers waiting in this object's group that fit every budget
        ``(room, size)``: first the numbers ``room`` (the size its place in the counter's
        queue was taken for, less what ``batch`` takes), each caller taking ``size(request)``
        of it; the writers behind predicted that size, and the callers a commit was queued
        for may have gone (a deadline), so those behind them take their place. (A second
        budget: the transactional strategy's actions.)"""
        group = self._group
        if group is None or any(room <= 0 for room, _ in budgets):
            return
        left = [room for room, _ in budgets]
        callers = sum(w.waiting for w in batch)

        def fits(request: Any) -> bool:
            nonlocal callers
            wanted = [size(request) for _, size in budgets]
            if any(w > room for w, room in zip(wanted, left, strict=True)) or (
                group.max_batch is not None and callers >= group.max_batch
            ):
                return False
            for i, w in enumerate(wanted):
                left[i] -= w
            callers += 1
            return True

        batch.extend(group.claim(fits))

    def _keep_place(self, batch: list[Waiter[Any, Any]], *, failed: bool) -> None:
        """After a commit: keep this object's place in the counter's queue while callers still
        wait for a write (the next commit uses it), else give it up, off the callers' path
        (`Turn.give_up()`). ``batch``: the commit's callers; ``failed``: it raised (its
        callers get its error, so they no longer wait)."""
        group = self._group
        # Ungrouped, the next caller waiting for its turn inherits the place.
        queued = group.queue if group is not None else ()
        waiting = any(w.waiting for w in queued) or self._waiting_in_flight > 0
        if self._closed or not (waiting or (not failed and any(w.waiting for w in batch))):
            self._turn.give_up(self._wants_place)  # (False once closed)

    def _wants_place(self) -> bool:
        """Whether callers wait for a write of this object's, or one is being made."""
        if self._closed:
            return False
        group = self._group
        if group is not None:
            return group.flushing or any(w.waiting for w in group.queue)
        # (a call that found the turn free took it without waiting: it runs)
        return self._running > 0 or self._waiting_in_flight > 0
