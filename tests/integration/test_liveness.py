"""The writers' queue never stops a counter (issue 29): many writers started together under
per-call deadlines, writers killed together, a writer failing alone while queued, writers gone
for good, a far writer. Each test checks behaviour: that the counter keeps moving (calls
served, the longest standstill), what is left on the counter item, and that every number is
exact; the timing bounds are loose (``benchmarks.liveness`` reports the figures).

Writers are separate stores in this process (each its own client and queue entry, as a
process would have), except where a writer must die: those are processes, killed with
``SIGKILL``."""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import AsyncIterator, Sequence
from typing import Any

import pytest
from checks import assert_exactly

from aioseq import DynamoStore, ItemAlreadyExists
from aioseq._workload import stored_numbers
from aioseq.config import TURN_ATTRIBUTE
from aioseq.testing.capacity import CapacityModel
from aioseq.testing.fault_proxy import FaultProxy
from benchmarks.liveness import (
    Load,
    Served,
    drive,
    duplicates,
    exactness,
    first_number,
    queue_entries,
    standstill_secs,
    writers,
)

#: Writers and callers per writer started together, in this one process (the benchmark runs
#: 6 x 8 in processes of their own); moto serves ~300 requests a second, one at a time.
SHAPE = {"moto": (4, 4), "dynamodb-local": (4, 8)}
#: Calls a second the writers must serve between them, at least, grouped and not. The
#: failure this catches is 0 (the queue before issue 29 served none grouped, and left entries
#: behind in every variant); figures are the benchmark's (``benchmarks.liveness``). Ungrouped,
#: each call is one write in the writer's turn: under a deadline shorter than the queue's
#: cycle (writers x the time between writes, plus a round trip) few calls can be served, and
#: writers in one process share its one core.
MIN_CALLS_PER_SEC = {
    ("moto", True): 2.0,
    ("moto", False): 0.3,
    ("dynamodb-local", True): 10.0,
    ("dynamodb-local", False): 0.3,
}
#: The longest time with no call served: the issue's bound (a cold start included).
MAX_STANDSTILL_SECS = 2.0
RUN_SECS = 3.0
#: A transactional put's round trip on an idle 2-core machine (DynamoDB Local: p50 ~20 ms;
#: with two busy processes beside it, ~60 ms). The deadlines above are a few of these: a
#: slower machine gets proportionally longer deadlines and lower rates, so the test keeps
#: asking "does the queue serve calls a few round trips long", not "is the machine idle".
QUIET_ROUND_TRIP_SECS = 0.02


