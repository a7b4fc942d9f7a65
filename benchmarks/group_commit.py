"""Gapless puts per second: aioseq's transactional strategy, ungrouped and with group commit,
against the published peer ``dynamodb-autoincrement`` 0.2.0, in one run, on one table.

    scripts/in-loopback-netns .venv/bin/python -m benchmarks.group_commit   # DynamoDB Local
    .venv/bin/python -m benchmarks.group_commit --endpoint-url http://127.0.0.1:8000

Every row is checked, not assumed: the numbers handed out must be distinct and the stored items
must be numbered exactly 1..N.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
import uuid
from collections.abc import Awaitable, Callable
from types import SimpleNamespace
from typing import Any

import aioboto3
from dynamodb_autoincrement import DynamoDBAutoIncrement  # type: ignore[import-untyped]

import aioseq
from aioseq.workload import check_numbers
from benchmarks._report import header
from benchmarks.allocator import server

Put = Callable[[int], Awaitable[int]]


class PeerClient:
    """What ``dynamodb-autoincrement`` expects: client calls taking plain Python values (an
    aioboto3 resource's client) and ``.meta.client.exceptions``."""

    def __init__(self, client: Any) -> None:
        self._client = client
        self.meta = SimpleNamespace(client=client)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)


async def timed(put: Put, count: int, callers: int) -> tuple[float, list[int]]:
    numbers: list[int] = []
    tickets = iter(range(count))

    async def caller() -> None:
        for ticket in tickets:
            numbers.append(await put(ticket))

    started = time.perf_counter()
    await asyncio.gather(*(caller() for _ in range(callers)))
    return time.perf_counter() - started, numbers


async def stored_peer_numbers(store: aioseq.DynamoStore, partition: str) -> list[int]:
    numbers: list[int] = []
    params: dict[str, Any] = {
        "TableName": store.table.name,
        "KeyConditionExpression": "pk = :p",
        "ExpressionAttributeValues": {":p": {"S": partition}},
        "ProjectionExpression": "n",
        "ConsistentRead": True,
    }
    while True:
        page = await store.call("query", **params)
        numbers += [int(item["n"]["N"]) for item in page["Items"]]
        if "LastEvaluatedKey" not in page:
            return numbers
        params["ExclusiveStartKey"] = page["LastEvaluatedKey"]


async def main(args: argparse.Namespace, endpoint: str) -> dict[str, Any]:
    table = f"aioseq-bench-{uuid.uuid4().hex[:8]}"
    rows: list[dict[str, Any]] = []
    async with aioseq.DynamoStore.open(table=table, endpoint_url=endpoint) as store:
        await store.create_table()
        session = aioboto3.Session()
        async with session.resource(
            "dynamodb",
            endpoint_url=endpoint,
            region_name="us-east-1",
            aws_access_key_id="bench",
            aws_secret_access_key="bench",
        ) as resource:
            peer_client = PeerClient(resource.meta.client)
            try:
                for callers in args.callers:
                    count = max(args.puts, 2 * callers)
                    for name in ("dynamodb-autoincrement 0.2.0", "aioseq", "aioseq +group"):
                        key = f"{name.replace(' ', '-')}-{callers}"
                        items = f"{key}-items"
                        if name.startswith("dynamodb-autoincrement"):
                            peer = DynamoDBAutoIncrement(
                                dynamodb=peer_client,
                                counter_table_name=table,
                                counter_table_key={"pk": key, "sk": 0},
                                attribute_name="n",
                                table_name=table,
                                initial_value=1,
                            )

                            async def put(ticket: int, to: Any = peer, items: str = items) -> int:
                                return int(await to.put({"pk": items, "sk": ticket}))

                        else:
                            counter = store.gapless_counter(
                                key, group=name.endswith("+group"), number_attribute="n"
                            )

                            async def put(
                                ticket: int, to: Any = counter, items: str = items
                            ) -> int:
                                return int(await to.put({"pk": items, "sk": ticket}))

                        before = store.requests
                        try:
                            secs, numbers = await asyncio.wait_for(
                                timed(put, count, callers), args.timeout
                            )
                        except TimeoutError:
                            rows.append({"client": name, "callers": callers, "timeout": True})
                            continue
                        requests = sum((store.requests - before).values())
                        stored = await stored_peer_numbers(store, items)
                        check = check_numbers(numbers, stored)
                        row = {
                            "client": name,
                            "callers": callers,
                            "puts": len(numbers),
                            "puts_per_s": round(len(numbers) / secs, 1),
                            "duplicates": check.duplicates,
                            "gaps": check.gaps,
                            "stored_exactly_1_to_n": sorted(stored)
                            == list(range(1, len(numbers) + 1)),
                        }
                        if not name.startswith("dynamodb"):
                            row["requests_per_put"] = round(requests / len(numbers), 2)
                        rows.append(row)
                        print(json.dumps(row), flush=True)
            finally:
                await store.delete_table()
    return {
        **header(endpoint),
        "rows": rows,
    }


def markdown(report: dict[str, Any]) -> str:
    lines = [
        "| client | callers | puts/s | duplicates | gaps | stored 1..N |",
        "|---|---:|---:|---:|---:|---|",
    ]
    for row in report["rows"]:
        if row.get("timeout"):
            lines.append(f"| {row['client']} | {row['callers']} | timed out | | | |")
            continue
        lines.append(
            f"| {row['client']} | {row['callers']} | {row['puts_per_s']:,} | {row['duplicates']}"
            f" | {row['gaps']} | {'yes' if row['stored_exactly_1_to_n'] else 'NO'} |"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(prog="python -m benchmarks.group_commit", description=__doc__)
    parser.add_argument("--endpoint-url", help="default: start DynamoDB Local (needs a netns)")
    parser.add_argument("--callers", type=int, nargs="+", default=[1, 16, 128])
    parser.add_argument("--puts", type=int, default=300, help="puts per row (at least 2/caller)")
    parser.add_argument("--timeout", type=float, default=300, help="seconds per row")
    arguments = parser.parse_args()
    with server(arguments.endpoint_url) as url:
        result = asyncio.run(main(arguments, url))
    print(json.dumps(result, indent=2))
    print(markdown(result))
