"""The transport: the one place in aioseq that talks to botocore.

A `BotocoreTransport` (the store's [`Transport`][aioseq.contracts.Transport]) holds one DynamoDB
client (borrowed, or owned through an ``AsyncExitStack``), sends each request it is given once
(any number at a time; no retries: those are the `RetryEngine`'s), counts the requests sent,
maps botocore's errors to aioseq's in one table, reports each request to an observer, and on
close waits for the requests in flight before it closes an owned client (httpx's
``AsyncHTTPTransport`` with its one ``map_httpcore_exceptions``; aiodynamo's request callable
and ``ERRORS`` table).
"""

from __future__ import annotations

import asyncio
import logging
import socket
import ssl
from collections import Counter
from collections.abc import Mapping, Sequence
from contextlib import AsyncExitStack
from typing import TYPE_CHECKING, Any

import aiohttp
from botocore.exceptions import (
    ClientError,
    ConnectTimeoutError,
    EndpointConnectionError,
    HTTPClientError,
    NoCredentialsError,
    PartialCredentialsError,
)
from botocore.exceptions import ConnectionError as BotocoreConnectionError
from botocore.exceptions import SSLError as BotocoreSSLError
from botocore.validate import validate_parameters

from aioseq._endpoint import EndpointHealth
from aioseq.clock import Clock, LoopClock
from aioseq.errors import (
    ConditionFailed,
    ConfigurationError,
    ConnectionFailed,
    EndpointUnreachable,
    NotDynamoDB,
    ServiceUnavailable,
    StoreClosed,
    StoreError,
    TableNotFound,
    Throttled,
    TransactionCanceled,
    TransactionConflict,
    ValidationFailed,
)
from aioseq.observe import Observer, RequestEvent, notify

if TYPE_CHECKING:
    from types_aiobotocore_dynamodb import DynamoDBClient
else:
    DynamoDBClient = Any

__all__ = ["NO_CREDENTIALS", "BotocoreTransport", "may_apply", "operation_name", "translate"]

log = logging.getLogger("aioseq")

#: DynamoDB error code -> aioseq error class (ADY's ``ERRORS``, HC's ``map_exceptions``).
ERRORS: dict[str, type[StoreError]] = {
    "ConditionalCheckFailedException": ConditionFailed,
    "TransactionCanceledException": TransactionCanceled,
    "ResourceNotFoundException": TableNotFound,
    "ValidationException": ValidationFailed,
    "ProvisionedThroughputExceededException": Throttled,
    "ThrottlingException": Throttled,
    "RequestLimitExceeded": Throttled,
    "TransactionConflictException": TransactionConflict,
    "TransactionInProgressException": TransactionConflict,
    # A global table with multi-Region strong consistency: another Region's request is
    # modifying the item; rejected, not applied, and safe to retry.
    "ReplicatedWriteConflictException": TransactionConflict,
    "InternalServerError": ServiceUnavailable,
    "ServiceUnavailable": ServiceUnavailable,
}

#: The error codes of credentials the service does not know: with credentials meant for a
#: local server, sent to AWS (`translate()`'s ``endpoint_hint``).
WRONG_ENDPOINT_CODES = frozenset({"UnrecognizedClientException", "InvalidSignatureException"})

NO_CREDENTIALS = (
    "no AWS credentials found: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE,"
    " or run where a role provides them"
)

#: The operations that take ``ReturnConsumedCapacity`` (botocore method names).
CAPACITY_OPERATIONS = frozenset(
    {
        "get_item",
        "put_item",
        "update_item",
        "delete_item",
        "query",
        "scan",
        "transact_write_items",
        "transact_get_items",
        "batch_get_item",
        "batch_write_item",
    }
)


