"""aioseq: ever-increasing sequence numbers from Amazon DynamoDB, for asyncio.

Open one [`DynamoStore`][aioseq.DynamoStore] for the life of the application and make counters from
it:

    async with aioseq.DynamoStore.open() as store:
        orders = store.atomic_counter("orders")
        number = await orders.next()
"""

from importlib.metadata import PackageNotFoundError, version

# the store: one pooled client, one table, one shared object per counter key
from aioseq._registry import StoreStatistics as StoreStatistics
from aioseq._store import DynamoStore as DynamoStore

# counter administration (the functions: aioseq.admin)
from aioseq.admin import CounterInfo as CounterInfo

# the block allocator
from aioseq.allocator import AllocatorStatistics as AllocatorStatistics
from aioseq.allocator import BlockAllocator as BlockAllocator
from aioseq.config import DEFAULT_TABLE_NAME as DEFAULT_TABLE_NAME
from aioseq.config import MAX_NUMBER as MAX_NUMBER
from aioseq.config import MAX_SAFE_INTEGER as MAX_SAFE_INTEGER
from aioseq.config import GroupCommit as GroupCommit
from aioseq.config import RetryPolicy as RetryPolicy
from aioseq.config import TableSpec as TableSpec

# value types
from aioseq.contracts import ItemCounter as ItemCounter
from aioseq.contracts import SequenceSource as SequenceSource

# errors
from aioseq.errors import AioseqError as AioseqError
from aioseq.errors import ConditionFailed as ConditionFailed
from aioseq.errors import ConfigurationError as ConfigurationError
from aioseq.errors import ConnectionFailed as ConnectionFailed
from aioseq.errors import CounterBehindItems as CounterBehindItems
from aioseq.errors import CounterNotFound as CounterNotFound
from aioseq.errors import CounterValueInvalid as CounterValueInvalid
from aioseq.errors import CounterWouldMoveBack as CounterWouldMoveBack
from aioseq.errors import EndpointDown as EndpointDown
from aioseq.errors import EndpointUnreachable as EndpointUnreachable
from aioseq.errors import FutureDated as FutureDated
from aioseq.errors import IdempotencyKeyInvalid as IdempotencyKeyInvalid
from aioseq.errors import IdempotencyKeyReused as IdempotencyKeyReused
from aioseq.errors import ItemAlreadyExists as ItemAlreadyExists
from aioseq.errors import NotDynamoDB as NotDynamoDB
from aioseq.errors import NotHomeRegion as NotHomeRegion
from aioseq.errors import NotSupportedByTable as NotSupportedByTable
from aioseq.errors import NumberingMismatch as NumberingMismatch
from aioseq.errors import NumberOutOfRange as NumberOutOfRange
from aioseq.errors import PeriodClosed as PeriodClosed
from aioseq.errors import RegionNotListed as RegionNotListed
from aioseq.errors import RetriesExhausted as RetriesExhausted
from aioseq.errors import ServiceUnavailable as ServiceUnavailable
from aioseq.errors import StoreClosed as StoreClosed
from aioseq.errors import StoreError as StoreError
from aioseq.errors import StoreNotOpened as StoreNotOpened
from aioseq.errors import TableNotFound as TableNotFound
from aioseq.errors import Throttled as Throttled
from aioseq.errors import TransactionCanceled as TransactionCanceled
from aioseq.errors import TransactionConflict as TransactionConflict
from aioseq.errors import UnsafeGlobalTable as UnsafeGlobalTable
from aioseq.errors import ValidationFailed as ValidationFailed
from aioseq.errors import WrongEventLoop as WrongEventLoop

# formatting numbers as identifiers and sort keys
from aioseq.formatting import IdFormat as IdFormat
from aioseq.formatting import zero_pad as zero_pad

# web services: aioseq's errors as HTTP answers
from aioseq.http import HttpAnswer as HttpAnswer
from aioseq.http import http_answer as http_answer

# item layouts
from aioseq.layout import ShardedItems as ShardedItems

# configuration
from aioseq.numbering import Numbering as Numbering
from aioseq.numbering import RegionScope as RegionScope

# observability
from aioseq.observe import Observer as Observer
from aioseq.observe import StatisticsObserver as StatisticsObserver

# global tables
from aioseq.regions import Replication as Replication

# invoice series: a counter per calendar period
from aioseq.series import Series as Series

# strategies
from aioseq.strategies import AtomicCounter as AtomicCounter
from aioseq.strategies import OptimisticCounter as OptimisticCounter
from aioseq.strategies import SortKeyCounter as SortKeyCounter
from aioseq.strategies import TransactionalCounter as TransactionalCounter
from aioseq.strategies._base import CounterStatistics as CounterStatistics
from aioseq.strategies.transactional import ItemSpec as ItemSpec

try:
    __version__ = version("aioseq")
except PackageNotFoundError:  # pragma: no cover - running from a source tree
    __version__ = "0.0.0"

__all__ = [
    "DEFAULT_TABLE_NAME",
    "MAX_NUMBER",
    "MAX_SAFE_INTEGER",
    "AioseqError",
    "AllocatorStatistics",
    "AtomicCounter",
    "BlockAllocator",
    "ConditionFailed",
    "ConfigurationError",
    "ConnectionFailed",
    "CounterBehindItems",
    "CounterInfo",
    "CounterNotFound",
    "CounterStatistics",
    "CounterValueInvalid",
    "CounterWouldMoveBack",
    "DynamoStore",
    "EndpointDown",
    "EndpointUnreachable",
    "FutureDated",
    "GroupCommit",
    "HttpAnswer",
    "IdFormat",
    "IdempotencyKeyInvalid",
    "IdempotencyKeyReused",
    "ItemAlreadyExists",
    "ItemCounter",
    "ItemSpec",
    "NotDynamoDB",
    "NotHomeRegion",
    "NotSupportedByTable",
    "NumberOutOfRange",
    "Numbering",
    "NumberingMismatch",
    "Observer",
    "OptimisticCounter",
    "PeriodClosed",
    "RegionNotListed",
    "RegionScope",
    "Replication",
    "RetriesExhausted",
    "RetryPolicy",
    "SequenceSource",
    "Series",
    "ServiceUnavailable",
    "ShardedItems",
    "SortKeyCounter",
    "StatisticsObserver",
    "StoreClosed",
    "StoreError",
    "StoreNotOpened",
    "StoreStatistics",
    "TableNotFound",
    "TableSpec",
    "Throttled",
    "TransactionCanceled",
    "TransactionConflict",
    "TransactionalCounter",
    "UnsafeGlobalTable",
    "ValidationFailed",
    "WrongEventLoop",
    "http_answer",
    "zero_pad",
]

for _name in __all__:
    _obj = globals()[_name]
    if isinstance(_obj, type):
        _obj.__module__ = "aioseq"
del _name, _obj
