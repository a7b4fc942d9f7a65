"""``DynamoStore``: the front door. It holds the table spec, the retry policy and its engine,
the observer, the transport (one long-lived DynamoDB client, opened here or borrowed from the
application) and everything made on it (counters, allocators), which it closes with itself; its
typed factories make the strategies and the allocator. botocore lives in
`aioseq._transport`, retries in `aioseq._retry`, counter administration in
[`aioseq.admin`][aioseq.admin].
"""

from __future__ import annotations

import asyncio
import functools
import itertools
import logging
import weakref
from collections import Counter
from collections.abc import Awaitable, Callable, Generator, Sequence
from typing import TYPE_CHECKING, Any, Literal, NoReturn, overload

import aioboto3

from aioseq import _table
from aioseq._checks import check_count, check_endpoint_url, check_seconds
from aioseq._client import open_client
from aioseq._endpoint import EndpointHealth
from aioseq._items import Item
from aioseq._options import StoreOptions
from aioseq._registry import Registry, StoreStatistics
from aioseq._retry import RetryEngine
from aioseq._transport import BotocoreTransport
from aioseq.allocator import BlockAllocator
from aioseq.clock import Clock, LoopClock
from aioseq.config import (
    DEFAULT_TABLE_NAME,
    IDEMPOTENCY_MEMORY_BYTES,
    IDEMPOTENCY_TTL_SECS,
    MAX_NUMBER,
    NUMBERING_ATTRIBUTE,
    GroupCommit,
    RetryPolicy,
    TableSpec,
)
from aioseq.contracts import Managed, Send, Transport
from aioseq.errors import (
    ConditionFailed,
    ConfigurationError,
    NumberingMismatch,
    StoreClosed,
    StoreError,
    StoreNotOpened,
    WrongEventLoop,
)
from aioseq.formatting import IdFormat
from aioseq.layout import ShardedItems
from aioseq.numbering import (
    UNSCOPED,
    Numbering,
    RegionScope,
    ScopeRecord,
    check_recorded,
    recorded_text,
    scope_kept,
)
from aioseq.observe import Observer
from aioseq.regions import Replication, write_refusal
from aioseq.series import DEFAULT_FUTURE_SECS, Series
from aioseq.strategies.atomic import AtomicCounter
from aioseq.strategies.optimistic import OptimisticCounter, WriteForm
from aioseq.strategies.sort_key import OnConflict, SortKeyCounter
from aioseq.strategies.transactional import TransactionalCounter

if TYPE_CHECKING:
    from types_aiobotocore_dynamodb import DynamoDBClient
else:
    DynamoDBClient = Any

__all__ = ["DynamoStore"]

log = logging.getLogger("aioseq")

#: The default ``idle_secs``: a shared object unused for 5 minutes is dropped (one conditional
#: write per dropped allocator; a key used at least every few minutes is never dropped).
DEFAULT_IDLE_SECS = 300.0
#: The most objects [`DynamoStore.aclose()`][aioseq.DynamoStore.aclose] closes at once (each at most
#: one write).
CLOSES_IN_FLIGHT = 32


