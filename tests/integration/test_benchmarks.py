"""The benchmarks run, write their reports, and their checks catch what they must.

Speed is the benchmarks' business, not the tests': these check that ``python -m benchmarks
--quick`` and ``python -m benchmarks.defaults --quick`` work end to end, that a duplicate or a
gap handed out by a taker is reported (and fails the run), that errors are counted where asked,
and how the defaults benchmark turns its sweep into a recommendation.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import json
import subprocess
import sys
from collections.abc import AsyncIterator
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import pytest

from aioseq import DynamoStore
from benchmarks import defaults, global_tables, guard, hard_days, many_keys, service
from benchmarks.contention import QUICK, Options, Row, markdown, run
from benchmarks.defaults import sections
from benchmarks.variants import (
    NAMES,
    REQUEST_PARTS,
    BareVariant,
    Contender,
    Place,
    update_request,
)

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow  # ~15 s: a child process, its moto server, and 2 worker processes
def test_the_quick_run_writes_json_markdown_and_png(tmp_path: Path) -> None:
    finished = subprocess.run(
        [sys.executable, "-m", "benchmarks", "--quick", "--no-progress", "--out", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert finished.returncode == 0, finished.stderr[-3000:]

    report = json.loads((tmp_path / "contention.json").read_text())
    assert report["ok"] is True
    assert {"date", "machine", "versions", "server", "parameters", "command"} <= set(report)
    assert report["machine"]["cores"] >= 1
    assert report["versions"]["aioseq"] and report["versions"]["dynamodb-autoincrement"]
    assert report["parameters"]["concurrency"] == list(QUICK.concurrency)
    rows = report["rows"]
    assert {row["name"] for row in rows} == set(NAMES)
    assert {row["processes"] for row in rows} == set(QUICK.processes)
    for row in rows:
        assert row["ok"] and row["duplicates"] == 0, row
        assert row["numbers"] >= row["tasks"] >= 1
        assert row["numbers_per_s"] > 0 and 0 <= row["p50_ms"] <= row["p99_ms"]
        if row["name"] != "bare":
            assert sum(row["requests"].values()) >= 1  # counted at the client
    atomic = [row for row in rows if row["name"] == "atomic"]
    assert all(row["vs_atomic"]["numbers_per_s"] == 1.0 for row in atomic)
    assert all(row["requests_per_number"] == 1.0 for row in atomic)
    allocator = next(row for row in rows if row["name"] == "allocator")
    assert allocator["requests_per_number"] < 1  # one ADD per block

    table = (tmp_path / "contention.md").read_text()
    assert "| strategy" in table and "dynamodb-autoincrement 0.2.0" in table
    assert "FAILED" not in table
    png = (tmp_path / "contention.png").read_bytes()
    assert png.startswith(b"\x89PNG\r\n\x1a\n") and len(png) > 10_000
    assert "numbers/s" in finished.stdout  # the terminal table


@dataclass(frozen=True)
class Faulty(BareVariant):
    """A bare counter that hands out ``repeat`` twice, or skips ``skip``."""

    repeat: int = 0
    skip: int = 0

    @contextlib.asynccontextmanager
    async def contender(self, place: Place) -> AsyncIterator[Contender]:
        value = 0
        repeated = False

        async def next() -> int:
            nonlocal value, repeated
            if value == self.repeat and not repeated:
                repeated = True
                return value
            value += 1
            if value == self.skip:
                value += 1
            return value

        yield Contender(next)


async def test_a_planted_duplicate_or_gap_is_reported(aioseq_endpoint: str) -> None:
    options = Options(concurrency=(4,), count=20, warmup_secs=0)
    chosen = [
        Faulty("repeats 5", "bare", gapless=True, repeat=5),
        Faulty("skips 7", "bare", gapless=True, skip=7),
        Faulty("skips 7, gaps allowed", "bare", gapless=False, skip=7),
        BareVariant("sound", "bare", gapless=True),
    ]
    rows = {row.label: row for row in await run(options, aioseq_endpoint, chosen=chosen)}

    assert (rows["repeats 5"].duplicates, rows["repeats 5"].gaps) == (1, 0)
    assert (rows["skips 7"].duplicates, rows["skips 7"].gaps) == (0, 1)
    assert not rows["repeats 5"].ok and not rows["skips 7"].ok
    assert rows["skips 7, gaps allowed"].ok and rows["skips 7, gaps allowed"].gaps == 1
    assert rows["sound"].ok and rows["sound"].numbers == 20

    report = {
        "date": "today",
        "machine": {"cpu": "cpu", "cores": 2, "python": "3", "load_average": [0.0]},
        "versions": {"aioseq": "0"},
        "server": "moto",
        "wall_secs": 1.0,
        "command": "python -m benchmarks",
        "sizing": "test",
    }
    table = markdown(report, list(rows.values()))
    assert table.count("FAILED") == 2
    assert "1 (allowed)" in table


# --- the many-keys benchmark (python -m benchmarks.many_keys) --------------------------------


#: Section 3's keys here: enough for several sweeps of 32 give-backs at once, few enough to
#: take seconds (the store's dropping of idle keys is tested in test_many_keys.py).
KEYS = 200


@pytest.mark.slow
@pytest.mark.only_on("dynamodb-local")  # the benchmark's machinery, on the server it targets
def test_the_many_keys_quick_run_wastes_nothing_and_stays_gapless(
    tmp_path: Path, aioseq_endpoint: str
) -> None:
    arguments = ["--endpoint-url", aioseq_endpoint, "--quick", "--keys", str(KEYS)]
    arguments += ["--row-secs", "0.5", "--quiet", "--out", str(tmp_path)]
    assert many_keys.main(arguments) == 0

    report = json.loads((tmp_path / "many_keys.json").read_text())
    assert report["ok"] is True
    assert {"date", "machine", "versions", "server", "command", "parameters"} <= set(report)
    assert report["parameters"]["keys"] == KEYS
    assert report["parameters"]["row_secs"] == 0.5
    # The checks (behaviour, not speed): every one measured and met.
    checks = [t for t in report["targets"] if t["check"]]
    assert [t["section"] for t in checks] == [1, 1, 2, 3, 3]
    assert all(t["met"] for t in checks), checks
    # 1: per request and held both took numbers 1..n from their key, one ADD per block.
    for row in report["allocator_rows"]:
        assert row["numbers"] >= 1 and row["duplicates"] == row["gaps"] == 0, row
        assert row["counter_after_close"] == row["numbers"]  # the tail was given back
        assert 1_000 * row["requests"]["UpdateItem"] / row["numbers"] <= 1_000 / 100 + 1
    assert {row["mode"] for row in report["allocator_rows"]} == {"per-request", "held"}
    # 2: gapless, one item per number, the counter at the last number.
    for row in report["put_rows"]:
        assert row["numbers"] >= 1 and row["duplicates"] == row["gaps"] == 0, row
        assert row["mismatched_items"] == 0 and row["counter_after_close"] == row["numbers"]
    # 3: every key dropped, every number but the one handed out given back.
    keys = report["many_keys"]
    assert keys["numbers"] == KEYS and keys["not_one"] == 0
    assert keys["live_keys_after_drain"] == 0
    assert keys["evictions_after_drain"] >= KEYS
    assert keys["statistics_after_close"]["wasted"] == 0
    assert keys["statistics_after_close"]["handed_out"] == KEYS + 32  # warm-up
    assert keys["counters_read"] == KEYS + 32
    assert keys["counters_mismatched"] == keys["counter_surplus"] == 0
    assert keys["resource_warnings"] == 0

    text = (tmp_path / "many_keys.md").read_text()
    assert "| #" in text and report["command"] in text and "FAILED" not in text


# --- the defaults benchmark (python -m benchmarks.defaults) ----------------------------------


@pytest.mark.slow  # ~15 s: every section, a capacity proxy and 2 worker processes
@pytest.mark.only_on("dynamodb-local")  # the benchmark's machinery, on the server it targets
def test_the_defaults_quick_run_measures_every_section(
    tmp_path: Path, aioseq_endpoint: str
) -> None:
    code = defaults.main(
        ["--endpoint-url", aioseq_endpoint, "--quick", "--no-progress", "--out", str(tmp_path)]
    )
    assert code == 0

    report = json.loads((tmp_path / "defaults.json").read_text())
    assert report["ok"] is True
    assert {"date", "machine", "versions", "server", "command", "options"} <= set(report)
    assert report["command"].endswith(
        "-m benchmarks.defaults --endpoint-url "
        f"{aioseq_endpoint} --quick --no-progress --out {tmp_path}"
    )
    assert report["load_average_at_end"] and report["machine"]["load_average"]
    assert report["revision"] is None or len(report["revision"]["commit"]) == 40
    results = report["results"]
    assert [r["section"] for r in results] == sorted(
        (r["section"] for r in results), key=list(defaults.SECTIONS).index
    )
    assert len(results) == defaults.rows_planned(defaults.QUICK)
    for result in results:
        row = result["row"]
        assert row["ok"] and row["duplicates"] == 0, row
        assert row["numbers"] >= 1 and row["numbers_per_s"] > 0
        assert row["client_cpu_secs"] > 0 and 0 <= row["client_gc_secs"] <= row["client_cpu_secs"]
    # The targets were graded once (docs/benchmarks.md); a run reports rows, no grades.
    assert "targets" not in report
    # The capacity model saw the hot-key rows; the raw baseline sent one request per number.
    hot = [r for r in results if r["section"] == "hot-key"]
    assert all(r["throttled"] is not None and r["consumed_wcu"] > 0 for r in hot)
    raw = [r["row"] for r in results if r["row"]["name"] == "raw"]
    assert raw and all(row["requests"] == {"UpdateItem": row["numbers"]} for row in raw)
    assert report["client_config"]["retries"] == {"mode": "standard", "total_max_attempts": 1}
    assert report["client_config"]["max_pool_connections"] == 50
    processes = [r for r in results if r["section"] == "processes"]
    assert {r["setting"]["processes"] for r in processes} == {1, defaults.QUICK.processes}
    assert report["profile"]["numbers"] >= 1 and report["profile"]["top"]
    cost = report["added_cost"]
    assert cost["aioseq_next_us"] > cost["raw_update_item_us"] > 0 and cost["profile"]["top"]
    recommendation = report["recommendation"]
    assert recommendation["comparisons"]  # size 2 and the 1 ms window against the defaults
    assert set(recommendation["recommended"]) == {"max_group_size", "batch_window_secs"}

    text = (tmp_path / "defaults.md").read_text()
    for heading in ("## 1.", "## 2.", "## 3.", "## 4.", "## 5.", "Recommendation"):
        assert heading in text
    assert report["command"] in text and "FAILED" not in text


@dataclass(frozen=True)
class Failing(BareVariant):
    """A bare counter whose every ``every``-th call raises instead of taking a number."""

    every: int = 3

    @contextlib.asynccontextmanager
    async def contender(self, place: Place) -> AsyncIterator[Contender]:
        value = calls = 0

        async def next() -> int:
            nonlocal value, calls
            calls += 1
            if calls % self.every == 0:
                raise RuntimeError("planted")
            value += 1
            return value

        yield Contender(next)


@pytest.fixture
async def bench(aioseq_endpoint: str) -> AsyncIterator[defaults.Bench]:
    async with DynamoStore.open(endpoint_url=aioseq_endpoint) as inspector:
        yield defaults.Bench(defaults.QUICK, aioseq_endpoint, inspector, None, {})


async def test_the_defaults_checks_catch_a_planted_duplicate_or_gap(
    bench: defaults.Bench,
) -> None:
    results = await defaults.section_peer(
        bench,
        gapless=Faulty("repeats 3", "transactional", gapless=True, repeat=3),
        peer=Faulty("skips 3", "peer", gapless=True, skip=3),
    )
    rows = {r.row.label: r.row for r in results}
    assert (rows["repeats 3"].duplicates, rows["skips 3"].gaps) == (1, 1)
    assert not rows["repeats 3"].ok and not rows["skips 3"].ok
    report = {
        "date": "today",
        "machine": {"cpu": "cpu", "cores": 2, "python": "3", "load_average": [0.0]},
        "versions": dict.fromkeys(("aioseq", "aiobotocore", "botocore"), "0")
        | {"dynamodb-autoincrement": "0"},
        "server": "test",
        "command": "python -m benchmarks.defaults",
        "options": bench.options,
        "load_average_at_end": [0.0],
        "wall_secs": 1.0,
        "results": results,
        "recommendation": {},
    }
    assert defaults.markdown(report).count("FAILED") == 3  # two gapless rows and the peer's


def test_the_defaults_run_exits_1_when_a_guarantee_breaks(
    tmp_path: Path, aioseq_endpoint: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    planted = Faulty("skips 2", "transactional", gapless=True, skip=2)
    monkeypatch.setattr(  # where run() looks it up
        sections, "section_peer", functools.partial(defaults.section_peer, gapless=planted)
    )
    arguments = ["--endpoint-url", aioseq_endpoint, "--quick", "--sections", "peer"]
    code = defaults.main([*arguments, "--no-progress", "--out", str(tmp_path)])
    assert code == 1
    report = json.loads((tmp_path / "defaults.json").read_text())
    assert report["ok"] is False
    assert [r["row"]["ok"] for r in report["results"]] == [False, True, False]
    assert "FAILED" in (tmp_path / "defaults.md").read_text()


async def test_errors_are_counted_when_asked_and_end_the_row_otherwise(
    bench: defaults.Bench,
) -> None:
    failing = Failing("fails every 3rd call", "bare", gapless=True)
    result = await bench.measure("test", failing, tasks=2, secs=0.2, count_errors=True)
    row = result.row
    assert row.errors["RuntimeError"] >= 1 and row.ok and row.gaps == 0
    assert row.numbers >= 2 * row.errors["RuntimeError"] - 2
    with pytest.raises(RuntimeError, match="planted"):
        await bench.measure("test", failing, tasks=2, secs=0.2)


async def test_the_raw_baselines_count_like_aioseq(bench: defaults.Bench) -> None:
    for raw in (defaults.RAW, replace(defaults.RAW, parts=REQUEST_PARTS)):
        result = await bench.measure("test", raw, tasks=4, secs=0.2)
        row = result.row
        assert row.ok and row.gaps == 0 and row.wasted == 0  # the counter is at the last number
        assert row.requests == {"UpdateItem": row.numbers}


async def test_the_raw_request_with_every_part_is_the_atomic_counters(
    aioseq_store: DynamoStore,
) -> None:
    sent: list[dict[str, Any]] = []
    event = "before-parameter-build.dynamodb.UpdateItem"

    def capture(params: dict[str, Any], **kwargs: Any) -> None:
        sent.append(copy.deepcopy(params))

    aioseq_store.client.meta.events.register(event, capture)
    try:
        await aioseq_store.atomic_counter("k").next()
        await aioseq_store.atomic_counter("k").next_many(3)
    finally:
        aioseq_store.client.meta.events.unregister(event, capture)
    table = aioseq_store.table
    for params, n in zip(sent, (1, 3), strict=True):
        built = update_request(
            table.name,
            aioseq_store.counter_item_key("k"),
            value_attribute=table.value_attribute,
            partition_key=table.partition_key,
            parts=REQUEST_PARTS,
            n=n,
        )
        assert params == built


def _result(condition: str, tasks: int, size: int, window: float, rate: float) -> defaults.Result:
    row = Row(
        label="x",
        name="transactional",
        processes=1,
        tasks=tasks,
        numbers=int(rate),
        wall_secs=1.0,
        numbers_per_s=rate,
        p50_ms=1.0,
        p99_ms=1000 / rate,
        requests={},
        retries={},
        requests_per_number=0.0,
        conflicts_per_number=0.0,
        retries_per_number=0.0,
        wasted=0,
        duplicates=0,
        gaps=0,
        gaps_allowed=False,
        mismatched_items=0,
        ok=True,
    )
    setting = {
        "condition": condition,
        "strategy": "transactional",
        "tasks": tasks,
        "max_group_size": size,
        "batch_window_secs": window,
    }
    return defaults.Result("sweep", setting, row, 1.0)


@pytest.mark.parametrize(("better", "kept"), [(1.0, True), (2.0, False)])
def test_the_recommendation_keeps_the_defaults_unless_another_is_clearly_better(
    better: float, kept: bool
) -> None:
    options = replace(defaults.QUICK, sweep_sizes=(10, 99), sweep_windows=(0.0, 0.001))
    results = [
        _result(condition, tasks, size, window, 100 * (better if size == 10 else 1.0))
        for condition in ("direct", "trip")
        for tasks in (1, 16)
        for size in ((99,) if tasks == 1 else (10, 99))
        for window in (0.0, 0.001)
    ]
    recommendation = defaults.recommend(results, options)
    assert recommendation["keep_current"] is kept
    assert recommendation["recommended"] == {
        "max_group_size": 99 if kept else 10,
        "batch_window_secs": 0.0,
    }
    (size_10,) = [
        c
        for c in recommendation["comparisons"]
        if (c["max_group_size"], c["batch_window_secs"]) == (10, 0.0)
    ]
    assert size_10["cells"] == 2  # 16 tasks, direct and trip: at 1 task it is the default
    assert size_10["puts_per_s_vs_defaults"] == better


@pytest.mark.only_on("dynamodb-local")  # the benchmark's machinery, on the server it targets
async def test_the_guard_measures_every_row_against_a_server(aioseq_endpoint: str) -> None:
    found = await guard.measure(
        aioseq_endpoint, calls=2, rounds=1, parts=True, allocator_calls=10, allocator_rounds=2
    )
    assert set(found["requests"]) == {
        "seed",
        "atomic next()",
        *(f"seed + {part}" for part in REQUEST_PARTS),
        guard.EVERY_PART,
        guard.ON_STORE_CLIENT,
    }
    assert found["requests"]["seed"]["speed_vs_seed"] == 1.0
    assert found["allocator"]["ratio"] > 0
    table = guard.parts_table(found)  # every part priced, exact counts from the rows
    assert all(f"| `{part}` |" in table for part in REQUEST_PARTS)
    assert "| botocore's parameter check, per call |" in table


# --- the hard days benchmark (python -m benchmarks.hard_days) --------------------------------


@pytest.mark.only_on("dynamodb-local")  # the benchmark's machinery, on the server it targets
async def test_the_hard_days_run_audits_and_costs_each_runway(aioseq_endpoint: str) -> None:
    settings = hard_days.Settings(items=300, rate=400, runway_run_secs=0.5, runways=(None, 1.0))
    report = await hard_days.run(settings, aioseq_endpoint)
    assert report["ok"] is True
    assert report["audit"]["ok"] and report["audit"]["items"] == 300
    assert report["audit"]["pages"] == report["audit"]["queries"] >= 1
    moved = report["audit_after_moving_back"]
    assert not moved["ok"] and "start-after inv" in moved["fix"]
    assert [r["runway_secs"] for r in report["runways"]] == [None, 1.0]
    for row in report["runways"]:
        assert row["numbers"] == 200 and row["update_items"] >= 1
        assert row["allocator_bytes_at_end"] > 0
    text = hard_days.markdown({**report, "command": "c", "date": "d", "server": "s"})
    assert "| healthy | 300 |" in text and "All goals met." in text


# --- the global tables benchmark (python -m benchmarks.global_tables) ------------------------


@pytest.mark.only_on("dynamodb-local")  # the benchmark's machinery, on the server it targets
async def test_the_global_tables_run_checks_every_row(aioseq_endpoint: str) -> None:
    report = await global_tables.run(global_tables.QUICK, aioseq_endpoint)
    assert report["ok"], report
    scoped = [r for r in report["scoping"] if r["regions"]]
    assert {r["strategy"] for r in scoped} == set(global_tables.STRATEGIES)
    assert {(r["strategy"], r["conflict_rate"]) for r in report["strong"]} == {
        (s, rate) for s in ("optimistic", "atomic") for rate in global_tables.CONFLICT_RATES
    }
    refused = [r for r in report["strong"] if r["conflict_rate"] > 0]
    assert all(r["refused_by_table"] > 0 for r in refused)
    header = {"command": "c", "date": "d", "server": "s", "settings": asdict(global_tables.QUICK)}
    assert "| transactional |" in global_tables.markdown({**header, **report})


# --- the services over HTTP (python -m benchmarks.service) -----------------------------------


@pytest.mark.slow  # ~25 s: two HTTP servers (one of 4 workers) and a load generator, processes
@pytest.mark.only_on("dynamodb-local")  # the benchmark's machinery, on the server it targets
async def test_the_service_run_answers_every_route_and_checks_the_orders(
    aioseq_endpoint: str, tmp_path: Path
) -> None:
    settings = replace(service.QUICK, services=("fastapi-4", "aiohttp-1"))
    report = await service.run(settings, aioseq_endpoint)
    assert report["ok"], report
    rows = report["rows"]
    assert [(r["service"], r["route"]) for r in rows] == [
        (name, route) for name in settings.services for route in service.ROUTES
    ]
    for row in rows:
        assert row["created"] >= 1 and row["failed"] == 0, row
        assert 0 < row["p50_ms"] <= row["p99_ms"]
        if row["route"].startswith("orders"):  # a fresh tenant: its orders are 1..N
            checks = row["checks"]
            assert checks["exactly_1_to_n"] and checks["list_newest_20"], row
            assert checks["counter_current"] == checks["order_items"] == checks["orders"] >= 1
    assert all(s["tracebacks"] == 0 for s in report["services"].values())
    header = {"command": "c", "date": "d", "server": "s", "settings": asdict(settings)}
    header |= {"machine": {"cpu": "cpu", "cores": 2, "python": "3"}}
    text = service.markdown({**header, "load_at_start": "l", "load_at_end": "l", **report})
    assert "| aiohttp, 1 process | in-memory counter |" in text and "FAILED" not in text
    service.plot({**header, **report}, tmp_path / "service.png")
    assert (tmp_path / "service.png").read_bytes().startswith(b"\x89PNG")
