"""The block allocator: numbers served from blocks reserved with one ``ADD`` each (hi/lo)."""

from __future__ import annotations

import logging
import warnings
import weakref
from _thread import get_ident
from collections.abc import Callable
from dataclasses import dataclass

from aioseq._checks import check_count, check_key, check_seconds
from aioseq._coalesce import UNBOUND, Coalescer, ThreadOf, Waiter, running_thread
from aioseq.config import MAX_NUMBER
from aioseq.contracts import NumbersHeld, Store
from aioseq.errors import ConfigurationError, NumberOutOfRange, StoreClosed
from aioseq.numbering import Numbering, numbering_for
from aioseq.observe import Observer, RefillEvent, WasteEvent, WasteReason, notify
from aioseq.strategies.atomic import AtomicCounter

__all__ = ["AllocatorStatistics", "BlockAllocator"]

log = logging.getLogger("aioseq")


@dataclass(frozen=True)
class AllocatorStatistics:
    """A snapshot of a [`BlockAllocator`][aioseq.BlockAllocator]'s work.

    Attributes:
        handed_out: numbers given to callers.
        reserved: numbers reserved from DynamoDB (the sum of all ``ADD``s).
        returned: numbers given back to the counter on close.
        wasted: reserved numbers that will never be handed out: skipped so that a
            ``next_many`` range stays contiguous, or left unused at close and not given back.
        available: reserved numbers not handed out yet.
        refills: ``ADD`` requests made (a prefetch is one).
        refills_waited: calls that had to wait for a refill instead of being served at once.
        block_size: the current block size.
        rate: numbers handed out per second, as last measured (0.0 before two refills).
        runway_secs: seconds the numbers available last at ``rate`` (``None`` before a rate is
            measured).
        headroom: numbers left to reserve before ``max_value`` (``None``: no ``max_value``).
    """

    handed_out: int
    reserved: int
    returned: int
    wasted: int
    available: int
    refills: int
    refills_waited: int
    block_size: int
    rate: float = 0.0
    runway_secs: float | None = None
    headroom: int | None = None


