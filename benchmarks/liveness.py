"""Liveness of the writers' queue on a counter item (issue 29): does the counter keep moving?

    scripts/in-loopback-netns .venv/bin/python -m benchmarks.liveness --server dynamodb-local
    python -m benchmarks.liveness --sections deadlines --secs 3     # embedded moto, a smoke test

Fair group commit queues writers on the counter item (``aioseq_turn``). Nothing here checks
fairness (``benchmarks.fairness`` does); these sections check that the queue never stops the
counter, whatever its writers do. Every writer is a process of its own, spawned, with its
own store; all of a row's writers start together behind a start barrier, on a fresh table.

1. ``deadlines``: ``--processes`` (6) x ``--tasks`` (8) callers, cold start, every call
   wrapped in ``asyncio.wait_for(..., deadline)`` (0.1 s and 0.03 s), for ``--secs`` (10 s),
   default store options: ``OptimisticCounter.next()`` and ``TransactionalCounter.put()``,
   grouped (the default) and ``group=False``. Per row: calls served (in all and per process),
   calls timed out, the longest standstill (the longest interval in which no process
   completed a call, from every call's completion time), numbers unique, for the
   transactional rows the items exact (every number handed out has its item; items whose
   number nobody received number at most the calls abandoned, whose caller may have left
   after the write; the items gapless; no call's item stored twice), and the queue entries
   left on the counter item after every process closed its store cleanly.
2. ``killed``: ``--processes`` writers on one counter (transactional, then optimistic; calls
   without a deadline, then under 0.1 s ones, as a service's), killed together with
   ``SIGKILL`` about 2 s into the run; then a fresh process's first number: how long it
   takes, and the entries on the counter item before it started.
3. ``far``: one writer behind a proxy that adds 1.2 s to each round trip (600 ms each way; the
   capacity model of ``aioseq.testing.capacity`` with a budget that never throttles) beside
   two near ones, transactional ``put()``, 8 tasks each, 15 s: puts per process.

Goals (issue 29): 0.1 s deadlines, grouped: optimistic >= 2,000 calls and transactional >= 500
puts in 10 s; every deadlines row: no standstill over 2 s, numbers unique, items exact, 0
entries left after a clean close; killed: the fresh writer's first number within 1.5 s; far:
the far writer >= 10 puts in 15 s. Writes ``liveness.json`` and ``liveness.md`` into
``--out``; exits 1 if a row missed a goal.

The scenario pieces (`Load`, `drive()`, `Served`, `standstill_secs()`, `exactness()`,
`queue_entries()`) are what ``tests/integration/test_liveness.py`` runs, scaled down.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import multiprocessing
import os
import signal
import sys
import time
import uuid
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from aioseq import DynamoStore
from aioseq._workload import PAYLOAD_ATTRIBUTE, stored_payloads
from aioseq.config import TURN_ATTRIBUTE
from aioseq.testing.capacity import CapacityModel
from benchmarks import _report
from benchmarks.defaults.bench import CapacityProxy
from benchmarks.row import fresh_table

STRATEGIES = ("optimistic", "transactional")
SECTIONS = ("deadlines", "killed", "far")

#: The issue's goals.
MIN_CALLS = {"optimistic": 2_000, "transactional": 500}  # 0.1 s deadlines, grouped, 10 s
MAX_STANDSTILL_SECS = 2.0
MAX_FIRST_NUMBER_SECS = 1.5
MIN_FAR_PUTS = 10  # in 15 s, 1.2 s round trip
#: The deadline the throughput goals are stated for.
GOAL_DEADLINE_SECS = 0.1


@dataclass(frozen=True)
class Settings:
    processes: int = 6
    tasks: int = 8
    secs: float = 10.0
    deadlines: tuple[float, ...] = (0.1, 0.03)
    groups: tuple[bool, ...] = (True, False)
    strategies: tuple[str, ...] = STRATEGIES
    sections: tuple[str, ...] = SECTIONS
    kill_after_secs: float = 2.0
    killed_deadlines: tuple[float | None, ...] = (None, 0.1)
    far_round_trip_secs: float = 1.2
    far_secs: float = 15.0
    near_processes: int = 2


# --- one writer ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Load:
    """What one writer does: ``tasks`` callers on counter ``key`` for ``secs`` seconds, each
    call under ``deadline_secs`` (``None``: no deadline).

    Attributes:
        key: the counter key; the transactional items go to the collection `items_of()`.
        strategy: ``"optimistic"`` (``next()``) or ``"transactional"`` (``put()``).
        group: group commit on (the default) or off.
    """

    key: str
    strategy: str
    group: bool = True
    tasks: int = 8
    secs: float = 10.0
    deadline_secs: float | None = 0.1


def items_of(key: str) -> str:
    """The partition key of the items a transactional counter ``key`` stores."""
    return f"{key}-items"


@dataclass
class Served:
    """What one writer did.

    Attributes:
        name: the writer's name (its payloads start with it).
        started, ended: the window, on ``time.monotonic()`` (one clock for every process of
            the machine on Linux: ``CLOCK_MONOTONIC``).
        completions: when each call that returned a number returned (``time.monotonic()``).
        numbers: the numbers returned, in the same order.
        timed_out: calls that ran past their deadline (cancelled by ``wait_for``).
        cut: calls still running at the window's end plus a grace, cancelled then.
        errors: calls that raised, by error class.
        close_secs: how long closing the store took (``None``: not closed here).
    """

    name: str
    started: float = 0.0
    ended: float = 0.0
    completions: list[float] = field(default_factory=list)
    numbers: list[int] = field(default_factory=list)
    timed_out: int = 0
    cut: int = 0
    errors: dict[str, int] = field(default_factory=dict)
    close_secs: float | None = None

    @property
    def served(self) -> int:
        """Calls that returned a number within the window."""
        return sum(1 for t in self.completions if t <= self.ended)

    @property
    def abandoned(self) -> int:
        """Calls whose caller left without the number: a transactional one may have stored its
        item all the same."""
        return self.timed_out + self.cut + sum(self.errors.values())


def _call(store: DynamoStore, load: Load, name: str) -> Callable[[], Awaitable[int]]:
    if load.strategy == "optimistic":
        return store.optimistic_counter(load.key, group=load.group).next
    if load.strategy != "transactional":
        raise ValueError(f"unknown strategy {load.strategy!r}; choose from {STRATEGIES}")
    counter = store.transactional_counter(load.key, group=load.group)
    table = store.table
    sort_key = table.sort_key or "sk"
    partition = items_of(load.key)
    calls = iter(range(1, 1 << 62))

    async def put() -> int:
        payload = f"{name}/{next(calls)}"
        return await counter.put(
            lambda n: {table.partition_key: partition, sort_key: n, PAYLOAD_ATTRIBUTE: payload}
        )

    return put


async def drive(
    store: DynamoStore,
    load: Load,
    name: str,
    *,
    start: Callable[[], Awaitable[object]] | None = None,
    grace_secs: float = 2.0,
) -> Served:
    """Run ``load`` on ``store`` as writer ``name``: await ``start()`` (a start barrier), then
    ``load.tasks`` callers call until ``load.secs`` have passed; a call still running
    ``grace_secs`` later is cancelled (counted as ``cut``). The store is left open."""
    call = _call(store, load, name)
    if start is not None:
        await start()
    served = Served(name, started=time.monotonic())
    served.ended = end = served.started + load.secs
    errors: Counter[str] = Counter()

    async def caller() -> None:
        while time.monotonic() < end:
            try:
                if load.deadline_secs is None:
                    n = await call()
                else:
                    n = await asyncio.wait_for(call(), load.deadline_secs)
            except asyncio.TimeoutError:
                served.timed_out += 1
                continue
            except Exception as exc:  # counted; the caller calls again
                errors[type(exc).__name__] += 1
                await asyncio.sleep(0.01)
                continue
            served.completions.append(time.monotonic())
            served.numbers.append(n)

    tasks = [asyncio.ensure_future(caller()) for _ in range(load.tasks)]
    try:
        _, pending = await asyncio.wait(tasks, timeout=load.secs + grace_secs)
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    served.cut = len(pending)
    served.errors = dict(errors)
    return served


async def drive_on_own_store(
    endpoint: str, table: str, load: Load, name: str, start: Callable[[], Awaitable[object]]
) -> Served:
    """`drive()` on a store of its own, opened here and closed cleanly after (timed)."""
    async with DynamoStore.open(table=table, endpoint_url=endpoint) as store:
        await store.check_table()  # the store reads its table before the start, not in it
        served = await drive(store, load, name, start=start)
        closing = time.monotonic()
    served.close_secs = round(time.monotonic() - closing, 3)
    return served


# --- figures -------------------------------------------------------------------------------


def standstill_secs(writers: Sequence[Served]) -> float:
    """The longest interval, within the writers' common window, in which none of them
    completed a call."""
    start = min(w.started for w in writers)
    end = max(w.ended for w in writers)
    times = sorted(t for w in writers for t in w.completions if start <= t <= end)
    marks = [start, *times, end]
    return max(b - a for a, b in itertools.pairwise(marks))


async def queue_entries(store: DynamoStore, key: str) -> list[str]:
    """The entries of the writers' queue on counter ``key``'s counter item (strongly
    consistent read)."""
    response = await store.send_once(
        "get_item",
        TableName=store.table.name,
        Key=store.counter_item_key(key),
        ConsistentRead=True,
    )
    item = response.get("Item") or {}
    return [str(e.get("S")) for e in item.get(TURN_ATTRIBUTE, {}).get("L", [])]


def duplicates(writers: Sequence[Served]) -> int:
    """Numbers handed out more than once, across the writers."""
    counts = Counter(n for w in writers for n in w.numbers)
    return sum(c - 1 for c in counts.values() if c > 1)


async def exactness(store: DynamoStore, key: str, writers: Sequence[Served]) -> dict[str, Any]:
    """The transactional counter ``key``'s items against the numbers its writers received:
    ``missing`` numbers received without an item; ``unclaimed`` items whose number nobody
    received (allowed up to ``abandoned``, the calls whose caller left); ``holes`` among the
    items' numbers; ``stored_twice``, calls whose item is stored under two numbers; ``ok``."""
    stored = await stored_payloads(store, items_of(key))
    received = {n for w in writers for n in w.numbers}
    numbers = sorted(stored)
    payloads = Counter(p for p in stored.values() if p is not None)
    abandoned = sum(w.abandoned for w in writers)
    found = {
        "items": len(stored),
        "missing": len(received - set(stored)),
        "unclaimed": len(set(stored) - received),
        "abandoned": abandoned,
        "holes": (numbers[-1] - len(numbers)) if numbers else 0,
        "stored_twice": sum(c - 1 for c in payloads.values() if c > 1),
    }
    found["ok"] = (
        found["missing"] == found["holes"] == found["stored_twice"] == 0
        and found["unclaimed"] <= abandoned
    )
    return found


