"""Many keys and per-request code: what the store's shared objects cost, measured in one run.

    scripts/in-loopback-netns .venv/bin/python -m benchmarks.many_keys --server dynamodb-local
    python -m benchmarks.many_keys                         # embedded moto server (fewer keys)
    python -m benchmarks.many_keys --quick                 # seconds: what the tests run

Three sections, each judged against the targets of the issue "Many keys and per-request code":

1. **Allocator, per request.** ``T`` tasks take numbers from one key, each call written as
   per-request code writes it, ``await store.block_allocator(key).next()``, against the same
   calls through one allocator got from the factory beforehand (``await held.next()``): the
   same store, the same options, a fresh key per row, rows interleaved (``--rounds``, the
   order swapped every round) so that the machine's drift falls on both. Numbers/s of each
   (all numbers over all time), their ratio (target >= 0.9x), and ``UpdateItem`` requests per
   1,000 numbers, counted by ``store.requests`` (target <= 1,000 / block_size + 1).
2. **Transactional counter, per request.** The same with ``await
   store.transactional_counter(key).put(item)`` at 128 tasks: puts/s, the ratio (target >=
   0.9x), and gapless (the numbers returned are 1..n, one stored item each, the counter at n).
3. **Many keys touched once.** ``--keys`` keys, ``store.block_allocator(f"tenant-{i}").next()``
   once each at ``T`` tasks, on a store with a short ``idle_secs``: numbers/s; the Python
   memory traced (tracemalloc) at its peak and once the store has dropped every idle object
   (``statistics().live_keys == 0``, polled with a bound; then ``gc.collect()``), against the
   start (target: within 5 MB); after the store's close, the numbers wasted (target 0), checked
   by reading every counter back with a Scan (:func:`aioseq.admin.list_counters`): each must
   equal the numbers handed out for its key.

Sections 1 and 2 also read their counters back after the close: each key's counter equals the
numbers handed out for it (no waste). Writes ``many_keys.json`` and ``many_keys.md`` into
``--out``, prints the table, and exits 1 if a check failed (waste, a duplicate, a gap, requests
per 1,000 numbers); a speed or memory target that is not met is reported, not an error.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import json
import os
import resource
import sys
import time
import tracemalloc
import uuid
import warnings
from array import array
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from tabulate import tabulate

from aioseq import DynamoStore
from aioseq._workload import check_numbers, stored_numbers, take_numbers
from aioseq.admin import list_counters
from benchmarks import _report
from benchmarks._report import header
from benchmarks.row import server

__all__ = ["QUICK", "Options", "Target", "main", "run"]

#: The allocator's first block size (the factory's default), which the request target uses.
BLOCK_SIZE = 100
#: Keys measured in section 3 when ``--keys`` is not given, by server: moto serves ~300
#: requests/s and each key costs two (a block, and its give-back when dropped).
DEFAULT_KEYS = {"dynamodb-local": 100_000, "moto": 5_000}
MB = 1024 * 1024


@dataclass(frozen=True)
class Options:
    """What to run. A row stops starting calls after ``row_secs`` (calls in flight finish).

    Attributes:
        allocator_tasks, allocator_numbers: section 1's tasks and numbers per row.
        put_tasks, puts: section 2's tasks and puts per row.
        rounds: rows per mode in sections 1 and 2, interleaved.
        keys, key_tasks: section 3's keys (one number each) and tasks.
        idle_secs: section 3's store drops objects unused this long.
        warmup_secs: untimed traffic of both kinds before sections 1 and 2.
        row_secs: the time budget of a row of sections 1 and 2.
        trace_memory: section 3 traces Python's allocations (tracemalloc), which slows every
            allocation; without it, memory is the resident set only.
    """

    allocator_tasks: int = 1_000
    allocator_numbers: int = 300_000
    put_tasks: int = 128
    puts: int = 4_000
    rounds: int = 3
    keys: int = DEFAULT_KEYS["dynamodb-local"]
    key_tasks: int = 1_000
    idle_secs: float = 2.0
    warmup_secs: float = 3.0
    row_secs: float = 5.0
    trace_memory: bool = True


QUICK = Options(
    allocator_tasks=200,
    allocator_numbers=5_000,
    put_tasks=32,
    puts=200,
    rounds=1,
    keys=2_000,
    key_tasks=200,
    idle_secs=1.0,
    warmup_secs=0.0,
    row_secs=2.0,
)


@dataclass
class Target:
    """One figure against the issue's target.

    Attributes:
        section: 1, 2 or 3.
        name: what is measured.
        figure: the measured value, in ``unit``.
        goal: the target, as text (``">= 0.9x"``).
        met: the figure meets it.
        check: a behaviour the library promises (waste, duplicates, gaps, requests), whose
            failure fails the run; otherwise a speed or memory target, reported only.
        detail: the figures behind it.
    """

    section: int
    name: str
    figure: float
    unit: str
    goal: str
    met: bool
    check: bool
    detail: str = ""


@dataclass
class ModeRow:
    """One timed row of section 1 or 2: one key, one mode."""

    mode: str  # "per-request" or "held"
    round: int
    key: str
    numbers: int
    wall_secs: float
    requests: dict[str, int]
    duplicates: int
    gaps: int
    mismatched_items: int = 0
    counter_after_close: int | None = None

    @property
    def per_s(self) -> float:
        return self.numbers / self.wall_secs if self.wall_secs else 0.0


@dataclass
class ManyKeys:
    """Section 3's figures."""

    keys: int
    tasks: int
    idle_secs: float
    numbers: int
    wall_secs: float
    requests: dict[str, int]
    traced_start_bytes: int
    traced_peak_bytes: int
    traced_after_bytes: int
    rss_start_bytes: int
    rss_after_bytes: int
    max_rss_bytes: int
    peak_live_keys: int
    drain_secs: float
    live_keys_after_drain: int
    evictions_after_drain: int
    statistics_after_close: dict[str, int]
    counters_read: int
    counters_mismatched: int
    counter_surplus: int
    resource_warnings: int
    not_one: int
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def per_s(self) -> float:
        return self.numbers / self.wall_secs if self.wall_secs else 0.0


