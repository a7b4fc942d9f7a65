"""Fair group commit across processes (issue 23, items 1 and 4): numbers, not timed tests.

    scripts/in-loopback-netns .venv/bin/python -m benchmarks.fairness --server dynamodb-local
    python -m benchmarks.fairness --quick          # seconds, embedded moto: the smoke test

Sections, ratios from rows run next to each other in one run, rounds alternating:

1. ``processes``: one counter with the library's defaults, ``--tasks`` tasks (128) in 1
   process, then the same tasks spread over ``--processes`` (4) processes, for the
   transactional, sort-key and optimistic strategies. Each process times its share after a
   start barrier (interpreter start-up and client set-up not counted). (The issue's targets:
   aggregate >= 0.8x one process; the slowest process's wall <= 1.3x the fastest's; p99 of a
   call <= 2x the single process's.) A third row,
   one process with one process's share of the tasks (32), is the ceiling of any scheme in
   which each write carries one process's callers: what 4 processes would reach if handing
   the counter item from one to the next cost nothing.
2. ``hot``: the same 4 processes through the capacity model (150 WCU/s per partition, 2-6 ms
   round trips, a child process): no process starved (the target: each makes at least half
   its fair share). The transactional counter's items are spread over 32 shards, as docs/layout.md
   lays them out; the sort-key counter's are its one collection, whose partition they share.
3. ``raw``: grouped transactional ``put()`` at ``--tasks`` tasks in one process against a raw
   aiobotocore loop that sends ``TransactWriteItems`` of 99 conditional puts plus the
   counter's conditional update back to back, one in flight, on a client with the store's
   settings: the batching limit of one item's transactions (target >= 0.7x).

The issue's targets were graded once, on the run docs/performance/fairness.json records
(docs/benchmarks.md shows that table); a run reports its rows. Load on the machine
(``uptime``) is recorded at the start and the end. Writes
``fairness.json`` and ``fairness.md`` into ``--out``; exits 1 if a row broke a guarantee.
"""

from __future__ import annotations

import contextlib
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from aiobotocore.config import AioConfig

from aioseq import DynamoStore
from aioseq.testing.capacity import CapacityModel
from benchmarks import _report
from benchmarks.defaults.bench import Bench, CapacityProxy, Result, server_pid
from benchmarks.defaults.options import SHARDS, Options, defaults
from benchmarks.variants import _client_arguments, client_config, session

STRATEGIES = ("transactional", "sort-key", "optimistic")
SECTIONS = ("processes", "hot", "raw")
#: The hot section's capacity model: a partition takes 150 WCU/s, requests take 2-6 ms.
HOT_MODEL = CapacityModel(partition_wcu_per_sec=150, round_trip_secs=(0.002, 0.006))


@dataclass(frozen=True)
class Settings:
    tasks: int = 128
    processes: int = 4
    rounds: int = 2
    row_secs: float = 3.0
    hot_secs: float = 5.0
    raw_secs: float = 3.0
    sections: tuple[str, ...] = SECTIONS
    strategies: tuple[str, ...] = STRATEGIES


QUICK = Settings(tasks=8, processes=2, rounds=1, row_secs=0.3, hot_secs=0.5, raw_secs=0.3)


# --- sections ----------------------------------------------------------------------------


async def section_processes(bench: Bench, s: Settings) -> list[dict[str, Any]]:
    rows = []
    for round_ in range(s.rounds):
        for strategy in s.strategies:
            variant = defaults(strategy, f"{strategy} (defaults)")
            order = (1, s.processes, 0) if round_ % 2 == 0 else (0, s.processes, 1)
            for processes in order:
                # 0: the ceiling, one process with one process's share of the tasks
                share = processes == 0
                result = await bench.measure(
                    "processes",
                    variant,
                    tasks=s.tasks // s.processes if share else s.tasks,
                    processes=1 if share else processes,
                    secs=s.row_secs,
                    round=round_,
                    strategy=strategy,
                )
                row = _row(result, strategy, 1 if share else processes, round_, "direct")
                rows.append({**row, "share": True} if share else row)
    return rows


