"""The example services with the endpoints `benchmarks.service` measures them against.

Each app is the example's own (``examples/fastapi_app.py``: its ``app``; ``examples/
aiohttp_app.py``: ``make_app()``), with its store, its routes and its error handling, plus
three routes of the same shape (``POST``, a tenant in the path, a JSON answer, status 201):

- ``POST /tenants/{tenant}/uuid-orders``: the endpoint a user would otherwise write. The same
  body as the example's ``POST /tenants/{tenant}/orders``, validated the same way, stored under
  a UUID with one conditional ``PutItem`` (``attribute_not_exists(pk)``) through the client of
  the example's own store (``store.client``: the same pool of connections); no number.
- ``POST /tenants/{tenant}/ids``: ``store.block_allocator(f"ids-{tenant}").next()``.
- ``POST /tenants/{tenant}/memory-ids``: a number from a counter in the process's memory (no
  DynamoDB at all): what the HTTP stack alone takes.

Served by ``uvicorn --factory benchmarks.service_app:fastapi_app`` (or ``python -m
benchmarks.service_app uvicorn ...``: the same with ``TCP_NODELAY`` under ``--workers N``, see
`uvicorn_with_nodelay()`) and by ``python -m benchmarks.service_app aiohttp --port PORT`` (the
aiohttp app, run as ``examples/aiohttp_app.py`` runs it, on the port given). Settings from the
environment, as the examples read them (``examples.orders.Settings``).
"""

from __future__ import annotations

import argparse
import itertools
import json
import socket
import sys
import uuid
from collections.abc import Iterator, Sequence
from typing import Annotated, Any

from aiohttp import web
from fastapi import Depends, FastAPI, Path, Request
from pydantic import BaseModel, ValidationError

from aioseq import DynamoStore
from examples import aiohttp_app as aiohttp_example
from examples import fastapi_app as fastapi_example
from examples.orders import TENANT, NewOrder

__all__ = ["MEMORY_IDS", "Numbered", "UuidOrder", "aiohttp_app", "fastapi_app", "uuid_item"]

UUID_ORDERS = "/tenants/{tenant}/uuid-orders"
IDS = "/tenants/{tenant}/ids"
MEMORY_IDS = "/tenants/{tenant}/memory-ids"


class UuidOrder(NewOrder):
    """The baseline's answer: the order with its tenant and a UUID for an id."""

    tenant: str
    order_id: str


class Numbered(BaseModel):
    """The answer of the two number endpoints."""

    tenant: str
    number: int


def uuid_item(tenant: str, order_id: str, new: NewOrder) -> dict[str, Any]:
    """The order as a ``PutItem``'s ``Item`` (the client's wire format: the store's client
    takes it as it is)."""
    return {
        "pk": {"S": f"uuid-orders-{tenant}#{order_id}"},
        "sk": {"N": "0"},
        "order_id": {"S": order_id},
        "customer": {"S": new.customer},
        "total": {"N": str(new.total)},
    }


async def put_uuid_order(store: DynamoStore, tenant: str, new: NewOrder) -> UuidOrder:
    """Store the order under a new UUID: one conditional ``PutItem`` through ``store.client``."""
    order_id = str(uuid.uuid4())
    await store.client.put_item(
        TableName=store.table.name,
        Item=uuid_item(tenant, order_id, new),
        ConditionExpression="attribute_not_exists(pk)",
    )
    return UuidOrder(tenant=tenant, order_id=order_id, **new.model_dump())


# --- FastAPI ----------------------------------------------------------------------------------

Tenant = Annotated[str, Path(pattern=f"^{TENANT}$")]
Store = Annotated[DynamoStore, Depends(fastapi_example.dynamo_store)]


async def create_uuid_order(tenant: Tenant, new: NewOrder, store: Store) -> UuidOrder:
    return await put_uuid_order(store, tenant, new)


async def next_id(tenant: Tenant, store: Store) -> Numbered:
    return Numbered(tenant=tenant, number=await store.block_allocator(f"ids-{tenant}").next())


async def next_memory_id(tenant: Tenant, request: Request) -> Numbered:
    numbers: Iterator[int] = request.app.state.memory_ids
    return Numbered(tenant=tenant, number=next(numbers))


