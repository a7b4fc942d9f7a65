"""What sharing counters across Regions costs (issue 33), on a local server.

1. ``scoping``: each strategy takes ``--numbers`` (2,000) numbers with ``--tasks`` (32) tasks,
   one store on a table of one Region, without ``regions=`` and with
   ``regions=["us-east-1", "eu-west-1"]`` (its Region's slot), alternating, ``--rounds`` (3)
   times; numbers/s and requests per number, the scope record's check included. What the
   issue asks of the design: Region-scoped numbering costs a request or two per counter
   object, not per number.
2. ``strong``: a simulated table with multi-Region strong consistency over the server (one
   storage, two Regions), 4 stores (two per Region) sharing one optimistic counter and one
   atomic counter, ``--numbers`` numbers in all, a share of the item writes refused with
   ``ReplicatedWriteConflictException`` (0, 10 %, 30 %): numbers/s, conflicts retried per
   number, and whether the numbers were exactly 1..N (optimistic) or unique (atomic).

The server neither replicates nor adds a cross-Region round trip: these are the costs of
aioseq's side, not of AWS's replication.

    scripts/in-loopback-netns .venv/bin/python -m benchmarks.global_tables --server dynamodb-local
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from aioseq import DynamoStore, RetryPolicy
from aioseq.testing import SimulatedGlobalTable
from benchmarks import _report
from benchmarks.row import fresh_table

REGIONS = ("us-east-1", "eu-west-1")
STRATEGIES = ("allocator", "atomic", "optimistic", "sort-key", "transactional")
CONFLICT_RATES = (0.0, 0.1, 0.3)
PATIENT = RetryPolicy(initial_backoff_secs=0.005, max_backoff_secs=0.1, max_attempts=1000)


@dataclass(frozen=True)
class Settings:
    numbers: int = 2000
    tasks: int = 32
    rounds: int = 3


QUICK = Settings(numbers=40, tasks=4, rounds=1)

Take = Callable[[], Awaitable[int]]


def _taker(store: DynamoStore, strategy: str, key: str) -> Take:
    if strategy == "allocator":
        return store.block_allocator(key).next
    if strategy == "atomic":
        return store.atomic_counter(key).next
    if strategy == "optimistic":
        return store.optimistic_counter(key).next
    if strategy == "sort-key":
        counter = store.sort_key_counter(key)
        return lambda: counter.put({"x": 1})
    items = store.transactional_counter(key)
    return lambda: items.put(lambda n: {"pk": f"{key}-item#{n}", "sk": 0})


async def _take_all(takes: Sequence[Take], numbers: int, tasks: int) -> tuple[list[int], float]:
    """``numbers`` numbers from ``takes`` (round-robin over ``tasks`` tasks); the wall time."""
    left = iter(range(numbers))
    found: list[int] = []

    async def worker(take: Take) -> None:
        for _ in left:
            found.append(await take())

    started = time.perf_counter()
    await asyncio.gather(*(worker(takes[i % len(takes)]) for i in range(tasks)))
    return found, time.perf_counter() - started


async def scoping_row(
    endpoint: str, strategy: str, scoped: bool, s: Settings, round_: int
) -> dict[str, Any]:
    async with fresh_table(endpoint) as direct:
        options: dict[str, Any] = {"regions": list(REGIONS)} if scoped else {}
        async with DynamoStore.open(
            table=direct.table, endpoint_url=endpoint, retry_policy=PATIENT, **options
        ) as store:
            await store.replication()  # start-up, as a service's: not counted
            before = store.requests
            take = _taker(store, strategy, f"k{round_}")
            numbers, secs = await _take_all([take], s.numbers, s.tasks)
            requests = store.requests - before
    step = 2 if scoped else 1
    expected = set(range(1, 1 + step * len(numbers), step))
    exact = strategy != "allocator" and strategy != "atomic"  # their sets may have holes
    ok = len(set(numbers)) == len(numbers) == s.numbers and (
        set(numbers) == expected if exact else all(n % step == 1 % step for n in numbers)
    )
    return {
        "strategy": strategy,
        "regions": scoped,
        "round": round_,
        "numbers_per_sec": round(len(numbers) / secs),
        "requests": dict(requests),
        "requests_per_number": round(sum(requests.values()) / max(1, len(numbers)), 4),
        "ok": ok,
    }


async def section_scoping(endpoint: str, s: Settings) -> list[dict[str, Any]]:
    rows = []
    for strategy in STRATEGIES:
        for round_ in range(s.rounds):
            for scoped in (False, True) if round_ % 2 == 0 else (True, False):
                rows.append(await scoping_row(endpoint, strategy, scoped, s, round_))
                _log(rows[-1])
    return rows


async def strong_row(endpoint: str, strategy: str, rate: float, s: Settings) -> dict[str, Any]:
    simulated = await SimulatedGlobalTable.over_endpoint(
        endpoint, REGIONS, consistency="STRONG", conflict_rate=rate, seed=7
    )
    async with simulated, fresh_table(endpoint) as direct:
        stores = [
            DynamoStore(
                transport=simulated.transport(region), table=direct.table, retry_policy=PATIENT
            )
            for region in REGIONS * 2
        ]
        for store in stores:
            await store.replication()
        takes = [_taker(store, strategy, "shared") for store in stores]
        numbers, secs = await _take_all(takes, s.numbers, s.tasks)
        conflicts = Counter[str]()
        for store in stores:
            made = store.optimistic_counter if strategy == "optimistic" else store.atomic_counter
            conflicts.update(made("shared").statistics().retries)
            await store.aclose()
    exact = sorted(numbers) == list(range(1, s.numbers + 1))
    refused = conflicts["ReplicatedWriteConflictException"]
    return {
        "strategy": strategy,
        "conflict_rate": rate,
        "numbers_per_sec": round(len(numbers) / secs),
        "replicated_conflicts_per_number": round(refused / max(1, len(numbers)), 4),
        "retries": dict(conflicts),
        "refused_by_table": simulated.conflicts,
        "exact": exact,
        "ok": exact if strategy == "optimistic" else len(set(numbers)) == s.numbers,
    }


async def section_strong(endpoint: str, s: Settings) -> list[dict[str, Any]]:
    rows = []
    for strategy in ("optimistic", "atomic"):
        for rate in CONFLICT_RATES:
            rows.append(await strong_row(endpoint, strategy, rate, s))
            _log(rows[-1])
    return rows


async def run(s: Settings, endpoint: str) -> dict[str, Any]:
    scoping = await section_scoping(endpoint, s)
    strong = await section_strong(endpoint, s)
    return {
        "scoping": scoping,
        "strong": strong,
        "ok": all(r["ok"] for r in scoping) and all(r["ok"] for r in strong),
    }


def _log(row: dict[str, Any]) -> None:
    print(row, file=sys.stderr, flush=True)


def markdown(report: dict[str, Any]) -> str:
    settings = report["settings"]
    by: dict[tuple[str, bool], list[dict[str, Any]]] = {}
    for r in report["scoping"]:
        by.setdefault((r["strategy"], r["regions"]), []).append(r)

    def median(rows: list[dict[str, Any]], figure: str) -> float:
        return float(statistics.median(r[figure] for r in rows))

    lines = [
        f"Run: `{report['command']}` ({report['date']}; {report['server']}).",
        "",
        f"{settings['numbers']:,} numbers, {settings['tasks']} tasks, one store, a table of one"
        f" Region; median of {settings['rounds']} alternating rounds:",
        "",
        "| strategy | numbers/s | with `regions=` | requests per number | with `regions=` |",
        "|---|---:|---:|---:|---:|",
        *(
            f"| {strategy} | {median(by[(strategy, False)], 'numbers_per_sec'):,.0f} |"
            f" {median(by[(strategy, True)], 'numbers_per_sec'):,.0f} |"
            f" {median(by[(strategy, False)], 'requests_per_number'):.3f} |"
            f" {median(by[(strategy, True)], 'requests_per_number'):.3f} |"
            for strategy in STRATEGIES
        ),
        "",
        f"Multi-Region strong consistency, simulated over the server: 4 stores in 2 Regions on"
        f" one counter, {settings['numbers']:,} numbers in all, {settings['tasks']} tasks:",
        "",
        "| strategy | refused by the table | numbers/s | refusals retried per number | numbers |",
        "|---|---:|---:|---:|---|",
        *(
            f"| {r['strategy']} | {r['conflict_rate']:.0%} | {r['numbers_per_sec']:,} |"
            f" {r['replicated_conflicts_per_number']} |"
            f" {'exactly 1..N' if r['exact'] else 'unique' if r['ok'] else '**WRONG**'} |"
            for r in report["strong"]
        ),
        "",
        f"Every row checked (no duplicate; the optimistic counter gapless): "
        f"{'yes' if report['ok'] else '**NO**'}.",
    ]  # fmt: skip
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    return _report.main(
        "global_tables", __doc__, argv, Settings(), run, markdown,
        options=("numbers", "tasks", "rounds"), quick=QUICK,
    )  # fmt: skip


if __name__ == "__main__":
    raise SystemExit(main())
