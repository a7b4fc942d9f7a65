"""The observers aioseq ships: what `StatisticsObserver` sums and what `OpenTelemetryObserver`
records (read back with the OpenTelemetry SDK's in-memory reader), event by event."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader

from aioseq.observe import (
    EndpointEvent,
    EvictEvent,
    ObservedStatistics,
    Observer,
    OpenTelemetryObserver,
    RefillEvent,
    RequestEvent,
    RetryEvent,
    StatisticsObserver,
    WasteEvent,
)

EVENTS: list[Any] = [
    RequestEvent("UpdateItem", "t", 0.010, 1.0, None),
    RequestEvent("UpdateItem", "t", 0.030, None, "ConditionalCheckFailedException"),
    RequestEvent("TransactWriteItems", "t", 0.020, 4.0, None),
    RequestEvent("DescribeTable", "t", 0.005, None, None),
    RetryEvent("orders", "ConditionalCheckFailedException", True, 1, 0.001),
    RetryEvent("orders", "ThrottlingException", False, 2, 0.002),
    RetryEvent("orders", "ConditionalCheckFailedException", True, 3, 0.004),
    RefillEvent("orders", 100, 100, 0.02, 3, None),
    RefillEvent("orders", 0, 100, 0.50, 1, "RetriesExhausted"),
    RefillEvent("orders", 200, 200, 0.04, 0, None, runway_secs=60.0, headroom=5_000),
    RefillEvent("orders", 200, 200, 0.04, 0, None, runway_secs=45.0, headroom=4_800),
    WasteEvent("orders", 7, "abandoned"),
    WasteEvent("orders", 3, "abandoned"),
    WasteEvent("orders", 1, "unresolved"),
    EvictEvent("orders", "block_allocator", 5, 0),
    EvictEvent("users", "atomic_counter", 0, 0),
    EndpointEvent("http://db", False, 3.0),
    EndpointEvent("http://db", True, 12.5),
    EndpointEvent("http://db", False, 3.0),
]


def feed(observer: Observer) -> None:
    hooks: dict[type, Callable[[Any], None]] = {
        RequestEvent: observer.on_request,
        RetryEvent: observer.on_retry,
        RefillEvent: observer.on_refill,
        WasteEvent: observer.on_waste,
        EvictEvent: observer.on_evict,
        EndpointEvent: observer.on_endpoint,
    }
    for event in EVENTS:
        hooks[type(event)](event)


def test_an_observer_that_overrides_nothing_ignores_every_event() -> None:
    class Quiet(Observer):
        pass

    feed(Quiet())  # nothing raised, nothing to do


def test_the_statistics_observer_sums_every_event() -> None:
    observer = StatisticsObserver()
    assert observer.statistics() == ObservedStatistics()
    feed(observer)
    s = observer.statistics()
    assert s.requests == {"UpdateItem": 2, "TransactWriteItems": 1, "DescribeTable": 1}
    assert s.errors == {"ConditionalCheckFailedException": 1}
    assert s.request_secs["UpdateItem"] == pytest.approx(0.040)
    assert s.consumed_capacity_units == {"UpdateItem": 1.0, "TransactWriteItems": 4.0}
    assert s.retries == {"ConditionalCheckFailedException": 2, "ThrottlingException": 1}
    assert s.conflicts == 2
    assert (s.refills, s.failed_refills) == (3, 1)
    assert s.refill_secs == pytest.approx(0.60) and s.max_refill_secs == 0.50
    assert s.wasted == {"abandoned": 10, "unresolved": 1}
    assert s.evictions == 2
    assert (s.lowest_runway_secs, s.lowest_headroom) == ({"orders": 45.0}, {"orders": 4_800})
    assert (s.endpoint_outages, s.endpoint_down_secs) == (2, 12.5)
    assert s.endpoints_down == {"http://db"}  # down again


def test_a_statistics_snapshot_does_not_move_with_the_observer() -> None:
    observer = StatisticsObserver()
    observer.on_request(EVENTS[0])
    before = observer.statistics()
    observer.on_request(EVENTS[0])
    assert before.requests == {"UpdateItem": 1}
    assert observer.statistics().requests == {"UpdateItem": 2}


def _points(reader: InMemoryMetricReader) -> dict[str, list[Any]]:
    """Metric name -> its data points, from one collection."""
    data = reader.get_metrics_data()
    assert data is not None
    return {
        metric.name: list(metric.data.data_points)
        for resource in data.resource_metrics
        for scope in resource.scope_metrics
        for metric in scope.metrics
    }


def _by(points: list[Any], *names: str) -> dict[tuple[Any, ...], Any]:
    return {tuple(p.attributes[n] for n in names): p for p in points}


def test_the_opentelemetry_observer_records_each_instrument() -> None:
    reader = InMemoryMetricReader()
    provider = MeterProvider(metric_readers=[reader])
    try:
        feed(OpenTelemetryObserver(provider.get_meter("aioseq")))
        points = _points(reader)
    finally:
        provider.shutdown()
    durations = _by(points["aioseq.request.duration"], "operation", "table", "error")
    assert {k: (p.count, round(p.sum, 3)) for k, p in durations.items()} == {
        ("UpdateItem", "t", ""): (1, 0.010),
        ("UpdateItem", "t", "ConditionalCheckFailedException"): (1, 0.030),
        ("TransactWriteItems", "t", ""): (1, 0.020),
        ("DescribeTable", "t", ""): (1, 0.005),
    }
    capacity = _by(points["aioseq.consumed_capacity"], "operation", "table")
    assert {k: p.value for k, p in capacity.items()} == {  # answers without units: none
        ("UpdateItem", "t"): 1.0,
        ("TransactWriteItems", "t"): 4.0,
    }
    retries = _by(points["aioseq.retries"], "reason", "conflict")
    assert {k: p.value for k, p in retries.items()} == {
        ("ConditionalCheckFailedException", True): 2,
        ("ThrottlingException", False): 1,
    }
    refills = _by(points["aioseq.refill.duration"], "error")
    assert {k: p.count for k, p in refills.items()} == {("",): 3, ("RetriesExhausted",): 1}
    runway = points["aioseq.allocator.runway"]
    assert [(p.count, p.min) for p in runway] == [(2, 45.0)]
    headroom = points["aioseq.allocator.headroom"]
    assert [(p.count, p.min) for p in headroom] == [(2, 4_800)]
    down = _by(points["aioseq.endpoint.down"], "endpoint")
    assert {k: p.value for k, p in down.items()} == {("http://db",): 1}
    outages = _by(points["aioseq.endpoint.outage.duration"], "endpoint")
    assert {k: (p.count, p.sum) for k, p in outages.items()} == {("http://db",): (1, 12.5)}
    wasted = _by(points["aioseq.numbers.wasted"], "reason")
    assert {k: p.value for k, p in wasted.items()} == {("abandoned",): 10, ("unresolved",): 1}
    evictions = _by(points["aioseq.evictions"], "kind")
    assert {k: p.value for k, p in evictions.items()} == {
        ("block_allocator",): 1,
        ("atomic_counter",): 1,
    }


def test_the_opentelemetry_observer_defaults_to_the_global_meter_provider() -> None:
    observer = OpenTelemetryObserver()  # the API's no-op provider unless one was set
    feed(observer)  # recorded nowhere, and nothing raised
