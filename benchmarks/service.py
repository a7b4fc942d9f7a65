"""The example services over real HTTP: what numbered orders cost a service, against the
endpoint a user would otherwise write and against the HTTP stack alone.

Each service runs as a real HTTP server in processes of its own, on a free loopback port,
against the DynamoDB Local this benchmark starts (``AWS_ENDPOINT_URL``, ``AIOSEQ_TABLE``: one
table made here before they start): the FastAPI example under ``uvicorn --workers 1`` and
``--workers 4``, and the aiohttp example in one process (`benchmarks.service_app` adds the
baseline routes to each). A load generator in one more process (aiohttp's client) runs
``--clients`` (128) clients, each sending ``POST`` requests back to back on its own connection
for ``--secs`` (6) seconds, every route in turn, in ``--rounds`` (2) rounds that alternate the
order; each server first takes ``--warmup-secs`` (1) of every route, not counted. Routes:

- ``orders``: the example's ``POST /tenants/{tenant}/orders`` (a transactional counter with
  group commit, one per tenant; the order and its number in one transaction);
  ``orders-key``: the same with ``Idempotency-Key: <uuid4>``, a fresh key per request;
  ``orders-replay``: the same, 10% of the requests sending again an earlier request's key and
  body (the answer must then be the first one's: the same number, no new order).
- ``uuid``: the same handler storing the order under a UUID with one ``PutItem``, no number,
  through the example store's client (``POST /tenants/{tenant}/uuid-orders``).
- ``allocator``: ``store.block_allocator(key).next()`` (``POST /tenants/{tenant}/ids``).
- ``memory``: a counter in the server's memory, no DynamoDB (``.../memory-ids``): the ceiling
  of the HTTP stack.

Each row uses a tenant of its own. Per row: answers per second (201s), p50 and p99 latency (ms),
answers by status and failed requests by error, CPU seconds of the load generator, the server's
processes and DynamoDB Local. After each ``orders*`` row: the numbers of the new orders are
exactly 1..N, the counter's ``current()`` is N, the tenant's order items are N, and ``GET
.../orders?limit=20`` lists N..N-19 (a replayed answer must repeat its first number; it is no
new order); after an ``allocator`` row, its numbers are unique. Written to ``--out``:
``service.json``, ``service.md``, ``service.png``.

    scripts/in-loopback-netns .venv/bin/python -m benchmarks.service --server dynamodb-local
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import multiprocessing
import os
import random
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aioseq import DynamoStore
from benchmarks import _report
from benchmarks.row import fresh_table, percentile_ms

ROOT = Path(__file__).resolve().parent.parent


def _uvicorn(workers: int) -> tuple[str, ...]:
    """uvicorn's arguments for the FastAPI app with ``workers`` worker processes."""
    return (
        *("--factory", "benchmarks.service_app:fastapi_app", "--host", "127.0.0.1"),
        *("--port", "{port}", "--workers", str(workers), "--no-access-log"),
        *("--log-level", "info", "--timeout-graceful-shutdown", "5"),
    )


#: ``--services``: name: (label, command line after ``python -m``; ``{port}`` filled in).
SERVICES: dict[str, tuple[str, tuple[str, ...]]] = {
    "fastapi-1": ("FastAPI, uvicorn --workers 1", ("uvicorn", *_uvicorn(1))),
    "fastapi-4": ("FastAPI, uvicorn --workers 4", ("uvicorn", *_uvicorn(4))),
    "fastapi-4-nodelay": (
        "FastAPI, uvicorn --workers 4, `TCP_NODELAY` set",
        ("benchmarks.service_app", "uvicorn", *_uvicorn(4)),
    ),
    "aiohttp-1": ("aiohttp, 1 process", ("benchmarks.service_app", "aiohttp", "--port", "{port}")),
}

#: ``--routes``: name: (label, path, idempotency keys: "none", "fresh" or "replay").
ORDERS = "/tenants/{tenant}/orders"
ROUTES: dict[str, tuple[str, str, str]] = {
    "orders": ("numbered orders", ORDERS, "none"),
    "orders-key": ("numbered orders, `Idempotency-Key` (fresh)", ORDERS, "fresh"),
    "orders-replay": ("numbered orders, 10% keys replayed", ORDERS, "replay"),
    "uuid": ("UUID, one `PutItem`", "/tenants/{tenant}/uuid-orders", "none"),
    "allocator": ("`block_allocator().next()`", "/tenants/{tenant}/ids", "none"),
    "memory": ("in-memory counter", "/tenants/{tenant}/memory-ids", "none"),
}

