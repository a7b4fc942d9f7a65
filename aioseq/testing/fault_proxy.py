"""A fault-injecting HTTP proxy between a DynamoDB client and a server, on 127.0.0.1.

Local servers never fail the way DynamoDB does: moto and DynamoDB Local throttle nothing,
raise no ``TransactionConflictException``, never answer 500 and never lose an answer. Put a
[`FaultProxy`][aioseq.testing.FaultProxy] between the client and the server and give the client its
``endpoint_url``; a seeded [`FaultSchedule`][aioseq.testing.FaultSchedule] decides, request by
request, whether to pass the request through or to inject one of
[`KINDS`][aioseq.testing.fault_proxy.KINDS]:

=======================  ==========================================================  =========
kind                     what the client sees                                         applied?
=======================  ==========================================================  =========
``throughput-exceeded``  HTTP 400 ``ProvisionedThroughputExceededException``         no
``throttling``           HTTP 400 ``ThrottlingException``                            no
``internal-error``       HTTP 500 ``InternalServerError``                            no
``http-500``             HTTP 500 with a body that is not JSON (a load balancer's)   no
``transaction-conflict`` ``TransactWriteItems``: HTTP 400                            no
                         ``TransactionCanceledException`` with ``CancellationReasons``
                         holding one ``TransactionConflict``; other operations:
                         HTTP 400 ``TransactionConflictException``
``reset``                the connection is reset before the request reaches the       no
                         server
``delay``                the request is held ``delay_secs`` (set it past the          yes, late
                         client's read timeout), then sent to the server; the answer
                         is dropped with a reset
``response-lost``        the request is applied by the server, then the connection   yes
                         is reset instead of answering: the ambiguous case
``replicated-write-``    HTTP 400 ``ReplicatedWriteConflictException`` (a global      no
``conflict``             table with multi-Region strong consistency: another
                         Region's request is modifying the item); named only, not
                         in the default ``KINDS``
=======================  ==========================================================  =========

Error bodies are DynamoDB's (``__type`` + ``message``, ``application/x-amz-json-1.0``), so
botocore parses them as it parses the real ones. Resets are TCP resets (``SO_LINGER`` 0), so
the client sees a lost connection, not an empty answer.

With ``capacity=CapacityModel(...)`` ([`aioseq.testing.capacity`][aioseq.testing.capacity]) the
proxy also acts like AWS under load: each partition key value gets a write and a read budget
(token buckets), a request over budget is answered as DynamoDB answers it
(``ProvisionedThroughputExceededException``, or a ``TransactionCanceledException`` with
``ThrottlingError`` reasons) without reaching the server, and every request gets a round trip. The
proxy asks the server ``DescribeTable`` the first time a table is written or read, to learn its
partition key. The schedule decides first (a request it fails never reaches the
budget); a request that would reach the server is then admitted or throttled (after half its round
trip and any ``delay``: when it "arrives"); the other half of the round trip comes before the
answer. Throttles are counted apart from the schedule's faults, in
[`FaultProxy.throttled`][aioseq.testing.FaultProxy.throttled] (by operation), and reported to
``on_exchange`` with fault kind [`CAPACITY`][aioseq.testing.fault_proxy.CAPACITY] (not applied). A
``delay`` or ``response-lost`` request over budget is not applied either: the client gets the reset
it was scheduled to get.

Each exchange can be reported to an ``on_exchange`` callback (in the proxy's thread) with
the request, the server's answer and whether the client got it: aioseq's history checker
(``verification.history``, in aioseq's repository, not in the wheel) uses that to account for
every number the server handed out whose answer was lost.

From a test:

    with FaultProxy(server.endpoint_url, FaultSchedule.uniform(0.05, seed=1)) as proxy:
        async with DynamoStore.open(endpoint_url=proxy.endpoint_url) as store: ...
        print(proxy.injected)          # Counter({'reset': 3, 'throttling': 2, ...})

    with FaultProxy(server.endpoint_url, capacity=CapacityModel(partition_wcu_per_sec=50)) as proxy:
        ...
        print(proxy.throttled)         # Counter({'UpdateItem': 41})

From a shell (the first line on stdout is the endpoint; on SIGTERM or SIGINT the counts of
injected faults are printed as one JSON line, with the throttles under ``"capacity"`` when a
capacity model runs):

    python -m aioseq.testing.fault_proxy --target http://127.0.0.1:8000 --seed 1 --rate 0.05
    python -m aioseq.testing.fault_proxy --target http://127.0.0.1:8000 --rate 0 \
        --partition-wcu-per-sec 150 --round-trip-ms 2-6

Built on aiohttp (a dependency of aiobotocore): its server answers and resets, its client
forwards over pooled connections.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import re
import signal
import socket
import struct
import sys
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import aiohttp
from aiohttp import ClientSession, ClientTimeout, TCPConnector, web

from aioseq.errors import ConfigurationError
from aioseq.testing._server import Server
from aioseq.testing.capacity import (
    Admission,
    CapacityLedger,
    CapacityModel,
    tables_of,
    throttled_answer,
)
from aioseq.testing.faults import APPLIED_KINDS as APPLIED_KINDS
from aioseq.testing.faults import KINDS as KINDS
from aioseq.testing.faults import NO_FAULTS, REGION_KINDS, error_body
from aioseq.testing.faults import FaultSchedule as FaultSchedule

__all__ = ["CAPACITY", "KINDS", "Exchange", "FaultProxy", "FaultSchedule", "main"]

#: The fault kind of a request throttled by the capacity model, in
#: [`Exchange`][aioseq.testing.fault_proxy.Exchange].
CAPACITY = "capacity"

_JSON = "application/x-amz-json-1.0"
_APP_ID = re.compile(r"\bapp/(\S+)")
#: The region in a SigV4 ``Authorization`` header's credential scope.
_REGION = re.compile(r"Credential=[^/,]+/\d{8}/([^/,]+)/")
#: Headers that aiohttp sets itself on the forwarded request or the relayed answer.
_HOP_BY_HOP = frozenset(
    {"connection", "content-length", "keep-alive", "transfer-encoding", "upgrade", "date"}
)


@dataclass(frozen=True)
class Exchange:
    """One request through the proxy, as reported to ``on_exchange``.

    Attributes:
        operation: the DynamoDB operation (``"UpdateItem"``...), from ``X-Amz-Target``.
        fault: the injected kind, [`CAPACITY`][aioseq.testing.fault_proxy.CAPACITY] for a write
            throttled by the capacity model, or ``None``.
        request: the request body (DynamoDB JSON).
        status: the server's HTTP status, or ``None`` if the request never reached it.
        response: the server's answer body, or ``None`` if it never reached it.
        delivered: whether the client was sent the server's answer (False also when the
            client had closed the connection before the answer came: it timed out or died).
        client: the ``app/<id>`` in the request's ``User-Agent`` (botocore takes it from
            ``AWS_SDK_UA_APP_ID``), or ``""``: which process sent it.
    """

    operation: str
    fault: str | None
    request: bytes
    status: int | None
    response: bytes | None
    delivered: bool
    client: str = ""

    @property
    def applied_unacknowledged(self) -> bool:
        """The server accepted the request (2xx) and the client never heard of it."""
        return self.status is not None and 200 <= self.status < 300 and not self.delivered


def _json_response(status: int, error: Mapping[str, Any]) -> web.Response:
    """An error answer as DynamoDB sends it."""
    return web.Response(
        status=status,
        body=json.dumps(error).encode(),
        headers={"Content-Type": _JSON, "x-amzn-RequestId": uuid.uuid4().hex},
    )


def _reset(request: web.BaseRequest) -> None:
    """Reset the client's connection (RST, not FIN), answering nothing."""
    transport = request.transport
    if transport is None:
        return
    sock = transport.get_extra_info("socket")
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    transport.abort()