# --- helpers ---------------------------------------------------------------------------------


def _log(text: str, quiet: bool) -> None:
    if not quiet:
        print(text, file=sys.stderr, flush=True)


def _rss_bytes() -> int:
    """This process's resident set now (0 where /proc is missing)."""
    try:
        pages = int(Path("/proc/self/statm").read_text().split()[1])
    except (OSError, ValueError, IndexError):
        return 0
    return pages * os.sysconf("SC_PAGE_SIZE")


def _max_rss_bytes() -> int:
    """This process's peak resident set so far (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def _pooled(rows: Sequence[ModeRow], mode: str) -> float:
    """All numbers of ``mode``'s rows over all their time."""
    chosen = [r for r in rows if r.mode == mode]
    wall = sum(r.wall_secs for r in chosen)
    return sum(r.numbers for r in chosen) / wall if wall else 0.0


@contextlib.asynccontextmanager
async def _fresh_store(endpoint_url: str, **options: Any) -> AsyncIterator[DynamoStore]:
    """A store on a new table, deleted afterwards (by a second store, after this one closed)."""
    table = f"aioseq-bench-keys-{uuid.uuid4().hex[:12]}"
    store = await DynamoStore.open(table=table, endpoint_url=endpoint_url, **options)
    try:
        await store.create_table()
        yield store
    finally:
        await store.aclose()
        async with DynamoStore.open(table=table, endpoint_url=endpoint_url) as cleaner:
            await cleaner.delete_table()


async def _counters(endpoint_url: str, table: str) -> dict[str, int]:
    """Every counter item of ``table`` (a Scan), by key."""
    async with DynamoStore.open(table=table, endpoint_url=endpoint_url, idle_secs=None) as store:
        return {info.key: info.value async for info in list_counters(store)}


# --- sections 1 and 2: per request against held -------------------------------------------

Take = Callable[[], Awaitable[int]]


