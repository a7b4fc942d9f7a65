"""Invoice series against real servers: two processes numbering documents dated on both sides
of the new year, and the operator's commands on a series' periods (the rules themselves:
tests/unit/test_series_on_fake.py)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from checks import assert_exactly, cli_table, run_cli

from aioseq import DynamoStore
from aioseq._workload import stored_numbers

PARIS = ZoneInfo("Europe/Paris")
NEW_YEAR = datetime(2027, 1, 1, tzinfo=PARIS)


def in_collection(key: str) -> Callable[[int], dict[str, Any]]:
    """The item function of a document numbered in its period's item collection."""
    return lambda n: {"pk": key, "sk": n}


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


def test_the_cli_audits_and_describes_each_period_of_a_series(aioseq_endpoint: str) -> None:
    """``aioseq audit`` passes on a two-period series and flags a hole in one period; the
    series' key names its periods for ``describe`` and ``audit``; ``start-after`` mends one
    period from its own items."""
    table = cli_table(aioseq_endpoint)

    def run(*args: str) -> tuple[int, str, str]:
        done = run_cli("--endpoint-url", aioseq_endpoint, "--table", table, *args)
        return done.returncode, done.stdout, done.stderr

    async def numbered() -> None:
        async with DynamoStore.open(table=table, endpoint_url=aioseq_endpoint) as store:
            invoices = store.series("inv", period="year", tz="Europe/Paris")
            for i in range(-3, 2):  # three dated 2026, two 2027
                on = NEW_YEAR + timedelta(hours=i)
                counter = invoices.at(on, now=on)
                await counter.put(in_collection(counter.key))
            await store.transactional_counter("other").put(lambda n: {"pk": "other", "sk": n})

    async def send(operation: str, **params: object) -> None:
        async with DynamoStore.open(table=table, endpoint_url=aioseq_endpoint) as store:
            await store.send_once(operation, **params)

    asyncio.run(numbered())
    code, out, err = run("audit")
    assert code == 0, err
    assert out.splitlines() == [
        "inv/2026: 3 items, numbers up to 3: ok",
        "inv/2027: 2 items, numbers up to 2: ok",
        "other: 1 items, numbers up to 1: ok",
    ]
    code, out, _ = run("describe", "inv")
    assert code == 0
    assert [line.split("\t")[:2] for line in out.splitlines()] == [
        ["inv/2026", "3"],
        ["inv/2027", "2"],
    ]
    records = [json.loads(line) for line in run("describe", "inv", "--json")[1].splitlines()]
    assert [(r["series"], r["period"], r["value"]) for r in records] == [
        ("inv", "2026", 3),
        ("inv", "2027", 2),
    ]
    code, _, err = run("describe", "nothing")
    assert code == 1 and "CounterNotFound" in err

    hole = {"pk": {"S": "inv/2026"}, "sk": {"N": "2"}}
    asyncio.run(send("delete_item", TableName=table, Key=hole))
    code, out, _ = run("audit", "inv")
    assert code == 1
    assert out.splitlines() == [
        "inv/2026: 2 items, numbers up to 3: FINDINGS",
        "  missing (1): 2",
        "inv/2027: 2 items, numbers up to 2: ok",
    ]
    # start-after per period: the period's counter, moved past its own items only.
    assert run("set", "inv/2027", "0", "--allow-backward")[0] == 0
    code, out, _ = run("audit", "inv/2027")
    fix = out.rpartition("fix: ")[2].strip()
    assert code == 1
    assert fix.endswith(f"start-after inv/2027 --table {table} --attribute sk --partition inv/2027")
    assert run(*fix.split()[1:])[:2] == (0, "2\n")
    assert run("describe", "inv/2027")[1].split("\t")[:2] == ["inv/2027", "2"]
    asyncio.run(send("delete_table", TableName=table))