#: The share of an ``orders-replay`` row's requests that send an earlier key and body again.
REPLAY_SHARE = 0.1

#: The HTTP stack's distributions whose versions the report records.
HTTP_PACKAGES = ("fastapi", "starlette", "uvicorn", "h11", "httptools", "uvloop", "aiohttp")

STARTUP_SECS = 90.0  # a server's bound: four workers importing at once on two busy cores
STOP_SECS = 15.0


@dataclass(frozen=True)
class Settings:
    secs: float = 5.0
    clients: int = 128
    rounds: int = 2
    warmup_secs: float = 0.5
    services: tuple[str, ...] = tuple(SERVICES)
    routes: tuple[str, ...] = tuple(ROUTES)


QUICK = Settings(secs=0.3, clients=4, rounds=1, warmup_secs=0.0)


# --- the load generator (in a process of its own) --------------------------------------------


@dataclass
class Load:
    """What the load generator saw in one row."""

    wall_secs: float = 0.0
    cpu_secs: float = 0.0
    latencies_secs: list[float] = field(default_factory=list)
    statuses: Counter[int] = field(default_factory=Counter)
    errors: Counter[str] = field(default_factory=Counter)
    numbers: list[int] = field(default_factory=list)  # of new orders (not a replay's first)
    replays: int = 0  # requests that sent an earlier request's key and body again
    replayed: int = 0  # ... answered with the first request's order (its number)
    replay_mismatches: int = 0  # ... answered with another number: a new order


def drive(base_url: str, path: str, keys: str, clients: int, secs: float, seed: int) -> Load:
    """``clients`` clients sending ``POST base_url+path`` back to back for ``secs`` seconds
    (then their last answers awaited), one connection each (run in the load process)."""
    return asyncio.run(_drive(base_url, path, keys, clients, secs, seed))


async def _drive(base_url: str, path: str, keys: str, clients: int, secs: float, seed: int) -> Load:
    import aiohttp

    load = Load()
    chance = random.Random(seed)
    answered: list[tuple[str, bytes, int]] = []  # (key, body, number): what a replay sends
    connector = aiohttp.TCPConnector(limit=clients, limit_per_host=clients)
    timeout = aiohttp.ClientTimeout(total=60)
    async with aiohttp.ClientSession(base_url, connector=connector, timeout=timeout) as session:

        async def client(i: int) -> None:
            body = json.dumps({"customer": f"c{i}", "total": "12.50"}).encode()
            while time.perf_counter() < deadline:
                headers = {"content-type": "application/json"}
                key, sent_body, first = "", body, None
                if keys == "replay" and answered and chance.random() < REPLAY_SHARE:
                    key, sent_body, first = chance.choice(answered)
                    load.replays += 1
                    headers["Idempotency-Key"] = key
                elif keys != "none":
                    headers["Idempotency-Key"] = key = str(uuid.uuid4())
                sent = time.perf_counter()
                try:
                    async with session.post(path, data=sent_body, headers=headers) as answer:
                        payload = await answer.read()
                        status = answer.status
                except (aiohttp.ClientError, asyncio.TimeoutError) as exc:
                    load.errors[type(exc).__name__] += 1
                    continue
                load.latencies_secs.append(time.perf_counter() - sent)
                load.statuses[status] += 1
                if status != 201:
                    continue
                number = json.loads(payload).get("number")
                if first is not None and number == first:
                    load.replayed += 1  # the first order again: no new one
                    continue
                load.replay_mismatches += first is not None  # (a new order for a replay)
                if number is not None:
                    load.numbers.append(number)
                    if keys == "replay" and first is None:
                        answered.append((key, sent_body, number))

        cpu = time.process_time()
        started = time.perf_counter()
        deadline = started + secs
        await asyncio.gather(*(client(i) for i in range(clients)))
        load.wall_secs = time.perf_counter() - started
        load.cpu_secs = time.process_time() - cpu
    return load


