"""The AWS-like capacity model through the fault proxy, against the real servers. Its pure part:
``tests/unit/test_capacity_model.py``."""

from __future__ import annotations

import asyncio
import json
import signal
import sys
import time
from collections.abc import Iterator
from typing import Any

import pytest
from checks import Clock, assert_exactly, counter_item, until

from aioseq import (
    ConditionFailed,
    ConnectionFailed,
    DynamoStore,
    RetriesExhausted,
    RetryPolicy,
    ServiceUnavailable,
    Throttled,
    TransactionCanceled,
)
from aioseq.testing import CapacityModel
from aioseq.testing.fault_proxy import CAPACITY, Exchange, FaultProxy, FaultSchedule, main
from verification.history import History


def key(pk: str, sk: int = 0) -> dict[str, Any]:
    return {"pk": {"S": pk}, "sk": {"N": str(sk)}}


def put(pk: str, payload_bytes: int = 0, table: str = "t", sk: int = 0) -> dict[str, Any]:
    return {"TableName": table, "Item": {**key(pk, sk), "p": {"S": "x" * payload_bytes}}}


# --- through the proxy, against the servers ---------------------------------------------------


@pytest.fixture
def exchanges() -> list[Exchange]:
    return []


def proxy_with(
    endpoint: str,
    model: CapacityModel,
    exchanges: list[Exchange] | None = None,
    *,
    clock: Clock | None = None,
) -> FaultProxy:
    return FaultProxy(
        endpoint,
        capacity=model,
        on_exchange=exchanges.append if exchanges is not None else None,
        clock=clock or Clock(),
    )


@pytest.fixture
def hot_proxy(aioseq_endpoint: str) -> Iterator[FaultProxy]:
    """20 WCU/s per partition (2 WCU of burst), with a few milliseconds of round trip: below
    what a loaded machine's server serves one counter."""
    model = CapacityModel(partition_wcu_per_sec=20, round_trip_secs=(0.002, 0.006), seed=1)
    with FaultProxy(aioseq_endpoint, capacity=model) as proxy:
        yield proxy


async def test_a_hot_counter_is_held_to_its_partitions_budget_and_its_numbers_stay_exact(
    aioseq_store: DynamoStore, hot_proxy: FaultProxy
) -> None:
    history = History()
    hot_proxy.on_exchange = history.observe
    run_secs = 1.5
    async with DynamoStore.open(
        table=aioseq_store.table,
        endpoint_url=hot_proxy.endpoint_url,
        retry_policy=RetryPolicy(max_attempts=1000, max_backoff_secs=0.05),
    ) as store:
        counter = store.atomic_counter("c")
        started = time.monotonic()

        def running() -> bool:
            # At least run_secs; longer (up to 10 s) while no request was throttled yet: a
            # slow server (a loaded machine) may stay under the budget for a while.
            elapsed = time.monotonic() - started
            return elapsed < run_secs or (not hot_proxy.throttled["UpdateItem"] and elapsed < 10)

        async def task(i: int) -> None:
            while running():
                await history.take(counter.next, strategy="atomic", counter="c", process="", task=i)

        await asyncio.gather(*(task(i) for i in range(8)))
        elapsed = time.monotonic() - started
    numbers = [n for c in history.calls if c.numbers is not None for n in c.numbers]
    assert_exactly(numbers, 1, len(numbers))  # every throttled ADD was retried, none applied
    top = await aioseq_store.atomic_counter("c").current()
    assert top == len(numbers)
    report = history.check("atomic", "c", top=top)
    assert report.ok and not report.gaps, report
    throttles = hot_proxy.throttled["UpdateItem"]
    assert throttles > 0 and counter.statistics().retries == {
        "ProvisionedThroughputExceededException": throttles
    }
    budget = 20 * elapsed + 2  # the rate, plus the burst of a fresh partition
    # Past the burst: the budget refills (how near the rate a loaded machine gets is a
    # benchmark's question, not this test's).
    assert 5 < len(numbers) <= budget
    assert hot_proxy.consumed_wcu == len(numbers)


