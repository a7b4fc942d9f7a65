"""Retries under the failures real services see, injected by the fault proxy, with the history
checker judging the numbers afterwards (its own tests, on made-up histories, are in
``test_history.py``)."""

from __future__ import annotations

import asyncio
import functools
import json
import random
import signal
import sys
from collections.abc import AsyncIterator, Iterator

import pytest
from checks import counter_item, until

from aioseq import (
    ConnectionFailed,
    DynamoStore,
    RetriesExhausted,
    RetryPolicy,
    ServiceUnavailable,
    Throttled,
    TransactionCanceled,
    TransactionConflict,
)
from aioseq._strategy_table import STRATEGIES, STRATEGY_NAMES, strategy_named
from aioseq._workload import make_taker, stored_payloads
from aioseq.testing.fault_proxy import KINDS, FaultProxy, FaultSchedule
from verification.history import History

#: A short read timeout, so that a ``delay`` fault (held longer) times out quickly.
READ_TIMEOUT_SECS = 0.5


@pytest.fixture
def proxy(aioseq_endpoint: str) -> Iterator[FaultProxy]:
    with FaultProxy(aioseq_endpoint) as running:
        yield running


@pytest.fixture
async def faulty_store(aioseq_store: DynamoStore, proxy: FaultProxy) -> AsyncIterator[DynamoStore]:
    """The test's table, through the proxy."""
    async with DynamoStore.open(
        table=aioseq_store.table,
        endpoint_url=proxy.endpoint_url,
        read_timeout_secs=READ_TIMEOUT_SECS,
        retry_policy=RetryPolicy(max_attempts=50, max_backoff_secs=0.05),
    ) as store:
        yield store


def seed_for(hits: list[bool], rate: float) -> int:
    """A seed whose first draws hit (``< rate``) exactly as ``hits`` says."""
    for seed in range(10_000):
        rng = random.Random(seed)
        if [rng.random() < rate for _ in hits] == hits:
            return seed
    raise AssertionError("no such seed")


def only(kind: str, *, first: list[bool], operations: set[str] | None = None) -> FaultSchedule:
    """``kind`` on the first requests as ``first`` says (then at random, half the time)."""
    return FaultSchedule(
        {kind: 0.5},
        seed=seed_for(first, 0.5),
        operations=frozenset(operations) if operations else None,
        delay_secs=READ_TIMEOUT_SECS + 0.5,
    )


# --- the proxy's faults, as aioseq sees them -----------------------------------------------

EXPECTED = {
    "throughput-exceeded": Throttled,
    "throttling": Throttled,
    "internal-error": ServiceUnavailable,
    "http-500": ServiceUnavailable,
    "transaction-conflict": TransactionConflict,
    "reset": ConnectionFailed,
    "delay": ConnectionFailed,
    "response-lost": ConnectionFailed,
}


@pytest.mark.parametrize("kind", KINDS)
async def test_each_fault_reaches_aioseq_as_its_typed_error(
    aioseq_store: DynamoStore, proxy: FaultProxy, kind: str
) -> None:
    proxy.set_schedule(FaultSchedule({kind: 1.0}, delay_secs=READ_TIMEOUT_SECS + 0.5))
    async with DynamoStore.open(
        table=aioseq_store.table,
        endpoint_url=proxy.endpoint_url,
        read_timeout_secs=READ_TIMEOUT_SECS,
        retry_policy=RetryPolicy(max_attempts=1),
    ) as store:
        with pytest.raises(RetriesExhausted) as raised:
            await store.atomic_counter("c").next()
    assert type(raised.value.last_error) is EXPECTED[kind]
    assert raised.value.last_error.retryable
    assert proxy.injected == {kind: 1}


async def test_a_conflicting_transaction_is_canceled_with_reason_transaction_conflict(
    aioseq_store: DynamoStore, proxy: FaultProxy
) -> None:
    proxy.set_schedule(
        FaultSchedule({"transaction-conflict": 1.0}, operations=frozenset({"TransactWriteItems"}))
    )
    async with DynamoStore.open(
        table=aioseq_store.table,
        endpoint_url=proxy.endpoint_url,
        retry_policy=RetryPolicy(max_attempts=3, max_backoff_secs=0.01),
    ) as store:
        counter = store.transactional_counter("c")
        with pytest.raises(RetriesExhausted) as raised:
            await counter.put(lambda n: {"pk": "c", "sk": n})
    error = raised.value.last_error
    assert isinstance(error, TransactionCanceled) and "TransactionConflict" in error.codes
    assert raised.value.attempts == 3
    assert sum(counter.statistics().retries.values()) == 2
    assert await counter_item(aioseq_store, "c") is None  # nothing was written


async def test_the_proxy_runs_as_a_command(aioseq_store: DynamoStore, aioseq_endpoint: str) -> None:
    command = [sys.executable, "-m", "aioseq.testing.fault_proxy", "--target", aioseq_endpoint]
    proxy = await asyncio.create_subprocess_exec(
        *command, "--seed", "3", "--rate", "1", "--kinds", "throttling",
        stdout=asyncio.subprocess.PIPE,
    )  # fmt: skip
    assert proxy.stdout is not None
    endpoint = (await proxy.stdout.readline()).decode().strip()
    async with DynamoStore.open(
        table=aioseq_store.table, endpoint_url=endpoint, retry_policy=RetryPolicy(max_attempts=2)
    ) as store:
        with pytest.raises(RetriesExhausted):
            await store.atomic_counter("c").next()
    proxy.send_signal(signal.SIGTERM)
    stdout, _ = await proxy.communicate()
    assert json.loads(stdout) == {"throttling": 2}


