"""The hot path's regression guard (``python -m benchmarks.guard``) decides on canned
figures: a ratio past its guard is measured again once, and the run fails only when it is
past in both runs (other work on the machine slows one run; a slower hot path slows every
run)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from benchmarks import guard


def _found(speed: float) -> dict[str, Any]:
    row = {"us_per_call": 1.0, "cpu_us_per_call": 1.0, "speed_vs_seed_quartiles": [1.0, 1.0]}
    return {
        "requests": {
            "seed": {**row, "speed_vs_seed": 1.0, "function_calls": 1000},
            "atomic next()": {**row, "speed_vs_seed": speed, "function_calls": 1009},
            guard.ON_STORE_CLIENT: {**row, "speed_vs_seed": 1.0, "function_calls": 1000},
        },
        "allocator": {
            "bare_next_ns": 100,
            "allocator_next_ns": 200,
            "ratio": 2.0,
            "ratio_range": [2.0, 2.0],
        },
    }


def _runs(monkeypatch: pytest.MonkeyPatch, *speeds: float) -> list[float]:
    """Make each measurement return the next of ``speeds``; the list of those used."""
    left: Iterator[float] = iter(speeds)
    used: list[float] = []

    async def measure(endpoint: str | None, **options: Any) -> dict[str, Any]:
        speed = next(left)
        used.append(speed)
        return _found(speed)

    monkeypatch.setattr(guard, "measure", measure)
    return used


def test_a_run_within_its_guards_is_measured_once(monkeypatch: pytest.MonkeyPatch) -> None:
    used = _runs(monkeypatch, 0.97, 0.5)
    assert guard.main([]) == 0
    assert used == [0.97]


def test_a_run_past_a_guard_once_is_measured_again_and_passes(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    used = _runs(monkeypatch, 0.80, 0.97)
    assert guard.main([]) == 0
    assert used == [0.80, 0.97]
    assert "past the guard: atomic; measuring again" in capsys.readouterr().err


def test_a_run_past_a_guard_twice_fails(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    used = _runs(monkeypatch, 0.80, 0.85, 0.97)
    assert guard.main([]) == 1
    assert used == [0.80, 0.85]  # bounded: never a third run
    assert "FAILED: atomic past the guard in both runs" in capsys.readouterr().err
