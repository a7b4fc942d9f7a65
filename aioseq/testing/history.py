"""A history of every number handed out, and a checker of each strategy's guarantees.

Record the calls (in one process with :meth:`History.take`, from ``aioseq next`` output with
:meth:`History.add_printed`, from other processes by merging their :meth:`History.dump`
files), optionally what the server applied as seen on the wire (``FaultProxy(...,
on_exchange=history.observe)``), then :meth:`History.check` what the strategy promises
(README, "Guarantees, precisely"):

- **unique**, always: no number handed out twice, across processes.
- **gapless stored items** for ``sort-key`` and ``transactional``: the stored items are
  numbered exactly ``1..max``, and every number handed out has its item. Stored items whose
  number nobody was given are counted by cause (an answer lost and the write made again
  under a new number, where the server ignores ``ClientRequestToken``; a killed process).
- **ordered**: a call's numbers are greater than those of every call that completed before it
  started, across processes (``atomic``, ``optimistic``, ``sort-key``, ``transactional``), or
  within one process (``allocator``, one allocator per process).
- **gaps only where documented, and counted**: every number below the counter's value that
  nobody was handed is a gap, attributed to a cause from the wire log: ``answer lost`` (the
  server applied the write, the client never heard, and the retry took new numbers: an
  ambiguous ``ADD``, or an optimistic write retried after it was applied; ``answer lost:
  client gone`` when no fault was injected but the client had closed the connection, timed
  out or dead, which also covers answers sent to a process that timed out, as the proxy
  cannot see whether a client giving up had read the answer already on its way),
  ``killed process`` (delivered to a process marked killed, or on its way to it),
  ``block not handed out`` (the allocator's reserved block left unused: abandoned at exit,
  skipped by ``next_many``, or not given back), ``caller saw failure`` (delivered to a
  process whose call then failed). A gap the wire log cannot explain is ``unexplained`` and
  fails the check; without a wire log gaps are ``unattributed`` (counted, not judged).

The wire log needs each process's identity: set ``AWS_SDK_UA_APP_ID=<process>`` in its
environment (botocore puts it in the ``User-Agent`` as ``app/<process>``).
"""

from __future__ import annotations

import json
import time
from collections import Counter, defaultdict
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from aioseq.config import TableSpec
from aioseq.testing.fault_proxy import Exchange
from aioseq.workload import GAPLESS_STRATEGIES

__all__ = ["Call", "History", "Report", "WireWrite"]

T = TypeVar("T")

#: Strategies ordered across processes (the allocator only within one).
ORDERED_ACROSS_PROCESSES = frozenset({"atomic", "optimistic", "sort-key", "transactional"})


@dataclass(frozen=True)
class Call:
    """One call that takes numbers.

    Attributes:
        strategy: ``"atomic"``, ``"allocator"``, ``"optimistic"``, ``"sort-key"`` or
            ``"transactional"`` (a ``+group`` suffix is ignored by the checker).
        counter: the counter key.
        process: who made the call (any label; the same as its ``AWS_SDK_UA_APP_ID``).
        task: the task within the process.
        started, ended: ``time.monotonic()`` before and after the call, in seconds (the same
            clock in every process of one machine), or ``None`` when unknown.
        numbers: the numbers the caller got, or ``None`` if the call failed.
        error: the error's class name when the call failed (``RetriesExhausted`` with its last
            error's: ``"RetriesExhausted(TransactionCanceled)"``).
    """

    strategy: str
    counter: str
    process: str
    task: int
    started: float | None
    ended: float | None
    numbers: range | None
    error: str | None = None

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {**self.__dict__}
        data["numbers"] = None if self.numbers is None else [self.numbers.start, self.numbers.stop]
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Call:
        numbers = data.get("numbers")
        return cls(**{**data, "numbers": None if numbers is None else range(*numbers)})


@dataclass(frozen=True)
class WireWrite:
    """Numbers a write applied by the server covered, as seen by the fault proxy.

    Attributes:
        counter: the counter key (partition key value).
        process: the client's ``app/`` id from its ``User-Agent``, or ``""``.
        numbers: the numbers the write took (an ``ADD``'s range, an optimistic write's
            ``current + 1 .. next``, the sort keys of stored items).
        delivered: whether the client got the answer.
        fault: the injected fault kind, if any.
    """

    counter: str
    process: str
    numbers: range
    delivered: bool
    fault: str | None


@dataclass(frozen=True)
class Report:
    """What :meth:`History.check` found for one counter.

    Attributes:
        strategy, counter: what was checked.
        numbers: numbers handed out (successful calls), all checked.
        calls: calls recorded; ``failed``: failed calls by error class.
        duplicates: numbers handed out more than once (extra copies).
        holes: missing numbers where the strategy promises none (stored items not
            ``1..max``, or a number handed out without its item).
        gaps: numbers below the counter's value that nobody was handed, by cause.
        unacknowledged: stored items whose number nobody was handed, by cause.
        order_violations: pairs of calls out of the promised order (counted per later call).
        stored: items stored (gapless strategies), else ``None``.
        problems: one line per broken guarantee; empty when :attr:`ok`.
    """

    strategy: str
    counter: str
    numbers: int
    calls: int
    failed: Counter[str]
    duplicates: int
    holes: int
    gaps: Counter[str]
    unacknowledged: Counter[str]
    order_violations: int
    stored: int | None
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


