"""What the defaults benchmark measures: its sections, the variants it runs (each
strategy with the library's defaults, the peer, the raw request), and the options that size a
run (:data:`QUICK`: the smoke test's)."""

from __future__ import annotations

import inspect
from dataclasses import dataclass, replace
from typing import Any

from aioseq import GroupCommit, RetryPolicy
from aioseq.strategies import sort_key, transactional
from benchmarks.variants import FactoryVariant, PeerVariant, RawUpdateItemVariant, promises

#: The sections, in the order they run.
SECTIONS = ("peer", "hot-key", "processes", "overhead", "sweep")


def defaults(
    strategy: str, label: str, *, shards: int | None = None, **options: Any
) -> FactoryVariant:
    """``store.<factory>(key, **options)`` for ``strategy`` (no options: the defaults);
    ``shards``: the transactional counter's items spread so (the documented layout)."""
    return FactoryVariant(
        label,
        strategy,
        **promises(strategy),
        strategy=strategy,
        options=tuple(sorted(options.items())),
        shards=shards,
    )


#: The shards the gapless items are spread over, as docs/layout.md lays them out.
SHARDS = 32
GAPLESS = defaults(
    "transactional", f"transactional_counter(key), items over {SHARDS} shards", shards=SHARDS
)
#: The layout the docs used to show: every item beside the counter item, in its partition.
GAPLESS_BESIDE = defaults("transactional", "transactional_counter(key), items beside the counter")
ATOMIC = defaults("atomic", "atomic_counter(key)")
ALLOCATOR = defaults("allocator", "block_allocator(key)")
#: Diagnostic only: the gapless defaults on a store whose retries back off at most 10 ms, to
#: tell whether the losers' growing backoff is what slows several processes down.
GAPLESS_SHORT_BACKOFF = replace(
    GAPLESS,
    label="transactional_counter(key), backoff <= 10 ms (diagnostic)",
    store_options=(("retry_policy", RetryPolicy(max_backoff_secs=0.01)),),
)
PEER = PeerVariant("dynamodb-autoincrement 0.2.0", "peer", gapless=True, writes_items=True)
#: The seed article's request (``ADD``, ``ReturnValues=UPDATED_NEW``) on a raw aiobotocore
#: client with the store's client settings: what a user would write by hand.
RAW = RawUpdateItemVariant("raw aiobotocore update_item (seed's ADD)", "raw")

#: The largest group of each strategy with group commit (a transaction's 100 actions, less
#: the counter's for the transactional counter): the sweep's largest size stands for it.
CURRENT_DEFAULTS = {
    "transactional": (transactional.MAX_GROUP_SIZE, 0.0),
    "sort-key": (sort_key.MAX_GROUP_SIZE, 0.0),
}


def library_defaults() -> dict[str, dict[str, Any]]:
    """The group options the strategies take when given none, read from their signatures
    (``group=True`` is ``GroupCommit()``, whose ``max_size=None`` is the strategy's largest)."""
    found = {}
    for name, cls, largest in (
        ("transactional", transactional.TransactionalCounter, transactional.MAX_GROUP_SIZE),
        ("sort-key", sort_key.SortKeyCounter, sort_key.MAX_GROUP_SIZE),
    ):
        group = inspect.signature(cls.__init__).parameters["group"].default
        grouping = GroupCommit() if group is True else group
        found[name] = {
            "group": bool(group),
            "max_group_size": grouping.max_size or largest if grouping else None,
            "batch_window_secs": grouping.window_secs if grouping else None,
        }
    return found


@dataclass(frozen=True)
class Options:
    """What to run; times in seconds. ``count`` only caps a row (rows are timed)."""

    sections: tuple[str, ...] = SECTIONS
    tasks: int = 128
    count: int = 300_000
    warmup_secs: float = 4.0
    # 1. peer
    peer_row_secs: float = 3.0
    # 2. hot key
    hot_partition_wcu_per_sec: float = 150.0
    round_trip_secs: tuple[float, float] = (0.002, 0.006)
    hot_row_secs: float = 5.0
    # 3. processes
    processes: int = 4
    processes_rounds: int = 3
    processes_row_secs: float = 3.0
    # 4. overhead
    overhead_tasks: tuple[int, ...] = (1, 16, 128)
    overhead_rounds: int = 6
    overhead_row_secs: float = 1.0
    profile_tasks: int = 16
    stub_calls: int = 5_000
    # 5. sweep
    sweep_sizes: tuple[int, ...] = (10, 25, 50, 99)
    sweep_windows: tuple[float, ...] = (0.0, 0.001, 0.005)
    sweep_tasks: tuple[int, ...] = (1, 16, 128)
    sweep_sort_key_tasks: tuple[int, ...] = (128,)
    sweep_rounds: int = 3
    sweep_row_secs: float = 1.0


QUICK = Options(
    tasks=4,
    count=2_000,
    warmup_secs=0.0,
    peer_row_secs=0.2,
    hot_row_secs=0.3,
    processes=2,
    processes_rounds=1,
    processes_row_secs=0.2,
    overhead_tasks=(1, 4),
    overhead_rounds=2,
    overhead_row_secs=0.2,
    profile_tasks=4,
    stub_calls=200,
    sweep_sizes=(2, 99),
    sweep_windows=(0.0, 0.001),
    sweep_tasks=(1, 4),
    sweep_sort_key_tasks=(4,),
    sweep_rounds=1,
    sweep_row_secs=0.15,
)
