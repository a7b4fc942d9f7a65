"""What the contention benchmark measures: each way of taking numbers from one counter key, seen
the same way, with the DynamoDB requests it sends counted at its own client.

- aioseq's strategies, through :func:`aioseq._workload.make_taker` (the allocator with fixed
  blocks, one variant per block size; the strategies with group commit without and with it);
- aioseq's strategies made as an application makes them, ``store.transactional_counter(key)`` with
  the library's defaults or with chosen options (:class:`FactoryVariant`, through
  :func:`aioseq._workload.factory_taker`);
- a raw aiobotocore ``UpdateItem``: the seed article's request, and with the parts aioseq's
  atomic counter adds, up to its whole request, sent without aioseq (:class:`RawUpdateItemVariant`);
- a bare in-memory ``async def next()`` counter: what the event loop alone can do;
- the seed article's code: synchronous boto3 ``update_item`` with ``ADD``;
- the published peer ``dynamodb-autoincrement`` 0.2.0, for the gapless insert.

A :class:`Variant` is plain data (it crosses to worker processes); ``variant.contender(place)``
opens one client of it on one counter key, for one process.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import functools
import itertools
import os
import queue
import threading
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any, TypedDict

import aioboto3
import boto3  # type: ignore[import-untyped]
from aiobotocore.config import AioConfig

from aioseq import DynamoStore
from aioseq._client import LOCAL_CREDENTIALS, LOCAL_REGION
from aioseq._items import parse_counter
from aioseq._limits import COUNTER_ATTRIBUTE, NUMBERING_ATTRIBUTE
from aioseq._strategy_table import STRATEGY_NAMES, strategy_named
from aioseq._workload import Taker, factory_taker, make_taker, stored_numbers
from aioseq.layout import CounterKind

__all__ = [
    "NAMES",
    "REQUEST_PARTS",
    "AioseqVariant",
    "ArticleVariant",
    "BareVariant",
    "Contender",
    "FactoryVariant",
    "PeerVariant",
    "Place",
    "Promises",
    "RawUpdateItemVariant",
    "Variant",
    "client_config",
    "promises",
    "select",
    "update_request",
]

Take = Callable[[], Awaitable[int]]

#: What ``--strategies`` chooses from, in the order of the report: the baselines around
#: aioseq's strategies (:data:`aioseq._strategy_table.STRATEGIES`).
NAMES = ("bare", "boto3", *STRATEGY_NAMES, "dynamodb-autoincrement")


@dataclass(frozen=True)
class Place:
    """Where a contender takes its numbers: the server, the table, the counter key, and which of
    the row's processes it runs in (0-based)."""

    endpoint_url: str
    table: str
    key: str
    process: int = 0


@dataclass
class Contender:
    """One client of a variant, open on one counter key.

    Attributes:
        take: takes one number (or stores one item and returns its number).
        requests: DynamoDB requests this client sent, by operation, counted by a botocore
            ``before-send`` event hook (retries included). Read it after the contender closed
            to include what closing sent (the allocator's give-back).
        retries: retries by reason.
        conflicts: conditional-check failures (lost races).
    """

    take: Take
    requests: Callable[[], Counter[str]] = Counter
    retries: Callable[[], Counter[str]] = Counter
    conflicts: Callable[[], int] = int


@dataclass(frozen=True)
class Variant:
    """One line of the report.

    Attributes:
        label: its name in the table and the plot.
        name: what ``--strategies`` calls it (:data:`NAMES`).
        gapless: promises no gaps among the numbers handed out (and the stored items).
        writes_items: stores one item per number; the stored items are checked against the
            numbers handed out.
        multi_process: can run in several processes on one key.
    """

    label: str
    name: str
    gapless: bool = False
    writes_items: bool = False
    multi_process: bool = True

    def contender(self, place: Place) -> contextlib.AbstractAsyncContextManager[Contender]:
        """Open one client on ``place``; closing it releases what it holds."""
        raise NotImplementedError

    async def counter_value(self, store: DynamoStore, key: str) -> int | None:
        """The counter's value after the row: the highest number consumed, handed out or not
        (``None``: no counter outside the process, nothing to waste)."""
        return await _counter_attribute(store, key, store.table.value_attribute)

    async def stored(self, store: DynamoStore, key: str) -> list[int] | None:
        """The numbers of the items stored in the row (``None`` if it stores none)."""
        return None


