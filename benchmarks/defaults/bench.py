"""Where and how a row of the defaults benchmark runs: the CPU used, as /proc counts it, the
capacity model's proxy in a process of its own, and :class:`Bench`, which runs one row and
measures around it (:class:`Result`)."""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from aioseq import DynamoStore
from aioseq.testing.capacity import CapacityModel
from benchmarks.defaults.options import Options
from benchmarks.row import Row, process_pool, run_row
from benchmarks.variants import Variant

# --- CPU, as /proc counts it -----------------------------------------------------------------

_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def process_cpu_secs(pid: int | None) -> float | None:
    """User + system CPU seconds of process ``pid`` so far (``None``: unknown)."""
    if pid is None:
        return None
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / _TICKS


def machine_ticks() -> tuple[int, int] | None:
    """``(busy, total)`` CPU ticks of the whole machine so far (every process, ours or not)."""
    try:
        first = Path("/proc/stat").read_text().splitlines()[0].split()
    except (OSError, IndexError):
        return None
    ticks = [int(x) for x in first[1:]]
    idle = ticks[3] + (ticks[4] if len(ticks) > 4 else 0)  # idle + iowait
    return sum(ticks) - idle, sum(ticks)


def server_pid(endpoint: str) -> int | None:
    """The process of the DynamoDB Local serving ``endpoint`` (its ``-port``), if any."""
    port = str(urlparse(endpoint).port)
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            args = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        words = [a.decode(errors="replace") for a in args]
        if any(w.endswith("DynamoDBLocal.jar") for w in words) and any(
            w == "-port" and i + 1 < len(words) and words[i + 1] == port
            for i, w in enumerate(words)
        ):
            return int(proc.name)
    return None


# --- the capacity model, in a process of its own ---------------------------------------------


def _serve_proxy(target: str, model: CapacityModel, conn: Connection) -> None:
    from aioseq.testing.fault_proxy import FaultProxy

    with FaultProxy(target, capacity=model) as proxy:
        conn.send(proxy.endpoint_url)
        while conn.recv() != "stop":
            conn.send((sum(proxy.throttled.values()), proxy.consumed_wcu, proxy.requests))


@dataclass(frozen=True)
class ProxyCounts:
    """What a :class:`CapacityProxy` counted so far."""

    throttled: int
    consumed_wcu: float
    requests: int


class CapacityProxy:
    """``FaultProxy(target, capacity=model)`` (no faults) in a spawned child process, so that
    its work is not done under the client's GIL: a network's latency costs the client no
    CPU. ``endpoint_url`` is where to send requests; :meth:`counts` reads its counters."""

    def __init__(self, target: str, model: CapacityModel) -> None:
        self.target = target
        self.model = model
        context = multiprocessing.get_context("spawn")
        self._conn, child = context.Pipe()
        self._process = context.Process(
            target=_serve_proxy, args=(target, model, child), daemon=True
        )
        self._process.start()
        self._endpoint_url: str | None = None

    @property
    def endpoint_url(self) -> str:
        """Where to send requests (waits for the child to listen, at most 60 s)."""
        if self._endpoint_url is None:
            if not self._conn.poll(60):
                self.close()
                raise RuntimeError("the capacity proxy did not start within 60 s")
            self._endpoint_url = str(self._conn.recv())
        return self._endpoint_url

    @property
    def pid(self) -> int | None:
        return self._process.pid

    def counts(self) -> ProxyCounts:
        self._conn.send("counts")
        throttled, wcu, requests = self._conn.recv()
        return ProxyCounts(int(throttled), float(wcu), int(requests))

    def close(self) -> None:
        """Stop the child (idempotent)."""
        if self._process.is_alive():
            with contextlib.suppress(OSError):
                self._conn.send("stop")
            self._process.join(10)
            if self._process.is_alive():
                self._process.kill()
                self._process.join()

    def describe(self) -> str:
        lo, hi = self.model.round_trip_secs
        return (
            f"capacity model: {self.model.partition_wcu_per_sec:,.0f} WCU/s per partition"
            f" ({self.model.burst_secs:g} s burst), {lo * 1000:g}-{hi * 1000:g} ms round trip"
        )


# --- a measured row --------------------------------------------------------------------------


