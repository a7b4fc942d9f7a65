"""Numbers per second under contention, for every strategy, measured the same way in one run.

    python -m benchmarks                                   # embedded moto server, no setup
    scripts/in-loopback-netns .venv/bin/python -m benchmarks --server dynamodb-local
    python -m benchmarks --endpoint-url http://127.0.0.1:8000
    python -m benchmarks --quick                           # seconds: what the tests run

Each row: ``C`` tasks started together with ``asyncio.gather`` take numbers from one counter key
until ``--count`` numbers are taken or the row's time budget (``--row-secs``) is spent; a task
starts no call after the budget, and calls in flight finish, so every row takes at least ``C``
numbers. ``--processes 1,4`` (the default) runs every row in one process, then in 4 processes
on one key (the tasks and the count split between them, started together at a barrier), which
is where conditional writes meet real contention: in one process each counter object lets one
conditional write race at a time. Every row gets a fresh table.

Figures per row: numbers/s; p50 and p99 latency per number (from call to return); DynamoDB
requests per number, conditional-check failures per number and retries per number, all counted
at each client by a botocore ``before-send`` hook or by the strategy; wasted numbers (consumed
from the counter, never handed out); and duplicates, gaps and stored-item mismatches, checked
from the numbers the calls returned and the items the table holds. Each figure is also given as
a ratio to the plain atomic counter's row at the same concurrency in the same run.

Writes ``contention.json`` (machine, versions, date, parameters, rows), ``contention.md`` and
``contention.png`` (numbers/s against concurrency, log-log, one line per strategy) into
``--out``, prints the table, and exits 1 if any row broke a guarantee.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from tabulate import tabulate
from tqdm import tqdm

from aioseq import DynamoStore
from benchmarks import _report
from benchmarks import variants as variants_module
from benchmarks._report import header
from benchmarks.hot_path import measure_hot_path
from benchmarks.row import Row as Row
from benchmarks.row import process_pool, run_row, server
from benchmarks.variants import Variant

__all__ = ["Options", "Row", "main", "run"]


# --- the run ---------------------------------------------------------------------------------


def _compare_with_atomic(rows: Sequence[Row]) -> None:
    """Fill each row's ``vs_atomic`` from the atomic row with the same processes and tasks."""
    atomic = {(r.processes, r.tasks): r for r in rows if r.name == "atomic"}
    for row in rows:
        reference = atomic.get((row.processes, row.tasks))
        if reference is None:
            continue
        row.vs_atomic = {
            figure: round(getattr(row, figure) / getattr(reference, figure), 3)
            if getattr(reference, figure)
            else None
            for figure in ("numbers_per_s", "p50_ms", "p99_ms", "requests_per_number")
        }


@dataclass(frozen=True)
class Options:
    """What to run. Sizes: each row takes ``max(count, concurrency)`` numbers at most and stops
    starting calls after ``row_secs``; ``warmup_secs`` of untimed atomic and transactional
    traffic first (DynamoDB Local's JIT)."""

    concurrency: tuple[int, ...] = (1, 16, 128, 1024)
    processes: tuple[int, ...] = (1, 4)
    count: int = 10_000
    row_secs: float = 2.5
    strategies: tuple[str, ...] = variants_module.NAMES
    block_sizes: tuple[int, ...] = (10, 100, 1_000)
    warmup_secs: float = 3.0
    hot_calls: int = 200_000


QUICK = Options(
    concurrency=(4,),
    processes=(1, 2),
    count=20,
    row_secs=0.2,
    block_sizes=(10,),
    warmup_secs=0.0,
    hot_calls=10_000,
)


def plan(options: Options, chosen: Sequence[Variant]) -> list[tuple[Variant, int, int]]:
    """The rows, as ``(variant, processes, concurrency)``: for each process count, each
    concurrency, each variant (those that run in one process only, once)."""
    return [
        (variant, processes, concurrency)
        for processes in options.processes
        for concurrency in options.concurrency
        for variant in chosen
        if processes == 1 or variant.multi_process
    ]


async def _warm_up(endpoint_url: str, inspector: DynamoStore, secs: float) -> None:
    for variant in variants_module.select(["transactional"], ()):
        await run_row(
            variant, endpoint_url, inspector, concurrency=16, count=10**6, time_budget_secs=secs
        )