async def test_a_transaction_over_budget_is_canceled_with_throttling_error_at_its_action(
    aioseq_store: DynamoStore, aioseq_endpoint: str, exchanges: list[Exchange]
) -> None:
    table = aioseq_store.table.name
    model = CapacityModel(partition_wcu_per_sec=10, burst_secs=0.2)  # 2 WCU
    clock = Clock()
    with proxy_with(aioseq_endpoint, model, exchanges, clock=clock) as proxy:
        async with DynamoStore.open(
            table=aioseq_store.table, endpoint_url=proxy.endpoint_url
        ) as store:

            def add(pk: str) -> dict[str, Any]:
                return {
                    "TableName": table,
                    "Key": key(pk),
                    "UpdateExpression": "ADD #v :one",
                    "ExpressionAttributeNames": {"#v": "value"},
                    "ExpressionAttributeValues": {":one": {"N": "1"}},
                }

            for _ in range(2):  # the hot item's bucket is empty after these
                await store.send_once("update_item", **add("hot"))
            items = [{"Update": add("cold")}, {"Update": add("hot")}, {"Put": put("new", 10)}]
            items[2]["Put"]["TableName"] = table
            with pytest.raises(TransactionCanceled) as canceled:
                await store.send_once("transact_write_items", TransactItems=items)
            assert canceled.value.codes == ["None", "ThrottlingError", "None"]
            assert "hot key" in canceled.value.cancellation_reasons[1]["Message"]
            assert proxy.throttled == {"TransactWriteItems": 1}
            assert await counter_item(aioseq_store, "cold") is None  # nothing was written
            clock.now += 0.25  # 2 WCU again
            await store.send_once("transact_write_items", TransactItems=items)
    assert await counter_item(aioseq_store, "cold") is not None
    throttled = [e for e in exchanges if e.fault == CAPACITY]
    assert len(throttled) == 1 and throttled[0].status is None and not throttled[0].delivered


async def test_a_write_whose_condition_fails_still_consumes_capacity(
    aioseq_store: DynamoStore, aioseq_endpoint: str, exchanges: list[Exchange]
) -> None:
    model = CapacityModel(partition_wcu_per_sec=1, burst_secs=2)  # 2 WCU, 1 more per second
    with proxy_with(aioseq_endpoint, model, exchanges) as proxy:
        async with DynamoStore.open(
            table=aioseq_store.table, endpoint_url=proxy.endpoint_url
        ) as store:
            request = {
                "TableName": aioseq_store.table.name,
                "Item": key("c"),
                "ConditionExpression": "attribute_exists(pk)",
            }
            for _ in range(2):
                with pytest.raises(ConditionFailed):
                    await store.send_once("put_item", **request)
            with pytest.raises(Throttled) as throttled:
                await store.send_once("put_item", **request)
    assert throttled.value.code == "ProvisionedThroughputExceededException"
    assert proxy.throttled == {"PutItem": 1} and proxy.consumed_wcu == 2
    assert [e.fault for e in exchanges] == [None, None, CAPACITY]
    assert [e.status for e in exchanges] == [400, 400, None]  # the third never reached it


async def test_the_schedule_decides_first_and_a_lost_answer_over_budget_applies_nothing(
    aioseq_store: DynamoStore, aioseq_endpoint: str
) -> None:
    model = CapacityModel(partition_wcu_per_sec=1, burst_secs=1)  # 1 WCU, 1 more per second
    with FaultProxy(
        aioseq_endpoint,
        FaultSchedule({"internal-error": 1.0}, operations=frozenset({"UpdateItem"})),
        capacity=model,
    ) as proxy:
        async with DynamoStore.open(
            table=aioseq_store.table,
            endpoint_url=proxy.endpoint_url,
            retry_policy=RetryPolicy(max_attempts=1),
        ) as store:
            counter = store.atomic_counter("c")
            for _ in range(3):  # failed by the schedule: never reached DynamoDB, never charged
                with pytest.raises(RetriesExhausted) as failed:
                    await counter.next()
                assert isinstance(failed.value.last_error, ServiceUnavailable)
            assert proxy.consumed_wcu == 0 and not proxy.throttled
            proxy.set_schedule(
                FaultSchedule({"response-lost": 1.0}, operations=frozenset({"UpdateItem"}))
            )
            for _ in range(2):  # the client sees a reset either way
                with pytest.raises(RetriesExhausted) as lost:
                    await counter.next()
                assert isinstance(lost.value.last_error, ConnectionFailed)
    assert proxy.injected == {"internal-error": 3, "response-lost": 2}
    assert proxy.throttled == {"UpdateItem": 1}  # the second: over budget, so not applied
    assert await aioseq_store.atomic_counter("c").current() == 1


