"""DynamoStore.open() and the values it takes (RetryPolicy, TableSpec) refuse what no request
could fix, before opening anything; the first mistakes with a store (an ``await`` forgotten,
another event loop) say what to do. No server."""

from __future__ import annotations

import asyncio
import math

import pytest

from aioseq import (
    ConfigurationError,
    DynamoStore,
    RetryPolicy,
    StoreNotOpened,
    TableSpec,
    WrongEventLoop,
)
from aioseq.testing import FakeDynamoDB

ENDPOINT = "http://127.0.0.1:8000"


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"endpoint_url": "127.0.0.1:8000"}, "http:// or https:// URL with a host"),
        ({"endpoint_url": "ftp://127.0.0.1"}, "http:// or https:// URL with a host"),
        ({"endpoint_url": "http://"}, "http:// or https:// URL with a host"),
        ({"endpoint_url": "http://127.0.0.1:0"}, "http:// or https:// URL with a host"),
        ({"endpoint_url": ENDPOINT, "region_name": "bad region!"}, "AWS region name"),
        ({"endpoint_url": ENDPOINT, "region_name": ""}, "AWS region name"),
        ({"endpoint_url": ENDPOINT, "read_timeout_secs": math.nan}, "finite number of seconds"),
        ({"endpoint_url": ENDPOINT, "connect_timeout_secs": math.inf}, "finite number"),
        ({"endpoint_url": ENDPOINT, "read_timeout_secs": True}, "finite number of seconds"),
        ({"endpoint_url": ENDPOINT, "read_timeout_secs": -1}, "finite number of seconds"),
    ],
)
def test_bad_client_options_are_refused_before_anything_is_opened(
    options: dict[str, object], message: str
) -> None:
    with pytest.raises(ConfigurationError, match=message):
        DynamoStore.open(**options)  # type: ignore[arg-type]


async def test_a_malformed_endpoint_from_the_environment_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("AWS_ENDPOINT_URL", "127.0.0.1:8000")
    with pytest.raises(ConfigurationError, match="AWS_ENDPOINT_URL"):
        await DynamoStore.open()


async def test_no_region_and_no_endpoint_is_refused_with_what_to_set(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("AWS_DEFAULT_REGION", raising=False)
    monkeypatch.delenv("AWS_REGION", raising=False)
    with pytest.raises(ConfigurationError, match="no AWS region is configured"):
        await DynamoStore.open()


async def test_no_credentials_for_aws_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setenv("AWS_REGION", "eu-west-1")
    with pytest.raises(ConfigurationError, match="no AWS credentials found"):
        await DynamoStore.open()


@pytest.mark.parametrize(
    "options",
    [
        {"max_unreachable_secs": 0},
        {"max_unreachable_secs": math.inf},
        {"max_delay_secs": math.nan},
    ],
)
def test_bad_retry_bounds_are_refused(options: dict[str, object]) -> None:
    with pytest.raises(ConfigurationError, match="finite number of seconds"):
        RetryPolicy(**options)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "options",
    [
        {"max_attempts": 0},
        {"max_attempts": 2.0},
        {"max_delay_secs": -1},
        {"initial_backoff_secs": 0},
        {"initial_backoff_secs": 2, "max_backoff_secs": 1},
    ],
)
def test_bad_retry_policies_are_refused(options: dict[str, object]) -> None:
    with pytest.raises(ConfigurationError):
        RetryPolicy(**options)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "options",
    [
        {"name": "ab"},
        {"partition_key": ""},
        {"partition_key": "a", "sort_key": "a"},
        {"sort_key_type": "B"},
    ],
)
def test_bad_table_specs_are_refused(options: dict[str, object]) -> None:
    with pytest.raises(ConfigurationError):
        TableSpec(**options)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "options",
    [{"max_pool_connections": 0}, {"read_timeout_secs": 0}, {"connect_timeout_secs": "1"}],
)
def test_bad_client_options_are_refused(options: dict[str, object]) -> None:
    with pytest.raises(ConfigurationError):
        DynamoStore.open(**options)  # type: ignore[arg-type]