async def run(
    options: Options,
    endpoint_url: str,
    *,
    chosen: Sequence[Variant] | None = None,
    on_row: Callable[[Row], None] | None = None,
) -> list[Row]:
    """Every row of :func:`plan`, compared with the atomic rows. ``chosen`` defaults to the
    variants of ``options.strategies``."""
    if chosen is None:
        chosen = variants_module.select(options.strategies, options.block_sizes)
    rows: list[Row] = []
    pools: dict[int, ProcessPoolExecutor] = {}
    async with DynamoStore.open(endpoint_url=endpoint_url) as inspector:
        if options.warmup_secs:
            await _warm_up(endpoint_url, inspector, options.warmup_secs)
        try:
            for variant, processes, concurrency in plan(options, chosen):
                if processes > 1 and processes not in pools:
                    pools[processes] = process_pool(processes)
                row = await run_row(
                    variant,
                    endpoint_url,
                    inspector,
                    concurrency=concurrency,
                    processes=processes,
                    count=options.count,
                    time_budget_secs=options.row_secs,
                    pool=pools.get(processes),
                )
                rows.append(row)
                if on_row is not None:
                    on_row(row)
        finally:
            for pool in pools.values():
                pool.shutdown()
    _compare_with_atomic(rows)
    return rows


# --- output ----------------------------------------------------------------------------------


def _ratio(row: Row, figure: str) -> str:
    ratio = row.vs_atomic.get(figure)
    if ratio is None:
        return ""
    return (
        f" ({ratio:,.0f}×)"
        if ratio >= 100
        else f" ({ratio:.2f}×)"
        if ratio >= 0.01
        else " (<0.01×)"
    )


def _ms(ms: float) -> str:
    """Three significant digits, without exponents: 1,234; 56.7; 0.00123."""
    return f"{ms:,.0f}" if ms >= 100 else f"{ms:.3g}" if ms >= 0.001 else f"{ms:.2g}"


def table_rows(rows: Sequence[Row]) -> tuple[list[str], list[list[str]]]:
    """The full table: headers and cells (ratios to the atomic counter in parentheses)."""
    headers = [
        "strategy",
        "processes",
        "tasks",
        "numbers",
        "numbers/s",
        "p50 ms",
        "p99 ms",
        "requests/number",
        "cond. failures/number",
        "retries/number",
        "wasted",
        "duplicates",
        "gaps",
        "items ≠ numbers",
        "check",
    ]
    cells = [
        [
            r.label,
            f"{r.processes}",
            f"{r.tasks:,}",
            f"{r.numbers:,}",
            f"{r.numbers_per_s:,.0f}{_ratio(r, 'numbers_per_s')}",
            f"{_ms(r.p50_ms)}{_ratio(r, 'p50_ms')}",
            f"{_ms(r.p99_ms)}{_ratio(r, 'p99_ms')}",
            f"{r.requests_per_number:.3f}",
            f"{r.conflicts_per_number:.3f}",
            f"{r.retries_per_number:.3f}",
            f"{r.wasted:,}",
            f"{r.duplicates}",
            f"{r.gaps:,}" + (" (allowed)" if r.gaps and r.gaps_allowed else ""),
            "-" if r.mismatched_items is None else f"{r.mismatched_items}",
            "ok" if r.ok else "FAILED",
        ]
        for r in rows
    ]
    return headers, cells


def summary_rows(rows: Sequence[Row]) -> tuple[list[str], list[list[str]]]:
    """Numbers/s by strategy (lines) and tasks (columns), one table per process count, with
    the ratio to the atomic counter."""
    columns = sorted({(r.processes, r.tasks) for r in rows})
    headers = ["strategy"] + [
        f"{tasks:,} task{'s' * (tasks > 1)}" + (f" in {p} processes" if p > 1 else "")
        for p, tasks in columns
    ]
    by_label: dict[str, dict[tuple[int, int], Row]] = {}
    for r in rows:
        by_label.setdefault(r.label, {})[(r.processes, r.tasks)] = r
    cells = [
        [label]
        + [
            f"{row.numbers_per_s:,.0f}{_ratio(row, 'numbers_per_s')}"
            if (row := found.get(column))
            else ""
            for column in columns
        ]
        for label, found in by_label.items()
    ]
    return headers, cells


