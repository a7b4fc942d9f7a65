"""Single flight with batching: one request in flight per key; callers that arrive while it
flies wait together and are served by the next one.

This is the one coalescing mechanism in aioseq: the block allocator uses it to turn a burst of
``next()`` calls into one ``ADD``, and group commit uses it to turn concurrent ``put()`` calls
into one transaction. It is database *group commit*: the first caller does not wait for
company (the flush starts at once), and everybody who arrives during a flush forms the next
batch.
"""

from __future__ import annotations

import asyncio
import weakref
from _thread import get_ident
from collections import deque
from collections.abc import Awaitable, Callable
from types import MethodType
from typing import Generic, Protocol, TypeVar, cast

from aioseq.errors import StoreClosed, WrongEventLoop

R = TypeVar("R")
T = TypeVar("T")
F = TypeVar("F", bound=Callable[..., object])

__all__ = [
    "UNBOUND",
    "Coalescer",
    "LoopBinding",
    "ThreadOf",
    "Waiter",
    "held_weakly",
    "running_thread",
]


class LoopBinding:
    """The event loop an object belongs to, bound at its first use (aiolimiter's ``_loop``):
    its futures, locks and tasks live there, so another loop is refused.

    Parameters:
        owner: how the object is named in the error.
        home: the loop the object must first be used in, if one is known then (its store's
            client's loop): a first use elsewhere is refused too.
    """

    __slots__ = ("home", "loop", "owner")

    def __init__(
        self,
        owner: str,
        home: Callable[[], asyncio.AbstractEventLoop | None] | None = None,
    ) -> None:
        self.owner = owner
        self.home = home
        self.loop: asyncio.AbstractEventLoop | None = None

    def check(self) -> asyncio.AbstractEventLoop:
        """The running loop, bound now if nothing is bound yet.

        Raises:
            WrongEventLoop: the running loop is not the bound one (or, at the first use, not
                the ``home`` loop).
        """
        loop = asyncio.get_running_loop()
        if self.loop is None:
            home = self.home() if self.home is not None else None
            if home is not None and home is not loop:
                # (its store's client lives there: a request from here would fail, or hang)
                raise WrongEventLoop(
                    f"{self.owner} is used in another event loop than its DynamoStore's:"
                    " open one DynamoStore per event loop, in that loop, and make the object"
                    " from it there"
                )
            self.loop = loop
        elif loop is not self.loop:
            raise WrongEventLoop(
                f"{self.owner} belongs to the event loop it was first used in, not this one:"
                " open one DynamoStore per event loop, in that loop, and make the object from"
                " it there (a store hands back the same object for a key, so another factory"
                " call on this store does not help)"
            )
        return loop


class ThreadOf(Protocol):
    """What a hot path reads to tell, without asking asyncio, whether it runs on its bound
    loop: ``_thread_id`` is the thread the loop runs in while it runs, else ``None``."""

    @property
    def _thread_id(self) -> int | None: ...


class _Unbound:
    __slots__ = ()
    _thread_id = None


#: No loop bound (or the object is closed): its thread is never the caller's.
UNBOUND: ThreadOf = _Unbound()


class _RunningIn:
    """A stand-in for a loop that is not an ``asyncio.BaseEventLoop`` (uvloop's): the bound
    thread while ``loop.is_running()``, else ``None`` (one call more per read)."""

    __slots__ = ("_is_running", "_thread")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._is_running = loop.is_running
        self._thread = get_ident()

    @property
    def _thread_id(self) -> int | None:
        return self._thread if self._is_running() else None


def running_thread(loop: asyncio.AbstractEventLoop) -> ThreadOf:
    """The running ``loop`` (bound in the calling thread) as a `ThreadOf`.

    ``BaseEventLoop.run_forever`` sets ``loop._thread_id`` to its thread for the run and back
    to ``None`` when it stops, so ``running_thread(loop)._thread_id == get_ident()`` holds
    exactly while ``loop`` runs in the caller's thread, and a thread runs one loop at a time:
    the caller is on ``loop``."""
    # Cheaper than asyncio.get_running_loop(), which makes a getpid() system call on 3.11.
    return cast(ThreadOf, loop) if isinstance(loop, asyncio.BaseEventLoop) else _RunningIn(loop)


