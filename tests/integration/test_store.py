"""DynamoStore against a server: the client's lifecycle, the table helper, error translation,
cancellation (retries and bad options, which need no server: tests/unit)."""

from __future__ import annotations

import asyncio
import uuid

import aioboto3
import pytest

from aioseq import (
    DynamoStore,
    TableSpec,
    ValidationFailed,
)


async def test_create_table_is_idempotent(aioseq_endpoint: str) -> None:
    spec = TableSpec(name=f"aioseq-test-{uuid.uuid4().hex[:8]}")
    async with DynamoStore.open(table=spec, endpoint_url=aioseq_endpoint) as store:
        assert await store.create_table() is True
        assert await store.create_table() is False
        await store.check_table()
        await store.delete_table()


async def test_dynamodb_errors_are_translated_by_code(aioseq_store: DynamoStore) -> None:
    with pytest.raises(ValidationFailed) as caught:
        await aioseq_store.send_once("get_item", TableName=aioseq_store.table.name, Key={})
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


async def test_cancellation_of_a_request_in_flight_propagates(aioseq_store: DynamoStore) -> None:
    counter = aioseq_store.atomic_counter("k")
    task = asyncio.create_task(counter.next())
    await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await counter.next() >= 1  # the store is still usable