def _tabulate(table: tuple[list[str], list[list[str]]], style: str) -> str:
    headers, cells = table
    align = ("left",) + ("right",) * (len(headers) - 1)
    return tabulate(cells, headers, tablefmt=style, disable_numparse=True, colalign=align)


def markdown(report: dict[str, Any], rows: Sequence[Row]) -> str:
    """The report as Markdown: where and how it was measured, numbers/s by concurrency, the
    full table, and the allocator's hot path."""
    machine = report["machine"]
    hot = report.get("hot_path")
    lines = [
        "# Contention benchmark",
        "",
        f"Measured {report['date']} on {machine['cpu']} ({machine['cores']} cores,"
        f" load average {', '.join(map(str, machine['load_average']))} at the start),"
        f" {machine['python']}, aioseq {report['versions']['aioseq']}, against"
        f" {report['server']}; {report['wall_secs']:.0f} s in all. Command:",
        "",
        f"    {report['command']}",
        "",
        "Rows: " + report["sizing"],
        "",
        "## Numbers per second (× the atomic counter at the same concurrency)",
        "",
        _tabulate(summary_rows(rows), "github"),
        "",
        "## Every figure",
        "",
        _tabulate(table_rows(rows), "github"),
        "",
        "Latencies are per number, from call to return. Requests are counted at each client by"
        " a botocore `before-send` hook (the atomic counter's is 1.000 per number, so that"
        " column is its own ratio). `wasted`: numbers consumed from the counter and never"
        " handed out. `gaps`: numbers missing between the lowest and highest handed out;"
        " `items ≠ numbers`: stored items whose number was not handed out, plus numbers"
        " handed out without an item.",
    ]
    if hot:
        lines += [
            "",
            f"Allocator hot path: a `next()` served from a block costs"
            f" {hot['allocator_next_ns']:,} ns against {hot['bare_next_ns']:,} ns for a bare"
            f" in-memory `async def next()` ({hot['ratio']}×; best of 5 rounds of"
            f" {hot['calls']:,} calls).",
        ]
    return "\n".join(lines) + "\n"


_FAMILY_COLOURS = {
    "bare": "0.6",
    "boto3": "0.35",
    "atomic": "black",
    "allocator": "tab:green",
    "optimistic": "tab:blue",
    "sort-key": "tab:orange",
    "transactional": "tab:red",
    "dynamodb-autoincrement": "tab:purple",
}


