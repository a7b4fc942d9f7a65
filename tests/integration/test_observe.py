"""The observer hook (aioseq.observe) and aioseq's logging, on a real server."""

from __future__ import annotations

import logging
import uuid

import pytest
from checks import put_counter_value

from aioseq import CounterValueInvalid, DynamoStore, Observer, StatisticsObserver
from aioseq.observe import (
    OpenTelemetryObserver,
    RefillEvent,
    RequestEvent,
    RetryEvent,
    WasteEvent,
)


class Recorder(Observer):
    """Keeps every event, in order."""

    def __init__(self) -> None:
        self.events: list[RequestEvent | RetryEvent | RefillEvent | WasteEvent] = []

    def on_request(self, event: RequestEvent) -> None:
        self.events.append(event)

    def on_retry(self, event: RetryEvent) -> None:
        self.events.append(event)

    def on_refill(self, event: RefillEvent) -> None:
        self.events.append(event)

    def on_waste(self, event: WasteEvent) -> None:
        self.events.append(event)

    def of(self, kind: type[RequestEvent | RetryEvent | RefillEvent | WasteEvent]) -> list[object]:
        return [e for e in self.events if isinstance(e, kind)]


def observed(store: DynamoStore, observer: Observer) -> DynamoStore:
    """A second store on the same client and table, reporting to ``observer``."""
    return DynamoStore(store.client, store.table, observer=observer)


async def lose_one_race(store: DynamoStore, key: str) -> None:
    """An optimistic counter whose view of the counter is stale loses exactly one race:
    it read the counter, another writer moved it, then it writes."""
    stale = store.optimistic_counter(key)
    other = DynamoStore(store.client, store.table).optimistic_counter(key)
    assert await stale.next() == 1
    assert await other.next() == 2
    assert await stale.next() == 3  # a failed condition, then a retry with the value it learnt


async def test_requests_are_reported_with_latency_and_consumed_capacity(
    aioseq_store: DynamoStore,
) -> None:
    statistics = StatisticsObserver()
    counter = observed(aioseq_store, statistics).atomic_counter("orders")
    for _ in range(5):
        await counter.next()
    seen = statistics.statistics()
    assert seen.requests == {"DescribeTable": 1, "UpdateItem": 5}  # the table, asked once
    assert seen.errors == {}
    assert seen.request_secs["UpdateItem"] > 0
    # moto reports 0.5 per ADD, DynamoDB Local 1.0: what the server says, summed.
    assert seen.consumed_capacity_units["UpdateItem"] >= 5 * 0.5


async def test_retries_and_conflicts_are_reported(aioseq_store: DynamoStore) -> None:
    recorder, statistics = Recorder(), StatisticsObserver()
    store = observed(aioseq_store, recorder)
    await lose_one_race(store, "tickets")
    retries = recorder.of(RetryEvent)
    assert retries == [
        RetryEvent(
            counter_key="tickets",
            reason="ConditionalCheckFailedException",
            conflict=True,
            attempt=1,
            wait_secs=retries[0].wait_secs,  # type: ignore[attr-defined]
        )
    ]
    failed = [e for e in recorder.of(RequestEvent) if e.error]  # type: ignore[attr-defined]
    assert [(e.operation, e.error) for e in failed] == [  # type: ignore[attr-defined]
        ("UpdateItem", "ConditionalCheckFailedException")
    ]
    # The same through the summing observer, and as the counter's own statistics count it.
    store = observed(aioseq_store, statistics)
    await lose_one_race(store, "tickets-2")
    seen = statistics.statistics()
    assert seen.retries == {"ConditionalCheckFailedException": 1}
    assert seen.conflicts == 1
    assert seen.errors == {"ConditionalCheckFailedException": 1}


async def test_allocator_refills_and_waste_are_reported(aioseq_store: DynamoStore) -> None:
    recorder = Recorder()
    store = observed(aioseq_store, recorder)
    allocator = store.block_allocator("blocks", block_size=10, prefetch_at=0)
    assert await allocator.next() == 1
    refills = recorder.of(RefillEvent)
    assert len(refills) == 1
    refill = refills[0]
    assert isinstance(refill, RefillEvent)
    assert (refill.counter_key, refill.numbers, refill.waiters, refill.error) == (
        "blocks",
        10,
        1,
        None,
    )
    assert refill.latency_secs > 0
    # next() served from the block reports nothing: the hot path does not touch the observer.
    before = len(recorder.events)
    assert [await allocator.next() for _ in range(5)] == [2, 3, 4, 5, 6]
    assert len(recorder.events) == before
    await allocator.aclose(give_back=False)
    assert recorder.of(WasteEvent) == [WasteEvent("blocks", 4, "abandoned")]
    assert allocator.statistics().wasted == 4


