"""Counter administration, like a SQL sequence's: set, raise, inspect, list, scan, renumber.

PostgreSQL has ``setval``, ``ALTER SEQUENCE ... RESTART`` and ``\\ds``; aioseq has these
functions, each taking first the [`DynamoStore`][aioseq.DynamoStore] whose table holds the counter
items (``await aioseq.admin.set_counter(store, "k", 1000)``). Every request runs under the
store's retry engine (``store.send_with_retries``, or ``store.retry.run`` around
``store.send_once``).

They act on counter items, ``{pk: <key>, sk: 0, value: N, ...}``: the counters of the atomic,
allocator, optimistic and transactional strategies. A sort-key counter has no counter item (its
value is the highest sort key of its collection), so these functions do not apply to it.

A counter's *value* is its counter item's ``value``: with the default numbering, the last number
handed out (``set_counter(store, "k", 1000)``, then ``next()`` gives 1001). With a
[`Numbering`][aioseq.Numbering], value ``v`` is the ``v``-th number, ``offset + (v - 1) * stride``.

Operator writes (`set_counter()`, `ensure_at_least()`, `set_numbering()`, below) also
record when they moved a counter, in ``aioseq_updated_at`` (ISO-8601, UTC, the writing
process's clock), which `list_counters()` and `describe_counter()` show. The
strategies' own writes do not: ``next()`` is the hot path and its write stays as small as it is.

Moving a counter does not break the resolution of lost answers of the optimistic and
transactional strategies (`aioseq.strategies._recent_writes`): that resolution reads only
``aioseq_writes`` and the ring ``aioseq_tokens``, which these functions never touch. A write
whose answer was lost either left its token (applied) or did not (not applied), whatever the
value became since; a pending conditional write that expects the old value fails its
condition and is tried again from the new value.

By concept: `aioseq.admin.counters` (set, raise, describe, list, start after),
`aioseq.admin.scan` (one page loop, the parallel Scan, the Query of item collections),
`aioseq.admin.audit` (a counter against its items), `aioseq.admin.renumber` (numberings and
Region scopes). Output formats are the CLI's."""

from aioseq.admin.audit import CounterAudit as CounterAudit
from aioseq.admin.audit import audit_counter as audit_counter
from aioseq.admin.counters import CounterInfo as CounterInfo
from aioseq.admin.counters import describe_counter as describe_counter
from aioseq.admin.counters import ensure_at_least as ensure_at_least
from aioseq.admin.counters import exchange_counter as exchange_counter
from aioseq.admin.counters import list_counters as list_counters
from aioseq.admin.counters import partition_ceiling as partition_ceiling
from aioseq.admin.counters import set_counter as set_counter
from aioseq.admin.counters import start_after_maximum as start_after_maximum
from aioseq.admin.counters import value_for_maximum as value_for_maximum
from aioseq.admin.renumber import set_numbering as set_numbering
from aioseq.admin.renumber import set_region_scope as set_region_scope
from aioseq.admin.scan import MAX_SEGMENTS as MAX_SEGMENTS
from aioseq.admin.scan import QUERY_PAGE_ITEMS as QUERY_PAGE_ITEMS
from aioseq.admin.scan import Progress as Progress
from aioseq.admin.scan import ScanProgress as ScanProgress
from aioseq.admin.scan import scan_maximum as scan_maximum

__all__ = [
    "CounterAudit",
    "CounterInfo",
    "Progress",
    "ScanProgress",
    "audit_counter",
    "describe_counter",
    "ensure_at_least",
    "exchange_counter",
    "list_counters",
    "partition_ceiling",
    "scan_maximum",
    "set_counter",
    "set_numbering",
    "set_region_scope",
    "start_after_maximum",
    "value_for_maximum",
]