async def _mode_rows(
    store: DynamoStore,
    prefix: str,
    take_for: Callable[[str, str], Take],
    *,
    options: Options,
    tasks: int,
    count: int,
    quiet: bool,
) -> list[ModeRow]:
    """``options.rounds`` rows per mode, interleaved (the order swapped every round), each on a
    fresh key, counting the store's requests during the row."""
    rows: list[ModeRow] = []
    for round_ in range(options.rounds):
        modes = ("held", "per-request") if round_ % 2 == 0 else ("per-request", "held")
        for mode in modes:
            key = f"{prefix}-{mode}-{round_}"
            take = take_for(mode, key)
            before = store.requests.copy()
            taken = await take_numbers(
                [take], count=count, concurrency=tasks, time_budget_secs=options.row_secs
            )
            requests = store.requests - before
            checked = check_numbers(taken.numbers)
            row = ModeRow(
                mode=mode,
                round=round_,
                key=key,
                numbers=len(taken.numbers),
                wall_secs=taken.wall_secs,
                requests=dict(requests),
                duplicates=checked.duplicates,
                gaps=checked.gaps + (min(taken.numbers, default=1) - 1),  # from 1
            )
            rows.append(row)
            _log(f"  {prefix} {mode} round {round_}: {row.per_s:,.0f}/s", quiet)
    return rows


def _allocator_take(store: DynamoStore) -> Callable[[str, str], Take]:
    def take_for(mode: str, key: str) -> Take:
        if mode == "per-request":

            async def per_request() -> int:
                return await store.block_allocator(key).next()

            return per_request
        held = store.block_allocator(key)

        async def through_held() -> int:
            return await held.next()

        return through_held

    return take_for


def _put_take(store: DynamoStore) -> Callable[[str, str], Take]:
    spec = store.table
    sort_key = spec.sort_key or "sk"

    def take_for(mode: str, key: str) -> Take:
        def item(n: int) -> dict[str, Any]:
            return {spec.partition_key: key, sort_key: n}

        if mode == "per-request":

            async def per_request() -> int:
                return await store.transactional_counter(key).put(item)

            return per_request
        held = store.transactional_counter(key)

        async def through_held() -> int:
            return await held.put(item)

        return through_held

    return take_for


async def _warm_up(store: DynamoStore, secs: float) -> None:
    """Untimed traffic of every kind the sections time (DynamoDB Local's JIT, botocore's
    caches), on keys of its own."""
    for kind, take_for in (("alloc", _allocator_take(store)), ("tx", _put_take(store))):
        for mode in ("held", "per-request"):
            await take_numbers(
                [take_for(mode, f"warm-up-{kind}-{mode}")],
                count=10**7,
                concurrency=16,
                time_budget_secs=secs / 4,
            )


async def per_request_sections(
    options: Options, endpoint_url: str, quiet: bool = True
) -> tuple[list[ModeRow], list[ModeRow]]:
    """Sections 1 and 2 on one store (default options), then the counters read back."""
    async with _fresh_store(endpoint_url) as store:
        table = store.table.name
        if options.warmup_secs:
            _log(f"warm-up: {options.warmup_secs:g} s", quiet)
            await _warm_up(store, options.warmup_secs)
        _log(f"1. allocator, {options.allocator_tasks:,} tasks", quiet)
        allocator = await _mode_rows(
            store,
            "alloc",
            _allocator_take(store),
            options=options,
            tasks=options.allocator_tasks,
            count=options.allocator_numbers,
            quiet=quiet,
        )
        _log(f"2. transactional put, {options.put_tasks:,} tasks", quiet)
        puts = await _mode_rows(
            store,
            "tx",
            _put_take(store),
            options=options,
            tasks=options.put_tasks,
            count=options.puts,
            quiet=quiet,
        )
        for row in puts:
            stored = await stored_numbers(store, row.key)
            row.mismatched_items = len(set(range(1, row.numbers + 1)) ^ set(stored))
        await store.aclose()  # gives every allocator's tail back
        counters = await _counters(endpoint_url, table)
    for row in allocator + puts:
        row.counter_after_close = counters.get(row.key)
    return allocator, puts


# --- section 3: many keys touched once -----------------------------------------------------


async def _wait_until_idle(store: DynamoStore, made: int, bound_secs: float) -> float:
    """Poll until the store has dropped all ``made`` objects it made, each drop finished (at
    most ``bound_secs``); the time it took.

    ``live_keys == 0`` alone is not enough: a sweep takes its idle objects out of the registry
    first, then gives their numbers back (32 at once), counting each in ``evictions`` when its
    give-back is done (a store closed meanwhile waits for them)."""
    started = time.perf_counter()
    while True:  # polled: the drops come from the store's sweeper, every idle_secs
        waited = time.perf_counter() - started
        stats = store.statistics()
        if (stats.live_keys == 0 and stats.evictions >= made) or waited >= bound_secs:
            return waited
        # statistics() sums over every live and dropping key: a poll costs 0.2 s to 1.7 s at
        # 100,000 keys on a loaded machine, so poll every 5 s while many drops are pending
        # (the drain takes minutes) to leave the loop to the give-backs.
        await asyncio.sleep(5.0 if made - stats.evictions > 10_000 else 0.1)


