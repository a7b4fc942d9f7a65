"""The contracts between a [`DynamoStore`][aioseq.DynamoStore] and the rest of aioseq, as
``Protocol`` classes: each side depends on these, not on the other's class.

- [`Transport`][aioseq.contracts.Transport]: how a store sends one request to DynamoDB.
  The store's is a botocore client behind aioseq's error map; a test may pass another, such as
  [`aioseq.testing.FakeDynamoDB`][aioseq.testing.FakeDynamoDB] (httpx's transports and
  ``MockTransport`` are the model).
- [`Store`][aioseq.contracts.Store]: what the strategies and the block allocator need of the
  store they are made on: its table, its retry engine, and three ways to send (one attempt,
  retried, prepared once and sent many times).
- [`Managed`][aioseq.contracts.Managed]: what the store needs of each object it makes, to
  share it per counter key, drop it when idle and close it with itself (httpcore's pool talks to
  its connections through such a set of public methods).
- [`SequenceSource`][aioseq.SequenceSource] and [`ItemCounter`][aioseq.ItemCounter]: what
  callers may rely on of the strategies, number first or item first.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from aioseq._endpoint import EndpointHealth
from aioseq._items import Item
from aioseq._retry import RetryEngine
from aioseq.clock import Clock
from aioseq.config import TableSpec
from aioseq.numbering import Numbering
from aioseq.observe import Observer

# SequenceSource and ItemCounter are published as aioseq.SequenceSource, aioseq.ItemCounter.
__all__ = ["Managed", "NumbersHeld", "Send", "Store", "Transport"]

Send = Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]
"""A prepared request's sender ([`Store.prepare()`][aioseq.contracts.Store.prepare]):
``await send(params)`` sends ``params`` as they are (one attempt, no check) and returns the
response."""


class Transport(Protocol):
    """One attempt at one DynamoDB request, with DynamoDB's errors as aioseq's.

    ``operation`` is botocore's method name (``"update_item"``); ``params`` and the response
    are botocore's dicts of AttributeValues. Errors are aioseq's: a
    [`StoreError`][aioseq.errors.StoreError] subclass chosen by DynamoDB's error code,
    [`ConnectionFailed`][aioseq.errors.ConnectionFailed] with ``maybe_applied`` when the
    request may have been applied and its answer lost.
    """

    @property
    def loop(self) -> asyncio.AbstractEventLoop | None:
        """The event loop the transport's connections belong to (``None``: any)."""

    @property
    def observer(self) -> Observer | None:
        """Where each request is reported (``None``: nowhere)."""

    @property
    def client(self) -> Any:
        """The aiobotocore client requests go through (``None`` for one with no client)."""

    @property
    def requests(self) -> Counter[str]:
        """Requests sent so far, by API operation name (``{"UpdateItem": 3}``)."""

    @property
    def endpoint(self) -> EndpointHealth:
        """Whether its endpoint answers (a transport that never loses one: never down)."""

    @property
    def region_name(self) -> str | None:
        """The AWS Region its requests go to (``None``: not known)."""

    def validate(self, operation: str, params: dict[str, Any]) -> None:
        """Check ``params`` for ``operation`` (nothing is sent).

        Raises:
            ConfigurationError: ``operation`` is not an operation of DynamoDB's.
            botocore.exceptions.ParamValidationError: ``params`` do not fit it.
        """

    async def send(self, operation: str, params: dict[str, Any]) -> dict[str, Any]:
        """Send one request, unchecked; ``params`` is left unchanged."""

    async def aclose(self, *, timeout_secs: float) -> None:
        """Let requests in flight finish (at most ``timeout_secs``), then refuse new ones
        ([`StoreClosed`][aioseq.errors.StoreClosed])."""