@dataclass
class Result:
    """One row (:class:`benchmarks.row.Row`) and where and how it ran.

    Attributes:
        section: one of :data:`SECTIONS` (or ``"profile"``).
        setting: what distinguishes the row in its section (condition, options, round...).
        row: the figures of :func:`benchmarks.row.run_row`.
        elapsed_secs: the row's whole time (table set-up and read-back included).
        server_cpu_secs, proxy_cpu_secs: CPU used meanwhile by the server and the proxy
            (``None``: not known, or no proxy).
        machine_busy: the share of all cores busy meanwhile, whoever used them.
        throttled: requests the capacity model throttled meanwhile (``None``: no proxy).
        consumed_wcu: WCU the capacity model charged meanwhile (``None``: no proxy).
    """

    section: str
    setting: dict[str, Any]
    row: Row
    elapsed_secs: float
    server_cpu_secs: float | None = None
    proxy_cpu_secs: float | None = None
    machine_busy: float | None = None
    throttled: int | None = None
    consumed_wcu: float | None = None

    @property
    def rate(self) -> float:
        return self.row.numbers_per_s

    def cores(self) -> dict[str, float | None]:
        """CPU as cores in use: the client (while timed), the server and the proxy (over the
        row's whole time), and the whole machine."""
        cores = os.cpu_count() or 1

        def per(secs: float | None, over: float) -> float | None:
            return round(secs / over, 2) if secs is not None and over > 0 else None

        return {
            "client": per(self.row.client_cpu_secs, self.row.wall_secs),
            "server": per(self.server_cpu_secs, self.elapsed_secs),
            "proxy": per(self.proxy_cpu_secs, self.elapsed_secs),
            "machine": round(self.machine_busy * cores, 2)
            if self.machine_busy is not None
            else None,
        }


def _ms(ms: float) -> str:
    return f"{ms:,.0f}" if ms >= 100 else f"{ms:.3g}" if ms >= 0.001 else f"{ms:.2g}"


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def _pooled_rate(results: Sequence[Result]) -> float:
    """Numbers per second over several rows: all their numbers over all their time."""
    wall = sum(r.row.wall_secs for r in results)
    return sum(r.row.numbers for r in results) / wall if wall else 0.0


@dataclass
class Bench:
    """The run's shared state: the server, its inspector store, the proxies, the pool."""

    options: Options
    endpoint: str
    inspector: DynamoStore
    server_pid: int | None
    proxies: dict[str, CapacityProxy]
    on_row: Callable[[Result], None] = lambda result: None
    pools: dict[int, ProcessPoolExecutor] = field(default_factory=dict)
    results: list[Result] = field(default_factory=list)

    def endpoint_for(self, condition: str) -> str:
        return self.endpoint if condition == "direct" else self.proxies[condition].endpoint_url

    def pool(self, processes: int) -> ProcessPoolExecutor:
        if processes not in self.pools:
            self.pools[processes] = process_pool(processes)
        return self.pools[processes]

    async def measure(
        self,
        section: str,
        variant: Variant,
        *,
        tasks: int,
        secs: float,
        condition: str = "direct",
        processes: int = 1,
        count_errors: bool = False,
        record: bool = True,
        **setting: Any,
    ) -> Result:
        """Run one row of ``variant`` and measure the CPU around it."""
        proxy = self.proxies.get(condition)
        before = (
            process_cpu_secs(self.server_pid),
            process_cpu_secs(proxy.pid) if proxy else None,
            machine_ticks(),
            proxy.counts() if proxy else None,
        )
        started = time.perf_counter()
        row = await run_row(
            variant,
            self.endpoint_for(condition),
            self.inspector,
            concurrency=tasks,
            processes=processes,
            count=self.options.count,
            time_budget_secs=secs,
            pool=self.pool(processes) if processes > 1 else None,
            count_errors=count_errors,
        )
        elapsed = time.perf_counter() - started
        after = (
            process_cpu_secs(self.server_pid),
            process_cpu_secs(proxy.pid) if proxy else None,
            machine_ticks(),
            proxy.counts() if proxy else None,
        )

        def delta(i: int) -> float | None:
            a, b = before[i], after[i]
            return round(b - a, 3) if isinstance(a, float) and isinstance(b, float) else None

        ticks_before, ticks_after = before[2], after[2]
        busy = None
        if ticks_before and ticks_after and ticks_after[1] > ticks_before[1]:
            busy = round((ticks_after[0] - ticks_before[0]) / (ticks_after[1] - ticks_before[1]), 3)
        counts_before, counts_after = before[3], after[3]
        result = Result(
            section,
            {"condition": condition, "tasks": tasks, "processes": processes, **setting},
            row,
            round(elapsed, 3),
            server_cpu_secs=delta(0),
            proxy_cpu_secs=delta(1),
            machine_busy=busy,
            throttled=counts_after.throttled - counts_before.throttled
            if counts_before and counts_after
            else None,
            consumed_wcu=round(counts_after.consumed_wcu - counts_before.consumed_wcu, 1)
            if counts_before and counts_after
            else None,
        )
        if record:
            self.results.append(result)
            self.on_row(result)
        return result
