"""An AWS-like budget per partition, and a round trip per request, for the fault proxy.

DynamoDB Local and moto never throttle and answer in microseconds, so a test against them
cannot show how a strategy behaves in AWS on a hot key or a hot partition: how often its
requests are throttled, how much of its work is wasted on retries, whether its numbers stay
exact while the store retries, which item layout caps it. Give a
[`CapacityModel`][aioseq.testing.CapacityModel] to [`FaultProxy`][aioseq.testing.FaultProxy]
(``capacity=``) and the proxy answers requests over budget as DynamoDB does, and delays every
request by a round trip.

What it models
--------------
- **One budget per partition key value.** DynamoDB stores all items with one partition key
  value in one partition, and a partition serves at most 1,000 WCU and 3,000 RCU per second
  ("Best practices for designing and using partition keys effectively"; "Service, account,
  and table quotas": per-partition throughput). Items that share a partition key value share
  that budget: a counter item and the items numbered beside it, or every item of one item
  collection. The model keeps two token buckets per partition key value of each table (writes
  at `CapacityModel.partition_wcu_per_sec`, reads at `CapacityModel.partition_rcu_per_sec`),
  each holding `CapacityModel.burst_secs` of its rate. A table's partition key attribute is
  learnt from its ``KeySchema`` (a ``CreateTable`` request or answer, a ``DescribeTable``
  answer; [`FaultProxy`][aioseq.testing.FaultProxy] asks ``DescribeTable`` itself the first
  time a table is written or read) or from a request's ``Key`` of one attribute. Until it is
  known, each item is a partition of its own and reads are not budgeted.
  ``partition_by="item"`` gives every item its own write budget and leaves reads unbudgeted
  (the model aioseq had before; kept to compare layouts against it).
- **Write costs** ("Read/write capacity mode"; "Managing throughput for transactions"; the
  "Capacity unit consumption" pages): ``PutItem`` costs ``ceil(size / 1 KB)`` WCU, at least 1,
  from the size of the item sent (`aioseq._items.item_size()`);
  ``UpdateItem`` and ``DeleteItem`` cost 1 WCU, since their cost depends on the stored item's
  size, which the proxy cannot see (aioseq's counter items stay under 1 KB); each ``Put``,
  ``Update``, ``Delete`` and ``ConditionCheck`` action of a ``TransactWriteItems`` costs twice
  that (a transaction prepares and commits each item), charged to its own item's partition.
- **Read costs** (same pages): ``GetItem`` costs ``ceil(size / 4 KB)`` RCU of the item
  returned, halved unless ``ConsistentRead``; a ``Query`` of the base table the same of the
  total size of the items it returns, charged to the partition its key condition names; each
  ``Get`` of a ``TransactGetItems`` twice the strongly consistent cost. A read is admitted when
  its partition holds the least it can cost (0.5, 1 or 2 RCU) and charged the rest when the
  answer shows the size, so a large read can leave its partition in debt, as DynamoDB's
  estimate-then-correct accounting does.
- **Charged on admission.** A write whose condition fails still consumes capacity in
  DynamoDB, so a write is charged when it is let through, whatever the server answers (one
  the server refuses as invalid is charged too, where DynamoDB would not charge it).
- **Throttling as DynamoDB answers it.** A single-item request over budget gets HTTP 400
  ``ProvisionedThroughputExceededException`` (with ``ThrottlingReasons``
  ``TableWriteKeyRangeThroughputExceeded`` or ``TableReadKeyRangeThroughputExceeded``, the
  reasons AWS gives for a hot partition); a ``TransactWriteItems`` or ``TransactGetItems`` with
  any action over budget gets HTTP 400 ``TransactionCanceledException`` whose
  ``CancellationReasons`` hold ``{"Code": "ThrottlingError", "Message": ...}`` at each action
  over budget and ``{"Code": "None"}`` elsewhere. A throttled request consumes nothing and
  never reaches the server.
- **A round trip** per request, drawn uniformly from `CapacityModel.round_trip_secs`
  (seeded): half before the request reaches the server, half before the client gets the
  answer, so the winner of a race also hears of it late, as it does across a network.

What it does not model
----------------------
- **Adaptive capacity and split for heat** ("DynamoDB burst and adaptive capacity", "Isolate
  frequently accessed items"): AWS shifts throughput to busy partitions and may split a busy
  partition by sort key, over minutes, but never lifts one partition key value's items past
  the per-partition limit when they are written in increasing sort-key order (each new item
  lands at the end of the range), which is how numbered items are written. Here a partition
  key value is one partition, from the first request.
- **Burst capacity** (same page): AWS keeps up to 300 seconds of a provisioned table's unused
  capacity; here a bucket holds only ``burst_secs`` (0.1 s by default), since burst capacity
  does not lift the per-partition limit. There are no table, index or account limits, and no
  on-demand scaling ("Read/write capacity mode"): partitions of one table never slow each other.
- **Secondary indexes.** A write to a table with indexes also writes each index, whose
  partitions have budgets of their own; a ``Query`` of an index (``IndexName``), a ``Scan``,
  ``BatchGetItem`` and ``BatchWriteItem`` pass unbudgeted (DynamoDB answers a partly
  throttled batch with ``UnprocessedItems``, which this model does not produce).
- **What the proxy cannot see.** An ``UpdateItem`` or ``DeleteItem`` of an item over 1 KB
  costs more in DynamoDB than here, and a ``PutItem`` over a larger item costs the larger
  size; a ``Query`` is charged for the items it returns, not those a ``FilterExpression``
  dropped or a ``Select="COUNT"`` counted.

The pure part ([`request_charges()`][aioseq.testing.capacity.request_charges],
[`CapacityLedger`][aioseq.testing.capacity.CapacityLedger],
[`throttled_answer()`][aioseq.testing.capacity.throttled_answer]) does no I/O and takes an injected
clock, so it is tested without a server.
"""

