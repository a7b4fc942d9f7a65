"""Counters on global tables (aioseq.regions), on a simulated global table of fakes: the hazard
of multi-Region eventual consistency, the refusal, Region-scoped numbering, a home Region, and
strong consistency's conflicts. The same on local servers:
tests/integration/test_global_table_servers.py.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest
from botocore.exceptions import ClientError

from aioseq import DynamoStore, Numbering, RegionScope, Replication, RetryPolicy
from aioseq._transport import translate
from aioseq.errors import (
    ConfigurationError,
    NotHomeRegion,
    NotSupportedByTable,
    NumberingMismatch,
    NumberOutOfRange,
    RegionNotListed,
    UnsafeGlobalTable,
)
from aioseq.regions import write_refusal
from aioseq.testing import FakeDynamoDB, ManualClock, SimulatedGlobalTable

TABLE = "orders-global"
EAST, WEST = "us-east-1", "eu-west-1"
REGIONS = [EAST, WEST]
FAST = RetryPolicy(initial_backoff_secs=0.001, max_backoff_secs=0.01, max_attempts=200)


# --- the pure parts -------------------------------------------------------------------------


def test_replication_as_describe_table_says_it() -> None:
    assert Replication.of({"TableName": "t"}, EAST) == Replication()
    described = Replication.of(
        {"Replicas": [{"RegionName": WEST, "ReplicaStatus": "ACTIVE"}]}, EAST
    )
    assert described == Replication((WEST, EAST), "EVENTUAL")  # the Region asked from is in
    assert described.is_global
    strong = Replication.of(
        {
            "Replicas": [{"RegionName": EAST}, {"RegionName": WEST}],
            "MultiRegionConsistency": "STRONG",
            "GlobalTableWitnesses": [{"RegionName": "us-west-2"}],
        },
        EAST,
    )
    assert strong.consistency == "STRONG" and strong.witnesses == ("us-west-2",)


def test_a_region_scope_gives_each_region_its_residue_class() -> None:
    scope = RegionScope((EAST, WEST), 4)
    east, west = scope.share(EAST, Numbering()), scope.share(WEST, Numbering())
    assert list(east.numbers(1, 3)) == [1, 5, 9]
    assert list(west.numbers(1, 3)) == [2, 6, 10]
    # A block allocator's own numbering (stride 3, offset 2: 2 5 8 11 ...) is shared out too.
    inner = Numbering(3, 2)
    assert list(scope.share(EAST, inner).numbers(1, 2)) == [2, 14]
    assert list(scope.share(WEST, inner).numbers(1, 2)) == [5, 17]
    assert RegionScope.decode(scope.encode()) == scope
    assert scope.encode() == "regions=us-east-1,eu-west-1 slots=4"
    with pytest.raises(RegionNotListed):
        scope.slot("ap-south-1")


@pytest.mark.parametrize(
    ("regions", "slots"),
    [((), 0), ((EAST, EAST), 0), ((EAST, WEST), 1), ((EAST, "not a region!"), 0), ((EAST,), 65)],
)
def test_a_bad_region_scope_is_refused(regions: tuple[str, ...], slots: int) -> None:
    with pytest.raises(ConfigurationError):
        RegionScope(regions, slots)


@pytest.mark.parametrize("text", ["regions=us-east-1", "regions= slots=1", "stride=1 offset=1"])
def test_a_region_scope_is_read_only_as_written(text: str) -> None:
    with pytest.raises(ConfigurationError):
        RegionScope.decode(text)


def test_who_may_write_is_decided_in_one_place() -> None:
    mrec = Replication((EAST, WEST), "EVENTUAL")
    mrsc = Replication((EAST, WEST), "STRONG", ("us-west-2",))
    scope = RegionScope((EAST, WEST))

    def refusal(replication: Replication, **stated: Any) -> type | None:
        stated = {"region": EAST, "scope": None, "home_region": None, **stated}
        found = write_refusal(replication, table="t", **stated)
        return None if found is None else type(found)

    assert refusal(Replication()) is None
    assert refusal(Replication(known=False)) is None
    assert refusal(mrec) is UnsafeGlobalTable
    assert refusal(mrec, scope=scope) is None
    assert refusal(mrec, home_region=EAST) is None
    assert refusal(mrec, region=WEST, home_region=EAST) is NotHomeRegion
    assert refusal(Replication(), region=WEST, home_region=EAST) is NotHomeRegion
    assert refusal(mrec, region="ap-south-1", scope=scope) is RegionNotListed
    assert refusal(mrsc) is None
    assert refusal(mrsc, transactions=True) is NotSupportedByTable
    assert refusal(mrec, scope=scope, transactions=True) is None


def test_the_refusal_names_the_two_ways_and_the_docs() -> None:
    error = UnsafeGlobalTable("t", (EAST, WEST), EAST)
    assert "regions=[...]" in str(error) and "home_region=" in str(error)
    assert "docs/global-tables.md" in str(error)


def test_store_options_are_checked_before_anything_is_made() -> None:
    fake = FakeDynamoDB(region_name=EAST)
    with pytest.raises(ConfigurationError, match="pass one"):
        DynamoStore(transport=fake, regions=REGIONS, home_region=EAST)
    with pytest.raises(RegionNotListed):
        DynamoStore(transport=fake, regions=[WEST, "ap-south-1"])
    with pytest.raises(ConfigurationError, match="Region"):
        DynamoStore(transport=FakeDynamoDB(), regions=REGIONS)  # no Region known
    with pytest.raises(ConfigurationError, match="region_slots"):
        DynamoStore(transport=fake, region_slots=3)
    with pytest.raises(ConfigurationError):
        DynamoStore(transport=fake, home_region="Not a Region")


# --- on a simulated global table ------------------------------------------------------------

Take = Callable[[DynamoStore, str], Awaitable[int]]


async def _atomic(store: DynamoStore, key: str) -> int:
    return await store.atomic_counter(key).next()


async def _optimistic(store: DynamoStore, key: str) -> int:
    return await store.optimistic_counter(key).next()


async def _allocator(store: DynamoStore, key: str) -> int:
    return await store.block_allocator(key, block_size=5).next()


async def _sort_key(store: DynamoStore, key: str) -> int:
    return await store.sort_key_counter(key, group=store.region_scope is not None).put({"x": 1})


async def _transactional(store: DynamoStore, key: str) -> int:
    counter = store.transactional_counter(key)
    return await counter.put(lambda n: {"pk": f"{key}-order#{n}", "sk": 0, "n": n})


STRATEGIES: dict[str, Take] = {
    "atomic": _atomic,
    "optimistic": _optimistic,
    "allocator": _allocator,
    "sort-key": _sort_key,
    "transactional": _transactional,
}


@pytest.fixture
async def mrec() -> AsyncIterator[SimulatedGlobalTable]:
    async with SimulatedGlobalTable(REGIONS, replication_delay_secs=0.005) as table:
        await DynamoStore(transport=table.transport(EAST), table=TABLE).create_table()
        yield table


def _store(table: SimulatedGlobalTable, region: str, **options: Any) -> DynamoStore:
    return DynamoStore(transport=table.transport(region), table=TABLE, retry_policy=FAST, **options)


def _items(table: SimulatedGlobalTable, region: str) -> list[dict[str, Any]]:
    storage = table._storage[region]
    assert isinstance(storage, FakeDynamoDB)
    return storage.items(TABLE)


async def test_the_hazard_is_real_in_the_simulation(mrec: SimulatedGlobalTable) -> None:
    """Two Regions adding to one counter item at once, as any atomic counter does: both hand
    out the same values, and replication keeps one Region's count, silently."""
    update = {
        "TableName": TABLE,
        "Key": {"pk": {"S": "shared"}, "sk": {"N": "0"}},
        "UpdateExpression": "ADD #v :one",
        "ExpressionAttributeNames": {"#v": "value"},
        "ExpressionAttributeValues": {":one": {"N": "1"}},
        "ReturnValues": "UPDATED_NEW",
    }
    seen: list[int] = []
    for _ in range(5):
        for region in REGIONS:
            answer = await mrec.transport(region).send("update_item", update)
            seen.append(int(answer["Attributes"]["value"]["N"]))
    await mrec.settle()
    assert len(seen) - len(set(seen)) >= 5  # the same numbers, handed out in both Regions
    assert mrec.discarded > 0  # and replication dropped writes, with no error to anyone
    finals = {int(_items(mrec, r)[0]["value"]["N"]) for r in REGIONS}
    assert len(finals) == 1 and finals.pop() < 10  # one count survives, not the sum


