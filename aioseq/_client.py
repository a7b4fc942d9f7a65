"""The DynamoDB client a store opens and owns: endpoint, region, credentials and botocore's
configuration, from the arguments of [`aioseq.DynamoStore.open()`][aioseq.DynamoStore.open] and the
usual places."""

from __future__ import annotations

import functools
import logging
import os
import re
import urllib.request
from contextlib import AsyncExitStack
from typing import TYPE_CHECKING, Any

import aioboto3
from aiobotocore.config import AioConfig
from aiobotocore.session import AioSession
from botocore.credentials import Credentials, RefreshableCredentials
from botocore.exceptions import BotoCoreError, NoRegionError, ProfileNotFound
from botocore.loaders import Loader, create_loader

from aioseq._checks import check_endpoint_url, check_region
from aioseq._transport import NO_CREDENTIALS
from aioseq.errors import ConfigurationError

if TYPE_CHECKING:
    from types_aiobotocore_dynamodb import DynamoDBClient
else:
    DynamoDBClient = Any

__all__ = [
    "AWS_ENDPOINT_HINT",
    "LOCAL_CREDENTIALS",
    "LOCAL_REGION",
    "configured_endpoint",
    "open_client",
]

log = logging.getLogger("aioseq")

#: Region used with a custom endpoint (DynamoDB Local, moto) when none is configured.
LOCAL_REGION = "us-east-1"
#: The credentials a client gets for a local endpoint when none are configured (DynamoDB Local
#: accepts only letters and digits in access key ids).
LOCAL_CREDENTIALS = {"aws_access_key_id": "aioseqlocal", "aws_secret_access_key": "aioseqlocal"}

#: What errors that suggest a wrong endpoint (no connection, credentials AWS does not know) add
#: when no endpoint is configured and the credentials look like a local server's.
AWS_ENDPOINT_HINT = (
    "no endpoint URL is set, so requests go to AWS, with credentials that look like a local"
    " server's: for DynamoDB Local or moto set AWS_ENDPOINT_URL=http://127.0.0.1:8000"
    " (or pass endpoint_url=)"
)

#: An AWS access key id: 20 upper-case letters and digits (``AKIA...``, ``ASIA...``).
_AWS_ACCESS_KEY_ID = re.compile(r"A[A-Z0-9]{19}")


@functools.cache
def _shared_loader() -> Loader:
    """botocore's ``Loader`` (service models and endpoint rules, parsed once and cached), one
    per process: without it each store's client parses DynamoDB's model again."""
    return create_loader()


def _new_session() -> aioboto3.Session:
    """A fresh session: credentials, region and profile read anew, and botocore's handlers
    registered by botocore itself (``AioSession()``), as in any session; its service models
    come from the process's one `_shared_loader()` (``register_component("data_loader")``)."""
    botocore_session = AioSession()
    botocore_session.register_component("data_loader", _shared_loader())
    return aioboto3.Session(botocore_session=botocore_session)


def configured_endpoint(endpoint_url: str | None = None) -> str | None:
    """The endpoint that botocore will use: ``endpoint_url``, else ``AWS_ENDPOINT_URL_DYNAMODB``,
    else ``AWS_ENDPOINT_URL``; ``None`` means AWS itself."""
    return (
        endpoint_url
        or os.environ.get("AWS_ENDPOINT_URL_DYNAMODB")
        or os.environ.get("AWS_ENDPOINT_URL")
        or None
    )


def _plain_http(endpoint_url: str | None) -> bool:
    """Whether requests go to ``endpoint_url`` (given to the client itself) in plain HTTP,
    with no proxy that could be TLS (``no_proxy`` is not one)."""
    proxies = [scheme for scheme in urllib.request.getproxies() if scheme != "no"]
    return endpoint_url is not None and endpoint_url.lower().startswith("http://") and not proxies


