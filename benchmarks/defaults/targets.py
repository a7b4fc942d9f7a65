"""Each section's target (a figure the issue asks for), judged from its rows."""

from __future__ import annotations

import math
import os
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from benchmarks.defaults.bench import Result
from benchmarks.defaults.options import Options
from benchmarks.row import Row

#: ``AtomicCounter.next()`` against the seed article's raw request, at each concurrency.
OVERHEAD_GOAL = 0.95


def _ms(ms: float) -> str:
    return f"{ms:,.0f}" if ms >= 100 else f"{ms:.3g}" if ms >= 0.001 else f"{ms:.2g}"


@dataclass
class Target:
    """A figure the issue asks for, and whether this run met it.

    Attributes:
        name: what is measured.
        figure: the measured value (a ratio, or a share for the hot key's goodput).
        goal: the target (the figure must be at least this).
        met: the figure reached the goal (and, where stated, nothing else failed).
        detail: the figures behind it.
        why: when not met, the measurements that explain it.
    """

    name: str
    figure: float
    goal: float
    unit: str
    met: bool
    detail: str
    why: str = ""


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def _pooled_rate(results: Sequence[Result]) -> float:
    """Numbers per second over several rows: all their numbers over all their time."""
    wall = sum(r.row.wall_secs for r in results)
    return sum(r.row.numbers for r in results) / wall if wall else 0.0


def _cores_text(results: Sequence[Result]) -> str:
    """Mean cores in use by client, server and proxy, and the whole machine."""
    keys = ("client", "server", "proxy", "machine")
    parts = []
    for key in keys:
        values = [v for c in (r.cores() for r in results) if (v := c[key]) is not None]
        if values:
            parts.append(f"{key} {_mean(values):.2f}")
    return f"cores busy: {', '.join(parts)} (of {os.cpu_count()})" if parts else ""


def _cpu_us_per_number(results: Sequence[Result]) -> float:
    """The client's CPU per number over several rows, in µs."""
    numbers = sum(r.row.numbers for r in results)
    return 1e6 * sum(r.row.client_cpu_secs for r in results) / max(numbers, 1)


def _gc_text(results: Sequence[Result]) -> str:
    """The garbage collector's share of the client's CPU over several rows."""
    numbers = max(sum(r.row.numbers for r in results), 1)
    gc_us = 1e6 * sum(r.row.client_gc_secs for r in results) / numbers
    collections = [sum(r.row.gc_collections[g] for r in results) for g in range(3)]
    return (
        f"GC {gc_us:,.0f} µs per number ({1000 * collections[0] / numbers:,.0f} young"
        f" collections per 1,000 numbers, {collections[2]} full)"
    )


def _puts_per_transaction(row: Row) -> float:
    transactions = row.requests.get("TransactWriteItems", 0)
    return row.numbers / transactions if transactions else 0.0


def _pair_ratios(
    results: Sequence[Result], first: Callable[[Result], bool]
) -> list[tuple[float, Result, Result]]:
    """Per round: ``(rate of the row ``first`` picks / rate of the other row, that row, the
    other)``, for rounds holding one of each."""
    rounds: dict[Any, list[Result]] = {}
    for r in results:
        rounds.setdefault(r.setting.get("round"), []).append(r)
    pairs = []
    for rows in rounds.values():
        a = [r for r in rows if first(r)]
        b = [r for r in rows if not first(r)]
        if len(a) == 1 and len(b) == 1:
            ratio = a[0].rate / b[0].rate if b[0].rate else math.inf
            pairs.append((ratio, a[0], b[0]))
    return pairs


def _ratio_text(pairs: Sequence[tuple[float, Result, Result]]) -> str:
    ratios = sorted(p[0] for p in pairs)
    if len(ratios) == 1:
        return "one round"
    return f"median of {len(ratios)} alternating rounds; {ratios[0]:.2f}-{ratios[-1]:.2f}"


def _per_process_text(result: Result) -> str:
    shares = result.row.per_process
    if len(shares) < 2:
        return ""
    numbers = "/".join(f"{int(s['numbers']):,}" for s in shares)
    walls = "/".join(f"{s['wall_secs']:.1f}" for s in shares)
    return f"puts per process {numbers} in {walls} s"