async def test_the_simulation_replicates_on_the_stores_clock() -> None:
    """With the stores' ManualClock, a copy lands once that clock has passed its delay
    (a request at or after its time sees it), and settle() lands the copies still to come."""
    clock = ManualClock()
    async with SimulatedGlobalTable(REGIONS, replication_delay_secs=30, clock=clock) as table:
        east, west = (
            _store(table, r, clock=clock, idle_secs=None, home_region=EAST) for r in REGIONS
        )
        await east.create_table()
        assert await east.atomic_counter("k").next() == 1
        counter = west.atomic_counter("k")
        await clock.sleep(29)
        assert not await counter.exists()
        await clock.sleep(1)
        assert await counter.current() == 1  # replicated at 30 s on the clock
        assert await east.atomic_counter("s").next() == 1
        await table.settle()  # at once, whatever the clock says
        assert await west.atomic_counter("s").current() == 1
        assert table.replicated == 2 and clock.now() == 30
        await east.aclose()
        await west.aclose()


@pytest.mark.parametrize("strategy", STRATEGIES)
async def test_nothing_stated_every_strategy_is_refused_and_nothing_is_written(
    mrec: SimulatedGlobalTable, strategy: str
) -> None:
    store = _store(mrec, EAST)
    with pytest.raises(UnsafeGlobalTable, match="regions=") as caught:
        await STRATEGIES[strategy](store, "k")
    assert "home_region=" in str(caught.value)
    # The store knows its table now: a new factory call refuses at once.
    with pytest.raises(UnsafeGlobalTable):
        store.optimistic_counter("another")
    await mrec.settle()
    assert _items(mrec, EAST) == [] and _items(mrec, WEST) == []
    await store.aclose()