def translate(
    error: Exception,
    operation: str,
    tables: Sequence[str] = (),
    *,
    endpoint_url: str = "",
    endpoint_hint: str = "",
) -> StoreError:
    """Turn a botocore error into the matching aioseq [`StoreError`][aioseq.errors.StoreError];
    ``tables`` are the tables the request named ([`tables_of`][aioseq._transport.tables_of]),
    ``endpoint_url`` the URL it went to (named by [`NotDynamoDB`][aioseq.errors.NotDynamoDB]);
    ``endpoint_hint`` ends the message of an error that suggests a wrong endpoint (no
    connection, credentials the service does not know: `WRONG_ENDPOINT_CODES`)."""
    if isinstance(error, ClientError):
        response: Mapping[str, Any] = error.response
        code = str(response.get("Error", {}).get("Code", ""))
        foreign = _not_dynamodb(response, code, operation, endpoint_url)
        if foreign is not None:
            return foreign
        message = f"{operation}: {code}: {response.get('Error', {}).get('Message', '')}"
        if endpoint_hint and code in WRONG_ENDPOINT_CODES:
            message = f"{message.rstrip('. ')}; {endpoint_hint}"
        cls = ERRORS.get(code)
        if cls is TableNotFound:
            if len(tables) == 1:
                missing = f"table {tables[0]!r} does not exist"
            else:
                missing = "one of the tables " * bool(tables) + ", ".join(map(repr, tables))
                missing = f"{missing or 'the table'} does not exist"
            return TableNotFound(
                f"{missing} ({message})", code=code, operation=operation, tables=tables
            )
        if cls is None:
            status = int(response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0) or 0)
            cls = ServiceUnavailable if status >= 500 else StoreError
        if cls is ServiceUnavailable:  # (a 5xx may follow a write's success; a read's, nothing)
            return ServiceUnavailable(
                message, code=code, operation=operation, maybe_applied=may_apply(operation)
            )
        if cls is ConditionFailed:
            item = response.get("Item")
            return ConditionFailed(message, code=code, operation=operation, item=item)
        if cls is TransactionCanceled:
            return TransactionCanceled(
                message,
                code=code,
                operation=operation,
                cancellation_reasons=response.get("CancellationReasons", ()),
            )
        return cls(message, code=code, operation=operation)
    message = f"{operation}: {_connection_cause(error) or error}"
    if endpoint_hint:
        message = f"{message}; {endpoint_hint}"
    if _never_sent(error):
        return EndpointUnreachable(message, code=type(error).__name__, operation=operation)
    return ConnectionFailed(
        message, code=type(error).__name__, operation=operation, maybe_applied=may_apply(operation)
    )


def _not_dynamodb(
    response: Mapping[str, Any], code: str, operation: str, endpoint_url: str
) -> NotDynamoDB | None:
    """`NotDynamoDB` for an answer below 500 that is not DynamoDB's: no ``x-amzn-RequestId``
    header, and no error type in its body (botocore then takes the HTTP status for the code);
    ``None`` for DynamoDB's answers, and for 5xx answers (a load balancer's, passing)."""
    meta = response.get("ResponseMetadata", {})
    headers = meta.get("HTTPHeaders") or {}
    status = int(meta.get("HTTPStatusCode") or 0)
    if not status or status >= 500 or code != str(status) or "x-amzn-requestid" in headers:
        return None
    content_type = str(headers.get("content-type", "")).split(";")[0].strip()
    where = endpoint_url.rstrip("/") or "the endpoint"
    return NotDynamoDB(
        f"{operation}: {where} answered HTTP {status}"
        f" {f'with {content_type}' if content_type else 'with no content type'}"
        ": not a DynamoDB endpoint",
        code=code,
        operation=operation,
        endpoint_url=endpoint_url,
        status=status,
        content_type=content_type,
    )


def _raise_unless_dynamodb(http_response: Any, parsed: Mapping[str, Any], **kwargs: Any) -> None:
    """A botocore ``after-call`` hook: a success answer (below 300) that is not DynamoDB's (no
    ``x-amzn-RequestId``, a body that is not JSON: a web application's page) raises the
    ``ClientError`` botocore raises for such an error answer, which `translate()` names
    `NotDynamoDB`; botocore would otherwise parse it as an empty result."""
    if http_response.status_code >= 300:
        return  # botocore raises ClientError itself
    meta = parsed.get("ResponseMetadata", {})
    headers = meta.get("HTTPHeaders") or {}
    if "x-amzn-requestid" in headers or "json" in str(headers.get("content-type", "")):
        return
    status = str(http_response.status_code)
    operation = getattr(kwargs.get("model"), "name", "")
    raise ClientError(
        {"Error": {"Code": status, "Message": ""}, "ResponseMetadata": dict(meta)},  # type: ignore[typeddict-item]
        operation,
    )