async def many_keys_section(options: Options, endpoint_url: str, quiet: bool = True) -> ManyKeys:
    """Section 3: see the module's docstring."""
    n = options.keys
    handed = array("q", bytes(8 * n))  # allocated before the baseline: not part of the growth
    # A bound for a stuck sweeper, not a timing: 40 ms per give-back, and half a minute more,
    # leave room for a loaded 2-core machine running the test suite beside it (at load 13,
    # 184 of 200 drops were done 10 s after the last call).
    bound_secs = 4 * options.idle_secs + n / 25 + 30
    tracing = options.trace_memory and not tracemalloc.is_tracing()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ResourceWarning)
        # A connect timeout of 30 s, not 5: on a loaded 2-core machine, 1,000 tasks opening
        # the pool's 50 connections at once saw connects time out (and a connect that takes
        # longer than RetryPolicy.max_unreachable_secs is not retried).
        async with _fresh_store(
            endpoint_url, idle_secs=options.idle_secs, connect_timeout_secs=30.0
        ) as store:
            table = store.table.name
            # Warm up the paths (first block, the give-back at a drop), then the baseline.
            await asyncio.gather(*(store.block_allocator(f"warm-{i}").next() for i in range(32)))
            await _wait_until_idle(store, 32, bound_secs)
            if tracing:
                tracemalloc.start()
            gc.collect()
            traced_start = tracemalloc.get_traced_memory()[0]
            tracemalloc.reset_peak()
            rss_start = _rss_bytes()
            _log(f"3. {n:,} keys once each, {options.key_tasks:,} tasks", quiet)

            next_index = 0
            peak_live = 0

            async def worker() -> None:
                nonlocal next_index
                while next_index < n:
                    i = next_index
                    next_index += 1
                    handed[i] = await store.block_allocator(f"tenant-{i}").next()

            async def watch() -> None:
                nonlocal peak_live
                while True:  # sampled: statistics() costs a few µs per live key
                    peak_live = max(peak_live, store.statistics().live_keys)
                    await asyncio.sleep(10.0)

            watcher = asyncio.ensure_future(watch())
            before = store.requests.copy()
            started = time.perf_counter()
            try:
                await asyncio.gather(*(worker() for _ in range(min(options.key_tasks, n))))
            finally:
                wall = time.perf_counter() - started
                watcher.cancel()
                await asyncio.gather(watcher, return_exceptions=True)
            requests = store.requests - before
            peak_live = max(peak_live, store.statistics().live_keys)
            _log(f"  {n / wall:,.0f} numbers/s; waiting for the idle drops", quiet)
            drain = await _wait_until_idle(store, 32 + n, bound_secs)
            drained = store.statistics()
            gc.collect()
            traced_after, traced_peak = tracemalloc.get_traced_memory()
            rss_after = _rss_bytes()
            if tracing:
                tracemalloc.stop()
            await store.aclose()
            stats = asdict(store.statistics())
            counters = await _counters(endpoint_url, table)
    expected = {f"tenant-{i}": handed[i] for i in range(n)}
    mismatched = sum(1 for key, value in expected.items() if counters.get(key) != value)
    surplus = sum(counters.get(key, 0) for key in expected) - sum(expected.values())
    return ManyKeys(
        keys=n,
        tasks=options.key_tasks,
        idle_secs=options.idle_secs,
        numbers=n,
        wall_secs=wall,
        requests=dict(requests),
        traced_start_bytes=traced_start,
        traced_peak_bytes=traced_peak,
        traced_after_bytes=traced_after,
        rss_start_bytes=rss_start,
        rss_after_bytes=rss_after,
        max_rss_bytes=_max_rss_bytes(),
        peak_live_keys=peak_live,
        drain_secs=drain,
        live_keys_after_drain=drained.live_keys,
        evictions_after_drain=drained.evictions,
        statistics_after_close=stats,
        counters_read=len(counters),
        counters_mismatched=mismatched,
        counter_surplus=surplus,
        resource_warnings=sum(issubclass(w.category, ResourceWarning) for w in caught),
        not_one=sum(1 for value in handed if value != 1),
        extra={"traced": tracing},
    )


