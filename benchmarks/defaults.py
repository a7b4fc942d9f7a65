"""The benchmarks of "Exactly once ... and group commit by default": what the defaults give,
measured side by side in one run.

    python -m benchmarks.defaults --quick                  # seconds, embedded moto server
    scripts/in-loopback-netns .venv/bin/python -m benchmarks.defaults \\
        --server dynamodb-local --out docs/performance      # the report (~7 minutes)

Sections, each with its target (a figure the issue asks for; a missed target is reported
with the measurements that explain it, it does not fail the run):

1. ``peer``: gapless puts/s at 128 tasks, ``store.transactional_counter(key)`` and nothing else,
   against the published peer ``dynamodb-autoincrement`` 0.2.0 (target >= 20x); gapless runs
   before and after the peer.
2. ``hot-key``: one hot key through the capacity model, a
   ``FaultProxy(endpoint, capacity=CapacityModel(item_wcu_per_sec=150,
   round_trip_secs=(0.002, 0.006)))`` in a child process: the atomic counter's goodput as a
   share of the item's write budget, and the errors that reached callers (target >= 70%,
   none); the allocator with its defaults (target >= 20x the atomic counter) and the gapless
   counter with its defaults (target >= 3x). Every item has its own budget, the gapless
   items included (they live in the counter's collection, but are items of their own).
3. ``processes``: one transactional counter with its defaults in 4 processes against 1 process, the
   same tasks in all (target >= 0.8x); each process times its share between a start barrier
   and its end, so interpreter start-up is not counted.
4. ``overhead``: the atomic counter's ``next()`` against a raw aiobotocore ``update_item``
   sending the same request on a client with the same settings, at 1, 16 and 128 tasks
   (target >= 0.9x), in alternating rounds; then what aioseq adds per call with the HTTP
   layer stubbed (no network, no noise), profiled, and one real row profiled.
5. ``sweep``: ``max_group_size`` x ``batch_window_secs`` for the transactional counter at 1, 16 and
   128 tasks and the sort-key counter at 128 tasks, straight to the server and through the
   capacity model's round trip (2-6 ms, AWS's 1,000 WCU/s per item), and for the gapless
   counter at 128 tasks on the hot key, in 3 interleaved rounds: puts/s and p99, each
   configuration compared with the library's defaults (:func:`recommend`).

Every row runs on a fresh table with :func:`benchmarks.row.run_row` (tasks started
together by :func:`aioseq._workload.take_numbers`) and is checked the same way: no duplicate,
no gap where the strategy promises none, every stored item handed out and every number handed
out stored. Rows compared in a ratio run in the same run, next to each other, in alternating
rounds (the figure is the median of the rounds' ratios). Each row also records the CPU used
by the client processes, the server and the proxy, and how busy the machine's cores were
(other work on a shared machine shows there, and in the load average at start and end).

Writes ``defaults.json`` and ``defaults.md`` into ``--out`` and exits 1 if a row broke a
guarantee.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import cProfile
import inspect
import json
import math
import multiprocessing
import os
import pstats
import statistics
import sys
import time
import uuid
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, field, replace
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from tabulate import tabulate
from tqdm import tqdm

from aioseq import DynamoStore, GroupCommit, RetryPolicy
from aioseq.strategies import sort_key, transactional
from aioseq.testing.capacity import CapacityModel
from benchmarks._report import header, machine
from benchmarks.row import Row, process_pool, run_row, run_share, server
from benchmarks.variants import (
    FactoryVariant,
    PeerVariant,
    Place,
    RawUpdateItemVariant,
    Variant,
    client_config,
)

__all__ = [
    "QUICK",
    "SECTIONS",
    "CapacityProxy",
    "Options",
    "Result",
    "Target",
    "main",
    "markdown",
    "recommend",
    "run",
    "targets",
]

RESULTS = Path(__file__).parent / "results"

#: The sections, in the order they run.
SECTIONS = ("peer", "hot-key", "processes", "overhead", "sweep")


# --- what is measured ------------------------------------------------------------------------


def defaults(strategy: str, label: str, **options: Any) -> FactoryVariant:
    """``store.<factory>(key, **options)`` for ``strategy`` (no options: the defaults)."""
    return FactoryVariant(
        label,
        strategy,
        gapless=strategy in ("optimistic", "sort-key", "transactional"),
        writes_items=strategy in ("sort-key", "transactional"),
        strategy=strategy,
        options=tuple(sorted(options.items())),
    )


GAPLESS = defaults("transactional", "transactional_counter(key)")
ATOMIC = defaults("atomic", "atomic_counter(key)")
ALLOCATOR = defaults("allocator", "block_allocator(key)")
#: Diagnostic only: the gapless defaults on a store whose retries back off at most 10 ms, to
#: tell whether the losers' growing backoff is what slows several processes down.
GAPLESS_SHORT_BACKOFF = replace(
    GAPLESS,
    label="transactional_counter(key), backoff <= 10 ms (diagnostic)",
    store_options=(("retry_policy", RetryPolicy(max_backoff_secs=0.01)),),
)
PEER = PeerVariant("dynamodb-autoincrement 0.2.0", "peer", gapless=True, writes_items=True)
RAW = RawUpdateItemVariant("raw aiobotocore update_item", "raw")

#: The largest group of each strategy with group commit (a transaction's 100 actions, less
#: the counter's for the transactional counter): the sweep's largest size stands for it.
CURRENT_DEFAULTS = {
    "transactional": (transactional.MAX_GROUP_SIZE, 0.0),
    "sort-key": (sort_key.MAX_GROUP_SIZE, 0.0),
}


def library_defaults() -> dict[str, dict[str, Any]]:
    """The group options the strategies take when given none, read from their signatures
    (``group=True`` is ``GroupCommit()``, whose ``max_size=None`` is the strategy's largest)."""
    found = {}
    for name, cls, largest in (
        ("transactional", transactional.TransactionalCounter, transactional.MAX_GROUP_SIZE),
        ("sort-key", sort_key.SortKeyCounter, sort_key.MAX_GROUP_SIZE),
    ):
        group = inspect.signature(cls.__init__).parameters["group"].default
        grouping = GroupCommit() if group is True else group
        found[name] = {
            "group": bool(group),
            "max_group_size": grouping.max_size or largest if grouping else None,
            "batch_window_secs": grouping.window_secs if grouping else None,
        }
    return found


@dataclass(frozen=True)
class Options:
    """What to run; times in seconds. ``count`` only caps a row (rows are timed)."""

    sections: tuple[str, ...] = SECTIONS
    tasks: int = 128
    count: int = 300_000
    warmup_secs: float = 4.0
    # 1. peer
    peer_row_secs: float = 3.0
    # 2. hot key
    hot_item_wcu_per_sec: float = 150.0
    round_trip_secs: tuple[float, float] = (0.002, 0.006)
    hot_row_secs: float = 5.0
    # 3. processes
    processes: int = 4
    processes_rounds: int = 3
    processes_row_secs: float = 3.0
    # 4. overhead
    overhead_tasks: tuple[int, ...] = (1, 16, 128)
    overhead_rounds: int = 6
    overhead_row_secs: float = 1.0
    profile_tasks: int = 16
    stub_calls: int = 5_000
    # 5. sweep
    sweep_sizes: tuple[int, ...] = (10, 25, 50, 99)
    sweep_windows: tuple[float, ...] = (0.0, 0.001, 0.005)
    sweep_tasks: tuple[int, ...] = (1, 16, 128)
    sweep_sort_key_tasks: tuple[int, ...] = (128,)
    sweep_rounds: int = 3
    sweep_row_secs: float = 1.0


QUICK = Options(
    tasks=4,
    count=2_000,
    warmup_secs=0.0,
    peer_row_secs=0.2,
    hot_row_secs=0.3,
    processes=2,
    processes_rounds=1,
    processes_row_secs=0.2,
    overhead_tasks=(1, 4),
    overhead_rounds=2,
    overhead_row_secs=0.2,
    profile_tasks=4,
    stub_calls=200,
    sweep_sizes=(2, 99),
    sweep_windows=(0.0, 0.001),
    sweep_tasks=(1, 4),
    sweep_sort_key_tasks=(4,),
    sweep_rounds=1,
    sweep_row_secs=0.15,
)


# --- CPU, as /proc counts it -----------------------------------------------------------------

_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def process_cpu_secs(pid: int | None) -> float | None:
    """User + system CPU seconds of process ``pid`` so far (``None``: unknown)."""
    if pid is None:
        return None
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / _TICKS


def machine_ticks() -> tuple[int, int] | None:
    """``(busy, total)`` CPU ticks of the whole machine so far (every process, ours or not)."""
    try:
        first = Path("/proc/stat").read_text().splitlines()[0].split()
    except (OSError, IndexError):
        return None
    ticks = [int(x) for x in first[1:]]
    idle = ticks[3] + (ticks[4] if len(ticks) > 4 else 0)  # idle + iowait
    return sum(ticks) - idle, sum(ticks)


def server_pid(endpoint: str) -> int | None:
    """The process of the DynamoDB Local serving ``endpoint`` (its ``-port``), if any."""
    port = str(urlparse(endpoint).port)
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            args = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        words = [a.decode(errors="replace") for a in args]
        if any(w.endswith("DynamoDBLocal.jar") for w in words) and any(
            w == "-port" and i + 1 < len(words) and words[i + 1] == port
            for i, w in enumerate(words)
        ):
            return int(proc.name)
    return None


# --- the capacity model, in a process of its own ---------------------------------------------


def _serve_proxy(target: str, model: CapacityModel, conn: Connection) -> None:
    from aioseq.testing.fault_proxy import FaultProxy

    with FaultProxy(target, capacity=model) as proxy:
        conn.send(proxy.endpoint_url)
        while conn.recv() != "stop":
            conn.send((sum(proxy.throttled.values()), proxy.consumed_wcu, proxy.requests))


@dataclass(frozen=True)
class ProxyCounts:
    """What a :class:`CapacityProxy` counted so far."""

    throttled: int
    consumed_wcu: float
    requests: int


class CapacityProxy:
    """``FaultProxy(target, capacity=model)`` (no faults) in a spawned child process, so that
    its work is not done under the client's GIL: a network's latency costs the client no
    CPU. ``endpoint_url`` is where to send requests; :meth:`counts` reads its counters."""

    def __init__(self, target: str, model: CapacityModel) -> None:
        self.target = target
        self.model = model
        context = multiprocessing.get_context("spawn")
        self._conn, child = context.Pipe()
        self._process = context.Process(
            target=_serve_proxy, args=(target, model, child), daemon=True
        )
        self._process.start()
        self._endpoint_url: str | None = None

    @property
    def endpoint_url(self) -> str:
        """Where to send requests (waits for the child to listen, at most 60 s)."""
        if self._endpoint_url is None:
            if not self._conn.poll(60):
                self.close()
                raise RuntimeError("the capacity proxy did not start within 60 s")
            self._endpoint_url = str(self._conn.recv())
        return self._endpoint_url

    @property
    def pid(self) -> int | None:
        return self._process.pid

    def counts(self) -> ProxyCounts:
        self._conn.send("counts")
        throttled, wcu, requests = self._conn.recv()
        return ProxyCounts(int(throttled), float(wcu), int(requests))

    def close(self) -> None:
        """Stop the child (idempotent)."""
        if self._process.is_alive():
            with contextlib.suppress(OSError):
                self._conn.send("stop")
            self._process.join(10)
            if self._process.is_alive():
                self._process.kill()
                self._process.join()

    def describe(self) -> str:
        lo, hi = self.model.round_trip_secs
        return (
            f"capacity model: {self.model.item_wcu_per_sec:,.0f} WCU/s per item"
            f" ({self.model.burst_secs:g} s burst), {lo * 1000:g}-{hi * 1000:g} ms round trip"
        )


# --- a measured row --------------------------------------------------------------------------


@dataclass
class Result:
    """One row (:class:`benchmarks.row.Row`) and where and how it ran.

    Attributes:
        section: one of :data:`SECTIONS` (or ``"profile"``).
        setting: what distinguishes the row in its section (condition, options, round...).
        row: the figures of :func:`benchmarks.row.run_row`.
        elapsed_secs: the row's whole time (table set-up and read-back included).
        server_cpu_secs, proxy_cpu_secs: CPU used meanwhile by the server and the proxy
            (``None``: not known, or no proxy).
        machine_busy: the share of all cores busy meanwhile, whoever used them.
        throttled: requests the capacity model throttled meanwhile (``None``: no proxy).
        consumed_wcu: WCU the capacity model charged meanwhile (``None``: no proxy).
    """

    section: str
    setting: dict[str, Any]
    row: Row
    elapsed_secs: float
    server_cpu_secs: float | None = None
    proxy_cpu_secs: float | None = None
    machine_busy: float | None = None
    throttled: int | None = None
    consumed_wcu: float | None = None

    @property
    def rate(self) -> float:
        return self.row.numbers_per_s

    def cores(self) -> dict[str, float | None]:
        """CPU as cores in use: the client (while timed), the server and the proxy (over the
        row's whole time), and the whole machine."""
        cores = os.cpu_count() or 1

        def per(secs: float | None, over: float) -> float | None:
            return round(secs / over, 2) if secs is not None and over > 0 else None

        return {
            "client": per(self.row.client_cpu_secs, self.row.wall_secs),
            "server": per(self.server_cpu_secs, self.elapsed_secs),
            "proxy": per(self.proxy_cpu_secs, self.elapsed_secs),
            "machine": round(self.machine_busy * cores, 2)
            if self.machine_busy is not None
            else None,
        }


@dataclass
class Bench:
    """The run's shared state: the server, its inspector store, the proxies, the pool."""

    options: Options
    endpoint: str
    inspector: DynamoStore
    server_pid: int | None
    proxies: dict[str, CapacityProxy]
    on_row: Callable[[Result], None] = lambda result: None
    pools: dict[int, ProcessPoolExecutor] = field(default_factory=dict)
    results: list[Result] = field(default_factory=list)

    def endpoint_for(self, condition: str) -> str:
        return self.endpoint if condition == "direct" else self.proxies[condition].endpoint_url

    def pool(self, processes: int) -> ProcessPoolExecutor:
        if processes not in self.pools:
            self.pools[processes] = process_pool(processes)
        return self.pools[processes]

    async def measure(
        self,
        section: str,
        variant: Variant,
        *,
        tasks: int,
        secs: float,
        condition: str = "direct",
        processes: int = 1,
        count_errors: bool = False,
        record: bool = True,
        **setting: Any,
    ) -> Result:
        """Run one row of ``variant`` and measure the CPU around it."""
        proxy = self.proxies.get(condition)
        before = (
            process_cpu_secs(self.server_pid),
            process_cpu_secs(proxy.pid) if proxy else None,
            machine_ticks(),
            proxy.counts() if proxy else None,
        )
        started = time.perf_counter()
        row = await run_row(
            variant,
            self.endpoint_for(condition),
            self.inspector,
            concurrency=tasks,
            processes=processes,
            count=self.options.count,
            time_budget_secs=secs,
            pool=self.pool(processes) if processes > 1 else None,
            count_errors=count_errors,
        )
        elapsed = time.perf_counter() - started
        after = (
            process_cpu_secs(self.server_pid),
            process_cpu_secs(proxy.pid) if proxy else None,
            machine_ticks(),
            proxy.counts() if proxy else None,
        )

        def delta(i: int) -> float | None:
            a, b = before[i], after[i]
            return round(b - a, 3) if isinstance(a, float) and isinstance(b, float) else None

        ticks_before, ticks_after = before[2], after[2]
        busy = None
        if ticks_before and ticks_after and ticks_after[1] > ticks_before[1]:
            busy = round((ticks_after[0] - ticks_before[0]) / (ticks_after[1] - ticks_before[1]), 3)
        counts_before, counts_after = before[3], after[3]
        result = Result(
            section,
            {"condition": condition, "tasks": tasks, "processes": processes, **setting},
            row,
            round(elapsed, 3),
            server_cpu_secs=delta(0),
            proxy_cpu_secs=delta(1),
            machine_busy=busy,
            throttled=counts_after.throttled - counts_before.throttled
            if counts_before and counts_after
            else None,
            consumed_wcu=round(counts_after.consumed_wcu - counts_before.consumed_wcu, 1)
            if counts_before and counts_after
            else None,
        )
        if record:
            self.results.append(result)
            self.on_row(result)
        return result


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
) -> list[Result]:
    """The atomic counter, the allocator and the transactional counter, all with their defaults, on
    one hot key through the capacity model; errors are counted, not fatal. Right after the
    atomic counter, a reference row: the same counter through the same round trip with AWS's
    1,000 WCU/s per item, a budget it cannot reach, to show what the client could take
    unthrottled at that moment (on a shared machine, possibly less than the budget)."""
    o = bench.options
    runs = [
        (atomic, "hot", False),
        (atomic, "trip", True),
        (allocator, "hot", False),
        (gapless, "hot", False),
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
        else:
            cells += [("sort-key", t) for t in options.sweep_sort_key_tasks]
        for strategy, tasks in cells:
            default_size = CURRENT_DEFAULTS[strategy][0]
            sizes = [s for s in options.sweep_sizes if s < tasks and s != largest] + [largest]
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
        "hot-key": 4,
        "processes": 3 * options.processes_rounds,
        "overhead": 2 * options.overhead_rounds * len(options.overhead_tasks),
        "sweep": len(sweep_plan(options)) * options.sweep_rounds,
    }
    return sum(per_section[s] for s in options.sections)


