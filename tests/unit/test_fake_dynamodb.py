"""FakeDynamoDB answers as DynamoDB does for the requests aioseq sends, and fails on demand
exactly as the store's real transport fails (one error map: aioseq's ``translate``)."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest
from botocore.exceptions import ClientError, ParamValidationError, ReadTimeoutError

from aioseq import (
    ConditionFailed,
    ConfigurationError,
    ConnectionFailed,
    DynamoStore,
    ServiceUnavailable,
    StoreClosed,
    StoreError,
    TableNotFound,
    Throttled,
    TransactionCanceled,
)
from aioseq.errors import TransactionConflict
from aioseq.observe import Observer, RequestEvent
from aioseq.testing import FakeDynamoDB, FaultSchedule

TABLE = "aioseq"


def key(name: str) -> dict[str, Any]:
    return {"pk": {"S": name}, "sk": {"N": "0"}}


def add_one(name: str = "c", **extra: Any) -> dict[str, Any]:
    """``ADD value 1`` on item ``name``, answering with the new value."""
    return {
        "TableName": TABLE,
        "Key": key(name),
        "UpdateExpression": "ADD #v :one",
        "ExpressionAttributeNames": {"#v": "value"},
        "ExpressionAttributeValues": {":one": {"N": "1"}},
        "ReturnValues": "UPDATED_NEW",
        **extra,
    }


def below(limit: int) -> dict[str, Any]:
    """The condition ``value < limit`` (or no value yet), for `add_one`."""
    return {
        "ConditionExpression": "attribute_not_exists(#v) OR #v < :limit",
        "ExpressionAttributeValues": {":one": {"N": "1"}, ":limit": {"N": str(limit)}},
    }


def transaction(token: str | None, *names: str) -> dict[str, Any]:
    """One ``TransactWriteItems``: ``ADD value 1`` on each of ``names``."""
    items = [
        {
            "Update": {
                k: v
                for k, v in add_one(name).items()
                if k in ("TableName", "Key", "UpdateExpression", "ExpressionAttributeNames")
                or k == "ExpressionAttributeValues"
            }
        }
        for name in names
    ]
    params: dict[str, Any] = {"TransactItems": items}
    if token is not None:
        params["ClientRequestToken"] = token
    return params


def value(fake: FakeDynamoDB, name: str) -> int | None:
    for item in fake.items(TABLE):
        if item["pk"] == {"S": name}:
            return int(item["value"]["N"])
    return None


# --- DynamoDB's semantics --------------------------------------------------------------------


async def test_add_creates_then_increments_and_each_request_is_recorded(
    fake_store: DynamoStore, fake: FakeDynamoDB
) -> None:
    first = await fake_store.send_once("update_item", **add_one())
    second = await fake_store.send_once("update_item", **add_one())
    assert first["Attributes"] == {"value": {"N": "1"}}
    assert second["Attributes"] == {"value": {"N": "2"}}
    assert fake.requests == {"UpdateItem": 2}
    assert [(r.operation, r.applied, r.fault) for r in fake.sent] == [
        ("UpdateItem", True, None),
        ("UpdateItem", True, None),
    ]
    assert fake.sent[0].params == add_one()
    assert value(fake, "c") == 2


async def test_return_values_all_old_and_updated_new(fake_store: DynamoStore) -> None:
    put = {"TableName": TABLE, "Item": {**key("c"), "value": {"N": "7"}}}
    assert "Attributes" not in await fake_store.send_once("put_item", **put, ReturnValues="ALL_OLD")
    replaced = {"TableName": TABLE, "Item": {**key("c"), "value": {"N": "8"}}}
    old = await fake_store.send_once("put_item", **replaced, ReturnValues="ALL_OLD")
    assert old["Attributes"] == {**key("c"), "value": {"N": "7"}}
    new = await fake_store.send_once("update_item", **add_one())
    assert new["Attributes"] == {"value": {"N": "9"}}


async def test_a_failed_condition_applies_nothing_and_returns_the_item_when_asked(
    fake_store: DynamoStore, fake: FakeDynamoDB
) -> None:
    await fake_store.send_once("update_item", **add_one(**below(1)))
    with pytest.raises(ConditionFailed) as without:
        await fake_store.send_once("update_item", **add_one(**below(1)))
    assert without.value.item is None
    with pytest.raises(ConditionFailed) as with_item:
        await fake_store.send_once(
            "update_item",
            **add_one(**below(1), ReturnValuesOnConditionCheckFailure="ALL_OLD"),
        )
    assert with_item.value.item == {**key("c"), "value": {"N": "1"}}
    assert with_item.value.code == "ConditionalCheckFailedException"
    assert isinstance(with_item.value.__cause__, ClientError)
    assert value(fake, "c") == 1
    assert [r.applied for r in fake.sent] == [True, False, False]


async def test_a_canceled_transaction_gives_its_reasons_and_writes_nothing(
    fake_store: DynamoStore, fake: FakeDynamoDB
) -> None:
    await fake_store.send_once("update_item", **add_one("full"))
    params = transaction(None, "free", "full")
    condition = {
        "ConditionExpression": "attribute_not_exists(#v)",
        "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
    }
    params["TransactItems"][1]["Update"].update(condition)
    with pytest.raises(TransactionCanceled) as caught:
        await fake_store.send_once("transact_write_items", **params)
    assert caught.value.codes == ["None", "ConditionalCheckFailed"]
    assert caught.value.cancellation_reasons[1]["Item"] == {**key("full"), "value": {"N": "1"}}
    assert value(fake, "free") is None  # all or nothing
    assert value(fake, "full") == 1


async def test_a_missing_table_is_table_not_found(fake_store: DynamoStore) -> None:
    with pytest.raises(TableNotFound) as caught:
        await fake_store.send_once("get_item", TableName="nope", Key=key("c"))
    assert caught.value.tables == ("nope",)


# --- ClientRequestToken ----------------------------------------------------------------------


async def test_a_token_replayed_with_the_same_request_succeeds_without_applying_again(
    fake_store: DynamoStore, fake: FakeDynamoDB
) -> None:
    params = transaction("token-1", "a", "b")
    await fake_store.send_once("transact_write_items", **params)
    await fake_store.send_once("transact_write_items", **params)
    assert (value(fake, "a"), value(fake, "b")) == (1, 1)
    assert fake.requests == {"TransactWriteItems": 2}


async def test_tokens_can_be_ignored_as_moto_ignores_them() -> None:
    fake = FakeDynamoDB(honour_tokens=False)
    async with DynamoStore(transport=fake) as store:
        await store.create_table()
        params = transaction("token-1", "a")
        await store.send_once("transact_write_items", **params)
        await store.send_once("transact_write_items", **params)
    assert value(fake, "a") == 2


async def test_a_token_reused_with_another_request_is_a_mismatch(
    fake_store: DynamoStore, fake: FakeDynamoDB
) -> None:
    await fake_store.send_once("transact_write_items", **transaction("token-1", "a"))
    with pytest.raises(StoreError) as caught:
        await fake_store.send_once("transact_write_items", **transaction("token-1", "b"))
    assert caught.value.code == "IdempotentParameterMismatchException"
    assert value(fake, "b") is None


async def test_a_token_is_forgotten_after_ten_minutes() -> None:
    now = [0.0]
    fake = FakeDynamoDB(clock=lambda: now[0])
    async with DynamoStore(transport=fake) as store:
        await store.create_table()
        params = transaction("token-1", "a")
        await store.send_once("transact_write_items", **params)
        now[0] = 599.0
        await store.send_once("transact_write_items", **params)
        assert value(fake, "a") == 1
        now[0] = 600.0
        await store.send_once("transact_write_items", **params)
        assert value(fake, "a") == 2


async def test_a_canceled_transaction_does_not_keep_its_token(
    fake_store: DynamoStore, fake: FakeDynamoDB
) -> None:
    fake.inject("transaction-conflict", operation="TransactWriteItems")
    params = transaction("token-1", "a")
    with pytest.raises(TransactionCanceled):
        await fake_store.send_once("transact_write_items", **params)
    await fake_store.send_once("transact_write_items", **params)
    assert value(fake, "a") == 1


# --- faults ----------------------------------------------------------------------------------

REFUSED = [
    ("throughput-exceeded", Throttled, "ProvisionedThroughputExceededException"),
    ("throttling", Throttled, "ThrottlingException"),
    ("internal-error", ServiceUnavailable, "InternalServerError"),
    ("http-500", ServiceUnavailable, "500"),
    ("transaction-conflict", TransactionConflict, "TransactionConflictException"),
]


@pytest.mark.parametrize(("kind", "error", "code"), REFUSED)
async def test_a_refusing_fault_applies_nothing_and_raises_the_mapped_error(
    fake_store: DynamoStore, fake: FakeDynamoDB, kind: str, error: type[StoreError], code: str
) -> None:
    fake.inject(kind, operation="UpdateItem")
    with pytest.raises(error) as caught:
        await fake_store.send_once("update_item", **add_one())
    assert caught.value.code == code
    assert isinstance(caught.value.__cause__, ClientError)
    assert caught.value.retryable
    assert value(fake, "c") is None
    assert fake.injected == {kind: 1}
    assert [r.applied for r in fake.sent] == [False]
    await fake_store.send_once("update_item", **add_one())  # the next one passes
    assert value(fake, "c") == 1


async def test_a_transaction_conflict_on_a_transaction_is_a_cancellation_reason(
    fake_store: DynamoStore, fake: FakeDynamoDB
) -> None:
    fake.inject("transaction-conflict")
    with pytest.raises(TransactionCanceled) as caught:
        await fake_store.send_once("transact_write_items", **transaction("t", "a", "b"))
    assert sorted(caught.value.codes) == ["None", "TransactionConflict"]
    assert value(fake, "a") is None


@pytest.mark.parametrize("kind", ["response-lost", "delay"])
async def test_a_lost_answer_is_applied_and_raises_connection_failed(
    fake_store: DynamoStore, fake: FakeDynamoDB, kind: str
) -> None:
    fake.inject(kind, operation="UpdateItem")
    with pytest.raises(ConnectionFailed) as caught:
        await fake_store.send_once("update_item", **add_one())
    assert caught.value.maybe_applied
    assert isinstance(caught.value.__cause__, ReadTimeoutError)
    assert value(fake, "c") == 1
    assert [r.applied for r in fake.sent] == [True]
    assert [(op, answer["Attributes"]) for op, _, answer in fake.lost] == [
        ("UpdateItem", {"value": {"N": "1"}})
    ]


async def test_a_reset_is_not_applied_but_the_caller_cannot_tell(
    fake_store: DynamoStore, fake: FakeDynamoDB
) -> None:
    fake.inject("reset")
    with pytest.raises(ConnectionFailed) as caught:
        await fake_store.send_once("update_item", **add_one())
    assert caught.value.maybe_applied
    assert value(fake, "c") is None
    assert not fake.lost


async def test_planned_faults_skip_count_and_match(
    fake_store: DynamoStore, fake: FakeDynamoDB
) -> None:
    fake.inject("throttling", operation="UpdateItem", skip=1, times=2)
    fake.inject("internal-error", when=lambda params: params.get("Key") == key("b"))
    outcomes = []
    for name in ("a", "a", "b", "a", "b", "a"):
        try:
            await fake_store.send_once("update_item", **add_one(name))
            outcomes.append("ok")
        except StoreError as exc:
            outcomes.append(exc.code)
    assert outcomes == [
        "ok",
        "ThrottlingException",
        "ThrottlingException",
        "ok",
        "InternalServerError",
        "ok",
    ]
    assert fake.planned == []
    assert fake.injected == {"throttling": 2, "internal-error": 1}


async def test_a_schedule_draws_faults_for_its_operations_only() -> None:
    fake = FakeDynamoDB(
        schedule=FaultSchedule.uniform(1.0, kinds=["throttling"], operations={"UpdateItem"})
    )
    async with DynamoStore(transport=fake) as store:
        await store.create_table()  # CreateTable and DescribeTable are not covered
        with pytest.raises(Throttled):
            await store.send_once("update_item", **add_one())
        await store.send_once("get_item", TableName=TABLE, Key=key("c"))
    assert fake.injected == {"throttling": 1}


def test_an_unknown_kind_or_operation_is_refused() -> None:
    fake = FakeDynamoDB()
    with pytest.raises(ConfigurationError, match="unknown fault kind"):
        fake.inject("gremlins")
    with pytest.raises(ConfigurationError, match="API name"):
        fake.inject("throttling", operation="update_item")
    with pytest.raises(ConfigurationError):
        fake.inject("throttling", times=0)


# --- the Transport contract ------------------------------------------------------------------


async def test_requests_are_validated_as_botocore_validates_them(
    fake_store: DynamoStore, fake: FakeDynamoDB
) -> None:
    with pytest.raises(ConfigurationError, match="'update_item'"):
        await fake_store.send_once("UpdateItem", **add_one())
    with pytest.raises(ParamValidationError):
        await fake_store.send_once("update_item", TableName=TABLE, Key="not a key")
    with pytest.raises(ParamValidationError):  # also what is sent unchecked
        await fake.send("update_item", {"TableName": TABLE})
    assert fake.requests == {}


async def test_a_closed_fake_refuses_requests_and_its_tables_stay_readable() -> None:
    fake = FakeDynamoDB()
    store = DynamoStore(transport=fake)
    await store.create_table()
    await store.send_once("update_item", **add_one())
    await store.aclose()
    with pytest.raises(StoreClosed):
        await fake.send("update_item", add_one())
    assert value(fake, "c") == 1
    assert fake.loop is None and fake.client is None
    assert "closed" in repr(fake)


async def test_each_fake_has_tables_of_its_own(fake_store: DynamoStore, fake: FakeDynamoDB) -> None:
    await fake_store.send_once("update_item", **add_one())
    other = FakeDynamoDB()
    with pytest.raises(TableNotFound):
        other.items(TABLE)
    async with DynamoStore(transport=other) as second:
        await second.create_table()
        assert other.items(TABLE) == []


async def test_the_observer_hears_of_every_request() -> None:
    class Recorder(Observer):
        def __init__(self) -> None:
            self.events: list[RequestEvent] = []

        def on_request(self, event: RequestEvent) -> None:
            self.events.append(event)

    recorder = Recorder()
    fake = FakeDynamoDB(observer=recorder, table_name=TABLE)
    async with DynamoStore(transport=fake) as store:
        assert store.observer is recorder
        await store.create_table()
        await store.send_once("update_item", **add_one())
        fake.inject("throttling")
        with pytest.raises(Throttled):
            await store.send_once("update_item", **add_one())
    seen = [(e.operation, e.error) for e in recorder.events]
    assert seen[-2:] == [("UpdateItem", None), ("UpdateItem", "ThrottlingException")]
    assert recorder.events[-2].consumed_capacity_units is not None


def test_importing_aioseq_testing_does_not_import_moto() -> None:
    code = "import sys, aioseq.testing; print('moto' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.stdout.strip() == "False", result.stderr