def conditional_put(table: str, pk: str, sk: int) -> dict[str, Any]:
    return {
        "TableName": table,
        "Item": {**key(pk, sk), "order": {"S": f"order {sk}"}},
        "ConditionExpression": "attribute_not_exists(pk)",
    }


async def test_items_that_share_a_partition_key_share_its_budget(
    aioseq_store: DynamoStore, aioseq_endpoint: str
) -> None:
    # The table was created before the proxy ran: the proxy asks DescribeTable for its key.
    table = aioseq_store.table.name
    model = CapacityModel(partition_wcu_per_sec=200)  # 20 WCU of burst, and the clock stands
    with proxy_with(aioseq_endpoint, model) as proxy:
        async with DynamoStore.open(
            table=aioseq_store.table,
            endpoint_url=proxy.endpoint_url,
            retry_policy=RetryPolicy(max_attempts=1),
        ) as store:
            beside: list[bool] = []
            for n in range(1, 31):  # beside the counter item, each a new item of partition c
                try:
                    await store.send_once("put_item", **conditional_put(table, "c", n))
                    beside.append(True)
                except Throttled:
                    beside.append(False)
            assert beside == [True] * 20 + [False] * 10
            for n in range(1, 31):  # the same puts, each in a partition of its own
                await store.send_once("put_item", **conditional_put(table, f"c#{n}", n))
    assert proxy.throttled == {"PutItem": 10} and proxy.consumed_wcu == 50


async def test_per_item_the_same_puts_each_have_a_budget(
    aioseq_store: DynamoStore, aioseq_endpoint: str
) -> None:
    table = aioseq_store.table.name
    model = CapacityModel(partition_wcu_per_sec=200, partition_by="item")
    with proxy_with(aioseq_endpoint, model) as proxy:
        async with DynamoStore.open(
            table=aioseq_store.table, endpoint_url=proxy.endpoint_url
        ) as store:
            for n in range(1, 31):
                await store.send_once("put_item", **conditional_put(table, "c", n))
    assert not proxy.throttled and proxy.consumed_wcu == 30


async def test_a_query_is_charged_to_its_partition_for_the_items_it_returns(
    aioseq_store: DynamoStore, aioseq_endpoint: str
) -> None:
    table = aioseq_store.table.name
    big = "x" * 5000  # two read units each, strongly consistent
    for n in range(1, 4):
        item = {**key("c", n), "p": {"S": big}}
        await aioseq_store.send_once("put_item", TableName=table, Item=item)
    model = CapacityModel(partition_rcu_per_sec=50, burst_secs=0.1)  # 5 RCU, the clock stands
    with proxy_with(aioseq_endpoint, model) as proxy:
        async with DynamoStore.open(
            table=aioseq_store.table,
            endpoint_url=proxy.endpoint_url,
            retry_policy=RetryPolicy(max_attempts=1),
        ) as store:
            request = {
                "TableName": table,
                "KeyConditionExpression": "pk = :c",
                "ExpressionAttributeValues": {":c": {"S": "c"}},
                "ConsistentRead": True,
            }
            answer = await store.send_once("query", **request)
            assert answer["Count"] == 3
            assert proxy.consumed_rcu == 4.0  # ~15 KB: ceil(15 / 4) RCU
            await store.send_once("query", **request)  # 1 RCU left: enough to start one
            assert proxy.consumed_rcu == 8.0  # and 3 RCU of debt now
            with pytest.raises(Throttled) as throttled:
                await store.send_once("get_item", TableName=table, Key=key("c", 1))
            await store.send_once("get_item", TableName=table, Key=key("other"))
    assert throttled.value.code == "ProvisionedThroughputExceededException"
    assert proxy.throttled == {"GetItem": 1}


