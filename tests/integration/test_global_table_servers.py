"""Counters on a simulated global table over local servers (issue 33): multi-Region eventual
consistency over moto (one set of tables per Region on one server), strong consistency over
either server (one storage shared by the Regions). The same logic on fakes, with the pure parts:
tests/unit/test_global_tables.py."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator

import pytest

from aioseq import DynamoStore, RetryPolicy, TableSpec, UnsafeGlobalTable
from aioseq.testing import SimulatedGlobalTable

EAST, WEST = "us-east-1", "eu-west-1"
REGIONS = [EAST, WEST]
PATIENT = RetryPolicy(initial_backoff_secs=0.005, max_backoff_secs=0.05, max_attempts=500)


@pytest.fixture
def table() -> TableSpec:
    return TableSpec(name=f"aioseq-global-{uuid.uuid4().hex[:12]}")


@pytest.fixture
async def mrec(
    aioseq_endpoint: str, backend: str, table: TableSpec
) -> AsyncIterator[SimulatedGlobalTable]:
    if backend != "moto":
        pytest.skip("DynamoDB Local (-sharedDb) keeps one storage for every Region")
    simulated = await SimulatedGlobalTable.over_endpoint(
        aioseq_endpoint, REGIONS, replication_delay_secs=0.02
    )
    async with simulated:
        creator = DynamoStore(transport=simulated.transport(EAST), table=table)
        await creator.create_table()
        yield simulated
        await simulated.settle()  # (copies of the test's last writes, before the table goes)
        await creator.delete_table()


async def _take(store: DynamoStore, strategy: str) -> int:
    if strategy == "atomic":
        return await store.atomic_counter("orders").next()
    if strategy == "optimistic":
        return await store.optimistic_counter("orders").next()
    if strategy == "allocator":
        return await store.block_allocator("orders", block_size=4).next()
    if strategy == "sort-key":
        return await store.sort_key_counter("orders").put({"x": 1})
    counter = store.transactional_counter("orders")
    return await counter.put(lambda n: {"pk": f"order#{n}", "sk": 0})


@pytest.mark.parametrize(
    "strategy", ["atomic", "optimistic", "allocator", "sort-key", "transactional"]
)
async def test_mrec_refuses_a_shared_counter_then_scopes_it(
    mrec: SimulatedGlobalTable, table: TableSpec, strategy: str
) -> None:
    plain = DynamoStore(transport=mrec.transport(WEST), table=table, retry_policy=PATIENT)
    with pytest.raises(UnsafeGlobalTable):
        await _take(plain, strategy)
    await mrec.settle()
    assert not mrec.writers  # nothing was written
    stores = [
        DynamoStore(transport=mrec.transport(region), table=table, regions=REGIONS)
        for region in REGIONS
    ]

    async def take(store: DynamoStore) -> list[int]:
        return [await _take(store, strategy) for _ in range(10)]

    east, west = await asyncio.gather(*(take(store) for store in stores))
    await mrec.settle()
    assert not set(east) & set(west) and len(set(east + west)) == 20
    assert all(n % 2 == 1 for n in east) and all(n % 2 == 0 for n in west)
    assert east == sorted(east) and west == sorted(west)
    shared = {key for key, regions in mrec.writers.items() if len(regions) > 1}
    assert all('"orders"' in key for _, key in shared)  # the create-once scope record only
    for store in (plain, *stores):
        await store.aclose()


@pytest.mark.slow
@pytest.mark.only_on("dynamodb-local")  # one storage for the Regions: the faster server
async def test_mrsc_conflicts_are_retried_to_exact_numbers(
    aioseq_endpoint: str, table: TableSpec
) -> None:
    """A tenth of the item writes refused by ReplicatedWriteConflictException: 4 stores on a
    shared optimistic counter take exactly 1..400, on a shared atomic counter 400 unique
    numbers, with no error to callers."""
    simulated = await SimulatedGlobalTable.over_endpoint(
        aioseq_endpoint, REGIONS, consistency="STRONG", conflict_rate=0.1, seed=7
    )
    async with simulated:
        stores = [
            DynamoStore(transport=simulated.transport(region), table=table, retry_policy=PATIENT)
            for region in REGIONS * 2
        ]
        await stores[0].create_table()
        for make in (lambda s: s.optimistic_counter("o"), lambda s: s.atomic_counter("a")):

            async def take(store: DynamoStore, make: object = make) -> list[int]:
                counter = make(store)  # type: ignore[operator]
                return list(await asyncio.gather(*(counter.next() for _ in range(100))))

            runs = await asyncio.gather(*(take(store) for store in stores))
            assert sorted(n for run in runs for n in run) == list(range(1, 401))
        assert simulated.conflicts > 0
        await stores[0].delete_table()
        for store in stores:
            await store.aclose()
