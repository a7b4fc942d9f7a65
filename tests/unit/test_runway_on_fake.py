"""A block allocator's runway (issue 31): numbers reserved ahead for ``runway_secs`` at the
measured rate, served while every refill fails; on the fake, time moved by the test."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest

from aioseq import ConfigurationError, DynamoStore, RetryPolicy
from aioseq.observe import StatisticsObserver
from aioseq.testing import FakeDynamoDB, ManualClock

RATE = 100  # numbers a second: one every 10 ms of the test's clock
#: Blocks sized for a refill a second (~100 numbers), so that a runway of 10 s is ten blocks.
SMALL: dict[str, Any] = {"block_size": 10, "target_refill_interval_secs": 1.0}


async def _take(allocator: object, clock: ManualClock, n: int) -> list[int]:
    taken = []
    for _ in range(n):
        taken.append(await allocator.next())  # type: ignore[attr-defined]
        clock.advance(1 / RATE)
        await asyncio.sleep(0)  # a prefetch runs between calls, as in a service
    return taken


async def test_the_runway_holds_its_seconds_of_numbers_ahead(
    fake_store: DynamoStore, clock: ManualClock
) -> None:
    ids = fake_store.block_allocator("ids", **SMALL, runway_secs=10.0)
    taken = await _take(ids, clock, 600)
    stats = ids.statistics()
    assert stats.rate == pytest.approx(RATE, rel=0.2)
    assert stats.runway_secs is not None and stats.runway_secs >= 10.0 * 0.9
    assert stats.block_size <= 200  # the runway is many blocks, not one big one
    assert taken == list(range(1, 601))


async def test_the_runway_serves_while_every_refill_fails(
    fake: FakeDynamoDB, fake_store: DynamoStore, clock: ManualClock
) -> None:
    ids = fake_store.block_allocator("ids", **SMALL, runway_secs=10.0)
    before = await _take(ids, clock, 400)
    held = ids.statistics().available
    assert held >= 900
    down = True
    fake.inject("internal-error", operation="UpdateItem", times=10**9, when=lambda _: down)
    during = await _take(ids, clock, held)  # DynamoDB gone: no caller gets an error
    assert ids.statistics().available == 0 and fake.injected["internal-error"] > 0
    down = False  # back: the next call past the low-water mark refills
    after = await _take(ids, clock, 100)
    taken = before + during + after
    assert taken == sorted(set(taken))  # unique and increasing, across the outage


async def test_without_a_runway_the_prefetch_alone_holds_numbers(
    fake_store: DynamoStore, clock: ManualClock
) -> None:
    ids = fake_store.block_allocator("ids", **SMALL)
    await _take(ids, clock, 600)
    stats = ids.statistics()
    assert stats.runway_secs is not None and stats.runway_secs <= 2.0  # a block and a half


@pytest.mark.parametrize("runway_secs", [-1.0, float("nan"), "10", True])
def test_a_bad_runway_is_refused(fake_store: DynamoStore, runway_secs: object) -> None:
    with pytest.raises(ConfigurationError, match="runway_secs"):
        fake_store.block_allocator("ids", runway_secs=runway_secs)  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="runway_secs"):
        DynamoStore(transport=FakeDynamoDB(), runway_secs=runway_secs)  # type: ignore[arg-type]


async def test_the_store_s_runway_is_every_allocator_s_unless_it_names_its_own(
    clock: ManualClock,
) -> None:
    async with DynamoStore(transport=FakeDynamoDB(), clock=clock, runway_secs=30.0) as store:
        assert store.block_allocator("a").runway_secs == 30.0
        assert store.block_allocator("b", runway_secs=5.0).runway_secs == 5.0
        assert store.block_allocator("c", runway_secs=0).runway_secs is None  # none
        assert store.block_allocator("a") is store.block_allocator("a", runway_secs=30.0)
    async with DynamoStore(transport=FakeDynamoDB(), clock=clock, runway_secs=0) as store:
        assert store.runway_secs is None and store.block_allocator("a").runway_secs is None
        assert store.block_allocator("a") is store.block_allocator("a", runway_secs=0)


async def test_each_refill_reports_the_runway_and_headroom_it_leaves(clock: ManualClock) -> None:
    observer = StatisticsObserver()
    async with DynamoStore(
        transport=FakeDynamoDB(observer=observer), clock=clock, idle_secs=None
    ) as store:
        await store.create_table()
        ids = store.block_allocator("ids", **SMALL, runway_secs=10.0, max_value=100_000)
        await _take(ids, clock, 300)
        seen = observer.statistics()
        stats = ids.statistics()
    assert seen.refills >= 3
    # The lowest runway a refill left: a rate measured, and short of the target at first.
    assert 0 < seen.lowest_runway_secs["ids"] < 10.0
    # The least headroom: what the last refill left; numbers handed out since took more.
    assert stats.headroom is not None
    assert stats.headroom <= seen.lowest_headroom["ids"] < 100_000 - 200


async def test_headroom_counts_down_to_max_value(
    fake_store: DynamoStore, clock: ManualClock
) -> None:
    bounded = fake_store.block_allocator("b", block_size=10, max_value=1000)
    assert fake_store.block_allocator("u").statistics().headroom is None
    await bounded.next()
    assert bounded.statistics().headroom == 999


async def test_a_short_runway_and_a_near_max_value_are_logged_once(
    fake: FakeDynamoDB,
    fake_store: DynamoStore,
    clock: ManualClock,
    caplog: pytest.LogCaptureFixture,
) -> None:
    ids = fake_store.block_allocator("ids", **SMALL, runway_secs=10.0, max_value=100_000)
    with caplog.at_level(logging.WARNING, logger="aioseq"):
        await _take(ids, clock, 400)
        down = True
        fake.inject("internal-error", operation="UpdateItem", times=10**9, when=lambda _: down)
        await _take(ids, clock, ids.statistics().available)
        down = False
        await _take(ids, clock, 200)
    runway = [r for r in caplog.records if "under half" in r.getMessage()]
    headroom = [r for r in caplog.records if "under a day" in r.getMessage()]
    assert len(runway) == 1 and "runway" in runway[0].getMessage()
    assert len(headroom) == 1 and "before max_value 100000" in headroom[0].getMessage()


async def test_failing_refills_do_not_mismeasure_the_rate(
    fake: FakeDynamoDB, clock: ManualClock, caplog: pytest.LogCaptureFixture
) -> None:
    """During an outage every call past the mark tries a refill, each failing at once (as on
    an endpoint that is down); a rate measured between those tries would see the calls'
    jitter (here 1 ms, 1 ms, then 28 ms: 100/s on average), not the rate."""
    once = RetryPolicy(max_attempts=1)
    async with DynamoStore(transport=fake, retry_policy=once, clock=clock, idle_secs=None) as store:
        await store.create_table()
        ids = store.block_allocator("ids", **SMALL, runway_secs=10.0)
        await _take(ids, clock, 600)
        down = True
        fake.inject("internal-error", operation="UpdateItem", times=10**9, when=lambda _: down)
        rates = []
        with caplog.at_level(logging.WARNING, logger="aioseq"):
            for i in range(ids.statistics().available):
                await ids.next()
                clock.advance((0.001, 0.001, 0.028)[i % 3])
                await asyncio.sleep(0)
                rates.append(ids.statistics().rate)
        down = False
    assert fake.injected["internal-error"] > 100  # a try for most calls
    assert max(rates) < 1.5 * RATE and min(rates) > RATE / 1.5
    said = [r for r in caplog.records if "under half" in r.getMessage()]
    assert len(said) == 1  # once for the whole outage
