"""The soak's report (:mod:`verification.soak`): one :class:`Soak` per strategy, printed as a
row with what was injected and what was lost below it, then a summary of every strategy.

The same report saved as JSON (``python -m verification.soak --out DIR`` writes
``DIR/soak.json``: the run's parameters and each :class:`Soak`) prints again, line for line,
with :func:`transcript`; the documentation renders its soak from such a file
(``docs/performance/soak.json``, ``scripts/docs_outputs.py``)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, fields
from typing import Any

from aioseq.testing.fault_proxy import APPLIED_KINDS, KINDS
from verification.history import Report

__all__ = [
    "LATE",
    "VICTIM",
    "VICTIM_AGAIN",
    "Deadlines",
    "Soak",
    "describe_faults",
    "intro",
    "transcript",
]


#: The process killed mid-run, and the one that takes the rest of its numbers.
VICTIM, VICTIM_AGAIN = "p0", "p0-again"

#: Marks the owner of a queue entry whose enqueue reached DynamoDB late (a ``delay`` fault).
LATE = " (late)"

#: The fault kinds by what the client sees, for the report.
_FAULT_GROUPS = (
    ("answers lost after the server applied the request", ("response-lost", "delay")),
    ("500s", ("internal-error", "http-500")),
    ("resets", ("reset",)),
    ("throttling", ("throughput-exceeded", "throttling")),
    ("transaction conflicts", ("transaction-conflict",)),
)


def describe_faults(rates: Mapping[str, float], *, read_timeout_secs: float) -> str:
    """The fault schedule in one line: the total, then each kind's rate by what the client
    sees."""
    parts = []
    for what, kinds in _FAULT_GROUPS:
        shown = [k for k in kinds if rates.get(k)]
        if not shown:
            continue
        total = sum(rates[k] for k in shown)
        detail = ", ".join(
            f"{k} {rates[k]:.1%}"
            + (f" past the {read_timeout_secs:g} s read timeout" if k == "delay" else "")
            for k in shown
        )
        parts.append(f"{what} {total:.1%} ({detail})")
    return f"{sum(rates.values()):.1%} of requests: " + "; ".join(parts) if parts else "none"


@dataclass(frozen=True)
class Deadlines:
    """Whether one strategy's counter kept moving in a soak under deadlines (every call in
    ``asyncio.wait_for(..., deadline_secs)``).

    Attributes:
        deadline_secs: every call's deadline, in seconds.
        timed_out: calls that timed out (the checker counts them as cancelled calls).
        standstill_secs: the longest interval in which some caller was waiting and no process
            completed a call, in seconds.
        max_standstill_secs: the bound ``standstill_secs`` must not exceed.
        entries_left: the writers' queue entries (``aioseq_turn``) left on the counter item
            after every process closed, by the process that enqueued them (``"?"`` when the
            wire log does not tell; marked `LATE` when the enqueue reached DynamoDB after its
            sender gave up on it, a ``delay`` fault: it may have closed by then).
        killed: the process killed mid-run, whose entries may be left (it never closed), or
            ``None``.
    """

    deadline_secs: float
    timed_out: int
    standstill_secs: float
    max_standstill_secs: float
    entries_left: dict[str, int]
    killed: str | None = None

    @property
    def problems(self) -> list[str]:
        """One line per broken bound: a standstill past the bound, an entry left by a process
        that closed (or whose owner is unknown)."""
        problems = []
        if self.standstill_secs > self.max_standstill_secs:
            problems.append(
                f"the counter stood still for {self.standstill_secs:.2f} s "
                f"(bound {self.max_standstill_secs:g} s)"
            )
        closed = {
            p: n for p, n in self.entries_left.items() if p != self.killed and not p.endswith(LATE)
        }
        if closed:
            problems.append(
                f"{sum(closed.values())} queue entries left after a clean close ("
                + ", ".join(f"{p} {n}" for p, n in sorted(closed.items()))
                + ")"
            )
        return problems

    def entries(self) -> str:
        """The entries left, in words."""
        total = sum(self.entries_left.values())
        killed = self.entries_left.get(self.killed or "", 0)
        if not total:
            return "0"
        return f"{total}" + (f" ({killed} of the killed {self.killed})" if killed else "")


@dataclass(frozen=True)
class Soak:
    """One strategy's soak.

    Attributes:
        report: the checker's :class:`~verification.history.Report`.
        wall_secs: from the workers' start to their end, in seconds.
        requests: requests the proxy received.
        injected: faults injected, by kind.
        killed_after: calls the killed process had completed when it was killed, or ``None``
            when nobody was killed (``kill_at`` 0).
        deadlines: under deadlines, whether the counter kept moving; else ``None``.
    """

    report: Report
    wall_secs: float
    requests: int
    injected: Counter[str]
    killed_after: int | None = None
    deadlines: Deadlines | None = None

    @property
    def problems(self) -> list[str]:
        """The checker's problems, then the deadlines' (:attr:`Deadlines.problems`)."""
        return self.report.problems + (self.deadlines.problems if self.deadlines else [])

    @property
    def ok(self) -> bool:
        return not self.problems

    def to_json(self) -> dict[str, Any]:
        """This soak as JSON-ready values (counts by cause or kind as objects, in their
        order); :meth:`from_json` reads it back."""
        report = {f.name: getattr(self.report, f.name) for f in fields(self.report)}
        data = {
            "report": {k: dict(v) if isinstance(v, Counter) else v for k, v in report.items()},
            "wall_secs": self.wall_secs,
            "requests": self.requests,
            "injected": dict(self.injected),
            "killed_after": self.killed_after,
        }
        if self.deadlines is not None:
            data["deadlines"] = asdict(self.deadlines)
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Soak:
        """The :class:`Soak` that :meth:`to_json` wrote."""
        counters = {"failed", "gaps", "unacknowledged"}
        report: dict[str, Any] = {
            k: Counter(v) if k in counters else v for k, v in data["report"].items()
        }
        return cls(
            report=Report(**report),
            wall_secs=data["wall_secs"],
            requests=data["requests"],
            injected=Counter(data["injected"]),
            killed_after=data["killed_after"],
            deadlines=Deadlines(**data["deadlines"]) if data.get("deadlines") else None,
        )


_COLUMNS = (
    ("strategy", 20),
    ("numbers", 7),
    ("wall s", 6),
    ("requests", 8),
    ("faults", 6),
    ("fault %", 7),
    ("failed", 6),
    ("dupl.", 5),
    ("twice", 5),
    ("holes", 5),
    ("order", 5),
)


def intro(parameters: Mapping[str, Any], endpoint_url: str) -> list[str]:
    """The report's first lines: what ran (``parameters``: :func:`~verification.soak.run_soak`'s
    keyword arguments but ``out``), the fault schedule, and the table's header."""
    p = parameters
    killing = f"{VICTIM} killed (SIGKILL) after {p['kill_at']:.0%} of its calls"
    faults = describe_faults(p["faults"], read_timeout_secs=p["read_timeout_secs"])
    deadline = p.get("deadline_secs")
    return [
        f"soak: {len(p['strategies'])} strategies x {p['processes']} processes x "
        f"{p['concurrency']} tasks x {p['count']} numbers via a fault proxy to {endpoint_url}; "
        + (f"{killing}, then {VICTIM_AGAIN}" if p["kill_at"] else "no process killed")
        + f"; {p['cancel_rate']:.1%} of calls cancelled"
        + (
            f"; every call under a {deadline:g} s deadline (asyncio.wait_for), standstills "
            f"up to {p.get('max_standstill_secs', 2.0):g} s allowed"
            if deadline
            else ""
        ),
        f"faults (seed {p['seed']}): {faults}",
        _header(),
    ]


