"""The table's time to live from aioseq (``DynamoStore.enable_ttl()``,
``create_table(ttl=True)``), on FakeDynamoDB: enabled once on ``aioseq_expires``, left alone
when it is, refused with nothing changed when the table's time to live is another
attribute's. tests/integration/test_time_to_live.py runs the same on moto and DynamoDB Local,
and the CLI's ``create-table --ttl`` and ``enable-ttl``."""

from __future__ import annotations

import pytest

from aioseq import ConfigurationError, DynamoStore
from aioseq.config import EXPIRES_ATTRIBUTE
from aioseq.testing import FakeDynamoDB


async def described(store: DynamoStore) -> dict[str, str]:
    answer = await store.send_once("describe_time_to_live", TableName=store.table.name)
    return dict(answer["TimeToLiveDescription"])


async def test_create_table_leaves_the_time_to_live_off_unless_asked(fake: FakeDynamoDB) -> None:
    async with DynamoStore(transport=fake, idle_secs=None) as store:
        assert await store.create_table() is True
        assert fake.requests["UpdateTimeToLive"] == 0
        assert (await described(store))["TimeToLiveStatus"] == "DISABLED"
        assert await store.create_table(ttl=True) is False  # an existing table: enabled too
        assert await described(store) == {
            "TimeToLiveStatus": "ENABLED",
            "AttributeName": EXPIRES_ATTRIBUTE,
        }


async def test_enable_ttl_enables_once(fake_store: DynamoStore, fake: FakeDynamoDB) -> None:
    assert await fake_store.enable_ttl() is True
    assert await fake_store.enable_ttl() is False  # one DescribeTimeToLive, no update
    assert fake.requests == {"DescribeTimeToLive": 2, "UpdateTimeToLive": 1}


async def test_a_lost_answer_is_resent_and_found_enabled(
    fake_store: DynamoStore, fake: FakeDynamoDB
) -> None:
    fake.inject("response-lost", operation="UpdateTimeToLive")
    assert await fake_store.enable_ttl() is True
    assert (await described(fake_store))["TimeToLiveStatus"] == "ENABLED"


async def test_another_attributes_time_to_live_is_refused_and_left_alone(
    fake_store: DynamoStore, fake: FakeDynamoDB
) -> None:
    spec = {"Enabled": True, "AttributeName": "expires_at"}
    await fake_store.send_once(
        "update_time_to_live", TableName=fake_store.table.name, TimeToLiveSpecification=spec
    )
    fake.reset()
    with pytest.raises(ConfigurationError, match="'expires_at'"):
        await fake_store.enable_ttl()
    with pytest.raises(ConfigurationError, match="'expires_at'"):
        await fake_store.create_table(ttl=True)
    assert fake.requests["UpdateTimeToLive"] == 0
    assert (await described(fake_store))["AttributeName"] == "expires_at"
