"""The figures docs/benchmarks.md quotes in prose from a saved report match the report.

The tables are rendered from docs/performance/*.json by cog (``make docs-outputs-check``);
the prose around them quotes figures from the same files (the contention bullets, "What the
figures mean for choosing"; the defaults', fairness and many-keys sections' runs and their
"why not met" bullets), so each quoted figure is computed here from its report and must
appear in the page as written. A new report (``--out docs/performance``) fails this test
until the prose says what it shows.
"""

from __future__ import annotations

import json
import re
import statistics
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "benchmarks.md"
PERFORMANCE = ROOT / "docs" / "performance"

Row = dict[str, Any]


def _span(values: Iterable[float], lo: str, hi: str | None = None) -> str:
    """``"min-max"`` of ``values``, each with its format spec (``hi`` defaults to ``lo``)."""
    found = sorted(values)
    assert found, "no rows selected"
    return f"{found[0]:{lo}}-{found[-1]:{hi or lo}}"


def _rows(report: dict[str, Any], **where: Any) -> Callable[..., list[Row]]:
    def select(
        label: str | None = None, processes: int | None = None, min_tasks: int = 0
    ) -> list[Row]:
        return [
            r
            for r in report["rows"]
            if (label is None or r["label"] == label)
            and (processes is None or r["processes"] == processes)
            and r["tasks"] >= min_tasks
            and all(r[k] == v for k, v in where.items())
        ]

    return select