# --- where aioseq's time goes ----------------------------------------------------------------


def _where(path: str) -> str | None:
    """``aioseq/...`` or ``tenacity/...`` for a file of those packages, else ``None``."""
    parts = Path(path).parts
    for package in ("aioseq", "tenacity"):
        if package in parts:
            return "/".join(parts[len(parts) - parts[::-1].index(package) - 1 :])
    return None


def profile_summary(stats: pstats.Stats, numbers: int, top: int = 12) -> dict[str, Any]:
    """What a profile of ``numbers`` atomic ``next()`` calls says, in µs per number: the time
    inside ``next()`` (while running, children included), inside aiobotocore's
    ``_make_api_call`` (what the raw request costs too), and aioseq's and tenacity's own
    functions by their own time."""
    table: dict[tuple[str, int, str], tuple[int, int, float, float, Any]] = stats.stats  # type: ignore[attr-defined]
    per = 1e6 / max(numbers, 1)

    def cumulative(file_part: str, name: str) -> float:
        return sum(
            ct
            for (path, _, fn), (_, _, _, ct, _) in table.items()
            if fn == name and file_part in path
        )

    own: list[dict[str, Any]] = []
    for (path, line, fn), (_, calls, tt, ct, _) in table.items():
        where = _where(path)
        if where is not None:
            own.append(
                {
                    "function": f"{where}:{line}({fn})",
                    "own_us": round(tt * per, 2),
                    "cumulative_us": round(ct * per, 2),
                    "calls_per_number": round(calls / max(numbers, 1), 2),
                }
            )
    own.sort(key=lambda f: -f["own_us"])
    by_package: dict[str, float] = {}
    for entry in own:
        package = entry["function"].split("/", 1)[0]
        by_package[package] = by_package.get(package, 0.0) + entry["own_us"]
    next_us = cumulative("aioseq/strategies/counter.py", "next") * per
    api_us = cumulative("aiobotocore/client.py", "_make_api_call") * per
    return {
        "numbers": numbers,
        "next_us": round(next_us, 1),
        "make_api_call_us": round(api_us, 1),
        "added_us": round(next_us - api_us, 1),
        "own_us_by_package": {k: round(v, 1) for k, v in by_package.items()},
        "top": own[:top],
    }


