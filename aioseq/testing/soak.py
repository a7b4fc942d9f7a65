"""The soak: every strategy, several processes, many tasks, injected faults, every number checked.

::

    python -m aioseq.testing.soak [--server moto|dynamodb-local | --endpoint-url URL]
        [--processes 4] [--concurrency 200] [--count 20000] [--fault-rate 0.05] [--seed 1]
        [--strategies atomic,allocator,optimistic+group,sort-key+group,transactional+group]
        [--read-timeout-secs 5]

For each strategy, ``--processes`` worker processes each take ``--count`` numbers from one
shared counter with ``--concurrency`` tasks (one counter object per process), through a
:class:`~aioseq.testing.fault_proxy.FaultProxy` that injects ``--fault-rate`` of faults, shared
equally by every kind (throttling, 500s, transaction conflicts, resets, delays past the
client's read timeout, answers lost after the server applied the request). Each worker
records every call in a :class:`~aioseq.testing.history.History` (with its times and whether
it succeeded); the proxy logs every write the server applied and whether its answer got
through. Then the histories, the counter item and the stored items are checked against the
strategy's guarantees, and one row per strategy is printed: numbers checked, faults injected
by kind, duplicates, holes where gapless is promised, order violations, gaps by cause. Exit
status 1 if any guarantee was broken.

``strategy+group`` runs the strategy with group commit. The ungrouped conditional strategies
(``optimistic``, ``sort-key``, ``transactional``) serve one caller per round trip per process,
which makes the full size (4 x 20,000 numbers) take tens of minutes on DynamoDB Local; their
grouped modes serve every waiting caller per round trip. moto copies the whole table on every
transaction, so sort-key and transactional slow down as the table grows (each strategy gets
its own table here): run it smaller there (``--count 2000``).

DynamoDB Local listens on every interface: ``--server dynamodb-local`` starts it, so run the
soak inside ``scripts/in-loopback-netns``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import sys
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from aioseq._store import DynamoStore
from aioseq.config import TableSpec
from aioseq.errors import AioseqError
from aioseq.testing._server import serving
from aioseq.testing.fault_proxy import KINDS, FaultProxy, FaultSchedule
from aioseq.testing.history import History, Report
from aioseq.workload import GAPLESS_STRATEGIES, STRATEGIES, make_taker, stored_numbers

__all__ = ["DEFAULT_STRATEGIES", "Soak", "main", "run_soak"]

DEFAULT_STRATEGIES = (
    "atomic",
    "allocator",
    "optimistic+group",
    "sort-key+group",
    "transactional+group",
)


@dataclass(frozen=True)
class Soak:
    """One strategy's soak.

    Attributes:
        report: the checker's :class:`~aioseq.testing.history.Report`.
        wall_secs: from the workers' start to their end, in seconds.
        requests: requests the proxy received.
        injected: faults injected, by kind.
    """

    report: Report
    wall_secs: float
    requests: int
    injected: Counter[str]


async def run_soak(
    endpoint_url: str,
    *,
    strategies: Sequence[str] = DEFAULT_STRATEGIES,
    processes: int = 4,
    concurrency: int = 200,
    count: int = 20_000,
    fault_rate: float = 0.05,
    seed: int = 1,
    read_timeout_secs: float = 5.0,
    out: Callable[[str], None] = print,
) -> list[Soak]:
    """Soak each of ``strategies`` against the server at ``endpoint_url`` (see the module doc)
    and print a row for each with ``out``.

    Each strategy gets its own table (created, then deleted) and its own proxy; delays hold a
    request ``read_timeout_secs + 0.5`` seconds.

    Returns:
        one :class:`Soak` per strategy, in order.

    Raises:
        ValueError: an unknown strategy.
        RuntimeError: a worker process failed (its stderr is in the message).
    """
    for name in strategies:
        if name.split("+", 1)[0] not in STRATEGIES or name.partition("+")[2] not in ("", "group"):
            raise ValueError(f"unknown strategy {name!r}; choose from {', '.join(STRATEGIES)}")
    out(
        f"soak: {len(strategies)} strategies x {processes} processes x {concurrency} tasks x "
        f"{count} numbers, {fault_rate:.1%} faults (seed {seed}), via a fault proxy to "
        f"{endpoint_url}"
    )
    out(_header())
    results: list[Soak] = []
    for i, strategy in enumerate(strategies):
        table = TableSpec(name=f"aioseq-soak-{uuid.uuid4().hex[:8]}")
        history = History(table)
        schedule = FaultSchedule.uniform(
            fault_rate, seed=seed + i, delay_secs=read_timeout_secs + 0.5
        )
        async with DynamoStore.open(table=table, endpoint_url=endpoint_url) as store:
            await store.create_table()
            try:
                with FaultProxy(endpoint_url, schedule, on_exchange=history.observe) as proxy:
                    started = time.perf_counter()
                    await _run_workers(
                        proxy.endpoint_url, table.name, strategy, history,
                        processes=processes, concurrency=concurrency, count=count,
                        read_timeout_secs=read_timeout_secs,
                    )  # fmt: skip
                    wall = time.perf_counter() - started
                report = await _check(store, history, strategy)
            finally:
                await store.delete_table()
        soak = Soak(report, wall, proxy.requests, proxy.injected)
        results.append(soak)
        out(_row(soak))
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
) -> None:
    with tempfile.TemporaryDirectory(prefix="aioseq-soak-") as tmp:
        files = [Path(tmp) / f"p{p}.jsonl" for p in range(processes)]
        command = [
            sys.executable, "-m", "aioseq.testing.soak", "--worker",
            "--endpoint-url", endpoint_url, "--table", table, "--strategies", strategy,
            "--count", str(count), "--concurrency", str(concurrency),
            "--read-timeout-secs", str(read_timeout_secs),
        ]  # fmt: skip
        workers = [
            await asyncio.create_subprocess_exec(
                *command,
                *("--process", f"p{p}", "--history", str(files[p])),
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.DEVNULL,
                stderr=asyncio.subprocess.PIPE,
                env={**os.environ, "AWS_SDK_UA_APP_ID": f"p{p}"},
            )
            for p in range(processes)
        ]
        errors = await asyncio.gather(*(w.communicate() for w in workers))
        for p, (worker, (_, stderr)) in enumerate(zip(workers, errors, strict=True)):
            if worker.returncode != 0:
                raise RuntimeError(f"soak worker p{p} failed: {stderr.decode()[-2000:]}")
            history.load(files[p])


async def _check(store: DynamoStore, history: History, strategy: str) -> Report:
    base = strategy.split("+", 1)[0]
    key = _counter_key(strategy)
    if base in GAPLESS_STRATEGIES:
        return history.check(strategy, key, stored=await stored_numbers(store, key))
    top = await make_taker(store, base, key).current()
    return history.check(strategy, key, top=top)


def _counter_key(strategy: str) -> str:
    return "soak-" + strategy.replace("+", "-")


# --- the report -----------------------------------------------------------------------------

_COLUMNS = (
    ("strategy", 20),
    ("numbers", 7),
    ("wall s", 6),
    ("requests", 8),
    ("faults", 6),
    ("fault %", 7),
    ("failed", 6),
    ("dupl.", 5),
    ("holes", 5),
    ("order", 5),
    ("gaps by cause", 0),
)


def _header() -> str:
    names = [f"{n:<{w}}" if i == 0 else f"{n:>{w}}" for i, (n, w) in enumerate(_COLUMNS[:-1])]
    return "  ".join([*names, _COLUMNS[-1][0]]) + "  check"


def _causes(counts: Counter[str]) -> str:
    return ", ".join(f"{cause} {n}" for cause, n in counts.most_common()) or "-"


def _row(soak: Soak) -> str:
    r = soak.report
    faults = sum(soak.injected.values())
    cells = [
        r.strategy,
        r.numbers,
        f"{soak.wall_secs:.1f}",
        soak.requests,
        faults,
        f"{faults / max(soak.requests, 1):.1%}",
        sum(r.failed.values()),
        r.duplicates,
        r.holes,
        r.order_violations,
    ]
    texts = [
        f"{c:<{w}}" if i == 0 else f"{c:>{w}}"
        for i, (c, (_, w)) in enumerate(zip(cells, _COLUMNS, strict=False))
    ]
    gaps = _causes(r.gaps)
    if r.stored is not None:
        gaps = f"none (stored {r.stored}; unacknowledged: {_causes(r.unacknowledged)})"
    check = "ok" if r.ok else "FAILED: " + "; ".join(r.problems)
    return "  ".join([*texts, gaps]) + "  " + check


def _summary(results: list[Soak]) -> list[str]:
    injected: Counter[str] = Counter()
    gaps: Counter[str] = Counter()
    failed: Counter[str] = Counter()
    for s in results:
        injected.update(s.injected)
        failed.update(s.report.failed)
        gaps.update(s.report.gaps)
        gaps.update({f"unacknowledged item: {k}": n for k, n in s.report.unacknowledged.items()})
    requests = sum(s.requests for s in results)
    lines = [
        f"numbers checked: {sum(s.report.numbers for s in results)}",
        f"requests: {requests}; faults injected: {sum(injected.values())} "
        f"({sum(injected.values()) / max(requests, 1):.2%}): "
        + ", ".join(f"{k} {injected[k]}" for k in KINDS),
        f"duplicates: {sum(s.report.duplicates for s in results)}",
        f"holes where gapless is promised: {sum(s.report.holes for s in results)}",
        f"order violations: {sum(s.report.order_violations for s in results)}",
        f"failed calls: {sum(failed.values())} ({_causes(failed)})",
        f"gaps by cause: {_causes(gaps)}",
        "all guarantees held"
        if all(s.report.ok for s in results)
        else "FAILED: " + ", ".join(s.report.strategy for s in results if not s.report.ok),
    ]
    return lines


# --- one worker process ---------------------------------------------------------------------


async def _worker(args: argparse.Namespace) -> None:
    strategy = args.strategies
    base, _, mode = strategy.partition("+")
    key = _counter_key(strategy)
    history = History()
    async with DynamoStore.open(
        table=args.table, endpoint_url=args.endpoint_url, read_timeout_secs=args.read_timeout_secs
    ) as store:
        taker = make_taker(store, base, key, group=mode == "group")
        remaining = args.count

        async def task(i: int) -> None:
            nonlocal remaining
            while remaining > 0:
                remaining -= 1
                with contextlib.suppress(AioseqError):  # recorded as a failed call
                    await history.take(
                        taker.take, strategy=strategy, counter=key, process=args.process, task=i
                    )

        try:
            await asyncio.gather(*(task(i) for i in range(min(args.concurrency, args.count))))
        finally:
            if taker.aclose is not None:
                await taker.aclose()
    history.dump(Path(args.history))


# --- the command ----------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    """The command; see the module doc. Exit status 0 if every guarantee held, else 1."""
    parser = argparse.ArgumentParser(
        prog="python -m aioseq.testing.soak",
        description="Every strategy under injected faults, every number checked.",
    )
    where = parser.add_mutually_exclusive_group()
    where.add_argument(
        "--server", choices=("moto", "dynamodb-local"), default="moto", help="start this (moto)"
    )
    where.add_argument("--endpoint-url", metavar="URL", help="use a running server instead")
    parser.add_argument("--processes", type=int, default=4, help="worker processes (4)")
    parser.add_argument("--concurrency", type=int, default=200, help="tasks per process (200)")
    parser.add_argument("--count", type=int, default=20_000, help="numbers per process (20000)")
    parser.add_argument("--fault-rate", type=float, default=0.05, help="share of requests (0.05)")
    parser.add_argument("--seed", type=int, default=1, help="the fault schedule's seed (1)")
    parser.add_argument(
        "--strategies",
        default=",".join(DEFAULT_STRATEGIES),
        help="comma-separated; STRATEGY+group for group commit "
        f"(default: {','.join(DEFAULT_STRATEGIES)})",
    )
    parser.add_argument(
        "--read-timeout-secs",
        type=float,
        default=5.0,
        help="the workers' read timeout; delay faults hold 0.5 s longer (5)",
    )
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--table", help=argparse.SUPPRESS)
    parser.add_argument("--process", help=argparse.SUPPRESS)
    parser.add_argument("--history", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        asyncio.run(_worker(args))
        return 0
    strategies = [s for s in args.strategies.split(",") if s]

    def soak(endpoint_url: str) -> list[Soak]:
        return asyncio.run(
            run_soak(
                endpoint_url,
                strategies=strategies,
                processes=args.processes,
                concurrency=args.concurrency,
                count=args.count,
                fault_rate=args.fault_rate,
                seed=args.seed,
                read_timeout_secs=args.read_timeout_secs,
                out=lambda line: print(line, flush=True),
            )
        )

    try:
        with serving(args.server, args.endpoint_url) as endpoint_url:
            results = soak(endpoint_url)
    except ValueError as exc:
        parser.error(str(exc))
    return 0 if all(s.report.ok for s in results) else 1


if __name__ == "__main__":
    sys.exit(main())
