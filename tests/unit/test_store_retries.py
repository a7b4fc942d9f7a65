"""DynamoStore's retries against an endpoint where nothing listens: every request fails to
connect at once, so the retry loop runs with no server (the waits are recorded, not slept)."""

from __future__ import annotations

import asyncio

import pytest

from aioseq import ConnectionFailed, DynamoStore, RetriesExhausted, RetryPolicy

#: Nothing listens on port 1: every request fails to connect, at once.
REFUSING_ENDPOINT = "http://127.0.0.1:1"


class FakeSleep:
    """Records the waits the retry policy asks for instead of sleeping."""

    def __init__(self) -> None:
        self.waits: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)


async def test_transient_errors_are_retried_with_jitter_then_exhausted() -> None:
    sleep = FakeSleep()
    policy = RetryPolicy(
        max_attempts=4, initial_backoff_secs=0.1, max_backoff_secs=0.4, sleep=sleep
    )
    async with DynamoStore.open(endpoint_url=REFUSING_ENDPOINT, retry_policy=policy) as store:
        counter = store.atomic_counter("k")
        with pytest.raises(RetriesExhausted) as caught:
            await counter.next()
    assert caught.value.attempts == 4
    assert isinstance(caught.value.last_error, ConnectionFailed)
    assert caught.value.__cause__ is caught.value.last_error
    assert len(sleep.waits) == 3
    assert all(0 <= w <= 0.4 for w in sleep.waits)
    assert counter.statistics().retries
    assert store.requests["UpdateItem"] == 4


async def test_cancellation_during_a_retry_wait_propagates() -> None:
    waiting = asyncio.Event()

    async def long_sleep(seconds: float) -> None:
        waiting.set()
        await asyncio.sleep(3600)

    policy = RetryPolicy(max_attempts=100, sleep=long_sleep)
    async with DynamoStore.open(endpoint_url=REFUSING_ENDPOINT, retry_policy=policy) as store:
        task = asyncio.create_task(store.atomic_counter("k").next())
        await asyncio.wait_for(waiting.wait(), timeout=30)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert task.cancelled()
        assert store.requests["UpdateItem"] == 1
