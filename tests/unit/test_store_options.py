"""DynamoStore.open() and the values it takes (RetryPolicy, TableSpec) refuse what no request
could fix, before opening anything: no server."""

from __future__ import annotations

import math

import pytest

from aioseq import ConfigurationError, DynamoStore, RetryPolicy, TableSpec

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
