"""The HTTP answer a web service gives for each of aioseq's errors (FastAPI, aiohttp, any
framework): whose fault it is, the status, what the client is told, what the server logs.

Four kinds, after RFC 9110's classes and the IETF's ``Idempotency-Key`` draft (the table,
with what a client does with each: docs/web-services.md):

- ``client``: 409 for ``ItemAlreadyExists`` (the item's key, which the client's request
  chose, is taken), 422 for ``IdempotencyKeyReused`` (the key came with another item) and
  for a series' ``PeriodClosed`` and ``FutureDated`` (the document's date is refused), 400
  for ``IdempotencyKeyInvalid`` (the client's key alone is not one: not a string of 1 to
  255 characters, or not valid Unicode); logged at info.
- ``retry``: 503 with ``Retry-After: 1`` for ``Throttled``, ``TransactionConflict``,
  ``RetriesExhausted`` (a warning); ``Retry-After: 5`` for ``ServiceUnavailable``,
  ``ConnectionFailed``, ``EndpointUnreachable``, ``EndpointDown`` and ``StoreClosed``
  (shutting down), or retries that ran out on them (an error: an operator should look),
  when nothing was written (a read, or a call whose requests were all reads).
- ``maybe-applied``: 500 for any error with ``maybe_applied`` (a write's answer lost, a
  write's 5xx): look before sending the request again. With an idempotency key it is a
  ``retry`` 503: the same request is safe.
- ``server``: 500 for everything else: ``CounterBehindItems`` (the item for the counter's
  next number exists: the counter is behind its items, logged with the counter key, not the
  item's), ``ConfigurationError`` (the table, its key schema, a counter key too long for
  the client's idempotency key beside it), ``TableNotFound``, ``NotDynamoDB`` (the endpoint
  URL), ``ValidationFailed``, ``NumberOutOfRange``, ``CounterValueInvalid``.

A server's fault is never a 4xx: the client cannot fix the service's table. Details of 5xx
answers say nothing of the inside; the cause goes to the server's log (`HttpAnswer.log()`).
Every answer but ``maybe-applied`` means nothing was written and no number was used by a
gapless strategy, so a ``retry`` answer is safe to retry as it is.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from aioseq.errors import (
    AioseqError,
    ConnectionFailed,
    CounterBehindItems,
    FutureDated,
    IdempotencyKeyInvalid,
    IdempotencyKeyReused,
    ItemAlreadyExists,
    PeriodClosed,
    RetriesExhausted,
    ServiceUnavailable,
    StoreClosed,
    Throttled,
    TransactionConflict,
)

__all__ = ["HttpAnswer", "http_answer"]

Fault = Literal["client", "retry", "maybe-applied", "server"]

#: Busy: worth another try in a second.
_BUSY = (Throttled, TransactionConflict, RetriesExhausted)

#: DynamoDB or the way to it failing, or the service shutting down.
_DOWN = (ServiceUnavailable, ConnectionFailed, StoreClosed)

_LOG_LEVELS: Mapping[Fault, int] = {
    "client": logging.INFO,
    "retry": logging.WARNING,
    "maybe-applied": logging.ERROR,
    "server": logging.ERROR,
}


@dataclass(frozen=True)
class HttpAnswer:
    """What a service answers for an aioseq error.

    Attributes:
        status: the HTTP status code.
        detail: what the client is told (a 5xx's says nothing of the inside).
        fault: ``"client"``, ``"retry"``, ``"maybe-applied"`` or ``"server"``.
        headers: headers to send (``Retry-After``, in seconds, for the ``retry`` kind).
        log_level: the level the server logs the error at (`log()`).
    """

    status: int
    detail: str
    fault: Fault
    headers: Mapping[str, str] = field(default_factory=dict)
    log_level: int = logging.ERROR

    def log(self, logger: logging.Logger, error: BaseException) -> None:
        """Log ``error`` on ``logger`` at `log_level`, with its traceback from ``error``
        level up (the cause of a 500 is found in the server's log, not in the answer)."""
        logger.log(
            self.log_level,
            "answered %d (%s): %r",
            self.status,
            self.fault,
            error,
            exc_info=error if self.log_level >= logging.ERROR else None,
        )


def http_answer(error: AioseqError, *, idempotency_key: bool = False) -> HttpAnswer:
    """The HTTP answer for ``error`` (see the module doc for the table).

    Parameters:
        error: what an aioseq call raised.
        idempotency_key: the request carried an idempotency key (then an error with
            ``maybe_applied`` is a 503: the client sends the same request, with the same key,
            and gets the first call's number).

    Returns:
        the [`HttpAnswer`][aioseq.HttpAnswer].
    """
    if error.maybe_applied:
        if idempotency_key:
            return _answer(
                503, "not known yet; send the same request again", "retry", retry_after=1
            )
        return _answer(
            500, "the request may have been applied: look before you send it again", "maybe-applied"
        )
    if isinstance(error, (IdempotencyKeyReused, PeriodClosed, FutureDated)):
        # (the document's date is the request's: a period closed, or a date too far ahead)
        return _answer(422, str(error), "client")
    if isinstance(error, IdempotencyKeyInvalid):  # (the client's key: not the service's fault)
        return _answer(400, str(error), "client")
    if isinstance(error, CounterBehindItems):  # (the service's counter, not the client's key)
        return _answer(500, "internal error", "server")
    if isinstance(error, ItemAlreadyExists):
        return _answer(409, str(error), "client")
    # Retries that ran out say why in their last error: the endpoint down is not busy.
    cause = error.last_error if isinstance(error, RetriesExhausted) else error
    if isinstance(cause, _DOWN):  # (an operator should look: logged as an error)
        return _answer(
            503,
            "temporarily unavailable; try again later",
            "retry",
            retry_after=5,
            log=logging.ERROR,
        )
    if isinstance(error, _BUSY):
        return _answer(503, "busy; try again", "retry", retry_after=1)
    return _answer(500, "internal error", "server")


def _answer(
    status: int,
    detail: str,
    fault: Fault,
    *,
    retry_after: int | None = None,
    log: int | None = None,
) -> HttpAnswer:
    headers = {"Retry-After": str(retry_after)} if retry_after is not None else {}
    return HttpAnswer(status, detail, fault, headers, _LOG_LEVELS[fault] if log is None else log)
