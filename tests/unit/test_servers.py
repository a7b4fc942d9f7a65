"""serving_endpoint()/serving(): the endpoint given or configured, or a server started; no server
is started by these tests (the servers' ``start`` fail the test if called)."""

from __future__ import annotations

import sys
from types import TracebackType

import pytest

from aioseq import ConfigurationError
from aioseq.testing import (
    Endpoint,
    ServerUnavailable,
    dynamodb_local,
    moto_server,
    serving,
    serving_endpoint,
)

GIVEN = "http://127.0.0.1:8001"
FOR_DYNAMODB = "http://127.0.0.1:8002"
FOR_ALL = "http://127.0.0.1:8003"
REAL_DYNAMODB_LOCAL_START = dynamodb_local.DynamoDBLocal.start


def _never_start(self: object) -> None:
    raise AssertionError(f"{type(self).__name__} was started")


@pytest.fixture(autouse=True)
def _no_server_starts(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(moto_server.MotoServerProcess, "start", _never_start)
    monkeypatch.setattr(dynamodb_local.DynamoDBLocal, "start", _never_start)


class FakeMoto:
    """Stands in for MotoServerProcess: records that it ran, starts nothing."""

    started = 0
    endpoint_url = "http://127.0.0.1:9999"

    def __enter__(self) -> FakeMoto:
        type(self).started += 1
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        pass


@pytest.mark.parametrize("kind", ["moto", "dynamodb-local"])
def test_a_given_endpoint_is_used_and_nothing_is_started(kind: str) -> None:
    with serving_endpoint(kind, GIVEN) as endpoint:
        assert endpoint == Endpoint(GIVEN, embedded=False, kind=None)
    with serving(kind, GIVEN) as url:
        assert url == GIVEN


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({"AWS_ENDPOINT_URL_DYNAMODB": FOR_DYNAMODB}, FOR_DYNAMODB),
        ({"AWS_ENDPOINT_URL": FOR_ALL}, FOR_ALL),
        ({"AWS_ENDPOINT_URL_DYNAMODB": FOR_DYNAMODB, "AWS_ENDPOINT_URL": FOR_ALL}, FOR_DYNAMODB),
    ],
)
def test_a_configured_endpoint_is_used_when_asked_and_nothing_is_started(
    monkeypatch: pytest.MonkeyPatch, env: dict[str, str], expected: str
) -> None:
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    with serving_endpoint(from_environment=True) as endpoint:
        assert endpoint == Endpoint(expected, embedded=False)
    with serving_endpoint("dynamodb-local", from_environment=True) as endpoint:
        assert endpoint.url == expected


def test_the_argument_comes_before_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ENDPOINT_URL_DYNAMODB", FOR_DYNAMODB)
    monkeypatch.setenv("AWS_ENDPOINT_URL", FOR_ALL)
    with serving_endpoint(endpoint_url=GIVEN, from_environment=True) as endpoint:
        assert endpoint.url == GIVEN


def test_the_environment_is_ignored_unless_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    """The soak and the benchmarks start their own server whatever the environment says."""
    monkeypatch.setenv("AWS_ENDPOINT_URL_DYNAMODB", FOR_DYNAMODB)
    monkeypatch.setenv("AWS_ENDPOINT_URL", FOR_ALL)
    monkeypatch.setattr(moto_server, "MotoServerProcess", FakeMoto)
    monkeypatch.setattr(FakeMoto, "started", 0)
    with serving_endpoint() as endpoint:
        assert endpoint == Endpoint(FakeMoto.endpoint_url, embedded=True, kind="moto")
    with serving("moto", None) as url:
        assert url == FakeMoto.endpoint_url
    assert FakeMoto.started == 2


@pytest.mark.parametrize("endpoint_url", [None, GIVEN])
def test_an_unknown_kind_is_refused(endpoint_url: str | None) -> None:
    with (
        pytest.raises(ConfigurationError, match="unknown server 'moto-local'"),
        serving_endpoint("moto-local", endpoint_url),
    ):
        pass
    with pytest.raises(ValueError, match="choose moto or dynamodb-local"), serving("x"):
        pass


def test_moto_not_installed_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "moto", None)  # find_spec("moto") is None: not installed
    with pytest.raises(ServerUnavailable) as caught, serving_endpoint("moto"):
        pass
    assert caught.value.kind == "moto"
    assert "pip install 'aioseq[server]'" in caught.value.reason
    assert str(caught.value) == caught.value.reason


def test_dynamodb_local_unavailable_gives_its_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    """Its own start() says why (no jar here), before any process is started."""
    monkeypatch.setattr(dynamodb_local, "find_dynamodb_local_jar", lambda: None)
    monkeypatch.setattr(dynamodb_local.DynamoDBLocal, "start", REAL_DYNAMODB_LOCAL_START)
    with pytest.raises(ServerUnavailable) as caught, serving_endpoint("dynamodb-local"):
        pass
    assert caught.value.kind == "dynamodb-local"
    assert "DynamoDBLocal.jar not found" in caught.value.reason
    assert isinstance(caught.value.__cause__, dynamodb_local.DynamoDBLocalUnavailable)
