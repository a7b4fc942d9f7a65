"""The endpoint's circuit breaker (`aioseq._endpoint.EndpointHealth`), on a clock the test moves."""

from __future__ import annotations

import asyncio
import itertools

import pytest

from aioseq import EndpointDown, EndpointUnreachable
from aioseq._endpoint import PROBE_SECS, EndpointHealth
from aioseq.observe import StatisticsObserver
from aioseq.testing import ManualClock


def test_answered_requests_never_take_it_down() -> None:
    clock = ManualClock()
    endpoint = EndpointHealth("http://db", 3.0, clock)
    for _ in range(10):
        endpoint.sending()
        clock.advance(2.0)  # slow, but answered
        endpoint.answered()
        assert not endpoint.is_down()
    assert endpoint.down_since is None and endpoint.unanswered_since is None


def test_a_request_unanswered_for_the_limit_takes_it_down_until_an_answer() -> None:
    clock = ManualClock()
    endpoint = EndpointHealth("http://db", 3.0, clock)
    endpoint.sending()
    clock.advance(2.9)
    endpoint.sending()  # a second request: the first still unanswered
    assert not endpoint.is_down()
    clock.advance(0.1)
    assert endpoint.is_down() and endpoint.down_since == clock.now()
    error = endpoint.refused("PutItem")
    assert isinstance(error, EndpointUnreachable) and isinstance(error, EndpointDown)
    assert not error.maybe_applied and not error.retryable
    assert "http://db" in str(error) and error.operation == "PutItem"
    clock.advance(60.0)
    assert endpoint.is_down()  # no answer, however long
    endpoint.answered()
    assert not endpoint.is_down() and endpoint.up_since == clock.now()


async def test_one_probe_at_a_time_until_the_endpoint_answers() -> None:
    clock = ManualClock()
    endpoint = EndpointHealth("http://db", 3.0, clock)
    probes: list[float] = []
    answers_after = 3

    async def probe() -> None:
        probes.append(clock.now())
        if len(probes) < answers_after:
            raise ConnectionError("refused")
        endpoint.answered()

    endpoint.probe = probe
    endpoint.sending()
    clock.advance(3.0)
    assert endpoint.is_down()
    assert endpoint.is_down()  # asked again: still one prober
    for _ in range(50):
        await asyncio.sleep(0)
    assert len(probes) == answers_after and not endpoint.is_down()
    assert [b - a for a, b in itertools.pairwise(probes)] == [PROBE_SECS] * (answers_after - 1)
    await endpoint.aclose()


async def test_a_silent_probe_is_given_the_limit_then_tried_again() -> None:
    clock = ManualClock()
    endpoint = EndpointHealth("http://db", 0.05, clock)
    started = 0
    in_flight: list[int] = []  # probes on their way when each one started
    second = asyncio.Event()

    async def probe() -> None:
        nonlocal started
        started += 1
        mine = started
        in_flight.append(mine)
        if mine == 2:
            second.set()
        try:
            await asyncio.sleep(3600)  # accepts, never answers
        finally:
            in_flight.remove(mine)

    endpoint.probe = probe
    endpoint.sending()
    clock.advance(0.06)
    assert endpoint.is_down()
    # The limit is the loop's 50 ms (asyncio.wait_for); the pause between probes, the clock's.
    await asyncio.wait_for(second.wait(), 30)
    assert in_flight == [2]  # the first timed out before the second started: one at a time
    assert clock.slept == [PROBE_SECS]
    await endpoint.aclose()
    assert endpoint._probing is None


def test_an_idle_endpoint_is_not_down() -> None:
    clock = ManualClock()
    endpoint = EndpointHealth("http://db", 3.0, clock)
    clock.advance(3600.0)
    assert not endpoint.is_down()


@pytest.mark.parametrize("operation", ["GetItem", "Query", "Scan", "DescribeTable"])
def test_a_lost_answer_to_a_read_applied_nothing(operation: str) -> None:
    from botocore.exceptions import ReadTimeoutError

    from aioseq._transport import translate

    lost = translate(ReadTimeoutError(endpoint_url="http://db"), operation)
    assert lost.retryable and not lost.maybe_applied
    write = translate(ReadTimeoutError(endpoint_url="http://db"), "UpdateItem")
    assert write.maybe_applied


def test_its_observer_hears_it_go_down_and_come_up() -> None:
    clock = ManualClock()
    observer = StatisticsObserver()
    endpoint = EndpointHealth("http://db", 3.0, clock, observer)
    endpoint.sending()
    clock.advance(3.5)
    assert endpoint.is_down() and endpoint.is_down()  # told once
    seen = observer.statistics()
    assert (seen.endpoint_outages, seen.endpoints_down) == (1, frozenset({"http://db"}))
    clock.advance(10.0)
    endpoint.answered()
    endpoint.answered()
    seen = observer.statistics()
    assert (seen.endpoint_outages, seen.endpoints_down) == (1, frozenset())
    assert seen.endpoint_down_secs == pytest.approx(10.0)


async def test_two_stores_down_on_one_endpoint_are_counted_apart() -> None:
    clock = ManualClock()
    observer = StatisticsObserver()
    first, second = (EndpointHealth("http://db", 3.0, clock, observer) for _ in range(2))
    for endpoint in (first, second):
        endpoint.sending()
    clock.advance(3.0)
    assert first.is_down() and second.is_down()
    first.answered()
    assert observer.statistics().endpoints_down == {"http://db"}  # the second still is
    await second.aclose()  # closed while down: no longer counted down
    await second.aclose()
    seen = observer.statistics()
    assert (seen.endpoints_down, seen.endpoint_outages) == (frozenset(), 2)
