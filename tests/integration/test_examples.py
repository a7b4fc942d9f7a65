"""The example services (examples/): FastAPI over ASGI, aiohttp with its test client, on the
serialized moto server, with their lifespan / cleanup_ctx really run. Each tenant numbers its
own orders (``POST /tenants/{tenant}/orders``)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import httpx
import pytest
from aiohttp import test_utils
from asgi_lifespan import LifespanManager
from checks import assert_exactly

from aioseq import (
    DEFAULT_TABLE_NAME,
    ConfigurationError,
    ConnectionFailed,
    DynamoStore,
    EndpointUnreachable,
    IdempotencyKeyReused,
    ItemAlreadyExists,
    StoreClosed,
    TableNotFound,
    TableSpec,
    Throttled,
    ValidationFailed,
)
from aioseq.errors import AioseqError
from examples.orders import (
    IDEMPOTENCY_KEY,
    ORDER_ID,
    ORDER_SHARDS,
    ORDERS_TABLE,
    Settings,
    answer_error,
    order_items,
)

ORDER_ID_PATTERN = re.compile(r"ORD-\d{10}")
ORDERS = "/tenants/acme/orders"


@pytest.fixture
async def orders_table(aioseq_endpoint: str, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[str]:
    """The environment an example service reads: the endpoint, a fresh table name, and
    ``AIOSEQ_CREATE_TABLE=1``; the table is deleted afterwards."""
    table = f"aioseq-test-{uuid.uuid4().hex[:12]}"
    monkeypatch.setenv("AWS_ENDPOINT_URL", aioseq_endpoint)
    monkeypatch.setenv("AIOSEQ_TABLE", table)
    monkeypatch.setenv("AIOSEQ_CREATE_TABLE", "1")
    yield table
    async with DynamoStore.open(table=table, endpoint_url=aioseq_endpoint) as store:
        with contextlib.suppress(TableNotFound):  # a test deletes it itself
            await store.delete_table()


async def stored_items(endpoint: str, table: str) -> list[dict[str, Any]]:
    """Every item of the table (a Scan), as AttributeValues."""
    async with DynamoStore.open(table=table, endpoint_url=endpoint) as store:
        items: list[dict[str, Any]] = []
        params: dict[str, Any] = {"TableName": table}
        while True:
            page = await store.send_once("scan", **params)
            items += page["Items"]
            if "LastEvaluatedKey" not in page:
                return items
            params["ExclusiveStartKey"] = page["LastEvaluatedKey"]


async def stored_orders(endpoint: str, table: str, tenant: str = "acme") -> dict[int, str]:
    """The tenant's order items in the table, wherever they are: number -> order id; checks
    that each is in the partition its number gives it, and none beside its counter item."""
    orders: dict[int, str] = {}
    for item in await stored_items(endpoint, table):
        pk = item["pk"]["S"]
        if pk == f"orders-{tenant}":
            assert "value" in item, item  # only the counter item is in the counter's partition
        elif pk.startswith(f"orders-{tenant}#"):
            n = int(item["sk"]["N"])
            assert pk == order_items(tenant).partition(n)
            orders[n] = item["order_id"]["S"]
    return orders


def check_orders(bodies: list[dict[str, object]], stored: dict[int, str], count: int) -> None:
    numbers = [int(str(body["number"])) for body in bodies]
    assert_exactly(numbers, 1, count)  # distinct, and gapless as the transactional counter promises
    for body in bodies:
        assert body["order_id"] == ORDER_ID.format(int(str(body["number"])))
        assert ORDER_ID_PATTERN.fullmatch(str(body["order_id"]))
    assert stored == {n: ORDER_ID.format(n) for n in numbers}  # each order stored, once


@pytest.fixture
async def fastapi_client(orders_table: str) -> AsyncIterator[httpx.AsyncClient]:
    from examples.fastapi_app import app

    async with LifespanManager(app) as manager:  # runs the lifespan, as uvicorn would
        transport = httpx.ASGITransport(app=manager.app)
        async with httpx.AsyncClient(transport=transport, base_url="http://orders") as client:
            yield client


@pytest.mark.slow
async def test_fastapi_500_concurrent_orders_get_distinct_numbers(
    fastapi_client: httpx.AsyncClient, aioseq_endpoint: str, orders_table: str
) -> None:
    responses = await asyncio.gather(
        *(
            fastapi_client.post(ORDERS, json={"customer": f"c{i}", "total": "12.50"})
            for i in range(500)
        )
    )
    assert [r.status_code for r in responses] == [201] * 500
    bodies = [r.json() for r in responses]
    assert {(b["customer"], b["total"]) for b in bodies} == {(f"c{i}", "12.50") for i in range(500)}
    check_orders(bodies, await stored_orders(aioseq_endpoint, orders_table), 500)
    # Spread over 32 partition keys, none of them the counter item's (checked above).
    partitions = {i["pk"]["S"] for i in await stored_items(aioseq_endpoint, orders_table)}
    assert partitions == {"orders-acme", *order_items("acme").partitions()}
    assert ORDER_SHARDS >= 30
    newest = await fastapi_client.get(ORDERS, params={"limit": 5})
    assert newest.status_code == 200
    assert [o["number"] for o in newest.json()] == [500, 499, 498, 497, 496]
    assert newest.json()[0]["order_id"] == ORDER_ID.format(500)
    by_number = {b["number"]: b for b in bodies}
    assert newest.json()[0] == by_number[500]
    assert (await fastapi_client.get(ORDERS, params={"limit": 0})).status_code == 422


async def test_fastapi_bad_input_is_422_and_takes_no_number(
    fastapi_client: httpx.AsyncClient,
) -> None:
    for body in ({"customer": "", "total": "1"}, {"customer": "a", "total": "-1"}, {}):
        response = await fastapi_client.post(ORDERS, json=body)
        assert response.status_code == 422, body
    for tenant in ("Acme", "a_b", "-acme", "a" * 64):  # not a tenant: no counter key made of it
        response = await fastapi_client.post(
            f"/tenants/{tenant}/orders", json={"customer": "a", "total": "1"}
        )
        assert response.status_code == 422, tenant
    response = await fastapi_client.post(ORDERS, json={"customer": "a", "total": "1"})
    assert response.status_code == 201
    assert response.json()["number"] == 1


async def test_fastapi_maps_aioseq_errors_to_statuses(
    fastapi_client: httpx.AsyncClient, aioseq_endpoint: str, orders_table: str
) -> None:
    # An order item already there for the next number (imported by hand, say): the counter
    # is behind its items, the service's fault: a 500 that reveals nothing (the log names
    # the counter), not a 409 naming the item's key; the counter does not move, so the next
    # order still gets number 1... once the item is gone.
    async with DynamoStore.open(table=orders_table, endpoint_url=aioseq_endpoint) as store:
        order_1 = {"pk": {"S": "orders-acme#1"}, "sk": {"N": "1"}}
        await store.send_once("put_item", TableName=orders_table, Item=order_1)
        response = await fastapi_client.post(ORDERS, json={"customer": "a", "total": "1"})
        assert (response.status_code, response.json()) == (500, {"detail": "internal error"})
        await store.send_once("delete_item", TableName=orders_table, Key=order_1)
        response = await fastapi_client.post(ORDERS, json={"customer": "a", "total": "1"})
        assert (response.status_code, response.json()["number"]) == (201, 1)
        # The table deleted under the running service: 500, with nothing inside revealed.
        await store.delete_table()
    response = await fastapi_client.post(ORDERS, json={"customer": "a", "total": "1"})
    assert (response.status_code, response.json()) == (500, {"detail": "internal error"})


def test_the_services_keep_their_orders_in_a_table_of_their_own() -> None:
    # getting-started runs a first program on the default table, then the services on the
    # same endpoint: they must not share its counters.
    assert Settings.from_env({}).table == ORDERS_TABLE != DEFAULT_TABLE_NAME
    assert Settings.from_env({"AIOSEQ_TABLE": "mine"}).table == "mine"


def _cut_off(error: StoreClosed) -> StoreClosed:
    error.maybe_applied = True  # as DynamoStore.call() raises it when aclose() cuts it off
    return error


@pytest.mark.parametrize(
    ("error", "status"),
    [
        (ItemAlreadyExists({"pk": "orders", "sk": 1}), 409),
        (IdempotencyKeyReused("k", "orders-acme", 3), 422),
        (Throttled("slow down", code="ThrottlingException"), 503),
        (EndpointUnreachable("refused", code="EndpointConnectionError"), 503),
        (StoreClosed("shutting down"), 503),
        # The order may be stored: the client must look before posting again.
        (ConnectionFailed("reset", code="ConnectionClosedError"), 500),
        (_cut_off(StoreClosed("closed during the request")), 500),
        # The service's own configuration: its 500, never the client's 4xx.
        (ConfigurationError("table 'orders' has key schema ..."), 500),
        (ValidationFailed("key schema mismatch", code="ValidationException"), 500),
        (TableNotFound("no table", code="ResourceNotFoundException"), 500),
    ],
)
def test_the_services_answer_aioseq_errors_and_log_the_server_faults(
    error: AioseqError, status: int, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO, logger="examples.orders"):
        answer = answer_error(error)
    assert answer.status == status
    assert ("may have been applied" in answer.body["detail"]) == error.maybe_applied
    if status == 500:  # the cause is in the server's log, not in the answer
        assert str(error) not in answer.body["detail"]
        assert [r.levelno for r in caplog.records] == [logging.ERROR]
        assert caplog.records[0].exc_info is not None
    # With an idempotency key, an order that may be stored is safe to post again.
    if error.maybe_applied:
        assert answer_error(error, idempotency_key="k").status == 503


@pytest.mark.slow
async def test_aiohttp_concurrent_orders_get_distinct_numbers(
    aioseq_endpoint: str, orders_table: str
) -> None:
    from examples.aiohttp_app import make_app

    count = 500
    # TestServer runs the app's startup and cleanup_ctx, and listens on 127.0.0.1.
    async with test_utils.TestClient(test_utils.TestServer(make_app())) as client:
        responses = await asyncio.gather(
            *(client.post(ORDERS, json={"customer": f"c{i}", "total": "3"}) for i in range(count))
        )
        assert [r.status for r in responses] == [201] * count
        bodies = [await r.json() for r in responses]
        bad = await client.post(ORDERS, json={"customer": "a", "total": "-1"})
        assert bad.status == 422
        assert (await bad.json())["detail"][0]["loc"] == ["total"]
        unknown = await client.post("/tenants/Acme/orders", json={"customer": "a", "total": "1"})
        assert unknown.status == 404  # the route's pattern: no counter key made of it
        newest = await client.get(ORDERS, params={"limit": "3"})
        assert [o["number"] for o in await newest.json()] == [count, count - 1, count - 2]
        assert (await client.get(ORDERS, params={"limit": "many"})).status == 422
        assert len(await (await client.get("/tenants/nobody/orders")).json()) == 0
    check_orders(bodies, await stored_orders(aioseq_endpoint, orders_table), count)


#: Posts an order (path, JSON body, headers) and returns the status and the JSON answer.
Post = Callable[..., Awaitable[tuple[int, Any]]]


@contextlib.asynccontextmanager
async def serving(server: str) -> AsyncIterator[Post]:
    """One of the example services, its lifespan / cleanup_ctx run."""
    if server == "fastapi":
        from examples.fastapi_app import app

        async with (
            LifespanManager(app) as manager,
            httpx.AsyncClient(
                transport=httpx.ASGITransport(app=manager.app), base_url="http://orders"
            ) as client,
        ):

            async def post_httpx(
                path: str, body: dict[str, str], headers: dict[str, str] | None = None
            ) -> tuple[int, Any]:
                response = await client.post(path, json=body, headers=headers)
                return response.status_code, response.json()

            yield post_httpx
    else:
        from examples.aiohttp_app import make_app

        async with test_utils.TestClient(test_utils.TestServer(make_app())) as session:

            async def post_aiohttp(
                path: str, body: dict[str, str], headers: dict[str, str] | None = None
            ) -> tuple[int, Any]:
                response = await session.post(path, json=body, headers=headers)
                return response.status, await response.json()

            yield post_aiohttp


@pytest.mark.parametrize("server", ["fastapi", "aiohttp"])
async def test_each_tenant_numbers_its_own_orders_gaplessly(
    server: str, aioseq_endpoint: str, orders_table: str
) -> None:
    """Two tenants, N concurrent requests each, interleaved: each tenant's orders are numbered
    exactly 1..N (one shared counter per tenant, made by the handler's factory call)."""
    count = 60
    tenants = ("acme", "globex")
    async with serving(server) as post:
        answers = await asyncio.gather(
            *(
                post(f"/tenants/{tenant}/orders", {"customer": f"{tenant}-{i}", "total": "1"})
                for i in range(count)
                for tenant in tenants
            )
        )
    assert [status for status, _ in answers] == [201] * (count * len(tenants))
    for tenant in tenants:
        bodies = [body for _, body in answers if body["tenant"] == tenant]
        assert {b["customer"] for b in bodies} == {f"{tenant}-{i}" for i in range(count)}
        check_orders(bodies, await stored_orders(aioseq_endpoint, orders_table, tenant), count)


@pytest.mark.parametrize("server", ["fastapi", "aiohttp"])
async def test_a_request_sent_again_with_its_idempotency_key_gets_the_first_order(
    server: str, aioseq_endpoint: str, orders_table: str
) -> None:
    """Two POSTs with one ``Idempotency-Key``: one order number, one order stored; ten at
    once with another key: one more; another body under a used key: 422, a key that is not
    one: 400 in both services; nothing stored."""
    ada = {"customer": "ada", "total": "12.50"}
    async with serving(server) as post:
        first = await post(ORDERS, ada, {IDEMPOTENCY_KEY: "a1"})
        again = await post(ORDERS, {**ada, "total": "12.5"}, {IDEMPOTENCY_KEY: "a1"})
        assert (
            first
            == again
            == (201, {**ada, "tenant": "acme", "number": 1, "order_id": ORDER_ID.format(1)})
        )
        together = await asyncio.gather(
            *(
                post(ORDERS, {"customer": "bo", "total": "1"}, {IDEMPOTENCY_KEY: "b"})
                for _ in range(10)
            )
        )
        assert {(status, body["number"]) for status, body in together} == {(201, 2)}
        status, body = await post(
            ORDERS, {"customer": "eve", "total": "1"}, {IDEMPOTENCY_KEY: "a1"}
        )
        assert status == 422 and "a1" in body["detail"]
        for bad in ("x" * 256, ""):  # not a key: the client's 400, as http_answer says
            status, body = await post(ORDERS, ada, {IDEMPOTENCY_KEY: bad})
            assert status == 400 and "255 characters" in body["detail"], (status, body)
        assert (await post(ORDERS, ada))[1]["number"] == 3  # no key: a new order
    stored = await stored_orders(aioseq_endpoint, orders_table)
    assert sorted(stored) == [1, 2, 3]


async def test_a_service_checks_its_table_at_start_up(
    aioseq_endpoint: str, orders_table: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without ``AIOSEQ_CREATE_TABLE``, a table missing or with another key schema stops the
    start-up (the cause raised to the server, which logs it); never a 4xx per request."""
    from examples.fastapi_app import app

    monkeypatch.setenv("AIOSEQ_CREATE_TABLE", "0")
    with pytest.raises(TableNotFound):
        async with LifespanManager(app):
            pass
    async with DynamoStore.open(
        table=TableSpec(orders_table, partition_key="id", sort_key=None),
        endpoint_url=aioseq_endpoint,
    ) as other:
        await other.create_table()
    with pytest.raises(ConfigurationError, match="key schema"):
        async with LifespanManager(app):
            pass