async def section_hot(bench: Bench, s: Settings) -> list[dict[str, Any]]:
    rows = []
    for strategy in s.strategies:
        spread = SHARDS if strategy == "transactional" else None
        variant = defaults(strategy, f"{strategy} (defaults)", shards=spread)
        result = await bench.measure(
            "hot",
            variant,
            tasks=s.tasks,
            processes=s.processes,
            secs=s.hot_secs,
            condition="hot",
            count_errors=True,
            strategy=strategy,
        )
        rows.append(_row(result, strategy, s.processes, 0, "hot"))
    return rows


def _row(
    result: Result, strategy: str, processes: int, round_: int, condition: str
) -> dict[str, Any]:
    row = result.row
    return {
        "strategy": strategy,
        "processes": processes,
        "round": round_,
        "condition": condition,
        "numbers": row.numbers,
        "numbers_per_s": row.numbers_per_s,
        "p99_ms": row.p99_ms,
        "requests_per_number": row.requests_per_number,
        "lost_races_per_number": row.conflicts_per_number,
        "requests": row.requests,
        "retries": row.retries,
        "errors": row.errors,
        "throttled": result.throttled,
        "ok": row.ok,
        "per_process": row.per_process,
        "cores": result.cores(),
    }


async def _raw_transactions(endpoint: str, table: str, secs: float) -> dict[str, Any]:
    """The raw loop: ``TransactWriteItems`` of the counter's conditional update and 99
    conditional puts, back to back, on a client with the store's settings."""
    async with DynamoStore.open(table=table, endpoint_url=endpoint, session=session()) as store:
        config = client_config(store)
    credentials = await session().get_credentials()  # type: ignore[misc]
    arguments = _client_arguments(endpoint, session().region_name, credentials)
    client_context: Any = session().client("dynamodb", config=AioConfig(**config), **arguments)
    async with client_context as client:
        value = 0
        transactions = 0
        started = time.perf_counter()
        while time.perf_counter() - started < secs:
            counter = {
                "Update": {
                    "TableName": table,
                    "Key": {"pk": {"S": "raw"}, "sk": {"N": "0"}},
                    "UpdateExpression": "SET #v = :next",
                    "ConditionExpression": "attribute_not_exists(#pk) OR #v = :current",
                    "ExpressionAttributeNames": {"#v": "value", "#pk": "pk"},
                    "ExpressionAttributeValues": {
                        ":next": {"N": str(value + 99)},
                        ":current": {"N": str(value)},
                    },
                }
            }
            puts = [
                {
                    "Put": {
                        "TableName": table,
                        "Item": {"pk": {"S": "raw"}, "sk": {"N": str(n)}},
                        "ConditionExpression": "attribute_not_exists(#pk)",
                        "ExpressionAttributeNames": {"#pk": "pk"},
                    }
                }
                for n in range(value + 1, value + 100)
            ]
            await client.transact_write_items(
                TransactItems=[counter, *puts], ClientRequestToken=uuid.uuid4().hex
            )
            value += 99
            transactions += 1
        wall = time.perf_counter() - started
    return {"numbers": value, "wall_secs": round(wall, 3), "numbers_per_s": round(value / wall, 1)}


async def section_raw(bench: Bench, s: Settings) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    grouped = defaults("transactional", "transactional (defaults)")
    for round_ in range(s.rounds):
        for which in ("aioseq", "raw") if round_ % 2 == 0 else ("raw", "aioseq"):
            if which == "aioseq":
                result = await bench.measure(
                    "raw", grouped, tasks=s.tasks, secs=s.raw_secs, round=round_
                )
                rows.append({**_row(result, "transactional", 1, round_, "direct"), "raw": False})
                continue
            table = f"aioseq-bench-{uuid.uuid4().hex[:12]}"
            async with DynamoStore(bench.inspector.client, table) as store:
                await store.create_table()
                try:
                    raw = await _raw_transactions(bench.endpoint, table, s.raw_secs)
                finally:
                    await store.delete_table()
            rows.append(
                {"strategy": "raw TransactWriteItems x99", "round": round_, "raw": True, **raw}
            )
    return rows