class BlockAllocator:
    """Numbers for one counter key, served from memory out of blocks reserved ahead of need.

    One ``UpdateItem ADD b`` on the counter item (an [`AtomicCounter`][aioseq.AtomicCounter])
    reserves a block of ``b`` values; ``next()`` hands them out in arrival order, without a
    request. Callers that find the block empty wait together for one refill (one ``ADD`` in
    flight per allocator); below ``prefetch_at`` of a block (or the runway) the next block is
    reserved in the background; block sizes follow demand; ``aclose()`` gives the unused tail
    back if nobody reserved after it. The counter item records the allocator's
    [numbering][aioseq.numbering]. See [The block allocator](../allocator.md).

    Guarantees:
        - unique: always, across processes (the blocks come from ``ADD``).
        - gapless: no. A restart loses what was reserved and not handed out unless ``aclose()``
          gave it back; ``next_many`` may skip numbers to stay contiguous; a caller cancelled
          after its refill served it and before it resumed loses its numbers (counted as
          wasted, ``"cancelled"``). A caller cancelled while it waits takes nothing.
        - ordered: increasing within one allocator; across processes only block by block.
        - crash: costs the unused part of the reserved blocks (two at most, or the runway).

    Cost: one ``UpdateItem`` (1 WCU) per block; ``next()`` from a block costs no request.

    Parameters:
        store, key: the store and the counter key.
        block_size, min_block_size, max_block_size: the first block's size and the bounds of
            demand-sized blocks (>= 1).
        target_refill_interval_secs: the wanted time between refills, in seconds (on the
            store's [clock][aioseq.clock]); ``None`` keeps ``block_size`` fixed.
        prefetch_at: reserve the next block when fewer than this fraction of a block is left
            (0 <= prefetch_at < 1; 0 disables prefetch).
        runway_secs: keep at least this many seconds of numbers, at the measured rate,
            reserved ahead (``None``, the default, or ``0``: the prefetch alone).
        stride, offset: numbers are ``offset + (k - 1) * stride`` for the counter's values
            ``k = 1, 2, ...`` (``stride >= 1``, ``0 <= offset <= max_value``). Under
            ``regions=``, they become ``stride * slots`` and ``offset + slot * stride``.
        max_value: the highest number handed out (1 .. ``10**38 - 1``, the default); a block
            that would pass it is never reserved (numbers above the last block may stay unused).

    Raises:
        ConfigurationError: a bad argument.
    """

    # Slots: next() reads five attributes, each a fixed offset (an instance dict of this size
    # no longer shares its keys, so every read would be a dict look-up).
    # fmt: off
    __slots__ = (
        "__weakref__",
        "_base",
        "_block_size",
        "_clock",
        "_close_finished",
        "_closed",
        "_coalescer",
        "_counter",
        "_end_k",
        "_evicted",
        "_handed_out_at_last_refill",
        "_handed_out_at_refill_start",
        "_last_refill_at",
        "_loop_state",
        "_low_water",
        "_next_k",
        "_prefetch_k",
        "_rate",
        "_refill_started",
        "_refills",
        "_refills_waited",
        "_reserved",
        "_returned",
        "_spare",
        "_spare_count",
        "_top",
        "_waiting",
        "_warned_headroom",
        "_warned_runway",
        "_wasted",
        "key",
        "max_block_size",
        "max_value",
        "min_block_size",
        "offset",
        "prefetch_at",
        "runway_secs",
        "stride",
        "target_refill_interval_secs",
    )
    # fmt: on

    def __init__(
        self,
        store: Store,
        key: str,
        *,
        block_size: int = 100,
        min_block_size: int = 1,
        max_block_size: int = 100_000,
        target_refill_interval_secs: float | None = 10.0,
        prefetch_at: float = 0.5,
        stride: int = 1,
        offset: int = 1,
        max_value: int = MAX_NUMBER,
        runway_secs: float | None = None,
    ) -> None:
        self.key = check_key(key)
        if runway_secs == 0 and not isinstance(runway_secs, bool):
            runway_secs = None
        if runway_secs is not None:
            check_seconds(runway_secs, "runway_secs")
        for name, value in (
            ("block_size", block_size),
            ("min_block_size", min_block_size),
            ("max_block_size", max_block_size),
        ):
            check_count(value, name, maximum=10**12)
        if not min_block_size <= block_size <= max_block_size:
            raise ConfigurationError("need min_block_size <= block_size <= max_block_size")
        if target_refill_interval_secs is not None and (
            isinstance(target_refill_interval_secs, bool)
            or not isinstance(target_refill_interval_secs, (int, float))
            or not target_refill_interval_secs > 0
        ):
            raise ConfigurationError("target_refill_interval_secs must be a positive number")
        if (
            isinstance(prefetch_at, bool)
            or not isinstance(prefetch_at, (int, float))
            or not 0 <= prefetch_at < 1
        ):
            raise ConfigurationError(f"prefetch_at must be in [0, 1): {prefetch_at!r}")
        check_count(stride, "stride", maximum=10**12)
        check_count(max_value, "max_value")
        if not isinstance(offset, int) or isinstance(offset, bool) or not 0 <= offset <= max_value:
            raise ConfigurationError(f"offset must be an int from 0 to max_value: {offset!r}")
        # The counter item records this allocator's numbering (its Region's share of it under
        # regions=), not its counter's derived one.
        numbering = store.counter_numbering(
            numbering_for(stride=stride, offset=offset, max_value=max_value)
        )
        stride, offset = numbering.stride, numbering.offset
        # The counter value k gives offset + (k - 1) * stride: the last k that fits max_value
        # (one more than max_value itself with offset 0, past what a counter can hold).
        last_k = min((max_value - offset) // stride + 1, MAX_NUMBER)
        # Owned: this allocator closes it, so the store takes in the allocator alone.
        self._counter = AtomicCounter(
            store, key, max_value=last_k, numbering=numbering, adopt=False
        )
        # Numbers reserved under a numbering that lost are not handed out (counted as waste);
        # through a weak reference, so that the counter keeps no cycle back to its allocator
        # (a dropped allocator dies by reference counting).
        self._counter.on_writes_refused = _abandoning(weakref.ref(self))
        self.max_value = max_value
        self.min_block_size = min_block_size
        self.max_block_size = max_block_size
        self.target_refill_interval_secs = target_refill_interval_secs
        self.prefetch_at = float(prefetch_at)
        self.runway_secs = runway_secs
        self._rate = 0.0  # numbers handed out per second since the last refill that succeeded
        # The refill in flight: when it started, and the numbers handed out then.
        self._refill_started, self._handed_out_at_refill_start = 0.0, 0
        # Logged once per shortage; a runway is not short before it first filled up.
        self._warned_runway, self._warned_headroom = True, False
        self.stride = stride
        self.offset = offset
        self._clock = store.clock
        self._block_size = block_size
        self._low_water = int(block_size * self.prefetch_at)
        # Reserved counter values not handed out yet. The current block [_next_k, _end_k) is
        # kept in two ints so that next() stays cheap; further blocks wait in _spare as
        # [lo, hi) pairs, increasing. Adjacent blocks are merged, so a gap between two means
        # another writer reserved there.
        self._next_k = self._end_k = 0
        self._spare: list[list[int]] = []  # a block or two: a list is ~10x smaller than a deque
        self._spare_count = 0
        self._prefetch_k = 0  # next() kicks a prefetch once it hands out this counter value
        self._base = offset - stride  # number = _base + k * stride
        self._top: int | None = None  # the counter's value after our last ADD
        self._coalescer: Coalescer[int, range] = Coalescer(
            self._refill,
            name=f"BlockAllocator({self.key!r})",
            on_abandoned=self._abandoned,
            home=lambda: store.loop,
        )
        self._waiting = self._coalescer.queue
        # Its ``_thread_id``: the thread the bound loop runs in, while it runs (else None;
        # UNBOUND's is always None: before the first call and after the close). See _bind().
        self._loop_state: ThreadOf = UNBOUND
        self._closed = self._evicted = False  # (evicted: dropped by its store, unused since)
        self._close_finished = False
        self._reserved = self._returned = self._wasted = 0
        self._refills = self._refills_waited = 0
        self._last_refill_at: float | None = None
        self._handed_out_at_last_refill = 0
        store.adopt(self)

    # --- taking numbers ---------------------------------------------------------------------

    async def next(self) -> int:
        """The next number: from the current block at once, or after the refill this call
        joins.

        Raises:
            StoreClosed: after [`aclose()`][aioseq.BlockAllocator.aclose] (or the store's).
            WrongEventLoop: from an event loop other than the first one used.
            NumberOutOfRange: the number would pass 38 digits.
            NumberingMismatch: the counter item recorded another numbering (the refill took
                nothing; every caller of it gets the error).
            RetriesExhausted, StoreError: the refill this call waited for failed (every caller
                of that refill gets the error; the allocator stays usable).
        """
        k = self._next_k
        if k < self._end_k and self._loop_state._thread_id == get_ident() and not self._waiting:
            self._next_k = k + 1
            if k >= self._prefetch_k:
                self._coalescer.kick()
            return self._base + k * self.stride
        return (await self._wait_for(1)).start

    async def next_many(self, n: int) -> range:
        """``n`` numbers as one ``range`` (with step ``stride``); contiguous counter values, so
        numbers at the front of a block too short to hold them are skipped (counted as
        wasted) when the next block does not continue it.

        Raises:
            ConfigurationError: ``n`` is not a positive ``int``.
            AioseqError: the errors of [`next()`][aioseq.BlockAllocator.next].
        """
        check_count(n, "n", maximum=10**12)
        if self._loop_state._thread_id == get_ident() and not self._waiting:
            taken = self._take(n)
            if taken is not None:
                if taken[-1] >= self._prefetch_k:
                    self._coalescer.kick()
                return self._numbers(taken)
        return await self._wait_for(n)

    async def _wait_for(self, n: int) -> range:
        """The slow path: check the state, then wait in line for a refill."""
        if self._closed:
            raise StoreClosed(f"{self!r} is closed")
        self._bind()
        self._refills_waited += 1
        return self._numbers(await self._coalescer.submit(n))

    def _bind(self) -> None:
        """Bind to the running event loop (raising WrongEventLoop if it is not the first one).
        The hot path does not ask asyncio for the running loop (a ``getpid()`` call on 3.11,
        more than the rest of ``next()``): it compares the caller's thread with the thread
        the bound loop runs in (see `running_thread()` in `aioseq._coalesce`), so another
        thread, or another loop in this one, takes the slow path, which raises."""
        self._loop_state = running_thread(self._coalescer.check_loop())

    def _numbers(self, values: range) -> range:
        return range(
            self._base + values.start * self.stride,
            self._base + values.stop * self.stride,
            self.stride,
        )

    @property
    def available(self) -> int:
        """Reserved numbers not handed out yet."""
        return self._end_k - self._next_k + self._spare_count

    def _blocks_changed(self) -> None:
        self._prefetch_k = self._end_k + self._spare_count - self._low_water

    def _take(self, n: int) -> range | None:
        """Take ``n`` contiguous counter values from the front, or None if they are not here
        yet. A front block too short for ``n`` is skipped when another block follows it (they
        are not adjacent, or they would have been merged)."""
        while True:
            lo = self._next_k
            if self._end_k - lo >= n:
                self._next_k = lo + n
                return range(lo, lo + n)
            if not self._spare:
                return None  # the next block may continue this one
            self._waste(self._end_k - lo, "skipped")
            self._next_k, self._end_k = self._spare.pop(0)
            self._spare_count -= self._end_k - self._next_k
            self._blocks_changed()

    # --- refilling --------------------------------------------------------------------------

    def _serve(self, batch: list[Waiter[int, range]]) -> None:
        """Serve waiting callers in order from the blocks; stop at the first that cannot be."""
        for waiter in batch:
            if not waiter.waiting:
                continue
            taken = self._take(waiter.request)
            if taken is None:
                return
            waiter.future.set_result(taken)

    async def _refill(self, batch: list[Waiter[int, range]]) -> None:
        """The coalesced flush: serve what the blocks hold, then reserve one block that serves
        the rest of the batch and still leaves the low-water mark: ``max(block_size, demand +
        prefetch_at * block_size)`` numbers (for a prefetch, just a block)."""
        self._serve(batch)
        demand = sum(w.request for w in batch if w.waiting)
        if not demand and self.available >= self._low_water:
            return  # a prefetch that is no longer needed
        self._resize()
        self._warn_when_short()
        size = max(self._block_size, demand + self._low_water)
        if self.runway_secs is not None:  # what the runway lacks, a block at a time
            wanted = demand + self._low_water - self.available
            size = max(self._block_size, min(wanted, self.max_block_size))
        if self._evicted:  # a caller held it across its drop: its store takes it back
            self._evicted = False
            self._counter.store.adopt(self)
        observer = self._counter.store.observer
        waiters = sum(1 for w in batch if w.waiting) if observer is not None else 0
        try:
            reserved = await self._counter.next_many(size)
        except Exception as exc:
            if observer is not None:
                self._report_refill(observer, waiters, range(0), type(exc).__name__)
            raise
        self._refills += 1
        self._reserved += len(reserved)
        self._last_refill_at = self._refill_started
        self._handed_out_at_last_refill = self._handed_out_at_refill_start
        try:
            self._add_block(reserved.start, reserved.stop)
        except NumberOutOfRange as exc:
            if observer is not None:
                self._report_refill(observer, waiters, range(0), type(exc).__name__)
            raise
        self._serve(batch)
        if observer is not None:  # what the block leaves once its waiters are served
            self._report_refill(observer, waiters, reserved)
        if self._close_finished:  # aclose() was cancelled while this ADD was in flight
            self._abandon_blocks()

    def _add_block(self, lo: int, hi: int) -> None:
        self._top = hi - 1
        if self._base + self._top * self.stride > self.max_value:  # servers that skip the condition
            self._waste(hi - lo, "out_of_range")
            raise NumberOutOfRange(self._base + self._top * self.stride)
        if self._spare:
            if self._spare[-1][1] == lo:
                self._spare[-1][1] = hi
            else:
                self._spare.append([lo, hi])
            self._spare_count += hi - lo
        elif self._end_k == lo:
            self._end_k = hi
        elif self._next_k == self._end_k:
            self._next_k, self._end_k = lo, hi
        else:
            self._spare.append([lo, hi])
            self._spare_count += hi - lo
        self._blocks_changed()

    def _report_refill(
        self, observer: Observer, waiters: int, reserved: range, error: str | None = None
    ) -> None:
        """Tell the store's observer of the refill that started at ``_refill_started``, with
        the runway and headroom it leaves."""
        stats = self.statistics()
        event = RefillEvent(
            counter_key=self.key,
            numbers=len(reserved),
            block_size=self._block_size,
            latency_secs=self._clock.now() - self._refill_started,
            waiters=waiters,
            error=error,
            runway_secs=stats.runway_secs,
            headroom=stats.headroom,
        )
        notify(observer.on_refill, event)

    def _waste(self, numbers: int, reason: WasteReason) -> None:
        """Count reserved numbers that will never be handed out (and report them)."""
        if numbers <= 0:
            return
        self._wasted += numbers
        observer = self._counter.store.observer
        if observer is not None:
            notify(observer.on_waste, WasteEvent(self.key, numbers, reason))

    def _abandoned(self, values: range) -> None:
        """A caller was cancelled after its refill served it: its numbers are wasted."""
        self._waste(len(values), "cancelled")

    def _abandon_blocks(self) -> None:
        self._waste(self.available, "abandoned")
        self._next_k = self._end_k = self._spare_count = 0
        self._spare.clear()
        self._blocks_changed()

    def _resize(self) -> None:
        """Demand-sized blocks: see the class docstring. The rate is measured from the start of
        the last refill that succeeded to now."""
        now = self._clock.now()
        handed_out = self.statistics().handed_out
        # Committed as the next window's start only once this refill succeeds: refills that
        # fail (an outage, every call past the mark) would otherwise measure windows of a
        # millisecond, and a runway sized on that noise.
        self._refill_started, self._handed_out_at_refill_start = now, handed_out
        last = self._last_refill_at
        target_interval = self.target_refill_interval_secs
        if last is None or now <= last:
            return
        self._rate = (handed_out - self._handed_out_at_last_refill) / (now - last)
        if target_interval is None:
            self._set_low_water()
            return
        wanted = self._rate * target_interval
        size = min(max(wanted, self._block_size / 2), self._block_size * 2)
        self._block_size = int(min(max(size, self.min_block_size), self.max_block_size))
        self._set_low_water()

    def _warn_when_short(self) -> None:
        """As a refill starts: a warning when the runway is under half its target (refills do
        not keep up, or fail), or a bounded counter has less than a day of numbers left at
        this rate; each once, until it recovers."""
        stats = self.statistics()
        if stats.rate <= 0:
            return
        target = self.runway_secs
        if target is not None:
            runway = stats.runway_secs or 0.0
            if runway < target / 2 and not self._warned_runway:
                self._warned_runway = True
                log.warning(
                    "allocator %r: runway %.0f s, under half its %.0f s", self.key, runway, target
                )
            elif runway >= target * 3 / 4:  # recovered: the next shortage is said again
                self._warned_runway = False
        short = stats.headroom is not None and stats.headroom < stats.rate * 86_400
        if short and not self._warned_headroom:
            log.warning(
                "allocator %r: %d numbers left before max_value %d: under a day at %.1f/s",
                self.key, stats.headroom, self.max_value, stats.rate,
            )  # fmt: skip
        self._warned_headroom = short

    def _set_low_water(self) -> None:
        """The mark below which a refill starts: ``prefetch_at`` of a block, or the runway at
        the measured rate when that is more."""
        low = int(self._block_size * self.prefetch_at)
        if self.runway_secs is not None:
            # At most doubled per refill, as blocks are: a first rate, measured over a burst
            # served in a few milliseconds, would reserve far too much.
            wanted = int(self._rate * self.runway_secs)
            low = max(low, min(wanted, 2 * max(self._low_water, self._block_size)))
        self._low_water = low
        self._blocks_changed()

    async def prefetch(self) -> None:
        """Reserve the next block now if fewer than ``prefetch_at * block_size`` numbers are
        left (or none), and wait until no refill is in flight. Call it at start-up so that the
        first ``next()`` does not wait on the network.

        Raises:
            StoreClosed: the store or this allocator is closed.
            WrongEventLoop: the allocator is used from an event loop other than its first.
        """
        if self._closed:
            raise StoreClosed(f"{self!r} is closed")
        self._bind()
        if self.available <= self._low_water:
            self._coalescer.kick()
        await self._coalescer.wait_idle()

    # --- lifecycle --------------------------------------------------------------------------

    async def aclose(self, *, give_back: bool = True) -> None:
        """Stop handing out numbers: wait for a refill in flight, fail callers still waiting
        with [`StoreClosed`][aioseq.errors.StoreClosed], then (``give_back``) give back the unused
        tail of the last block if nobody reserved after it. Idempotent. What is not given back
        is counted as wasted.

        DynamoDB calls: at most one conditional ``UpdateItem`` (1 WCU).
        """
        if self._closed:
            return
        self._closed = True
        self._loop_state = UNBOUND  # next() takes the slow path, which raises StoreClosed
        try:
            await self._coalescer.close()
            tail = self._tail()
            if give_back and tail is not None and await self._counter.give_back(tail):
                self._returned += len(tail)
                if self._spare:
                    self._spare.pop()
                    self._spare_count -= len(tail)
                else:
                    self._end_k = self._next_k
        finally:
            self._close_finished = True
            self._abandon_blocks()
            if self._reserved:
                log.info(
                    "block allocator %r closed: %d numbers reserved, %d handed out,"
                    " %d given back, %d wasted",
                    self.key,
                    self._reserved,
                    self._reserved - self._returned - self._wasted,
                    self._returned,
                    self._wasted,
                )

    # --- managed by the store (aioseq.contracts.Managed) -------------------------------------

    @property
    def closed(self) -> bool:
        """True once [`aclose()`][aioseq.BlockAllocator.aclose] has begun."""
        return self._closed

    def activity(self) -> tuple[int, ...]:
        """What changes whenever this allocator is used: two equal readings mean it was idle
        between (reading it costs the hot path nothing)."""
        return (self._next_k, self._end_k, self._refills, self._refills_waited, self._spare_count)

    def busy(self) -> bool:
        """A refill in flight, or callers waiting for one."""
        return self._coalescer.flushing or bool(self._waiting)

    async def evict(self) -> NumbersHeld:
        """The store drops this idle allocator: give the unused tail back (the conditional
        write of [`aclose()`][aioseq.BlockAllocator.aclose]) and let go of every block, staying
        usable: a caller that still holds it refills, which hands it back to the store. Returns
        the numbers given back and wasted. The blocks are let go of before the write is awaited,
        so a ``next()`` meanwhile refills instead of taking a number that is being given back."""
        if self._closed or self.busy():
            return NumbersHeld()
        tail = self._tail()
        held = self.available
        self._evicted = True
        self._next_k = self._end_k = self._spare_count = 0
        self._spare.clear()
        self._blocks_changed()
        returned = 0
        try:
            if tail is not None and await self._counter.give_back(tail):
                returned = len(tail)
        except Exception as exc:  # the numbers are counted as wasted, not lost silently
            log.warning(
                "block allocator %r: giving back %d numbers failed: %r", self.key, held, exc
            )
        finally:  # a give-back cut off (the store closing) counts as wasted too
            self._returned += returned
            self._waste(held - returned, "evicted")
        return NumbersHeld(returned=returned, wasted=held - returned)

    def abandon(self) -> None:
        """Closed without a word to DynamoDB (the store's close ran out of time before it got
        here): the numbers held are counted as wasted."""
        self._closed = self._close_finished = True
        self._loop_state = UNBOUND
        self._abandon_blocks()

    def __del__(self, _warn: Callable[..., None] = warnings.warn) -> None:
        if getattr(self, "_closed", True):  # closed, or its __init__ refused its arguments
            return
        held = self._end_k - self._next_k + self._spare_count
        if held > 0:
            _warn(
                f"BlockAllocator({self.key!r}) was garbage-collected holding {held} reserved"
                " numbers it never handed out nor gave back: close it (await aclose(), or its"
                " store's), or take it from the store's block_allocator(), which shares one"
                " per key",
                ResourceWarning,
                source=self,
            )

    def _tail(self) -> range | None:
        """The unused counter values that end at the counter's top, if we hold any."""
        if self._top is None:
            return None
        lo, hi = self._spare[-1] if self._spare else (self._next_k, self._end_k)
        return range(lo, hi) if lo < hi == self._top + 1 else None

    async def __aenter__(self) -> BlockAllocator:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    @property
    def counter(self) -> AtomicCounter:
        """The atomic counter that reserves the blocks (its statistics count the retries)."""
        return self._counter

    @property
    def numbering(self) -> Numbering:
        """The numbering this allocator records on its counter item and requires there."""
        return self._counter.numbering

    @property
    def block_size(self) -> int:
        """The current block size."""
        return self._block_size

    def numbers_held(self) -> NumbersHeld:
        """Numbers reserved, handed out, returned and wasted (a store sums them over every
        key it shares)."""
        reserved, returned, wasted = self._reserved, self._returned, self._wasted
        handed_out = reserved - returned - wasted - self.available
        return NumbersHeld(reserved, handed_out, returned, wasted)

    def statistics(self) -> AllocatorStatistics:
        """A frozen snapshot of the allocator's work."""
        available = self.available
        rate = self._rate
        headroom = None
        if self.max_value < MAX_NUMBER:  # unreserved counter values, and those held here
            headroom = self._counter.max_value - (self._top or 0) + available
        return AllocatorStatistics(
            handed_out=self._reserved - self._returned - self._wasted - available,
            reserved=self._reserved,
            returned=self._returned,
            wasted=self._wasted,
            available=available,
            refills=self._refills,
            refills_waited=self._refills_waited,
            block_size=self._block_size,
            rate=rate,
            runway_secs=available / rate if rate > 0 else None,
            headroom=headroom,
        )

    async def current(self) -> int:
        """The last number reserved by anyone (0 before the first): the counter item's value
        as a number of the numbering it records
        ([`AtomicCounter.last_number()`][aioseq.AtomicCounter.last_number]); with ``stride=3
        offset=2`` and a value of 2, 5. One ``GetItem`` (1 RCU)."""
        return await self._counter.last_number()

    def __repr__(self) -> str:
        pairs = [(self._next_k, self._end_k), *map(tuple, self._spare)]
        blocks = ", ".join(f"[{lo}, {hi})" for lo, hi in pairs if lo < hi) or "none"
        state = "closed" if self._closed else ("refilling" if self._coalescer.flushing else "idle")
        return (
            f"<BlockAllocator key={self.key!r} {state} blocks={blocks}"
            f" available={self.available} block_size={self._block_size}"
            f" waiting={len(self._waiting)}>"
        )


def _abandoning(allocator: weakref.ref[BlockAllocator]) -> Callable[[], None]:
    """What a counter calls when it refuses writes for good: its allocator, if alive, lets go
    of its blocks."""

    def abandon() -> None:
        found = allocator()
        if found is not None:
            found._abandon_blocks()

    return abandon
