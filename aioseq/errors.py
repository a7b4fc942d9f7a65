"""The errors aioseq raises.

Every error derives from [`AioseqError`][aioseq.errors.AioseqError]. botocore's ``ClientError``
never reaches the
caller: ``aioseq._transport`` translates DynamoDB error codes at one boundary (the ``ERRORS``
table there) and chains the original as ``__cause__``.

Misuse (bad arguments, bad configuration) raises
[`ConfigurationError`][aioseq.errors.ConfigurationError], which is also a ``ValueError``, before any
request is sent, so nothing is written.

This module is the bottom of the package: it imports nothing of aioseq.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, Protocol


class _Numbering(Protocol):
    """What [`NumberingMismatch`][aioseq.errors.NumberingMismatch] holds: an
    [`aioseq.Numbering`][aioseq.Numbering] or an [`aioseq.RegionScope`][aioseq.RegionScope],
    described by its shape so that this module needs nothing of aioseq."""

    def encode(self) -> str: ...


__all__ = [
    "AioseqError",
    "ConditionFailed",
    "ConfigurationError",
    "ConnectionFailed",
    "CounterBehindItems",
    "CounterNotFound",
    "CounterValueInvalid",
    "CounterWouldMoveBack",
    "EndpointDown",
    "EndpointUnreachable",
    "FutureDated",
    "IdempotencyKeyInvalid",
    "IdempotencyKeyReused",
    "ItemAlreadyExists",
    "NotDynamoDB",
    "NotHomeRegion",
    "NotSupportedByTable",
    "NumberOutOfRange",
    "NumberingMismatch",
    "PeriodClosed",
    "RegionNotListed",
    "RetriesExhausted",
    "ServiceUnavailable",
    "StoreClosed",
    "StoreError",
    "StoreNotOpened",
    "TableNotFound",
    "Throttled",
    "TransactionCanceled",
    "TransactionConflict",
    "UnsafeGlobalTable",
    "ValidationFailed",
    "WrongEventLoop",
]


class AioseqError(Exception):
    """Base class of every error aioseq raises.

    Attributes:
        maybe_applied: True when the call that raised may have written all the same: a
            request was applied but its answer was lost (a reset, a timeout, a 5xx) and that
            could not be resolved before the error (the retry policy ran out, the store was
            closed). False means nothing was written. Tell a client to look before it tries
            again (an HTTP service: no ``Retry-After``).
    """

    maybe_applied = False


class ConfigurationError(AioseqError, ValueError):
    """An argument or setting is invalid. Raised before any request is sent."""


class StoreClosed(AioseqError, RuntimeError):
    """The store (or an object bound to it) was used after ``aclose()``."""


class StoreNotOpened(AioseqError, AttributeError, TypeError):
    """What [`DynamoStore.open()`][aioseq.DynamoStore.open] returns was used as the store: an
    attribute of it (``DynamoStore.open().atomic_counter(...)``, an ``await`` forgotten), or
    ``with`` in place of ``async with``. Await it, ``store = await DynamoStore.open(...)``, or
    enter it, ``async with DynamoStore.open(...) as store:``. Also an ``AttributeError`` and a
    ``TypeError``, what Python raises for these mistakes; nothing was opened."""


class WrongEventLoop(AioseqError, RuntimeError):
    """A store, or an object made on it (a block allocator, a counter), was used from another
    event loop than its own: the loop the store's client was opened in, or the one the object
    first ran in. Its connections, futures and tasks live there. Open one
    [`DynamoStore`][aioseq.DynamoStore] per event loop, in that loop, and make the objects from
    it there (a store hands back the same object for a key, so another factory call on the
    same store does not help); close a store in its own loop, before that loop ends."""


class NumberOutOfRange(AioseqError, OverflowError):
    """A number would not fit DynamoDB's Number type (38 significant digits).

    Attributes:
        value: the number that does not fit.
    """

    def __init__(self, value: int, message: str | None = None) -> None:
        self.value = value
        super().__init__(message or f"{value} has more than 38 digits, DynamoDB's Number limit")


class CounterValueInvalid(AioseqError):
    """The counter item exists but its value attribute is not a whole number from 0 to
    ``10**38 - 1``: it is missing, or holds another type, a fraction or a negative number.

    Attributes:
        key: the counter key.
        attribute: the value attribute's name.
        found: what the attribute holds, as DynamoDB returned it (an AttributeValue dict), or
            ``None`` when the counter item exists without it. The message says what kind of
            value it is, never the value.
    """

    def __init__(
        self,
        key: str,
        attribute: str,
        found: Mapping[str, Any] | None,
        *,
        expected: str = "a whole number from 0 to 10**38 - 1 (type N)",
    ) -> None:
        self.key = key
        self.attribute = attribute
        self.found = found
        super().__init__(
            f"counter {key!r}: the counter item's attribute {attribute!r}"
            f" {_describe(found, expected)}; it should hold {expected}"
        )


def _describe(found: Mapping[str, Any] | None, expected: str) -> str:
    """What kind of value a counter attribute holds, without the value."""
    if not found:
        return "is missing"
    kind = next(iter(found))
    if not expected.endswith("(type N)"):
        return f"holds a value of type {kind} that is not one"
    if kind != "N":
        return f"holds a value of type {kind}, not N"
    text = str(found[kind])
    if text.startswith("-"):
        return "holds a negative number"
    return "holds a number that is not whole" if any(c in text for c in ".eE") else "is invalid"


class CounterNotFound(AioseqError, LookupError):
    """The counter has never been used: no counter item (or, for the sort-key strategy, no
    numbered item in its collection).

    Attributes:
        key: the counter key.
        table: the table's name.
    """

    def __init__(self, key: str, table: str) -> None:
        self.key = key
        self.table = table
        super().__init__(
            f"counter {key!r} does not exist in table {table!r}; it is made by the"
            " first number taken"
        )


class NumberingMismatch(AioseqError, ValueError):
    """A counter object asked for another [`Numbering`][aioseq.Numbering] (stride, offset,
    ``max_value``) than the one its counter item recorded on its first write, or for another
    [`RegionScope`][aioseq.RegionScope] (or none) than the one recorded for its key. Two
    numberings on one counter would hand out overlapping numbers, so the object takes no number
    and nothing is written. Change a counter's numbering explicitly, or use another key.

    Attributes:
        key: the counter key.
        stored: the numbering (or Region scope) the counter item holds.
        requested: the numbering (or Region scope) the object was made with.
    """

    def __init__(self, key: str, stored: _Numbering, requested: _Numbering) -> None:
        self.key = key
        self.stored = stored
        self.requested = requested
        super().__init__(
            f"counter {key!r} is numbered {stored.encode()!r}, not {requested.encode()!r};"
            f"{_reordered(stored.encode(), requested.encode())}"
            f"{_scoped(stored.encode(), requested.encode())} no number was taken"
        )


def _reordered(stored: str, requested: str) -> str:
    """A hint when two Region scope records list the same Regions in another order."""
    lists = [text.split(" ")[0] for text in (stored, requested)]
    if not all(text.startswith("regions=") for text in lists) or lists[0] == lists[1]:
        return ""
    regions = [text.removeprefix("regions=").split(",") for text in lists]
    if sorted(regions[0]) != sorted(regions[1]):
        return ""
    return (
        " the same Regions in another order: a Region's slot is its place in the list, so"
        " every store lists them in the recorded order;"
    )


def _scoped(stored: str, requested: str) -> str:
    """What to pass when a Region-scoped key is used without its Region scope."""
    if not stored.startswith("regions=") or requested.startswith("regions="):
        return ""
    regions, slots = stored.split(" ")[:2]
    listed = regions.removeprefix("regions=")
    count = slots.removeprefix("slots=")
    python = f"regions={listed.split(',')}"
    cli = f"--regions {listed}"
    if count != str(len(listed.split(","))):
        python, cli = f"{python}, region_slots={count}", f"{cli} --region-slots {count}"
    return (
        " the key is Region-scoped: each Region has its own counter item, read and moved from"
        f" a store opened with {python} (the command line's {cli});"
    )


class UnsafeGlobalTable(ConfigurationError):
    """The table is a global table with multi-Region eventual consistency (MREC) and the store
    stated no way to share counters across Regions. There, two Regions writing one counter
    item hand out the same numbers and DynamoDB keeps one write, silently (last writer wins).
    Nothing was written. Open the store with ``regions=[...]`` (each Region numbers in its own
    residue class) or ``home_region="..."`` (one Region writes); see docs/global-tables.md.

    Attributes:
        table: the table's name.
        replicas: the Regions of its replicas.
        region: the store's Region (``None``: not known).
    """

    def __init__(self, table: str, replicas: Sequence[str], region: str | None) -> None:
        self.table = table
        self.replicas = tuple(replicas)
        self.region = region
        super().__init__(
            f"table {table!r} is a global table with multi-Region eventual consistency"
            f" (replicas: {', '.join(self.replicas)}): two Regions moving one counter item hand"
            " out the same numbers and DynamoDB keeps the last write silently. Open the store"
            " with regions=[...] (Region-scoped numbering: each Region its own numbers) or"
            " home_region='...' (one Region writes counters); see docs/global-tables.md."
            " Nothing was written"
        )


class NotHomeRegion(ConfigurationError):
    """The store was opened with ``home_region=`` and is in another Region: it may read
    counters, not write them. Nothing was written.

    Attributes:
        table: the table's name.
        region: the store's Region (``None``: not known).
        home_region: the one Region that writes counters.
    """

    def __init__(self, table: str, region: str | None, home_region: str) -> None:
        self.table = table
        self.region = region
        self.home_region = home_region
        super().__init__(
            f"counters on table {table!r} are written from {home_region} only"
            f" (home_region); this store is in {region or 'an unknown Region'}: nothing was"
            " written. Fail over with docs/global-tables.md's runbook"
        )


class RegionNotListed(ConfigurationError):
    """The store's Region is not among its ``regions=``: it has no slot to number in. Nothing
    was written.

    Attributes:
        region: the store's Region (``None``: not known).
        regions: the Regions listed.
    """

    def __init__(self, region: str | None, regions: Sequence[str]) -> None:
        self.region = region
        self.regions = tuple(regions)
        super().__init__(
            f"this store's Region ({region or 'not known'}) is not among regions="
            f"{list(self.regions)}: it has no slot of its own to number in; nothing was written"
        )


class NotSupportedByTable(ConfigurationError):
    """The table does not support a request this counter needs (a table with multi-Region
    strong consistency takes no transactions). Nothing was written.

    Attributes:
        table: the table's name.
        needs: what the counter needs.
        instead: what to use instead.
    """

    def __init__(self, table: str, needs: str, instead: str) -> None:
        self.table = table
        self.needs = needs
        self.instead = instead
        super().__init__(
            f"table {table!r} does not support {needs}: {instead}; nothing was written"
        )


class CounterWouldMoveBack(AioseqError, ValueError):
    """Setting a counter to a value below its current one was refused (nothing written, unless
    ``maybe_applied``: an earlier attempt whose answer was lost may have set it): the
    numbers between would be handed out a second time. Pass ``allow_backward=True`` (CLI:
    ``--allow-backward``) to do it anyway, knowing that.

    Attributes:
        key: the counter key.
        current: the counter's value.
        requested: the value asked for.
    """

    def __init__(
        self, key: str, current: int, requested: int, *, override: str = "allow_backward=True"
    ) -> None:
        self.key = key
        self.current = current
        self.requested = requested
        # ``override``: how the caller's interface says "do it anyway" (the CLI's flag).
        super().__init__(
            f"counter {key!r} is at {current}; setting it back to {requested} would hand out"
            f" {requested + 1}..{current} again ({override} to do it anyway)"
        )


class RetriesExhausted(AioseqError):
    """The retry policy ran out of attempts or time.

    Attributes:
        attempts: how many attempts were made (1 = no retry).
        last_error: the error of the last attempt (also ``__cause__``).
        maybe_applied: an attempt failed in a way that may hide its success (see
            [`AioseqError`][aioseq.errors.AioseqError]), so something may have been written.
    """

    def __init__(
        self, attempts: int, last_error: BaseException | None, *, maybe_applied: bool = False
    ) -> None:
        self.attempts = attempts
        self.last_error = last_error
        self.maybe_applied = maybe_applied
        super().__init__(f"gave up after {attempts} attempts; last error: {last_error!r}")


class ItemAlreadyExists(AioseqError):
    """The item to store already exists (its primary key is taken); nothing was written,
    unless ``maybe_applied``: an earlier attempt of the call, whose answer was lost, may be
    what stored it (possible only when that could not be resolved, see
    [`TransactionalCounter`][aioseq.TransactionalCounter]).

    Attributes:
        key: the primary key of the item that exists, as plain Python values.
    """

    def __init__(self, key: Mapping[str, Any], *, maybe_applied: bool = False) -> None:
        self.key = dict(key)
        self.maybe_applied = maybe_applied
        written = "this call may have written it" if maybe_applied else "nothing was written"
        super().__init__(f"an item with key {self.key!r} already exists; {written}")


class CounterBehindItems(ItemAlreadyExists):
    """The item for the counter's next number exists, and its key is made from its number: the
    counter stands below numbers its items already use (a table restored to an older counter
    item, a counter set back, another counter numbering the same items). Nothing was written
    (unless ``maybe_applied``, as for [`ItemAlreadyExists`][aioseq.errors.ItemAlreadyExists]).
    The service's fault, not its client's: every put meets it until the counter is moved past
    its items (``aioseq audit`` finds them and prints the ``aioseq start-after`` command that
    fixes it; docs/operations.md). The message names the counter and the number, not the
    item's key.

    Attributes:
        counter_key: the counter key.
        number: the number whose item exists.
        key: the primary key of the item that exists (as for ``ItemAlreadyExists``).
    """

    def __init__(
        self,
        counter_key: str,
        number: int,
        key: Mapping[str, Any],
        *,
        maybe_applied: bool = False,
    ) -> None:
        self.counter_key = counter_key
        self.number = number
        self.key = dict(key)
        self.maybe_applied = maybe_applied
        written = "this call may have written it" if maybe_applied else "nothing was written"
        AioseqError.__init__(
            self,
            f"counter {counter_key!r} is behind its items: the item for its next number,"
            f" {number}, exists already; {written}. Move the counter past its items (aioseq"
            " audit prints the aioseq start-after command that does it)",
        )


class IdempotencyKeyInvalid(ConfigurationError):
    """An idempotency key that cannot be one, whatever the counter: not a ``str`` of 1 to 255
    characters, or not valid Unicode. Raised before any request; a client's error (an HTTP
    service answers 400), unlike other configuration errors. (A valid key that does not fit
    its record's partition key beside a counter key over 1,003 bytes is the counter key's
    fault: a plain ``ConfigurationError``.)"""


class IdempotencyKeyReused(AioseqError, ValueError):
    """A ``put`` carried an idempotency key that an earlier call used with another item
    (within the key's time to live); nothing was written and no number was used. The key's
    first call stored its item under ``number``: a client that reuses keys across different
    requests has a bug (an HTTP service answers 422, as the IETF's ``Idempotency-Key`` draft
    says).

    Attributes:
        idempotency_key: the key.
        counter_key: the counter (or sort-key collection) the key was used on.
        number: the number the key's first call stored its item under.
    """

    def __init__(self, idempotency_key: str, counter_key: str, number: int) -> None:
        self.idempotency_key = idempotency_key
        self.counter_key = counter_key
        self.number = number
        super().__init__(
            f"idempotency key {idempotency_key!r} of counter {counter_key!r} was used with"
            f" another item (stored as number {number}); nothing was written"
        )


class PeriodClosed(AioseqError, ValueError):
    """A series' period no longer takes documents: its end plus the series' ``grace_secs``
    has passed. Raised by [`Series.at()`][aioseq.Series.at] before any request: nothing was
    written and no number was used (see docs/series.md, late documents).

    Attributes:
        series: the series key.
        period: the period's label (``"2026"``).
        closed_at: when it stopped taking documents (an aware ``datetime`` in the series'
            zone).
        on: the document's date.
        now: the time of the refusal (aware).
    """

    def __init__(
        self, series: str, period: str, closed_at: datetime, on: object, now: datetime
    ) -> None:
        self.series = series
        self.period = period
        self.closed_at = closed_at
        self.on = on
        self.now = now
        super().__init__(
            f"series {series!r}: period {period!r} closed at {closed_at.isoformat()}, so the"
            f" document dated {on} is refused at {now.isoformat()}; nothing was written"
        )


class FutureDated(AioseqError, ValueError):
    """A document is dated further ahead of now than a series tolerates (its
    ``future_secs``): a wrong date or a wrong clock, which would open a period early. Raised
    by [`Series.at()`][aioseq.Series.at] before any request: nothing was written.

    Attributes:
        series: the series key.
        on: the document's date.
        now: the time of the refusal (aware).
        tolerance_secs: how far ahead a document may be dated, in seconds.
    """

    def __init__(self, series: str, on: object, now: datetime, tolerance_secs: float) -> None:
        self.series = series
        self.on = on
        self.now = now
        self.tolerance_secs = tolerance_secs
        super().__init__(
            f"series {series!r}: the document dated {on} is more than {tolerance_secs:g} s"
            f" ahead of now ({now.isoformat()}); nothing was written"
        )


# --- errors translated from DynamoDB's responses (see aioseq._transport) -----------------------


class StoreError(AioseqError):
    """DynamoDB (or the connection to it) answered with an error.

    Attributes:
        code: DynamoDB's error code (``"ValidationException"`` ...), or the botocore exception
            name for connection errors.
        operation: the API operation (``"UpdateItem"`` ...).
        maybe_applied: see [`AioseqError`][aioseq.errors.AioseqError]; set where the error is
            made, per request (the transport: only a write's 5xx or lost answer; never a
            read's).
    """

    retryable = False

    def __init__(
        self, message: str, *, code: str = "", operation: str = "", maybe_applied: bool = False
    ) -> None:
        self.code = code
        self.operation = operation
        self.maybe_applied = maybe_applied
        super().__init__(message)


class TableNotFound(StoreError):
    """The table does not exist (``ResourceNotFoundException``). Create it with
    ``DynamoStore.create_table()`` or ``aioseq create-table --table NAME``.

    Attributes:
        tables: the tables the request named (a transaction's, in order; empty when not
            known); the message names them.
    """

    def __init__(
        self, message: str, *, code: str = "", operation: str = "", tables: Sequence[str] = ()
    ) -> None:
        self.tables = tuple(tables)
        super().__init__(message, code=code, operation=operation)


class ValidationFailed(StoreError):
    """DynamoDB rejected the request as invalid (``ValidationException``)."""


class ConditionFailed(StoreError):
    """A condition expression was false (``ConditionalCheckFailedException``).

    Attributes:
        item: the item as it is now, as DynamoDB AttributeValues, when the request asked for
            ``ReturnValuesOnConditionCheckFailure=ALL_OLD`` and the item exists; else ``None``.
    """

    def __init__(
        self,
        message: str,
        *,
        code: str = "",
        operation: str = "",
        item: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(message, code=code, operation=operation)
        self.item = dict(item) if item is not None else None


class TransactionCanceled(StoreError):
    """``TransactWriteItems`` was canceled; nothing in it was written.

    Attributes:
        cancellation_reasons: one dict per action, in request order, as DynamoDB returned them:
            ``{"Code": "None" | "ConditionalCheckFailed" | "TransactionConflict" | ...,
            "Item": {...} (optional)}``.
    """

    def __init__(
        self,
        message: str,
        *,
        code: str = "",
        operation: str = "",
        cancellation_reasons: Sequence[Mapping[str, Any]] = (),
    ) -> None:
        super().__init__(message, code=code, operation=operation)
        self.cancellation_reasons = [dict(r) for r in cancellation_reasons]

    @property
    def codes(self) -> list[str]:
        """The reason code of each action, in request order."""
        return [str(r.get("Code", "None")) for r in self.cancellation_reasons]


class Throttled(StoreError):
    """DynamoDB asked us to slow down (``ProvisionedThroughputExceededException``,
    ``ThrottlingException``, ``RequestLimitExceeded``). Retryable."""

    retryable = True


class TransactionConflict(StoreError):
    """Another transaction was working on the same item (``TransactionConflictException``),
    or, on a global table with multi-Region strong consistency, a request in another Region
    was modifying it (``ReplicatedWriteConflictException``). Nothing was applied. Retryable."""

    retryable = True


class NotDynamoDB(StoreError):
    """The endpoint answered, but not as DynamoDB answers: an HTTP answer below 500 with
    neither an ``x-amzn-RequestId`` header nor a DynamoDB error type in its body (a web
    application's 404 page, a proxy's login page). The endpoint URL names another server.
    Not retried; nothing was written.

    Attributes:
        endpoint_url: the URL the request went to.
        status: the answer's HTTP status.
        content_type: its media type (``"text/html"``; ``""``: none).
    """

    def __init__(
        self,
        message: str,
        *,
        code: str = "",
        operation: str = "",
        endpoint_url: str = "",
        status: int = 0,
        content_type: str = "",
    ) -> None:
        self.endpoint_url = endpoint_url
        self.status = status
        self.content_type = content_type
        super().__init__(message, code=code, operation=operation)


class ServiceUnavailable(StoreError):
    """DynamoDB failed on its side (``InternalServerError``, HTTP 5xx). Retryable; a write
    may or may not have been applied (``maybe_applied``, set per request where the error is
    made: false for a read, which applies nothing)."""

    retryable = True

    def __init__(
        self, message: str, *, code: str = "", operation: str = "", maybe_applied: bool = True
    ) -> None:
        super().__init__(message, code=code, operation=operation, maybe_applied=maybe_applied)


class ConnectionFailed(StoreError):
    """The request or its response was lost on the way (connection refused or reset, timeout).
    Retryable; a write may or may not have been applied (``maybe_applied``, set per request
    where the error is made: false for a read, which applies nothing)."""

    retryable = True

    def __init__(
        self, message: str, *, code: str = "", operation: str = "", maybe_applied: bool = True
    ) -> None:
        super().__init__(message, code=code, operation=operation, maybe_applied=maybe_applied)


class EndpointUnreachable(ConnectionFailed):
    """No connection to the endpoint could be made (refused, no such host, connect timeout), so
    the request was never sent and nothing was applied. Retried only for
    ``RetryPolicy.max_unreachable_secs`` (3 s by default): an endpoint that stays unreachable
    is reported quickly, naming it, instead of after the whole retry budget."""

    def __init__(self, message: str, *, code: str = "", operation: str = "") -> None:
        super().__init__(message, code=code, operation=operation, maybe_applied=False)


class EndpointDown(EndpointUnreachable):
    """The store's endpoint is down on evidence of silence: no connection could be made for
    ``RetryPolicy.max_unreachable_secs``, or a request and then a probe of its own went
    unanswered (slowness alone never takes it down). This request was not sent: it fails at
    once, not retried, until the endpoint answers again (one probe at a time asks it; see
    [Operations](../operations.md#dynamodb-unreachable)). Nothing was applied; ``__cause__``
    is the last underlying error."""

    retryable = False