def fastapi_app() -> FastAPI:
    """The FastAPI example's app with the three routes added (a factory: ``uvicorn
    --factory``, called once in each worker process)."""
    app = fastapi_example.app
    app.state.memory_ids = itertools.count(1)
    for path, endpoint in ((UUID_ORDERS, create_uuid_order), (IDS, next_id)):
        app.add_api_route(path, endpoint, methods=["POST"], status_code=201)
    app.add_api_route(MEMORY_IDS, next_memory_id, methods=["POST"], status_code=201)
    return app


# --- aiohttp ----------------------------------------------------------------------------------

MEMORY = web.AppKey("memory_ids", itertools.count)


async def aiohttp_uuid_order(request: web.Request) -> web.Response:
    try:
        new = NewOrder.model_validate_json(await request.read())
    except ValidationError as exc:
        return web.json_response({"detail": json.loads(exc.json(include_url=False))}, status=422)
    store = request.app[aiohttp_example.STORE]
    order = await put_uuid_order(store, request.match_info["tenant"], new)
    return web.json_response(order.model_dump(mode="json"), status=201)


async def aiohttp_next_id(request: web.Request) -> web.Response:
    tenant = request.match_info["tenant"]
    number = await request.app[aiohttp_example.STORE].block_allocator(f"ids-{tenant}").next()
    return web.json_response({"tenant": tenant, "number": number}, status=201)


async def aiohttp_memory_id(request: web.Request) -> web.Response:
    numbers = request.app[MEMORY]
    number: int = next(numbers)
    return web.json_response({"tenant": request.match_info["tenant"], "number": number}, status=201)


def aiohttp_app() -> web.Application:
    """The aiohttp example's app (``make_app()``) with the three routes added."""
    app = aiohttp_example.make_app()
    app[MEMORY] = itertools.count(1)
    tenant = f"{{tenant:{TENANT}}}"
    for path, handler in (
        (UUID_ORDERS, aiohttp_uuid_order),
        (IDS, aiohttp_next_id),
        (MEMORY_IDS, aiohttp_memory_id),
    ):
        app.router.add_post(path.replace("{tenant}", tenant), handler)
    return app


def uvicorn_with_nodelay(argv: Sequence[str]) -> None:
    """``uvicorn ARGV`` with ``TCP_NODELAY`` on every connection under ``--workers N``.

    uvicorn binds the listener of its workers itself, with ``proto`` 0; the connections it
    accepts inherit that, and asyncio turns on ``TCP_NODELAY`` only for ``IPPROTO_TCP``
    sockets, so every answer on a kept-alive connection waits for the client's delayed ACK,
    about 40 ms on Linux (uvicorn issue 3149; ``--workers 1`` binds through asyncio, which
    sets it). Here the listener is the same socket, labelled ``IPPROTO_TCP``."""
    import uvicorn
    from uvicorn.config import Config

    bind_socket = Config.bind_socket

    def bind_tcp_socket(self: Config) -> socket.socket:
        bound = bind_socket(self)
        if bound.family not in (socket.AF_INET, socket.AF_INET6):
            return bound
        fixed = socket.socket(bound.family, bound.type, socket.IPPROTO_TCP, bound.detach())
        fixed.set_inheritable(True)
        return fixed

    Config.bind_socket = bind_tcp_socket  # type: ignore[method-assign]
    uvicorn.main(list(argv))


def main(argv: Sequence[str] | None = None) -> None:
    """``aiohttp --port PORT``: serve the aiohttp app on 127.0.0.1, as
    ``examples/aiohttp_app.py`` does. ``uvicorn ARGS``: see `uvicorn_with_nodelay()`."""
    arguments = list(sys.argv[1:] if argv is None else argv)
    if arguments[:1] == ["uvicorn"]:
        uvicorn_with_nodelay(arguments[1:])
        return
    parser = argparse.ArgumentParser(prog="python -m benchmarks.service_app")
    parser.add_argument("server", choices=["aiohttp"])
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args(arguments)
    web.run_app(aiohttp_app(), host="127.0.0.1", port=args.port)


if __name__ == "__main__":
    main()