@pytest.mark.parametrize("strategy", STRATEGIES)
async def test_region_scoped_numbers_are_unique_across_regions(
    mrec: SimulatedGlobalTable, strategy: str
) -> None:
    """Both Regions take numbers at once on one counter key: no number twice, each Region's
    increasing and in its own residue class, and no item written from both Regions but the
    key's create-once scope record."""
    take = STRATEGIES[strategy]
    stores = {region: _store(mrec, region, regions=REGIONS) for region in REGIONS}

    async def run(region: str) -> list[int]:
        found = []
        for _ in range(12):
            found.append(await take(stores[region], "k"))
            await asyncio.sleep(0)
        return found

    east, west = await asyncio.gather(run(EAST), run(WEST))
    await mrec.settle()
    assert not set(east) & set(west)
    assert east == sorted(east) and west == sorted(west)
    assert {n % 2 for n in east} == {1} and {n % 2 for n in west} == {0}
    twice = [key for key, regions in mrec.writers.items() if len(regions) > 1]
    for table, key in twice:  # written from both Regions: only the create-once scope record
        assert '"S": "k"' in key and table == TABLE
        record = [i for i in _items(mrec, EAST) if i["pk"] == {"S": "k"}]
        assert record == [
            {
                "pk": {"S": "k"},
                "sk": {"N": "0"},
                "aioseq_numbering": {"S": "regions=us-east-1,eu-west-1 slots=2 stride=1 offset=1"},
            }
        ]
    for store in stores.values():
        await store.aclose()


async def test_a_store_with_another_list_or_none_is_refused(mrec: SimulatedGlobalTable) -> None:
    east = _store(mrec, EAST, regions=REGIONS)
    assert await east.atomic_counter("k").next() == 1
    reordered = _store(mrec, EAST, regions=[WEST, EAST])
    with pytest.raises(NumberingMismatch, match="regions=us-east-1,eu-west-1") as caught:
        await reordered.atomic_counter("k").next()
    assert "the same Regions in another order" in str(caught.value)  # (their slots differ)
    roomier = _store(mrec, EAST, regions=REGIONS, region_slots=3)
    with pytest.raises(NumberingMismatch):
        await roomier.atomic_counter("k").next()
    # A key numbered without regions= (on a table of one Region) is not taken over.
    async with SimulatedGlobalTable(REGIONS, consistency="STRONG") as strong:
        plain = DynamoStore(transport=strong.transport(EAST), table=TABLE)
        await plain.create_table()
        assert await plain.atomic_counter("used").next() == 1
        scoped = DynamoStore(transport=strong.transport(WEST), table=TABLE, regions=REGIONS)
        with pytest.raises(NumberingMismatch, match="numbered 'stride=1 offset=1'"):
            await scoped.atomic_counter("used").next()
        # ... nor a Region-scoped key by a store without regions=.
        assert await scoped.atomic_counter("scoped").next() == 2
        with pytest.raises(NumberingMismatch, match="regions=us-east-1,eu-west-1"):
            await plain.atomic_counter("scoped").next()
        await plain.aclose()
        await scoped.aclose()
    for store in (east, reordered, roomier):
        await store.aclose()