class DynamoStore:
    """One DynamoDB client and one table, shared by every strategy and allocator.

    Make one per application and keep it for the application's life: it pools connections, so
    ``next()`` never opens a client. ``async with DynamoStore.open(...) as store:`` opens and
    owns an aioboto3 client; ``DynamoStore(client, table)`` borrows one and never closes it.
    Its factories (``store.block_allocator(key)``, ...) return the one object the store keeps
    per counter key and options ([Many counters](../many-counters.md)). Before its first write
    it reads ``DescribeTable`` once (no capacity units) and refuses to write counters where
    two Regions could hand out one number ([Global tables](../global-tables.md)).

    Parameters:
        client: an open aiobotocore DynamoDB client (borrowed: never closed by the store).
        table: the table's name, or its full [`TableSpec`][aioseq.TableSpec].
        transport: in place of ``client``, the [`Transport`][aioseq.contracts.Transport] to send
            through and close with the store (such as [`FakeDynamoDB`][aioseq.testing.FakeDynamoDB]
            in tests); its observer is the store's.
        retry_policy: how strategies made from this store retry.
        observer: an [`Observer`][aioseq.observe.Observer] told of every request, retry,
            refill, wasted number and dropped idle object (default: none; with one, item
            requests ask for ``ReturnConsumedCapacity=TOTAL``).
        idle_secs: how long, in seconds, an object the factories keep may go unused before the
            store drops it, between ``idle_secs`` and twice that after its last use (default
            `DEFAULT_IDLE_SECS`, 5 minutes; ``None``: never). A dropped block allocator gives
            its unused numbers back (one conditional ``UpdateItem``).
        clock: the [`Clock`][aioseq.clock.Clock] the store and everything made on it read
            time from and wait on (default: the running event loop's, `LoopClock`).
        runway_secs: the runway, in seconds, of the block allocators the factory makes without
            one of their own (default ``None``, or ``0``: none).
        regions: Region-scoped numbering for a global table: the Regions that take numbers, in
            slot order (``["us-east-1", "eu-west-1"]``), or a [`RegionScope`][aioseq.RegionScope].
        region_slots: with ``regions``, the count of slots (default: the Regions listed).
        home_region: the one Region whose stores write counters; stores elsewhere read only
            ([`NotHomeRegion`][aioseq.errors.NotHomeRegion] on a write). Not with ``regions``.
        region_name: the store's Region (default: its transport's, which is the client's).

    Raises:
        ConfigurationError: neither or both of ``client`` and ``transport``, an observer with
            a transport, a bad argument, both ``regions`` and ``home_region``, or ``regions``
            with no Region known for the store.
        RegionNotListed: the store's Region is not among ``regions``.
    """

    def __init__(
        self,
        client: DynamoDBClient | None = None,
        table: TableSpec | str = DEFAULT_TABLE_NAME,
        *,
        transport: Transport | None = None,
        retry_policy: RetryPolicy | None = None,
        observer: Observer | None = None,
        idle_secs: float | None = DEFAULT_IDLE_SECS,
        clock: Clock | None = None,
        runway_secs: float | None = None,
        regions: Sequence[str] | RegionScope | None = None,
        region_slots: int | None = None,
        home_region: str | None = None,
        region_name: str | None = None,
    ) -> None:
        options = StoreOptions.of(
            table=table,
            idle_secs=idle_secs,
            runway_secs=runway_secs,
            regions=regions,
            region_slots=region_slots,
            home_region=home_region,
            region_name=region_name,
        )
        spec, scope, region_name = options.table, options.region_scope, options.region_name
        #: The runway of the block allocators `block_allocator()` makes without one of their own.
        self.runway_secs = options.runway_secs
        #: What this store and everything made on it measure time and wait on.
        self.clock: Clock = clock or LoopClock()
        self.retry_policy = retry_policy or RetryPolicy()
        if transport is None:
            if client is None:
                raise ConfigurationError("DynamoStore takes a client or a transport=")
            transport = BotocoreTransport(
                client,
                observer=observer,
                table_name=spec.name,
                clock=self.clock,
                down_after_secs=self.retry_policy.max_unreachable_secs,
            )
        elif client is not None or observer is not None:
            raise ConfigurationError(
                "DynamoStore takes a client or a transport=, not both; a transport's observer"
                " is the transport's own"
            )
        self.transport: Transport = transport
        self.table = spec
        if region_name is not None and transport.region_name not in (None, region_name):
            raise ConfigurationError(
                f"region_name={region_name!r}, but the client sends to"
                f" {transport.region_name!r}: a store's Region is where its requests go"
            )
        #: This store's Region: ``region_name``, else its transport's (its client's).
        self.region: str | None = region_name or transport.region_name
        #: Region-scoped numbering (``regions=``), or ``None``.
        self.region_scope = scope
        #: The one Region that writes counters (``home_region=``), or ``None``.
        self.home_region = home_region
        if scope is not None:
            if self.region is None:
                raise ConfigurationError(
                    "regions= needs the store's Region: pass region_name= (the client has none)"
                )
            scope.slot(self.region)  # RegionNotListed, before anything is made or sent
        self._replication: Replication | None = None
        self._describing: asyncio.Future[Replication] | None = None
        self.observer = transport.observer
        #: The retry engine every request of this store and its objects runs under.
        self.retry = RetryEngine(
            self.retry_policy, self.observer, self.clock, answers=transport.endpoint
        )
        self._closed = False  # aclose() began: new calls on the store's objects are refused
        self._close_task: asyncio.Task[None] | None = None
        # Everything made on this store (counters, allocators), closed with it.
        # (by the order each was made: a close gives back in the same order every run)
        self._made: weakref.WeakKeyDictionary[Managed, int] = weakref.WeakKeyDictionary()
        self._adopted = itertools.count()
        self._made_peak = 0
        #: The objects the factories share, one per factory and key.
        self._shared = Registry(
            options.idle_secs, self.observer, self.clock, after_sweep=self._shrink_made
        )

    @property
    def client(self) -> DynamoDBClient:
        """The aiobotocore DynamoDB client requests go through (its transport's)."""
        client: DynamoDBClient = self.transport.client
        return client

    # --- lifecycle --------------------------------------------------------------------------

    @staticmethod
    def open(
        *,
        table: TableSpec | str = DEFAULT_TABLE_NAME,
        endpoint_url: str | None = None,
        region_name: str | None = None,
        max_pool_connections: int = 50,
        connect_timeout_secs: float = 5.0,
        read_timeout_secs: float = 10.0,
        retry_policy: RetryPolicy | None = None,
        session: aioboto3.Session | None = None,
        observer: Observer | None = None,
        idle_secs: float | None = DEFAULT_IDLE_SECS,
        clock: Clock | None = None,
        runway_secs: float | None = None,
        regions: Sequence[str] | RegionScope | None = None,
        region_slots: int | None = None,
        home_region: str | None = None,
    ) -> _Opening:
        """Open an aioboto3 session and one DynamoDB client that this store owns.

        Endpoint and region come from the usual places: ``endpoint_url=``, else botocore's
        ``AWS_ENDPOINT_URL_DYNAMODB`` / ``AWS_ENDPOINT_URL``; ``region_name=``, else
        ``AWS_REGION`` / ``AWS_DEFAULT_REGION`` / the profile; credentials from the default chain.
        With a custom endpoint (DynamoDB Local, moto) and nothing configured, the region defaults
        to ``us-east-1`` and the credentials to a dummy pair, which local servers accept.

        botocore's own retries are switched off (``total_max_attempts=1``): ``retry_policy`` is
        the only retry policy that runs; so is botocore's per-call parameter check: aioseq checks
        its requests once, when it builds them, and
        [`send_once()`][aioseq.DynamoStore.send_once] checks what its caller passes (a request
        sent on ``store.client`` directly is not checked).

        Parameters:
            table: the table's name or [`TableSpec`][aioseq.TableSpec].
            endpoint_url: e.g. ``"http://127.0.0.1:8000"``.
            region_name: e.g. ``"eu-west-1"``.
            max_pool_connections: HTTP connections kept open (>= 1).
            connect_timeout_secs, read_timeout_secs: per request, in seconds.
            retry_policy: see [`RetryPolicy`][aioseq.RetryPolicy].
            session: an aioboto3 session to make the client from (default: a new one).
            observer: see [`DynamoStore`][aioseq.DynamoStore] and
                [`aioseq.observe`][aioseq.observe].
            idle_secs, clock, runway_secs: see [`DynamoStore`][aioseq.DynamoStore].
            regions, region_slots, home_region: how counters are shared across the Regions of
                a global table; see [`DynamoStore`][aioseq.DynamoStore] and
                [`aioseq.regions`][aioseq.regions]. The store's Region is its client's.

        Returns:
            an awaitable that is also an async context manager, giving the open store.

        Raises:
            ConfigurationError: a bad argument (checked before anything is opened), or, when
                awaited, an endpoint from the environment that is not a URL, a region that is
                missing (and no endpoint is configured) or malformed, or no credentials for AWS.
            StoreNotOpened: what it returns used as the store (an attribute of it, an
                ``await`` forgotten), or entered with ``with`` in place of ``async with``.
        """
        check_count(max_pool_connections, "max_pool_connections", maximum=10_000)
        check_seconds(connect_timeout_secs, "connect_timeout_secs")
        check_seconds(read_timeout_secs, "read_timeout_secs")
        if endpoint_url is not None:
            check_endpoint_url(endpoint_url, "endpoint_url")
        options = StoreOptions.of(
            table=table,
            idle_secs=idle_secs,
            runway_secs=runway_secs,
            regions=regions,
            region_slots=region_slots,
            home_region=home_region,
            region_name=region_name,
        )

        async def open_store() -> DynamoStore:
            client, stack, hint = await open_client(
                session=session,
                endpoint_url=endpoint_url,
                region_name=region_name,
                max_pool_connections=max_pool_connections,
                connect_timeout_secs=connect_timeout_secs,
                read_timeout_secs=read_timeout_secs,
            )
            transport = BotocoreTransport(  # its client leaves parameter checks to it
                client,
                owner=stack,
                observer=observer,
                table_name=options.table.name,
                validates=True,
                clock=clock,
                down_after_secs=(retry_policy or RetryPolicy()).max_unreachable_secs,
                endpoint_hint=hint,
            )
            try:
                return DynamoStore(  # (its options checked already: they pass again)
                    table=options.table,
                    transport=transport,
                    retry_policy=retry_policy,
                    idle_secs=options.idle_secs,
                    clock=clock,
                    runway_secs=options.runway_secs,
                    regions=options.region_scope,
                    home_region=options.home_region,
                )
            except BaseException:
                await transport.aclose(timeout_secs=connect_timeout_secs)
                raise

        return _Opening(open_store)

    async def aclose(self, *, timeout_secs: float = 10.0) -> None:
        """Close everything this store made, then its client (if it opened it: a borrowed
        client stays open). Idempotent; bounded in time; safe to cancel.

        In order: new calls on the store and on everything made from it raise
        [`StoreClosed`][aioseq.errors.StoreClosed] at once; every block allocator made from it is
        closed (its refill in flight finishes, its waiting callers get ``StoreClosed``, its
        unused numbers are given back: one conditional ``UpdateItem``); every grouped counter
        lets the group in flight finish and fails the callers still waiting with
        ``StoreClosed``; requests already sent are left ``timeout_secs`` in all to finish, so
        their callers get their numbers (a write in flight is never abandoned midway by
        choice); then the client is closed (if the store opened it), and a request it cuts off
        gets ``StoreClosed`` with ``maybe_applied`` set.

        The close runs in a task of its own, shielded: a caller cancelled while awaiting it
        gets ``CancelledError``, and the close still runs to the end (the client is never
        left open with the store marked closed; asyncpg's ``Pool.close`` does the same).

        Parameters:
            timeout_secs: the most the close waits for the store's objects and requests
                before it closes the client (a finite number of seconds > 0).

        Raises:
            ConfigurationError: a bad ``timeout_secs``.
            WrongEventLoop: called from another event loop than the store's (its client's,
                or the one its objects were made in), running or closed: nothing is closed,
                as its connections and tasks can only be closed there. Close a store in its
                own loop before that loop ends (``asyncio.run()`` closes its loop when it
                returns).
        """
        check_seconds(timeout_secs, "timeout_secs")
        home = self.loop or self._shared.loop
        if home is not None and home is not asyncio.get_running_loop():
            if home.is_closed():
                raise WrongEventLoop(
                    f"this DynamoStore belongs to an event loop that is closed now ({home!r}:"
                    " the one it was opened in, or its counters were made in), so its"
                    " connections and tasks can no longer be closed; nothing was closed."
                    " Close a store in its own loop before that loop ends: with asyncio.run(),"
                    " inside the coroutine it runs (async with DynamoStore.open(...) as"
                    " store: ...)"
                )
            raise WrongEventLoop(
                f"this DynamoStore belongs to another event loop ({home!r}): close it there"
                " (await store.aclose() in the loop that opened it); nothing was closed"
            )
        if self._close_task is None:
            self._closed = True
            self._close_task = asyncio.ensure_future(self._close(timeout_secs))
        await asyncio.shield(self._close_task)

    async def _close(self, timeout_secs: float) -> None:
        clock = self.clock
        deadline = clock.now() + timeout_secs
        if self._describing is not None:
            self._describing.cancel()  # its callers get StoreClosed
        await self._shared.aclose()
        made = sorted(self._made, key=self._made.__getitem__)
        # (An allocator's give-back goes through the atomic counter it owns and closes: the
        # store never closes that one.) A close that outlasts the deadline is cancelled, each
        # one's own clean-up still running.
        try:
            await asyncio.wait_for(_close_all(made), max(0.0, deadline - clock.now()))
        except asyncio.TimeoutError:
            log.warning("DynamoStore.aclose(): objects still busy after %.1f s", timeout_secs)
            for thing in made:  # one its close never reached: its numbers count as wasted
                thing.abandon()
        await self.transport.aclose(timeout_secs=max(0.0, deadline - clock.now()))

    def adopt(self, made: Managed) -> None:
        """Take in an object made on this store, to close it with the store (one dropped as
        idle and in use again is shared again). The classes call it when they are made.

        Raises:
            StoreClosed: the store is closed (or closing).
        """
        self._check_open()
        self._made.setdefault(made, next(self._adopted))
        self._shared.revive(made)

    def _shrink_made(self) -> None:
        """Rebuild the set of what this store made once it holds under a quarter of its
        peak (a set keeps the room of its largest size: 100,000 keys dropped would otherwise
        keep megabytes)."""
        size = len(self._made)
        self._made_peak = max(self._made_peak, size)
        if self._made_peak > 1024 and size < self._made_peak // 4:
            self._made = weakref.WeakKeyDictionary(self._made)
            self._made_peak = size

    def _check_open(self) -> None:
        if self._closed:
            raise StoreClosed("this DynamoStore is closed")

    @property
    def closed(self) -> bool:
        """True once [`aclose()`][aioseq.DynamoStore.aclose] has begun."""
        return self._closed

    @property
    def endpoint(self) -> EndpointHealth:
        """Whether the endpoint answers. ``endpoint.down_since`` is the reading of the store's
        [`clock`][aioseq.clock.Clock] (``store.clock.now()``: monotonic seconds, by default
        ``time.monotonic()``, not a time of day) when it went down, ``None`` while it answers;
        it has been down ``store.clock.now() - endpoint.down_since`` seconds.
        ``endpoint.up_since`` is the reading when it last came up. While it is down, requests
        fail at once with [`EndpointDown`][aioseq.errors.EndpointDown]."""
        return self.transport.endpoint

    @property
    def loop(self) -> asyncio.AbstractEventLoop | None:
        """The event loop this store's client belongs to: the one it was opened in, or, for a
        borrowed client, the one the store was made in (``None`` when made outside one).
        Counters and allocators made on the store refuse any other
        ([`WrongEventLoop`][aioseq.errors.WrongEventLoop])."""
        return self.transport.loop

    async def __aenter__(self) -> DynamoStore:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    def __repr__(self) -> str:
        state = "closed" if self._closed else "open"
        return (
            f"<DynamoStore table={self.table.name!r} {state}"
            f" requests={sum(self.transport.requests.values())}>"
        )

    # --- the counters -----------------------------------------------------------------------

    # Each factory: the options as a tuple, defaults filled in (one look-up when the key's
    # object is shared already, the per-request path), or the class made and shared.

    def atomic_counter(
        self, key: str, *, max_value: int = MAX_NUMBER, numbering: Numbering | None = None
    ) -> AtomicCounter:
        """The [`AtomicCounter`][aioseq.AtomicCounter] this store shares for ``key``: made as
        ``AtomicCounter(store, key, ...)`` with these arguments on the first call, the same
        object on every later call.

        Raises:
            ConfigurationError: a bad argument, or ``key``'s shared counter has other options;
                a refusal to write known already (`UnsafeGlobalTable`, `RegionNotListed`,
                `NotSupportedByTable`: see [`check_writes()`][aioseq.DynamoStore.check_writes]).
            WrongEventLoop: a new key, from another event loop than the store's.
        """
        options = (max_value, numbering)
        found: AtomicCounter | None = self._shared.shared(
            "atomic_counter", key, options, ("max_value", "numbering")
        )
        if found is None:
            self.refuse_writes_known()
            made = AtomicCounter(self, key, max_value=max_value, numbering=numbering)
            found = self._shared.add("atomic_counter", options, made)
        return found

    def optimistic_counter(
        self,
        key: str,
        *,
        write: WriteForm = "update",
        max_value: int = MAX_NUMBER,
        max_in_flight: int | None = 1,
        group: GroupCommit | bool = True,
    ) -> OptimisticCounter:
        """The [`OptimisticCounter`][aioseq.OptimisticCounter] this store shares for ``key``:
        made as ``OptimisticCounter(store, key, ...)`` with these arguments on the first call,
        the same object on every later call.

        Raises:
            ConfigurationError: a bad argument, or ``key``'s shared counter has other options;
                a refusal to write known already (`UnsafeGlobalTable`, `RegionNotListed`,
                `NotSupportedByTable`: see [`check_writes()`][aioseq.DynamoStore.check_writes]).
            WrongEventLoop: a new key, from another event loop than the store's.
        """
        options = (write, max_value, max_in_flight, _grouping(group))
        found: OptimisticCounter | None = self._shared.shared(
            "optimistic_counter", key, options, ("write", "max_value", "max_in_flight", "group")
        )
        if found is None:
            self.refuse_writes_known()
            made = OptimisticCounter(
                self,
                key,
                write=write,
                max_value=max_value,
                max_in_flight=max_in_flight,
                group=group,
            )
            found = self._shared.add("optimistic_counter", options, made)
        return found

    def sort_key_counter(
        self,
        partition: str,
        *,
        on_conflict: OnConflict = "requery",
        consistent_read: bool = True,
        zero_pad: int | None = None,
        max_value: int = MAX_NUMBER,
        max_in_flight: int | None = 1,
        group: GroupCommit | bool = True,
        idempotency_ttl_secs: float = IDEMPOTENCY_TTL_SECS,
        idempotency_memory_bytes: int = IDEMPOTENCY_MEMORY_BYTES,
    ) -> SortKeyCounter:
        """The [`SortKeyCounter`][aioseq.SortKeyCounter] this store shares for ``partition``:
        made as ``SortKeyCounter(store, partition, ...)`` with these arguments on the first
        call, the same object on every later call.

        Raises:
            ConfigurationError: a bad argument, or the partition's shared counter has other
                options; a refusal to write known already (`UnsafeGlobalTable`,
                `RegionNotListed`, `NotSupportedByTable` when grouped: see
                [`check_writes()`][aioseq.DynamoStore.check_writes]).
            WrongEventLoop: a new partition, from another event loop than the store's.
        """
        options = (
            on_conflict,
            consistent_read,
            zero_pad,
            max_value,
            max_in_flight,
            _grouping(group),
            idempotency_ttl_secs,
            idempotency_memory_bytes,
        )
        found: SortKeyCounter | None = self._shared.shared(
            "sort_key_counter", partition, options, _SORT_KEY_OPTIONS
        )
        if found is None:
            self.refuse_writes_known(transactions=group is not False)
            made = SortKeyCounter(
                self,
                partition,
                on_conflict=on_conflict,
                consistent_read=consistent_read,
                zero_pad=zero_pad,
                max_value=max_value,
                max_in_flight=max_in_flight,
                group=group,
                idempotency_ttl_secs=idempotency_ttl_secs,
                idempotency_memory_bytes=idempotency_memory_bytes,
            )
            found = self._shared.add("sort_key_counter", options, made)
        return found

    def transactional_counter(
        self,
        key: str,
        *,
        item_table: str | None = None,
        item_partition_key: str | None = None,
        number_attribute: str = "number",
        max_value: int = MAX_NUMBER,
        max_in_flight: int | None = 1,
        group: GroupCommit | bool = True,
        idempotency_ttl_secs: float = IDEMPOTENCY_TTL_SECS,
        idempotency_memory_bytes: int = IDEMPOTENCY_MEMORY_BYTES,
        layout: ShardedItems | None = None,
    ) -> TransactionalCounter:
        """The [`TransactionalCounter`][aioseq.TransactionalCounter] this store shares for
        ``key``: made as ``TransactionalCounter(store, key, ...)`` with these arguments on the
        first call, the same object on every later call.

        Raises:
            ConfigurationError: a bad argument, or ``key``'s shared counter has other options;
                a refusal to write known already (`UnsafeGlobalTable`, `RegionNotListed`,
                `NotSupportedByTable`: see [`check_writes()`][aioseq.DynamoStore.check_writes]).
            WrongEventLoop: a new key, from another event loop than the store's.
        """
        options = (
            item_table,
            item_partition_key,
            number_attribute,
            max_value,
            max_in_flight,
            _grouping(group),
            idempotency_ttl_secs,
            idempotency_memory_bytes,
            layout,
        )
        found: TransactionalCounter | None = self._shared.shared(
            "transactional_counter", key, options, _TRANSACTIONAL_OPTIONS
        )
        if found is None:
            self.refuse_writes_known(transactions=True)
            made = TransactionalCounter(
                self,
                key,
                item_table=item_table,
                item_partition_key=item_partition_key,
                number_attribute=number_attribute,
                max_value=max_value,
                max_in_flight=max_in_flight,
                group=group,
                idempotency_ttl_secs=idempotency_ttl_secs,
                idempotency_memory_bytes=idempotency_memory_bytes,
                layout=layout,
            )
            found = self._shared.add("transactional_counter", options, made)
        return found

    def block_allocator(
        self,
        key: str,
        *,
        block_size: int = 100,
        min_block_size: int = 1,
        max_block_size: int = 100_000,
        target_refill_interval_secs: float | None = 10.0,
        prefetch_at: float = 0.5,
        stride: int = 1,
        offset: int = 1,
        max_value: int = MAX_NUMBER,
        runway_secs: float | None = None,
    ) -> BlockAllocator:
        """The [`BlockAllocator`][aioseq.BlockAllocator] this store shares for ``key``: made as
        ``BlockAllocator(store, key, ...)`` with these arguments on the first call, the same
        object (and so the same block) on every later call. ``runway_secs=None`` takes the
        store's ``runway_secs``; ``0`` means no runway.

        Raises:
            ConfigurationError: a bad argument, or ``key``'s shared allocator has other
                options; a refusal to write known already (`UnsafeGlobalTable`,
                `RegionNotListed`: see [`check_writes()`][aioseq.DynamoStore.check_writes]).
            WrongEventLoop: a new key, from another event loop than the store's.
        """
        if runway_secs is None:
            runway_secs = self.runway_secs
        elif runway_secs == 0 and not isinstance(runway_secs, bool):
            runway_secs = None  # one allocator without the store's runway
        options = (
            block_size,
            min_block_size,
            max_block_size,
            target_refill_interval_secs,
            prefetch_at,
            stride,
            offset,
            max_value,
            runway_secs,
        )
        found: BlockAllocator | None = self._shared.shared(
            "block_allocator", key, options, _ALLOCATOR_OPTIONS
        )
        if found is None:
            self.refuse_writes_known()
            made = BlockAllocator(
                self,
                key,
                block_size=block_size,
                min_block_size=min_block_size,
                max_block_size=max_block_size,
                target_refill_interval_secs=target_refill_interval_secs,
                prefetch_at=prefetch_at,
                stride=stride,
                offset=offset,
                max_value=max_value,
                runway_secs=runway_secs,
            )
            found = self._shared.add("block_allocator", options, made)
        return found

    # One overload per strategy, so that series.at() has the strategy's type.
    @overload
    def series(
        self,
        key: str,
        *,
        period: str,
        tz: str,
        strategy: Literal["transactional"] = ...,
        grace_secs: float | None = ...,
        future_secs: float | None = ...,
        id_format: IdFormat | None = ...,
        **options: Any,
    ) -> Series[TransactionalCounter]: ...
    @overload
    def series(
        self,
        key: str,
        *,
        period: str,
        tz: str,
        strategy: Literal["sort-key"],
        grace_secs: float | None = ...,
        future_secs: float | None = ...,
        id_format: IdFormat | None = ...,
        **options: Any,
    ) -> Series[SortKeyCounter]: ...
    @overload
    def series(
        self,
        key: str,
        *,
        period: str,
        tz: str,
        strategy: Literal["optimistic"],
        grace_secs: float | None = ...,
        future_secs: float | None = ...,
        id_format: IdFormat | None = ...,
        **options: Any,
    ) -> Series[OptimisticCounter]: ...
    @overload
    def series(
        self,
        key: str,
        *,
        period: str,
        tz: str,
        strategy: Literal["atomic"],
        grace_secs: float | None = ...,
        future_secs: float | None = ...,
        id_format: IdFormat | None = ...,
        **options: Any,
    ) -> Series[AtomicCounter]: ...
    @overload
    def series(
        self,
        key: str,
        *,
        period: str,
        tz: str,
        strategy: Literal["allocator"],
        grace_secs: float | None = ...,
        future_secs: float | None = ...,
        id_format: IdFormat | None = ...,
        **options: Any,
    ) -> Series[BlockAllocator]: ...
    @overload
    def series(
        self,
        key: str,
        *,
        period: str,
        tz: str,
        strategy: str,
        grace_secs: float | None = ...,
        future_secs: float | None = ...,
        id_format: IdFormat | None = ...,
        **options: Any,
    ) -> Series[Any]: ...
    def series(
        self,
        key: str,
        *,
        period: str,
        tz: str,
        strategy: str = "transactional",
        grace_secs: float | None = None,
        future_secs: float | None = DEFAULT_FUTURE_SECS,
        id_format: IdFormat | None = None,
        **options: Any,
    ) -> Series[Any]:
        """A [`Series`][aioseq.Series]: numbers from 1 again in every calendar period
        (``period="year"``, ``"month"``, ``"day"``, ``"fiscal-year:M"``) in zone ``tz``, each
        period's counter the object this store shares for counter key ``f"{key}/{label}"``.
        No request; see docs/series.md.

            invoices = store.series("invoices-acme", period="year", tz="Europe/Paris")
            number = await invoices.at(issued).put(...)

        Parameters:
            key, period, tz, grace_secs, future_secs, id_format: see
                [`Series`][aioseq.Series].
            strategy: ``"transactional"`` (gapless, the default), ``"sort-key"`` (gapless),
                ``"optimistic"``, ``"atomic"`` or ``"allocator"`` (holes possible).
            options: the strategy's factory's other arguments (``group=``, ...).

        Raises:
            ConfigurationError: a bad argument, an unknown strategy or option.
        """
        factories: dict[str, Callable[..., Any]] = {
            "transactional": self.transactional_counter,
            "sort-key": self.sort_key_counter,
            "optimistic": self.optimistic_counter,
            "atomic": self.atomic_counter,
            "allocator": self.block_allocator,
        }
        factory = factories.get(strategy)
        if factory is None:
            raise ConfigurationError(
                f"strategy must be one of {', '.join(map(repr, factories))}, not {strategy!r}"
            )
        return Series(
            key,
            factory,
            period=period,
            tz=tz,
            grace_secs=grace_secs,
            future_secs=future_secs,
            id_format=id_format,
            options=options,
        )

    def statistics(self) -> StoreStatistics:
        """A frozen snapshot of the objects this store shares per key: how many live, how many
        were dropped idle, and the numbers the block allocators reserved, handed out, gave
        back and wasted (see [`StoreStatistics`][aioseq.StoreStatistics])."""
        return self._shared.statistics()

    # --- requests ---------------------------------------------------------------------------

    @property
    def requests(self) -> Counter[str]:
        """HTTP requests sent to DynamoDB through this client since the store was made, by API
        operation (``{"UpdateItem": 12, ...}``), counted by a botocore ``before-send`` event
        hook, so a borrowed client's own retries count too. A copy."""
        return self.transport.requests

    async def send_once(self, operation: str, **params: Any) -> dict[str, Any]:
        """Send one DynamoDB API request (``operation`` as botocore's method name, e.g.
        ``"update_item"``) and return its response: one attempt, no retries (see
        [`send_with_retries()`][aioseq.DynamoStore.send_with_retries]).

        Raises:
            StoreClosed: after [`aclose()`][aioseq.DynamoStore.aclose] (with ``maybe_applied`` if
                the close cut the request off).
            StoreError: a subclass chosen by DynamoDB's error code; ``__cause__`` is botocore's.
            ConfigurationError: ``operation`` is not a method of the client (``"UpdateItem"``
                for ``"update_item"``): nothing is sent.
            botocore.exceptions.ParamValidationError: ``params`` do not fit the operation
                (nothing is sent).
        """
        self.transport.validate(operation, params)
        return await self.transport.send(operation, params)

    async def send_with_retries(self, operation: str, **params: Any) -> dict[str, Any]:
        """[`send_once()`][aioseq.DynamoStore.send_once] under the store's retry engine: transient
        errors (throttling, 5xx, a lost connection) are retried as `retry_policy` allows. For
        requests that are safe to send twice (reads, table administration, idempotent
        conditional writes).

        Raises:
            RetriesExhausted: transient errors outlasted the retry policy.
            StoreClosed, StoreError: as [`send_once()`][aioseq.DynamoStore.send_once], for
                errors that are not retried.
        """
        self.transport.validate(operation, params)
        return await self.retry.run(lambda: self.transport.send(operation, params))

    def prepare(self, operation: str, params: dict[str, Any]) -> Send:
        """Check a request once, as [`send_once()`][aioseq.DynamoStore.send_once] does, and return
        what sends it, or another of its shape, unchecked: ``await send(params)`` is one
        attempt, leaves ``params`` unchanged and raises what ``send_once()`` raises (for requests
        built once and sent many times, such as the atomic counter's ``UpdateItem``).

        Raises:
            ConfigurationError: ``operation`` is not a method of the client.
            botocore.exceptions.ParamValidationError: ``params`` do not fit the operation.
        """
        self.transport.validate(operation, params)
        return functools.partial(self.transport.send, operation)

    # --- keys -------------------------------------------------------------------------------

    def counter_item_key(self, key: str) -> Item:
        """The primary key of counter ``key``'s counter item in this store's Region, as
        AttributeValues (under ``regions=``, that of
        [`scoped_key()`][aioseq.DynamoStore.scoped_key])."""
        return self._item_key(self.scoped_key(key))

    def _item_key(self, value: str) -> Item:
        spec = self.table
        item_key: Item = {spec.partition_key: {"S": value}}
        if spec.sort_key is not None:
            item_key[spec.sort_key] = {spec.sort_key_type: str(spec.counter_sort_key)}
        return item_key

    def scope_record_key(self, key: str) -> Item:
        """The primary key of counter ``key``'s own item, where a Region-scoped key records
        its [`ScopeRecord`][aioseq.numbering.ScopeRecord] (``key`` itself, unscoped)."""
        return self._item_key(key)

    def scoped_key(self, key: str) -> str:
        """The partition key value counter ``key`` (or a sort-key collection) has in this
        store's Region: ``key`` itself, or under ``regions=`` ``f"{key}@{region}"``."""
        scope, region = self.region_scope, self.region
        return key if scope is None or region is None else RegionScope.key_in(key, region)

    def counter_numbering(self, numbering: Numbering) -> Numbering:
        """``numbering`` as this store's Region hands it out: itself, or under ``regions=``
        its share ([`RegionScope.share()`][aioseq.RegionScope.share])."""
        scope, region = self.region_scope, self.region
        return numbering if scope is None or region is None else scope.share(region, numbering)

    # --- the Regions of a global table ------------------------------------------------------

    async def replication(self) -> Replication:
        """What the table says of its Regions, learned once per store (concurrent callers
        share one request; [`check_table()`][aioseq.DynamoStore.check_table] and
        [`create_table()`][aioseq.DynamoStore.create_table] learn it too).

        DynamoDB calls: one ``DescribeTable`` (no capacity units), under the retry engine. An
        ``AccessDeniedException`` is logged once and answered ``Replication(known=False)``.

        Raises:
            TableNotFound: the table does not exist.
            RetriesExhausted: transient errors outlasted the retry policy.
            StoreError: DynamoDB refused otherwise (its subclass says how).
            StoreClosed: the store closed during the request.
        """
        if self._replication is not None:
            return self._replication
        if self._describing is None:
            self._describing = asyncio.ensure_future(self._describe_replication())
            self._describing.add_done_callback(self._described)
        describing = self._describing
        try:
            return await asyncio.shield(describing)
        except asyncio.CancelledError:
            if describing.cancelled():  # by the store's close, not this caller's
                raise StoreClosed("the DynamoStore closed while it described its table") from None
            raise

    def _described(self, describing: asyncio.Future[Replication]) -> None:
        """The request's end: the next caller asks again after a failure (retrieved here, so
        that a failure all of whose callers left is not reported as never retrieved)."""
        if self._describing is describing:
            self._describing = None
        if not describing.cancelled():
            describing.exception()

    async def _describe_replication(self) -> Replication:
        try:
            described = await self.send_with_retries("describe_table", TableName=self.table.name)
        except StoreError as exc:
            if exc.code != "AccessDeniedException":
                raise
            log.warning(
                "aioseq: may not DescribeTable %r (%s): whether it is a global table is not"
                " known; counters write as on a table of one Region",
                self.table.name,
                exc,
            )
            self._replication = Replication(known=False)
            return self._replication
        return self._learn(described.get("Table", {}))

    def _learn(self, table: dict[str, Any]) -> Replication:
        self._replication = Replication.of(table, self.region)
        return self._replication

    def refuse_writes_known(self, *, transactions: bool = False) -> None:
        """Raise now what [`check_writes()`][aioseq.DynamoStore.check_writes] would, as far as
        it is known without a request (the factories call it: a refusal known already comes
        at once, not at the first write), except `NotHomeRegion`: away from its home Region
        a store still reads counters.

        Raises:
            UnsafeGlobalTable, RegionNotListed, NotSupportedByTable: see
                [`aioseq.regions.write_refusal()`][aioseq.regions.write_refusal].
        """
        # (Not NotHomeRegion: a store away from home reads counters; refused at a write.)
        self._refuse(self._replication or Replication(known=False), transactions, at_home=True)

    def _refuse(self, replication: Replication, transactions: bool, *, at_home: bool) -> None:
        """Raise `write_refusal()`'s answer for this store (``at_home``: as if in its home
        Region, so away from it not `NotHomeRegion`; its ``home_region=`` still counts as
        stated, so not `UnsafeGlobalTable` either)."""
        home = self.home_region
        refusal = write_refusal(
            replication,
            table=self.table.name,
            region=home if at_home and home is not None else self.region,
            scope=self.region_scope,
            home_region=home,
            transactions=transactions,
        )
        if refusal is not None:
            raise refusal

    async def check_writes(
        self,
        key: str,
        *,
        transactions: bool = False,
        numbering: Numbering | None = None,
        recheck: bool = False,
    ) -> Numbering | None:
        """Raise unless this store may write counter ``key``: every counter calls it before
        its first write (and admin before each write). Under ``regions=``, also checks the
        key's recorded [`ScopeRecord`][aioseq.numbering.ScopeRecord] (the Region scope and the
        numbering shared out), recording it if none is.

        DynamoDB calls: the first call of a store, one ``DescribeTable``
        ([`replication()`][aioseq.DynamoStore.replication]; with ``regions=`` or
        ``home_region=``, only for a writer of transactions); under ``regions=``, one strongly
        consistent ``GetItem`` of the key's own counter item (1 RCU) and, the first time for
        the key, one conditional ``PutItem`` that creates it (1 WCU). On a table with
        multi-Region eventual consistency that record is written once per Region at most: two
        stores that both find it missing within the replication delay both pass, whatever
        their lists; each counter object calls this again (``recheck=True``) until past
        the replication lag (``SCOPE_REPLICATION_LAG_SECS``, `aioseq.strategies._base`),
        and stops writing if replication replaced its record (see docs/global-tables.md).

        Parameters:
            key: the counter key (or sort-key collection).
            transactions: the writer sends ``TransactWriteItems``.
            numbering: the numbering the writer records in this Region (its share, under
                ``regions=``); ``None`` (admin): any numbering the key records, and
                ``stride=1 offset=1`` if it records none.
            recheck: a later reading for a writer that passed before: a record grown since
                by Regions in free slots passes (every Region of the store's list keeps its
                slot, the slots and the numbering stay: this Region's numbers are unchanged;
                `admin.set_region_scope()`).

        Returns:
            Under ``regions=``, the numbering this Region's counter item of ``key`` records
            (the share of the numbering recorded for the key); else ``None``.

        Raises:
            UnsafeGlobalTable, NotHomeRegion, RegionNotListed, NotSupportedByTable: see
                [`aioseq.regions.write_refusal()`][aioseq.regions.write_refusal]; nothing was
                written.
            NumberingMismatch: the key records another Region scope or numbering, or was used
                without ``regions=`` (a numbering, or a value): nothing was written.
            TableNotFound, RetriesExhausted, StoreError, StoreClosed: the requests failed.
        """
        # Under regions= or home_region=, only what needs transactions asks the table.
        stated = self.region_scope is not None or self.home_region is not None
        if stated and not transactions:
            replication = self._replication or Replication(known=False)
        else:
            replication = await self.replication()
        self._refuse(replication, transactions, at_home=False)
        scope, region = self.region_scope, self.region
        if scope is None or region is None:
            return None
        share = numbering or scope.share(region, Numbering())
        record = ScopeRecord(scope, scope.base(region, share))
        record = await self._claim_scope(
            key, record, any_numbering=numbering is None, grown=recheck
        )
        return scope.share(region, record.numbering)

    async def _claim_scope(
        self, key: str, record: ScopeRecord, *, any_numbering: bool, grown: bool = False
    ) -> ScopeRecord:
        """Record ``record`` on counter ``key``'s own counter item if nothing is there (a
        create-once put, the only write of that item from any Region), else check it (its
        scope alone with ``any_numbering``: admin, which moves any counter; ``grown``: a
        scope that keeps every Region of ``record``'s in its slot passes); the record."""
        spec = self.table
        item_key = self.scope_record_key(key)
        read = {"TableName": spec.name, "Key": item_key, "ConsistentRead": True}
        item = (await self.send_with_retries("get_item", **read)).get("Item")
        if item is None:
            # Resent after a lost answer: safe, as it creates an item aioseq never deletes.
            try:
                await self.send_with_retries(
                    "put_item",
                    TableName=spec.name,
                    Item={**item_key, NUMBERING_ATTRIBUTE: {"S": record.encode()}},
                    ConditionExpression="attribute_not_exists(#pk)",
                    ExpressionAttributeNames={"#pk": spec.partition_key},
                    ReturnValuesOnConditionCheckFailure="ALL_OLD",
                )
                return record
            except ConditionFailed as exc:  # another store made it first (or a resend of ours)
                item = exc.item or (await self.send_with_retries("get_item", **read)).get("Item")
        text = recorded_text(item, key)
        found = ScopeRecord.decode(text) if text and text.startswith("regions=") else None
        if found is not None and any_numbering:
            record = ScopeRecord(record.scope, found.numbering)
        kept = found is not None and scope_kept(record.scope, found.scope)
        if found is not None and grown and kept and found.numbering == record.numbering:
            record = found  # Regions added in free slots since: this Region's numbers stay
        check_recorded(item, key, record)
        if item is not None and set(item) - set(item_key) - {NUMBERING_ATTRIBUTE}:
            # A counter item with a value: the key was used without regions=.
            raise NumberingMismatch(key, UNSCOPED, record)
        return record

    # --- the table (aioseq._table) ----------------------------------------------------------

    async def create_table(self, *, timeout_secs: float = 60.0, ttl: bool = False) -> bool:
        """Create the table (on-demand, ``PAY_PER_REQUEST``) if it does not exist, and wait until
        it is ``ACTIVE``. Idempotent: an existing table is checked, not changed (but for
        ``ttl=True``). See [The table](../configuration.md#the-table).

        DynamoDB calls: ``CreateTable`` (one; a resend after a lost answer finds the table it
        made, which counts as existing), then ``DescribeTable`` until ``ACTIVE`` (at once, then
        every 0.5 s, at most ``timeout_secs``), one more for a table that existed; with
        ``ttl=True``, those of [`enable_ttl()`][aioseq.DynamoStore.enable_ttl]. Each under the
        store's retry engine; no capacity units.

        Parameters:
            timeout_secs: the most to wait for the table to become ``ACTIVE`` (> 0).
            ttl: also enable the table's time to live on ``aioseq_expires``
                ([`enable_ttl()`][aioseq.DynamoStore.enable_ttl]; also on a table that
                existed). Off by default: it needs ``dynamodb:UpdateTimeToLive``, and a table
                has one time to live attribute ([why](../web-services.md#idempotent-requests)).

        Returns:
            True if this call created the table, False if it existed.

        Raises:
            ConfigurationError: the existing table's key schema is not the one
                [`TableSpec`][aioseq.TableSpec] describes; a bad ``timeout_secs``; with
                ``ttl=True``, the table's time to live is on another attribute.
            RetriesExhausted: transient errors outlasted the retry policy.
            StoreError: the table did not become active in time, or DynamoDB refused.
        """
        return await _table.create_table(self, self._learn, timeout_secs=timeout_secs, ttl=ttl)

    async def enable_ttl(self) -> bool:
        """Enable the table's time to live on [`EXPIRES_ATTRIBUTE`][aioseq.config.EXPIRES_ATTRIBUTE]
        (``aioseq_expires``), so that DynamoDB deletes the idempotency records past their
        expiry (free, within a few days of it). Idempotent: a time to live enabled (or being
        enabled) on it is left as it is. See
        [Idempotent requests](../web-services.md#idempotent-requests).

        DynamoDB calls: ``DescribeTimeToLive``, then ``UpdateTimeToLive`` when it is not
        enabled, and a second ``DescribeTimeToLive`` if DynamoDB refuses that (each under the
        store's retry engine; no capacity units).

        Returns:
            True if this call enabled it, False if it was enabled already.

        Raises:
            ConfigurationError: the table's time to live is on another attribute (a table has
                one; nothing is changed).
            TableNotFound: the table does not exist.
            RetriesExhausted: transient errors outlasted the retry policy.
            StoreError: DynamoDB refused otherwise (``ValidationFailed``: it was changed
                within the last hour, as DynamoDB allows one change an hour).
        """
        return await _table.enable_ttl(self)

    async def check_table(self) -> None:
        """Check that the table exists with the key schema of `table`, and learn its
        [`replication()`][aioseq.DynamoStore.replication].

        DynamoDB calls: one ``DescribeTable`` (no capacity units).

        Raises:
            TableNotFound: the table does not exist.
            ConfigurationError: its key schema differs from `table`.
        """
        await _table.check_table(self, self._learn)

    async def delete_table(self) -> None:
        """Delete the table (``DeleteTable``, under the retry engine). For tests and demos."""
        await _table.delete_table(self)