def _report(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((PERFORMANCE / f"{name}.json").read_text())
    return loaded


def _page() -> str:
    return re.sub(r"\s+", " ", PAGE.read_text())


def _contention(report: dict[str, Any]) -> list[str]:
    """Each figure the contention prose quotes, as the page writes it."""
    rows = _rows(report)
    peer = _rows(report, name="dynamodb-autoincrement")

    def vs_atomic(selected: list[Row]) -> list[float]:
        return [r["vs_atomic"]["numbers_per_s"] for r in selected]

    allocator_1 = [r for r in rows(processes=1) if r["name"] == "allocator"]
    hot = report["hot_path"]
    rate = {(r["processes"], r["tasks"]): r["numbers_per_s"] for r in rows("transactional +group")}
    peer_rate = {(r["processes"], r["tasks"]): r["numbers_per_s"] for r in peer()}

    def over_peer(processes: int) -> list[float]:
        return [rate[key] / peer_rate[key] for key in rate if key[0] == processes and key[1] >= 16]

    peer_1, peer_4 = peer(processes=1, min_tasks=16), peer(processes=4)
    competing = peer_1 + peer(processes=4, min_tasks=16)
    conditional_4 = [
        r for name in ("optimistic", "transactional", "sort-key") for r in rows(name, 4)
    ]
    return [
        f"all {len(report['rows'])} rows passed",
        f"{_span(vs_atomic(allocator_1), '.0f')}× the atomic counter in one process",
        f"costs {hot['allocator_next_ns']} ns against {hot['bare_next_ns']} ns for a bare "
        f"`async def next()` ({hot['ratio']:.1f}×)",
        f"up to {max(r['wasted'] for r in rows('allocator b=1,000', 4)):,} numbers for blocks "
        "of 1,000",
        f"`optimistic +group` {_span(vs_atomic(rows('optimistic +group', 1, 16)), '.0f')}× the "
        "atomic counter from 16 tasks on",
        f"`sort-key +group` {_span(vs_atomic(rows('sort-key +group', 1, 16)), '.1f')}×",
        f"`transactional +group` {_span(vs_atomic(rows('transactional +group', 1, 16)), '.1f')}×",
        f"{_span((r['conflicts_per_number'] for r in rows('optimistic', 4)), '.2f')} failures "
        "per number for optimistic locking",
        f"{_span((r['conflicts_per_number'] for r in rows('transactional', 4)), '.2f')} for the "
        "transactional strategy",
        f"{_span((r['conflicts_per_number'] for r in rows('sort-key', 4)), '.2f')} for sort-key "
        f"maximum ({_span((r['requests_per_number'] for r in rows('sort-key', 4)), '.1f')} "
        "requests per number",
        f"Ungrouped, the conditional strategies fall to {_span(vs_atomic(conditional_4), '.2f')}×",
        f"to {_span(vs_atomic(rows('optimistic +group', 4, 16)), '.1f', '.0f')}× (optimistic), "
        f"{_span(vs_atomic(rows('transactional +group', 4, 16)), '.1f')}× (transactional) and "
        f"{_span(vs_atomic(rows('sort-key +group', 4, 16)), '.1f')}× (sort-key)",
        f"{_span((r['requests_per_number'] for r in peer_1), '.1f')} requests per put in one "
        f"process ({_span((r['conflicts_per_number'] for r in peer_1), '.1f')} cancelled "
        f"transactions each) and {_span((r['requests_per_number'] for r in peer_4), '.0f')} in "
        f"four ({_span((r['conflicts_per_number'] for r in peer_4), '.0f')} cancelled)",
        f"runs at {_span(vs_atomic(competing), '.2f')}× the atomic counter",
        f"is {_span(over_peer(1), '.0f')}× the peer from 16 tasks on in one process, "
        f"{_span(over_peer(4), '.0f')}× in four",
    ]


def _fairness(report: dict[str, Any]) -> list[str]:
    """Each figure the fairness section's prose quotes, as the page writes it."""
    targets = {t["target"]: t for t in report["targets"]}

    def target(name: str) -> dict[str, Any]:
        found: dict[str, Any] = targets[name]
        return found

    def rows(strategy: str, processes: int) -> list[Row]:
        return [
            r
            for r in report["rows"]
            if r.get("condition") == "direct"
            and r["strategy"] == strategy
            and r.get("processes") == processes
            and not r.get("share")
        ]

    def per_number(strategy: str, processes: int) -> list[float]:
        return [r["requests_per_number"] for r in rows(strategy, processes)]

    def median(strategy: str, processes: int) -> float:
        return statistics.median(per_number(strategy, processes))

    def share(strategy: str) -> float:
        return float(target(f"{strategy}: capacity model, least process / fair share")["measured"])

    load_start, load_end = (
        float(report[key].removeprefix("load average ").split(",")[0])
        for key in ("load_at_start", "load_at_end")
    )
    aggregate = target("transactional: aggregate, 4 processes vs 1")
    transactional_p99 = target("transactional: p99, 4 processes (pooled) vs 1")
    worst = re.search(r"worst process ([\d.]+)x", transactional_p99["detail"])
    optimistic_p99 = target("optimistic: p99, 4 processes (pooled) vs 1")
    pooled = re.search(r"([\d,]+) vs (\d+) ms", optimistic_p99["detail"])
    hot = re.search(
        r"([\d,]+)/s, throttled ([\d,]+), errors \d+, p99 ([\d,]+) ms",
        target("sort-key: capacity model, least process / fair share")["detail"],
    )
    assert worst is not None and pooled is not None and hot is not None
    raw_rows = [r["numbers_per_s"] for r in report["rows"] if r["strategy"].startswith("raw")]
    raw = target("grouped transactional put(), 128 tasks, vs raw 99-item loop")["measured"]
    sort_key_p99 = target("sort-key: p99, 4 processes (pooled) vs 1")["measured"]
    sort_key = target("sort-key: aggregate, 4 processes vs 1")["measured"]
    p99_secs = float(hot.group(3).replace(",", "")) / 1000
    return [
        f"Measured {report['date'][:16]} UTC on DynamoDB Local",
        f"load average {load_start:.1f} at the start and {load_end:.1f} at the end",
        f"made {min(raw_rows):,.0f} to {max(raw_rows):,.0f} puts/s",
        f"least process made {share('transactional'):.2f} of a fair share (transactional",
        f"and {share('optimistic'):.2f} (optimistic)",
        f"**Sort-key through the capacity model: {share('sort-key'):.2f} of a fair share",
        f"made {hot.group(1)}/s between them, p99 {p99_secs:.1f} s, {hot.group(2)} throttled",
        f"Aggregate {aggregate['measured']}× one process (rounds"
        f" {min(aggregate['rounds'])}-{max(aggregate['rounds'])})",
        f"p99 {transactional_p99['measured']}× pooled and {worst.group(1)}× for the worst",
        f"({target('transactional: ceiling, 1 process with 32 tasks vs 128')['measured']}×)",
        f"{_span(per_number('transactional', 4), '.3f')} requests per put against "
        f"{median('transactional', 1):.3f}",
        f"4 processes reach {target('optimistic: aggregate, 4 processes vs 1')['measured']}× "
        f"({median('optimistic', 4):.2f} requests per number against "
        f"{median('optimistic', 1):.3f})",
        f"(p99 {optimistic_p99['measured']:.1f}×: {pooled.group(1)} vs {pooled.group(2)} ms)",
        f"p99 {sort_key_p99:.1f}×, aggregate {sort_key}×, not met",
        f"({median('sort-key', 4):.2f} requests per put against {median('sort-key', 1):.3f})",
        f"**Grouped puts vs the raw 99-item loop, {raw}×: met**",
    ]


def _many_keys(report: dict[str, Any]) -> list[str]:
    """Each figure the many-keys section's prose quotes about docs/performance/many_keys.json."""
    figure = {t["name"]: t["figure"] for t in report["targets"]}
    keys = report["many_keys"]

    def loads(values: list[float]) -> str:
        return ", ".join(f"{x:.2f}" for x in values)

    return [
        f"Measured {report['date'][:16]} UTC on DynamoDB Local",
        f"load average {loads(report['machine']['load_average'])} at the start and "
        f"{loads(report['load_average_at_end'])} at the end",
        f"**Per-request allocator calls, {figure['allocator next(): per request / held']:.2f}×.**",
        f"show {figure['transactional put(): per request / held']:.2f}×",
        f"**Memory after the drops, "
        f"{figure['Python memory after the idle drops, over the start']:.1f} MB.**",
        f"only {keys['requests']['UpdateItem'] - keys['keys']:,} of {keys['keys']:,} give-backs "
        f"happened during the {keys['wall_secs']:.0f} s of traffic "
        f"({keys['requests']['UpdateItem']:,} `UpdateItem`s in all) and "
        f"{keys['peak_live_keys']:,} keys were live at the peak",
    ]


def _defaults(report: dict[str, Any]) -> list[str]:
    """Each figure the bullets of the defaults' run quote."""
    targets = {t["name"]: t for t in report["targets"]}
    gapless = targets["one transactional counter with defaults: 4 processes vs 1, 128 tasks"]
    hot = targets["hot key: gapless with defaults vs the atomic counter"]
    atomic = [
        targets[f"atomic next() vs the seed's raw update_item, {n}"]
        for n in ("1 task", "16 tasks", "128 tasks")
    ]

    def first(pattern: str, text: str) -> str:
        found = re.search(pattern, text)
        assert found is not None, (pattern, text)
        return found.group(1)

    def rounds(target: dict[str, Any]) -> tuple[str, str]:
        lo, hi = first(r"; ([\d.-]+)\)", target["detail"]).split("-")
        return lo, hi

    cpu = [first(r"client CPU ([\d,]+ vs [\d,]+) µs", t["detail"]) for t in atomic]
    raw_cpu = sorted(int(c.split(" vs ")[1].replace(",", "")) for c in cpu)

    def sweep(strategy: str, sizes: set[int]) -> str:
        values = [
            r["row"]["numbers_per_s"]
            for r in report["results"]
            if r["section"] == "sweep"
            and r["setting"]["condition"] == "hot"
            and r["setting"]["strategy"] == strategy
            and r["setting"]["max_group_size"] in sizes
        ]
        return _span(values, ",.0f")

    beside = first(r"counter item: ([\d,]+) puts/s", hot["detail"])
    ceiling = first(r"ceiling ([\d,]+)", hot["detail"])

    def met(target: dict[str, Any]) -> str:
        return "met" if target["met"] else "not met"

    added = report["added_cost"]["added_us"]
    return [
        f"Measured {report['date'][:16]} UTC ({report['wall_secs']:.0f} s)",
        f"costs its client {raw_cpu[0]:,}-{raw_cpu[-1]:,} µs of CPU here",
        f"made {hot['figure']:.1f} times the atomic counter's numbers",
        f"beside the counter item made {beside} puts/s, under the {ceiling}",
        f"4 processes vs 1: {gapless['figure']}×, {met(gapless)}** (rounds"
        f" {'-'.join(rounds(gapless))})",
        f"1 task: {atomic[0]['figure']}×, {met(atomic[0])}** (rounds"
        f" {'-'.join(rounds(atomic[0]))})",
        f"(client CPU {cpu[0]} µs per number)",
        f"`next()` adds {added:.1f} µs a call",
        f"{atomic[1]['figure']:.2f}× and {atomic[2]['figure']:.2f}×, {met(atomic[2])}",
        f"{sweep('transactional', {1})} puts/s against {sweep('transactional', {99})}",
        f"Groups of 10 reached {sweep('transactional', {10})}",
        f"made {sweep('sort-key', {1})} puts/s with groups of one",
        f"and {sweep('sort-key', {10, 25, 50, 100})} grouped",
    ]


CLAIMS: dict[str, Callable[[dict[str, Any]], list[str]]] = {
    "contention": _contention,
    "defaults": _defaults,
    "fairness": _fairness,
    "many_keys": _many_keys,
}


@pytest.mark.parametrize("name", CLAIMS)
def test_the_prose_quotes_its_report(name: str) -> None:
    page = _page()
    missing = [claim for claim in CLAIMS[name](_report(name)) if claim not in page]
    assert not missing, f"docs/benchmarks.md no longer matches {name}.json: {missing}"


def test_every_contention_row_passed() -> None:
    assert all(r["ok"] for r in _report("contention")["rows"])  # "all 100 rows passed"


def test_a_changed_report_fails_the_check() -> None:
    report = _report("contention")
    for row in report["rows"]:
        if row["label"] == "sort-key +group" and row["processes"] == 1 and row["tasks"] >= 16:
            row["vs_atomic"]["numbers_per_s"] *= 2
    assert [claim for claim in _contention(report) if claim not in _page()] == [
        f"`sort-key +group` {_span((4.948, 9.69), '.1f')}×"
    ]
