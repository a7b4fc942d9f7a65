"""The AWS-like capacity model: its pure part with a fake clock, then through the fault proxy
against the real servers."""

from __future__ import annotations

import asyncio
import json
import signal
import sys
import time
from collections.abc import Iterator
from typing import Any

import pytest
from checks import assert_exactly, counter_item

from aioseq import (
    ConditionFailed,
    ConfigurationError,
    ConnectionFailed,
    DynamoStore,
    RetriesExhausted,
    RetryPolicy,
    ServiceUnavailable,
    Throttled,
    TransactionCanceled,
)
from aioseq.testing import CapacityModel
from aioseq.testing.capacity import (
    HOT_KEY_REASON,
    Admission,
    CapacityLedger,
    WriteAction,
    throttled_answer,
    write_actions,
    write_cost_wcu,
)
from aioseq.testing.fault_proxy import CAPACITY, Exchange, FaultProxy, FaultSchedule, main
from aioseq.testing.history import History


class Clock:
    """A clock that moves only when told (by binary fractions, so levels are exact)."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def key(pk: str, sk: int = 0) -> dict[str, Any]:
    return {"pk": {"S": pk}, "sk": {"N": str(sk)}}


def update(pk: str, table: str = "t") -> dict[str, Any]:
    return {"TableName": table, "Key": key(pk), "UpdateExpression": "ADD #v :n"}


def put(pk: str, payload_bytes: int = 0, table: str = "t", sk: int = 0) -> dict[str, Any]:
    return {"TableName": table, "Item": {**key(pk, sk), "p": {"S": "x" * payload_bytes}}}


def transact(*actions: tuple[str, dict[str, Any]]) -> dict[str, Any]:
    return {"TransactItems": [{kind: body} for kind, body in actions]}


def ledger(clock: Clock, **model: Any) -> CapacityLedger:
    return CapacityModel(**model).ledger(clock=clock)


# --- costs -----------------------------------------------------------------------------------

#: ``pk``/``sk``/``p`` names and values, and the number: what an item costs beyond its payload.
PUT_OVERHEAD = len("pk") + 1 + len("sk") + 2 + len("p")


@pytest.mark.parametrize(
    ("payload", "wcu"), [(0, 1), (1024 - PUT_OVERHEAD, 1), (1025 - PUT_OVERHEAD, 2), (5000, 5)]
)
def test_a_put_costs_its_size_in_kb_rounded_up(payload: int, wcu: int) -> None:
    [single] = write_actions("PutItem", put("a", payload))
    assert single.wcu == wcu
    [action] = write_actions("TransactWriteItems", transact(("Put", put("a", payload))))
    assert action.wcu == 2 * wcu


def test_updates_deletes_and_condition_checks_cost_one_wcu_twice_in_a_transaction() -> None:
    body = update("a")
    assert [a.wcu for a in write_actions("UpdateItem", body)] == [1]
    assert [a.wcu for a in write_actions("DeleteItem", body)] == [1]
    both = transact(
        ("Update", update("a")), ("Delete", update("b")), ("ConditionCheck", update("c"))
    )
    assert [a.wcu for a in write_actions("TransactWriteItems", both)] == [2, 2, 2]
    assert write_cost_wcu(0) == 1 and write_cost_wcu(2049, transactional=True) == 6


@pytest.mark.parametrize(
    ("operation", "body"),
    [
        ("GetItem", {"TableName": "t", "Key": key("a")}),
        ("Query", {"TableName": "t"}),
        ("TransactGetItems", {"TransactItems": [{"Get": {"TableName": "t", "Key": key("a")}}]}),
        ("BatchWriteItem", {"RequestItems": {"t": [{"PutRequest": {"Item": key("a")}}]}}),
        ("UpdateItem", {"Key": key("a")}),  # no table: DynamoDB refuses it
        ("PutItem", {"TableName": "t", "Item": {"pk": {}}}),  # not an AttributeValue
        ("TransactWriteItems", {"TransactItems": [{"Bogus": {}}]}),
    ],
)
def test_reads_batches_and_malformed_requests_are_not_budgeted(
    operation: str, body: dict[str, Any]
) -> None:
    assert write_actions(operation, body) == []
    budgets = ledger(Clock(), item_wcu_per_sec=1, burst_secs=1)
    for _ in range(5):
        assert budgets.admit(operation, body).admitted
    assert budgets.charged_wcu == 0


def test_a_put_is_keyed_by_its_primary_key_once_the_tables_key_is_known() -> None:
    first, second = put("a", 10), put("a", 20)
    unknown = write_actions("PutItem", first) + write_actions("PutItem", second)
    assert unknown[0].key != unknown[1].key  # each distinct item is its own budget
    known = {"t": frozenset({"pk", "sk"})}
    keyed = write_actions("PutItem", first, known) + write_actions("PutItem", second, known)
    assert keyed[0].key == keyed[1].key == write_actions("UpdateItem", update("a"))[0].key
    assert write_actions("PutItem", put("a", 10, sk=1), known)[0].key != keyed[0].key


def test_the_ledger_learns_key_attributes_from_traffic() -> None:
    budgets = ledger(Clock())
    create = {"TableName": "c", "KeySchema": [{"AttributeName": "id", "KeyType": "HASH"}]}
    budgets.learn("CreateTable", create)
    described = {"Table": {"TableName": "d", "KeySchema": [{"AttributeName": "pk"}]}}
    budgets.learn("DescribeTable", {"TableName": "d"}, described)
    budgets.learn("TransactWriteItems", transact(("Update", update("a", table="u"))))
    assert budgets.key_names == {
        "c": frozenset({"id"}),
        "d": frozenset({"pk"}),
        "u": frozenset({"pk", "sk"}),
    }


# --- buckets ---------------------------------------------------------------------------------


def test_an_item_takes_its_burst_at_once_then_its_rate() -> None:
    clock = Clock()
    budgets = ledger(clock, item_wcu_per_sec=8, burst_secs=0.5)  # 4 WCU
    assert [budgets.admit("UpdateItem", update("a")).admitted for _ in range(5)] == [
        *[True] * 4,
        False,
    ]
    clock.now += 0.0625  # half a WCU
    assert not budgets.admit("UpdateItem", update("a")).admitted
    clock.now += 0.0625
    admitted = budgets.admit("UpdateItem", update("a"))
    assert admitted.admitted and admitted.wcu == 1
    assert not budgets.admit("UpdateItem", update("a")).admitted
    clock.now += 60.0  # an idle bucket fills to its size, no more
    assert budgets.level("t", admitted.actions[0].key) == 4.0
    assert sum(budgets.admit("UpdateItem", update("a")).admitted for _ in range(9)) == 4
    assert (budgets.admitted, budgets.throttled, budgets.charged_wcu) == (9, 8, 9.0)


def test_a_throttled_request_consumes_nothing() -> None:
    clock = Clock()
    budgets = ledger(clock, item_wcu_per_sec=8, burst_secs=0.125)  # 1 WCU
    assert budgets.admit("UpdateItem", update("a")).admitted
    for _ in range(64):  # hammering while empty does not push the item into debt
        clock.now += 0.0009765625
        assert budgets.admit("UpdateItem", update("a")) == Admission(
            "UpdateItem", (WriteAction("t", write_actions("UpdateItem", update("a"))[0].key, 1),),
            (0,), 0.0,
        )  # fmt: skip
    clock.now += 0.0625  # 0.125 s after the admitted one: one WCU again
    assert budgets.admit("UpdateItem", update("a")).admitted


def test_items_and_tables_have_budgets_of_their_own() -> None:
    budgets = ledger(Clock(), item_wcu_per_sec=8, burst_secs=0.125)
    budgets.learn("UpdateItem", update("a"))  # table t's key: pk, sk
    assert budgets.admit("UpdateItem", update("a")).admitted
    assert not budgets.admit("UpdateItem", update("a")).admitted
    assert not budgets.admit("PutItem", put("a", 10)).admitted  # the same item, put whole
    assert budgets.admit("UpdateItem", update("b")).admitted
    assert budgets.admit("UpdateItem", update("a", table="other")).admitted
    assert budgets.admit("PutItem", put("a", sk=1)).admitted  # another item of partition a


def test_a_request_larger_than_the_bucket_passes_once_its_cost_has_accrued() -> None:
    clock = Clock()
    budgets = ledger(clock, item_wcu_per_sec=8, burst_secs=0.125)  # 1 WCU; a 3 KB put: 3
    big = put("a", 3000)
    assert budgets.admit("PutItem", big).wcu == 3  # a fresh item holds one request's cost
    clock.now += 0.25
    assert not budgets.admit("PutItem", big).admitted
    clock.now += 0.125
    assert budgets.admit("PutItem", big).admitted
    clock.now += 10.0  # and a full bucket holds its own size, for smaller requests
    assert [budgets.admit("UpdateItem", update("a")).admitted for _ in range(2)] == [True, False]


def test_an_over_budget_transaction_names_each_throttled_action_and_charges_none() -> None:
    budgets = ledger(Clock(), item_wcu_per_sec=8, burst_secs=0.375)  # 3 WCU
    assert budgets.admit("UpdateItem", update("hot")).admitted  # 2 WCU left
    assert budgets.admit("UpdateItem", update("warm")).admitted
    assert budgets.admit("UpdateItem", update("warm")).admitted  # 1 WCU left
    request = transact(
        ("Put", put("cold", 10)),
        ("Update", update("hot")),  # 2 WCU: fits
        ("ConditionCheck", update("warm")),  # 2 WCU: over
        ("Delete", update("other")),
    )
    decision = budgets.admit("TransactWriteItems", request)
    assert not decision.admitted and decision.over_budget == (2,) and decision.wcu == 0
    hot = write_actions("UpdateItem", update("hot"))[0].key
    assert budgets.level("t", hot) == 2.0  # the action that fitted: not charged
    status, body = throttled_answer(decision)
    assert status == 400
    assert body["__type"].endswith("#TransactionCanceledException")
    assert [r["Code"] for r in body["CancellationReasons"]] == [
        "None",
        "None",
        "ThrottlingError",
        "None",
    ]
    assert "hot key" in body["CancellationReasons"][2]["Message"]
    assert "[None, None, ThrottlingError, None]" in body["Message"]
    request["TransactItems"].pop(2)
    assert budgets.admit("TransactWriteItems", request).wcu == 6
    assert budgets.level("t", hot) == 0.0


def test_a_throttled_single_write_is_answered_like_a_hot_key_in_aws() -> None:
    budgets = ledger(Clock(), item_wcu_per_sec=1, burst_secs=1)
    assert budgets.admit("DeleteItem", update("a")).admitted
    status, body = throttled_answer(budgets.admit("DeleteItem", update("a")), region="eu-west-1")
    assert status == 400
    assert body["__type"] == (
        "com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException"
    )
    assert body["ThrottlingReasons"] == [
        {"reason": HOT_KEY_REASON, "resource": "arn:aws:dynamodb:eu-west-1:000000000000:table/t"}
    ]
    with pytest.raises(ValueError, match="admitted"):
        throttled_answer(budgets.admit("GetItem", {"TableName": "t", "Key": key("a")}))


def test_round_trips_are_seeded_draws_within_the_range() -> None:
    def draws(seed: int) -> list[float]:
        budgets = ledger(Clock(), round_trip_secs=(0.002, 0.006), seed=seed)
        return [budgets.round_trip_secs() for _ in range(200)]

    assert draws(1) == draws(1) != draws(2)
    assert all(0.002 <= d <= 0.006 for d in draws(1))
    assert max(draws(1)) - min(draws(1)) > 0.003  # spread over the range, not a constant
    assert ledger(Clock(), round_trip_secs=[0.01, 0.01]).round_trip_secs() == 0.01


@pytest.mark.parametrize(
    "bad",
    [
        {"item_wcu_per_sec": 0},
        {"item_wcu_per_sec": -5.0},
        {"item_wcu_per_sec": float("inf")},
        {"item_wcu_per_sec": True},
        {"item_wcu_per_sec": "100"},
        {"burst_secs": -0.1},
        {"burst_secs": float("nan")},
        {"round_trip_secs": (0.01,)},
        {"round_trip_secs": (0.02, 0.01)},
        {"round_trip_secs": (-0.01, 0.01)},
        {"round_trip_secs": "0.01"},
        {"seed": 1.5},
    ],
)
def test_bad_models_are_refused(bad: dict[str, Any]) -> None:
    with pytest.raises(ConfigurationError):
        CapacityModel(**bad)


def test_the_default_model_is_aws_per_partition_limit() -> None:
    model = CapacityModel()
    assert model.item_wcu_per_sec == 1000 and model.bucket_wcu == pytest.approx(100)
    assert model.round_trip_secs == (0.0, 0.0)
    assert CapacityModel(burst_secs=0).bucket_wcu == 0  # still one request at a time


# --- through the proxy, against the servers ---------------------------------------------------


@pytest.fixture
def exchanges() -> list[Exchange]:
    return []


def proxy_with(
    endpoint: str, model: CapacityModel, exchanges: list[Exchange] | None = None
) -> FaultProxy:
    return FaultProxy(
        endpoint, capacity=model, on_exchange=exchanges.append if exchanges is not None else None
    )


@pytest.fixture
def hot_proxy(aioseq_endpoint: str) -> Iterator[FaultProxy]:
    """50 WCU/s per item (5 WCU of burst), with a few milliseconds of round trip."""
    model = CapacityModel(item_wcu_per_sec=50, round_trip_secs=(0.002, 0.006), seed=1)
    with FaultProxy(aioseq_endpoint, capacity=model) as proxy:
        yield proxy


async def test_a_hot_counter_is_held_to_the_item_budget_and_its_numbers_stay_exact(
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

        async def task(i: int) -> None:
            while time.monotonic() - started < run_secs:
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
    budget = 50 * elapsed + 5  # the rate, plus the burst of a fresh item
    assert 0.5 * 50 * run_secs <= len(numbers) <= budget
    assert hot_proxy.consumed_wcu == len(numbers)


async def test_a_transaction_over_budget_is_canceled_with_throttling_error_at_its_action(
    aioseq_store: DynamoStore, aioseq_endpoint: str, exchanges: list[Exchange]
) -> None:
    table = aioseq_store.table.name
    model = CapacityModel(item_wcu_per_sec=10, burst_secs=0.2)  # 2 WCU
    with proxy_with(aioseq_endpoint, model, exchanges) as proxy:
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
                await store.call("update_item", **add("hot"))
            items = [{"Update": add("cold")}, {"Update": add("hot")}, {"Put": put("new", 10)}]
            items[2]["Put"]["TableName"] = table
            with pytest.raises(TransactionCanceled) as canceled:
                await store.call("transact_write_items", TransactItems=items)
            assert canceled.value.codes == ["None", "ThrottlingError", "None"]
            assert "hot key" in canceled.value.cancellation_reasons[1]["Message"]
            assert proxy.throttled == {"TransactWriteItems": 1}
            assert await counter_item(aioseq_store, "cold") is None  # nothing was written
            await asyncio.sleep(0.25)  # 2 WCU again
            await store.call("transact_write_items", TransactItems=items)
    assert await counter_item(aioseq_store, "cold") is not None
    throttled = [e for e in exchanges if e.fault == CAPACITY]
    assert len(throttled) == 1 and throttled[0].status is None and not throttled[0].delivered


async def test_a_write_whose_condition_fails_still_consumes_capacity(
    aioseq_store: DynamoStore, aioseq_endpoint: str, exchanges: list[Exchange]
) -> None:
    model = CapacityModel(item_wcu_per_sec=1, burst_secs=2)  # 2 WCU, 1 more per second
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
                    await store.call("put_item", **request)
            with pytest.raises(Throttled) as throttled:
                await store.call("put_item", **request)
    assert throttled.value.code == "ProvisionedThroughputExceededException"
    assert proxy.throttled == {"PutItem": 1} and proxy.consumed_wcu == 2
    assert [e.fault for e in exchanges] == [None, None, CAPACITY]
    assert [e.status for e in exchanges] == [400, 400, None]  # the third never reached it


async def test_the_schedule_decides_first_and_a_lost_answer_over_budget_applies_nothing(
    aioseq_store: DynamoStore, aioseq_endpoint: str
) -> None:
    model = CapacityModel(item_wcu_per_sec=1, burst_secs=1)  # 1 WCU, 1 more per second
    with FaultProxy(
        aioseq_endpoint, FaultSchedule({"internal-error": 1.0}), capacity=model
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
            proxy.set_schedule(FaultSchedule({"response-lost": 1.0}))
            for _ in range(2):  # the client sees a reset either way
                with pytest.raises(RetriesExhausted) as lost:
                    await counter.next()
                assert isinstance(lost.value.last_error, ConnectionFailed)
    assert proxy.injected == {"internal-error": 3, "response-lost": 2}
    assert proxy.throttled == {"UpdateItem": 1}  # the second: over budget, so not applied
    assert await aioseq_store.atomic_counter("c").current() == 1


async def test_half_the_round_trip_comes_before_the_server_and_half_after(
    aioseq_store: DynamoStore, aioseq_endpoint: str
) -> None:
    model = CapacityModel(round_trip_secs=(0.6, 0.6))
    with FaultProxy(aioseq_endpoint, capacity=model) as proxy:
        async with DynamoStore.open(
            table=aioseq_store.table, endpoint_url=proxy.endpoint_url
        ) as store:
            started = time.monotonic()
            write = asyncio.ensure_future(store.atomic_counter("c").next())
            try:
                await asyncio.sleep(0.15)
                assert await counter_item(aioseq_store, "c") is None  # still on its way there
                await asyncio.sleep(0.3)
                assert await counter_item(aioseq_store, "c") is not None  # applied...
                assert not write.done()  # ...and the answer is on its way back
                assert await write == 1
                assert time.monotonic() - started >= 0.6
            finally:  # a failed assertion leaves no task behind
                write.cancel()
                await asyncio.gather(write, return_exceptions=True)


async def test_the_capacity_model_runs_from_the_command_line(
    aioseq_store: DynamoStore, aioseq_endpoint: str
) -> None:
    command = [sys.executable, "-m", "aioseq.testing.fault_proxy", "--target", aioseq_endpoint]
    proxy = await asyncio.create_subprocess_exec(
        *command, "--rate", "0", "--item-wcu-per-sec", "1", "--burst-secs", "2",
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
        ["--item-wcu-per-sec", "0"],
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
    assert option[0].strip("-").replace("-", "_").removesuffix("_ms") in error.replace("-", "_")
