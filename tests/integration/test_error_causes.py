"""Errors that name their cause (issue 43, item 2), against real local servers: a closed port,
a name that does not resolve, ``https://`` to the moto server (plain HTTP), a TLS server whose
certificate nobody signed, and web applications that answer HTML. Each error keeps its type
and ``maybe_applied`` (nothing was sent, or nothing was written) and chains botocore's."""

from __future__ import annotations

import datetime
import socket
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest
import pytest_asyncio
from aiohttp import web
from botocore.exceptions import ClientError, EndpointConnectionError
from botocore.exceptions import SSLError as BotocoreSSLError

from aioseq import (
    DynamoStore,
    EndpointUnreachable,
    NotDynamoDB,
    RetriesExhausted,
    RetryPolicy,
    StoreError,
)
from aioseq.testing import MotoServerProcess

#: Two quick attempts: the last error arrives long before the endpoint is counted down.
POLICY = RetryPolicy(max_attempts=2, max_unreachable_secs=30.0)


async def unreachable(endpoint_url: str) -> EndpointUnreachable:
    """The error of the last attempt at a number from ``endpoint_url``."""
    with pytest.raises(RetriesExhausted) as caught:
        async with DynamoStore.open(
            endpoint_url=endpoint_url, retry_policy=POLICY, connect_timeout_secs=2.0
        ) as store:
            await store.atomic_counter("orders").next()
    error = caught.value.last_error
    assert isinstance(error, EndpointUnreachable), repr(error)
    assert not error.maybe_applied and not caught.value.maybe_applied
    return error


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


async def test_a_closed_port_is_connection_refused_naming_host_and_port() -> None:
    port = closed_port()
    error = await unreachable(f"http://127.0.0.1:{port}")
    assert str(error) == (
        f"DescribeTable: connection refused by 127.0.0.1:{port} (is DynamoDB running there?)"
    )
    assert isinstance(error.__cause__, EndpointConnectionError)


async def test_a_host_that_does_not_resolve_is_named() -> None:
    error = await unreachable("http://aioseq-no-such-host.invalid:8000")
    assert str(error).startswith("DescribeTable: cannot resolve host aioseq-no-such-host.invalid (")
    assert isinstance(error.__cause__, EndpointConnectionError)


async def test_https_to_a_plain_http_server_says_so_and_suggests_http(
    aioseq_moto_server: MotoServerProcess,
) -> None:
    where = aioseq_moto_server.endpoint_url.removeprefix("http://")
    error = await unreachable(f"https://{where}")
    message = str(error)
    assert message.startswith(f"DescribeTable: the TLS handshake with {where} failed (")
    assert message.endswith(f"): the server speaks plain HTTP, not TLS; use http://{where}")
    assert isinstance(error.__cause__, BotocoreSSLError)


def self_signed(directory: Path) -> ssl.SSLContext:
    """A server context with a certificate for 127.0.0.1 that no CA signed."""
    from cryptography import x509  # (moto's dependency: there wherever the moto server is)
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "aioseq test")])
    now = datetime.datetime.now(datetime.timezone.utc)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=1))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .sign(key, hashes.SHA256())
    )
    (directory / "cert.pem").write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    (directory / "key.pem").write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(directory / "cert.pem", directory / "key.pem")
    return context


class WebApp:
    """A web application on 127.0.0.1 that answers every request with one page, and counts
    them."""

    def __init__(
        self,
        status: int,
        body: str,
        content_type: str = "text/html",
        headers: dict[str, str] | None = None,
    ) -> None:
        self.status = status
        self.body = body
        self.content_type = content_type
        self.headers = headers or {}
        self.requests = 0

    async def answer(self, request: web.Request) -> web.Response:
        self.requests += 1
        await request.read()
        return web.Response(
            status=self.status,
            text=self.body,
            content_type=self.content_type,
            headers=self.headers,
        )


Serve = Callable[..., Awaitable[str]]