async def _counter_attribute(store: DynamoStore, key: str, attribute: str) -> int:
    response = await store.send_once(
        "get_item",
        TableName=store.table.name,
        Key=store.counter_item_key(key),
        ConsistentRead=True,
    )
    return parse_counter(response.get("Item"), key, attribute)


@functools.cache
def session() -> aioboto3.Session:
    """This process's aioboto3 session: it loads botocore's service models once, and each
    contender still opens its own client from it."""
    return aioboto3.Session()


def _counting_hook(requests: Counter[str], lock: threading.Lock | None = None) -> Any:
    """A botocore ``before-send`` hook adding one to ``requests[operation]`` per HTTP request."""

    def count(event_name: str, **kwargs: Any) -> None:
        operation = event_name.rsplit(".", 1)[-1]
        if lock is None:
            requests[operation] += 1
            return
        with lock:
            requests[operation] += 1

    return count


def _client_arguments(
    endpoint_url: str, region_name: str | None, credentials: Any
) -> dict[str, Any]:
    """Endpoint, region and, where none are configured, the dummy credentials local servers
    accept: what :meth:`DynamoStore.open` does, for the baselines' own clients."""
    arguments: dict[str, Any] = {
        "endpoint_url": endpoint_url,
        "region_name": region_name or LOCAL_REGION,
    }
    if credentials is None:
        arguments.update(LOCAL_CREDENTIALS)
    return arguments


class Promises(TypedDict):
    """What a :class:`Variant` promises, as its fields."""

    gapless: bool
    writes_items: bool


def promises(strategy: str) -> Promises:
    """The :class:`Variant` fields of aioseq's ``strategy``, from its row of the strategy table:
    ``gapless`` (no gaps among the numbers handed out, a lost answer aside: this benchmark
    injects none) and ``writes_items``."""
    facts = strategy_named(strategy)
    return Promises(gapless=facts.gapless_handed_out, writes_items=facts.writes_items)


@dataclass(frozen=True)
class AioseqVariant(Variant):
    """An aioseq strategy (:data:`aioseq._strategy_table.STRATEGIES`), one counter object per
    process on its own :class:`~aioseq.DynamoStore` (one pooled aiobotocore client), through
    :func:`aioseq._workload.make_taker`."""

    strategy: str = "atomic"
    group: bool = False
    block_size: int = 100
    #: The transactional counter's items spread over this many shards
    #: (``aioseq.layout.ShardedItems(key, shards)``); ``None``: beside the counter item.
    shards: int | None = None
    #: What ``DynamoStore.open`` is given beyond the place (e.g. a ``retry_policy``).
    store_options: tuple[tuple[str, Any], ...] = ()

    def taker(self, store: DynamoStore, key: str) -> Taker:
        """The counter object of one contender."""
        return make_taker(
            store,
            self.strategy,
            key,
            block_size=self.block_size,
            fixed_block_size=True,
            group=self.group,
            shards=self.shards,
        )

    @contextlib.asynccontextmanager
    async def contender(self, place: Place) -> AsyncIterator[Contender]:
        async with DynamoStore.open(
            table=place.table,
            endpoint_url=place.endpoint_url,
            session=session(),
            **dict(self.store_options),
        ) as store:
            await store.replication()  # the store's one DescribeTable: start-up, not counted
            before = store.requests
            taker = self.taker(store, place.key)

            def retries() -> Counter[str]:
                return Counter(taker.counter.statistics().retries)

            try:
                yield Contender(
                    taker.take,
                    requests=lambda: store.requests - before,
                    retries=retries,
                    conflicts=lambda: taker.counter.statistics().conflicts,
                )
            finally:
                if taker.aclose is not None:
                    await taker.aclose()

    async def counter_value(self, store: DynamoStore, key: str) -> int | None:
        if self.strategy == "sort-key":  # no counter item: the highest sort key is the counter
            return max(await stored_numbers(store, key), default=0)
        return await super().counter_value(store, key)

    async def stored(self, store: DynamoStore, key: str) -> list[int] | None:
        if not self.writes_items:
            return None
        return await stored_numbers(store, key, shards=self.shards)


