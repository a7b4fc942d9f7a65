"""The objects a store shares: one per factory and counter key.

``store.block_allocator("invoice-acme-2026")`` called in every request returns the same
allocator, so per-request code shares one block and one group commit, as Meituan Leaf keeps a
map of segment buffers by ``biz_tag`` and PostgreSQL a per-session table of the sequences it
has touched. The registry also drops what nobody uses: every ``idle_secs`` it compares what
each object has done with what it had done at the last look; an object that did nothing in
between (and has nothing in flight) is dropped, within ``2 * idle_secs`` of its last use, and
an allocator gives its unused numbers back first. A caller that still holds a dropped object
may go on using it; the next factory call makes a fresh one. A dropped allocator that reserves
numbers again is taken back (`Registry.revive()`): shared again if its key has no object, else
kept apart until it is idle again, so its block is given back or counted, never collected
with it.
"""

from __future__ import annotations

import asyncio
import logging
import weakref
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from aioseq.clock import Clock
from aioseq.contracts import Managed, NumbersHeld
from aioseq.errors import ConfigurationError, WrongEventLoop
from aioseq.observe import EvictEvent, Observer, notify

__all__ = ["EVICTIONS_IN_FLIGHT", "Registry", "StoreStatistics"]

log = logging.getLogger("aioseq")

M = TypeVar("M", bound=Managed)

#: The most evictions (each at most one conditional ``UpdateItem``) a sweep runs at once.
EVICTIONS_IN_FLIGHT = 32


@dataclass(frozen=True)
class StoreStatistics:
    """A snapshot of the objects a [`DynamoStore`][aioseq.DynamoStore] shares per key.

    Attributes:
        live_keys: objects shared now (one per factory and key).
        evictions: idle objects dropped since the store opened.
        reserved: numbers the block allocators reserved (live ones, and dropped ones up to
            their drop).
        handed_out: numbers they handed out.
        returned: numbers they gave back (at a drop, or on close).
        wasted: numbers they will never hand out (see `WasteReason`).
    """

    live_keys: int
    evictions: int
    reserved: int
    handed_out: int
    returned: int
    wasted: int


class _Entry:
    __slots__ = ("factory", "obj", "options", "seen")

    def __init__(self, factory: str, obj: Managed, options: tuple[Any, ...]) -> None:
        self.factory = factory
        self.obj = obj
        self.options = options
        self.seen: tuple[int, ...] | None = None  # its activity at the last sweep


@dataclass(frozen=True)
class _Dropped:
    """What the registry remembers of a dropped object (never the object itself): how to
    share it again, and its numbers when it was dropped (counted in ``Registry._dropped``)."""

    factory: str
    options: tuple[Any, ...]
    counted: NumbersHeld


