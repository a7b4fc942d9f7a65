"""The order service that both example apps serve (``fastapi_app.py``, ``aiohttp_app.py``).

- One :class:`~aioseq.DynamoStore` for the application's life, opened at start-up and closed
  at shutdown (FastAPI's lifespan, aiohttp's ``cleanup_ctx``): one pooled client, never one
  per request.
- Each tenant numbers its own orders: ``POST /tenants/{tenant}/orders``. The handler calls
  ``store.transactional_counter(f"orders-{tenant}", max_value=...)`` on every request; the
  store hands back the one object it shares for that counter key, so a tenant's concurrent
  requests share one group commit and one cached counter item. A tenant seen for the first
  time gets a new object; one unused for ``idle_secs`` (5 minutes) is dropped. See
  ``docs/many-counters.md``.
- Orders are numbered by a **transactional counter** with group commit: the counter and the order
  item are written by one ``TransactWriteItems``, so an order number exists exactly when its
  order does (no number is lost to a crash or a failed request: what accountants and
  customers expect of order numbers), and concurrent requests share transactions (up to 99
  orders per transaction) instead of racing for the counter. If you only need unique,
  increasing ids and can live with gaps, ``store.block_allocator(f"orders-{tenant}")`` is far
  cheaper.
- A tenant's orders are spread over ``ORDER_SHARDS`` (32) partitions apart from its counter
  item: order ``n`` has partition key ``orders-{tenant}#{n % 32}`` and sort key ``n``
  (:class:`~aioseq.layout.ShardedItems`). On AWS one partition takes 1,000 WCU/s, about 500
  transactional puts/s: orders kept beside their counter item (``{"pk": "orders-{tenant}",
  "sk": n}``) would cap a tenant there; spread, the counter item alone limits it (one update per
  group of up to 99 orders). ``GET /tenants/{tenant}/orders?limit=20`` lists the newest orders
  with one query per shard (:func:`recent_orders`): listing is what the spread costs.
- Order ids are ``ORD-0000000042``: :class:`~aioseq.IdFormat` with 10 digits; the counter is
  made with ``max_value`` = the largest id, so it can never hand out a number the format
  cannot hold.
- A client may send an ``Idempotency-Key`` header (the IETF's draft
  draft-ietf-httpapi-idempotency-key-header; 1 to 255 characters, such as a UUID): a request
  sent again with the same key and body (after a timeout, say) is answered with the first
  request's order, which is stored once; the same key with another body is a 422, a key
  that is not one (empty, over 255 characters) a 400. The key goes to ``put(...,
  idempotency_key=)``, which checks it and records it with the order in the same
  transaction, for 24 hours.
- aioseq's errors become HTTP answers through :func:`aioseq.http_answer` (400, 409, 422, 503
  with ``Retry-After``, 500), logged on the server with their cause (:func:`answer_error`).

Configuration, from the environment: ``AWS_ENDPOINT_URL`` (e.g. ``http://127.0.0.1:8000`` for
DynamoDB Local; unset for AWS), ``AWS_REGION`` and credentials as usual, ``AIOSEQ_TABLE``
(default ``orders``: a table of the service's own, apart from the ``aioseq`` table that
other programs use by default), ``AIOSEQ_CREATE_TABLE=1`` to create the table at start-up (local
development; in production create it once, ``aioseq create-table``). Without it the service
checks the table at start-up and refuses to start when it is missing or has another key
schema, saying so in its log.
"""

from __future__ import annotations

import logging
import os
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from pydantic import BaseModel, Field

from aioseq import AioseqError, DynamoStore, IdFormat, TransactionalCounter, http_answer
from aioseq.layout import ShardedItems

__all__ = [
    "IDEMPOTENCY_KEY",
    "ORDERS_TABLE",
    "ORDER_ID",
    "ORDER_SHARDS",
    "TENANT",
    "ErrorAnswer",
    "NewOrder",
    "Order",
    "Settings",
    "answer_error",
    "open_store",
    "order_items",
    "place_order",
    "recent_orders",
]

log = logging.getLogger("examples.orders")

#: ``ORD-0000000001`` .. ``ORD-9999999999``.
ORDER_ID = IdFormat(prefix="ORD-", width=10)

#: The service's table unless ``AIOSEQ_TABLE`` names another (``docker-compose.yml`` uses it too).
ORDERS_TABLE = "orders"

#: A tenant in a path: lower-case letters, digits and ``-``, at most 63 characters.
TENANT = r"[a-z0-9][a-z0-9-]{0,62}"

CENTS = Decimal("0.01")

