"""The four ways aioseq takes a number from DynamoDB. See each class for its guarantees."""

from __future__ import annotations

from aioseq.strategies.atomic import AtomicCounter as AtomicCounter
from aioseq.strategies.optimistic import OptimisticCounter as OptimisticCounter
from aioseq.strategies.sort_key import SortKeyCounter as SortKeyCounter
from aioseq.strategies.transactional import TransactionalCounter as TransactionalCounter

__all__ = ["AtomicCounter", "OptimisticCounter", "SortKeyCounter", "TransactionalCounter"]