#: The operations that change nothing: a lost answer to one of them applied nothing.
READ_OPERATIONS = frozenset(
    {
        "BatchGetItem",
        "DescribeContinuousBackups",
        "DescribeEndpoints",
        "DescribeLimits",
        "DescribeTable",
        "DescribeTimeToLive",
        "GetItem",
        "ListTables",
        "ListTagsOfResource",
        "Query",
        "Scan",
        "TransactGetItems",
    }
)


def may_apply(operation: str) -> bool:
    """Whether a request of ``operation`` (an API name, ``"UpdateItem"``) whose answer was
    lost, or came back a 5xx, may have been applied all the same: any but a read
    (`READ_OPERATIONS`), which changes nothing whatever became of it."""
    return operation not in READ_OPERATIONS


def tables_of(params: Mapping[str, Any]) -> tuple[str, ...]:
    """The tables a request names: its ``TableName``, or its ``TransactItems``' (each once,
    in order)."""
    if "TableName" in params:
        return (str(params["TableName"]),)
    names = (
        action.get("TableName")
        for item in params.get("TransactItems", ())
        for action in item.values()
        if isinstance(action, Mapping)
    )
    return tuple(dict.fromkeys(str(name) for name in names if name))


def _never_sent(error: Exception) -> bool:
    """Whether a connection error happened before the request was sent: no connection could
    be made (refused, no such host, connect timeout, a failed TLS handshake). aiobotocore
    raises ``EndpointConnectionError`` for those and also for a connection reset after
    sending, so the aiohttp error inside it decides; its ``SSLError`` holds aiohttp's
    ``ClientSSLError``, which only the handshake raises."""
    if isinstance(error, ConnectTimeoutError):
        return True
    if isinstance(error, (EndpointConnectionError, BotocoreSSLError)):
        cause = getattr(error, "kwargs", {}).get("error")
        return isinstance(cause, (aiohttp.ClientConnectorError, socket.gaierror))
    return False


#: OpenSSL's reasons for a handshake answered by a server that speaks plain HTTP (its
#: ``HTTP/1.1 400`` read as a TLS record).
_PLAIN_HTTP_REASONS = frozenset(
    {"WRONG_VERSION_NUMBER", "PACKET_LENGTH_TOO_LONG", "RECORD_LAYER_FAILURE", "UNKNOWN_PROTOCOL"}
)


def _connection_cause(error: Exception) -> str | None:
    """Why no connection could be made, naming the host (and port): refused, a name that does
    not resolve, a TLS handshake that failed (a plain-HTTP server, a certificate not
    trusted), another OS error; ``None`` when the aiohttp error inside botocore's does not
    say (a connection lost after sending, a timeout: botocore's text is kept)."""
    inner = getattr(error, "kwargs", {}).get("error")
    if isinstance(inner, socket.gaierror):  # (not wrapped by aiohttp)
        return f"cannot resolve the endpoint's host ({inner.strerror or inner})"
    if not isinstance(inner, aiohttp.ClientConnectorError):
        return None
    where = f"{inner.host}:{inner.port}"
    if isinstance(inner, aiohttp.ClientConnectorCertificateError):
        cert = inner.certificate_error
        why = getattr(cert, "verify_message", None) or str(cert)
        return (
            f"the TLS certificate of {where} is not trusted ({why}): if your own CA signed it,"
            " name that CA's certificate in AWS_CA_BUNDLE"
        )
    os_error = inner.os_error
    if isinstance(inner, aiohttp.ClientSSLError):
        reason = getattr(os_error, "reason", None) if isinstance(os_error, ssl.SSLError) else None
        if reason in _PLAIN_HTTP_REASONS:
            return (
                f"the TLS handshake with {where} failed ({reason}): the server speaks plain"
                f" HTTP, not TLS; use http://{where}"
            )
        return f"the TLS handshake with {where} failed ({reason or os_error})"
    if isinstance(inner, aiohttp.ClientConnectorDNSError) or isinstance(os_error, socket.gaierror):
        return f"cannot resolve host {inner.host} ({os_error.strerror or os_error})"
    if isinstance(os_error, ConnectionRefusedError):
        return f"connection refused by {where} (is DynamoDB running there?)"
    return f"cannot connect to {where} ({os_error.strerror or os_error})"


def operation_name(method: str) -> str:
    """``"update_item"`` -> ``"UpdateItem"``."""
    return "".join(part.capitalize() for part in method.split("_"))


