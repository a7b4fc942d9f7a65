"""Crash and lossy-network tests of ``aioseq next`` processes sharing one counter, through the
fault proxy: one process killed with SIGKILL mid-run and started again; then answers lost on
the way back. Every number printed and every item stored (with the payload of the call that
stored it) is then checked, and every number lost is accounted for."""

from __future__ import annotations

import asyncio
import os
import signal
import sys

import pytest

from aioseq import DynamoStore
from aioseq._strategy_table import STRATEGIES, STRATEGY_NAMES, strategy_named
from aioseq._workload import make_taker, stored_payloads, stored_twice
from aioseq.testing.fault_proxy import KINDS, FaultProxy, FaultSchedule
from verification.causes import DOCUMENTED_CAUSES
from verification.history import History

#: Each strategy with its defaults (``None``: grouped where it can be), and ungrouped.
VARIANTS = [(s, None) for s in STRATEGY_NAMES] + [(s.name, False) for s in STRATEGIES if s.grouped]

#: ``aioseq next`` waits 10 s for an answer: no ``delay`` faults here (test_faults has them).
SCHEDULE = FaultSchedule.uniform(0.05, seed=3, kinds=[k for k in KINDS if k != "delay"])


async def start(  # type: ignore[no-untyped-def]
    endpoint: str,
    table: str,
    strategy: str,
    group: bool | None,
    process: str,
    count: int,
    concurrency: int = 8,
):
    """``aioseq next shared --strategy STRATEGY ...`` as ``process`` (its ``app/`` id)."""
    return await asyncio.create_subprocess_exec(
        sys.executable, "-m", "aioseq", "--endpoint-url", endpoint, "--table", table,
        "next", "shared", "--strategy", strategy,
        "--count", str(count), "--concurrency", str(concurrency),
        *({None: [], True: ["--group"], False: ["--no-group"]}[group]),
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={**os.environ, "AWS_SDK_UA_APP_ID": process},
    )  # fmt: skip


def variant(strategy: str, group: bool | None) -> str:
    return strategy if group is None else f"{strategy}+{'group' if group else 'no-group'}"


@pytest.mark.slow
@pytest.mark.only_on("dynamodb-local")  # a crash is the client's: tried where requests run at once
@pytest.mark.parametrize(("strategy", "group"), VARIANTS, ids=[variant(*v) for v in VARIANTS])
async def test_a_process_killed_mid_run_costs_no_duplicate_and_no_hole(
    aioseq_store: DynamoStore, aioseq_endpoint: str, strategy: str, group: bool | None
) -> None:
    history = History()
    table = aioseq_store.table.name
    count = 40
    with FaultProxy(aioseq_endpoint, SCHEDULE, on_exchange=history.observe) as proxy:
        others = {
            name: await start(proxy.endpoint_url, table, strategy, group, name, count)
            for name in ("p1", "p2")
        }
        victim = await start(proxy.endpoint_url, table, strategy, group, "p0", 10 * count)
        assert victim.stdout is not None
        printed = b"".join([await victim.stdout.readline() for _ in range(10)])
        victim.send_signal(signal.SIGKILL)
        printed += await victim.stdout.read()
        assert await victim.wait() == -signal.SIGKILL
        history.mark_killed("p0")
        history.add_printed(strategy, "shared", "p0", printed.decode())
        others["p0-again"] = await start(
            proxy.endpoint_url, table, strategy, group, "p0-again", count
        )
        for name, process in others.items():
            stdout, stderr = await process.communicate()
            assert process.returncode == 0, stderr.decode()
            history.add_printed(strategy, "shared", name, stdout.decode())
        assert sum(proxy.injected.values()) > 0

    if strategy_named(strategy).writes_items:
        stored = await stored_payloads(aioseq_store, "shared")
        report = history.check(strategy, "shared", stored=stored)
    else:
        top = await make_taker(aioseq_store, strategy, "shared").current()
        report = history.check(strategy, "shared", top=top)
    assert report.ok, report.problems
    assert report.numbers >= 3 * count + 10
    assert report.duplicates == report.holes == report.stored_twice == 0
    assert set(report.gaps) | set(report.unacknowledged) <= DOCUMENTED_CAUSES[strategy]


#: Answers lost after the server applied the request (8%), and some 500s, resets and
#: throttling; no ``delay`` (``aioseq next`` waits 10 s).
LOSSY = FaultSchedule(
    {"response-lost": 0.08, "internal-error": 0.01, "reset": 0.01, "throttling": 0.01}, seed=11
)


@pytest.mark.slow
@pytest.mark.only_on("dynamodb-local")  # a crash is the client's: tried where requests run at once
@pytest.mark.parametrize("strategy", ["optimistic", "sort-key", "transactional"])
async def test_three_processes_through_a_lossy_network_number_exactly_once(
    aioseq_store: DynamoStore, aioseq_endpoint: str, strategy: str
) -> None:
    """Default options (grouped), 30 tasks each: the printed numbers are exactly 1..N; for the
    item-writing strategies the table holds exactly one item per printed number, each with
    its own call's payload (never one payload under two numbers)."""
    history = History()
    table = aioseq_store.table.name
    count = 200
    with FaultProxy(aioseq_endpoint, LOSSY, on_exchange=history.observe) as proxy:
        processes = {
            name: await start(proxy.endpoint_url, table, strategy, None, name, count, 30)
            for name in ("p1", "p2", "p3")
        }
        for name, process in processes.items():
            stdout, stderr = await process.communicate()
            assert process.returncode == 0, stderr.decode()
            history.add_printed(strategy, "shared", name, stdout.decode())
        lost = proxy.injected["response-lost"]
    assert lost > 0, "no answer was lost: the test proved nothing"

    printed = sorted(n for c in history.calls if c.numbers is not None for n in c.numbers)
    missing = sorted(set(range(1, max(printed, default=0) + 1)) - set(printed))
    if strategy_named(strategy).gapless:
        stored = await stored_payloads(aioseq_store, "shared")
        report = history.check(strategy, "shared", stored=stored)
        extra = sorted(set(stored) - set(printed))
        assert printed == list(range(1, 3 * count + 1)), (
            f"{lost} answers lost; printed numbers missing: {missing[:20]}; {report.problems}"
        )
        assert sorted(stored) == printed, f"{len(extra)} items nobody was handed: {extra[:20]}"
        assert stored_twice(stored) == 0
        assert len(set(stored.values())) == len(stored) and None not in stored.values()
    else:
        top = await make_taker(aioseq_store, strategy, "shared").current()
        report = history.check(strategy, "shared", top=top)
        assert (missing, top) == ([], 3 * count), (
            f"{lost} answers lost; holes among the printed numbers: {missing[:20]} "
            f"({len(missing)}), counter at {top}; {report.problems}"
        )
    assert report.ok, report.problems
    assert report.numbers == 3 * count and report.duplicates == 0