from __future__ import annotations

import json
import math
import random
import re
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from aioseq._items import item_size, write_units
from aioseq._limits import PARTITION_RCU_PER_SEC, PARTITION_WCU_PER_SEC
from aioseq.errors import ConfigurationError

__all__ = [
    "KB",
    "READ_OPERATIONS",
    "WRITE_OPERATIONS",
    "Admission",
    "CapacityLedger",
    "CapacityModel",
    "Charge",
    "TableKeys",
    "read_cost_rcu",
    "request_charges",
    "tables_of",
    "throttled_answer",
]

#: What one write capacity unit covers, in bytes (a read capacity unit covers 4 KB).
KB = 1024
#: The writes the model budgets.
WRITE_OPERATIONS = frozenset({"PutItem", "UpdateItem", "DeleteItem", "TransactWriteItems"})
#: The reads the model budgets (a ``Query`` of the base table only).
READ_OPERATIONS = frozenset({"GetItem", "Query", "TransactGetItems"})
#: The actions of a ``TransactWriteItems`` request, each a write on its own item.
TRANSACT_ACTIONS = ("Put", "Update", "Delete", "ConditionCheck")

_SERVICE = "com.amazonaws.dynamodb.v20120810#"
#: What AWS says when requests to one partition exceed its limit (on-demand tables).
HOT_KEY_MESSAGE = (
    "Throughput exceeds the current capacity of your table or index. DynamoDB is "
    "automatically scaling your table or index so please try again shortly. If exceptions "
    "persist, check if you have a hot key: "
    "https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/bp-partition-key-design.html"
)
#: The ``ThrottlingReasons`` reason for a hot partition's writes: table, write, key range.
HOT_KEY_REASON = "TableWriteKeyRangeThroughputExceeded"
#: The same for its reads.
HOT_KEY_READ_REASON = "TableReadKeyRangeThroughputExceeded"

