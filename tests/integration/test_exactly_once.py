"""Exactly once under lost answers (the tests of ``tests/exactly_once.py``) on moto and
DynamoDB Local, through the fault proxy (``response-lost``: the server applies the request,
the client's connection is reset instead of answered). moto ignores ``ClientRequestToken``, so
on moto the gapless strategy's resend is resolved by the counter item's token ring; on DynamoDB
Local by the token itself. The same tests run on FakeDynamoDB in
``tests/unit/test_exactly_once_on_fake.py``."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from exactly_once import *  # noqa: F403 (the shared tests and their fixture)
from exactly_once import FAST

from aioseq import DynamoStore, RetryPolicy
from aioseq.clock import Clock
from aioseq.testing.fault_proxy import FaultProxy, FaultSchedule


def schedule(*kinds: str, operation: str) -> FaultSchedule:
    """A schedule whose requests of ``operation`` get ``kinds`` in order, and then no fault
    for the next 20 (the first of 200,000 seeds that draws so)."""
    rates = dict.fromkeys(kinds, 0.05)
    wanted: list[str | None] = [*kinds, *[None] * 20]
    for seed in range(200_000):
        candidate = FaultSchedule(rates, seed=seed, operations=frozenset({operation}))
        pick = candidate.picker()
        if [pick(operation) for _ in wanted] == wanted:
            return candidate
    raise AssertionError(f"no seed gives {kinds}")


@pytest.fixture
def proxy(aioseq_endpoint: str) -> Iterator[FaultProxy]:
    with FaultProxy(aioseq_endpoint) as running:
        yield running


@dataclass
class ServerWorld:
    """The shared tests' `World` on a server: ``store`` goes to it directly, `lossy()` stores
    through ``proxy``, whose schedule `lose` sets."""

    backend: str
    store: DynamoStore
    proxy: FaultProxy

    @property
    def honours_tokens(self) -> bool:
        return self.backend == "dynamodb-local"

    def lose(self, *kinds: str, operation: str) -> None:
        self.proxy.set_schedule(schedule(*kinds, operation=operation))

    @property
    def injected(self) -> Counter[str]:
        return self.proxy.injected

    async def lossy(self, policy: RetryPolicy = FAST, clock: Clock | None = None) -> DynamoStore:
        return await DynamoStore.open(
            table=self.store.table,
            endpoint_url=self.proxy.endpoint_url,
            retry_policy=policy,
            clock=clock,
            idle_secs=None,
        )


@pytest.fixture
def world(backend: str, aioseq_store: DynamoStore, proxy: FaultProxy) -> ServerWorld:
    return ServerWorld(backend, aioseq_store, proxy)