async def test_a_home_region_writes_and_the_others_only_read(mrec: SimulatedGlobalTable) -> None:
    home = _store(mrec, EAST, home_region=EAST)
    away = _store(mrec, WEST, home_region=EAST)
    for strategy, take in STRATEGIES.items():
        assert await take(home, f"{strategy}-k") == 1
        with pytest.raises(NotHomeRegion, match="us-east-1 only"):
            await take(away, f"{strategy}-k")
    await mrec.settle()
    assert await away.atomic_counter("atomic-k").current() == 1  # reads work away from home
    assert mrec.writers and all(r == {EAST} for r in mrec.writers.values())
    await home.aclose()
    await away.aclose()


@pytest.mark.parametrize("learn", ["create_table", "check_table", "a transactional put"])
async def test_a_home_region_store_writes_new_keys_once_it_knows_its_table(
    mrec: SimulatedGlobalTable, learn: str
) -> None:
    """Once the store has read its table (an MREC global table), a new key's counter is made
    and written in the home Region, by every strategy; away from home the factory still
    makes it (reads work) and the write is refused."""
    home = _store(mrec, EAST, home_region=EAST)
    away = _store(mrec, WEST, home_region=EAST)
    for store in (home, away):
        if learn == "create_table":
            assert not await store.create_table()
        elif learn == "check_table":
            await store.check_table()
        else:
            with pytest.raises(NotHomeRegion) if store is away else contextlib.nullcontext():
                assert await _transactional(store, "first") == 1
        assert (await store.replication()).is_global
    for strategy, take in STRATEGIES.items():
        assert await take(home, f"{strategy}-new") == 1
        with pytest.raises(NotHomeRegion):
            await take(away, f"{strategy}-new")
    await home.aclose()
    await away.aclose()


async def test_strong_consistency_shares_counters_through_conflicts() -> None:
    """MRSC, a tenth of the item writes refused by ReplicatedWriteConflictException: four
    stores on two Regions take exactly 1..100 from a shared optimistic counter and 100
    unique numbers from a shared atomic counter, with no error to callers (400 of each on
    local servers: tests/integration/test_global_table_servers.py)."""
    async with SimulatedGlobalTable(REGIONS, consistency="STRONG", conflict_rate=0.1) as strong:
        await DynamoStore(transport=strong.transport(EAST), table=TABLE).create_table()
        stores = [_store(strong, region) for region in REGIONS * 2]

        async def take(store: DynamoStore, make: Callable[[DynamoStore], Any]) -> list[int]:
            return list(await asyncio.gather(*(make(store).next() for _ in range(25))))

        for make in (lambda s: s.optimistic_counter("o"), lambda s: s.atomic_counter("a")):
            runs = await asyncio.gather(*(take(store, make) for store in stores))
            numbers = sorted(n for run in runs for n in run)
            assert numbers == list(range(1, 101))
        assert strong.conflicts > 5
        retries, conflicts = Counter[str](), 0
        for store in stores:
            counted = store.atomic_counter("a").statistics()
            retries.update(counted.retries)
            conflicts += counted.conflicts
        assert retries["ReplicatedWriteConflictException"] > 0  # retried, counted as conflicts
        assert conflicts >= retries["ReplicatedWriteConflictException"]
        # What the table does not support is refused up front, naming what to use instead.
        with pytest.raises(NotSupportedByTable, match="optimistic counter"):
            stores[0].transactional_counter("t")
        with pytest.raises(NotSupportedByTable, match="group=False"):
            stores[0].sort_key_counter("s")
        assert await stores[0].sort_key_counter("s", group=False).put({}) == 1
        for store in stores:
            await store.aclose()


