"""A FastAPI order service numbered by aioseq: each tenant numbers its own orders.

Run it against DynamoDB Local (``docker compose up`` starts both), or by hand::

    pip install 'aioseq[examples]'
    AWS_ENDPOINT_URL=http://127.0.0.1:8000 AIOSEQ_CREATE_TABLE=1 \\
        uvicorn examples.fastapi_app:app --host 127.0.0.1 --port 8080
    curl -X POST 127.0.0.1:8080/tenants/acme/orders -H 'content-type: application/json' \\
        -H 'Idempotency-Key: 5f0c3bd4-1f9e-4c1b-9a57-2b7c4b0f1d2e' \\
        -d '{"customer": "ada", "total": "12.50"}'
    # {"customer":"ada","total":"12.50","tenant":"acme","number":1,"order_id":"ORD-0000000001"}
    # (the same again: the same order, number 1; stored once)

The lifespan opens one ``DynamoStore`` for the application's life; the handler asks it for the
tenant's counter on every request (the store shares one object per counter key). See
``orders.py`` for the choice of strategy, the ``Idempotency-Key`` header and the HTTP answers
to aioseq's errors.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Annotated, TypedDict

from fastapi import Depends, FastAPI, Header, Path, Query, Request
from fastapi.responses import JSONResponse

from aioseq import AioseqError, DynamoStore
from examples.orders import (
    IDEMPOTENCY_KEY,
    ORDER_ID,
    TENANT,
    NewOrder,
    Order,
    Settings,
    answer_error,
    open_store,
    place_order,
    recent_orders,
)


class State(TypedDict):
    """What the lifespan hands to every request (``request.state``)."""

    store: DynamoStore


@asynccontextmanager
async def lifespan(app: FastAPI) -> AsyncIterator[State]:
    async with open_store(Settings.from_env()) as store:
        yield {"store": store}


app = FastAPI(title="orders", lifespan=lifespan)


async def dynamo_store(request: Request) -> DynamoStore:  # (async: no thread per request)
    store: DynamoStore = request.state.store
    return store


@app.exception_handler(AioseqError)
async def aioseq_error(request: Request, exc: AioseqError) -> JSONResponse:
    answer = answer_error(exc, idempotency_key=request.headers.get(IDEMPOTENCY_KEY))
    return JSONResponse(answer.body, status_code=answer.status, headers=answer.headers)


@app.post("/tenants/{tenant}/orders", status_code=201)
async def create_order(
    tenant: Annotated[str, Path(pattern=f"^{TENANT}$")],
    new: NewOrder,
    store: Annotated[DynamoStore, Depends(dynamo_store)],
    idempotency_key: Annotated[str | None, Header(alias=IDEMPOTENCY_KEY)] = None,
) -> Order:
    """Create an order with the tenant's next order number; a request sent again with its
    ``Idempotency-Key`` gets the first one's order. The key is checked by ``put()`` (1 to 255
    characters): a bad one is ``IdempotencyKeyInvalid``, a 400 as ``http_answer`` says."""
    # The same object for every request of this tenant: one group commit per tenant.
    orders = store.transactional_counter(f"orders-{tenant}", max_value=ORDER_ID.max_number)
    return await place_order(orders, tenant, new, idempotency_key)


@app.get("/tenants/{tenant}/orders")
async def list_orders(
    tenant: Annotated[str, Path(pattern=f"^{TENANT}$")],
    store: Annotated[DynamoStore, Depends(dynamo_store)],
    limit: Annotated[int, Query(ge=1, le=100)] = 20,
) -> list[Order]:
    """The tenant's newest orders, newest first (one query per shard of its orders)."""
    return await recent_orders(store, tenant, limit)
