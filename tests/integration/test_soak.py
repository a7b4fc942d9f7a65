"""The soak (``python -m verification.soak``), short: every strategy with its defaults, two
processes, one killed mid-run, the default fault schedule, some callers cancelled, every number
and every stored item checked."""

from __future__ import annotations

import json

import pytest

from verification.soak import (
    DEFAULT_FAULTS,
    DEFAULT_STRATEGIES,
    describe_faults,
    main,
    parse_strategy,
    run_soak,
)
from verification.soak_report import Soak, transcript


# The soak tool's end-to-end run, on the server it targets (make soak). On moto, a process
# killed mid-run through faults is test_crash.py's, every fault kind test_faults.py's.
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
    # What --out saves (soak.json) prints again line for line: the docs render it.
    saved = json.loads(
        json.dumps(
            {
                "endpoint": aioseq_endpoint,
                "parameters": parameters,
                "results": [soak.to_json() for soak in results],
            }
        )
    )
    assert [Soak.from_json(soak) for soak in saved["results"]] == results
    assert transcript(saved) == lines


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
    ):
        with pytest.raises(SystemExit) as exited:
            main([*argv, "--endpoint-url", "http://127.0.0.1:9"])
        assert exited.value.code == 2, argv
    assert "unknown strategy 'counter'" in capsys.readouterr().err
