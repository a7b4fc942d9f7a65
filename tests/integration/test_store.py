"""DynamoStore: the client's lifecycle, the table helper, error translation, retries."""

from __future__ import annotations

import asyncio
import uuid

import aioboto3
import pytest

from aioseq import (
    ConfigurationError,
    ConnectionFailed,
    DynamoStore,
    RetriesExhausted,
    RetryPolicy,
    TableSpec,
    ValidationFailed,
)

#: Nothing listens on port 1: every request fails to connect, at once.
REFUSING_ENDPOINT = "http://127.0.0.1:1"


class FakeSleep:
    """Records the waits the retry policy asks for instead of sleeping."""

    def __init__(self) -> None:
        self.waits: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)


async def test_create_table_is_idempotent(aioseq_endpoint: str) -> None:
    spec = TableSpec(name=f"aioseq-test-{uuid.uuid4().hex[:8]}")
    async with DynamoStore.open(table=spec, endpoint_url=aioseq_endpoint) as store:
        assert await store.create_table() is True
        assert await store.create_table() is False
        await store.check_table()
        await store.delete_table()


async def test_dynamodb_errors_are_translated_by_code(aioseq_store: DynamoStore) -> None:
    with pytest.raises(ValidationFailed) as caught:
        await aioseq_store.call("get_item", TableName=aioseq_store.table.name, Key={})
    assert caught.value.code == "ValidationException"
    assert caught.value.operation == "GetItem"


async def test_a_borrowed_client_stays_open(
    aioseq_store: DynamoStore, aioseq_endpoint: str
) -> None:
    session = aioboto3.Session()
    async with session.client("dynamodb", endpoint_url=aioseq_endpoint) as client:
        async with DynamoStore(client, aioseq_store.table) as borrowed:
            assert await borrowed.atomic_counter("k").next() == 1
        assert borrowed.closed
        assert (await client.list_tables())["TableNames"]  # still usable


async def test_requests_are_counted_per_operation(aioseq_store: DynamoStore) -> None:
    before = aioseq_store.requests
    await aioseq_store.atomic_counter("k").next_many(10)
    await aioseq_store.sort_key_counter("p").put()
    assert aioseq_store.requests - before == {"UpdateItem": 1, "Query": 1, "PutItem": 1}


async def test_the_endpoint_comes_from_the_environment(
    aioseq_endpoint: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_ENDPOINT_URL_DYNAMODB", aioseq_endpoint)
    async with DynamoStore.open() as store:
        assert store.client.meta.endpoint_url == aioseq_endpoint


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


async def test_cancellation_of_a_request_in_flight_propagates(aioseq_store: DynamoStore) -> None:
    counter = aioseq_store.atomic_counter("k")
    task = asyncio.create_task(counter.next())
    await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await counter.next() >= 1  # the store is still usable


@pytest.mark.parametrize(
    "options",
    [
        {"max_attempts": 0},
        {"max_attempts": 2.0},
        {"max_delay_secs": -1},
        {"initial_backoff_secs": 0},
        {"initial_backoff_secs": 2, "max_backoff_secs": 1},
    ],
)
def test_bad_retry_policies_are_refused(options: dict[str, object]) -> None:
    with pytest.raises(ConfigurationError):
        RetryPolicy(**options)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "options",
    [
        {"name": "ab"},
        {"partition_key": ""},
        {"partition_key": "a", "sort_key": "a"},
        {"sort_key_type": "B"},
    ],
)
def test_bad_table_specs_are_refused(options: dict[str, object]) -> None:
    with pytest.raises(ConfigurationError):
        TableSpec(**options)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "options",
    [{"max_pool_connections": 0}, {"read_timeout_secs": 0}, {"connect_timeout_secs": "1"}],
)
def test_bad_client_options_are_refused(options: dict[str, object]) -> None:
    with pytest.raises(ConfigurationError):
        DynamoStore.open(**options)  # type: ignore[arg-type]
