"""Why a number nobody was handed was lost: the causes the history checker names, those each
strategy documents, and the attribution of each lost number to one (the rules are in
:mod:`verification.history`'s module doc)."""

from __future__ import annotations

import heapq
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from typing import Protocol

from verification.records import Call, WireWrite

__all__ = [
    "ANSWER_LOST",
    "BLOCK_NOT_HANDED_OUT",
    "CALLER_CANCELLED",
    "CALLER_SAW_FAILURE",
    "CLIENT_GONE",
    "DOCUMENTED_CAUSES",
    "KILLED_PROCESS",
    "STORED_TWICE",
    "STORED_UNDER_ANOTHER_NUMBER",
    "UNATTRIBUTED",
    "UNEXPLAINED",
]


# --- why a number was not handed out ------------------------------------------------------
KILLED_PROCESS = "killed process"
CALLER_CANCELLED = "caller cancelled"
CALLER_SAW_FAILURE = "caller saw failure"
ANSWER_LOST = "answer lost"
CLIENT_GONE = "answer lost: client gone"
BLOCK_NOT_HANDED_OUT = "block not handed out"
#: An item whose payload is also stored under another number.
STORED_TWICE = "stored twice"
#: An item whose call succeeded with another number (whose item is missing or not its own).
STORED_UNDER_ANOTHER_NUMBER = "stored under another number"
UNEXPLAINED = "unexplained"
#: No wire log to tell: counted, not judged.
UNATTRIBUTED = "unattributed"

_CALLER_GONE = frozenset({KILLED_PROCESS, CALLER_CANCELLED, CALLER_SAW_FAILURE})
_ANSWER_LOST = frozenset({ANSWER_LOST, CLIENT_GONE})

#: The causes each strategy documents for a number nobody was handed (a gap below the
#: counter's value, or a stored item nobody was handed); any other cause breaks its promise.
DOCUMENTED_CAUSES: Mapping[str, frozenset[str]] = {
    "atomic": _CALLER_GONE | _ANSWER_LOST,
    "allocator": _CALLER_GONE | _ANSWER_LOST | {BLOCK_NOT_HANDED_OUT},
    "optimistic": _CALLER_GONE,
    "sort-key": _CALLER_GONE,
    "transactional": _CALLER_GONE,
}


class _Recorded(Protocol):
    """What :class:`_Attribution` reads of the :class:`~verification.history.History`."""

    killed: set[str]
    unread: Counter[str]
    wire_observed: bool
    late_secs: float


