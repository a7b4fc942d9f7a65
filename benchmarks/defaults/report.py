"""The defaults benchmark's report: its tables, the Markdown page and the JSON."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

from tabulate import tabulate

from benchmarks.defaults.bench import Result, _ms
from benchmarks.defaults.options import CURRENT_DEFAULTS, Options
from benchmarks.defaults.recommendation import sweep_configs
from benchmarks.row import Row


def _table(
    headers: list[str],
    cells: list[list[str]],
    style: str = "github",
    align: Sequence[str] | None = None,
) -> str:
    align = align or ("left",) + ("right",) * (len(headers) - 1)
    return tabulate(cells, headers, tablefmt=style, disable_numparse=True, colalign=align)


def _check(row: Row) -> str:
    return "ok" if row.ok else "FAILED"


def rows_table(results: Sequence[Result], extra: Sequence[str] = ()) -> str:
    """The rows of a section: the setting keys in ``extra``, then the figures."""
    headers = [
        "variant",
        *extra,
        "tasks",
        "processes",
        "numbers",
        "numbers/s",
        "p50 ms",
        "p99 ms",
        "requests/number",
        "lost races/number",
        "throttled",
        "errors",
        "client CPU µs/number",
        "of which GC",
        "cores: client/server/proxy/machine",
        "dup.",
        "gaps",
        "items ≠ numbers",
        "check",
    ]
    cells = []
    for r in results:
        c = r.cores()
        cores = "/".join("-" if c[k] is None else f"{c[k]:.2f}" for k in c)
        row = r.row
        cells.append(
            [
                row.label,
                *(str(r.setting.get(k, "")) for k in extra),
                f"{row.tasks:,}",
                f"{row.processes}",
                f"{row.numbers:,}",
                f"{row.numbers_per_s:,.0f}",
                _ms(row.p50_ms),
                _ms(row.p99_ms),
                f"{row.requests_per_number:.3f}",
                f"{row.conflicts_per_number:.3f}",
                "-" if r.throttled is None else f"{r.throttled:,}",
                f"{sum(row.errors.values()):,}",
                f"{1e6 * row.client_cpu_secs / max(row.numbers, 1):,.0f}",
                f"{1e6 * row.client_gc_secs / max(row.numbers, 1):,.0f}",
                cores,
                f"{row.duplicates}",
                f"{row.gaps:,}" + (" (allowed)" if row.gaps and row.gaps_allowed else ""),
                "-" if row.mismatched_items is None else f"{row.mismatched_items}",
                _check(row),
            ]
        )
    return _table(headers, cells)


def sweep_tables(results: Sequence[Result], options: Options) -> list[str]:
    """One table per condition: group size x window (lines) by strategy and tasks (columns),
    puts/s (pooled over the rounds) and p99 ms (their mean) in each cell."""
    configs = sweep_configs(results)
    lines: list[str] = []
    largest = max(options.sweep_sizes)
    for condition in dict.fromkeys(key[0] for key in configs):
        mine = {key: c for key, c in configs.items() if key[0] == condition}
        columns = list(dict.fromkeys((key[1], key[2]) for key in mine))
        headers = ["max_group_size", "batch_window"] + [
            f"{'gapless' if s == 'transactional' else s}, {t:,} task{'s' * (t > 1)}"
            for s, t in columns
        ]
        cells = []
        for size in options.sweep_sizes:
            for window in options.sweep_windows:
                line = [
                    f"{size}" + (" (100 for sort-key)" if size == largest else ""),
                    f"{window * 1000:g} ms",
                ]
                for strategy, tasks in columns:
                    default_size = CURRENT_DEFAULTS[strategy][0]
                    wanted = default_size if size >= tasks or size == largest else size
                    found = [
                        c
                        for (_, s, t, z, w), c in mine.items()
                        if (s, t, w, z) == (strategy, tasks, window, wanted)
                    ]
                    if not found:
                        line.append("")
                        continue
                    c = found[0]
                    mark = "" if c.ok else " FAILED"
                    if c.errors:
                        mark += f" ({c.errors} errors)"
                    line.append(f"{c.rate:,.0f} / {_ms(c.p99_ms)}{mark}")
                cells.append(line)
        lines += [
            f"### {condition}: {_condition_text(condition, options)}",
            "",
            _table(headers, cells),
            "",
        ]
    return lines


def _condition_text(condition: str, options: Options) -> str:
    lo, hi = (x * 1000 for x in options.round_trip_secs)
    return {
        "direct": "straight to the server",
        "trip": f"through the capacity model's {lo:g}-{hi:g} ms round trip and AWS's 1,000 WCU/s"
        " per partition (the sort-key strategy's one collection meets it)",
        "hot": f"through the hot key's capacity model ({options.hot_partition_wcu_per_sec:g}"
        f" WCU/s per partition, {lo:g}-{hi:g} ms round trip)",
    }[condition]


def markdown(report: dict[str, Any]) -> str:
    """The report as Markdown."""
    results: list[Result] = report["results"]
    options: Options = report["options"]
    m = report["machine"]
    v = report["versions"]
    by: dict[str, list[Result]] = {}
    for r in results:
        by.setdefault(r.section, []).append(r)
    lines = [
        "# The defaults benchmark: exactly once and group commit by default",
        "",
        f"Measured {report['date']} on {m['cpu']} ({m['cores']} cores shared by the clients,"
        f" the server and the proxies), {m['python']}; aioseq {v['aioseq']}, aiobotocore"
        f" {v['aiobotocore']}, botocore {v['botocore']}, dynamodb-autoincrement"
        f" {v['dynamodb-autoincrement']}; against {report['server']}. Load average"
        f" {', '.join(map(str, m['load_average']))} at the start,"
        f" {', '.join(map(str, report['load_average_at_end']))} at the end;"
        f" {report['wall_secs']:.0f} s in all.{_revision_text(report.get('revision'))}"
        " Command:",
        "",
        f"    {report['command']}",
        "",
        "Every row runs on a fresh table; its tasks start together and take numbers (or store"
        " items) until the row's time is up, then calls in flight finish. Every row is checked:"
        " no duplicate, no gap where the strategy promises none, stored items = numbers handed"
        " out. Ratios compare rows of this one run. CPU is read from /proc: the client's while"
        " it takes numbers, the server's (DynamoDB Local's JVM) and the proxy's over the row,"
        " and the whole machine's (other work on it included), as cores in use.",
        "",
    ]
    if rows := by.get("peer"):
        lines += [
            f"## 1. Gapless puts at {options.tasks} tasks: defaults vs dynamodb-autoincrement",
            "",
            "`store.transactional_counter(key)` with nothing else,"
            " its items spread over 32 shards (`put(ShardedItems(key, 32).key)`), against the"
            " peer's `put`"
            " (GetItem + TransactWriteItems, retried at once without bound); gapless runs"
            " before and after the peer, and the two are pooled.",
            "",
            rows_table(rows),
            "",
        ]
    if rows := by.get("hot-key"):
        lines += [
            "## 2. A hot key through the capacity model",
            "",
            f"Through `FaultProxy(endpoint, capacity=CapacityModel(partition_wcu_per_sec="
            f"{options.hot_partition_wcu_per_sec:g}, round_trip_secs={options.round_trip_secs}))`,"
            " in a child process: a write over its partition's budget is answered as DynamoDB"
            " answers a hot key, and never reaches the server. Each strategy with its defaults;"
            " `throttled` counts the proxy's throttles, `errors` the calls that raised to the"
            " caller (the task then makes its next call). The reference row (condition `trip`)"
            " runs the atomic counter right after, through the same round trip with AWS's"
            " 1,000 WCU/s per partition, which it cannot reach: what the client could take"
            " then. The gapless counter's items are spread over 32 shards, apart from the"
            " counter item; the last row keeps them beside the counter item, in its partition"
            f" (at most {options.hot_partition_wcu_per_sec / 2:g} puts/s: 2 WCU each).",
            "",
            rows_table(rows, ["condition"]),
            "",
        ]
    if rows := by.get("processes"):
        lines += [
            f"## 3. One transactional counter: {options.processes} processes vs 1",
            "",
            "In one process, group commit puts every caller waiting on the counter object in"
            " one transaction. In several, each process groups only its own callers, and their"
            " transactions race on the counter item: the loser's is canceled on the counter's"
            " condition and sent again with the value that came back (`lost races`), so each"
            " committed transaction carries fewer puts and some are sent for nothing.",
            "",
            f"{options.tasks} tasks in all; in {options.processes} processes each takes its"
            " share after a start barrier and times it there (interpreter start-up and client"
            " set-up not counted). Rounds alternate, so each round's rows ran next to each"
            " other. `per process` (JSON) holds each process's puts and timed seconds. The"
            " diagnostic rows (beside the comparison) run the same processes on stores whose"
            " retries back off at most 10 ms (`RetryPolicy(max_backoff_secs=0.01)`), to tell"
            " whether the losers' growing backoff is what slows them.",
            "",
            rows_table(rows, ["round"]),
            "",
        ]
    if rows := by.get("overhead"):
        config = report["client_config"]
        lines += [
            "## 4. aioseq's atomic `next()` vs a raw aiobotocore `update_item`",
            "",
            "The raw baseline sends the seed article's request (`ADD #value :n`,"
            " `ReturnValues=UPDATED_NEW`: what a user writes by hand; `python -m"
            " benchmarks.guard --parts` prices each part aioseq's request adds) on a client"
            " made from the same session with `DynamoStore.open`'s settings"
            f" ({', '.join(f'{k}={v!r}' for k, v in config.items())}), and reads the number"
            " from `Attributes`. Rounds alternate which goes first; the ratio is the median of"
            " the rounds' ratios (each round's two rows ran next to each other).",
            "",
            rows_table(rows, ["round"]),
            "",
        ]
        if cost := report.get("added_cost"):
            lines += [
                f"**What aioseq adds, without the network**: with aiobotocore's"
                f" `_make_api_call` stubbed (it returns the parsed answer at once), a `next()`"
                f" costs {cost['aioseq_next_us']:,} µs and the raw `update_item` call"
                f" {cost['raw_update_item_us']:,} µs: aioseq adds **{cost['added_us']:,} µs"
                f" per number** (best of 5 interleaved rounds of {cost['calls']:,} calls, one"
                " task). The stub's calls run one at a time, so their objects die young; in"
                " the rows above, 16 or 128 calls keep theirs alive across each request, and"
                " the `of which GC` column shows what the garbage collector then costs. The"
                " top costs, from cProfile of the stubbed calls (own time per call, inflated"
                f" by the profiler: read them as shares; by package:"
                f" {_packages_text(cost['profile'])}):",
                "",
                _profile_table(cost["profile"]),
                "",
            ]
        if profile := report.get("profile"):
            lines += [
                f"A real run profiled (cProfile, one row at {profile['tasks']} tasks,"
                f" {profile['numbers']:,} numbers): inside `next()` {profile['next_us']:,} µs"
                f" per number while running, of which aiobotocore's `_make_api_call`"
                f" {profile['make_api_call_us']:,} µs (the raw request pays it too) and"
                f" {profile['added_us']:,} µs aioseq's own"
                f" ({profile['added_us'] / max(profile['next_us'], 1):.0%}); by package (own"
                f" time): {_packages_text(profile)}.",
                "",
            ]
    if by.get("sweep"):
        rec = report["recommendation"]
        lines += [
            "## 5. Group size and batch window",
            "",
            "The library's defaults, read from the strategies' signatures: "
            + "; ".join(
                f"{'gapless' if k == 'transactional' else k}"
                f" {', '.join(f'{o}={v!r}' for o, v in d.items())}"
                for k, d in report.get("library_defaults", {}).items()
            )
            + ".",
            "",
            f"Each cell: puts/s / p99 ms, over {options.sweep_rounds} round(s) (every other"
            " round in reverse order; puts/s pooled, p99 averaged). A group never holds more"
            " puts than there are tasks, so a size of at least the task count behaves as the"
            " default size: those cells repeat the default's row (at 1 task, every size).",
            "",
            *sweep_tables(results, options),
            "Against the defaults (max_group_size=99, 100 for sort-key; no window), over the"
            " cells where a configuration differs from them: its puts/s and p99 as ratios to"
            " theirs (geometric means), in how many cells it had more puts/s, and the noise"
            " margin (twice the standard error of the mean, from the spread between rounds:"
            f" sigma {rec['sigma']:.1%} per row). It beats the defaults when its gain passes the"
            " margin, it wins in two thirds of the cells, and its p99 is not worse beyond the"
            " margin.",
            "",
            _table(
                [
                    "max_group_size",
                    "batch_window",
                    "cells",
                    "puts/s vs defaults",
                    "wins",
                    "p99 vs defaults",
                    "margin",
                    "beats the defaults",
                ],
                [
                    [
                        f"{c['max_group_size']}",
                        f"{c['batch_window_secs'] * 1000:g} ms",
                        f"{c['cells']}",
                        f"{c['puts_per_s_vs_defaults']:.2f}×",
                        f"{c['wins']}/{c['cells']}",
                        f"{c['p99_vs_defaults']:.2f}×",
                        f"{c['margin']:.1%}",
                        "yes" if c["beats_defaults"] else "no",
                    ]
                    for c in rec["comparisons"]
                ],
            ),
            "",
            _recommendation_text(rec),
            "",
            "Every row of the sweep:",
            "",
            rows_table(
                by["sweep"], ["condition", "strategy", "max_group_size", "batch_window_secs"]
            ),
            "",
        ]
    return "\n".join(lines) + "\n"


def _revision_text(revision: dict[str, Any] | None) -> str:
    if not revision:
        return ""
    changed = revision["changed"]
    return f" Code: commit {revision['commit'][:12]}" + (
        f", with uncommitted changes to {', '.join(f'`{c}`' for c in changed)}." if changed else "."
    )


def _packages_text(profile: dict[str, Any]) -> str:
    return ", ".join(f"{k} {v:,} µs" for k, v in profile["own_us_by_package"].items())


def _profile_table(profile: dict[str, Any]) -> str:
    return _table(
        ["function", "own µs/call", "cumulative µs/call", "calls/call"],
        [
            [
                f"`{f['function']}`",
                f"{f['own_us']:,}",
                f"{f['cumulative_us']:,}",
                f"{f['calls_per_number']:g}",
            ]
            for f in profile["top"]
        ],
    )


def _recommendation_text(rec: dict[str, Any]) -> str:
    chosen = rec["recommended"]
    size = chosen["max_group_size"]
    what = (
        f"max_group_size={size}"
        + (" (100 for sort-key)" if size == rec["largest"] else "")
        + f", batch_window_secs={chosen['batch_window_secs']:g}"
    )
    if rec["keep_current"]:
        return (
            f"**Recommendation: keep the defaults** ({what}): no other configuration beats them"
            " beyond the noise in most of the cells where it differs from them."
        )
    found = next(
        c
        for c in rec["comparisons"]
        if (c["max_group_size"], c["batch_window_secs"]) == (size, chosen["batch_window_secs"])
    )
    return (
        f"**Recommendation: {what}**: {found['puts_per_s_vs_defaults']:.2f}× the defaults'"
        f" puts/s over the {found['cells']} cells where it differs from them (better in"
        f" {found['wins']}), p99 {found['p99_vs_defaults']:.2f}×; noise margin"
        f" {found['margin']:.1%}."
    )


def _jsonable(report: dict[str, Any]) -> dict[str, Any]:
    out = dict(report)
    out["options"] = asdict(report["options"])
    out["results"] = [{**asdict(r), "cores": r.cores()} for r in report["results"]]
    return out