@dataclass(frozen=True)
class FactoryVariant(AioseqVariant):
    """An aioseq strategy made as an application makes it, ``store.<factory>(key, **options)``
    on a store from ``DynamoStore.open(...)`` and nothing else: with ``options`` empty, the
    library's defaults (group commit on, its group size and window; the allocator's
    demand-sized blocks), through :func:`aioseq._workload.factory_taker`: the item-writing
    strategies store ``{pk: key, sk: n}`` (the sort-key strategy adds its token), or with
    ``shards`` the transactional counter spreads them (``{pk: f"{key}#{n % shards}", sk: n}``).
    ``store_options`` go to ``DynamoStore.open`` (e.g. a ``retry_policy``; none by default)."""

    options: tuple[tuple[str, Any], ...] = ()

    def taker(self, store: DynamoStore, key: str) -> Taker:
        return factory_taker(store, self.strategy, key, dict(self.options), shards=self.shards)


#: The client settings that :meth:`DynamoStore.open` chooses, copied by the raw baseline.
CLIENT_CONFIG_FIELDS = ("max_pool_connections", "connect_timeout", "read_timeout", "retries")


def client_config(store: DynamoStore) -> dict[str, Any]:
    """The settings of ``store``'s client that shape a request's cost (pool size, timeouts,
    botocore's retries): what the raw baseline's own client is given."""
    config = store.client.meta.config
    return {name: copy.deepcopy(getattr(config, name)) for name in CLIENT_CONFIG_FIELDS}


#: The parts aioseq's atomic counter adds to the seed article's request (``ADD #value :n``,
#: ``ReturnValues=UPDATED_NEW``), each with the guarantee it buys (docs/benchmarks.md):
#:
#: - ``limit``: ``ConditionExpression`` ``attribute_not_exists(#pk) OR (attribute_type(#value,
#:   :number_type) AND #value BETWEEN :zero AND :limit)``: a counter item whose value is
#:   missing, not a number, negative, or would pass ``max_value`` is refused, nothing written;
#: - ``numbering``: ``SET #numbering = if_not_exists(#numbering, :numbering)`` and the
#:   condition ``attribute_not_exists(#numbering) OR #numbering = :numbering``: the counter
#:   item records its numbering (and what the counter is, for the audit) with the first
#:   ``ADD``, and a writer with another numbering is refused (``NumberingMismatch``), nothing
#:   written;
#: - ``all_old``: ``ReturnValues=ALL_OLD`` instead of ``UPDATED_NEW``: the item before the
#:   ``ADD``, which says whether this ``ADD`` recorded the numbering, so that a fraction's
#:   put-back can remove it again;
#: - ``on_failure``: ``ReturnValuesOnConditionCheckFailure=ALL_OLD``: a refused ``ADD`` says
#:   why with no second read (nothing on success).
REQUEST_PARTS = ("limit", "numbering", "all_old", "on_failure")


