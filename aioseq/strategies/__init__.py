"""The four ways aioseq takes a number from DynamoDB. See each class for its guarantees."""

from aioseq.strategies.counter import AtomicCounter as AtomicCounter
from aioseq.strategies.optimistic import OptimisticCounter as OptimisticCounter
from aioseq.strategies.sort_key import SortKeyCounter as SortKeyCounter
from aioseq.strategies.transactional import GaplessCounter as GaplessCounter

__all__ = ["AtomicCounter", "GaplessCounter", "OptimisticCounter", "SortKeyCounter"]
