"""Many keys and per-request code: the store shares one object per counter key, drops idle ones,
and closes many at once, on both servers."""

from __future__ import annotations

import asyncio
import gc
import threading
import weakref
from typing import Any

import pytest
from checks import assert_distinct, until

from aioseq import (
    BlockAllocator,
    ConfigurationError,
    DynamoStore,
    GroupCommit,
    StoreStatistics,
    WrongEventLoop,
)
from aioseq.observe import EvictEvent, Observer


class Evictions(Observer):
    """Sets an event once ``wanted`` objects were dropped."""

    def __init__(self, wanted: int = 1) -> None:
        self.events: list[EvictEvent] = []
        self.wanted = wanted
        self.done = asyncio.Event()

    def on_evict(self, event: EvictEvent) -> None:
        self.events.append(event)
        if len(self.events) >= self.wanted:
            self.done.set()


@pytest.fixture
def table_name(aioseq_store: DynamoStore) -> str:
    """The fresh table of ``aioseq_store``, for a second store on it."""
    return aioseq_store.table.name


async def test_each_factory_shares_one_object_per_key_and_options(
    aioseq_store: DynamoStore,
) -> None:
    store = aioseq_store
    assert store.block_allocator("k") is store.block_allocator("k")
    assert store.block_allocator("k", block_size=100) is store.block_allocator(key="k")
    assert store.atomic_counter("k") is store.atomic_counter("k")
    assert store.optimistic_counter("k") is store.optimistic_counter("k", group=True)
    assert store.optimistic_counter("k", group=GroupCommit()) is store.optimistic_counter("k")
    assert store.transactional_counter("k") is store.transactional_counter("k")
    assert store.block_allocator("k") is not store.block_allocator("other")
    assert BlockAllocator(store, "k") is not store.block_allocator("k")  # a private object
    assert store.statistics().live_keys == 5


async def test_the_same_key_with_other_options_is_refused_naming_both(
    aioseq_store: DynamoStore,
) -> None:
    store = aioseq_store
    store.transactional_counter("invoices", group=GroupCommit(max_size=10))
    with pytest.raises(ConfigurationError) as caught:
        store.transactional_counter("invoices", group=GroupCommit(max_size=20))
    message = str(caught.value)
    assert "'invoices'" in message
    assert "GroupCommit(max_size=10" in message and "GroupCommit(max_size=20" in message
    with pytest.raises(ConfigurationError, match=r"block_size=10.*block_size=50"):
        store.block_allocator("t", block_size=10)
        store.block_allocator("t", block_size=50)


async def test_a_factory_called_from_another_event_loop_is_refused(
    aioseq_store: DynamoStore,
) -> None:
    assert await aioseq_store.atomic_counter("k").next() == 1  # bound to this loop
    raised: list[BaseException] = []

    async def elsewhere() -> None:
        with pytest.raises(WrongEventLoop) as new_key:  # at the factory
            aioseq_store.atomic_counter("other")
        raised.append(new_key.value)
        shared = aioseq_store.atomic_counter("k")  # the shared object, which refuses
        with pytest.raises(WrongEventLoop) as shared_key:
            await shared.next()
        raised.append(shared_key.value)

    thread = threading.Thread(target=lambda: asyncio.run(elsewhere()))
    thread.start()
    await asyncio.to_thread(thread.join)
    assert len(raised) == 2 and all("per event loop" in str(exc) for exc in raised)
    assert await aioseq_store.atomic_counter("k").next() == 2


async def test_per_request_allocators_share_blocks_and_waste_nothing(
    aioseq_endpoint: str, table_name: str
) -> None:
    async with DynamoStore.open(table=table_name, endpoint_url=aioseq_endpoint) as store:
        numbers = [await store.block_allocator("k").next() for _ in range(2_000)]
        assert numbers == list(range(1, 2_001))  # only increase, none skipped
        assert store.requests["UpdateItem"] <= 2_000 // 100 + 5
    async with DynamoStore.open(table=table_name, endpoint_url=aioseq_endpoint) as store:
        assert await store.atomic_counter("k").current() == 2_000  # the tail was given back


async def test_concurrent_per_request_puts_share_one_group(aioseq_store: DynamoStore) -> None:
    async def handler(i: int) -> int:
        invoices = aioseq_store.transactional_counter("invoices")
        return await invoices.put(lambda n: {"pk": f"invoice-{n}", "sk": 0, "request": i})

    numbers = await asyncio.gather(*(handler(i) for i in range(200)))
    assert sorted(numbers) == list(range(1, 201))  # gapless
    assert aioseq_store.requests["TransactWriteItems"] <= 10


async def test_an_idle_allocator_is_dropped_and_gives_its_numbers_back(
    aioseq_endpoint: str, table_name: str
) -> None:
    seen = Evictions()
    async with DynamoStore.open(
        table=table_name, endpoint_url=aioseq_endpoint, idle_secs=0.05, observer=seen
    ) as store:
        held = store.block_allocator("k", block_size=50)
        assert await held.next() == 1
        await asyncio.wait_for(seen.done.wait(), timeout=30)
        assert seen.events == [EvictEvent("k", "block_allocator", returned=49, wasted=0)]
        assert await store.atomic_counter("k").current() == 1  # given back
        stats = store.statistics()
        assert stats.evictions == 1 and stats.returned == 49 and stats.wasted == 0
        # A caller that still holds it goes on, and the store shares it again.
        assert await held.next() == 2
        assert store.block_allocator("k", block_size=50) is held


