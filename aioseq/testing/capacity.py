"""An AWS-like write budget per item, and a round trip per request, for the fault proxy.

DynamoDB Local and moto never throttle and answer in microseconds, so a test against them
cannot show how a strategy behaves on a hot key in AWS: how often its writes are throttled,
how much of its work is wasted on retries, whether its numbers stay exact while the store
retries. Give a [`CapacityModel`][aioseq.testing.CapacityModel] to
[`FaultProxy`][aioseq.testing.FaultProxy] (``capacity=``) and the proxy answers writes over budget
as DynamoDB does, and delays every request by a round trip.

What it models
--------------
- **One write budget per item.** DynamoDB serves one partition key value from one partition,
  and a partition takes at most 1,000 WCU per second ("Best practices for designing and using
  partition keys effectively"; "Service, account, and table quotas": per-partition
  throughput). A counter item is one key, so that limit is a counter's limit. The model keeps
  a token bucket per item, keyed by the table name and the item's full primary key as sent,
  refilled continuously at `CapacityModel.item_wcu_per_sec` and holding
  `CapacityModel.burst_secs` of it. A ``PutItem`` sends a whole item: its key
  attributes are learnt from traffic (any request's ``Key``, a ``CreateTable`` or
  ``DescribeTable``); until then each distinct item put counts as an item of its own.
- **Write costs** ("Read/write capacity mode"; "Managing throughput for transactions"; the
  "Capacity unit consumption" pages): ``PutItem`` costs ``ceil(size / 1 KB)`` WCU, at least 1,
  from the size of the item sent (`aioseq._values.item_size()`); ``UpdateItem`` and
  ``DeleteItem`` cost 1 WCU, since their cost depends on the stored item's size, which the
  proxy cannot see (aioseq's counter items stay under 1 KB); each ``Put``, ``Update``,
  ``Delete`` and ``ConditionCheck`` action of a ``TransactWriteItems`` costs twice that on its
  own item (a transaction prepares and commits each item).
- **Charged on admission.** A write whose condition fails still consumes capacity in
  DynamoDB, so a write is charged when it is let through, whatever the server answers (one
  the server refuses as invalid is charged too, where DynamoDB would not charge it).
- **Throttling as DynamoDB answers it.** A single-item write over budget gets HTTP 400
  ``ProvisionedThroughputExceededException`` (with ``ThrottlingReasons``
  ``TableWriteKeyRangeThroughputExceeded``, the reason AWS gives for a hot key); a
  ``TransactWriteItems`` with any action over budget gets HTTP 400
  ``TransactionCanceledException`` whose ``CancellationReasons`` hold
  ``{"Code": "ThrottlingError", "Message": ...}`` at each action over budget and
  ``{"Code": "None"}`` elsewhere. A throttled request consumes nothing and never reaches the
  server.
- **A round trip** per request, drawn uniformly from `CapacityModel.round_trip_secs`
  (seeded): half before the request reaches the server, half before the client gets the
  answer, so the winner of a race also hears of it late, as it does across a network.

What it does not model
----------------------
- **Partitions.** AWS limits a partition, which holds many items; here each item has its own
  budget, so writes spread over items of one partition are never throttled together.
- **Adaptive capacity** ("DynamoDB burst and adaptive capacity", "Isolate frequently
  accessed items"): AWS shifts throughput to busy partitions and may move a hot item to a
  partition of its own, over minutes, but never past the per-partition limit; the budget here
  is fixed from the first request.
- **Burst capacity** (same page): AWS keeps up to 300 seconds of a provisioned table's unused
  capacity; here the bucket holds only ``burst_secs`` (0.1 s by default), since burst
  capacity does not lift the per-partition limit a hot key meets. There are no table, index
  or account limits, and no on-demand scaling ("Read/write capacity mode").
- **Reads.** Reads (``GetItem``, ``Query``, ``Scan``, ``TransactGetItems``...) are neither
  budgeted nor charged (a partition's 3,000 RCU/s is not modelled); ``BatchWriteItem``
  passes unbudgeted too (DynamoDB answers a partly throttled batch with
  ``UnprocessedItems``, which this model does not produce).
- **The stored item's size.** An ``UpdateItem`` or ``DeleteItem`` of an item over 1 KB costs
  more in DynamoDB than here, and a ``PutItem`` over a larger item costs the larger size.

The pure part ([`write_actions()`][aioseq.testing.capacity.write_actions],
[`CapacityLedger`][aioseq.testing.capacity.CapacityLedger],
[`throttled_answer()`][aioseq.testing.capacity.throttled_answer]) does no I/O and takes an injected
clock, so it is tested without a server.
"""

