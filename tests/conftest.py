"""The suite runs every backend-dependent test once per selected server.

Select with ``--backend moto`` (the default), ``--backend dynamodb-local``, or both (repeat the
option, or set ``AIOSEQ_TEST_BACKENDS=moto,dynamodb-local``). DynamoDB Local runs only inside a
loopback-only network namespace: ``scripts/in-loopback-netns pytest ...``, which is what the
README's test command does.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Iterator
from typing import TYPE_CHECKING

import pytest
import pytest_asyncio
from checks import LoopClock

from aioseq import DynamoStore, RetryPolicy

if TYPE_CHECKING:
    from aioseq.testing import FakeDynamoDB, ManualClock

BACKENDS = ("moto", "dynamodb-local")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--backend",
        action="append",
        choices=BACKENDS,
        help="server(s) to run the suite against (default: $AIOSEQ_TEST_BACKENDS or moto)",
    )


def _backends(config: pytest.Config) -> list[str]:
    chosen = config.getoption("--backend") or [
        b.strip() for b in os.environ.get("AIOSEQ_TEST_BACKENDS", "moto").split(",") if b.strip()
    ]
    unknown = set(chosen) - set(BACKENDS)
    if unknown:
        raise pytest.UsageError(f"unknown backend(s) {sorted(unknown)}; choose from {BACKENDS}")
    return list(dict.fromkeys(chosen))


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "backend" in metafunc.fixturenames:
        chosen = _backends(metafunc.config)
        only = metafunc.definition.get_closest_marker("only_on")
        if only is not None:  # a test of the client's own machinery: one server is enough
            chosen = [b for b in chosen if b in only.args] or chosen[:1]
        metafunc.parametrize("backend", chosen, scope="session")


@pytest.fixture(autouse=True)
def _isolate_aws_environment(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No test reads the developer's AWS profile, endpoint or credentials."""
    for name in list(os.environ):
        if name.startswith("AWS_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("AWS_CONFIG_FILE", os.devnull)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", os.devnull)
    yield


@pytest.fixture
def aioseq_endpoint(request: pytest.FixtureRequest, backend: str) -> str:
    """The selected backend's endpoint (overrides the plugin's moto-only fixture)."""
    fixture = "aioseq_moto_server" if backend == "moto" else "aioseq_dynamodb_local"
    server = request.getfixturevalue(fixture)
    return str(server.endpoint_url)


@pytest_asyncio.fixture
async def loop_clock(monkeypatch: pytest.MonkeyPatch) -> LoopClock:
    """The test's event loop, its clock under the test's hand (:class:`LoopClock`)."""
    loop = asyncio.get_running_loop()
    clock = LoopClock(loop)
    monkeypatch.setattr(loop, "time", clock.time)
    return clock


#: Retries that do not wait: a unit test's backoffs are counted, not slept.
NO_WAIT = RetryPolicy(max_attempts=8, initial_backoff_secs=0.0001, max_backoff_secs=0.0001)


@pytest.fixture
def fake() -> FakeDynamoDB:
    """DynamoDB in the test's process (tests/unit): no server, no network."""
    from aioseq.testing import FakeDynamoDB  # moto, imported only by the tests that use it

    return FakeDynamoDB()


@pytest.fixture
def clock() -> ManualClock:
    """The clock of `fake_store`: time moves when a test advances it or the store sleeps."""
    from aioseq.testing import ManualClock

    return ManualClock()


@pytest_asyncio.fixture
async def fake_store(fake: FakeDynamoDB, clock: ManualClock) -> AsyncIterator[DynamoStore]:
    """An open store on `fake`, its table created; the fake's records start after that."""
    # (No idle sweeper: sleeping on a ManualClock moves it, so a sleeper in a loop races it
    # ahead; tests sweep by hand.)
    async with DynamoStore(
        transport=fake, retry_policy=NO_WAIT, clock=clock, idle_secs=None
    ) as made:
        await made.create_table()
        fake.reset()
        yield made