async def measure_added_cost(
    endpoint: str, calls: int, rounds: int = 5, profile_calls: int | None = None
) -> dict[str, Any]:
    """What aioseq's ``next()`` costs beyond the raw request, without the network.

    The client's ``_make_api_call`` (where aiobotocore validates, serializes, signs, sends and
    parses) is replaced by a stub that returns the parsed answer at once, so what is timed is
    what lies above it: aioseq's atomic ``next()`` against ``await client.update_item(**params)``
    with the same ``params`` and the same number parsing. Best of ``rounds`` interleaved rounds
    of ``calls`` calls each, one task; then ``profile_calls`` more ``next()`` calls under
    cProfile, whose top functions say where the difference goes. aioseq's request-counting
    hook runs inside ``_make_api_call``, so it is not in this figure (see the real-run
    profile).
    """
    async with DynamoStore.open(table="aioseq-bench-stub", endpoint_url=endpoint) as store:
        client = store.client
        attribute = store.table.value_attribute
        value = 0
        params: dict[str, Any] = {}

        async def answer(operation_name: str, api_params: dict[str, Any]) -> dict[str, Any]:
            nonlocal value
            value += 1
            return {"Attributes": {attribute: {"N": str(value)}}}

        async def capture(operation_name: str, api_params: dict[str, Any]) -> dict[str, Any]:
            params.update(api_params)
            return await answer(operation_name, api_params)

        counter = store.atomic_counter("stub")
        setattr(client, "_make_api_call", capture)  # noqa: B010
        await counter.next()
        setattr(client, "_make_api_call", answer)  # noqa: B010

        async def with_aioseq() -> None:
            for _ in range(calls):
                await counter.next()

        async def raw() -> None:
            for _ in range(calls):
                response = await client.update_item(**params)
                int(response["Attributes"][attribute]["N"])

        best = {"aioseq": math.inf, "raw": math.inf}
        for _ in range(rounds):
            for name, loop in (("aioseq", with_aioseq), ("raw", raw)):
                started = time.perf_counter()
                await loop()
                best[name] = min(best[name], (time.perf_counter() - started) / calls)
        profiler = cProfile.Profile()
        profiled = profile_calls or calls
        profiler.enable()
        for _ in range(profiled):
            await counter.next()
        profiler.disable()
        delattr(client, "_make_api_call")
    return {
        "calls": calls,
        "aioseq_next_us": round(best["aioseq"] * 1e6, 1),
        "raw_update_item_us": round(best["raw"] * 1e6, 1),
        "added_us": round((best["aioseq"] - best["raw"]) * 1e6, 1),
        "profile": profile_summary(pstats.Stats(profiler), profiled),
    }


