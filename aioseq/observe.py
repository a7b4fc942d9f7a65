"""Observability: an optional hook that reports what aioseq does, for metrics.

Pass an [`Observer`][aioseq.observe.Observer] to ``DynamoStore.open(observer=...)`` (or
``DynamoStore(client, observer=...)``) and every counter and allocator made from that store reports
to it:

- [`Observer.on_request()`][aioseq.observe.Observer.on_request]: each DynamoDB request (operation,
  latency, the capacity units DynamoDB says it consumed, the error code if it failed). With an
  observer set, aioseq asks for ``ReturnConsumedCapacity=TOTAL`` on every item request.
- [`Observer.on_retry()`][aioseq.observe.Observer.on_retry]: each retry, by reason (DynamoDB's error
  code; lost races are ``conflict``), with the attempt number and the backoff about to be slept.
- [`Observer.on_refill()`][aioseq.observe.Observer.on_refill]: each block a
  [`BlockAllocator`][aioseq.BlockAllocator] reserves (or fails to), with its latency and how many
  callers waited for it.
- [`Observer.on_waste()`][aioseq.observe.Observer.on_waste]: numbers a block allocator reserved and
  will never hand out.
- [`Observer.on_evict()`][aioseq.observe.Observer.on_evict]: a store dropped an object nobody had
  used for ``idle_secs``.
- [`Observer.on_endpoint()`][aioseq.observe.Observer.on_endpoint]: a store's endpoint went down
  (requests fail at once) or answers again.

The hooks are called at the single places where these things happen (``DynamoStore.send_once``,
the retry loop, the allocator's refill, the endpoint's breaker), synchronously, on the event loop:
keep them fast and non-blocking (increment a counter, record a histogram). An exception raised by
a hook is logged and never reaches the caller. Without an observer nothing is measured: a
``next()`` served from an allocator's block never touches this module either way.

Two observers ship here: [`StatisticsObserver`][aioseq.observe.StatisticsObserver] sums everything
in memory (read it with
[`StatisticsObserver.statistics()`][aioseq.observe.StatisticsObserver.statistics], export it however
you like), and [`OpenTelemetryObserver`][aioseq.observe.OpenTelemetryObserver] records OpenTelemetry
metrics (``pip install 'aioseq[otel]'``). Logging goes to the standard ``logging`` logger
``"aioseq"``: retries at DEBUG, retry policies running out and allocator give-backs at INFO. Nothing
logged or reported contains credentials or item contents: operations, error codes, counter keys and
counts only.
"""

from __future__ import annotations

import logging
from collections import Counter, defaultdict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeVar

if TYPE_CHECKING:
    from opentelemetry.metrics import Meter

__all__ = [
    "EndpointEvent",
    "EvictEvent",
    "ObservedStatistics",
    "Observer",
    "OpenTelemetryObserver",
    "RefillEvent",
    "RequestEvent",
    "RetryEvent",
    "StatisticsObserver",
    "WasteEvent",
    "WasteReason",
]

log = logging.getLogger("aioseq")

E = TypeVar("E")

#: Why reserved numbers were wasted: ``"skipped"`` to keep a ``next_many`` range contiguous,
#: ``"abandoned"`` unused at close and not given back (another writer had reserved after them,
#: or the give-back's answer was lost: it may have been applied), ``"out_of_range"`` past 38
#: digits (a block allocator); ``"unresolved"``: a conditional write whose answer was lost,
#: and whose outcome could no longer be told when it was resent (more writes followed it than
#: the counter item remembers), so its numbers may have been taken and not handed out
#: (optimistic, gapless);
#: ``"cancelled"``: numbers a block allocator had given to a caller that was cancelled in the
#: instant between being served and resuming, so it never took them; ``"evicted"``: numbers an
#: idle block allocator held when its store dropped it and could not give back (another writer
#: had reserved after them, or the give-back's answer was lost).
WasteReason = Literal["skipped", "abandoned", "out_of_range", "unresolved", "cancelled", "evicted"]


@dataclass(frozen=True)
class RequestEvent:
    """One DynamoDB request, answered or failed.

    Attributes:
        operation: the API operation, e.g. ``"UpdateItem"``, ``"TransactWriteItems"``.
        table: the store's table name.
        latency_secs: from sending the request to its answer (or error), in seconds.
        consumed_capacity_units: the capacity units DynamoDB reported (``CapacityUnits``
            summed over the tables of a transaction); ``None`` when the answer has none
            (errors, table operations, servers that do not report it).
        error: the error code when the request failed (``"ConditionalCheckFailedException"``,
            ``"ThrottlingException"``, a botocore connection error's name...), else ``None``.
    """

    operation: str
    table: str
    latency_secs: float
    consumed_capacity_units: float | None
    error: str | None