def _goal(name: str, measured: float, goal: float, sense: str) -> dict[str, Any]:
    met = measured >= goal if sense == ">=" else measured <= goal
    return {"goal": f"{name} {sense} {goal:g}", "measured": measured, "met": met}


# --- processes -------------------------------------------------------------------------------


def _spawn() -> Any:
    return multiprocessing.get_context("spawn")


def _writer_process(
    endpoint: str, table: str, load: Load, name: str, barrier: Any, results: Any
) -> None:
    async def start() -> None:
        await asyncio.to_thread(barrier.wait, 120)

    served = asyncio.run(drive_on_own_store(endpoint, table, load, name, start))
    results.put(asdict(served))


def _first_number_process(endpoint: str, table: str, load: Load, results: Any) -> None:
    async def first() -> dict[str, Any]:
        async with DynamoStore.open(table=table, endpoint_url=endpoint) as store:
            call = _call(store, load, "fresh")
            started = time.monotonic()
            try:
                number = await asyncio.wait_for(call(), 60)
            except Exception as exc:
                return {"error": f"{type(exc).__name__}: {exc}", "secs": None}
            return {"number": number, "secs": round(time.monotonic() - started, 3)}

    results.put(asyncio.run(first()))


class Writers:
    """Writer processes, spawned, started together behind one barrier (the parent waits at it
    too, so it knows when they started)."""

    def __init__(self, table: str, writers: Sequence[tuple[str, Load, str]]) -> None:
        ctx = _spawn()
        self.barrier = ctx.Barrier(len(writers) + 1)
        self.results = ctx.Queue()
        self.processes = [
            ctx.Process(
                target=_writer_process,
                args=(endpoint, table, load, name, self.barrier, self.results),
                daemon=True,
            )
            for endpoint, load, name in writers
        ]
        for process in self.processes:
            process.start()

    async def started(self) -> None:
        await asyncio.to_thread(self.barrier.wait, 120)

    async def served(self, timeout_secs: float) -> list[Served]:
        found = []
        for _ in self.processes:
            raw = await asyncio.to_thread(self.results.get, True, timeout_secs)
            found.append(Served(**raw))
        for process in self.processes:
            await asyncio.to_thread(process.join, 30)
        return sorted(found, key=lambda s: s.name)

    def kill(self) -> None:
        for process in self.processes:
            if process.pid is not None and process.is_alive():
                os.kill(process.pid, signal.SIGKILL)
        for process in self.processes:
            process.join(30)

    def close(self) -> None:
        for process in self.processes:
            if process.is_alive():
                process.kill()
                process.join(30)


