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
    CounterBehindItems,
    CounterValueInvalid,
    DynamoStore,
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
    admin,
    http_answer,
)
from aioseq.testing import FakeDynamoDB

TABLE = "aioseq"

CASES: list[tuple[AioseqError, int, str]] = [
    (ItemAlreadyExists({"pk": "a"}), 409, "client"),
    (CounterBehindItems("invoices", 7, {"pk": "invoices#3", "sk": 7}), 500, "server"),
    (IdempotencyKeyReused("k", "orders", 7), 422, "client"),
    (IdempotencyKeyInvalid("idempotency_key must be a str of 1 to 255 characters"), 400, "client"),
    (Throttled("slow down"), 503, "retry"),
    (TransactionConflict("conflict"), 503, "retry"),
    (RetriesExhausted(5, Throttled("slow down")), 503, "retry"),
    (ServiceUnavailable("503"), 500, "maybe-applied"),  # (a 5xx may hide a write)
    (ServiceUnavailable("503", operation="GetItem", maybe_applied=False), 503, "retry"),
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


# --- whose fault: the errors as the strategies raise them, on the fake -------------------------

NUMBERED = "invoices"


def invoice(n: int) -> dict[str, object]:
    """An item whose key is made from its number (``ShardedItems``-like)."""
    return {"pk": f"{NUMBERED}#{n % 4}", "sk": n, "customer": "ada"}


async def test_a_counter_behind_its_items_is_the_services_fault(
    fake_store: DynamoStore, fake: FakeDynamoDB, caplog: pytest.LogCaptureFixture
) -> None:
    """Every put meets an item for its number (the counter was set back, as a restore does):
    a 500 logged with the counter key, not a 409 naming the item's key to the client."""
    invoices = fake_store.transactional_counter(NUMBERED)
    assert [await invoices.put(invoice) for _ in range(3)] == [1, 2, 3]
    await admin.set_counter(fake_store, NUMBERED, 1, allow_backward=True)
    items = [i for i in fake.items(TABLE) if i["pk"]["S"] != NUMBERED]  # (not the counter's)
    with pytest.raises(CounterBehindItems) as raised:
        await invoices.put(invoice)
    error = raised.value
    assert isinstance(error, ItemAlreadyExists)  # (what callers caught before)
    assert (error.counter_key, error.number, error.key) == (
        NUMBERED,
        2,
        {"pk": "invoices#2", "sk": 2},
    )
    assert not error.maybe_applied  # nothing written: the items, the counter as they were
    assert [i for i in fake.items(TABLE) if i["pk"]["S"] != NUMBERED] == items
    assert (await admin.describe_counter(fake_store, NUMBERED)).value == 1
    answer = http_answer(error)
    assert (answer.status, answer.fault, answer.detail) == (500, "server", "internal error")
    with caplog.at_level(logging.INFO, logger="t"):
        answer.log(logging.getLogger("t"), error)
    (record,) = caplog.records
    logged = record.getMessage()
    assert record.levelno == logging.ERROR and repr(NUMBERED) in logged
    assert "invoices#2" not in logged  # the item's key: not in the log line


async def test_an_item_whose_key_the_client_chose_is_the_clients_409(
    fake_store: DynamoStore,
) -> None:
    """The same failed condition on an item whose key does not change with its number: the
    client's key is taken."""
    invoices = fake_store.transactional_counter(NUMBERED)
    assert await invoices.put({"pk": "order-17", "sk": 1}) == 1
    with pytest.raises(ItemAlreadyExists) as raised:
        await invoices.put({"pk": "order-17", "sk": 1})
    assert not isinstance(raised.value, CounterBehindItems)
    assert http_answer(raised.value).status == 409


async def test_a_read_that_failed_on_5xx_applied_nothing(
    fake_store: DynamoStore, fake: FakeDynamoDB
) -> None:
    """A read whose every attempt got a 5xx: nothing was applied, so a 503 to retry, not a
    500 saying it may have been."""
    counter = fake_store.transactional_counter(NUMBERED)
    await counter.put(invoice)
    fake.inject("internal-error", operation="GetItem", times=fake_store.retry_policy.max_attempts)
    with pytest.raises(RetriesExhausted) as raised:
        await admin.describe_counter(fake_store, NUMBERED)
    assert isinstance(raised.value.last_error, ServiceUnavailable)
    assert not raised.value.maybe_applied
    answer = http_answer(raised.value)
    assert (answer.status, answer.fault) == (503, "retry")


@pytest.mark.parametrize("kind", ["internal-error", "http-500", "response-lost"])
async def test_a_sort_key_put_that_only_read_applied_nothing(
    fake_store: DynamoStore, fake: FakeDynamoDB, kind: str
) -> None:
    """A sort-key put whose every ``Query`` failed sent no write: a 503, not "may have been
    applied"; its write failing the same way may have been (the contrast)."""
    tickets = fake_store.sort_key_counter("tickets")
    fake.inject(kind, operation="Query", times=fake_store.retry_policy.max_attempts)
    with pytest.raises(RetriesExhausted) as raised:
        await tickets.put({"title": "crash"})
    assert not raised.value.maybe_applied
    assert http_answer(raised.value).status == 503
    assert fake.requests["PutItem"] == fake.requests["TransactWriteItems"] == 0

    fake.inject("internal-error", operation="PutItem", times=fake_store.retry_policy.max_attempts)
    with pytest.raises(AioseqError) as wrote:
        await tickets.put({"title": "crash"})
    assert wrote.value.maybe_applied and http_answer(wrote.value).status == 500


async def test_a_long_counter_key_is_not_the_clients_fault(fake_store: DynamoStore) -> None:
    """A valid idempotency key that does not fit beside a long counter key: the counter key
    is the service's (500); a key that is not one is the client's (400). Nothing is written."""
    counter = fake_store.transactional_counter("c" * 1100)  # 1,100 bytes: over 1,003
    assert await counter.put(invoice, idempotency_key="k" * 255) == 1  # (this one fits)
    valid = "\U0001f600" * 255  # 255 characters, 1,020 bytes: the longest valid key
    with pytest.raises(ConfigurationError) as raised:
        await counter.put(invoice, idempotency_key=valid)
    assert not isinstance(raised.value, IdempotencyKeyInvalid)
    assert "1003 bytes" in str(raised.value)
    assert http_answer(raised.value).status == 500
    with pytest.raises(IdempotencyKeyInvalid) as invalid:
        await counter.put(invoice, idempotency_key="k" * 256)
    assert http_answer(invalid.value).status == 400
    assert await counter.current() == 1
    at_most = fake_store.transactional_counter("c" * 1003)
    other = await at_most.put(lambda n: {"pk": f"other#{n}", "sk": n}, idempotency_key=valid)
    assert other == 1  # the longest key fits