# --- the servers ------------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _cpu_secs(pids: Sequence[int]) -> float:
    """User + system CPU seconds of ``pids`` and their descendants alive now (``/proc``)."""
    parent: dict[int, int] = {}
    ticks: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        pid = int(entry.name)
        parent[pid] = int(fields[1])
        ticks[pid] = int(fields[11]) + int(fields[12])
    wanted = set(pids)
    grew = True
    while grew:
        found = {pid for pid, ppid in parent.items() if ppid in wanted} - wanted
        grew = bool(found)
        wanted |= found
    return sum(ticks.get(pid, 0) for pid in wanted) / os.sysconf("SC_CLK_TCK")


class Service:
    """One example service as an HTTP server in processes of its own (started in
    :meth:`start`, stopped in :meth:`stop`), its output in ``log``."""

    def __init__(self, name: str, endpoint: str, table: str, logs: Path) -> None:
        self.name = name
        self.label, command = SERVICES[name]
        self.workers = int(command[command.index("--workers") + 1]) if "--workers" in command else 1
        self.port = _free_port()
        self.base_url = f"http://127.0.0.1:{self.port}"
        self.command = [sys.executable, "-m", *(w.format(port=self.port) for w in command)]
        self.env = os.environ | {
            "AWS_ENDPOINT_URL": endpoint,
            "AIOSEQ_TABLE": table,
            "AIOSEQ_CREATE_TABLE": "0",
            "PYTHONUNBUFFERED": "1",
        }
        self.log = logs / f"{name}.log"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        with self.log.open("wb") as out:
            self.process = subprocess.Popen(
                self.command,
                cwd=ROOT,
                env=self.env,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # its own process group: SIGKILLed whole if it hangs
            )

    async def ready(self) -> None:
        """Wait until every worker has started its app and one answers, at most
        `STARTUP_SECS`; raise with the server's output if it does not."""
        import aiohttp

        assert self.process is not None
        deadline = time.perf_counter() + STARTUP_SECS
        url = f"{self.base_url}{ROUTES['memory'][1].format(tenant='ready')}"
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=5)) as session:
            while True:
                if self.process.poll() is not None:
                    raise RuntimeError(
                        f"{self.name} exited {self.process.returncode}:\n{self.tail()}"
                    )
                if time.perf_counter() > deadline:
                    raise RuntimeError(
                        f"{self.name} not ready in {STARTUP_SECS:g} s:\n{self.tail()}"
                    )
                started = self.log.read_text(errors="replace").count("Application startup complete")
                if self.name.startswith("aiohttp") or started >= self.workers:
                    try:
                        async with session.post(url) as answer:
                            if answer.status == 201:
                                return
                    except (aiohttp.ClientError, asyncio.TimeoutError):
                        pass
                await asyncio.sleep(0.2)

    def pids(self) -> list[int]:
        return [self.process.pid] if self.process is not None else []

    def tail(self, lines: int = 40) -> str:
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])

    def stop(self) -> dict[str, Any]:
        """SIGTERM, then SIGKILL to its process group after `STOP_SECS`; what it logged."""
        if self.process is None:
            return {}
        code: int | None = None
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                code = self.process.wait(STOP_SECS)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.process.pid, signal.SIGKILL)
                code = self.process.wait(STOP_SECS)
        text = self.log.read_text(errors="replace")
        return {
            "exit_code": code if code is not None else self.process.returncode,
            "tracebacks": text.count("Traceback (most recent call last)"),
            "error_lines": sum(line.startswith("ERROR") for line in text.splitlines()),
            "log_tail": self.tail(15) if "Traceback" in text else "",
        }


# --- the rows ---------------------------------------------------------------------------------


async def _count_orders(store: DynamoStore, tenant: str) -> int:
    """The tenant's order items: a ``Query`` with ``Select=COUNT`` per shard."""
    from examples.orders import ORDER_SHARDS, order_items

    layout, count = order_items(tenant), 0
    for shard in range(ORDER_SHARDS):
        key = layout.key(shard)["pk"]
        start: dict[str, Any] | None = None
        while True:
            page = await store.send_once(
                "query",
                TableName=store.table.name,
                KeyConditionExpression="pk = :pk",
                ExpressionAttributeValues={":pk": {"S": key}},
                Select="COUNT",
                **({"ExclusiveStartKey": start} if start else {}),
            )
            count += page["Count"]
            start = page.get("LastEvaluatedKey")
            if not start:
                break
    return count


