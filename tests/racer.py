"""One process of a race between processes, run by the tests as ``python tests/racer.py``: what
``aioseq next KEY`` does, for several counters in one Python start-up (about a second of CPU
each here, which a test starting four processes per strategy paid dozens of times).

    python tests/racer.py ENDPOINT TABLE COUNT CONCURRENCY KEY=VARIANT [KEY=VARIANT ...]

VARIANT is a strategy of ``aioseq next`` (``atomic``, ``sort-key``, ...), optionally with
``+group`` or ``+no-group``. The keys run one after the other. For each ``KEY=VARIANT`` the
racer opens a store as ``aioseq next`` does (``DynamoStore.open`` with the endpoint and the
table), prints ``ready KEY`` and waits for a line on stdin, so that a test starts every
process's race on KEY together (an event, not a sleep); then it takes COUNT numbers from
counter KEY with CONCURRENCY tasks through ``aioseq._workload.run_workload``, the function
``aioseq next`` runs, printing ``KEY N`` on stdout for each number as soon as it is taken.

Exits 0 when every number was taken; 1 with the error on stderr otherwise.
"""

from __future__ import annotations

import asyncio
import sys
from collections import defaultdict
from collections.abc import Sequence

from aioseq import DynamoStore, TableSpec
from aioseq._workload import run_workload

GROUP = {"": None, "+group": True, "+no-group": False}


def parse_variant(variant: str) -> tuple[str, bool | None]:
    """``"sort-key+no-group"`` -> ``("sort-key", False)``; ``"atomic"`` -> ``("atomic", None)``."""
    strategy, plus, group = variant.partition("+")
    return strategy, GROUP[plus + group]


def printed_by_key(stdout: str) -> dict[str, str]:
    """A racer's output, as ``aioseq next`` would have printed it for each key (one number a
    line); ``ready`` lines and a torn last line are left out."""
    lines: dict[str, list[str]] = defaultdict(list)
    for line in stdout.split("\n")[:-1]:
        key, _, number = line.partition(" ")
        if key != "ready":
            lines[key].append(number + "\n")
    return {key: "".join(numbers) for key, numbers in lines.items()}


async def _take(store: DynamoStore, key: str, variant: str, count: int, tasks: int) -> None:
    strategy, group = parse_variant(variant)

    def emit(n: int) -> None:
        sys.stdout.write(f"{key} {n}\n")
        sys.stdout.flush()

    await run_workload(
        store, strategy, key, count=count, concurrency=tasks, group=group, on_number=emit
    )


async def _race(endpoint: str, table: str, key: str, variant: str, count: int, tasks: int) -> None:
    async with DynamoStore.open(table=TableSpec(name=table), endpoint_url=endpoint) as store:
        print(f"ready {key}", flush=True)
        await asyncio.to_thread(sys.stdin.readline)
        await _take(store, key, variant, count, tasks)


async def _main(argv: Sequence[str]) -> None:
    endpoint, table, count, tasks, *specs = argv
    for key, _, variant in (spec.partition("=") for spec in specs):
        await _race(endpoint, table, key, variant, int(count), int(tasks))


if __name__ == "__main__":
    try:
        asyncio.run(_main(sys.argv[1:]))
    except Exception as exc:
        print(f"racer: {type(exc).__name__}: {exc}", file=sys.stderr)
        sys.exit(1)
