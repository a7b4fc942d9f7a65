"""The ``aioseq`` command (also ``python -m aioseq``).

Its commands and options are what ``aioseq --help`` and ``aioseq COMMAND --help`` print, from
the parser below; docs/cli.md shows that help, generated from it (``make docs-outputs``), and
docs/operations.md how to operate counters with it.

This is a public contract that scripts rely on: ``next`` prints only numbers on stdout, one per
line, as they are taken (``set``, ``list``, ``describe``, ``start-after`` and ``iam-policy``
print only their results there too); errors go to stderr as one line, with exit status 1 (2
for usage; ``audit``: 1 for a finding, 2 for an error), and a traceback only with ``-v``.
Options may be given before or after the command.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import json
import logging
import re
import sys
import traceback
from collections.abc import Callable, Sequence
from typing import Any

from aioseq import __version__, admin
from aioseq._store import DynamoStore
from aioseq._strategy_table import STRATEGIES, STRATEGY_NAMES, strategy_named
from aioseq._workload import make_taker, run_workload
from aioseq.admin import CounterAudit, CounterInfo, ScanProgress
from aioseq.config import DEFAULT_TABLE_NAME, EXPIRES_ATTRIBUTE, TableSpec
from aioseq.errors import (
    ConfigurationError,
    CounterNotFound,
    CounterValueInvalid,
    CounterWouldMoveBack,
    TableNotFound,
)
from aioseq.series import period_counter_key

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    # SUPPRESS: the value given before the command survives if none is given after it.
    common.add_argument(
        "--endpoint-url",
        default=argparse.SUPPRESS,
        metavar="URL",
        help="DynamoDB endpoint (default: AWS_ENDPOINT_URL_DYNAMODB, AWS_ENDPOINT_URL, or AWS)",
    )
    common.add_argument(
        "--region",
        default=argparse.SUPPRESS,
        metavar="NAME",
        help="AWS region (default: usual chain)",
    )
    common.add_argument(
        "--table",
        default=argparse.SUPPRESS,
        metavar="NAME",
        help=f"table name (default: {DEFAULT_TABLE_NAME})",
    )
    common.add_argument(
        "--regions",
        default=argparse.SUPPRESS,
        metavar="R1,R2",
        help="global table: Region-scoped numbering over these Regions, in slot order"
        " (docs/global-tables.md)",
    )
    common.add_argument(
        "--region-slots",
        type=int,
        default=argparse.SUPPRESS,
        metavar="N",
        help="with --regions: the count of slots (default: the Regions listed)",
    )
    common.add_argument(
        "--home-region",
        default=argparse.SUPPRESS,
        metavar="NAME",
        help="global table: the one Region that writes counters (elsewhere: read only)",
    )
    common.add_argument(
        "-v", "--verbose", action="count", default=argparse.SUPPRESS, help="log to stderr"
    )

    parser = argparse.ArgumentParser(
        prog="aioseq",
        description="Ever-increasing sequence numbers from Amazon DynamoDB.",
        parents=[common],
    )
    parser.add_argument("--version", action="version", version=f"aioseq {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    create = commands.add_parser(
        "create-table",
        parents=[common],
        help="create the table (on-demand) if missing, and wait until it is active",
    )
    create.add_argument(
        "--ttl",
        action="store_true",
        help="also enable the table's time to live on aioseq_expires, so that DynamoDB deletes"
        " expired idempotency records (as enable-ttl does)",
    )
    commands.add_parser(
        "enable-ttl",
        parents=[common],
        help="enable the table's time to live on aioseq_expires (DynamoDB then deletes expired"
        " idempotency records); nothing to do if it is",
    )

    take = commands.add_parser(
        "next", parents=[common], help="take numbers from a counter and print them, one per line"
    )
    take.add_argument("key", metavar="KEY", help="the counter key")
    take.add_argument("--strategy", choices=STRATEGY_NAMES, default="atomic")
    take.add_argument("--count", type=int, default=1, metavar="N", help="numbers to take (1)")
    take.add_argument(
        "--concurrency", type=int, default=1, metavar="C", help="concurrent tasks (1)"
    )
    take.add_argument(
        "--block-size",
        type=int,
        default=100,
        metavar="B",
        help="allocator: the first block's size; it then follows demand (100)",
    )
    take.add_argument(
        "--stride",
        type=int,
        default=1,
        metavar="S",
        help="allocator: the step between numbers, recorded on the counter (1)",
    )
    take.add_argument(
        "--offset",
        type=int,
        default=1,
        metavar="O",
        help="allocator: the first number, recorded on the counter (1)",
    )
    take.add_argument(
        "--max-value",
        type=int,
        default=None,
        metavar="M",
        help="the highest number handed out, as the counter records it (a counter made with"
        " one refuses writers without it)",
    )
    take.add_argument(
        "--group",
        action=argparse.BooleanOptionalAction,
        default=None,
        help=f"{', '.join(s.name for s in STRATEGIES if s.grouped)}: group commit of "
        "concurrent calls (on by default; --no-group turns it off)",
    )

    current = commands.add_parser("current", parents=[common], help="print a counter's value")
    current.add_argument("key", metavar="KEY", help="the counter key")
    current.add_argument(
        "--strategy",
        choices=STRATEGY_NAMES,
        default="atomic",
        help="sort-key: the highest sort key; others: the counter item's value",
    )

    demo = commands.add_parser(
        "demo",
        parents=[common],
        help="run every strategy, check the numbers and print a table "
        "(starts an embedded server when no endpoint is configured)",
    )
    demo.add_argument("--count", type=int, default=500, metavar="N", help="per strategy (500)")
    demo.add_argument("--concurrency", type=int, default=64, metavar="C", help="tasks (64)")
    demo.add_argument(
        "--instances",
        type=int,
        default=2,
        metavar="I",
        help="counter objects the tasks share, like I processes (2)",
    )
    demo.add_argument(
        "--strategy",
        dest="strategies",
        action="append",
        choices=STRATEGY_NAMES,
        help="run only this strategy (repeatable)",
    )
    demo.add_argument(
        "--keep",
        action="store_true",
        help="keep the counters and items the demo wrote (default: deleted after each row)",
    )
    _add_operations(commands, common)
    return parser


def _add_operations(
    commands: argparse._SubParsersAction[argparse.ArgumentParser],
    common: argparse.ArgumentParser,
) -> None:
    """The subcommands that operate counters (see docs/operations.md)."""
    setter = commands.add_parser(
        "set",
        parents=[common],
        help="set a counter's value (with the default numbering, the last number handed out;"
        " under --regions, its Region's value); refuses to move it back",
    )
    setter.add_argument("key", metavar="KEY", help="the counter key")
    setter.add_argument("value", metavar="VALUE", help="a whole number from 0 to 10**38 - 1")
    setter.add_argument(
        "--allow-backward",
        action="store_true",
        help="also move it back: the numbers between are handed out again",
    )

    lister = commands.add_parser(
        "list", parents=[common], help="every counter: key, value, numbering, last update"
    )
    lister.add_argument("--json", action="store_true", help="one JSON object per line")

    describe = commands.add_parser(
        "describe",
        parents=[common],
        help="one counter, as in list, its headroom, and its partition's ceiling on AWS when items"
        " share it; for a series' key, each of its periods",
    )
    describe.add_argument("key", metavar="KEY", help="the counter key, or a series' key")
    describe.add_argument("--json", action="store_true", help="a JSON object")

    # ``--table`` here names the table to scan; the counter table is the --table given before
    # the command. So this command's parent is the common options without theirs (argparse's
    # conflict_handler="resolve" would strip ``--table`` from the shared action itself).
    scanning = argparse.ArgumentParser(add_help=False)
    for action in common._actions:
        if "--table" not in action.option_strings:
            scanning._add_action(action)
    start = commands.add_parser(
        "start-after",
        parents=[scanning],
        help="raise a counter past the highest number already in a table (a parallel Scan)",
    )
    start.add_argument("key", metavar="KEY", help="the counter key")
    start.add_argument(
        "--table",
        dest="source_table",
        required=True,
        metavar="T",
        help="the table to scan (the counter table: --table before the command)",
    )
    start.add_argument(
        "--attribute", required=True, metavar="A", help="the numeric attribute (or sort key)"
    )
    start.add_argument(
        "--segments", type=int, default=4, metavar="N", help="parallel Scan segments (4)"
    )
    start.add_argument(
        "--partition",
        metavar="P",
        help="only the items of this partition key value (a Query in place of the Scan)",
    )
    start.add_argument(
        "--shards",
        type=int,
        metavar="N",
        help="the items are spread over N shards, P#0 .. P#N-1, P the --partition (needed):"
        " a Query of each",
    )

    audit = commands.add_parser(
        "audit",
        parents=[common],
        help="check counters against their items: a missing number, or one used above the"
        " counter, is a finding (exit 1)",
        description="Check counters against their items, each where its counter item says they"
        " are (a counter that stores no items has none to check). Exit status: 0 when every"
        " counter passes, 1 on a finding, 2 on an error (a KEY that is no counter).",
    )
    audit.add_argument(
        "keys",
        nargs="*",
        metavar="KEY",
        help="counter keys, or series' keys: each period on its own (default: every counter;"
        " their items where each counter says)",
    )
    audit.add_argument(
        "--partition",
        metavar="P",
        help="where the items are: this partition key value (default: where each counter says)",
    )
    audit.add_argument(
        "--shards",
        type=int,
        metavar="N",
        help="the items are spread over N shards: partition key values P#0 .. P#N-1, P the"
        " --partition or the counter's key (aioseq.layout.ShardedItems)",
    )
    audit.add_argument(
        "--number-attribute",
        metavar="A",
        help="the attribute holding each item's number (default: the sort key)",
    )
    audit.add_argument("--json", action="store_true", help="one JSON object per counter")

    policy = commands.add_parser(
        "iam-policy", parents=[common], help="print the IAM policy aioseq needs (JSON)"
    )
    which = policy.add_mutually_exclusive_group(required=True)
    which.add_argument("--runtime", action="store_true", help="what applications need")
    which.add_argument(
        "--admin",
        action="store_true",
        help="what operators need: the table, set, list, describe, start-after, numbering, audit",
    )
    policy.add_argument(
        "--table-arn",
        action="append",
        metavar="ARN",
        help="a table's ARN (repeatable; default: the --table with --region and --account,"
        " REGION and ACCOUNT where not given)",
    )
    policy.add_argument("--account", metavar="ID", help="the 12-digit AWS account id")


async def _open(args: argparse.Namespace, endpoint_url: str | None = None) -> DynamoStore:
    regions = getattr(args, "regions", None)
    return await DynamoStore.open(
        table=TableSpec(name=getattr(args, "table", DEFAULT_TABLE_NAME)),
        endpoint_url=endpoint_url or getattr(args, "endpoint_url", None),
        region_name=getattr(args, "region", None),
        regions=[r.strip() for r in regions.split(",")] if regions is not None else None,
        region_slots=getattr(args, "region_slots", None),
        home_region=getattr(args, "home_region", None),
    )


async def _create_table(args: argparse.Namespace) -> int:
    async with await _open(args) as store:
        created = await store.create_table(ttl=args.ttl)
    print(f"table {store.table.name!r} {'created' if created else 'exists'}", file=sys.stderr)
    if args.ttl:
        print(f"time to live on {EXPIRES_ATTRIBUTE!r}: enabled", file=sys.stderr)
    return 0


async def _enable_ttl(args: argparse.Namespace) -> int:
    async with await _open(args) as store:
        enabled = await store.enable_ttl()
    done = "enabled" if enabled else "enabled already"
    print(
        f"table {store.table.name!r}: time to live on {EXPIRES_ATTRIBUTE!r} {done}",
        file=sys.stderr,
    )
    return 0


async def _next(args: argparse.Namespace) -> int:
    usage = None  # a usage error: nothing is opened, nothing written
    if args.strategy != "allocator" and (args.stride, args.offset) != (1, 1):
        usage = "--stride and --offset take the allocator only (--strategy allocator)"
    elif args.group is not None and not strategy_named(args.strategy).grouped:
        grouped = ", ".join(s.name for s in STRATEGIES if s.grouped)
        usage = f"--group and --no-group take {grouped} only, not {args.strategy}"
    if usage is not None:
        print(f"aioseq next: error: {usage}", file=sys.stderr)
        return 2
    out = sys.stdout

    def emit(n: int) -> None:
        out.write(f"{n}\n")
        out.flush()

    async with await _open(args) as store:
        await run_workload(
            store,
            args.strategy,
            args.key,
            count=args.count,
            concurrency=args.concurrency,
            block_size=args.block_size,
            group=args.group,
            on_number=emit,
            stride=args.stride,
            offset=args.offset,
            max_value=args.max_value,
        )
    return 0


async def _current(args: argparse.Namespace) -> int:
    async with await _open(args) as store:
        taker = make_taker(store, args.strategy, args.key)
        if not await taker.counter.exists():
            raise CounterNotFound(args.key, store.table.name)
        print(await taker.current())
    return 0


async def _demo(args: argparse.Namespace) -> int:
    from aioseq.demo import check_arguments, format_table, run_demo
    from aioseq.testing.servers import ServerUnavailable, serving_endpoint

    check_arguments(count=args.count, concurrency=args.concurrency, instances=args.instances)

    with contextlib.ExitStack() as stack:
        try:  # the configured endpoint, else the embedded moto server
            served = stack.enter_context(
                serving_endpoint(
                    endpoint_url=getattr(args, "endpoint_url", None), from_environment=True
                )
            )
        except ServerUnavailable as exc:
            raise SystemExit(
                f"aioseq demo: no endpoint configured and {exc.reason}, or pass --endpoint-url"
            ) from exc
        endpoint, embedded = served.url, served.embedded
        where = "embedded moto server (serialized)" if embedded else endpoint
        print(
            f"aioseq demo: {args.count} numbers per strategy, {args.concurrency} tasks sharing "
            f"{args.instances} counter objects, on {where}",
            flush=True,
        )
        rows = await run_demo(
            endpoint_url=endpoint,
            region_name=getattr(args, "region", None),
            table=TableSpec(name=getattr(args, "table", DEFAULT_TABLE_NAME)),
            count=args.count,
            concurrency=args.concurrency,
            instances=args.instances,
            strategies=args.strategies or STRATEGY_NAMES,
            fresh_table=embedded,
            keep=args.keep,
        )
    print(format_table(rows))
    failed = [r.strategy for r in rows if not r.ok]
    if failed:
        print(f"aioseq demo: FAILED checks: {', '.join(failed)}", file=sys.stderr)
        return 1
    print("all checks passed: no duplicates; no gaps where a strategy promises none")
    return 0


def _parse_value(text: str) -> int:
    """A VALUE argument: decimal digits only (no sign, no fraction, no exponent).

    Raises:
        ConfigurationError: anything else; the library refuses values above 10**38 - 1.
    """
    if not (text.isascii() and text.isdigit()):
        raise ConfigurationError(f"VALUE must be a whole number from 0 to 10**38 - 1: {text!r}")
    return int(text)


async def _set(args: argparse.Namespace) -> int:
    value = _parse_value(args.value)
    async with await _open(args) as store:
        try:
            previous = await admin.exchange_counter(
                store, args.key, value, allow_backward=args.allow_backward
            )
        except CounterWouldMoveBack as exc:
            said = CounterWouldMoveBack(
                exc.key, exc.current, exc.requested, override="--allow-backward"
            )
            said.maybe_applied = exc.maybe_applied
            raise said from None
    if previous is None:
        print(f"counter {args.key!r} created at {value} (it did not exist)", file=sys.stderr)
    else:
        print(f"counter {args.key!r} set to {value} (was {previous})", file=sys.stderr)
    return 0


async def _list(args: argparse.Namespace) -> int:
    """Every readable counter; one line on stderr for each counter item that is not (exit 1)."""
    unreadable: list[tuple[str, Exception]] = []
    async with await _open(args) as store:
        listed = admin.list_counters(store, on_invalid=lambda *found: unreadable.append(found))
        counters = [info async for info in listed]
    for info in sorted(counters, key=lambda info: info.key):
        print(json.dumps(counter_record(info)) if args.json else counter_line(info))
    for key, exc in sorted(unreadable, key=lambda found: found[0]):
        message = " ".join(str(exc).split())
        print(f"aioseq list: {_escape(key)}: {type(exc).__name__}: {message}", file=sys.stderr)
    return 1 if unreadable else 0


async def _describe(args: argparse.Namespace) -> int:
    async with await _open(args) as store:
        try:
            keys, series = [args.key], False
            described = [await admin.describe_counter(store, args.key)]
        except CounterNotFound:  # a series' key: its periods (found by a Scan)
            keys, series = (await _series_periods(store)).get(args.key, []), True
            if not keys:
                raise
            described = [await admin.describe_counter(store, key) for key in keys]
        ceilings = [await admin.partition_ceiling(store, key) for key in keys]
    for info, ceiling in zip(described, ceilings, strict=True):
        record = {**counter_record(info), "partition_ceiling": ceiling}
        if series:
            record["series"], record["period"] = period_counter_key(info.key) or ("", "")
        if args.json:
            print(json.dumps(record))
        else:
            headroom = "-" if info.headroom is None else info.headroom
            shared = "-" if ceiling is None else f"{ceiling:.0f}"
            print(f"{counter_line(info)}\t{headroom}\t{shared}")
        if ceiling is not None:
            print(
                f"{info.key + ': ' if series else ''}items share the counter item's partition:"
                f" on AWS it takes about {ceiling:,.0f} puts/s of them (1,000 WCU/s); spread"
                " them (aioseq.layout.ShardedItems)",
                file=sys.stderr,
            )
    return 0


async def _series_periods(store: DynamoStore) -> dict[str, list[str]]:
    """Series key -> the counter keys of its periods, sorted: the counters of this store's
    Region whose key has a period counter key's shape (``KEY/2026``, ``KEY/2026-03``,
    ``KEY/2026-03-31``: `aioseq.series.period_counter_key`). One Scan
    (`admin.list_counters`). The shape alone: an ordinary counter so named counts too; a
    sort-key series has no counter items, so none of its periods."""
    suffix = f"@{store.region}" if store.region_scope is not None else ""
    found: dict[str, list[str]] = {}
    # (an unreadable counter item is skipped here: its own audit or describe says so)
    async for info in admin.list_counters(store, on_invalid=lambda *_: None):
        if suffix and not info.key.endswith(suffix):
            continue
        key = info.key.removesuffix(suffix) if suffix else info.key
        parsed = period_counter_key(key)
        if parsed is not None:
            found.setdefault(parsed[0], []).append(key)
    return {series: sorted(keys) for series, keys in found.items()}


# --- output formats of list / describe ---------------------------------------------------


def _escape(text: str) -> str:
    """``text`` on one line, its fields kept apart: backslash, tab, CR and LF escaped."""
    return text.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n").replace("\r", "\\r")


def counter_line(info: CounterInfo) -> str:
    """One line of ``aioseq list`` / ``aioseq describe``: key, value, numbering, last update,
    separated by tabs (``describe`` adds the headroom); ``-`` for a missing field; the key with
    backslash, tab, CR and LF escaped (``--json`` gives keys as they are):

        k1	11	-	2025-01-31T12:00:00.000000+00:00
    """
    numbering = info.numbering.encode() if info.numbering is not None else "-"
    updated = info.updated_at.isoformat(timespec="microseconds") if info.updated_at else "-"
    return f"{_escape(info.key)}\t{info.value}\t{numbering}\t{updated}"


def counter_record(info: CounterInfo) -> dict[str, Any]:
    """``info`` as a JSON-ready dict (``aioseq list --json``, one per line): ``key``,
    ``value`` (a JSON integer: exact in Python, beyond 2**53 not in JavaScript), ``numbering``
    (``{"stride", "offset", "max_value"}`` or ``null``), ``updated_at`` (ISO-8601 or
    ``null``), ``headroom`` (numbers left before the recorded ``max_value``, or ``null``)."""
    return {
        "key": info.key,
        "value": info.value,
        "numbering": (dataclasses.asdict(info.numbering) if info.numbering is not None else None),
        "updated_at": (
            info.updated_at.isoformat(timespec="microseconds") if info.updated_at else None
        ),
        "headroom": info.headroom,
    }


class _ProgressLine:
    """A scan's progress on stderr: redrawn in place after each page on a terminal; the last
    one printed for good by `done()` (``keep``) or wiped."""

    def __init__(self, text: Callable[[ScanProgress], str]) -> None:
        self.text = text
        self.live = sys.stderr.isatty()
        self.last: ScanProgress | None = None

    def __call__(self, progress: ScanProgress) -> None:
        self.last = progress
        if self.live:
            sys.stderr.write(f"\r\033[K{self.text(progress)}")
            sys.stderr.flush()

    def done(self, *, keep: bool) -> None:
        if self.last is None:
            return
        if keep:
            sys.stderr.write(("\r\033[K" if self.live else "") + self.text(self.last) + "\n")
        elif self.live:
            sys.stderr.write("\r\033[K")
        sys.stderr.flush()


async def _start_after(args: argparse.Namespace) -> int:
    show = _ProgressLine(_progress_text)
    async with await _open(args) as store:
        value = await admin.start_after_maximum(
            store,
            args.key,
            table=args.source_table,
            attribute=args.attribute,
            segments=args.segments,
            partition=args.partition,
            shards=args.shards,
            progress=show,
        )
    show.done(keep=True)
    print(f"counter {args.key!r} is at {value}", file=sys.stderr)
    print(value)
    return 0


async def _audit(args: argparse.Namespace) -> int:
    """0: every counter passes; 1: a finding; 2: a key that is no counter (the others are
    audited), or an error (raised: `main()` exits 2 for audit)."""
    unknown = findings = 0
    async with await _open(args) as store:
        keys = args.keys
        if not keys:  # every counter item, unreadable ones too (each a finding)
            unreadable: list[str] = []
            listed = admin.list_counters(store, on_invalid=lambda key, _: unreadable.append(key))
            keys = sorted([info.key async for info in listed] + unreadable)
        if not args.keys and store.region_scope is not None:  # this Region's counter items
            suffix = f"@{store.region}"
            keys = [key.removesuffix(suffix) for key in keys if key.endswith(suffix)]
        if args.keys:  # a series' key (no counter item of its own): each of its periods
            periods: dict[str, list[str]] | None = None
            named, keys = keys, []
            for key in named:
                if period_counter_key(key) is None and "/" not in key:
                    try:
                        await admin.describe_counter(store, key)
                    except CounterNotFound:
                        periods = periods if periods is not None else await _series_periods(store)
                        if key in periods:
                            keys += periods[key]
                            continue
                    except CounterValueInvalid:
                        pass  # (its audit says so: a finding)
                keys.append(key)
        for key in keys:

            def text(progress: ScanProgress, key: str = key) -> str:
                return f"audit {key}: {progress.items:,} items read, highest {progress.maximum}"

            show = _ProgressLine(text)
            try:
                audit = await admin.audit_counter(
                    store,
                    key,
                    partition=args.partition,
                    shards=args.shards,
                    number_attribute=args.number_attribute,
                    progress=show,
                )
            except CounterNotFound as exc:
                unknown += 1
                print(f"aioseq audit: error: CounterNotFound: {exc}", file=sys.stderr)
                continue
            finally:
                show.done(keep=False)  # the result line says how many items there were
            findings += not audit.ok
            print(json.dumps(_audit_record(audit)) if args.json else _audit_text(audit))
    return 2 if unknown else 1 if findings else 0


def _ranges(ranges: Sequence[range], most: int = 20) -> str:
    shown = [str(r.start) if len(r) == 1 else f"{r.start}..{r[-1]}" for r in ranges[:most]]
    more = f" and {len(ranges) - most} more ranges" if len(ranges) > most else ""
    return ", ".join(shown) + more


#: What ``audit`` says of a counter whose items it did not check, by `CounterAudit.unchecked`.
_UNCHECKED = {
    "no items": "no items to check",
    "elsewhere": "its items are not beside it, and its writer did not say where: not checked"
    " (make it with layout=ShardedItems(...), or audit it with --partition P [--shards N])",
    "unmarked": "no strategy has recorded what it is (written before aioseq did, or only by"
    " set or start-after): not checked (audit it with --partition P [--shards N])",
}


def _audit_text(audit: CounterAudit) -> str:
    if audit.invalid is not None:
        return f"{audit.key}: FINDINGS\n  its counter item is unreadable: {audit.invalid}"
    if audit.unchecked is not None:
        what = f"{audit.kind.strategy}, " if audit.kind is not None else ""
        return f"{audit.key}: {what}{_UNCHECKED[audit.unchecked]}"
    head = f"{audit.key}: {audit.items:,} items, numbers up to {audit.highest}"
    if audit.ok:
        return f"{head}: ok"
    lines = [f"{head}: FINDINGS"]
    if audit.missing:
        lines.append(f"  missing ({audit.missing_count:,}): {_ranges(audit.missing)}")
    if audit.above:
        lines.append(
            f"  {audit.above:,} items above the counter (the highest {audit.highest_item}):"
            f" the counter would hand their numbers out again; fix: {audit.fix}"
        )
    if audit.duplicates:
        lines.append(f"  numbers held twice: {', '.join(map(str, audit.duplicates[:20]))}")
    if audit.off_numbering:
        lines.append(f"  {audit.off_numbering:,} items hold numbers outside the numbering")
    return "\n".join(lines)


def _audit_record(audit: CounterAudit) -> dict[str, Any]:
    return {
        "key": audit.key,
        "ok": audit.ok,
        "highest": audit.highest,
        "items": audit.items,
        "missing": [[r.start, r[-1]] for r in audit.missing],
        "above": audit.above,
        "highest_item": audit.highest_item,
        "duplicates": list(audit.duplicates),
        "off_numbering": audit.off_numbering,
        "fix": audit.fix,
        "kind": None if audit.kind is None else audit.kind.encode(),
        "unchecked": audit.unchecked,
        "invalid": audit.invalid,
    }


def _progress_text(progress: ScanProgress) -> str:
    return (
        f"scanned {progress.items:,} items in {progress.pages:,} pages,"
        f" {progress.segments_done}/{progress.segments} segments done;"
        f" highest so far {progress.maximum}"
    )


async def _iam_policy(args: argparse.Namespace) -> int:
    from aioseq import iam

    arns = args.table_arn
    if not arns:
        table = getattr(args, "table", DEFAULT_TABLE_NAME)
        region = getattr(args, "region", None) or "REGION"
        account = args.account or "ACCOUNT"
        if args.account:
            arns = [iam.table_arn(table, region=region, account=account)]
        else:
            arns = [f"arn:aws:dynamodb:{region}:{account}:table/{table}"]
    if args.runtime:
        document = iam.policy(arns)
    else:
        document = iam.policy(arns, features=(), admin_features=iam.ADMIN_FEATURES)
    print(json.dumps(document, indent=2))
    return 0


_COMMANDS = {
    "create-table": _create_table,
    "enable-ttl": _enable_ttl,
    "next": _next,
    "current": _current,
    "demo": _demo,
    "set": _set,
    "list": _list,
    "describe": _describe,
    "start-after": _start_after,
    "audit": _audit,
    "iam-policy": _iam_policy,
}


def _create_table_hint(args: argparse.Namespace, error: TableNotFound) -> str:
    """The command that creates the counter table when it is the one missing, else ``""``."""
    table = getattr(args, "table", DEFAULT_TABLE_NAME)
    if error.tables and table not in error.tables:
        return ""  # another table (start-after's source, a transaction's item table)
    where = [f"--endpoint-url {args.endpoint_url}"] if getattr(args, "endpoint_url", None) else []
    where += [f"--region {args.region}"] if getattr(args, "region", None) else []
    command = " ".join(["aioseq create-table --table", table, *where])
    return f"; create it with: {command}"


class RedactCredentials(logging.Filter):
    """Masks credentials in every log line: at ``-vv`` botocore logs each request's signed
    headers (``Authorization`` names the access key id, ``X-Amz-Security-Token`` is a
    secret)."""

    _SECRETS = re.compile(
        r"""(?P<name>['"]?(?i:authorization|x-amz-security-token|aws_secret_access_key|"""
        r"""aws_session_token|secretaccesskey|sessiontoken)['"]?[ \t]*[:=][ \t]*b?['"]?)"""
        r"""(?P<value>[^'"\s,}]+(?: [^'"\s,}]+)*)"""
        r"""|(?P<key_id>\b(?:AKIA|ASIA)[A-Z0-9]{16}\b)"""
    )

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        redacted = self._SECRETS.sub(self._mask, message)
        if redacted != message:
            record.msg, record.args = redacted, None
        return True

    @staticmethod
    def _mask(match: re.Match[str]) -> str:
        return (match["name"] or "") + "<redacted>"


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit status (0 ok, 1 error, 2 usage, 130 interrupted; audit: 1
    a finding, 2 an error)."""
    args = _parser().parse_args(argv)
    verbosity = getattr(args, "verbose", 0)
    handler = logging.StreamHandler(sys.stderr)
    handler.addFilter(RedactCredentials())
    if not verbosity:  # the error line names the endpoint already: one line, as always
        logging.getLogger("aioseq.endpoint").setLevel(logging.ERROR)
    logging.basicConfig(
        handlers=[handler],
        level=logging.WARNING - 10 * min(verbosity, 2),
        format="%(levelname)s %(name)s: %(message)s",
    )
    try:
        return asyncio.run(_COMMANDS[args.command](args))
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # stdout closed early (| head): not an error
        sys.stderr.close()
        return 0
    except Exception as exc:  # aioseq's typed errors, and anything it failed to type
        if verbosity:
            traceback.print_exc(file=sys.stderr)
        message = " ".join(str(exc).split())  # one line, whatever the error's text holds
        if isinstance(exc, TableNotFound):
            message += _create_table_hint(args, exc)
        print(f"aioseq {args.command}: error: {type(exc).__name__}: {message}", file=sys.stderr)
        return 2 if args.command == "audit" else 1  # (audit's 1 is a finding)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
