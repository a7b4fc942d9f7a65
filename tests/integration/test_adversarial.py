"""aioseq used as a hostile user would: bad items, closed objects, foreign event loops,
cancellation storms, a table deleted mid-run, a server that is gone or never answers.

Each case asserts the typed error, that nothing was written (or exactly what was), that no
number was lost or handed out twice, and that it ends within a stated time (``within``, a hang
guard, generous for a shared 2-core machine). Tampered counter items and bad arguments to every
factory are in ``test_bad_input.py``.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import gc
import random
import socket
import threading
import time
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, TypeVar

import pytest
from checks import assert_distinct, assert_exactly, counter_item, item_count, until

from aioseq import (
    ConfigurationError,
    CounterNotFound,
    DynamoStore,
    EndpointDown,
    EndpointUnreachable,
    RetriesExhausted,
    RetryPolicy,
    StatisticsObserver,
    StoreClosed,
    TableNotFound,
    TableSpec,
    ValidationFailed,
    WrongEventLoop,
)
from aioseq._strategy_table import STRATEGY_NAMES
from aioseq._workload import make_taker, stored_numbers
from aioseq.errors import ConnectionFailed
from aioseq.observe import RequestEvent

T = TypeVar("T")


async def within(seconds: float, awaitable: Awaitable[T]) -> T:
    """``awaitable``'s result, or a test failure if it takes more than ``seconds``."""
    try:
        return await asyncio.wait_for(awaitable, seconds)
    except asyncio.TimeoutError:
        pytest.fail(f"did not finish within {seconds} s")


# --- items and item factories ------------------------------------------------------------------


@pytest.mark.parametrize("made", [[1, 2], None, "pk", 42])
@pytest.mark.parametrize("group", [True, False], ids=["grouped", "ungrouped"])
async def test_an_item_function_that_returns_no_mapping_is_refused(
    aioseq_store: DynamoStore, made: object, group: bool
) -> None:
    invoices = aioseq_store.transactional_counter("c", group=group)
    before = aioseq_store.requests
    with pytest.raises(ConfigurationError, match="must return a mapping"):
        await invoices.put(lambda n: made)  # type: ignore[arg-type,return-value]
    with pytest.raises(ConfigurationError, match="takes a mapping"):
        await invoices.put(made)  # type: ignore[arg-type]
    assert aioseq_store.requests == before  # nothing was sent


@pytest.mark.parametrize("value", [set(), {"nested": [set()]}, frozenset()])
async def test_an_empty_set_is_refused_before_any_request(
    aioseq_store: DynamoStore, value: object
) -> None:
    invoices = aioseq_store.transactional_counter("c")
    issues = aioseq_store.sort_key_counter("p")
    with pytest.raises(ConfigurationError, match="empty set"):
        await invoices.put({"pk": "i", "sk": 1, "tags": value})
    with pytest.raises(ConfigurationError, match="empty set"):
        await issues.put({"tags": value})
    assert await item_count(aioseq_store) == 0


@pytest.mark.parametrize(
    ("item", "message"),
    [
        ({"pk": "i"}, "no sort key attribute 'sk'"),
        ({"pk": 7, "sk": 1}, "'pk' must be of type S"),
        ({"pk": "i", "sk": "one"}, "'sk' must be of type N"),
    ],
)
async def test_an_item_without_the_tables_keys_is_refused(
    aioseq_store: DynamoStore, item: dict[str, Any], message: str
) -> None:
    with pytest.raises(ConfigurationError, match=message):
        await aioseq_store.transactional_counter("c").put(lambda n: item)
    assert await counter_item(aioseq_store, "c") is None