async def test_an_idle_counter_is_dropped_and_a_holder_keeps_using_it(
    aioseq_store: DynamoStore, aioseq_endpoint: str, table_name: str
) -> None:
    seen = Evictions()
    async with DynamoStore.open(
        table=table_name, endpoint_url=aioseq_endpoint, idle_secs=0.05, observer=seen
    ) as store:
        held = store.transactional_counter("c")
        assert await held.put(lambda n: {"pk": f"i-{n}", "sk": 0}) == 1
        await asyncio.wait_for(seen.done.wait(), timeout=30)
        assert seen.events[0].kind == "transactional_counter"
        assert await held.put(lambda n: {"pk": f"i-{n}", "sk": 0}) == 2
        assert store.statistics().live_keys == 0


async def test_a_dropped_allocator_dies_by_reference_counting(
    aioseq_endpoint: str, table_name: str
) -> None:
    # A reference cycle through it would keep each dropped allocator, and all it holds, until
    # a full collection of the cyclic GC: 100,000 keys touched once held hundreds of MB.
    seen = Evictions(wanted=3)
    async with DynamoStore.open(
        table=table_name, endpoint_url=aioseq_endpoint, idle_secs=0.05, observer=seen
    ) as store:
        allocator = store.block_allocator("a", block_size=10)
        counter = store.atomic_counter("c")
        grouped = store.transactional_counter("t", group=True)
        assert await allocator.next() == 1 and await counter.next() == 1
        assert await grouped.put(lambda n: {"pk": f"item-{n}", "sk": 0}) == 1
        made = [allocator, allocator.counter, counter, grouped]
        gone = [weakref.ref(thing) for thing in made]
        gc.disable()
        try:
            del allocator, counter, grouped, made
            await asyncio.wait_for(seen.done.wait(), timeout=30)
            assert [ref() for ref in gone] == [None] * 4
        finally:
            gc.enable()
        assert store.statistics().returned == 9


async def test_an_object_in_use_is_not_dropped(aioseq_endpoint: str, table_name: str) -> None:
    seen = Evictions()
    async with DynamoStore.open(
        table=table_name, endpoint_url=aioseq_endpoint, idle_secs=0.5, observer=seen
    ) as store:
        busy = store.block_allocator("busy", block_size=1)  # every next() is a request
        store.block_allocator("idle").statistics()
        taken = []
        while not seen.done.is_set():
            taken.append(await busy.next())
        assert [event.counter_key for event in seen.events] == ["idle"]
        assert store.block_allocator("busy", block_size=1) is busy
        assert taken == list(range(1, len(taken) + 1))


@pytest.mark.slow
@pytest.mark.only_on("dynamodb-local")  # the store's close, not the server: one that serves at once
async def test_closing_many_live_keys_gives_every_tail_back(
    aioseq_endpoint: str, table_name: str
) -> None:
    keys = [f"tenant-{i}" for i in range(1_000)]
    store = await DynamoStore.open(table=table_name, endpoint_url=aioseq_endpoint)
    try:
        firsts = await asyncio.gather(
            *(store.block_allocator(key, block_size=10, prefetch_at=0).next() for key in keys)
        )
        assert set(firsts) == {1}
        before: StoreStatistics = store.statistics()
        assert before.live_keys == 1_000 and before.reserved == 10_000
    finally:
        # 1,000 give-backs: ~4 s on an idle moto, which serves one request at a time, and
        # more than the default 10 s under the whole suite's load.
        await store.aclose(timeout_secs=60)
    assert store.statistics().returned == 9_000
    assert store.statistics().wasted == 0
    async with DynamoStore.open(table=table_name, endpoint_url=aioseq_endpoint) as store:
        values = await asyncio.gather(*(store.atomic_counter(key).current() for key in keys))
        assert set(values) == {1}


async def test_an_allocator_dropped_with_numbers_warns(aioseq_store: DynamoStore) -> None:
    private = BlockAllocator(aioseq_store, "forgotten", block_size=20, prefetch_at=0)
    assert await private.next() == 1
    with pytest.warns(ResourceWarning, match=r"'forgotten'.*19 reserved numbers"):
        del private
        gc.collect()


async def test_a_closed_or_emptied_allocator_does_not_warn(aioseq_store: DynamoStore) -> None:
    closed = BlockAllocator(aioseq_store, "a", block_size=20)
    await closed.next()
    await closed.aclose()
    del closed
    gc.collect()  # filterwarnings = error: a ResourceWarning here fails the test
    shared = [await aioseq_store.block_allocator("b").next() for _ in range(3)]
    assert_distinct(shared)