#: The partitions a tenant's orders are spread over: ~500 orders/s each on AWS.
ORDER_SHARDS = 32

#: The request header that carries a client's idempotency key.
IDEMPOTENCY_KEY = "Idempotency-Key"


def order_items(tenant: str) -> ShardedItems:
    """Where a tenant's orders are stored: 32 partitions, none its counter item's."""
    return ShardedItems(f"orders-{tenant}", shards=ORDER_SHARDS)


class NewOrder(BaseModel):
    """What a client sends: ``{"customer": "ada", "total": "12.50"}``."""

    customer: str = Field(min_length=1, max_length=200)
    total: Decimal = Field(ge=0, max_digits=12, decimal_places=2)


class Order(NewOrder):
    """What the service answers: the order with its tenant, number and id."""

    tenant: str
    number: int
    order_id: str


@dataclass(frozen=True)
class Settings:
    """The service's settings (see the module doc)."""

    table: str = ORDERS_TABLE
    create_table: bool = False

    @classmethod
    def from_env(cls, environ: Mapping[str, str] = os.environ) -> Settings:
        return cls(
            table=environ.get("AIOSEQ_TABLE", ORDERS_TABLE),
            create_table=environ.get("AIOSEQ_CREATE_TABLE", "0").lower() in ("1", "true", "yes"),
        )


async def place_order(
    orders: TransactionalCounter, tenant: str, new: NewOrder, idempotency_key: str | None = None
) -> Order:
    """Store the order under the next number of ``orders`` (one transaction, shared with the
    orders of the same tenant that arrive at the same time) and return it. With
    ``idempotency_key``, once: a request sent again with it gets the first one's order.

    Raises:
        the errors of :meth:`aioseq.TransactionalCounter.put`; see :func:`answer_error`.
    """

    layout = order_items(tenant)
    total = new.total.quantize(CENTS)  # "12.5" and "12.50" are one order

    def item(n: int) -> dict[str, Any]:
        return {
            **layout.key(n),  # {"pk": f"orders-{tenant}#{n % 32}", "sk": n}
            "order_id": ORDER_ID.format(n),
            "customer": new.customer,
            "total": total,
        }

    number = await orders.put(item, idempotency_key=idempotency_key)
    return Order(
        tenant=tenant,
        number=number,
        order_id=ORDER_ID.format(number),
        customer=new.customer,
        total=total,
    )


async def recent_orders(store: DynamoStore, tenant: str, limit: int) -> list[Order]:
    """The tenant's ``limit`` newest orders, newest first: one ``Query`` per shard (32 queries
    of at most ``limit`` items each, 0.5 RCU per 4 KB read, at least 16 RCU in all)."""
    found: list[Order] = []
    async for item in order_items(tenant).items(store, descending=True, page_items=limit):
        found.append(
            Order(
                tenant=tenant,
                number=int(item["sk"]),
                order_id=item["order_id"],
                customer=item["customer"],
                total=Decimal(item["total"]).quantize(CENTS),  # DynamoDB drops trailing 0s
            )
        )
        if len(found) == limit:
            break
    return found


@asynccontextmanager
async def open_store(settings: Settings) -> AsyncIterator[DynamoStore]:
    """Open the store for the application's life, and create the table if asked, else check
    it (one ``DescribeTable``).

    Raises:
        TableNotFound: no table, and ``create_table`` is off.
        ConfigurationError: the table's key schema is not aioseq's.
    """
    async with DynamoStore.open(table=settings.table) as store:
        if settings.create_table:
            await store.create_table()
        else:  # a missing table or another key schema stops the start-up, logged
            await store.check_table()
        yield store


@dataclass(frozen=True)
class ErrorAnswer:
    """An HTTP error answer: status, the JSON body, headers."""

    status: int
    body: dict[str, str]
    headers: dict[str, str] = field(default_factory=dict)


def answer_error(error: AioseqError, *, idempotency_key: str | None = None) -> ErrorAnswer:
    """The HTTP answer for an aioseq error (:func:`aioseq.http_answer`: 400, 409, 422, 503
    with ``Retry-After``, 500), logged on the server: a 500's cause goes to the log, never to the
    client. A 503 means no order was stored: the client sends the request again. A 500 whose
    detail says "may have been applied" means an order may have been stored with its answer
    lost: without an idempotency key the client looks before it posts again; with one, the
    answer is a 503 instead, since the same request again gets the first one's order."""
    answer = http_answer(error, idempotency_key=idempotency_key is not None)
    answer.log(log, error)
    return ErrorAnswer(answer.status, {"detail": answer.detail}, dict(answer.headers))
