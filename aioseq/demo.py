"""``aioseq demo``: every strategy on one server, checked, as a table."""

from __future__ import annotations

import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass

from aioseq._checks import check_count
from aioseq._store import DynamoStore
from aioseq._strategy_table import STRATEGY_NAMES, strategy_named
from aioseq._workload import check_numbers, run_workload, stored_payloads
from aioseq.config import TableSpec

__all__ = [
    "DemoRow",
    "check_arguments",
    "delete_collection",
    "format_table",
    "run_demo",
]


@dataclass(frozen=True)
class DemoRow:
    """One strategy's line in the demo table."""

    strategy: str
    numbers: int
    wall_secs: float
    requests: int
    conflicts: int
    retries: int
    gaps: int
    duplicates: int
    mismatched_items: int
    gapless: bool

    @property
    def ok(self) -> bool:
        """No duplicates, no item mismatch, and no gaps where the strategy promises none."""
        return (
            self.duplicates == 0
            and self.mismatched_items == 0
            and (self.gaps == 0 or not self.gapless)
        )


def check_arguments(*, count: int, concurrency: int, instances: int) -> None:
    """Refuse bad demo arguments before anything is started or written.

    Raises:
        ConfigurationError: a count, concurrency or instances that is not a positive int
            (or is above what `run_workload()` takes).
    """
    check_count(count, "count", maximum=10**9)
    check_count(concurrency, "concurrency", maximum=100_000)
    check_count(instances, "instances", maximum=10_000)


async def delete_collection(store: DynamoStore, partition: str) -> int:
    """Delete every item whose partition key is ``partition`` (a counter item and the items it
    numbered): paginated ``Query`` of the keys (0.5 RCU per 4 KB), then ``BatchWriteItem``
    deletes of 25 (1 WCU each). Returns how many were deleted. For the demo's own counters."""
    table = store.table
    names = {"#pk": table.partition_key}
    if table.sort_key is not None:
        names["#sk"] = table.sort_key
    params: dict[str, object] = {
        "TableName": table.name,
        "KeyConditionExpression": "#pk = :partition",
        "ExpressionAttributeNames": names,
        "ExpressionAttributeValues": {":partition": {"S": partition}},
        "ProjectionExpression": ", ".join(names),
        "ConsistentRead": True,
    }
    keys: list[dict[str, object]] = []
    while True:
        page = await store.send_once("query", **params)
        keys.extend(page.get("Items", []))
        if "LastEvaluatedKey" not in page:
            break
        params["ExclusiveStartKey"] = page["LastEvaluatedKey"]
    for start in range(0, len(keys), 25):
        requests = [{"DeleteRequest": {"Key": key}} for key in keys[start : start + 25]]
        for _ in range(10):  # unprocessed deletes (throttling) are sent again, a few times
            answer = await store.send_once("batch_write_item", RequestItems={table.name: requests})
            requests = answer.get("UnprocessedItems", {}).get(table.name, [])
            if not requests:
                break
    return len(keys)


async def run_demo(
    *,
    endpoint_url: str,
    region_name: str | None,
    table: TableSpec,
    count: int,
    concurrency: int,
    instances: int,
    strategies: Sequence[str] = STRATEGY_NAMES,
    fresh_table: bool = False,
    keep: bool = False,
) -> list[DemoRow]:
    """Run ``count`` numbers through each strategy and check them; the strategies with a
    group-commit mode run twice, with their defaults (grouped) and ungrouped (row
    ``<strategy> --no-group``).

    Each strategy gets its own counter key (``demo-<run id>-<strategy>``), so a demo against a
    shared server never touches existing counters, and its counters and items are deleted
    after their row unless ``keep``. With ``fresh_table`` (the embedded server, thrown away at
    the end) each strategy also gets its own table, which keeps moto's transactions fast (moto
    copies every table on each transaction).

    Raises:
        ConfigurationError: bad arguments, before anything is written.
    """
    check_arguments(count=count, concurrency=concurrency, instances=instances)
    run_id = f"{time.strftime('%Y%m%dT%H%M%S')}-{uuid.uuid4().hex[:6]}"
    rows = []
    async with DynamoStore.open(
        table=table, endpoint_url=endpoint_url, region_name=region_name
    ) as shared:
        variants = [
            (facts, group)
            for facts in map(strategy_named, strategies)
            for group in ((True, False) if facts.grouped else (None,))
        ]
        for facts, group in variants:
            strategy = facts.name
            suffix = "-ungrouped" if group is False else ""
            label = f"{strategy} --no-group" if group is False else strategy
            key = f"demo-{run_id}-{strategy}{suffix}"
            store = shared
            if fresh_table:
                name = f"{table.name}-{strategy}{suffix}"
                store = DynamoStore(shared.client, name, retry_policy=shared.retry_policy)
            await store.create_table()
            run = await run_workload(
                store,
                strategy,
                key,
                count=count,
                concurrency=concurrency,
                instances=instances,
                group=group,
            )
            # number -> payload, so that an item stored twice fails the check too
            stored = await stored_payloads(store, key) if facts.writes_items else None
            check = check_numbers(run.numbers, stored)
            rows.append(
                DemoRow(
                    strategy=label,
                    numbers=len(run.numbers),
                    wall_secs=run.wall_secs,
                    requests=sum(run.requests.values()),
                    conflicts=run.conflicts,
                    retries=sum(run.retries.values()),
                    gaps=check.gaps,
                    duplicates=check.duplicates,
                    mismatched_items=check.mismatched_items,
                    gapless=facts.gapless,
                )
            )
            if not keep and not fresh_table:
                await delete_collection(store, key)
            if store is not shared:
                await store.aclose()
    return rows


def format_table(rows: Sequence[DemoRow]) -> str:
    """The demo's rows as an aligned plain-text table."""
    header = (
        "strategy",
        "numbers",
        "wall s",
        "numbers/s",
        "requests",
        "req/number",
        "conflicts",
        "retries",
        "gaps",
        "duplicates",
        "check",
    )
    lines = [header]
    for r in rows:
        gaps = f"{r.gaps}" + (" (allowed)" if r.gaps and not r.gapless else "")
        lines.append(
            (
                r.strategy,
                f"{r.numbers}",
                f"{r.wall_secs:.2f}",
                f"{r.numbers / r.wall_secs:.0f}" if r.wall_secs else "-",
                f"{r.requests}",
                f"{r.requests / r.numbers:.2f}" if r.numbers else "-",
                f"{r.conflicts}",
                f"{r.retries}",
                gaps,
                f"{r.duplicates}",
                "ok" if r.ok else "FAILED",
            )
        )
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    out = []
    for i, line in enumerate(lines):
        cells = [
            c.ljust(w) if j == 0 else c.rjust(w)
            for j, (c, w) in enumerate(zip(line, widths, strict=True))
        ]
        out.append("  ".join(cells).rstrip())
        if i == 0:
            out.append("  ".join("-" * w for w in widths))
    return "\n".join(out)
