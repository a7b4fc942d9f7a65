"""Take N numbers from one counter key with C concurrent tasks: what ``aioseq next``, the demo
and the benchmarks run, and how they check the result.

Private: it ships in the wheel because ``aioseq next`` and ``aioseq demo`` run it; aioseq's
tests, benchmarks and verification harness (``verification/``, outside the wheel) import it
too, but users do not."""

from __future__ import annotations

import asyncio
import itertools
import os
import time
import uuid
from collections import Counter
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from aioseq._checks import check_count
from aioseq._store import DynamoStore
from aioseq._strategy_table import STRATEGIES, StrategyFacts, strategy_named
from aioseq.allocator import BlockAllocator
from aioseq.errors import ConfigurationError
from aioseq.layout import ShardedItems
from aioseq.strategies._base import Strategy
from aioseq.strategies.sort_key import SortKeyCounter
from aioseq.strategies.transactional import TransactionalCounter

__all__ = [
    "PAYLOAD_ATTRIBUTE",
    "Check",
    "Run",
    "Taken",
    "Taker",
    "check_numbers",
    "factory_taker",
    "make_taker",
    "run_workload",
    "stored_numbers",
    "stored_payloads",
    "stored_twice",
    "take_numbers",
]

#: The attribute of each item the item-writing strategies store here: the payload of the call
#: that stored it (a string unique to that call), so a checker can tell one call's item from
#: another's, and an item stored twice.
PAYLOAD_ATTRIBUTE = "payload"

Take = Callable[[], Awaitable[int]]


@dataclass(frozen=True)
class Taker:
    """One counter object of some strategy, seen the same way whatever the strategy.

    Attributes:
        take: takes one number (the item-writing strategies store one item and return its
            number, the item's payload being ``<payload prefix>/<n>`` for the n-th call of
            this object: see `make_taker()`).
        put: ``put(payload)`` takes one number for the call whose payload is ``payload`` (a
            string unique to the call): the item-writing strategies store it in the item's
            `PAYLOAD_ATTRIBUTE`; the others only take a number.
        counter: the strategy object whose statistics count retries and conflicts (for the
            allocator, the atomic counter under it).
        current: the counter's current value.
        aclose: releases what the object holds (the allocator gives back its block).
    """

    take: Take
    put: Callable[[str], Awaitable[int]]
    counter: Strategy
    current: Callable[[], Awaitable[int]]
    aclose: Callable[[], Awaitable[None]] | None = None


def make_taker(
    store: DynamoStore,
    strategy: str,
    key: str,
    *,
    block_size: int = 100,
    fixed_block_size: bool = False,
    group: bool | None = None,
    payload_prefix: str | None = None,
    stride: int = 1,
    offset: int = 1,
    max_value: int | None = None,
    shards: int | None = None,
) -> Taker:
    """A counter object for ``strategy`` (a name of `aioseq._strategy_table.STRATEGIES`) on
    ``key``. The item-writing strategies store a small item
    ``{pk: key, sk: n, payload: <the call's payload>}`` per number (see
    `PAYLOAD_ATTRIBUTE`), in the collection whose counter item (if any) is
    ``{pk: key, sk: 0}``; with ``shards``, the transactional counter spreads them over the
    partitions of `ShardedItems(key, shards)` instead (see `factory_taker()`); the allocator
    reserves blocks of ``block_size`` to start with (always, with ``fixed_block_size``).
    ``group``: group commit on (``True``) or off (``False``) for the grouped strategies;
    ``None`` takes the library's default, which is on.

    ``payload_prefix`` starts the payloads of `Taker.take`'s calls
    (``<prefix>/<n>``); by default ``<process>/<8 random hex digits>``, the process being the
    client's ``AWS_SDK_UA_APP_ID`` (the ``app/`` id the fault proxy's wire log names it by),
    else ``pid<pid>``, so payloads are unique across takers and processes and a checker can
    tell which process stored an item nobody was handed.

    ``stride`` and ``offset``: the allocator's numbering (numbers ``offset + (k - 1) * stride``,
    recorded on the counter item: see [`aioseq.numbering`][aioseq.numbering]); the other strategies
    number ``stride=1 offset=1`` only. ``max_value``: the factory's (``None``: its default).

    Raises:
        ConfigurationError: an unknown strategy, a bad key, ``group=True`` for a strategy
            that has no group mode, or a ``stride`` or ``offset`` other than 1 for a strategy
            other than the allocator.
    """
    facts = strategy_named(strategy)
    allocator = facts.cls is BlockAllocator
    if not allocator and (stride, offset) != (1, 1):
        raise ConfigurationError(
            f"only the allocator takes a stride and an offset; {strategy} numbers 1, 2, 3, ..."
        )
    if group and not facts.grouped:
        grouped = sorted(s.name for s in STRATEGIES if s.grouped)
        raise ConfigurationError(
            f"{strategy} has no group mode; those that do: {', '.join(grouped)}"
        )
    options: dict[str, Any] = {} if max_value is None else {"max_value": max_value}
    if allocator:
        options.update(block_size=block_size, stride=stride, offset=offset)
        if fixed_block_size:
            options["target_refill_interval_secs"] = None
    elif facts.grouped and group is not None:  # None: the library's default
        options["group"] = group
    prefix = payload_prefix or f"{_process_label(store)}/{uuid.uuid4().hex[:8]}"
    return factory_taker(store, facts, key, options, payload_prefix=prefix, shards=shards)