Unit = Literal["WCU", "RCU"]
PartitionBy = Literal["partition-key", "item"]
ReadKind = Literal["eventual", "consistent", "transactional"]


def _number(value: object, name: str, *, positive: bool) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ConfigurationError(f"{name} must be a finite number: {value!r}")
    if value < 0 or (positive and value == 0):
        raise ConfigurationError(f"{name} must be {'> 0' if positive else '>= 0'}: {value!r}")
    return float(value)


@dataclass(frozen=True)
class CapacityModel:
    """A budget per partition and a round trip per request (see the module doc).

    Attributes:
        partition_wcu_per_sec: one partition's write budget, in write capacity units per
            second (> 0). AWS's limit, 1,000, by default; lower it to see throttling at the
            rates one test process reaches (a local server takes ~300 to ~1,500 requests per
            second).
        partition_rcu_per_sec: one partition's read budget, in read capacity units per
            second (> 0). AWS's limit, 3,000, by default.
        partition_by: ``"partition-key"`` (default): items that share a partition key value
            share one budget, as in AWS. ``"item"``: each item has a write budget of its own
            (``partition_wcu_per_sec``) and reads are not budgeted, which no AWS table does;
            kept to show what a layout gains or loses against the per-partition budget.
        burst_secs: how many seconds of its rate an idle partition's bucket holds (>= 0), so a
            partition can take ``partition_wcu_per_sec * burst_secs`` WCU at once after a
            pause. Small by default (0.1 s: 100 WCU at 1,000 WCU/s): AWS does not publish the
            window over which it enforces a partition's limit, but it is short, and the 300 s
            of burst credits AWS keeps for a table do not lift that limit; a large bucket
            would also hide throttling in a test of a few seconds. A new partition's bucket
            starts full. A request that costs more than a full bucket (a transaction of many
            items) passes when the bucket is full and leaves it in debt, which the rate pays
            off before anything else passes: no request is too large to pass or starved by
            smaller ones, and over time a partition takes its rate, plus one request at most.
        round_trip_secs: ``(lo, hi)``: each request's added round trip is drawn uniformly
            from ``[lo, hi]`` seconds (0 <= lo <= hi); half is spent before the request is
            forwarded, half before its answer is delivered. ``(0.0, 0.0)``: none. Within one
            AWS Region a round trip is a few milliseconds.
        seed: the seed of the round-trip draws.

    Raises:
        ConfigurationError: a value out of range.
    """

    partition_wcu_per_sec: float = float(PARTITION_WCU_PER_SEC)
    partition_rcu_per_sec: float = float(PARTITION_RCU_PER_SEC)
    partition_by: PartitionBy = "partition-key"
    burst_secs: float = 0.1
    round_trip_secs: tuple[float, float] = (0.0, 0.0)
    seed: int = 0

    def __post_init__(self) -> None:
        _number(self.partition_wcu_per_sec, "partition_wcu_per_sec", positive=True)
        _number(self.partition_rcu_per_sec, "partition_rcu_per_sec", positive=True)
        if self.partition_by not in ("partition-key", "item"):
            raise ConfigurationError(
                f"partition_by must be 'partition-key' or 'item': {self.partition_by!r}"
            )
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

    def rate(self, unit: Unit) -> float:
        """A partition's budget for ``unit`` (``"WCU"`` or ``"RCU"``), per second."""
        return self.partition_wcu_per_sec if unit == "WCU" else self.partition_rcu_per_sec

    def bucket(self, unit: Unit) -> float:
        """What an idle partition's bucket of ``unit`` holds: its rate times ``burst_secs``."""
        return self.rate(unit) * self.burst_secs

    def describe(self) -> dict[str, Any]:
        """The model as JSON-ready fields, for a benchmark's results to say what it ran
        through: ``{"partition_by", "partition_wcu_per_sec", "partition_rcu_per_sec",
        "burst_secs", "round_trip_ms": [lo, hi]}``."""
        lo, hi = self.round_trip_secs
        return {
            "partition_by": self.partition_by,
            "partition_wcu_per_sec": self.partition_wcu_per_sec,
            "partition_rcu_per_sec": self.partition_rcu_per_sec,
            "burst_secs": self.burst_secs,
            "round_trip_ms": [lo * 1000, hi * 1000],
        }

    def ledger(self, *, clock: Callable[[], float] = time.monotonic) -> CapacityLedger:
        """A fresh [`CapacityLedger`][aioseq.testing.capacity.CapacityLedger] (full buckets, draws
        from the start)."""
        return CapacityLedger(self, clock=clock)