class FaultProxy(Server):
    """An HTTP proxy on ``host:port`` (a background thread with its own event loop) that sends
    every request to ``target_url`` unless its [`FaultSchedule`][aioseq.testing.FaultSchedule]
    injects a fault.

    Use as a context manager, or ``start()`` / ``stop()``; ``endpoint_url`` is what the client
    connects to.

    Parameters:
        target_url: the server, e.g. ``"http://127.0.0.1:8000"``.
        schedule: the faults (default: none);
            [`set_schedule()`][aioseq.testing.FaultProxy.set_schedule] changes it while running.
        on_exchange: called with an [`Exchange`][aioseq.testing.fault_proxy.Exchange] after each
            request, in the proxy's thread; keep it quick.
        capacity: an AWS-like budget per partition and round trip per request (see the
            module doc and [`aioseq.testing.capacity`][aioseq.testing.capacity]); ``None``: neither.
        host: the address to listen on; keep the loopback default.
        port: the TCP port; 0 picks a free one.
        clock: the capacity model's clock, monotonic seconds (a test injects one it moves
            by hand, so that a bucket refills when the test says, however slow the machine).
    """

    def __init__(
        self,
        target_url: str,
        schedule: FaultSchedule = NO_FAULTS,
        *,
        on_exchange: Callable[[Exchange], None] | None = None,
        capacity: CapacityModel | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.target_url = target_url.rstrip("/")
        self.host = host
        self.port = port
        self.on_exchange = on_exchange
        self._capacity = capacity
        self._ledger: CapacityLedger | None = capacity.ledger(clock=clock) if capacity else None
        self._injected: Counter[str] = Counter()
        self._throttled: Counter[str] = Counter()
        # Tables whose key the proxy asked the server for (in the proxy's loop).
        self._described: dict[str, asyncio.Task[None]] = {}
        self._requests = 0
        self._lock = threading.Lock()
        self.set_schedule(schedule)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._stopping: asyncio.Event | None = None

    # --- what it did ------------------------------------------------------------------------

    @property
    def injected(self) -> Counter[str]:
        """Faults injected so far, by kind (a copy)."""
        with self._lock:
            return Counter(self._injected)

    @property
    def capacity(self) -> CapacityModel | None:
        """The capacity model given to the constructor, if any."""
        return self._capacity

    @property
    def throttled(self) -> Counter[str]:
        """Requests throttled by the capacity model so far, by operation (a copy); not in
        [`injected`][aioseq.testing.FaultProxy.injected], which counts the schedule's faults."""
        with self._lock:
            return Counter(self._throttled)

    @property
    def consumed_wcu(self) -> float:
        """WCU the capacity model charged so far (writes it let through), 0 without one."""
        with self._lock:
            return self._ledger.charged_wcu if self._ledger is not None else 0.0

    @property
    def consumed_rcu(self) -> float:
        """RCU the capacity model charged so far (reads it budgets), 0 without one."""
        with self._lock:
            return self._ledger.charged_rcu if self._ledger is not None else 0.0

    @property
    def requests(self) -> int:
        """Requests received so far, faulted or not."""
        with self._lock:
            return self._requests

    def set_schedule(self, schedule: FaultSchedule) -> None:
        """Use ``schedule`` from the next request on (its draws start afresh)."""
        with self._lock:
            self.schedule = schedule
            self._pick = schedule.picker()

    def _decide(self, operation: str) -> tuple[str | None, float]:
        with self._lock:
            self._requests += 1
            kind = self._pick(operation)
            if kind is not None:
                self._injected[kind] += 1
            return kind, self.schedule.delay_secs

    def _round_trip(self) -> float:
        """Half of this request's round trip, in seconds (0 without a capacity model)."""
        if self._ledger is None:
            return 0.0
        with self._lock:
            return self._ledger.round_trip_secs() / 2

    async def _admit(
        self, operation: str, request: web.BaseRequest, body: bytes, session: ClientSession
    ) -> Admission | web.Response | None:
        """The capacity model's decision: the admission when it lets the request through
        (charging it), the throttle DynamoDB would answer when not, ``None`` without a model
        or for a request it cannot parse."""
        if self._ledger is None:
            return None
        try:
            parsed = json.loads(body)
        except ValueError:
            return None  # the server will refuse it
        if not isinstance(parsed, dict):
            return None
        await self._describe_tables(operation, parsed, request, session)
        with self._lock:
            admission = self._ledger.admit(operation, parsed)
            if admission.admitted:
                self._ledger.learn(operation, parsed)
                return admission
            self._throttled[operation] += 1
        scope = _REGION.search(request.headers.get("Authorization", ""))
        if scope is not None:
            status, error = throttled_answer(admission, region=scope.group(1))
        else:
            status, error = throttled_answer(admission)
        return _json_response(status, error)

    async def _describe_tables(
        self,
        operation: str,
        parsed: Mapping[str, Any],
        request: web.BaseRequest,
        session: ClientSession,
    ) -> None:
        """Ask the server ``DescribeTable`` once for each table the request budgets whose
        partition key the model does not know yet (a table created before the proxy ran);
        requests to a table being described wait for the answer, so that all are charged to
        the same partitions."""
        assert self._ledger is not None
        with self._lock:
            unknown = [t for t in tables_of(operation, parsed) if not self._ledger.knows(t)]
        if not unknown:
            return
        headers = {
            k: v
            for k, v in request.headers.items()
            if k.lower() not in _HOP_BY_HOP and k.lower() != "x-amz-target"
        }

        async def describe(table: str) -> None:
            body = json.dumps({"TableName": table}).encode()
            with contextlib.suppress(aiohttp.ClientError, ValueError):  # asked again next time
                async with session.post(  # local servers do not check signatures
                    self.target_url + "/",
                    data=body,
                    headers={**headers, "X-Amz-Target": "DynamoDB_20120810.DescribeTable"},
                ) as answer:
                    payload = await answer.read()
                self._learn("DescribeTable", body, payload)

        for table in sorted(unknown):
            if table not in self._described:
                self._described[table] = asyncio.ensure_future(describe(table))
            asked = self._described[table]
            await asyncio.shield(asked)
            with self._lock:
                if not self._ledger.knows(table) and self._described.get(table) is asked:
                    del self._described[table]  # no answer (no such table yet): ask again

    def _learn(self, operation: str, body: bytes, payload: bytes) -> None:
        """Let the capacity model learn tables' key attributes from an answered request."""
        if self._ledger is None or operation not in ("CreateTable", "DescribeTable"):
            return
        try:
            request, answer = json.loads(body), json.loads(payload)
        except ValueError:
            return
        if isinstance(request, dict) and isinstance(answer, dict):
            with self._lock:
                self._ledger.learn(operation, request, answer)

    def _settle(self, admission: Admission | None, status: int, payload: bytes) -> None:
        """Charge an admitted read the rest of its cost, from the size its answer shows."""
        if self._ledger is None or admission is None or not admission.rcu or status != 200:
            return
        try:
            answer = json.loads(payload)
        except ValueError:
            return
        if isinstance(answer, dict):
            with self._lock:
                self._ledger.settle(admission, answer)

    # --- lifecycle --------------------------------------------------------------------------

    def start(self) -> None:
        """Start serving; returns once the socket listens. Idempotent."""
        if self._thread is not None:
            return
        ready = threading.Event()
        failure: list[BaseException] = []

        def run() -> None:
            loop = asyncio.new_event_loop()
            self._loop = loop
            try:
                loop.run_until_complete(self._serve(ready))
            except BaseException as exc:  # reported to start()
                failure.append(exc)
                ready.set()
            finally:
                loop.close()

        self._thread = threading.Thread(target=run, name="aioseq-fault-proxy", daemon=True)
        self._thread.start()
        ready.wait()
        if failure:
            self._thread.join()
            self._thread = None
            raise RuntimeError(f"the fault proxy did not start: {failure[0]!r}") from failure[0]

    async def _serve(self, ready: threading.Event) -> None:
        self._stopping = asyncio.Event()
        connector = TCPConnector(limit=0, force_close=False)
        async with ClientSession(
            connector=connector, auto_decompress=False, timeout=ClientTimeout(total=None)
        ) as session:
            server = web.Server(lambda request: self._handle(request, session))
            # On stop, requests still held (a delay) get 2 s to finish, then are dropped.
            runner = web.ServerRunner(server, handle_signals=False, shutdown_timeout=2.0)
            await runner.setup()
            listening = socket.create_server((self.host, self.port))
            self.port = listening.getsockname()[1]
            await web.SockSite(runner, listening).start()
            ready.set()
            try:
                await self._stopping.wait()
            finally:
                await runner.cleanup()

    def stop(self) -> None:
        """Stop serving and free the port. Idempotent."""
        thread, self._thread = self._thread, None
        if thread is None:
            return
        loop, stopping = self._loop, self._stopping
        if loop is not None and stopping is not None:
            loop.call_soon_threadsafe(stopping.set)
        thread.join()

    @property
    def endpoint_url(self) -> str:
        """``http://127.0.0.1:PORT``; valid after [`start()`][aioseq.testing.FaultProxy.start]."""
        if self._thread is None:
            raise RuntimeError("the proxy is not running; call start() first")
        return f"http://{self.host}:{self.port}"

    def __repr__(self) -> str:
        state = f"serving {self.endpoint_url}" if self._thread is not None else "stopped"
        throttled = f" throttled={sum(self.throttled.values())}" if self.capacity else ""
        return (
            f"<FaultProxy {state} -> {self.target_url} injected={dict(self.injected)}{throttled}>"
        )

    # --- one request ------------------------------------------------------------------------

    async def _handle(self, request: web.BaseRequest, session: ClientSession) -> web.StreamResponse:
        body = await request.read()
        operation = request.headers.get("X-Amz-Target", "").rpartition(".")[2]
        app = _APP_ID.search(request.headers.get("User-Agent", ""))
        client = app.group(1) if app else ""
        kind, delay_secs = self._decide(operation)
        half_trip = self._round_trip()
        if half_trip:  # on its way to the server
            await asyncio.sleep(half_trip)
        if kind == "reset":
            _reset(request)
            self._report(Exchange(operation, kind, body, None, None, False, client))
            return web.Response()  # never sent: the connection is gone
        if kind is not None and kind not in APPLIED_KINDS:
            status, error = error_body(kind, operation, body)
            self._report(Exchange(operation, kind, body, None, None, False, client))
            if half_trip:
                await asyncio.sleep(half_trip)
            if isinstance(error, str):
                return web.Response(status=status, text=error, content_type="text/html")
            return _json_response(status, error)
        if kind == "delay":
            await asyncio.sleep(delay_secs)
        decision = await self._admit(operation, request, body, session)
        if isinstance(decision, web.Response):
            throttle = decision
            if kind is not None:  # an applied kind: its answer, the throttle, is lost
                _reset(request)
                self._report(Exchange(operation, kind, body, None, None, False, client))
                return web.Response()
            self._report(Exchange(operation, CAPACITY, body, None, None, False, client))
            if half_trip:
                await asyncio.sleep(half_trip)
            return throttle
        headers = {k: v for k, v in request.headers.items() if k.lower() not in _HOP_BY_HOP}
        async with session.request(
            request.method, self.target_url + request.path_qs, data=body, headers=headers
        ) as answer:
            payload = await answer.read()
            status = answer.status
            answer_headers = {
                k: v for k, v in answer.headers.items() if k.lower() not in _HOP_BY_HOP
            }
        self._learn(operation, body, payload)
        self._settle(decision, status, payload)
        if kind is not None:  # applied, and the answer is lost
            _reset(request)
            self._report(Exchange(operation, kind, body, status, payload, False, client))
            return web.Response()
        if half_trip:  # the answer on its way back
            await asyncio.sleep(half_trip)
        # A client that gave up waiting (its read timeout) or died has closed the connection.
        transport = request.transport
        delivered = transport is not None and not transport.is_closing()
        self._report(Exchange(operation, None, body, status, payload, delivered, client))
        return web.Response(status=status, body=payload, headers=answer_headers)

    def _report(self, exchange: Exchange) -> None:
        if self.on_exchange is not None:
            self.on_exchange(exchange)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m aioseq.testing.fault_proxy --target URL [--seed S] [--rate R] ...``: serve
    until SIGTERM or SIGINT. The first line on stdout is the endpoint URL; the last, the
    injected faults by kind as JSON, with the capacity model's throttles (all operations)
    under ``"capacity"`` when any option of the capacity model turns it on
    (``--partition-wcu-per-sec``, ``--partition-rcu-per-sec``, ``--item-wcu-per-sec``,
    ``--burst-secs``, ``--round-trip-ms``)."""
    parser = argparse.ArgumentParser(
        prog="python -m aioseq.testing.fault_proxy",
        description="A fault-injecting proxy for DynamoDB on 127.0.0.1.",
    )
    parser.add_argument("--target", required=True, metavar="URL", help="the DynamoDB endpoint")
    parser.add_argument("--port", type=int, default=0, help="TCP port on 127.0.0.1 (0: any free)")
    parser.add_argument("--seed", type=int, default=0, help="the schedule's seed (0)")
    parser.add_argument(
        "--rate", type=float, default=0.05, help="share of requests that get a fault (0.05)"
    )
    parser.add_argument(
        "--kinds",
        default=",".join(KINDS),
        help=f"comma-separated kinds sharing the rate equally (default: {','.join(KINDS)};"
        f" also: {','.join(REGION_KINDS)})",
    )
    parser.add_argument(
        "--operations",
        default=None,
        metavar="OPS",
        help="comma-separated operations that may get faults (default: all)",
    )
    parser.add_argument(
        "--delay-secs", type=float, default=3.0, help="how long a delay fault holds (3)"
    )
    model = parser.add_argument_group(
        "capacity model", "an AWS-like budget per partition and round trip per request"
    )
    writes = model.add_mutually_exclusive_group()
    writes.add_argument(
        "--partition-wcu-per-sec",
        type=float,
        default=None,
        metavar="WCU",
        help="each partition key value's write budget, in WCU per second (AWS: 1000)",
    )
    writes.add_argument(
        "--item-wcu-per-sec",
        type=float,
        default=None,
        metavar="WCU",
        help="instead, a write budget for each item, and reads unbudgeted (no AWS table does"
        " this; to compare layouts)",
    )
    model.add_argument(
        "--partition-rcu-per-sec",
        type=float,
        default=None,
        metavar="RCU",
        help="each partition key value's read budget, in RCU per second (AWS: 3000)",
    )
    model.add_argument(
        "--burst-secs",
        type=float,
        default=None,
        metavar="SECS",
        help="seconds of budget an idle partition's bucket holds (0.1)",
    )
    model.add_argument(
        "--round-trip-ms",
        type=_milliseconds_range,
        default=None,
        metavar="LO[-HI]",
        help="each request's added round trip, drawn from LO..HI ms (0)",
    )
    args = parser.parse_args(argv)
    try:
        schedule = FaultSchedule.uniform(
            args.rate,
            seed=args.seed,
            kinds=[k for k in args.kinds.split(",") if k],
            operations=args.operations.split(",") if args.operations else None,
            delay_secs=args.delay_secs,
        )
        capacity = None
        given = {
            "partition_wcu_per_sec": args.partition_wcu_per_sec,
            "partition_rcu_per_sec": args.partition_rcu_per_sec,
            "burst_secs": args.burst_secs,
            "round_trip_secs": args.round_trip_ms,
        }
        if args.item_wcu_per_sec is not None:
            if args.partition_rcu_per_sec is not None:
                parser.error("--item-wcu-per-sec budgets no reads: --partition-rcu-per-sec"
                             " has no effect with it")  # fmt: skip
            given.update(partition_wcu_per_sec=args.item_wcu_per_sec, partition_by="item")
        if any(v is not None for v in given.values()):
            capacity = CapacityModel(
                **{k: v for k, v in given.items() if v is not None}, seed=args.seed
            )
    except ConfigurationError as exc:
        parser.error(str(exc))
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    with FaultProxy(args.target, schedule, capacity=capacity, port=args.port) as proxy:
        print(proxy.endpoint_url, flush=True)
        stop.wait()
        counts = dict(proxy.injected)
        if capacity is not None:
            counts[CAPACITY] = sum(proxy.throttled.values())
        print(json.dumps(counts, sort_keys=True), flush=True)
    return 0


def _milliseconds_range(text: str) -> tuple[float, float]:
    """``"2-6"`` -> ``(0.002, 0.006)`` seconds; ``"3"`` -> ``(0.003, 0.003)``."""
    lo, sep, hi = text.partition("-")
    try:
        pair = (float(lo) / 1000, float(hi if sep else lo) / 1000)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not LO or LO-HI milliseconds: {text!r}") from None
    return pair


if __name__ == "__main__":
    sys.exit(main())