def update_request(
    table: str,
    key: dict[str, Any],
    *,
    value_attribute: str,
    partition_key: str,
    parts: Sequence[str] = (),
    numbering: str = "stride=1 offset=1",
    max_value: int = 10**38 - 1,
    n: int = 1,
) -> dict[str, Any]:
    """The ``UpdateItem`` parameters of the seed article's ``ADD`` with ``parts`` of
    :data:`REQUEST_PARTS` added; with all of them, the request :class:`~aioseq.AtomicCounter`
    sends (``tests/integration/test_benchmarks.py`` compares the two)."""
    unknown = set(parts) - set(REQUEST_PARTS)
    if unknown:
        raise ValueError(f"unknown request parts {sorted(unknown)}")
    update = "ADD #value :n"
    conditions = []
    names = {"#value": value_attribute}
    values: dict[str, Any] = {":n": {"N": str(n)}}
    if "numbering" in parts:  # (and what the counter is, recorded beside it: for the audit)
        update += (
            " SET #numbering = if_not_exists(#numbering, :numbering),"
            " #kind = if_not_exists(#kind, :kind)"
        )
        conditions.append("(attribute_not_exists(#numbering) OR #numbering = :numbering)")
        names["#numbering"] = NUMBERING_ATTRIBUTE
        names["#kind"] = COUNTER_ATTRIBUTE
        values[":numbering"] = {"S": numbering}
        values[":kind"] = {"S": CounterKind("atomic").encode()}
    if "limit" in parts:
        conditions.append(
            "(attribute_not_exists(#pk)"
            " OR (attribute_type(#value, :number_type) AND #value BETWEEN :zero AND :limit))"
        )
        names["#pk"] = partition_key
        values.update(
            {":number_type": {"S": "N"}, ":zero": {"N": "0"}, ":limit": {"N": str(max_value - n)}}
        )
    params: dict[str, Any] = {
        "TableName": table,
        "Key": key,
        "UpdateExpression": update,
        "ExpressionAttributeNames": names,
        "ExpressionAttributeValues": values,
        "ReturnValues": "ALL_OLD" if "all_old" in parts else "UPDATED_NEW",
    }
    if conditions:
        params["ConditionExpression"] = " AND ".join(conditions)
    if "on_failure" in parts:
        params["ReturnValuesOnConditionCheckFailure"] = "ALL_OLD"
    return params


@dataclass(frozen=True)
class RawUpdateItemVariant(Variant):
    """A bare ``await client.update_item(**params)`` on an aiobotocore client, the number read
    from its answer: the seed article's request (AWS Database Blog, "Implement auto-increment
    with Amazon DynamoDB": ``ADD #value :n``, ``ReturnValues=UPDATED_NEW``) with ``parts`` of
    :data:`REQUEST_PARTS` added (all of them: the request aioseq's atomic counter sends).

    The client is made from the same session with the settings of :meth:`DynamoStore.open`'s
    client (:func:`client_config`: botocore's retries off, 50 pooled connections, the same
    timeouts). No hook counts its requests: it sends one per call, no retry.
    """

    parts: tuple[str, ...] = ()

    @contextlib.asynccontextmanager
    async def contender(self, place: Place) -> AsyncIterator[Contender]:
        async with DynamoStore.open(
            table=place.table, endpoint_url=place.endpoint_url, session=session()
        ) as store:
            settings = client_config(store)
            table = store.table
            params = update_request(
                table.name,
                store.counter_item_key(place.key),
                value_attribute=table.value_attribute,
                partition_key=table.partition_key,
                parts=self.parts,
            )
        credentials = await session().get_credentials()  # type: ignore[misc]
        arguments = _client_arguments(place.endpoint_url, session().region_name, credentials)
        async with session().client(
            "dynamodb", config=AioConfig(**settings), **arguments
        ) as client:
            calls = 0
            attribute = table.value_attribute
            # The answer holds the value before the ADD (ALL_OLD; none: a new item) or after.
            before = "all_old" in self.parts

            async def take() -> int:
                nonlocal calls
                calls += 1
                response = await client.update_item(**params)
                if before:
                    old: Any = response.get("Attributes")
                    return parse_counter(old, place.key, attribute) + 1
                return int(response["Attributes"][attribute]["N"])

            yield Contender(take, requests=lambda: Counter({"UpdateItem": calls}))


@dataclass(frozen=True)
class BareVariant(Variant):
    """A bare in-memory ``async def next()``: what the event loop alone can do. One process
    only; no request, no check to fail."""

    multi_process: bool = False

    @contextlib.asynccontextmanager
    async def contender(self, place: Place) -> AsyncIterator[Contender]:
        value = 0

        async def next() -> int:
            nonlocal value
            value += 1
            return value

        yield Contender(next)

    async def counter_value(self, store: DynamoStore, key: str) -> int | None:
        return None


