"""The soak: every strategy, several processes, many tasks, injected faults, a process killed,
every number and every stored item checked.

::

    python -m verification.soak [--server moto|dynamodb-local | --endpoint-url URL]
        [--processes 4] [--concurrency 200] [--count 20000] [--seed 1]
        [--faults KIND=RATE,... | --fault-rate R] [--kill-at 0.5] [--cancel-rate 0.01]
        [--strategies atomic,allocator,optimistic,sort-key,transactional]
        [--read-timeout-secs 5] [--deadline-secs D [--max-standstill-secs 2]] [--out DIR]

For each strategy, ``--processes`` worker processes (``p0``, ``p1``...) each take ``--count``
numbers from one shared counter with ``--concurrency`` tasks (one counter object per process),
through a :class:`~aioseq.testing.fault_proxy.FaultProxy`:

- **faults**: :data:`DEFAULT_FAULTS` unless ``--faults`` (``KIND=RATE`` pairs) or
  ``--fault-rate`` (that share of requests, split equally between every kind) says otherwise.
  The default loses 5.5% of answers after the server applied the request (``response-lost``
  4.5%, and ``delay`` 1%: held past the client's read timeout, then applied), and fails 4.5%
  more before they reach the server: 500s (2%), resets (1%), throttling (1%) and transaction
  conflicts (0.5%).
- **a killed process**: once ``p0`` has completed ``--kill-at`` of its calls it gets SIGKILL
  (it sends it to itself, at once: no cleanup, no flush, its other calls in flight), and
  ``p0-again`` takes the rest of its numbers; the checker is told ``p0`` was killed
  (``--kill-at 0``: nobody is killed).
- **cancelled callers**: ``--cancel-rate`` of the calls are cancelled after a random 1-100 ms.
- **deadlines** (``--deadline-secs D``, off by default): every call is wrapped in
  ``asyncio.wait_for(..., D)``, as services wrap theirs (issue 29). A call past its deadline
  is recorded as ``TimeoutError``, which the checker counts as a cancelled call (``wait_for``
  cancels it). Each strategy's row then also says how many calls timed out, the longest
  **standstill** (the longest interval in which some caller was waiting and no process
  completed a call: :func:`longest_standstill_secs`) and the writers' queue entries
  (``aioseq_turn``) left on the counter item after every process closed, by the process that
  enqueued them (from the wire log). The run fails if a standstill exceeds
  ``--max-standstill-secs`` (2 s, issue 29's goal: a vanished writer costs the others one
  lease, at least 0.5 s, once; a fault costs one caller its retries, not the counter; plus the
  read timeout when ``delay`` faults run: a writer waits out its read timeout for a request
  held past it, and when every writer waits on one at once, nothing moves) or if an entry of
  a process that closed is left; the killed process never closes, and a delayed enqueue may
  reach DynamoDB after its sender closed, so those entries are reported (``p0``, ``p2
  (late)``), not failed: what they cost the others is in the standstill.

Each worker appends every call to its own history file as it completes (its times, its
numbers or its error, and its payload: the item-writing strategies store ``<process>/<task>/
<seq>`` with each item), so the killed process leaves its completed calls behind; the proxy
logs every write the server applied and whether its answer got through. Then the histories,
the counter item and the stored items (number -> payload) are checked against the strategy's
guarantees by :class:`~verification.history.History`, and a row per strategy is printed
(numbers checked, requests, faults, failed calls, duplicates, items stored twice, holes, order
violations) with the faults injected by kind and the gaps or unacknowledged items by cause
below it. Exit status 1 if any guarantee was broken. ``--out DIR`` also writes the report to
``DIR/soak.json`` (``DIR/soak-deadlines.json`` under deadlines: the parameters, date,
machine, versions, and each strategy's :class:`~verification.soak_report.Soak`), which
:func:`~verification.soak_report.transcript` prints again line for line.

Strategies run with the library's defaults (the conditional ones grouped);
``STRATEGY+no-group`` (or ``"STRATEGY --no-group"``) runs ``optimistic``, ``sort-key`` or
``transactional`` without group commit, and ``STRATEGY+group`` asks for group commit
explicitly. The ungrouped conditional strategies serve one caller per round trip per process,
which makes the full size (4 x 20,000 numbers) take tens of minutes on DynamoDB Local. moto
copies the whole table on every transaction, so sort-key and transactional slow down as the
table grows (each strategy gets its own table here): run it smaller there (``--count 2000``).

DynamoDB Local listens on every interface: ``--server dynamodb-local`` starts it, so run the
soak inside ``scripts/in-loopback-netns``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import json
import os
import random
import re
import signal
import sys
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from aioseq._store import DynamoStore
from aioseq._strategy_table import STRATEGIES, STRATEGY_NAMES, strategy_named
from aioseq._workload import make_taker, stored_payloads
from aioseq.config import TableSpec
from aioseq.errors import AioseqError
from aioseq.testing.fault_proxy import KINDS, Exchange, FaultProxy, FaultSchedule
from benchmarks._report import header
from benchmarks.liveness import queue_entries
from benchmarks.row import server
from verification.history import History, Report
from verification.records import Call
from verification.soak_report import (
    LATE,
    VICTIM,
    VICTIM_AGAIN,
    Deadlines,
    _rows,
    _summary,
    intro,
)
from verification.soak_report import Soak as Soak
from verification.soak_report import describe_faults as describe_faults

__all__ = [
    "DEFAULT_FAULTS",
    "DEFAULT_STRATEGIES",
    "Soak",
    "describe_faults",
    "longest_standstill_secs",
    "main",
    "parse_strategy",
    "run_soak",
]

DEFAULT_STRATEGIES = STRATEGY_NAMES

#: The default fault schedule, by kind (10% of requests): 5.5% of answers lost after the
#: server applied the request, 2% 500s, 1% resets, 1% throttling, 0.5% transaction conflicts.
DEFAULT_FAULTS: Mapping[str, float] = {
    "response-lost": 0.045,
    "delay": 0.01,
    "internal-error": 0.01,
    "http-500": 0.01,
    "reset": 0.01,
    "throughput-exceeded": 0.005,
    "throttling": 0.005,
    "transaction-conflict": 0.005,
}

#: A cancelled call is cancelled after a random delay up to this, in seconds.
CANCEL_WITHIN_SECS = 0.1

#: Under deadlines, the longest standstill allowed by default, in seconds (issue 29's goal),
#: plus the read timeout when ``delay`` faults hold requests past it: a writer waits that long
#: for a held request, and when every writer waits on one at once the counter stands still.
MAX_STANDSTILL_SECS = 2.0


def default_max_standstill_secs(faults: Mapping[str, float], read_timeout_secs: float) -> float:
    """The default bound on a standstill under deadlines, in seconds."""
    return MAX_STANDSTILL_SECS + (read_timeout_secs if faults.get("delay") else 0.0)


#: The repository's root, which holds this package (it is not installed).
_ROOT = Path(__file__).resolve().parents[1]


def parse_strategy(name: str) -> tuple[str, bool | None]:
    """``(strategy, group)`` for a soak strategy name: ``"optimistic"`` -> ``("optimistic",
    None)`` (the library's default), ``"optimistic+no-group"`` or ``"optimistic --no-group"``
    -> ``False``, ``"optimistic+group"`` -> ``True``.

    Raises:
        ValueError: an unknown strategy, or a group mode for one that has none.
    """
    base, _, mode = " ".join(name.split()).replace(" --", "+").partition("+")
    modes = {"": None, "group": True, "no-group": False}
    grouped = sorted(s.name for s in STRATEGIES if s.grouped)
    if base not in STRATEGY_NAMES or mode not in modes:
        raise ValueError(
            f"unknown strategy {name!r}; choose from {', '.join(STRATEGY_NAMES)}, or "
            f"STRATEGY+no-group for {', '.join(grouped)} without group commit"
        )
    if mode and base not in grouped:
        raise ValueError(f"{base} has no group mode: {name!r}")
    return base, modes[mode]


async def run_soak(
    endpoint_url: str,
    *,
    strategies: Sequence[str] = DEFAULT_STRATEGIES,
    processes: int = 4,
    concurrency: int = 200,
    count: int = 20_000,
    faults: Mapping[str, float] = DEFAULT_FAULTS,
    seed: int = 1,
    read_timeout_secs: float = 5.0,
    kill_at: float = 0.5,
    cancel_rate: float = 0.01,
    deadline_secs: float | None = None,
    max_standstill_secs: float | None = None,
    out: Callable[[str], None] = print,
) -> list[Soak]:
    """Soak each of ``strategies`` against the server at ``endpoint_url`` (see the module doc)
    and print a row for each with ``out``.

    Each strategy gets its own table (created, then deleted) and its own proxy; delays hold a
    request ``read_timeout_secs + 0.5`` seconds.

    Parameters:
        strategies: names as :func:`parse_strategy` takes them.
        processes, concurrency, count: worker processes, tasks per process, numbers per
            process.
        faults: the fault schedule's rate per kind (:data:`DEFAULT_FAULTS`).
        seed: the fault schedule's seed (plus the strategy's index), and the workers'.
        read_timeout_secs: the workers' read timeout.
        kill_at: ``p0`` is killed once it completed this share of its calls (0: never).
        cancel_rate: the share of calls cancelled mid-way.
        deadline_secs: every call in ``asyncio.wait_for(..., deadline_secs)``, and each
            :class:`Soak` says whether the counter kept moving (``None``: no deadline).
        max_standstill_secs: under deadlines, the longest standstill allowed (default:
            :func:`default_max_standstill_secs` of the faults and the read timeout).

    Returns:
        one :class:`Soak` per strategy, in order.

    Raises:
        ValueError: an unknown strategy, or a bad argument.
        ConfigurationError: a bad fault schedule.
        RuntimeError: a worker process failed (its stderr is in the message).
    """
    for name in strategies:
        parse_strategy(name)
    if not 0 <= kill_at < 1 or not 0 <= cancel_rate <= 1:
        raise ValueError(
            f"kill_at must be in [0, 1) and cancel_rate in [0, 1]: {kill_at, cancel_rate}"
        )
    if max_standstill_secs is None:
        max_standstill_secs = default_max_standstill_secs(faults, read_timeout_secs)
    if deadline_secs is not None and not (deadline_secs > 0 and max_standstill_secs > 0):
        raise ValueError(
            "deadline_secs and max_standstill_secs must be positive: "
            f"{deadline_secs, max_standstill_secs}"
        )
    FaultSchedule(faults)  # validates
    parameters: dict[str, Any] = {
        "strategies": list(strategies),
        "processes": processes,
        "concurrency": concurrency,
        "count": count,
        "faults": dict(faults),
        "seed": seed,
        "read_timeout_secs": read_timeout_secs,
        "kill_at": kill_at,
        "cancel_rate": cancel_rate,
    }
    if deadline_secs is not None:
        parameters.update(deadline_secs=deadline_secs, max_standstill_secs=max_standstill_secs)
    for line in intro(parameters, endpoint_url):
        out(line)
    results: list[Soak] = []
    delay_secs = read_timeout_secs + 0.5
    for i, strategy in enumerate(strategies):
        table = TableSpec(name=f"aioseq-soak-{uuid.uuid4().hex[:8]}")
        # A write held by a delay fault reaches the server up to delay_secs after its caller
        # gave up (plus the server's own time).
        history = History(table, late_secs=delay_secs + 10.0)
        schedule = FaultSchedule(faults, seed=seed + i, delay_secs=delay_secs)
        owners = _QueueOwners()

        def observe(
            exchange: Exchange, history: History = history, owners: _QueueOwners = owners
        ) -> None:
            history.observe(exchange)
            owners.observe(exchange)

        async with DynamoStore.open(table=table, endpoint_url=endpoint_url) as store:
            await store.create_table()
            try:
                with FaultProxy(endpoint_url, schedule, on_exchange=observe) as proxy:
                    started = time.perf_counter()
                    killed_after = await _run_workers(
                        proxy.endpoint_url, table.name, strategy, history,
                        processes=processes, concurrency=concurrency, count=count,
                        read_timeout_secs=read_timeout_secs, seed=seed, kill_at=kill_at,
                        cancel_rate=cancel_rate, deadline_secs=deadline_secs,
                    )  # fmt: skip
                    wall = time.perf_counter() - started
                report = await _check(store, history, strategy)
                # Every process has exited: the clean ones closed their stores.
                left = await queue_entries(store, _counter_key(strategy))
            finally:
                await store.delete_table()
        deadlines = None
        if deadline_secs is not None:
            deadlines = Deadlines(
                deadline_secs=deadline_secs,
                timed_out=report.failed["TimeoutError"],
                standstill_secs=round(longest_standstill_secs(history.calls), 3),
                max_standstill_secs=max_standstill_secs,
                entries_left=dict(Counter(owners.owner(entry) for entry in left)),
                killed=VICTIM if killed_after is not None else None,
            )
        soak = Soak(report, wall, proxy.requests, proxy.injected, killed_after, deadlines)
        results.append(soak)
        for line in _rows(soak):
            out(line)
    for line in _summary(results):
        out(line)
    return results


async def _run_workers(
    endpoint_url: str,
    table: str,
    strategy: str,
    history: History,
    *,
    processes: int,
    concurrency: int,
    count: int,
    read_timeout_secs: float,
    seed: int,
    kill_at: float,
    cancel_rate: float,
    deadline_secs: float | None = None,
) -> int | None:
    """Run the workers (``p0`` killed at ``kill_at``, then ``p0-again`` for the rest), load
    every history; returns the calls ``p0`` had completed when killed, or ``None``."""
    with tempfile.TemporaryDirectory(prefix="aioseq-soak-") as tmp:
        folder = Path(tmp)
        command = [
            sys.executable, "-m", "verification.soak", "--worker",
            "--endpoint-url", endpoint_url, "--table", table, "--strategies", strategy,
            "--concurrency", str(concurrency), "--read-timeout-secs", str(read_timeout_secs),
            "--seed", str(seed), "--cancel-rate", str(cancel_rate),
            *(("--deadline-secs", str(deadline_secs)) if deadline_secs is not None else ()),
        ]  # fmt: skip

        async def spawn(
            name: str, numbers: int | None, kill_after: int | None = None
        ) -> asyncio.subprocess.Process:
            with (folder / f"{name}.stderr").open("wb") as stderr:
                return await asyncio.create_subprocess_exec(
                    *command,
                    *("--process", name, "--history", str(folder / f"{name}.jsonl")),
                    *(("--count", str(numbers)) if numbers is not None else ()),
                    *(("--kill-after", str(kill_after)) if kill_after else ()),
                    stdin=asyncio.subprocess.PIPE,
                    stdout=asyncio.subprocess.PIPE,
                    stderr=stderr,  # a file: a chatty worker never blocks on a full pipe
                    env={**os.environ, "AWS_SDK_UA_APP_ID": name},
                    cwd=_ROOT,  # where ``-m verification.soak`` imports from
                )

        # p0 kills itself (SIGKILL: no cleanup, no flush) as soon as it has completed its
        # share, with its other tasks' calls in flight: a parent watching from outside would
        # often be too late for a fast strategy (the allocator takes thousands a second).
        # Every worker says when it is ready, its client warm (a Python process with botocore
        # takes seconds to start here, its first request hundreds of milliseconds), and the
        # workers start together; p0-again waits to be told how many numbers p0 left.
        kill_after = max(1, int(kill_at * count)) if kill_at else None
        workers: dict[str, asyncio.subprocess.Process] = {}
        killed_after: int | None = None
        try:
            for p in range(processes):
                workers[f"p{p}"] = await spawn(f"p{p}", count, kill_after if p == 0 else None)
            if kill_after is not None:
                workers[VICTIM_AGAIN] = await spawn(VICTIM_AGAIN, None)
            for worker in workers.values():  # ready (a worker that failed says nothing)
                assert worker.stdout is not None
                await worker.stdout.readline()
            for name, worker in workers.items():
                assert worker.stdin is not None
                if name != VICTIM_AGAIN:
                    worker.stdin.write(b"go\n")
                    await worker.stdin.drain()
                    worker.stdin.close()
            if kill_after is not None:
                again = workers[VICTIM_AGAIN]
                await workers[VICTIM].wait()
                left = 0
                if workers[VICTIM].returncode == -signal.SIGKILL:
                    killed_after = _lines(folder / f"{VICTIM}.jsonl")
                    history.mark_killed(VICTIM)
                    left = max(0, count - killed_after)
                assert again.stdin is not None
                again.stdin.write(f"{left}\n".encode())
                await again.stdin.drain()
                again.stdin.close()
            await asyncio.gather(*(w.wait() for w in workers.values()))
        except BaseException:  # cancelled, or a worker could not start: leave none behind
            for worker in workers.values():
                if worker.returncode is None:
                    worker.kill()
                    await worker.wait()
            raise
        for name, worker in workers.items():
            killed = name == VICTIM and killed_after is not None
            if worker.returncode != (-signal.SIGKILL if killed else 0):
                stderr = (folder / f"{name}.stderr").read_text(errors="replace")
                raise RuntimeError(
                    f"soak worker {name} exited with {worker.returncode}: {stderr[-2000:]}"
                )
            history.load(folder / f"{name}.jsonl")
    return killed_after


def _lines(log: Path) -> int:
    """Complete lines in ``log`` (a torn last one is not a call)."""
    return log.read_bytes().count(b"\n") if log.exists() else 0


async def _check(store: DynamoStore, history: History, strategy: str) -> Report:
    base, _ = parse_strategy(strategy)
    key = _counter_key(strategy)
    if strategy_named(base).writes_items:
        return history.check(strategy, key, stored=await stored_payloads(store, key))
    top = await make_taker(store, base, key).current()
    return history.check(strategy, key, top=top)


def _counter_key(strategy: str) -> str:
    return "soak-" + re.sub(r"[^A-Za-z0-9]+", "-", strategy).strip("-")


# --- under deadlines: did the counter keep moving? ------------------------------------------


def longest_standstill_secs(calls: Iterable[Call], *, join_secs: float = 0.05) -> float:
    """The longest interval in which some call was under way and none completed, across every
    process, in seconds: within each stretch covered by calls (their ``started`` to ``ended``,
    merged, and joined across pauses up to ``join_secs``: a task's own way to its next call),
    the longest distance between its start, the completions (calls that got numbers) and its
    end. Time in which nobody called (a process starting, or waiting for its share) does not
    count; calls without times are left out."""
    stretches: list[list[float]] = []  # [start, end], merged
    completions: list[float] = []
    for c in sorted(
        (c for c in calls if c.started is not None and c.ended is not None),
        key=lambda c: c.started or 0.0,
    ):
        assert c.started is not None and c.ended is not None
        if stretches and c.started <= stretches[-1][1] + join_secs:
            stretches[-1][1] = max(stretches[-1][1], c.ended)
        else:
            stretches.append([c.started, c.ended])
        if c.numbers is not None:
            completions.append(c.ended)
    completions.sort()
    longest = 0.0
    i = 0
    for start, end in stretches:
        last = start
        while i < len(completions) and completions[i] <= end:
            longest = max(longest, completions[i] - last)
            last = completions[i]
            i += 1
        longest = max(longest, end - last)
    return longest


class _QueueOwners:
    """Who enqueued each queue entry, from the requests seen on the wire (a
    :class:`~aioseq.testing.fault_proxy.FaultProxy` ``on_exchange`` callback): every string
    an ``UpdateItem`` appends to a list (``list_append``) is an entry of the process that sent
    it."""

    def __init__(self) -> None:
        self.owners: dict[str, str] = {}

    def observe(self, exchange: Exchange) -> None:
        if exchange.operation != "UpdateItem" or b"list_append" not in exchange.request:
            return
        try:
            request = json.loads(exchange.request)
        except ValueError:
            return
        for value in request.get("ExpressionAttributeValues", {}).values():
            for element in value.get("L", []) if isinstance(value, dict) else ():
                if isinstance(element, dict) and "S" in element:
                    # A delayed enqueue reaches DynamoDB after its sender gave up on it, and
                    # maybe after that sender closed: nothing it could remove then.
                    late = exchange.fault == "delay"
                    owner = f"{exchange.client}{LATE if late else ''}"
                    self.owners.setdefault(element["S"], owner)

    def owner(self, entry: str) -> str:
        """The process that enqueued ``entry``, or ``"?"``."""
        return self.owners.get(entry) or "?"


# --- one worker process ---------------------------------------------------------------------


async def _worker(args: argparse.Namespace) -> None:
    strategy = args.strategies
    base, group = parse_strategy(strategy)
    key = _counter_key(strategy)
    history = History(log=Path(args.history))
    rng = random.Random(f"{args.seed}/{args.process}")
    async with DynamoStore.open(
        table=args.table, endpoint_url=args.endpoint_url, read_timeout_secs=args.read_timeout_secs
    ) as store:
        taker = make_taker(store, base, key, group=group)
        # Warm the client (a read: its first request loads botocore's models), say so, and
        # wait to be told to start, or how many numbers to take (see _run_workers).
        with contextlib.suppress(AioseqError):
            await taker.current()
        print("ready", flush=True)
        line = await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
        if args.count is None:
            args.count = int(line or 0)
        remaining = args.count

        def put(payload: str) -> Awaitable[int]:
            if args.deadline_secs is None:
                return taker.put(payload)
            # As a service calls: past its deadline, wait_for cancels it, raises TimeoutError.
            return asyncio.wait_for(taker.put(payload), args.deadline_secs)

        async def task(i: int) -> None:
            nonlocal remaining
            seq = 0
            while remaining > 0:
                remaining -= 1
                seq += 1
                payload = f"{args.process}/{i}/{seq}"
                call = history.take(
                    functools.partial(put, payload),
                    strategy=strategy, counter=key, process=args.process, task=i, payload=payload,
                )  # fmt: skip
                # A failed, cancelled or timed-out call is recorded as such.
                with contextlib.suppress(AioseqError, asyncio.TimeoutError):
                    if rng.random() < args.cancel_rate:
                        await asyncio.wait_for(call, rng.uniform(0.001, CANCEL_WITHIN_SECS))
                    else:
                        await call
                if args.kill_after is not None and len(history.calls) >= args.kill_after:
                    os.kill(os.getpid(), signal.SIGKILL)  # mid-run: other calls are in flight

        try:
            await asyncio.gather(*(task(i) for i in range(min(args.concurrency, remaining))))
        finally:
            if taker.aclose is not None:
                await taker.aclose()
            history.close()


# --- the command ----------------------------------------------------------------------------


def _fault_rates(text: str) -> dict[str, float]:
    """``"response-lost=0.05,reset=0.01"`` -> rates by kind."""
    rates: dict[str, float] = {}
    for pair in filter(None, (p.strip() for p in text.split(","))):
        kind, sep, rate = pair.partition("=")
        try:
            rates[kind.strip()] = float(rate)
        except ValueError:
            sep = ""
        if not sep:
            raise argparse.ArgumentTypeError(f"not KIND=RATE: {pair!r}")
    return rates


def main(argv: Sequence[str] | None = None) -> int:
    """The command; see the module doc. Exit status 0 if every guarantee held, else 1."""
    parser = argparse.ArgumentParser(
        prog="python -m verification.soak",
        description="Every strategy under injected faults and a killed process, every number "
        "and every stored item checked.",
    )
    where = parser.add_mutually_exclusive_group()
    where.add_argument(
        "--server", choices=("moto", "dynamodb-local"), default="moto", help="start this (moto)"
    )
    where.add_argument("--endpoint-url", metavar="URL", help="use a running server instead")
    parser.add_argument("--processes", type=int, default=4, help="worker processes (4)")
    parser.add_argument("--concurrency", type=int, default=200, help="tasks per process (200)")
    parser.add_argument(
        "--count",
        type=int,
        default=argparse.SUPPRESS,
        help="numbers per process (20000)",
    )
    schedule = parser.add_mutually_exclusive_group()
    default_faults = ",".join(f"{k}={r:g}" for k, r in DEFAULT_FAULTS.items())
    schedule.add_argument(
        "--faults",
        type=_fault_rates,
        default=None,
        metavar="KIND=RATE,...",
        help=f"the fault schedule, a rate per kind (default: {default_faults})",
    )
    schedule.add_argument(
        "--fault-rate",
        type=float,
        default=None,
        metavar="R",
        help="instead: this share of requests, split equally between every kind",
    )
    parser.add_argument("--seed", type=int, default=1, help="the fault schedule's seed (1)")
    parser.add_argument(
        "--kill-at",
        type=float,
        default=0.5,
        metavar="SHARE",
        help="SIGKILL process p0 once it completed this share of its calls, then start "
        "p0-again for the rest (0.5; 0: kill nobody)",
    )
    parser.add_argument(
        "--cancel-rate",
        type=float,
        default=0.01,
        metavar="SHARE",
        help=f"cancel this share of the calls mid-way, after up to {CANCEL_WITHIN_SECS * 1000:g} "
        "ms (0.01)",
    )
    parser.add_argument(
        "--strategies",
        default=",".join(DEFAULT_STRATEGIES),
        help="comma-separated, each with the library's defaults (grouped where it can be); "
        "STRATEGY+no-group (or 'STRATEGY --no-group') without group commit "
        f"(default: {','.join(DEFAULT_STRATEGIES)})",
    )
    parser.add_argument(
        "--read-timeout-secs",
        type=float,
        default=5.0,
        help="the workers' read timeout; delay faults hold 0.5 s longer (5)",
    )
    parser.add_argument(
        "--deadline-secs",
        type=float,
        default=None,
        metavar="D",
        help="wrap every call in asyncio.wait_for(..., D), as services do, and check that each "
        "counter kept moving: the longest standstill, the queue entries left after close "
        "(default: no deadline)",
    )
    parser.add_argument(
        "--max-standstill-secs",
        type=float,
        default=None,
        metavar="S",
        help=f"under --deadline-secs, fail if no call completed for longer than this while "
        f"callers waited ({MAX_STANDSTILL_SECS:g}, plus the read timeout with delay faults)",
    )
    parser.add_argument(
        "--out",
        type=Path,
        metavar="DIR",
        help="also write the report to DIR/soak.json (DIR/soak-deadlines.json under "
        "--deadline-secs): the run's parameters, date, machine and versions, and each "
        "strategy's figures (verification.soak_report.transcript prints it again)",
    )
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--table", help=argparse.SUPPRESS)
    parser.add_argument("--process", help=argparse.SUPPRESS)
    parser.add_argument("--history", help=argparse.SUPPRESS)
    parser.add_argument("--kill-after", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        args.count = getattr(args, "count", None)  # a worker without one reads it from stdin
        asyncio.run(_worker(args))
        return 0
    args.count = getattr(args, "count", 20_000)
    strategies = [s.strip() for s in args.strategies.split(",") if s.strip()]
    if args.fault_rate is not None:
        faults: Mapping[str, float] = {k: args.fault_rate / len(KINDS) for k in KINDS}
    else:
        faults = args.faults if args.faults is not None else DEFAULT_FAULTS
    try:
        for name in strategies:
            parse_strategy(name)
        FaultSchedule(faults)
    except ValueError as exc:  # ConfigurationError too
        parser.error(str(exc))
    if args.max_standstill_secs is not None and args.deadline_secs is None:
        parser.error("--max-standstill-secs needs --deadline-secs")

    parameters: dict[str, Any] = {
        "strategies": strategies,
        "processes": args.processes,
        "concurrency": args.concurrency,
        "count": args.count,
        "faults": dict(faults),
        "seed": args.seed,
        "read_timeout_secs": args.read_timeout_secs,
        "kill_at": args.kill_at,
        "cancel_rate": args.cancel_rate,
    }
    if args.deadline_secs is not None:
        parameters["deadline_secs"] = args.deadline_secs
        parameters["max_standstill_secs"] = args.max_standstill_secs or default_max_standstill_secs(
            faults, args.read_timeout_secs
        )
    command = "python -m verification.soak " + " ".join(sys.argv[1:] if argv is None else argv)
    started = time.perf_counter()
    try:
        with server(args.server, args.endpoint_url) as (endpoint_url, description):
            document = {
                "benchmark": "soak",
                **header(endpoint_url),
                "server": description,
                "command": command.strip(),
                "parameters": parameters,
            }
            results = asyncio.run(
                run_soak(endpoint_url, **parameters, out=lambda line: print(line, flush=True))
            )
    except ValueError as exc:
        parser.error(str(exc))
    document["results"] = [soak.to_json() for soak in results]
    document["ok"] = all(s.ok for s in results)
    document["wall_secs"] = round(time.perf_counter() - started, 1)
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
        saved = args.out / ("soak.json" if args.deadline_secs is None else "soak-deadlines.json")
        saved.write_text(json.dumps(document, indent=2) + "\n")
        print(f"wrote {saved}")
    return 0 if document["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
