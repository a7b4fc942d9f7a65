"""A history of every number handed out, and a checker of each strategy's guarantees.

Record the calls (in one process with :meth:`History.take`, from ``aioseq next`` output with
:meth:`History.add_printed`, from other processes by merging their :meth:`History.dump` or
``History(log=...)`` files), optionally what the server applied as seen on the wire
(``FaultProxy(..., on_exchange=history.observe)``), then :meth:`History.check` what the
strategy promises (docs/guarantees.md), given the counter's final value or the
items stored:

- **unique**, always: no number handed out twice, across processes.
- **exactly once** for ``sort-key`` and ``transactional``: every call that stores an item
  carries a payload unique to it (:attr:`Call.payload`; ``aioseq._workload`` stores it in the
  item's ``payload`` attribute, and :func:`aioseq._workload.stored_payloads` reads number ->
  payload back). Every number handed out has its item, holding its own call's payload; no
  payload is stored under two numbers (**stored twice**: a write whose answer was lost, made
  again under a new number); the stored items are numbered exactly ``1..max`` (no **holes**).
  A stored item whose number nobody was handed (**unacknowledged**) must be explained, by its
  payload first: its call failed after the write was applied (``caller saw failure``), was
  cancelled (``caller cancelled``), or its process was killed (``killed process``: the
  payload's ``<process>/`` prefix, or the wire log, names a process marked killed); an item
  whose payload tells nothing is judged from the wire log, as a gap is (below).
- **ordered**: a call's numbers are greater than those of every call that completed before it
  started, across processes (``atomic``, ``optimistic``, ``sort-key``, ``transactional``), or
  within one process (``allocator``, one allocator per process).
- **gaps only where documented, each by cause**: every number below the counter's value that
  nobody was handed is a gap, attributed from the wire log to the first cause that fits:

  ``killed process``
      the write was sent by a process marked killed (:meth:`History.mark_killed`).
  ``caller cancelled`` / ``caller saw failure``
      a call of the writing process was cancelled / failed while the write was on its way (it
      started before the server answered, and ended at most ``late_secs`` before); each such
      call explains one number (the one it would have got), so in a busy process a lost
      answer is not put down to whichever caller happened to be cancelled meanwhile; numbers
      nothing else explains get those calls first, so a lost answer the strategy documents
      anyway does not use up the call whose own number needs it.
  ``answer lost``
      the server applied the write, an injected fault lost its answer, and the retry took new
      numbers (an ``ADD`` is not idempotent).
  ``answer lost: client gone``
      as above with no fault injected: the client had closed the connection (timed out, or
      dead); this also covers answers sent to a process that timed out, as the proxy cannot
      see whether a client giving up had read the answer already on its way; and, as many
      times as :meth:`History.mark_unread` says, an answer delivered to a process whose client
      gave up before reading it.
  ``block not handed out``
      the allocator's reserved block left unused (abandoned at exit, skipped by
      ``next_many``, or not given back).
  ``unexplained``
      none of these: always a broken guarantee.

  Each strategy documents some causes (:data:`DOCUMENTED_CAUSES`): ``atomic`` and
  ``allocator`` may skip numbers after a lost answer; ``optimistic`` may not (its token ring
  recognises its own applied write), so there a gap for a lost answer is a **hole**, as is any
  cause a strategy does not document. Without a wire log gaps are ``unattributed`` (counted,
  not judged), unless the strategy documents no lost-answer gaps and nothing in the history
  (a failed or cancelled call, a killed process) could explain them: then ``unexplained``.

The wire log needs each process's identity: set ``AWS_SDK_UA_APP_ID=<process>`` in its
environment (botocore puts it in the ``User-Agent`` as ``app/<process>``).
"""

from __future__ import annotations

import json
import time
from collections import Counter, defaultdict
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from aioseq._strategy_table import STRATEGY_NAMES, strategy_named
from aioseq.config import TableSpec
from aioseq.testing.fault_proxy import Exchange
from verification.causes import DOCUMENTED_CAUSES, STORED_TWICE, UNATTRIBUTED, _Attribution
from verification.records import Call, WireWrite