async def _check(
    inspector: DynamoStore, service: Service, route: str, tenant: str, load: Load
) -> dict[str, Any]:
    """What can be checked cheaply after a row (see the module doc)."""
    import aiohttp

    numbers = load.numbers
    if route == "allocator":
        return {"unique": len(set(numbers)) == len(numbers)}
    if not route.startswith("orders"):
        return {}
    current = await inspector.transactional_counter(f"orders-{tenant}").current()
    stored = await _count_orders(inspector, tenant)
    async with (
        aiohttp.ClientSession(service.base_url) as session,
        session.get(f"/tenants/{tenant}/orders", params={"limit": "20"}) as answer,
    ):
        listed = [order["number"] for order in await answer.json()]
    n = len(numbers)
    return {
        "orders": n,
        "exactly_1_to_n": sorted(numbers) == list(range(1, n + 1)),
        "counter_current": current,
        "order_items": stored,
        "list_newest_20": listed == list(range(n, max(n - 20, 0), -1)),
        "replay_mismatches": load.replay_mismatches,
    }


def _passed(checks: dict[str, Any]) -> bool:
    if "orders" in checks:
        n = checks["orders"]
        return bool(
            checks["exactly_1_to_n"]
            and checks["counter_current"] == checks["order_items"] == n
            and checks["list_newest_20"]
            and checks["replay_mismatches"] == 0
        )
    return all(checks.values())


async def measure(
    service: Service,
    route: str,
    tenant: str,
    secs: float,
    s: Settings,
    pool: ProcessPoolExecutor,
    dynamodb_pid: int | None,
) -> tuple[Load, dict[str, float]]:
    """One row's load, and the CPU seconds of the server's processes and of DynamoDB Local."""
    _, path, keys = ROUTES[route]
    pids = service.pids()
    before = _cpu_secs(pids), _cpu_secs([dynamodb_pid] if dynamodb_pid else [])
    url, seed = service.base_url, random.randrange(1 << 30)
    load = await asyncio.get_running_loop().run_in_executor(
        pool, drive, url, path.format(tenant=tenant), keys, s.clients, secs, seed
    )
    after = _cpu_secs(pids), _cpu_secs([dynamodb_pid] if dynamodb_pid else [])
    return load, {"server": after[0] - before[0], "dynamodb_local": after[1] - before[1]}


async def row(
    inspector: DynamoStore,
    service: Service,
    route: str,
    round_: int,
    s: Settings,
    pool: ProcessPoolExecutor,
    dynamodb_pid: int | None,
) -> dict[str, Any]:
    tenant = f"{route}-{service.name}-r{round_}-{uuid.uuid4().hex[:6]}"
    load, cpu = await measure(service, route, tenant, s.secs, s, pool, dynamodb_pid)
    checks = await _check(inspector, service, route, tenant, load)
    created = load.statuses[201]
    answered = sum(load.statuses.values())
    per = max(answered, 1) / 1000
    return {
        "service": service.name,
        "route": route,
        "round": round_,
        "tenant": tenant,
        "clients": s.clients,
        "wall_secs": round(load.wall_secs, 3),
        "answered": answered,
        "created": created,
        "per_sec": round(created / load.wall_secs),
        "p50_ms": round(percentile_ms(load.latencies_secs, 50), 1),
        "p99_ms": round(percentile_ms(load.latencies_secs, 99), 1),
        "statuses": {str(k): v for k, v in sorted(load.statuses.items())},
        "errors": dict(load.errors),
        "failed": answered - created + sum(load.errors.values()),
        "replays": load.replays,
        "replayed": load.replayed,
        "cpu_ms_per_request": {
            "load_generator": round(load.cpu_secs / per, 3),
            "server": round(cpu["server"] / per, 3),
            "dynamodb_local": round(cpu["dynamodb_local"] / per, 3),
        },
        "checks": checks,
        "ok": _passed(checks) and created > 0,
    }


