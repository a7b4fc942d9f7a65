"""A block allocator's give-back under a lost answer, against FakeDynamoDB (issue 42, defect 1).

The give-back ``SET #value = :before IF #value = :top`` is the ABA case of compare-and-swap:
once it was applied, an ``ADD`` of another allocator that reserves a block of the same size
moves the counter from ``:before`` back to ``:top``, so a resend would apply again and hand
that block out a second time. A give-back whose answer was lost is never resent: its numbers
count as wasted. A refusal that surely was not applied (throttling) is retried as before.
"""

from __future__ import annotations

from typing import Any

from checks import SleepHook, assert_distinct

from aioseq import BlockAllocator, DynamoStore, RetryPolicy
from aioseq.observe import StatisticsObserver
from aioseq.testing import FakeDynamoDB

KEY = "ids"
POLICY = RetryPolicy(max_attempts=5, initial_backoff_secs=0.0001, max_backoff_secs=0.0001)


def is_give_back(params: dict[str, Any]) -> bool:
    """A counter item's conditional ``SET`` of its value (the give-back), not an ``ADD``."""
    return str(params.get("UpdateExpression", "")).startswith("SET #value = :value")


def give_backs(fake: FakeDynamoDB) -> int:
    return sum(1 for sent in fake.sent if is_give_back(sent.params))


async def open_store(fake: FakeDynamoDB, **options: Any) -> DynamoStore:
    # (No idle sweeper: its sleeps would run a test's hook.)
    store = DynamoStore(transport=fake, retry_policy=POLICY, idle_secs=None, **options)
    await store.create_table()
    return store


async def take(allocator: BlockAllocator, n: int) -> list[int]:
    return [await allocator.next() for _ in range(n)]


async def test_a_give_back_whose_answer_was_lost_is_not_resent_after_a_rival_block() -> None:
    """A takes 1 of its block 1..10 and closes: its give-back of 2..10 is applied, its answer
    lost. Before A could resend, B reserves a block of 9 (2..10, the counter back at 10, A's
    ``:top``); then C reserves 10. No number may be handed out twice, and A's 9 numbers are
    counted as wasted (the give-back's fate is unknown to A)."""
    observer = StatisticsObserver()  # (every store on the fake reports to it)
    fake = FakeDynamoDB(observer=observer)
    async with await open_store(fake) as store_b, await open_store(fake) as store_c:
        b = store_b.block_allocator(KEY, block_size=9, prefetch_at=0)
        c = store_c.block_allocator(KEY, block_size=10, prefetch_at=0)
        from_b: list[int] = []

        async def rival_reserves(secs: float) -> None:  # A's backoff before a resend
            if not from_b:
                from_b.extend(await take(b, 9))

        async with await open_store(fake, clock=SleepHook(rival_reserves)) as store_a:
            a = store_a.block_allocator(KEY, block_size=10, prefetch_at=0)
            from_a = await take(a, 1)
            fake.inject("response-lost", operation="UpdateItem", when=is_give_back)
            await a.aclose()
            sent, wasted = give_backs(fake), observer.statistics().wasted
            stats, store_wasted = a.statistics(), store_a.statistics().wasted
            if not from_b:  # (no backoff ran the hook: B reserves now)
                from_b.extend(await take(b, 9))
            from_c = await take(c, 10)  # (the stores share the fake: all still open)
    assert_distinct([*from_a, *from_b, *from_c])
    assert fake.injected == {"response-lost": 1}
    assert sent == 1  # its answer lost, never resent
    assert (stats.returned, stats.wasted, store_wasted) == (0, 9, 9)
    assert wasted == {"abandoned": 9}
    assert from_a == [1]
    assert from_b == list(range(2, 11))  # A's give-back was applied: its tail again, once
    assert from_c == list(range(11, 21))


async def test_an_evicted_allocators_lost_give_back_is_not_resent_and_counts_as_wasted() -> None:
    """The store's drop of an idle allocator gives back with the same write: a lost answer
    leaves its numbers wasted (``"evicted"``), and they are handed out once."""
    observer = StatisticsObserver()  # (every store on the fake reports to it)
    fake = FakeDynamoDB(observer=observer)
    async with await open_store(fake) as store_b, await open_store(fake) as store_c:
        b = store_b.block_allocator(KEY, block_size=9, prefetch_at=0)
        c = store_c.block_allocator(KEY, block_size=10, prefetch_at=0)
        from_b: list[int] = []

        async def rival_reserves(secs: float) -> None:
            if not from_b:
                from_b.extend(await take(b, 9))

        async with await open_store(fake, clock=SleepHook(rival_reserves)) as store_a:
            a = store_a.block_allocator(KEY, block_size=10, prefetch_at=0)
            from_a = await take(a, 1)
            fake.inject("response-lost", operation="UpdateItem", when=is_give_back)
            held = await a.evict()
            sent, wasted = give_backs(fake), observer.statistics().wasted
            if not from_b:
                from_b.extend(await take(b, 9))
            from_c = await take(c, 10)
    assert_distinct([*from_a, *from_b, *from_c])
    assert sent == 1
    assert (held.returned, held.wasted) == (0, 9)
    assert wasted == {"evicted": 9}


async def test_a_throttled_give_back_is_retried_and_returns_its_numbers() -> None:
    """A refusal that was surely not applied is retried as any request: the tail is given
    back, nothing wasted, and the next allocator hands it out."""
    observer = StatisticsObserver()  # (every store on the fake reports to it)
    fake = FakeDynamoDB(observer=observer)
    async with await open_store(fake) as store:
        a = store.block_allocator(KEY, block_size=10, prefetch_at=0)
        assert await take(a, 1) == [1]
        fake.inject("throttling", operation="UpdateItem", when=is_give_back)
        await a.aclose()
        assert give_backs(fake) == 2
        assert (a.statistics().returned, a.statistics().wasted) == (9, 0)
        assert observer.statistics().wasted == {}
        b = store.block_allocator(KEY, block_size=10, prefetch_at=0)
        assert await take(b, 2) == [2, 3]
