"""Every request aioseq sends runs under the store's retry engine: the table's creation and its
wait, the strategies' reads and writes, counter administration and the table's deletion.

The fault proxy injects the failures; what it recorded (``on_exchange``) says which requests
failed, so the tests do not take aioseq's word for its own retries.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import pytest
from checks import run_cli

from aioseq import DynamoStore, Numbering, RetryPolicy, TableNotFound, TableSpec, admin, iam
from aioseq.testing.fault_proxy import Exchange, FaultProxy, FaultSchedule

#: Every DynamoDB operation aioseq sends: those of every feature of its IAM policies.
EVERY_OPERATION = frozenset().union(*iam.FEATURE_OPERATIONS.values())

#: Waits between attempts kept to a few milliseconds: the tests measure retries, not backoff.
FAST_RETRIES = RetryPolicy(max_attempts=20, initial_backoff_secs=0.001, max_backoff_secs=0.005)


@dataclass(frozen=True)
class FirstAttemptFails(FaultSchedule):
    """Every other request of each operation fails, its first one included, with ``kinds`` in
    turn (one failure after another, whatever the operation): while one request of an
    operation is in flight at a time, each request's first attempt fails and its retry passes.
    None of these kinds reaches the server, so no write is applied twice."""

    kinds: tuple[str, ...] = ("internal-error", "http-500", "throttling", "reset")

    def picker(self) -> Callable[[str], str | None]:
        seen: Counter[str] = Counter()
        failures = 0

        def pick(operation: str) -> str | None:
            nonlocal failures
            seen[operation] += 1
            if seen[operation] % 2 == 0:
                return None
            failures += 1
            return self.kinds[(failures - 1) % len(self.kinds)]

        return pick


@pytest.fixture
def tables(aioseq_endpoint: str) -> Iterator[list[str]]:
    """Names for fresh tables (:func:`new_table`); those that exist at the end are deleted,
    straight on the server (a sync fixture: the CLI test is sync)."""
    names: list[str] = []
    yield names

    async def delete_all() -> None:
        async with DynamoStore.open(endpoint_url=aioseq_endpoint) as store:
            for name in names:
                with contextlib.suppress(TableNotFound):  # never made, or the test deleted it
                    await store.send_with_retries("delete_table", TableName=name)

    asyncio.run(delete_all())


def new_table(tables: list[str]) -> str:
    tables.append(f"aioseq-test-{uuid.uuid4().hex[:12]}")
    return tables[-1]


async def test_every_kind_of_request_is_retried(aioseq_endpoint: str, tables: list[str]) -> None:
    exchanges: list[Exchange] = []  # appended in the proxy's thread
    with FaultProxy(aioseq_endpoint, FirstAttemptFails(), on_exchange=exchanges.append) as proxy:
        table = TableSpec(name=new_table(tables))
        async with DynamoStore.open(
            table=table, endpoint_url=proxy.endpoint_url, retry_policy=FAST_RETRIES
        ) as store:
            # CreateTable, DescribeTable (the wait until ACTIVE)
            assert await store.create_table() is True
            # DescribeTimeToLive, UpdateTimeToLive
            assert await store.enable_ttl() is True
            # UpdateItem, GetItem
            atomic = store.atomic_counter("atomic")
            assert await atomic.next_many(3) == range(1, 4)
            assert await atomic.current() == 3
            async with store.block_allocator("allocator", block_size=5) as allocator:
                assert await allocator.next() == 1
            # GetItem then UpdateItem, and PutItem
            assert await store.optimistic_counter("optimistic", group=False).next() == 1
            assert await store.optimistic_counter("put", write="put", group=False).next() == 1
            # Query, PutItem
            assert await store.sort_key_counter("sorted", group=False).put({"a": 1}) == 1
            # GetItem, TransactWriteItems
            invoices = store.transactional_counter("invoices", group=False)
            assert await invoices.put(lambda n: {"pk": "invoice", "sk": n}) == 1
            # counter administration: UpdateItem, GetItem, Scan
            assert await admin.set_counter(store, "atomic", 100) == 3
            assert await admin.ensure_at_least(store, "atomic", 50) == 100
            assert (await admin.describe_counter(store, "atomic")).value == 100
            assert await admin.set_numbering(store, "renumbered", Numbering(3, 2)) is None
            listed = {info.key: info.value async for info in admin.list_counters(store)}
            assert listed["atomic"] == 100 and listed["renumbered"] == 0
            assert (
                await admin.start_after_maximum(store, "ids", table=table.name, attribute="sk") == 1
            )
            assert await atomic.next() == 101
            # DeleteTable
            await store.delete_table()

    sent = {e.operation for e in exchanges}
    assert sent == EVERY_OPERATION  # this workload sends every kind aioseq has
    failed = {e.operation for e in exchanges if e.fault is not None}
    answered = {e.operation for e in exchanges if e.fault is None and e.delivered}
    assert failed == EVERY_OPERATION, sorted(EVERY_OPERATION - failed)
    assert answered == EVERY_OPERATION, sorted(EVERY_OPERATION - answered)
    assert set(proxy.injected) == set(FirstAttemptFails.kinds)


#: 20% of requests answered HTTP 500 (half DynamoDB's InternalServerError, half a bare 500
#: page), 5% reset.
FLAKY = {"internal-error": 0.10, "http-500": 0.10, "reset": 0.05}


def flaky_schedule() -> FaultSchedule:
    """:data:`FLAKY`, with a seed whose first requests get a reset and then a 500: the first
    ``CreateTable`` meets both (the rest of the draws fall as they may)."""
    for seed in range(10_000):
        pick = FaultSchedule(FLAKY, seed=seed).picker()
        if [pick("CreateTable"), pick("CreateTable")] == ["reset", "internal-error"]:
            return FaultSchedule(FLAKY, seed=seed)
    raise AssertionError("no such seed")


@pytest.mark.only_on("moto")  # the retry engine's, through the fault proxy: one server is enough
def test_create_table_then_list_through_500s_and_resets_on_5_fresh_tables(
    aioseq_endpoint: str, tables: list[str]
) -> None:
    with FaultProxy(aioseq_endpoint, flaky_schedule()) as proxy:
        for _ in range(5):
            options = ("--endpoint-url", proxy.endpoint_url, "--table", new_table(tables))
            created = run_cli(*options, "create-table")
            assert created.returncode == 0, created.stderr
            assert "created" in created.stderr
            listed = run_cli(*options, "list")
            assert (listed.returncode, listed.stdout) == (0, ""), listed.stderr
        injected = proxy.injected
    assert injected["reset"] >= 1 and injected["internal-error"] + injected["http-500"] >= 1