@contextlib.contextmanager
def writers(table: str, specs: Sequence[tuple[str, Load, str]]) -> Iterator[Writers]:
    started = Writers(table, specs)
    try:
        yield started
    finally:
        started.close()


async def first_number(endpoint: str, table: str, load: Load) -> dict[str, Any]:
    """A fresh process's first call on ``load``'s counter: the number, and the seconds it took
    from the call (the process's start-up and its store's opening not counted)."""
    ctx = _spawn()
    results = ctx.Queue()
    process = ctx.Process(
        target=_first_number_process, args=(endpoint, table, load, results), daemon=True
    )
    process.start()
    try:
        found: dict[str, Any] = await asyncio.to_thread(results.get, True, 120)
    finally:
        await asyncio.to_thread(process.join, 30)
        if process.is_alive():
            process.kill()
    return found


# --- sections --------------------------------------------------------------------------------


def _variant(load: Load) -> str:
    call = "next()" if load.strategy == "optimistic" else "put()"
    group = "grouped" if load.group else "group=False"
    deadline = "" if load.deadline_secs is None else f", deadline {load.deadline_secs:g} s"
    return f"{load.strategy} {call}, {group}{deadline}"


def _per_process(found: Sequence[Served]) -> list[int]:
    return [w.served for w in found]