# --- targets -------------------------------------------------------------------------------


def _ratio_target(section: int, what: str, rows: Sequence[ModeRow], unit: str) -> Target:
    shared, held = _pooled(rows, "per-request"), _pooled(rows, "held")
    ratio = shared / held if held else 0.0
    rounds = sorted({r.round for r in rows})
    per_round = [
        next(r.per_s for r in rows if r.round == k and r.mode == "per-request")
        / max(next(r.per_s for r in rows if r.round == k and r.mode == "held"), 1e-9)
        for k in rounds
    ]
    return Target(
        section,
        f"{what}: per request / held",
        round(ratio, 3),
        "x",
        ">= 0.9x",
        ratio >= 0.9,
        check=False,
        detail=f"{shared:,.0f} against {held:,.0f} {unit}/s; by round "
        + ", ".join(f"{x:.2f}x" for x in per_round),
    )


def _no_waste(section: int, rows: Sequence[ModeRow]) -> Target:
    bad = [r for r in rows if r.counter_after_close != r.numbers or r.duplicates or r.gaps]
    surplus = sum((r.counter_after_close or 0) - r.numbers for r in rows)
    return Target(
        section,
        "counters after close - numbers handed out (duplicates, gaps)",
        surplus,
        "numbers",
        "0",
        not bad,
        check=True,
        detail=f"{len(rows)} keys read back; {len(bad)} off"
        + (f": {', '.join(r.key for r in bad)}" if bad else ""),
    )


def targets(
    allocator: Sequence[ModeRow], puts: Sequence[ModeRow], keys: ManyKeys | None
) -> list[Target]:
    """Every figure the issue sets a target for, judged (for the sections that ran)."""
    found: list[Target] = []
    if allocator:
        found += _allocator_targets(allocator)
    if puts:
        found += _put_targets(puts)
    if keys is not None:
        found += _many_keys_targets(keys)
    return found


def _allocator_targets(allocator: Sequence[ModeRow]) -> list[Target]:
    found = [_ratio_target(1, "allocator next()", allocator, "numbers")]
    limit = 1_000 / BLOCK_SIZE + 1
    worst = 0.0
    for row in allocator:
        worst = max(worst, 1_000 * row.requests.get("UpdateItem", 0) / max(row.numbers, 1))
    shared = [r for r in allocator if r.mode == "per-request"]
    shared_rate = (
        1_000
        * sum(r.requests.get("UpdateItem", 0) for r in shared)
        / max(sum(r.numbers for r in shared), 1)
    )
    found.append(
        Target(
            1,
            "UpdateItem per 1,000 numbers (the worst row)",
            round(worst, 3),
            "requests",
            f"<= {limit:g} (1,000 / block_size {BLOCK_SIZE} + 1)",
            worst <= limit,
            check=True,
            detail=f"per request: {shared_rate:.3f} over all its rows",
        )
    )
    found.append(_no_waste(1, allocator))
    return found


def _put_targets(puts: Sequence[ModeRow]) -> list[Target]:
    found = [_ratio_target(2, "transactional put()", puts, "puts")]
    total = max(sum(r.numbers for r in puts), 1)
    transactions = sum(r.requests.get("TransactWriteItems", 0) for r in puts)
    gapless_bad = [
        r
        for r in puts
        if r.duplicates or r.gaps or r.mismatched_items or r.counter_after_close != r.numbers
    ]
    found.append(
        Target(
            2,
            "gapless: duplicates + gaps + items ≠ numbers + counter ≠ puts",
            sum(
                r.duplicates
                + r.gaps
                + r.mismatched_items
                + abs((r.counter_after_close or 0) - r.numbers)
                for r in puts
            ),
            "",
            "0",
            not gapless_bad,
            check=True,
            detail=f"{len(puts)} keys, {total:,} puts; TransactWriteItems per put"
            f" {transactions / total:.3f}",
        )
    )
    return found


