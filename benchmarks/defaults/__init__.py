"""The benchmarks of "Exactly once ... and group commit by default": what the defaults give,
measured side by side in one run.

    python -m benchmarks.defaults --quick                  # seconds, embedded moto server
    scripts/in-loopback-netns .venv/bin/python -m benchmarks.defaults \\
        --server dynamodb-local --out docs/performance      # the report (~7 minutes)

Sections (the issue's targets, in parentheses, were graded once: docs/benchmarks.md keeps
that run's table, from docs/performance/defaults.json; the benchmark reports the rows):

1. ``peer``: gapless puts/s at 128 tasks, ``store.transactional_counter(key)`` and nothing else,
   against the published peer ``dynamodb-autoincrement`` 0.2.0 (target >= 20x); gapless runs
   before and after the peer.
2. ``hot-key``: one hot key through the capacity model, a
   ``FaultProxy(endpoint, capacity=CapacityModel(partition_wcu_per_sec=150,
   round_trip_secs=(0.002, 0.006)))`` in a child process: the atomic counter's goodput as a
   share of the partition's write budget, and the errors that reached callers (target >= 70%,
   none); the allocator with its defaults (target >= 20x the atomic counter) and the gapless
   counter with its defaults, its items spread over 32 shards apart from the counter item
   (target >= 3x); then the gapless counter with its items beside the counter item, which
   share its partition's budget (their ceiling: half the budget, 2 WCU a put).
3. ``processes``: one transactional counter with its defaults in 4 processes against 1 process, the
   same tasks in all (target >= 0.8x); each process times its share between a start barrier
   and its end, so interpreter start-up is not counted.
4. ``overhead``: the atomic counter's ``next()`` against a raw aiobotocore ``update_item``
   sending the seed article's request (``ADD``, ``ReturnValues=UPDATED_NEW``) on a client with
   the same settings, at 1, 16 and 128 tasks (target >= 0.95x), in alternating rounds; then
   what aioseq adds per call with the HTTP layer stubbed (no network, no noise), profiled, and
   one real row profiled.
5. ``sweep``: ``max_group_size`` x ``batch_window_secs`` for the transactional counter at 1, 16 and
   128 tasks and the sort-key counter at 128 tasks, straight to the server and through the
   capacity model's round trip (2-6 ms, AWS's 1,000 WCU/s per partition), and for both at 128
   tasks on the hot key (with groups of one put too), in 3 interleaved rounds: puts/s and
   p99, each
   configuration compared with the library's defaults (:func:`recommend`).

Every row runs on a fresh table with :func:`benchmarks.row.run_row` (tasks started
together by :func:`aioseq._workload.take_numbers`) and is checked the same way: no duplicate,
no gap where the strategy promises none, every stored item handed out and every number handed
out stored. Rows to compare run in the same run, next to each other, in alternating rounds.
Each row also records the CPU used by the client processes, the server and the proxy, and how
busy the machine's cores were (other work on a shared machine shows there, and in the load
average at start and end).

Writes ``defaults.json`` and ``defaults.md`` into ``--out`` and exits 1 if a row broke a
guarantee.
"""

from __future__ import annotations

from benchmarks.defaults.bench import Bench as Bench
from benchmarks.defaults.bench import CapacityProxy as CapacityProxy
from benchmarks.defaults.bench import Result as Result
from benchmarks.defaults.command import main as main
from benchmarks.defaults.options import QUICK as QUICK
from benchmarks.defaults.options import RAW as RAW
from benchmarks.defaults.options import SECTIONS as SECTIONS
from benchmarks.defaults.options import Options as Options
from benchmarks.defaults.recommendation import recommend as recommend
from benchmarks.defaults.report import markdown as markdown
from benchmarks.defaults.sections import rows_planned as rows_planned
from benchmarks.defaults.sections import run as run
from benchmarks.defaults.sections import section_peer as section_peer

__all__ = [
    "QUICK",
    "RAW",
    "SECTIONS",
    "Bench",
    "CapacityProxy",
    "Options",
    "Result",
    "main",
    "markdown",
    "recommend",
    "rows_planned",
    "run",
    "section_peer",
]