# --- the report ----------------------------------------------------------------------------


def targets_table(report: dict[str, Any]) -> str:
    """The issue's targets as a saved report graded them, as a markdown table
    (docs/benchmarks.md renders docs/performance/fairness.json's); runs no longer grade."""
    lines = [
        "| target | measured | goal | met | rounds | detail |",
        "|---|---|---|---|---|---|",
    ]
    for t in report["targets"]:
        lines.append(
            f"| {t['target']} | {t['measured']} | {t['goal']} | {'yes' if t['met'] else 'NO'}"
            f" | {', '.join(t['rounds'])} | {t['detail']} |"
        )
    return "\n".join(lines)


def markdown(report: dict[str, Any]) -> str:
    lines = [
        "# Fair group commit across processes",
        "",
        f"`{report['command']}`, {report['date']}, {report['server']};"
        f" {report['load_at_start']} at the start, {report['load_at_end']} at the end.",
        "",
    ]
    if "targets" in report:  # a run recorded when the benchmark graded the targets
        lines += [targets_table(report), ""]
    lines += [
        "## Rows",
        "",
        "| section | strategy | processes | round | numbers/s | p99 ms |"
        " requests/number | lost races/number | per process (puts, wall s, p99 ms) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in report["rows"]:
        per = "; ".join(
            f"{p['numbers']:,}, {p['wall_secs']:.2f}, {p['p99_ms']:,.0f}"
            for p in r.get("per_process", [])
        )
        lines.append(
            f"| {r.get('condition', 'raw')} | {r['strategy']} | {r.get('processes', 1)} |"
            f" {r['round']} | {r['numbers_per_s']:,.0f} | {r.get('p99_ms', '')} |"
            f" {r.get('requests_per_number', '')} | {r.get('lost_races_per_number', '')} | {per} |"
        )
    return "\n".join(lines) + "\n"


async def run(s: Settings, endpoint: str) -> dict[str, Any]:
    proxies: dict[str, CapacityProxy] = {}
    rows: list[dict[str, Any]] = []
    with contextlib.ExitStack() as stack:
        if "hot" in s.sections:
            model = HOT_MODEL
            proxies["hot"] = CapacityProxy(endpoint, model)
            stack.callback(proxies["hot"].close)
            proxies["hot"].endpoint_url  # noqa: B018 (waits for the proxy to listen)
        async with DynamoStore.open(endpoint_url=endpoint) as inspector:
            options = replace(Options(), count=1_000_000)
            bench = Bench(options, endpoint, inspector, server_pid(endpoint), proxies)
            try:
                warm = defaults("transactional", "warm-up")
                await bench.measure("warm-up", warm, tasks=16, secs=1.0, record=False)
                if "processes" in s.sections:
                    rows += await section_processes(bench, s)
                if "hot" in s.sections:
                    rows += await section_hot(bench, s)
                if "raw" in s.sections:
                    rows += await section_raw(bench, s)
            finally:
                for pool in bench.pools.values():
                    pool.shutdown()
    models = {"hot": HOT_MODEL.describe()} if "hot" in s.sections else {}
    return {
        "rows": rows,
        "ok": all(r.get("ok", True) for r in rows),
        "capacity_models": models,
    }


def main(argv: Sequence[str] | None = None) -> int:
    return _report.main(
        "fairness", __doc__, argv, Settings(), run, markdown, quick=QUICK,
        options=("rounds", "row_secs", "sections", "strategies"),
        choices={"sections": SECTIONS, "strategies": STRATEGIES},
    )  # fmt: skip


if __name__ == "__main__":
    raise SystemExit(main())