async def profile_atomic(bench: Bench, atomic: Variant = ATOMIC) -> dict[str, Any]:
    """One row of ``atomic`` at ``profile_tasks`` tasks under cProfile, summarized."""
    o = bench.options
    profiler = cProfile.Profile()
    table = f"aioseq-bench-profile-{uuid.uuid4().hex[:12]}"
    place = Place(bench.endpoint, table, "profiled")
    async with DynamoStore(bench.inspector.client, table) as store:
        await store.create_table()
        try:
            profiler.enable()
            try:
                share = await run_share(
                    atomic,
                    place,
                    count=o.count,
                    concurrency=o.profile_tasks,
                    time_budget_secs=o.overhead_row_secs,
                )
            finally:
                profiler.disable()
        finally:
            await store.delete_table()
    summary = profile_summary(pstats.Stats(profiler), len(share.numbers))
    summary["tasks"] = o.profile_tasks
    summary["profiled_numbers_per_s"] = round(len(share.numbers) / share.wall_secs, 1)
    return summary


# --- targets ---------------------------------------------------------------------------------


@dataclass
class Target:
    """A figure the issue asks for, and whether this run met it.

    Attributes:
        name: what is measured.
        figure: the measured value (a ratio, or a share for the hot key's goodput).
        goal: the target (the figure must be at least this).
        met: the figure reached the goal (and, where stated, nothing else failed).
        detail: the figures behind it.
        why: when not met, the measurements that explain it.
    """

    name: str
    figure: float
    goal: float
    unit: str
    met: bool
    detail: str
    why: str = ""


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def _pooled_rate(results: Sequence[Result]) -> float:
    """Numbers per second over several rows: all their numbers over all their time."""
    wall = sum(r.row.wall_secs for r in results)
    return sum(r.row.numbers for r in results) / wall if wall else 0.0


def _cores_text(results: Sequence[Result]) -> str:
    """Mean cores in use by client, server and proxy, and the whole machine."""
    keys = ("client", "server", "proxy", "machine")
    parts = []
    for key in keys:
        values = [v for c in (r.cores() for r in results) if (v := c[key]) is not None]
        if values:
            parts.append(f"{key} {_mean(values):.2f}")
    return f"cores busy: {', '.join(parts)} (of {os.cpu_count()})" if parts else ""


def _cpu_us_per_number(results: Sequence[Result]) -> float:
    """The client's CPU per number over several rows, in µs."""
    numbers = sum(r.row.numbers for r in results)
    return 1e6 * sum(r.row.client_cpu_secs for r in results) / max(numbers, 1)


def _gc_text(results: Sequence[Result]) -> str:
    """The garbage collector's share of the client's CPU over several rows."""
    numbers = max(sum(r.row.numbers for r in results), 1)
    gc_us = 1e6 * sum(r.row.client_gc_secs for r in results) / numbers
    collections = [sum(r.row.gc_collections[g] for r in results) for g in range(3)]
    return (
        f"GC {gc_us:,.0f} µs per number ({1000 * collections[0] / numbers:,.0f} young"
        f" collections per 1,000 numbers, {collections[2]} full)"
    )


def _puts_per_transaction(row: Row) -> float:
    transactions = row.requests.get("TransactWriteItems", 0)
    return row.numbers / transactions if transactions else 0.0


def _pair_ratios(
    results: Sequence[Result], first: Callable[[Result], bool]
) -> list[tuple[float, Result, Result]]:
    """Per round: ``(rate of the row ``first`` picks / rate of the other row, that row, the
    other)``, for rounds holding one of each."""
    rounds: dict[Any, list[Result]] = {}
    for r in results:
        rounds.setdefault(r.setting.get("round"), []).append(r)
    pairs = []
    for rows in rounds.values():
        a = [r for r in rows if first(r)]
        b = [r for r in rows if not first(r)]
        if len(a) == 1 and len(b) == 1:
            ratio = a[0].rate / b[0].rate if b[0].rate else math.inf
            pairs.append((ratio, a[0], b[0]))
    return pairs


def _ratio_text(pairs: Sequence[tuple[float, Result, Result]]) -> str:
    ratios = sorted(p[0] for p in pairs)
    if len(ratios) == 1:
        return "one round"
    return f"median of {len(ratios)} alternating rounds; {ratios[0]:.2f}-{ratios[-1]:.2f}"


def _per_process_text(result: Result) -> str:
    shares = result.row.per_process
    if len(shares) < 2:
        return ""
    numbers = "/".join(f"{int(s['numbers']):,}" for s in shares)
    walls = "/".join(f"{s['wall_secs']:.1f}" for s in shares)
    return f"puts per process {numbers} in {walls} s"


