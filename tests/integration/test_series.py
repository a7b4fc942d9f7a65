"""Invoice series against real servers: two processes numbering documents dated on both sides
of the new year (the rules themselves: tests/unit/test_series_on_fake.py)."""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

from checks import assert_exactly

from aioseq import DynamoStore
from aioseq._workload import stored_numbers

PARIS = ZoneInfo("Europe/Paris")
NEW_YEAR = datetime(2027, 1, 1, tzinfo=PARIS)


async def test_two_stores_number_each_side_of_the_new_year_from_one(
    aioseq_store: DynamoStore, aioseq_endpoint: str
) -> None:
    """200 documents put concurrently from two stores, half dated on each side of the new
    year: items numbered exactly 1..100 in each period; a store opened afterwards continues
    the new period at 101."""
    table = aioseq_store.table
    now = NEW_YEAR + timedelta(minutes=5)

    async def put(store: DynamoStore, i: int) -> tuple[str, int]:
        on = NEW_YEAR + timedelta(seconds=i)  # i < 0: dated 31 December
        counter = store.series("invoices", period="year", tz="Europe/Paris").at(on, now=now)
        number = await counter.put(lambda n: {"pk": counter.key, "sk": n, "doc": i})
        return counter.key, number

    async with DynamoStore.open(table=table, endpoint_url=aioseq_endpoint) as other:
        stores = (aioseq_store, other)
        got = await asyncio.gather(*(put(stores[i % 2], i) for i in range(-100, 100)))
    for period in ("invoices/2026", "invoices/2027"):
        assert_exactly([n for key, n in got if key == period], 1, 100)
        assert_exactly(await stored_numbers(aioseq_store, period), 1, 100)
    async with DynamoStore.open(table=table, endpoint_url=aioseq_endpoint) as later:
        january = later.series("invoices", period="year", tz="Europe/Paris")
        counter = january.at(now, now=now)
        assert await counter.put(lambda n: {"pk": counter.key, "sk": n}) == 101
        assert await january.counter("2026").current() == 100
