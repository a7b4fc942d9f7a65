"""Least privilege: every request aioseq sends, feature by feature, needs exactly the IAM actions
``aioseq.iam`` documents, on exactly the tables of the policy (docs/security.md).

The requests are recorded on a real server through botocore's event hooks: the store's
``before-send`` counter (``store.requests``) for the operations, and ``before-parameter-build``
for the table names and the kind of each write inside a transaction."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from checks import record_requests

from aioseq import (
    ConfigurationError,
    CounterNotFound,
    CounterWouldMoveBack,
    DynamoStore,
    Numbering,
    OptimisticCounter,
    ShardedItems,
    SortKeyCounter,
    TableSpec,
    TransactionalCounter,
    admin,
    iam,
)
from aioseq._strategy_table import STRATEGY_NAMES
from aioseq._workload import make_taker, run_workload

REGION, ACCOUNT = "us-east-1", "123456789012"


def arn(table: str) -> str:
    return iam.table_arn(table, region=REGION, account=ACCOUNT)


def needs(operation: str, params: dict[str, Any]) -> set[tuple[str, str]]:
    """The (IAM action, table ARN) pairs one request needs."""
    if operation == "TransactWriteItems":
        return {
            (iam.TRANSACTION_ACTIONS[kind], arn(write["TableName"]))
            for action in params["TransactItems"]
            for kind, write in action.items()
        }
    return {(action, arn(params["TableName"])) for action in iam.OPERATION_ACTIONS[operation]}


def allowed(policy: dict[str, Any]) -> set[tuple[str, str]]:
    """The (IAM action, table ARN) pairs a policy document allows."""
    pairs: set[tuple[str, str]] = set()
    for statement in policy["Statement"]:
        assert statement["Effect"] == "Allow"
        resources = statement["Resource"]
        for resource in [resources] if isinstance(resources, str) else resources:
            pairs |= {(action, resource) for action in statement["Action"]}
    return pairs


class Recorder:
    """What each feature sent: operations from ``store.requests`` (botocore's ``before-send``),
    parameters from ``before-parameter-build``."""

    def __init__(self, store: DynamoStore) -> None:
        self.store = store
        self.sent = record_requests(store)
        self.operations: dict[str, set[str]] = {}
        self.needed: dict[str, set[tuple[str, str]]] = {}

    @contextmanager
    def feature(self, name: str) -> Iterator[None]:
        before, first = self.store.requests, len(self.sent)
        yield
        self.operations.setdefault(name, set()).update(self.store.requests - before)
        for operation, params in self.sent[first:]:
            self.needed.setdefault(name, set()).update(needs(operation, params))


@pytest.fixture
async def two_tables(aioseq_endpoint: str) -> AsyncIterator[tuple[DynamoStore, str]]:
    """A store on a table that does not exist yet, and a second table for a transactional counter's
    items (deleted after the test)."""
    suffix = uuid.uuid4().hex[:12]
    spec = TableSpec(name=f"aioseq-test-{suffix}")
    items = f"aioseq-test-items-{suffix}"
    async with DynamoStore.open(table=spec, endpoint_url=aioseq_endpoint) as store:
        items_store = DynamoStore(store.client, items)
        await items_store.create_table()
        await items_store.aclose()
        try:
            yield store, items
        finally:
            await store.client.delete_table(TableName=items)


def fresh(store: DynamoStore) -> DynamoStore:
    """A store on ``store``'s client and table that has not read its table yet: its first write
    asks ``DescribeTable``, counted with ``store``'s requests (one client)."""
    return DynamoStore(store.client, store.table)


async def test_every_request_is_within_the_documented_policy(
    two_tables: tuple[DynamoStore, str],
) -> None:
    store, item_table = two_tables
    record = Recorder(store)

    with record.feature("create_table"):
        assert await store.create_table() is True
        assert await store.create_table() is False  # exists: CreateTable fails, then checked
    with record.feature("enable_ttl"):
        assert await store.enable_ttl() is True
        assert await store.enable_ttl() is False  # enabled: DescribeTimeToLive only
    with record.feature("check_table"):
        await store.check_table()

    with record.feature("atomic_counter"):
        orders = fresh(store).atomic_counter("orders")
        await orders.next()
        assert await orders.give_back(await orders.next_many(5))
        await orders.current()
    with record.feature("block_allocator"):
        async with fresh(store).block_allocator("tickets", block_size=10) as tickets:
            await tickets.next()
            await tickets.next_many(20)
            await tickets.current()
    with record.feature("optimistic_counter"):
        for options in ({"write": "update"}, {"write": "put"}, {"group": True}):
            optimistic = OptimisticCounter(fresh(store), "optimistic", **options)
            await asyncio.gather(*(optimistic.next() for _ in range(5)))
            await optimistic.current()
    with record.feature("sort_key_counter"):
        await fresh(store).sort_key_counter("issues").put()
        issues = SortKeyCounter(store, "issues", group=True)
        await asyncio.gather(*(issues.put({"title": "t"}) for _ in range(5)))
        await issues.current()
    with record.feature("transactional_counter"):
        for options in ({}, {"group": True}, {"item_table": item_table}):
            invoices = TransactionalCounter(fresh(store), "invoices", **options)
            puts = [invoices.put(lambda n: {"pk": "invoice", "sk": n}) for _ in range(5)]
            await asyncio.gather(*puts)
            await invoices.current()
        spread = ShardedItems("invoice", 2)  # its counter item records where they are
        sharded = TransactionalCounter(
            fresh(store), "sharded", item_table=item_table, layout=spread
        )
        await sharded.put(spread.key)
    with record.feature("sharded_items"):
        assert [item async for item in ShardedItems("invoice", 4).items(store)] == []
    with record.feature("region_scope"):  # a key's scope record: made, then found
        for _ in range(2):
            scoped = DynamoStore(
                store.client,
                store.table,
                regions=["us-east-1", "eu-west-1"],
                region_name="us-east-1",
            )
            await scoped.check_writes("scoped")
            await scoped.aclose()

    # Operating counters (issue #16): every path of each, refusals included.
    with record.feature("ensure_at_least"):
        assert await admin.ensure_at_least(fresh(store), "orders", 100) == 100
        assert await admin.ensure_at_least(store, "orders", 50) == 100  # refused: ALL_OLD, no read
    with record.feature("set_counter"):
        await admin.set_counter(fresh(store), "orders", 200)
        with pytest.raises(CounterWouldMoveBack):
            await admin.set_counter(store, "orders", 10)
        await admin.set_counter(store, "orders", 10, allow_backward=True)
    with record.feature("list_counters"):
        assert "orders" in [info.key async for info in admin.list_counters(store)]
    with record.feature("describe_counter"):  # as `aioseq describe` asks
        await admin.describe_counter(store, "orders")
        await admin.partition_ceiling(store, "orders")
        with pytest.raises(CounterNotFound):
            await admin.describe_counter(store, "never-used")
    with record.feature("start_after_maximum"):  # scans the items' table, moves "orders"
        await admin.start_after_maximum(
            store, "orders", table=item_table, attribute="sk", segments=2
        )
        await admin.start_after_maximum(  # one item collection: its key schema, a Query
            store, "orders", table=item_table, attribute="sk", partition="orders"
        )

    with record.feature("audit_counter"):
        await admin.audit_counter(store, "orders")  # stores no items: its counter item alone
        await admin.audit_counter(store, "invoices", partition="invoice")  # its items: a Query
        await admin.audit_counter(store, "sharded")  # in another table: its key schema too

    with record.feature("cli"):  # `aioseq next` and `aioseq current`, every strategy
        for strategy in STRATEGY_NAMES:
            await run_workload(store, strategy, f"cli-{strategy}", count=5, concurrency=2)
            await make_taker(store, strategy, f"cli-{strategy}").current()

    with record.feature("set_numbering"):
        await admin.set_numbering(fresh(store), "renumbered", Numbering(3, 2))  # a new counter
        await admin.set_numbering(store, "orders", Numbering(3, 2))  # one in use

    with record.feature("delete_table"):
        await store.delete_table()

    # Each feature sends exactly the operations aioseq.iam lists for it.
    for feature, operations in iam.FEATURE_OPERATIONS.items():
        assert record.operations[feature] == operations, feature
    assert record.operations["cli"] <= set().union(
        *(iam.FEATURE_OPERATIONS[f] for f in iam.RUNTIME_FEATURES)
    )

    # Every request is allowed by the documented policy; the policy allows nothing unused.
    policy = iam.policy([arn(store.table.name), arn(item_table)], admin_features=iam.ADMIN_FEATURES)
    needed = set().union(*record.needed.values())
    assert needed <= allowed(policy)
    assert {action for action, _ in allowed(policy)} == {action for action, _ in needed}
    runtime = set().union(*(record.needed[f] for f in (*iam.RUNTIME_FEATURES, "cli")))
    assert {action for action, _ in runtime} == set(iam.actions())


def test_the_policy_document() -> None:
    table = arn("aioseq")
    assert iam.policy(table) == {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Sid": "AioseqCounters",
                "Effect": "Allow",
                "Action": [
                    "dynamodb:DescribeTable",
                    "dynamodb:GetItem",
                    "dynamodb:PutItem",
                    "dynamodb:Query",
                    "dynamodb:UpdateItem",
                ],
                "Resource": "arn:aws:dynamodb:us-east-1:123456789012:table/aioseq",
            }
        ],
    }
    only_atomic = iam.policy(table, features=["atomic_counter"], admin_features=["create_table"])
    assert [s["Action"] for s in only_atomic["Statement"]] == [
        ["dynamodb:DescribeTable", "dynamodb:GetItem", "dynamodb:UpdateItem"],
        ["dynamodb:CreateTable", "dynamodb:DescribeTable"],
    ]


def test_the_docs_show_the_policy_aioseq_iam_writes() -> None:
    page = Path(__file__).resolve().parents[2] / "docs" / "security.md"
    shown = json.loads(page.read_text(encoding="utf-8").split("```json", 1)[1].split("```", 1)[0])
    resource = "arn:aws:dynamodb:REGION:ACCOUNT:table/aioseq"
    assert shown == iam.policy(resource, admin_features=["create_table"])


@pytest.mark.parametrize(
    "call",
    [
        lambda: iam.policy("aioseq"),
        lambda: iam.policy([]),
        lambda: iam.policy(arn("aioseq"), features=["scan"]),
        lambda: iam.policy(arn("aioseq"), features=[]),
        lambda: iam.table_arn("a b", region=REGION, account=ACCOUNT),
        lambda: iam.table_arn("aioseq", region=REGION, account="123"),
    ],
)
def test_bad_policy_arguments_are_refused(call: Callable[[], object]) -> None:
    with pytest.raises(ConfigurationError):
        call()