def plot(report: dict[str, Any], rows: Sequence[Row], path: Path) -> None:
    """numbers/s against concurrent tasks, log-log, one line per strategy, one panel per
    process count."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import NullLocator

    process_counts = sorted({r.processes for r in rows})
    figure, axes = plt.subplots(
        1,
        len(process_counts),
        figsize=(6.5 * len(process_counts) + 3, 6),
        sharey=True,
        squeeze=False,
    )
    allocator_markers = iter("os^vD<>")
    markers: dict[str, str] = {}
    for axis, processes in zip(axes[0], process_counts, strict=True):
        for label in dict.fromkeys(r.label for r in rows):
            line = sorted(
                (r for r in rows if r.label == label and r.processes == processes),
                key=lambda r: r.tasks,
            )
            if not line:
                continue
            name = line[0].name
            if name == "allocator" and label not in markers:
                markers[label] = next(allocator_markers, "o")
            axis.plot(
                [r.tasks for r in line],
                [r.numbers_per_s for r in line],
                label=label,
                color=_FAMILY_COLOURS.get(name, "tab:gray"),
                linestyle="--" if label.endswith("+group") or name == "bare" else "-",
                linewidth=2.5 if name == "atomic" else 1.5,
                marker=markers.get(label, "o"),
                markersize=4,
            )
        axis.set_xscale("log")
        axis.set_yscale("log")
        ticks = sorted({r.tasks for r in rows if r.processes == processes})
        axis.set_xticks(ticks, [f"{t:,}" for t in ticks])
        axis.xaxis.set_minor_locator(NullLocator())
        axis.set_xlabel("concurrent tasks (asyncio.gather)")
        axis.set_title("1 process" if processes == 1 else f"{processes} processes on one key")
        axis.grid(True, which="both", alpha=0.3)
    axes[0][0].set_ylabel("numbers / s")
    handles, labels = axes[0][0].get_legend_handles_labels()
    figure.legend(handles, labels, loc="center right", fontsize="small")
    figure.suptitle(f"aioseq contention benchmark: {report['server']}, {report['date'][:10]}")
    figure.tight_layout(rect=(0, 0, 1 - 2.6 / figure.get_figwidth(), 1))
    figure.savefig(path, dpi=110)
    plt.close(figure)


# --- command line ----------------------------------------------------------------------------


#: The settings the command line takes (``--row-secs`` for ``row_secs``).
OPTIONS = (
    "concurrency",
    "processes",
    "count",
    "row_secs",
    "strategies",
    "block_sizes",
    "warmup_secs",
    "hot_calls",
)


def parser() -> argparse.ArgumentParser:
    parser = _report.parser("python -m benchmarks", __doc__)
    _report.add_settings(
        parser,
        Options(),
        OPTIONS,
        quick=True,
        choices={"strategies": variants_module.NAMES},
        notes={
            "concurrency": "tasks per row",
            "processes": "process counts per row",
            "count": "numbers per row at most (at least the tasks)",
            "row_secs": "a row starts no call after this",
            "strategies": "atomic is always run",
            "block_sizes": "allocator blocks",
            "warmup_secs": "untimed traffic first",
            "hot_calls": "calls per round of the hot-path test",
        },
    )
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    return parser


def options_from(args: argparse.Namespace) -> Options:
    """``--quick`` or the full defaults, with each option given on the command line on top."""
    return _report.settings_from(args, Options(), OPTIONS, QUICK)


def _sizing(options: Options) -> str:
    return (
        f"each row's tasks start together and take numbers until {options.count:,} are taken"
        f" or {options.row_secs:g} s have passed (calls in flight then finish, so a row takes"
        f" at least one number per task); a fresh table per row; {options.warmup_secs:g} s of"
        " untimed warm-up first."
    )


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    options = options_from(args)
    chosen = variants_module.select(options.strategies, options.block_sizes)
    rows_planned = len(plan(options, chosen))
    started = time.perf_counter()
    command = "python -m benchmarks " + " ".join(sys.argv[1:] if argv is None else argv)
    with server(args.server, args.endpoint_url) as (endpoint, description):
        report: dict[str, Any] = {
            "benchmark": "contention",
            **header(endpoint),
            "server": description,
            "command": command.strip(),
            "parameters": asdict(options),
            "sizing": _sizing(options),
        }
        with tqdm(total=rows_planned, unit="row", disable=args.no_progress, file=sys.stderr) as bar:

            def done(row: Row) -> None:
                bar.set_postfix_str(f"{row.label}, {row.tasks} tasks", refresh=False)
                bar.update()

            rows = asyncio.run(run(options, endpoint, chosen=chosen, on_row=done))
        report["hot_path"] = asyncio.run(measure_hot_path(endpoint, options.hot_calls))
    report["wall_secs"] = round(time.perf_counter() - started, 1)
    report["rows"] = [asdict(row) for row in rows]
    report["ok"] = all(row.ok for row in rows)

    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    (out / "contention.json").write_text(json.dumps(report, indent=2) + "\n")
    (out / "contention.md").write_text(markdown(report, rows))
    plot(report, rows, out / "contention.png")

    print(_tabulate(table_rows(rows), "simple"))
    hot = report["hot_path"]
    print(
        f"\nallocator hot path: {hot['allocator_next_ns']} ns per next() from a block,"
        f" {hot['bare_next_ns']} ns per bare async next() ({hot['ratio']}×)"
    )
    print(
        f"{len(rows)} rows in {report['wall_secs']:.0f} s; wrote {out}/contention.{{json,md,png}}"
    )
    if not report["ok"]:
        failed = ", ".join(f"{r.label} ({r.tasks} tasks)" for r in rows if not r.ok)
        print(f"FAILED: a guarantee was broken in {failed}", file=sys.stderr)
        return 1
    return 0
