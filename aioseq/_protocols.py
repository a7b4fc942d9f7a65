"""What the strategies and the allocator need of the store they are made on, as a
``Protocol``: they depend on this, not on [`DynamoStore`][aioseq.DynamoStore] (which imports them to
make them), so no import runs back up the layers.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from aioseq._retry import RetryEngine
from aioseq._values import Item
from aioseq.config import TableSpec
from aioseq.observe import Observer

__all__ = ["Closeable", "Store"]


class Closeable(Protocol):
    """What a store closes with itself: its counters and allocators."""

    async def aclose(self) -> None: ...


class Store(Protocol):
    """A table, a retry engine and a way to send one request:
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
        """The event loop its client belongs to, when known."""

    async def call(self, operation: str, **params: Any) -> dict[str, Any]:
        """Send one request (one attempt; no retries)."""

    #: `call()` with the parameters as one dict that it leaves unchanged, so a strategy
    #: may send a request it built once (the transport's own method: no frame in between).
    _send: Callable[[str, dict[str, Any]], Awaitable[dict[str, Any]]]

    def counter_item_key(self, key: str) -> Item:
        """The primary key of counter ``key``'s counter item."""

    def _check_request(self, operation: str, params: dict[str, Any]) -> None:
        """Check a request built once, before `_send` sends it unchecked, many times."""

    def _adopt(self, thing: Closeable) -> None:
        """Remember ``thing`` to close it with the store (again, after the store dropped it
        as idle: see `aioseq._registry.Registry.revive()`)."""
