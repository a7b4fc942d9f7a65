"""The endpoint's circuit breaker (`aioseq._endpoint.EndpointHealth`): down on evidence of
silence, never on slowness alone; on a clock the test moves, or the loop's."""

from __future__ import annotations

import asyncio
import itertools
import time

import pytest

from aioseq import ConnectionFailed, EndpointDown, EndpointUnreachable
from aioseq._endpoint import PROBE_SECS, EndpointHealth
from aioseq.observe import StatisticsObserver
from aioseq.testing import ManualClock

REFUSED = EndpointUnreachable("UpdateItem: connection refused by 127.0.0.1:9", operation="X")


async def settle() -> None:
    for _ in range(20):
        await asyncio.sleep(0)


def unreachable_for(endpoint: EndpointHealth, clock: ManualClock, secs: float) -> None:
    """Connections refused every 0.5 s for ``secs``."""
    for _ in range(int(secs / 0.5) + 1):
        endpoint.unreachable(endpoint.sent(), REFUSED)
        clock.advance(0.5)


def test_answered_requests_never_take_it_down() -> None:
    clock = ManualClock()
    endpoint = EndpointHealth("http://db", 3.0, clock)
    for _ in range(10):
        ticket = endpoint.sent()
        clock.advance(2.0)  # slow, but answered
        endpoint.answered(ticket)
        assert not endpoint.is_down()
    assert endpoint.down_since is None


async def test_connections_refused_for_the_limit_take_it_down_until_an_answer() -> None:
    clock = ManualClock()
    endpoint = EndpointHealth("http://db", 3.0, clock)
    unreachable_for(endpoint, clock, 2.5)
    assert not endpoint.is_down()  # 2.5 s of refusals: not yet
    unreachable_for(endpoint, clock, 0.5)
    assert endpoint.is_down() and endpoint.is_down()  # asking changes nothing
    error = endpoint.refused("PutItem")
    assert isinstance(error, EndpointUnreachable) and isinstance(error, EndpointDown)
    assert not error.maybe_applied and not error.retryable
    assert "http://db" in str(error) and error.operation == "PutItem"
    assert error.__cause__ is REFUSED and "connection refused by 127.0.0.1:9" in str(error)
    clock.advance(60.0)
    assert endpoint.is_down()  # no answer, however long
    endpoint.answered()
    assert not endpoint.is_down() and endpoint.up_since == clock.now()


async def test_an_answer_between_refusals_starts_the_count_again() -> None:
    clock = ManualClock()
    endpoint = EndpointHealth("http://db", 3.0, clock)
    unreachable_for(endpoint, clock, 2.0)
    endpoint.answered(endpoint.sent())
    unreachable_for(endpoint, clock, 2.0)
    assert not endpoint.is_down()


async def test_a_request_unanswered_past_the_limit_is_confirmed_by_a_silent_probe() -> None:
    clock = ManualClock()  # (the probe's own deadline is on the loop's time, as a timeout is)
    endpoint = EndpointHealth("http://db", 0.05, clock)
    probes: list[float] = []

    async def silent_probe() -> None:
        probes.append(clock.now())
        await asyncio.Event().wait()  # accepts, never answers

    endpoint.probe = silent_probe
    endpoint.sent()  # never answered
    clock.advance(3.5)
    endpoint.sent()  # finds the first past the limit: a probe of its own, not down yet
    assert not endpoint.is_down()
    await asyncio.sleep(0.1)
    assert endpoint.is_down() and probes[0] == 3.5  # the probe got no answer in its time
    await endpoint.aclose()


async def test_a_lone_request_unanswered_past_the_limit_is_suspected_with_nothing_sent_after() -> (
    None
):
    # (A grouped put waits behind the one transaction in flight: nothing else is sent.)
    endpoint = EndpointHealth("http://db", 0.05)
    probes = 0

    async def silent_probe() -> None:
        nonlocal probes
        probes += 1
        await asyncio.Event().wait()

    endpoint.probe = silent_probe
    endpoint.sent()  # never answered, and the last request sent
    await asyncio.sleep(0.3)  # the limit, then the probe's own
    assert endpoint.is_down() and probes >= 1
    await endpoint.aclose()


async def test_a_slow_answer_during_the_probe_is_not_silence() -> None:
    clock = ManualClock()
    endpoint = EndpointHealth("http://db", 0.05, clock)

    async def silent_probe() -> None:
        await asyncio.Event().wait()

    endpoint.probe = silent_probe
    slow = endpoint.sent()
    clock.advance(3.5)
    endpoint.sent()  # a probe starts
    endpoint.answered(slow)  # the slow request is answered meanwhile
    await asyncio.sleep(0.1)
    assert not endpoint.is_down()
    await endpoint.aclose()