def factory_taker(
    store: DynamoStore,
    strategy: str | StrategyFacts,
    key: str,
    options: Mapping[str, Any] | None = None,
    *,
    payload_prefix: str | None = None,
    shards: int | None = None,
) -> Taker:
    """``store.<factory>(key, **options)`` for ``strategy`` (its name or its row of
    `aioseq._strategy_table.STRATEGIES`), made as an application makes it (no options: the
    library's defaults), seen as a `Taker`.

    The item-writing strategies' `Taker.take` stores ``{pk: key, sk: n}`` (the sort-key
    strategy adds its token), plus ``payload: <payload_prefix>/<n>`` for the n-th call when
    ``payload_prefix`` is given (`make_taker()` always gives one). With ``shards``, the
    transactional counter's items are spread as `aioseq.layout.ShardedItems(key, shards)`
    spreads them (``{pk: f"{key}#{n % shards}", sk: n}``), none beside the counter item; the
    sort-key strategy keeps its one collection (``shards`` refused).

    Raises:
        ConfigurationError: an unknown strategy, or options its factory refuses.
    """
    facts = strategy if isinstance(strategy, StrategyFacts) else strategy_named(strategy)
    if shards is not None and facts.cls is not TransactionalCounter:
        raise ConfigurationError(f"only the transactional counter spreads its items: {facts.name}")
    made: Any = getattr(store, facts.factory)(key, **(options or {}))
    if not facts.writes_items:
        counter: Strategy = made.counter if facts.cls is BlockAllocator else made
        return Taker(
            made.next,
            lambda payload: made.next(),
            counter,
            made.current,
            made.aclose if facts.cls is BlockAllocator else None,
        )
    put: Callable[[str], Awaitable[int]]
    bare: Take
    if facts.cls is SortKeyCounter:

        async def put(payload: str) -> int:
            number: int = await made.put({PAYLOAD_ATTRIBUTE: payload})
            return number

        bare = made.put
    else:  # the transactional counter: the item, as a function of its number
        item_key = _item_key(store, key, shards)

        async def put(payload: str) -> int:
            number: int = await made.put(lambda n: {**item_key(n), PAYLOAD_ATTRIBUTE: payload})
            return number

        async def bare() -> int:
            number: int = await made.put(item_key)
            return number

    if payload_prefix is None:
        take = bare
    else:
        calls = itertools.count(1)

        async def take() -> int:
            return await put(f"{payload_prefix}/{next(calls)}")

    return Taker(take, put, made, made.current)


def _item_key(store: DynamoStore, key: str, shards: int | None) -> Callable[[int], dict[str, Any]]:
    """The key of item number ``n``: beside the counter item, or spread over ``shards`` (in
    the store's Region's collections, under ``regions=``)."""
    table = store.table
    partition_key, sort_key = table.partition_key, table.sort_key or "sk"
    key = store.scoped_key(key)
    if shards is not None:
        return ShardedItems(key, shards, partition_key=partition_key, sort_key=sort_key).key
    return lambda n: {partition_key: key, sort_key: n}


def _process_label(store: DynamoStore) -> str:
    """The client's ``app/`` id (``AWS_SDK_UA_APP_ID``), else ``pid<pid>``."""
    config = getattr(getattr(store.client, "meta", None), "config", None)
    app_id = getattr(config, "user_agent_appid", None)
    return app_id if isinstance(app_id, str) and app_id else f"pid{os.getpid()}"


@dataclass(frozen=True)
class Taken:
    """What `take_numbers()` did.

    Attributes:
        numbers: every number taken, in the order the calls returned.
        latencies_secs: each call's time from start to return, in seconds, in the same order.
        wall_secs: elapsed wall-clock time, in seconds.
    """

    numbers: list[int]
    latencies_secs: list[float]
    wall_secs: float