#: A store's own options, each bad: DynamoStore() and DynamoStore.open() check them in one place
#: (aioseq/_options.py), open() before it opens anything.
BAD_STORE_OPTIONS = [
    ({"table": "ab"}, "table name"),
    ({"idle_secs": -1}, "idle_secs"),
    ({"runway_secs": math.nan}, "runway_secs"),
    ({"runway_secs": False}, "runway_secs"),
    ({"region_name": "bad region!"}, "AWS region name"),
    ({"home_region": "bad region!"}, "AWS region name"),
    ({"regions": ["us-east-1"], "home_region": "eu-west-1"}, "pass one"),
    ({"region_slots": 2}, "goes with regions="),
]


@pytest.mark.parametrize(("options", "message"), BAD_STORE_OPTIONS)
def test_bad_store_options_are_refused_by_open_before_anything_is_opened(
    options: dict[str, object], message: str
) -> None:
    with pytest.raises(ConfigurationError, match=message):
        DynamoStore.open(endpoint_url=ENDPOINT, **options)  # type: ignore[arg-type]


@pytest.mark.parametrize(("options", "message"), BAD_STORE_OPTIONS)
def test_bad_store_options_are_refused_by_the_store(
    options: dict[str, object], message: str
) -> None:
    with pytest.raises(ConfigurationError, match=message):
        DynamoStore(transport=FakeDynamoDB(), **options)  # type: ignore[arg-type]


# --- the mistakes a newcomer makes first: each error says what to do instead ----------------


def test_open_used_as_the_store_says_to_await_it() -> None:
    """``DynamoStore.open().atomic_counter(...)``: an ``await`` forgotten. Nothing is opened,
    and a type checker still flags it (the ignore below is needed, or mypy fails the lint)."""
    opening = DynamoStore.open(endpoint_url=ENDPOINT)
    with pytest.raises(StoreNotOpened, match=r"await DynamoStore\.open\(") as caught:
        opening.atomic_counter("orders")  # type: ignore[attr-defined]
    assert "async with DynamoStore.open(...) as store" in str(caught.value)
    assert "store.atomic_counter" in str(caught.value)
    assert isinstance(caught.value, AttributeError)  # what Python raises for it: hasattr works
    assert not hasattr(opening, "create_table")


def test_open_entered_with_with_says_async_with() -> None:
    def enter_with_with() -> None:
        with DynamoStore.open(endpoint_url=ENDPOINT):  # type: ignore[attr-defined]
            pass

    with pytest.raises(StoreNotOpened, match=r"use async with DynamoStore\.open\(") as caught:
        enter_with_with()
    assert isinstance(caught.value, TypeError)  # what Python raises for it


def test_a_counter_used_from_a_second_event_loop_says_to_open_a_store_there() -> None:
    """The store hands back the same object for a key, so the error cannot say "make another
    counter": it says to open a store in that loop."""
    store = DynamoStore(transport=FakeDynamoDB(), table="newcomer")
    first = asyncio.new_event_loop()
    try:
        first.run_until_complete(store.create_table())
        assert first.run_until_complete(store.atomic_counter("k").next()) == 1

        async def again() -> int:
            return await store.atomic_counter("k").next()  # the same object

        with pytest.raises(WrongEventLoop, match="open one DynamoStore per event loop"):
            asyncio.run(again())
        assert first.run_until_complete(again()) == 2  # still fine in its own loop
        first.run_until_complete(store.aclose())
    finally:
        first.close()


def test_aclose_after_its_event_loop_closed_says_so_and_closes_nothing() -> None:
    """``store = asyncio.run(...)`` then ``asyncio.run(store.aclose())``: the loop the store's
    objects live in is gone, so nothing can be closed cleanly; the store says which loop and
    stays as it was (not closed halfway)."""

    async def used() -> DynamoStore:
        store = DynamoStore(transport=FakeDynamoDB(), table="newcomer")
        await store.create_table()
        await store.atomic_counter("k").next()
        return store

    store = asyncio.run(used())
    with pytest.raises(WrongEventLoop, match="closed now") as caught:
        asyncio.run(store.aclose())
    assert "before that loop ends" in str(caught.value)
    assert "closed=True" in str(caught.value)  # the loop named, as asyncio shows it
    assert not store.closed  # nothing was done: no half-closed store