async def deadlines_row(endpoint: str, s: Settings, load: Load) -> dict[str, Any]:
    async with fresh_table(endpoint) as store:
        specs = [(endpoint, load, f"p{i}") for i in range(s.processes)]
        with writers(store.table.name, specs) as started:
            await started.started()
            found = await started.served(load.secs + 120)
        row: dict[str, Any] = {
            "section": "deadlines",
            "variant": _variant(load),
            "strategy": load.strategy,
            "group": load.group,
            "deadline_secs": load.deadline_secs,
            "processes": s.processes,
            "tasks": load.tasks,
            "secs": load.secs,
            "served": sum(w.served for w in found),
            "per_process": _per_process(found),
            "timed_out": sum(w.timed_out for w in found),
            "cut": sum(w.cut for w in found),
            "errors": dict(sum((Counter(w.errors) for w in found), Counter())),
            "longest_standstill_secs": round(standstill_secs(found), 3),
            "duplicates": duplicates(found),
            "close_secs": max((w.close_secs or 0.0) for w in found),
            "entries_left": len(await queue_entries(store, load.key)),
        }
        if load.strategy == "transactional":
            row["items"] = await exactness(store, load.key, found)
    goals = []
    if load.group and load.deadline_secs == GOAL_DEADLINE_SECS and s.secs >= 10:
        goals.append(_goal("calls served", row["served"], MIN_CALLS[load.strategy], ">="))
    goals += [
        _goal("longest standstill s", row["longest_standstill_secs"], MAX_STANDSTILL_SECS, "<="),
        _goal("duplicates", row["duplicates"], 0, "<="),
        _goal("entries left after close", row["entries_left"], 0, "<="),
    ]
    if "items" in row:
        goals.append(_goal("items not exact", 0 if row["items"]["ok"] else 1, 0, "<="))
    row["goals"] = goals
    row["ok"] = all(g["met"] for g in goals)
    return row


async def section_deadlines(endpoint: str, s: Settings) -> list[dict[str, Any]]:
    rows = []
    for deadline in s.deadlines:
        for strategy in s.strategies:
            for group in s.groups:
                key = f"live-{uuid.uuid4().hex[:8]}"
                load = Load(key, strategy, group, s.tasks, s.secs, deadline)
                rows.append(await deadlines_row(endpoint, s, load))
                _progress(rows[-1])
    return rows