async def run(s: Settings, endpoint: str) -> dict[str, Any]:
    from benchmarks.defaults.bench import server_pid

    dynamodb_pid = server_pid(endpoint)
    rows: list[dict[str, Any]] = []
    stopped: dict[str, dict[str, Any]] = {}
    async with fresh_table(endpoint) as inspector:
        table = inspector.table.name
        with tempfile.TemporaryDirectory(prefix="aioseq-bench-service-") as logs:
            services = [Service(name, endpoint, table, Path(logs)) for name in s.services]
            spawn = multiprocessing.get_context("spawn")
            try:
                with ProcessPoolExecutor(1, mp_context=spawn) as pool:
                    for service in services:
                        service.start()
                    await asyncio.gather(*(service.ready() for service in services))
                    plan = [(service, route) for service in services for route in s.routes]
                    if s.warmup_secs:
                        for service, route in plan:
                            tenant = f"warm-{route}-{service.name}"
                            await measure(service, route, tenant, s.warmup_secs, s, pool, None)
                    for round_ in range(s.rounds):
                        for service, route in plan if round_ % 2 == 0 else plan[::-1]:
                            rows.append(
                                await row(inspector, service, route, round_, s, pool, dynamodb_pid)
                            )
                            _log(rows[-1])
            finally:
                for service in services:
                    stopped[service.name] = service.stop()
    summary = _summary(rows, s)
    return {
        "http_stack": _report.versions(HTTP_PACKAGES),
        "services": {
            name: {"label": label, "command": " ".join(command), **stopped[name]}
            for name, (label, command) in SERVICES.items()
            if name in s.services
        },
        "routes": {
            name: {"label": label, "path": path, "idempotency_keys": keys}
            for name, (label, path, keys) in ROUTES.items()
            if name in s.routes
        },
        "rows": rows,
        "summary": summary,
        "ok": all(r["ok"] for r in rows) and not any(v.get("tracebacks") for v in stopped.values()),
    }


def _summary(rows: list[dict[str, Any]], s: Settings) -> list[dict[str, Any]]:
    """Per service and route: the median of the rounds' figures, and the ratio of its
    answers/s to the UUID baseline's and to the in-memory counter's on the same server."""
    found = []
    for service in s.services:
        medians: dict[str, dict[str, Any]] = {}
        for route in s.routes:
            mine = [r for r in rows if r["service"] == service and r["route"] == route]
            medians[route] = {
                "service": service,
                "route": route,
                "per_sec": round(statistics.median(r["per_sec"] for r in mine)),
                "rounds": [r["per_sec"] for r in mine],
                "p50_ms": round(statistics.median(r["p50_ms"] for r in mine), 1),
                "p99_ms": round(statistics.median(r["p99_ms"] for r in mine), 1),
                "failed": sum(r["failed"] for r in mine),
                "ok": all(r["ok"] for r in mine),
            }
        for figures in medians.values():
            for baseline in ("uuid", "memory"):
                if baseline in medians and medians[baseline]["per_sec"]:
                    ratio = figures["per_sec"] / medians[baseline]["per_sec"]
                    figures[f"vs_{baseline}"] = round(ratio, 2)
            found.append(figures)
    return found


def _log(row: dict[str, Any]) -> None:
    print(
        f"{row['service']:>10} {row['route']:<13} round {row['round']}: {row['per_sec']:>6,}/s"
        f" p50 {row['p50_ms']} ms p99 {row['p99_ms']} ms failed {row['failed']}"
        f" checks {row['checks']}",
        file=sys.stderr,
        flush=True,
    )


# --- the report -------------------------------------------------------------------------------