@dataclass(frozen=True)
class RetryEvent:
    """An attempt failed and is about to be retried.

    Attributes:
        counter_key: the counter (or item collection) key of the strategy that retries.
        reason: DynamoDB's error code, with a transaction's cancellation reasons appended
            (``"TransactionCanceledException:ConditionalCheckFailed,None"``): the key of
            ``CounterStatistics.retries``.
        conflict: the attempt lost a race (a failed condition on the counter item or key).
        attempt: the number of the attempt that failed (1 for the first).
        wait_secs: the backoff slept before the next attempt, in seconds.
    """

    counter_key: str
    reason: str
    conflict: bool
    attempt: int
    wait_secs: float


@dataclass(frozen=True)
class RefillEvent:
    """A block allocator's refill (one ``UpdateItem ADD``, with its retries) ended.

    Attributes:
        counter_key: the allocator's counter key.
        numbers: how many numbers it reserved (0 when it failed).
        block_size: the block size in force.
        latency_secs: the refill's duration, retries included, in seconds.
        waiters: callers that were waiting for it (0 for a prefetch in the background).
        error: the error's class name when it failed (``"RetriesExhausted"`` ...), else
            ``None``.
        runway_secs: after it, seconds of numbers held at the allocator's rate (``None``
            before a rate is measured); see
            [`AllocatorStatistics`][aioseq.AllocatorStatistics].
        headroom: after it, numbers left before ``max_value`` (``None``: no ``max_value``).
    """

    counter_key: str
    numbers: int
    block_size: int
    latency_secs: float
    waiters: int
    error: str | None
    runway_secs: float | None = None
    headroom: int | None = None


@dataclass(frozen=True)
class WasteEvent:
    """Numbers a counter took and will never hand out (a gap): a block allocator's, or those
    of an unresolved lost answer (see `WasteReason`).

    Attributes:
        counter_key: the counter key.
        numbers: how many.
        reason: see `WasteReason`.
    """

    counter_key: str
    numbers: int
    reason: WasteReason


@dataclass(frozen=True)
class EvictEvent:
    """A store dropped the object it shared for a counter key, idle for ``idle_secs`` at least
    (see [`DynamoStore`][aioseq.DynamoStore]'s ``idle_secs``).

    Attributes:
        counter_key: the counter key.
        kind: the factory that made it (``"block_allocator"``, ``"atomic_counter"``, ...).
        returned: numbers an allocator gave back to its counter (one conditional write).
        wasted: numbers an allocator held and could not give back.
    """

    counter_key: str
    kind: str
    returned: int
    wasted: int


@dataclass(frozen=True)
class EndpointEvent:
    """A store's endpoint went down (no request answered for the retry policy's
    ``max_unreachable_secs``: requests now fail at once with
    [`EndpointDown`][aioseq.errors.EndpointDown]), or answers again.

    Attributes:
        endpoint: the endpoint's URL (the client's, the Region's own for AWS).
        up: ``False`` as it goes down; ``True`` as it answers again, or as its store closes
            while it is down (it is no longer counted down).
        secs: going down, how long requests had gone unanswered; coming up, how long it
            was down, in seconds.
    """

    endpoint: str
    up: bool
    secs: float


class Observer(Protocol):
    """What aioseq reports to. Subclass it and override the hooks you need; the others do
    nothing. Hooks run synchronously on the event loop: keep them fast and non-blocking."""

    def on_request(self, event: RequestEvent) -> None:
        """A DynamoDB request was answered or failed."""
        return None

    def on_retry(self, event: RetryEvent) -> None:
        """An attempt failed and will be retried after ``event.wait_secs``."""
        return None

    def on_refill(self, event: RefillEvent) -> None:
        """A block allocator's refill ended."""
        return None

    def on_waste(self, event: WasteEvent) -> None:
        """A block allocator wasted numbers."""
        return None

    def on_evict(self, event: EvictEvent) -> None:
        """A store dropped an idle object it shared for a key."""
        return None

    def on_endpoint(self, event: EndpointEvent) -> None:
        """A store's endpoint went down or answers again."""
        return None


def notify(hook: Callable[[E], None], event: E) -> None:
    """Call an observer's hook; an exception it raises is logged, never propagated (a broken
    metrics exporter must not lose a number that was already taken)."""
    try:
        hook(event)
    except Exception:
        log.exception(
            "aioseq observer hook %s failed on %r", getattr(hook, "__name__", hook), event
        )