async def test_a_failed_refill_is_reported(aioseq_store: DynamoStore) -> None:
    recorder = Recorder()
    store = observed(aioseq_store, recorder)
    await put_counter_value(aioseq_store, "broken", {"S": "not a number"})
    allocator = store.block_allocator("broken")
    with pytest.raises(CounterValueInvalid):
        await allocator.next()
    [refill] = recorder.of(RefillEvent)
    assert isinstance(refill, RefillEvent)
    assert (refill.numbers, refill.error) == (0, "CounterValueInvalid")
    await allocator.aclose()


async def test_a_failing_hook_is_logged_and_never_reaches_the_caller(
    aioseq_store: DynamoStore, caplog: pytest.LogCaptureFixture
) -> None:
    class Broken(Observer):
        def on_request(self, event: RequestEvent) -> None:
            raise RuntimeError("exporter down")

    store = observed(aioseq_store, Broken())
    await store.replication()  # (its DescribeTable is reported, and logged, first)
    caplog.clear()
    counter = store.atomic_counter("orders")
    with caplog.at_level(logging.ERROR, logger="aioseq"):
        assert await counter.next() == 1  # the number was taken: it must reach the caller
    [record] = caplog.records
    assert "on_request" in record.getMessage()
    assert record.exc_info is not None and "exporter down" in str(record.exc_info[1])


async def test_logs_name_what_happened_and_hold_no_secrets(
    aioseq_endpoint: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    secret = f"secret-{uuid.uuid4().hex}"
    payload = f"payload-{uuid.uuid4().hex}"
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "aioseqtestkey")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", secret)
    table = f"aioseq-test-{uuid.uuid4().hex[:12]}"
    with caplog.at_level(logging.DEBUG, logger="aioseq"):
        async with DynamoStore.open(table=table, endpoint_url=aioseq_endpoint) as store:
            await store.create_table()
            try:
                await lose_one_race(store, "orders")
                invoices = store.transactional_counter("invoices")
                await invoices.put(lambda n: {"pk": "invoice", "sk": n, "note": payload})
                allocator = store.block_allocator("blocks", block_size=10)
                await allocator.next()
                await allocator.aclose()
            finally:
                await store.delete_table()
    text = "\n".join(r.getMessage() for r in caplog.records if r.name.startswith("aioseq"))
    assert "attempt 1 failed (ConditionalCheckFailedException)" in text
    assert "block allocator 'blocks' closed" in text
    assert secret not in text
    assert payload not in text


async def test_opentelemetry_metrics(aioseq_store: DynamoStore) -> None:
    pytest.importorskip("opentelemetry.sdk.metrics", reason="opentelemetry-sdk is not installed")
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader

    reader = InMemoryMetricReader()
    provider = MeterProvider(metric_readers=[reader])
    store = observed(aioseq_store, OpenTelemetryObserver(provider.get_meter("test")))
    await lose_one_race(store, "orders")
    allocator = store.block_allocator("blocks", block_size=10, prefetch_at=0)
    await allocator.next()
    await allocator.aclose(give_back=False)

    data = reader.get_metrics_data()
    assert data is not None
    points: dict[str, list[object]] = {}
    for resource_metrics in data.resource_metrics:
        for scope_metrics in resource_metrics.scope_metrics:
            for metric in scope_metrics.metrics:
                points[metric.name] = list(metric.data.data_points)
    provider.shutdown()

    durations = {
        (p.attributes["operation"], p.attributes["error"]): p.count  # type: ignore[attr-defined]
        for p in points["aioseq.request.duration"]
    }
    # The stale counter's read, 2 writes and 1 lost race, the turn the loser takes before its
    # retry (docs/group-commit.md); the ADD.
    assert durations == {
        ("DescribeTable", ""): 1,  # the store's first write asks whether it is a global table
        ("GetItem", ""): 1,
        ("UpdateItem", ""): 4,
        ("UpdateItem", "ConditionalCheckFailedException"): 1,
    }
    [retry] = points["aioseq.retries"]
    assert retry.attributes == {"reason": "ConditionalCheckFailedException", "conflict": True}  # type: ignore[attr-defined]
    assert retry.value == 1  # type: ignore[attr-defined]
    assert sum(p.value for p in points["aioseq.consumed_capacity"]) > 0  # type: ignore[attr-defined]
    [refill] = points["aioseq.refill.duration"]
    assert refill.count == 1  # type: ignore[attr-defined]
    [wasted] = points["aioseq.numbers.wasted"]
    assert (wasted.attributes, wasted.value) == ({"reason": "abandoned"}, 9)  # type: ignore[attr-defined]