# --- the retry policy ------------------------------------------------------------------------


async def test_retries_are_bounded_by_attempts_and_not_stacked_on_botocores(
    aioseq_store: DynamoStore, proxy: FaultProxy
) -> None:
    proxy.set_schedule(FaultSchedule({"internal-error": 1.0}))
    async with DynamoStore.open(
        table=aioseq_store.table,
        endpoint_url=proxy.endpoint_url,
        retry_policy=RetryPolicy(max_attempts=4, max_backoff_secs=0.01),
    ) as store:
        with pytest.raises(RetriesExhausted) as raised:
            await store.atomic_counter("c").next()
    assert raised.value.attempts == 4
    assert proxy.requests == 4  # one HTTP request per attempt: botocore retried nothing


async def test_retries_are_bounded_by_time(aioseq_store: DynamoStore, proxy: FaultProxy) -> None:
    proxy.set_schedule(FaultSchedule({"throttling": 1.0}))
    async with DynamoStore.open(
        table=aioseq_store.table,
        endpoint_url=proxy.endpoint_url,
        retry_policy=RetryPolicy(max_attempts=10_000, max_delay_secs=1.0, max_backoff_secs=0.05),
    ) as store:
        started = asyncio.get_running_loop().time()
        with pytest.raises(RetriesExhausted):
            await store.atomic_counter("c").next()
    # (1 s: room for several round trips to moto, which serves one request at a time, even
    # on a loaded machine; the bound is the time, never the 10,000 attempts.)
    assert asyncio.get_running_loop().time() - started < 3.0
    assert 1 < proxy.requests < 10_000


async def test_a_cancelled_call_is_neither_retried_nor_swallowed(
    aioseq_store: DynamoStore, proxy: FaultProxy
) -> None:
    proxy.set_schedule(FaultSchedule({"delay": 1.0}, delay_secs=2.0))
    async with DynamoStore.open(table=aioseq_store.table, endpoint_url=proxy.endpoint_url) as store:
        call = asyncio.ensure_future(store.atomic_counter("c").next())
        await until(lambda: proxy.requests == 1)  # the request is held at the proxy
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call
        # The call's task is over: the library left nothing behind to retry it later.
    assert proxy.requests == 1


async def test_an_add_whose_answer_was_lost_costs_a_gap_never_a_duplicate(
    aioseq_store: DynamoStore, faulty_store: DynamoStore, proxy: FaultProxy
) -> None:
    proxy.set_schedule(only("response-lost", first=[True, False], operations={"UpdateItem"}))
    counter = faulty_store.atomic_counter("c")
    n = await counter.next()
    retries = counter.statistics().retries
    # 1 was taken by the ADD whose answer was lost, which was retried; on a loaded machine a
    # read timeout (an answer read too late) costs one more number and one more retry each.
    assert n == 1 + sum(retries.values()) >= 2
    assert await counter.current() == n


VARIANTS = [(s, False) for s in STRATEGY_NAMES] + [(s.name, True) for s in STRATEGIES if s.grouped]


@pytest.mark.slow
@pytest.mark.parametrize(("strategy", "group"), VARIANTS)
async def test_every_strategy_keeps_its_guarantees_under_every_fault(
    aioseq_store: DynamoStore,
    faulty_store: DynamoStore,
    proxy: FaultProxy,
    strategy: str,
    group: bool,
) -> None:
    history = History()
    proxy.on_exchange = history.observe
    proxy.set_schedule(FaultSchedule.uniform(0.2, seed=7, delay_secs=READ_TIMEOUT_SECS + 0.5))
    taker = make_taker(faulty_store, strategy, "c", group=group)

    async def task(i: int) -> None:
        for j in range(8):
            payload = f"task{i}/{j}"
            await history.take(
                functools.partial(taker.put, payload),
                strategy=strategy,
                counter="c",
                process="",
                task=i,
                payload=payload,
            )

    await asyncio.gather(*(task(i) for i in range(8)))
    if taker.aclose is not None:
        await taker.aclose()
    proxy.on_exchange = None
    # Read timeouts the proxy did not cause: on a loaded machine the client read an answer
    # the proxy had delivered too late, and retried.
    timeouts = taker.counter.statistics().retries.get("ReadTimeoutError", 0)
    history.mark_unread("", timeouts - proxy.injected["delay"])
    if strategy_named(strategy).writes_items:
        # number -> payload: an item stored twice, or under another call's number, fails it
        report = history.check(strategy, "c", stored=await stored_payloads(aioseq_store, "c"))
    else:
        report = history.check(
            strategy, "c", top=await make_taker(aioseq_store, strategy, "c").current()
        )
    assert report.ok, report.problems
    assert report.numbers == 64 and report.duplicates == report.holes == 0
    assert sum(proxy.injected.values()) > 0
    assert "unexplained" not in report.gaps