def targets(
    results: Sequence[Result], options: Options, added_cost: dict[str, Any] | None = None
) -> list[Target]:
    """Each section's target, judged from its rows (sections not run are left out). Where a
    section alternates rounds, the figure is the median of the rounds' ratios (each round's
    rows ran next to each other), with the range. ``added_cost``: what
    :func:`measure_added_cost` found, to explain the overhead's figure."""
    found: list[Target] = []
    by: dict[str, list[Result]] = {}
    for r in results:
        by.setdefault(r.section, []).append(r)

    if peer_rows := by.get("peer"):
        ours = [r for r in peer_rows if r.row.name == "transactional"]
        peer = [r for r in peer_rows if r.row.name != "transactional"]
        ours_rate, peer_rate = _pooled_rate(ours), _pooled_rate(peer)
        ratio = ours_rate / peer_rate if peer_rate else math.inf
        found.append(
            Target(
                f"gapless puts/s at {options.tasks} tasks, defaults vs dynamodb-autoincrement",
                round(ratio, 1),
                20,
                "×",
                ratio >= 20,
                f"{ours_rate:,.0f} vs {peer_rate:,.0f} puts/s (gapless before and after the"
                f" peer: {' and '.join(f'{r.rate:,.0f}' for r in ours)}); p99"
                f" {_mean([r.row.p99_ms for r in ours]):,.0f} vs"
                f" {_mean([r.row.p99_ms for r in peer]):,.0f} ms;"
                f" {_mean([r.row.requests_per_number for r in ours]):.3f} vs"
                f" {_mean([r.row.requests_per_number for r in peer]):.2f} requests per put",
                ""
                if ratio >= 20
                else f"the peer lost {_mean([r.row.conflicts_per_number for r in peer]):.2f}"
                " races per put; " + _cores_text(peer_rows),
            )
        )

    if everything := by.get("hot-key"):
        hot = [r for r in everything if not r.setting.get("reference")]
        unbound = next((r for r in everything if r.setting.get("reference")), None)
        atomic, allocator, gapless = hot[0], hot[1], hot[2]
        budget = options.hot_item_wcu_per_sec
        share = atomic.rate / budget
        reference = (
            f"; unbound (1,000 WCU/s, the same round trip) just after, it took"
            f" {unbound.rate:,.0f} numbers/s"
            if unbound
            else ""
        )
        errors = sum(sum(r.row.errors.values()) for r in hot)
        met = share >= 0.7 and errors == 0
        throttled = atomic.throttled or 0
        found.append(
            Target(
                f"hot key ({budget:g} WCU/s per item): atomic counter's goodput / budget,"
                " no error to callers",
                round(share * 100, 1),
                70,
                "%",
                met,
                f"{atomic.rate:,.0f} numbers/s of {budget:g} WCU/s; {throttled:,} throttled"
                f" requests ({throttled / max(atomic.row.numbers, 1):.2f} per number), p99"
                f" {atomic.row.p99_ms:,.0f} ms; errors to callers: {errors}"
                f" ({_errors_text(hot)}){reference}",
                ""
                if met
                else f"{atomic.row.retries_per_number:.2f} retries per number; "
                + _cores_text([atomic])
                + (
                    f"; without a binding budget the client took only {unbound.rate:,.0f}"
                    " numbers/s then: the budget was not what limited it"
                    if unbound and unbound.rate < 0.7 * budget
                    else ""
                ),
            )
        )
        for row, goal, name in ((allocator, 20, "allocator"), (gapless, 3, "gapless")):
            ratio = row.rate / atomic.rate if atomic.rate else math.inf
            extra = ""
            if row is gapless:
                extra = (
                    f"; {_puts_per_transaction(row.row):.1f} puts per transaction,"
                    f" {(row.consumed_wcu or 0) / max(row.row.numbers, 1):.2f} WCU per put,"
                    f" {row.throttled or 0:,} throttled"
                )
            found.append(
                Target(
                    f"hot key: {name} with defaults vs the atomic counter",
                    round(ratio, 1),
                    goal,
                    "×",
                    ratio >= goal,
                    f"{row.rate:,.0f} vs {atomic.rate:,.0f} numbers/s; p99"
                    f" {_ms(row.row.p99_ms)} ms{extra}",
                    ""
                    if ratio >= goal
                    else f"{row.throttled or 0:,} throttled, {row.row.conflicts_per_number:.3f}"
                    " lost races per number; " + _cores_text([row]),
                )
            )

    if everything := by.get("processes"):
        procs = [r for r in everything if not r.setting.get("diagnostic")]
        diagnosis = [r for r in everything if r.setting.get("diagnostic")]
        pairs = _pair_ratios(procs, lambda r: r.setting["processes"] > 1)
        ratio = statistics.median(p[0] for p in pairs) if pairs else math.nan
        many = [p[1] for p in pairs]
        one = [p[2] for p in pairs]
        n = many[0].setting["processes"] if many else options.processes

        def shape(rows: Sequence[Result]) -> str:
            numbers = sum(r.row.numbers for r in rows)
            conflicts = sum(r.row.conflicts_per_number * r.row.numbers for r in rows)
            transactions = sum(r.row.requests.get("TransactWriteItems", 0) for r in rows)
            wall = sum(r.row.wall_secs for r in rows)
            return (
                f"{transactions / max(wall, 1e-9):,.0f} transactions/s sent,"
                f" {conflicts / max(transactions, 1):.2f} lost races per transaction,"
                f" {numbers / max(transactions - conflicts, 1):.1f} puts per committed"
                f" transaction, p99 {_mean([r.row.p99_ms for r in rows]):,.0f} ms, client CPU"
                f" {_cpu_us_per_number(rows):,.0f} µs per put; " + _cores_text(rows)
            )

        found.append(
            Target(
                f"one transactional counter with defaults: {n} processes vs 1,"
                f" {options.tasks} tasks",
                round(ratio, 2),
                0.8,
                "×",
                ratio >= 0.8,
                f"{_pooled_rate(many):,.0f} vs {_pooled_rate(one):,.0f} puts/s"
                f" ({_ratio_text(pairs)})",
                ""
                if ratio >= 0.8
                else f"{n} processes: {shape(many)}; "
                + "; ".join(t for r in many if (t := _per_process_text(r)))
                + f". 1 process: {shape(one)}"
                + (
                    f". Diagnostic, the same {n} processes with retries backing off at most"
                    f" 10 ms: {_pooled_rate(diagnosis):,.0f} puts/s"
                    f" ({_pooled_rate(diagnosis) / _pooled_rate(one):.2f}× one process),"
                    f" {shape(diagnosis)}; "
                    + "; ".join(t for r in diagnosis if (t := _per_process_text(r)))
                    if diagnosis and _pooled_rate(one)
                    else ""
                ),
            )
        )

    if over := by.get("overhead"):
        for tasks in options.overhead_tasks:
            rows = [r for r in over if r.setting["tasks"] == tasks]
            pairs = _pair_ratios(rows, lambda r: r.row.name == "atomic")
            if not pairs:
                continue
            ratio = statistics.median(p[0] for p in pairs)
            aioseq = [p[1] for p in pairs]
            raw = [p[2] for p in pairs]
            cpu_us = _cpu_us_per_number
            found.append(
                Target(
                    f"atomic next() vs raw update_item, {tasks} task{'s' * (tasks > 1)}",
                    round(ratio, 3),
                    0.9,
                    "×",
                    ratio >= 0.9,
                    f"{_pooled_rate(aioseq):,.0f} vs {_pooled_rate(raw):,.0f} numbers/s"
                    f" ({_ratio_text(pairs)}); client CPU {cpu_us(aioseq):,.0f} vs"
                    f" {cpu_us(raw):,.0f} µs per number",
                    ""
                    if ratio >= 0.9
                    else f"aioseq's client spends {cpu_us(aioseq) - cpu_us(raw):,.0f} µs more"
                    f" CPU per number; {_gc_text(aioseq)} against the raw rows'"
                    f" {_gc_text(raw)}"
                    + (
                        f" (without the network it adds {added_cost['added_us']:,} µs per call:"
                        f" against the raw request's {cpu_us(raw):,.0f} µs, a ceiling of"
                        f" {cpu_us(raw) / (cpu_us(raw) + added_cost['added_us']):.2f}× where"
                        " the client's CPU is the limit)"
                        if added_cost
                        else ""
                    )
                    + "; "
                    + _cores_text(aioseq),
                )
            )
    return found


def _errors_text(results: Sequence[Result]) -> str:
    parts = [f"{r.row.label}: {dict(r.row.errors)}" for r in results if r.row.errors]
    return "; ".join(parts) or "none"


# --- the recommendation ----------------------------------------------------------------------


@dataclass(frozen=True)
class Config:
    """One sweep configuration in one cell, over its rounds: puts/s pooled, p99 averaged."""

    rate: float
    p99_ms: float
    rates: tuple[float, ...]
    ok: bool
    errors: int


#: A sweep row's place: condition, strategy, tasks, max_group_size, batch_window_secs.
SweepKey = tuple[str, str, int, int, float]


def sweep_configs(results: Sequence[Result]) -> dict[SweepKey, Config]:
    """The sweep's rows, rounds merged."""
    grouped: dict[SweepKey, list[Result]] = {}
    for r in results:
        if r.section != "sweep":
            continue
        s = r.setting
        key = (
            s["condition"],
            s["strategy"],
            s["tasks"],
            int(s["max_group_size"]),
            float(s["batch_window_secs"]),
        )
        grouped.setdefault(key, []).append(r)
    return {
        key: Config(
            _pooled_rate(rows),
            _mean([r.row.p99_ms for r in rows]),
            tuple(r.rate for r in rows),
            all(r.row.ok for r in rows),
            sum(sum(r.row.errors.values()) for r in rows),
        )
        for key, rows in grouped.items()
    }