@dataclass(frozen=True)
class ObservedStatistics:
    """A snapshot of what a [`StatisticsObserver`][aioseq.observe.StatisticsObserver] saw.

    Attributes:
        requests: requests by operation (``{"UpdateItem": 12, ...}``).
        errors: failed requests by error code.
        request_secs: total latency by operation, in seconds.
        consumed_capacity_units: capacity units DynamoDB reported, by operation.
        retries: retries by reason.
        conflicts: retries that were lost races.
        refills: block allocator refills that reserved numbers.
        failed_refills: refills that failed.
        refill_secs: total refill latency, in seconds; ``max_refill_secs`` the longest.
        wasted: wasted numbers by `WasteReason`.
        evictions: idle objects dropped by their store.
        lowest_runway_secs: the shortest runway a refill left, by counter key (keys whose
            allocator has measured a rate).
        lowest_headroom: the least headroom a refill left, by counter key (bounded counters).
        endpoint_outages: times a store's endpoint went down; ``endpoint_down_secs`` the
            seconds it was down, over the outages that ended; ``endpoints_down`` the endpoints
            down now for at least one store.
    """

    requests: Mapping[str, int] = field(default_factory=dict)
    errors: Mapping[str, int] = field(default_factory=dict)
    request_secs: Mapping[str, float] = field(default_factory=dict)
    consumed_capacity_units: Mapping[str, float] = field(default_factory=dict)
    retries: Mapping[str, int] = field(default_factory=dict)
    conflicts: int = 0
    refills: int = 0
    failed_refills: int = 0
    refill_secs: float = 0.0
    max_refill_secs: float = 0.0
    wasted: Mapping[str, int] = field(default_factory=dict)
    evictions: int = 0
    lowest_runway_secs: Mapping[str, float] = field(default_factory=dict)
    lowest_headroom: Mapping[str, int] = field(default_factory=dict)
    endpoint_outages: int = 0
    endpoint_down_secs: float = 0.0
    endpoints_down: frozenset[str] = frozenset()


class StatisticsObserver(Observer):
    """Sums every event in memory. Share one between stores if you like; read it with
    [`statistics()`][aioseq.observe.StatisticsObserver.statistics] (e.g. from a ``/metrics``
    endpoint or a periodic log line)."""

    def __init__(self) -> None:
        self._requests: Counter[str] = Counter()
        self._errors: Counter[str] = Counter()
        self._request_secs: defaultdict[str, float] = defaultdict(float)
        self._capacity: defaultdict[str, float] = defaultdict(float)
        self._retries: Counter[str] = Counter()
        self._conflicts = 0
        self._refills = self._failed_refills = 0
        self._refill_secs = self._max_refill_secs = 0.0
        self._wasted: Counter[str] = Counter()
        self._evictions = 0
        self._lowest_runway: dict[str, float] = {}
        self._lowest_headroom: dict[str, int] = {}
        self._outages = 0
        self._down_secs = 0.0
        self._down: Counter[str] = Counter()  # stores whose endpoint is down, by URL

    def on_request(self, event: RequestEvent) -> None:
        self._requests[event.operation] += 1
        self._request_secs[event.operation] += event.latency_secs
        if event.error is not None:
            self._errors[event.error] += 1
        if event.consumed_capacity_units is not None:
            self._capacity[event.operation] += event.consumed_capacity_units

    def on_retry(self, event: RetryEvent) -> None:
        self._retries[event.reason] += 1
        self._conflicts += event.conflict

    def on_refill(self, event: RefillEvent) -> None:
        if event.error is None:
            self._refills += 1
        else:
            self._failed_refills += 1
        self._refill_secs += event.latency_secs
        self._max_refill_secs = max(self._max_refill_secs, event.latency_secs)
        key = event.counter_key
        if event.runway_secs is not None:
            self._lowest_runway[key] = min(
                self._lowest_runway.get(key, event.runway_secs), event.runway_secs
            )
        if event.headroom is not None:
            self._lowest_headroom[key] = min(
                self._lowest_headroom.get(key, event.headroom), event.headroom
            )

    def on_waste(self, event: WasteEvent) -> None:
        self._wasted[event.reason] += event.numbers

    def on_evict(self, event: EvictEvent) -> None:
        self._evictions += 1

    def on_endpoint(self, event: EndpointEvent) -> None:
        if event.up:
            self._down[event.endpoint] -= 1
            self._down_secs += event.secs
        else:
            self._down[event.endpoint] += 1
            self._outages += 1

    def statistics(self) -> ObservedStatistics:
        """A frozen snapshot of the sums so far."""
        return ObservedStatistics(
            requests=dict(self._requests),
            errors=dict(self._errors),
            request_secs=dict(self._request_secs),
            consumed_capacity_units=dict(self._capacity),
            retries=dict(self._retries),
            conflicts=self._conflicts,
            refills=self._refills,
            failed_refills=self._failed_refills,
            refill_secs=self._refill_secs,
            max_refill_secs=self._max_refill_secs,
            wasted=dict(self._wasted),
            evictions=self._evictions,
            lowest_runway_secs=dict(self._lowest_runway),
            lowest_headroom=dict(self._lowest_headroom),
            endpoint_outages=self._outages,
            endpoint_down_secs=self._down_secs,
            endpoints_down=frozenset(url for url, stores in self._down.items() if stores > 0),
        )