def capacity_units(consumed: object) -> float | None:
    """``CapacityUnits`` from a ``ConsumedCapacity`` answer (one dict, or one per table of a
    transaction, summed); ``None`` when there is none."""
    entries = [consumed] if isinstance(consumed, dict) else consumed
    if not isinstance(entries, list):
        return None
    units = [e["CapacityUnits"] for e in entries if isinstance(e, dict) and "CapacityUnits" in e]
    return float(sum(units)) if units else None


def _cancelling() -> bool:
    """Whether the running task is being cancelled (Python >= 3.11; assumed on 3.10, so a
    cancellation is never mistaken for a close and swallowed)."""
    task = asyncio.current_task()
    cancelling = getattr(task, "cancelling", None)
    return cancelling is None or bool(cancelling())


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


def _unknown_operation(operation: str, methods: dict[str, str]) -> ConfigurationError:
    """The error for a request named by something that is not a method of the client."""
    by_api_name = {api: method for method, api in methods.items()}
    hint = (
        f"; the method for the API's {operation!r} is {by_api_name[operation]!r}"
        if operation in by_api_name
        else ""
    )
    return ConfigurationError(
        f"unknown DynamoDB operation {operation!r}: name it as botocore's method"
        f" (e.g. 'update_item'){hint}"
    )