def _many_keys_targets(keys: ManyKeys) -> list[Target]:
    growth = keys.traced_after_bytes - keys.traced_start_bytes
    stats = keys.statistics_after_close
    return [
        Target(
            3,
            f"{keys.keys:,} keys once each: numbers/s",
            round(keys.per_s, 1),
            "numbers/s",
            "-",
            True,
            check=False,
            detail=f"{keys.tasks:,} tasks, idle_secs {keys.idle_secs:g}; "
            + ", ".join(f"{op} {count:,}" for op, count in sorted(keys.requests.items()))
            + f"; at most {keys.peak_live_keys:,} keys live",
        ),
        Target(
            3,
            "Python memory at the peak, over the start (tracemalloc)",
            round((keys.traced_peak_bytes - keys.traced_start_bytes) / MB, 2),
            "MB",
            "-",
            True,
            check=False,
            detail=f"RSS {keys.rss_start_bytes / MB:,.0f} MB at the start, peak"
            f" {keys.max_rss_bytes / MB:,.0f} MB (the process's)",
        ),
        Target(
            3,
            "Python memory after the idle drops, over the start",
            round(growth / MB, 3),
            "MB",
            "<= 5 MB",
            bool(keys.extra.get("traced"))  # untraced, the growth reads 0: not a measurement
            and growth <= 5 * MB
            and keys.live_keys_after_drain == 0
            and keys.evictions_after_drain >= keys.keys,
            check=False,
            detail=f"every key dropped {keys.drain_secs:.1f} s after the last call"
            f" ({keys.live_keys_after_drain} live, {keys.evictions_after_drain:,} drops then); RSS"
            f" {keys.rss_after_bytes / MB:,.0f} MB",
        ),
        Target(
            3,
            "numbers wasted after close (store statistics)",
            stats["wasted"],
            "numbers",
            "0",
            stats["wasted"] == 0 and keys.resource_warnings == 0,
            check=True,
            detail=f"reserved {stats['reserved']:,}, handed out {stats['handed_out']:,},"
            f" returned {stats['returned']:,}; {stats['evictions']:,} drops;"
            f" {keys.resource_warnings} ResourceWarnings",
        ),
        Target(
            3,
            "counters ≠ numbers handed out (Scan)",
            keys.counters_mismatched,
            "keys",
            "0",
            keys.counters_mismatched == 0 and keys.not_one == 0,
            check=True,
            detail=f"{keys.counters_read:,} counters read; surplus {keys.counter_surplus:,}"
            f" numbers; {keys.not_one} first numbers other than 1",
        ),
    ]


# --- the run and its report ----------------------------------------------------------------


async def run(
    options: Options, endpoint_url: str, *, quiet: bool = True, sections: Sequence[int] = (1, 2, 3)
) -> dict[str, Any]:
    """The sections, their rows and the targets (as plain data, for JSON)."""
    allocator: list[ModeRow] = []
    puts: list[ModeRow] = []
    keys: ManyKeys | None = None
    if 1 in sections or 2 in sections:
        allocator, puts = await per_request_sections(options, endpoint_url, quiet)
    if 3 in sections:
        keys = await many_keys_section(options, endpoint_url, quiet)
    judged = targets(allocator, puts, keys)
    return {
        "allocator_rows": [asdict(r) | {"per_s": round(r.per_s, 1)} for r in allocator],
        "put_rows": [asdict(r) | {"per_s": round(r.per_s, 1)} for r in puts],
        "many_keys": None if keys is None else asdict(keys) | {"per_s": round(keys.per_s, 1)},
        "targets": [asdict(t) for t in judged],
        "ok": all(t.met for t in judged if t.check),
    }


def _figure(target: dict[str, Any]) -> str:
    value = target["figure"]
    unit = target["unit"]
    if unit == "x":
        return f"{value:.2f}x"
    text = f"{value:,.3f}".rstrip("0").rstrip(".") if isinstance(value, float) else f"{value:,}"
    return f"{text} {unit}".strip()


