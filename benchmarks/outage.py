"""DynamoDB unreachable for a minute, then silent (issue 31's figures).

A fault proxy in front of the server is stopped (connections refused) for ``--outage-secs``
(60), started again on the same port, then replaced by a server that accepts connections and
never answers for ``--silent-secs`` (30), then started again. Throughout, one task takes
``--rate`` (500) numbers a second from ``block_allocator("o", runway_secs=--runway-secs)``
(120), and one transactional ``put()`` starts every 100 ms, each in its own task.

Reported, against the issue's goals: the allocator's errors (goal: none) and lowest
``runway_secs`` (goal: above 0), how long after the return its runway was back above half its
target (goal: 10 s); the slowest put that started 5 s into the outage (goal: failed within
50 ms with ``EndpointUnreachable``), and 10 s into the silence; how long after each return the
first put succeeded (goal: 5 s); whether a failed read said ``maybe_applied`` false. Written
to ``--out``: ``outage.json`` (with the timeline, twice a second), ``outage.md`` and
``outage.png`` (runway, numbers and puts per second against time).

    scripts/in-loopback-netns .venv/bin/python -m benchmarks.outage --server dynamodb-local
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aioseq import DynamoStore, EndpointUnreachable
from aioseq.testing.fault_proxy import FaultProxy
from benchmarks import _report


@dataclass(frozen=True)
class Settings:
    outage_secs: float = 60.0
    silent_secs: float = 30.0
    rate: int = 500
    runway_secs: float = 120.0
    warmup_secs: float = 10.0
    put_every_secs: float = 0.1


@contextlib.asynccontextmanager
async def silent_server(port: int) -> AsyncIterator[None]:
    """A server on ``port`` that accepts connections and never answers (an endpoint gone
    silent; ``tests/integration/test_outage.py`` uses it too)."""
    held: list[asyncio.StreamWriter] = []

    async def swallow(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        held.append(writer)
        await reader.read(1 << 16)

    listening = await asyncio.start_server(swallow, "127.0.0.1", port)
    try:
        yield
    finally:
        listening.close()
        for writer in held:
            writer.close()
        await listening.wait_closed()


async def run(s: Settings, endpoint: str) -> dict[str, Any]:
    proxy = FaultProxy(endpoint)
    proxy.start()
    began = time.perf_counter()
    puts: list[tuple[float, float, bool]] = []  # (started, secs, ok)
    runway: list[tuple[float, float]] = []  # (at, runway_secs)
    timeline: list[dict[str, Any]] = []
    errors: list[str] = []
    numbers: list[int] = []
    stop = asyncio.Event()
    try:
        async with DynamoStore.open(
            table="aioseq-outage", endpoint_url=proxy.endpoint_url
        ) as store:
            await store.create_table()
            ids = store.block_allocator("o", runway_secs=s.runway_secs)

            async def take() -> None:
                step = 1 / s.rate
                due = time.perf_counter()
                while not stop.is_set():
                    try:
                        numbers.append(await ids.next())
                    except Exception as exc:
                        errors.append(type(exc).__name__)
                    due += step
                    await asyncio.sleep(max(0.0, due - time.perf_counter()))

            async def put(n: int) -> None:
                started = time.perf_counter()
                try:
                    await store.transactional_counter("inv").put({"pk": "invoice", "sk": n})
                    ok = True
                except EndpointUnreachable:
                    ok = False
                puts.append((started - began, time.perf_counter() - started, ok))

            async def putter() -> None:
                n = 0
                tasks = []
                while not stop.is_set():
                    n += 1
                    tasks.append(asyncio.create_task(put(n)))
                    runway.append((time.perf_counter() - began, ids.statistics().runway_secs or 0))
                    await asyncio.sleep(s.put_every_secs)
                await asyncio.gather(*tasks)

            async def sample() -> None:  # the plot's points, twice a second
                while not stop.is_set():
                    ok = sum(p[2] for p in puts)
                    stats = ids.statistics()
                    timeline.append(
                        {
                            "at": round(time.perf_counter() - began, 2),
                            "runway_secs": round(stats.runway_secs or 0.0, 1),
                            "available": stats.available,
                            "rate": round(stats.rate, 1),
                            "block_size": stats.block_size,
                            "wasted": stats.wasted,
                            "numbers": len(numbers),
                            "puts_ok": ok,
                            "puts_failed": len(puts) - ok,
                        }
                    )
                    await asyncio.sleep(0.5)

            workers = [
                asyncio.create_task(take()),
                asyncio.create_task(putter()),
                asyncio.create_task(sample()),
            ]
            await asyncio.sleep(s.warmup_secs)
            down = time.perf_counter() - began
            proxy.stop()
            await asyncio.sleep(s.outage_secs)
            back = time.perf_counter() - began
            proxy.start()
            await asyncio.sleep(10.0)
            silent = time.perf_counter() - began
            proxy.stop()
            read_maybe_applied = None
            async with silent_server(proxy.port):
                await asyncio.sleep(min(10.0, s.silent_secs))
                try:
                    await ids.counter.current()
                except EndpointUnreachable as exc:
                    read_maybe_applied = exc.maybe_applied
                await asyncio.sleep(max(0.0, s.silent_secs - 10.0))
            back_again = time.perf_counter() - began
            proxy.start()
            await asyncio.sleep(10.0)
            stop.set()
            await asyncio.gather(*workers)
            await ids.aclose()
    finally:
        proxy.stop()

    def first_ok_after(at: float) -> float | None:
        ok = [p[0] + p[1] for p in puts if p[0] >= at and p[2]]
        return round(min(ok) - at, 2) if ok else None

    def slowest(start: float, end: float) -> dict[str, Any]:
        window = [p for p in puts if start <= p[0] < end]
        return {
            "puts": len(window),
            "failed": sum(not p[2] for p in window),
            "slowest_ms": round(max((p[1] for p in window), default=0) * 1000, 1),
        }

    target = s.runway_secs
    during = [r for at, r in runway if down <= at < back]
    refilled = [at for at, r in runway if at >= back and r > target / 2]
    report: dict[str, Any] = {
        "numbers": len(numbers),
        "unique_and_increasing": numbers == sorted(set(numbers)),
        "allocator_errors": len(errors),
        "lowest_runway_secs_in_outage": round(min(during, default=0.0), 1),
        "runway_half_after_return_secs": round(refilled[0] - back, 1) if refilled else None,
        "puts_from_5s_into_outage": slowest(down + 5.0, back),
        "puts_from_10s_into_silence": slowest(silent + 10.0, back_again),
        "first_put_ok_after_return_secs": first_ok_after(back),
        "first_put_ok_after_silence_secs": first_ok_after(back_again),
        "failed_read_maybe_applied": read_maybe_applied,
        "phases": {"down": down, "back": back, "silent": silent, "back_again": back_again},
        "timeline": timeline,
    }
    outage, quiet = report["puts_from_5s_into_outage"], report["puts_from_10s_into_silence"]
    half = report["runway_half_after_return_secs"]
    first_ok = report["first_put_ok_after_return_secs"]
    report["ok"] = bool(
        report["unique_and_increasing"]
        and report["allocator_errors"] == 0
        and report["lowest_runway_secs_in_outage"] > 0
        and half is not None
        and half <= 10
        and outage["failed"] == outage["puts"] > 0
        and outage["slowest_ms"] <= 50
        and quiet["failed"] == quiet["puts"] > 0
        and quiet["slowest_ms"] <= 50
        and first_ok is not None
        and first_ok <= 5
        and read_maybe_applied is False
    )
    return report


def markdown(report: dict[str, Any]) -> str:
    r = report
    outage, quiet = r["puts_from_5s_into_outage"], r["puts_from_10s_into_silence"]
    rows = [
        ("allocator: calls failed", r["allocator_errors"], "0"),
        ("allocator: lowest runway in the outage (s)", r["lowest_runway_secs_in_outage"], "> 0"),
        (
            "allocator: back above half its runway after (s)",
            r["runway_half_after_return_secs"],
            "<= 10",
        ),
        (
            "puts from 5 s into the outage: failed / started",
            f"{outage['failed']} / {outage['puts']}",
            "all",
        ),
        ("… slowest (ms)", outage["slowest_ms"], "<= 50"),
        (
            "first put that succeeded after the return (s)",
            r["first_put_ok_after_return_secs"],
            "<= 5",
        ),
        (
            "puts from 10 s into the silence: failed / started",
            f"{quiet['failed']} / {quiet['puts']}",
            "all",
        ),
        ("… slowest (ms)", quiet["slowest_ms"], "<= 50"),
        ("a failed read's maybe_applied", r["failed_read_maybe_applied"], "False"),
        (
            "numbers taken, unique and increasing",
            f"{r['numbers']:,}, {r['unique_and_increasing']}",
            "True",
        ),
    ]
    lines = [
        f"Outage run: `{r['command']}` ({r['date']}; {r['server']}).",
        "",
        "| | measured | goal |",
        "|---|---:|---:|",
        *(f"| {name} | {value} | {goal} |" for name, value, goal in rows),
        "",
        "All goals met." if r["ok"] else "**A goal was missed.**",
    ]
    return "\n".join(lines) + "\n"


def plot(report: dict[str, Any], path: Path) -> None:
    """Two panels against time: the allocator's runway (its target dashed), and numbers
    handed out and puts answered or failed per second; the outage and the silence shaded."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    points = report["timeline"]
    at = [p["at"] for p in points]

    def per_sec(name: str) -> list[float]:
        values = [p[name] for p in points]
        return [0.0] + [
            (b - a) / (t1 - t0)
            for a, b, t0, t1 in zip(values, values[1:], at, at[1:], strict=False)
        ]

    phases = report["phases"]
    figure, (runway, rates) = plt.subplots(2, 1, figsize=(10, 6.5), sharex=True)
    for axis in (runway, rates):
        axis.axvspan(phases["down"], phases["back"], color="tab:red", alpha=0.12)
        axis.axvspan(phases["silent"], phases["back_again"], color="tab:orange", alpha=0.12)
        axis.grid(alpha=0.3)
    runway.plot(at, [p["runway_secs"] for p in points], color="tab:blue", label="runway")
    runway.axhline(report["settings"]["runway_secs"], color="tab:blue", linestyle="--",
                   linewidth=1, label="target")  # fmt: skip
    runway.set_ylabel("runway (s of numbers)")
    runway.legend(loc="lower right")
    runway.set_title("refused (red), then silent (orange): the allocator serves throughout")
    rates.plot(at, per_sec("numbers"), color="tab:blue", label="numbers handed out")
    rates.set_ylabel("numbers per second")
    rates.set_xlabel("seconds since start")
    puts = rates.twinx()  # ten puts a second beside 500 numbers: an axis of their own
    puts.plot(at, per_sec("puts_ok"), color="tab:green", label="puts answered")
    puts.plot(at, per_sec("puts_failed"), color="tab:red", label="puts failed: EndpointUnreachable")
    puts.set_ylabel("transactional puts per second")
    lines = rates.get_legend_handles_labels(), puts.get_legend_handles_labels()
    rates.legend(lines[0][0] + lines[1][0], lines[0][1] + lines[1][1], loc="center right")
    figure.tight_layout()
    figure.savefig(path, dpi=90)
    plt.close(figure)


def main(argv: Sequence[str] | None = None) -> int:
    return _report.main(
        "outage", __doc__, argv, Settings(), run, markdown, plot=plot,
        options=("outage_secs", "silent_secs", "rate", "runway_secs"),
    )  # fmt: skip


if __name__ == "__main__":
    raise SystemExit(main())
