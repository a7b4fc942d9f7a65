"""BotocoreTransport with no server: a real aiobotocore client (botocore serializes, signs and
parses every request) whose requests a botocore ``before-send`` hook answers in the process,
with DynamoDB's own answers and errors, or fails as botocore's HTTP layer fails. What is
checked: what was sent, what the observer heard, the errors raised, the requests counted, and
a close that waits for the requests in flight or cuts them off."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator, Awaitable
from contextlib import AsyncExitStack
from typing import Any

import aiohttp
import pytest
import pytest_asyncio
from botocore.exceptions import (
    ConnectTimeoutError,
    EndpointConnectionError,
    ParamValidationError,
    ReadTimeoutError,
)

from aioseq import (
    ConditionFailed,
    ConfigurationError,
    ConnectionFailed,
    EndpointDown,
    EndpointUnreachable,
    ServiceUnavailable,
    StoreClosed,
    StoreError,
    TableNotFound,
    Throttled,
    TransactionCanceled,
)
from aioseq._client import _new_session, open_client
from aioseq._transport import BotocoreTransport
from aioseq.errors import TransactionConflict, ValidationFailed
from aioseq.observe import Observer, RequestEvent, StatisticsObserver
from aioseq.testing import ManualClock

#: Nothing listens there: a request the hook does not answer fails to connect.
NOWHERE = "http://127.0.0.1:1"
TABLE = "t"
PREFIX = "com.amazonaws.dynamodb.v20120810#"


class Reply:
    """What aiobotocore reads of an HTTP response (botocore's ``AWSResponse``)."""

    raw = None

    def __init__(self, status: int, body: dict[str, Any] | str) -> None:
        self.status_code = status
        self.body = (body if isinstance(body, str) else json.dumps(body)).encode()
        self.headers = {"content-type": "application/x-amz-json-1.0"}

    @property
    def content(self) -> Awaitable[bytes]:
        async def body() -> bytes:
            return self.body

        return body()


class Answers:
    """A ``before-send`` hook: records each request (its API operation and JSON body) and
    answers it with the next planned reply, or raises the planned botocore error, or holds
    it until ``gate`` opens. Unplanned requests get ``200 {}``."""

    def __init__(self) -> None:
        self.planned: list[Reply | BaseException] = []
        self.sent: list[tuple[str, dict[str, Any]]] = []
        self.gate: asyncio.Event | None = None
        self.arrived = asyncio.Event()

    def reply(self, status: int, body: dict[str, Any] | str) -> None:
        self.planned.append(Reply(status, body))

    def error(self, code: str, message: str = "", status: int = 400, **extra: Any) -> None:
        self.reply(status, {"__type": PREFIX + code, "message": message, **extra})

    async def __call__(self, request: Any, **kwargs: Any) -> Reply:
        target = request.headers["X-Amz-Target"]
        target = target.decode() if isinstance(target, bytes) else target
        self.sent.append((target.rsplit(".", 1)[-1], json.loads(request.body)))
        self.arrived.set()
        if self.gate is not None:
            await self.gate.wait()
        answer = self.planned.pop(0) if self.planned else Reply(200, {})
        if isinstance(answer, BaseException):
            raise answer
        return answer


class Heard(Observer):
    def __init__(self) -> None:
        self.events: list[RequestEvent] = []

    def on_request(self, event: RequestEvent) -> None:
        self.events.append(event)


async def make(
    *, observer: Observer | None = None, owned: bool = True, **options: Any
) -> tuple[BotocoreTransport, Answers, AsyncExitStack]:
    """A transport on aioseq's own client (as ``DynamoStore.open`` makes it), answered by an
    `Answers` hook registered after the transport's request counter; ``options`` are more of
    `BotocoreTransport`'s."""
    client, stack, _ = await open_client(
        session=None,
        endpoint_url=NOWHERE,
        region_name=None,
        max_pool_connections=4,
        connect_timeout_secs=1.0,
        read_timeout_secs=1.0,
    )
    transport = BotocoreTransport(
        client,
        owner=stack if owned else None,
        observer=observer,
        table_name=TABLE,
        validates=True,
        **options,
    )
    answers = Answers()
    client.meta.events.register("before-send.dynamodb", answers)  # type: ignore[arg-type]
    return transport, answers, stack


@pytest_asyncio.fixture
async def wired() -> AsyncIterator[tuple[BotocoreTransport, Answers]]:
    transport, answers, stack = await make()
    async with stack:
        yield transport, answers


def get(name: str = "k") -> dict[str, Any]:
    return {"TableName": TABLE, "Key": {"pk": {"S": name}}}


def add_one(name: str = "k") -> dict[str, Any]:
    return {
        **get(name),
        "UpdateExpression": "ADD #v :one",
        "ExpressionAttributeNames": {"#v": "value"},
        "ExpressionAttributeValues": {":one": {"N": "1"}},
        "ReturnValues": "UPDATED_NEW",
    }


class _AnyMetadata:
    """botocore's ``ResponseMetadata`` of a 200 answer (its ids vary)."""

    def __eq__(self, other: object) -> bool:
        return isinstance(other, dict) and other.get("HTTPStatusCode") == 200

    def __repr__(self) -> str:
        return "<ResponseMetadata with HTTPStatusCode 200>"


ANY_METADATA: Any = _AnyMetadata()


def action(name: str, table: str = TABLE) -> dict[str, Any]:
    """One ``Update`` of a transaction: `add_one` without ``ReturnValues``."""
    update = {k: v for k, v in add_one(name).items() if k != "ReturnValues"}
    return {"Update": {**update, "TableName": table}}


# --- answers and errors ----------------------------------------------------------------------


async def test_an_answer_is_parsed_and_the_request_sent_once_as_given(
    wired: tuple[BotocoreTransport, Answers],
) -> None:
    transport, answers = wired
    answers.reply(200, {"Attributes": {"value": {"N": "7"}}})
    params = add_one()
    assert await transport.send("update_item", params) == {
        "Attributes": {"value": {"N": "7"}},
        "ResponseMetadata": ANY_METADATA,
    }
    assert params == add_one()  # the template is left as it was
    assert answers.sent == [("UpdateItem", add_one())]  # no ReturnConsumedCapacity unobserved
    assert transport.requests == {"UpdateItem": 1} and transport.in_flight == 0


@pytest.mark.parametrize(
    ("code", "status", "error", "retryable", "maybe_applied"),
    [
        ("ValidationException", 400, ValidationFailed, False, False),
        ("ProvisionedThroughputExceededException", 400, Throttled, True, False),
        ("ThrottlingException", 400, Throttled, True, False),
        ("RequestLimitExceeded", 400, Throttled, True, False),
        ("TransactionConflictException", 400, TransactionConflict, True, False),
        ("ReplicatedWriteConflictException", 400, TransactionConflict, True, False),  # MRSC
        ("InternalServerError", 500, ServiceUnavailable, True, True),
        ("ServiceUnavailable", 503, ServiceUnavailable, True, True),
        ("SomethingNewException", 502, ServiceUnavailable, True, True),  # unknown, 5xx
        ("SomethingNewException", 400, StoreError, False, False),  # unknown, 4xx
    ],
)
async def test_dynamodb_error_codes_map_to_one_error_each(
    wired: tuple[BotocoreTransport, Answers],
    code: str,
    status: int,
    error: type[StoreError],
    retryable: bool,
    maybe_applied: bool,
) -> None:
    transport, answers = wired
    answers.error(code, "the service says no", status=status)
    with pytest.raises(error) as raised:
        await transport.send("update_item", add_one())
    assert type(raised.value) is error
    assert (raised.value.code, raised.value.operation) == (code, "UpdateItem")
    assert str(raised.value) == f"UpdateItem: {code}: the service says no"
    assert (raised.value.retryable, raised.value.maybe_applied) == (retryable, maybe_applied)
    assert raised.value.__cause__ is not None  # botocore's ClientError, chained


@pytest.mark.parametrize(
    ("code", "status"), [("InternalServerError", 500), ("SomethingNewException", 502)]
)
async def test_a_reads_5xx_applied_nothing(
    wired: tuple[BotocoreTransport, Answers], code: str, status: int
) -> None:
    """A 5xx may follow a write's success, never a read's: ``maybe_applied`` is set per
    request where the error is made, not by its class."""
    transport, answers = wired
    answers.error(code, "the service says no", status=status)
    with pytest.raises(ServiceUnavailable) as raised:
        await transport.send("get_item", get())
    assert raised.value.retryable and not raised.value.maybe_applied


async def test_a_failed_condition_carries_the_item_it_failed_on(
    wired: tuple[BotocoreTransport, Answers],
) -> None:
    transport, answers = wired
    answers.error(
        "ConditionalCheckFailedException",
        "The conditional request failed",
        Item={"pk": {"S": "k"}, "value": {"N": "41"}},
    )
    with pytest.raises(ConditionFailed) as raised:
        await transport.send("update_item", {**add_one(), "ConditionExpression": "#v < :one"})
    assert raised.value.item == {"pk": {"S": "k"}, "value": {"N": "41"}}
    assert not raised.value.maybe_applied


async def test_a_canceled_transaction_carries_its_reasons_in_order(
    wired: tuple[BotocoreTransport, Answers],
) -> None:
    transport, answers = wired
    reasons = [
        {"Code": "None"},
        {"Code": "ConditionalCheckFailed", "Message": "no", "Item": {"pk": {"S": "b"}}},
    ]
    answers.error("TransactionCanceledException", "canceled", CancellationReasons=reasons)
    with pytest.raises(TransactionCanceled) as raised:
        await transport.send(
            "transact_write_items",
            {"TransactItems": [action("a"), action("b")]},
        )
    assert raised.value.codes == ["None", "ConditionalCheckFailed"]
    assert raised.value.cancellation_reasons[1]["Item"] == {"pk": {"S": "b"}}


async def test_a_missing_table_is_named_in_the_error(
    wired: tuple[BotocoreTransport, Answers],
) -> None:
    transport, answers = wired
    answers.error("ResourceNotFoundException", "Requested resource not found")
    with pytest.raises(TableNotFound, match=r"^table 't' does not exist \(GetItem:") as one:
        await transport.send("get_item", get())
    assert one.value.tables == ("t",)
    answers.error("ResourceNotFoundException", "Requested resource not found")
    items = [
        action("a"),
        action("b", "other"),
        {"ConditionCheck": {**get("c"), "ConditionExpression": "attribute_exists(pk)"}},
    ]
    with pytest.raises(TableNotFound, match=r"^one of the tables 't', 'other' does not exist"):
        await transport.send("transact_write_items", {"TransactItems": items})
    answers.error("ResourceNotFoundException", "Requested resource not found")
    with pytest.raises(TableNotFound, match=r"^the table does not exist \(ListTables"):
        await transport.send("list_tables", {})


def _refused() -> EndpointConnectionError:
    cause = aiohttp.ClientConnectorError(
        aiohttp.client_reqrep.ConnectionKey("127.0.0.1", 1, False, True, None, None, None),
        ConnectionRefusedError(111, "Connection refused"),
    )
    return EndpointConnectionError(endpoint_url=NOWHERE, error=cause)


@pytest.mark.parametrize(
    ("failure", "error", "maybe_applied"),
    [
        (_refused, EndpointUnreachable, False),  # never sent
        (lambda: ConnectTimeoutError(endpoint_url=NOWHERE), EndpointUnreachable, False),
        (  # sent, then the connection dropped: aiobotocore raises the same class
            lambda: EndpointConnectionError(
                endpoint_url=NOWHERE, error=aiohttp.ServerDisconnectedError()
            ),
            ConnectionFailed,
            True,
        ),
        (lambda: ReadTimeoutError(endpoint_url=NOWHERE), ConnectionFailed, True),
    ],
    ids=["refused", "connect-timeout", "disconnected", "read-timeout"],
)
async def test_a_connection_error_says_whether_the_request_may_have_been_applied(
    wired: tuple[BotocoreTransport, Answers],
    failure: Any,
    error: type[ConnectionFailed],
    maybe_applied: bool,
) -> None:
    transport, answers = wired
    answers.planned.append(failure())
    with pytest.raises(error) as raised:
        await transport.send("update_item", add_one())
    assert type(raised.value) is error and raised.value.maybe_applied is maybe_applied
    assert raised.value.retryable and raised.value.operation == "UpdateItem"


async def test_nothing_listening_is_an_unreachable_endpoint_unanswered() -> None:
    transport, answers, stack = await make()
    async with stack:
        transport.client.meta.events.unregister("before-send.dynamodb", answers)  # type: ignore[arg-type]
        with pytest.raises(EndpointUnreachable, match=r"^GetItem: ") as raised:
            await transport.send("get_item", get())
        assert not raised.value.maybe_applied
        assert transport.requests == {"GetItem": 1}  # it was counted: it tried


async def test_no_credentials_is_a_configuration_error(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.delenv(name)
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")  # no instance role to look for
    session = _new_session()  # (botocore's model parsed once per process)
    async with session.client("dynamodb", region_name="us-east-1", endpoint_url=NOWHERE) as client:
        transport = BotocoreTransport(client)
        with pytest.raises(ConfigurationError, match="no AWS credentials found"):
            await transport.send("get_item", get())
        assert transport.requests == {}  # refused before it was sent


async def test_an_error_that_is_not_botocores_passes_unchanged(
    wired: tuple[BotocoreTransport, Answers],
) -> None:
    transport, answers = wired
    answers.planned.append(KeyError("a bug in a hook"))
    with pytest.raises(KeyError, match="a bug in a hook"):
        await transport.send("get_item", get())
    assert transport.in_flight == 0


# --- the observer ----------------------------------------------------------------------------


async def test_an_observer_hears_each_request_with_its_capacity_and_error() -> None:
    heard = Heard()
    transport, answers, stack = await make(observer=heard)
    async with stack:
        answers.reply(
            200,
            {
                "Attributes": {"value": {"N": "1"}},
                "ConsumedCapacity": {"TableName": TABLE, "CapacityUnits": 1.0},
            },
        )
        answers.reply(
            200,
            {
                "ConsumedCapacity": [
                    {"TableName": TABLE, "CapacityUnits": 2.0},
                    {"TableName": "other", "CapacityUnits": 2.0},
                ]
            },
        )
        answers.error("ThrottlingException", "slow down")
        answers.reply(200, {"TableNames": []})
        params = add_one()
        await transport.send("update_item", params)
        assert "ReturnConsumedCapacity" not in params  # asked for in a copy
        transact = {"TransactItems": [action("a"), action("b")]}
        await transport.send("transact_write_items", transact)
        with pytest.raises(Throttled):
            await transport.send("get_item", {**get(), "ReturnConsumedCapacity": "NONE"})
        await transport.send("list_tables", {})
    sent = {op: body.get("ReturnConsumedCapacity") for op, body in answers.sent}
    assert sent == {  # item requests ask, unless the caller said; table requests cannot
        "UpdateItem": "TOTAL",
        "TransactWriteItems": "TOTAL",
        "GetItem": "NONE",
        "ListTables": None,
    }
    assert [(e.operation, e.table, e.consumed_capacity_units, e.error) for e in heard.events] == [
        ("UpdateItem", TABLE, 1.0, None),
        ("TransactWriteItems", TABLE, 4.0, None),  # summed over the tables
        ("GetItem", TABLE, None, "ThrottlingException"),
        ("ListTables", TABLE, None, None),
    ]
    assert all(e.latency_secs >= 0 for e in heard.events)


async def test_an_observed_connection_error_is_reported_by_its_class_name() -> None:
    heard = Heard()
    transport, answers, stack = await make(observer=heard)
    async with stack:
        answers.planned.append(ReadTimeoutError(endpoint_url=NOWHERE))
        answers.planned.append(KeyError("a bug in a hook"))
        with pytest.raises(ConnectionFailed):
            await transport.send("get_item", get())
        with pytest.raises(KeyError):
            await transport.send("get_item", get())
    assert [e.error for e in heard.events] == ["ReadTimeoutError", "KeyError"]


async def test_a_broken_observer_loses_no_answer(caplog: pytest.LogCaptureFixture) -> None:
    class Broken(Observer):
        def on_request(self, event: RequestEvent) -> None:
            raise RuntimeError("exporter down")

    transport, answers, stack = await make(observer=Broken())
    async with stack:
        answers.reply(200, {"Attributes": {"value": {"N": "3"}}})
        with caplog.at_level(logging.ERROR, logger="aioseq"):
            response = await transport.send("update_item", add_one())
    assert response["Attributes"] == {"value": {"N": "3"}}
    assert "observer hook on_request failed" in caplog.text


# --- validate ----------------------------------------------------------------------------------


async def test_validate_checks_what_the_client_does_not_and_names_methods(
    wired: tuple[BotocoreTransport, Answers],
) -> None:
    transport, answers = wired
    transport.validate("update_item", add_one())  # a good request: nothing raised
    with pytest.raises(ParamValidationError, match="Key"):
        transport.validate("get_item", {"TableName": TABLE, "Key": "not a map"})
    with pytest.raises(ConfigurationError, match="the method for the API's 'UpdateItem' is"):
        transport.validate("UpdateItem", add_one())
    with pytest.raises(ConfigurationError, match="unknown DynamoDB operation 'frobnicate'") as e:
        transport.validate("frobnicate", {})
    assert "the method for" not in str(e.value)
    transport.validates = False  # a caller's client checks its requests itself
    transport.validate("get_item", {"TableName": TABLE, "Key": "not a map"})
    with pytest.raises(ConfigurationError):
        transport.validate("UpdateItem", {})  # the name is still checked
    assert answers.sent == []


# --- counting ----------------------------------------------------------------------------------


async def test_requests_are_counted_by_operation_until_the_close() -> None:
    transport, answers, stack = await make(owned=False)
    async with stack:
        for _ in range(3):
            await transport.send("get_item", get())
        await transport.client.update_item(**add_one())  # the client's own requests count too
        answers.error("ThrottlingException")
        with pytest.raises(Throttled):
            await transport.send("update_item", add_one())
        counted = transport.requests
        assert counted == {"GetItem": 3, "UpdateItem": 2}
        counted["GetItem"] = 99  # a copy
        assert transport.requests["GetItem"] == 3
        await transport.aclose(timeout_secs=0)
        await transport.client.get_item(**get())  # a borrowed client stays open, uncounted
        assert transport.requests == {"GetItem": 3, "UpdateItem": 2}
        with pytest.raises(StoreClosed, match="closed"):
            await transport.send("get_item", get())
    assert len(answers.sent) == 6


# --- close ---------------------------------------------------------------------------------------


async def test_close_waits_for_the_requests_in_flight() -> None:
    transport, answers, _ = await make()
    answers.gate = asyncio.Event()
    answers.reply(200, {"Item": {"value": {"N": "5"}}})
    request = asyncio.create_task(transport.send("get_item", get()))
    await answers.arrived.wait()
    assert transport.in_flight == 1
    closing = asyncio.create_task(transport.aclose(timeout_secs=30))
    await asyncio.sleep(0.01)
    assert not closing.done()  # the answer is awaited
    answers.gate.set()
    assert (await request)["Item"] == {"value": {"N": "5"}}
    await closing
    assert transport.in_flight == 0
    with pytest.raises(StoreClosed):
        await transport.send("get_item", get())


@pytest.mark.parametrize(
    "cut",
    [
        lambda: EndpointConnectionError(
            endpoint_url=NOWHERE, error=aiohttp.ServerDisconnectedError()
        ),
        asyncio.CancelledError,  # what aiohttp raises in a request whose session closed
    ],
    ids=["connection-lost", "cancelled"],
)
async def test_a_request_the_close_cuts_off_may_have_been_applied(
    caplog: pytest.LogCaptureFixture, cut: Any
) -> None:
    heard = Heard()
    transport, answers, _ = await make(observer=heard)
    answers.gate = asyncio.Event()
    answers.planned.append(cut())
    request = asyncio.create_task(transport.send("update_item", add_one()))
    await answers.arrived.wait()
    with caplog.at_level(logging.WARNING, logger="aioseq"):
        await transport.aclose(timeout_secs=0)  # no time to wait: the client is closed
    assert "1 requests still in flight at the deadline" in caplog.text
    answers.gate.set()
    with pytest.raises(StoreClosed, match="closed during the request") as raised:
        await request
    assert raised.value.maybe_applied
    assert [e.error for e in heard.events] == [type(raised.value.__cause__).__name__]


async def test_a_service_answer_after_the_close_is_not_hidden() -> None:
    transport, answers, _ = await make()
    answers.gate = asyncio.Event()
    answers.error("ConditionalCheckFailedException", "no")
    request = asyncio.create_task(transport.send("update_item", add_one()))
    await answers.arrived.wait()
    await transport.aclose(timeout_secs=0)
    answers.gate.set()
    with pytest.raises(ConditionFailed):  # an answer: its fate is known
        await request


async def test_a_cancelled_caller_is_cancelled_not_closed() -> None:
    transport, answers, _ = await make()
    answers.gate = asyncio.Event()
    request = asyncio.create_task(transport.send("get_item", get()))
    await answers.arrived.wait()
    await transport.aclose(timeout_secs=0)
    request.cancel()
    with pytest.raises(asyncio.CancelledError):
        await request
    assert transport.in_flight == 0


async def test_the_observer_hears_the_endpoint_go_down() -> None:
    observer, clock = StatisticsObserver(), ManualClock()
    transport, answers, stack = await make(observer=observer, clock=clock, down_after_secs=1.0)
    async with stack:
        answers.planned.append(_refused())
        with pytest.raises(EndpointUnreachable):
            await transport.send("get_item", get())
        clock.advance(1.5)
        with pytest.raises(EndpointDown):  # refused at once, and the observer told
            await transport.send("get_item", get())
        seen = observer.statistics()
        assert (seen.endpoint_outages, seen.endpoints_down) == (1, frozenset({NOWHERE}))