async def test_a_store_that_may_not_describe_its_table_says_so_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    fake = FakeDynamoDB(region_name=EAST)
    store = DynamoStore(transport=_NoDescribe(fake), table=TABLE)
    await fake.send(
        "create_table",
        {
            "TableName": TABLE,
            "KeySchema": [
                {"AttributeName": "pk", "KeyType": "HASH"},
                {"AttributeName": "sk", "KeyType": "RANGE"},
            ],
            "AttributeDefinitions": [
                {"AttributeName": "pk", "AttributeType": "S"},
                {"AttributeName": "sk", "AttributeType": "N"},
            ],
            "BillingMode": "PAY_PER_REQUEST",
        },
    )
    with caplog.at_level(logging.WARNING, logger="aioseq"):
        assert await store.atomic_counter("a").next() == 1
        assert await store.optimistic_counter("b").next() == 1
    assert [r.message for r in caplog.records].count(caplog.records[0].message) == 1
    assert "may not DescribeTable" in caplog.records[0].message
    assert await store.replication() == Replication(known=False)
    await store.aclose()


class _NoDescribe:
    """A fake whose ``DescribeTable`` is refused (no permission)."""

    def __init__(self, fake: FakeDynamoDB) -> None:
        self._fake = fake
        self.region_name = fake.region_name
        self.loop, self.observer, self.client = None, None, None
        self.endpoint = fake.endpoint

    @property
    def requests(self) -> Counter[str]:
        return self._fake.requests

    def validate(self, operation: str, params: dict[str, Any]) -> None:
        self._fake.validate(operation, params)

    async def send(self, operation: str, params: dict[str, Any]) -> dict[str, Any]:
        if operation == "describe_table":
            error = ClientError(
                {"Error": {"Code": "AccessDeniedException", "Message": "not allowed"}},
                "DescribeTable",
            )
            raise translate(error, "DescribeTable", (TABLE,))
        return await self._fake.send(operation, params)

    async def aclose(self, *, timeout_secs: float) -> None:
        await self._fake.aclose(timeout_secs=timeout_secs)


async def test_a_region_is_added_in_a_free_slot(mrec: SimulatedGlobalTable) -> None:
    from aioseq import admin

    old = RegionScope((EAST, WEST), 3)
    east = _store(mrec, EAST, regions=old)
    assert [await east.atomic_counter("k").next() for _ in range(2)] == [1, 4]
    added = RegionScope((EAST, WEST, "ap-south-1"), 3)
    with pytest.raises(ConfigurationError, match="keeps its slot"):
        await admin.set_region_scope(east, "k", RegionScope((WEST, EAST, "ap-south-1"), 3))
    with pytest.raises(ConfigurationError, match="keeps its slot"):
        await admin.set_region_scope(east, "k", RegionScope((EAST, WEST), 4))
    assert await admin.set_region_scope(east, "k", added) == old
    with pytest.raises(ConfigurationError, match="no Region scope"):
        await admin.set_region_scope(east, "never-used", added)
    renewed = _store(mrec, EAST, regions=added)
    assert await renewed.atomic_counter("k").next() == 7  # us-east-1's numbers go on
    with pytest.raises(NumberingMismatch):  # a store still on the old list, new object
        await _store(mrec, EAST, regions=old).atomic_counter("k").next()
    for store in (east, renewed):
        await store.aclose()


def test_a_table_with_replicas_is_global_even_from_an_unknown_region() -> None:
    assert Replication.of({"Replicas": [{"RegionName": WEST}]}, None).is_global


async def test_region_scoped_counters_keep_their_max_value(mrec: SimulatedGlobalTable) -> None:
    west = _store(mrec, WEST, regions=REGIONS)
    for counter in (
        west.atomic_counter("a", max_value=5),
        west.optimistic_counter("o", max_value=5),
    ):
        assert [await counter.next(), await counter.next()] == [2, 4]
        with pytest.raises(NumberOutOfRange):
            await counter.next()  # 6 would pass 5
    items = west.transactional_counter("t", max_value=5)
    make = lambda n: {"pk": f"t#{n}", "sk": 0}  # noqa: E731
    assert [await items.put(make), await items.put(make)] == [2, 4]
    with pytest.raises(NumberOutOfRange):
        await items.put(make)
    await west.aclose()


