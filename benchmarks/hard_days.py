"""What the hard days' tools cost (issue 31's figures): an audit, and a runway.

**Audit.** A transactional counter's ``--items`` (100,000) items are written beside its counter
item (``BatchWriteItem``, 25 a request: the state ``put()`` leaves, written faster), and
``admin.audit_counter()`` checks them: its time, pages, ``Query`` requests and the peak of the
memory it allocates (``tracemalloc``, a run of its own). Then the counter item is moved back
below its highest item, and the audit must find it and give the fix.

**Runway.** One allocator per ``runway_secs`` of ``--runways`` (none, 30, 120 s) serves
``--rate`` (500) numbers a second for ``--runway-run-secs`` (30): the ``UpdateItem`` requests it
sends per 1,000 numbers, the numbers it holds reserved at the end (what a crash wastes), and the
memory still held at the end by what ``aioseq/allocator.py`` allocated (``tracemalloc``).

    scripts/in-loopback-netns .venv/bin/python -m benchmarks.hard_days --server dynamodb-local
"""

from __future__ import annotations

import asyncio
import time
import tracemalloc
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from aioseq import DynamoStore, admin
from aioseq.admin import ScanProgress
from benchmarks import _report

KEY = "inv"


@dataclass(frozen=True)
class Settings:
    items: int = 100_000
    rate: int = 500
    runway_run_secs: float = 30.0
    runways: tuple[float | None, ...] = field(default=(None, 30.0, 120.0))


async def _write_items(store: DynamoStore, count: int) -> None:
    """Items ``1..count`` beside counter ``KEY``, and the counter at ``count``."""
    table = store.table
    pending = asyncio.Semaphore(8)

    async def batch(start: int) -> None:
        keys = [
            {table.partition_key: {"S": KEY}, table.sort_key: {"N": str(n)}}
            for n in range(start, min(start + 25, count + 1))
        ]
        requests = [{"PutRequest": {"Item": key}} for key in keys]
        async with pending:
            for _ in range(10):  # unprocessed items (throttling) are sent again, a few times
                answer = await store.send_with_retries(
                    "batch_write_item", RequestItems={table.name: requests}
                )
                requests = answer.get("UnprocessedItems", {}).get(table.name, [])
                if not requests:
                    return
            raise RuntimeError(f"{len(requests)} items still unprocessed after 10 tries")

    await asyncio.gather(*(batch(start) for start in range(1, count + 1, 25)))
    await admin.set_counter(store, KEY, count)


async def _audit(store: DynamoStore) -> dict[str, Any]:
    pages: list[ScanProgress] = []
    queries = store.requests["Query"]
    started = time.perf_counter()
    # (the items are written here, not by a strategy: their place is named)
    audit = await admin.audit_counter(store, KEY, partition=KEY, progress=pages.append)
    secs = time.perf_counter() - started
    return {
        "ok": audit.ok,
        "items": audit.items,
        "secs": round(secs, 2),
        "items_per_sec": round(audit.items / secs),
        "pages": len(pages),
        "queries": store.requests["Query"] - queries,
        "fix": audit.fix,
    }


async def _peak_memory_of_an_audit(store: DynamoStore) -> float:
    tracemalloc.start()
    try:
        await admin.audit_counter(store, KEY, partition=KEY)
        return tracemalloc.get_traced_memory()[1] / 2**20
    finally:
        tracemalloc.stop()


async def _runway(store: DynamoStore, runway_secs: float | None, s: Settings) -> dict[str, Any]:
    key = f"runway-{runway_secs}"
    tracemalloc.start()
    try:
        ids = store.block_allocator(key, runway_secs=runway_secs or 0)
        updates = store.requests["UpdateItem"]
        step, due = 1 / s.rate, time.perf_counter()
        for _ in range(int(s.rate * s.runway_run_secs)):
            await ids.next()
            due += step
            await asyncio.sleep(max(0.0, due - time.perf_counter()))
        stats = ids.statistics()
        mine = tracemalloc.Filter(True, "*aioseq/allocator.py")
        held = tracemalloc.take_snapshot().filter_traces([mine])
        held_bytes = sum(stat.size for stat in held.statistics("filename"))
    finally:
        tracemalloc.stop()
    sent = store.requests["UpdateItem"] - updates
    await ids.aclose()
    return {
        "runway_secs": runway_secs,
        "numbers": stats.handed_out,
        "update_items": sent,
        "updates_per_1000_numbers": round(1000 * sent / stats.handed_out, 2),
        "held_at_end": stats.available,
        "allocator_bytes_at_end": held_bytes,
    }


async def run(s: Settings, endpoint: str) -> dict[str, Any]:
    async with DynamoStore.open(table="aioseq-hard-days", endpoint_url=endpoint) as store:
        await store.create_table()
        started = time.perf_counter()
        await _write_items(store, s.items)
        written_secs = time.perf_counter() - started
        healthy = await _audit(store)
        peak_mib = await _peak_memory_of_an_audit(store)
        back_by = min(1000, s.items // 2)
        await admin.set_counter(store, KEY, s.items - back_by, allow_backward=True)
        moved_back = await _audit(store)
        runways = [await _runway(store, runway, s) for runway in s.runways]
        await store.delete_table()
    return {
        "items_written_secs": round(written_secs, 1),
        "audit": healthy,
        "audit_peak_mib": round(peak_mib, 1),
        "audit_after_moving_back": moved_back,
        "moved_back_by": back_by,
        "runways": runways,
        "ok": healthy["ok"]
        and healthy["items"] == s.items
        and not moved_back["ok"]
        and moved_back["fix"] is not None,
    }


def markdown(report: dict[str, Any]) -> str:
    audit, back = report["audit"], report["audit_after_moving_back"]
    lines = [
        f"Run: `{report['command']}` ({report['date']}; {report['server']}).",
        "",
        "| audit of one counter | items | seconds | items/s | pages (`Query`) | finding |",
        "|---|---:|---:|---:|---:|---|",
        f"| healthy | {audit['items']:,} | {audit['secs']} | {audit['items_per_sec']:,}"
        f" | {audit['pages']} | none |",
        f"| counter moved back {report['moved_back_by']:,} | {back['items']:,} | {back['secs']}"
        f" | {back['items_per_sec']:,} | {back['pages']} | {_finding(back)} |",
        "",
        f"Peak memory an audit of {audit['items']:,} items allocates:"
        f" {report['audit_peak_mib']} MiB.",
        "",
        "| runway | numbers | `UpdateItem`s per 1,000 numbers | numbers held at the end"
        " (a crash wastes them) | memory the allocator holds |",
        "|---|---:|---:|---:|---:|",
        *(
            f"| {_seconds(r['runway_secs'])} | {r['numbers']:,} | {r['updates_per_1000_numbers']}"
            f" | {r['held_at_end']:,} | {r['allocator_bytes_at_end']:,} B |"
            for r in report["runways"]
        ),
        "",
        "All goals met." if report["ok"] else "**A goal was missed.**",
    ]  # fmt: skip
    return "\n".join(lines) + "\n"


def _finding(audit: dict[str, Any]) -> str:
    return "yes, with its fix" if audit["fix"] else "NONE"


def _seconds(runway_secs: float | None) -> str:
    return "none" if runway_secs is None else f"{runway_secs:g} s"


def main(argv: Sequence[str] | None = None) -> int:
    return _report.main(
        "hard_days", __doc__, argv, Settings(), run, markdown,
        options=("items", "rate", "runway_run_secs", "runways"),
        notes={"runways": "runways in seconds, none for none"},
    )  # fmt: skip


if __name__ == "__main__":
    raise SystemExit(main())
