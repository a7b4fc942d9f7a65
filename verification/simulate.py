"""A deterministic simulation of aioseq's real code: one seed, one exact interleaving.

Every run is one event loop whose clock is virtual (`VirtualTimeLoop`: when no callback is
ready, time jumps to the next timer), with several stores standing for processes, each on its
own `SimulatedNetwork` endpoint over one in-process DynamoDB
([`FakeDynamoDB`][aioseq.testing.FakeDynamoDB]: moto's handler) or a
[`SimulatedGlobalTable`][aioseq.testing.SimulatedGlobalTable] of three Regions. Everything that
varies comes from the seed: the deployment (strategies, processes, block sizes, Regions), the
workload (calls, deadlines, idempotency keys), and the faults, drawn per request:

- a delay each way, so concurrent requests are answered out of order;
- ``response-lost`` (applied, then the connection reset: the caller cannot tell), ``reset``
  (lost before it was applied), throttling, 5xx, transaction conflicts;
- callers that give up (``asyncio.wait_for`` deadlines), their requests cut off on the wire
  or, half the time, arriving later all the same; processes that crash (requests never
  answered, nothing closed), stores closed while calls run, idle objects dropped;
- an operator moving counters forward, and a Region added to a Region-scoped key.
- an invoice series (docs/series.md) on a gapless strategy, its documents dated on both sides
  of a new year that falls during the run, some late, some refused past the grace.

Afterwards the invariants are checked (`check()`): no number handed out twice (across
processes and Regions; an idempotency key's replays excepted), no item stored twice, the
gapless strategies' items numbered without holes, each idempotency key one number and one
item, no error a correct deployment should not see, no caller waiting past a bound, every
counter still moving once the faults stop, and each series document in its own date's period,
refused exactly when that period had closed. A failing seed prints a command that replays
it exactly and the requests that touched the counter at fault.

    python -m verification.simulate --seeds 2000          # seeds 0..1999, all cores
    python -m verification.simulate --seed 1234 --trace   # one seed, its requests

What is simulated and what is not: docs/testing.md.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import functools
import hashlib
import json
import logging
import multiprocessing
import os
import random
import secrets
import selectors
import sys
import time
import traceback
import warnings
from collections import Counter, defaultdict, deque
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from aioseq import DynamoStore, RegionScope, RetryPolicy, Series, admin
from aioseq._transport import may_apply
from aioseq.errors import (
    AioseqError,
    ConfigurationError,
    ConnectionFailed,
    CounterValueInvalid,
    IdempotencyKeyReused,
    ItemAlreadyExists,
    NumberingMismatch,
    NumberOutOfRange,
    PeriodClosed,
    StoreClosed,
)
from aioseq.testing import FakeDynamoDB, SimulatedGlobalTable

__all__ = ["Outcome", "Scenario", "VirtualTimeLoop", "main", "run_seed"]

TABLE = "sim"
#: The Regions of a global-table scenario: the first two take numbers from the start, the
#: third is added to each key's scope during the run (a free slot).
REGIONS = ("us-east-1", "eu-west-1", "ap-south-1")
STRATEGIES = ("allocator", "atomic", "optimistic", "transactional", "sort-key")
#: Strategies whose stored items must be numbered without holes.
GAPLESS = frozenset({"transactional", "sort-key"})
#: No call may take longer than this, in virtual seconds (the retry policy's bound plus a
#: queue's leases and the slowest answers the network draws).
CALL_BOUND_SECS = 120.0
#: The strategies an operator moves forward during a run (documented safe while they run).
SET_FORWARD = frozenset({"atomic", "allocator"})
#: A misconfigured Region (another scope on a key) may hand out numbers the other Region hands
#: out until the key's scope record has replicated and been read again: at most this long
#: after the replication delay, in virtual seconds (readings are at most 10 s apart, and a
#: reading that fails under the faults is tried at the next one: two periods and retries).
SCOPE_SETTLE_SECS = 25.0
#: The invoice series of a series scenario (docs/series.md): its key and zone, and the new
#: year that falls during the run (at ``Scenario.boundary_secs`` of virtual time).
SERIES_KEY = "series-1"
SERIES_TZ = "Europe/Paris"
NEW_YEAR = datetime(2027, 1, 1, tzinfo=ZoneInfo(SERIES_TZ))
#: The labels of the periods before and after the new year, by period (the check's own
#: reckoning, not the library's).
PERIODS = {
    "year": ("2026", "2027"),
    "month": ("2026-12", "2027-01"),
    "day": ("2026-12-31", "2027-01-01"),
}
#: How late a series document may be dated, in seconds before the (virtual) wall clock.
LATENESS_SECS = (0.0, 0.0, 0.3, 1.5, 5.0)
#: Faults the network draws, with their weights within a scenario's fault rate.
#: The share of requests cut off on their way by their caller's cancel that still arrive.
LATE_ARRIVALS = 0.5

FAULT_KINDS = {
    "response-lost": 4,
    "reset": 2,
    "throttling": 1,
    "internal-error": 1,
    "transaction-conflict": 1,
}


# --- virtual time ----------------------------------------------------------------------------


class Stuck(Exception):
    """Nothing is ready and nothing is scheduled, while the run still waits: a caller would
    wait forever."""


class _VirtualSelector(selectors.BaseSelector):
    """A selector that never blocks: a wait of ``timeout`` moves virtual time instead."""

    def __init__(self) -> None:
        self._real = selectors.DefaultSelector()
        self.now = 0.0

    def register(self, fileobj: Any, events: int, data: Any = None) -> selectors.SelectorKey:
        return self._real.register(fileobj, events, data)

    def unregister(self, fileobj: Any) -> selectors.SelectorKey:
        return self._real.unregister(fileobj)

    def modify(self, fileobj: Any, events: int, data: Any = None) -> selectors.SelectorKey:
        return self._real.modify(fileobj, events, data)

    def select(self, timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
        ready = self._real.select(0)
        if ready or timeout == 0:
            return ready
        if timeout is None:
            raise Stuck(f"at {self.now:.3f} s nothing is scheduled and the run still waits")
        self.now += timeout
        return []

    def close(self) -> None:
        self._real.close()

    def get_map(self) -> Any:
        return self._real.get_map()


class VirtualTimeLoop(asyncio.SelectorEventLoop):
    """An event loop whose ``time()`` is virtual: it starts at 0 and, when no callback is
    ready, jumps to the next timer, so a run of minutes of library time takes milliseconds
    and callbacks run in one order for one seed (FoundationDB's simulation; TigerBeetle's VOPR)."""

    def __init__(self) -> None:
        self._virtual = _VirtualSelector()
        super().__init__(self._virtual)

    def time(self) -> float:
        return self._virtual.now


class LoopTime:
    """The store's [`Clock`][aioseq.clock.Clock] on the loop's (virtual) time."""

    def now(self) -> float:
        return asyncio.get_running_loop().time()

    async def sleep(self, secs: float) -> None:
        await asyncio.sleep(max(0.0, secs))


# --- the scenario ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Scenario:
    """One seed's deployment, drawn by `Scenario.draw()`."""

    seed: int
    strategies: tuple[str, ...]
    processes: int
    workers: int
    duration_secs: float
    #: The mean pause of a caller between two calls, in virtual seconds.
    think_secs: float
    fault_rate: float
    deadline_share: float
    block_size: int
    fixed_blocks: bool
    idle_secs: float | None
    keyed_share: float
    group: bool
    crashes: int
    closes: int
    operator_sets: int
    #: ``None``: one Region. ``"regions"``: each key scoped over two Regions of three slots,
    #: the third added during the run. ``"home"``: one home Region writes, the other reads.
    global_table: str | None = None
    replication_delay_secs: float = 0.0
    #: ``"regions"`` only: the second Region's stores get another scope, its Regions in
    #: another order (``"order"``) or another count of slots (``"slots"``): a misconfigured
    #: deployment, refused once the scope records have replicated, never numbered twice after.
    mismatched: str | None = None
    check_table: bool = False
    #: An invoice series numbered alongside, its documents dated on both sides of a new year
    #: that falls during the run: ``(strategy, period, grace_secs)`` (a gapless strategy), or
    #: ``None``. Such a scenario closes a store at least once (a restart).
    series: tuple[str, str, float | None] | None = None
    #: When the new year falls, in virtual seconds.
    boundary_secs: float = 0.0

    @classmethod
    def draw(cls, seed: int) -> Scenario:
        rng = random.Random(f"scenario-{seed}")
        global_table = rng.choices([None, "regions", "home"], weights=[6, 3, 1])[0]
        if rng.random() < 0.4:  # one strategy alone: its own contention
            strategies: tuple[str, ...] = (rng.choice(STRATEGIES),)
        else:
            strategies = tuple(s for s in STRATEGIES if rng.random() < 0.6) or ("allocator",)
        think_secs = rng.choice([0.05, 0.2, 0.5])
        mismatched = None
        if global_table == "regions" and rng.random() < 0.3:
            mismatched = rng.choice(["order", "slots"])
        replication_delay_secs = rng.choice([0.05, 2.0, 15.0, 30.0])
        duration_secs = rng.choice([4.0, 8.0, 16.0])
        if mismatched:  # long enough to see the scope records replicate, and then some
            duration_secs = replication_delay_secs + SCOPE_SETTLE_SECS + 10.0
        drawn = cls(
            seed=seed,
            strategies=strategies,
            processes=rng.randint(2, 3),
            workers=rng.randint(1, 3),
            duration_secs=duration_secs,
            think_secs=think_secs,
            fault_rate=rng.choice([0.0, 0.05, 0.15, 0.3]),
            deadline_share=rng.choice([0.0, 0.2, 0.5]),
            block_size=rng.choice([1, 2, 3, 5, 10]),
            fixed_blocks=rng.random() < 0.7,
            idle_secs=rng.choice([None, 2.0, 5.0]),
            keyed_share=rng.choice([0.0, 0.3]),
            group=rng.random() < 0.7,
            crashes=rng.choice([0, 0, 1, 2]),
            closes=rng.choice([0, 1, 3]),
            operator_sets=rng.choice([0, 0, 1, 2]),
            global_table=global_table,
            replication_delay_secs=replication_delay_secs,
            mismatched=mismatched,
            check_table=rng.random() < 0.3,
        )
        # Drawn last, so that the fields above are what they were before series existed.
        if mismatched or rng.random() >= 0.35:
            return drawn
        series = (
            rng.choice(sorted(GAPLESS)),
            rng.choice(["year", "month", "day"]),
            rng.choice([None, 1.0, 4.0]),
        )
        boundary = round(duration_secs * rng.uniform(0.2, 0.7), 3)
        closes = max(drawn.closes, 1)
        return replace(drawn, series=series, boundary_secs=boundary, closes=closes)