class History:
    """Calls and wire observations for any number of counters; see the module doc.

    Parameters:
        table: the table layout (names of the sort key and the value attribute), used to read
            numbers off the wire.
    """

    def __init__(self, table: TableSpec | None = None) -> None:
        self.table = table or TableSpec()
        self.calls: list[Call] = []
        self.wire: list[WireWrite] = []
        self.killed: set[str] = set()
        self.wire_observed = False

    # --- recording --------------------------------------------------------------------------

    def record(self, call: Call) -> None:
        self.calls.append(call)

    async def take(
        self,
        take: Callable[[], Awaitable[int]],
        *,
        strategy: str,
        counter: str,
        process: str,
        task: int,
    ) -> int:
        """Await ``take()`` (one number), recording it with its times, or its failure; the
        failure (``CancelledError`` too) propagates."""
        started = time.monotonic()
        try:
            n = await take()
        except BaseException as exc:
            ended, error = time.monotonic(), type(exc).__name__
            last = getattr(exc, "last_error", None)  # RetriesExhausted: what it gave up on
            if last is not None:
                error += f"({type(last).__name__})"
            self.record(Call(strategy, counter, process, task, started, ended, None, error))
            raise
        numbers = range(n, n + 1)
        self.record(Call(strategy, counter, process, task, started, time.monotonic(), numbers))
        return n

    def add_printed(self, strategy: str, counter: str, process: str, output: str) -> None:
        """Record the numbers a process printed (``aioseq next``: one per line), without
        times; a partial last line (a killed process) is left out."""
        lines = output.split("\n")
        for line in lines[:-1]:
            if line.strip():
                n = int(line)
                self.record(Call(strategy, counter, process, 0, None, None, range(n, n + 1)))

    def mark_killed(self, process: str) -> None:
        """``process`` was killed: numbers delivered to it and not handed out are its loss."""
        self.killed.add(process)

    def observe(self, exchange: Exchange) -> None:
        """A :class:`~aioseq.testing.fault_proxy.FaultProxy` ``on_exchange`` callback: keep
        the numbers of every write the server applied (2xx), delivered or not."""
        self.wire_observed = True
        if exchange.status is None or not 200 <= exchange.status < 300:
            return
        try:
            request = json.loads(exchange.request)
            response = json.loads(exchange.response or b"{}")
        except ValueError:
            return
        for counter, numbers in self._numbers_written(exchange.operation, request, response):
            self.wire.append(
                WireWrite(counter, exchange.client, numbers, exchange.delivered, exchange.fault)
            )

    def _numbers_written(
        self, operation: str, request: dict[str, Any], response: dict[str, Any]
    ) -> Iterable[tuple[str, range]]:
        spec = self.table
        sort_key = spec.sort_key or ""
        if operation == "UpdateItem":
            counter = request.get("Key", {}).get(spec.partition_key, {}).get("S", "")
            values = request.get("ExpressionAttributeValues", {})
            expression = request.get("UpdateExpression", "")
            if expression.startswith("ADD") and ":n" in values:
                high = int(response["Attributes"][spec.value_attribute]["N"])
                yield counter, range(high - int(values[":n"]["N"]) + 1, high + 1)
            elif ":next" in values:  # an optimistic write, not a give-back (:before, :top)
                current = int(values[":current"]["N"]) if ":current" in values else 0
                yield counter, range(current + 1, int(values[":next"]["N"]) + 1)
        elif operation == "PutItem":
            item = request.get("Item", {})
            n = _number(item.get(sort_key))
            if n is not None and n >= 1:
                yield item[spec.partition_key]["S"], range(n, n + 1)
        elif operation == "TransactWriteItems":
            for action in request.get("TransactItems", []):
                item = action.get("Put", {}).get("Item", {})
                n = _number(item.get(sort_key))
                if n is not None and n >= 1:
                    yield item[spec.partition_key]["S"], range(n, n + 1)

    # --- across processes -------------------------------------------------------------------

    def dump(self, path: Path) -> None:
        """Write the calls as JSON lines."""
        with path.open("w") as out:
            for call in self.calls:
                out.write(json.dumps(call.to_json()) + "\n")

    def load(self, path: Path) -> None:
        """Add the calls of a :meth:`dump` file."""
        with path.open() as lines:
            for line in lines:
                self.record(Call.from_json(json.loads(line)))

    # --- checking ---------------------------------------------------------------------------

    def check(
        self,
        strategy: str,
        counter: str,
        *,
        top: int | None = None,
        stored: Iterable[int] | None = None,
    ) -> Report:
        """Check the calls on ``counter`` against ``strategy``'s guarantees.

        Parameters:
            strategy: as in :class:`Call` (``"+group"`` suffixes are ignored).
            counter: the counter key.
            top: the counter item's value at the end (the last number the counter gave);
                needed to count gaps of the counter strategies.
            stored: the numbers of the stored items (``aioseq.workload.stored_numbers``);
                required for ``sort-key`` and ``transactional``.

        Raises:
            ValueError: ``stored`` is missing for a gapless strategy.
        """
        base = strategy.split("+", 1)[0]
        calls = [c for c in self.calls if c.counter == counter]
        handed: list[int] = [n for c in calls if c.numbers is not None for n in c.numbers]
        distinct = set(handed)
        failed = Counter(c.error or "?" for c in calls if c.numbers is None)
        problems: list[str] = []
        duplicates = len(handed) - len(distinct)
        if duplicates:
            problems.append(f"{duplicates} numbers handed out twice")

        wire = [w for w in self.wire if w.counter == counter]
        holes = 0
        gaps: Counter[str] = Counter()
        unacknowledged: Counter[str] = Counter()
        stored_count: int | None = None
        if base in GAPLESS_STRATEGIES:
            if stored is None:
                raise ValueError(f"{base} is gapless: pass the stored item numbers")
            items = set(stored)
            stored_count = len(items)
            missing = set(range(1, max(items, default=0) + 1)) - items
            without_item = distinct - items
            holes = len(missing | without_item)
            if missing:
                problems.append(f"{len(missing)} holes among the stored items")
            if without_item:
                problems.append(f"{len(without_item)} numbers handed out without their item")
            unacknowledged = self._attribute(items - distinct, wire, calls)
        else:
            if top is None:
                top = max(distinct, default=0)
            gaps = self._attribute(set(range(1, top + 1)) - distinct, wire, calls, base)
            beyond = {n for n in distinct if n > top}
            if beyond:
                problems.append(f"{len(beyond)} numbers handed out above the counter's value")
        for where in (gaps, unacknowledged):
            if where.get("unexplained"):
                problems.append(f"{where['unexplained']} numbers lost for no documented reason")
        order = self._order_violations(calls, across=base in ORDERED_ACROSS_PROCESSES)
        if order:
            problems.append(f"{order} calls got numbers out of the promised order")
        return Report(
            strategy=strategy,
            counter=counter,
            numbers=len(handed),
            calls=len(calls),
            failed=failed,
            duplicates=duplicates,
            holes=holes,
            gaps=gaps,
            unacknowledged=unacknowledged,
            order_violations=order,
            stored=stored_count,
            problems=problems,
        )

    def _attribute(
        self, lost: set[int], wire: list[WireWrite], calls: list[Call], strategy: str = ""
    ) -> Counter[str]:
        """The cause of each number in ``lost`` (not handed out), from the wire log."""
        causes: Counter[str] = Counter()
        if not lost:
            return causes
        if not self.wire_observed:
            causes["unattributed"] = len(lost)
            return causes
        failing = {c.process for c in calls if c.numbers is None}
        # The proxy cannot see whether a client that gave up waiting had read an answer already
        # on its way: in a process that timed out, a delivered answer may have been dropped too.
        timed_out = {w.process for w in wire if not w.delivered and w.fault is None}
        fate: dict[int, str] = {}
        for write in wire:  # a later write of a number (re-reserved after a give-back) wins
            if not write.delivered and write.fault is not None:
                cause = "answer lost"
            elif write.process in self.killed:
                cause = "killed process"
            elif not write.delivered or write.process in timed_out:
                cause = "answer lost: client gone"
            elif strategy == "allocator":
                cause = "block not handed out"
            elif write.process in failing:
                cause = "caller saw failure"
            else:
                cause = "unexplained"
            for n in write.numbers:
                if n in lost:
                    fate[n] = cause
        for n in lost:
            causes[fate.get(n, "unexplained")] += 1
        return causes

    @staticmethod
    def _order_violations(calls: list[Call], *, across: bool) -> int:
        """Calls whose numbers are not all greater than those of every call (of the same
        process, unless ``across``) that ended before they started."""
        groups: dict[str, list[Call]] = defaultdict(list)
        for c in calls:
            if c.numbers is not None and len(c.numbers) and c.started is not None:
                groups["" if across else c.process].append(c)
        violations = 0
        for group in groups.values():
            ends = sorted(group, key=lambda c: c.ended or 0.0)
            starts = sorted(group, key=lambda c: c.started or 0.0)
            highest = 0  # the highest number of the calls ended so far
            i = 0
            for c in starts:
                while i < len(ends) and (ends[i].ended or 0.0) < (c.started or 0.0):
                    highest = max(highest, ends[i].numbers[-1])  # type: ignore[index]
                    i += 1
                if c.numbers[0] <= highest:  # type: ignore[index]
                    violations += 1
        return violations


def _number(value: dict[str, Any] | None) -> int | None:
    if not value:
        return None
    text = value.get("N", value.get("S"))
    try:
        return int(text) if text is not None else None
    except ValueError:
        return None
