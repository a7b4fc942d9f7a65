"""The single-flight coalescer under the allocator and group commit, tested alone: no server.

A flush here is a plain coroutine that records its batches and resolves them; events let a test
hold a flush at its one ``await`` and cancel or close around it.
"""

from __future__ import annotations

import asyncio
import gc
import weakref
from collections.abc import Callable

import pytest
from checks import LoopClock

from aioseq._coalesce import Coalescer, LoopBinding, Waiter
from aioseq.errors import StoreClosed, WrongEventLoop


class Recorder:
    """A flush that records each batch's requests, waits for ``release`` if set, then answers
    each waiter with ``answer(request)`` (or raises ``error``)."""

    def __init__(self, answer: Callable[[int], int] = lambda r: r * 10) -> None:
        self.batches: list[list[int]] = []
        self.answer = answer
        self.release: asyncio.Event | None = None
        self.started = asyncio.Event()
        self.error: BaseException | None = None
        self.serve_only: int | None = None  # serve only the first n of a batch

    async def __call__(self, batch: list[Waiter[int, int]]) -> None:
        self.batches.append([w.request for w in batch])
        self.started.set()
        if self.release is not None:
            await self.release.wait()
        if self.error is not None:
            error, self.error = self.error, None  # one flush fails
            raise error
        for waiter in batch[: self.serve_only]:
            if waiter.waiting:
                waiter.future.set_result(self.answer(waiter.request))


async def test_the_first_caller_flushes_at_once_and_later_callers_form_the_next_batch() -> None:
    flush = Recorder()
    flush.release = asyncio.Event()
    coalescer: Coalescer[int, int] = Coalescer(flush)
    first = asyncio.ensure_future(coalescer.submit(1))
    await flush.started.wait()
    later = [asyncio.ensure_future(coalescer.submit(n)) for n in (2, 3, 4)]
    await asyncio.sleep(0)
    flush.release.set()
    assert await asyncio.gather(first, *later) == [10, 20, 30, 40]
    assert flush.batches == [[1], [2, 3, 4]]  # arrival order, one flush at a time


async def test_batches_are_cut_at_max_batch_in_order() -> None:
    flush = Recorder()
    coalescer: Coalescer[int, int] = Coalescer(flush, max_batch=2)
    results = await asyncio.gather(*(coalescer.submit(n) for n in range(5)))
    assert results == [0, 10, 20, 30, 40]
    assert flush.batches == [[0, 1], [2, 3], [4]]


async def test_waiters_a_flush_leaves_waiting_go_first_in_the_next_one() -> None:
    flush = Recorder()
    flush.serve_only = 1
    coalescer: Coalescer[int, int] = Coalescer(flush)
    results = await asyncio.gather(*(coalescer.submit(n) for n in range(3)))
    assert results == [0, 10, 20]
    assert flush.batches == [[0, 1, 2], [1, 2], [2]]


async def test_a_window_waits_for_company_unless_the_batch_is_full(loop_clock: LoopClock) -> None:
    flush = Recorder()
    coalescer: Coalescer[int, int] = Coalescer(flush, window_secs=60)
    first = asyncio.ensure_future(coalescer.submit(1))
    for _ in range(3):  # the submit, then its flush, which now waits out its window
        await asyncio.sleep(0)
    assert not flush.batches
    second = asyncio.ensure_future(coalescer.submit(2))
    await asyncio.sleep(0)
    loop_clock.advance(60)  # the window ends
    assert list(await asyncio.gather(first, second)) == [10, 20]
    assert flush.batches == [[1, 2]]  # the window gathered both
    full: Coalescer[int, int] = Coalescer(Recorder(), max_batch=1, window_secs=10)
    assert await asyncio.wait_for(full.submit(3), 1) == 30  # a full batch does not wait


async def test_a_failed_flush_fails_its_batch_only() -> None:
    flush = Recorder()
    flush.release = asyncio.Event()
    flush.error = RuntimeError("boom")
    coalescer: Coalescer[int, int] = Coalescer(flush)
    first = asyncio.ensure_future(coalescer.submit(1))
    await flush.started.wait()
    second = asyncio.ensure_future(coalescer.submit(2))
    await asyncio.sleep(0)
    flush.release.set()
    with pytest.raises(RuntimeError, match="boom"):
        await first
    assert await second == 20  # the next batch gets a fresh flush
    assert flush.batches == [[1], [2]]


async def test_a_cancelled_waiter_drops_out_and_never_cancels_the_flush() -> None:
    flush = Recorder()
    flush.release = asyncio.Event()
    coalescer: Coalescer[int, int] = Coalescer(flush)
    first = asyncio.ensure_future(coalescer.submit(1))
    await flush.started.wait()
    queued = [asyncio.ensure_future(coalescer.submit(n)) for n in (2, 3)]
    await asyncio.sleep(0)
    first.cancel()  # during the flush
    queued[0].cancel()  # while queued
    await asyncio.sleep(0)
    flush.release.set()
    assert await queued[1] == 30
    assert flush.batches == [[1], [3]]  # the cancelled queued caller never reached a flush
    assert first.cancelled() and queued[0].cancelled()


