"""aioseq's errors as HTTP answers (`aioseq.http_answer`): a server's fault is a 500 logged
with its cause, never a 4xx; what may be retried says so; what may have been applied says to
look first, unless the request carried an idempotency key."""

from __future__ import annotations

import logging

import pytest

from aioseq import (
    AioseqError,
    ConfigurationError,
    ConnectionFailed,
    CounterValueInvalid,
    EndpointDown,
    IdempotencyKeyInvalid,
    IdempotencyKeyReused,
    ItemAlreadyExists,
    NumberOutOfRange,
    RetriesExhausted,
    ServiceUnavailable,
    StoreClosed,
    TableNotFound,
    Throttled,
    TransactionConflict,
    ValidationFailed,
    http_answer,
)

CASES: list[tuple[AioseqError, int, str]] = [
    (ItemAlreadyExists({"pk": "a"}), 409, "client"),
    (IdempotencyKeyReused("k", "orders", 7), 422, "client"),
    (IdempotencyKeyInvalid("idempotency_key must be a str of 1 to 255 characters"), 400, "client"),
    (Throttled("slow down"), 503, "retry"),
    (TransactionConflict("conflict"), 503, "retry"),
    (RetriesExhausted(5, Throttled("slow down")), 503, "retry"),
    (ServiceUnavailable("503"), 500, "maybe-applied"),  # (a 5xx may hide a write)
    (EndpointDown("down"), 503, "retry"),
    (RetriesExhausted(5, EndpointDown("down")), 503, "retry"),
    (StoreClosed("closing"), 503, "retry"),
    (ConnectionFailed("reset"), 500, "maybe-applied"),
    (RetriesExhausted(3, ConnectionFailed("reset"), maybe_applied=True), 500, "maybe-applied"),
    (ConfigurationError("key schema differs"), 500, "server"),
    (TableNotFound("no table"), 500, "server"),
    (ValidationFailed("One or more parameter values were invalid"), 500, "server"),
    (NumberOutOfRange(10**10), 500, "server"),
    (CounterValueInvalid("orders", "value", {"S": "x"}), 500, "server"),
]


@pytest.mark.parametrize(
    ("error", "status", "fault"), CASES, ids=[f"{type(e).__name__}-{s}" for e, s, _ in CASES]
)
def test_each_error_has_its_answer(error: AioseqError, status: int, fault: str) -> None:
    answer = http_answer(error)
    assert (answer.status, answer.fault) == (status, fault)
    assert ("Retry-After" in answer.headers) == (fault == "retry")
    if status >= 500:
        assert str(error) not in answer.detail  # nothing of the inside
        assert answer.log_level >= logging.WARNING


def test_an_unknown_outcome_with_an_idempotency_key_is_safe_to_send_again() -> None:
    lost = RetriesExhausted(3, ConnectionFailed("reset"), maybe_applied=True)
    answer = http_answer(lost, idempotency_key=True)
    assert (answer.status, answer.fault, answer.headers) == (503, "retry", {"Retry-After": "1"})
    assert http_answer(lost).status == 500


def test_the_endpoint_down_is_logged_as_an_error_busy_as_a_warning() -> None:
    assert http_answer(EndpointDown("down")).log_level == logging.ERROR
    assert http_answer(Throttled("slow")).log_level == logging.WARNING
    assert http_answer(ItemAlreadyExists({"pk": "a"})).log_level == logging.INFO


def test_log_puts_the_cause_in_the_server_log(caplog: pytest.LogCaptureFixture) -> None:
    error = ConfigurationError("table 'orders' has key schema {'HASH': ('id', 'S')}")
    with caplog.at_level(logging.INFO, logger="t"):
        http_answer(error).log(logging.getLogger("t"), error)
    (record,) = caplog.records
    assert record.levelno == logging.ERROR and record.exc_info is not None
    assert "key schema" in record.getMessage()
