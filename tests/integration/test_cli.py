"""The ``aioseq`` command, driven as scripts drive it: in subprocesses (its output, exit status
and logging as a script sees them). A check on the counter's state after a run, and the matrix of
options whose point is the parsing, run in this process (``run_cli``: the same parsing, commands,
messages and exit status, without a Python start-up of about a second of CPU each)."""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from checks import aioseq, assert_distinct, assert_exactly, cli_table, run_cli
from racer import parse_variant, printed_by_key

from aioseq import DynamoStore, TableSpec
from aioseq._strategy_table import STRATEGIES, STRATEGY_NAMES, strategy_named


@pytest.fixture
def table(aioseq_endpoint: str) -> str:
    return cli_table(aioseq_endpoint)


def test_create_table_twice_succeeds(aioseq_endpoint: str, table: str) -> None:
    again = aioseq("create-table", "--endpoint-url", aioseq_endpoint, "--table", table)
    assert again.returncode == 0, again.stderr
    assert again.stdout == ""


@pytest.mark.only_on("dynamodb-local")  # the CLI's own contract: one server is enough
@pytest.mark.parametrize("strategy", STRATEGY_NAMES)
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
    current = run_cli(
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


@pytest.mark.only_on("dynamodb-local")  # the CLI's own contract: one server is enough
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
    current = run_cli("--endpoint-url", aioseq_endpoint, "--table", table, "current", "k")
    assert (current.returncode, current.stdout) == (1, "")  # no counter item was made
    assert "CounterNotFound" in current.stderr


@pytest.mark.only_on("dynamodb-local")  # the CLI's own contract: one server is enough
@pytest.mark.parametrize("strategy", [s.name for s in STRATEGIES if s.grouped])
@pytest.mark.parametrize("flag", ["--group", "--no-group"])
def test_group_and_no_group_are_both_accepted(
    aioseq_endpoint: str, table: str, strategy: str, flag: str
) -> None:
    run = run_cli(
        "--endpoint-url", aioseq_endpoint, "--table", table,
        "next", "k", "--strategy", strategy, "--count", "6", "--concurrency", "3", flag,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert_exactly(map(int, run.stdout.split()), 1, 6)


@pytest.mark.only_on("dynamodb-local")  # the CLI's own contract: one server is enough
@pytest.mark.parametrize("strategy", STRATEGY_NAMES)
def test_current_of_a_counter_never_used_fails(
    aioseq_endpoint: str, table: str, strategy: str
) -> None:
    run = run_cli(
        "--endpoint-url", aioseq_endpoint, "--table", table,
        "current", "never-used", "--strategy", strategy,
    )  # fmt: skip
    assert (run.returncode, run.stdout) == (1, "")
    assert run.stderr.count("\n") == 1
    assert "CounterNotFound" in run.stderr and "'never-used'" in run.stderr


@pytest.mark.only_on("dynamodb-local")  # the CLI's own contract: one server is enough
def test_a_region_scoped_key_without_regions_names_the_scope_to_pass(
    aioseq_endpoint: str, table: str
) -> None:
    regions = "us-east-1,eu-west-1"
    scoped = run_cli(
        "--endpoint-url", aioseq_endpoint, "--table", table, "--region", "us-east-1",
        "--regions", regions, "next", "k", "--count", "2",
    )  # fmt: skip
    assert (scoped.returncode, scoped.stdout) == (0, "1\n3\n"), scoped.stderr
    for command in (["current", "k"], ["describe", "k"], ["set", "k", "10"]):
        run = run_cli(
            "--endpoint-url", aioseq_endpoint, "--table", table, "--region", "us-east-1",
            *command,
        )  # fmt: skip
        assert (run.returncode, run.stdout) == (1, ""), command
        assert "NumberingMismatch" in run.stderr, run.stderr
        assert f"--regions {regions}" in run.stderr, run.stderr
    current = run_cli(
        "--endpoint-url", aioseq_endpoint, "--table", table, "--region", "us-east-1",
        "--regions", regions, "current", "k",
    )  # fmt: skip
    assert (current.returncode, current.stdout) == (0, "3\n"), current.stderr


def test_an_unreachable_endpoint_fails_fast_in_one_line_naming_it() -> None:
    run = aioseq("next", "k", "--endpoint-url", "http://127.0.0.1:1", timeout=30)
    assert (run.returncode, run.stdout) == (1, "")
    assert run.stderr.count("\n") == 1 and "Traceback" not in run.stderr
    assert "http://127.0.0.1:1" in run.stderr
    assert "EndpointUnreachable" in run.stderr or "EndpointDown" in run.stderr  # (its subclass)


def _without_aws(**extra: str) -> dict[str, str]:
    """This environment without any AWS setting (no profile, no instance metadata)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update(
        AWS_CONFIG_FILE=os.devnull,
        AWS_SHARED_CREDENTIALS_FILE=os.devnull,
        AWS_EC2_METADATA_DISABLED="true",
        **extra,
    )
    return env


@pytest.mark.parametrize(
    ("extra", "message"),
    [({}, "no AWS region"), ({"AWS_REGION": "eu-west-1"}, "no AWS credentials")],
)
def test_missing_region_or_credentials_is_one_line(extra: dict[str, str], message: str) -> None:
    run = subprocess.run(
        [sys.executable, "-m", "aioseq", "next", "k"],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
        env=_without_aws(**extra),
    )
    assert (run.returncode, run.stdout) == (1, "")
    assert run.stderr.count("\n") == 1 and message in run.stderr
    assert "ConfigurationError" in run.stderr and "Traceback" not in run.stderr


def test_verbose_shows_the_traceback() -> None:
    run = aioseq("-v", "next", "k", "--endpoint-url", "127.0.0.1:8000")
    assert run.returncode == 1
    assert "Traceback" in run.stderr and "must be an http:// or https:// URL" in run.stderr


def test_unknown_strategy_is_a_usage_error() -> None:
    run = aioseq("next", "k", "--strategy", "random")
    assert run.returncode == 2 and "invalid choice" in run.stderr


#: Each strategy as ``aioseq next`` runs it by default (grouped where it groups). Group commit
#: off, processes racing on one counter are test_crash.py's (three processes, one killed, for
#: each grouped strategy): here they cost 12 s of the suite for no interleaving of their own.
DEFAULTS = list(STRATEGY_NAMES)
RACER = Path(__file__).resolve().parents[1] / "racer.py"


@pytest.mark.slow
@pytest.mark.only_on("dynamodb-local")  # processes racing: on the server that serves them at once
def test_four_processes_at_once_on_one_counter_of_each_strategy(
    aioseq_endpoint: str, table: str, tmp_path: Path
) -> None:
    """Four processes take numbers from one counter at once, for each strategy in turn: what
    ``aioseq next`` runs (``run_workload``, in ``tests/racer.py``), four Python start-ups in
    all instead of four per strategy; every process opens its store for the strategy, then
    all start together."""
    # 25 tasks a process, all 100 started together, then 4 numbers each: the race is at the
    # start (more tasks and numbers a process added CPU, not interleavings).
    count, concurrency = 100, 25
    variants = DEFAULTS
    races = {f"shared-{variant}": variant for variant in variants}
    command = [
        sys.executable, str(RACER), aioseq_endpoint, table, str(count), str(concurrency),
        *(f"{key}={variant}" for key, variant in races.items()),
    ]  # fmt: skip
    errors = [(tmp_path / f"p{i}.stderr").open("w+") for i in range(4)]  # never a full pipe
    processes = [
        subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr, text=True
        )
        for stderr in errors
    ]
    outputs = ["" for _ in processes]
    try:
        for key in races:
            for i, process in enumerate(processes):  # each has opened its store for key
                assert process.stdout is not None
                while (line := process.stdout.readline()) != f"ready {key}\n":
                    assert line, (process.wait(60), errors[i].seek(0), errors[i].read())
                    outputs[i] += line
            for process in processes:  # then all start at once
                assert process.stdin is not None
                process.stdin.write("go\n")
                process.stdin.flush()
        ends = [p.communicate(timeout=600) for p in processes]
    finally:
        for process in processes:
            if process.poll() is None:
                process.kill()
                process.wait()
    for i, (process, (stdout, _)) in enumerate(zip(processes, ends, strict=True)):
        errors[i].seek(0)
        assert process.returncode == 0, errors[i].read()
        errors[i].close()
        outputs[i] += stdout
    printed = [printed_by_key(output) for output in outputs]
    for key, variant in races.items():
        numbers = [int(n) for p in printed for n in p.get(key, "").split()]
        assert len(numbers) == 4 * count, variant
        strategy, _ = parse_variant(variant)
        if strategy_named(strategy).gapless:
            assert_exactly(numbers, 1, 4 * count)
            stored = asyncio.run(_stored(aioseq_endpoint, table, key))
            assert_exactly(stored, 1, 4 * count)
        else:
            assert_distinct(numbers)


async def _stored(endpoint: str, table: str, key: str) -> list[int]:
    from aioseq._workload import stored_numbers

    async with DynamoStore.open(table=TableSpec(name=table), endpoint_url=endpoint) as store:
        return await stored_numbers(store, key)


@pytest.mark.slow
def test_demo_against_a_server_checks_every_strategy(aioseq_endpoint: str, table: str) -> None:
    run = aioseq(
        "demo", "--endpoint-url", aioseq_endpoint, "--table", table,
        "--count", "40", "--concurrency", "8",
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    for strategy in STRATEGY_NAMES:
        assert re.search(rf"^{strategy} +40 .* ok$", run.stdout, re.MULTILINE), run.stdout
    assert "all checks passed" in run.stdout


@pytest.mark.only_on("dynamodb-local")  # the CLI's own contract: one server is enough
@pytest.mark.parametrize("args", [["--count", "-1"], ["--concurrency", "0"], ["--instances", "0"]])
def test_demo_refuses_bad_arguments_before_it_touches_the_table(
    aioseq_endpoint: str, args: list[str]
) -> None:
    name = f"aioseq-cli-{uuid.uuid4().hex[:8]}"
    run = aioseq("demo", "--endpoint-url", aioseq_endpoint, "--table", name, *args)
    assert run.returncode == 1 and "ConfigurationError" in run.stderr
    assert asyncio.run(_table_exists(aioseq_endpoint, name)) is False


@pytest.mark.only_on("dynamodb-local")  # the CLI's own contract: one server is enough
@pytest.mark.parametrize("keep", [False, True])
def test_demo_removes_what_it_wrote_unless_asked_to_keep_it(
    aioseq_endpoint: str, table: str, keep: bool
) -> None:
    run = aioseq(
        "demo", "--endpoint-url", aioseq_endpoint, "--table", table,
        "--count", "10", "--concurrency", "2", *(["--keep"] if keep else []),
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    items = asyncio.run(_item_count(aioseq_endpoint, table))
    assert (items > 0) if keep else (items == 0)


async def _table_exists(endpoint: str, name: str) -> bool:
    from aioseq import TableNotFound

    async with DynamoStore.open(table=TableSpec(name=name), endpoint_url=endpoint) as store:
        try:
            await store.check_table()
        except TableNotFound:
            return False
        return True


async def _item_count(endpoint: str, name: str) -> int:
    from checks import item_count

    async with DynamoStore.open(table=TableSpec(name=name), endpoint_url=endpoint) as store:
        return await item_count(store)


@pytest.mark.slow
def test_demo_starts_its_own_server_when_no_endpoint_is_configured() -> None:
    # Under -X dev, as the docs recommend: aiohttp's strict parser then refuses an answer with
    # a header twice (http.server's Server beside moto's, once).
    run = aioseq("demo", "--count", "20", "--concurrency", "4", python=["-X", "dev"])
    assert run.returncode == 0, run.stderr
    assert "embedded moto server" in run.stdout
    assert "all checks passed" in run.stdout


@pytest.mark.only_on("moto")  # the CLI's logging, not the server
def test_verbose_logs_show_no_credential(
    aioseq_endpoint: str, table: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """At -vv botocore logs each request's signed headers: the access key id (in
    ``Authorization``) and the session token are masked."""
    key_id, secret, token = (
        "AKIAIOSFODNN7EXAMPLE",
        "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "FwoGZXIvYXdzEXAMPLE",
    )
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", key_id)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", secret)
    monkeypatch.setenv("AWS_SESSION_TOKEN", token)
    run = aioseq("--endpoint-url", aioseq_endpoint, "--table", table, "-vv", "next", "k")
    assert run.returncode == 0, run.stderr
    assert "Authorization" in run.stderr and "<redacted>" in run.stderr  # it did log them
    for secret_text in (key_id, secret, token):
        assert secret_text not in run.stderr
