"""[`FakeDynamoDB`][aioseq.testing.FakeDynamoDB]: DynamoDB in the test's process, at the store's
[`Transport`][aioseq.contracts.Transport] seam, with faults on demand.

Each request is serialized with botocore's serializer, answered by moto's DynamoDB handler called
in process, and its answer parsed with botocore's parser, so conditions, ``ADD``, transactions,
``ReturnValues`` and ``ReturnValuesOnConditionCheckFailure`` have one implementation, the one moto
tests against DynamoDB and aioseq's integration suite runs on; errors become botocore's
``ClientError`` and go through aioseq's own error map
(``aioseq._transport.translate``), so they come out as the real transport raises them.
What moto lacks, the fake adds: ``ClientRequestToken`` idempotency on ``TransactWriteItems`` and
faults (the [`FaultSchedule`][aioseq.testing.FaultSchedule] kinds, planned per call or drawn);
where moto differs, it answers as DynamoDB does (``UPDATED_NEW`` without the key attributes).

Needs the ``server`` extra (moto); no network, no server, no thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import json
import time
import uuid
import weakref
from collections import Counter, deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from functools import cache
from typing import Any

from botocore import xform_name
from botocore.awsrequest import AWSRequest
from botocore.exceptions import ClientError, ConnectionClosedError, ReadTimeoutError
from botocore.model import OperationModel, ServiceModel
from botocore.parsers import create_parser
from botocore.serialize import create_serializer
from botocore.session import get_session
from botocore.validate import validate_parameters
from moto.core.request import normalize_request
from moto.dynamodb.models import dynamodb_backends
from moto.dynamodb.responses import DynamoHandler

from aioseq._endpoint import EndpointHealth
from aioseq._transport import _unknown_operation, capacity_units, tables_of, translate
from aioseq.errors import ConfigurationError, StoreClosed
from aioseq.observe import Observer, RequestEvent, notify
from aioseq.testing.faults import ALL_KINDS, APPLIED_KINDS, FaultSchedule, error_body

__all__ = ["FakeDynamoDB", "PlannedFault", "SentRequest"]

#: How long DynamoDB remembers a ``ClientRequestToken``, in seconds (10 minutes).
TOKEN_TTL_SECS = 600.0

_REGION = "us-east-1"
_URL = f"https://dynamodb.{_REGION}.amazonaws.com/"
_SERVICE = "com.amazonaws.dynamodb.v20120810#"


@cache
def _service_model() -> ServiceModel:
    """botocore's DynamoDB model (read-only; loaded once per process)."""
    return get_session().get_service_model("dynamodb")


@cache
def _methods() -> dict[str, str]:
    """botocore method name -> API operation name (``"update_item"`` -> ``"UpdateItem"``)."""
    return {xform_name(name): name for name in _service_model().operation_names}


@dataclass(frozen=True)
class SentRequest:
    """One request the fake received.

    Attributes:
        operation: the API operation name (``"UpdateItem"``).
        params: a copy of its parameters, as botocore takes them.
        fault: the fault it got (a [`FaultSchedule`][aioseq.testing.FaultSchedule] kind), or
            ``None``.
        applied: whether it changed (or, for reads, read) the table: ``False`` for a request
            refused by a fault, a failed condition or a replayed token.
    """

    operation: str
    params: dict[str, Any]
    fault: str | None = None
    applied: bool = False


@dataclass
class PlannedFault:
    """A fault planned with [`FakeDynamoDB.inject()`][aioseq.testing.FakeDynamoDB.inject]:
    the next ``times`` matching requests after ``skip`` matching ones get ``kind``."""

    kind: str
    operation: str | None = None
    times: int = 1
    skip: int = 0
    when: Callable[[dict[str, Any]], bool] | None = None

    def matches(self, operation: str, params: dict[str, Any]) -> bool:
        if self.operation is not None and operation != self.operation:
            return False
        return self.when is None or self.when(params)


@dataclass
class _Token:
    fingerprint: str
    at: float
    response: dict[str, Any] = field(default_factory=dict)