async def take_numbers(
    takes: Sequence[Take],
    *,
    count: int,
    concurrency: int,
    time_budget_secs: float | None = None,
    on_number: Callable[[int], None] | None = None,
) -> Taken:
    """Take ``count`` numbers with ``min(concurrency, count)`` tasks in this event loop (started
    together, as with ``asyncio.gather``), task ``i`` calling ``takes[i % len(takes)]``.

    With ``time_budget_secs``, tasks start no new call once that many seconds have passed; calls
    in flight finish, so at least ``min(concurrency, count)`` numbers are taken.

    Raises:
        Whatever a call raises; the other tasks are cancelled first.
    """
    numbers: list[int] = []
    latencies: list[float] = []
    remaining = count
    clock = time.perf_counter
    started = clock()
    stop_at = started + time_budget_secs if time_budget_secs is not None else float("inf")

    async def worker(take: Take) -> None:
        nonlocal remaining
        while remaining > 0:
            remaining -= 1
            called = clock()
            n = await take()
            latencies.append(clock() - called)
            numbers.append(n)
            if on_number is not None:
                on_number(n)
            if clock() >= stop_at:
                return

    tasks = [
        asyncio.ensure_future(worker(takes[i % len(takes)])) for i in range(min(concurrency, count))
    ]
    try:
        await asyncio.gather(*tasks)
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    return Taken(numbers, latencies, clock() - started)


@dataclass(frozen=True)
class Run:
    """What `run_workload()` did.

    Attributes:
        numbers: every number taken, in the order the calls returned.
        wall_secs: elapsed wall-clock time, in seconds.
        requests: DynamoDB requests sent during the run, by operation.
        retries: retries by reason, summed over the run's counter objects.
        conflicts: lost races (failed conditions), summed likewise.
        latencies_secs: each call's time from start to return, in seconds, as ``numbers``.
    """

    numbers: list[int]
    wall_secs: float
    requests: Counter[str]
    retries: Counter[str]
    conflicts: int
    latencies_secs: list[float]


async def run_workload(
    store: DynamoStore,
    strategy: str,
    key: str,
    *,
    count: int,
    concurrency: int,
    instances: int = 1,
    block_size: int = 100,
    group: bool | None = None,
    on_number: Callable[[int], None] | None = None,
    stride: int = 1,
    offset: int = 1,
    max_value: int | None = None,
) -> Run:
    """Take ``count`` numbers from counter ``key`` with ``concurrency`` tasks in this event loop.

    The tasks share ``instances`` counter objects round-robin: several objects on one key behave
    like that many processes (each object lets one conditional write race at a time), so
    ``instances > 1`` shows contention between writers.

    Parameters:
        store: the store to use.
        strategy: a name of `aioseq._strategy_table.STRATEGIES`.
        key: the counter key.
        count, concurrency, instances: positive ints.
        block_size: the allocator's first block size.
        group: group commit (see `make_taker()`).
        stride, offset, max_value: the numbering (see `make_taker()`).
        on_number: called with each number as soon as it is taken (``aioseq next`` prints it).

    Raises:
        ConfigurationError: bad arguments. Whatever the strategy raises; the other tasks are
        cancelled first.
    """
    check_count(count, "count", maximum=10**9)
    check_count(concurrency, "concurrency", maximum=100_000)
    check_count(instances, "instances", maximum=10_000)
    takers = [
        make_taker(
            store,
            strategy,
            key,
            block_size=block_size,
            group=group,
            stride=stride,
            offset=offset,
            max_value=max_value,
        )
        for _ in range(instances)
    ]
    await store.replication()  # the store's one DescribeTable: start-up, not the run's
    before = store.requests
    try:
        taken = await take_numbers(
            [taker.take for taker in takers],
            count=count,
            concurrency=concurrency,
            on_number=on_number,
        )
    finally:
        for taker in takers:
            if taker.aclose is not None:
                await taker.aclose()
    retries: Counter[str] = Counter()
    conflicts = 0
    for taker in takers:
        stats = taker.counter.statistics()
        retries.update(stats.retries)
        conflicts += stats.conflicts
    return Run(
        taken.numbers,
        taken.wall_secs,
        store.requests - before,
        retries,
        conflicts,
        taken.latencies_secs,
    )


@dataclass(frozen=True)
class Check:
    """The result of `check_numbers()`.

    Attributes:
        duplicates: numbers seen more than once (extra copies counted).
        gaps: numbers missing between the lowest and highest seen.
        mismatched_items: for item-writing strategies, numbers handed out without a stored item
            plus stored items whose number was not handed out; 0 otherwise.
        stored_twice: for item-writing strategies whose items were given as number -> payload
            (`stored_payloads()`), extra copies of a payload stored under more than one
            number (one call's item stored twice); 0 otherwise.
    """

    duplicates: int
    gaps: int
    mismatched_items: int = 0
    stored_twice: int = 0

    @property
    def ok(self) -> bool:
        """No duplicates, no mismatched items, no item stored twice (gaps are judged by the
        caller)."""
        return self.duplicates == 0 and self.mismatched_items == 0 and self.stored_twice == 0