async def test_a_cancelled_caller_then_quiet_is_not_silence() -> None:
    clock = ManualClock()
    endpoint = EndpointHealth("http://db", 3.0, clock)
    probed = 0

    async def probe() -> None:
        nonlocal probed
        probed += 1

    endpoint.probe = probe
    endpoint.ended(endpoint.sent())  # its caller's deadline: no longer outstanding
    clock.advance(4.0)  # a quiet spell
    endpoint.sent()
    await settle()
    assert not endpoint.is_down() and probed == 0


@pytest.mark.parametrize("alive", [False, True])
async def test_requests_ended_by_read_timeouts_past_the_limit_are_a_suspicion(
    alive: bool,
) -> None:
    """One request at a time, each ended by a read timeout longer than the limit (no request
    is ever outstanding when the next is sent): a suspicion all the same, which a probe
    confirms (silent: down) or clears (answered: up)."""
    clock = ManualClock()
    endpoint = EndpointHealth("http://db", 0.05, clock)

    async def probe() -> None:
        if alive:
            return
        await asyncio.Event().wait()

    endpoint.probe = probe
    ticket = endpoint.sent()
    clock.advance(2.0)  # the client's read timeout
    endpoint.ended(ticket, ConnectionFailed("UpdateItem: read timeout"))
    await asyncio.sleep(0.1)
    assert endpoint.is_down() is not alive
    await endpoint.aclose()


async def test_a_blocked_event_loop_is_not_silence() -> None:
    endpoint = EndpointHealth("http://db", 0.2)

    async def probe() -> None:
        await asyncio.sleep(0.01)
        endpoint.answered()

    endpoint.probe = probe
    endpoint.sent()
    time.sleep(0.5)  # noqa: ASYNC251 (a CPU-bound handler holds the loop past the limit)
    endpoint.sent()
    await asyncio.sleep(0.3)
    assert not endpoint.is_down()
    await endpoint.aclose()


async def test_a_probe_deadline_the_loop_ran_late_is_not_evidence() -> None:
    endpoint = EndpointHealth("http://db", 0.05)
    calls = 0

    async def probe() -> None:
        nonlocal calls
        calls += 1
        if calls == 1:
            time.sleep(0.7)  # noqa: ASYNC251 (the loop is blocked past the deadline)
            await asyncio.Event().wait()
        endpoint.answered()

    endpoint.probe = probe
    endpoint.sent()
    await asyncio.sleep(0.06)
    endpoint.sent()
    await asyncio.sleep(1.0)  # (past the 0.7 s the loop is held)
    # Probed again; the second answered, and so did those the watch sent after it (the two
    # requests stay unanswered here, a threshold after each answer).
    assert not endpoint.is_down() and calls >= 2
    await endpoint.aclose()


async def test_one_probe_at_a_time_until_the_endpoint_answers() -> None:
    clock = ManualClock()
    endpoint = EndpointHealth("http://db", 3.0, clock)
    probes: list[float] = []
    answers_after = 3

    async def probe() -> None:
        probes.append(clock.now())
        if len(probes) < answers_after:
            raise ConnectionFailed("refused")
        endpoint.answered()

    endpoint.probe = probe
    unreachable_for(endpoint, clock, 3.0)
    assert endpoint.is_down()
    await settle()
    assert len(probes) == answers_after and not endpoint.is_down()
    assert [b - a for a, b in itertools.pairwise(probes)] == [PROBE_SECS] * (answers_after - 1)
    await endpoint.aclose()


def test_an_idle_endpoint_is_not_down() -> None:
    clock = ManualClock()
    endpoint = EndpointHealth("http://db", 3.0, clock)
    clock.advance(3600.0)
    endpoint.sent()
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
    unreachable_for(endpoint, clock, 3.5)
    assert endpoint.is_down()
    seen = observer.statistics()
    assert (seen.endpoint_outages, seen.endpoints_down) == (1, frozenset({"http://db"}))
    down_since = endpoint.down_since
    assert down_since is not None
    clock.advance(10.0)
    endpoint.answered()
    endpoint.answered()
    seen = observer.statistics()
    assert (seen.endpoint_outages, seen.endpoints_down) == (1, frozenset())
    assert seen.endpoint_down_secs == pytest.approx(clock.now() - down_since)


async def test_two_stores_down_on_one_endpoint_are_counted_apart() -> None:
    clock = ManualClock()
    observer = StatisticsObserver()
    first, second = (EndpointHealth("http://db", 3.0, clock, observer) for _ in range(2))
    for _ in range(7):
        for endpoint in (first, second):
            endpoint.unreachable(endpoint.sent(), REFUSED)
        clock.advance(0.5)
    assert first.is_down() and second.is_down()
    first.answered()
    assert observer.statistics().endpoints_down == {"http://db"}  # the second still is
    await second.aclose()  # closed while down: no longer counted down
    await second.aclose()
    seen = observer.statistics()
    assert (seen.endpoints_down, seen.endpoint_outages) == (frozenset(), 2)