class FakeDynamoDB:
    """A [`Transport`][aioseq.contracts.Transport] that answers as DynamoDB does, in process.

    ``DynamoStore(transport=FakeDynamoDB())`` makes a store whose requests never leave the
    process; ``await store.create_table()`` creates its table. Each fake has tables of its own
    (its own moto account). Every request yields to the event loop before it is applied and
    again before it is answered, as a request over a network does, so concurrent callers
    interleave.

    Faults, as [`FaultProxy`][aioseq.testing.FaultProxy] injects them, with the same kinds
    ([`ALL_KINDS`][aioseq.testing.faults.ALL_KINDS]): planned (`inject()`, per operation and
    call) or drawn (``schedule``). ``response-lost`` and ``delay`` apply the request and lose
    its answer (the caller gets [`ConnectionFailed`][aioseq.errors.ConnectionFailed],
    ``maybe_applied``); ``reset`` loses the request before it is applied (the caller cannot tell
    the two apart); the others are refused with DynamoDB's error (``Throttled``,
    ``ServiceUnavailable``, ``TransactionCanceled`` with a ``TransactionConflict`` reason...).

    Parameters:
        observer: every request is reported to its ``on_request`` (as the store's transport
            reports them).
        schedule: faults drawn per request (seeded); planned faults come first.
        clock: the clock of ``ClientRequestToken`` expiry, in seconds (default: the running
            loop's ``time()``).
        table_name: the table named in the observer's events.
        honour_tokens: ``False`` ignores ``ClientRequestToken`` as moto and the serialized moto
            server do (a resend is applied again, or fails its condition), to test what a
            caller does without the token.
        region_name: the Region a store on it is in (default ``None``: not known).

    Example:

        fake = FakeDynamoDB()
        store = DynamoStore(transport=fake)
        await store.create_table()
        fake.inject("response-lost", operation="UpdateItem")
        ...
        assert fake.requests["UpdateItem"] == 2
    """

    def __init__(
        self,
        *,
        observer: Observer | None = None,
        schedule: FaultSchedule | None = None,
        clock: Callable[[], float] | None = None,
        table_name: str = "",
        honour_tokens: bool = True,
        region_name: str | None = None,
    ) -> None:
        self.observer = observer
        #: The Region it says it is in (``None``: none).
        self.region_name = region_name
        self.honour_tokens = honour_tokens
        self.schedule = schedule
        self.table_name = table_name
        #: Every request received, in order (`SentRequest`).
        self.sent: list[SentRequest] = []
        #: Faults injected so far, by kind (as ``FaultProxy.injected``).
        self.injected: Counter[str] = Counter()
        #: The answers lost (``response-lost``, ``delay``): ``(operation, params, response)``
        #: of requests applied whose caller got an error instead.
        self.lost: list[tuple[str, dict[str, Any], dict[str, Any]]] = []
        self._clock = clock
        self._planned: deque[PlannedFault] = deque()
        self._pick = schedule.picker() if schedule is not None else None
        self._requests: Counter[str] = Counter()
        #: Always up: the fake answers every request it gets.
        self.endpoint = EndpointHealth("FakeDynamoDB", 3.0)
        self._tokens: dict[str, _Token] = {}
        self._account = f"{uuid.uuid4().int % 10**12:012d}"
        self._serializer = create_serializer("json", include_validation=False)
        self._parser = create_parser("json")
        self._closed = False
        self._in_flight = 0
        self._drained: asyncio.Event | None = None
        weakref.finalize(self, _drop_account, self._account)

    # --- the Transport contract --------------------------------------------------------------

    @property
    def loop(self) -> asyncio.AbstractEventLoop | None:
        """``None``: the fake works on any loop."""
        return None

    @property
    def client(self) -> None:
        """``None``: there is no botocore client."""
        return None

    @property
    def requests(self) -> Counter[str]:
        """Requests received, by API operation name (``{"UpdateItem": 3}``). A copy."""
        return Counter(self._requests)

    @property
    def in_flight(self) -> int:
        """Requests received and not yet answered."""
        return self._in_flight

    def validate(self, operation: str, params: dict[str, Any]) -> None:
        """Check ``params`` with botocore's validator, as a client does.

        Raises:
            ConfigurationError: ``operation`` is not botocore's name of a DynamoDB operation.
            botocore.exceptions.ParamValidationError: ``params`` do not fit it.
        """
        shape = self._operation_model(operation).input_shape
        if shape is not None:
            validate_parameters(params, shape)

    async def send(self, operation: str, params: dict[str, Any]) -> dict[str, Any]:
        """Answer one request as DynamoDB would (``params`` are validated first, as a client
        with parameter validation does, and left unchanged).

        Raises:
            StoreClosed: the fake is closed.
            StoreError: as the store's transport raises them (from DynamoDB's error codes, or
                [`ConnectionFailed`][aioseq.errors.ConnectionFailed] for a lost answer).
            botocore.exceptions.ParamValidationError: ``params`` do not fit ``operation``.
        """
        if self._closed:
            raise StoreClosed("this DynamoStore is closed")
        self.validate(operation, params)
        started = time.perf_counter()
        response: dict[str, Any] | None = None
        error: str | None = None
        self._in_flight += 1
        try:
            response = await self._exchange(operation, params)
            return response
        except Exception as exc:
            error = getattr(exc, "code", None) or type(exc).__name__
            raise
        finally:
            self._in_flight -= 1
            if not self._in_flight and self._drained is not None:
                self._drained.set()
            if self.observer is not None:
                consumed = response.get("ConsumedCapacity") if response is not None else None
                event = RequestEvent(
                    operation=_methods()[operation],
                    table=self.table_name,
                    latency_secs=time.perf_counter() - started,
                    consumed_capacity_units=capacity_units(consumed),
                    error=error,
                )
                notify(self.observer.on_request, event)

    async def aclose(self, *, timeout_secs: float) -> None:
        """Wait for the requests in flight (at most ``timeout_secs``), then refuse new ones.
        The tables stay readable through `items()`."""
        if self._in_flight:
            self._drained = asyncio.Event()
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._drained.wait(), max(0.0, timeout_secs))
        self._closed = True

    # --- faults ------------------------------------------------------------------------------

    def inject(
        self,
        kind: str,
        *,
        operation: str | None = None,
        times: int = 1,
        skip: int = 0,
        when: Callable[[dict[str, Any]], bool] | None = None,
    ) -> PlannedFault:
        """Plan a fault: after ``skip`` requests that match, the next ``times`` get ``kind``.

        Parameters:
            kind: one of [`ALL_KINDS`][aioseq.testing.faults.ALL_KINDS].
            operation: the API operation name that matches (``"UpdateItem"``); ``None``: any.
            times: how many requests get it.
            skip: how many matching requests pass first.
            when: a further test of the request's parameters.

        Planned faults are matched in the order planned; a request gets at most one.

        Raises:
            ConfigurationError: an unknown kind, operation, or count.
        """
        if kind not in ALL_KINDS:
            raise ConfigurationError(f"unknown fault kind {kind!r}; known: {ALL_KINDS}")
        if operation is not None and operation not in _methods().values():
            raise ConfigurationError(f"unknown DynamoDB operation {operation!r} (an API name)")
        if times < 1 or skip < 0:
            raise ConfigurationError(f"times must be >= 1 and skip >= 0: {times}, {skip}")
        planned = PlannedFault(kind, operation, times, skip, when)
        self._planned.append(planned)
        return planned

    @property
    def planned(self) -> list[PlannedFault]:
        """The planned faults not yet used up."""
        return list(self._planned)

    def _fault_for(self, operation: str, params: dict[str, Any]) -> str | None:
        for planned in self._planned:
            if not planned.matches(operation, params):
                continue
            if planned.skip:
                planned.skip -= 1
                continue
            planned.times -= 1
            if not planned.times:
                self._planned.remove(planned)
            return planned.kind
        return self._pick(operation) if self._pick is not None else None

    # --- reading the tables ------------------------------------------------------------------

    def items(self, table: str) -> list[dict[str, Any]]:
        """Every item of ``table``, as AttributeValues (also after `aclose()`; no request is
        counted).

        Raises:
            TableNotFound: no such table.
        """
        backend = dynamodb_backends[self._account][_REGION]
        try:
            found = backend.get_table(table)
        except Exception as exc:
            raise translate(
                ClientError(
                    {"Error": {"Code": "ResourceNotFoundException", "Message": str(exc)}}, "Scan"
                ),
                "Scan",
                (table,),
            ) from exc
        return [item.to_json()["Attributes"] for item in found.all_items()]

    def reset(self) -> None:
        """Forget the requests received, the faults injected and the answers lost (the tables
        and the planned faults stay)."""
        self.sent.clear()
        self.injected.clear()
        self.lost.clear()
        self._requests.clear()

    # --- one exchange ------------------------------------------------------------------------

    def _operation_model(self, operation: str) -> OperationModel:
        methods = _methods()
        if operation not in methods:
            raise _unknown_operation(operation, methods)
        return _service_model().operation_model(methods[operation])

    async def _exchange(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        model = self._operation_model(method)
        operation = model.name
        self._requests[operation] += 1
        fault = self._fault_for(operation, params)
        record = SentRequest(operation, copy.deepcopy(params), fault)
        at = len(self.sent)
        self.sent.append(record)
        await asyncio.sleep(0)  # the request on its way
        if self._closed:
            raise StoreClosed("this DynamoStore was closed during the request")
        tables = tables_of(params)
        if fault is not None:
            self.injected[fault] += 1
        if fault == "reset":
            reset = ConnectionClosedError(endpoint_url=_URL)
            raise translate(reset, operation, tables) from reset
        if fault is not None and fault not in APPLIED_KINDS:
            body = self._serializer.serialize_to_request(params, model)["body"]
            status, answer = error_body(fault, operation, body)
            text = answer if isinstance(answer, str) else json.dumps(answer)
            refused = self._client_error(model, status, text.encode())
            raise translate(refused, operation, tables) from refused
        try:
            response = self._apply(model, params)
        except ClientError as exc:
            raise translate(exc, operation, tables) from exc
        if at < len(self.sent) and self.sent[at] is record:  # not forgotten by reset()
            self.sent[at] = replace(record, applied=True)
        await asyncio.sleep(0)  # the answer on its way back
        if fault is not None:  # applied; its answer lost
            self.lost.append((operation, record.params, response))
            timeout = ReadTimeoutError(endpoint_url=_URL)
            raise translate(timeout, operation, tables) from timeout
        return response

    def _apply(self, model: OperationModel, params: dict[str, Any]) -> dict[str, Any]:
        """Answer ``params`` (a ``ClientError`` for DynamoDB's errors), tokens honoured."""
        token = (
            params.get("ClientRequestToken")
            if model.name == "TransactWriteItems" and self.honour_tokens
            else None
        )
        if token is None:
            response = self._moto(model, params)
            if params.get("ReturnValues") in ("UPDATED_NEW", "UPDATED_OLD"):
                # moto answers an update that creates its item with the key attributes too;
                # DynamoDB returns only the attributes the update changed (never the key).
                for name in params.get("Key", {}):
                    response.get("Attributes", {}).pop(name, None)
            return response
        now = self._now()
        for old in [t for t, seen in self._tokens.items() if now - seen.at >= TOKEN_TTL_SECS]:
            del self._tokens[old]
        fingerprint = json.dumps(params, sort_keys=True, default=str)
        seen = self._tokens.get(token)
        if seen is not None:
            if seen.fingerprint != fingerprint:
                raise self._client_error(
                    model,
                    400,
                    json.dumps(
                        {
                            "__type": _SERVICE + "IdempotentParameterMismatchException",
                            "message": "The request uses the same client token as a previous,"
                            " but non-identical request.",
                        }
                    ).encode(),
                )
            return copy.deepcopy(seen.response)  # the same request again: not applied again
        response = self._moto(model, params)
        self._tokens[token] = _Token(fingerprint, now, copy.deepcopy(response))
        return response

    def _now(self) -> float:
        if self._clock is not None:
            return self._clock()
        return asyncio.get_running_loop().time()

    def _moto(self, model: OperationModel, params: dict[str, Any]) -> dict[str, Any]:
        """One request through moto's DynamoDB handler, as bytes both ways."""
        wire = self._serializer.serialize_to_request(params, model)
        headers = dict(wire["headers"])
        headers["x-moto-account-id"] = self._account
        headers["Authorization"] = (
            f"AWS4-HMAC-SHA256 Credential=testing/20240101/{_REGION}/dynamodb/aws4_request"
        )
        prepared = AWSRequest(method="POST", url=_URL, headers=headers, data=wire["body"]).prepare()
        status, answer_headers, body = DynamoHandler.dispatch(
            normalize_request(prepared), _URL, prepared.headers
        )
        raw = body.encode() if isinstance(body, str) else bytes(body)
        if status >= 300:
            raise self._client_error(model, status, raw, answer_headers)
        answer = {"status_code": status, "headers": answer_headers, "body": raw}
        parsed: dict[str, Any] = self._parser.parse(answer, model.output_shape)  # type: ignore[arg-type]
        return parsed

    def _client_error(
        self,
        model: OperationModel,
        status: int,
        body: bytes,
        headers: Mapping[str, Any] | None = None,
    ) -> ClientError:
        """botocore's ``ClientError`` for an error answer, with the error shape's fields
        (``Item``, ``CancellationReasons``) merged in as botocore's endpoint merges them."""
        answer = {"status_code": status, "headers": dict(headers or {}), "body": body}
        parsed: dict[str, Any] = self._parser.parse(answer, model.output_shape)  # type: ignore[arg-type]
        code = parsed.get("Error", {}).get("Code")
        shape = _service_model().shape_for_error_code(code) if code else None
        if shape is not None:
            parsed.update(self._parser.parse(answer, shape))
        return ClientError(parsed, model.name)  # type: ignore[arg-type]

    def __repr__(self) -> str:
        state = "closed" if self._closed else "open"
        return f"<FakeDynamoDB {state} requests={sum(self._requests.values())}>"


def _drop_account(account: str) -> None:
    """Free a garbage-collected fake's tables."""
    dynamodb_backends.pop(account, None)
