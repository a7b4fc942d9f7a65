"""The table's time to live from aioseq, on moto and DynamoDB Local (both implement
``UpdateTimeToLive`` and ``DescribeTimeToLive``; DynamoDB Local, as AWS, refuses to enable it
twice): ``DynamoStore.enable_ttl()``, ``create_table(ttl=True)``, and the CLI's
``create-table --ttl`` and ``enable-ttl``."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable
from typing import TypeVar

from checks import run_cli

from aioseq import DynamoStore
from aioseq.config import EXPIRES_ATTRIBUTE


async def described(store: DynamoStore) -> dict[str, str]:
    answer = await store.send_once("describe_time_to_live", TableName=store.table.name)
    return dict(answer["TimeToLiveDescription"])


T = TypeVar("T")

ENABLED = {"TimeToLiveStatus": "ENABLED", "AttributeName": EXPIRES_ATTRIBUTE}


async def test_enable_ttl(aioseq_store: DynamoStore) -> None:
    assert (await described(aioseq_store))["TimeToLiveStatus"] == "DISABLED"
    assert await aioseq_store.enable_ttl() is True
    assert await described(aioseq_store) == ENABLED
    assert await aioseq_store.enable_ttl() is False


async def test_two_stores_enabling_it_at_once_both_succeed(
    aioseq_store: DynamoStore, aioseq_endpoint: str
) -> None:
    """When both look before either enables it, the second ``UpdateTimeToLive`` is refused
    where the server refuses to enable it twice (DynamoDB Local, AWS), and its look again finds
    it enabled: both succeed. (On a loaded machine one may look after the other enabled it:
    then it sends no update and answers False.)"""
    async with DynamoStore.open(table=aioseq_store.table, endpoint_url=aioseq_endpoint) as other:
        got = await asyncio.gather(aioseq_store.enable_ttl(), other.enable_ttl())
        updates = [store.requests["UpdateTimeToLive"] for store in (aioseq_store, other)]
        assert list(got) == [n == 1 for n in updates], (got, updates)
        assert any(got), got
    assert await described(aioseq_store) == ENABLED


async def test_create_table_with_ttl(aioseq_endpoint: str) -> None:
    table = f"aioseq-test-{uuid.uuid4().hex[:8]}"
    async with DynamoStore.open(table=table, endpoint_url=aioseq_endpoint) as store:
        try:
            assert await store.create_table(ttl=True) is True
            assert await described(store) == ENABLED
            assert await store.create_table(ttl=True) is False
        finally:
            await store.delete_table()


def test_the_cli_enables_it(aioseq_endpoint: str) -> None:
    table = f"aioseq-cli-{uuid.uuid4().hex[:8]}"
    where = ("--endpoint-url", aioseq_endpoint, "--table", table)
    try:
        created = run_cli("create-table", "--ttl", *where)
        assert (created.returncode, created.stdout) == (0, ""), created.stderr
        assert created.stderr == (
            f"table {table!r} created\ntime to live on 'aioseq_expires': enabled\n"
        )
        again = run_cli("enable-ttl", *where)
        assert (again.returncode, again.stdout) == (0, ""), again.stderr
        assert again.stderr == (
            f"table {table!r}: time to live on 'aioseq_expires' enabled already\n"
        )
        assert asyncio.run(on_table(aioseq_endpoint, table, described)) == ENABLED
    finally:
        asyncio.run(on_table(aioseq_endpoint, table, DynamoStore.delete_table))


def test_the_cli_refuses_another_attributes_time_to_live(aioseq_endpoint: str) -> None:
    table = f"aioseq-cli-{uuid.uuid4().hex[:8]}"
    where = ("--endpoint-url", aioseq_endpoint, "--table", table)
    spec = {"Enabled": True, "AttributeName": "expires_at"}

    async def elsewhere(store: DynamoStore) -> None:
        await store.create_table()
        await store.send_once("update_time_to_live", TableName=table, TimeToLiveSpecification=spec)

    try:
        asyncio.run(on_table(aioseq_endpoint, table, elsewhere))
        for args in (["enable-ttl"], ["create-table", "--ttl"]):
            run = run_cli(*args, *where)
            assert run.returncode == 1 and run.stdout == ""
            assert "ConfigurationError" in run.stderr and "'expires_at'" in run.stderr
        found = asyncio.run(on_table(aioseq_endpoint, table, described))
        assert found["AttributeName"] == "expires_at"
    finally:
        asyncio.run(on_table(aioseq_endpoint, table, DynamoStore.delete_table))


async def on_table(endpoint: str, table: str, do: Callable[[DynamoStore], Awaitable[T]]) -> T:
    async with DynamoStore.open(table=table, endpoint_url=endpoint) as store:
        return await do(store)
