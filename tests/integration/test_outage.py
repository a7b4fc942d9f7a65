"""The endpoint gone, then back (issue 31): the proxy in front of the server stopped (connections
refused) and started again on the same port, under load; then an endpoint that accepts and never
answers. The allocator serves from its runway; the gapless strategy fails fast while the
endpoint is down and works again once it answers. (``benchmarks.outage`` runs the issue's 60 s.)"""

from __future__ import annotations

import asyncio
import time

import pytest

from aioseq import DynamoStore, EndpointUnreachable, RetryPolicy
from aioseq.testing.fault_proxy import FaultProxy
from benchmarks.outage import silent_server

#: The store's "unanswered for" limit, scaled down from the default 3 s with the outage.
LIMIT_SECS = 1.0
POLICY = RetryPolicy(max_unreachable_secs=LIMIT_SECS)

#: One put: when it started (s since the phase began), how long it took, what it raised.
Put = tuple[float, float, BaseException | None]


async def puts_for(store: DynamoStore, secs: float, first: int) -> list[Put]:
    """A transactional ``put()`` started every 50 ms for ``secs``, each in its own task (as
    requests of a service are): when each started, how long it took, what it raised."""
    began = time.perf_counter()

    async def put(n: int) -> Put:
        started = time.perf_counter()
        try:
            await store.transactional_counter("inv").put({"pk": "invoice", "sk": n})
        except EndpointUnreachable as exc:
            return started - began, time.perf_counter() - started, exc
        return started - began, time.perf_counter() - started, None

    tasks: list[asyncio.Task[Put]] = []
    while time.perf_counter() - began < secs:
        tasks.append(asyncio.create_task(put(first + len(tasks))))
        await asyncio.sleep(0.05)
    return list(await asyncio.gather(*tasks))


def failed_fast_after(puts: list[Put], secs: float) -> bool:
    late = [p for p in puts if p[0] > secs]
    return bool(late) and all(error is not None and took < 0.05 for _, took, error in late)


@pytest.mark.slow
@pytest.mark.only_on("dynamodb-local")  # the client's behaviour; the server only answers
async def test_the_allocator_serves_through_an_outage_and_puts_fail_fast(
    aioseq_store: DynamoStore, aioseq_endpoint: str
) -> None:
    proxy = FaultProxy(aioseq_endpoint)
    proxy.start()
    try:
        async with DynamoStore.open(
            table=aioseq_store.table,
            endpoint_url=proxy.endpoint_url,
            retry_policy=POLICY,
            read_timeout_secs=2.0,
        ) as store:
            ids = store.block_allocator("o", runway_secs=8.0, target_refill_interval_secs=1.0)
            numbers: list[int] = []
            errors: list[BaseException] = []
            stop = asyncio.Event()

            async def take() -> None:  # ~150 numbers a second
                while not stop.is_set():
                    try:
                        numbers.append(await ids.next())
                    except Exception as exc:  # counted: there must be none
                        errors.append(exc)
                    await asyncio.sleep(0.005)

            taker = asyncio.create_task(take())
            assert all(error is None for *_, error in await puts_for(store, 0.5, 0))
            await asyncio.sleep(2.0)  # the runway fills at the measured rate
            assert (ids.statistics().runway_secs or 0) > 4.0

            proxy.stop()  # connections refused
            refused = await puts_for(store, 3.0, 100)
            assert failed_fast_after(refused, LIMIT_SECS + 1.0), refused
            proxy.start()  # back, on the same port
            back = await puts_for(store, 2.0, 200)
            assert back[-1][2] is None and store.endpoint.down_since is None, back

            proxy.stop()
            async with silent_server(proxy.port):  # accepts, never answers
                silent = await puts_for(store, 5.0, 300)
                # Silence is only suspected after the limit; a probe of its own, given the
                # limit too, confirms it (slow is not down); a loaded machine adds its share.
                assert failed_fast_after(silent, 2 * LIMIT_SECS + 2.0), silent
                with pytest.raises(EndpointUnreachable) as read:
                    await ids.counter.current()
                assert not read.value.maybe_applied  # a read applies nothing
            proxy.start()
            again = await puts_for(store, 2.0, 400)
            assert again[-1][2] is None, again
            stop.set()
            await taker
            assert errors == []  # the runway served every call
            assert numbers == sorted(set(numbers))  # unique and increasing
            assert (ids.statistics().runway_secs or 0) > 4.0  # back above half its target
    finally:
        proxy.stop()