async def test_the_numbering_shared_out_is_the_same_in_every_region(
    mrec: SimulatedGlobalTable,
) -> None:
    """A block allocator with another stride in the other Region is refused there: its share
    would overlap (1 3 5 7 against 3 7 11)."""
    east = _store(mrec, EAST, regions=REGIONS)
    assert await east.block_allocator("k", block_size=2).next() == 1
    await mrec.settle()
    other = _store(mrec, WEST, regions=REGIONS)
    with pytest.raises(NumberingMismatch, match="stride=1 offset=1"):
        await other.block_allocator("k", stride=2, offset=1).next()
    west = _store(mrec, WEST, regions=REGIONS)
    assert await west.block_allocator("k", block_size=2).next() == 2
    for store in (east, other, west):
        await store.aclose()


async def test_give_back_is_checked_and_takes_the_numbers_handed_out(
    mrec: SimulatedGlobalTable,
) -> None:
    west = _store(mrec, WEST, regions=REGIONS)
    counter = west.atomic_counter("k")
    taken = await counter.next_many(3)
    assert list(taken) == [2, 4, 6]
    assert await counter.give_back(taken)
    assert await counter.next() == 2  # handed out again
    with pytest.raises(ConfigurationError):
        await counter.give_back(range(3, 5))  # not this Region's numbers
    home = _store(mrec, EAST, home_region=EAST)
    assert await home.atomic_counter("h").next_many(2) == range(1, 3)
    await mrec.settle()
    away = _store(mrec, WEST, home_region=EAST)
    with pytest.raises(NotHomeRegion):
        await away.atomic_counter("h").give_back(range(1, 3))
    for store in (west, home, away):
        await store.aclose()


def test_a_region_name_must_be_where_the_requests_go() -> None:
    with pytest.raises(ConfigurationError, match="sends to 'us-east-1'"):
        DynamoStore(transport=FakeDynamoDB(region_name=EAST), region_name=WEST)
    assert DynamoStore(transport=FakeDynamoDB(), region_name=WEST).region == WEST


async def test_a_store_without_regions_is_refused_on_a_scoped_key() -> None:
    async with SimulatedGlobalTable(REGIONS, consistency="STRONG") as strong:
        scoped = DynamoStore(transport=strong.transport(EAST), table=TABLE, regions=REGIONS)
        await scoped.create_table()
        assert await scoped.optimistic_counter("k").next() == 1
        plain = DynamoStore(transport=strong.transport(WEST), table=TABLE)
        with pytest.raises(NumberingMismatch, match="regions="):
            await plain.optimistic_counter("k").next()
        for store in (scoped, plain):
            await store.aclose()


async def test_admin_and_reads_without_regions_on_a_scoped_key_name_the_scope(
    mrec: SimulatedGlobalTable,
) -> None:
    """A home_region= store (no regions=) reads the key's own counter item, which holds the
    scope record and no value: every admin write and every read is refused with
    NumberingMismatch naming the scope and what to pass, never CounterValueInvalid."""
    from aioseq import admin

    scoped = _store(mrec, EAST, regions=REGIONS)
    assert await scoped.atomic_counter("k").next() == 1
    await mrec.settle()
    home = _store(mrec, EAST, home_region=EAST)
    calls: dict[str, Callable[[], Awaitable[object]]] = {
        "set_counter": lambda: admin.set_counter(home, "k", 5),
        "set_counter backward": lambda: admin.set_counter(home, "k", 0, allow_backward=True),
        "ensure_at_least": lambda: admin.ensure_at_least(home, "k", 5),
        "set_numbering": lambda: admin.set_numbering(home, "k", Numbering(2, 1)),
        "describe_counter": lambda: admin.describe_counter(home, "k"),
        "atomic current": lambda: home.atomic_counter("k").current(),
        "allocator current": lambda: home.block_allocator("k").current(),
        "optimistic current": lambda: home.optimistic_counter("k").current(),
        "transactional current": lambda: home.transactional_counter("k").current(),
    }
    for name, call in calls.items():
        with pytest.raises(NumberingMismatch) as caught:
            await call()
        message = str(caught.value)
        assert "'regions=us-east-1,eu-west-1 slots=2 stride=1 offset=1'" in message, name
        assert "regions=['us-east-1', 'eu-west-1']" in message, name
        assert "--regions us-east-1,eu-west-1" in message, name
        assert not caught.value.maybe_applied, name
    await mrec.settle()
    assert await scoped.atomic_counter("k").current() == 1  # nothing was written
    assert (await admin.describe_counter(scoped, "k")).value == 1
    roomy = _store(mrec, EAST, regions=RegionScope((EAST, WEST), 4))
    assert await roomy.atomic_counter("r").next() == 1
    with pytest.raises(NumberingMismatch, match=r"region_slots=4 .*--region-slots 4"):
        await admin.describe_counter(home, "r")
    for store in (scoped, home, roomy):
        await store.aclose()


