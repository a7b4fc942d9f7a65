"""The endpoint to test against: the one given, or a test server started for the duration."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

__all__ = ["serving"]


@contextlib.contextmanager
def serving(kind: str = "moto", endpoint_url: str | None = None) -> Iterator[str]:
    """The endpoint URL to talk to, for the duration of the ``with`` block: ``endpoint_url``
    when given (nothing is started), else a server of ``kind`` started here and stopped on
    exit: ``"moto"``, the serialized moto server in a child process
    (:class:`~aioseq.testing.moto_server.MotoServerProcess`), or ``"dynamodb-local"``
    (:class:`~aioseq.testing.dynamodb_local.DynamoDBLocal`, which refuses to run outside a
    loopback-only network namespace: run under ``scripts/in-loopback-netns``).

    Raises:
        ValueError: an unknown ``kind``.
    """
    if endpoint_url:
        yield endpoint_url
        return
    if kind == "moto":
        from aioseq.testing.moto_server import MotoServerProcess

        with MotoServerProcess() as moto:
            yield moto.endpoint_url
    elif kind == "dynamodb-local":
        from aioseq.testing.dynamodb_local import DynamoDBLocal

        with DynamoDBLocal() as local:
            yield local.endpoint_url
    else:
        raise ValueError(f"unknown server {kind!r}; choose moto or dynamodb-local")
