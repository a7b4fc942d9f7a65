"""The IAM permissions aioseq needs: the DynamoDB actions it calls, on the table's ARN, no more.

Each feature sends a fixed set of DynamoDB API operations
([`FEATURE_OPERATIONS`][aioseq.iam.FEATURE_OPERATIONS]), and each operation needs IAM actions
([`OPERATION_ACTIONS`][aioseq.iam.OPERATION_ACTIONS]). ``TransactWriteItems`` has no IAM action of
its own: each write in it is authorized as the matching single-item action (``Put`` as
``dynamodb:PutItem``, ``Update`` as ``dynamodb:UpdateItem``; AWS DynamoDB Developer Guide, "Using
IAM with DynamoDB transactions"), and aioseq's transactions hold only those two.
``ReturnValuesOnConditionCheckFailure=ALL_OLD`` needs no read permission.

[`policy()`][aioseq.iam.policy] writes the identity-based policy document:

    >>> document = policy("arn:aws:dynamodb:eu-west-1:123456789012:table/aioseq")
    >>> print(*document["Statement"][0]["Action"], sep="\n")
    dynamodb:DescribeTable
    dynamodb:GetItem
    dynamodb:PutItem
    dynamodb:Query
    dynamodb:UpdateItem

``tests/integration/test_iam.py`` runs every feature against a real server, records the
operations sent (and the kind of each write inside a transaction) through botocore's event
hooks, and checks that they need exactly these actions on exactly the table.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

from aioseq._checks import check_table_name
from aioseq.errors import ConfigurationError

__all__ = [
    "ADMIN_FEATURES",
    "FEATURE_OPERATIONS",
    "OPERATION_ACTIONS",
    "RUNTIME_FEATURES",
    "TRANSACTION_ACTIONS",
    "actions",
    "policy",
    "table_arn",
]

#: The DynamoDB API operations each feature sends.
FEATURE_OPERATIONS: dict[str, frozenset[str]] = {
    # Whatever writes a counter: before its first write, the store asks DescribeTable once
    # whether its table is a global table (DynamoStore.replication(), aioseq.regions).
    # next/next_many (ADD), give_back (SET); current
    "atomic_counter": frozenset({"DescribeTable", "UpdateItem", "GetItem"}),
    # refills are the atomic counter's ADD, the give-back its SET; current
    "block_allocator": frozenset({"DescribeTable", "UpdateItem", "GetItem"}),
    # first read; the conditional write (write="update" or "put")
    "optimistic_counter": frozenset({"DescribeTable", "GetItem", "UpdateItem", "PutItem"}),
    # the highest sort key; the conditional put; a group's transaction of puts
    "sort_key_counter": frozenset({"DescribeTable", "Query", "PutItem", "TransactWriteItems"}),
    # first read; the counter update and the put(s) in one transaction
    "transactional_counter": frozenset({"DescribeTable", "GetItem", "TransactWriteItems"}),
    # DynamoStore(regions=...): each key's Region scope record, read, created once
    "region_scope": frozenset({"GetItem", "PutItem"}),
    # aioseq.ShardedItems.items(): a Query of each shard
    "sharded_items": frozenset({"Query"}),
    # DynamoStore.create_table() / aioseq create-table: create, then wait until active
    "create_table": frozenset({"CreateTable", "DescribeTable"}),
    # DynamoStore.enable_ttl() / aioseq enable-ttl / create_table(ttl=True) / create-table
    # --ttl: look, then enable the time to live on aioseq_expires
    "enable_ttl": frozenset({"DescribeTimeToLive", "UpdateTimeToLive"}),
    # DynamoStore.check_table()
    "check_table": frozenset({"DescribeTable"}),
    # DynamoStore.delete_table(): tests and demos only
    "delete_table": frozenset({"DeleteTable"}),
    # aioseq.admin.set_numbering(): read the counter item, then the conditional update
    "set_numbering": frozenset({"DescribeTable", "GetItem", "UpdateItem"}),
    # aioseq.admin.ensure_at_least(): one conditional UpdateItem, run by every deployment at
    # start-up, so a runtime feature (UpdateItem is in the runtime policy already)
    "ensure_at_least": frozenset({"DescribeTable", "UpdateItem"}),
    # aioseq.admin.set_counter() / aioseq set: one conditional UpdateItem. An operator's tool;
    # IAM cannot tell it from the strategies' UpdateItem, so a runtime role can do it too.
    "set_counter": frozenset({"DescribeTable", "UpdateItem"}),
    # aioseq.admin.list_counters() / aioseq list: a paginated Scan of the counter table
    "list_counters": frozenset({"Scan"}),
    # aioseq.admin.describe_counter(): one GetItem; aioseq describe also asks
    # admin.partition_ceiling(), a Query of the counter item's partition
    "describe_counter": frozenset({"GetItem", "Query"}),
    # aioseq.admin.start_after_maximum() / aioseq start-after: a parallel Scan of the table
    # that holds the ids (give its ARN too), or with --partition its key schema and a Query;
    # the counter item's GetItem and UpdateItem
    "start_after_maximum": frozenset({"Scan", "DescribeTable", "Query", "GetItem", "UpdateItem"}),
    # aioseq.admin.audit_counter() / aioseq audit: the counter item, a Query of its items (in
    # another table: its key schema first); with no key, the listing's Scan (list_counters)
    "audit_counter": frozenset({"GetItem", "Query", "DescribeTable"}),
}

#: The features an application uses at run time.
RUNTIME_FEATURES: tuple[str, ...] = (
    "atomic_counter",
    "block_allocator",
    "optimistic_counter",
    "sort_key_counter",
    "transactional_counter",
    "sharded_items",
    "region_scope",
    "ensure_at_least",
)
#: The features that manage the table and operate counters (deployment, operators, tests).
ADMIN_FEATURES: tuple[str, ...] = (
    "create_table",
    "enable_ttl",
    "check_table",
    "delete_table",
    "set_counter",
    "list_counters",
    "describe_counter",
    "start_after_maximum",
    "set_numbering",
    "audit_counter",
)

#: The IAM action of each write kind inside ``TransactWriteItems``.
TRANSACTION_ACTIONS: dict[str, str] = {
    "Put": "dynamodb:PutItem",
    "Update": "dynamodb:UpdateItem",
    "Delete": "dynamodb:DeleteItem",
    "ConditionCheck": "dynamodb:ConditionCheckItem",
}

#: The IAM actions each operation aioseq sends needs (a transaction: those of the writes
#: aioseq puts in it).
OPERATION_ACTIONS: dict[str, frozenset[str]] = {
    "GetItem": frozenset({"dynamodb:GetItem"}),
    "PutItem": frozenset({"dynamodb:PutItem"}),
    "UpdateItem": frozenset({"dynamodb:UpdateItem"}),
    "Query": frozenset({"dynamodb:Query"}),
    "Scan": frozenset({"dynamodb:Scan"}),
    "TransactWriteItems": frozenset({TRANSACTION_ACTIONS["Put"], TRANSACTION_ACTIONS["Update"]}),
    "CreateTable": frozenset({"dynamodb:CreateTable"}),
    "DescribeTable": frozenset({"dynamodb:DescribeTable"}),
    "DeleteTable": frozenset({"dynamodb:DeleteTable"}),
    "DescribeTimeToLive": frozenset({"dynamodb:DescribeTimeToLive"}),
    "UpdateTimeToLive": frozenset({"dynamodb:UpdateTimeToLive"}),
}


def actions(features: Iterable[str] = RUNTIME_FEATURES) -> list[str]:
    """The IAM actions ``features`` need, sorted (names from
    [`FEATURE_OPERATIONS`][aioseq.iam.FEATURE_OPERATIONS]).

    Raises:
        ConfigurationError: an unknown feature.
    """
    needed: set[str] = set()
    for feature in features:
        if feature not in FEATURE_OPERATIONS:
            raise ConfigurationError(
                f"unknown feature {feature!r}; choose from {', '.join(FEATURE_OPERATIONS)}"
            )
        for operation in FEATURE_OPERATIONS[feature]:
            needed |= OPERATION_ACTIONS[operation]
    return sorted(needed)


#: A table's ARN as a policy names it: ``*`` wildcards, ``REGION`` and ``ACCOUNT`` placeholders.
_TABLE_ARN = re.compile(
    r"arn:[a-z-]+:dynamodb:(?:[a-z0-9*-]+|REGION):(?:[0-9]{12}|\*|ACCOUNT):table/[A-Za-z0-9_.*-]{1,255}"
)


def table_arn(table: str, *, region: str, account: str, partition: str = "aws") -> str:
    """``arn:{partition}:dynamodb:{region}:{account}:table/{table}``.

    Raises:
        ConfigurationError: a bad table name, or an account id that is not 12 digits.
    """
    check_table_name(table)
    if not (isinstance(account, str) and len(account) == 12 and account.isdigit()):
        raise ConfigurationError(f"account must be a 12-digit AWS account id: {account!r}")
    return f"arn:{partition}:dynamodb:{region}:{account}:table/{table}"


def policy(
    table_arns: str | Sequence[str],
    *,
    features: Iterable[str] = RUNTIME_FEATURES,
    admin_features: Iterable[str] = (),
) -> dict[str, Any]:
    """The identity-based IAM policy document (a JSON-ready dict) that lets aioseq do
    ``features`` (default: every strategy and the allocator) and ``admin_features`` (e.g.
    ``("create_table",)``, in a statement of its own) on the tables ``table_arns``: the
    counter table, plus a [`TransactionalCounter`][aioseq.TransactionalCounter]'s ``item_table`` if
    it has one.

    Raises:
        ConfigurationError: an unknown feature, no ARN, or one that is not a table's (a table
            name of DynamoDB's characters; ``*`` wildcards and the placeholders ``REGION`` and
            ``ACCOUNT`` are allowed).
    """
    arns = [table_arns] if isinstance(table_arns, str) else list(table_arns)
    if not arns or not all(isinstance(a, str) and _TABLE_ARN.fullmatch(a) for a in arns):
        raise ConfigurationError(
            "table_arns must be one or more DynamoDB table ARNs"
            f" (arn:PARTITION:dynamodb:REGION:ACCOUNT:table/NAME): {table_arns!r}"
        )
    resource: str | list[str] = arns[0] if len(arns) == 1 else arns
    statements = [
        {"Sid": sid, "Effect": "Allow", "Action": granted, "Resource": resource}
        for sid, granted in (
            ("AioseqCounters", actions(features)),
            ("AioseqTable", actions(admin_features)),
        )
        if granted
    ]
    if not statements:
        raise ConfigurationError("no features: the policy would allow nothing")
    return {"Version": "2012-10-17", "Statement": statements}
