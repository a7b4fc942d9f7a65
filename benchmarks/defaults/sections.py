"""The defaults benchmark's sections (see :mod:`benchmarks.defaults`), and :func:`run`, which
runs those asked for and judges them."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

from aioseq import DynamoStore, GroupCommit
from aioseq.testing.capacity import CapacityModel
from benchmarks.defaults.bench import Bench, CapacityProxy, Result, server_pid
from benchmarks.defaults.options import (
    ALLOCATOR,
    ATOMIC,
    CURRENT_DEFAULTS,
    GAPLESS,
    GAPLESS_BESIDE,
    GAPLESS_SHORT_BACKOFF,
    PEER,
    RAW,
    SHARDS,
    Options,
    defaults,
    library_defaults,
)
from benchmarks.defaults.profiling import measure_added_cost, profile_atomic
from benchmarks.defaults.recommendation import recommend
from benchmarks.variants import Variant, client_config

# --- the sections ----------------------------------------------------------------------------


async def section_peer(
    bench: Bench, gapless: Variant = GAPLESS, peer: Variant = PEER
) -> list[Result]:
    """Gapless with the defaults, the peer, gapless again (A B A: drift cancels), at
    ``tasks`` tasks."""
    o = bench.options
    return [
        await bench.measure("peer", variant, tasks=o.tasks, secs=o.peer_row_secs)
        for variant in (gapless, peer, gapless)
    ]


async def section_hot_key(
    bench: Bench,
    atomic: Variant = ATOMIC,
    allocator: Variant = ALLOCATOR,
    gapless: Variant = GAPLESS,
    beside: Variant = GAPLESS_BESIDE,
) -> list[Result]:
    """The atomic counter, the allocator and the transactional counter, all with their defaults, on
    one hot key through the capacity model; errors are counted, not fatal. Right after the
    atomic counter, a reference row: the same counter through the same round trip with AWS's
    1,000 WCU/s per partition, a budget it cannot reach, to show what the client could take
    unthrottled at that moment (on a shared machine, possibly less than the budget). Last, the
    transactional counter with its items beside the counter item, in its partition: the
    layout's ceiling."""
    o = bench.options
    runs = [
        (atomic, "hot", False),
        (atomic, "trip", True),
        (allocator, "hot", False),
        (gapless, "hot", False),
        (beside, "hot", False),
    ]
    return [
        await bench.measure(
            "hot-key",
            variant,
            tasks=o.tasks,
            secs=o.hot_row_secs,
            condition=condition,
            count_errors=True,
            reference=reference,
        )
        for variant, condition, reference in runs
    ]


async def section_processes(
    bench: Bench, gapless: Variant = GAPLESS, diagnostic: Variant | None = GAPLESS_SHORT_BACKOFF
) -> list[Result]:
    """One transactional counter with its defaults: ``tasks`` tasks in 1 process, then spread over
    ``processes`` processes, ``processes_rounds`` times; each round also runs ``diagnostic``
    in ``processes`` processes (marked so, and left out of the target's figure)."""
    o = bench.options
    results = []
    for round_ in range(o.processes_rounds):
        runs = [(gapless, 1), (gapless, o.processes)]
        if diagnostic is not None:
            runs.append((diagnostic, o.processes))
        for variant, processes in runs:
            results.append(
                await bench.measure(
                    "processes",
                    variant,
                    tasks=o.tasks,
                    processes=processes,
                    secs=o.processes_row_secs,
                    round=round_,
                    diagnostic=variant is diagnostic,
                )
            )
    return results


async def section_overhead(
    bench: Bench, atomic: Variant = ATOMIC, raw: Variant = RAW
) -> list[Result]:
    """aioseq's ``next()`` and the raw request, alternating (ABBA) at each concurrency."""
    o = bench.options
    results = []
    for tasks in o.overhead_tasks:
        for round_ in range(o.overhead_rounds):
            pair = (atomic, raw) if round_ % 2 == 0 else (raw, atomic)
            for variant in pair:
                results.append(
                    await bench.measure(
                        "overhead", variant, tasks=tasks, secs=o.overhead_row_secs, round=round_
                    )
                )
    return results


def sweep_plan(options: Options) -> list[tuple[str, str, int, int, float]]:
    """The sweep's rows: ``(condition, strategy, tasks, max_group_size, batch_window_secs)``.
    A group never holds more puts than there are tasks, so a size of at least the task count
    behaves as the default size: only the sizes below the task count, and the default, run
    (at 1 task, the default alone)."""
    plan: list[tuple[str, str, int, int, float]] = []
    most_tasks = max(options.sweep_tasks)
    largest = max(options.sweep_sizes)
    for condition in ("direct", "trip", "hot"):
        cells = [("transactional", t) for t in options.sweep_tasks]
        if condition == "hot":
            cells = [("transactional", most_tasks)]
        cells += [("sort-key", t) for t in options.sweep_sort_key_tasks]
        for strategy, tasks in cells:
            default_size = CURRENT_DEFAULTS[strategy][0]
            sizes = [s for s in options.sweep_sizes if s < tasks and s != largest] + [largest]
            if condition == "hot":  # where the partition is the limit: one put per write too
                sizes = [1, *sizes]
            for size in sizes:
                for window in options.sweep_windows:
                    real_size = default_size if size == max(options.sweep_sizes) else size
                    plan.append((condition, strategy, tasks, real_size, window))
    return plan