async def test_a_result_set_for_a_caller_cancelled_before_it_resumed_is_reported() -> None:
    abandoned: list[int] = []
    calls: list[asyncio.Future[int]] = []

    async def flush(batch: list[Waiter[int, int]]) -> None:
        # Queued before the results are set, so it runs after them and before the caller
        # resumes: the caller is cancelled holding a result.
        asyncio.get_running_loop().call_soon(calls[0].cancel)
        for waiter in batch:
            waiter.future.set_result(waiter.request)

    coalescer: Coalescer[int, int] = Coalescer(flush, on_abandoned=abandoned.append)
    calls.extend(asyncio.ensure_future(coalescer.submit(n)) for n in (7, 8))
    results = await asyncio.gather(*calls, return_exceptions=True)
    assert isinstance(results[0], asyncio.CancelledError) and results[1] == 8
    assert abandoned == [7]


async def test_cancelling_the_flush_task_fails_its_batch_with_store_closed() -> None:
    flush = Recorder()
    flush.release = asyncio.Event()
    coalescer: Coalescer[int, int] = Coalescer(flush, name="test")
    call = asyncio.ensure_future(coalescer.submit(1))
    await flush.started.wait()
    assert coalescer._task is not None
    coalescer._task.cancel()
    with pytest.raises(StoreClosed):
        await call


async def test_close_lets_the_running_flush_finish_and_fails_the_queued() -> None:
    flush = Recorder()
    flush.release = asyncio.Event()
    coalescer: Coalescer[int, int] = Coalescer(flush)
    first = asyncio.ensure_future(coalescer.submit(1))
    await flush.started.wait()
    queued = asyncio.ensure_future(coalescer.submit(2))
    await asyncio.sleep(0)
    closing = asyncio.ensure_future(coalescer.close())
    await asyncio.sleep(0)
    with pytest.raises(StoreClosed):
        await coalescer.submit(3)
    flush.release.set()
    await asyncio.wait_for(closing, 1)
    assert await first == 10  # its flush was running: it finished
    with pytest.raises(StoreClosed):
        await queued  # no new flush starts after close
    assert flush.batches == [[1]] and not coalescer.flushing
    await coalescer.close()  # idempotent


async def test_kick_runs_a_flush_with_nobody_waiting_once() -> None:
    flush = Recorder()
    coalescer: Coalescer[int, int] = Coalescer(flush)
    coalescer.check_loop()
    coalescer.kick()
    coalescer.kick()  # one already runs
    await coalescer.wait_idle()
    assert flush.batches == [[]]


def test_another_event_loop_is_refused() -> None:
    coalescer: Coalescer[int, int] = Coalescer(Recorder(), name="c")
    assert asyncio.run(coalescer.submit(1)) == 10
    with pytest.raises(WrongEventLoop, match="c belongs to the event loop it was first used in"):
        asyncio.run(coalescer.submit(2))


def test_a_loop_binding_binds_at_first_use() -> None:
    binding = LoopBinding("thing")
    assert binding.loop is None

    async def check() -> asyncio.AbstractEventLoop:
        return binding.check()

    loop = asyncio.new_event_loop()
    try:
        assert loop.run_until_complete(check()) is loop
        assert loop.run_until_complete(check()) is loop
    finally:
        loop.close()
    with pytest.raises(WrongEventLoop):
        asyncio.run(check())


class Owner:
    """An object that owns a coalescer and gives it its own method, as the allocator does."""

    def __init__(self) -> None:
        self.coalescer: Coalescer[int, int] = Coalescer(self.flush, on_abandoned=self.abandoned)

    async def flush(self, batch: list[Waiter[int, int]]) -> None:
        for waiter in batch:
            waiter.future.set_result(waiter.request)

    def abandoned(self, result: int) -> None:
        pass


async def test_an_owner_that_gives_its_methods_dies_by_reference_counting() -> None:
    owner = Owner()
    assert await owner.coalescer.submit(5) == 5
    gone = weakref.ref(owner)
    coalescer = owner.coalescer
    gc.disable()  # a reference cycle would keep it until a collection
    try:
        del owner
        assert gone() is None
    finally:
        gc.enable()
    with pytest.raises(StoreClosed, match="dropped"):  # nobody is left to serve a caller
        await coalescer.submit(6)


async def test_a_flush_claims_callers_waiting_behind_it_that_fit() -> None:
    """A flush whose own callers left (a deadline) tops its batch up from the callers
    queued behind it, in order, while they fit; cancelled ones are dropped on the way."""
    coalescer: Coalescer[int, int] = Coalescer(Recorder())
    loop = asyncio.get_running_loop()
    queued = [Waiter(n, loop.create_future()) for n in (1, 2, 5, 1)]
    queued[1].future.cancel()
    coalescer.queue.extend(queued)
    room = 6

    def fits(request: int) -> bool:
        nonlocal room
        if request > room:
            return False
        room -= request
        return True

    assert coalescer.claim(fits) == [queued[0], queued[2]]  # 1 + 5; the cancelled 2 dropped
    assert list(coalescer.queue) == [queued[3]]  # the next did not fit: it waits, in order