async def test_a_grouped_item_that_fails_to_be_made_fails_alone(aioseq_store: DynamoStore) -> None:
    invoices = aioseq_store.transactional_counter("c")

    def item(n: int) -> dict[str, Any]:
        if n == 5:
            raise KeyError("the caller's own bug")
        return {"pk": "c", "sk": n}

    results = await within(
        30, asyncio.gather(*(invoices.put(item) for _ in range(20)), return_exceptions=True)
    )
    failed = [r for r in results if isinstance(r, BaseException)]
    assert len(failed) >= 1 and all(isinstance(r, KeyError) for r in failed)
    numbers = [r for r in results if isinstance(r, int)]
    assert_exactly(numbers, 1, len(numbers))
    assert_exactly(await stored_numbers(aioseq_store, "c"), 1, len(numbers))


async def test_a_grouped_item_only_the_server_refuses_fails_alone(
    aioseq_store: DynamoStore,
) -> None:
    """Items go to another table, whose key types aioseq does not know: DynamoDB refuses the
    whole transaction; the group is split until the bad item is alone."""
    other = DynamoStore(aioseq_store.client, f"{aioseq_store.table.name}-items")
    await other.create_table()
    try:
        invoices = aioseq_store.transactional_counter("c", item_table=other.table.name)
        bad_index = 7

        async def put(i: int) -> int:
            key: object = 123 if i == bad_index else f"invoice-{i}"  # pk must be S
            return await invoices.put(lambda n: {"pk": key, "sk": n})

        results = await within(
            60, asyncio.gather(*(put(i) for i in range(20)), return_exceptions=True)
        )
        assert isinstance(results[bad_index], ValidationFailed)
        numbers = [r for r in results if isinstance(r, int)]
        assert len(numbers) == 19
        assert_exactly(numbers, 1, 19)
        assert await invoices.current() == 19
        assert await item_count(other) == 19
    finally:
        await other.delete_table()


# --- closing ---------------------------------------------------------------------------------


async def test_closing_a_store_while_200_callers_wait_loses_nothing(aioseq_endpoint: str) -> None:
    async with DynamoStore.open(endpoint_url=aioseq_endpoint, table=_name()) as setup:
        await setup.create_table()
    store = await DynamoStore.open(endpoint_url=aioseq_endpoint, table=setup.table)
    counter = store.atomic_counter("c")
    calls = [asyncio.ensure_future(counter.next()) for _ in range(200)]
    await until(lambda: store.requests["UpdateItem"] > 0)  # the first ADDs are on their way
    # The close waits for every ADD sent (on a loaded machine 200 of them on moto take more
    # than the default 10 s), or what follows counts the abandoned ones as lost.
    await within(120, store.aclose(timeout_secs=100))
    results = await asyncio.gather(*calls, return_exceptions=True)
    assert {type(r) for r in results} <= {int, StoreClosed}, {type(r) for r in results}
    numbers = [r for r in results if isinstance(r, int)]
    assert_distinct(numbers)
    async with DynamoStore.open(endpoint_url=aioseq_endpoint, table=setup.table) as check:
        # Every ADD that was applied was answered: the counter holds what the callers hold.
        assert await check.atomic_counter("c").current() == len(numbers)
        await check.delete_table()


async def test_closing_a_store_closes_its_allocators_and_gives_their_numbers_back(
    aioseq_endpoint: str,
) -> None:
    store = await DynamoStore.open(endpoint_url=aioseq_endpoint, table=_name())
    await store.create_table()
    allocator = store.block_allocator("tickets", block_size=100)
    assert await allocator.next() == 1
    await within(15, store.aclose())
    with pytest.raises(StoreClosed):
        await allocator.next()
    with pytest.raises(StoreClosed):
        await allocator.next_many(2)
    assert allocator.statistics().returned == 99  # the first example's 99 numbers (README)
    async with DynamoStore.open(endpoint_url=aioseq_endpoint, table=store.table) as check:
        assert await check.atomic_counter("tickets").current() == 1
        await check.delete_table()