def transcript(document: Mapping[str, Any], *, endpoint_url: str | None = None) -> list[str]:
    """What the soak saved in ``document`` (``soak.json``) printed, line for line, with the
    proxy's target shown as ``endpoint_url`` if given."""
    results = [Soak.from_json(result) for result in document["results"]]
    lines = intro(document["parameters"], endpoint_url or document["endpoint"])
    for soak in results:
        lines.extend(_rows(soak))
    return lines + _summary(results)


def _cells(cells: Sequence[object]) -> str:
    return "  ".join(
        f"{c:<{w}}" if i == 0 else f"{c:>{w}}"
        for i, (c, (_, w)) in enumerate(zip(cells, _COLUMNS, strict=True))
    )


def _header() -> str:
    return _cells([name for name, _ in _COLUMNS]) + "  check"


def _causes(counts: Counter[str]) -> str:
    return ", ".join(f"{cause} {n}" for cause, n in counts.most_common()) or "-"


def _kinds(injected: Counter[str]) -> str:
    """Faults injected, by kind, in the order of :data:`KINDS`."""
    return ", ".join(f"{k} {injected[k]}" for k in KINDS if injected[k]) or "none"


def _rows(soak: Soak) -> list[str]:
    """The strategy's row, then what was injected and what was lost, indented below it."""
    r = soak.report
    faults = sum(soak.injected.values())
    row = _cells(
        [
            r.strategy,
            r.numbers,
            f"{soak.wall_secs:.1f}",
            soak.requests,
            faults,
            f"{faults / max(soak.requests, 1):.1%}",
            sum(r.failed.values()),
            r.duplicates,
            "-" if r.stored is None else r.stored_twice,
            r.holes,
            r.order_violations,
        ]
    )
    check = "ok" if soak.ok else "FAILED: " + "; ".join(soak.problems)
    applied = sum(soak.injected[k] for k in APPLIED_KINDS)
    lines = [
        f"{row}  {check}",
        f"    injected: {_kinds(soak.injected)} "
        f"(answers lost after being applied: {applied}, "
        f"{applied / max(soak.requests, 1):.1%} of requests)",
    ]
    if r.stored is None:
        lines.append(f"    gaps by cause: {_causes(r.gaps)}")
    else:
        lines.append(
            f"    stored {r.stored} items; unacknowledged by cause: {_causes(r.unacknowledged)}"
        )
    if r.failed:
        lines.append(f"    failed calls: {_causes(r.failed)}")
    if soak.killed_after is not None:
        lines.append(
            f"    {VICTIM} killed after {soak.killed_after} calls; {VICTIM_AGAIN} took the rest"
        )
    d = soak.deadlines
    if d is not None:
        lines.append(
            f"    deadline {d.deadline_secs:g} s: {d.timed_out} of {r.calls} calls timed out "
            f"({d.timed_out / max(r.calls, 1):.1%}); longest standstill "
            f"{d.standstill_secs:.2f} s; queue entries left after close: {d.entries()}"
        )
    return lines