#: The seed article's table and counter attribute, adapted to our table's key schema.
ARTICLE_ATTRIBUTE = "count"


@functools.cache
def _article_resources(endpoint_url: str, threads: int) -> tuple[Any, ...]:
    """``threads`` boto3 DynamoDB resources on ``endpoint_url``, each from its own session, kept
    for the life of the process."""
    configured = boto3.session.Session()
    arguments = _client_arguments(
        endpoint_url, configured.region_name, configured.get_credentials()
    )
    return tuple(boto3.session.Session().resource("dynamodb", **arguments) for _ in range(threads))


@dataclass(frozen=True)
class ArticleVariant(Variant):
    """The seed article's atomic counter, as written: AWS Database Blog, "Implement
    auto-increment with Amazon DynamoDB" (/work/shared/seeds/000_3260250ebad604ea.txt)::

        table = boto3.resource('dynamodb').Table('orders')
        response = table.update_item(
            Key={'pk': 'orderCounter'},
            UpdateExpression="ADD #cnt :val",
            ExpressionAttributeNames={'#cnt': 'count'},
            ExpressionAttributeValues={':val': 1},
            ReturnValues="UPDATED_NEW"
        )
        nextOrderId = response['Attributes']['count']

    Only the key differs (our table also has the sort key: ``{'pk': key, 'sk': 0}``); the
    article's following ``put_item`` of the order is the caller's business, as for aioseq's
    atomic counter. boto3 is synchronous, so asyncio callers run it in threads: here a pool of
    ``threads`` (``asyncio.to_thread``'s default size, ``min(32, cpus + 4)``), each thread with
    its own boto3 session and resource (boto3 resources are not thread-safe), made once per
    process before the clock starts, as the article's module-level ``table`` would be.
    botocore's defaults apply (legacy retry mode, 10 pooled connections).
    """

    threads: int = min(32, (os.cpu_count() or 1) + 4)

    @contextlib.asynccontextmanager
    async def contender(self, place: Place) -> AsyncIterator[Contender]:
        requests: Counter[str] = Counter()
        calls = 0
        lock = threading.Lock()
        count = _counting_hook(requests, lock)
        resources = await asyncio.to_thread(_article_resources, place.endpoint_url, self.threads)
        tables: queue.SimpleQueue[Any] = queue.SimpleQueue()
        for resource in resources:
            resource.meta.client.meta.events.register("before-send.dynamodb", count)
            tables.put(resource.Table(place.table))

        def next_order_id() -> int:
            nonlocal calls
            table = tables.get()
            try:
                with lock:
                    calls += 1
                response = table.update_item(
                    Key={"pk": place.key, "sk": 0},
                    UpdateExpression="ADD #cnt :val",
                    ExpressionAttributeNames={"#cnt": ARTICLE_ATTRIBUTE},
                    ExpressionAttributeValues={":val": 1},
                    ReturnValues="UPDATED_NEW",
                )
                return int(response["Attributes"][ARTICLE_ATTRIBUTE])
            finally:
                tables.put(table)

        executor = ThreadPoolExecutor(self.threads, thread_name_prefix="boto3-article")
        loop = asyncio.get_running_loop()

        async def take() -> int:
            return await loop.run_in_executor(executor, next_order_id)

        def retries() -> Counter[str]:  # botocore's own: requests beyond one per call
            with lock:
                extra = sum(requests.values()) - calls
            return Counter({"botocore": extra} if extra > 0 else {})

        try:
            yield Contender(take, requests=lambda: Counter(requests), retries=retries)
        finally:
            executor.shutdown(wait=True)
            for resource in resources:
                resource.meta.client.meta.events.unregister("before-send.dynamodb", count)

    async def counter_value(self, store: DynamoStore, key: str) -> int | None:
        return await _counter_attribute(store, key, ARTICLE_ATTRIBUTE)