# The options' names, for the error of a factory called with other options than its key's
# shared object was made with.
_SORT_KEY_OPTIONS = (
    "on_conflict",
    "consistent_read",
    "zero_pad",
    "max_value",
    "max_in_flight",
    "group",
    "idempotency_ttl_secs",
    "idempotency_memory_bytes",
)
_TRANSACTIONAL_OPTIONS = (
    "item_table",
    "item_partition_key",
    "number_attribute",
    "max_value",
    "max_in_flight",
    "group",
    "idempotency_ttl_secs",
    "idempotency_memory_bytes",
    "layout",
)
_ALLOCATOR_OPTIONS = (
    "block_size",
    "min_block_size",
    "max_block_size",
    "target_refill_interval_secs",
    "prefetch_at",
    "stride",
    "offset",
    "max_value",
    "runway_secs",
)


def _grouping(group: GroupCommit | bool) -> GroupCommit | bool:
    """``group=True`` is ``GroupCommit()``: one option, one value, for the comparison."""
    return GroupCommit() if group is True else group


async def _close_all(things: list[Managed]) -> None:
    """Close ``things``, at most `CLOSES_IN_FLIGHT` at once (an allocator's close sends
    one conditional write), by that many workers taking them in turn: a store with 100,000
    objects starts 32 tasks, not 100,000. One that fails is logged and does not stop the
    others."""
    waiting = iter(things)

    async def worker() -> None:
        for thing in waiting:
            try:
                await thing.aclose()
            except Exception as exc:  # e.g. a give-back to a table deleted already
                log.warning("closing %r failed: %r", thing, exc)

    await asyncio.gather(*(worker() for _ in range(min(CLOSES_IN_FLIGHT, len(things)))))