async def killed_row(
    endpoint: str, s: Settings, strategy: str, deadline_secs: float | None
) -> dict[str, Any]:
    key = f"live-{uuid.uuid4().hex[:8]}"
    load = Load(key, strategy, True, s.tasks, 600.0, deadline_secs)
    async with fresh_table(endpoint) as store:
        specs = [(endpoint, load, f"p{i}") for i in range(s.processes)]
        with writers(store.table.name, specs) as started:
            await started.started()
            await asyncio.sleep(s.kill_after_secs)
            await asyncio.to_thread(started.kill)
        before = await queue_entries(store, key)
        first = await first_number(endpoint, store.table.name, replace(load, secs=0.0))
        after = await queue_entries(store, key)
    secs = first.get("secs")
    goals = [
        _goal(
            "fresh writer's first number s",
            float("inf") if secs is None else secs,
            MAX_FIRST_NUMBER_SECS,
            "<=",
        )
    ]
    row = {
        "section": "killed",
        "variant": f"{_variant(load)}: {s.processes} writers killed after {s.kill_after_secs:g} s",
        "strategy": strategy,
        "deadline_secs": deadline_secs,
        "processes": s.processes,
        "tasks": s.tasks,
        "entries_before": len(before),
        "first_number": first,
        "entries_after": len(after),
        "goals": goals,
        "ok": all(g["met"] for g in goals),
    }
    return row


async def section_killed(endpoint: str, s: Settings) -> list[dict[str, Any]]:
    rows = []
    for deadline in s.killed_deadlines:
        for strategy in ("transactional", "optimistic"):
            if strategy in s.strategies:
                rows.append(await killed_row(endpoint, s, strategy, deadline))
                _progress(rows[-1])
    return rows


async def section_far(endpoint: str, s: Settings) -> list[dict[str, Any]]:
    model = CapacityModel(  # a round trip only: budgets no request can reach
        partition_wcu_per_sec=1e9,
        partition_rcu_per_sec=1e9,
        burst_secs=1.0,
        round_trip_secs=(s.far_round_trip_secs, s.far_round_trip_secs),
    )
    proxy = CapacityProxy(endpoint, model)
    try:
        far_endpoint = proxy.endpoint_url
        key = f"live-{uuid.uuid4().hex[:8]}"
        load = Load(key, "transactional", True, s.tasks, s.far_secs, None)
        async with fresh_table(endpoint) as store:
            specs = [(far_endpoint, load, "far")]
            specs += [(endpoint, load, f"near{i}") for i in range(s.near_processes)]
            with writers(store.table.name, specs) as started:
                await started.started()
                found = await started.served(s.far_secs + 120)
            items = await exactness(store, key, found)
            entries = len(await queue_entries(store, key))
    finally:
        proxy.close()
    far = next(w for w in found if w.name == "far")
    goals = [_goal("far writer's puts", far.served, MIN_FAR_PUTS, ">=")]
    if s.far_secs < 15:
        goals = []  # the goal is stated for 15 s
    goals += [
        _goal("duplicates", duplicates(found), 0, "<="),
        _goal("items not exact", 0 if items["ok"] else 1, 0, "<="),
    ]
    row = {
        "section": "far",
        "variant": f"transactional put(), grouped, 1 writer at"
        f" {s.far_round_trip_secs * 1000:g} ms round trip + {s.near_processes} near",
        "strategy": "transactional",
        "secs": s.far_secs,
        "tasks": s.tasks,
        "served": sum(w.served for w in found),
        "per_process": {w.name: w.served for w in found},
        "errors": dict(sum((Counter(w.errors) for w in found), Counter())),
        "cut": sum(w.cut for w in found),
        "longest_standstill_secs": round(standstill_secs(found), 3),
        "items": items,
        "entries_left": entries,
        "model": model.describe(),  # a round trip only: no budget is reached
        "goals": goals,
        "ok": all(g["met"] for g in goals),
    }
    _progress(row)
    return [row]


