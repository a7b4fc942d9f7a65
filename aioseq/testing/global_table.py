"""A simulated DynamoDB global table: two or three Regions over local servers (or fakes), for
tests of what runs on a real one.

Neither moto nor DynamoDB Local replicates between Regions or says that a table has replicas.
[`SimulatedGlobalTable`][aioseq.testing.SimulatedGlobalTable] gives each Region a
[`Transport`][aioseq.contracts.Transport] to make a store on
(``DynamoStore(transport=table.transport("eu-west-1"), table=...)``) that acts as that Region's
endpoint of a global table (AWS: "How DynamoDB global tables work"):

- ``DescribeTable`` answers as a global table's replica does: ``Replicas`` (the other Regions,
  ``ACTIVE``), ``MultiRegionConsistency`` and ``GlobalTableVersion`` ``"2019.11.21"``.
- ``consistency="EVENTUAL"`` (MREC): each Region has its own storage. A write applied in one
  Region is replicated to the others ``replication_delay_secs`` later, item by item: the item as
  it is in the source Region then, or its deletion. Each copy of an item carries the time of
  its last write; a replicated change older than the copy it reaches is dropped: last writer
  wins, silently (counted in [`discarded`][aioseq.testing.SimulatedGlobalTable.discarded]).
  Conditions are evaluated against the local copy only, so two Regions moving one counter item
  hand out the same numbers.
- ``consistency="STRONG"`` (MRSC): the Regions share one storage (every read and condition
  sees the latest state); a share ``conflict_rate`` of the writes of an item is refused with
  ``ReplicatedWriteConflictException`` (nothing applied), as a write that met another Region's
  write of the item is; ``TransactWriteItems`` is refused (MRSC tables take no transactions).

``CreateTable`` and ``DeleteTable`` through any Region act on every Region's storage.

    async with SimulatedGlobalTable(["us-east-1", "eu-west-1"]) as table:   # fakes, in process
        east = DynamoStore(transport=table.transport("us-east-1"), table="t")
        ...
        await table.settle()   # every replication due has been applied

A delay of seconds or minutes, with no real wait: give the simulation the stores' clock
(``clock=ManualClock()``, passed to each store too); a copy then lands as the table is next
used at or after its time on that clock.

Over local servers, pass a transport per Region (a moto server keeps one set of tables per
Region: one client per Region on one server is one storage per Region).
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import itertools
import json
import random
from collections import Counter
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from typing import Any, Literal

from botocore.exceptions import ClientError

from aioseq._checks import check_region
from aioseq._client import open_client
from aioseq._endpoint import EndpointHealth
from aioseq._transport import BotocoreTransport, tables_of, translate
from aioseq.clock import Clock
from aioseq.contracts import Transport
from aioseq.errors import ConfigurationError, StoreClosed
from aioseq.observe import Observer
from aioseq.testing.fake import FakeDynamoDB
from aioseq.testing.faults import error_body

__all__ = ["SimulatedGlobalTable"]

Consistency = Literal["EVENTUAL", "STRONG"]

#: Earlier than any write.
_NEVER = (float("-inf"), "")

#: The item writes: replicated (MREC), or refused at ``conflict_rate`` (MRSC).
_WRITES = frozenset({"put_item", "update_item", "delete_item", "batch_write_item"})


class SimulatedGlobalTable:
    """A global table over one [`Transport`][aioseq.contracts.Transport] per Region (see the
    module doc).

    Parameters:
        regions: the Regions (two or three), or a mapping of each Region to the transport of
            its storage (MREC: one per Region; MRSC: one, shared, under every Region). Given
            Region names only, the storage is [`FakeDynamoDB`][aioseq.testing.FakeDynamoDB]:
            one per Region (MREC) or one in all (MRSC).
        consistency: ``"EVENTUAL"`` (MREC, the default) or ``"STRONG"`` (MRSC).
        replication_delay_secs: MREC: how long after a write its item is copied to the other
            Regions, in seconds (>= 0; default 0.05).
        conflict_rate: MRSC: the share of item writes refused with
            ``ReplicatedWriteConflictException`` (0 .. 1; default 0).
        seed: the seed of those refusals.
        clock: the [`Clock`][aioseq.clock.Clock] the replication delay and the writes' times
            are read from, the stores' own (such as a
            [`ManualClock`][aioseq.testing.ManualClock]). Default: the event loop's, a task
            copying each write when its delay has passed. Given a clock, nothing waits: a
            write's copies land when a request reaches the table (any Region) at or after
            their time on it, before that request, and
            [`settle()`][aioseq.testing.SimulatedGlobalTable.settle] lands every copy still
            to come.

    Raises:
        ConfigurationError: not two or three Regions, a bad Region name, MRSC Regions over
            several transports, or a rate or delay out of range. (An MRSC table of two Regions
            describes a witness in a third.)
    """

    def __init__(
        self,
        regions: Sequence[str] | Mapping[str, Transport],
        *,
        consistency: Consistency = "EVENTUAL",
        replication_delay_secs: float = 0.05,
        conflict_rate: float = 0.0,
        seed: int = 0,
        clock: Clock | None = None,
    ) -> None:
        names = list(regions)
        if not 2 <= len(names) <= 3 or len(set(names)) != len(names):
            raise ConfigurationError(f"a global table here has two or three Regions: {names}")
        for name in names:
            check_region(name, "a Region")
        if consistency not in ("EVENTUAL", "STRONG"):
            raise ConfigurationError(f"consistency must be 'EVENTUAL' or 'STRONG': {consistency!r}")
        if not replication_delay_secs >= 0 or not 0 <= conflict_rate <= 1:
            raise ConfigurationError("replication_delay_secs must be >= 0, conflict_rate in [0, 1]")
        if isinstance(regions, Mapping):
            storage = dict(regions)
            if consistency == "STRONG" and len({id(t) for t in storage.values()}) != 1:
                raise ConfigurationError("an MRSC table's Regions share one storage: one transport")
        elif consistency == "STRONG":
            shared = FakeDynamoDB()
            storage = {name: shared for name in names}
        else:
            storage = {name: FakeDynamoDB(region_name=name) for name in names}
        self.regions: tuple[str, ...] = tuple(names)
        self.consistency: Consistency = consistency
        self.replication_delay_secs = float(replication_delay_secs)
        self.conflict_rate = float(conflict_rate)
        self._storage = storage
        self._rng = random.Random(seed)
        # MREC: when each Region's copy of an item was last written, and where: (time, Region)
        # by (table, key); the later wins, the Region's name breaking a tie.
        self._written: dict[str, dict[tuple[str, str], tuple[float, str]]] = {
            name: {} for name in names
        }
        self._key_schemas: dict[str, list[str]] = {}
        # One write at a time per item and Region: (region, table, key) -> its lock.
        self._locks: dict[tuple[str, str, str], asyncio.Lock] = {}
        self._pending: set[asyncio.Task[None]] = set()
        self._clock = clock
        # With a clock: the copies to come, (due time, order, source Region, table, key).
        self._due: list[tuple[float, int, str, str, dict[str, Any]]] = []
        self._order = itertools.count()
        self._landing = asyncio.Lock()  # a request waits for every copy due to land first
        self._copy_errors: list[Exception] = []  # (raised by settle(), not by a request)
        #: MREC: the Regions each item was written from by a client (not by replication),
        #: by ``(table, key)``, the key as JSON of its AttributeValues.
        self.writers: dict[tuple[str, str], set[str]] = {}
        #: MREC: replicated changes dropped because the copy they reached was written later
        #: (last writer wins): each one a write that another Region silently lost.
        self.discarded = 0
        #: MREC: replicated changes applied.
        self.replicated = 0
        #: MRSC: writes refused with ``ReplicatedWriteConflictException``.
        self.conflicts = 0

    @classmethod
    async def over_endpoint(
        cls,
        endpoint_url: str,
        regions: Sequence[str],
        *,
        consistency: Consistency = "EVENTUAL",
        replication_delay_secs: float = 0.05,
        conflict_rate: float = 0.0,
        seed: int = 0,
    ) -> SimulatedGlobalTable:
        """A global table over the local server at ``endpoint_url``: one client per Region
        (MREC: moto keeps one set of tables per Region; DynamoDB Local with ``-sharedDb``
        keeps one for all, so it serves MRSC only), closed with the simulation.

        Raises:
            ConfigurationError: as the constructor, or a bad ``endpoint_url``.
        """
        names = list(regions)
        options: dict[str, Any] = {
            "consistency": consistency,
            "replication_delay_secs": replication_delay_secs,
            "conflict_rate": conflict_rate,
            "seed": seed,
        }
        cls(names, **options)  # checked before a client is opened (fakes: nothing to close)
        opened: dict[str, Transport] = {}
        try:
            for name in names if consistency == "EVENTUAL" else names[:1]:
                client, stack, _ = await open_client(
                    session=None,
                    endpoint_url=endpoint_url,
                    region_name=name,
                    max_pool_connections=64,
                    connect_timeout_secs=5.0,
                    read_timeout_secs=10.0,
                )
                opened[name] = BotocoreTransport(client, owner=stack, validates=True)
            if consistency == "STRONG":
                opened = {name: opened[names[0]] for name in names}
            return cls(opened, **options)
        except BaseException:
            for transport in {id(t): t for t in opened.values()}.values():
                await transport.aclose(timeout_secs=5.0)
            raise

    def transport(self, region: str) -> Transport:
        """A new endpoint of ``region``: give it to one store as ``DynamoStore(transport=...)``
        (the store's Region is ``region``; closing the store closes this endpoint only).

        Raises:
            ConfigurationError: ``region`` is not one of the table's.
        """
        if region not in self._storage:
            raise ConfigurationError(f"{region!r} is not among {list(self.regions)}")
        return _RegionEndpoint(self, region)  # one per store: a store closes its own

    async def settle(self) -> None:
        """Wait until every replication due has been applied (MREC; at once for MRSC); with a
        ``clock``, apply every copy still to come, whatever its time.

        Raises:
            Exception: the first error a replication met (its storage refused a copy).
        """
        await self._land(everything=True)
        failed: list[BaseException] = list(self._copy_errors)
        self._copy_errors.clear()
        while self._pending:
            done = await asyncio.gather(*list(self._pending), return_exceptions=True)
            failed += [e for e in done if isinstance(e, BaseException)]
        if failed:
            raise failed[0]

    async def aclose(self) -> None:
        """Let the replications due finish, then close the storage transports."""
        await self.settle()
        for transport in {id(t): t for t in self._storage.values()}.values():
            await transport.aclose(timeout_secs=5.0)

    async def __aenter__(self) -> SimulatedGlobalTable:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    def __repr__(self) -> str:
        return (
            f"<SimulatedGlobalTable {self.consistency} {list(self.regions)}"
            f" replicated={self.replicated} discarded={self.discarded} conflicts={self.conflicts}>"
        )

    # --- the Regions' requests ---------------------------------------------------------------

    async def _send(self, region: str, operation: str, params: dict[str, Any]) -> dict[str, Any]:
        storage = self._storage[region]
        await self._land()
        if operation in ("create_table", "delete_table"):
            return await self._on_every_storage(region, operation, params)
        if self.consistency == "STRONG":
            if operation == "transact_write_items":
                raise self._refused(
                    operation,
                    params,
                    "ValidationException",
                    "Transactions are not supported on tables with multi-Region strong consistency",
                )
            if operation in _WRITES and self._rng.random() < self.conflict_rate:
                self.conflicts += 1
                _, body = error_body("replicated-write-conflict", operation, b"")
                message = body["message"] if isinstance(body, dict) else ""
                raise self._refused(operation, params, "ReplicatedWriteConflictException", message)
        if self.consistency == "EVENTUAL" and (
            operation in _WRITES or operation == "transact_write_items"
        ):
            return await self._write_in(region, operation, params)
        response = await storage.send(operation, params)
        if operation == "describe_table" and "Table" in response:
            response = {**response, "Table": self._as_replica(region, response["Table"])}
        return response

    async def _on_every_storage(
        self, region: str, operation: str, params: dict[str, Any]
    ) -> dict[str, Any]:
        """``CreateTable`` or ``DeleteTable`` on every Region's storage; the answer is
        ``region``'s."""
        answer: dict[str, Any] = {}
        for name, transport in {id(t): (n, t) for n, t in self._storage.items()}.values():
            try:
                response = await transport.send(operation, params)
            except Exception:
                if name == region or transport is self._storage[region]:
                    raise
                continue
            if name == region or transport is self._storage[region]:
                answer = response
        return answer

    def _as_replica(self, region: str, table: dict[str, Any]) -> dict[str, Any]:
        """``DescribeTable``'s answer as a global table's replica in ``region`` gives it."""
        others = [r for r in self.regions if r != region]
        described = {
            **table,
            "Replicas": [{"RegionName": r, "ReplicaStatus": "ACTIVE"} for r in others],
            "GlobalTableVersion": "2019.11.21",
            "MultiRegionConsistency": self.consistency,
        }
        if self.consistency == "STRONG" and len(self.regions) == 2:
            described["GlobalTableWitnesses"] = [
                {"RegionName": _witness(self.regions), "WitnessStatus": "ACTIVE"}
            ]
        return described

    def _refused(
        self, operation: str, params: dict[str, Any], code: str, message: str
    ) -> Exception:
        answer: Any = {
            "Error": {"Code": code, "Message": message or code},
            "ResponseMetadata": {"HTTPStatusCode": 400},
        }
        error = ClientError(answer, _operation_name(operation))
        return translate(error, _operation_name(operation), tables_of(params))

    # --- MREC replication -------------------------------------------------------------------

    async def _write_in(
        self, region: str, operation: str, params: dict[str, Any]
    ) -> dict[str, Any]:
        """A write in ``region``: applied with its items held (no copy lands between its
        application and its time stamp), stamped, and its items' copies scheduled."""
        keys = await self._keys_written(region, params)
        async with self._holding(region, keys):
            response = await self._storage[region].send(operation, params)
            stamp = (self._now(), region)
            unprocessed = {
                (table, _key_text(await self._key_of(region, table, request)))
                for table, requests in (response.get("UnprocessedItems") or {}).items()
                for request in requests
            }
            for table, key in keys:
                text = _key_text(key)
                if (table, text) in unprocessed:
                    continue  # not written: nothing to copy
                self._written[region][(table, text)] = stamp
                self.writers.setdefault((table, text), set()).add(region)
                if self._clock is not None:
                    due = stamp[0] + self.replication_delay_secs
                    heapq.heappush(self._due, (due, next(self._order), region, table, key))
                    continue
                task = asyncio.ensure_future(self._replicate(region, table, key))
                self._pending.add(task)
                task.add_done_callback(self._pending.discard)
        return response

    def _now(self) -> float:
        """The time now: the ``clock``'s, else the event loop's."""
        if self._clock is not None:
            return self._clock.now()
        return asyncio.get_running_loop().time()

    async def _land(self, *, everything: bool = False) -> None:
        """With a ``clock``: apply the copies whose time has come (``everything``: all), in
        the order they fall due."""
        due = self._due
        if not due:
            return
        async with self._landing:  # (a copy another request is landing counts as not yet)
            while due and (everything or due[0][0] <= self._now()):
                _, _, source, table, key = heapq.heappop(due)
                try:
                    await self._copy(source, table, key)
                except Exception as exc:  # (a storage's fault): settle() raises it
                    self._copy_errors.append(exc)

    async def _replicate(self, source: str, table: str, key: dict[str, Any]) -> None:
        """Wait the replication delay on the event loop, then `_copy()`."""
        await asyncio.sleep(self.replication_delay_secs)
        await self._copy(source, table, key)

    async def _copy(self, source: str, table: str, key: dict[str, Any]) -> None:
        """Copy the item (or its absence) from ``source`` to the other Regions, where the copy
        there was written earlier (last writer wins by ``(time, Region)``)."""
        text = _key_text(key)
        async with self._holding(source, [(table, key)]):
            written = self._written[source].get((table, text))
            found = await self._storage[source].send(
                "get_item", {"TableName": table, "Key": key, "ConsistentRead": True}
            )
        if written is None:
            return
        item = found.get("Item")
        for target in self.regions:
            if target == source:
                continue
            async with self._holding(target, [(table, key)]):
                if self._written[target].get((table, text), _NEVER) >= written:
                    self.discarded += 1  # the target's copy is newer: last writer wins
                    continue
                storage = self._storage[target]
                if item is None:
                    await storage.send("delete_item", {"TableName": table, "Key": key})
                else:
                    await storage.send("put_item", {"TableName": table, "Item": item})
                self._written[target][(table, text)] = written
                self.replicated += 1

    @contextlib.asynccontextmanager
    async def _holding(
        self, region: str, keys: Sequence[tuple[str, dict[str, Any]]]
    ) -> AsyncIterator[None]:
        """Hold ``keys``' items in ``region`` (in one order, so two holders never wait on
        each other)."""
        texts = sorted({(table, _key_text(key)) for table, key in keys})
        locks = [self._locks.setdefault((region, *text), asyncio.Lock()) for text in texts]
        async with contextlib.AsyncExitStack() as held:
            for lock in locks:
                await held.enter_async_context(lock)
            yield

    async def _key_of(self, region: str, table: str, request: Mapping[str, Any]) -> dict[str, Any]:
        """The primary key of a ``BatchWriteItem`` request."""
        if "DeleteRequest" in request:
            return dict(request["DeleteRequest"]["Key"])
        return await self._key_in(region, table, request["PutRequest"]["Item"])

    async def _key_in(self, region: str, table: str, item: Mapping[str, Any]) -> dict[str, Any]:
        """The primary key of ``item`` (the table's key schema, asked once)."""
        names = await self._key_schema(region, table)
        return {name: item[name] for name in names if name in item}

    async def _keys_written(
        self, region: str, params: dict[str, Any]
    ) -> list[tuple[str, dict[str, Any]]]:
        """The (table, primary key) of each item a write request wrote."""
        if "RequestItems" in params:
            return [
                (table, await self._key_of(region, table, request))
                for table, requests in params["RequestItems"].items()
                for request in requests
            ]
        writes = [
            body
            for action in params.get("TransactItems", ())
            for kind, body in action.items()
            if kind != "ConditionCheck"
        ] or [params]
        return [
            (
                w["TableName"],
                dict(w["Key"])
                if "Key" in w
                else await self._key_in(region, w["TableName"], w["Item"]),
            )
            for w in writes
        ]

    async def _key_schema(self, region: str, table: str) -> list[str]:
        if table not in self._key_schemas:
            described = await self._storage[region].send("describe_table", {"TableName": table})
            self._key_schemas[table] = [k["AttributeName"] for k in described["Table"]["KeySchema"]]
        return self._key_schemas[table]


class _RegionEndpoint:
    """One Region's endpoint of a [`SimulatedGlobalTable`][aioseq.testing.SimulatedGlobalTable]:
    a [`Transport`][aioseq.contracts.Transport] over the Region's storage."""

    def __init__(self, table: SimulatedGlobalTable, region: str) -> None:
        self._table = table
        self.region_name: str | None = region
        self._requests: Counter[str] = Counter()
        self._closed = False
        #: Always up.
        self.endpoint = EndpointHealth(f"SimulatedGlobalTable({region})", 3.0)

    @property
    def _storage(self) -> Transport:
        assert self.region_name is not None
        return self._table._storage[self.region_name]

    @property
    def loop(self) -> asyncio.AbstractEventLoop | None:
        return self._storage.loop

    @property
    def observer(self) -> Observer | None:
        return None

    @property
    def client(self) -> Any:
        return self._storage.client

    @property
    def requests(self) -> Counter[str]:
        """Requests sent through this Region's endpoint, by operation. A copy."""
        return Counter(self._requests)

    def validate(self, operation: str, params: dict[str, Any]) -> None:
        self._storage.validate(operation, params)

    async def send(self, operation: str, params: dict[str, Any]) -> dict[str, Any]:
        if self._closed:
            raise StoreClosed("this DynamoStore is closed")
        self._requests[_operation_name(operation)] += 1
        assert self.region_name is not None
        return await self._table._send(self.region_name, operation, params)

    async def aclose(self, *, timeout_secs: float) -> None:
        """Refuse new requests; the storage stays open (the simulation closes it)."""
        self._closed = True

    def __repr__(self) -> str:
        return f"<SimulatedGlobalTable endpoint {self.region_name}>"


def _operation_name(method: str) -> str:
    """``"update_item"`` as DynamoDB's ``"UpdateItem"``."""
    return "".join(part.title() for part in method.split("_"))


def _key_text(key: Mapping[str, Any]) -> str:
    return json.dumps(key, sort_keys=True)


def _witness(regions: Iterable[str]) -> str:
    """A Region for an MRSC table's witness, other than ``regions``."""
    for candidate in ("us-west-2", "us-east-2", "eu-central-1"):
        if candidate not in regions:
            return candidate
    raise AssertionError(regions)