def markdown(report: dict[str, Any]) -> str:
    s = report["settings"]
    machine = report["machine"]
    http = report["http_stack"]
    stack = ", ".join(f"{name} {v}" for name, v in http.items() if v)
    missing = ", ".join(name for name, v in http.items() if not v)
    lines = [
        f"Run: `{report['command']}` ({report['date']}; {report['server']}).",
        "",
        f"Machine: {machine['cpu']}, {machine['cores']} cores shared by the load generator, the"
        f" servers and DynamoDB Local; {machine['python']}; {report['load_at_start']} at the"
        f" start, {report['load_at_end']} at the end. HTTP stack: {stack}"
        + (f" ({missing} not installed)." if missing else ".")
        + f" {s['clients']} clients, each sending `POST`s back to back on its own connection"
        f" for {s['secs']:g} s a row; median of {s['rounds']} alternating rounds; answers/s"
        " counts the 201s.",
        "",
        "| server | endpoint | answers/s | rounds | p50 ms | p99 ms | vs UUID `PutItem` |"
        " vs in-memory | failed | checked |",
        "|---|---|---:|---|---:|---:|---:|---:|---:|---|",
    ]
    for figures in report["summary"]:
        name, route = figures["service"], figures["route"]
        lines.append(
            f"| {report['services'][name]['label']} | {report['routes'][route]['label']} |"
            f" {figures['per_sec']:,} | {', '.join(f'{x:,}' for x in figures['rounds'])} |"
            f" {figures['p50_ms']:,} | {figures['p99_ms']:,} |"
            f" {_ratio(figures.get('vs_uuid'))} | {_ratio(figures.get('vs_memory'))} |"
            f" {figures['failed']:,} | {_checked(route, figures['ok'])} |"
        )
    replays = [r for r in report["rows"] if r["route"] == "orders-replay"]
    if replays:
        sent = sum(r["replays"] for r in replays)
        replayed = sum(r["replayed"] for r in replays)
        lines += [
            "",
            f"Replays: {sent:,} requests sent an earlier request's key and body again;"
            f" {replayed:,} were answered with the first request's order (no new order)"
            + ("." if replayed else " (this build ignores `Idempotency-Key`)."),
        ]
    failed = Counter[str]()
    for r in report["rows"]:
        failed.update({f"HTTP {k}": v for k, v in r["statuses"].items() if k != "201"})
        failed.update(r["errors"])
    logs = {n: v for n, v in report["services"].items() if v.get("tracebacks")}
    lines += [
        "",
        "Failed requests by answer: "
        + (", ".join(f"{k} {v:,}" for k, v in failed.most_common()) or "none")
        + ". Tracebacks in the servers' logs: "
        + (", ".join(f"{n} {v['tracebacks']}" for n, v in logs.items()) or "none")
        + ". Every row checked: " + ("yes" if report["ok"] else "**NO**") + ".",
    ]  # fmt: skip
    return "\n".join(lines) + "\n"


def _ratio(value: float | None) -> str:
    return "" if value is None else f"{value:.2f}×"


def _checked(route: str, ok: bool) -> str:
    if not ok:
        return "**FAILED**"
    if route.startswith("orders"):
        return "1..N = counter = items"
    if route == "allocator":
        return "unique"
    return ""


def plot(report: dict[str, Any], path: Path) -> None:
    """Answers per second (top) and p99 latency (bottom) by endpoint, a bar per server."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    services = list(report["services"])
    routes = list(report["routes"])
    figures = {(f["service"], f["route"]): f for f in report["summary"]}
    figure, (rates, p99) = plt.subplots(2, 1, figsize=(10, 7), sharex=True)
    width = 0.8 / len(services)
    for i, service in enumerate(services):
        xs = [j + (i - (len(services) - 1) / 2) * width for j in range(len(routes))]
        label = report["services"][service]["label"].replace("`", "")
        rates.bar(xs, [figures[(service, r)]["per_sec"] for r in routes], width, label=label)
        p99.bar(xs, [figures[(service, r)]["p99_ms"] for r in routes], width, label=label)
    rates.set_ylabel("answers (201) per second")
    rates.set_title(
        f"{report['settings']['clients']} clients over HTTP, DynamoDB Local,"
        f" {report['machine']['cores']} cores shared by all"
    )
    rates.legend()
    p99.set_ylabel("p99 latency (ms)")
    p99.set_yscale("log")
    p99.set_xticks(range(len(routes)))
    p99.set_xticklabels(
        [report["routes"][r]["label"].replace("`", "").replace(", ", ",\n") for r in routes],
        fontsize=8,
    )
    for axis in (rates, p99):
        axis.grid(axis="y", alpha=0.3)
    figure.tight_layout()
    figure.savefig(path, dpi=90)
    plt.close(figure)


def main(argv: Sequence[str] | None = None) -> int:
    return _report.main(
        "service", __doc__, argv, Settings(), run, markdown, quick=QUICK, plot=plot,
        options=("secs", "clients", "rounds", "warmup_secs", "services", "routes"),
        choices={"services": tuple(SERVICES), "routes": tuple(ROUTES)},
        notes={"secs": "seconds a row"},
    )  # fmt: skip


if __name__ == "__main__":
    raise SystemExit(main())
