"""Slow is not down (issue 43): a live endpoint whose answers are slow, whose caller gave up, or
whose client's event loop was blocked is never taken down; only silence is. Scaled down from
the default 3 s limit to 0.5 s, through a proxy that holds answers."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator

import pytest

from aioseq import DynamoStore, RetryPolicy, TableSpec
from aioseq.testing import CapacityModel
from aioseq.testing.fault_proxy import FaultProxy

LIMIT_SECS = 0.5
POLICY = RetryPolicy(max_unreachable_secs=LIMIT_SECS)


@contextlib.asynccontextmanager
async def slow_store(table: TableSpec, endpoint: str) -> AsyncIterator[DynamoStore]:
    """A store whose every request is answered 1.6 times the limit late, through a proxy (a
    round trip; no budget to speak of)."""
    secs = 1.6 * LIMIT_SECS
    model = CapacityModel(
        partition_wcu_per_sec=1e6, partition_rcu_per_sec=1e6, round_trip_secs=(secs, secs)
    )
    proxy = FaultProxy(endpoint, capacity=model)
    proxy.start()
    try:
        async with DynamoStore.open(
            table=table, endpoint_url=proxy.endpoint_url, retry_policy=POLICY
        ) as store:
            yield store
    finally:
        proxy.stop()


@pytest.mark.slow
@pytest.mark.only_on("dynamodb-local")  # the client's behaviour; the server only answers
async def test_a_cancelled_caller_then_quiet_is_not_down(
    aioseq_store: DynamoStore, aioseq_endpoint: str
) -> None:
    async with slow_store(aioseq_store.table, aioseq_endpoint) as store:
        counter = store.atomic_counter("quiet")
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(counter.next(), 0.2)  # its request goes on
        await asyncio.sleep(3 * LIMIT_SECS)  # a quiet spell past the limit
        assert await counter.next() in (1, 2)  # slow (held), not refused
        assert store.endpoint.down_since is None


@pytest.mark.slow
@pytest.mark.only_on("dynamodb-local")
async def test_answers_slower_than_the_limit_are_not_down(
    aioseq_store: DynamoStore, aioseq_endpoint: str
) -> None:
    async with slow_store(aioseq_store.table, aioseq_endpoint) as store:
        counter = store.atomic_counter("slow")
        calls = []
        for _ in range(20):  # one call every 0.1 s, each answered after 0.8 s
            calls.append(asyncio.create_task(counter.next()))
            await asyncio.sleep(0.1)
        assert sorted(await asyncio.gather(*calls)) == list(range(1, 21))
        assert store.endpoint.down_since is None


@pytest.mark.slow
@pytest.mark.only_on("dynamodb-local")
async def test_a_blocked_event_loop_is_not_down(
    aioseq_store: DynamoStore, aioseq_endpoint: str
) -> None:
    async with DynamoStore.open(
        table=aioseq_store.table, endpoint_url=aioseq_endpoint, retry_policy=POLICY
    ) as store:
        counter = store.atomic_counter("stall")
        assert await counter.next() == 1
        in_flight = asyncio.create_task(counter.next())
        await asyncio.sleep(0)  # its request is on its way
        time.sleep(3 * LIMIT_SECS)  # noqa: ASYNC251 (a CPU-bound handler holds the loop)
        more = [asyncio.create_task(counter.next()) for _ in range(5)]  # they run first
        assert sorted(await asyncio.gather(in_flight, *more)) == [2, 3, 4, 5, 6, 7]
        assert store.endpoint.down_since is None
