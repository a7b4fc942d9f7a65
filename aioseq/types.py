"""Protocols and value types shared by the strategies."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

__all__ = ["CounterStatistics", "ItemCounter", "SequenceSource"]


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

    async def put(self, item: Any = ...) -> int:
        """Store ``item`` with the next number; return the number."""
        ...


@dataclass(frozen=True)
class CounterStatistics:
    """A snapshot of one counter object's work since it was made.

    Attributes:
        numbers: numbers handed out (or items stored) successfully.
        retries: retries by reason (DynamoDB error code, or ``TransactionCanceled:<codes>``).
        conflicts: how many of those retries were lost races (a failed condition on the counter
            item or on the candidate sort key).
        recovered: numbers of writes whose answer was lost, found applied when resent (their
            callers got them, once).
        unresolved: numbers of writes whose answer was lost and whose outcome could not be
            told any more (see [`RECENT_WRITES`][aioseq.config.RECENT_WRITES]): possibly taken,
            never handed out.
    """

    numbers: int = 0
    retries: Mapping[str, int] = field(default_factory=dict)
    conflicts: int = 0
    recovered: int = 0
    unresolved: int = 0
