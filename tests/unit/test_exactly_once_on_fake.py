"""Exactly once under lost answers (the tests of ``tests/exactly_once.py``) on FakeDynamoDB,
which honours ``ClientRequestToken`` as DynamoDB does (``fake``) or ignores it as moto does
(``fake-ignoring-tokens``); faults planted with ``FakeDynamoDB.inject``. The same tests run on
moto and DynamoDB Local in ``tests/integration/test_exactly_once.py``."""

from __future__ import annotations

import asyncio
from collections import Counter
from dataclasses import dataclass
from typing import Any

import pytest
from checks import assert_distinct, assert_exactly
from exactly_once import *  # noqa: F403 (the shared tests and their fixture)
from exactly_once import FAST

from aioseq import DynamoStore, RetryPolicy
from aioseq.clock import Clock
from aioseq.testing import FakeDynamoDB, FaultSchedule


@pytest.fixture(params=[True, False], ids=["fake", "fake-ignoring-tokens"])
def fake(request: pytest.FixtureRequest) -> FakeDynamoDB:
    """The fake of ``fake_store`` (tests/conftest.py), honouring the tokens or not."""
    honour_tokens: bool = request.param
    return FakeDynamoDB(honour_tokens=honour_tokens)


class _Borrowed:
    """``fake``, as a transport a second store can close without closing the fake: the test's
    other store (``fake_store``) still reads and writes the same table afterwards."""

    def __init__(self, fake: FakeDynamoDB) -> None:
        self._fake = fake
        self.region_name = fake.region_name
        self.loop, self.observer, self.client = None, None, None
        self.endpoint = fake.endpoint

    @property
    def requests(self) -> Counter[str]:
        return self._fake.requests

    def validate(self, operation: str, params: dict[str, Any]) -> None:
        self._fake.validate(operation, params)

    async def send(self, operation: str, params: dict[str, Any]) -> dict[str, Any]:
        return await self._fake.send(operation, params)

    async def aclose(self, *, timeout_secs: float) -> None:
        pass


@dataclass
class FakeWorld:
    """The shared tests' `World` on ``fake``: a planted fault goes to the next matching
    request of any store on it."""

    fake: FakeDynamoDB
    store: DynamoStore

    @property
    def honours_tokens(self) -> bool:
        return self.fake.honour_tokens

    def lose(self, *kinds: str, operation: str) -> None:
        for kind in kinds:  # planted faults are matched in the order planted
            self.fake.inject(kind, operation=operation)

    @property
    def injected(self) -> Counter[str]:
        return self.fake.injected

    async def lossy(self, policy: RetryPolicy = FAST, clock: Clock | None = None) -> DynamoStore:
        return DynamoStore(
            table=self.store.table,
            transport=_Borrowed(self.fake),
            retry_policy=policy,
            clock=clock,
            idle_secs=None,
        )


@pytest.fixture
def world(fake: FakeDynamoDB, fake_store: DynamoStore) -> FakeWorld:
    return FakeWorld(fake, fake_store)


# --- every strategy under drawn faults (on the servers: tests/integration/test_faults.py) ----

KINDS = ["throttling", "internal-error", "transaction-conflict", "reset", "response-lost"]


@pytest.mark.parametrize("seed", [1, 2])
@pytest.mark.parametrize("strategy", ["atomic", "optimistic", "sort_key", "transactional"])
async def test_every_strategy_under_drawn_faults(strategy: str, seed: int) -> None:
    fake = FakeDynamoDB(schedule=FaultSchedule.uniform(0.3, seed=seed, kinds=KINDS))
    policy = RetryPolicy(max_attempts=50, initial_backoff_secs=0.0001, max_backoff_secs=0.0001)
    async with DynamoStore(transport=fake, retry_policy=policy, idle_secs=None) as store:
        await store.create_table()
        fake.reset()  # the faults counted are the counter's
        if strategy == "atomic":
            counter = store.atomic_counter("c")
            numbers = await asyncio.gather(*(counter.next() for _ in range(40)))
            assert_distinct(numbers)  # ADD may leave gaps under lost answers
        elif strategy == "optimistic":
            optimistic = store.optimistic_counter("c")
            numbers = await asyncio.gather(*(optimistic.next() for _ in range(40)))
            stats = optimistic.statistics()
            assert_distinct(numbers)
            if not stats.unresolved:
                assert_exactly(numbers, 1, 40)
        elif strategy == "sort_key":
            issues = store.sort_key_counter("c")
            numbers = await asyncio.gather(*(issues.put({"i": i}) for i in range(40)))
            assert sorted(stored_numbers(fake, store)) == sorted(numbers)
            assert_distinct(numbers)
        else:
            invoices = store.transactional_counter("c")
            numbers = await asyncio.gather(
                *(invoices.put(lambda n: {"pk": "c", "sk": n}) for _ in range(40))
            )
            assert sorted(stored_numbers(fake, store)) == sorted(numbers)
            assert_exactly(numbers, 1, 40)
    assert sum(fake.injected.values()) > 0


def stored_numbers(fake: FakeDynamoDB, store: DynamoStore) -> list[int]:
    """The sort keys of the numbered items (sort key >= 1) of partition ``c``, read from the
    fake's tables (no request: the faults drawn stay the test's)."""
    return [
        int(item["sk"]["N"])
        for item in fake.items(store.table.name)
        if item["pk"] == {"S": "c"} and int(item["sk"]["N"]) >= 1
    ]