def check_numbers(
    numbers: Iterable[int], stored: Iterable[int] | Mapping[int, str | None] | None = None
) -> Check:
    """Count duplicates and gaps in ``numbers``; compare with ``stored`` if given: the stored
    items' numbers (`stored_numbers()`), or number -> payload (`stored_payloads()`),
    which also counts payloads stored under more than one number."""
    seen = list(numbers)
    distinct = set(seen)
    gaps = (max(distinct) - min(distinct) + 1 - len(distinct)) if distinct else 0
    mismatched = len(distinct ^ set(stored)) if stored is not None else 0
    twice = stored_twice(stored) if isinstance(stored, Mapping) else 0
    return Check(
        duplicates=len(seen) - len(distinct),
        gaps=gaps,
        mismatched_items=mismatched,
        stored_twice=twice,
    )


def stored_twice(items: Mapping[int, str | None]) -> int:
    """Extra copies of a payload stored under more than one number, in number -> payload
    ``items`` (items without a payload are not counted)."""
    copies = Counter(payload for payload in items.values() if payload is not None)
    return sum(n - 1 for n in copies.values())


async def stored_numbers(
    store: DynamoStore,
    partition: str,
    *,
    number_attribute: str | None = None,
    shards: int | None = None,
) -> list[int]:
    """The numbers of the numbered items in collection ``partition`` (with ``shards``, in the
    collections of `aioseq.layout.ShardedItems(partition, shards)`): their sort keys >= 1, or
    their ``number_attribute`` when given (items without it are skipped; a number two items
    hold is listed twice), read with paginated, strongly consistent ``Query`` requests (0.5 RCU
    per 4 KB read).

    Raises:
        ConfigurationError: the table has no sort key.
    """
    partitions = _partitions(partition, shards)
    return [n for n, _ in await _numbered_items(store, partitions, number_attribute, None)]


async def stored_payloads(
    store: DynamoStore,
    partition: str,
    *,
    payload_attribute: str = PAYLOAD_ATTRIBUTE,
    shards: int | None = None,
) -> dict[int, str | None]:
    """number -> payload of the numbered items in collection ``partition`` (sort keys >= 1;
    with ``shards``, in the collections of `aioseq.layout.ShardedItems(partition, shards)`),
    read as `stored_numbers()` reads them: each item's ``payload_attribute`` (a string;
    ``None`` when the item has none), so a checker can tell whose item each is and find an
    item stored twice (aioseq's history checker, ``verification.history``; `check_numbers()`).

    Raises:
        ConfigurationError: the table has no sort key.
    """
    partitions = _partitions(partition, shards)
    return dict(await _numbered_items(store, partitions, None, payload_attribute))


def _partitions(partition: str, shards: int | None) -> list[str]:
    if shards is None:
        return [partition]
    return ShardedItems(partition, shards).partitions()


async def _numbered_items(
    store: DynamoStore,
    partitions: Sequence[str],
    number_attribute: str | None,
    payload_attribute: str | None,
) -> list[tuple[int, str | None]]:
    """(number, payload) of each numbered item in ``partitions``, in the order read."""
    table = store.table
    if table.sort_key is None:
        raise ConfigurationError("the table has no sort key")
    attribute = number_attribute or table.sort_key
    names = {"#pk": table.partition_key, "#number": attribute}
    if payload_attribute is not None:
        names["#payload"] = payload_attribute
    items: list[tuple[int, str | None]] = []
    for partition in partitions:
        params: dict[str, object] = {
            "TableName": table.name,
            "KeyConditionExpression": "#pk = :partition",
            "ExpressionAttributeNames": names,
            "ExpressionAttributeValues": {":partition": {"S": partition}},
            "ProjectionExpression": "#number, #payload" if payload_attribute else "#number",
            "ConsistentRead": True,
        }
        while True:
            page = await store.send_once("query", **params)
            for item in page.get("Items", []):
                if attribute not in item:
                    continue
                value = item[attribute]
                n = int(value.get("N") or value.get("S"))
                if n < 1:
                    continue
                payload = item.get(payload_attribute, {}).get("S") if payload_attribute else None
                items.append((n, payload if isinstance(payload, str) else None))
            if "LastEvaluatedKey" not in page:
                break
            params["ExclusiveStartKey"] = page["LastEvaluatedKey"]
    return items