async def slowdown(store: DynamoStore, key: str) -> float:
    """How many times slower than on an idle machine calls are here now, at least 1: a lone
    transactional put on ``key`` against `QUIET_ROUND_TRIP_SECS` (the median of 7), or the
    processes waiting per core (the 1-minute load average), whichever is more. A lone put
    does not feel the CPU that 32 callers in this process will compete for."""
    counter = store.transactional_counter(key)
    times = []
    for _ in range(7):
        started = time.perf_counter()
        await counter.put(lambda n: {"pk": f"{key}-items", "sk": n})
        times.append(time.perf_counter() - started)
    per_core = os.getloadavg()[0] / (os.cpu_count() or 1)
    return max(1.0, sorted(times)[len(times) // 2] / QUIET_ROUND_TRIP_SECS, per_core)


async def run_writers(endpoint: str, table: str, loads: Sequence[tuple[str, Load]]) -> list[Served]:
    """Each ``(endpoint, load)`` driven by a store of its own, all started together; every
    store closed cleanly after."""
    stores = [DynamoStore.open(table=table, endpoint_url=e) for e, _ in loads]
    opened = [await s for s in stores]
    for store in opened:  # each client's first request (botocore's set-up), and the store's
        await store.check_table()  # reading of its table, before the start
    go = asyncio.Event()

    async def start() -> None:
        await go.wait()

    try:
        runs = [
            asyncio.ensure_future(drive(store, load, f"w{i}", start=start))
            for i, (store, (_, load)) in enumerate(zip(opened, loads, strict=True))
        ]
        await asyncio.sleep(0)
        go.set()
        return list(await asyncio.gather(*runs))
    finally:
        await asyncio.gather(*(store.aclose() for store in opened))


def _key(name: str) -> str:
    return f"live-{name}"


@pytest.mark.parametrize(
    ("strategy", "group", "deadline_secs"),
    [
        ("optimistic", True, 0.1),
        ("optimistic", False, 0.1),
        ("transactional", True, 0.1),
        ("transactional", False, 0.1),
        ("optimistic", True, 0.03),
        ("transactional", True, 0.03),
    ],
)
@pytest.mark.slow
async def test_writers_started_together_under_deadlines_keep_the_counter_moving(
    aioseq_store: DynamoStore,
    aioseq_endpoint: str,
    backend: str,
    strategy: str,
    group: bool,
    deadline_secs: float,
) -> None:
    """Cold start: every writer's callers start at once, each call under a deadline. The
    counter serves calls (grouped: all along, no standstill over 2 s), every number once
    (and, for the transactional counter, exactly its item), and once every store closed no
    queue entry is left on the counter item."""
    if backend == "moto" and deadline_secs < 0.1:
        pytest.skip("moto serves one request at a time, ~300 a second: 30 ms there is ~3 ms")
    if backend == "moto" and not group:
        # The session's moto server is serialized and shared with the other test worker, whose
        # requests queue ahead of these: an ungrouped call waits for its writer's turn and the
        # queue's cycle, which that queue can push past 0.1 s for every call (seen once in
        # five fresh-clone runs: 0 served). What the test is for (a queue that serves none,
        # or leaves entries behind) does not depend on the deadline's length.
        deadline_secs = 0.3
    processes, tasks = SHAPE[backend]
    slower = await slowdown(aioseq_store, _key(f"probe-{strategy}-{group}-{deadline_secs}"))
    deadline_secs *= slower
    key = _key(f"{strategy}-{group}")
    load = Load(key, strategy, group, tasks, RUN_SECS, deadline_secs)
    found = await run_writers(
        aioseq_endpoint, aioseq_store.table.name, [(aioseq_endpoint, load)] * processes
    )
    served = sum(w.served for w in found)
    standstill = standstill_secs(found)
    entries = await queue_entries(aioseq_store, key)
    summary = (
        f"deadline {deadline_secs:.3f} s ({slower:.1f}x the quiet round trip):"
        f" {served} served ({[w.served for w in found]}),"
        f" {sum(w.timed_out for w in found)} timed out, standstill {standstill:.2f} s,"
        f" {len(entries)} entries left"
    )
    assert duplicates(found) == 0, summary
    if strategy == "transactional":
        items = await exactness(aioseq_store, key, found)
        assert items["ok"], (items, summary)
    assert entries == [], summary
    if deadline_secs < 0.1 * slower:
        # A round trip and a half: whether any call fits depends on the load of the moment
        # (32 callers in this process, the suite's other worker), which one lone put measured
        # before cannot tell; asked only of a machine near idle (1.6x: 0 of 1,255 served).
        if slower <= 1.25:
            assert served > 0, summary
        return
    assert served / RUN_SECS >= MIN_CALLS_PER_SEC[backend, group] / slower, summary
    if group:
        assert standstill <= MAX_STANDSTILL_SECS * slower, summary


async def queue_ahead(store: DynamoStore, key: str, *entries: str) -> None:
    """Writers (in other processes) queued on counter ``key``, ``entries`` first."""
    await store.send_once(
        "update_item",
        TableName=store.table.name,
        Key=store.counter_item_key(key),
        UpdateExpression="SET #turn = :queue",
        ExpressionAttributeNames={"#turn": TURN_ATTRIBUTE},
        ExpressionAttributeValues={":queue": {"L": [{"S": e} for e in entries]}},
    )


def invoice(n: int) -> dict[str, Any]:
    return {"pk": "invoices", "sk": n}


def credit_note(n: int) -> dict[str, Any]:
    return {"pk": "credit-notes", "sk": n}


@pytest.fixture
async def other_store(aioseq_store: DynamoStore) -> AsyncIterator[DynamoStore]:
    """A second writer's store on the same table and client."""
    async with DynamoStore(aioseq_store.client, aioseq_store.table) as store:
        yield store


async def test_a_writer_failing_alone_while_queued_leaves_no_entry(
    aioseq_store: DynamoStore, other_store: DynamoStore
) -> None:
    """A put whose item already exists (a business key used twice: routine) fails alone with
    ``ItemAlreadyExists`` after its writer queued behind another: its writer takes its entry
    out in the background within a few round trips, not when others find it stale (0.5 s);
    the next writer is not held by it."""
    assert await aioseq_store.transactional_counter("c").put(invoice) == 1
    await aioseq_store.send_once(  # number 2's item, stored by someone else
        "put_item",
        TableName=aioseq_store.table.name,
        Item={"pk": {"S": "invoices"}, "sk": {"N": "2"}},
    )
    await queue_ahead(aioseq_store, "c", "other:1")  # so this writer queues behind it
    failing = other_store.transactional_counter("c")
    with pytest.raises(ItemAlreadyExists):
        await failing.put(invoice)
    left = await queue_entries(aioseq_store, "c")  # the other's went stale, and was removed
    for _ in range(20):  # its own goes in the background, well before it would go stale
        if not left:
            break
        await asyncio.sleep(0.01)
        left = await queue_entries(aioseq_store, "c")
    assert left == []
    started = time.monotonic()
    assert await aioseq_store.transactional_counter("c").put(credit_note) == 2
    assert time.monotonic() - started < 0.4  # no stale entry of its to wait out
    assert_exactly(await stored_numbers(aioseq_store, "invoices"), 1, 2)  # (2: not aioseq's)
    assert_exactly(await stored_numbers(aioseq_store, "credit-notes"), 2, 2)


@pytest.mark.parametrize("strategy", ["transactional", "optimistic"])
async def test_a_counter_whose_queued_writers_are_gone_is_usable_at_once(
    aioseq_store: DynamoStore, strategy: str
) -> None:
    """Ten writers queued and vanished (crashed, or cut off): the next writer gets its number
    in about one stale entry's wait, not one wait per entry."""
    if strategy == "transactional":
        assert await aioseq_store.transactional_counter("c").put(invoice) == 1
    else:
        assert await aioseq_store.optimistic_counter("c").next() == 1
    await queue_ahead(aioseq_store, "c", *(f"gone{i}:1" for i in range(10)))
    async with DynamoStore(aioseq_store.client, aioseq_store.table) as fresh:
        started = time.monotonic()
        if strategy == "transactional":
            number = await fresh.transactional_counter("c").put(invoice)
        else:
            number = await fresh.optimistic_counter("c").next()
        took = time.monotonic() - started
    assert number == 2
    assert took <= 1.5, f"first number after {took:.2f} s"
    assert await queue_entries(aioseq_store, "c") == []


@pytest.mark.slow
@pytest.mark.parametrize("strategy", ["transactional", "optimistic"])
async def test_writers_killed_while_queued_leave_at_most_one_entry_each(
    aioseq_store: DynamoStore, aioseq_endpoint: str, strategy: str
) -> None:
    """Three writer processes under 0.1 s deadlines are killed together: each leaves at most
    its one entry, and a fresh writer's first number then comes within 1.5 s."""
    key = _key(strategy)
    load = Load(key, strategy, True, 8, 600.0, 0.1)
    table = aioseq_store.table.name
    with writers(table, [(aioseq_endpoint, load, f"p{i}") for i in range(3)]) as started:
        await started.started()
        await asyncio.sleep(1.5)
        await asyncio.to_thread(started.kill)
    left = await queue_entries(aioseq_store, key)
    slower = await slowdown(aioseq_store, _key(f"probe-killed-{strategy}"))
    first = await first_number(aioseq_endpoint, table, load)
    assert len(left) <= 3, left
    assert first.get("secs") is not None, first
    # A killed writer's entry is waited out for its lease (its own round trips, 0.5 s at
    # least): on a slower machine, proportionally longer (1.556 s seen at 1.6x).
    assert first["secs"] <= 1.5 * slower, (first, f"{len(left)} entries left", f"{slower:.1f}x")


@pytest.mark.slow
@pytest.mark.only_on("dynamodb-local")  # the queue's pace, where writers are served at once
async def test_a_far_writer_beside_near_ones_commits(
    aioseq_store: DynamoStore, aioseq_endpoint: str
) -> None:
    """A writer 600 ms away (one way) and two near ones, transactional puts, 8 s: the far
    writer commits at least 3 puts (its entry is not removed as stale before its write can
    arrive), and the items are exact."""
    key = _key("far")
    secs = 8.0
    load = Load(key, "transactional", True, 4, secs, None)
    model = CapacityModel(
        partition_wcu_per_sec=1e9,
        partition_rcu_per_sec=1e9,
        burst_secs=1.0,
        round_trip_secs=(1.2, 1.2),
    )
    with FaultProxy(aioseq_endpoint, capacity=model) as proxy:
        found = await run_writers(
            aioseq_endpoint,
            aioseq_store.table.name,
            [(proxy.endpoint_url, load), (aioseq_endpoint, load), (aioseq_endpoint, load)],
        )
    items = await exactness(aioseq_store, key, found)
    shares = [w.served for w in found]
    assert duplicates(found) == 0 and items["ok"], (items, shares)
    assert shares[0] >= 3, f"far {shares[0]}, near {shares[1:]}"