async def test_admin_in_a_new_region_keeps_the_numbering_shared_out(
    mrec: SimulatedGlobalTable,
) -> None:
    from aioseq import admin

    east = _store(mrec, EAST, regions=REGIONS)
    assert list(await east.block_allocator("k", stride=3, block_size=2).next_many(2)) == [1, 7]
    await mrec.settle()
    west = _store(mrec, WEST, regions=REGIONS)
    assert await admin.ensure_at_least(west, "k", 2) == 2  # eu-west-1's item: 4, 10, then 16
    await mrec.settle()
    assert await west.block_allocator("k", stride=3, block_size=2).next() == 16
    fresh = _store(mrec, WEST, regions=RegionScope((EAST, WEST, "ap-south-1"), 4))
    assert await fresh.check_writes("new") == Numbering(4, 2)  # (a key of its own list)
    for store in (east, west, fresh):
        await store.aclose()


async def test_two_lists_created_at_once_stop_the_losing_region_once_its_record_lands(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Two Regions with different lists take a fresh key's numbers before either's scope
    record reaches the other; replication takes 30 s, longer than the first readings of the
    record take. Both hand out numbers, the same ones, until the winning record lands (the
    window docs/global-tables.md states); the Region whose record lost is refused from its
    next reading on, logged as an error, and the other goes on."""
    clock = ManualClock()
    async with SimulatedGlobalTable(REGIONS, replication_delay_secs=30, clock=clock) as table:
        east = _store(table, EAST, regions=[EAST, WEST], clock=clock, idle_secs=None)
        west = _store(table, WEST, regions=[WEST, EAST], clock=clock, idle_secs=None)
        await east.create_table()
        counters = {EAST: east.atomic_counter("k"), WEST: west.atomic_counter("k")}
        taken: dict[str, list[tuple[float, int]]] = {EAST: [], WEST: []}
        refused: dict[str, float] = {}
        with caplog.at_level(logging.ERROR, logger="aioseq"):
            while clock.now() < 160:
                for region, counter in counters.items():
                    try:
                        taken[region].append((clock.now(), await counter.next()))
                    except NumberingMismatch:
                        refused.setdefault(region, clock.now())
                await clock.sleep(1)
        assert len(refused) == 1  # the Region whose record lost, for good
        ((loser, at),) = refused.items()
        winner = EAST if loser == WEST else WEST
        assert 30 <= at < 100  # once the winning record landed, not at the window's end
        assert all(when < at for when, _ in taken[loser])
        assert taken[winner][-1][0] > at
        numbers = {region: {n for _, n in found} for region, found in taken.items()}
        assert numbers[loser] & numbers[winner]  # the window: the same numbers, until then
        assert any("changed under it" in r.message for r in caplog.records)
        assert table.discarded >= 1  # last writer wins kept one record
        for store in (east, west):
            await store.aclose()


async def test_an_allocator_whose_record_lost_hands_out_none_of_its_block() -> None:
    """As above with block allocators holding large blocks: the losing Region's allocator
    stops handing out the numbers it reserved under the numbering that lost (they are in the
    winner's classes), not only its refills. Found by the simulation (seed 126)."""
    clock = ManualClock()
    async with SimulatedGlobalTable(REGIONS, replication_delay_secs=30, clock=clock) as table:
        east = _store(table, EAST, regions=[EAST, WEST], clock=clock, idle_secs=None)
        west = _store(table, WEST, regions=[WEST, EAST], clock=clock, idle_secs=None)
        await east.create_table()
        allocators = {
            region: store.block_allocator("k", block_size=1000, target_refill_interval_secs=None)
            for region, store in ((EAST, east), (WEST, west))
        }
        taken: dict[str, list[tuple[float, int]]] = {EAST: [], WEST: []}
        refused: dict[str, float] = {}
        while clock.now() < 160:
            for region, allocator in allocators.items():
                try:
                    taken[region].append((clock.now(), await allocator.next()))
                except NumberingMismatch:
                    refused.setdefault(region, clock.now())
            await clock.sleep(1)
        ((loser, at),) = refused.items()
        assert 30 <= at < 100
        assert all(when < at for when, _ in taken[loser])  # nothing from its block after
        stats = allocators[loser].statistics()
        assert stats.wasted > 0  # the rest of its block, counted
        for store in (east, west):
            await store.aclose()


async def test_a_failed_reading_of_the_scope_record_is_read_again(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """As above, with every reading of the record failing until the winning record lands
    (throttled past the stores' retry policy): the readings go on, and the one after it
    lands refuses the losing Region all the same."""
    clock = ManualClock()
    fakes = {r: FakeDynamoDB(region_name=r) for r in REGIONS}
    few = RetryPolicy(initial_backoff_secs=0.01, max_backoff_secs=0.01, max_attempts=2)
    async with SimulatedGlobalTable(fakes, replication_delay_secs=30, clock=clock) as table:
        stores = {
            region: DynamoStore(
                transport=table.transport(region),
                table=TABLE,
                regions=regions,
                clock=clock,
                idle_secs=None,
                retry_policy=few,
            )
            for region, regions in ((EAST, [EAST, WEST]), (WEST, [WEST, EAST]))
        }
        await stores[EAST].create_table()
        for fake in fakes.values():  # every reading after the first check, until 30 s
            fake.inject(
                "throttling",
                operation="GetItem",
                skip=1,
                times=1000,
                when=lambda params: params["Key"]["pk"] == {"S": "k"} and clock.now() < 30,
            )
        counters = {region: store.atomic_counter("k") for region, store in stores.items()}
        refused: set[str] = set()
        with caplog.at_level(logging.INFO, logger="aioseq"):
            while clock.now() < 160:
                for region, counter in counters.items():
                    try:
                        await counter.next()
                    except NumberingMismatch:
                        refused.add(region)
                await clock.sleep(1)
        assert len(refused) == 1  # refused all the same
        assert sum(fake.injected["throttling"] for fake in fakes.values()) >= 2
        assert any("reading its Region scope record failed" in r.message for r in caplog.records)
        for store in stores.values():
            await store.aclose()


async def test_objects_made_just_before_a_region_is_added_keep_their_numbers() -> None:
    """A Region added in a free slot (set_region_scope() in eu-west-1) reaches us-east-1 1 s
    after counter objects there were made and took numbers: they go on through their later
    readings of the key's record (their Region's slot and numbering did not change), and an
    allocator's close gives its unused number back."""
    from aioseq import admin

    clock = ManualClock()
    old, added = RegionScope((EAST, WEST), 3), RegionScope((EAST, WEST, "ap-south-1"), 3)
    keys = ("k", "b", "t")
    async with SimulatedGlobalTable(REGIONS, replication_delay_secs=30, clock=clock) as table:
        east, west = (_store(table, r, regions=old, clock=clock, idle_secs=None) for r in REGIONS)
        await east.create_table()
        for key in keys:
            await east.check_writes(key)  # the keys' scope records, written in us-east-1
        await table.settle()
        await clock.sleep(1)
        for key in keys:
            assert await admin.set_region_scope(west, key, added) == old  # lands at 31 s
        await clock.sleep(29)
        counter = east.atomic_counter("k")
        allocator = east.block_allocator("b", block_size=2, target_refill_interval_secs=None)
        items = east.transactional_counter("t")
        first = counter.next(), allocator.next(), items.put(lambda n: {"pk": f"t#{n}", "sk": 0})
        assert list(await asyncio.gather(*first)) == [1, 1, 1]  # at 30 s: the old record
        while clock.now() < 600:  # past every later reading of the records
            await clock.sleep(1)
        assert [await counter.next() for _ in range(2)] == [4, 7]
        assert [await allocator.next() for _ in range(2)] == [4, 7]  # a refill: 7, 10
        assert await items.put(lambda n: {"pk": f"t#{n}", "sk": 0}) == 4
        await allocator.aclose()
        assert east.statistics().returned == 1  # 10, given back
        for store in (east, west):
            await store.aclose()