class OpenTelemetryObserver(Observer):
    """Records OpenTelemetry metrics (needs ``opentelemetry-api``: ``pip install
    'aioseq[otel]'``; export them with the SDK's readers and exporters as usual).

    Instruments (attributes in brackets; counter keys are left out to keep cardinality low):

    - ``aioseq.request.duration`` histogram, s [``operation``, ``table``, ``error``]
    - ``aioseq.consumed_capacity`` counter, capacity units [``operation``, ``table``]
    - ``aioseq.retries`` counter [``reason``, ``conflict``]
    - ``aioseq.refill.duration`` histogram, s [``error``]
    - ``aioseq.allocator.runway`` histogram, s: the runway each refill leaves
    - ``aioseq.allocator.headroom`` histogram, numbers: the headroom each refill of a bounded
      counter leaves
    - ``aioseq.numbers.wasted`` counter [``reason``]
    - ``aioseq.evictions`` counter [``kind``]
    - ``aioseq.endpoint.down`` up-down counter: stores whose endpoint is down now
      [``endpoint``]
    - ``aioseq.endpoint.outage.duration`` histogram, s: each outage, as it ends [``endpoint``]

    Parameters:
        meter: the meter to create the instruments on (default:
            ``opentelemetry.metrics.get_meter("aioseq")``, the global meter provider's).

    Raises:
        ModuleNotFoundError: ``opentelemetry-api`` is not installed.
    """

    def __init__(self, meter: Meter | None = None) -> None:
        if meter is None:
            from importlib.metadata import version

            from opentelemetry import metrics

            meter = metrics.get_meter("aioseq", version("aioseq"))
        self._request_duration = meter.create_histogram(
            "aioseq.request.duration", unit="s", description="DynamoDB request latency"
        )
        self._capacity = meter.create_counter(
            "aioseq.consumed_capacity",
            unit="{capacity_unit}",
            description="capacity units DynamoDB reported (ReturnConsumedCapacity=TOTAL)",
        )
        self._retries = meter.create_counter(
            "aioseq.retries", unit="{retry}", description="retries, by reason"
        )
        self._refill_duration = meter.create_histogram(
            "aioseq.refill.duration", unit="s", description="block allocator refill latency"
        )
        self._wasted = meter.create_counter(
            "aioseq.numbers.wasted",
            unit="{number}",
            description="numbers a block allocator reserved and will never hand out",
        )
        self._evictions = meter.create_counter(
            "aioseq.evictions",
            unit="{object}",
            description="idle shared objects a store dropped, by kind",
        )
        self._runway = meter.create_histogram(
            "aioseq.allocator.runway",
            unit="s",
            description="seconds of numbers a block allocator holds after a refill",
        )
        self._headroom = meter.create_histogram(
            "aioseq.allocator.headroom",
            unit="{number}",
            description="numbers left before a bounded counter's max_value, after a refill",
        )
        self._endpoints_down = meter.create_up_down_counter(
            "aioseq.endpoint.down",
            unit="{endpoint}",
            description="endpoints down now: requests to them fail at once",
        )
        self._outage_duration = meter.create_histogram(
            "aioseq.endpoint.outage.duration",
            unit="s",
            description="how long an endpoint was down, as it answers again",
        )

    def on_request(self, event: RequestEvent) -> None:
        attributes: dict[str, Any] = {"operation": event.operation, "table": event.table}
        self._request_duration.record(
            event.latency_secs, {**attributes, "error": event.error or ""}
        )
        if event.consumed_capacity_units is not None:
            self._capacity.add(event.consumed_capacity_units, attributes)

    def on_retry(self, event: RetryEvent) -> None:
        self._retries.add(1, {"reason": event.reason, "conflict": event.conflict})

    def on_refill(self, event: RefillEvent) -> None:
        self._refill_duration.record(event.latency_secs, {"error": event.error or ""})
        if event.runway_secs is not None:
            self._runway.record(event.runway_secs)
        if event.headroom is not None:
            self._headroom.record(event.headroom)

    def on_waste(self, event: WasteEvent) -> None:
        self._wasted.add(event.numbers, {"reason": event.reason})

    def on_evict(self, event: EvictEvent) -> None:
        self._evictions.add(1, {"kind": event.kind})

    def on_endpoint(self, event: EndpointEvent) -> None:
        attributes = {"endpoint": event.endpoint}
        self._endpoints_down.add(-1 if event.up else 1, attributes)
        if event.up:
            self._outage_duration.record(event.secs, attributes)
