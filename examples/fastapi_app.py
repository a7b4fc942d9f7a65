"""A FastAPI order service numbered by aioseq.

Run it against DynamoDB Local (``docker compose up`` starts both), or by hand::

    pip install 'aioseq[examples]'
    AWS_ENDPOINT_URL=http://127.0.0.1:8000 AIOSEQ_CREATE_TABLE=1 \\
        uvicorn examples.fastapi_app:app --host 127.0.0.1 --port 8080
    curl -X POST 127.0.0.1:8080/orders -H 'content-type: application/json' \\
        -d '{"customer": "ada", "total": "12.50"}'
    # {"customer":"ada","total":"12.50","number":1,"order_id":"ORD-0000000001"}

The lifespan opens one ``DynamoStore`` for the application's life; see ``orders.py`` for the
order book, the choice of strategy and the HTTP statuses of aioseq's errors.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Annotated, TypedDict

from fastapi import Depends, FastAPI, Request
from fastapi.responses import JSONResponse

from aioseq import AioseqError
from examples.orders import NewOrder, Order, OrderBook, Settings, http_error, open_order_book


class State(TypedDict):
    """What the lifespan hands to every request (``request.state``)."""

    orders: OrderBook


@asynccontextmanager
async def lifespan(app: FastAPI) -> AsyncIterator[State]:
    async with open_order_book(Settings.from_env()) as orders:
        yield {"orders": orders}


app = FastAPI(title="orders", lifespan=lifespan)


def order_book(request: Request) -> OrderBook:
    orders: OrderBook = request.state.orders
    return orders


@app.exception_handler(AioseqError)
async def aioseq_error(request: Request, exc: AioseqError) -> JSONResponse:
    error = http_error(exc)
    return JSONResponse({"detail": error.detail}, status_code=error.status, headers=error.headers)


@app.post("/orders", status_code=201)
async def create_order(new: NewOrder, orders: Annotated[OrderBook, Depends(order_book)]) -> Order:
    """Create an order with the next order number."""
    return await orders.create(new)
