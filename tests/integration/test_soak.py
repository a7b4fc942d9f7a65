"""The soak (``python -m verification.soak``), short: every strategy with its defaults, two
processes, one killed mid-run, the default fault schedule, some callers cancelled, every number
and every stored item checked; then the same under 0.1 s deadlines (issue 29): the counter
keeps moving and no queue entry survives a clean close."""

from __future__ import annotations

import json
from typing import Any

import pytest

from verification.records import Call
from verification.soak import (
    DEFAULT_FAULTS,
    DEFAULT_STRATEGIES,
    describe_faults,
    longest_standstill_secs,
    main,
    parse_strategy,
    run_soak,
)
from verification.soak_report import VICTIM, Deadlines, Soak, transcript


# The soak tool's end-to-end run, on the server it targets (make soak). On moto, a process
# killed mid-run through faults is test_crash.py's, every fault kind test_faults.py's.
@pytest.mark.slow
@pytest.mark.only_on("dynamodb-local")
async def test_every_strategy_keeps_its_guarantees_in_a_short_soak(aioseq_endpoint: str) -> None:
    lines: list[str] = []
    parameters = {
        "strategies": list(DEFAULT_STRATEGIES),
        "processes": 2,
        "concurrency": 10,
        "count": 60,
        "faults": dict(DEFAULT_FAULTS),
        "seed": 5,
        "read_timeout_secs": 2.0,
        "kill_at": 0.5,
        "cancel_rate": 0.05,
    }
    results = await run_soak(aioseq_endpoint, **parameters, out=lines.append)  # type: ignore[arg-type]
    assert [s.report.strategy for s in results] == list(DEFAULT_STRATEGIES)
    for soak in results:
        report = soak.report
        assert report.ok, (report.strategy, report.problems)
        assert report.duplicates == report.holes == report.stored_twice == 0
        assert soak.killed_after is not None and soak.killed_after >= 30
        # Every call was recorded but those the kill interrupted (at most one per task).
        assert 2 * 60 - 10 <= report.calls <= 2 * 60
        assert report.numbers == report.calls - sum(report.failed.values())
    assert sum(sum(s.injected.values()) for s in results) > 0
    assert lines[-1] == "all guarantees held"
    assert lines[1].startswith("faults (seed 5): 10.0% of requests: answers lost after")
    assert any(line.startswith("numbers checked: ") for line in lines)
    assert any(line.startswith("items stored twice: 0") for line in lines)
    assert_prints_again(aioseq_endpoint, parameters, results, lines)


def assert_prints_again(
    endpoint: str, parameters: dict[str, Any], results: list[Soak], lines: list[str]
) -> None:
    """What --out saves prints again line for line (the docs render it)."""
    saved = json.loads(
        json.dumps(
            {
                "endpoint": endpoint,
                "parameters": parameters,
                "results": [soak.to_json() for soak in results],
            }
        )
    )
    assert [Soak.from_json(soak) for soak in saved["results"]] == results
    assert transcript(saved) == lines


# Services wrap every call in a deadline; the writers' queue used to stop a counter under
# them (issue 29). The queue's strategies, grouped (the default) and not, and the atomic
# counter beside them, with faults, a killed process and cancelled callers as above; no
# `delay` faults (a request held past the read timeout holds its writer for that long, which
# the soak's default bound allows for; here the bound is the 2 s).
@pytest.mark.slow
@pytest.mark.only_on("dynamodb-local")
async def test_under_deadlines_every_counter_keeps_moving(aioseq_endpoint: str) -> None:
    lines: list[str] = []
    strategies = ["atomic", "optimistic", "optimistic+no-group", "transactional"]
    parameters = {
        "strategies": strategies,
        "processes": 2,
        "concurrency": 4,
        "count": 40,
        "faults": {kind: rate for kind, rate in DEFAULT_FAULTS.items() if kind != "delay"},
        "seed": 7,
        "read_timeout_secs": 2.0,
        "kill_at": 0.5,
        "cancel_rate": 0.05,
        "deadline_secs": 0.1,
        "max_standstill_secs": 2.0,
    }
    results = await run_soak(aioseq_endpoint, **parameters, out=lines.append)  # type: ignore[arg-type]
    assert [s.report.strategy for s in results] == strategies
    for soak in results:
        report, deadlines = soak.report, soak.deadlines
        assert deadlines is not None
        assert soak.ok, (report.strategy, soak.problems)
        assert deadlines.timed_out == report.failed["TimeoutError"]
        assert deadlines.standstill_secs <= 2.0
        # Entries may be left by the killed process only: every other one closed cleanly.
        assert set(deadlines.entries_left) <= {VICTIM}, deadlines.entries_left
        assert report.duplicates == report.holes == report.stored_twice == 0
    assert lines[-1] == "all guarantees held, every counter kept moving"
    assert "every call under a 0.1 s deadline (asyncio.wait_for)" in lines[0]
    assert any(line.startswith("longest standstill: ") for line in lines)
    assert_prints_again(aioseq_endpoint, parameters, results, lines)


