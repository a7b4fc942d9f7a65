"""An aiohttp order service numbered by aioseq: the FastAPI example's twin.

Run it against DynamoDB Local::

    AWS_ENDPOINT_URL=http://127.0.0.1:8000 AIOSEQ_CREATE_TABLE=1 python -m examples.aiohttp_app
    curl -X POST 127.0.0.1:8080/tenants/acme/orders -H 'content-type: application/json' \\
        -H 'Idempotency-Key: 5f0c3bd4-1f9e-4c1b-9a57-2b7c4b0f1d2e' \\
        -d '{"customer": "ada", "total": "12.50"}'

A ``cleanup_ctx`` opens one ``DynamoStore`` for the application's life; the handler asks it for
the tenant's counter on every request (the store shares one object per counter key). See
``orders.py`` for the choice of strategy, the ``Idempotency-Key`` header and the HTTP answers
to aioseq's errors.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

from aiohttp import web
from aiohttp.typedefs import Handler
from pydantic import ValidationError

from aioseq import AioseqError, DynamoStore
from examples.orders import (
    IDEMPOTENCY_KEY,
    ORDER_ID,
    TENANT,
    NewOrder,
    Settings,
    answer_error,
    open_store,
    place_order,
    recent_orders,
)

STORE = web.AppKey("store", DynamoStore)


async def store_context(app: web.Application) -> AsyncIterator[None]:
    """Open the store at start-up, close it at cleanup."""
    async with open_store(Settings.from_env()) as store:
        app[STORE] = store
        yield


@web.middleware
async def aioseq_errors(request: web.Request, handler: Handler) -> web.StreamResponse:
    try:
        return await handler(request)
    except AioseqError as exc:
        answer = answer_error(exc, idempotency_key=request.headers.get(IDEMPOTENCY_KEY))
        return web.json_response(answer.body, status=answer.status, headers=answer.headers)


async def create_order(request: web.Request) -> web.Response:
    """``POST /tenants/{tenant}/orders``: create an order with the tenant's next number; a
    request sent again with its ``Idempotency-Key`` gets the first one's order."""
    tenant = request.match_info["tenant"]
    try:
        new = NewOrder.model_validate_json(await request.read())
    except ValidationError as exc:
        return web.json_response({"detail": json.loads(exc.json(include_url=False))}, status=422)
    # The key is checked by put() (1 to 255 characters): a bad one is IdempotencyKeyInvalid,
    # a 400 as http_answer says (the middleware), as in the FastAPI service.
    idempotency_key = request.headers.get(IDEMPOTENCY_KEY)
    # The same object for every request of this tenant: one group commit per tenant.
    store = request.app[STORE]
    orders = store.transactional_counter(f"orders-{tenant}", max_value=ORDER_ID.max_number)
    order = await place_order(orders, tenant, new, idempotency_key)
    return web.json_response(order.model_dump(mode="json"), status=201)


async def list_orders(request: web.Request) -> web.Response:
    """``GET /tenants/{tenant}/orders?limit=20``: the tenant's newest orders, newest first."""
    try:
        limit = int(request.query.get("limit", "20"))
    except ValueError:
        limit = 0
    if not 1 <= limit <= 100:
        return web.json_response({"detail": "limit must be a whole number, 1 to 100"}, status=422)
    orders = await recent_orders(request.app[STORE], request.match_info["tenant"], limit)
    return web.json_response([order.model_dump(mode="json") for order in orders])


def make_app() -> web.Application:
    app = web.Application(middlewares=[aioseq_errors])
    app.cleanup_ctx.append(store_context)
    app.router.add_post(f"/tenants/{{tenant:{TENANT}}}/orders", create_order)
    app.router.add_get(f"/tenants/{{tenant:{TENANT}}}/orders", list_orders)
    return app


if __name__ == "__main__":
    web.run_app(make_app(), host="127.0.0.1", port=8080)