class Waiter(Generic[R, T]):
    """One caller waiting in a `Coalescer`: its ``request`` and the future it awaits."""

    __slots__ = ("future", "request")

    def __init__(self, request: R, future: asyncio.Future[T]) -> None:
        self.request = request
        self.future = future

    @property
    def waiting(self) -> bool:
        """True until the waiter got its result or error, or was cancelled."""
        return not self.future.done()


Flush = Callable[[list[Waiter[R, T]]], Awaitable[None]]


class _WeakMethod:
    """A bound method held without its object: ``()`` gives it back, or ``None`` once the
    object is gone. Smaller than ``weakref.WeakMethod`` (two slots; the methods of one object
    share its one plain weak reference), as a store may hold 100,000 owners."""

    __slots__ = ("function", "owner")

    def __init__(self, method: MethodType) -> None:
        self.owner = weakref.ref(method.__self__)
        self.function = method.__func__

    def __call__(self) -> MethodType | None:
        owner = self.owner()
        return None if owner is None else MethodType(self.function, owner)


def held_weakly(function: F) -> Callable[[], F | None]:
    """A getter of ``function`` that does not keep a bound method's object alive.

    An object that owns a coalescer and gives it its own bound methods would otherwise make a
    reference cycle (object -> coalescer -> bound method -> object): dropped, it would live
    on until a full collection of the cyclic garbage collector, with all it holds. Held
    weakly, it dies by reference counting the moment its last user lets go."""
    if isinstance(function, MethodType):
        return cast("Callable[[], F | None]", _WeakMethod(function))
    return lambda: function