async def test_everything_made_by_a_closed_store_raises_store_closed(
    aioseq_store: DynamoStore,
) -> None:
    invoices = aioseq_store.transactional_counter("g")
    made = [
        invoices,
        aioseq_store.sort_key_counter("s"),
        aioseq_store.optimistic_counter("o"),
        aioseq_store.atomic_counter("a"),
    ]
    waiting = asyncio.ensure_future(invoices.put(lambda n: {"pk": "g", "sk": n}))
    await asyncio.sleep(0)
    await aioseq_store.aclose()
    (result,) = await asyncio.gather(waiting, return_exceptions=True)
    assert isinstance(result, int | StoreClosed)  # stored before the close, or refused
    for counter in made:
        with pytest.raises(StoreClosed):
            await counter.current()
    with pytest.raises(StoreClosed):
        aioseq_store.atomic_counter("new")


@pytest.mark.parametrize("steps", [0, 1, 2, 3, 5, 8, 13, 21])
async def test_a_cancelled_close_still_closes_the_client(aioseq_endpoint: str, steps: int) -> None:
    """Cancelled after ``steps`` turns of the event loop: before the allocator's give-back,
    during it, or while the client closes."""
    store = await DynamoStore.open(endpoint_url=aioseq_endpoint, table=_name())
    await store.create_table()
    allocator = store.block_allocator("k")
    assert await allocator.next() == 1  # a block to give back: the close has requests to make
    closing = asyncio.ensure_future(store.aclose())
    for _ in range(steps):
        await asyncio.sleep(0)
    closing.cancel()
    with contextlib.suppress(asyncio.CancelledError):  # or it had finished already
        await closing
    await within(15, store.aclose())  # the shared close, run to its end
    assert store.closed
    with pytest.raises(StoreClosed):
        await store.send_once("list_tables")
    with pytest.raises(StoreClosed):
        await allocator.next()
    assert allocator.statistics().returned == 99  # the give-back ran to its end too
    async with DynamoStore.open(endpoint_url=aioseq_endpoint, table=store.table) as check:
        await check.delete_table()


# --- event loops -----------------------------------------------------------------------------


def test_a_second_event_loop_in_the_same_thread_is_refused(aioseq_endpoint: str) -> None:
    first = asyncio.new_event_loop()
    try:
        store = first.run_until_complete(_open(aioseq_endpoint))
        allocator = store.block_allocator("k")
        invoices = store.transactional_counter("g")
        optimistic = store.optimistic_counter("o", group=False)
        assert first.run_until_complete(allocator.next()) == 1
        assert first.run_until_complete(invoices.put(lambda n: {"pk": "g", "sk": n})) == 1
        assert first.run_until_complete(optimistic.next()) == 1
        with pytest.raises(WrongEventLoop):
            asyncio.run(allocator.next())
        with pytest.raises(WrongEventLoop):
            asyncio.run(allocator.next_many(3))
        with pytest.raises(WrongEventLoop):
            asyncio.run(invoices.put(lambda n: {"pk": "g", "sk": n}))
        with pytest.raises(WrongEventLoop):
            asyncio.run(optimistic.next())
        assert first.run_until_complete(allocator.next()) == 2  # still fine in its own loop
        first.run_until_complete(store.delete_table())
        first.run_until_complete(store.aclose())
    finally:
        first.close()


@pytest.mark.parametrize("kind", ["allocator", "atomic", "optimistic", "transactional"])
def test_an_object_first_used_in_another_loop_than_its_store_is_refused(
    aioseq_endpoint: str, kind: str
) -> None:
    """Made where no loop runs and first used in another loop than its store's (a
    session-scoped fixture's store, a test's own loop): refused at once, not retried against
    a client whose connections live in the other loop."""
    first = asyncio.new_event_loop()
    try:
        store = first.run_until_complete(_open(aioseq_endpoint))
        factories: dict[str, Callable[[], Coroutine[Any, Any, int]]] = {
            "allocator": store.block_allocator("k").next,
            "atomic": store.atomic_counter("a").next,
            "optimistic": store.optimistic_counter("o").next,
            "transactional": functools.partial(
                store.transactional_counter("g").put, lambda n: {"pk": "g", "sk": n}
            ),
        }
        started = time.monotonic()
        with pytest.raises(WrongEventLoop, match="another event loop than its DynamoStore"):
            asyncio.run(factories[kind]())
        assert time.monotonic() - started < 5
        with pytest.raises(WrongEventLoop, match="close it there"):
            asyncio.run(store.aclose())
        assert not store.closed
        first.run_until_complete(store.delete_table())
        first.run_until_complete(store.aclose())
    finally:
        first.close()


