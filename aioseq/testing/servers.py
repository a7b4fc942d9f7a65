"""The endpoint to talk to: the one given (or configured), or a test server started for the
duration.

[`serving_endpoint()`][aioseq.testing.serving_endpoint] is the one place that decides;
[`serving()`][aioseq.testing.serving] is its short form for callers that only want the URL (the
soak, the benchmarks).
"""

from __future__ import annotations

import contextlib
import importlib.util
from collections.abc import Iterator
from dataclasses import dataclass

from aioseq._client import configured_endpoint
from aioseq.errors import ConfigurationError

__all__ = ["KINDS", "Endpoint", "ServerUnavailable", "serving", "serving_endpoint"]

#: The servers that can be started here.
KINDS = ("moto", "dynamodb-local")

# What the serialized moto server imports (the ``server`` extra of pyproject.toml).
_MOTO_MODULES = ("moto", "werkzeug")
_MOTO_MISSING = "the embedded server is not installed: pip install 'aioseq[server]'"


@dataclass(frozen=True)
class Endpoint:
    """Where to send requests, and whether a server was started for it.

    Attributes:
        url: the endpoint URL (``http://127.0.0.1:PORT`` for a started server).
        embedded: True if the server was started here (and is stopped on exit); False for an
            endpoint that was given or configured.
        kind: the started server's kind (``"moto"`` or ``"dynamodb-local"``); None when
            ``embedded`` is False, as nothing is known of a given endpoint.
    """

    url: str
    embedded: bool
    kind: str | None = None


class ServerUnavailable(RuntimeError):
    """The test server of ``kind`` cannot be started here; nothing was started.

    ``reason`` says why and what to do: moto not installed (``pip install 'aioseq[server]'``),
    or, for DynamoDB Local, Java or its jar missing or not in a loopback-only network namespace
    (the reason [`DynamoDBLocalUnavailable`][aioseq.testing.DynamoDBLocalUnavailable] gives).
    """

    def __init__(self, kind: str, reason: str) -> None:
        super().__init__(reason)
        self.kind = kind
        self.reason = reason


@contextlib.contextmanager
def serving_endpoint(
    kind: str = "moto", endpoint_url: str | None = None, *, from_environment: bool = False
) -> Iterator[Endpoint]:
    """The [`Endpoint`][aioseq.testing.Endpoint] to talk to, for the duration of the ``with`` block.

    Parameters:
        kind: the server to start when no endpoint is given: ``"moto"``, the serialized moto
            server in a child process ([`MotoServerProcess`][aioseq.testing.MotoServerProcess]),
            or ``"dynamodb-local"`` ([`DynamoDBLocal`][aioseq.testing.DynamoDBLocal],
            which refuses to run outside a loopback-only network namespace: run under
            ``scripts/in-loopback-netns``). The server is stopped on exit.
        endpoint_url: use this endpoint; nothing is started.
        from_environment: also honour the endpoint configured for botocore when
            ``endpoint_url`` is not given: ``AWS_ENDPOINT_URL_DYNAMODB``, then
            ``AWS_ENDPOINT_URL`` (what ``aioseq demo`` does). Off by default, so that a test
            server is started whatever the environment says.

    Raises:
        ConfigurationError: an unknown ``kind`` (a ``ValueError``), even with an endpoint.
        ServerUnavailable: the server of ``kind`` is needed but cannot be started here
            (checked before anything is started).
    """
    if kind not in KINDS:
        raise ConfigurationError(f"unknown server {kind!r}; choose moto or dynamodb-local")
    url = configured_endpoint(endpoint_url) if from_environment else (endpoint_url or None)
    if url is not None:
        yield Endpoint(url, embedded=False)
        return
    if kind == "moto":
        if any(importlib.util.find_spec(name) is None for name in _MOTO_MODULES):
            raise ServerUnavailable(kind, _MOTO_MISSING)
        from aioseq.testing.moto_server import MotoServerProcess

        with MotoServerProcess() as moto:
            yield Endpoint(moto.endpoint_url, embedded=True, kind=kind)
        return
    from aioseq.testing.dynamodb_local import DynamoDBLocal, DynamoDBLocalUnavailable

    with contextlib.ExitStack() as stack:
        try:
            local = stack.enter_context(DynamoDBLocal())
        except DynamoDBLocalUnavailable as exc:
            raise ServerUnavailable(kind, exc.reason) from exc
        yield Endpoint(local.endpoint_url, embedded=True, kind=kind)


@contextlib.contextmanager
def serving(kind: str = "moto", endpoint_url: str | None = None) -> Iterator[str]:
    """The endpoint URL to talk to, for the duration of the ``with`` block: ``endpoint_url``
    when given (nothing is started), else a server of ``kind`` started here and stopped on
    exit: ``"moto"`` or ``"dynamodb-local"``. The environment is not read. The URL of
    [`serving_endpoint()`][aioseq.testing.serving_endpoint], which says more (whether a server was
    started, its kind).

    Raises:
        ConfigurationError: an unknown ``kind`` (a ``ValueError``).
        ServerUnavailable: the server of ``kind`` cannot be started here.
    """
    with serving_endpoint(kind, endpoint_url) as endpoint:
        yield endpoint.url
