"""Crash tests: ``aioseq next`` processes sharing one counter, one of them killed with SIGKILL
mid-run and started again, through the fault proxy; every number printed and every item
stored is then checked, and every number lost is accounted for."""

from __future__ import annotations

import asyncio
import os
import signal
import sys

import pytest

from aioseq import DynamoStore
from aioseq.testing.fault_proxy import KINDS, FaultProxy, FaultSchedule
from aioseq.testing.history import History
from aioseq.workload import GAPLESS_STRATEGIES, STRATEGIES, make_taker, stored_numbers

VARIANTS = [(s, False) for s in STRATEGIES] + [
    (s, True) for s in ("optimistic", "sort-key", "transactional")
]

#: ``aioseq next`` waits 10 s for an answer: no ``delay`` faults here (test_faults has them).
SCHEDULE = FaultSchedule.uniform(0.05, seed=3, kinds=[k for k in KINDS if k != "delay"])


async def start(endpoint: str, table: str, strategy: str, group: bool, process: str, count: int):  # type: ignore[no-untyped-def]
    return await asyncio.create_subprocess_exec(
        sys.executable, "-m", "aioseq", "--endpoint-url", endpoint, "--table", table,
        "next", "shared", "--strategy", strategy, "--count", str(count), "--concurrency", "8",
        *(["--group"] if group else []),
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={**os.environ, "AWS_SDK_UA_APP_ID": process},
    )  # fmt: skip


@pytest.mark.parametrize(("strategy", "group"), VARIANTS)
async def test_a_process_killed_mid_run_costs_no_duplicate_and_no_hole(
    aioseq_store: DynamoStore, aioseq_endpoint: str, strategy: str, group: bool
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

    if strategy in GAPLESS_STRATEGIES:
        report = history.check(
            strategy, "shared", stored=await stored_numbers(aioseq_store, "shared")
        )
    else:
        top = await make_taker(aioseq_store, strategy, "shared").current()
        report = history.check(strategy, "shared", top=top)
    assert report.ok, report.problems
    assert report.numbers >= 3 * count + 10
    assert report.duplicates == 0 and report.holes == 0
    assert set(report.gaps) | set(report.unacknowledged) <= {
        "killed process",
        "answer lost",
        "answer lost: client gone",
        "block not handed out",
    }