# --- the network -----------------------------------------------------------------------------


@dataclass
class Event:
    """One request or call, for the trace."""

    at: float
    process: str
    what: str
    detail: str

    def __str__(self) -> str:
        return f"{self.at:9.3f}s {self.process:<8} {self.what:<14} {self.detail}"


class SimulatedNetwork:
    """One process's endpoint: a [`Transport`][aioseq.contracts.Transport] over a shared
    DynamoDB (a fake, or a global table's Region), with the faults the run draws.

    Each request waits a drawn delay on its way and on its way back; a drawn fault is planned
    on the storage fake for this request alone (``inject(when=...)``), so the fake raises the
    errors as the real transport does. A crashed process's requests are never answered."""

    def __init__(self, run: Run, process: Process, base: Any, fake: FakeDynamoDB) -> None:
        self._run = run
        self._process = process
        self._base = base
        self._fake = fake
        self._closed = False
        self._requests: Counter[str] = Counter()
        self.region_name: str | None = getattr(base, "region_name", None)
        self.endpoint = base.endpoint

    loop = None
    observer = None
    client = None

    @property
    def requests(self) -> Counter[str]:
        return Counter(self._requests)

    def validate(self, operation: str, params: dict[str, Any]) -> None:
        self._base.validate(operation, params)

    async def send(self, operation: str, params: dict[str, Any]) -> dict[str, Any]:
        if self._closed:
            raise StoreClosed("this DynamoStore is closed")
        run, process = self._run, self._process
        self._requests[operation] += 1
        fault = run.draw_fault(operation)
        await run.hang_if_crashed(process)
        try:
            await asyncio.sleep(run.delay())
        except asyncio.CancelledError:
            if fault != "reset" and run.rng.random() < LATE_ARRIVALS:
                run.late.append(asyncio.ensure_future(self._arrive_late(operation, params, fault)))
            raise
        await run.hang_if_crashed(process)
        run.trace(process.name, operation, _describe(params) + (f" fault={fault}" if fault else ""))
        if fault == "reset":  # lost on its way: not applied
            raise _connection_lost(operation, "ConnectionClosedError")
        self._refuse_if(fault, params)
        try:
            response: dict[str, Any] = await self._base.send(operation, params)
        except Exception as exc:
            await asyncio.sleep(run.delay())
            await run.hang_if_crashed(process)
            run.trace(process.name, "  error", f"{type(exc).__name__}")
            raise
        await asyncio.sleep(run.delay())
        await run.hang_if_crashed(process)
        if fault == "response-lost":  # applied (and replicated); the answer never came
            run.trace(process.name, "  lost answer", operation)
            # A reset comes at once; a read timeout after the client's timeout.
            await asyncio.sleep(run.rng.choice([run.delay(), run.rng.uniform(0.01, 1.0)]))
            await run.hang_if_crashed(process)
            raise _connection_lost(operation, "ReadTimeoutError")
        return response

    async def _arrive_late(self, operation: str, params: dict[str, Any], fault: str | None) -> None:
        """A request whose caller gave up while it was on the wire: it still reaches DynamoDB,
        later, and is applied; its answer goes nowhere."""
        run, process = self._run, self._process
        await asyncio.sleep(run.delay())
        await run.hang_if_crashed(process)
        run.trace(process.name, operation, _describe(params) + " (arrived after its caller left)")
        self._refuse_if(fault, params)
        with contextlib.suppress(Exception):
            await self._base.send(operation, params)

    def _refuse_if(self, fault: str | None, params: dict[str, Any]) -> None:
        """Plan ``fault`` on the storage fake for this request alone, if it is one DynamoDB
        answers with its error (not a reset, not a lost answer)."""
        if fault is not None and fault not in ("reset", "response-lost"):
            self._fake.inject(fault, when=lambda sent: sent is params)

    async def aclose(self, *, timeout_secs: float) -> None:
        self._closed = True