def recommend(results: Sequence[Result], options: Options) -> dict[str, Any]:
    """Compare each ``(max_group_size, batch_window_secs)`` of the sweep with the defaults.

    A cell is one condition, strategy and task count; sizes are named by the gapless
    counter's (99 stands for the sort-key counter's 100, the largest of each), and a size of
    at least the cell's task count is the default size there (a group never holds more puts
    than there are tasks). Over the cells where a configuration differs from the defaults,
    its puts/s and p99 are compared with theirs as ratios, averaged as logarithms.

    Noise: ``sigma``, the median standard deviation of log(puts/s) between the rounds of one
    configuration in one cell; a mean over ``n`` cells of ratios of rows pooled over ``R``
    rounds is good to ``sigma * sqrt(2 / R) / sqrt(n)``. A configuration beats the defaults
    when its throughput gain is more than twice that, it wins in at least two thirds of those
    cells, and its p99 is not worse by more than that. The recommendation is the one that
    beats them by most; the defaults are kept when none does.
    """
    configs = sweep_configs(results)
    if not configs:
        return {}
    largest = max(options.sweep_sizes)
    default = (largest, 0.0)

    def named(strategy: str, size: int) -> int:
        return largest if size == CURRENT_DEFAULTS[strategy][0] else size

    cells: dict[tuple[str, str, int], dict[tuple[int, float], Config]] = {}
    for (condition, strategy, tasks, size, window), config in configs.items():
        cells.setdefault((condition, strategy, tasks), {})[(named(strategy, size), window)] = config

    deviations = [
        statistics.stdev(math.log(r) for r in c.rates)
        for c in configs.values()
        if len(c.rates) > 1 and min(c.rates) > 0
    ]
    sigma = statistics.median(deviations) if deviations else 0.15
    rounds = max((len(c.rates) for c in configs.values()), default=1)

    comparisons = []
    for size in options.sweep_sizes:
        for window in options.sweep_windows:
            if (size, window) == default:
                continue
            gains, p99s = [], []
            for (_, _, tasks), found in cells.items():
                effective = (size if size < tasks else largest, window)
                if effective == default or effective not in found or default not in found:
                    continue
                mine, theirs = found[effective], found[default]
                if mine.rate <= 0 or theirs.rate <= 0:
                    continue
                gains.append(math.log(mine.rate / theirs.rate))
                if mine.p99_ms > 0 and theirs.p99_ms > 0:
                    p99s.append(math.log(mine.p99_ms / theirs.p99_ms))
            if not gains:
                continue
            n = len(gains)
            margin = 2 * sigma * math.sqrt(2 / rounds) / math.sqrt(n)
            gain, p99 = _mean(gains), _mean(p99s)
            wins = sum(g > 0 for g in gains)
            comparisons.append(
                {
                    "max_group_size": size,
                    "batch_window_secs": window,
                    "cells": n,
                    "puts_per_s_vs_defaults": round(math.exp(gain), 3),
                    "wins": wins,
                    "p99_vs_defaults": round(math.exp(p99), 3),
                    "margin": round(math.exp(margin) - 1, 3),
                    "beats_defaults": gain > margin and wins * 3 >= n * 2 and p99 <= margin,
                }
            )
    comparisons.sort(key=lambda c: -c["puts_per_s_vs_defaults"])
    better = [c for c in comparisons if c["beats_defaults"]]
    chosen = (
        max(better, key=lambda c: c["puts_per_s_vs_defaults"])
        if better
        else {"max_group_size": largest, "batch_window_secs": 0.0}
    )
    return {
        "sigma": round(sigma, 3),
        "rounds": rounds,
        "largest": largest,
        "comparisons": comparisons,
        "recommended": {
            "max_group_size": chosen["max_group_size"],
            "batch_window_secs": chosen["batch_window_secs"],
        },
        "keep_current": not better,
    }


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
        item_wcu_per_sec=options.hot_item_wcu_per_sec, round_trip_secs=options.round_trip_secs
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
    body["targets"] = targets(bench.results, options, body.get("added_cost"))
    body["recommendation"] = recommend(bench.results, options)
    body["ok"] = all(r.row.ok for r in bench.results)
    return body


# --- output ----------------------------------------------------------------------------------


def _ms(ms: float) -> str:
    return f"{ms:,.0f}" if ms >= 100 else f"{ms:.3g}" if ms >= 0.001 else f"{ms:.2g}"


def _table(
    headers: list[str],
    cells: list[list[str]],
    style: str = "github",
    align: Sequence[str] | None = None,
) -> str:
    align = align or ("left",) + ("right",) * (len(headers) - 1)
    return tabulate(cells, headers, tablefmt=style, disable_numparse=True, colalign=align)


def _check(row: Row) -> str:
    return "ok" if row.ok else "FAILED"


def rows_table(results: Sequence[Result], extra: Sequence[str] = ()) -> str:
    """The rows of a section: the setting keys in ``extra``, then the figures."""
    headers = [
        "variant",
        *extra,
        "tasks",
        "processes",
        "numbers",
        "numbers/s",
        "p50 ms",
        "p99 ms",
        "requests/number",
        "lost races/number",
        "throttled",
        "errors",
        "client CPU µs/number",
        "of which GC",
        "cores: client/server/proxy/machine",
        "dup.",
        "gaps",
        "items ≠ numbers",
        "check",
    ]
    cells = []
    for r in results:
        c = r.cores()
        cores = "/".join("-" if c[k] is None else f"{c[k]:.2f}" for k in c)
        row = r.row
        cells.append(
            [
                row.label,
                *(str(r.setting.get(k, "")) for k in extra),
                f"{row.tasks:,}",
                f"{row.processes}",
                f"{row.numbers:,}",
                f"{row.numbers_per_s:,.0f}",
                _ms(row.p50_ms),
                _ms(row.p99_ms),
                f"{row.requests_per_number:.3f}",
                f"{row.conflicts_per_number:.3f}",
                "-" if r.throttled is None else f"{r.throttled:,}",
                f"{sum(row.errors.values()):,}",
                f"{1e6 * row.client_cpu_secs / max(row.numbers, 1):,.0f}",
                f"{1e6 * row.client_gc_secs / max(row.numbers, 1):,.0f}",
                cores,
                f"{row.duplicates}",
                f"{row.gaps:,}" + (" (allowed)" if row.gaps and row.gaps_allowed else ""),
                "-" if row.mismatched_items is None else f"{row.mismatched_items}",
                _check(row),
            ]
        )
    return _table(headers, cells)


def targets_table(found: Sequence[Target], *, details: bool = True, style: str = "github") -> str:
    """The targets: measured, goal, met or not, and (``details``) the figures behind each."""
    cells = [
        [
            t.name,
            f"{t.figure:g}{t.unit}",
            f">= {t.goal:g}{t.unit}",
            "met" if t.met else "NOT MET",
            *([t.detail + (f". Why not: {t.why}" if t.why else "")] if details else []),
        ]
        for t in found
    ]
    headers = ["target", "measured", "goal", ""] + (["figures"] if details else [])
    align = ("left", "right", "right", "left", "left")[: len(headers)]
    return _table(headers, cells, style, align)