class Store(Protocol):
    """What a strategy or an allocator needs of its store:
    [`DynamoStore`][aioseq.DynamoStore]."""

    @property
    def table(self) -> TableSpec:
        """The table's spec."""

    @property
    def observer(self) -> Observer | None:
        """Where requests, retries, refills and wasted numbers are reported."""

    @property
    def retry(self) -> RetryEngine:
        """The retry engine every request runs under."""

    @property
    def closed(self) -> bool:
        """True once the store's close has begun."""

    @property
    def loop(self) -> asyncio.AbstractEventLoop | None:
        """The event loop its transport belongs to, when known."""

    @property
    def clock(self) -> Clock:
        """What to read time from and wait on."""

    @property
    def endpoint(self) -> EndpointHealth:
        """Whether its endpoint answers (the transport's)."""

    async def send_once(self, operation: str, **params: Any) -> dict[str, Any]:
        """Check and send one request: one attempt, no retries."""

    async def send_with_retries(self, operation: str, **params: Any) -> dict[str, Any]:
        """Check and send one request under the retry engine."""

    def prepare(self, operation: str, params: dict[str, Any]) -> Send:
        """Check ``params`` once and return what sends requests of that shape unchecked."""

    def counter_item_key(self, key: str) -> Item:
        """The primary key of counter ``key``'s counter item (in the store's Region)."""

    def scoped_key(self, key: str) -> str:
        """The partition key value of counter ``key`` (or a sort-key collection) in the
        store's Region: ``key``, or under Region-scoped numbering ``f"{key}@{region}"``."""

    def counter_numbering(self, numbering: Numbering) -> Numbering:
        """``numbering`` as the store's Region hands it out (under Region-scoped numbering,
        its Region's share)."""

    async def check_writes(
        self,
        key: str,
        *,
        transactions: bool = False,
        numbering: Numbering | None = None,
        recheck: bool = False,
    ) -> Numbering | None:
        """Raise unless counter ``key`` may be written from this store (once per object,
        before its first write; ``transactions``: it sends ``TransactWriteItems``;
        ``numbering``: the one it records; ``recheck``: a later reading, where a Region
        scope grown in free slots passes); the numbering the Region's counter item of
        ``key`` records under Region-scoped numbering, else ``None``."""

    def adopt(self, made: Managed) -> None:
        """Take ``made`` in, to close it with the store (again, after an idle drop).

        Raises:
            StoreClosed: the store is closed.
        """


@dataclass(frozen=True)
class NumbersHeld:
    """The numbers an object reserved and what became of them (all 0 for a counter: it hands
    out what it takes, at once).

    Attributes:
        reserved: numbers reserved from the counter item.
        handed_out: numbers handed out to callers.
        returned: numbers given back to the counter item.
        wasted: numbers that will never be handed out
            ([`WasteEvent`][aioseq.observe.WasteEvent] says why).
    """

    reserved: int = 0
    handed_out: int = 0
    returned: int = 0
    wasted: int = 0


class Managed(Protocol):
    """What a [`DynamoStore`][aioseq.DynamoStore] needs of an object it made (a strategy, a
    block allocator) to share it per counter key, drop it when idle and close it."""

    @property
    def key(self) -> str:
        """Its counter key."""

    @property
    def closed(self) -> bool:
        """True once its close has begun."""

    def activity(self) -> tuple[int, ...]:
        """What changes whenever it is used: two equal readings mean it was idle between."""

    def busy(self) -> bool:
        """A request in flight, or callers waiting: not to be dropped now."""

    async def evict(self) -> NumbersHeld:
        """Let go of what it holds for its key (numbers, a place in the queue), staying
        usable; what it returned and wasted doing so."""

    def abandon(self) -> None:
        """Closed without a request (the store's close ran out of time): what it holds is
        counted as wasted."""

    def numbers_held(self) -> NumbersHeld:
        """Its numbers so far."""

    async def aclose(self) -> None:
        """Refuse new calls and finish or fail the ones waiting; idempotent."""


@runtime_checkable
class SequenceSource(Protocol):
    """What number-first strategies offer (``AtomicCounter``, ``OptimisticCounter``)."""

    async def next(self) -> int:
        """The next number."""
        ...

    async def next_many(self, n: int) -> range:
        """``n`` consecutive numbers, as a ``range`` of length ``n``."""
        ...


@runtime_checkable
class ItemCounter(Protocol):
    """What item-first strategies offer (``SortKeyCounter``, ``TransactionalCounter``): store an
    item under the next number and return that number."""

    async def put(self, item: Any = ..., *, idempotency_key: str | None = None) -> int:
        """Store ``item`` with the next number; return the number. With ``idempotency_key``,
        once: a later call with the key returns the first call's number, writing nothing."""
        ...
