"""Table administration from the store (``create_table()``, ``check_table()``,
``delete_table()``, in aioseq/_table.py) on FakeDynamoDB: the requests each sends, the key
schema checked, and the table's replication learned from the ``DescribeTable`` they read, so
the first write asks no more. The time to live is test_time_to_live_on_fake.py's;
tests/integration/test_store.py and test_bad_input.py run these on moto and DynamoDB Local."""

from __future__ import annotations

import pytest

from aioseq import ConfigurationError, DynamoStore, StoreClosed, TableNotFound, TableSpec
from aioseq.testing import FakeDynamoDB


async def test_create_table_creates_once_and_learns_the_replication(fake: FakeDynamoDB) -> None:
    async with DynamoStore(transport=fake, idle_secs=None) as store:
        assert await store.create_table() is True
        assert fake.requests == {"CreateTable": 1, "DescribeTable": 1}
        await store.replication()  # learned from the DescribeTable above: no request
        assert await store.create_table() is False  # exists: polled once, then checked
        assert fake.requests == {"CreateTable": 2, "DescribeTable": 3}


async def test_check_table_learns_the_replication(
    fake_store: DynamoStore, fake: FakeDynamoDB
) -> None:
    store = DynamoStore(transport=fake, idle_secs=None)  # (fake_store closes the fake)
    await store.check_table()
    await store.replication()
    assert fake.requests == {"DescribeTable": 1}
    async with DynamoStore(transport=FakeDynamoDB(), idle_secs=None) as other:
        with pytest.raises(TableNotFound):
            await other.check_table()


@pytest.mark.parametrize(
    "wrong",
    [
        pytest.param({"sort_key": None}, id="no-sort-key"),
        pytest.param({"sort_key_type": "S"}, id="sort-key-type"),
        pytest.param({"partition_key": "id"}, id="partition-key-name"),
    ],
)
async def test_another_key_schema_is_refused_and_nothing_is_changed(
    fake_store: DynamoStore, fake: FakeDynamoDB, wrong: dict[str, object]
) -> None:
    spec = TableSpec(name=fake_store.table.name, **wrong)  # type: ignore[arg-type]
    async with DynamoStore(transport=fake, table=spec, idle_secs=None) as store:
        with pytest.raises(ConfigurationError, match="key schema"):
            await store.check_table()
        with pytest.raises(ConfigurationError, match="key schema"):
            await store.create_table()
    assert set(fake.requests) == {"CreateTable", "DescribeTable"}  # no write, no delete


async def test_bad_timeout_is_refused_before_any_request(fake_store: DynamoStore) -> None:
    with pytest.raises(ConfigurationError, match="timeout_secs"):
        await fake_store.create_table(timeout_secs=0)


async def test_create_table_on_a_closed_store_is_refused(fake: FakeDynamoDB) -> None:
    store = DynamoStore(transport=fake, idle_secs=None)
    await store.aclose()
    with pytest.raises(StoreClosed):
        await store.create_table()


async def test_delete_table_deletes_it(fake_store: DynamoStore, fake: FakeDynamoDB) -> None:
    await fake_store.delete_table()
    assert fake.requests == {"DeleteTable": 1}
    with pytest.raises(TableNotFound):
        await fake_store.check_table()