@pytest.mark.filterwarnings("ignore::ResourceWarning")  # the session it leaks, on purpose
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_a_store_whose_loop_closed_says_so_on_close_and_closes_nothing(
    aioseq_endpoint: str,
) -> None:
    """``store = asyncio.run(open())``, then ``asyncio.run(store.aclose())``: its connections
    died with their loop. The close says which loop and what to do, and leaves the store as it
    was, not marked closed with its client half torn down."""
    store = asyncio.run(_open(aioseq_endpoint))
    with pytest.raises(WrongEventLoop, match="closed now") as caught:
        asyncio.run(store.aclose())
    assert "before that loop ends" in str(caught.value)
    assert not store.closed
    name = store.table.name
    del store, caught
    gc.collect()  # its client's session is reported leaked here, under this test's filters
    asyncio.run(_drop(aioseq_endpoint, name))


async def _drop(endpoint: str, table: str) -> None:
    async with DynamoStore.open(endpoint_url=endpoint, table=table) as store:
        await store.delete_table()


async def test_another_thread_is_refused_for_a_grouped_counter(aioseq_store: DynamoStore) -> None:
    invoices = aioseq_store.transactional_counter("g")
    await invoices.put(lambda n: {"pk": "g", "sk": n})
    errors: list[BaseException] = []

    def other_thread() -> None:
        try:
            asyncio.run(invoices.put(lambda n: {"pk": "g", "sk": n}))
        except BaseException as exc:
            errors.append(exc)

    thread = threading.Thread(target=other_thread)
    thread.start()
    thread.join(30)
    assert len(errors) == 1 and isinstance(errors[0], WrongEventLoop)
    assert await invoices.current() == 1


# --- cancellation ------------------------------------------------------------------------------


async def test_a_caller_cancelled_after_being_served_is_accounted_for(
    aioseq_endpoint: str,
) -> None:
    calls: list[asyncio.Future[int]] = []

    class CancelTheFirstCaller(StatisticsObserver):
        def on_request(self, event: RequestEvent) -> None:
            super().on_request(event)
            if event.operation == "UpdateItem" and calls:
                # The refill's answer is in and its callers are about to be served: this
                # cancel reaches the first caller after it was served and before it resumes.
                asyncio.get_running_loop().call_soon(calls[0].cancel)

    observer = CancelTheFirstCaller()
    async with DynamoStore.open(
        endpoint_url=aioseq_endpoint, table=_name(), observer=observer
    ) as store:
        await store.create_table()
        allocator = store.block_allocator("k", block_size=10, target_refill_interval_secs=None)
        calls.extend(asyncio.ensure_future(allocator.next()) for _ in range(5))
        results = await within(15, asyncio.gather(*calls, return_exceptions=True))
        assert isinstance(results[0], asyncio.CancelledError)
        assert results[1:] == [2, 3, 4, 5]  # number 1 went with the cancelled caller
        assert observer.statistics().wasted == {"cancelled": 1}
        await store.delete_table()


