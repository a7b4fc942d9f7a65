"""No credentials and no item contents in aioseq's logs, reprs or error messages (docs/security.md,
"Secrets"): every strategy runs, and fails in every way it can, with
recognizable credentials and a recognizable secret in the items, while aioseq logs at DEBUG."""

from __future__ import annotations

import asyncio
import logging
import traceback
import uuid
from collections.abc import AsyncIterator
from typing import Any

import aioboto3
import pytest
from checks import put_counter_value

from aioseq import (
    ConditionFailed,
    ConfigurationError,
    CounterValueInvalid,
    DynamoStore,
    ItemAlreadyExists,
    RetriesExhausted,
    RetryPolicy,
    TransactionCanceled,
)

ACCESS_KEY_ID = "AKIAAIOSEQNOTINLOGS7"  # letters and digits: DynamoDB Local's rule
SECRET_ACCESS_KEY = "aioseq/secret+access/key-not-in-logs"
SESSION_TOKEN = "aioseq-session-token-not-in-logs"
#: A value in the items: a card number, say.
SECRET = "4111-1111-1111-1111-not-in-logs"
NEVER_SHOWN = (ACCESS_KEY_ID, SECRET_ACCESS_KEY, SESSION_TOKEN, SECRET)


class Opaque:
    """A value with no DynamoDB type whose repr is secret."""

    def __repr__(self) -> str:
        return SECRET


def session() -> aioboto3.Session:
    return aioboto3.Session(
        aws_access_key_id=ACCESS_KEY_ID,
        aws_secret_access_key=SECRET_ACCESS_KEY,
        aws_session_token=SESSION_TOKEN,
        region_name="us-east-1",
    )


@pytest.fixture
async def store(aioseq_endpoint: str) -> AsyncIterator[DynamoStore]:
    table = f"aioseq-test-{uuid.uuid4().hex[:12]}"
    async with DynamoStore.open(
        table=table, endpoint_url=aioseq_endpoint, session=session()
    ) as opened:
        await opened.create_table()
        try:
            yield opened
        finally:
            await opened.delete_table()


def shown(error: BaseException) -> str:
    """Everything an error shows: message, repr, and the formatted chain of causes."""
    return "\n".join([str(error), repr(error), *traceback.format_exception(error)])


def assert_secret_free(text: str) -> None:
    for secret in NEVER_SHOWN:
        assert secret not in text


async def test_no_secrets_in_logs_reprs_or_errors(
    store: DynamoStore, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    errors: list[BaseException] = []

    async def fails(expected: type[BaseException], call: Any) -> None:
        with pytest.raises(expected) as caught:
            await call
        errors.append(caught.value)

    item = {"pk": "invoice", "sk": 1, "card": SECRET}
    invoices = store.transactional_counter("invoices")
    grouped = store.transactional_counter("grouped", group=True)
    issues = store.sort_key_counter("issues")
    atomic = store.atomic_counter("orders")
    optimistic = store.optimistic_counter("optimistic")
    allocator = store.block_allocator("tickets")
    counters: list[Any] = [invoices, grouped, issues, atomic, optimistic, allocator]

    # Work that succeeds.
    assert await invoices.put(item) == 1
    await asyncio.gather(*(grouped.put({"pk": "g", "sk": n, "card": SECRET}) for n in range(3)))
    await issues.put({"card": SECRET})
    await atomic.next()
    await optimistic.next()
    await allocator.next()

    # Work that fails, each way it can.
    await fails(ItemAlreadyExists, invoices.put(item))
    await fails(ItemAlreadyExists, grouped.put({"pk": "g", "sk": 0, "card": SECRET}))
    await fails(ConfigurationError, invoices.put({"pk": 7, "sk": 2, "card": SECRET}))
    await fails(ConfigurationError, invoices.put({"pk": "i", "sk": 3, "card": Opaque()}))
    await fails(ConfigurationError, issues.put({"card": Opaque()}))
    await put_counter_value(store, "secret-counter", {"S": SECRET})
    for counter in (
        store.atomic_counter("secret-counter"),
        store.optimistic_counter("secret-counter"),
        store.transactional_counter("secret-counter"),
    ):
        await fails(CounterValueInvalid, counter.current())
    await fails(
        ConditionFailed,
        store.send_once(
            "put_item",
            TableName=store.table.name,
            Item={"pk": {"S": "invoice"}, "sk": {"N": "1"}, "card": {"S": "new"}},
            ConditionExpression="attribute_not_exists(pk)",
            ReturnValuesOnConditionCheckFailure="ALL_OLD",
        ),
    )
    await fails(
        TransactionCanceled,
        store.send_once(
            "transact_write_items",
            TransactItems=[
                {
                    "Put": {
                        "TableName": store.table.name,
                        "Item": {"pk": {"S": "invoice"}, "sk": {"N": "1"}},
                        "ConditionExpression": "attribute_not_exists(pk)",
                        "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
                    }
                }
            ],
        ),
    )
    async with DynamoStore.open(
        endpoint_url="http://127.0.0.1:1",  # nothing listens: the connection is refused
        session=session(),
        retry_policy=RetryPolicy(max_attempts=2, initial_backoff_secs=0.001),
    ) as unreachable:
        await fails(RetriesExhausted, unreachable.atomic_counter("k").next())
        counters.append(unreachable)

    # The failures that carry an item keep it as data, where the caller asked for it.
    condition_failed = next(e for e in errors if isinstance(e, ConditionFailed))
    assert condition_failed.item is not None and condition_failed.item["card"] == {"S": SECRET}

    await allocator.aclose()
    for error in errors:
        assert_secret_free(shown(error))
    for shown_object in [store, *counters, *(c.statistics() for c in counters[:-1])]:
        assert_secret_free(repr(shown_object))
    ours = [r for r in caplog.records if r.name == "aioseq" or r.name.startswith("aioseq.")]
    for record in ours:
        assert_secret_free(record.getMessage())