def _connection_lost(operation: str, cause: str) -> ConnectionFailed:
    """The error the transport raises for a connection reset or a read timeout."""
    name = "".join(part.title() for part in operation.split("_"))
    return ConnectionFailed(
        f"{name}: {cause}", code=cause, operation=name, maybe_applied=may_apply(name)
    )


def _describe(params: dict[str, Any]) -> str:
    """A request's keys and expressions, short."""
    parts = []
    if "Key" in params:
        parts.append(json.dumps(params["Key"], sort_keys=True))
    if "Item" in params:
        where = {k: v for k, v in params["Item"].items() if k in ("pk", "sk")}
        parts.append("Item " + json.dumps(where, sort_keys=True))
    if "UpdateExpression" in params:
        parts.append(params["UpdateExpression"])
    if "ConditionExpression" in params:
        parts.append("IF " + params["ConditionExpression"])
    if "ExpressionAttributeValues" in params:
        parts.append(json.dumps(params["ExpressionAttributeValues"], sort_keys=True))
    if "TransactItems" in params:
        for action in params["TransactItems"]:
            (kind, body), *_ = action.items()
            where = body.get("Key") or {
                k: v for k, v in body.get("Item", {}).items() if k in ("pk", "sk")
            }
            parts.append(f"[{kind} {json.dumps(where, sort_keys=True)}]")
    if "KeyConditionExpression" in params:
        parts.append(json.dumps(params.get("ExpressionAttributeValues", {}), sort_keys=True))
    return " ".join(parts)[:400]


# --- the run ---------------------------------------------------------------------------------


@dataclass
class Call:
    """One call a caller made, and what it got."""

    process: str
    strategy: str
    key: str
    op: str
    started: float
    ended: float | None = None
    numbers: tuple[int, ...] = ()
    payload: str | None = None
    idempotency_key: str | None = None
    error: BaseException | None = None
    cancelled: bool = False
    region: str | None = None
    #: The Regions its store was given (``regions=``), if any.
    listed: tuple[str, ...] = ()
    #: Its store's scope, as a scope record begins (``"regions=a,b slots=3"``), or ``""``.
    scope: str = ""
    #: A series document's date, and the wall clock it was judged by.
    dated: datetime | None = None
    judged_at: datetime | None = None


@dataclass
class Process:
    """A process: a store on its own network endpoint, its workers, and its fate."""

    name: str
    region: str | None
    store: DynamoStore | None = None
    crashed: bool = False
    calls: int = 0
    generation: int = 0
    #: The Regions its store was given (``regions=``), if any.
    listed: tuple[str, ...] = ()
    #: Its store's scope, as a scope record begins (``"regions=a,b slots=3"``), or ``""``.
    scope: str = ""


