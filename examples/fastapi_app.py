"""A FastAPI order service numbered by aioseq: each tenant numbers its own orders.

Run it against DynamoDB Local (``docker compose up`` starts both), or by hand::

    pip install 'aioseq[examples]'
    AWS_ENDPOINT_URL=http://127.0.0.1:8000 AIOSEQ_CREATE_TABLE=1 \\
        uvicorn examples.fastapi_app:app --host 127.0.0.1 --port 8080
    curl -X POST 127.0.0.1:8080/tenants/acme/orders -H 'content-type: application/json' \\
        -d '{"customer": "ada", "total": "12.50"}'
    # {"customer":"ada","total":"12.50","tenant":"acme","number":1,"order_id":"ORD-0000000001"}

The lifespan opens one ``DynamoStore`` for the application's life; the handler asks it for the
tenant's counter on every request (the store shares one object per counter key). See
``orders.py`` for the choice of strategy and the HTTP statuses of aioseq's errors.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Annotated, TypedDict

from fastapi import Depends, FastAPI, Path, Query, Request
from fastapi.responses import JSONResponse

from aioseq import AioseqError, DynamoStore
from examples.orders import (
    ORDER_ID,
    TENANT,
    NewOrder,
    Order,
    Settings,
    http_error,
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


def dynamo_store(request: Request) -> DynamoStore:
    store: DynamoStore = request.state.store
    return store


@app.exception_handler(AioseqError)
async def aioseq_error(request: Request, exc: AioseqError) -> JSONResponse:
    error = http_error(exc)
    return JSONResponse({"detail": error.detail}, status_code=error.status, headers=error.headers)


@app.post("/tenants/{tenant}/orders", status_code=201)
async def create_order(
    tenant: Annotated[str, Path(pattern=f"^{TENANT}$")],
    new: NewOrder,
    store: Annotated[DynamoStore, Depends(dynamo_store)],
) -> Order:
    """Create an order with the tenant's next order number."""
    # The same object for every request of this tenant: one group commit per tenant.
    orders = store.transactional_counter(f"orders-{tenant}", max_value=ORDER_ID.max_number)
    return await place_order(orders, tenant, new)


@app.get("/tenants/{tenant}/orders")
async def list_orders(
    tenant: Annotated[str, Path(pattern=f"^{TENANT}$")],
    store: Annotated[DynamoStore, Depends(dynamo_store)],
    limit: Annotated[int, Query(ge=1, le=100)] = 20,
) -> list[Order]:
    """The tenant's newest orders, newest first (one query per shard of its orders)."""
    return await recent_orders(store, tenant, limit)