def sweep_tables(results: Sequence[Result], options: Options) -> list[str]:
    """One table per condition: group size x window (lines) by strategy and tasks (columns),
    puts/s (pooled over the rounds) and p99 ms (their mean) in each cell."""
    configs = sweep_configs(results)
    lines: list[str] = []
    largest = max(options.sweep_sizes)
    for condition in dict.fromkeys(key[0] for key in configs):
        mine = {key: c for key, c in configs.items() if key[0] == condition}
        columns = list(dict.fromkeys((key[1], key[2]) for key in mine))
        headers = ["max_group_size", "batch_window"] + [
            f"{'gapless' if s == 'transactional' else s}, {t:,} task{'s' * (t > 1)}"
            for s, t in columns
        ]
        cells = []
        for size in options.sweep_sizes:
            for window in options.sweep_windows:
                line = [
                    f"{size}" + (" (100 for sort-key)" if size == largest else ""),
                    f"{window * 1000:g} ms",
                ]
                for strategy, tasks in columns:
                    default_size = CURRENT_DEFAULTS[strategy][0]
                    wanted = default_size if size >= tasks or size == largest else size
                    found = [
                        c
                        for (_, s, t, z, w), c in mine.items()
                        if (s, t, w, z) == (strategy, tasks, window, wanted)
                    ]
                    if not found:
                        line.append("")
                        continue
                    c = found[0]
                    mark = "" if c.ok else " FAILED"
                    if c.errors:
                        mark += f" ({c.errors} errors)"
                    line.append(f"{c.rate:,.0f} / {_ms(c.p99_ms)}{mark}")
                cells.append(line)
        lines += [
            f"### {condition}: {_condition_text(condition, options)}",
            "",
            _table(headers, cells),
            "",
        ]
    return lines


def _condition_text(condition: str, options: Options) -> str:
    lo, hi = (x * 1000 for x in options.round_trip_secs)
    return {
        "direct": "straight to the server",
        "trip": f"through the capacity model's {lo:g}-{hi:g} ms round trip (1,000 WCU/s per"
        " item, AWS's partition limit: never reached here)",
        "hot": f"through the hot key's capacity model ({options.hot_item_wcu_per_sec:g} WCU/s"
        f" per item, {lo:g}-{hi:g} ms round trip)",
    }[condition]


def markdown(report: dict[str, Any]) -> str:
    """The report as Markdown."""
    results: list[Result] = report["results"]
    options: Options = report["options"]
    m = report["machine"]
    v = report["versions"]
    by: dict[str, list[Result]] = {}
    for r in results:
        by.setdefault(r.section, []).append(r)
    lines = [
        "# The defaults benchmark: exactly once and group commit by default",
        "",
        f"Measured {report['date']} on {m['cpu']} ({m['cores']} cores shared by the clients,"
        f" the server and the proxies), {m['python']}; aioseq {v['aioseq']}, aiobotocore"
        f" {v['aiobotocore']}, botocore {v['botocore']}, dynamodb-autoincrement"
        f" {v['dynamodb-autoincrement']}; against {report['server']}. Load average"
        f" {', '.join(map(str, m['load_average']))} at the start,"
        f" {', '.join(map(str, report['load_average_at_end']))} at the end;"
        f" {report['wall_secs']:.0f} s in all.{_revision_text(report.get('revision'))}"
        " Command:",
        "",
        f"    {report['command']}",
        "",
        "Every row runs on a fresh table; its tasks start together and take numbers (or store"
        " items) until the row's time is up, then calls in flight finish. Every row is checked:"
        " no duplicate, no gap where the strategy promises none, stored items = numbers handed"
        " out. Ratios compare rows of this one run. CPU is read from /proc: the client's while"
        " it takes numbers, the server's (DynamoDB Local's JVM) and the proxy's over the row,"
        " and the whole machine's (other work on it included), as cores in use.",
        "",
        "## Targets",
        "",
        targets_table(report["targets"]),
        "",
    ]
    if rows := by.get("peer"):
        lines += [
            f"## 1. Gapless puts at {options.tasks} tasks: defaults vs dynamodb-autoincrement",
            "",
            "`store.transactional_counter(key)` with nothing else,"
            " `put(lambda n: {pk: key, sk: n})`, against the peer's `put`"
            " (GetItem + TransactWriteItems, retried at once without bound); gapless runs"
            " before and after the peer, and the two are pooled.",
            "",
            rows_table(rows),
            "",
        ]
    if rows := by.get("hot-key"):
        lines += [
            "## 2. A hot key through the capacity model",
            "",
            f"Through `FaultProxy(endpoint, capacity=CapacityModel(item_wcu_per_sec="
            f"{options.hot_item_wcu_per_sec:g}, round_trip_secs={options.round_trip_secs}))`,"
            " in a child process: a write over an item's budget is answered as DynamoDB answers"
            " a hot key, and never reaches the server. Each strategy with its defaults;"
            " `throttled` counts the proxy's throttles, `errors` the calls that raised to the"
            " caller (the task then makes its next call). The reference row (condition `trip`)"
            " runs the atomic counter right after, through the same round trip with AWS's"
            " 1,000 WCU/s per item, which it cannot reach: what the client could take then.",
            "",
            rows_table(rows, ["condition"]),
            "",
        ]
    if rows := by.get("processes"):
        lines += [
            f"## 3. One transactional counter: {options.processes} processes vs 1",
            "",
            "In one process, group commit puts every caller waiting on the counter object in"
            " one transaction. In several, each process groups only its own callers, and their"
            " transactions race on the counter item: the loser's is canceled on the counter's"
            " condition and sent again with the value that came back (`lost races`), so each"
            " committed transaction carries fewer puts and some are sent for nothing.",
            "",
            f"{options.tasks} tasks in all; in {options.processes} processes each takes its"
            " share after a start barrier and times it there (interpreter start-up and client"
            " set-up not counted). Rounds alternate; the ratio is the median of the rounds'"
            " ratios. `per process` (JSON) holds each process's puts and timed seconds. The"
            " diagnostic rows (not in the target) run the same processes on stores whose"
            " retries back off at most 10 ms (`RetryPolicy(max_backoff_secs=0.01)`), to tell"
            " whether the losers' growing backoff is what slows them.",
            "",
            rows_table(rows, ["round"]),
            "",
        ]
    if rows := by.get("overhead"):
        config = report["client_config"]
        lines += [
            "## 4. aioseq's atomic `next()` vs a raw aiobotocore `update_item`",
            "",
            "The raw baseline sends the request aioseq sends (captured from aioseq's first"
            " call) on a client made from the same session with `DynamoStore.open`'s settings"
            f" ({', '.join(f'{k}={v!r}' for k, v in config.items())}), and reads the number"
            " from `Attributes`. Rounds alternate which goes first; the ratio is the median of"
            " the rounds' ratios (each round's two rows ran next to each other).",
            "",
            rows_table(rows, ["round"]),
            "",
        ]
        if cost := report.get("added_cost"):
            lines += [
                f"**What aioseq adds, without the network**: with aiobotocore's"
                f" `_make_api_call` stubbed (it returns the parsed answer at once), a `next()`"
                f" costs {cost['aioseq_next_us']:,} µs and the raw `update_item` call"
                f" {cost['raw_update_item_us']:,} µs: aioseq adds **{cost['added_us']:,} µs"
                f" per number** (best of 5 interleaved rounds of {cost['calls']:,} calls, one"
                " task). The stub's calls run one at a time, so their objects die young; in"
                " the rows above, 16 or 128 calls keep theirs alive across each request, and"
                " the `of which GC` column shows what the garbage collector then costs. The"
                " top costs, from cProfile of the stubbed calls (own time per call, inflated"
                f" by the profiler: read them as shares; by package:"
                f" {_packages_text(cost['profile'])}):",
                "",
                _profile_table(cost["profile"]),
                "",
            ]
        if profile := report.get("profile"):
            lines += [
                f"A real run profiled (cProfile, one row at {profile['tasks']} tasks,"
                f" {profile['numbers']:,} numbers): inside `next()` {profile['next_us']:,} µs"
                f" per number while running, of which aiobotocore's `_make_api_call`"
                f" {profile['make_api_call_us']:,} µs (the raw request pays it too) and"
                f" {profile['added_us']:,} µs aioseq's own"
                f" ({profile['added_us'] / max(profile['next_us'], 1):.0%}); by package (own"
                f" time): {_packages_text(profile)}.",
                "",
            ]
    if by.get("sweep"):
        rec = report["recommendation"]
        lines += [
            "## 5. Group size and batch window",
            "",
            "The library's defaults, read from the strategies' signatures: "
            + "; ".join(
                f"{'gapless' if k == 'transactional' else k}"
                f" {', '.join(f'{o}={v!r}' for o, v in d.items())}"
                for k, d in report.get("library_defaults", {}).items()
            )
            + ".",
            "",
            f"Each cell: puts/s / p99 ms, over {options.sweep_rounds} round(s) (every other"
            " round in reverse order; puts/s pooled, p99 averaged). A group never holds more"
            " puts than there are tasks, so a size of at least the task count behaves as the"
            " default size: those cells repeat the default's row (at 1 task, every size).",
            "",
            *sweep_tables(results, options),
            "Against the defaults (max_group_size=99, 100 for sort-key; no window), over the"
            " cells where a configuration differs from them: its puts/s and p99 as ratios to"
            " theirs (geometric means), in how many cells it had more puts/s, and the noise"
            " margin (twice the standard error of the mean, from the spread between rounds:"
            f" sigma {rec['sigma']:.1%} per row). It beats the defaults when its gain passes the"
            " margin, it wins in two thirds of the cells, and its p99 is not worse beyond the"
            " margin.",
            "",
            _table(
                [
                    "max_group_size",
                    "batch_window",
                    "cells",
                    "puts/s vs defaults",
                    "wins",
                    "p99 vs defaults",
                    "margin",
                    "beats the defaults",
                ],
                [
                    [
                        f"{c['max_group_size']}",
                        f"{c['batch_window_secs'] * 1000:g} ms",
                        f"{c['cells']}",
                        f"{c['puts_per_s_vs_defaults']:.2f}×",
                        f"{c['wins']}/{c['cells']}",
                        f"{c['p99_vs_defaults']:.2f}×",
                        f"{c['margin']:.1%}",
                        "yes" if c["beats_defaults"] else "no",
                    ]
                    for c in rec["comparisons"]
                ],
            ),
            "",
            _recommendation_text(rec),
            "",
            "Every row of the sweep:",
            "",
            rows_table(
                by["sweep"], ["condition", "strategy", "max_group_size", "batch_window_secs"]
            ),
            "",
        ]
    return "\n".join(lines) + "\n"