def target_table(report: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    headers = ["#", "measured", "figure", "target", "met", "detail"]
    cells = [
        [
            str(t["section"]),
            t["name"],
            _figure(t),
            t["goal"],
            "-" if t["goal"] == "-" else ("met" if t["met"] else "UNMET"),
            t["detail"],
        ]
        for t in report["targets"]
    ]
    return headers, cells


def row_table(report: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    headers = ["section", "round", "mode", "tasks", "numbers", "per s", "requests", "counter"]
    cells = []
    for section, rows, tasks in (
        ("1 allocator", report["allocator_rows"], report["parameters"]["allocator_tasks"]),
        ("2 transactional", report["put_rows"], report["parameters"]["put_tasks"]),
    ):
        for r in rows:
            cells.append(
                [
                    section,
                    str(r["round"]),
                    r["mode"],
                    f"{tasks:,}",
                    f"{r['numbers']:,}",
                    f"{r['per_s']:,.0f}",
                    ", ".join(f"{op} {n:,}" for op, n in sorted(r["requests"].items())),
                    f"{r['counter_after_close']}",
                ]
            )
    return headers, cells


def _tabulate(table: tuple[list[str], list[list[str]]], style: str) -> str:
    headers, cells = table
    return tabulate(cells, headers, tablefmt=style, disable_numparse=True)


def markdown(report: dict[str, Any]) -> str:
    machine = report["machine"]
    return (
        "\n".join(
            [
                "# Many keys and per-request code",
                "",
                f"Measured {report['date']} on {machine['cpu']} ({machine['cores']} cores, load"
                f" average {', '.join(map(str, machine['load_average']))} at the start,"
                f" {', '.join(map(str, report['load_average_at_end']))} at the end),"
                f" {machine['python']}, aioseq {report['versions']['aioseq']}, against"
                f" {report['server']}; {report['wall_secs']:.0f} s in all. Command:",
                "",
                f"    {report['command']}",
                "",
                _tabulate(target_table(report), "github"),
                "",
                "## Rows of sections 1 and 2",
                "",
                _tabulate(row_table(report), "github"),
                "",
                "Rates are all numbers over all time per mode; `counter`: the key's counter read"
                " back after the store's close (it must equal the numbers handed out).",
            ]
        )
        + "\n"
    )


# --- command line --------------------------------------------------------------------------


#: The settings the command line takes (``--row-secs`` for ``row_secs``).
OPTIONS = ("keys", "rounds", "row_secs")


def parser() -> argparse.ArgumentParser:
    parser = _report.parser("python -m benchmarks.many_keys", __doc__)
    notes = {
        "keys": "section 3's keys, on DynamoDB Local or a given endpoint; 5,000 on moto",
        "rounds": "rows per mode in sections 1 and 2",
        "row_secs": "a row of sections 1-2 starts no call after",
    }
    _report.add_settings(parser, Options(), OPTIONS, quick=True, notes=notes)
    parser.add_argument(
        "--sections", default="1,2,3", help="which sections to run, e.g. 3 (default: 1,2,3)"
    )
    parser.add_argument(
        "--no-tracemalloc",
        dest="trace_memory",
        action="store_false",
        default=None,
        help="section 3 measures the resident set only (tracemalloc slows allocations)",
    )
    parser.add_argument("--quiet", action="store_true", help="no progress on stderr")
    return parser


def options_from(args: argparse.Namespace) -> Options:
    options = _report.settings_from(args, Options(), OPTIONS, QUICK)
    if args.keys is None and not args.quick and args.server == "moto" and not args.endpoint_url:
        options = replace(options, keys=DEFAULT_KEYS["moto"])
    if args.trace_memory is not None:
        options = replace(options, trace_memory=args.trace_memory)
    return options


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    options = options_from(args)
    sections = tuple(int(part) for part in args.sections.split(",") if part.strip())
    started = time.perf_counter()
    command = "python -m benchmarks.many_keys " + " ".join(sys.argv[1:] if argv is None else argv)
    with server(args.server, args.endpoint_url) as (endpoint, description):
        report: dict[str, Any] = {
            "benchmark": "many_keys",
            **header(endpoint),
            "server": description,
            "command": command.strip(),
            "parameters": asdict(options),
        }
        report |= asyncio.run(run(options, endpoint, quiet=args.quiet, sections=sections))
    report["load_average_at_end"] = [round(x, 2) for x in os.getloadavg()]
    report["wall_secs"] = round(time.perf_counter() - started, 1)

    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    (out / "many_keys.json").write_text(json.dumps(report, indent=2) + "\n")
    (out / "many_keys.md").write_text(markdown(report))
    print(_tabulate(target_table(report), "simple"))
    print(f"\n{report['wall_secs']:.0f} s; wrote {out}/many_keys.{{json,md}}")
    if not report["ok"]:
        failed = [t["name"] for t in report["targets"] if t["check"] and not t["met"]]
        print(f"FAILED: {'; '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