from __future__ import annotations

import json
import math
import random
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from aioseq._items import item_size
from aioseq.errors import ConfigurationError

__all__ = [
    "KB",
    "WRITE_OPERATIONS",
    "Admission",
    "CapacityLedger",
    "CapacityModel",
    "WriteAction",
    "throttled_answer",
    "write_actions",
    "write_cost_wcu",
]

#: What one write capacity unit covers, in bytes.
KB = 1024
#: The operations the model budgets; every other one passes through uncharged.
WRITE_OPERATIONS = frozenset({"PutItem", "UpdateItem", "DeleteItem", "TransactWriteItems"})
#: The actions of a ``TransactWriteItems`` request, each a write on its own item.
TRANSACT_ACTIONS = ("Put", "Update", "Delete", "ConditionCheck")

_SERVICE = "com.amazonaws.dynamodb.v20120810#"
#: What AWS says when writes to one key exceed its partition's limit (on-demand tables).
HOT_KEY_MESSAGE = (
    "Throughput exceeds the current capacity of your table or index. DynamoDB is "
    "automatically scaling your table or index so please try again shortly. If exceptions "
    "persist, check if you have a hot key: "
    "https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/bp-partition-key-design.html"
)
#: The ``ThrottlingReasons`` reason for a hot key: table, write, key range.
HOT_KEY_REASON = "TableWriteKeyRangeThroughputExceeded"


def _number(value: object, name: str, *, positive: bool) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ConfigurationError(f"{name} must be a finite number: {value!r}")
    if value < 0 or (positive and value == 0):
        raise ConfigurationError(f"{name} must be {'> 0' if positive else '>= 0'}: {value!r}")
    return float(value)


@dataclass(frozen=True)
class CapacityModel:
    """A write budget per item and a round trip per request (see the module doc).

    Attributes:
        item_wcu_per_sec: the write budget of one item, in write capacity units per second
            (> 0). AWS's per-partition limit, 1,000, by default; lower it to see throttling
            at the rates one test process reaches (a local server takes ~300 to ~1,500
            requests per second).
        burst_secs: how many seconds of budget an idle item's bucket holds (>= 0), so an item
            can take ``item_wcu_per_sec * burst_secs`` WCU at once after a pause. Small by
            default (0.1 s: 100 WCU at 1,000 WCU/s): AWS does not publish the window over
            which it enforces a partition's limit, but it is short, and the 300 s of burst
            credits AWS keeps for a table do not lift that limit; a large bucket would also
            hide throttling in a test of a few seconds. The bucket always holds at least the
            cost of the request being decided, so no request is too large to ever pass.
        round_trip_secs: ``(lo, hi)``: each request's added round trip is drawn uniformly
            from ``[lo, hi]`` seconds (0 <= lo <= hi); half is spent before the request is
            forwarded, half before its answer is delivered. ``(0.0, 0.0)``: none. Within one
            AWS region a round trip is a few milliseconds.
        seed: the seed of the round-trip draws.

    Raises:
        ConfigurationError: a value out of range.
    """

    item_wcu_per_sec: float = 1000.0
    burst_secs: float = 0.1
    round_trip_secs: tuple[float, float] = (0.0, 0.0)
    seed: int = 0

    def __post_init__(self) -> None:
        _number(self.item_wcu_per_sec, "item_wcu_per_sec", positive=True)
        _number(self.burst_secs, "burst_secs", positive=False)
        pair = self.round_trip_secs
        if isinstance(pair, (str, bytes)) or not isinstance(pair, Sequence) or len(pair) != 2:
            raise ConfigurationError(f"round_trip_secs must be a pair (lo, hi): {pair!r}")
        lo = _number(pair[0], "round_trip_secs[0]", positive=False)
        hi = _number(pair[1], "round_trip_secs[1]", positive=False)
        if lo > hi:
            raise ConfigurationError(f"round_trip_secs must have lo <= hi: {pair!r}")
        object.__setattr__(self, "round_trip_secs", (lo, hi))
        if isinstance(self.seed, bool) or not isinstance(self.seed, int):
            raise ConfigurationError(f"seed must be an int: {self.seed!r}")

    @property
    def bucket_wcu(self) -> float:
        """What an idle item's bucket holds, in WCU: ``item_wcu_per_sec * burst_secs``."""
        return self.item_wcu_per_sec * self.burst_secs

    def ledger(self, *, clock: Callable[[], float] = time.monotonic) -> CapacityLedger:
        """A fresh [`CapacityLedger`][aioseq.testing.capacity.CapacityLedger] (full buckets, draws
        from the start)."""
        return CapacityLedger(self, clock=clock)