__all__ = ["History", "Report", "base_strategy"]

#: Strategies ordered across processes (the allocator only within one).
ORDERED_ACROSS_PROCESSES = frozenset({"atomic", "optimistic", "sort-key", "transactional"})


def base_strategy(name: str) -> str:
    """The strategy of a variant's name: ``"sort-key"`` for ``"sort-key"``,
    ``"sort-key+group"``, ``"sort-key+no-group"`` or ``"sort-key --no-group"``."""
    return name.replace("+", " ").split(" ", 1)[0]


@dataclass(frozen=True)
class Report:
    """What :meth:`History.check` found for one counter.

    Attributes:
        strategy, counter: what was checked.
        numbers: numbers handed out (successful calls), all checked.
        calls: calls recorded; ``failed``: failed calls by error class (``CancelledError``
            for cancelled callers).
        duplicates: numbers handed out more than once (extra copies).
        stored: items stored (item-writing strategies), else ``None``.
        stored_twice: extra copies of a payload stored under more than one number (one call's
            item stored twice); 0 when the items' payloads are unknown.
        wrong_payload: numbers handed out whose stored item holds another call's payload.
        holes: missing numbers where the strategy promises none: for ``sort-key`` and
            ``transactional`` numbers ``1..max`` with no stored item plus numbers handed out
            without their item; for the counter strategies, gaps whose cause the strategy does
            not document (``unexplained`` included).
        gaps: numbers below the counter's value that nobody was handed, by cause (counter
            strategies).
        unacknowledged: stored items whose number nobody was handed, by cause (item-writing
            strategies).
        order_violations: calls out of the promised order (counted per later call).
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
    stored_twice: int = 0
    wrong_payload: int = 0
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


class History:
    """Calls and wire observations for any number of counters; see the module doc.

    Parameters:
        table: the table layout (names of the sort key and the value attribute), used to read
            numbers off the wire.
        log: append each call to this file as it is recorded, one JSON line written at once
            (as :meth:`dump` writes them), so a process killed mid-run leaves every call it
            completed behind; :meth:`load` skips a torn last line. :meth:`close` closes it.
        late_secs: how long after a failed or cancelled call ended a write sent for it may
            still reach the server (a request held by a ``delay`` fault), in seconds: the
            window in which a lost number is put down to that call.
    """

    def __init__(
        self,
        table: TableSpec | None = None,
        *,
        log: Path | None = None,
        late_secs: float = 30.0,
    ) -> None:
        self.table = table or TableSpec()
        self.calls: list[Call] = []
        self.wire: list[WireWrite] = []
        self.killed: set[str] = set()
        #: Answers each process's client gave up reading though the proxy delivered them.
        self.unread: Counter[str] = Counter()
        self.wire_observed = False
        self.late_secs = late_secs
        self._log: IO[str] | None = log.open("a", buffering=1) if log is not None else None

    # --- recording --------------------------------------------------------------------------

    def record(self, call: Call) -> None:
        self.calls.append(call)
        if self._log is not None:
            self._log.write(json.dumps(call.to_json()) + "\n")

    def close(self) -> None:
        """Close the ``log`` file, if any. Idempotent."""
        log, self._log = self._log, None
        if log is not None:
            log.close()

    async def take(
        self,
        take: Callable[[], Awaitable[int]],
        *,
        strategy: str,
        counter: str,
        process: str,
        task: int,
        payload: str | None = None,
    ) -> int:
        """Await ``take()`` (one number), recording it with its times and ``payload`` (what
        it stores, if anything: see :attr:`Call.payload`), or its failure; the failure
        (``CancelledError`` too) propagates."""
        started = time.monotonic()
        try:
            n = await take()
        except BaseException as exc:
            ended, error = time.monotonic(), type(exc).__name__
            last = getattr(exc, "last_error", None)  # RetriesExhausted: what it gave up on
            if last is not None:
                error += f"({type(last).__name__})"
            self.record(
                Call(strategy, counter, process, task, started, ended, None, error, payload)
            )
            raise
        numbers = range(n, n + 1)
        self.record(
            Call(
                strategy, counter, process, task, started, time.monotonic(), numbers, None, payload
            )
        )
        return n

    def add_printed(self, strategy: str, counter: str, process: str, output: str) -> None:
        """Record the numbers a process printed (``aioseq next``: one per line), without
        times or payloads; a partial last line (a killed process) is left out."""
        lines = output.split("\n")
        for line in lines[:-1]:
            if line.strip():
                n = int(line)
                self.record(Call(strategy, counter, process, 0, None, None, range(n, n + 1)))

    def mark_killed(self, process: str) -> None:
        """``process`` was killed: numbers delivered to it and not handed out are its loss,
        and so are stored items whose payload starts with ``<process>/``."""
        self.killed.add(process)

    def mark_unread(self, process: str, count: int) -> None:
        """``process``'s client gave up on ``count`` answers that the proxy saw delivered: its
        read timeouts (its statistics' retries) less the answers the proxy held back on
        purpose (``delay`` faults). A client whose event loop is too busy to read an answer
        before its read timeout drops it unread, which the proxy cannot see; up to ``count``
        of the process's delivered writes then count as ``answer lost: client gone``."""
        if count > 0:
            self.unread[process] += count

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
        observed = time.monotonic()
        for counter, numbers in self._numbers_written(exchange.operation, request, response):
            self.wire.append(
                WireWrite(
                    counter,
                    exchange.client,
                    numbers,
                    exchange.delivered,
                    exchange.fault,
                    observed,
                )
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
                taken = int(values[":n"]["N"])
                returned = response.get("Attributes", {}).get(spec.value_attribute)
                if request.get("ReturnValues") in ("ALL_OLD", "UPDATED_OLD"):  # before the ADD
                    low = int(returned["N"]) + 1 if returned else 1  # none: a new counter
                else:  # UPDATED_NEW: the value after it
                    low = int(returned["N"]) - taken + 1
                yield counter, range(low, low + taken)
            elif ":next" in values:  # an optimistic write, not a give-back (:before, :top)
                current = int(values[":current"]["N"]) if ":current" in values else 0
                yield counter, range(current + 1, int(values[":next"]["N"]) + 1)
        elif operation == "PutItem":
            item = request.get("Item", {})
            n = _number(item.get(sort_key))
            if n is not None and n >= 1:
                yield item[spec.partition_key]["S"], range(n, n + 1)
            elif n == 0 and spec.value_attribute in item:  # an optimistic write, put form
                values = request.get("ExpressionAttributeValues", {})
                current = int(values[":current"]["N"]) if ":current" in values else 0
                new = _number(item[spec.value_attribute])
                if new is not None and new > current:
                    yield item[spec.partition_key]["S"], range(current + 1, new + 1)
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
        """Add the calls of a :meth:`dump` (or ``log``) file; a torn last line (the writer
        was killed in mid-write) is skipped."""
        with path.open() as lines:
            for line in lines:
                if not line.endswith("\n"):
                    break
                self.record(Call.from_json(json.loads(line)))

    # --- checking ---------------------------------------------------------------------------

    def check(
        self,
        strategy: str,
        counter: str,
        *,
        top: int | None = None,
        stored: Mapping[int, str | None] | Iterable[int] | None = None,
    ) -> Report:
        """Check the calls on ``counter`` against ``strategy``'s guarantees.

        Parameters:
            strategy: a name of ``aioseq._strategy_table.STRATEGIES``, or a variant of one
                (:func:`base_strategy`).
            counter: the counter key.
            top: the counter item's value at the end (the last number the counter gave);
                for the counter strategies, to count the gaps below it (default: the highest
                number handed out).
            stored: the stored items of ``sort-key`` and ``transactional`` (required for
                them): number -> payload (``aioseq._workload.stored_payloads``), or only their
                numbers (``stored_numbers``: then items stored twice cannot be told).

        Raises:
            ValueError: an unknown strategy, or ``stored`` is missing for an item-writing one.
        """
        base = base_strategy(strategy)
        if base not in DOCUMENTED_CAUSES:
            raise ValueError(
                f"unknown strategy {strategy!r}; choose from {', '.join(STRATEGY_NAMES)}"
            )
        documented = DOCUMENTED_CAUSES[base]
        calls = [c for c in self.calls if c.counter == counter]
        handed: list[int] = [n for c in calls if c.numbers is not None for n in c.numbers]
        distinct = set(handed)
        failed = Counter(c.error or "?" for c in calls if c.numbers is None)
        problems: list[str] = []
        duplicates = len(handed) - len(distinct)
        if duplicates:
            problems.append(f"{duplicates} numbers handed out twice")

        judge = _Attribution(self, base, calls, [w for w in self.wire if w.counter == counter])
        holes = twice = wrong = 0
        gaps: Counter[str] = Counter()
        unacknowledged: Counter[str] = Counter()
        stored_count: int | None = None
        if strategy_named(base).writes_items:
            if stored is None:
                raise ValueError(f"{base} stores items: pass the stored items (number -> payload)")
            items: dict[int, str | None] = (
                dict(stored) if isinstance(stored, Mapping) else dict.fromkeys(stored)
            )
            stored_count = len(items)
            missing = set(range(1, max(items, default=0) + 1)) - set(items)
            without_item = distinct - set(items)
            holes = len(missing | without_item)
            if missing:
                problems.append(f"{len(missing)} holes among the stored items")
            if without_item:
                problems.append(f"{len(without_item)} numbers handed out without their item")
            where: dict[str, list[int]] = defaultdict(list)
            for n, payload in items.items():
                if payload is not None:
                    where[payload].append(n)
            twice = sum(len(ns) - 1 for ns in where.values())
            if twice:
                problems.append(
                    f"{twice} items stored twice (a payload under two numbers: "
                    f"{_examples(ns for ns in where.values() if len(ns) > 1)})"
                )
            wrong = sum(
                1
                for c in calls
                if c.numbers is not None and c.payload is not None
                for n in c.numbers
                if items.get(n) is not None and items[n] != c.payload
            )
            if wrong:
                problems.append(f"{wrong} numbers handed out whose item holds another payload")
            unacknowledged = judge.items(
                {n: items[n] for n in set(items) - distinct},
                {payload: len(ns) for payload, ns in where.items()},
            )
            undocumented = _undocumented(unacknowledged, documented | {STORED_TWICE})
            if undocumented:
                problems.append(
                    f"{sum(undocumented.values())} stored items nobody was handed, for causes "
                    f"{base} does not document: {_causes(undocumented)}"
                )
        else:
            if top is None:
                top = max(distinct, default=0)
            gaps = judge.numbers(set(range(1, top + 1)) - distinct)
            beyond = {n for n in distinct if n > top}
            if beyond:
                problems.append(f"{len(beyond)} numbers handed out above the counter's value")
            undocumented = _undocumented(gaps, documented)
            holes = sum(undocumented.values())
            if undocumented:
                problems.append(
                    f"{holes} numbers skipped for causes {base} does not document: "
                    f"{_causes(undocumented)}"
                )
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
            stored_twice=twice,
            wrong_payload=wrong,
            problems=problems,
        )

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


def _undocumented(causes: Counter[str], documented: frozenset[str]) -> Counter[str]:
    return Counter(
        {c: n for c, n in causes.items() if c not in documented and c != UNATTRIBUTED and n}
    )


def _causes(counts: Counter[str]) -> str:
    return ", ".join(f"{cause} {n}" for cause, n in counts.most_common())


def _examples(groups: Iterable[list[int]], limit: int = 3) -> str:
    listed = [" and ".join(map(str, sorted(ns))) for ns in groups]
    return "; ".join(listed[:limit]) + ("; ..." if len(listed) > limit else "")


def _number(value: dict[str, Any] | None) -> int | None:
    if not value:
        return None
    text = value.get("N", value.get("S"))
    try:
        return int(text) if text is not None else None
    except ValueError:
        return None
