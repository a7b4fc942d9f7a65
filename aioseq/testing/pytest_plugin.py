"""pytest fixtures for code that uses aioseq (loaded automatically when aioseq is installed).

- ``aioseq_moto_server`` (session): a serialized moto server in a child process.
- ``aioseq_dynamodb_local`` (session): DynamoDB Local; skips with the reason when it cannot run
  here (not in a loopback-only network namespace, no Java, no jar), or fails instead when
  ``AIOSEQ_REQUIRE_DYNAMODB_LOCAL=1``.
- ``aioseq_endpoint``: the endpoint URL the next fixture uses; the moto server's by default.
  Override it in your ``conftest.py`` to test against another server.
- ``aioseq_store``: an open [`DynamoStore`][aioseq.DynamoStore] on a new, uniquely named table
  (created before, deleted after the test).

The async fixture needs pytest-asyncio (``pip install 'aioseq[test]'``), in either of its
modes: with ``asyncio_mode = "auto"`` any ``async def`` test can use it; in strict mode (the
default) mark the test ``@pytest.mark.asyncio``. The moto server needs ``aioseq[server]``;
without it the fixture fails with that instruction, not an ``ImportError`` deep inside.

For example:

    @pytest.mark.asyncio  # not needed with asyncio_mode = "auto"
    async def test_orders(aioseq_store):
        orders = aioseq_store.atomic_counter("orders")
        assert await orders.next() == 1
"""

from __future__ import annotations

import importlib.util
import os
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from aioseq import DynamoStore
    from aioseq.testing import DynamoDBLocal, MotoServerProcess

REQUIRE_DYNAMODB_LOCAL = "AIOSEQ_REQUIRE_DYNAMODB_LOCAL"


def _async_fixture() -> Callable[[Any], Any]:
    """pytest-asyncio's own fixture decorator, which works in its strict mode and its auto
    mode alike; without pytest-asyncio, a fixture that fails saying what to install (the
    plugin loads in every pytest run where aioseq is installed, so it must not fail to
    import)."""
    try:
        import pytest_asyncio
    except ImportError:

        def missing(function: Any) -> Any:
            @pytest.fixture(name=function.__name__)
            def needs_pytest_asyncio() -> None:
                pytest.fail(
                    f"the {function.__name__} fixture is async and needs pytest-asyncio:"
                    " pip install 'aioseq[test]'"
                )

            return needs_pytest_asyncio

        return missing
    return pytest_asyncio.fixture


@pytest.fixture(scope="session")
def aioseq_moto_server() -> Iterator[MotoServerProcess]:
    """A serialized moto DynamoDB server on 127.0.0.1, for the whole session."""
    if importlib.util.find_spec("moto") is None:
        pytest.fail("the aioseq_moto_server fixture needs moto: pip install 'aioseq[server]'")
    from aioseq.testing import MotoServerProcess

    with MotoServerProcess() as server:
        yield server


@pytest.fixture(scope="session")
def aioseq_dynamodb_local() -> Iterator[DynamoDBLocal]:
    """Amazon DynamoDB Local on 127.0.0.1, for the whole session (see the module doc)."""
    from aioseq.testing import DynamoDBLocal, DynamoDBLocalUnavailable
    from aioseq.testing.dynamodb_local import SHORT_RUN_JVM_OPTIONS

    server = DynamoDBLocal(jvm_options=SHORT_RUN_JVM_OPTIONS)
    try:
        server.start()
    except DynamoDBLocalUnavailable as exc:
        if os.environ.get(REQUIRE_DYNAMODB_LOCAL) == "1":
            pytest.fail(f"DynamoDB Local is required ({REQUIRE_DYNAMODB_LOCAL}=1): {exc.reason}")
        pytest.skip(f"DynamoDB Local cannot run here: {exc.reason}")
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def aioseq_endpoint(aioseq_moto_server: MotoServerProcess) -> str:
    """The endpoint URL ``aioseq_store`` connects to (default: the moto server)."""
    return aioseq_moto_server.endpoint_url


@_async_fixture()
async def aioseq_store(aioseq_endpoint: str) -> AsyncIterator[DynamoStore]:
    """An open store on a fresh table ``aioseq-test-<uuid>``, deleted after the test."""
    from aioseq import DynamoStore

    table = f"aioseq-test-{uuid.uuid4().hex[:12]}"
    async with DynamoStore.open(table=table, endpoint_url=aioseq_endpoint) as store:
        await store.create_table()
        try:
            yield store
        finally:
            if not store.closed:
                await store.delete_table()