def _summary(results: list[Soak]) -> list[str]:
    injected: Counter[str] = Counter()
    gaps: Counter[str] = Counter()
    unacknowledged: Counter[str] = Counter()
    failed: Counter[str] = Counter()
    for s in results:
        injected.update(s.injected)
        failed.update(s.report.failed)
        gaps.update(s.report.gaps)
        unacknowledged.update(s.report.unacknowledged)
    requests = sum(s.requests for s in results)
    applied = sum(injected[k] for k in APPLIED_KINDS)
    total = sum(injected.values())
    under = [s for s in results if s.deadlines is not None]
    moving = []
    if under:
        calls = sum(s.report.calls for s in under)
        timed_out = sum(s.deadlines.timed_out for s in under if s.deadlines)
        longest = max(under, key=lambda s: s.deadlines.standstill_secs if s.deadlines else 0.0)
        assert longest.deadlines is not None
        left: Counter[str] = Counter()
        for s in under:
            left.update(s.deadlines.entries_left if s.deadlines else {})
        killed = sum(n for p, n in left.items() if p == VICTIM)
        moving = [
            f"calls timed out: {timed_out} of {calls} ({timed_out / max(calls, 1):.1%})",
            f"longest standstill: {longest.deadlines.standstill_secs:.2f} s "
            f"({longest.report.strategy}; bound {longest.deadlines.max_standstill_secs:g} s)",
            f"queue entries left after close: {sum(left.values())}"
            + (f" ({killed} of the killed {VICTIM})" if killed else ""),
        ]
    return [
        f"numbers checked: {sum(s.report.numbers for s in results)}",
        f"requests: {requests}; faults injected: {total} ({total / max(requests, 1):.2%}), "
        f"answers lost after being applied: {applied} ({applied / max(requests, 1):.2%}): "
        + ", ".join(f"{k} {injected[k]}" for k in KINDS),
        f"duplicates: {sum(s.report.duplicates for s in results)}",
        f"items stored twice: {sum(s.report.stored_twice for s in results)}",
        f"holes where none is promised: {sum(s.report.holes for s in results)}",
        f"order violations: {sum(s.report.order_violations for s in results)}",
        f"failed calls: {sum(failed.values())} ({_causes(failed)})",
        f"gaps by cause: {_causes(gaps)}",
        f"unacknowledged items by cause: {_causes(unacknowledged)}",
        *moving,
        ("all guarantees held, every counter kept moving" if under else "all guarantees held")
        if all(s.ok for s in results)
        else "FAILED: " + ", ".join(s.report.strategy for s in results if not s.ok),
    ]