def write_cost_wcu(size_bytes: int, *, transactional: bool = False) -> int:
    """WCU of a write of an item of ``size_bytes``: ``ceil(size / 1 KB)``, at least 1; twice
    that for an action of a transaction."""
    units = max(1, -(-size_bytes // KB))
    return 2 * units if transactional else units


@dataclass(frozen=True)
class WriteAction:
    """One item written by a request, and what it costs.

    Attributes:
        table: the table name, as sent.
        key: the item's primary key (AttributeValues), as canonical JSON; the whole item when
            the ledger does not know the table's key attributes yet (a ``PutItem``).
        wcu: its cost, in write capacity units.
    """

    table: str
    key: str
    wcu: int


def _canonical(attributes: Mapping[str, Any]) -> str:
    return json.dumps(attributes, sort_keys=True, separators=(",", ":"))


def write_actions(
    operation: str,
    request: Mapping[str, Any],
    key_names: Mapping[str, frozenset[str]] | None = None,
) -> list[WriteAction]:
    """The items a request writes and their costs (see the module doc), in request order
    (one per action of a transaction); empty for operations the model does not budget, or a
    request too malformed for DynamoDB to take.

    Parameters:
        operation: the DynamoDB operation (``"UpdateItem"``...).
        request: the request body, parsed (DynamoDB JSON).
        key_names: the key attribute names of each table, when known: a ``PutItem`` sends a
            whole item, and its primary key is the item's attributes of these names.
    """
    known = key_names or {}

    def action(body: object, kind: str, transactional: bool) -> WriteAction | None:
        if not isinstance(body, Mapping) or not isinstance(body.get("TableName"), str):
            return None
        table: str = body["TableName"]
        if kind != "Put":  # the stored item's size is unknown here: count it as 1 KB
            key = body.get("Key")
            if not isinstance(key, dict):
                return None
            return WriteAction(
                table, _canonical(key), write_cost_wcu(0, transactional=transactional)
            )
        item = body.get("Item")
        if not isinstance(item, dict):
            return None
        try:
            size = item_size(item)
        except (AttributeError, RuntimeError, TypeError, ValueError):  # RuntimeError: PEP 479
            return None  # not AttributeValues: DynamoDB refuses it
        names = known.get(table)
        key = {n: v for n, v in item.items() if n in names} if names else item
        return WriteAction(
            table, _canonical(key), write_cost_wcu(size, transactional=transactional)
        )

    if operation in ("PutItem", "UpdateItem", "DeleteItem"):
        one = action(request, "Put" if operation == "PutItem" else operation, False)
        return [one] if one is not None else []
    if operation == "TransactWriteItems":
        found: list[WriteAction] = []
        entries = request.get("TransactItems")
        for entry in entries if isinstance(entries, list) else ():
            kinds = [k for k in TRANSACT_ACTIONS if isinstance(entry, dict) and k in entry]
            if len(kinds) != 1:
                return []
            one = action(entry[kinds[0]], kinds[0], True)
            if one is None:
                return []
            found.append(one)
        return found
    return []


@dataclass(frozen=True)
class Admission:
    """What [`CapacityLedger.admit()`][aioseq.testing.capacity.CapacityLedger.admit] decided for one
    request.

    Attributes:
        operation: the DynamoDB operation.
        actions: the items it writes ([`write_actions()`][aioseq.testing.capacity.write_actions]);
            empty when not budgeted.
        over_budget: the indexes in ``actions`` whose item lacked the budget; empty when
            admitted.
        wcu: WCU charged: the sum of ``actions``' costs when admitted, 0 when throttled.
    """

    operation: str
    actions: tuple[WriteAction, ...]
    over_budget: tuple[int, ...]
    wcu: float

    @property
    def admitted(self) -> bool:
        """True when the request may go to the server."""
        return not self.over_budget


class CapacityLedger:
    """The running state of one [`CapacityModel`][aioseq.testing.CapacityModel]: a token bucket per
    item, the round-trip draws, and the key attributes learnt per table. No I/O, not thread-safe
    (the proxy holds a lock around it).

    Parameters:
        model: the budgets and round trips.
        clock: seconds, monotonic (inject a fake one in tests).
    """

    #: Buckets kept before full ones (indistinguishable from new ones) are dropped.
    PRUNE_AT = 4096

    def __init__(self, model: CapacityModel, *, clock: Callable[[], float] = time.monotonic):
        self.model = model
        self.clock = clock
        self.key_names: dict[str, frozenset[str]] = {}
        self._buckets: dict[tuple[str, str], tuple[float, float]] = {}  # (tokens, at)
        self._rng = random.Random(model.seed)
        self._prune_at = self.PRUNE_AT
        self.admitted = 0
        self.throttled = 0
        self.charged_wcu = 0.0

    def __repr__(self) -> str:
        return (
            f"<CapacityLedger {self.model.item_wcu_per_sec:g} WCU/s per item,"
            f" items={len(self._buckets)} admitted={self.admitted} throttled={self.throttled}"
            f" charged_wcu={self.charged_wcu:g}>"
        )

    def level(self, table: str, key: str, *, ceiling: float | None = None) -> float:
        """WCU in the bucket of item ``key`` of ``table`` now (``ceiling``: the bucket's size,
        by default [`CapacityModel.bucket_wcu`][aioseq.testing.CapacityModel.bucket_wcu])."""
        top = self.model.bucket_wcu if ceiling is None else ceiling
        state = self._buckets.get((table, key))
        if state is None:
            return top
        tokens, at = state
        return min(top, tokens + self.model.item_wcu_per_sec * max(0.0, self.clock() - at))

    def admit(self, operation: str, request: Mapping[str, Any]) -> Admission:
        """Decide one request: admitted (every item it writes has the budget; each is
        charged) or throttled (nothing is charged). Requests the model does not budget are
        admitted uncharged."""
        actions = tuple(write_actions(operation, request, self.key_names))
        if not actions:
            return Admission(operation, (), (), 0.0)
        wanted: dict[tuple[str, str], float] = {}
        for a in actions:  # an item twice in one request: DynamoDB refuses it; charge both
            wanted[(a.table, a.key)] = wanted.get((a.table, a.key), 0.0) + a.wcu
        levels = {
            k: self.level(*k, ceiling=max(self.model.bucket_wcu, cost))
            for k, cost in wanted.items()
        }
        over = tuple(
            i for i, a in enumerate(actions) if levels[(a.table, a.key)] < wanted[(a.table, a.key)]
        )
        if over:
            self.throttled += 1
            return Admission(operation, actions, over, 0.0)
        now = self.clock()
        for k, cost in wanted.items():
            self._buckets[k] = (levels[k] - cost, now)
        self.admitted += 1
        charged = float(sum(wanted.values()))
        self.charged_wcu += charged
        if len(self._buckets) >= self._prune_at:
            self._prune()
        return Admission(operation, actions, (), charged)

    def _prune(self) -> None:
        full = self.model.bucket_wcu
        for k in [k for k in self._buckets if self.level(*k) >= full]:
            del self._buckets[k]
        self._prune_at = max(self.PRUNE_AT, 2 * len(self._buckets))

    def round_trip_secs(self) -> float:
        """The next request's round trip, in seconds (the next seeded draw)."""
        lo, hi = self.model.round_trip_secs
        return lo if lo == hi else self._rng.uniform(lo, hi)

    def learn(
        self,
        operation: str,
        request: Mapping[str, Any],
        response: Mapping[str, Any] | None = None,
    ) -> None:
        """Learn tables' key attribute names from traffic: a ``CreateTable`` request, a
        ``CreateTable`` or ``DescribeTable`` answer, or any request's ``Key`` (which DynamoDB
        requires to be the full primary key). Until a table's names are known, each distinct
        item a ``PutItem`` sends counts as its own key."""
        descriptions: list[Any] = []
        if operation == "CreateTable":
            descriptions.append(request)
        if response is not None:
            descriptions += [response.get("Table"), response.get("TableDescription")]
        for d in descriptions:
            if isinstance(d, Mapping) and isinstance(d.get("TableName"), str):
                schema = d.get("KeySchema")
                names = [s.get("AttributeName") for s in schema or () if isinstance(s, dict)]
                if names and all(isinstance(n, str) for n in names):
                    self.key_names[d["TableName"]] = frozenset(map(str, names))
        bodies = [request]
        entries = request.get("TransactItems")
        if isinstance(entries, list):
            bodies += [v for e in entries if isinstance(e, dict) for v in e.values()]
        for body in bodies:
            if isinstance(body, Mapping):
                table, key = body.get("TableName"), body.get("Key")
                if isinstance(table, str) and isinstance(key, dict) and key:
                    self.key_names.setdefault(table, frozenset(key))


def throttled_answer(
    admission: Admission, *, region: str = "us-east-1", account: str = "000000000000"
) -> tuple[int, dict[str, Any]]:
    """The HTTP status and JSON body DynamoDB sends for a throttled request.

    Parameters:
        admission: a throttled decision (``admitted`` false).
        region, account: for the table's ARN in ``ThrottlingReasons``.

    Raises:
        ValueError: the admission was not throttled.
    """
    if admission.admitted:
        raise ValueError("the request was admitted; nothing to answer")
    if admission.operation == "TransactWriteItems":
        over = set(admission.over_budget)
        reasons: list[dict[str, str]] = [
            {"Code": "ThrottlingError", "Message": HOT_KEY_MESSAGE}
            if i in over
            else {"Code": "None"}
            for i in range(len(admission.actions))
        ]
        codes = ", ".join(r["Code"] for r in reasons)
        return 400, {
            "__type": _SERVICE + "TransactionCanceledException",
            "Message": "Transaction cancelled, please refer cancellation reasons for specific "
            f"reasons [{codes}]",
            "CancellationReasons": reasons,
        }
    table = admission.actions[0].table
    arn = (
        table if table.startswith("arn:") else f"arn:aws:dynamodb:{region}:{account}:table/{table}"
    )
    return 400, {
        "__type": _SERVICE + "ProvisionedThroughputExceededException",
        "message": HOT_KEY_MESSAGE,
        "ThrottlingReasons": [
            {
                "reason": HOT_KEY_REASON,
                "resource": arn,
            }
        ],
    }