class _Opening:
    """What [`DynamoStore.open()`][aioseq.DynamoStore.open] returns: await it, or use it with
    ``async with``."""

    def __init__(self, open_store: Callable[[], Awaitable[DynamoStore]]) -> None:
        self._open_store = open_store
        self._store: DynamoStore | None = None

    def __await__(self) -> Generator[Any, None, DynamoStore]:
        return self._open_store().__await__()

    async def __aenter__(self) -> DynamoStore:
        self._store = await self._open_store()
        return self._store

    async def __aexit__(self, *exc_info: object) -> None:
        if self._store is not None:
            await self._store.aclose()

    if not TYPE_CHECKING:  # at run time only: a type checker still flags these mistakes

        def __getattr__(self, name: str) -> NoReturn:
            if name.startswith("_"):  # (asked by tools: copy, pickle, inspect)
                raise AttributeError(f"'_Opening' object has no attribute {name!r}")
            raise StoreNotOpened(
                f"DynamoStore.open() returns an opening, not the store, so it has no {name!r}:"
                " await it (store = await DynamoStore.open(...)) or enter it (async with"
                f" DynamoStore.open(...) as store:), then use store.{name}"
            )

        def __enter__(self) -> NoReturn:
            raise StoreNotOpened(
                "DynamoStore.open() is an async context manager: use async with"
                " DynamoStore.open(...) as store:, not with (or store = await"
                " DynamoStore.open(...))"
            )

        def __exit__(self, *exc_info: object) -> None:
            pass  # (never reached: __enter__ raises)