class _Attribution:
    """The cause of each number nobody was handed, for one counter (see the module doc)."""

    def __init__(
        self, history: _Recorded, strategy: str, calls: list[Call], wire: list[WireWrite]
    ) -> None:
        self.history = history
        self.strategy = strategy
        self.by_payload = {c.payload: c for c in calls if c.payload is not None}
        self.failures: dict[str, list[Call]] = defaultdict(list)
        for c in calls:
            if c.numbers is None:
                self.failures[c.process].append(c)
        self.used: set[int] = set()  # the failed calls (by id) that explain a number already
        # The proxy cannot see whether a client that gave up waiting had read an answer
        # already on its way: in a process that timed out, a delivered answer may have been
        # dropped too.
        self.timed_out = {w.process for w in wire if not w.delivered and w.fault is None}
        self.unread = Counter(history.unread)  # delivered answers the client did not read
        self.writes: dict[int, WireWrite] = {}
        for write in wire:  # a later write of a number (re-reserved after a give-back) wins
            for n in write.numbers:
                self.writes[n] = write
        # Without a wire log: could anything documented explain a lost number?
        self.explicable = bool(history.killed or self.failures) or bool(
            _ANSWER_LOST & DOCUMENTED_CAUSES[strategy]
        )

    def items(self, lost: Mapping[int, str | None], copies: Mapping[str, int]) -> Counter[str]:
        """Why each stored item in ``lost`` (number -> payload) was handed to nobody: by its
        payload first (``copies``: how many items hold each payload), then by the wire log."""
        causes: Counter[str] = Counter()
        rest = []
        for n, payload in sorted(lost.items()):
            call = self.by_payload.get(payload) if payload is not None else None
            if payload is not None and copies[payload] > 1:
                causes[STORED_TWICE] += 1
            elif call is not None and call.numbers is not None:
                causes[STORED_UNDER_ANOTHER_NUMBER] += 1
            elif call is not None:
                causes[CALLER_CANCELLED if call.cancelled else CALLER_SAW_FAILURE] += 1
                self.used.add(id(call))
            elif payload is not None and payload.split("/", 1)[0] in self.history.killed:
                causes[KILLED_PROCESS] += 1
            else:
                rest.append(n)
        return causes + self.numbers(rest)

    def numbers(self, lost: Iterable[int]) -> Counter[str]:
        """Why each number in ``lost`` was handed to nobody, from the wire log."""
        causes: Counter[str] = Counter()
        lost = sorted(lost)
        if not self.history.wire_observed:
            causes[UNATTRIBUTED if self.explicable else UNEXPLAINED] += len(lost)
            return causes
        candidates: dict[str, list[int]] = defaultdict(list)
        for n in lost:
            write = self.writes.get(n)
            if write is None:
                causes[UNEXPLAINED] += 1
            elif write.process in self.history.killed:
                causes[KILLED_PROCESS] += 1
            elif self.strategy == "allocator" and write.delivered:
                causes[BLOCK_NOT_HANDED_OUT] += 1
            else:
                candidates[write.process].append(n)
        documented = DOCUMENTED_CAUSES[self.strategy]
        for process, numbers in candidates.items():
            # The callers gone go to the numbers nothing else explains first: a lost answer the
            # strategy documents anyway must not use up the caller whose own number needs it.
            needy = {
                n for n in numbers if self._answer(self.writes[n], take=False) not in documented
            }
            gone = self._callers_gone(process, [n for n in numbers if n in needy])
            gone.update(self._callers_gone(process, [n for n in numbers if n not in needy]))
            for n in numbers:
                call = gone.get(n)
                if call is not None:
                    causes[CALLER_CANCELLED if call.cancelled else CALLER_SAW_FAILURE] += 1
                else:
                    causes[self._answer(self.writes[n])] += 1
        return causes

    def _answer(self, write: WireWrite, *, take: bool = True) -> str:
        """Why the numbers of ``write`` were lost, when no caller gone explains them
        (``take``: an unread answer it is put down to is used up)."""
        if not write.delivered and write.fault is not None:
            return ANSWER_LOST
        if not write.delivered or write.process in self.timed_out:
            return CLIENT_GONE
        if self.unread[write.process] > 0:
            if take:
                self.unread[write.process] -= 1
            return CLIENT_GONE
        if self.strategy == "allocator":
            return BLOCK_NOT_HANDED_OUT
        return UNEXPLAINED

    def _callers_gone(self, process: str, numbers: list[int]) -> dict[int, Call]:
        """Lost numbers of ``process``'s writes matched to its failed or cancelled calls, one
        number per call (a call takes one): a number whose write reached the server while the
        call was under way (from its start to ``late_secs`` after its end). Greedy in the
        order the writes were seen, each to the eligible call that ends first, which explains
        as many numbers as any matching can; so a lost answer elsewhere in a busy process
        is not put down to a caller that was gone anyway."""
        inf = float("inf")
        calls = sorted(
            (c for c in self.failures.get(process, ()) if id(c) not in self.used),
            key=lambda c: -inf if c.started is None else c.started,
        )
        matched: dict[int, Call] = {}
        open_calls: list[tuple[float, int]] = []  # (when its window closes, index in calls)
        unseen = []
        i = 0
        for n in sorted(numbers, key=lambda n: self.writes[n].observed or 0.0):
            seen = self.writes[n].observed
            if seen is None:
                unseen.append(n)
                continue
            while i < len(calls) and (calls[i].started or -inf) <= seen:
                ended = calls[i].ended
                heapq.heappush(
                    open_calls, (inf if ended is None else ended + self.history.late_secs, i)
                )
                i += 1
            while open_calls and open_calls[0][0] < seen:
                heapq.heappop(open_calls)
            if open_calls:
                matched[n] = calls[heapq.heappop(open_calls)[1]]
        # Writes seen at unknown times may be any leftover call's.
        taken = {id(c) for c in matched.values()}
        spare = [c for c in calls if id(c) not in taken]
        for n, call in zip(unseen, spare, strict=False):
            matched[n] = call
        for call in matched.values():
            self.used.add(id(call))
        return matched