def _revision_text(revision: dict[str, Any] | None) -> str:
    if not revision:
        return ""
    changed = revision["changed"]
    return f" Code: commit {revision['commit'][:12]}" + (
        f", with uncommitted changes to {', '.join(f'`{c}`' for c in changed)}." if changed else "."
    )


def _packages_text(profile: dict[str, Any]) -> str:
    return ", ".join(f"{k} {v:,} µs" for k, v in profile["own_us_by_package"].items())


def _profile_table(profile: dict[str, Any]) -> str:
    return _table(
        ["function", "own µs/call", "cumulative µs/call", "calls/call"],
        [
            [
                f"`{f['function']}`",
                f"{f['own_us']:,}",
                f"{f['cumulative_us']:,}",
                f"{f['calls_per_number']:g}",
            ]
            for f in profile["top"]
        ],
    )


def _recommendation_text(rec: dict[str, Any]) -> str:
    chosen = rec["recommended"]
    size = chosen["max_group_size"]
    what = (
        f"max_group_size={size}"
        + (" (100 for sort-key)" if size == rec["largest"] else "")
        + f", batch_window_secs={chosen['batch_window_secs']:g}"
    )
    if rec["keep_current"]:
        return (
            f"**Recommendation: keep the defaults** ({what}): no other configuration beats them"
            " beyond the noise in most of the cells where it differs from them."
        )
    found = next(
        c
        for c in rec["comparisons"]
        if (c["max_group_size"], c["batch_window_secs"]) == (size, chosen["batch_window_secs"])
    )
    return (
        f"**Recommendation: {what}**: {found['puts_per_s_vs_defaults']:.2f}× the defaults'"
        f" puts/s over the {found['cells']} cells where it differs from them (better in"
        f" {found['wins']}), p99 {found['p99_vs_defaults']:.2f}×; noise margin"
        f" {found['margin']:.1%}."
    )


def _jsonable(report: dict[str, Any]) -> dict[str, Any]:
    out = dict(report)
    out["options"] = asdict(report["options"])
    out["results"] = [{**asdict(r), "cores": r.cores()} for r in report["results"]]
    out["targets"] = [asdict(t) for t in report["targets"]]
    return out


# --- command line ----------------------------------------------------------------------------


def _sections(text: str) -> tuple[str, ...]:
    names = tuple(part.strip() for part in text.split(",") if part.strip())
    unknown = set(names) - set(SECTIONS)
    if unknown or not names:
        raise argparse.ArgumentTypeError(
            f"unknown sections {sorted(unknown)}; choose from {', '.join(SECTIONS)}"
        )
    return names


def parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.defaults",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--server", choices=("moto", "dynamodb-local"), default="moto")
    parser.add_argument("--endpoint-url", help="measure this server instead of starting one")
    parser.add_argument("--sections", type=_sections, help=f"some of {','.join(SECTIONS)}")
    parser.add_argument("--quick", action="store_true", help="a few seconds: the smoke test")
    parser.add_argument("--out", type=Path, default=RESULTS, help="where the files go")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    return parser


def _command(args: argparse.Namespace, argv: Sequence[str]) -> str:
    python = Path(sys.executable)
    with contextlib.suppress(ValueError):
        python = python.relative_to(Path.cwd())
    wrapper = "scripts/in-loopback-netns " if args.server == "dynamodb-local" else ""
    return f"{wrapper}{python} -m benchmarks.defaults {' '.join(argv)}".strip()


def main(argv: Sequence[str] | None = None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    args = parser().parse_args(arguments)
    options = QUICK if args.quick else Options()
    if args.sections:
        options = replace(options, sections=args.sections)
    started = time.perf_counter()
    with server(args.server, args.endpoint_url) as (endpoint, description):
        report: dict[str, Any] = {
            "benchmark": "defaults",
            **header(endpoint),
            "server": description,
            "command": _command(args, arguments),
            "options": options,
        }
        with tqdm(
            total=rows_planned(options), unit="row", disable=args.no_progress, file=sys.stderr
        ) as bar:

            def done(result: Result) -> None:
                bar.set_postfix_str(
                    f"{result.section}: {result.row.label}, {result.row.tasks} tasks",
                    refresh=False,
                )
                bar.update()

            report.update(asyncio.run(run(options, endpoint, on_row=done)))
    report["load_average_at_end"] = machine()["load_average"]
    report["wall_secs"] = round(time.perf_counter() - started, 1)

    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    (out / "defaults.json").write_text(json.dumps(_jsonable(report), indent=2) + "\n")
    (out / "defaults.md").write_text(markdown(report))

    print(targets_table(report["targets"], details=False, style="simple"))
    if report["recommendation"]:
        print("\n" + _recommendation_text(report["recommendation"]))
    rows = len(report["results"])
    print(f"\n{rows} rows in {report['wall_secs']:.0f} s; wrote {out}/defaults.{{json,md}}")
    if not report["ok"]:
        failed = ", ".join(
            f"{r.section}: {r.row.label} ({r.row.tasks} tasks)"
            for r in report["results"]
            if not r.row.ok
        )
        print(f"FAILED: a guarantee was broken in {failed}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