def read_cost_rcu(
    size_bytes: int, *, consistent: bool = False, transactional: bool = False
) -> float:
    """RCU of a read of ``size_bytes`` (one item, or a ``Query``'s items together):
    ``ceil(size / 4 KB)``, at least 1; half that eventually consistent, twice that in a
    transaction."""
    units = max(1, -(-size_bytes // (4 * KB)))
    return 2.0 * units if transactional else units if consistent else units / 2


@dataclass(frozen=True)
class TableKeys:
    """A table's primary key attribute names.

    Attributes:
        partition_key: the partition (``HASH``) key's name; ``None`` while not known.
        names: every key attribute's name (the partition key, and the sort key if any).
    """

    partition_key: str | None
    names: frozenset[str]


@dataclass(frozen=True)
class Charge:
    """What one request costs one item (or, for a ``Query``, one item collection).

    Attributes:
        table: the table name, as sent.
        key: the item's primary key (AttributeValues) as canonical JSON; for a ``PutItem`` to a
            table whose key is not known yet, the whole item; for a ``Query``, the partition.
        partition: the partition key as canonical JSON, ``{name: value}``; ``key`` when the
            table's partition key is not known.
        unit: ``"WCU"`` or ``"RCU"``.
        units: its cost; for a read, the least it can cost (the rest is charged from the
            answer: [`CapacityLedger.settle()`][aioseq.testing.capacity.CapacityLedger.settle]).
        read: for a read, how its cost grows with size: ``"eventual"``, ``"consistent"`` or
            ``"transactional"``; ``None`` for a write.
    """

    table: str
    key: str
    partition: str
    unit: Unit
    units: float
    read: ReadKind | None = None


def _canonical(attributes: Mapping[str, Any]) -> str:
    return json.dumps(attributes, sort_keys=True, separators=(",", ":"))


def _key_charge(
    table: str, key: Mapping[str, Any], keys: TableKeys | None, unit: Unit, units: float
) -> Charge:
    name = keys.partition_key if keys is not None else None
    if name is None and len(key) == 1:
        name = next(iter(key))  # a key of one attribute is the partition key
    whole = _canonical(key)
    partition = _canonical({name: key[name]}) if name is not None and name in key else whole
    return Charge(table, whole, partition, unit, units)


#: ``name = :value`` (either way round) in a ``KeyConditionExpression``.
_EQUALS = re.compile(r"([#\w.\-]+)\s*=\s*(:[\w\-]+)|(:[\w\-]+)\s*=\s*([#\w.\-]+)")


def _queried_partition(request: Mapping[str, Any], partition_key: str) -> Any:
    """The partition key value a ``Query`` names, or ``None`` when it cannot be read."""
    legacy = request.get("KeyConditions")
    if isinstance(legacy, Mapping):
        condition = legacy.get(partition_key)
        if isinstance(condition, Mapping) and condition.get("ComparisonOperator") == "EQ":
            values = condition.get("AttributeValueList")
            return values[0] if isinstance(values, list) and len(values) == 1 else None
        return None
    expression = request.get("KeyConditionExpression")
    names = request.get("ExpressionAttributeNames") or {}
    values = request.get("ExpressionAttributeValues") or {}
    if not isinstance(expression, str) or not isinstance(names, Mapping):
        return None
    for match in _EQUALS.finditer(expression):
        name, placeholder = match.group(1) or match.group(4), match.group(2) or match.group(3)
        if names.get(name, name) == partition_key and isinstance(values, Mapping):
            return values.get(placeholder)
    return None


def request_charges(
    operation: str, request: Mapping[str, Any], keys: Mapping[str, TableKeys] | None = None
) -> list[Charge]:
    """What a request costs (see the module doc), one charge per item in request order (per
    action of a transaction); empty for requests the model does not budget, or one too
    malformed for DynamoDB to take.

    Parameters:
        operation: the DynamoDB operation (``"UpdateItem"``...).
        request: the request body, parsed (DynamoDB JSON).
        keys: each table's key attribute names, when known: a ``PutItem`` sends a whole item,
            whose primary key is its attributes of these names; a ``Query``'s partition is
            the value its key condition gives the partition key.
    """
    known = keys or {}

    def write(body: object, kind: str, transactional: bool) -> Charge | None:
        if not isinstance(body, Mapping) or not isinstance(body.get("TableName"), str):
            return None
        table: str = body["TableName"]
        if kind != "Put":  # the stored item's size is unknown here: count it as 1 KB
            key = body.get("Key")
            if not isinstance(key, dict) or not key:
                return None
            cost = write_units(0, transactional=transactional)
            return _key_charge(table, key, known.get(table), "WCU", cost)
        item = body.get("Item")
        if not isinstance(item, dict):
            return None
        try:
            size = item_size(item)
        except (AttributeError, RuntimeError, TypeError, ValueError):  # RuntimeError: PEP 479
            return None  # not AttributeValues: DynamoDB refuses it
        table_keys = known.get(table)
        key = {n: v for n, v in item.items() if n in table_keys.names} if table_keys else item
        cost = write_units(size, transactional=transactional)
        return _key_charge(table, key or item, table_keys, "WCU", cost)

    def read(body: object, how: ReadKind) -> Charge | None:
        if not isinstance(body, Mapping) or not isinstance(body.get("TableName"), str):
            return None
        table: str = body["TableName"]
        key = body.get("Key")
        if not isinstance(key, dict) or not key:
            return None
        least = read_cost_rcu(
            0, consistent=how == "consistent", transactional=how == "transactional"
        )
        charge = _key_charge(table, key, known.get(table), "RCU", least)
        return Charge(charge.table, charge.key, charge.partition, "RCU", least, how)

    if operation in ("PutItem", "UpdateItem", "DeleteItem"):
        one = write(request, "Put" if operation == "PutItem" else operation, False)
        return [one] if one is not None else []
    if operation == "GetItem":
        one = read(request, "consistent" if request.get("ConsistentRead") else "eventual")
        return [one] if one is not None else []
    if operation == "Query":
        table = request.get("TableName")
        table_keys = known.get(table) if isinstance(table, str) else None
        if table_keys is None or table_keys.partition_key is None or "IndexName" in request:
            return []
        value = _queried_partition(request, table_keys.partition_key)
        if not isinstance(value, dict):
            return []
        how: Literal["eventual", "consistent"] = (
            "consistent" if request.get("ConsistentRead") else "eventual"
        )
        partition = _canonical({table_keys.partition_key: value})
        least = read_cost_rcu(0, consistent=how == "consistent")
        return [Charge(str(table), partition, partition, "RCU", least, how)]
    if operation in ("TransactWriteItems", "TransactGetItems"):
        found: list[Charge] = []
        entries = request.get("TransactItems")
        allowed = TRANSACT_ACTIONS if operation == "TransactWriteItems" else ("Get",)
        for entry in entries if isinstance(entries, list) else ():
            kinds = [k for k in allowed if isinstance(entry, dict) and k in entry]
            if len(kinds) != 1:
                return []
            one = (
                write(entry[kinds[0]], kinds[0], True)
                if operation == "TransactWriteItems"
                else read(entry["Get"], "transactional")
            )
            if one is None:
                return []
            found.append(one)
        return found
    return []


def tables_of(operation: str, request: Mapping[str, Any]) -> set[str]:
    """The tables a request the model budgets names (for the proxy to learn their keys)."""
    if operation not in WRITE_OPERATIONS | READ_OPERATIONS:
        return set()
    bodies: list[Any] = [request]
    entries = request.get("TransactItems")
    if isinstance(entries, list):
        bodies += [v for e in entries if isinstance(e, dict) for v in e.values()]
    return {
        b["TableName"]
        for b in bodies
        if isinstance(b, Mapping) and isinstance(b.get("TableName"), str)
    }


@dataclass(frozen=True)
class Admission:
    """What [`CapacityLedger.admit()`][aioseq.testing.capacity.CapacityLedger.admit] decided for one
    request.

    Attributes:
        operation: the DynamoDB operation.
        charges: what it costs ([`request_charges()`][aioseq.testing.capacity.request_charges]);
            empty when not budgeted.
        over_budget: the indexes in ``charges`` whose partition lacked the budget; empty when
            admitted.
        wcu: WCU charged: the sum of the writes' costs when admitted, 0 when throttled.
        rcu: RCU charged on admission (the least the reads can cost); 0 when throttled.
    """

    operation: str
    charges: tuple[Charge, ...]
    over_budget: tuple[int, ...]
    wcu: float
    rcu: float = 0.0

    @property
    def admitted(self) -> bool:
        """True when the request may go to the server."""
        return not self.over_budget


Budget = tuple[str, str, Unit]  # (table, partition or item, unit)


class CapacityLedger:
    """The running state of one [`CapacityModel`][aioseq.testing.CapacityModel]: a token bucket per
    partition and unit, the round-trip draws, and the key attributes learnt per table. No I/O,
    not thread-safe (the proxy holds a lock around it).

    Parameters:
        model: the budgets and round trips.
        clock: seconds, monotonic (inject a fake one in tests).
    """

    #: Buckets kept before full ones (indistinguishable from new ones) are dropped.
    PRUNE_AT = 4096

    def __init__(self, model: CapacityModel, *, clock: Callable[[], float] = time.monotonic):
        self.model = model
        self.clock = clock
        self.keys: dict[str, TableKeys] = {}
        self._buckets: dict[Budget, tuple[float, float]] = {}  # (level, at)
        self._rng = random.Random(model.seed)
        self._prune_at = self.PRUNE_AT
        self.admitted = 0
        self.throttled = 0
        self.charged_wcu = 0.0
        self.charged_rcu = 0.0

    def __repr__(self) -> str:
        per = "partition" if self.model.partition_by == "partition-key" else "item"
        return (
            f"<CapacityLedger {self.model.partition_wcu_per_sec:g} WCU/s per {per},"
            f" buckets={len(self._buckets)} admitted={self.admitted}"
            f" throttled={self.throttled} charged_wcu={self.charged_wcu:g}"
            f" charged_rcu={self.charged_rcu:g}>"
        )

    def budget_of(self, charge: Charge) -> Budget | None:
        """The bucket ``charge`` draws on: ``(table, partition, unit)``; ``(table, key,
        unit)`` when ``partition_by="item"``; ``None`` when not budgeted (a read with
        ``partition_by="item"``, or of a table whose partition key is not known)."""
        if self.model.partition_by == "item":
            return None if charge.unit == "RCU" else (charge.table, charge.key, charge.unit)
        if charge.unit == "RCU" and charge.partition == charge.key and charge.read is not None:
            table_keys = self.keys.get(charge.table)
            if table_keys is None or table_keys.partition_key is None:
                return None
        return (charge.table, charge.partition, charge.unit)

    def level(self, table: str, partition: str, unit: Unit = "WCU") -> float:
        """Units in the bucket of ``partition`` (the partition key as canonical JSON,
        ``{name: value}``, or the item's key with ``partition_by="item"``) of ``table`` now,
        at most [`CapacityModel.bucket()`][aioseq.testing.CapacityModel.bucket]; below 0
        while a large request or read is paid off."""
        top = self.model.bucket(unit)
        state = self._buckets.get((table, partition, unit))
        if state is None:
            return top
        level, at = state
        return min(top, level + self.model.rate(unit) * max(0.0, self.clock() - at))

    def admit(self, operation: str, request: Mapping[str, Any]) -> Admission:
        """Decide one request: admitted (each partition it touches has the budget; each is
        charged) or throttled (nothing is charged). Requests the model does not budget are
        admitted uncharged."""
        charges = tuple(request_charges(operation, request, self.keys))
        budgets = [self.budget_of(c) for c in charges]
        if not any(budgets):
            return Admission(operation, charges, (), 0.0)
        for b in budgets:  # a partition seen first holds its burst, and fills from now on
            if b is not None and b not in self._buckets:
                self._buckets[b] = (self.model.bucket(b[2]), self.clock())
        wanted: dict[Budget, float] = {}
        for budget, charge in zip(budgets, charges, strict=True):
            if budget is not None:  # one partition, several items: their costs add up
                wanted[budget] = wanted.get(budget, 0.0) + charge.units
        levels = {b: self.level(*b) for b in wanted}
        # A request costing more than a full bucket passes once the bucket is full, and leaves
        # it in debt: it is never starved by smaller ones, and the rate still holds.
        needed = {b: min(cost, self.model.bucket(b[2])) for b, cost in wanted.items()}
        over = tuple(i for i, b in enumerate(budgets) if b is not None and levels[b] < needed[b])
        if over:
            self.throttled += 1
            return Admission(operation, charges, over, 0.0)
        now = self.clock()
        for b, cost in wanted.items():
            self._buckets[b] = (levels[b] - cost, now)
        self.admitted += 1
        wcu = sum(cost for b, cost in wanted.items() if b[2] == "WCU")
        rcu = sum(cost for b, cost in wanted.items() if b[2] == "RCU")
        self.charged_wcu += wcu
        self.charged_rcu += rcu
        if len(self._buckets) >= self._prune_at:
            self._prune()
        return Admission(operation, charges, (), wcu, rcu)

    def settle(self, admission: Admission, answer: Mapping[str, Any]) -> float:
        """Charge an admitted read what its answer shows it cost beyond the least charged on
        admission (``Item``'s, ``Items``' or ``Responses``' sizes); returns the RCU added.
        Writes, throttled requests and answers without items add nothing."""
        if not admission.admitted or not admission.rcu:
            return 0.0
        if admission.operation == "Query":
            items: Iterable[Any] = answer.get("Items") or ()
            sizes = [self._size([i for i in items if isinstance(i, Mapping)])]
        elif admission.operation == "GetItem":
            item = answer.get("Item")
            sizes = [self._size([item] if isinstance(item, Mapping) else [])]
        else:
            responses = answer.get("Responses")
            found = responses if isinstance(responses, list) else []
            sizes = [
                self._size([r["Item"]] if isinstance(r, Mapping) and "Item" in r else [])
                for r in found
            ]
        added = 0.0
        now = self.clock()
        for charge, size in zip(admission.charges, sizes, strict=False):
            budget = self.budget_of(charge)
            if budget is None or charge.read is None:
                continue
            full = read_cost_rcu(
                size,
                consistent=charge.read == "consistent",
                transactional=charge.read == "transactional",
            )
            extra = full - charge.units
            if extra > 0:
                self._buckets[budget] = (self.level(*budget) - extra, now)
                added += extra
        self.charged_rcu += added
        return added

    @staticmethod
    def _size(items: Sequence[Mapping[str, Any]]) -> int:
        try:
            return sum(item_size(i) for i in items)
        except (AttributeError, RuntimeError, TypeError, ValueError, StopIteration):
            return 0

    def _prune(self) -> None:
        for b in [b for b in self._buckets if self.level(*b) >= self.model.bucket(b[2])]:
            del self._buckets[b]
        self._prune_at = max(self.PRUNE_AT, 2 * len(self._buckets))

    def round_trip_secs(self) -> float:
        """The next request's round trip, in seconds (the next seeded draw)."""
        lo, hi = self.model.round_trip_secs
        return lo if lo == hi else self._rng.uniform(lo, hi)

    def knows(self, table: str) -> bool:
        """True once ``table``'s partition key is known."""
        found = self.keys.get(table)
        return found is not None and found.partition_key is not None

    def learn(
        self,
        operation: str,
        request: Mapping[str, Any],
        response: Mapping[str, Any] | None = None,
    ) -> None:
        """Learn tables' key attributes from traffic: a ``CreateTable`` request, a
        ``CreateTable`` or ``DescribeTable`` answer (names and which is the partition key),
        or any request's ``Key`` (which DynamoDB requires to be the full primary key: its
        names, and its partition key when it has one attribute)."""
        descriptions: list[Any] = []
        if operation == "CreateTable":
            descriptions.append(request)
        if response is not None:
            descriptions += [response.get("Table"), response.get("TableDescription")]
        for d in descriptions:
            if isinstance(d, Mapping) and isinstance(d.get("TableName"), str):
                schema = [s for s in d.get("KeySchema") or () if isinstance(s, Mapping)]
                names = [s.get("AttributeName") for s in schema]
                if names and all(isinstance(n, str) for n in names):
                    hashes = [s["AttributeName"] for s in schema if s.get("KeyType") == "HASH"]
                    self.keys[d["TableName"]] = TableKeys(
                        hashes[0] if len(hashes) == 1 else None, frozenset(map(str, names))
                    )
        bodies = [request]
        entries = request.get("TransactItems")
        if isinstance(entries, list):
            bodies += [v for e in entries if isinstance(e, dict) for v in e.values()]
        for body in bodies:
            if isinstance(body, Mapping):
                table, key = body.get("TableName"), body.get("Key")
                if not (isinstance(table, str) and isinstance(key, dict) and key):
                    continue
                if table not in self.keys or (
                    self.keys[table].partition_key is None and len(key) == 1
                ):
                    self.keys[table] = TableKeys(
                        next(iter(key)) if len(key) == 1 else None, frozenset(key)
                    )


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
    if admission.operation in ("TransactWriteItems", "TransactGetItems"):
        over = set(admission.over_budget)
        reasons: list[dict[str, str]] = [
            {"Code": "ThrottlingError", "Message": HOT_KEY_MESSAGE}
            if i in over
            else {"Code": "None"}
            for i in range(len(admission.charges))
        ]
        codes = ", ".join(r["Code"] for r in reasons)
        return 400, {
            "__type": _SERVICE + "TransactionCanceledException",
            "Message": "Transaction cancelled, please refer cancellation reasons for specific "
            f"reasons [{codes}]",
            "CancellationReasons": reasons,
        }
    charge = admission.charges[admission.over_budget[0]]
    table = charge.table
    arn = (
        table if table.startswith("arn:") else f"arn:aws:dynamodb:{region}:{account}:table/{table}"
    )
    return 400, {
        "__type": _SERVICE + "ProvisionedThroughputExceededException",
        "message": HOT_KEY_MESSAGE,
        "ThrottlingReasons": [
            {
                "reason": HOT_KEY_REASON if charge.unit == "WCU" else HOT_KEY_READ_REASON,
                "resource": arn,
            }
        ],
    }