def _progress(row: dict[str, Any]) -> None:
    missed = [g["goal"] + f" (measured {g['measured']})" for g in row["goals"] if not g["met"]]
    state = "ok" if row["ok"] else "MISSED: " + "; ".join(missed)
    print(f"[{row['section']}] {row['variant']}: {state}", file=sys.stderr, flush=True)


# --- report ----------------------------------------------------------------------------------


def _goals_text(row: dict[str, Any]) -> str:
    return "; ".join(
        f"{g['goal']}: {g['measured']} {'ok' if g['met'] else 'MISSED'}" for g in row["goals"]
    )


def markdown(report: dict[str, Any]) -> str:
    lines = [
        "# Liveness of the writers' queue",
        "",
        f"`{report['command']}`, {report['date']}, {report['server']};"
        f" {report['load_at_start']} at the start, {report['load_at_end']} at the end.",
        "",
        "| section | variant | served (per process) | timed out | longest standstill s |"
        " dup | items | entries left | goals |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in report["rows"]:
        if r["section"] == "killed":
            first = r["first_number"]
            taken = f"first number in {first.get('secs')} s" if "secs" in first else ""
            lines.append(
                f"| killed | {r['variant']} | {taken} {first.get('error', '')} | | | |"
                f" | {r['entries_before']} before, {r['entries_after']} after |"
                f" {_goals_text(r)} |"
            )
            continue
        per = r["per_process"]
        shares = "/".join(str(v) for v in (per.values() if isinstance(per, dict) else per))
        items = r.get("items")
        items_text = (
            f"{items['items']} items, {items['missing']} missing, {items['unclaimed']} unclaimed"
            f" (<= {items['abandoned']}), {items['holes']} holes"
            if items
            else ""
        )
        lines.append(
            f"| {r['section']} | {r['variant']} | {r['served']:,} ({shares}) |"
            f" {r.get('timed_out', '')} | {r['longest_standstill_secs']} |"
            f" {r.get('duplicates', '')} | {items_text} | {r['entries_left']} | {_goals_text(r)} |"
        )
    return "\n".join(lines) + "\n"


def _row_figures(row: dict[str, Any]) -> str:
    """A row's figures in a few words (for `compare_table()`)."""
    if row["section"] == "killed":
        first = row["first_number"]
        taken = f"{first['secs']} s" if "secs" in first else first.get("error", "?")
        return f"first number in {taken}; {row['entries_before']} entries left by the killed"
    if row["section"] == "far":
        per = row["per_process"]
        shares = list(per.values() if isinstance(per, dict) else per)
        return f"far writer {shares[0]:,} puts, near {'/'.join(f'{v:,}' for v in shares[1:])}"
    return (
        f"{row['served']:,} served; standstill {row['longest_standstill_secs']} s;"
        f" {row['entries_left']} entries left"
    )


def compare_table(before: dict[str, Any], after: dict[str, Any]) -> str:
    """Each row of ``after`` beside the row of ``before`` with the same variant, and whether
    ``after`` met the issue's goals."""
    earlier = {(r["section"], r["variant"]): r for r in before["rows"]}
    lines = [
        "| section | variant | before | now | goals met |",
        "|---|---|---|---|---|",
    ]
    for r in after["rows"]:
        old = earlier.get((r["section"], r["variant"]))
        lines.append(
            f"| {r['section']} | {r['variant']} | {_row_figures(old) if old else ''} |"
            f" {_row_figures(r)} | {'yes' if r['ok'] else 'NO: ' + _goals_text(r)} |"
        )
    return "\n".join(lines) + "\n"


async def run(s: Settings, endpoint: str) -> dict[str, Any]:
    rows: list[dict[str, Any]] = []
    if "deadlines" in s.sections:
        rows += await section_deadlines(endpoint, s)
    if "killed" in s.sections:
        rows += await section_killed(endpoint, s)
    if "far" in s.sections:
        rows += await section_far(endpoint, s)
    return {"rows": rows, "ok": all(r["ok"] for r in rows)}


def main(argv: Sequence[str] | None = None) -> int:
    return _report.main(
        "liveness", __doc__, argv, Settings(), run, markdown,
        options=("sections", "strategies", "processes", "tasks", "secs", "deadlines"),
        choices={"sections": SECTIONS, "strategies": STRATEGIES},
        notes={"secs": "each deadlines row"},
    )  # fmt: skip


if __name__ == "__main__":
    raise SystemExit(main())