async def section_sweep(bench: Bench) -> list[Result]:
    """Every row of :func:`sweep_plan`, ``sweep_rounds`` times, every other round in reverse
    order (drift cancels)."""
    o = bench.options
    results = []
    plan = sweep_plan(o)
    rounds = [(r, plan if r % 2 == 0 else plan[::-1]) for r in range(o.sweep_rounds)]
    for round_, (condition, strategy, tasks, size, window) in (
        (r, row) for r, rows in rounds for row in rows
    ):
        variant = defaults(
            strategy,
            f"{strategy} size={size} window={window * 1000:g}ms",
            shards=SHARDS if strategy == "transactional" else None,
            group=GroupCommit(max_size=size, window_secs=window),
        )
        results.append(
            await bench.measure(
                "sweep",
                variant,
                tasks=tasks,
                secs=o.sweep_row_secs,
                condition=condition,
                count_errors=condition == "hot",
                strategy=strategy,
                max_group_size=size,
                batch_window_secs=window,
                round=round_,
            )
        )
    return results


def rows_planned(options: Options) -> int:
    """How many rows the sections of ``options`` run (for the progress bar)."""
    per_section = {
        "peer": 3,
        "hot-key": 5,
        "processes": 3 * options.processes_rounds,
        "overhead": 2 * options.overhead_rounds * len(options.overhead_tasks),
        "sweep": len(sweep_plan(options)) * options.sweep_rounds,
    }
    return sum(per_section[s] for s in options.sections)


# --- the run ---------------------------------------------------------------------------------


async def _warm_up(bench: Bench) -> None:
    """Untimed traffic first: DynamoDB Local's JIT, and each proxy's first connections."""
    o = bench.options
    if o.warmup_secs <= 0:
        return
    for variant, tasks, share in ((GAPLESS, 128, 0.5), (GAPLESS, 16, 0.25), (ATOMIC, 16, 0.25)):
        await bench.measure(
            "warm-up", variant, tasks=tasks, secs=o.warmup_secs * share, record=False
        )
    for condition in bench.proxies:
        await bench.measure(
            "warm-up", GAPLESS, tasks=16, secs=0.5, condition=condition, record=False
        )


async def run(
    options: Options,
    endpoint: str,
    *,
    on_row: Callable[[Result], None] | None = None,
) -> dict[str, Any]:
    """Run the sections of ``options`` against ``endpoint``; the report's body."""
    hot_model = CapacityModel(
        partition_wcu_per_sec=options.hot_partition_wcu_per_sec,
        round_trip_secs=options.round_trip_secs,
    )
    trip_model = CapacityModel(round_trip_secs=options.round_trip_secs)
    wanted = (
        {"hot": hot_model, "trip": trip_model}
        if {"hot-key", "sweep"} & set(options.sections)
        else {}
    )
    body: dict[str, Any] = {"library_defaults": library_defaults()}
    with contextlib.ExitStack() as stack:
        proxies = {name: CapacityProxy(endpoint, model) for name, model in wanted.items()}
        for proxy in proxies.values():  # started together, waited for in turn
            stack.callback(proxy.close)
            proxy.endpoint_url  # noqa: B018
        body["conditions"] = {
            "direct": "straight to the server",
            **{name: proxy.describe() for name, proxy in proxies.items()},
        }
        body["capacity_models"] = {name: model.describe() for name, model in wanted.items()}
        async with DynamoStore.open(endpoint_url=endpoint) as inspector:
            bench = Bench(
                options,
                endpoint,
                inspector,
                server_pid(endpoint),
                proxies,
                on_row=on_row or (lambda result: None),
            )
            body["client_config"] = client_config(inspector)
            try:
                await _warm_up(bench)
                if "peer" in options.sections:
                    await section_peer(bench)
                if "hot-key" in options.sections:
                    await section_hot_key(bench)
                if "processes" in options.sections:
                    await section_processes(bench)
                if "overhead" in options.sections:
                    await section_overhead(bench)
                    body["profile"] = await profile_atomic(bench)
                    body["added_cost"] = await measure_added_cost(endpoint, options.stub_calls)
                if "sweep" in options.sections:
                    await section_sweep(bench)
            finally:
                for pool in bench.pools.values():
                    pool.shutdown()
    body["results"] = bench.results
    body["recommendation"] = recommend(bench.results, options)
    body["ok"] = all(r.row.ok for r in bench.results)
    return body