class Run:
    """One seed's run (see the module doc)."""

    def __init__(self, scenario: Scenario, *, keep_trace: int = 400) -> None:
        self.scenario = scenario
        self.rng = random.Random(scenario.seed)
        self.calls: list[Call] = []
        self.events: deque[Event] = deque(maxlen=keep_trace)
        self.all_events: list[Event] | None = None
        self.faults_on = True
        self.digest = hashlib.sha256()
        self.fakes: dict[str, FakeDynamoDB] = {}
        self.table: SimulatedGlobalTable | None = None
        self.processes: list[Process] = []
        self.tasks: list[asyncio.Task[None]] = []
        #: Requests that arrive after their caller gave up (`SimulatedNetwork._arrive_late`).
        self.late: list[asyncio.Task[None]] = []
        self.region_added = False
        #: When the third Region was added, and the keys whose scope records did not take it.
        self.region_added_at: float | None = None
        self.unchanged: set[str] = set()
        self.scopes: dict[str, RegionScope] = {}

    # --- what the seed decides ---------------------------------------------------------------

    def delay(self) -> float:
        """A one-way network delay: mostly a millisecond or two, sometimes much longer."""
        r = self.rng.random()
        if r < 0.8:
            return self.rng.uniform(0.0005, 0.003)
        if r < 0.97:
            return self.rng.uniform(0.003, 0.2)
        return self.rng.uniform(0.2, 3.0)

    def draw_fault(self, operation: str) -> str | None:
        if not self.faults_on or self.rng.random() >= self.scenario.fault_rate:
            return None
        kinds = list(FAULT_KINDS)
        kind = self.rng.choices(kinds, weights=[FAULT_KINDS[k] for k in kinds])[0]
        if kind == "transaction-conflict" and operation != "transact_write_items":
            return "throttling"
        return kind

    def trace(self, process: str, what: str, detail: str) -> None:
        event = Event(asyncio.get_running_loop().time(), process, what, detail)
        self.events.append(event)
        if self.all_events is not None:
            self.all_events.append(event)
        self.digest.update(str(event).encode())

    async def hang_if_crashed(self, process: Process) -> None:
        if process.crashed:  # a dead process's request is never answered
            await asyncio.get_running_loop().create_future()  # (its own: a cancel ends only it)

    # --- the deployment ----------------------------------------------------------------------

    def regions_for(self, index: int) -> str | None:
        if self.scenario.global_table is None:
            return None
        return REGIONS[index % 2]

    def store_options(self, region: str | None) -> dict[str, Any]:
        scenario = self.scenario
        if scenario.global_table == "home":
            return {"home_region": REGIONS[0]}
        if scenario.global_table == "regions":
            if self.region_added:
                return {"regions": RegionScope(REGIONS, slots=3)}
            listed = REGIONS[:2]
            if region == REGIONS[1] and scenario.mismatched == "order":
                return {"regions": RegionScope(listed[::-1], slots=3)}
            if region == REGIONS[1] and scenario.mismatched == "slots":
                return {"regions": RegionScope(listed, slots=2)}
            return {"regions": RegionScope(listed, slots=3)}
        return {}

    def transport_for(self, process: Process) -> SimulatedNetwork:
        if self.table is not None:
            assert process.region is not None
            base: Any = self.table.transport(process.region)
            fake = self.fakes[process.region]
        else:
            fake = base = self.fakes[""]
        return SimulatedNetwork(self, process, base, fake)

    def open_store(self, process: Process) -> DynamoStore:
        scenario = self.scenario
        policy = RetryPolicy(max_attempts=6, max_delay_secs=30.0)
        return DynamoStore(
            transport=self.transport_for(process),
            table=TABLE,
            retry_policy=policy,
            clock=LoopTime(),
            idle_secs=scenario.idle_secs,
            **self.store_options(process.region),
        )

    def counter(self, store: DynamoStore, strategy: str, key: str) -> Any:
        scenario = self.scenario
        if strategy == "allocator":
            size = scenario.block_size
            return store.block_allocator(
                key,
                block_size=size,
                max_block_size=size if scenario.fixed_blocks else 1000,
                target_refill_interval_secs=None if scenario.fixed_blocks else 2.0,
            )
        if strategy == "atomic":
            return store.atomic_counter(key)
        if strategy == "optimistic":
            return store.optimistic_counter(key, group=scenario.group)
        if strategy == "transactional":
            return store.transactional_counter(key, group=scenario.group)
        if strategy == "sort-key":
            return store.sort_key_counter(key, group=scenario.group)
        raise AssertionError(strategy)

    # --- callers -----------------------------------------------------------------------------

    async def one_call(
        self,
        process: Process,
        strategy: str,
        key: str,
        *,
        deadline: bool = True,
        make: Callable[[], Any] | None = None,
        call: Call | None = None,
    ) -> None:
        scenario, rng = self.scenario, self.rng
        assert process.store is not None
        loop = asyncio.get_running_loop()
        process.calls += 1
        call = call or Call(process.name, strategy, key, "next", loop.time())
        call.region, call.listed, call.scope = process.region, process.listed, process.scope
        op: Callable[[], Awaitable[Any]]
        try:
            counter = make() if make else self.counter(process.store, strategy, key)
        except Exception as exc:
            call.ended, call.error = loop.time(), exc
            self.calls.append(call)
            return
        if strategy in GAPLESS:
            if rng.random() < scenario.keyed_share:
                # Records are per Region under regions= (docs/global-tables.md).
                where = f"{process.region}-" if scenario.global_table == "regions" else ""
                call.idempotency_key = f"idem-{where}{rng.randint(1, 4)}"
                call.payload = f"idem/{call.idempotency_key}"
            else:
                call.payload = f"{process.name}/{process.calls}"
            op = self._put(strategy, counter, key, call)
            call.op = "put"
        elif strategy in ("allocator", "atomic") and rng.random() < 0.2:
            n = rng.randint(1, 4)
            call.op = f"next_many({n})"

            async def op() -> Any:
                return await counter.next_many(n)
        else:
            op = counter.next
        self.calls.append(call)
        try:
            if deadline and rng.random() < scenario.deadline_share:
                result = await asyncio.wait_for(op(), rng.choice([0.005, 0.05, 0.5, 3.0]))
            else:
                result = await op()
        except asyncio.TimeoutError:
            call.cancelled = True
        except asyncio.CancelledError as exc:
            task = asyncio.current_task()
            if task is None or getattr(task, "cancelling", lambda: 1)():  # (3.11: cancelling)
                raise
            call.error = exc  # cancelled, though nobody cancelled the caller
        except Exception as exc:
            call.error = exc
        else:
            call.numbers = tuple(result) if isinstance(result, range) else (result,)
        call.ended = loop.time()
        if process.crashed:
            call.numbers = ()  # nobody saw what a dead process got
        self.trace(process.name, "call", _call_text(call))

    def _put(
        self, strategy: str, counter: Any, key: str, call: Call
    ) -> Callable[[], Awaitable[int]]:
        payload, idempotency_key = call.payload, call.idempotency_key
        if strategy == "transactional":

            async def put() -> int:
                number: int = await counter.put(
                    lambda n: {"pk": key, "sk": n, "payload": payload},
                    idempotency_key=idempotency_key,
                )
                return number

            return put

        async def put_sorted() -> int:
            number: int = await counter.put({"payload": payload}, idempotency_key=idempotency_key)
            return number

        return put_sorted

    async def worker(self, process: Process, generation: int) -> None:
        scenario, rng = self.scenario, self.rng
        loop = asyncio.get_running_loop()
        while loop.time() < scenario.duration_secs:
            if process.crashed or process.generation != generation:
                return
            away = scenario.global_table == "home" and process.region != REGIONS[0]
            if scenario.series is not None and not away and rng.random() < 0.4:
                await self.series_call(process)
                await asyncio.sleep(rng.expovariate(1 / scenario.think_secs))
                continue
            strategy = rng.choice(scenario.strategies)
            key = f"{strategy}-{1 if rng.random() < 0.85 else 2}"
            if scenario.global_table == "home" and process.region != REGIONS[0]:
                await self.read(process, strategy, key)  # away from home: reads only
            elif strategy == "allocator" and rng.random() < 0.1:
                await self.close_allocator(process, key)
            else:
                await self.one_call(process, strategy, key)
            await asyncio.sleep(rng.expovariate(1 / scenario.think_secs))

    # --- an invoice series -------------------------------------------------------------------

    def wall_clock(self) -> datetime:
        """The wall clock of the run: the new year falls at ``boundary_secs`` of virtual time."""
        since = asyncio.get_running_loop().time() - self.scenario.boundary_secs
        return NEW_YEAR + timedelta(seconds=since)

    def series(self, store: DynamoStore) -> Series[Any]:
        assert self.scenario.series is not None
        strategy, period, grace = self.scenario.series
        return store.series(
            SERIES_KEY,
            period=period,
            tz=SERIES_TZ,
            strategy=strategy,
            grace_secs=grace,
            group=self.scenario.group,
        )

    def series_keys(self) -> list[str]:
        """The counter keys of the periods on either side of the new year."""
        if self.scenario.series is None:
            return []
        return [f"{SERIES_KEY}/{label}" for label in PERIODS[self.scenario.series[1]]]

    async def series_call(self, process: Process) -> None:
        """A document dated now, or a little before (late), or a little ahead, put in its
        period's counter; refused (``PeriodClosed``) when its period closed."""
        assert process.store is not None and self.scenario.series is not None
        rng, loop = self.rng, asyncio.get_running_loop()
        now = self.wall_clock()
        if rng.random() < 0.1:
            on = now + timedelta(seconds=0.5)  # within the future tolerance
        else:
            on = now - timedelta(seconds=rng.choice(LATENESS_SECS))
        series = self.series(process.store)
        key = series.counter_key(series.period_of(on))
        call = Call(process.name, self.scenario.series[0], key, "next", loop.time())
        call.dated, call.judged_at = on, now
        call.payload = f"{process.name}/{process.calls + 1}"  # (one_call's, if it gets there)
        await self.one_call(
            process, call.strategy, key, make=lambda: series.at(on, now=now), call=call
        )

    async def read(self, process: Process, strategy: str, key: str) -> None:
        """A read away from the home Region: it works there, and writes nothing."""
        assert process.store is not None
        loop = asyncio.get_running_loop()
        call = Call(process.name, strategy, key, "current", loop.time(), region=process.region)
        self.calls.append(call)
        try:
            counter = self.counter(process.store, strategy, key)
            await counter.current()
        except Exception as exc:
            call.error = exc
        call.ended = loop.time()

    async def close_allocator(self, process: Process, key: str) -> None:
        """A caller closes the allocator it shares (its unused numbers are given back)."""
        assert process.store is not None
        with contextlib.suppress(Exception):
            allocator = self.counter(process.store, "allocator", key)
            self.trace(process.name, "close", key)
            await allocator.aclose()

    # --- fates -------------------------------------------------------------------------------

    def start(self, process: Process) -> None:
        process.generation += 1
        process.store = self.open_store(process)
        scope = process.store.region_scope
        process.listed = scope.regions if scope is not None else ()
        process.scope = f"regions={','.join(scope.regions)} slots={scope.slots}" if scope else ""
        for _ in range(self.scenario.workers):
            self.tasks.append(asyncio.ensure_future(self.worker(process, process.generation)))

    async def crash(self, process: Process) -> None:
        """The process dies: nothing of it is closed, its requests are never answered, and
        another process starts in its place."""
        self.trace(process.name, "CRASH", "")
        process.crashed = True
        replacement = Process(f"{process.name}'", process.region)
        self.processes.append(replacement)
        self.start(replacement)

    async def restart(self, process: Process) -> None:
        """The process closes its store while its callers run, then starts again."""
        assert process.store is not None
        self.trace(process.name, "CLOSE", "store")
        old = process.store
        process.generation += 1
        with contextlib.suppress(Exception):
            await old.aclose(timeout_secs=5.0)
        self.start(process)

    async def operator_set(self) -> None:
        """An operator moves a number-only counter forward (``aioseq set`` / ``start-after``)."""
        keys = [f"{s}-{i}" for s in self.scenario.strategies for i in (1, 2) if s in SET_FORWARD]
        live = [p for p in self.processes if not p.crashed and p.store is not None]
        if not keys or not live:
            return
        process = self.rng.choice(live)
        key = self.rng.choice(keys)
        assert process.store is not None
        with contextlib.suppress(Exception):
            current = await admin.describe_counter(process.store, key)
            target = current.value + self.rng.randint(1, 20)
            self.trace(process.name, "OPERATOR", f"set {key} {target}")
            await admin.set_counter(process.store, key, target)

    async def add_region(self) -> None:
        """The third Region is added to every key's scope, in its free slot."""
        live = [p for p in self.processes if not p.crashed and p.region == REGIONS[0]]
        if not live or live[0].store is None:
            return
        store = live[0].store
        self.trace(live[0].name, "ADD REGION", REGIONS[2])
        self.region_added_at = asyncio.get_running_loop().time()
        keys = [f"{s}-{i}" for s in self.scenario.strategies for i in (1, 2)]
        for key in [*keys, *self.series_keys()]:
            for _ in range(10):
                try:
                    await admin.set_region_scope(store, key, RegionScope(REGIONS, slots=3))
                    break
                except ConfigurationError:  # no scope recorded yet: nobody used the key
                    self.unchanged.add(key)
                    break
                except Exception:
                    continue
            else:
                self.unchanged.add(key)
        self.region_added = True
        # The new Region's stores start once the new records have reached it.
        await asyncio.sleep(self.scenario.replication_delay_secs + 1.0)
        newcomer = Process(f"p{len(self.processes)}", REGIONS[2])
        self.processes.append(newcomer)
        self.start(newcomer)
        await asyncio.sleep(1.0)  # then the deployment rolls out the new list
        for process in [p for p in self.processes if not p.crashed and p.listed != REGIONS]:
            await self.restart(process)

    async def fates(self) -> None:
        """Crashes, restarts, operator writes and a Region added, at drawn times."""
        scenario, rng = self.scenario, self.rng
        plan: list[tuple[float, str]] = []
        plan += [(rng.uniform(0, scenario.duration_secs), "crash")] * scenario.crashes
        plan += [(rng.uniform(0, scenario.duration_secs), "close")] * scenario.closes
        plan += [(rng.uniform(0, scenario.duration_secs), "set")] * scenario.operator_sets
        if scenario.global_table == "regions" and not scenario.mismatched:
            plan.append((rng.uniform(0, scenario.duration_secs), "region"))
        loop = asyncio.get_running_loop()
        for at, fate in sorted(plan):
            await asyncio.sleep(max(0.0, at - loop.time()))
            live = [p for p in self.processes if not p.crashed]
            if fate == "crash" and live:
                await self.crash(rng.choice(live))
            elif fate == "close" and live:
                await self.restart(rng.choice(live))
            elif fate == "set":
                await self.operator_set()
            elif fate == "region":
                await self.add_region()

    # --- the whole run -----------------------------------------------------------------------

    async def main(self) -> None:
        scenario = self.scenario
        if scenario.global_table is None:
            self.fakes[""] = FakeDynamoDB()
        else:
            self.fakes = {region: FakeDynamoDB(region_name=region) for region in REGIONS}
            self.table = SimulatedGlobalTable(
                dict(self.fakes), replication_delay_secs=scenario.replication_delay_secs
            )
        setup = DynamoStore(
            transport=self.table.transport(REGIONS[0]) if self.table else self.fakes[""],
            table=TABLE,
            clock=LoopTime(),
        )
        await setup.create_table()
        for index in range(scenario.processes):
            process = Process(f"p{index}", self.regions_for(index))
            self.processes.append(process)
        for process in self.processes:
            self.start(process)
            if scenario.check_table:
                assert process.store is not None
                with contextlib.suppress(Exception):
                    await process.store.check_table()
        fates = asyncio.ensure_future(self.fates())
        await asyncio.sleep(scenario.duration_secs)
        await fates
        # The callers' last calls end (a crashed process's never do; check() names the rest).
        pending = [t for t in self.tasks if not t.done()]
        if pending:
            await asyncio.wait(pending, timeout=CALL_BOUND_SECS)
        self.faults_on = False
        for process in self.processes:
            if not process.crashed and process.store is not None:
                with contextlib.suppress(Exception):
                    await process.store.aclose(timeout_secs=10.0)
        if self.late:  # what is still on the wire lands (a crashed process's never does)
            await asyncio.wait(self.late, timeout=CALL_BOUND_SECS)
        if self.table is not None:
            await self.table.settle()
        await self.liveness()
        if self.table is not None:
            await self.table.settle()

    async def liveness(self) -> None:
        """Once the faults stop, a new process in the first Region takes a number from every
        counter key: the counters keep moving past whatever the dead left behind."""
        process = Process("final", REGIONS[0] if self.scenario.global_table else None)
        self.processes.append(process)
        process.store = self.open_store(process)
        for strategy in self.scenario.strategies:
            for i in (1, 2):
                await self.one_call(process, strategy, f"{strategy}-{i}", deadline=False)
        if self.scenario.series is not None:
            series = self.series(process.store)
            for key in self.series_keys():  # each period moves on, its grace over or not
                label = key.rpartition("/")[2]
                strategy = self.scenario.series[0]
                make = functools.partial(series.counter, label)
                await self.one_call(process, strategy, key, deadline=False, make=make)
        await process.store.aclose(timeout_secs=10.0)

    # --- reading back ------------------------------------------------------------------------

    def items(self) -> list[dict[str, Any]]:
        """Every item of the table, as plain values (the first Region's copy, replicated)."""
        fake = self.fakes[REGIONS[0]] if self.table is not None else self.fakes[""]
        return [_plain(item) for item in fake.items(TABLE)]