async def _exists(store: DynamoStore, key: str) -> bool:
    return await counter_item(store, key) is not None


async def test_half_the_round_trip_comes_before_the_server_and_half_after(
    aioseq_store: DynamoStore, aioseq_endpoint: str
) -> None:
    # A second each way: the checks below take milliseconds, so they fall inside each half
    # even on a busy machine; each waits for what it checks, not for a guessed time.
    model = CapacityModel(round_trip_secs=(2.0, 2.0))
    with FaultProxy(aioseq_endpoint, capacity=model) as proxy:
        async with DynamoStore.open(
            table=aioseq_store.table, endpoint_url=proxy.endpoint_url
        ) as store:
            started = time.monotonic()
            write = asyncio.ensure_future(store.atomic_counter("c").next())
            try:
                await until(lambda: proxy.requests == 1)
                assert await counter_item(aioseq_store, "c") is None  # still on its way there
                await until(lambda: _exists(aioseq_store, "c"))  # applied...
                assert not write.done()  # ...and the answer is on its way back
                assert await write == 1
                assert time.monotonic() - started >= 2.0
            finally:  # a failed assertion leaves no task behind
                write.cancel()
                await asyncio.gather(write, return_exceptions=True)


async def test_the_capacity_model_runs_from_the_command_line(
    aioseq_store: DynamoStore, aioseq_endpoint: str
) -> None:
    command = [sys.executable, "-m", "aioseq.testing.fault_proxy", "--target", aioseq_endpoint]
    proxy = await asyncio.create_subprocess_exec(
        *command, "--rate", "0", "--partition-wcu-per-sec", "1", "--burst-secs", "2",
        "--round-trip-ms", "1-3", stdout=asyncio.subprocess.PIPE,
    )  # fmt: skip
    assert proxy.stdout is not None
    endpoint = (await proxy.stdout.readline()).decode().strip()
    async with DynamoStore.open(
        table=aioseq_store.table, endpoint_url=endpoint, retry_policy=RetryPolicy(max_attempts=1)
    ) as store:
        counter = store.atomic_counter("c")
        assert [await counter.next() for _ in range(2)] == [1, 2]
        with pytest.raises(RetriesExhausted) as raised:
            await counter.next()
        assert isinstance(raised.value.last_error, Throttled)
    proxy.send_signal(signal.SIGTERM)
    stdout, _ = await proxy.communicate()
    assert json.loads(stdout) == {CAPACITY: 1}


@pytest.mark.parametrize(
    "option",
    [
        ["--partition-wcu-per-sec", "0"],
        ["--item-wcu-per-sec", "0"],
        ["--partition-rcu-per-sec", "-3"],
        ["--burst-secs", "-1"],
        ["--round-trip-ms", "6-2"],
        ["--round-trip-ms", "fast"],
    ],
)
def test_bad_command_line_models_are_refused(
    option: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["--target", "http://127.0.0.1:9", *option])
    assert exited.value.code == 2
    error = capsys.readouterr().err.splitlines()[-1]
    assert error.startswith("python -m aioseq.testing.fault_proxy: error:")
    named = option[0].strip("-").replace("-", "_").removesuffix("_ms")
    if named == "item_wcu_per_sec":  # the per-item mode: a partition of its own for each item
        named = "partition_wcu_per_sec"
    assert named in error.replace("-", "_")


def test_one_write_budget_is_chosen_on_the_command_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["--target", "http://127.0.0.1:9"] + ["--partition-wcu-per-sec", "5"] * 1
             + ["--item-wcu-per-sec", "5"])  # fmt: skip
    assert exited.value.code == 2
    assert "not allowed with argument" in capsys.readouterr().err