@pytest.mark.only_on("dynamodb-local")  # the store's close, not the server: one that serves at once
async def test_a_close_during_a_sweep_lets_its_give_backs_finish(
    aioseq_endpoint: str, table_name: str
) -> None:
    keys = [f"tenant-{i}" for i in range(100)]
    first_drop = Evictions(wanted=1)
    store = await DynamoStore.open(
        table=table_name, endpoint_url=aioseq_endpoint, idle_secs=0.05, observer=first_drop
    )
    for key in keys:
        assert await store.block_allocator(key, block_size=10, prefetch_at=0).next() == 1
    await asyncio.wait_for(first_drop.done.wait(), timeout=30)  # a sweep is under way
    await store.aclose()
    stats = store.statistics()
    assert stats.reserved == stats.handed_out + stats.returned + stats.wasted  # all told
    assert stats.returned == 900 and stats.wasted == 0
    async with DynamoStore.open(table=table_name, endpoint_url=aioseq_endpoint) as again:
        values = await asyncio.gather(*(again.atomic_counter(key).current() for key in keys))
        assert set(values) == {1}


#: Blocks of 50 that neither grow nor prefetch: the tests below count their numbers.
FIXED_BLOCKS: dict[str, Any] = {
    "block_size": 50,
    "prefetch_at": 0,
    "target_refill_interval_secs": None,
}


async def test_an_allocator_refilled_while_its_drop_gives_numbers_back_is_kept(
    aioseq_endpoint: str, table_name: str
) -> None:
    """A caller holding the allocator refills it while its drop is still giving its tail
    back: the store keeps it (shared again once the drop ends), so its new block is told
    and given back at close, never collected with it."""
    async with DynamoStore.open(table=table_name, endpoint_url=aioseq_endpoint) as store:
        held = store.block_allocator("k", **FIXED_BLOCKS)
        assert await held.next() == 1
        registry = store._shared
        await registry.sweep()  # notes its activity
        dropping = asyncio.ensure_future(registry.sweep())  # drops it: its give-back goes out
        # Every step of the loop, to catch the moment the give-back is on its way (a few ms).
        while not held._evicted:  # noqa: ASYNC110
            await asyncio.sleep(0)
        assert registry._dropping  # (its drop is under way)
        # A refill meanwhile: 51, or 2 when the give-back reached the counter first.
        assert await held.next() in (2, 51)
        assert await dropping == 1
        assert store.statistics().live_keys == 1  # kept, not counted as dropped
        assert store.block_allocator("k", **FIXED_BLOCKS) is held
        del held
        gc.collect()  # filterwarnings = error: a ResourceWarning here fails the test
    stats = store.statistics()
    assert stats.reserved == stats.handed_out + stats.returned + stats.wasted  # all told
    assert (stats.reserved, stats.handed_out) == (100, 2)


async def test_an_allocator_refilled_after_its_drop_still_gives_its_block_back(
    aioseq_endpoint: str, table_name: str
) -> None:
    """A caller holds the allocator across its drop, refills it, then lets go of it: the store
    keeps it from then on, so its block is given back (or counted as wasted), never collected
    with it."""
    seen = Evictions()
    async with DynamoStore.open(
        table=table_name, endpoint_url=aioseq_endpoint, idle_secs=0.05, observer=seen
    ) as store:
        held = store.block_allocator("k", **FIXED_BLOCKS)
        assert await held.next() == 1
        await asyncio.wait_for(seen.done.wait(), timeout=30)
        assert await held.next() == 2  # a new block, 2..51
        assert store.block_allocator("k", **FIXED_BLOCKS) is held  # shared again
        del held
        gc.collect()  # filterwarnings = error: a ResourceWarning here fails the test
    stats = store.statistics()
    assert stats.reserved == stats.handed_out + stats.returned + stats.wasted  # all told
    assert (stats.reserved, stats.handed_out, stats.returned, stats.wasted) == (100, 2, 98, 0)
    async with DynamoStore.open(table=table_name, endpoint_url=aioseq_endpoint) as again:
        assert await again.atomic_counter("k").current() == 2


async def test_an_allocator_refilled_after_a_fresh_one_took_its_key_is_dropped_again(
    aioseq_endpoint: str, table_name: str
) -> None:
    seen = Evictions()
    async with DynamoStore.open(
        table=table_name, endpoint_url=aioseq_endpoint, idle_secs=0.05, observer=seen
    ) as store:
        held = store.block_allocator(
            "k", block_size=10, prefetch_at=0, target_refill_interval_secs=None
        )
        assert await held.next() == 1
        await asyncio.wait_for(seen.done.wait(), timeout=30)
        fresh = store.block_allocator(
            "k", block_size=10, prefetch_at=0, target_refill_interval_secs=None
        )
        assert fresh is not held and await fresh.next() == 2  # 2..11
        assert await held.next() == 12  # 12..21
        del held
        gc.collect()
        # The next sweeps drop both, and each gives back what it can (held: 13..21).
        await until(lambda: len(seen.events) == 3, timeout_secs=10)
        assert await store.atomic_counter("k").current() == 12
    stats = store.statistics()
    assert stats.reserved == stats.handed_out + stats.returned + stats.wasted  # all told
    assert (stats.reserved, stats.handed_out, stats.returned, stats.wasted) == (30, 3, 18, 9)
