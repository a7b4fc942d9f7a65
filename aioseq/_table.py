"""Table administration: create the counter table, wait until it is active, check its key
schema, enable its time to live, delete it. Functions on a store's
[`contracts.Store`][aioseq.contracts.Store], each request under its retry engine;
[`DynamoStore.create_table()`][aioseq.DynamoStore.create_table] and its kin call them. Every
``DescribeTable`` answer is handed to ``learn`` (the store learns its
[`replication()`][aioseq.DynamoStore.replication] from it).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from aioseq._checks import check_seconds
from aioseq.config import EXPIRES_ATTRIBUTE, TableSpec
from aioseq.contracts import Store
from aioseq.errors import ConfigurationError, StoreClosed, StoreError, ValidationFailed

__all__ = [
    "TABLE_POLL_SECS",
    "check_key_schema",
    "check_table",
    "create_table",
    "delete_table",
    "enable_ttl",
]

#: Seconds between two ``DescribeTable`` polls while a new table is not ``ACTIVE`` yet.
TABLE_POLL_SECS = 0.5

#: What is told each table ``DescribeTable`` describes (its ``"Table"``).
Learn = Callable[[dict[str, Any]], object]


async def create_table(store: Store, learn: Learn, *, timeout_secs: float, ttl: bool) -> bool:
    """``CreateTable`` (on-demand) unless the table exists, then `DescribeTable` until it is
    ``ACTIVE``; an existing table is checked (`check_table`); with ``ttl``, `enable_ttl`.
    A ``ResourceInUseException`` (the table exists, or a resend found the one it made) counts
    as existing.

    Returns:
        True if this call created the table.

    Raises:
        ConfigurationError: a bad ``timeout_secs``; another key schema; with ``ttl``, a time
            to live on another attribute.
        StoreClosed: the store closed after ``CreateTable``.
        RetriesExhausted, StoreError: the requests failed, or the table was not active in time.
    """
    check_seconds(timeout_secs, "timeout_secs")
    spec = store.table
    key_schema = [{"AttributeName": spec.partition_key, "KeyType": "HASH"}]
    attributes = [{"AttributeName": spec.partition_key, "AttributeType": "S"}]
    if spec.sort_key is not None:
        key_schema.append({"AttributeName": spec.sort_key, "KeyType": "RANGE"})
        attributes.append({"AttributeName": spec.sort_key, "AttributeType": spec.sort_key_type})
    try:
        await store.send_with_retries(
            "create_table",
            TableName=spec.name,
            KeySchema=key_schema,
            AttributeDefinitions=attributes,
            BillingMode="PAY_PER_REQUEST",
        )
        created = True
    except StoreError as exc:
        if exc.code != "ResourceInUseException":
            raise
        created = False
    if store.closed:
        raise StoreClosed("this DynamoStore is closed")
    await _wait_until_active(store, learn, timeout_secs)
    if not created:
        await check_table(store, learn)
    if ttl:
        await enable_ttl(store)
    return created


async def _wait_until_active(store: Store, learn: Learn, timeout_secs: float) -> None:
    """Poll ``DescribeTable`` (each under the retry engine) until the table is ``ACTIVE``:
    at once, then every `TABLE_POLL_SECS` on the store's clock.

    Raises:
        StoreError: it is not active after ``timeout_secs``.
    """
    clock = store.clock
    deadline = clock.now() + timeout_secs
    name = store.table.name
    while True:
        described = await store.send_with_retries("describe_table", TableName=name)
        status = described.get("Table", {}).get("TableStatus")
        if status == "ACTIVE":
            learn(described["Table"])
            return
        if clock.now() >= deadline:
            raise StoreError(f"table {name!r} is not active after {timeout_secs:g} s: {status}")
        await clock.sleep(TABLE_POLL_SECS)


async def check_table(store: Store, learn: Learn) -> None:
    """One ``DescribeTable``, told to ``learn``, and its key schema checked (`check_key_schema`).

    Raises:
        TableNotFound: the table does not exist.
        ConfigurationError: its key schema differs from ``store.table``.
    """
    spec = store.table
    described = (await store.send_with_retries("describe_table", TableName=spec.name))["Table"]
    learn(described)
    check_key_schema(spec, described)


def check_key_schema(spec: TableSpec, described: dict[str, Any]) -> None:
    """Raise unless ``described`` (a ``DescribeTable`` answer's ``"Table"``) has the key
    schema ``spec`` describes: its partition key a string, its sort key (if any) of
    ``spec.sort_key_type``. Pure.

    Raises:
        ConfigurationError: another key schema.
    """
    types = {a["AttributeName"]: a["AttributeType"] for a in described["AttributeDefinitions"]}
    found = {
        k["KeyType"]: (k["AttributeName"], types.get(k["AttributeName"]))
        for k in described["KeySchema"]
    }
    wanted = {"HASH": (spec.partition_key, "S")}
    if spec.sort_key is not None:
        wanted["RANGE"] = (spec.sort_key, spec.sort_key_type)
    if found != wanted:
        raise ConfigurationError(
            f"table {spec.name!r} has key schema {found}, aioseq expects {wanted}"
        )


async def enable_ttl(store: Store) -> bool:
    """``DescribeTimeToLive``, then ``UpdateTimeToLive`` on `EXPIRES_ATTRIBUTE` unless it is
    enabled; a refused update is followed by a second ``DescribeTimeToLive``, which decides
    (a resend after a lost answer finds it enabled).

    Returns:
        True if this call enabled it, False if it was enabled already.

    Raises:
        ConfigurationError: the time to live is on another attribute (nothing changed).
        TableNotFound, RetriesExhausted, StoreError: the requests failed.
    """
    if await _ttl_enabled(store):
        return False
    try:
        await store.send_with_retries(
            "update_time_to_live",
            TableName=store.table.name,
            TimeToLiveSpecification={"Enabled": True, "AttributeName": EXPIRES_ATTRIBUTE},
        )
    except ValidationFailed:
        if not await _ttl_enabled(store):  # (enabled by a lost answer's first attempt?)
            raise
    return True


async def _ttl_enabled(store: Store) -> bool:
    """Whether the table's time to live is enabled (or being enabled) on
    ``aioseq_expires``: one ``DescribeTimeToLive``.

    Raises:
        ConfigurationError: it is on another attribute.
    """
    name = store.table.name
    described = await store.send_with_retries("describe_time_to_live", TableName=name)
    found = described.get("TimeToLiveDescription") or {}
    status = found.get("TimeToLiveStatus", "DISABLED")
    attribute = found.get("AttributeName")
    if status not in ("ENABLED", "ENABLING"):
        return False
    if attribute != EXPIRES_ATTRIBUTE:
        raise ConfigurationError(
            f"table {name!r} has its time to live on attribute {attribute!r}"
            f" ({status}); a table has one, and aioseq's idempotency records expire on"
            f" {EXPIRES_ATTRIBUTE!r}: records past their expiry still count as absent, but"
            " DynamoDB will not delete them. Nothing was changed"
        )
    return True


async def delete_table(store: Store) -> None:
    """One ``DeleteTable``, under the retry engine."""
    await store.send_with_retries("delete_table", TableName=store.table.name)