class Coalescer(Generic[R, T]):
    """Runs ``flush(batch)`` for waiting callers, one flush at a time.

    ``flush`` receives the callers in arrival order (at most ``max_batch`` of them, skipping
    those already cancelled) and resolves the futures of those it serves. Those it leaves
    waiting go back to the front of the queue, in order, for the next flush. If ``flush``
    raises, every caller of its batch still waiting gets that error (the next callers get a
    fresh flush). A caller that is cancelled just stops waiting: the flush runs in its own task,
    so one caller's cancellation never cancels the request the others wait on (asyncpg's pool
    uses ``asyncio.shield`` to the same end), and ``flush`` sees ``waiter.waiting`` turn False.

    Parameters:
        flush: the coroutine function that serves a batch. A bound method is held weakly
            (as ``on_abandoned``): the object that owns the coalescer and passes its own
            methods is not kept alive by them, so it dies by reference counting; once it is
            gone, callers still queued get :class:`~aioseq.errors.StoreClosed`.
        max_batch: the most waiters handed to one flush (``None``: all).
        window_secs: before a flush takes its batch, wait this long for company unless the
            batch is full already (0, the default: a lone caller is never delayed).
        name: for the flush task's name.
        on_abandoned: called with a result that was set for a caller who was cancelled before
            it could take it (the result was given, the caller was gone): the allocator counts
            such numbers, so every number is accounted for.
        home: the loop its first use must run in, when known (see `LoopBinding`).
        sleep: what the window is waited on (the store's clock's ``sleep``).
    """

    def __init__(
        self,
        flush: Flush[R, T],
        *,
        max_batch: int | None = None,
        window_secs: float = 0.0,
        name: str = "",
        on_abandoned: Callable[[T], None] | None = None,
        home: Callable[[], asyncio.AbstractEventLoop | None] | None = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self._flush = held_weakly(flush)
        self._sleep = sleep
        self._on_abandoned = None if on_abandoned is None else held_weakly(on_abandoned)
        self._max_batch = max_batch
        self._window_secs = window_secs
        self._name = name or "aioseq-coalescer"
        #: The waiting callers, oldest first. Read-only outside this class: a hot path may test
        #: it for emptiness (cancelled callers stay in it until a flush drops them).
        self.queue: deque[Waiter[R, T]] = deque()
        self._task: asyncio.Task[None] | None = None
        self._binding = LoopBinding(self._name, home)
        self._kicked = False
        self._closed = False

    @property
    def max_batch(self) -> int | None:
        """The most waiters handed to one flush (``None``: all)."""
        return self._max_batch

    @property
    def flushing(self) -> bool:
        """True while a flush task is running."""
        return self._task is not None

    def check_loop(self) -> asyncio.AbstractEventLoop:
        """The event loop this coalescer belongs to (bound at first use).

        Raises:
            WrongEventLoop: called from another event loop.
        """
        return self._binding.check()

    async def submit(self, request: R) -> T:
        """Queue ``request`` and wait for the flush that serves it.

        Raises:
            StoreClosed: after `close()`.
            WrongEventLoop: from another event loop.
            whatever the flush raised for this batch.
        """
        loop = self.check_loop()
        if self._closed:
            raise StoreClosed(f"{self._name} is closed")
        waiter: Waiter[R, T] = Waiter(request, loop.create_future())
        self.queue.append(waiter)
        self._start()
        try:
            return await waiter.future
        except asyncio.CancelledError:
            future = waiter.future
            on_abandoned = self._on_abandoned() if self._on_abandoned is not None else None
            if (
                on_abandoned is not None
                and future.done()
                and not future.cancelled()
                and future.exception() is None
            ):
                on_abandoned(future.result())
            raise

    def claim(self, fits: Callable[[R], bool]) -> list[Waiter[R, T]]:
        """Take waiting callers from the front of the queue, in order, while ``fits`` says yes
        to their requests (it is asked once per caller, and may count what it took): a flush
        that serves them tops up its batch with them (append them to it, so that an error of
        the flush reaches them too). Cancelled callers met on the way are dropped."""
        claimed: list[Waiter[R, T]] = []
        queue = self.queue
        while queue:
            waiter = queue[0]
            if not waiter.waiting:
                queue.popleft()
            elif fits(waiter.request):
                claimed.append(queue.popleft())
            else:
                break
        return claimed

    def kick(self) -> None:
        """Run a flush even if nobody waits (a prefetch), unless one is running already.
        Must be called from the coalescer's event loop, inside a coroutine."""
        if self._closed or self._task is not None:
            return
        self.check_loop()
        self._kicked = True
        self._start()

    def _start(self) -> None:
        if self._task is None:
            assert self._binding.loop is not None
            self._task = self._binding.loop.create_task(self._run(), name=self._name)

    async def _run(self) -> None:
        flushed = False  # once closed, the flush already started runs its batch, no other
        try:
            while (self._kicked or self.queue) and not (self._closed and flushed):
                if flushed:
                    # Let the callers the last flush served run first: those that call again
                    # at once join this batch instead of waiting out a flush of their own.
                    await asyncio.sleep(0)
                flushed = True
                self._kicked = False
                if self._window_secs > 0 and (
                    self._max_batch is None or len(self.queue) < self._max_batch
                ):
                    await self._sleep(self._window_secs)
                batch: list[Waiter[R, T]] = []
                while self.queue and (self._max_batch is None or len(batch) < self._max_batch):
                    waiter = self.queue.popleft()
                    if waiter.waiting:
                        batch.append(waiter)
                if not batch and self.queue:
                    continue
                flush = self._flush()
                if flush is None:  # its owner is gone: nobody is left to serve them
                    for waiter in batch:
                        waiter.future.set_exception(StoreClosed(f"{self._name} was dropped"))
                    continue
                try:
                    await flush(batch)
                except asyncio.CancelledError:
                    for waiter in batch:
                        if waiter.waiting:
                            waiter.future.set_exception(StoreClosed(f"{self._name} was closed"))
                    raise
                except BaseException as exc:  # every waiter of the batch gets the error
                    for waiter in batch:
                        if waiter.waiting:
                            waiter.future.set_exception(exc)
                    if not isinstance(exc, Exception):
                        raise
                else:
                    self.queue.extendleft(reversed([w for w in batch if w.waiting]))
        finally:
            self._task = None

    async def wait_idle(self) -> None:
        """Wait until no flush is running (and none is queued)."""
        while self._task is not None:
            await asyncio.wait({self._task})  # never raises, never cancels the task

    async def close(self) -> None:
        """Refuse new callers, let the running flush finish (no other starts), then fail
        whoever still waits with [`StoreClosed`][aioseq.errors.StoreClosed]. Idempotent."""
        self._closed = True
        try:
            await self.wait_idle()
        finally:
            while self.queue:
                waiter = self.queue.popleft()
                if waiter.waiting:
                    waiter.future.set_exception(StoreClosed(f"{self._name} is closed"))