def _call(started: float, ended: float, served: bool = True) -> Call:
    numbers = range(1, 2) if served else None
    return Call("atomic", "k", "p1", 0, started, ended, numbers, None if served else "TimeoutError")


def test_a_standstill_counts_only_while_callers_wait() -> None:
    assert longest_standstill_secs([]) == 0.0
    # Served at 0.1 and 0.3, then timeouts until 1.5: 1.2 s without a completed call.
    calls = [_call(0.0, 0.1), _call(0.0, 0.3), _call(0.3, 0.9, False), _call(0.9, 1.5, False)]
    assert longest_standstill_secs(calls) == pytest.approx(1.2)
    # Nobody calling from 1.5 to 10 (a process waiting for its share) is no standstill.
    assert longest_standstill_secs([*calls, _call(10.0, 10.2)]) == pytest.approx(1.2)
    # A task's own pause between its calls (up to 50 ms) does not end a stretch.
    assert longest_standstill_secs([_call(0.0, 1.0, False), _call(1.01, 2.0)]) == pytest.approx(2.0)


def test_only_a_killed_process_may_leave_queue_entries() -> None:
    moving = Deadlines(0.1, 3, 0.4, 2.0, {"p0": 1}, killed="p0")
    assert moving.problems == [] and moving.entries() == "1 (1 of the killed p0)"
    stuck = Deadlines(0.1, 3, 2.5, 2.0, {"p0": 1, "p1": 2}, killed=None)
    assert stuck.problems == [
        "the counter stood still for 2.50 s (bound 2 s)",
        "3 queue entries left after a clean close (p0 1, p1 2)",
    ]


def test_strategy_names() -> None:
    assert parse_strategy("sort-key") == ("sort-key", None)
    assert parse_strategy("sort-key+no-group") == ("sort-key", False)
    assert parse_strategy("sort-key --no-group") == ("sort-key", False)
    assert parse_strategy("optimistic+group") == ("optimistic", True)
    for bad in ("atomic+no-group", "allocator+group", "sequence", "optimistic+nogroup"):
        with pytest.raises(ValueError):
            parse_strategy(bad)


def test_the_default_schedule_loses_at_least_five_percent_of_answers() -> None:
    assert DEFAULT_FAULTS["response-lost"] + DEFAULT_FAULTS["delay"] >= 0.05
    for kinds in (("internal-error", "http-500"), ("reset",), ("throttling",)):
        assert all(DEFAULT_FAULTS[k] > 0 for k in kinds)
    text = describe_faults(DEFAULT_FAULTS, read_timeout_secs=5)
    assert text.startswith("10.0% of requests: answers lost after the server applied")
    assert "delay 1.0% past the 5 s read timeout" in text


def test_the_command_refuses_bad_arguments(capsys: pytest.CaptureFixture[str]) -> None:
    for argv in (
        ["--strategies", "atomic,counter"],
        ["--faults", "response-lost"],
        ["--faults", "lost=0.1"],
        ["--faults", "reset=0.1", "--fault-rate", "0.1"],
        ["--max-standstill-secs", "1"],
    ):
        with pytest.raises(SystemExit) as exited:
            main([*argv, "--endpoint-url", "http://127.0.0.1:9"])
        assert exited.value.code == 2, argv
    assert "unknown strategy 'counter'" in capsys.readouterr().err
