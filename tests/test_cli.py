"""The ``aioseq`` command, driven as scripts drive it: in subprocesses."""

from __future__ import annotations

import asyncio
import re
import subprocess
import sys
import uuid

import pytest
from checks import assert_distinct, assert_exactly

from aioseq import DynamoStore, TableSpec
from aioseq.workload import GAPLESS_STRATEGIES, GROUPED_STRATEGIES, STRATEGIES


def aioseq(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "aioseq", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )


@pytest.fixture
def table(aioseq_endpoint: str) -> str:
    name = f"aioseq-cli-{uuid.uuid4().hex[:8]}"
    created = aioseq("--endpoint-url", aioseq_endpoint, "--table", name, "create-table")
    assert created.returncode == 0, created.stderr
    return name


def test_create_table_twice_succeeds(aioseq_endpoint: str, table: str) -> None:
    again = aioseq("create-table", "--endpoint-url", aioseq_endpoint, "--table", table)
    assert again.returncode == 0, again.stderr
    assert again.stdout == ""


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_next_prints_only_numbers_one_per_line(
    aioseq_endpoint: str, table: str, strategy: str
) -> None:
    run = aioseq(
        "--endpoint-url", aioseq_endpoint, "--table", table,
        "next", "orders", "--strategy", strategy, "--count", "25", "--concurrency", "5",
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert re.fullmatch(r"(\d+\n)+", run.stdout), run.stdout[:200]
    assert_exactly(map(int, run.stdout.split()), 1, 25)
    current = aioseq(
        "current", "orders", "--strategy", strategy,
        "--endpoint-url", aioseq_endpoint, "--table", table,
    )  # fmt: skip
    assert current.returncode == 0, current.stderr
    assert current.stdout == "25\n"


def test_next_defaults_to_one_atomic_number(aioseq_endpoint: str, table: str) -> None:
    run = aioseq("--endpoint-url", aioseq_endpoint, "--table", table, "next", "k")
    assert (run.returncode, run.stdout) == (0, "1\n"), run.stderr


def test_failures_are_one_line_on_stderr_and_a_nonzero_exit(aioseq_endpoint: str) -> None:
    run = aioseq("--endpoint-url", aioseq_endpoint, "--table", "missing-table", "next", "k")
    assert run.returncode == 1
    assert run.stdout == ""
    assert run.stderr.count("\n") == 1 and "TableNotFound" in run.stderr


@pytest.mark.parametrize(
    "args",
    [
        ["next", "k", "--count", "0"],
        ["next", "", "--count", "1"],
        ["next", "k", "--concurrency", "-3"],
    ],
)
def test_bad_arguments_are_refused_before_any_write(
    aioseq_endpoint: str, table: str, args: list[str]
) -> None:
    run = aioseq("--endpoint-url", aioseq_endpoint, "--table", table, *args)
    assert run.returncode == 1 and "ConfigurationError" in run.stderr
    current = aioseq("--endpoint-url", aioseq_endpoint, "--table", table, "current", "k")
    assert current.stdout == "0\n"


def test_group_for_a_strategy_without_group_mode_is_refused(
    aioseq_endpoint: str, table: str
) -> None:
    run = aioseq("--endpoint-url", aioseq_endpoint, "--table", table, "next", "k", "--group")
    assert run.returncode == 1 and "no group mode" in run.stderr


def test_unknown_strategy_is_a_usage_error() -> None:
    run = aioseq("next", "k", "--strategy", "random")
    assert run.returncode == 2 and "invalid choice" in run.stderr


VARIANTS = [(s, False) for s in STRATEGIES] + [(s, True) for s in sorted(GROUPED_STRATEGIES)]


@pytest.mark.slow
@pytest.mark.parametrize(("strategy", "group"), VARIANTS)
def test_four_processes_at_once_on_one_counter(
    aioseq_endpoint: str, table: str, strategy: str, group: bool, backend: str
) -> None:
    # The figure (4 x 500 with 50 tasks) on DynamoDB Local; smaller on moto, whose
    # transactions copy the whole table each time.
    count, concurrency = (500, 50) if backend == "dynamodb-local" else (100, 20)
    command = [
        sys.executable, "-m", "aioseq", "--endpoint-url", aioseq_endpoint, "--table", table,
        "next", "shared", "--strategy", strategy,
        "--count", str(count), "--concurrency", str(concurrency),
        *(["--group"] if group else []),
    ]  # fmt: skip
    processes = [
        subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for _ in range(4)
    ]
    outputs = [p.communicate(timeout=600) for p in processes]
    for process, (_, stderr) in zip(processes, outputs, strict=True):
        assert process.returncode == 0, stderr
    numbers = [int(n) for stdout, _ in outputs for n in stdout.split()]
    assert len(numbers) == 4 * count
    if strategy in GAPLESS_STRATEGIES:
        assert_exactly(numbers, 1, 4 * count)
        stored = asyncio.run(_stored(aioseq_endpoint, table, "shared"))
        assert_exactly(stored, 1, 4 * count)
    else:
        assert_distinct(numbers)


async def _stored(endpoint: str, table: str, key: str) -> list[int]:
    from aioseq.workload import stored_numbers

    async with DynamoStore.open(table=TableSpec(name=table), endpoint_url=endpoint) as store:
        return await stored_numbers(store, key)


def test_demo_against_a_server_checks_every_strategy(aioseq_endpoint: str, table: str) -> None:
    run = aioseq(
        "demo", "--endpoint-url", aioseq_endpoint, "--table", table,
        "--count", "40", "--concurrency", "8",
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    for strategy in STRATEGIES:
        assert re.search(rf"^{strategy} +40 .* ok$", run.stdout, re.MULTILINE), run.stdout
    assert "all checks passed" in run.stdout


def test_demo_starts_its_own_server_when_no_endpoint_is_configured() -> None:
    run = aioseq("demo", "--count", "20", "--concurrency", "4")
    assert run.returncode == 0, run.stderr
    assert "embedded moto server" in run.stdout
    assert "all checks passed" in run.stdout
