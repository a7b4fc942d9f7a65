"""Where aioseq's time goes: the atomic ``next()`` against the raw request with the HTTP layer
stubbed, and one real row, under cProfile."""

from __future__ import annotations

import cProfile
import math
import pstats
import time
import uuid
from pathlib import Path
from typing import Any

from aioseq import DynamoStore
from benchmarks.defaults.bench import Bench
from benchmarks.defaults.options import ATOMIC
from benchmarks.row import run_share
from benchmarks.variants import Place, Variant


def _where(path: str) -> str | None:
    """``aioseq/...`` or ``tenacity/...`` for a file of those packages, else ``None``."""
    parts = Path(path).parts
    for package in ("aioseq", "tenacity"):
        if package in parts:
            return "/".join(parts[len(parts) - parts[::-1].index(package) - 1 :])
    return None


def profile_summary(stats: pstats.Stats, numbers: int, top: int = 12) -> dict[str, Any]:
    """What a profile of ``numbers`` atomic ``next()`` calls says, in µs per number: the time
    inside ``next()`` (while running, children included), inside aiobotocore's
    ``_make_api_call`` (what the raw request costs too), and aioseq's and tenacity's own
    functions by their own time."""
    table: dict[tuple[str, int, str], tuple[int, int, float, float, Any]] = stats.stats  # type: ignore[attr-defined]
    per = 1e6 / max(numbers, 1)

    def cumulative(file_part: str, name: str) -> float:
        return sum(
            ct
            for (path, _, fn), (_, _, _, ct, _) in table.items()
            if fn == name and file_part in path
        )

    own: list[dict[str, Any]] = []
    for (path, line, fn), (_, calls, tt, ct, _) in table.items():
        where = _where(path)
        if where is not None:
            own.append(
                {
                    "function": f"{where}:{line}({fn})",
                    "own_us": round(tt * per, 2),
                    "cumulative_us": round(ct * per, 2),
                    "calls_per_number": round(calls / max(numbers, 1), 2),
                }
            )
    own.sort(key=lambda f: -f["own_us"])
    by_package: dict[str, float] = {}
    for entry in own:
        package = entry["function"].split("/", 1)[0]
        by_package[package] = by_package.get(package, 0.0) + entry["own_us"]
    next_us = cumulative("aioseq/strategies/atomic.py", "next") * per
    api_us = cumulative("aiobotocore/client.py", "_make_api_call") * per
    return {
        "numbers": numbers,
        "next_us": round(next_us, 1),
        "make_api_call_us": round(api_us, 1),
        "added_us": round(next_us - api_us, 1),
        "own_us_by_package": {k: round(v, 1) for k, v in by_package.items()},
        "top": own[:top],
    }


async def measure_added_cost(
    endpoint: str, calls: int, rounds: int = 5, profile_calls: int | None = None
) -> dict[str, Any]:
    """What aioseq's ``next()`` costs beyond the raw request, without the network.

    The client's ``_make_api_call`` (where aiobotocore validates, serializes, signs, sends and
    parses) is replaced by a stub that returns the parsed answer at once, so what is timed is
    what lies above it: aioseq's atomic ``next()`` against ``await client.update_item(**params)``
    with the same ``params`` and the same number parsing. Best of ``rounds`` interleaved rounds
    of ``calls`` calls each, one task; then ``profile_calls`` more ``next()`` calls under
    cProfile, whose top functions say where the difference goes. aioseq's request-counting
    hook runs inside ``_make_api_call``, so it is not in this figure (see the real-run
    profile).
    """
    async with DynamoStore.open(table="aioseq-bench-stub", endpoint_url=endpoint) as store:
        client = store.client
        attribute = store.table.value_attribute
        value = 0
        params: dict[str, Any] = {}

        async def answer(operation_name: str, api_params: dict[str, Any]) -> dict[str, Any]:
            nonlocal value
            value += 1
            return {"Attributes": {attribute: {"N": str(value)}}}

        async def capture(operation_name: str, api_params: dict[str, Any]) -> dict[str, Any]:
            params.update(api_params)
            return await answer(operation_name, api_params)

        counter = store.atomic_counter("stub")
        setattr(client, "_make_api_call", capture)  # noqa: B010
        await counter.next()
        setattr(client, "_make_api_call", answer)  # noqa: B010

        async def with_aioseq() -> None:
            for _ in range(calls):
                await counter.next()

        async def raw() -> None:
            for _ in range(calls):
                response = await client.update_item(**params)
                int(response["Attributes"][attribute]["N"])

        best = {"aioseq": math.inf, "raw": math.inf}
        for _ in range(rounds):
            for name, loop in (("aioseq", with_aioseq), ("raw", raw)):
                started = time.perf_counter()
                await loop()
                best[name] = min(best[name], (time.perf_counter() - started) / calls)
        profiler = cProfile.Profile()
        profiled = profile_calls or calls
        profiler.enable()
        for _ in range(profiled):
            await counter.next()
        profiler.disable()
        delattr(client, "_make_api_call")
    return {
        "calls": calls,
        "aioseq_next_us": round(best["aioseq"] * 1e6, 1),
        "raw_update_item_us": round(best["raw"] * 1e6, 1),
        "added_us": round((best["aioseq"] - best["raw"]) * 1e6, 1),
        "profile": profile_summary(pstats.Stats(profiler), profiled),
    }


async def profile_atomic(bench: Bench, atomic: Variant = ATOMIC) -> dict[str, Any]:
    """One row of ``atomic`` at ``profile_tasks`` tasks under cProfile, summarized."""
    o = bench.options
    profiler = cProfile.Profile()
    table = f"aioseq-bench-profile-{uuid.uuid4().hex[:12]}"
    place = Place(bench.endpoint, table, "profiled")
    async with DynamoStore(bench.inspector.client, table) as store:
        await store.create_table()
        try:
            profiler.enable()
            try:
                share = await run_share(
                    atomic,
                    place,
                    count=o.count,
                    concurrency=o.profile_tasks,
                    time_budget_secs=o.overhead_row_secs,
                )
            finally:
                profiler.disable()
        finally:
            await store.delete_table()
    summary = profile_summary(pstats.Stats(profiler), len(share.numbers))
    summary["tasks"] = o.profile_tasks
    summary["profiled_numbers_per_s"] = round(len(share.numbers) / share.wall_secs, 1)
    return summary