def _plain(item: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, value in item.items():
        (kind, body), *_ = value.items()
        out[name] = int(body) if kind == "N" and "." not in body else body
    return out


def _call_text(call: Call) -> str:
    got = (
        f"-> {list(call.numbers)}"
        if call.numbers
        else "cancelled"
        if call.cancelled
        else f"!! {type(call.error).__name__}: {call.error}"
        if call.error
        else "-> nothing"
    )
    extra = f" key={call.idempotency_key}" if call.idempotency_key else ""
    return f"{call.strategy} {call.key} {call.op}{extra} {got}"[:300]


# --- the invariants --------------------------------------------------------------------------


@dataclass
class Violation:
    invariant: str
    key: str
    detail: str

    def __str__(self) -> str:
        return f"{self.invariant} [{self.key}]: {self.detail}"


#: Errors a correct deployment may see under faults: the service's refusals and the network's.
def _expected(call: Call, run: Run) -> bool:
    error, scenario = call.error, run.scenario
    assert error is not None
    if scenario.mismatched and isinstance(error, NumberingMismatch | ItemAlreadyExists):
        # Refused once the records replicate; and items the two numberings both put in the
        # window are in the way of either counter later (docs/global-tables.md).
        return True
    if isinstance(error, NumberingMismatch):
        added = run.region_added_at
        # Once a Region is added, stores still on the old list are refused (documented), and
        # so are those on the new list where a key's record did not take the new Region.
        return added is not None and (
            (call.listed != REGIONS and call.ended is not None and call.ended >= added)
            or call.key in run.unchanged
        )
    if isinstance(
        error,
        ConfigurationError
        | CounterValueInvalid
        | ItemAlreadyExists
        | IdempotencyKeyReused
        | NumberOutOfRange,
    ):
        return False
    return isinstance(error, AioseqError)


def check(run: Run) -> list[Violation]:
    """The invariants of one run (see the module doc)."""
    scenario = run.scenario
    violations: list[Violation] = []
    by_key: dict[str, list[Call]] = defaultdict(list)
    for call in run.calls:
        by_key[call.key].append(call)
    items = run.items()
    crashed = {p.name for p in run.processes if p.crashed}
    if run.region_added_at is not None:
        # A Region added within the replication lag of a key's first use can be lost to last
        # writer wins (another Region created the key's record with the old list after it):
        # the new Region's stores are refused then, which is safe.
        grown = f"regions={','.join(REGIONS)} "
        run.unchanged |= {
            str(i["pk"])
            for i in items
            if i.get("sk") == 0 and not str(i.get("aioseq_numbering", grown)).startswith(grown)
        }
    for key, calls in sorted(by_key.items()):
        strategy = calls[0].strategy
        # A misconfigured deployment numbers twice until the key's scope records, created by
        # each Region at its first use of the key, have replicated and been read again.
        first_use = {c.region: c.started for c in reversed(calls)}
        window = max(first_use.values()) + scenario.replication_delay_secs + SCOPE_SETTLE_SECS
        holders: dict[int, Call] = {}
        for call in calls:
            if call.error is not None and call.process not in crashed and not _expected(call, run):
                violations.append(
                    Violation(
                        "unexpected error",
                        key,
                        f"{call.process} {call.op}: {type(call.error).__name__}: {call.error}",
                    )
                )
            if call.ended is None and call.process not in crashed:
                violations.append(
                    Violation("caller waited", key, f"{call.process} {call.op} never ended")
                )
            if call.ended is not None and call.ended - call.started > CALL_BOUND_SECS:
                violations.append(
                    Violation(
                        "caller waited",
                        key,
                        f"{call.process} {call.op} took {call.ended - call.started:.1f} s",
                    )
                )
            for n in call.numbers:
                other = holders.get(n)
                if (
                    other is not None
                    and not (
                        call.idempotency_key is not None
                        and call.idempotency_key == other.idempotency_key
                    )
                    and not (scenario.mismatched and min(call.started, other.started) < window)
                ):
                    violations.append(
                        Violation(
                            "number twice",
                            key,
                            f"{n} to {other.process} ({other.op}, {other.started:.3f}-"
                            f"{other.ended:.3f}) and {call.process} ({call.op},"
                            f" {call.started:.3f}-{call.ended:.3f})",
                        )
                    )
                holders.setdefault(n, call)
        final = [c for c in calls if c.process == "final"]
        for call in final:
            if not call.numbers and not (call.error is not None and _expected(call, run)):
                violations.append(
                    Violation("counter stuck", key, f"the final call got {_call_text(call)}")
                )
        if strategy in GAPLESS and not scenario.mismatched:  # misconfigured: numbers only
            violations += _check_items(key, calls, items, run)
        if scenario.mismatched:
            violations += _check_scope(key, calls, items, window)
    return violations + _check_series(run, items)


def _check_series(run: Run, items: list[dict[str, Any]]) -> list[Violation]:
    """Each series document went to the period of its own date, and was refused exactly when
    that period had closed (its end plus the grace, on the wall clock that judged it), with
    nothing stored. (Each period's items, 1..n without holes, are `_check_items()`'s.)"""
    if run.scenario.series is None:
        return []
    _, period, grace = run.scenario.series
    violations: list[Violation] = []
    payloads = {str(item.get("payload")) for item in items}
    for call in run.calls:
        if call.dated is None or call.judged_at is None:
            continue
        old = call.dated < NEW_YEAR
        expected = f"{SERIES_KEY}/{PERIODS[period][0 if old else 1]}"
        closed = old and grace is not None and call.judged_at >= NEW_YEAR + timedelta(seconds=grace)
        refused = isinstance(call.error, PeriodClosed)
        what = f"{call.process} dated {call.dated.isoformat()} at {call.judged_at.isoformat()}"
        if call.key != expected:
            violations.append(Violation("wrong period", call.key, f"{what}: not {expected}"))
        if refused != closed:
            state = "closed" if closed else "open"
            verdict = "refused" if refused else "taken"
            violations.append(Violation("grace", call.key, f"{what}: {verdict}, period {state}"))
        if refused and call.payload in payloads:
            violations.append(Violation("refused but stored", call.key, f"{what}"))
    return violations


def _check_scope(
    key: str, calls: list[Call], items: list[dict[str, Any]], window: float
) -> list[Violation]:
    """Once the scope records have replicated, only stores of the recorded scope take numbers."""
    recorded = next(
        (str(i.get("aioseq_numbering")) for i in items if i.get("pk") == key and i.get("sk") == 0),
        "",
    )
    first_got: dict[str, tuple[int, ...]] = {}
    for call in calls:  # an idempotency key's replay hands out nothing new
        if call.idempotency_key and call.numbers:
            first_got.setdefault(call.idempotency_key, call.numbers)
    outside = [
        c
        for c in calls
        if c.numbers
        and c.started >= window
        and c.scope
        and not recorded.startswith(c.scope + " ")
        and not (c.idempotency_key and first_got.get(c.idempotency_key) == c.numbers)
    ]
    if not outside:
        return []
    first = outside[0]
    return [
        Violation(
            "numbered outside its scope",
            key,
            f"{len(outside)} calls after {window:.0f} s, the first {first.process} at"
            f" {first.started:.3f} s ({first.scope!r}) got {list(first.numbers)}; the key"
            f" records {recorded!r}",
        )
    ]


def _check_items(
    key: str, calls: list[Call], items: list[dict[str, Any]], run: Run
) -> list[Violation]:
    violations: list[Violation] = []
    strategy = calls[0].strategy
    stored: dict[int, str] = {}
    for item in items:
        pk, sk = str(item.get("pk")), item.get("sk")
        if not isinstance(sk, int) or sk <= 0 or "payload" not in item:
            continue
        if strategy == "sort-key":
            if pk.split("@")[0] != key:
                continue
        elif pk != key:
            continue
        if sk in stored:
            violations.append(Violation("item twice", key, f"number {sk}"))
        stored[sk] = str(item["payload"])
    payloads = Counter(stored.values())
    for payload, count in payloads.items():
        if count > 1:
            numbers = sorted(n for n, p in stored.items() if p == payload)
            violations.append(Violation("stored twice", key, f"{payload} at {numbers}"))
    slots = 3 if run.scenario.global_table == "regions" else 1
    for residue in range(slots):
        numbers = sorted(n for n in stored if (n - 1) % slots == residue)
        if numbers and numbers != list(range(numbers[0], numbers[-1] + 1, slots)):
            missing = sorted(set(range(numbers[0], numbers[-1] + 1, slots)) - set(numbers))
            violations.append(Violation("hole", key, f"numbers {missing[:10]} missing"))
        if numbers and numbers[0] != residue + 1:
            violations.append(Violation("hole", key, f"starts at {numbers[0]}"))
    by_idempotency: dict[str, set[int]] = defaultdict(set)
    for call in calls:
        for n in call.numbers:
            if stored.get(n) != call.payload:
                violations.append(
                    Violation(
                        "lost item",
                        key,
                        f"{call.process} got {n} for {call.payload}, the item holds"
                        f" {stored.get(n)!r}",
                    )
                )
            if call.idempotency_key is not None:
                by_idempotency[call.idempotency_key].add(n)
    for idem, got in sorted(by_idempotency.items()):
        if len(got) > 1:
            violations.append(Violation("idempotency", key, f"{idem} got {sorted(got)}"))
    return violations


# --- running seeds ---------------------------------------------------------------------------


@dataclass
class Outcome:
    seed: int
    scenario: Scenario
    violations: list[Violation] = field(default_factory=list)
    requests: int = 0
    calls: int = 0
    virtual_secs: float = 0.0
    digest: str = ""
    trace: list[str] = field(default_factory=list)
    error: str | None = None


def run_seed(seed: int, *, full_trace: bool = False) -> Outcome:
    """Run one seed on a fresh virtual-time loop and check it."""
    scenario = Scenario.draw(seed)
    run = Run(scenario)
    if full_trace:
        run.all_events = []
    random.seed(seed)  # the retry engine's jitter
    loop = VirtualTimeLoop()
    outcome = Outcome(seed, scenario)
    try:
        with _quiet(), _seeded_tokens(seed):
            loop.run_until_complete(run.main())
        outcome.violations = check(run)
    except Stuck as exc:
        outcome.violations = [Violation("stuck", "*", str(exc))]
    except Exception as exc:  # the harness's own failure is a finding too
        outcome.error = "".join(traceback.format_exception(exc)[-3:])
        outcome.violations = [Violation("crashed", "*", outcome.error)]
    finally:
        outcome.virtual_secs = loop.time()
        _close(loop)
    outcome.requests = sum(
        sum(f.requests.values()) for f in {id(f): f for f in run.fakes.values()}.values()
    )
    outcome.calls = len(run.calls)
    outcome.digest = run.digest.hexdigest()[:16]
    keys = {v.key for v in outcome.violations}
    events = run.all_events if run.all_events is not None else list(run.events)
    outcome.trace = [
        str(e) for e in events if full_trace or "*" in keys or any(k in e.detail for k in keys)
    ]
    return outcome


@contextlib.contextmanager
def _seeded_tokens(seed: int) -> Iterator[None]:
    """The library's idempotency tokens (``secrets.token_urlsafe``) drawn from the seed, so a
    run's requests, and what a fault does with their bytes, are the same at every replay."""
    rng = random.Random(f"tokens-{seed}")
    real = secrets.token_urlsafe

    def token_urlsafe(nbytes: int | None = None) -> str:
        raw = rng.getrandbits(8 * (nbytes or 32)).to_bytes(nbytes or 32, "big")
        return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")

    secrets.token_urlsafe = token_urlsafe
    try:
        yield
    finally:
        secrets.token_urlsafe = real


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    logger = logging.getLogger("aioseq")
    level = logger.level
    logger.setLevel(logging.CRITICAL + 1)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        logger.setLevel(level)


def _close(loop: asyncio.AbstractEventLoop) -> None:
    """Drop what a crashed process left waiting (it never runs again) and close the loop."""
    for _ in range(10):  # (cancelling one task may start another: a writer's leave)
        tasks = asyncio.all_tasks(loop)
        if not tasks:
            break
        for task in tasks:
            task.cancel()
        with contextlib.suppress(BaseException), _quiet():
            loop.run_until_complete(asyncio.gather(*tasks, return_exceptions=True))
    loop.close()


def _run_many(seeds: list[int]) -> list[Outcome]:
    return [run_seed(seed) for seed in seeds]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m verification.simulate", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--seeds", type=int, default=200, help="how many seeds (default 200)")
    parser.add_argument("--start", type=int, default=0, help="the first seed (default 0)")
    parser.add_argument("--seed", type=int, help="run this one seed and print its trace")
    parser.add_argument("--trace", action="store_true", help="with --seed: every request")
    parser.add_argument("--budget-secs", type=float, help="stop starting seeds after this")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    args = parser.parse_args(argv)
    if os.environ.get("PYTHONHASHSEED") != "0":  # set iteration, and so one seed, one run
        os.environ["PYTHONHASHSEED"] = "0"
        os.execv(sys.executable, [sys.executable, "-m", "verification.simulate", *sys.argv[1:]])
    if args.seed is not None:
        outcome = run_seed(args.seed, full_trace=args.trace)
        print(f"seed {args.seed}: {outcome.scenario}")
        print("\n".join(outcome.trace[-400:]))
        _report([outcome])
        return 1 if outcome.violations else 0
    started = time.monotonic()
    seeds = list(range(args.start, args.start + args.seeds))
    size = 1 if args.budget_secs else 10
    chunks = [seeds[i : i + size] for i in range(0, len(seeds), size)]
    outcomes: list[Outcome] = []
    with multiprocessing.get_context("fork").Pool(max(1, args.jobs)) as pool:
        for done in pool.imap(_run_many, chunks):
            outcomes += done
            if len(outcomes) % 100 < len(done):
                elapsed = time.monotonic() - started
                print(f"{len(outcomes)} seeds in {elapsed:.0f} s", flush=True)
            failed = [o for o in done if o.violations]
            for outcome in failed:
                _print_failure(outcome)
            if args.budget_secs and time.monotonic() - started > args.budget_secs:
                pool.terminate()
                break
    elapsed = time.monotonic() - started
    failed = [o for o in outcomes if o.violations]
    requests = sum(o.requests for o in outcomes)
    print(
        f"{len(outcomes)} seeds ({seeds[0]}..{outcomes[-1].seed if outcomes else seeds[0]}),"
        f" {requests} requests, {sum(o.calls for o in outcomes)} calls,"
        f" {sum(o.virtual_secs for o in outcomes):.0f} virtual s in {elapsed:.0f} s"
        f" ({60 * len(outcomes) / max(elapsed, 1e-9):.0f} seeds/min): {len(failed)} failed"
    )
    if failed:
        print("failed seeds: " + " ".join(str(o.seed) for o in failed))
    return 1 if failed else 0


def _report(outcomes: list[Outcome]) -> None:
    for outcome in outcomes:
        for violation in outcome.violations:
            print(f"seed {outcome.seed}: {violation}")
        print(f"seed {outcome.seed}: digest {outcome.digest}, {outcome.requests} requests")


def _print_failure(outcome: Outcome) -> None:
    print(f"--- seed {outcome.seed} FAILED: {outcome.scenario}")
    for violation in outcome.violations[:5]:
        print(f"    {violation}")
    for line in outcome.trace[-25:]:
        print(f"      {line}")
    print(f"    replay: python -m verification.simulate --seed {outcome.seed} --trace")


if __name__ == "__main__":
    sys.exit(main())