#: The attribute the peer keeps its counter in, on the counter item and on each stored item.
PEER_ATTRIBUTE = "n"


class PeerClient:
    """What ``dynamodb-autoincrement`` expects as its ``dynamodb`` argument: client calls taking
    plain Python values (an aioboto3 resource's client) and ``.meta.client.exceptions``."""

    def __init__(self, client: Any) -> None:
        self._client = client
        self.meta = SimpleNamespace(client=client)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)


@dataclass(frozen=True)
class PeerVariant(Variant):
    """The published peer ``dynamodb-autoincrement`` 0.2.0 (PyPI; a port of npm
    ``@nasa-gcn/dynamodb-autoincrement``): ``GetItem`` of the counter, then one
    ``TransactWriteItems`` of the counter's conditional put and the item's put, retried at once
    and without bound when the transaction is cancelled. Its items go to collection
    ``<key>-items`` with the number in attribute ``n``; the counter item is ``{pk: key, sk: 0}``.
    """

    @contextlib.asynccontextmanager
    async def contender(self, place: Place) -> AsyncIterator[Contender]:
        from dynamodb_autoincrement import DynamoDBAutoIncrement  # type: ignore[import-untyped]

        requests: Counter[str] = Counter()
        credentials = await session().get_credentials()  # type: ignore[misc]
        arguments = _client_arguments(place.endpoint_url, session().region_name, credentials)
        async with session().resource("dynamodb", **arguments) as resource:
            client = resource.meta.client
            client.meta.events.register("before-send.dynamodb", _counting_hook(requests))
            peer = DynamoDBAutoIncrement(
                dynamodb=PeerClient(client),
                counter_table_name=place.table,
                counter_table_key={"pk": place.key, "sk": 0},
                attribute_name=PEER_ATTRIBUTE,
                table_name=place.table,
                initial_value=1,
            )
            # Each item needs its own primary key: number the puts per process.
            tickets = itertools.count(place.process * 10**9 + 1)
            puts = 0

            async def put() -> int:
                nonlocal puts
                number = int(await peer.put({"pk": f"{place.key}-items", "sk": next(tickets)}))
                puts += 1
                return number

            def cancelled() -> int:  # each cancelled transaction is a lost race, then retried
                return requests["TransactWriteItems"] - puts

            yield Contender(
                put,
                requests=lambda: Counter(requests),
                retries=lambda: Counter({"TransactionCanceled": cancelled()}),
                conflicts=cancelled,
            )

    async def counter_value(self, store: DynamoStore, key: str) -> int | None:
        return await _counter_attribute(store, key, PEER_ATTRIBUTE)

    async def stored(self, store: DynamoStore, key: str) -> list[int] | None:
        return await stored_numbers(store, f"{key}-items", number_attribute=PEER_ATTRIBUTE)


def select(names: Sequence[str], block_sizes: Sequence[int]) -> list[Variant]:
    """The variants of ``names`` (from :data:`NAMES`), in report order: aioseq's allocator once
    per block size, the strategies with group commit without and with it. The atomic counter is
    always included: every figure is also given as a ratio to it."""
    chosen = set(names) | {"atomic"}
    variants: list[Variant] = []
    for name in NAMES:
        if name not in chosen:
            continue
        if name == "bare":
            variants.append(BareVariant("bare async next()", name, gapless=True))
        elif name == "boto3":
            variants.append(ArticleVariant("boto3 ADD (article)", name))
        elif name == "dynamodb-autoincrement":
            variants.append(
                PeerVariant("dynamodb-autoincrement 0.2.0", name, gapless=True, writes_items=True)
            )
        elif name == "allocator":
            variants += [
                AioseqVariant(
                    f"allocator b={b:,}", name, **promises(name), strategy=name, block_size=b
                )
                for b in block_sizes
            ]
        else:
            groups = (False, True) if strategy_named(name).grouped else (False,)
            variants += [
                AioseqVariant(
                    f"{name} +group" if group else name,
                    name,
                    **promises(name),
                    strategy=name,
                    group=group,
                )
                for group in groups
            ]
    return variants