class Registry:
    """One shared object per ``(factory name, counter key)``, dropped when idle.

    Parameters:
        idle_secs: how long an object may go unused before it is dropped (``None``: never).
        observer: told of each drop (``on_evict``).
        clock: what the sweeps wait on.
    """

    def __init__(
        self,
        idle_secs: float | None,
        observer: Observer | None,
        clock: Clock,
        after_sweep: Callable[[], None] = lambda: None,
    ) -> None:
        self.idle_secs = idle_secs
        self.observer = observer
        self.clock = clock
        self._after_sweep = after_sweep
        #: ``(factory name, key)`` -> its entry. The factories read it for their fast path.
        self.entries: dict[tuple[str, object], _Entry] = {}
        self._peak = 0  # the most entries since the dict was last rebuilt
        #: Dropped objects giving their numbers back now, by ``id``.
        self._dropping: dict[int, Managed] = {}
        #: Of those, the ``id``s of the ones used again meanwhile (kept once their drop ends).
        self._revived: set[int] = set()
        #: Dropped objects a caller still holds (for `revive()`); the others die.
        self._dropped_entries: weakref.WeakKeyDictionary[Managed, _Dropped] = (
            weakref.WeakKeyDictionary()
        )
        #: Revived objects whose key had another object by then, by ``(name, id)``: swept
        #: as the entries are.
        self._strays: dict[tuple[str, object], _Entry] = {}
        self._loop: asyncio.AbstractEventLoop | None = None
        self._sweeper: asyncio.Task[None] | None = None
        self._sweeping: asyncio.Future[int] | None = None
        self._closed = False
        self.evictions = 0
        # The numbers of the dropped objects when they were dropped.
        self._dropped = NumbersHeld()

    def shared(
        self, factory: str, key: object, options: tuple[Any, ...], names: tuple[str, ...]
    ) -> Any:
        """The open object shared for ``(factory, key)``, or ``None`` when there is none
        (then the caller makes one and `add()`s it).

        Parameters:
            factory: the factory's name.
            key: the counter key (checked by the class when it is made).
            options: the factory's other arguments, defaults filled in, compared with those
                the shared object was made with.
            names: the options' names, for the error.

        Raises:
            ConfigurationError: the key's object was made with other options.
            WrongEventLoop: no object yet, and called from another event loop than the
                store's first.
        """
        entry = self.entries.get((factory, key)) if isinstance(key, str) else None
        if entry is not None and not entry.obj.closed:  # closed by its user: make a fresh one
            if entry.options != options:
                differ = [i for i, option in enumerate(entry.options) if option != options[i]]
                raise ConfigurationError(
                    f"counter key {key!r} already has a shared {factory}() object on this"
                    f" store, with {_shown(names, entry.options, differ)}; this call asks for"
                    f" {_shown(names, options, differ)}."
                    " Two objects on one key in one process would compete for its counter"
                    " (two allocators each reserving blocks): pass the same options, or"
                    " make a private object with the class itself"
                )
            # No loop check here (the hot path of per-request code): the object refuses
            # another loop itself, with WrongEventLoop, at its first call there.
            return entry.obj
        self._running_loop()
        return None

    def add(self, factory: str, options: tuple[Any, ...], obj: M) -> M:
        """Share ``obj``, just made by ``factory`` with ``options``, for its key."""
        self.entries[(factory, obj.key)] = _Entry(factory, obj, options)
        loop = self._running_loop()
        if loop is not None and self.idle_secs is not None and self._sweeper is None:
            self._sweeper = loop.create_task(self._sweep_forever(), name="aioseq-idle-sweeper")
        return obj

    @property
    def loop(self) -> asyncio.AbstractEventLoop | None:
        """The event loop the shared objects live in: the first one a factory was called in
        (``None`` before)."""
        return self._loop

    def _running_loop(self) -> asyncio.AbstractEventLoop | None:
        """The running loop (``None`` outside one), bound at the first call inside one.

        Raises:
            WrongEventLoop: it is not the loop bound first.
        """
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return None
        if self._loop is None:
            self._loop = loop
        elif loop is not self._loop:
            raise WrongEventLoop(
                "this DynamoStore shares its counters in another event loop; open one store"
                " per event loop"
            )
        return loop

    async def _sweep_forever(self) -> None:
        assert self.idle_secs is not None
        while not self._closed:
            await self.clock.sleep(self.idle_secs)
            # A close waits for the sweep under way rather than cancel its give-backs.
            self._sweeping = asyncio.ensure_future(self.sweep())
            await asyncio.shield(self._sweeping)

    async def sweep(self) -> int:
        """Drop every object that did nothing since the last sweep and has nothing in
        flight (an allocator gives its unused numbers back first, at most
        `EVICTIONS_IN_FLIGHT` at once); note what the others have done. Returns how many
        were dropped."""
        queue = self._take_idle()
        dropped = len(queue)
        dropping = self._dropping

        async def worker() -> None:
            while queue:
                entry = queue.popleft()
                obj, name = entry.obj, entry.factory
                try:
                    numbers = await obj.evict()
                    returned, wasted = numbers.returned, numbers.wasted
                except Exception as exc:  # logged; the sweeper goes on
                    log.warning("dropping idle %s(%r) failed: %r", name, obj.key, exc)
                    returned = wasted = 0
                finally:
                    del dropping[id(obj)]
                    if id(obj) in self._revived:  # used again while it gave its numbers back
                        self._revived.discard(id(obj))
                        self._keep(entry)
                    else:
                        self._count_drop(entry)
                    self.evictions += 1
                if self.observer is not None:
                    notify(self.observer.on_evict, EvictEvent(obj.key, name, returned, wasted))
                del obj, entry

        # A few workers taking the dropped objects in turn, not a task each: 100,000 keys
        # dropped at once start EVICTIONS_IN_FLIGHT tasks, not 100,000.
        await asyncio.gather(*(worker() for _ in range(min(EVICTIONS_IN_FLIGHT, dropped))))
        self._shrink()
        self._after_sweep()
        return dropped

    def _take_idle(self) -> deque[_Entry]:
        """Take the idle objects out of the entries (the next factory call makes a fresh
        one) and out of the strays, also kept in ``_dropping`` until given back. Nothing
        else of the sweep holds them, so each dies by reference counting once its give-back
        is done."""
        idle: deque[_Entry] = deque()
        for table in (self.entries, self._strays):
            for place, entry in list(table.items()):
                now = entry.obj.activity()
                if entry.seen == now and not entry.obj.busy():
                    del table[place]
                    self._dropping[id(entry.obj)] = entry.obj
                    idle.append(entry)
                else:
                    entry.seen = now
        return idle

    def _shrink(self) -> None:
        """Rebuild the table of entries once it holds under a quarter of its peak: a dict
        keeps the room of its largest size, so 100,000 keys dropped would otherwise keep
        megabytes."""
        size = len(self.entries)
        self._peak = max(self._peak, size)
        if self._peak > 1024 and size < self._peak // 4:
            self.entries = dict(self.entries)
            self._peak = size

    def _count_drop(self, entry: _Entry) -> None:
        """Count a dropped object's numbers among the dropped ones', and remember it (weakly)
        in case a caller that holds it takes it back to the store (an allocator reserving
        numbers again)."""
        counted = entry.obj.numbers_held()
        self._dropped = _plus(self._dropped, counted)
        self._dropped_entries[entry.obj] = _Dropped(entry.factory, entry.options, counted)

    def revive(self, obj: Managed) -> None:
        """A dropped object is in use again (an allocator reserving numbers): keep it, as the
        shared object of its key if that has none (or a closed one), else apart, and drop it
        again when it is idle; its numbers count among the live ones again. Nothing for an
        object that was not dropped."""
        if id(obj) in self._dropping:  # its drop is under way: kept when that ends
            self._revived.add(id(obj))
            return
        if not self._dropped_entries:  # (the common case: a new object)
            return
        dropped = self._dropped_entries.pop(obj, None)
        if dropped is None:
            return
        self._dropped = _plus(self._dropped, dropped.counted, sign=-1)
        self._keep(_Entry(dropped.factory, obj, dropped.options))

    def _keep(self, entry: _Entry) -> None:
        """Keep a dropped object in use again: as the shared object of its key if that has
        none (or a closed one), else apart, dropped again when idle."""
        place = (entry.factory, entry.obj.key)
        shared = self.entries.get(place)
        if shared is None or shared.obj.closed:
            self.entries[place] = entry
        else:
            self._strays[(entry.factory, id(entry.obj))] = entry

    def statistics(self) -> StoreStatistics:
        """A snapshot: the live objects, and the allocators' numbers."""
        numbers = self._dropped
        live = [*self.entries.values(), *self._strays.values()]
        for obj in [*(entry.obj for entry in live), *self._dropping.values()]:
            numbers = _plus(numbers, obj.numbers_held())
        return StoreStatistics(
            live_keys=len(self.entries),
            evictions=self.evictions,
            reserved=numbers.reserved,
            handed_out=numbers.handed_out,
            returned=numbers.returned,
            wasted=numbers.wasted,
        )

    async def aclose(self) -> None:
        """Stop sweeping, after the sweep under way has given its numbers back (the store
        bounds the wait, and closes the objects themselves)."""
        self._closed = True
        if self._sweeper is not None:
            self._sweeper.cancel()
            await asyncio.gather(self._sweeper, return_exceptions=True)
            self._sweeper = None
        if self._sweeping is not None:
            await asyncio.gather(self._sweeping, return_exceptions=True)


def _plus(a: NumbersHeld, b: NumbersHeld, *, sign: int = 1) -> NumbersHeld:
    return NumbersHeld(
        a.reserved + sign * b.reserved,
        a.handed_out + sign * b.handed_out,
        a.returned + sign * b.returned,
        a.wasted + sign * b.wasted,
    )


def _shown(names: tuple[str, ...], options: tuple[Any, ...], which: list[int]) -> str:
    """The options at the indexes ``which``, as keyword arguments."""
    return ", ".join(f"{names[i]}={options[i]!r}" for i in which)
