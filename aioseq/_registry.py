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
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from aioseq.allocator import BlockAllocator
from aioseq.errors import ConfigurationError, WrongEventLoop
from aioseq.observe import EvictEvent, Observer, notify

__all__ = ["EVICTIONS_IN_FLIGHT", "Registry", "Shareable", "StoreStatistics"]

log = logging.getLogger("aioseq")

#: The most evictions (each at most one conditional ``UpdateItem``) a sweep runs at once.
EVICTIONS_IN_FLIGHT = 32


class Shareable(Protocol):
    """What a shared object offers the registry (strategies and allocators do)."""

    key: str
    _closed: bool

    def _activity(self) -> tuple[int, ...]: ...

    def _busy(self) -> bool: ...

    async def _evict(self) -> tuple[int, int]: ...


S = TypeVar("S", bound=Shareable)


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
    __slots__ = ("args", "kwargs", "name", "obj", "seen")

    def __init__(
        self, name: str, obj: Shareable, args: tuple[Any, ...], kwargs: Mapping[str, Any]
    ) -> None:
        self.name = name
        self.obj = obj
        self.args = args
        self.kwargs = kwargs
        self.seen: tuple[int, ...] | None = None  # its activity at the last sweep


@dataclass(frozen=True)
class _Dropped:
    """What the registry remembers of a dropped allocator (never the allocator itself): how
    to share it again, and its numbers when it was dropped (counted in
    ``Registry._dropped``)."""

    name: str
    args: tuple[Any, ...]
    kwargs: Mapping[str, Any]
    counted: tuple[int, int, int, int]


class Registry:
    """One shared object per ``(factory name, counter key)``, dropped when idle.

    Parameters:
        idle_secs: how long an object may go unused before it is dropped (``None``: never).
        observer: told of each drop (``on_evict``).
    """

    def __init__(
        self,
        idle_secs: float | None,
        observer: Observer | None,
        after_sweep: Callable[[], None] = lambda: None,
    ) -> None:
        self.idle_secs = idle_secs
        self.observer = observer
        self._after_sweep = after_sweep
        #: ``(factory name, key)`` -> its entry. The factories read it for their fast path.
        self.entries: dict[tuple[str, object], _Entry] = {}
        self._peak = 0  # the most entries since the dict was last rebuilt
        #: Dropped objects giving their numbers back now, by ``id``.
        self._dropping: dict[int, Shareable] = {}
        #: Of those, the ``id``s of the ones used again meanwhile (kept once their drop ends).
        self._revived: set[int] = set()
        #: Dropped allocators a caller still holds (for `revive()`); the others die.
        self._dropped_entries: weakref.WeakKeyDictionary[Shareable, _Dropped] = (
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
        # What dropped allocators had done when they were dropped.
        self._dropped = [0, 0, 0, 0]  # reserved, handed out, returned, wasted

    def get(
        self,
        name: str,
        key: object,
        args: tuple[Any, ...],
        kwargs: Mapping[str, Any],
        store: Any,
        cls: Callable[..., S],
        options: Callable[[tuple[Any, ...], Mapping[str, Any]], dict[str, Any]],
    ) -> S:
        """The object shared for ``(name, key)``, made the first time.

        Parameters:
            name: the factory's name.
            key: the counter key (checked by the class when it is made).
            args, kwargs: the factory's arguments, compared with those of the first call.
            store, cls: ``cls(store, *args, **kwargs)`` makes the object (again, after the
                shared one was closed).
            options: the options ``args`` and ``kwargs`` mean, defaults filled in, for the
                comparison when the arguments differ and for the error.

        Raises:
            ConfigurationError: the key's object was made with other options.
            WrongEventLoop: called from another event loop than the store's first.
            whatever ``cls`` raises (a bad key or option).
        """
        entry = self.entries.get((name, key)) if isinstance(key, str) else None
        if entry is not None and not entry.obj._closed:  # closed by its user: make a fresh one
            if entry.args != args or entry.kwargs != kwargs:
                shared, asked = options(entry.args, entry.kwargs), options(args, kwargs)
                if shared != asked:
                    differ = [option for option in shared if shared[option] != asked.get(option)]
                    raise ConfigurationError(
                        f"counter key {key!r} already has a shared {name}() object on this"
                        f" store, with {_shown(shared, differ)}; this call asks for"
                        f" {_shown(asked, differ)}."
                        " Two objects on one key in one process would compete for its counter"
                        " (two allocators each reserving blocks): pass the same options, or"
                        " make a private object with the class itself"
                    )
            # No loop check here (the hot path of per-request code): the object refuses
            # another loop itself, with WrongEventLoop, at its first call there.
            return entry.obj  # type: ignore[return-value]
        loop = self._running_loop()
        obj = cls(store, *args, **kwargs)
        self.entries[(name, obj.key)] = _Entry(name, obj, args, dict(kwargs))
        if loop is not None and self.idle_secs is not None and self._sweeper is None:
            self._sweeper = loop.create_task(self._sweep_forever(), name="aioseq-idle-sweeper")
        return obj

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
            await asyncio.sleep(self.idle_secs)
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
                obj, name = entry.obj, entry.name
                try:
                    returned, wasted = await obj._evict()
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
                now = entry.obj._activity()
                if entry.seen == now and not entry.obj._busy():
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
        """Count a dropped object's numbers among the dropped ones', and remember an allocator
        (weakly) in case a caller that holds it reserves numbers again."""
        counted = _allocator_numbers(entry.obj)
        for i, n in enumerate(counted):
            self._dropped[i] += n
        if isinstance(entry.obj, BlockAllocator):
            self._dropped_entries[entry.obj] = _Dropped(
                entry.name, entry.args, entry.kwargs, counted
            )

    def revive(self, obj: Shareable) -> None:
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
        for i, n in enumerate(dropped.counted):
            self._dropped[i] -= n
        self._keep(_Entry(dropped.name, obj, dropped.args, dropped.kwargs))

    def _keep(self, entry: _Entry) -> None:
        """Keep a dropped object in use again: as the shared object of its key if that has
        none (or a closed one), else apart, dropped again when idle."""
        place = (entry.name, entry.obj.key)
        shared = self.entries.get(place)
        if shared is None or shared.obj._closed:
            self.entries[place] = entry
        else:
            self._strays[(entry.name, id(entry.obj))] = entry

    def statistics(self) -> StoreStatistics:
        """A snapshot: the live objects, and the allocators' numbers."""
        reserved, handed_out, returned, wasted = self._dropped
        live = [*self.entries.values(), *self._strays.values()]
        for obj in [*(entry.obj for entry in live), *self._dropping.values()]:
            r, h, g, w = _allocator_numbers(obj)
            reserved, handed_out, returned, wasted = (
                reserved + r,
                handed_out + h,
                returned + g,
                wasted + w,
            )
        return StoreStatistics(
            live_keys=len(self.entries),
            evictions=self.evictions,
            reserved=reserved,
            handed_out=handed_out,
            returned=returned,
            wasted=wasted,
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


def _allocator_numbers(obj: object) -> tuple[int, int, int, int]:
    """An allocator's numbers reserved, handed out, returned and wasted; zeros for a counter
    (it holds no numbers)."""
    if not isinstance(obj, BlockAllocator):
        return 0, 0, 0, 0
    return obj._numbers_so_far()


def _shown(options: Mapping[str, Any], names: list[str]) -> str:
    """``options`` as keyword arguments, those in ``names`` only."""
    return ", ".join(f"{name}={options[name]!r}" for name in names)
