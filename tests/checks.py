"""Assertions and raw-table helpers shared by the tests (they talk to the server directly, so
they can see what aioseq wrote, or make a counter item aioseq would never make)."""

from __future__ import annotations

import asyncio
import contextlib
import copy
import io
import subprocess
import sys
import uuid
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import Any

from aioseq import DynamoStore
from aioseq.clock import LoopClock as _LoopClock


def assert_distinct(numbers: Iterable[int]) -> list[int]:
    """No number twice; returns the numbers sorted."""
    seen = sorted(numbers)
    duplicates = sorted({n for i, n in enumerate(seen) if i and seen[i - 1] == n})
    assert not duplicates, f"duplicates: {duplicates[:10]}"
    return seen


def assert_exactly(numbers: Iterable[int], first: int, last: int) -> None:
    """The numbers are exactly first..last, each once."""
    seen = assert_distinct(numbers)
    assert seen == list(range(first, last + 1)), f"not {first}..{last}: {seen[:5]}...{seen[-5:]}"


async def until(
    condition: Callable[[], bool | Awaitable[bool]], *, timeout_secs: float = 30.0
) -> None:
    """Wait until ``condition()`` holds (checked every few milliseconds; an async one is
    awaited), failing after ``timeout_secs``: a test waits for what it needs, not a guessed
    time."""

    async def poll() -> None:
        while True:
            held = condition()
            if not isinstance(held, bool):
                held = await held
            if held:
                return
            await asyncio.sleep(0.005)

    try:
        await asyncio.wait_for(poll(), timeout_secs)
    except asyncio.TimeoutError:
        raise AssertionError(f"still not true after {timeout_secs} s: {condition}") from None


async def put_counter_value(store: DynamoStore, key: str, value: dict[str, Any]) -> None:
    """Write a counter item whose value attribute is ``value`` (an AttributeValue)."""
    item = {**store.counter_item_key(key), store.table.value_attribute: value}
    await store.send_once("put_item", TableName=store.table.name, Item=item)


async def counter_item(store: DynamoStore, key: str) -> dict[str, Any] | None:
    response = await store.send_once(
        "get_item",
        TableName=store.table.name,
        Key=store.counter_item_key(key),
        ConsistentRead=True,
    )
    item: dict[str, Any] | None = response.get("Item")
    return item


async def item_count(store: DynamoStore) -> int:
    """How many items the table holds (a Scan; test tables are small)."""
    response = await store.send_once("scan", TableName=store.table.name, Select="COUNT")
    return int(response["Count"])


def record_requests(store: DynamoStore) -> list[tuple[str, dict[str, Any]]]:
    """Record every request sent through the store's client from now on, as ``(operation,
    parameters)`` (botocore's ``before-parameter-build`` event, before serialization)."""
    sent: list[tuple[str, dict[str, Any]]] = []

    def record(params: dict[str, Any], model: Any, **kwargs: Any) -> None:
        sent.append((model.name, copy.deepcopy(params)))

    store.client.meta.events.register("before-parameter-build.dynamodb", record)
    return sent


def aioseq(
    *args: str, timeout: float = 300, python: Sequence[str] = ()
) -> subprocess.CompletedProcess[str]:
    """The ``aioseq`` command as a script runs it (``python -m aioseq``, with the interpreter
    options ``python``), its output captured."""
    return subprocess.run(
        [sys.executable, *python, "-m", "aioseq", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    """The ``aioseq`` command run in this process (``aioseq.cli.main``), its output captured as
    :func:`aioseq` captures it: the same parsing, commands, messages and exit status, without
    a Python start-up per call (about a second of CPU). ``tests/integration/test_cli.py``
    drives the script itself in subprocesses."""
    from aioseq import cli

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = cli.main(list(args))
        except SystemExit as exc:  # argparse: a usage error (2), or --help/--version (0)
            code = exc.code if isinstance(exc.code, int) else 1
    return subprocess.CompletedProcess(["aioseq", *args], code, out.getvalue(), err.getvalue())


def cli_table(endpoint: str) -> str:
    """A fresh table made with ``aioseq create-table`` on ``endpoint``; returns its name."""
    name = f"aioseq-cli-{uuid.uuid4().hex[:8]}"
    created = run_cli("--endpoint-url", endpoint, "--table", name, "create-table")
    assert created.returncode == 0, created.stderr
    return name


class Clock:
    """A clock that stands still until the test moves it (``clock.now += secs``): pass it
    where code reads ``time.monotonic``."""

    def __init__(self, now: float = 0.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


class LoopClock:
    """The running event loop's clock, moved forward by hand (aiolimiter's ``MockLoopTime``):
    a timer (a batch window, a backoff) comes due when the test says so, however slowly the
    machine runs. Real time still passes, so network timeouts behave as usual."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._real = loop.time
        self.offset_secs = 0.0

    def time(self) -> float:
        return self._real() + self.offset_secs

    def advance(self, secs: float) -> None:
        self.offset_secs += secs


class SleepHook(_LoopClock):
    """The loop's clock whose sleeps run ``on_sleep(secs)`` instead of waiting, one at a time
    (a backoff and a queue's grace may sleep together): a rival's writes, or a caller
    leaving, during a backoff."""

    def __init__(self, on_sleep: Callable[[float], Awaitable[None]]) -> None:
        self._on_sleep = on_sleep
        self._one_at_a_time = asyncio.Lock()

    async def sleep(self, secs: float) -> None:
        async with self._one_at_a_time:
            await self._on_sleep(secs)
