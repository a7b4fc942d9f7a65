"""The command outputs shown in README.md and docs/, generated from the code by cog.

Each shown output sits between cog markers in its page, in an HTML comment that says what
produces it::

    <!-- [[[cog import docs_outputs as d; d.shell("ops", "aioseq create-table") ]]] -->
    ```text
    $ aioseq create-table
    table 'aioseq' created
    ```
    <!-- [[[end]]] -->

``make docs-outputs`` rewrites the pages (``cog -r``); ``make docs-outputs-check`` (a step of
CI, ``.ci/run``) runs the same code and fails when a page differs (``cog --check --diff``).
What varies from run to run (timestamps; the demo tables' figures) is masked: when a block's
new output equals the page's once masked, the page's text is kept, so a page changes only when
the output really did. ``DOCS_OUTPUTS_REFRESH=1`` writes every block anew (fresh timings);
``DOCS_OUTPUTS_QUICK=1`` (the check) runs the demos with fewer numbers, all of them masked.

Saved results render from docs/performance/*.json (the benchmarks' tables, the soak's report);
a ``curl`` to an example service is sent to it in this process, over ASGI.

Commands run in this process (``aioseq.cli.main``), stdout and stderr interleaved as a terminal
shows them, against servers started here: a serialized moto server, reset for each session;
DynamoDB Local on 127.0.0.1:8000 for the demo that names it (run under
``scripts/in-loopback-netns``).
"""

from __future__ import annotations

import atexit
import contextlib
import io
import json
import logging
import os
import re
import shlex
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
PERFORMANCE = ROOT / "docs" / "performance"