class BotocoreTransport:
    """One DynamoDB client: sends requests, maps errors, counts, drains on close.

    Parameters:
        client: an open aiobotocore DynamoDB client.
        owner: the exit stack that closes the client (the store opened it), or ``None`` for a
            borrowed client, which `aclose()` leaves open.
        observer: every request is reported to its ``on_request``; item requests then ask
            for ``ReturnConsumedCapacity=TOTAL``.
        table_name: the table named in the observer's events.
        validates: `validate()` checks parameters (a client made with botocore's
            ``parameter_validation=False``, as `aioseq._client.open_client` makes them);
            otherwise the client checks every request itself.
        clock: what a request's latency is measured on (the store's).
        down_after_secs: how long requests may go unanswered before the endpoint is down
            (`EndpointHealth`; the store's ``RetryPolicy.max_unreachable_secs``).
        endpoint_hint: ends the message of errors that suggest a wrong endpoint (`translate()`;
            `aioseq._client.open_client` gives one).
    """

    def __init__(
        self,
        client: DynamoDBClient,
        *,
        owner: AsyncExitStack | None = None,
        observer: Observer | None = None,
        table_name: str = "",
        validates: bool = False,
        clock: Clock | None = None,
        down_after_secs: float = 3.0,
        endpoint_hint: str = "",
    ) -> None:
        self.client = client
        clock = clock or LoopClock()
        self._now = clock.now
        #: Whether the endpoint answers; requests fail at once while it is down.
        self.endpoint = EndpointHealth(
            str(getattr(client.meta, "endpoint_url", "") or "DynamoDB"),
            down_after_secs,
            clock,
            observer,
        )
        self.endpoint.probe = self._probe
        self.observer = observer
        self.table_name = table_name
        region = getattr(client.meta, "region_name", None)
        #: The Region the client sends to (``None``: not known).
        self.region_name: str | None = region if isinstance(region, str) else None
        #: The event loop the client was handed over in (its connections live there), or
        #: ``None`` when it was made outside one.
        self.loop: asyncio.AbstractEventLoop | None = _running_loop()
        self._owner = owner
        self._requests: Counter[str] = Counter()
        self._closed = False  # aclose() is done with requests: send() refuses them
        self._in_flight = 0  # send()s awaiting an answer
        self._drained: asyncio.Event | None = None  # set when _in_flight drops to 0, closing
        client.meta.events.register("before-send.dynamodb", self._count_request)
        client.meta.events.register("after-call.dynamodb", self._check_answer)
        #: The URL requests go to (named by errors).
        self.endpoint_url = str(getattr(client.meta, "endpoint_url", "") or "")
        self.endpoint_hint = endpoint_hint
        #: Whether `validate()` checks parameters: the client does not (aioseq's own clients,
        #: whose requests aioseq builds; see `aioseq._client.open_client`).
        self.validates = validates
        self._input_shapes: dict[str, Any] = {}  # operation -> botocore's input shape

    @property
    def requests(self) -> Counter[str]:
        """HTTP requests sent through the client since this transport was made, by API
        operation (``{"UpdateItem": 12, ...}``), counted by a botocore ``before-send`` event
        hook, so a borrowed client's own retries count too. A copy."""
        found: Counter[str] = Counter()
        for event_name, n in self._requests.items():
            found[event_name.rsplit(".", 1)[-1]] += n
        return found

    @property
    def in_flight(self) -> int:
        """Requests sent and not yet answered."""
        return self._in_flight

    def _count_request(self, event_name: str, **kwargs: Any) -> None:
        self._requests[event_name] += 1  # by event name: no string work per request

    def _check_answer(self, **kwargs: Any) -> None:
        # (A handler of this transport's own, so that its close unregisters only it.)
        _raise_unless_dynamodb(**kwargs)

    def validate(self, operation: str, params: dict[str, Any]) -> None:
        """Check ``params`` against the operation's input shape with botocore's own validator,
        when the client does not (no request is sent).

        Raises:
            ConfigurationError: ``operation`` is not one of the client's methods (an API name
                such as ``"UpdateItem"`` names the method to use, ``"update_item"``).
            botocore.exceptions.ParamValidationError: as the client would have, unchanged.
        """
        methods = self.client.meta.method_to_api_mapping
        if operation not in methods:
            raise _unknown_operation(operation, methods)
        if not self.validates:
            return
        shape = self._input_shapes.get(operation)
        if shape is None:
            meta = self.client.meta
            model = meta.service_model.operation_model(methods[operation])
            shape = self._input_shapes[operation] = model.input_shape
        if shape is not None:
            validate_parameters(params, shape)

    async def send(self, operation: str, params: dict[str, Any]) -> dict[str, Any]:
        """Send one request (``operation`` as botocore's method name, e.g. ``"update_item"``)
        and return its response. One attempt: retries are the caller's (a
        `RetryEngine`). ``params`` is left unchanged, so a caller may
        send the same dict again (a request template).

        Without an observer, a request that succeeds costs what the client's call costs, an
        in-flight count and nothing else: errors are translated, and events built, only on
        failure or for an observer.

        Raises:
            StoreClosed: the transport is closed, or its close cut the request off (then with
                ``maybe_applied`` set: the request was sent and its fate is unknown).
            ConfigurationError: no credentials.
            StoreError: a subclass chosen by DynamoDB's error code (`ERRORS`), or
                [`ConnectionFailed`][aioseq.errors.ConnectionFailed] /
                [`EndpointUnreachable`][aioseq.errors.EndpointUnreachable]; ``__cause__`` is
                botocore's.
        """
        if self._closed:
            raise StoreClosed("this DynamoStore is closed")
        endpoint = self.endpoint
        if endpoint.down_since is not None:
            raise endpoint.refused(operation_name(operation))
        if self.observer is not None:
            return await self._send_observed(operation, params, self.observer)
        ticket = endpoint.sent()
        if endpoint.down_since is not None:  # (it went down on the evidence so far)
            endpoint.ended(ticket)
            raise endpoint.refused(operation_name(operation))
        self._in_flight += 1
        try:
            response: dict[str, Any] = await getattr(self.client, operation)(**params)
            endpoint.answered(ticket)
            return response
        except BaseException as exc:
            error = self._failure(exc, operation, params, ticket)
            if error is None:
                raise
            raise error from exc
        finally:
            self._in_flight -= 1
            if not self._in_flight and self._drained is not None:
                self._drained.set()

    async def _send_observed(
        self, operation: str, params: dict[str, Any], observer: Observer
    ) -> dict[str, Any]:
        """`send()` (the transport open), timed and reported to ``observer``; item
        requests ask for ``ReturnConsumedCapacity=TOTAL`` (in a copy of ``params``)."""
        if operation in CAPACITY_OPERATIONS and "ReturnConsumedCapacity" not in params:
            params = {**params, "ReturnConsumedCapacity": "TOTAL"}
        error: str | None = None
        response: dict[str, Any] | None = None
        started = self._now()
        ticket = self.endpoint.sent()
        if self.endpoint.down_since is not None:  # (it went down on the evidence so far)
            self.endpoint.ended(ticket)
            raise self.endpoint.refused(operation_name(operation))
        self._in_flight += 1
        try:
            response = await getattr(self.client, operation)(**params)
            self.endpoint.answered(ticket)
            return response
        except BaseException as exc:
            failure = self._failure(exc, operation, params, ticket)
            error = (
                (failure.code or type(failure).__name__)
                if isinstance(failure, StoreError) and not isinstance(failure, StoreClosed)
                else type(exc).__name__
            )
            if failure is None:
                raise
            raise failure from exc
        finally:
            self._in_flight -= 1
            if not self._in_flight and self._drained is not None:
                self._drained.set()
            consumed = response.get("ConsumedCapacity") if response is not None else None
            event = RequestEvent(
                operation=operation_name(operation),
                table=self.table_name,
                latency_secs=self._now() - started,
                consumed_capacity_units=capacity_units(consumed),
                error=error,
            )
            notify(observer.on_request, event)

    def _failure(
        self, exc: BaseException, operation: str, params: Mapping[str, Any], ticket: int
    ) -> BaseException | None:
        """The error a failed request raises (``None``: ``exc`` itself): a translated
        [`StoreError`][aioseq.errors.StoreError] naming the request's tables,
        ``ConfigurationError`` for missing credentials,
        ``StoreClosed`` for a request this transport's close cut off. Tells the endpoint's
        health what became of the request."""
        endpoint = self.endpoint
        if isinstance(exc, ClientError):  # an answer, if an error one: the endpoint is up
            endpoint.answered(ticket)
        if isinstance(exc, (ClientError, BotocoreConnectionError, HTTPClientError)):
            translated = translate(
                exc,
                operation_name(operation),
                tables_of(params),
                endpoint_url=self.endpoint_url,
                endpoint_hint=self.endpoint_hint,
            )
            if isinstance(translated, EndpointUnreachable):
                endpoint.unreachable(ticket, translated)
            else:
                endpoint.ended(ticket, None if isinstance(exc, ClientError) else translated)
            cut: BaseException | None = self._cut_off(translated, operation)
            return cut
        endpoint.ended(ticket)  # a cancelled caller, missing credentials: no evidence
        if isinstance(exc, (NoCredentialsError, PartialCredentialsError)):
            return ConfigurationError(NO_CREDENTIALS)
        if isinstance(exc, asyncio.CancelledError):
            cancelled: BaseException | None = self._cut_off(None, operation)
            return cancelled
        return None

    def _cut_off(self, error: StoreError | None, operation: str) -> Any:
        """The error a request gets when it failed: ``StoreClosed`` (``maybe_applied``, unless
        it is a read) if this transport's close cut it off (a lost connection or a
        cancellation from closing an owned client, not a cancellation of the caller, not a
        service answer); else ``error`` (``None`` for a cancellation, which propagates as it
        is)."""
        if (
            self._closed
            and self._owner is not None
            and (error is None or isinstance(error, ConnectionFailed))
            and not _cancelling()
        ):
            closed = StoreClosed("this DynamoStore was closed during the request")
            # The request was sent; its fate is unknown (a read's does not matter).
            closed.maybe_applied = may_apply(operation_name(operation))
            return closed
        return error

    async def _probe(self) -> None:
        """One ``DescribeEndpoints`` (no table, no capacity): an answer of any kind, an error
        included, brings the endpoint up; no answer raises."""
        try:
            await self.client.describe_endpoints()
        except ClientError:
            pass  # (AccessDenied, an unknown operation...: an answer all the same)
        except (BotocoreConnectionError, HTTPClientError) as exc:
            raise translate(
                exc,
                "DescribeEndpoints",
                endpoint_url=self.endpoint_url,
                endpoint_hint=self.endpoint_hint,
            ) from exc
        self.endpoint.answered()

    async def aclose(self, *, timeout_secs: float) -> None:
        """Wait until the requests in flight are answered (at most ``timeout_secs``), then
        refuse new ones and close the client if this transport owns it. A request the close
        cuts off gets ``StoreClosed`` with ``maybe_applied``."""
        await self.endpoint.aclose()
        if self._in_flight:
            self._drained = asyncio.Event()
            try:
                await asyncio.wait_for(self._drained.wait(), max(0.0, timeout_secs))
            except asyncio.TimeoutError:
                log.warning(
                    "DynamoStore.aclose(): %d requests still in flight at the deadline",
                    self._in_flight,
                )
        self._closed = True
        self.client.meta.events.unregister("before-send.dynamodb", self._count_request)
        self.client.meta.events.unregister("after-call.dynamodb", self._check_answer)
        if self._owner is not None:
            await self._owner.aclose()