async def test_a_cancellation_storm_loses_no_number_unaccounted(aioseq_endpoint: str) -> None:
    observer = StatisticsObserver()
    rng = random.Random(7)
    async with DynamoStore.open(
        endpoint_url=aioseq_endpoint, table=_name(), observer=observer
    ) as store:
        await store.create_table()
        allocator = store.block_allocator("k", block_size=20, target_refill_interval_secs=None)
        calls = [asyncio.ensure_future(allocator.next()) for _ in range(2000)]
        loop = asyncio.get_running_loop()
        for call in rng.sample(calls, 1000):
            loop.call_later(rng.uniform(0, 0.3), call.cancel)
        results = await within(60, asyncio.gather(*calls, return_exceptions=True))
        received = [r for r in results if isinstance(r, int)]
        assert all(isinstance(r, int | asyncio.CancelledError) for r in results)
        assert_distinct(received)
        await allocator.aclose()
        stats = allocator.statistics()
        assert stats.handed_out == len(received)
        # What the counter holds now is exactly what callers took plus what was wasted.
        assert await allocator.current() == len(received) + stats.wasted
        assert sum(observer.statistics().wasted.values()) == stats.wasted
        await store.delete_table()


# --- the table, the server -------------------------------------------------------------------


@pytest.mark.parametrize("strategy", STRATEGY_NAMES)
async def test_a_table_deleted_mid_run_is_table_not_found_at_once(
    aioseq_store: DynamoStore, strategy: str
) -> None:
    # Blocks of one, so that the allocator's next number needs a request too.
    taker = make_taker(aioseq_store, strategy, "c", block_size=1, fixed_block_size=True)
    assert await taker.take() == 1
    await aioseq_store.delete_table()
    with pytest.raises(TableNotFound):
        await within(10, taker.take())
    await aioseq_store.create_table()  # for the fixture's clean-up


async def test_a_gone_server_is_reported_within_the_unreachable_budget() -> None:
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    policy = RetryPolicy(max_unreachable_secs=1.0)
    async with DynamoStore.open(
        endpoint_url=f"http://127.0.0.1:{port}", retry_policy=policy
    ) as store:
        # (The attempt past the budget finds the endpoint down: EndpointDown, a subclass.)
        with pytest.raises((RetriesExhausted, EndpointDown)) as raised:
            await within(10, store.atomic_counter("c").next())
    assert isinstance(getattr(raised.value, "last_error", raised.value), EndpointUnreachable)
    assert f"127.0.0.1:{port}" in str(raised.value)


async def test_a_server_that_never_answers_is_a_typed_error_within_the_retry_budget() -> None:
    handlers: list[asyncio.Task[None]] = []

    async def swallow(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        handlers.append(asyncio.current_task())  # type: ignore[arg-type]
        try:
            await reader.read(1 << 16)  # takes the request, never answers
            await asyncio.Event().wait()
        finally:
            writer.close()

    server = await asyncio.start_server(swallow, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        async with DynamoStore.open(
            endpoint_url=f"http://127.0.0.1:{port}",
            read_timeout_secs=0.3,
            retry_policy=RetryPolicy(max_delay_secs=1.0),
        ) as store:
            with pytest.raises(RetriesExhausted) as raised:
                await within(10, store.atomic_counter("c").next())
        assert type(raised.value.last_error) is ConnectionFailed
    finally:
        server.close()
        for handler in handlers:
            handler.cancel()
        await asyncio.gather(*handlers, return_exceptions=True)
        await server.wait_closed()


async def test_a_counter_never_used_exists_not(aioseq_store: DynamoStore) -> None:
    assert not await aioseq_store.atomic_counter("never").exists()
    assert not await aioseq_store.sort_key_counter("never").exists()
    assert await aioseq_store.atomic_counter("used").next() == 1
    assert await aioseq_store.atomic_counter("used").exists()
    assert issubclass(CounterNotFound, LookupError)


# --- helpers ---------------------------------------------------------------------------------


def _name() -> str:
    import uuid

    return f"aioseq-adv-{uuid.uuid4().hex[:10]}"


async def _open(endpoint: str) -> DynamoStore:
    store = await DynamoStore.open(endpoint_url=endpoint, table=TableSpec(name=_name()))
    await store.create_table()
    return store