@pytest_asyncio.fixture
async def serve() -> AsyncIterator[Serve]:
    """``await serve(app, ssl_context=None)`` -> the URL of ``app`` (a `WebApp`), stopped
    after the test."""
    runners: list[web.AppRunner] = []

    async def start(app: WebApp, ssl_context: ssl.SSLContext | None = None) -> str:
        application = web.Application()
        application.router.add_route("*", "/{tail:.*}", app.answer)
        runner = web.AppRunner(application, access_log=None)
        await runner.setup()
        runners.append(runner)
        site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=ssl_context)
        await site.start()
        port = runner.addresses[-1][1]
        return f"{'https' if ssl_context else 'http'}://127.0.0.1:{port}"

    yield start
    for runner in runners:
        await runner.cleanup()


async def test_a_certificate_nobody_signed_is_named(serve: Serve, tmp_path: Path) -> None:
    url = await serve(WebApp(200, "{}"), ssl_context=self_signed(tmp_path))
    where = url.removeprefix("https://")
    error = await unreachable(url)
    assert str(error).startswith(f"DescribeTable: the TLS certificate of {where} is not trusted (")
    assert "AWS_CA_BUNDLE" in str(error)
    assert isinstance(error.__cause__, BotocoreSSLError)


@pytest.mark.parametrize("status", [404, 200])
async def test_a_web_application_is_not_dynamodb_and_not_retried(serve: Serve, status: int) -> None:
    app = WebApp(status, "<html><body><h1>Welcome</h1></body></html>")
    url = await serve(app)
    async with DynamoStore.open(endpoint_url=url, retry_policy=POLICY) as store:
        with pytest.raises(NotDynamoDB) as caught:
            await store.atomic_counter("orders").next()
    error = caught.value
    assert str(error) == (
        f"DescribeTable: {url} answered HTTP {status} with text/html: not a DynamoDB endpoint"
    )
    assert (error.status, error.content_type, error.endpoint_url) == (status, "text/html", url)
    assert not error.maybe_applied and not error.retryable
    assert isinstance(error.__cause__, ClientError)
    assert app.requests == 1


async def test_a_json_api_without_dynamodb_error_types_is_not_dynamodb(serve: Serve) -> None:
    url = await serve(WebApp(404, '{"detail": "Not Found"}', "application/json"))
    async with DynamoStore.open(endpoint_url=url, retry_policy=POLICY) as store:
        with pytest.raises(NotDynamoDB, match="answered HTTP 404 with application/json"):
            await store.atomic_counter("orders").next()


@pytest.mark.parametrize("access_key", ["testing", "fakeMyKeyId", "x", "AKIAIOSFODNN7EXAMPLE"])
async def test_local_credentials_and_no_endpoint_name_aws_endpoint_url(
    monkeypatch: pytest.MonkeyPatch, access_key: str
) -> None:
    """No endpoint configured: requests go to dynamodb.us-east-1.amazonaws.com. In the suite's
    network namespace (no route out) the name does not resolve; elsewhere AWS answers
    UnrecognizedClientException. Either way the error names AWS_ENDPOINT_URL."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", access_key)
    error = await failure(endpoint_url=None)
    assert str(error).endswith(
        "; no endpoint URL is set, so requests go to AWS, with credentials that look like a"
        " local server's: for DynamoDB Local or moto set AWS_ENDPOINT_URL=http://127.0.0.1:8000"
        " (or pass endpoint_url=)"
    ), str(error)
    assert not error.maybe_applied


async def test_aws_credentials_or_an_endpoint_get_no_hint(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIA" + "Q" * 16)
    assert "AWS_ENDPOINT_URL" not in str(await failure(endpoint_url=None))
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://127.0.0.1:{closed_port()}")
    assert "AWS_ENDPOINT_URL" not in str(await failure(endpoint_url=None))


async def failure(*, endpoint_url: str | None) -> StoreError:
    """What a number from a store opened on ``endpoint_url`` raises: the error, or the last
    attempt's when the retries ran out."""
    with pytest.raises((StoreError, RetriesExhausted)) as caught:
        async with DynamoStore.open(endpoint_url=endpoint_url, retry_policy=POLICY) as store:
            await store.atomic_counter("orders").next()
    error = caught.value
    if isinstance(error, RetriesExhausted):
        error = error.last_error  # type: ignore[assignment]
    assert isinstance(error, StoreError), repr(error)
    return error
