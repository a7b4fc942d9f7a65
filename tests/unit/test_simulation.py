"""The deterministic simulation (verification/simulate.py): virtual time, one seed one
interleaving, and invariants that catch what they are for."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from datetime import timedelta

import pytest

from aioseq import DynamoStore, PeriodClosed
from aioseq.testing import FakeDynamoDB
from verification.simulate import (
    NEW_YEAR,
    TABLE,
    Call,
    Run,
    Scenario,
    VirtualTimeLoop,
    check,
    run_seed,
)

#: A seed with faults, crashes, a deadline share and several strategies, on one Region (fast).
SEED = 27


def test_virtual_time_passes_at_once() -> None:
    loop = VirtualTimeLoop()
    try:

        async def wait() -> float:
            await asyncio.sleep(3600)
            with pytest.raises(asyncio.TimeoutError):
                await asyncio.wait_for(asyncio.sleep(60), 5)
            return loop.time()

        assert loop.run_until_complete(wait()) == pytest.approx(3605)
    finally:
        loop.close()


def test_a_seed_is_one_exact_interleaving() -> None:
    first, again = run_seed(SEED), run_seed(SEED)
    assert first.scenario.global_table is None and first.requests > 30
    assert first.violations == []
    assert (again.digest, again.requests, again.calls) == (
        first.digest,
        first.requests,
        first.calls,
    )
    assert run_seed(SEED + 1).digest != first.digest


def _run_with(calls: list[Call], scenario: Scenario | None = None) -> Run:
    run = Run(scenario or Scenario.draw(SEED))
    fake = run.fakes[""] = FakeDynamoDB()

    async def create() -> None:
        await DynamoStore(transport=fake, table=TABLE).create_table()

    asyncio.run(create())
    run.calls = calls
    return run


def test_a_number_handed_out_twice_is_a_violation() -> None:
    calls = [
        Call("p0", "atomic", "atomic-1", "next", 0.0, 0.1, numbers=(7,)),
        Call("p1", "atomic", "atomic-1", "next", 0.2, 0.3, numbers=(7,)),
    ]
    found = check(_run_with(calls))
    assert [(v.invariant, v.key) for v in found] == [("number twice", "atomic-1")]


def test_an_idempotency_keys_replay_is_not_a_second_number() -> None:
    calls = [
        Call("p0", "atomic", "atomic-1", "put", 0.0, 0.1, numbers=(7,), idempotency_key="k"),
        Call("p1", "atomic", "atomic-1", "put", 0.2, 0.3, numbers=(7,), idempotency_key="k"),
        Call("p1", "atomic", "atomic-1", "next", 0.4, 0.5, error=KeyError("x")),
    ]
    found = check(_run_with(calls))
    assert [v.invariant for v in found] == ["unexpected error"]


def test_a_series_document_in_the_wrong_period_or_against_its_grace_is_a_violation() -> None:
    """Series scenarios (a new year during the run): a document numbered in another period
    than its date's, taken after its period closed, or refused while it was open."""
    scenario = replace(Scenario.draw(SEED), series=("transactional", "year", 1.0))
    late, now = NEW_YEAR - timedelta(seconds=1), NEW_YEAR + timedelta(seconds=3)
    closed = PeriodClosed("series-1", "2026", NEW_YEAR + timedelta(seconds=1), late, late)
    calls = [
        Call("p0", "transactional", "series-1/2026", "put", 0.0, 0.1, dated=late, judged_at=late),
        Call(
            "p0",
            "transactional",
            "series-1/2026",
            "put",
            0.2,
            0.3,
            dated=NEW_YEAR,
            judged_at=NEW_YEAR,
        ),
        Call("p1", "transactional", "series-1/2026", "put", 0.4, 0.5, dated=late, judged_at=now),
        Call(
            "p1",
            "transactional",
            "series-1/2027",
            "put",
            0.6,
            0.7,
            dated=now,
            judged_at=now,
            error=closed,
        ),
    ]
    found = check(_run_with(calls, scenario))
    assert [(v.invariant, v.key) for v in found] == [
        ("wrong period", "series-1/2026"),
        ("grace", "series-1/2026"),
        ("grace", "series-1/2027"),
    ]
