"""The sessions aioseq makes for itself share one botocore loader and have botocore's built-in
handlers, each its own, registered by botocore; no CA bundle for a plain-HTTP endpoint; a bad
profile is a typed error (no server: nothing is sent)."""

from __future__ import annotations

import urllib.request
from typing import Any

import botocore
import pytest
from aiobotocore.session import AioSession

from aioseq import ConfigurationError, DynamoStore, _client


def test_sessions_aioseq_makes_share_the_service_model_loader() -> None:
    first, second = _client._new_session(), _client._new_session()
    assert first is not second  # credentials and region are read anew for each store
    loader = first._session.get_component("data_loader")
    assert loader is second._session.get_component("data_loader")
    # The cache is what is shared: DynamoDB's model is parsed once per process.
    model = loader.load_service_model("dynamodb", "service-2")
    assert (
        second._session.get_component("data_loader").load_service_model("dynamodb", "service-2")
        is model
    )


def _handlers(botocore_session: Any, event: str) -> list[Any]:
    return list(botocore_session._events._emitter._handlers.prefix_search(event))


def test_each_session_has_botocore_s_handlers_of_its_own() -> None:
    first, second = _client._new_session(), _client._new_session()
    event = "before-parameter-build.dynamodb.PutItem"
    as_botocore_registers_them = _handlers(AioSession(), event)
    assert len(_handlers(first._session, event)) == len(as_botocore_registers_them) > 0

    def mark(**_: object) -> None: ...

    first._session.register(event, mark)  # one session's handler is its own
    assert mark in _handlers(first._session, event)
    assert mark not in _handlers(second._session, event)
    assert mark not in _handlers(_client._new_session()._session, event)


def test_an_initializer_s_handler_is_registered_once() -> None:
    def mark(**_: object) -> None: ...

    def initializer(session: Any) -> None:
        session.register("before-parameter-build.dynamodb.PutItem", mark)

    botocore.register_initializer(initializer)
    try:
        made = _client._new_session()._session
    finally:
        botocore.unregister_initializer(initializer)
    assert _handlers(made, "before-parameter-build.dynamodb.PutItem").count(mark) == 1


@pytest.mark.parametrize(
    ("endpoint", "proxies", "plain"),
    [
        ("http://localhost:8000", {}, True),
        ("HTTP://127.0.0.1:8000", {}, True),
        ("http://localhost:8000", {"no": "localhost,127.0.0.1"}, True),  # NO_PROXY alone
        ("https://dynamodb.eu-west-1.amazonaws.com", {}, False),
        (None, {}, False),  # AWS itself, or an endpoint from the environment botocore may ignore
        ("http://localhost:8000", {"http": "https://proxy.example:3128"}, False),  # TLS to it
    ],
)
def test_only_a_plain_http_endpoint_with_no_proxy_skips_tls_verification(
    monkeypatch: pytest.MonkeyPatch, endpoint: str | None, proxies: dict[str, str], plain: bool
) -> None:
    monkeypatch.setattr(urllib.request, "getproxies", lambda: proxies)
    assert _client._plain_http(endpoint) is plain


@pytest.mark.parametrize("region", [None, "eu-west-1"])
async def test_a_profile_that_does_not_exist_is_a_configuration_error(
    monkeypatch: pytest.MonkeyPatch, region: str | None
) -> None:
    monkeypatch.setenv("AWS_PROFILE", "no-such-profile")
    with pytest.raises(ConfigurationError, match=r"\(no-such-profile\).*AWS_PROFILE"):
        await DynamoStore.open(endpoint_url="http://127.0.0.1:9", region_name=region)