# What a run changes and the check ignores (applied to the page's block and the new one).
TIMESTAMP = (re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(\+00:00|Z)?"), "<timestamp>")
# A measured table: every figure, and whether the allocator's gaps (allowed) showed at all.
NUMBERS = (re.compile(r"\d[\d,.]*( \(allowed\))?"), "<n>")
SPACING = (re.compile(r"[ \t]+|-{2,}"), " ")  # column widths follow the figures

# argparse wraps its help to the terminal: fix the width, and no colour (Python 3.14).
os.environ["COLUMNS"] = "100"
os.environ["NO_COLOR"] = "1"

_sessions: dict[str, _Session] = {}
_server: Any = None


def _cog() -> Any:
    import cog  # type: ignore[import-not-found]  # the module cog provides while it runs

    return cog


def emit(
    text: str, *, lang: str | None = "text", masks: Sequence[tuple[re.Pattern[str], str]] = ()
) -> None:
    """Write ``text`` as a fenced block (as it is if ``lang`` is None), or keep the page's block
    if it equals the new one once masked."""
    block = f"{text.rstrip()}\n" if lang is None else f"```{lang}\n{text.rstrip()}\n```\n"
    previous = _cog().previous
    if not os.environ.get("DOCS_OUTPUTS_REFRESH") and _masked(previous, masks) == _masked(
        block, masks
    ):
        block = previous
    _cog().out(block)


def _masked(text: str, masks: Sequence[tuple[re.Pattern[str], str]]) -> str:
    for pattern, replacement in masks:
        text = pattern.sub(replacement, text)
    return text


def run_cli(argv: Sequence[str], env: dict[str, str | None] | None = None) -> tuple[str, int]:
    """``aioseq ARGV`` in this process: (stdout and stderr interleaved, exit status), with the
    environment variables of ``env`` set (removed where None) for the call."""
    from aioseq import cli

    captured = io.StringIO()
    for handler in logging.root.handlers[:]:  # main() logs to the stderr of its call: this one
        logging.root.removeHandler(handler)
    saved = {name: os.environ.get(name) for name in env or {}}
    _set_environment(env or {})
    try:
        with contextlib.redirect_stdout(captured), contextlib.redirect_stderr(captured):
            try:
                status = cli.main(list(argv))
            except SystemExit as exc:  # argparse: --help (0), a usage error (2)
                status = exc.code if isinstance(exc.code, int) else 1
    finally:
        _set_environment(saved)
    return captured.getvalue(), status


def _set_environment(values: dict[str, str | None]) -> None:
    for name, value in values.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


def _transcript(commands: str, runner: Callable[[Sequence[str]], tuple[str, int]]) -> str:
    lines = []
    for command in commands.strip().splitlines():
        argv = shlex.split(command)
        assert argv[0] == "aioseq", command
        output, status = runner(argv[1:])
        lines.append(f"$ {command.strip()}")
        lines.extend(output.rstrip("\n").splitlines())
        if status:
            lines.append(f"[exit {status}]")
    return "\n".join(lines)


# -- the command line's help ------------------------------------------------------------------


def help_text(*commands: str) -> None:
    """``aioseq [COMMAND] --help`` for each of ``commands`` ("" for the top level)."""
    emit(
        "\n".join(
            _transcript(f"aioseq {command} --help".replace("  ", " "), run_cli)
            for command in commands
        )
    )


def command_helps() -> None:
    """``aioseq COMMAND --help`` for every command, each in a collapsed block."""
    import argparse

    from aioseq import cli

    parser = cli._parser()
    commands = next(
        action.choices
        for action in parser._actions
        if isinstance(action, argparse._SubParsersAction)
    )
    blocks = []
    for command in commands:
        text = _transcript(f"aioseq {command} --help", run_cli)
        body = "\n".join(f"    {line}".rstrip() for line in ["```text", *text.splitlines(), "```"])
        blocks.append(f'??? note "`aioseq {command}`"\n\n{body}\n')
    emit("\n".join(blocks), lang=None)


def iam_policy(arguments: str) -> None:
    """``aioseq iam-policy ARGUMENTS`` (sends no request)."""
    emit(_transcript(f"aioseq iam-policy {arguments}", run_cli))


def iam_document(**options: Any) -> None:
    """``aioseq.iam.policy(**options)`` as JSON, the table's ARN with REGION and ACCOUNT."""
    from aioseq import iam

    arn = "arn:aws:dynamodb:REGION:ACCOUNT:table/aioseq"
    emit(json.dumps(iam.policy([arn], **options), indent=2), lang="json")


# -- sessions against a fresh moto server -----------------------------------------------------


class _Session:
    """A fresh serialized moto server: the one server (in a thread, moto's state is the
    process's), reset when a session begins. A page's sessions run one after the other."""

    def __init__(self) -> None:
        global _server
        if _server is None:
            from aioseq.testing import SerializedMotoServer

            _server = SerializedMotoServer()
            _server.start()
            atexit.register(_server.stop)
        _server.reset()
        url = _server.endpoint_url
        self.env: dict[str, str | None] = {
            "AWS_ENDPOINT_URL": url,
            "AWS_ENDPOINT_URL_DYNAMODB": url,
            "AWS_DEFAULT_REGION": "us-east-1",
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
        }

    def run(self, argv: Sequence[str]) -> tuple[str, int]:
        return run_cli(argv, self.env)


def _session(name: str) -> _Session:
    if name not in _sessions:
        _sessions.clear()  # the server is reset: an earlier session's tables are gone
        _sessions[name] = _Session()
    return _sessions[name]


def shell(session: str, commands: str) -> None:
    """Run ``commands`` (one ``aioseq ...`` a line) in ``session`` and show the transcript."""
    emit(_transcript(commands, _session(session).run), masks=[TIMESTAMP])


def quietly(session: str, commands: str) -> None:
    """Run ``commands`` in ``session`` and show nothing (a step the page describes in words)."""
    _transcript(commands, _session(session).run)


def put_ids(session: str, table: str, attribute: str, ids: range) -> None:
    """Create table ``table`` (partition key ``attribute``, a Number) holding one item per id."""
    import asyncio

    import aiobotocore.session

    env = _session(session).env

    async def put() -> None:
        async with aiobotocore.session.get_session().create_client(
            "dynamodb",
            endpoint_url=env["AWS_ENDPOINT_URL"],
            region_name=env["AWS_DEFAULT_REGION"],
            aws_access_key_id=env["AWS_ACCESS_KEY_ID"],
            aws_secret_access_key=env["AWS_SECRET_ACCESS_KEY"],
        ) as client:
            await client.create_table(
                TableName=table,
                KeySchema=[{"AttributeName": attribute, "KeyType": "HASH"}],
                AttributeDefinitions=[{"AttributeName": attribute, "AttributeType": "N"}],
                BillingMode="PAY_PER_REQUEST",
            )
            numbers = list(ids)
            for start in range(0, len(numbers), 25):  # BatchWriteItem's most
                puts: list[Any] = [
                    {"PutRequest": {"Item": {attribute: {"N": str(n)}}}}
                    for n in numbers[start : start + 25]
                ]
                await client.batch_write_item(RequestItems={table: puts})

    asyncio.run(put())


# -- the demo ---------------------------------------------------------------------------------


def demo(server: str) -> None:
    """``aioseq demo`` on the embedded moto server, or on DynamoDB Local at 127.0.0.1:8000.

    Every figure of its table is masked, so ``DOCS_OUTPUTS_QUICK=1`` (the check) runs it with
    100 numbers per strategy instead of 500: the rows, columns and verdicts are what it checks.
    """
    quick = ["--count", "100"] if os.environ.get("DOCS_OUTPUTS_QUICK") else []
    if server == "moto":  # the embedded server, whatever endpoint the environment names
        unset: dict[str, str | None] = {"AWS_ENDPOINT_URL": None, "AWS_ENDPOINT_URL_DYNAMODB": None}
        output, status = run_cli(["demo", *quick], unset)
    else:
        from aioseq.testing.dynamodb_local import DynamoDBLocal

        with DynamoDBLocal(port=8000) as local:
            output, status = run_cli(
                ["--endpoint-url", local.endpoint_url, "demo", *quick],
                {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"},
            )
    if status:
        raise RuntimeError(f"aioseq demo on {server} exited {status}:\n{output}")
    emit(output, masks=[NUMBERS, SPACING])


# -- benchmark tables, rendered from their JSON results ---------------------------------------


def _report(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((PERFORMANCE / f"{name}.json").read_text())
    return loaded


def contention_table() -> None:
    """Numbers/s by strategy and tasks, from docs/performance/contention.json."""
    from benchmarks import contention
    from benchmarks.row import Row

    rows = [Row(**row) for row in _report("contention")["rows"]]
    emit(contention._tabulate(contention.summary_rows(rows), "github"), lang=None)


def many_keys_targets(name: str = "many_keys", *, measured: bool = False) -> None:
    """The many-keys targets, from docs/performance/NAME.json; with ``measured``, when, where
    and how the run was measured first."""
    from benchmarks import many_keys

    report = _report(name)
    table = many_keys._tabulate(many_keys.target_table(report), "github")
    emit(f"{_measured(report)}\n{table}" if measured else table, lang=None)


def fairness_targets() -> None:
    """The fair group commit targets, from docs/performance/fairness.json."""
    from benchmarks import fairness

    emit(fairness.targets_table(_report("fairness")), lang=None)


def liveness_table() -> None:
    """The writers' queue's liveness, now and before issue 29, from
    docs/performance/liveness.json and liveness-before.json."""
    from benchmarks import liveness

    now, before = _report("liveness"), _report("liveness-before")
    emit(
        f"Now: `{now['command']}`, {now['date']}, {now['load_at_start']} at the start."
        f" Before: {before['note']}, {before['date']}.\n\n{liveness.compare_table(before, now)}",
        lang=None,
    )


def outage_table() -> None:
    """DynamoDB unreachable, refused then silent, from docs/performance/outage.json."""
    from benchmarks import outage

    emit(outage.markdown(_report("outage")), lang=None)


def hard_days_table() -> None:
    """The audit's time and the runway's cost, from docs/performance/hard_days.json."""
    from benchmarks import hard_days

    emit(hard_days.markdown(_report("hard_days")), lang=None)


def partitions_table() -> None:
    """What the item layouts take through the partition budget, from
    docs/performance/partitions.json."""
    from benchmarks import partitions

    emit(partitions.markdown(_report("partitions")), lang=None)


def global_tables_table() -> None:
    """What sharing counters across Regions costs, from docs/performance/global_tables.json."""
    from benchmarks import global_tables

    emit(global_tables.markdown(_report("global_tables")), lang=None)


def service_table() -> None:
    """The example services over HTTP, from docs/performance/service.json."""
    from benchmarks import service

    emit(service.markdown(_report("service")), lang=None)


def partitions_sentence() -> None:
    """One sentence of the layouts' figures (README), from docs/performance/partitions.json."""
    report = _report("partitions")
    by = {(r["shards"], r["strategy"], r["budget"]): r["puts_per_sec"] for r in report["layouts"]}
    tasks = report["settings"]["tasks"]
    emit(
        f"the transactional counter with its items beside the counter item made"
        f" {by[(None, 'transactional', 'partition')]:,} puts/s at {tasks} tasks, against"
        f" {by[(32, 'transactional', 'partition')]:,} with them over 32 shards, and"
        f" {by[(None, 'transactional', 'item')]:,} beside the counter item when the model"
        " budgets each item apart, as no AWS table does (`make bench-partitions`,"
        f" {report['date'][:10]}).",
        lang=None,
    )


def guard_table() -> None:
    """The hot path's guarded figures, from docs/performance/guard.json."""
    from benchmarks import guard

    report = _report("guard")
    load = ", ".join(f"{x:g}" for x in report["load_average"][0])
    emit(
        f"`{report['command']}`, {report['date']}, {report['where']}; load average {load} at"
        f" the start, {report['wall_secs']:.0f} s.\n\n{guard.guard_table(report)}",
        lang=None,
    )


def parts_table() -> None:
    """What each part of the atomic counter's request costs, from the guard's saved run."""
    from benchmarks import guard

    emit(guard.parts_table(_report("guard")), lang=None)


def hot_path_table() -> None:
    """What each piece of the allocator's fast path costs, from docs/performance/hot_path.json."""
    from benchmarks import hot_path

    report = _report("hot_path")
    load = ", ".join(f"{x:g}" for x in report["load_average"])
    emit(
        f"`{report['command']} --out docs/performance`, {report['date']}, load average {load}:"
        f"\n\n{hot_path.table(report)}",
        lang=None,
    )


# -- the soak, rendered from its saved report ---------------------------------------------------


def _measured(report: dict[str, Any]) -> str:
    """When, where and how a saved report was measured, in a sentence, then its command."""
    machine = report["machine"]
    load = ", ".join(f"{x:g}" for x in machine["load_average"])
    command = report["command"]
    if "--server dynamodb-local" in command and command.startswith("python "):
        command = f"scripts/in-loopback-netns .venv/bin/{command}"
    return (
        f"Measured {report['date']} on {machine['cpu']} ({machine['cores']} cores, load average "
        f"{load} at the start), {machine['python']}, aioseq {report['versions']['aioseq']}, "
        f"against {report['server']}; {report['wall_secs']:.0f} s in all. Command:\n\n"
        f"    {command}\n"
    )


def soak_report(name: str = "soak") -> None:
    """The soak saved in docs/performance/NAME.json (``python -m verification.soak --out``):
    when and how it ran, then its output as it printed it (the server's port shown as PORT)."""
    from verification.soak_report import transcript

    report = _report(name)
    endpoint = re.sub(r":\d+$", ":PORT", report["endpoint"])
    lines = transcript(report, endpoint_url=endpoint)
    emit(f"{_measured(report)}\n```text\n" + "\n".join(lines) + "\n```", lang=None)


def soak_answers_lost(name: str = "soak") -> None:
    """A sentence: the answers lost after their writes applied, for the strategies that resolve
    them, in the soak saved in docs/performance/NAME.json."""
    from aioseq.testing.fault_proxy import APPLIED_KINDS
    from verification.soak_report import Soak

    soaks = [Soak.from_json(result) for result in _report(name)["results"]]
    lost = {
        s.report.strategy: sum(s.injected[k] for k in APPLIED_KINDS)
        for s in soaks
        if s.report.strategy in ("optimistic", "sort-key", "transactional")
    }
    if list(lost) != ["optimistic", "sort-key", "transactional"]:
        raise RuntimeError(f"{name}.json: expected the optimistic, sort-key and transactional rows")
    broken = sum(s.report.duplicates + s.report.stored_twice + s.report.holes for s in soaks)
    if broken or not all(s.report.ok for s in soaks):
        raise RuntimeError(f"{name}.json: a guarantee broke; the page says none did")
    a, b, c = lost.values()
    emit(
        "No duplicate, no item stored twice, no hole. The optimistic counter, the sort-key "
        f"strategy and the transactional strategy had {a}, {b} and {c} answers lost after "
        "their writes applied, and not one number was lost or stored twice for it: every gap "
        "there is a cancelled caller (a cancelled `put` whose commit was under way stores its "
        'item: "unacknowledged") or the killed process.',
        lang=None,
    )


# -- a request to an example service ----------------------------------------------------------


def curl(commands: str, *, status: int | Sequence[int], app: str = "fastapi") -> None:
    """``commands`` (``curl`` lines, one per line) sent in turn to the example service ``app``
    (examples/, run in this process over ASGI with its lifespan, on a fresh moto server,
    creating its table), and what curl prints: each response's body. A long command is shown
    wrapped before its ``-d`` (and an ``Idempotency-Key`` header); the responses must have
    ``status`` (one for all, or one each), or generation fails."""
    import asyncio

    lines = [line.strip() for line in commands.strip().splitlines() if line.strip()]
    statuses = [status] * len(lines) if isinstance(status, int) else list(status)
    assert len(statuses) == len(lines), commands
    requests = [_curl_request(line) for line in lines]
    _sessions.pop("curl", None)  # a fresh server for each transcript shown: the first order
    env = {**_session("curl").env, "AIOSEQ_CREATE_TABLE": "1", "AIOSEQ_TABLE": None}
    saved = {name: os.environ.get(name) for name in env}
    _set_environment(env)
    try:
        responses = asyncio.run(_asgi_requests(app, requests))
    finally:
        _set_environment(saved)
    shown = []
    for line, response, wanted in zip(lines, responses, statuses, strict=True):
        if response.status_code != wanted:
            raise RuntimeError(f"{line}: status {response.status_code}, not {wanted}")
        if len(line) > 90:
            line = line.replace(" -H 'Idempotency-Key", " \\\n       -H 'Idempotency-Key", 1)
            line = line.replace(" -d ", " \\\n       -d ", 1)
        shown.append(f"$ {line}\n{response.text}")
    emit("\n".join(shown))


def _curl_request(command: str) -> tuple[str, str, dict[str, str], str | None]:
    """A ``curl`` command line as (method, URL, headers, body)."""
    argv = shlex.split(command)
    assert argv[0] == "curl", command
    method, headers, data, url = None, {}, None, None
    words = iter(argv[1:])
    for word in words:
        if word == "-X":
            method = next(words)
        elif word == "-H":
            name, _, value = next(words).partition(":")
            headers[name.strip()] = value.strip()
        elif word == "-d":
            data = next(words)
        else:
            url = word if "://" in word else f"http://{word}"
    assert url is not None, command
    return method or ("POST" if data else "GET"), url, headers, data


async def _asgi_requests(
    app: str, requests: Sequence[tuple[str, str, dict[str, str], str | None]]
) -> list[Any]:
    import httpx
    from asgi_lifespan import LifespanManager

    if app != "fastapi":
        raise ValueError(f"no ASGI example service {app!r}")
    from examples.fastapi_app import app as asgi_app

    async with LifespanManager(asgi_app) as running:  # the lifespan, as uvicorn runs it
        transport = httpx.ASGITransport(app=running.app)
        async with httpx.AsyncClient(transport=transport) as client:
            return [
                await client.request(method, url, headers=headers, content=data)
                for method, url, headers, data in requests
            ]
