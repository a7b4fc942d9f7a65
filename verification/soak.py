"""The soak: every strategy, several processes, many tasks, injected faults, a process killed,
every number and every stored item checked.

::

    python -m verification.soak [--server moto|dynamodb-local | --endpoint-url URL]
        [--processes 4] [--concurrency 200] [--count 20000] [--seed 1]
        [--faults KIND=RATE,... | --fault-rate R] [--kill-at 0.5] [--cancel-rate 0.01]
        [--strategies atomic,allocator,optimistic,sort-key,transactional]
        [--read-timeout-secs 5] [--out DIR]

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

Each worker appends every call to its own history file as it completes (its times, its
numbers or its error, and its payload: the item-writing strategies store ``<process>/<task>/
<seq>`` with each item), so the killed process leaves its completed calls behind; the proxy
logs every write the server applied and whether its answer got through. Then the histories,
the counter item and the stored items (number -> payload) are checked against the strategy's
guarantees by :class:`~verification.history.History`, and a row per strategy is printed
(numbers checked, requests, faults, failed calls, duplicates, items stored twice, holes, order
violations) with the faults injected by kind and the gaps or unacknowledged items by cause
below it. Exit status 1 if any guarantee was broken. ``--out DIR`` also writes the report to
``DIR/soak.json`` (the parameters, date, machine, versions, and each strategy's
:class:`~verification.soak_report.Soak`), which
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
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from aioseq._store import DynamoStore
from aioseq._workload import (
    GAPLESS_STRATEGIES,
    GROUPED_STRATEGIES,
    STRATEGIES,
    make_taker,
    stored_payloads,
)
from aioseq.config import TableSpec
from aioseq.errors import AioseqError
from aioseq.testing.fault_proxy import KINDS, FaultProxy, FaultSchedule
from benchmarks._report import header
from benchmarks.row import server
from verification.history import History, Report
from verification.soak_report import VICTIM, VICTIM_AGAIN, _rows, _summary, intro
from verification.soak_report import Soak as Soak
from verification.soak_report import describe_faults as describe_faults

__all__ = [
    "DEFAULT_FAULTS",
    "DEFAULT_STRATEGIES",
    "Soak",
    "describe_faults",
    "main",
    "parse_strategy",
    "run_soak",
]

DEFAULT_STRATEGIES = ("atomic", "allocator", "optimistic", "sort-key", "transactional")

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
    if base not in STRATEGIES or mode not in modes:
        raise ValueError(
            f"unknown strategy {name!r}; choose from {', '.join(STRATEGIES)}, or "
            f"STRATEGY+no-group for {', '.join(sorted(GROUPED_STRATEGIES))} without group commit"
        )
    if mode and base not in GROUPED_STRATEGIES:
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
    FaultSchedule(faults)  # validates
    parameters = {
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
        async with DynamoStore.open(table=table, endpoint_url=endpoint_url) as store:
            await store.create_table()
            try:
                with FaultProxy(endpoint_url, schedule, on_exchange=history.observe) as proxy:
                    started = time.perf_counter()
                    killed_after = await _run_workers(
                        proxy.endpoint_url, table.name, strategy, history,
                        processes=processes, concurrency=concurrency, count=count,
                        read_timeout_secs=read_timeout_secs, seed=seed, kill_at=kill_at,
                        cancel_rate=cancel_rate,
                    )  # fmt: skip
                    wall = time.perf_counter() - started
                report = await _check(store, history, strategy)
            finally:
                await store.delete_table()
        soak = Soak(report, wall, proxy.requests, proxy.injected, killed_after)
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
                    stdin=asyncio.subprocess.PIPE
                    if numbers is None
                    else asyncio.subprocess.DEVNULL,
                    stdout=asyncio.subprocess.DEVNULL,
                    stderr=stderr,  # a file: a chatty worker never blocks on a full pipe
                    env={**os.environ, "AWS_SDK_UA_APP_ID": name},
                    cwd=_ROOT,  # where ``-m verification.soak`` imports from
                )

        # p0 kills itself (SIGKILL: no cleanup, no flush) as soon as it has completed its
        # share, with its other tasks' calls in flight: a parent watching from outside would
        # often be too late for a fast strategy (the allocator takes thousands a second).
        # p0-again starts with the others and waits, its client ready, to be told how many
        # numbers p0 left (a Python process with botocore takes seconds to start here).
        kill_after = max(1, int(kill_at * count)) if kill_at else None
        workers: dict[str, asyncio.subprocess.Process] = {}
        killed_after: int | None = None
        try:
            for p in range(processes):
                workers[f"p{p}"] = await spawn(f"p{p}", count, kill_after if p == 0 else None)
            if kill_after is not None:
                again = workers[VICTIM_AGAIN] = await spawn(VICTIM_AGAIN, None)
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
    if base in GAPLESS_STRATEGIES:
        return history.check(strategy, key, stored=await stored_payloads(store, key))
    top = await make_taker(store, base, key).current()
    return history.check(strategy, key, top=top)


def _counter_key(strategy: str) -> str:
    return "soak-" + re.sub(r"[^A-Za-z0-9]+", "-", strategy).strip("-")


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
        if args.count is None:  # ready: now wait to be told how many (see _run_workers)
            line = await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
            args.count = int(line or 0)
        remaining = args.count

        async def task(i: int) -> None:
            nonlocal remaining
            seq = 0
            while remaining > 0:
                remaining -= 1
                seq += 1
                payload = f"{args.process}/{i}/{seq}"
                call = history.take(
                    functools.partial(taker.put, payload),
                    strategy=strategy, counter=key, process=args.process, task=i, payload=payload,
                )  # fmt: skip
                # A failed or cancelled call is recorded as such.
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
        "--out",
        type=Path,
        metavar="DIR",
        help="also write the report to DIR/soak.json: the run's parameters, date, machine and "
        "versions, and each strategy's figures (verification.soak_report.transcript prints it "
        "again)",
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
    document["ok"] = all(s.report.ok for s in results)
    document["wall_secs"] = round(time.perf_counter() - started, 1)
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "soak.json").write_text(json.dumps(document, indent=2) + "\n")
        print(f"wrote {args.out / 'soak.json'}")
    return 0 if document["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