def _looks_local(credentials: object) -> bool:
    """Whether a fixed pair of credentials looks made up for a local server: an access key id
    that is not shaped as AWS's (``testing``, ``fake``, ``x``...), or the documentation's
    ``AKIAIOSFODNN7EXAMPLE``. Credentials that refresh (a role, SSO) come from AWS: no."""
    if not isinstance(credentials, Credentials) or isinstance(credentials, RefreshableCredentials):
        return False
    key = str(credentials.access_key or "")
    return _AWS_ACCESS_KEY_ID.fullmatch(key) is None or "EXAMPLE" in key


def _no_such_profile(exc: ProfileNotFound) -> ConfigurationError:
    return ConfigurationError(
        f"{exc}: name a profile of the AWS config files in AWS_PROFILE, or unset it"
    )


async def open_client(
    *,
    session: aioboto3.Session | None,
    endpoint_url: str | None,
    region_name: str | None,
    max_pool_connections: int,
    connect_timeout_secs: float,
    read_timeout_secs: float,
) -> tuple[DynamoDBClient, AsyncExitStack, str]:
    """An open DynamoDB client, the exit stack that closes it (see
    [`aioseq.DynamoStore.open()`][aioseq.DynamoStore.open] for where each setting comes from),
    and a hint for errors that suggest a wrong endpoint: `AWS_ENDPOINT_HINT` when no endpoint is
    configured and the credentials look local, else ``""``. botocore's own retries are off
    (``total_max_attempts=1``): the store's retry engine is the one that runs.

    Raises:
        ConfigurationError: an endpoint from the environment that is not a URL, an AWS
            profile that does not exist, a region that is missing (and no endpoint is
            configured) or malformed, no credentials for AWS, or botocore refusing to make
            the client.
    """
    aws = session or _new_session()
    endpoint = configured_endpoint(endpoint_url)
    if endpoint is not None and endpoint_url is None:
        check_endpoint_url(endpoint, "the endpoint in AWS_ENDPOINT_URL(_DYNAMODB)")
    client_args: dict[str, Any] = {}
    if endpoint_url:
        client_args["endpoint_url"] = endpoint_url
    if _plain_http(endpoint_url):  # (one from the environment botocore may ignore: not here)
        # No TLS to verify: spares loading the CA bundle (~40 ms per store) for DynamoDB Local.
        client_args["verify"] = False
    # botocore reads AWS_DEFAULT_REGION and the profile; AWS_REGION is what the newer
    # SDKs and Lambda set, and what this method's docstring promises.
    try:
        region = region_name or aws.region_name or os.environ.get("AWS_REGION") or None
    except ProfileNotFound as exc:  # (AWS_PROFILE, or a session's profile, names none)
        raise _no_such_profile(exc) from exc
    if region is None and endpoint is not None:
        region = LOCAL_REGION
    if region is None:
        raise ConfigurationError(
            "no AWS region is configured: pass region_name= (aioseq --region), or set"
            " AWS_REGION or AWS_DEFAULT_REGION, or a region in the AWS profile"
        )
    check_region(region, "the configured region")
    try:
        credentials = await aws.get_credentials()  # type: ignore[misc]
    except ProfileNotFound as exc:
        raise _no_such_profile(exc) from exc
    if credentials is None and endpoint is not None:
        log.info("no AWS credentials found; using dummy ones for %s", endpoint)
        client_args.update(LOCAL_CREDENTIALS)
    elif credentials is None:
        raise ConfigurationError(NO_CREDENTIALS)
    hint = AWS_ENDPOINT_HINT if endpoint is None and _looks_local(credentials) else ""
    config = AioConfig(
        max_pool_connections=max_pool_connections,
        connect_timeout=connect_timeout_secs,
        read_timeout=read_timeout_secs,
        retries={"mode": "standard", "total_max_attempts": 1},
        # aioseq builds its requests (the hot ones from templates checked once, when built)
        # and checks what callers pass to DynamoStore.send_once() itself
        # (BotocoreTransport.validate).
        parameter_validation=False,
    )
    stack = AsyncExitStack()
    try:
        client = await stack.enter_async_context(
            aws.client("dynamodb", region_name=region, config=config, **client_args)
        )
    except (NoRegionError, ValueError, BotoCoreError) as exc:
        await stack.aclose()
        raise ConfigurationError(f"cannot make a DynamoDB client: {exc}") from exc
    return client, stack, hint