def targets(
    results: Sequence[Result], options: Options, added_cost: dict[str, Any] | None = None
) -> list[Target]:
    """Each section's target, judged from its rows (sections not run are left out). Where a
    section alternates rounds, the figure is the median of the rounds' ratios (each round's
    rows ran next to each other), with the range. ``added_cost``: what
    :func:`measure_added_cost` found, to explain the overhead's figure."""
    found: list[Target] = []
    by: dict[str, list[Result]] = {}
    for r in results:
        by.setdefault(r.section, []).append(r)

    if peer_rows := by.get("peer"):
        ours = [r for r in peer_rows if r.row.name == "transactional"]
        peer = [r for r in peer_rows if r.row.name != "transactional"]
        ours_rate, peer_rate = _pooled_rate(ours), _pooled_rate(peer)
        ratio = ours_rate / peer_rate if peer_rate else math.inf
        found.append(
            Target(
                f"gapless puts/s at {options.tasks} tasks, defaults vs dynamodb-autoincrement",
                round(ratio, 1),
                20,
                "×",
                ratio >= 20,
                f"{ours_rate:,.0f} vs {peer_rate:,.0f} puts/s (gapless before and after the"
                f" peer: {' and '.join(f'{r.rate:,.0f}' for r in ours)}); p99"
                f" {_mean([r.row.p99_ms for r in ours]):,.0f} vs"
                f" {_mean([r.row.p99_ms for r in peer]):,.0f} ms;"
                f" {_mean([r.row.requests_per_number for r in ours]):.3f} vs"
                f" {_mean([r.row.requests_per_number for r in peer]):.2f} requests per put",
                ""
                if ratio >= 20
                else f"the peer lost {_mean([r.row.conflicts_per_number for r in peer]):.2f}"
                " races per put; " + _cores_text(peer_rows),
            )
        )

    if everything := by.get("hot-key"):
        hot = [r for r in everything if not r.setting.get("reference")]
        unbound = next((r for r in everything if r.setting.get("reference")), None)
        atomic, allocator, gapless = hot[0], hot[1], hot[2]
        beside = hot[3] if len(hot) > 3 else None
        budget = options.hot_partition_wcu_per_sec
        share = atomic.rate / budget
        reference = (
            f"; unbound (1,000 WCU/s, the same round trip) just after, it took"
            f" {unbound.rate:,.0f} numbers/s"
            if unbound
            else ""
        )
        errors = sum(sum(r.row.errors.values()) for r in hot)
        met = share >= 0.7 and errors == 0
        throttled = atomic.throttled or 0
        found.append(
            Target(
                f"hot key ({budget:g} WCU/s per partition): atomic counter's goodput / budget,"
                " no error to callers",
                round(share * 100, 1),
                70,
                "%",
                met,
                f"{atomic.rate:,.0f} numbers/s of {budget:g} WCU/s; {throttled:,} throttled"
                f" requests ({throttled / max(atomic.row.numbers, 1):.2f} per number), p99"
                f" {atomic.row.p99_ms:,.0f} ms; errors to callers: {errors}"
                f" ({_errors_text(hot)}){reference}",
                ""
                if met
                else f"{atomic.row.retries_per_number:.2f} retries per number; "
                + _cores_text([atomic])
                + (
                    f"; without a binding budget the client took only {unbound.rate:,.0f}"
                    " numbers/s then: the budget was not what limited it"
                    if unbound and unbound.rate < 0.7 * budget
                    else ""
                ),
            )
        )
        for row, goal, name in ((allocator, 20, "allocator"), (gapless, 3, "gapless")):
            ratio = row.rate / atomic.rate if atomic.rate else math.inf
            extra = ""
            if row is gapless:
                extra = (
                    f"; items over 32 shards: {_puts_per_transaction(row.row):.1f} puts per"
                    f" transaction, {(row.consumed_wcu or 0) / max(row.row.numbers, 1):.2f} WCU"
                    f" per put, {row.throttled or 0:,} throttled"
                )
                if beside is not None:
                    extra += (
                        f"; items beside the counter item: {beside.rate:,.0f} puts/s"
                        f" ({beside.throttled or 0:,} throttled), the partition's ceiling"
                        f" {budget / 2:g}"
                    )
            found.append(
                Target(
                    f"hot key: {name} with defaults vs the atomic counter",
                    round(ratio, 1),
                    goal,
                    "×",
                    ratio >= goal,
                    f"{row.rate:,.0f} vs {atomic.rate:,.0f} numbers/s; p99"
                    f" {_ms(row.row.p99_ms)} ms{extra}",
                    ""
                    if ratio >= goal
                    else f"{row.throttled or 0:,} throttled, {row.row.conflicts_per_number:.3f}"
                    " lost races per number; " + _cores_text([row]),
                )
            )

    if everything := by.get("processes"):
        procs = [r for r in everything if not r.setting.get("diagnostic")]
        diagnosis = [r for r in everything if r.setting.get("diagnostic")]
        pairs = _pair_ratios(procs, lambda r: r.setting["processes"] > 1)
        ratio = statistics.median(p[0] for p in pairs) if pairs else math.nan
        many = [p[1] for p in pairs]
        one = [p[2] for p in pairs]
        n = many[0].setting["processes"] if many else options.processes

        def shape(rows: Sequence[Result]) -> str:
            numbers = sum(r.row.numbers for r in rows)
            conflicts = sum(r.row.conflicts_per_number * r.row.numbers for r in rows)
            transactions = sum(r.row.requests.get("TransactWriteItems", 0) for r in rows)
            wall = sum(r.row.wall_secs for r in rows)
            return (
                f"{transactions / max(wall, 1e-9):,.0f} transactions/s sent,"
                f" {conflicts / max(transactions, 1):.2f} lost races per transaction,"
                f" {numbers / max(transactions - conflicts, 1):.1f} puts per committed"
                f" transaction, p99 {_mean([r.row.p99_ms for r in rows]):,.0f} ms, client CPU"
                f" {_cpu_us_per_number(rows):,.0f} µs per put; " + _cores_text(rows)
            )

        found.append(
            Target(
                f"one transactional counter with defaults: {n} processes vs 1,"
                f" {options.tasks} tasks",
                round(ratio, 2),
                0.8,
                "×",
                ratio >= 0.8,
                f"{_pooled_rate(many):,.0f} vs {_pooled_rate(one):,.0f} puts/s"
                f" ({_ratio_text(pairs)})",
                ""
                if ratio >= 0.8
                else f"{n} processes: {shape(many)}; "
                + "; ".join(t for r in many if (t := _per_process_text(r)))
                + f". 1 process: {shape(one)}"
                + (
                    f". Diagnostic, the same {n} processes with retries backing off at most"
                    f" 10 ms: {_pooled_rate(diagnosis):,.0f} puts/s"
                    f" ({_pooled_rate(diagnosis) / _pooled_rate(one):.2f}× one process),"
                    f" {shape(diagnosis)}; "
                    + "; ".join(t for r in diagnosis if (t := _per_process_text(r)))
                    if diagnosis and _pooled_rate(one)
                    else ""
                ),
            )
        )

    if over := by.get("overhead"):
        for tasks in options.overhead_tasks:
            rows = [r for r in over if r.setting["tasks"] == tasks]
            pairs = _pair_ratios(rows, lambda r: r.row.name == "atomic")
            if not pairs:
                continue
            ratio = statistics.median(p[0] for p in pairs)
            aioseq = [p[1] for p in pairs]
            raw = [p[2] for p in pairs]
            cpu_us = _cpu_us_per_number
            found.append(
                Target(
                    f"atomic next() vs the seed's raw update_item, {tasks} task{'s' * (tasks > 1)}",
                    round(ratio, 3),
                    OVERHEAD_GOAL,
                    "×",
                    ratio >= OVERHEAD_GOAL,
                    f"{_pooled_rate(aioseq):,.0f} vs {_pooled_rate(raw):,.0f} numbers/s"
                    f" ({_ratio_text(pairs)}); client CPU {cpu_us(aioseq):,.0f} vs"
                    f" {cpu_us(raw):,.0f} µs per number",
                    ""
                    if ratio >= OVERHEAD_GOAL
                    else f"aioseq's client spends {cpu_us(aioseq) - cpu_us(raw):,.0f} µs more"
                    f" CPU per number; {_gc_text(aioseq)} against the raw rows'"
                    f" {_gc_text(raw)}"
                    + (
                        f" (without the network it adds {added_cost['added_us']:,} µs per call:"
                        f" against the raw request's {cpu_us(raw):,.0f} µs, a ceiling of"
                        f" {cpu_us(raw) / (cpu_us(raw) + added_cost['added_us']):.2f}× where"
                        " the client's CPU is the limit)"
                        if added_cost
                        else ""
                    )
                    + "; "
                    + _cores_text(aioseq),
                )
            )
    return found


def _errors_text(results: Sequence[Result]) -> str:
    parts = [f"{r.row.label}: {dict(r.row.errors)}" for r in results if r.row.errors]
    return "; ".join(parts) or "none"
