"""DynamoStore's retries against an endpoint where nothing listens: every request fails to
connect at once, so the retry loop runs with no server (the waits are recorded, not slept)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import pytest
from botocore.exceptions import ParamValidationError
from checks import SleepHook

from aioseq import (
    ConnectionFailed,
    DynamoStore,
    EndpointDown,
    EndpointUnreachable,
    RetriesExhausted,
    RetryPolicy,
    Throttled,
)
from aioseq._endpoint import EndpointHealth
from aioseq._retry import RetryEngine, Verdict
from aioseq._transport import BotocoreTransport
from aioseq.testing import ManualClock

#: Nothing listens on port 1: every request fails to connect, at once.
REFUSING_ENDPOINT = "http://127.0.0.1:1"


@pytest.mark.parametrize("home_region", [None, "us-east-1"])
async def test_transient_errors_are_retried_with_jitter_then_exhausted(
    home_region: str | None,
) -> None:
    clock = ManualClock()  # records the waits; no real one
    policy = RetryPolicy(max_attempts=4, initial_backoff_secs=0.1, max_backoff_secs=0.4)
    async with DynamoStore.open(
        endpoint_url=REFUSING_ENDPOINT,
        retry_policy=policy,
        clock=clock,
        idle_secs=None,
        home_region=home_region,
    ) as store:
        counter = store.atomic_counter("k")
        with pytest.raises(RetriesExhausted) as caught:
            await counter.next()
    assert caught.value.attempts == 4
    assert isinstance(caught.value.last_error, ConnectionFailed)
    assert caught.value.__cause__ is caught.value.last_error
    assert len(clock.slept) == 3
    assert all(0 <= w <= 0.4 for w in clock.slept)
    if home_region is None:  # the store's first write asks the table what it is first
        assert store.requests == {"DescribeTable": 4}
    else:  # its home Region: nothing to ask; the counter's own write is retried
        assert counter.statistics().retries
        assert store.requests == {"UpdateItem": 4}


async def test_cancellation_during_a_retry_wait_propagates() -> None:
    waiting = asyncio.Event()

    async def long_sleep(seconds: float) -> None:
        waiting.set()
        await asyncio.sleep(3600)

    policy = RetryPolicy(max_attempts=100)
    async with DynamoStore.open(
        endpoint_url=REFUSING_ENDPOINT,
        retry_policy=policy,
        clock=SleepHook(long_sleep),
        idle_secs=None,
    ) as store:
        task = asyncio.create_task(store.atomic_counter("k").next())
        await asyncio.wait_for(waiting.wait(), timeout=30)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert task.cancelled()
        assert sum(store.requests.values()) == 1  # the table's description, asked once


async def test_only_failures_that_ask_for_a_backoff_lengthen_it() -> None:
    """Lost races retried at once and pauses in a counter's queue do not grow the backoff of
    a transient error that follows them in the same call (a long backoff there lets the
    counter's ring of recent writes be overwritten before a resend can be judged)."""
    clock = ManualClock()
    engine = RetryEngine(RetryPolicy(max_attempts=20, initial_backoff_secs=0.001), clock=clock)
    verdicts = [Verdict.RETRY_NOW] * 8 + [Verdict.YIELD] * 4 + [Verdict.RETRY, Verdict.RETRY]
    failures = iter(range(len(verdicts)))

    async def attempt() -> int:
        n = next(failures, None)
        if n is None:
            return 1
        raise ValueError(n)

    def classify(exc: Exception) -> Verdict:
        return verdicts[int(str(exc))]

    assert await engine.run(attempt, classify=classify, pause_secs=lambda: 0.0005) == 1
    assert clock.slept[:8] == [0.0] * 8
    assert all(0.00045 <= w <= 0.00055 for w in clock.slept[8:12])
    first, second = clock.slept[12:]
    assert 0 <= first <= 0.001 and 0 <= second <= 0.002  # 2**0 and 2**1, not 2**12


async def test_call_checks_parameters_on_the_client_aioseq_opens() -> None:
    """aioseq's own client leaves parameter checks to aioseq (its hot requests are templates
    checked once); what a caller passes to call() is checked as botocore would, unsent."""
    async with DynamoStore.open(endpoint_url=REFUSING_ENDPOINT) as store:
        assert isinstance(store.transport, BotocoreTransport) and store.transport.validates
        with pytest.raises(ParamValidationError, match="Key"):
            await store.send_once("get_item", TableName=store.table.name, Key="not a map")
        with pytest.raises(ParamValidationError, match="TableName"):
            await store.send_with_retries("get_item", Key=store.counter_item_key("k"))
        assert store.requests.total() == 0  # nothing was sent
    async with DynamoStore.open(endpoint_url=REFUSING_ENDPOINT) as owner:
        borrowed = DynamoStore(owner.client, owner.table)
        assert isinstance(borrowed.transport, BotocoreTransport)
        assert not borrowed.transport.validates  # a client of the caller's checks itself


async def test_an_endpoint_unanswered_for_the_limit_fails_every_call_at_once() -> None:
    """The first call spends max_unreachable_secs trying; once the endpoint is down, calls of
    every kind fail at once with EndpointDown, sending nothing; a probe checks it meanwhile."""
    clock = ManualClock()
    policy = RetryPolicy(max_attempts=1000, max_unreachable_secs=3.0)
    async with DynamoStore.open(
        endpoint_url=REFUSING_ENDPOINT, retry_policy=policy, clock=clock, idle_secs=None
    ) as store:
        counter = store.atomic_counter("k")
        with pytest.raises((RetriesExhausted, EndpointDown)) as caught:
            await counter.next()  # the attempt past the limit finds the endpoint down
        first = caught.value
        assert isinstance(getattr(first, "last_error", first), EndpointUnreachable)
        assert not first.maybe_applied
        assert store.endpoint.down_since is not None
        sent = store.requests["UpdateItem"] + store.requests["TransactWriteItems"]
        for call in (
            counter.next,
            store.transactional_counter("t").put({"pk": "o", "sk": 1}),
            store.optimistic_counter("o").next,
            counter.current,
        ):
            with pytest.raises(EndpointDown) as refused:
                await (call() if callable(call) else call)
            assert not refused.value.maybe_applied
        assert store.requests["UpdateItem"] + store.requests["TransactWriteItems"] == sent
        assert store.requests["GetItem"] == 0
        for _ in range(200):  # the probe's connection is refused on the loop's time
            if store.requests["DescribeEndpoints"]:
                break
            await asyncio.sleep(0.01)
        assert store.requests["DescribeEndpoints"] >= 1  # the probe: still refused
        assert store.endpoint.down_since is not None


@pytest.mark.parametrize("others_answered", [True, False])
async def test_a_slow_connect_is_retried_while_the_endpoint_answers_others(
    others_answered: bool,
) -> None:
    """A connection that failed after longer than max_unreachable_secs (a connect timeout on
    a loaded machine) is retried: once connected, it is served. Connections failing for
    max_unreachable_secs with no answer to anything in between take the endpoint down, and the
    call stops there."""
    clock = ManualClock()
    health = EndpointHealth("http://db", 3.0, clock)
    engine = RetryEngine(RetryPolicy(max_attempts=5), clock=clock, answers=health)
    timeouts = 2

    async def attempt() -> int:
        nonlocal timeouts
        if timeouts == 0:
            return 7
        timeouts -= 1
        ticket = health.sent()
        clock.advance(5.0)  # botocore's connect timeout, on a machine too busy to accept
        if others_answered:
            health.answered(health.sent())  # another request's answer meanwhile
        health.unreachable(ticket, EndpointUnreachable("UpdateItem: connect timeout"))
        raise EndpointUnreachable("UpdateItem: connect timeout")

    if others_answered:
        assert await engine.run(attempt) == 7
        assert not health.is_down()
    else:  # the second connect timeout, 5 s after the first: down
        with pytest.raises(RetriesExhausted) as caught:
            await engine.run(attempt)
        assert caught.value.attempts == 2 and health.is_down()
    timeouts = 1  # a single slow connect, the first of the call: retried, served
    health = EndpointHealth("http://db", 3.0, clock)
    engine = RetryEngine(RetryPolicy(max_attempts=5), clock=clock, answers=health)
    assert await engine.run(attempt) == 7


async def test_each_failure_is_classified_once_and_exhaustion_chains_the_last() -> None:
    """The first failure (met before tenacity runs the call) and every later one are
    classified once each; the attempts that ran out are counted from the first, the last
    error is the cause, and an earlier lost answer makes the whole call maybe applied."""
    clock = ManualClock()
    engine = RetryEngine(RetryPolicy(max_attempts=3, initial_backoff_secs=0.01), clock=clock)
    errors = [
        ConnectionFailed("reset", maybe_applied=True),
        Throttled("slow down"),
        Throttled("slow down again"),
    ]
    sent: list[Exception] = []
    classified: list[Exception] = []

    async def attempt() -> int:
        sent.append(errors[len(sent)])
        raise sent[-1]

    def classify(exc: Exception) -> Verdict:
        classified.append(exc)
        return Verdict.RETRY

    with pytest.raises(RetriesExhausted) as caught:
        await engine.run(attempt, classify=classify)
    assert sent == errors and classified == errors
    assert caught.value.attempts == 3 and len(clock.slept) == 2
    assert caught.value.last_error is errors[-1] and caught.value.__cause__ is errors[-1]
    assert caught.value.maybe_applied


async def test_a_failing_verdict_after_a_lost_answer_says_maybe_applied() -> None:
    engine = RetryEngine(RetryPolicy(max_attempts=5), clock=ManualClock())
    refused = Throttled("refused, and not retried")
    errors: list[Exception] = [ConnectionFailed("reset", maybe_applied=True), refused]

    async def attempt() -> int:
        raise errors.pop(0)

    def classify(exc: Exception) -> Verdict:
        return Verdict.FAIL if exc is refused else Verdict.RETRY

    with pytest.raises(Throttled) as caught:
        await engine.run(attempt, classify=classify)
    assert caught.value is refused and caught.value.maybe_applied and not errors

    alone = Throttled("refused at the first attempt")
    with pytest.raises(Throttled) as failed:  # no earlier attempt: left as it is
        await engine.run(_raising(alone), classify=lambda e: Verdict.FAIL)
    assert failed.value is alone and not alone.maybe_applied


@pytest.mark.parametrize("error", [asyncio.CancelledError(), KeyboardInterrupt()])
async def test_a_base_exception_in_a_retried_attempt_is_never_retried(
    error: BaseException,
) -> None:
    clock = ManualClock()
    engine = RetryEngine(RetryPolicy(max_attempts=10), clock=clock)
    attempts = 0

    async def attempt() -> int:
        nonlocal attempts
        attempts += 1
        if attempts == 1:
            raise Throttled("slow down")
        raise error

    with pytest.raises(type(error)) as caught:  # (even when everything else is retried)
        await engine.run(attempt, classify=lambda e: Verdict.RETRY)
    assert caught.value is error and attempts == 2 and len(clock.slept) == 1


def _raising(error: Exception) -> Callable[[], Awaitable[int]]:
    async def attempt() -> int:
        raise error

    return attempt
